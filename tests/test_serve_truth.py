"""What serve says is true when it says it: the idle-pool note from the Pods check reads (every Node watched
too), transitions closed across UNKNOWN, a verdict's time that moves on while a quiet cluster stays as judged,
and a target that does not exist said at once."""

from __future__ import annotations

import copy
from dataclasses import replace

from sunkcheck import snapshot
from sunkcheck.pipeline import diagnose
from sunkcheck.target import Target
from tests.conftest import FIXTURES, run
from tests.test_serve import POOL_LABEL, Serve, checked, follows, serving, verdict

TIER = "team.example.com/tier"
BUSY = "healthy-busy-same-type-pool"  # slurm-cpu-batch on slurm-cpu; k8s-cpu, same type, runs a web frontend


def bound_by_tier(idle: bool) -> snapshot.Snapshot:
    """BUSY with the NodeSet bound by a label its pool sets rather than the pool's name: the read plan needs every
    Node (serve watches them all, no watch of one per pool is made). `idle`: k8s-cpu's frontend gone."""
    snap = snapshot.load(FIXTURES / BUSY)
    nodes = [copy.deepcopy(n) for n in snap.nodes or ()]
    for n in nodes:
        if n["metadata"]["labels"].get(POOL_LABEL) == "slurm-cpu":
            n["metadata"]["labels"][TIER] = "batch"
    pools = [copy.deepcopy(p) for p in snap.nodepools or ()]
    for p in pools:
        if p["metadata"]["name"] == "slurm-cpu":
            p["spec"]["nodeLabels"] = {TIER: "batch"}
    [nodeset] = copy.deepcopy(list(snap.nodesets or ()))
    term = nodeset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    term["matchExpressions"] = [e if e["key"] != POOL_LABEL else {"key": TIER, "operator": "In", "values": ["batch"]}
                                for e in term["matchExpressions"]]
    pods = tuple(p for p in snap.pods or () if not (idle and p["metadata"]["namespace"] == "web"))
    return replace(snap, nodepools=tuple(pools), nodes=tuple(nodes), nodesets=(nodeset,), pods=pods)


def notes(doc: dict) -> list[str]:
    return [n["id"] for r in doc["results"] for n in r.get("notes", ())]


def test_with_every_node_watched_serve_and_wait_read_the_pods_checks_idle_pool_probe_reads(serve: Serve) -> None:
    """The probe's first Node of the same-type pool is taken from the watch of every Node (no watch of one is made
    then): its Pods are watched, a workload there makes the pool someone's, as in check; an idle pool is noted by
    all three alike."""
    for idle in (False, True):
        api = serve(bound_by_tier(idle))
        want = checked(api)
        assert notes(want) == (["idle-pool"] if idle else [])
        with serving(api) as service:
            assert "nodes" in {r.source.name for r in service.reflectors}  # every Node, as check reads them
            got, _ = follows(service, api)
        assert got == verdict(want)
        waited = run("check", "-A", "--wait", "5s", "-o", "json")
        assert notes(waited.json()) == notes(want), waited.err


def test_no_pool_is_called_idle_from_pods_not_read() -> None:
    """A pool whose Nodes' Pods were not all read (a failed list, a probe not made yet) may run anyone's workload:
    no idle-pool note claims "only node agents run there"."""
    snap = snapshot.load(FIXTURES / "healthy-idle-pool")
    assert notes_of(snap) == ["idle-pool"]
    every = {n["metadata"]["name"] for n in snap.nodes or ()}
    spare = sorted(n["metadata"]["name"] for n in snap.nodes or () if n["metadata"]["labels"].get(POOL_LABEL) == "slurm-gpu-2")
    assert notes_of(replace(snap, pod_nodes=frozenset(every))) == ["idle-pool"]  # every Pod read: idle
    assert notes_of(replace(snap, pod_nodes=frozenset(every - {spare[0]}))) == []


def notes_of(snap: snapshot.Snapshot) -> list[str]:
    return [n.id for r in diagnose(snap, Target()).results for n in r.notes]
