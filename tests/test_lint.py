"""`sunkcheck lint`: every id fires on its fixture at the marked line and not on its near miss; SUNK's
composition rules; --render; the what-if check; bad input."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sunkcheck.symptoms.lint import RULES
from sunkcheck.values.compose import Effective, compose, merge
from sunkcheck.values.yamlfile import load
from tests.conftest import FIXTURES, ROOT, Run, expected, run
from tests.kubeapi import FakeApi

LINT = FIXTURES / "lint"
FIRING = sorted(p for p in LINT.glob("*.yaml") if not p.name.endswith(".ok.yaml"))
NEAR_MISS = sorted(LINT.glob("*.ok.yaml"))


def markers(path: Path) -> set[tuple[str, int]]:
    """`# <- id` comments: the finding `id` must point at that line."""
    return {(m.group(1), n) for n, line in enumerate(path.read_text().splitlines(), 1)
            for m in re.finditer(r"# <- ([a-z-]+)", line)}


def findings(path: Path) -> tuple[int, set[tuple[str, int]], dict]:
    r = run("lint", str(path), "-o", "json")
    doc = r.json()
    found = set()
    for result in doc["results"]:
        for s in result["symptoms"]:
            where = re.match(r"^(.*):(\d+): ", s["evidence"][0])
            assert where and where.group(1) == str(path), s["evidence"]
            found.add((s["id"], int(where.group(2))))
    return r.code, found, doc


@pytest.mark.parametrize("path", FIRING, ids=lambda p: p.stem)
def test_each_id_fires_at_the_marked_line(path: Path) -> None:
    code, found, doc = findings(path)
    assert found == markers(path)
    assert path.stem in {i for i, _ in found}
    severities = {s["severity"] for r in doc["results"] for s in r["symptoms"]}
    assert code == (2 if "critical" in severities else 1 if "warning" in severities else 0)
    assert all(s["fix"] for r in doc["results"] for s in r["symptoms"])


@pytest.mark.parametrize("path", NEAR_MISS, ids=lambda p: p.stem)
def test_near_miss_is_clean(path: Path) -> None:
    code, found, _ = findings(path)
    assert found == set() and code == 0


def test_every_lint_id_has_a_fixture_pair() -> None:
    assert {p.stem for p in FIRING} == {r.id for r in RULES}
    assert {p.name.removesuffix(".ok.yaml") for p in NEAR_MISS} == {r.id for r in RULES}


def test_info_leaves_the_status_ok() -> None:
    code, _, doc = findings(LINT / "values-replicas-set.yaml")
    assert code == 0 and doc["status"] == "ok" and doc["results"][0]["symptoms"][0]["severity"] == "info"


# --- SUNK's composition rules ---------------------------------------------------------------------------

def compose_text(tmp_path: Path, text: str, release: str = "slurm") -> dict[str, Effective]:
    path = tmp_path / "values.yaml"
    path.write_text(text)
    return {e.key: e for e in compose(merge(load(path)), release)}


LAYERED = """
compute:
  nodes:
    a:
      tolerations: [{key: ta, operator: Exists}]
      resources: {requests: {cpu: "1", memory: 1Gi}}
      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [
        {matchExpressions: [{key: pool, operator: In, values: [p1]}, {key: ka, operator: Exists}]},
        {matchExpressions: [{key: dropped, operator: Exists}]}]}}}
    b:
      tolerations: [{key: tb, operator: Exists}]
      resources: {requests: {cpu: "2"}}
      gresGpu: h100:8
      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [
        {matchExpressions: [{key: pool, operator: In, values: [p2]}]}]}}}
    on:
      enabled: true
      tolerations: [{key: tc, operator: Exists}]
    def:
      enabled: true
      definitions: [a, b, on]
      tolerations: [{key: own, operator: Exists}]
      gresGpu: null
      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [
        {matchExpressions: [{key: pool, operator: In, values: [p3]}, {key: kd, operator: Exists}]}]}}}
