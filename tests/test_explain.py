"""`sunkcheck explain`: choosing the workload, filtering by pool, the deep view, and bad input."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sunkcheck.analyze.feasibility import NodeView, scheduler_summary, taint_checks
from sunkcheck.model import NodeVerdict, Reason
from tests.conftest import FIXTURES, run

SEVERAL = str(FIXTURES / "several-nodesets")


def test_the_only_nodeset_is_chosen() -> None:
    doc = run("explain", "--snapshot", str(FIXTURES / "pool-split"), "-o", "json").json()
    assert doc["name"] == "slurm-cpu-batch"
    assert doc["summary"] == "6/15 nodes are available: 9 node(s) didn't match Pod's node affinity/selector."


def test_several_nodesets_need_a_name() -> None:
    r = run("explain", "--snapshot", SEVERAL)
    assert r.code == 3 and "several NodeSets in scope" in r.err and "--nodeset NAME" in r.err


def test_pool_filters_rows_but_not_the_summary() -> None:
    doc = run("explain", "--snapshot", SEVERAL, "--nodeset", "slurm-cpu-batch", "--pool", "slurm-gpu-spare",
              "-o", "json").json()
    assert {n["pool"] for n in doc["nodes"]} == {"slurm-gpu-spare"}
    assert doc["summary"].startswith("4/12 nodes are available")


def test_unknown_node() -> None:
    r = run("explain", "--snapshot", SEVERAL, "--nodeset", "slurm-cpu-batch", "--node", "nope")
    assert r.code == 3 and r.err.startswith("sunkcheck: error: --node nope: no such Node (Nodes, nearest first: ")


def test_plain_deep_view_shows_values_compared() -> None:
    doc = run("explain", "--snapshot", str(FIXTURES / "no-feasible-nodes"), "-o", "json").json()
    node = next(n["name"] for n in doc["nodes"] if n["pool"] == "slurm-cpu")
    r = run("explain", "--snapshot", str(FIXTURES / "no-feasible-nodes"), "--node", node, "-o", "plain")
    assert r.code == 0
    assert "NOT feasible" in r.out
    line = next(line for line in r.out.splitlines() if line.startswith("taint"))
    assert "sunk.example.com/node=true:NoSchedule" in line and "not tolerated" in line and line.endswith("FAIL")
    line = next(line for line in r.out.splitlines() if "sunk.example.com/node Exists" in line)
    assert line.rstrip().endswith("ok")


def test_a_resource_short_names_who_holds_it_largest_first() -> None:
    """What the others request is named, largest first, on the failing comparison only (check's evidence does so
    too): the on-call's next question is who."""
    r = run("explain", "--snapshot", str(FIXTURES / "foreign-pod-resources"), "--node", "g18d510", "-o", "plain")
    cpu = next(line for line in r.out.splitlines() if line.startswith("resources") and " cpu " in line)
    assert ("requested by others 48.12 (held by data-eng/spark-exec-7d9f4-x2k8q 48, kube-system/cilium-18d51 100m, "
            "kube-system/node-problem-detector-18d51 20m)") in cpu and cpu.endswith("FAIL")
    memory = next(line for line in r.out.splitlines() if line.startswith("resources") and " memory " in line)
    assert "held by" not in memory and memory.endswith("ok")


def test_scheduler_summary_counts_first_failing_filter_and_sorts_as_strings() -> None:
    def v(*reasons: Reason) -> NodeVerdict:
        return NodeVerdict("n", None, not reasons, False, tuple(reasons))
    taint = Reason("taint", "t", "node(s) had untolerated taint {k: v}")
    other_taint = Reason("taint", "t2", "node(s) had untolerated taint {z: }")
    affinity = Reason("affinity", "a", "node(s) didn't match Pod's node affinity/selector")
    cpu, mem = Reason("resources", "c", "Insufficient cpu"), Reason("resources", "m", "Insufficient memory")
    verdicts = [v(), v(taint, other_taint, affinity)] + [v(affinity)] * 2 + [v(cpu, mem)] * 10
    assert scheduler_summary(verdicts) == (
        "1/14 nodes are available: 1 node(s) had untolerated taint {k: v}, 10 Insufficient cpu, "
        "10 Insufficient memory, 2 node(s) didn't match Pod's node affinity/selector.")


