"""Targets and discovery: --nodeset, -n, -A, --pool, and how the pool was found."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from sunkcheck.snapshot import Snapshot
from sunkcheck.snapshot import load as load_snapshot
from tests.conftest import FIXTURES, Run, run
from tests.kubeapi import FakeApi

SEVERAL = str(FIXTURES / "several-nodesets")


def results(*args: str) -> tuple[Run, list]:
    r = run("check", "--snapshot", *args, "-o", "json")
    return r, r.json()["results"] if r.code != 3 or r.out else []


def test_all_nodesets_in_the_namespace() -> None:
    _, res = results(SEVERAL, "-n", "tenant-slurm")
    assert [r["name"] for r in res] == ["slurm-cpu-batch", "slurm-gpu-h100", "slurm-gpu-spare"]


def test_one_nodeset_and_its_exit_code() -> None:
    r, res = results(SEVERAL, "--nodeset", "slurm-gpu-h100")
    assert [x["name"] for x in res] == ["slurm-gpu-h100"] and r.code == 1


def test_unknown_nodeset_lists_what_exists() -> None:
    r = run("check", "--snapshot", SEVERAL, "--nodeset", "nope", "-n", "tenant-slurm")
    assert r.code == 3 and "NodeSets there: slurm-cpu-batch, slurm-gpu-h100, slurm-gpu-spare" in r.err


def test_empty_namespace_is_an_error() -> None:
    r = run("check", "--snapshot", SEVERAL, "-n", "elsewhere")
    assert r.code == 3 and "no NodeSets in namespace elsewhere" in r.err


def test_all_namespaces_excludes_namespace() -> None:
    r = run("check", "--snapshot", SEVERAL, "-A", "-n", "x")
    assert r.code == 3 and "exclude each other" in r.err


def test_pool_sources() -> None:
    _, res = results(SEVERAL)
    sources = {r["name"]: (r["pools"], r["pool_source"]) for r in res}
    assert sources["slurm-cpu-batch"][0] == ["slurm-cpu"]
    assert "required affinity" in sources["slurm-cpu-batch"][1]
    assert sources["slurm-gpu-spare"][0] == ["slurm-gpu-spare"]
    assert "nodeLabels" in sources["slurm-gpu-spare"][1]
    _, res = results(str(FIXTURES / "pool-labels-missing"))
    assert res[0]["pools"] == ["slurm-cpu"] and "nodeTaints the NodeSet tolerates" in res[0]["pool_source"]


def test_each_ored_term_brings_its_pools_and_the_source_says_how() -> None:
    """A term naming slurm-cpu ORed with one selecting burst-cpu's nodeLabels: both pools, each found its own way, and
    each term's requirement counted on its own pool's Nodes (not the named pool alone, which gave a false CRITICAL)."""
    _, res = results(str(FIXTURES / "healthy-or-terms-two-pools"))
    assert res[0]["pools"] == ["burst-cpu", "slurm-cpu"]
    assert res[0]["pool_source"] == (
        "slurm-cpu: named in the NodeSet's required affinity on compute.coreweave.com/node-pool; "
        "burst-cpu: pools whose Nodes or nodeLabels carry the labels its affinity selects")
    nodes = next(s["summary"] for s in res[0]["steps"] if s["name"] == "nodes")
    assert nodes.endswith("compute.coreweave.com/node-pool In [slurm-cpu] on 3/3, sunk.example.com/burst In [true] on 2/2")


def test_pool_flag_says_which_pools_the_nodeset_is_meant_for_beside_those_it_selects() -> None:
    """--pool is the expectation, not a replacement of what the NodeSet selects."""
    _, res = results(str(FIXTURES / "healthy-pool-name"), "--pool", "inference-h100")
    assert res[0]["pools"] == ["inference-h100", "slurm-cpu"]
    assert res[0]["pool_source"] == ("named in the NodeSet's required affinity on compute.coreweave.com/node-pool; "
                                     "inference-h100: named by --pool")
    assert [s["id"] for s in res[0]["symptoms"]] == ["pool-split"]


def test_pool_not_found_leaves_the_pool_step_unknown() -> None:
    _r, res = results(str(FIXTURES / "hostile-strings"))
    assert res[0]["pools"] == []
    assert {s["name"]: s["status"] for s in res[0]["steps"]}["nodepool"] == "unknown"
    assert "pass --pool" in res[0]["pool_source"]


POOLS_NEAREST_FIRST = "slurm-cpu, slurm-gpu, slurm-gpu-spare, cpu-control-plane"


def test_a_pool_that_does_not_exist_is_a_usage_error_naming_the_pools_nearest_first() -> None:
    for command in (["check"], ["explain", "--nodeset", "slurm-cpu-batch"]):
        r = run(*command, "--snapshot", SEVERAL, "--pool", "slurm-cpuu", "--pool", "slurm-cpu")
        assert r.code == 3 and r.out == "", r.out
        assert r.err == ("sunkcheck: error: --pool slurm-cpuu: no such Node Pool "
                         f"(Node Pools, nearest first: {POOLS_NEAREST_FIRST})\n")


def test_without_the_node_pools_a_pool_exists_when_nodes_carry_its_name(tmp_path: Path) -> None:
    """nodepools.json not captured (a 403, say): the Nodes' pool labels tell which pools exist; a pool no Node
    carries may still exist with no Nodes, so it is not refused: the report says it could not be verified."""
    import shutil

    shutil.copytree(SEVERAL, tmp_path / "s", ignore=shutil.ignore_patterns("nodepools.json"))
    r, res = results(str(tmp_path / "s"), "--nodeset", "slurm-cpu-batch", "--pool", "slurm-cpu")
    assert r.code == 3 and res[0]["pools"] == ["slurm-cpu"]
    assert not any("--pool" in e for e in r.json()["errors"])
    r, res = results(str(tmp_path / "s"), "--nodeset", "slurm-cpu-batch", "--pool", "slurm-cpu-spare")
    assert res[0]["pools"] == ["slurm-cpu", "slurm-cpu-spare"]  # judged beside the pool it selects, not refused
    assert ("--pool slurm-cpu-spare: no Node carries compute.coreweave.com/node-pool=slurm-cpu-spare and the Node "
            "Pools could not be read: cannot tell whether it exists") in r.json()["errors"]
    r = run("explain", "--snapshot", str(tmp_path / "s"), "--nodeset", "slurm-cpu-batch", "--pool", "slurm-cpu-spare")
    assert r.code == 0 and "cannot tell whether it exists" in r.err


def test_an_unknown_pool_is_printed_as_text() -> None:
    r = run("check", "--snapshot", SEVERAL, "--pool", "\x1b]0;owned\x07nope\nx")
    # not a label value: refused before the pools are read, the value written as Python escapes it
    assert r.code == 3 and "\x1b" not in r.err and r.err.count("\n") == 1
    assert "--pool '\\x1b]0;owned\\x07nope\\nx': not a name the API server accepts" in r.err


def daemonsets_only() -> Snapshot:
    """A cluster without NodeSets (the list empty) that runs DaemonSets: three in monitoring, one in kube-system."""
    base = load_snapshot(FIXTURES / "ds-selector-matches-nothing")
    [dcgm] = base.daemonsets or ()
    more = [dcgm | {"metadata": dcgm["metadata"] | {"name": name, "namespace": namespace, "uid": f"uid-{name}"}}
            for namespace, name in (("monitoring", "node-exporter"), ("monitoring", "fluent-bit"),
                                    ("kube-system", "kube-proxy"))]
    return replace(base, nodesets=(), daemonsets=(dcgm, *more))


@pytest.mark.parametrize("scope", (["-n", "monitoring"], ["-A"]))
def test_a_live_cluster_without_nodesets_names_its_daemonsets(scope: list[str], serve: Callable[..., FakeApi]) -> None:
    """As a replay of it does: the DaemonSets in scope, read with one LIST of one bounded page."""
    api = serve(daemonsets_only())
    r = run("check", *scope)
    assert r.code == 3
    names = "dcgm-exporter, fluent-bit, node-exporter" + (", kube-proxy" if "-A" in scope else "")
    names = ", ".join(sorted(names.split(", ")))
    first = names.split(", ")[0]
    assert r.err.endswith(f"; it holds DaemonSets ({names}): pass --daemonset {first}\n"), r.err
    assert f"on context test ({api.url})" in r.err
    [read] = [q for q in api.log if q.path.endswith("/daemonsets")]
    assert read.query == {"limit": "10"} and ("/namespaces/monitoring/" in read.path) == ("-n" in scope)


def test_a_live_cluster_with_nodesets_elsewhere_reads_no_daemonsets(serve: Callable[..., FakeApi]) -> None:
    api = serve("healthy-pool-name")
    r = run("check", "-n", "monitoring")
    assert r.code == 3 and "namespaces with NodeSets there: " in r.err and "--daemonset" not in r.err
    assert not [q for q in api.log if q.path.endswith("/daemonsets")]


def test_a_pool_flag_naming_another_nodesets_pool_is_said_and_noted() -> None:
    """--pool naming a pool another NodeSet holds: the header says --pool named it (not the NodeSet's affinity), and a
    note says whose it is; the status and symptoms stay as they were."""
    plain, _ = results(SEVERAL, "--nodeset", "slurm-cpu-batch")
    r, res = results(SEVERAL, "--nodeset", "slurm-cpu-batch", "--pool", "slurm-gpu")
    assert res[0]["pool_source"].endswith("; slurm-gpu: named by --pool"), res[0]["pool_source"]
    assert [(n["id"], n["text"]) for n in res[0]["notes"]] == [("pool-held-elsewhere", (
        "Node Pool slurm-gpu, said to be meant for slurm-cpu-batch, is another's: NodeSet tenant-slurm/slurm-gpu-h100 "
        "holds it, and slurm-cpu-batch neither names nor selects it"))]
    assert (r.code, res[0]["status"], res[0]["symptoms"]) == (plain.code, "ok", [])
    _, own = results(SEVERAL, "--nodeset", "slurm-cpu-batch", "--pool", "slurm-cpu")
    assert own[0]["notes"] == []  # its own pool