"""


def test_layers_compose_as_sunk_does(tmp_path: Path) -> None:
    e = compose_text(tmp_path, LAYERED)["def"]
    assert e.nodeset == "slurm-def" and e.layers == ("a", "b")  # the enabled "on" is not a layer
    assert [t["key"] for t in e.tolerations] == ["ta", "tb", "own"]  # accumulate, layers first, own last
    keys = [(x["key"], x.get("values")) for x in e.expressions]
    assert keys == [("node.coreweave.cloud/state", ["production"]),  # inherited
                    ("pool", ["p1", "p2", "p3"]),  # same key: values unioned
                    ("ka", None), ("kd", None),
                    ("pool", ["p3"])]  # the own same-key expression stays in place: narrower
    assert "dropped" not in str(e.expressions)  # only a layer's first term takes part
    assert e.values["resources"] == {"requests": {"cpu": "2", "memory": "1Gi"}}  # later layer wins, maps merge
    assert e.values["gresGpu"] is None  # own values last: null clears the inherited GPU


def test_values_files_merge_in_order_with_origins(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("compute:\n  nodes:\n    x:\n      enabled: true\n      replicas: 2\n")
    (tmp_path / "prod.yaml").write_text("compute:\n  nodes:\n    x:\n      replicas: 5\n")
    values = merge(load(tmp_path / "base.yaml") + load(tmp_path / "prod.yaml"))
    assert values.nodes["x"] == {"enabled": True, "replicas": 5}
    assert values.where(("compute", "nodes", "x", "replicas")) == f"{tmp_path / 'prod.yaml'}:4"
    assert values.where(("compute", "nodes", "x", "enabled")) == f"{tmp_path / 'base.yaml'}:4"


def test_render_golden() -> None:
    """Set UPDATE_GOLDEN=1 to rewrite after an intended change, then review the diff."""
    import os

    text = run("lint", "--render", str(LINT / "values-layer-enabled.ok.yaml"), "--release", "slurm").out
    golden = ROOT / "tests" / "golden" / "render-layered.yaml"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    assert "nodeset: slurm-cpu-a192-genoa" in text and "node.coreweave.cloud/state" in text


def test_render_one_nodeset_and_unknown_name() -> None:
    one = run("lint", "--render", str(LINT / "values-layer-enabled.ok.yaml"), "--nodeset", "slurm-cpu-a192-genoa")
    assert one.code == 0 and one.out.count("nodeset:") == 1
    r = run("lint", "--render", str(LINT / "values-layer-enabled.ok.yaml"), "--nodeset", "nope")
    assert r.code == 3 and "no enabled definition creates it" in r.err


# --- what-if --------------------------------------------------------------------------------------------

WHATIF = {  # fixture -> values that create the deployed NodeSet (release slurm, definition cpu-batch)
    "no-feasible-nodes": "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
                         "[{matchExpressions: [{key: sunk.example.com/node, operator: Exists}]}]}}}",
    "healthy-dedicated": "tolerations: [{key: sunk.example.com/node, operator: Exists}]\n      "
                         "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
                         "[{matchExpressions: [{key: sunk.example.com/node, operator: Exists}]}]}}}",
    "pool-split": "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
                  "[{matchExpressions: [{key: compute.coreweave.com/node-pool, operator: In, values: [slurm-cpu-a]}]}]}}}",
    "replicas-cap": "replicas: 4\n      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                    "{nodeSelectorTerms: [{matchExpressions: [{key: compute.coreweave.com/node-pool, operator: In, "
                    "values: [slurm-cpu]}]}]}}}",
    "nodeselector-ignored": "nodeSelector: {sunk.example.com/node: \"true\"}",
    "foreign-pod-resources": "resources: {requests: {cpu: \"160\", memory: 1200Gi}, limits: {memory: 1200Gi}}\n      "
                             "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
                             "[{matchExpressions: [{key: compute.coreweave.com/node-pool, "
                             "operator: In, values: [slurm-cpu]}]}]}}}",
}


@pytest.mark.parametrize("case", sorted(WHATIF))
def test_what_if_predicts_what_check_finds_once_deployed(case: str, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(f"compute:\n  nodes:\n    cpu-batch:\n      enabled: true\n      gresGpu: null\n      {WHATIF[case]}\n")
    predicted = run("check", "--snapshot", str(FIXTURES / case), "--values", str(values), "-o", "json")
    deployed = expected(case)
    got = {f"{r['namespace']}/{r['name']}": sorted(s["id"] for s in r["symptoms"]) for r in predicted.json()["results"]}
    assert got == deployed["symptoms"] and predicted.code == deployed["exit"]


@pytest.mark.parametrize("amount, why", [("64gb", "not a valid quantity"),
                                         ("-100Gi", "a negative amount, which the API server refuses")])
def test_what_if_with_an_invalid_quantity_never_reads_it_as_zero(tmp_path: Path, amount: str, why: str) -> None:
    """`64gb` is no Kubernetes quantity, and the API server refuses a negative request: it would refuse the Pods.
    Read as 0 (or as the negative amount) it fitted every Node."""
    values = tmp_path / "values.yaml"
    values.write_text("compute:\n  nodes:\n    cpu-batch:\n      enabled: true\n      gresGpu: null\n      "
                      + WHATIF["foreign-pod-resources"].replace("1200Gi", amount) + "\n")
    doc = run("check", "--snapshot", str(FIXTURES / "foreign-pod-resources"), "--values", str(values), "-o", "json").json()
    nodes = [n for n in doc["results"][0]["nodes"] if n["pool"] == "slurm-cpu"]
    assert nodes and not any(n["feasible"] for n in nodes)
    unknown = f"containers[slurmd] requests memory '{amount}', {why}: cannot tell whether it fits"
    assert all(unknown in [r["detail"] for r in n["reasons"]] for n in nodes)
    assert any(e.startswith("NodeSet tenant-slurm/slurm-cpu-batch: Nodes ") and e.endswith(unknown) for e in doc["errors"])


# --- bad input ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("content, message", [
    ("compute:\n  nodes: [1, 2\n", "invalid YAML"),
    ("a: !!python/object/apply:os.system [id]\n", "could not determine a constructor"),
    ("apiVersion: apps/v1\nkind: Deployment\n", "a Deployment, not SUNK values or a NodePool manifest"),
    ("compute:\n  other: 1\n", "no compute.nodes in these values"),
    ("- 1\n- 2\n", "not SUNK values or a NodePool"),
])
def test_bad_input_is_one_line_with_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "v.yaml"
    path.write_text(content)
    r = run("lint", str(path))
    assert r.code == 3 and message in r.err and str(path) in r.err
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err


def test_missing_file(tmp_path: Path) -> None:
    r = run("lint", str(tmp_path / "nope.yaml"))
    assert r.code == 3 and "cannot read" in r.err


# --- misshapen affinity: a values-wrong-type finding, never an internal error ----------------------------

REQUIRED = "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: %s}}"
MISSHAPEN = {  # the definition's affinity line -> what the finding says
    "affinity: [1]": "affinity is list [1], expected a mapping",
    "affinity: {nodeAffinity: [1]}": "affinity.nodeAffinity is list [1], expected a mapping",
    REQUIRED % "[1]": "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution is list [1], expected a mapping",
    REQUIRED % "{nodeSelectorTerms: [1]}": "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0] is int 1, "
                                           "expected a mapping",
    REQUIRED % "{nodeSelectorTerms: [{matchExpressions: [1]}]}": "nodeSelectorTerms[0].matchExpressions[0] is int 1, "
                                                                 "expected a mapping",
    REQUIRED % "{nodeSelectorTerms: [{matchExpressions: [{key: [1], operator: In, values: [a]}]}]}":
        "matchExpressions[0].key is list [1], expected a string",
    REQUIRED % "{nodeSelectorTerms: [{matchExpressions: [{key: a, operator: In, values: 5}]}]}":
        "matchExpressions[0].values is int 5, expected a list",
    "affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: 5}}":
        "affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution is int 5, expected a list",
    "definitions: 5": "definitions is int 5, expected a list",
}


@pytest.mark.parametrize("line", sorted(MISSHAPEN))
def test_misshapen_affinity_is_a_wrong_type_finding_or_one_line_error(tmp_path: Path, line: str) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(f"compute:\n  nodes:\n    x:\n      enabled: true\n      gresGpu: null\n      {line}\n")
    code, found, doc = findings(values)
    assert code == 2 and ("values-wrong-type", 6) in found
    assert any(MISSHAPEN[line] in s["evidence"][0] for r in doc["results"] for s in r["symptoms"])
    for args in (("lint", "--render", str(values)),
                 ("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), "--values", str(values))):
        r = run(*args)
        assert r.code == 3 and r.out == "" and f"{values}:6: " in r.err and MISSHAPEN[line] in r.err
        assert len(r.err.strip().splitlines()) == 1 and "internal error" not in r.err


# --- what a values file may be: a regular file or a FIFO (`<(helm get values ...)`), read up to a cap -----

def lint_in_a_subprocess(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sunkcheck", "lint", *args], capture_output=True, text=True,
                          timeout=30, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_a_fifo_nobody_writes_is_empty_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "values.yaml"
    os.mkfifo(fifo)
    r = lint_in_a_subprocess(str(fifo))
    assert r.returncode == 3
    assert r.stderr == f"sunkcheck: error: {fifo}: no YAML document (expected SUNK values or a NodePool manifest)\n"


def test_a_fifo_with_a_writer_is_read(tmp_path: Path) -> None:
    values = "compute:\n  nodes:\n    x:\n      enabled: true\n      gresGpu: null\n      definitions: 5\n"
    r = subprocess.run(f"{sys.executable} -m sunkcheck lint -o json <(printf '%s' \"$V\")", shell=True,
                       executable="/bin/bash", capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, PYTHONPATH=str(ROOT), V=values))
    assert r.returncode == 2, r.stderr
    assert next(s["id"] for s in json.loads(r.stdout)["results"][0]["symptoms"]) == "values-wrong-type"


def test_a_device_is_refused_without_reading_it(tmp_path: Path) -> None:
    zero = tmp_path / "values.yaml"
    zero.symlink_to("/dev/zero")
    r = lint_in_a_subprocess(str(zero))
    assert r.returncode == 3 and r.stderr == f"sunkcheck: error: {zero}: cannot read: a device, not a regular file or FIFO\n"


def test_a_values_file_past_16_mb_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "values.yaml"
    big.write_text("# padding\n" * ((17 << 20) // 10))
    r = run("lint", str(big))
    assert r.code == 3 and r.err == f"sunkcheck: error: {big}: larger than 16 MB: refusing the rest\n"
    r = run("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), "--values", str(big))
    assert r.code == 3 and "larger than 16 MB" in r.err


def test_an_empty_file_says_why(tmp_path: Path) -> None:
    empty = tmp_path / "values.yaml"
    empty.write_text("# nothing yet\n")
    for args in (("lint", str(empty)), ("lint", "--render", str(empty))):
        r = run(*args)
        assert r.code == 3 and r.out == "", args
        assert r.err == f"sunkcheck: error: {empty}: no YAML document (expected SUNK values or a NodePool manifest)\n"


# --- every command reads one file the same way: a wrong shape is refused or a finding, never OK -----------

DEFINITION = ("      enabled: true\n      gresGpu: null\n      affinity: {nodeAffinity: {"
              "requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: "
              "[{key: compute.coreweave.com/node-pool, operator: In,"
              " values: [slurm-cpu]}]}]}}}\n")
REFUSED = {  # the file -> (line, what all of lint, --render and check --values say)
    "compute:\n  nodes:\n    1:\n" + DEFINITION: (3, "compute.nodes key 1: YAML reads it as an integer, not a name"),
    "compute:\n  nodes:\n    null:\n" + DEFINITION: (3, "compute.nodes key null: YAML reads it as null, not a name"),
    "compute:\n  nodes:\n    2020-01-01:\n" + DEFINITION: (3, "compute.nodes key 2020-01-01: YAML reads it as a date"),
    "compute:\n  nodes:\n    a: 5\n": (3, "compute.nodes.a is an integer, not a mapping"),
    "compute:\n  nodes:\n    a: [x]\n": (3, "compute.nodes.a is a list, not a mapping"),
    'compute:\n  nodes:\n    "cpu\\uD800":\n' + DEFINITION: (3, "a string holds a lone UTF-16 surrogate \\ud800"),
    'compute:\n  nodes:\n    cpu:\n' + DEFINITION.replace("slurm-cpu]", '"slurm\\uDC00"]'):
        (6, "a string holds a lone UTF-16 surrogate \\udc00"),
    "kind: NodePool\nmetadata: [1]\nspec: [2]\n": (2, "metadata is a list, expected an object"),
    "kind: NodePool\nmetadata: {name: x}\nspec:\n  nodeLabels: [a]\n": (4, "NodePool x: spec.nodeLabels is a list"),
    "kind: NodePool\nmetadata: {name: x}\nspec:\n  nodeTaints: {a: b}\n": (4, "NodePool x: spec.nodeTaints is an object"),
    'kind: NodePool\nmetadata: {name: "p\\uD800"}\n': (2, "lone UTF-16 surrogate \\ud800"),
}
WRONG_TYPE = {  # a definition's line -> what lint's values-wrong-type finding says (--render and check refuse it)
    "definitions: [1, {a: b}, null, [x]]": ["definitions[0] is int 1, expected a string",
                                            "definitions[1] is dict {'a': 'b'}, expected a string",
                                            "definitions[2] is null, expected a string",
                                            "definitions[3] is list ['x'], expected a string"],
    "tolerations: [{key: a, operator: Exists, effect: [NoSchedule]}, 5, null]":
        ["tolerations[0].effect is list ['NoSchedule'], expected a string", "tolerations[1] is int 5, expected a mapping",
         "tolerations[2] is null, expected a mapping"],
    "replicas: true": ["replicas is bool True, expected a whole number"],
    "resources: {requests: {cpu: [1]}, limits: 5}": ["resources.requests.cpu is list [1], expected a string or number",
                                                     "resources.limits is int 5, expected a mapping"],
}


def _every_command(path: Path) -> list[Run]:
    return [run("lint", str(path)), run("lint", "--render", str(path)),
            run("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), "--values", str(path))]


@pytest.mark.parametrize("content", sorted(REFUSED), ids=lambda c: repr(c.splitlines()[2 if "nodes" in c else 1]))
def test_a_file_of_the_wrong_shape_is_refused_alike_by_every_command(tmp_path: Path, content: str) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(content)
    line, message = REFUSED[content]
    for r in _every_command(path):
        assert r.code == 3 and r.out == "", r.err
        assert r.err.startswith(f"sunkcheck: error: {path}:{line}: ") and message in r.err, r.err
        assert len(r.err.strip().splitlines()) == 1 and "internal error" not in r.err


@pytest.mark.parametrize("line", sorted(WRONG_TYPE))
def test_a_value_of_the_wrong_shape_is_a_finding_never_ok(tmp_path: Path, line: str) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(f"compute:\n  nodes:\n    x:\n{DEFINITION}      {line}\n")
    code, _found, doc = findings(path)
    evidence = [s["evidence"][0] for r in doc["results"] for s in r["symptoms"] if s["id"] == "values-wrong-type"]
    assert code == 2 and evidence == [f"{path}:7: {why}" for why in WRONG_TYPE[line]]
    for r in _every_command(path)[1:]:
        assert r.code == 3 and r.out == "" and f"{path}:7: compute.nodes.x.{WRONG_TYPE[line][0]}" in r.err


def test_a_definition_set_to_null_is_deleted_as_helm_does(tmp_path: Path) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(f"compute:\n  nodes:\n    gone: null\n    x:\n{DEFINITION}")
    lint, render, check = _every_command(path)
    assert lint.code == 0 and "gone" not in lint.out
    assert render.code == 0 and "nodeset: slurm-x\n" in render.out and "gone" not in render.out
    assert check.code != 3 and "slurm-gone" not in check.out


def test_the_summary_lists_file_definition_and_findings_within_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two values definitions (slurm-cpu: an enabled layer; cpu-a192-genoa: lists it, binds to nothing of its own)
    and two NodePools (gb200 and gb300, gb200 in conflict over the target) from two files. Too wide for aligned
    columns at 60 (a path, ids kept whole), each is one record of `HEADER value` pairs."""
    monkeypatch.setenv("COLUMNS", "60")
    values, pools = LINT / "values-layer-enabled.yaml", LINT / "nodepool-target-conflict.yaml"
    lines = run("lint", str(values), str(pools), "-o", "plain").out.splitlines()
    summary = lines[2:lines.index("", 3)]
    assert max(map(len, summary)) <= 60  # the summary (the headline stays one line)
    records: list[str] = []
    for line in summary:  # a record's lines after its first are indented; a break within a pair adds no space
        if line.startswith("    "):
            records[-1] += line[4:]
        else:
            records.append(line)
    rows = [re.split(r" *(?:FILE|DEFINITION|STATUS|FINDINGS) ", r)[1:] for r in records]
    rows = [[cell.replace(", ", ",") for cell in row] for row in rows]
    assert {tuple(r[1:3]) for r in rows} == {("slurm-cpu", "CRITICAL"), ("cpu-a192-genoa", "CRITICAL"),
                                             ("NodePool/gb200", "CRITICAL"), ("NodePool/gb300", "OK")}
    files = {r[1]: r[0] for r in rows}
    assert files["slurm-cpu"] == f"{values}:4" and files["cpu-a192-genoa"] == f"{values}:17"
    assert files["NodePool/gb200"].startswith(f"{pools}:") and files["NodePool/gb300"].startswith(f"{pools}:")
    findings = {r[1]: r[3] for r in rows}
    assert "values-layer-enabled" in findings["slurm-cpu"] and "values-no-binding" in findings["cpu-a192-genoa"]
    assert findings["NodePool/gb200"] == "nodepool-target-conflict" and findings["NodePool/gb300"] == "-"


