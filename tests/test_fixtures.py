"""Every recorded case through the CLI: the exact symptom ids per NodeSet, the status, the exit code (or the
usage error a case's flags must get instead of a diagnosis)."""

from __future__ import annotations

import filecmp
import importlib.util
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.conftest import CASES, FIXTURES, USAGE_CASES, expected, replayed, run


@pytest.mark.parametrize("case", CASES)
def test_case_verdict(case: str) -> None:
    want = expected(case)
    result = replayed(case)
    report = result.json()
    got = {f"{r['namespace']}/{r['name']}": sorted(s["id"] for s in r["symptoms"]) for r in report["results"]}
    assert got == want["symptoms"]
    assert report["status"] == want["status"]
    assert result.code == want["exit"]
    rows = [(f"{r['namespace']}/{r['name']}", s) for r in report["results"] for s in r["symptoms"]]
    for symptom_id, needles in want["evidence"].items():
        text = "\n".join(t for _, s in rows if s["id"] == symptom_id for t in (*s["evidence"], s["fix"]))
        for needle in needles:
            assert needle in text, f"{symptom_id}: {needle!r} not in evidence"
    # what could not be checked: one line per expected needle, in order (a fully captured case has none)
    errors = want.get("errors", [])
    assert len(report["errors"]) == len(errors), report["errors"]
    assert all(n in e for n, e in zip(errors, report["errors"], strict=True)), report["errors"]
    texts = {(target, s["id"]): s for target, s in rows}
    for target, by_id in want.get("fix", {}).items():  # needles from the scenario: the wording around them is free
        for symptom_id, needles in by_id.items():
            fix = texts[target, symptom_id]["fix"]
            assert [n for n in needles if n not in fix] == [], f"{target} {symptom_id}: not in its fix:\n{fix}"
    for symptom_id, needles in want.get("never_in_fix", {}).items():  # what would make the fix unsafe to paste
        fixes = [s["fix"] for _, s in rows if s["id"] == symptom_id]
        assert fixes and [n for n in needles for fix in fixes if n in fix] == [], f"{symptom_id}: {fixes}"
    for target, by_id in want.get("cause", {}).items():
        for symptom_id, needle in by_id.items():
            assert needle in texts[target, symptom_id]["cause"], texts[target, symptom_id]["cause"]
    steps = {f"{r['namespace']}/{r['name']}": {s["name"]: s["status"] for s in r["steps"]} for r in report["results"]}
    for target, statuses in want.get("steps", {}).items():
        assert steps[target] == statuses, target


@pytest.mark.parametrize("case", CASES)
def test_case_notes(case: str) -> None:
    """The notes each target gets, by id, each with the scenario's needles; a target the case lists none for gets
    none (every existing case was checked for idle capacity). A note is never a symptom: the status, the exit code
    and the symptoms are test_case_verdict's, notes or not."""
    want = expected(case)
    report = replayed(case).json()
    for r in report["results"]:
        target = f"{r['namespace']}/{r['name']}"
        wanted = want.get("notes", {}).get(target, {})
        assert sorted(n["id"] for n in r["notes"]) == sorted(wanted), target
        for note_id, needles in wanted.items():
            text = "\n".join(n["text"] + "\n" + n["hint"] + "\n" for n in r["notes"] if n["id"] == note_id)
            assert [n for n in needles if n not in text] == [], text


def test_fix_expectations_are_facts_of_the_scenario_not_pasted_paragraphs() -> None:
    """A fix needle names one fact (an object, a key and value, a command, a YAML entry): a pasted paragraph would
    break on every better wording and pass a wrong fix glued into it."""
    fixes = [(case, needles) for case in CASES for by_id in expected(case).get("fix", {}).values()
             for needles in by_id.values()]
    assert fixes and [(case, n) for case, needles in fixes for n in needles if not isinstance(needles, list) or
                      len(n) > 160] == []


# What no printed fix may ever hold: `kubectl drain` evicts every Pod (emptyDir data lost), a Node deleted takes its
# Slurm jobs with it, force skips graceful termination, scancel kills jobs, a bare `tolerations:` list pasted as a
# values override drops the entries it does not repeat.
NEVER_PASTE = ("kubectl drain", "kubectl delete node", "--force", "--grace-period", "scancel", "state=down",
               "tolerations:\n")