def test_table_marks_infeasible_nodes_red_and_only_those() -> None:
    out = run("explain", "--snapshot", str(FIXTURES / "foreign-pod-resources"), "--all", "-o", "table").out
    red = {line.split()[1] for line in out.splitlines() if line.startswith("\x1b[31m  g")}
    doc = run("explain", "--snapshot", str(FIXTURES / "foreign-pod-resources"), "-o", "json").json()
    assert red == {n["name"] for n in doc["nodes"] if not n["feasible"]} and len(red) == 3


LONG_POOL = "slurm-cpu-for-the-computational-biology-team"
LONG_NODE = "compute-node-in-the-second-rack-of-hall-b-g18d510"


@pytest.fixture
def long_names(tmp_path: Path) -> str:
    """foreign-pod-resources with pool slurm-cpu and Node g18d510 (short of cpu, its pool's one unusable Node)
    renamed long, everywhere they appear; other Nodes: gae05ed and gd79351 of cpu-control-plane."""
    for f in (FIXTURES / "foreign-pod-resources").glob("*.json"):
        (tmp_path / f.name).write_text(f.read_text().replace("slurm-cpu", LONG_POOL).replace("g18d510", LONG_NODE))
    return str(tmp_path)


def plain_text(out: str) -> list[str]:
    return re.sub(r"\x1b\[[0-9;]*m", "", out).splitlines()


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("output", ["plain", "table"])
def test_every_line_fits_the_terminal_and_own_pool_nodes_come_first(monkeypatch: pytest.MonkeyPatch, long_names: str,
                                                                    columns: int, output: str) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    for every in ((), ("--all",)):
        lines = plain_text(run("explain", "--snapshot", long_names, "-o", output, *every).out)
        assert max(map(len, lines)) <= columns, "\n".join(line for line in lines if len(line) > columns)
        assert lines[0].startswith("NodeSet tenant-slurm/")
        words = " ".join(" ".join(lines).split())  # headings may wrap
        own_bad, own_good = words.index("1 of 6 Nodes NOT feasible:"), words.index("5 of 6 Nodes feasible:")
        bad, good, *other = tables(lines)
        assert [row[:3] for row in bad] == [(LONG_NODE, LONG_POOL, "no")] and "short 18.22 (held by" in bad[0][3]
        assert len(good) == 5 and {row[1:] for row in good} == {(LONG_POOL, "yes", "-")}
        if every:
            assert own_good < words.index("other Nodes: 2 of 2 Nodes NOT feasible:")
            assert {row[:3] for row in other[0]} == {("gae05ed", "cpu-control-plane", "no"),
                                                     ("gd79351", "cpu-control-plane", "no")}
        else:
            assert own_bad < own_good < words.index("other Nodes: 2 Nodes, by first reason (--all lists them):")
            assert not other and "gae05ed" not in words and "gd79351" not in words
            assert lines[-1].split(maxsplit=1) == ["2", "node(s) didn't match Pod's node affinity/selector"]


def tables(lines: list[str]) -> list[list[tuple[str, ...]]]:
    """Each Node table's rows, every cell put back together from the lines it was folded onto (names joined as
    they are, reasons with a space), the columns read from the dashes under the header."""
    found: list[list[tuple[str, ...]]] = []
    spans: list[tuple[int, int]] = []
    for line in lines:
        if re.fullmatch(r" *-+( +-+)+", line):
            spans = [m.span() for m in re.finditer("-+", line)]
            spans[-1] = (spans[-1][0], len(line) + 999)
            found.append([])
        elif spans and line.startswith("  "):
            node, pool, placed, reasons = (line[a:b].strip() for a, b in spans)
            if placed:
                found[-1].append((node, pool, placed, reasons))
            else:
                last = found[-1][-1]
                found[-1][-1] = (last[0] + node, last[1] + pool, last[2], f"{last[3]} {reasons}".strip())
        else:
            spans = []
    return found


def test_plain_piped_without_columns_keeps_a_line_per_node(monkeypatch: pytest.MonkeyPatch, long_names: str) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    lines = run("explain", "--snapshot", long_names, "-o", "plain").out.splitlines()
    row = next(line for line in lines if LONG_NODE in line)
    assert row.split()[:3] == [LONG_NODE, LONG_POOL, "no"] and row.endswith("kube-system/node-problem-detector-18d51 20m)")