def test_a_layer_is_no_target() -> None:
    """slurm-cpu is a layer (no `enabled`) that cpu-a192-genoa lists: one NodeSet, one target."""
    doc = run("lint", str(LINT / "values-layer-enabled.ok.yaml"), "-o", "json").json()
    assert [(r["kind"], r["name"]) for r in doc["results"]] == [("Values", "cpu-a192-genoa")]
    r = run("lint", str(LINT / "values-layer-enabled.ok.yaml"), "-o", "plain")
    assert r.out.startswith("sunkcheck OK: 1 target checked") and "slurm-cpu:" not in r.out


NEW = ("compute:\n  nodes:\n    cpu-new:\n      enabled: true\n      gresGpu: null\n      affinity: {nodeAffinity: "
       "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: "
       "[{key: compute.coreweave.com/node-pool, operator: In, values: [slurm-cpu]}]}]}}}\n")


def test_what_if_predicts_in_the_namespace_helm_would_install_to(tmp_path: Path, serve: Callable[..., FakeApi]) -> None:
    """cpu-new is no deployed NodeSet: it lands where `helm install` without -n puts the release, the kubeconfig
    context's namespace (tenant-slurm in the test kubeconfig), or in -n's; a replay, where its snapshot was read."""
    values = tmp_path / "values.yaml"
    values.write_text(NEW)

    def predicted(*args: str) -> list[str]:
        doc = run("check", "--values", str(values), "-o", "json", *args).json()
        return [f"{r['namespace']}/{r['name']}" for r in doc["results"]]

    serve("healthy-pool-name")
    assert predicted() == ["tenant-slurm/slurm-cpu-new"]
    assert predicted("-n", "research") == ["research/slurm-cpu-new"]
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "healthy-pool-name", snap)
    (snap / "meta.json").write_text(json.dumps({"namespace": "tenant-slurm", "context": "test"}))
    assert predicted("--snapshot", str(snap)) == ["tenant-slurm/slurm-cpu-new"]
    assert predicted("--snapshot", str(snap), "-n", "research") == ["research/slurm-cpu-new"]


