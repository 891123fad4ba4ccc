"""`sunkcheck explain`: choosing the workload, filtering by pool, the deep view, and bad input."""

from __future__ import annotations

from sunkcheck.analyze.feasibility import scheduler_summary
from sunkcheck.model import NodeVerdict, Reason
from tests.conftest import FIXTURES, run

SEVERAL = str(FIXTURES / "several-nodesets")


def test_the_only_nodeset_is_chosen():
    doc = run("explain", "--snapshot", str(FIXTURES / "pool-split"), "-o", "json").json()
    assert doc["name"] == "slurm-cpu-batch"
    assert doc["summary"] == "6/15 nodes are available: 9 node(s) didn't match Pod's node affinity/selector."


def test_several_nodesets_need_a_name():
    r = run("explain", "--snapshot", SEVERAL)
    assert r.code == 3 and "several NodeSets in scope" in r.err and "--nodeset NAME" in r.err


def test_pool_filters_rows_but_not_the_summary():
    doc = run("explain", "--snapshot", SEVERAL, "--nodeset", "slurm-cpu-batch", "--pool", "slurm-gpu-spare",
              "-o", "json").json()
    assert {n["pool"] for n in doc["nodes"]} == {"slurm-gpu-spare"}
    assert doc["summary"].startswith("4/12 nodes are available")


def test_unknown_node():
    r = run("explain", "--snapshot", SEVERAL, "--nodeset", "slurm-cpu-batch", "--node", "nope")
    assert r.code == 3 and r.err.startswith("sunkcheck: error: --node nope: no such Node (Nodes, nearest first: ")


def test_plain_deep_view_shows_values_compared():
    doc = run("explain", "--snapshot", str(FIXTURES / "no-feasible-nodes"), "-o", "json").json()
    node = next(n["name"] for n in doc["nodes"] if n["pool"] == "slurm-cpu")
    r = run("explain", "--snapshot", str(FIXTURES / "no-feasible-nodes"), "--node", node, "-o", "plain")
    assert r.code == 0
    assert "NOT feasible" in r.out
    line = next(line for line in r.out.splitlines() if line.startswith("taint"))
    assert "sunk.example.com/node=true:NoSchedule" in line and "not tolerated" in line and line.endswith("FAIL")
    line = next(line for line in r.out.splitlines() if "sunk.example.com/node Exists" in line)
    assert line.rstrip().endswith("ok")


def test_scheduler_summary_counts_first_failing_filter_and_sorts_as_strings():
    def v(*reasons):
        return NodeVerdict("n", None, not reasons, False, tuple(reasons))
    taint = Reason("taint", "t", "node(s) had untolerated taint {k: v}")
    other_taint = Reason("taint", "t2", "node(s) had untolerated taint {z: }")
    affinity = Reason("affinity", "a", "node(s) didn't match Pod's node affinity/selector")
    cpu, mem = Reason("resources", "c", "Insufficient cpu"), Reason("resources", "m", "Insufficient memory")
    verdicts = [v(), v(taint, other_taint, affinity)] + [v(affinity)] * 2 + [v(cpu, mem)] * 10
    assert scheduler_summary(verdicts) == (
        "1/14 nodes are available: 1 node(s) had untolerated taint {k: v}, 10 Insufficient cpu, "
        "10 Insufficient memory, 2 node(s) didn't match Pod's node affinity/selector.")


def test_table_marks_infeasible_nodes_red_and_only_those():
    out = run("explain", "--snapshot", str(FIXTURES / "foreign-pod-resources"), "-o", "table").out
    red = {line.split()[0].replace("\x1b[31m", "") for line in out.splitlines() if line.startswith("\x1b[31m")}
    doc = run("explain", "--snapshot", str(FIXTURES / "foreign-pod-resources"), "-o", "json").json()
    assert red == {n["name"] for n in doc["nodes"] if not n["feasible"]} and len(red) == 3