CORDONED = str(FIXTURES / "healthy-cordoned")


@pytest.mark.parametrize("output", ["plain", "table", "json"])
def test_deep_view_of_a_cordoned_node_says_why_cks_cordoned_it(output: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The node.coreweave.cloud/cordonReason annotation, as check's pool-nodes-in-repair shows it: in every format."""
    monkeypatch.setenv("COLUMNS", "100")
    r = run("explain", "--snapshot", CORDONED, "--node", "gc80620", "-o", output)
    assert r.code == 0
    if output == "json":
        assert r.json()["node"]["cordon_reason"] == "gpu-health-check failed: triage"
    else:
        assert "cordoned: node.coreweave.cloud/cordonReason: gpu-health-check failed: triage" in re.sub(
            r"\x1b\[[0-9;]*m", "", r.out)
    healthy = run("explain", "--snapshot", CORDONED, "--node", "g10689d", "-o", output)
    assert "cordon_reason" not in healthy.out and "cordonReason" not in healthy.out


def test_a_cordon_is_shown_out_of_service_never_as_a_taint_to_tolerate() -> None:
    """A cordoned Node's node.kubernetes.io/unschedulable taint is the cordon: the deep view and the Node list say it is
    out of service until the cordon is lifted, and nowhere that the NodeSet should tolerate it."""
    doc = run("explain", "--snapshot", CORDONED, "--node", "gc80620", "-o", "json").json()
    cordon = [c for c in doc["node"]["checks"] if "unschedulable" in c["subject"]]
    assert [(c["check"], c["wanted"], c["found"], c["ok"]) for c in cordon] == [
        ("unschedulable", "not cordoned", "cordoned: out of service", False),
        ("taint", "not cordoned (lifted, never tolerated)", "cordoned: out of service", False)]
    listed = next(n for n in doc["nodes"] if n["name"] == "gc80620")
    assert "the cordon's taint node.kubernetes.io/unschedulable:NoSchedule" in [r["detail"] for r in listed["reasons"]]
    plain = run("explain", "--snapshot", CORDONED, "--node", "gc80620", "-o", "plain").out
    assert "tolerat" not in plain.replace("never tolerated", "")
    assert "untolerated taint node.kubernetes.io/unschedulable" not in run("explain", "--snapshot", CORDONED).out


def test_a_not_ready_taint_is_shown_as_the_nodes_state_never_as_a_taint_to_tolerate() -> None:
    """node.kubernetes.io/not-ready goes away when the kubelet posts Ready: the deep view says who removes it and the
    Ready condition it waits for, not that the NodeSet should tolerate it."""
    doc = run("explain", "--snapshot", str(FIXTURES / "slurmd-on-not-ready-node"), "--node", "ge2d421",
              "-o", "json").json()
    taints = [(c["wanted"], c["found"], c["ok"]) for c in doc["node"]["checks"] if c["check"] == "taint"]
    assert taints == [("removed by the node controller once the kubelet posts Ready (never tolerated)",
                       "present: Node not Ready (Ready=False: KubeletNotReady)", False)]


@pytest.mark.parametrize(("key", "ready", "wanted", "found"), [
    ("node.cilium.io/agent-not-ready", "True", "removed by the Cilium agent once it runs on the Node (never tolerated)",
     "present: Node Ready"),
    ("node.kubernetes.io/memory-pressure", "True", "removed by Kubernetes with its cause (never tolerated)",
     "present: Node Ready"),
    ("example.com/team", "True", "tolerated", "not tolerated")])
def test_state_taints_read_as_the_nodes_state(key: str, ready: str, wanted: str, found: str) -> None:
    """A start-up or condition taint is the Node's state (removed with its cause, never tolerated); a taint of anyone
    else's stays one to tolerate."""
    node = {"metadata": {"name": "g1"}, "spec": {"taints": [{"key": key, "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}}
    [check] = taint_checks([], NodeView(node), "NodeSet")
    assert (check.wanted, check.found, check.ok) == (wanted, found, False)


def test_other_nodes_are_counted_under_the_reason_the_scheduler_line_gives() -> None:
    """A cordoned Node in triage is `unschedulable` in both places (the scheduler filters cordon before state),
    not `not production or not Ready` in the breakdown."""
    out = run("explain", "--snapshot", CORDONED, "-o", "plain").out.splitlines()
    summary = out[0].split(": ", 1)[1]
    counts = out[out.index(next(line for line in out if line.startswith("other Nodes"))) + 1:]
    assert counts == ["  3  node(s) didn't match Pod's node affinity/selector", "  2  node(s) were unschedulable"]
    assert all(f"{line.split(None, 1)[1]}" in summary for line in counts), (summary, counts)


def test_first_reason_follows_the_scheduler_filter_order() -> None:
    """A GPU Node of another pool, refused by affinity and by its taint, counts as the taint (TaintToleration runs
    before NodeAffinity) in the breakdown as in the scheduler's line."""
    from sunkcheck.model import Explanation
    from sunkcheck.render.explain import groups

    affinity = Reason("affinity", "a", "node(s) didn't match Pod's node affinity/selector")
    taint = Reason("taint", "t", "node(s) had untolerated taint {gpu: h100}")
    state = Reason("state", "s", "node(s) were not production or not Ready")
    cordon = Reason("unschedulable", "u", "node(s) were unschedulable")
    nodes = (NodeVerdict("mine", "cpu", True, True), NodeVerdict("gpu", "gpu", False, False, (affinity, taint)),
             NodeVerdict("triage", "gpu", False, False, (state, cordon)))
    e = Explanation("NodeSet", "ns", "n", scheduler_summary(nodes), nodes, pools=("cpu",))
    assert e.summary == ("1/3 nodes are available: 1 node(s) had untolerated taint {gpu: h100}, "
                         "1 node(s) were unschedulable.")
    assert groups(e)[-1].counts == ("1  node(s) had untolerated taint {gpu: h100}", "1  node(s) were unschedulable")


def test_a_saved_check_without_a_nodes_pods_says_they_were_not_recorded(serve: Callable[..., Any],
                                                                        tmp_path: Path) -> None:
    """A check saves the Pods of the Nodes it weighed: explain on that snapshot never judges the room or a claim on
    another Node as if nothing ran there ("0 of 110 running", "claimed: none" ok), where the live explain finds
    slurm-gpu-h100's Pod holding its CPUs and claiming it. It says the Pods were not recorded: unknown."""
    serve("several-nodesets")
    saved = tmp_path / "saved"
    assert run("check", "-n", "tenant-slurm", "--nodeset", "slurm-cpu-batch", "--save", str(saved)).code == 0
    args = ("--nodeset", "slurm-cpu-batch", "--node", "g9b8096", "-o", "json")
    live_node = run("explain", "-n", "tenant-slurm", *args).json()["node"]
    live = {c["subject"]: c for c in live_node["checks"]}
    assert (live["cpu"]["ok"], live["other NodeSets on this Node"]["found"]) == (False, "tenant-slurm/slurm-gpu-h100")
    replayed = run("explain", "--snapshot", str(saved), *args).json()["node"]
    decided = [c for c in replayed["checks"] if c["check"] in ("resources", "claimed")]
    assert decided and all((c["ok"], c.get("unknown"), c["found"]) == (False, True, "Pods not recorded") for c in decided)
    assert replayed["pods_recorded"] is False and "pods_recorded" not in live_node
    plain = run("explain", "--snapshot", str(saved), *args[:-2], "-o", "plain")
    assert "Pods not recorded: this snapshot holds the Pods of the Nodes its check weighed" in plain.out
    assert re.search(r"claimed +other NodeSets on this Node +none +Pods not recorded +unknown", plain.out), plain.out
    listed = run("explain", "--snapshot", str(saved), "--nodeset", "slurm-cpu-batch")
    assert "4 Nodes listed feasible: feasible as far as recorded (the Pods on them were not recorded)" in listed.err


def test_a_saved_check_replays_only_the_nodesets_whose_pods_it_recorded(serve: Callable[..., Any],
                                                                        tmp_path: Path) -> None:
    """`check --nodeset slurm-cpu-batch --save` holds every NodeSet (what each holds decides fixes) but the Pods of
    slurm-cpu-batch alone: its replay judged slurm-gpu-h100 without its two Pods (slurmd-pods-missing, which the live
    check never says). The replay judges what the check did; naming another NodeSet says its Pods were not recorded."""
    serve("several-nodesets")
    saved = tmp_path / "saved"
    live = run("check", "-n", "tenant-slurm", "--nodeset", "slurm-cpu-batch", "-o", "json", "--save", str(saved))
    assert json.loads((saved / "meta.json").read_text())["checked"] == ["tenant-slurm/slurm-cpu-batch"]
    replay = run("check", "--snapshot", str(saved), "-o", "json")
    assert replay.verdict() == live.verdict() and replay.code == live.code == 0
    whole = run("check", "-n", "tenant-slurm", "-o", "json").json()  # every NodeSet, live: no slurmd-pods-missing
    assert "slurmd-pods-missing" not in json.dumps(whole["results"])
    for command in ("check", "explain"):
        other = run(command, "--snapshot", str(saved), "--nodeset", "slurm-gpu-h100")
        assert other.code == 3 and other.err == (
            "sunkcheck: error: this snapshot holds the Pods of NodeSet tenant-slurm/slurm-cpu-batch only, not those of "
            "tenant-slurm/slurm-gpu-h100: record them with `sunkcheck snapshot DIR --nodeset NAME` or `sunkcheck check "
            "--nodeset NAME --save DIR`\n"), other.err


def test_a_meta_json_whose_checked_is_not_a_list_of_names_is_refused(tmp_path: Path) -> None:
    """It says whose Pods were read: taken for "every NodeSet's", a replay would judge NodeSets without their Pods."""
    shutil.copytree(FIXTURES / "several-nodesets", tmp_path / "s")
    for bad in ('"tenant-slurm/slurm-cpu-batch"', "[1]", '[""]'):
        (tmp_path / "s" / "meta.json").write_text(f'{{"checked": {bad}}}')
        r = run("check", "--snapshot", str(tmp_path / "s"))
        assert r.code == 3 and r.err.endswith("meta.json: checked: not a list of NodeSets (namespace/name)\n"), r.err


NOT_RECORDED = ("NodeSet tenant-slurm/{} not judged: its Pods were not recorded (this snapshot holds those of NodeSet "
                "tenant-slurm/slurm-cpu-batch only; record every NodeSet's with `sunkcheck snapshot DIR -A`)")


def test_a_replay_asked_for_every_nodeset_names_those_whose_pods_were_not_recorded(tmp_path: Path) -> None:
    """several-nodesets recorded by a check of slurm-cpu-batch alone (OK): replayed with -A or -n, the two NodeSets
    it did not judge (slurm-gpu-spare is CRITICAL) are error lines, and the answer is UNKNOWN, never a silent OK.
    Without either flag the replay judges what the recorded check judged."""
    shutil.copytree(FIXTURES / "several-nodesets", tmp_path / "s")
    (tmp_path / "s" / "meta.json").write_text('{"checked": ["tenant-slurm/slurm-cpu-batch"]}')
    left_out = [NOT_RECORDED.format(n) for n in ("slurm-gpu-h100", "slurm-gpu-spare")]
    for scope in (["-A"], ["-n", "tenant-slurm"]):
        doc = run("check", "--snapshot", str(tmp_path / "s"), "-o", "json", *scope)
        assert doc.code == 3 and doc.json()["errors"] == left_out, doc.out
        assert [r["name"] for r in doc.json()["results"]] == ["slurm-cpu-batch"]
        nagios = run("check", "--snapshot", str(tmp_path / "s"), "-o", "nagios", *scope)
        assert nagios.code == 3 and nagios.out.startswith(f"SUNKCHECK UNKNOWN - {left_out[0]}"), nagios.out
        plain = run("check", "--snapshot", str(tmp_path / "s"), "-o", "plain", *scope).out
        assert all(line in plain for line in left_out), plain
    other = run("check", "--snapshot", str(tmp_path / "s"), "-o", "json", "-n", "elsewhere")
    assert "not judged" not in other.out + other.err
    replay = run("check", "--snapshot", str(tmp_path / "s"), "-o", "json")
    assert replay.code == 0 and replay.json()["errors"] == []