# The eviction of a drained slurmd Pod, after a question naming that Pod (and its Slurm node, named like it): pasted
# with the lines after it, `read` takes the next as its answer, and any answer but y says the Pod was skipped
ASKED = re.compile(r"printf 'no Slurm job left on Slurm node (?P<name>[\w.-]+)\? y evicts Pod (?P<ns>[\w-]+)/(?P=name) on "
                   r"Node [\w.-]+: ' && read -r answer && \[ \"\$answer\" = y \] \|\| \{ printf 'skipped (?P=ns)/(?P=name): "
                   r"the answer read was \"%s\"\\n' \"\$answer\"; false; \} && "
                   r"kubectl create --raw /api/v1/namespaces/(?P=ns)/pods/(?P=name)/eviction ")


@pytest.mark.parametrize("case", CASES)
def test_no_fix_deletes_a_slurmd_pod_before_draining_its_slurm_node(case: str) -> None:
    """Deleting or evicting a slurmd Pod kills the Slurm jobs on it: every slurmd Pod a fix removes is drained in Slurm
    on an earlier line of that fix, and evicted (its PodDisruptionBudgets honoured, never deleted) only on a typed y;
    no fix holds a command that would lose data or jobs outright."""
    report = replayed(case).json()
    for r in report["results"]:
        for s in r["symptoms"]:
            assert [n for n in NEVER_PASTE if n in s["fix"]] == [], (r["name"], s["id"])
            drained: set[str] = set()
            for line in s["fix"].splitlines():
                if line.startswith("scontrol update nodename=") and " state=drain " in line:
                    drained |= set(line.split()[2].removeprefix("nodename=").split(","))
                asked = ASKED.match(line)
                command = line[line.index("} && kubectl ") + 5:] if asked else line  # less the question
                slurmd = {w for w in re.split(r"[\s/]", command) if w.startswith(f"{r['name']}-")}
                if "kubectl delete" in line or "/eviction " in line:
                    assert "kubectl delete" not in line or not slurmd, (r["name"], s["id"], line)
                    assert slurmd <= drained, (r["name"], s["id"], line)
                    assert not slurmd or asked, (r["name"], s["id"], line)
                if line.startswith("kubectl create --raw /api/v1/namespaces/"):  # an eviction: the Pod named in its path
                    evicted = line.split()[3].split("/")[6]
                    assert not evicted.startswith(f"{r['name']}-") or evicted in drained, (r["name"], s["id"], line)


@pytest.mark.parametrize("command", ["check", "explain"])
@pytest.mark.parametrize("case", USAGE_CASES)
def test_case_usage_error(case: str, command: str) -> None:
    """Flags the recorded cluster refutes (a --pool no Node Pool has) get one line and exit 3, no diagnosis;
    with -o json, a document with status unknown, no result and that line in `errors`."""
    want = expected(case)
    args = (command, "--snapshot", str(FIXTURES / case), *want["args"])
    result = run(*args)
    assert (result.code, result.out, result.err) == (want["exit"], "", f"sunkcheck: error: {want['usage_error']}\n")
    doc = run(*args, "-o", "json").json()
    assert (doc["status"], doc["results"], doc["errors"]) == ("unknown", [], [want["usage_error"]])


@pytest.mark.parametrize("case", CASES)
def test_case_healthy_steps_are_known(case: str) -> None:
    """A fully captured snapshot never leaves a step unknown unless the pool could not be found."""
    report = replayed(case).json()
    for r in report["results"]:
        unknown = [s["name"] for s in r["steps"] if s["status"] == "unknown"]
        assert unknown == ([] if r["pools"] or r["kind"] == "DaemonSet" else ["nodepool"])


def _size(c: dict) -> int | None:
    """A NodeSet's effective size: DESIRED (replicas when set), never more than FEASIBLE."""
    return c["desired"] if c.get("desired") is None or c.get("feasible") is None else min(c["desired"], c["feasible"])


def _said(count: str, summary: str) -> int:
    """How many the summary says are `count`, a pattern (`2 locked by Slurm jobs now`), 0 where it says none."""
    found = re.search(rf"(\d+) {count}", summary)
    return int(found.group(1)) if found else 0


STARTING = r"starting \(created less than"
"""How the pods step says its slurmd Pods still starting (created moments ago, no container failed)."""
CREATING = r"slurmd Pods? being created"
"""How the nodeset step says the slurmd Pods SUNK is still creating (on Nodes Ready moments ago)."""


def _short(count: int | None, c: dict, s: str) -> bool:
    """Whether a NodeSet's count is other than its effective size by more than the Pods being created."""
    return count is None or count + _said(CREATING, s) != _size(c)


