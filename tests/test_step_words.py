"""The steps' words for what is no failure: the cordoned Nodes named with what their cordonReason says, and slurmd Pods bound to
Nodes that no longer exist counted as such, not "elsewhere"."""

from __future__ import annotations

import copy
from dataclasses import replace

from sunkcheck import snapshot
from sunkcheck.model import Result, Status
from sunkcheck.pipeline import diagnose
from sunkcheck.target import Target
from tests.conftest import FIXTURES, run

REASON = "node.coreweave.cloud/cordonReason"


def judged(snap: snapshot.Snapshot) -> Result:
    [result] = diagnose(snap, Target()).results
    return result


def step(result: Result, name: str) -> str:
    return next(s.summary for s in result.steps if s.name == name)


def edited_nodes(snap: snapshot.Snapshot, edit: dict[str, dict]) -> snapshot.Snapshot:
    """`snap` with each Node named in `edit` given those annotations (None: removed) and cordoned."""
    nodes = []
    for node in snap.nodes or ():
        if (changes := edit.get(node["metadata"]["name"])) is not None:
            node = copy.deepcopy(node)
            node["spec"]["unschedulable"] = True
            notes = node["metadata"].setdefault("annotations", {})
            for key, value in changes.items():
                notes.pop(key, None) if value is None else notes.__setitem__(key, value)
        nodes.append(node)
    return replace(snap, nodes=tuple(nodes))


def test_the_nodes_step_names_the_cordoned_nodes_and_their_cordon_reason_without_a_failure() -> None:
    snap = snapshot.load(FIXTURES / "healthy-cordoned")
    result = judged(snap)
    assert step(result, "nodes").endswith('; cordoned: gc80620 with cordonReason "gpu-health-check failed: triage"')
    # kubectl cordon writes no reason: a hand cordon, said as one; the cluster as OK as before
    hand = judged(edited_nodes(snap, {"gc80620": {REASON: None}}))
    assert step(hand, "nodes").endswith("; cordoned: gc80620 without a cordonReason (a hand cordon, not CKS's)")
    assert (hand.status, next(s.status for s in hand.steps if s.name == "nodes")) == (Status.OK, Status.OK)


def test_the_first_three_cordoned_nodes_are_named_and_a_long_reason_is_cut() -> None:
    snap = snapshot.load(FIXTURES / "healthy-dedicated")
    names = sorted(n["metadata"]["name"] for n in snap.nodes or ()
                   if n["metadata"]["labels"].get("compute.coreweave.com/node-pool"))[:5]
    result = judged(edited_nodes(snap, {name: {REASON: "ib link\nflap " * 20} for name in names}))
    said = step(result, "nodes").split("; cordoned: ", 1)[1]
    cordoned = next(s.counts for s in result.steps if s.name == "nodes").cordoned  # type: ignore[union-attr]
    assert cordoned > 3 and said.endswith(f" and {cordoned - 3} more") and said.count(" with cordonReason ") == 3, said
    first = said.split(", ")[0]  # one line, cut to 80 characters
    assert first.startswith(f'{names[0]} with cordonReason "ib link flap ib link flap ') and first.endswith('..."')
    assert len(first) == len(f'{names[0]} with cordonReason ""') + 80


def test_a_cordon_reason_is_what_the_node_says_and_never_more_entries_of_the_list() -> None:
    """Anyone who may annotate Nodes writes a cordonReason: the line quotes it as the Node's, never says CKS cordoned
    it, and a reason holding the list's own words (a closing quote, a comma, another Node's name) stays inside its
    quotes, so it names no Node that is not cordoned."""
    snap = snapshot.load(FIXTURES / "healthy-cordoned")
    spoof = 'xid 79), g9 by CKS (ok", g8 with cordonReason "ok'
    said = step(judged(edited_nodes(snap, {"gc80620": {REASON: spoof}})), "nodes").split("; cordoned: ", 1)[1]
    assert said == 'gc80620 with cordonReason "xid 79), g9 by CKS (ok\\", g8 with cordonReason \\"ok"', said
    assert "by CKS" not in step(judged(snap), "nodes")


def test_a_slurmd_pod_bound_to_a_deleted_node_is_counted_on_it_not_elsewhere() -> None:
    snap = snapshot.load(FIXTURES / "healthy-dedicated")
    pod = next(p for p in snap.pods or () if p["metadata"]["labels"].get("app.kubernetes.io/name") == "slurmd")
    gone = copy.deepcopy(pod)
    gone["metadata"]["name"] += "-x"
    gone["spec"]["nodeName"] = "g7a1b12"  # no such Node: deleted, its Pod not garbage-collected yet
    result = judged(replace(snap, pods=(*(snap.pods or ()), gone)))
    text = step(result, "pods")
    assert ", 0 elsewhere, 1 on a deleted Node (g7a1b12), " in text, text
    counts = next(s.counts for s in result.steps if s.name == "pods")
    assert (counts.elsewhere, counts.on_deleted_nodes) == (0, 1)  # type: ignore[union-attr]
    # the Nodes not read: no Node is known deleted
    unread = judged(replace(snap, nodes=None, pods=(*(snap.pods or ()), gone)))
    assert "deleted" not in step(unread, "pods")


def test_json_counts_the_pods_on_deleted_nodes_only_when_there_are_some() -> None:
    doc = run("check", "--snapshot", str(FIXTURES / "healthy-dedicated"), "-o", "json").json()
    assert "on_deleted_nodes" not in next(s for s in doc["results"][0]["steps"] if s["name"] == "pods")["counts"]
