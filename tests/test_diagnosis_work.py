"""How often a check judges each Node: a pass over thousands of Nodes made twice, or for an answer nothing reads,
is time every check pays. Counted on a pool right after a scale-up (every Node usable, no slurmd Pod yet, the
NodeSet's status current and counting each FEASIBLE) and on the same pool in its steady state."""

from __future__ import annotations

import importlib.util
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sunkcheck import objects as o
from sunkcheck.analyze import feasibility
from sunkcheck.model import Status
from sunkcheck.pipeline import diagnose
from sunkcheck.snapshot import Snapshot
from sunkcheck.target import Target

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NODES = 40


def _generate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate", FIXTURES / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    return generate


def pool(scaled_up: bool) -> Snapshot:
    """A pool of NODES bound by its name; `scaled_up`: its Nodes just arrived and run no slurmd Pod yet."""
    g = _generate()
    c = g.Cluster()
    nodes = c.pool("slurm-cpu", g.GENOA, NODES)[1]
    placed = 0 if scaled_up else NODES
    ns = c.nodeset("slurm-cpu-batch", g.by_pool_name("slurm-cpu"),
                   (NODES, NODES) + (placed,) * 3 + (0, 0, NODES - placed))
    for n in nodes[:placed]:
        c.slurmd(ns, n)
    items = {k: tuple(v["items"]) for k, v in c.files().items()}
    return Snapshot(nodepools=items["nodepools"], nodes=items["nodes"], events=items["events"],
                    nodesets=items["nodesets"], pods=items["pods"])


def looked_up(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Each Node's look-ups in the feasibility engine's memo (one per pass of a check over it), by Node name."""
    asked: Counter[str] = Counter()
    memoized = feasibility.memoized

    def counted(memo: dict, node: dict, compute: Callable[..., Any]) -> Any:
        asked[o.name(node)] += 1
        return memoized(memo, node, compute)

    monkeypatch.setattr(feasibility, "memoized", counted)
    return asked


@pytest.mark.parametrize("scaled_up", [True, False], ids=["scaled-up", "steady"])
def test_the_diagnosis_looks_each_pool_node_up_once(monkeypatch: pytest.MonkeyPatch, scaled_up: bool) -> None:
    """Once per Node, for the verdict every row shares (the Pods on each Node are read, so its room is weighed beside
    them), and once more the first, which shows the NodeSet selects the pool. Not again to count the Nodes out of
    service (a feasible Node is in service), nor to ask whether a Node stays selected once CKS reapplies the pool's
    labels where no Node carries a label by hand."""
    snap = pool(scaled_up)
    asked = looked_up(monkeypatch)
    report = diagnose(snap, Target(nodeset="slurm-cpu-batch"))
    status = Status.WARNING if scaled_up else Status.OK  # slurmd-pods-missing until the Pods exist
    assert report.results[0].status is status and len(report.results[0].nodes) == NODES
    names = sorted(o.name(n) for n in snap.nodes or () if o.pool_of(n) == "slurm-cpu")
    assert [asked[name] for name in names] == [2] + [1] * (NODES - 1)
    assert all(asked[o.name(n)] == 1 for n in snap.nodes or () if o.name(n) not in names)  # any other Node: its verdict


def test_the_read_plan_weighs_each_pool_node_once_without_building_its_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after a scale-up the plan counts the Nodes the NodeSet can be placed on (its status counts each FEASIBLE,
    so no Pod there is read): a yes or no per Node, one look-up each, no verdict built."""
    from sunkcheck import plan as planning
    from sunkcheck.source import declared_reads

    snap = pool(scaled_up=True)
    asked = looked_up(monkeypatch)
    verdicts: list[str] = []
    evaluate = planning.evaluate

    def judged(workload: feasibility.Workload, node: dict, *args: Any, **kwargs: Any) -> Any:
        verdicts.append(o.name(node))
        return evaluate(workload, node, *args, **kwargs)

    monkeypatch.setattr(planning, "evaluate", judged)
    nodes = [n for n in snap.nodes or () if o.pool_of(n) == "slurm-cpu"]
    plan = planning.Plan(declared_reads(Target(nodeset="slurm-cpu-batch")))
    assert plan.pod_nodes(list(snap.nodesets or ()), nodes, [], list(snap.nodepools or ()), ()) == set()
    assert verdicts == [] and sorted(asked.values()) == [1] * NODES


def test_the_caps_keep_a_verdict_without_reasons_as_it_is() -> None:
    """Every feasible Node (right after a scale-up, every Node) has nothing to cap: its verdict is not copied."""
    from sunkcheck.bounds import bounded

    report = diagnose(pool(scaled_up=True), Target(nodeset="slurm-cpu-batch"))
    nodes = report.results[0].nodes
    assert len(nodes) == NODES and all(not v.reasons for v in nodes)
    assert all(a is b for a, b in zip(bounded(report).results[0].nodes, nodes, strict=True))


def test_pool_nodes_unusable_lists_the_pool_nodes_it_judges_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The row counts the pool's Nodes and groups the infeasible ones by drift from one list of them: one pass over
    the pool's Nodes a NodeSet, not one for the count and another for the grouping."""
    from sunkcheck.analyze.binding import Binding
    from sunkcheck.symptoms.nodeset import pool_nodes_unusable as unusable

    made: list[Binding] = []
    judged = unusable._judged

    def counted(b: Binding) -> list[tuple[dict, str]]:
        made.append(b)
        return judged(b)

    monkeypatch.setattr(unusable, "_judged", counted)
    report = diagnose(pool(scaled_up=True), Target(nodeset="slurm-cpu-batch"))
    assert len(report.results[0].nodes) == NODES and len(made) == 1


class Walked(tuple[Any, ...]):
    """A pass's answers that count how often they are walked."""

    walks = 0

    def __iter__(self) -> Iterator[Any]:
        Walked.walks += 1
        return super().__iter__()


def test_the_nodes_step_walks_the_health_of_a_pool_all_ready_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Node of the pool Ready (right after a scale-up): its health is walked for the counts and for the Nodes
    starting, not a third time for the Nodes not Ready it would name: the count says there are none."""
    from sunkcheck.analyze.cluster import Cluster

    each = Cluster.each

    def counted(self: Cluster, how: tuple, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        answers = each(self, how, *args, **kwargs)
        return Walked(answers) if how == ("health",) else answers

    monkeypatch.setattr(Cluster, "each", counted)
    monkeypatch.setattr(Walked, "walks", 0)
    report = diagnose(pool(scaled_up=True), Target(nodeset="slurm-cpu-batch"))
    nodes = next(s for s in report.results[0].steps if s.name == "nodes")
    assert f"{NODES} Ready" in nodes.summary and "not Ready:" not in nodes.summary
    assert Walked.walks == 2