# What each step's own counts show as a failure, written here from the counts alone (not with the
# product's code): next to a row that fires, such a step must not read green. Nodes SUNK's lock alone keeps a
# DaemonSet off are busy with Slurm jobs, slurmd Pods still starting are not Ready yet, and those being created on
# Nodes Ready moments ago do not exist yet: no failure.
RANKS = ["ok", "info", "warning", "critical"]
SHOWN_FAILURES = {
    "nodepool": lambda c, s: "no such Node Pool" in s or c.get("current") != c.get("target"),
    "nodes": lambda c, s: c.get("nodes") == 0 or c.get("selected") == 0
    or c.get("eligible", 0) + _said("locked by Slurm jobs now", s) < c.get("selected", 0)
    or c.get("ready", c.get("nodes")) != c.get("nodes")
    or any(int(k) < int(n) for k, n in re.findall(r" on (\d+)/(\d+)", s)),
    "events": lambda c, s: c["warnings"] > 0,
    "nodeset": lambda c, s: c.get("feasible") in (0, None) or c.get("feasible") != c.get("pool_nodes")
    or c.get("misscheduled") or _short(c.get("current"), c, s) or _short(c.get("ready"), c, s),
    "daemonset": lambda c, s: not c.get("desired") or c.get("misscheduled") or c.get("current") != c.get("desired")
    or c.get("ready") != c.get("desired"),
    "pods": lambda c, s: not c["pods"] or c.get("elsewhere") or c.get("pending", 0) > _said(STARTING, s)
    or c["ready"] + _said(STARTING, s) < c["pods"] or c.get("misscheduled"),
    "sinfo": lambda c, s: c["slurm_usable"] < c["slurm_nodes"],
}


def worst(severities: Iterable[str]) -> str:
    """A step's colour for these rows: an info row alone leaves it green."""
    status = max(severities, key=RANKS.index, default="ok")
    return "ok" if status == "info" else status


@pytest.mark.parametrize("case", CASES)
def test_a_step_is_not_green_when_its_summary_shows_the_failure(case: str) -> None:
    """`pods ok` beside 0 slurmd Pods while no-feasible-nodes fires, `events ok` beside FailedCreate: a step
    whose own counts show the failure takes the severity of every row that fired; otherwise that of the rows
    the symptom table files under it (`sunkcheck rules ID`: "runbook step"), and with none, it stays ok."""
    from sunkcheck.symptoms.table import RULES

    step_of = {rule.id: rule.step for rule in RULES}
    report = replayed(case).json()
    for r in report["results"]:
        fired = [s for s in r["symptoms"] if not s["suppressed"]]
        for step in r["steps"]:
            if step["status"] in ("unknown", "skipped"):
                continue
            shows = SHOWN_FAILURES[step["name"]](step["counts"], step["summary"])
            own = [s for s in fired if shows or step_of[s["id"]] == step["name"]]
            assert step["status"] == worst(s["severity"] for s in own), (r["name"], step)


@pytest.mark.parametrize("case", CASES)
def test_pods_step_finds_the_misscheduled_pods_the_nodeset_counts(case: str) -> None:
    """Every recorded status agrees with its objects (test_fixture_consistency.py): the slurmd Pods the pods step
    finds on Nodes the NodeSet refuses, for a mismatch or on a Node in repair, are those its MISSCHEDULED counts. A
    cordon makes none."""
    report = replayed(case).json()
    for r in report["results"]:
        counts = {s["name"]: s["counts"] for s in r["steps"]}
        if r["kind"] == "NodeSet":
            pods = counts["pods"]
            assert pods["misscheduled"] + pods["in_repair"] == counts["nodeset"]["misscheduled"], r["name"]


def test_step_statuses_named_in_the_issue() -> None:
    def steps(case: str) -> dict[str, str]:
        doc = replayed(case).json()
        return {s["name"]: s["status"] for s in doc["results"][0]["steps"]}

    assert steps("no-feasible-nodes")["pods"] == "critical"  # 0 slurmd Pods
    assert steps("slurmd-pods-missing")["events"] == "warning"  # FailedCreate, FailedScheduling
    assert steps("pool-quota-zero")["nodes"] == "critical"  # 0 Nodes in the pool
    assert steps("no-feasible-pool-typo")["nodepool"] == "critical"  # no such Node Pool
    assert steps("healthy-pool-name") == {"nodepool": "ok", "nodes": "ok", "events": "ok", "nodeset": "ok",
                                          "pods": "ok", "sinfo": "skipped"}