def test_dedicated_mismatch_fix_keeps_the_taint_and_the_pools_labels(tmp_path: Path) -> None:
    """The fix adds the label with the taint's own value: a NodeSet tolerating `Equal cpu-b` still tolerates the
    taint, and the nodeLabels block pasted whole keeps the labels the pool had."""
    import yaml

    pool = tmp_path / "pool.yaml"
    pool.write_text("kind: NodePool\nmetadata: {name: cpu-b}\nspec:\n  nodeLabels: {example.com/team: hpc}\n"
                    "  nodeTaints:\n    - {key: slurm.example.com/dedicated, value: cpu-b, effect: NoSchedule}\n")
    doc = run("lint", str(pool), "-o", "json").json()
    fix = next(s["fix"] for r in doc["results"] for s in r["symptoms"] if s["id"] == "nodepool-dedicated-mismatch")
    snippet = yaml.safe_load(fix.split(":\n", 1)[1])
    assert snippet == {"nodeLabels": {"example.com/team": "hpc", "slurm.example.com/dedicated": "cpu-b"}}


def test_no_binding_is_left_to_nodeselector_which_explains_it(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("compute:\n  nodes:\n    cpu-b:\n      enabled: true\n      gresGpu: null\n"
                      "      nodeSelector: {slurm.example.com/partition: cpu-b}\n")
    ids = {s["id"] for r in run("lint", str(values), "-o", "json").json()["results"] for s in r["symptoms"]}
    assert ids == {"values-nodeselector"}


def test_a_definition_and_a_pool_of_one_name_are_told_apart(tmp_path: Path) -> None:
    values, pool = tmp_path / "values.yaml", tmp_path / "pool.yaml"
    values.write_text("compute:\n  nodes:\n    cpu-b:\n      enabled: true\n      gresGpu: null\n"
                      "      nodeSelector: {slurm.example.com/partition: cpu-b}\n      tolerance: []\n")
    pool.write_text("kind: NodePool\nmetadata: {name: cpu-b}\nspec:\n  nodeLabels: {coreweave.com/team: hpc}\n")
    text = run("lint", str(values), str(pool), "-o", "plain").out
    assert text.splitlines()[0].endswith("(critical: values cpu-b, NodePool/cpu-b)")
    assert "values-nodeselector, values-unknown-key" in text
    nagios = run("lint", str(values), str(pool), "-o", "nagios").out.splitlines()
    assert nagios[0].startswith("SUNKCHECK CRITICAL - cpu-b: values-nodeselector, values-unknown-key; "
                                "NodePool/cpu-b: nodepool-reserved-namespace")
    assert "Values cpu-b: CRITICAL" in nagios