def test_every_symptom_has_a_firing_case() -> None:
    from sunkcheck.symptoms.table import RULES

    fired = {i for case in CASES for ids in expected(case)["symptoms"].values() for i in ids}
    assert fired == {r.id for r in RULES}


def test_committed_fixtures_match_the_generator(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("generate", FIXTURES / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    generate.write(tmp_path)
    for case in generate.CASES:
        cmp = filecmp.dircmp(tmp_path / case, FIXTURES / case)
        assert not (cmp.diff_files or cmp.left_only or cmp.right_only), f"{case}: run `python fixtures/generate.py`"


def test_generated_clusters_of_benchmark_size_name_every_node_and_pod_once() -> None:
    """A cluster's Node names are unique (the API server keys Nodes by name), and so are its Pods' namespace/name
    pairs: the benchmark's 5,000 Nodes included, where six hex digits of a hash collide (two pairs of Nodes did,
    an impossible cluster) and the daemon Pods' five collided 26 times (a live list was refused at preflight)."""
    spec = importlib.util.spec_from_file_location("generate", FIXTURES / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    cluster = generate.Cluster(control_plane=generate.GENOA)
    for pool, share in (("slurm-cpu", 2_000), ("k8s-cpu", 800), ("inference-h100", 800), ("cpu-control-plane", 1_398)):
        for _ in range(share):
            cluster.node(pool, generate.GENOA)
    names = [n["metadata"]["name"] for n in cluster.nodes]
    cidrs = [n["spec"]["podCIDR"] for n in cluster.nodes]
    assert len(names) == len(set(names)) == 5_000
    assert len(set(cidrs)) == 5_000 and all(int(o) < 256 for c in cidrs for o in c.split("/")[0].split("."))
    ds = cluster.daemonset("node-agent", "monitoring", {}, (5_000,) * 5 + (0, 0))
    for node in cluster.nodes:
        cluster.daemon_pod(ds, node)
    pods = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in cluster.pods]
    assert len(pods) == len(set(pods)) == 3 * 5_000


@pytest.mark.parametrize("case", CASES)
def test_explain_gives_every_node_its_verdict_and_reasons(case: str) -> None:
    for target, nodes in expected(case)["nodes"].items():
        namespace, name = target.split("/")
        flag = "--daemonset" if "--daemonset" in expected(case)["args"] else "--nodeset"
        doc = run("explain", "--snapshot", str(FIXTURES / case), flag, name, "-n", namespace, "-o", "json").json()
        got = {n["name"]: sorted({r["check"] for r in n["reasons"]}) for n in doc["nodes"]}
        assert got == nodes, target
        assert all(n["feasible"] == (not n["reasons"]) for n in doc["nodes"])


@pytest.mark.parametrize("case", CASES)
def test_deep_view_agrees_with_the_verdict(case: str) -> None:
    """For every Node, the single-Node view fails a check exactly when the verdict names that check."""
    for target, nodes in expected(case)["nodes"].items():
        namespace, name = target.split("/")
        flag = "--daemonset" if "--daemonset" in expected(case)["args"] else "--nodeset"
        for node, checks in nodes.items():
            doc = run("explain", "--snapshot", str(FIXTURES / case), flag, name, "-n", namespace,
                      "--node", node, "-o", "json").json()
            failed = sorted({c["check"] for c in doc["node"]["checks"] if not c["ok"]})
            assert failed == checks, f"{target} {node}"


def test_daemonset_pod_on_a_node_that_lost_its_label_is_called_out(tmp_path: Path) -> None:
    """Removing the label a DaemonSet selects on deletes its Pod there: the summary says so."""
    import json
    import shutil

    d = tmp_path / "ds"
    shutil.copytree(FIXTURES / "ds-healthy", d)
    nodes = json.loads((d / "nodes.json").read_text())
    pods = json.loads((d / "pods.json").read_text())
    victim = next(p["spec"]["nodeName"] for p in pods["items"] if p["metadata"]["name"].startswith("dcgm-exporter-"))
    node = next(n for n in nodes["items"] if n["metadata"]["name"] == victim)
    node["metadata"]["labels"]["node.coreweave.cloud/class"] = "cpu"  # relabelled: no longer a GPU Node
    (d / "nodes.json").write_text(json.dumps(nodes))
    doc = run("check", "--snapshot", str(d), "--daemonset", "dcgm-exporter", "-n", "monitoring", "-o", "json").json()
    summary = next(s["summary"] for s in doc["results"][0]["steps"] if s["name"] == "daemonset")
    assert "1 daemon Pod(s) on Nodes that no longer match the scope" in summary and "the controller deletes them" in summary
