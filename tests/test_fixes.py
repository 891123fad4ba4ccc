"""Fix text is pasted as printed: no list replaced without its entries, no drain, no Slurm job killed."""

from __future__ import annotations

import copy
import json
import os
import shutil
import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from sunkcheck import objects as o
from sunkcheck import snapshot
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.model import Status, Symptom
from sunkcheck.pipeline import diagnose
from sunkcheck.snapshot import Snapshot
from sunkcheck.bounds import SNIPPET_MARKS, line_kind, unasked
from sunkcheck.symptoms.fixes import (label_nodepool, new_taint_key, prose_list, steps, taint_nodepool, to_yaml,
                                      untaint_node)
from sunkcheck.symptoms.nodeset import RULES as NODESET_RULES
from sunkcheck.target import Target
from tests.conftest import CASES, FIXTURES, expected, replayed, run
from tests.test_copyable import COMMAND
from tests.test_untrusted_input import SHELL_PAYLOAD, _with_payload

Obj = dict[str, Any]
"""A Kubernetes object, or a part of one, as the API server serves it."""
TAINT = {"key": "sunk.example.com/node", "value": "true", "effect": "NoSchedule"}


def symptom(snap: Snapshot, symptom_id: str, target: Target = Target()) -> Symptom:
    return next(s for r in diagnose(snap, target).results for s in r.symptoms if s.id == symptom_id)


def has(text: str, *needles: str, never: tuple[str, ...] = ()) -> None:
    """Every needle (written from the scenario: the object, the key, both values, the command) is in `text`, and
    nothing of `never` (what would make it unsafe or wrong to paste): the wording around them is free."""
    missing, present = [n for n in needles if n not in text], [n for n in never if n in text]
    assert not missing and not present, (missing, present, text)


def entry(**fields: str) -> str:
    """One YAML list entry as a fix prints it, fields in order: `entry(key="k", operator="Exists")`."""
    return "\n".join(("- " if i == 0 else "  ") + f"{k}: {v}" for i, (k, v) in enumerate(fields.items()))


def eviction(namespace: str, name: str) -> str:
    """The line evicting one Pod by name, written here from the Eviction API: the body posted to its subresource."""
    body = f'{{"apiVersion":"policy/v1","kind":"Eviction","metadata":{{"name":"{name}","namespace":"{namespace}"}}}}'
    return f"kubectl create --raw /api/v1/namespaces/{namespace}/pods/{name}/eviction -f - <<< '{body}'"


def asks(namespace: str, name: str, node: str) -> str:
    """What opens a drained slurmd Pod's eviction: a question naming the Pod, its Slurm node (named like it) and its
    Node; it runs only on a typed y, and any other answer says the Pod was skipped and what was read."""
    return (f"printf 'no Slurm job left on Slurm node {name}? y evicts Pod {namespace}/{name} on Node {node}: ' && "
            f"read -r answer && [ \"$answer\" = y ] || {{ printf 'skipped {namespace}/{name}: the answer read was "
            f"\"%s\"\\n' \"$answer\"; false; }} && ")


def drained_eviction(namespace: str, name: str, node: str) -> str:
    """The line evicting a slurmd Pod on `node` whose Slurm node is drained, once a y is typed."""
    return asks(namespace, name, node) + eviction(namespace, name)


def patch_body(command: str) -> tuple[str, Any]:
    """The -p argument of a kubectl patch command line, as the shell would pass it."""
    words = shlex.split(command)
    assert words[:3] == ["kubectl", "patch", "nodepool"] and words[-2] == "-p"
    return next(w.removeprefix("--type=") for w in words if w.startswith("--type=")), json.loads(words[-1])


def test_taints_are_appended_never_replaced() -> None:
    pool = Pool("slurm-cpu", {"spec": {"nodeTaints": [{"key": "team.example.com/gpu", "effect": "NoSchedule"}]}}, (), ())
    assert patch_body(taint_nodepool(pool, [TAINT])) == (
        "json", [{"op": "add", "path": "/spec/nodeTaints/-", "value": TAINT}])


def json_patch(doc: Obj, ops: list[Obj]) -> Obj:
    """`ops` applied to `doc` as the API server applies a JSON patch to a custom resource (evanphx/json-patch v4),
    for the ops a fix prints: `test` compares the member (an absent one reads as null), `add` sets a member or
    appends with `-`. Raises ValueError where the server refuses the whole patch."""
    doc = copy.deepcopy(doc)
    for op in ops:
        *parents, key = op["path"].split("/")[1:]
        at: Any = doc
        for part in parents:
            at = at[int(part)] if isinstance(at, list) else at.get(part)
            if at is None:
                raise ValueError(f"missing path {op['path']}")
        if op["op"] == "test":
            if (at[int(key)] if isinstance(at, list) else at.get(key)) != op["value"]:
                raise ValueError(f"test failed: {op['path']}")
        elif op["op"] == "add" and isinstance(at, list):
            at.append(op["value"]) if key == "-" else at.insert(int(key), op["value"])
        elif op["op"] == "add":
            at[key] = op["value"]
        else:
            raise ValueError(f"op {op['op']} not modelled")
    return doc


OTHER = {"key": "team.example.com/gpu", "value": "h100", "effect": "NoSchedule"}


@pytest.mark.parametrize("spec", [{}, {"nodeTaints": []}, {"nodeTaints": None}], ids=["absent", "empty", "null"])
def test_a_list_created_for_the_first_taint_is_refused_once_someone_filled_it(spec: Obj) -> None:
    """Read with no nodeTaints, the patch creates the list, which would replace one filled since the read (a
    replayed snapshot is old): its test of the list as read makes the API server refuse the patch instead."""
    pool = Pool("slurm-cpu", {"spec": spec}, (), ())
    kind, ops = patch_body(taint_nodepool(pool, [TAINT]))
    assert kind == "json"
    assert json_patch({"spec": spec}, ops)["spec"]["nodeTaints"] == [TAINT]
    with pytest.raises(ValueError, match="test failed"):
        json_patch({"spec": {"nodeTaints": [OTHER]}}, ops)


def test_a_pool_that_could_not_be_read_gets_an_append_and_a_warning() -> None:
    """403 on nodepools: its taints are unknown, so a list-creating patch could drop them."""
    text = taint_nodepool(Pool("slurm-cpu", None, (), ()), [TAINT])
    note, command = text.split("\n")
    assert "could not be read" in note and "fails without changing anything" in note
    assert patch_body(command) == ("json", [{"op": "add", "path": "/spec/nodeTaints/-", "value": TAINT}])


def test_labels_are_merged_key_by_key() -> None:
    """nodeLabels is a map: a merge patch naming only the new key keeps the others, and creates an absent map."""
    command = label_nodepool("slurm-cpu", {"sunk.example.com/node": "true"})
    assert shlex.split(command)[:4] == ["kubectl", "patch", "nodepool", "slurm-cpu"]
    assert patch_body(command) == ("merge", {"spec": {"nodeLabels": {"sunk.example.com/node": "true"}}})


def test_a_pool_name_no_node_pool_can_have_gets_no_command() -> None:
    """Named only by a Node's label or the NodeSet (a hand-edited snapshot's), it would be an argument like any
    other: `--all` a flag."""
    for name in ("slurm cpu", "--all", "slurm-cpu\nkubectl delete nodes --all"):
        assert label_nodepool(name, {"sunk.example.com/node": "true"}) == (
            f"(no command for Node Pool {' '.join(name.split())}: no Node Pool can have that name)")


def test_pool_labels_missing_patches_only_the_missing_key_even_unread() -> None:
    snap = snapshot.load(FIXTURES / "pool-labels-missing")
    for s in (snap, replace(snap, nodepools=None)):
        fix = symptom(s, "pool-labels-missing", Target(pools=("slurm-cpu",))).fix
        assert "kubectl patch nodepool slurm-cpu --type=merge -p " \
               "'{\"spec\":{\"nodeLabels\":{\"sunk.example.com/node\":\"true\"}}}'" in fix
        assert "nodeTaints" not in fix


def test_labels_not_from_pool_appends_a_hand_made_taint() -> None:
    snap = snapshot.load(FIXTURES / "labels-not-from-pool")
    hand = {"key": "team.example.com/owner", "value": "slurm", "effect": "NoSchedule"}
    nodes = tuple(n | {"spec": n["spec"] | {"taints": [*n["spec"].get("taints", []), hand]}}
                  if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu" else n for n in snap.nodes or ())
    ns = (snap.nodesets or ())[0]
    spec = ns["spec"]["template"]["spec"]
    tolerating = ns | {"spec": ns["spec"] | {"template": {"spec": spec | {"tolerations": spec["tolerations"] + [
        {"key": "team.example.com/owner", "operator": "Exists"}]}}}}
    fix = symptom(replace(snap, nodes=nodes, nodesets=(tolerating,)), "labels-not-from-pool").fix
    label_patch, taint_patch = fix.split(":\n", 1)[1].split("\n")
    assert patch_body(label_patch) == ("merge", {"spec": {"nodeLabels": {"sunk.example.com/node": "true"}}})
    assert patch_body(taint_patch) == ("json", [{"op": "add", "path": "/spec/nodeTaints/-", "value": hand}])


def test_a_hand_label_on_some_of_a_pools_nodes_is_not_spread_over_the_pool_unasked() -> None:
    """Two of slurm-cpu's five Nodes carry the hand label: the nodeLabels patch would put it on all five and
    spread the NodeSet over them, right when a replaced Node lost it, wrong when those two were picked out: the
    fix says both. On all five Nodes (the fixture as recorded) the patch stands alone."""
    snap = snapshot.load(FIXTURES / "labels-not-from-pool")
    assert symptom(snap, "labels-not-from-pool").fix.endswith(
        "kubectl patch nodepool slurm-cpu --type=merge -p '{\"spec\":{\"nodeLabels\":{\"sunk.example.com/node\":\"true\"}}}'")
    pool = sorted(n["metadata"]["name"] for n in snap.nodes or ()
                  if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu")
    kept = pool[:2]
    nodes = tuple(n | {"metadata": n["metadata"] | {"labels": {k: v for k, v in n["metadata"]["labels"].items()
                                                                if k != "sunk.example.com/node"}}}
                  if n["metadata"]["name"] in pool[2:] else n for n in snap.nodes or ())
    fix = symptom(replace(snap, nodes=nodes), "labels-not-from-pool").fix
    _, intro, command = fix.split("\n")
    assert f"only {kept[0]}, {kept[1]} of the 5 Nodes of slurm-cpu carry sunk.example.com/node=true:" in intro
    assert "spreads the NodeSet over them" in intro and "a replaced Node lost the label" in intro
    assert ("If only those Nodes are meant for the NodeSet, give them a Node Pool of their own that sets it in its "
            "nodeLabels, and change nothing in slurm-cpu. If the whole pool is") in intro
    assert patch_body(command) == ("merge", {"spec": {"nodeLabels": {"sunk.example.com/node": "true"}}})


def test_a_hand_label_and_taint_on_some_nodes_taint_the_pool_only_in_the_whole_pool_branch() -> None:
    """sc0 and sc1 carry the NodeSet's label and taint by hand. Someone who wants
    only those two dedicated must not find the pool's nodeTaints patch after their branch: each branch carries its
    own commands, the taint (and the DaemonSets to tolerate it first) in the whole-pool one."""
    snap = snapshot.load(FIXTURES / "labels-not-from-pool")
    pool = sorted(n["metadata"]["name"] for n in snap.nodes or ()
                  if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu")
    hand = {"key": "team.example.com/owner", "value": "slurm", "effect": "NoSchedule"}
    nodes = tuple(n | {"metadata": n["metadata"] | {"labels": {k: v for k, v in n["metadata"]["labels"].items()
                                                                if k != "sunk.example.com/node"}}}
                  if n["metadata"]["name"] in pool[2:] else
                  n | {"spec": n["spec"] | {"taints": [*n["spec"].get("taints", []), hand]}}
                  if n["metadata"]["name"] in pool[:2] else n for n in snap.nodes or ())
    ns = (snap.nodesets or ())[0]
    spec = ns["spec"]["template"]["spec"]
    tolerating = ns | {"spec": ns["spec"] | {"template": {"spec": spec | {"tolerations": spec["tolerations"] + [
        {"key": hand["key"], "operator": "Exists"}]}}}}
    fix = symptom(replace(snap, nodes=nodes, nodesets=(tolerating,)), "labels-not-from-pool").fix
    dedicated, whole = fix.split("If the whole pool is")
    assert "If only those Nodes are meant for the NodeSet" in dedicated and "kubectl" not in dedicated
    assert "sets it in its nodeLabels (and the taint in its nodeTaints), and change nothing in slurm-cpu" in dedicated
    label_patch, taint_patch = [line for line in whole.split("\n") if line.startswith("kubectl patch nodepool")]
    assert patch_body(label_patch) == ("merge", {"spec": {"nodeLabels": {"sunk.example.com/node": "true"}}})
    assert patch_body(taint_patch) == ("json", [{"op": "add", "path": "/spec/nodeTaints/-", "value": hand}])


def test_example_taint_key_never_collides() -> None:
    assert new_taint_key(set()) == "sunk.example.com/node"
    assert new_taint_key({"sunk.example.com/node"}) == "sunk.example.com/slurm"
    assert new_taint_key({"sunk.example.com/node", "sunk.example.com/slurm", "sunk.example.com/slurm-2"}) == \
        "sunk.example.com/slurm-3"


def test_foreign_pod_fix_taints_tolerates_and_evicts_only_the_squatter() -> None:
    fix = symptom(snapshot.load(FIXTURES / "foreign-pod-resources"), "foreign-pod-resources").fix
    # the node agents on g18d510 tolerate every taint: none is named; the snapshot holds every Pod: none is said unread
    has(fix, entry(key="sunk.example.com/node", operator="Exists", effect="NoSchedule"), "keep",
        entry(key="sunk.coreweave.com/lock", operator="Exists", effect="NoExecute"),
        "\nkubectl patch nodepool slurm-cpu --type=json", "\n" + eviction("data-eng", "spark-exec-7d9f4-x2k8q"),
        never=("drain", "cilium", "node-problem-detector", "scontrol", "read the Pods", "kubectl delete"))
    body = patch_body(next(line for line in fix.splitlines() if line.startswith("kubectl patch")))
    assert body == ("json", [{"op": "test", "path": "/spec/nodeTaints", "value": None},
                                {"op": "add", "path": "/spec/nodeTaints", "value": [TAINT]}])
    # tolerated first, then tainted, then the squatter evicted: no slurmd Pod refused, none recreated on the pool
    assert fix.index("- key: sunk.example.com/node") < fix.index("kubectl patch") < fix.index("kubectl create --raw")


def test_foreign_pod_fix_warns_of_a_squatter_without_controller_or_tolerating_everything() -> None:
    snap = snapshot.load(FIXTURES / "foreign-pod-resources")
    pods = tuple(p | {"metadata": {k: v for k, v in p["metadata"].items() if k != "ownerReferences"},
                      "spec": p["spec"] | {"tolerations": [{"operator": "Exists"}]}}
                 if p["metadata"]["name"] == "spark-exec-7d9f4-x2k8q" else p for p in snap.pods or ())
    fix = symptom(replace(snap, pods=pods), "foreign-pod-resources").fix
    # no taint keeps a Pod tolerating every taint off: the fix leads with its tolerations, and proposes no taint
    has(fix.splitlines()[0], "data-eng/spark-exec-7d9f4-x2k8q", "toleration")
    # nothing recreates it: its owner's to move, no command removes it
    has(fix, "Pod data-eng/spark-exec-7d9f4-x2k8q has no controller", "ask its owner",
        never=("kubectl patch nodepool", "recreates", "kubectl delete", "eviction"))


def test_misscheduled_drains_the_slurm_nodes_before_evicting_the_pods() -> None:
    """The runbook's two branches: the Nodes still meant for the NodeSet get what changed back (the milan pool in its
    affinity, beside genoa); Nodes meant to leave have their Slurm nodes drained, then idle, before any Pod is
    evicted (each on a typed y)."""
    fix = symptom(snapshot.load(FIXTURES / "misscheduled"), "misscheduled").fix
    lines = fix.splitlines()
    names = "slurm-cpu-batch-012-005,slurm-cpu-batch-012-006"
    assert "- key: compute.coreweave.com/node-pool" in lines and "  values: [slurm-cpu-genoa, slurm-cpu-milan]" in lines
    drain = lines.index(f"scontrol update nodename={names} state=drain "
                        "reason='sunkcheck: Node no longer matches NodeSet slurm-cpu-batch'")
    idle = lines.index(f"squeue -h -w {names}")
    evict = [lines.index(drained_eviction("tenant-slurm", f"slurm-cpu-batch-012-00{i}", node))
             for i, node in ((5, "g369e7b"), (6, "g454da9"))]
    assert lines.index("  values: [slurm-cpu-genoa, slurm-cpu-milan]") < drain < idle < evict[0] < evict[1]
    has(fix, "each command asks first, naming its Pod and Slurm node: answer y only once no job runs there",
        never=("kubectl delete node", "kubectl drain", "--force"))


def _without_pool_label(taint: Obj | None = None) -> Symptom:
    """misscheduled where the Node of a slurmd Pod lacks the CKS pool label (and carries `taint` too)."""
    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    nodes = copy.deepcopy(snap.nodes or ())
    host = next(p for p in snap.pods or () if p["metadata"]["name"].startswith("slurm-cpu-batch-"))["spec"]["nodeName"]
    node = next(n for n in nodes if n["metadata"]["name"] == host)
    del node["metadata"]["labels"][o.POOL_LABEL]
    node["spec"]["taints"] = [*node["spec"].get("taints", []), *([taint] if taint else [])]
    nodesets = copy.deepcopy(snap.nodesets or ())
    nodesets[0]["status"]["numberMisscheduled"] = 1
    return symptom(replace(snap, nodes=nodes, nodesets=nodesets), "misscheduled")


def test_a_node_lacking_the_cks_pool_label_is_a_cks_matter_never_an_edit() -> None:
    """CKS sets compute.coreweave.com/node-pool and reverts edits; a NodeSet bound by it loses its pool if the
    expression changes: a Node running a slurmd Pod without the label gets neither edit, but CKS's diagnosis, and
    the branch keeping the Node opens with editing nothing (never "restore what changed" above it)."""
    fix = _without_pool_label().fix
    has(fix, f"lacks {o.POOL_LABEL}", "CKS manages", "edit neither the label nor that expression", "CoreWeave support",
        "kubectl describe node g18d510\n", never=("correct that expression", "kubectl label", "restore"))
    assert fix.startswith("if Node g18d510 is still meant for the NodeSet, edit nothing yet (only CKS puts back a "
                          f"label it manages):\ng18d510 lacks {o.POOL_LABEL} where")


def test_what_cks_manages_comes_before_any_other_restore_on_the_node() -> None:
    """The Node lacks the CKS pool label and carries a taint the NodeSet does not tolerate: read (or pasted)
    top-down, the CKS step that edits nothing comes first, and the toleration only once CKS has put its label back."""
    fix = _without_pool_label({"key": "example.com/maint", "value": "x", "effect": "NoSchedule"}).fix
    lines = fix.splitlines()
    assert "restore" not in fix[:fix.index("CKS manages")]
    cks = lines.index("kubectl describe node g18d510")
    assert lines[cks + 1] == ("once CKS has put it back, restore the rest; the Pods then count as scheduled again, "
                              "their Slurm jobs untouched:")
    assert cks < lines.index("- key: example.com/maint")


def test_a_pool_label_value_no_edit_accepts_is_never_the_label_to_edit() -> None:
    """The NodeSet excludes its pool's Nodes by the CKS pool label (NotIn one pool), where they run: no edit of the
    values accepts them, so the expression is to correct, never the label, which CKS manages."""
    snap = snapshot.load(FIXTURES / "misscheduled")
    nodesets = copy.deepcopy(snap.nodesets or ())
    spec = nodesets[0]["spec"]["template"]["spec"]
    [term] = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    pool = next(e for e in term["matchExpressions"] if e["key"] == o.POOL_LABEL)
    pool |= {"operator": "NotIn", "values": ["slurm-cpu-milan"]}
    fix = symptom(replace(snap, nodesets=nodesets), "misscheduled").fix
    has(fix, f"where the NodeSet requires {o.POOL_LABEL} NotIn [slurm-cpu-milan]: correct that expression in the node "
        f"definition's affinity (CKS manages {o.POOL_LABEL} and reverts an edit of it)\n", never=("or the label",))


def _relabelled_pool(nodes_too: bool = False) -> Snapshot:
    """healthy-dedicated with the NodeSet requiring sunk.example.com/node In [true] and its pool's nodeLabels
    changed to false (beside another entry); `nodes_too`: CKS has applied it to every Node."""
    snap = snapshot.load(FIXTURES / "healthy-dedicated")
    nodesets, pools = copy.deepcopy(snap.nodesets or ()), copy.deepcopy(snap.nodepools or ())
    nodes = copy.deepcopy(snap.nodes or ())
    terms = nodesets[0]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    terms["nodeSelectorTerms"][0]["matchExpressions"][1] = {"key": "sunk.example.com/node", "operator": "In",
                                                             "values": ["true"]}
    pool = next(p for p in pools if p["metadata"]["name"] == "slurm-cpu")
    pool["spec"]["nodeLabels"] = {"sunk.example.com/node": "false", "team.example.com/owner": "hpc"}
    for n in nodes if nodes_too else ():
        if n["metadata"]["labels"].get("compute.coreweave.com/node-pool") == "slurm-cpu":
            n["metadata"]["labels"]["sunk.example.com/node"] = "false"
    if nodes_too:  # the controller has counted them: none feasible, every Pod misscheduled
        nodesets[0]["status"] |= {"numberFeasible": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 8}
    return replace(snap, nodesets=nodesets, nodepools=pools, nodes=nodes)


def test_a_pool_relabel_not_yet_applied_says_every_node_leaves_and_offers_both_ways_back() -> None:
    """The pool's nodeLabels now set another value than the NodeSet requires; its Nodes still carry the old one.
    No hand label: the row says the pool sets the new value, judged as the coming state is (every Node leaves:
    critical, as once CKS applied it), and offers restoring the pool's value (a merge patch: its other entry stays) or
    accepting the new value beside the old in the NodeSet."""
    [result] = diagnose(_relabelled_pool(), Target()).results
    row = next(s for s in result.symptoms if s.id == "labels-not-from-pool")
    assert row.severity is Status.CRITICAL and "does not set it" not in " ".join(row.evidence)
    assert row.evidence[0].startswith("Node Pool slurm-cpu spec.nodeLabels sets sunk.example.com/node=false now; ")
    assert "individual Nodes" not in row.cause and "once CKS applies" in row.title
    [restore] = [line for line in row.fix.splitlines() if line.startswith("kubectl patch nodepool")]
    assert patch_body(restore) == ("merge", {"spec": {"nodeLabels": {"sunk.example.com/node": "true"}}})
    assert f"{entry(key='sunk.example.com/node', operator='In')}\n  values: ['true', 'false']" in row.fix  # strings, quoted
    applied = diagnose(_relabelled_pool(nodes_too=True), Target()).results[0]
    assert applied.status is Status.CRITICAL  # the state it warned of is judged as severely


def test_with_no_pool_known_the_node_to_compare_with_is_one_the_nodeset_fits_but_for_its_labels() -> None:
    """A GPU NodeSet selecting a label no Node carries: a CPU control-plane Node without GPUs tells nothing about the
    labels meant, so none is named while every Node fails something else too; once the H100 pool is untainted, one
    of its Nodes is the one to compare with."""
    snap = snapshot.load(FIXTURES / "no-feasible-label-nowhere")
    nodesets = copy.deepcopy(snap.nodesets or ())
    spec = nodesets[0]["spec"]["template"]["spec"]
    spec["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "8"
    fix = symptom(replace(snap, nodesets=nodesets), "no-feasible-nodes").fix
    assert "correct sunk.example.com/partition In [batch]" in fix and "kubectl describe node" not in fix
    nodes, pools = copy.deepcopy(snap.nodes or ()), copy.deepcopy(snap.nodepools or ())
    for node in nodes:
        node["spec"].pop("taints", None)
    for pool in pools:
        pool["spec"].pop("nodeTaints", None)
    fix = symptom(replace(snap, nodesets=nodesets, nodes=nodes, nodepools=pools), "no-feasible-nodes").fix
    assert fix.endswith("compare with one of the Nodes:\nkubectl describe node g41a464")  # inference-h100's


def test_a_pool_name_typo_never_drains_or_evicts_the_pods_on_the_pool_they_run_on() -> None:
    """The NodeSet names slurm-cpuu, which does not exist; its Pods run on slurm-cpu: that is its pool, and the fix
    is the name (did you mean slurm-cpu?), never a drain or eviction of every slurmd Pod."""
    snap = snapshot.load(FIXTURES / "pool-typo-pods-running")
    fix = symptom(snap, "misscheduled").fix
    assert fix.startswith("if Nodes ") and "still meant for the NodeSet (of its own pool, they most likely are)" in fix
    assert "no Node Pool is named slurm-cpuu" in fix and "slurm-cpuu]" not in fix.split("values: [slurm-cpu]")[1]
    assert fix.index("values: [slurm-cpu]") < fix.index("scontrol") < fix.index("/eviction")  # leaving is the other
    assert "values: [slurm-cpu]" in symptom(snap, "no-feasible-nodes").fix


def test_a_taint_set_on_the_nodes_by_hand_is_never_the_pools_nor_tolerated() -> None:
    """team.example.com/maintenance is on every slurm-cpu Node but not in the pool's nodeTaints: the cause and fix say
    so, name the Nodes, and remove it rather than tolerate it (a toleration would defeat the maintenance for good)."""
    found = symptom(snapshot.load(FIXTURES / "no-feasible-hand-taint"), "no-feasible-nodes")
    assert "Node Pool's taint" not in found.cause and "which Node Pool slurm-cpu's nodeTaints do not set" in found.cause
    assert "tolerate the pool's taint" not in found.fix and "add this entry" not in found.fix
    assert found.fix.splitlines()[1:] == [f"kubectl taint node {n} team.example.com/maintenance:NoSchedule-"
                                          for n in ("g10689d", "g18d510", "ga6963c")]
    assert "(likewise on ge2d421):" in found.fix


def test_another_teams_taint_on_nodes_the_affinity_refuses_is_no_cause() -> None:
    """No Node carries the label the NodeSet requires and no pool is found: inference-h100's taint, on Nodes the
    affinity refuses anyway, is neither the cause nor a toleration to add; the label and --pool are."""
    found = symptom(snapshot.load(FIXTURES / "no-feasible-label-nowhere"), "no-feasible-nodes")
    has(found.cause, "affinity doesn't match the Nodes' labels", never=("taint",))
    has(found.fix, "correct sunk.example.com/partition In [batch]", "--pool", never=("sunk.example.com/gpu", "tolerat"))


def test_a_pool_in_repair_with_a_taint_mismatch_gets_fixes_that_agree() -> None:
    """All 3 Nodes in repair and the pool's taint untolerated: the cause says all, not most; the repair row does not
    tell to change nothing while no-feasible-nodes asks for the toleration."""
    snap = snapshot.load(FIXTURES / "pool-in-repair-taint-untolerated")
    feasible, repair = symptom(snap, "no-feasible-nodes"), symptom(snap, "pool-nodes-in-repair")
    assert "all 3 of the pool's Nodes are in repair" in feasible.cause and "most" not in feasible.cause
    assert "add this entry to the node definition's tolerations" in feasible.fix
    assert "for the repair; the mismatch no-feasible-nodes reports besides is still to fix" in repair.fix


def test_nodes_left_out_by_name_are_no_drift_and_refused_values_group_into_one_line() -> None:
    """healthy-hostname-split is OK (each NodeSet leaves the other's Nodes out by name). Pinned to hostnames no Node
    has any more, FEASIBLE 0 says so in one line, not one per Node with its own name as the refused value."""
    snap = snapshot.load(FIXTURES / "healthy-hostname-split")
    assert all(not r.symptoms for r in diagnose(snap, Target()).results)
    batch = next(ns for ns in snap.nodesets or () if ns["metadata"]["name"] == "slurm-cpu-batch")
    term = batch["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]
    term["matchExpressions"][-1] = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gone0", "gone1"]}
    batch["status"] |= {"desiredNumberScheduled": 0, "numberFeasible": 0}
    found = symptom(replace(snap, nodesets=(batch,), pods=()), "no-feasible-nodes")
    assert [e for e in found.evidence if "Nodes in slurm-cpu" in e] == [
        "6/6 Nodes in slurm-cpu: required affinity kubernetes.io/hostname In [gone0, gone1]: label is another value "
        "(g10689d, g118188, g18d510 and 3 more)"]
    assert "hardware" not in found.fix and "values: [g10689d" not in found.fix


def _debug_takes_one_more(snap: Snapshot) -> Snapshot:
    """healthy-hostname-split with slurm-cpu-debug selecting gf99f97 too (by hostname In) and its slurmd Pod there in
    place of slurm-cpu-batch's: batch, leaving g118188 out by hostname NotIn already, finds gf99f97 held."""
    nodesets = copy.deepcopy(snap.nodesets or ())
    debug = next(ns for ns in nodesets if ns["metadata"]["name"] == "slurm-cpu-debug")
    term = debug["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]
    del term["matchFields"]
    term["matchExpressions"].append({"key": "kubernetes.io/hostname", "operator": "In", "values": ["g118188", "gf99f97"]})
    for ns in nodesets:
        n = 2 if ns is debug else 4
        ns["status"] |= {"desiredNumberScheduled": n, "numberFeasible": n, "currentNumberScheduled": n, "numberReady": n,
                         "updatedNumberScheduled": n}
    pod = next(p for p in snap.pods or () if p["metadata"]["name"] == "slurm-cpu-debug-012-010")
    moved = pod | {"metadata": pod["metadata"] | {"name": "slurm-cpu-debug-012-011", "uid": "moved"},
                   "spec": pod["spec"] | {"nodeName": "gf99f97"}}
    pods = (*(p for p in snap.pods or () if p["metadata"]["name"] != "slurm-cpu-batch-012-009"), moved)
    return replace(snap, nodesets=nodesets, pods=pods)


def test_a_node_left_out_by_name_beside_others_extends_the_hostname_notin_entry_the_term_has() -> None:
    """slurm-cpu-batch leaves g118188 out by kubernetes.io/hostname NotIn; slurm-cpu-debug now holds gf99f97 too. The
    fix adds gf99f97 to that entry's values, keeping g118188 (two NotIn entries on one key would exclude the same
    Nodes, but read as two rules to keep in step), and the whole list it prints holds one entry on the key."""
    fix = symptom(_debug_takes_one_more(snapshot.load(FIXTURES / "healthy-hostname-split")), "pool-nodes-unusable",
                  Target(nodeset="slurm-cpu-batch")).fix
    has(fix, "add gf99f97 to the values of its kubernetes.io/hostname NotIn entry",
        "# there now, values added:\n" + entry(key="kubernetes.io/hostname", operator="NotIn", values="[g118188, gf99f97]"),
        never=("# to add:", "values: [gf99f97]"))
    [snippet] = [text for kind, text in steps(fix) if kind == "yaml"]
    listed = yaml.safe_load(snippet)
    assert [e["key"] for e in listed].count("kubernetes.io/hostname") == 1 and len(listed) == 3, listed


def test_the_entries_there_now_and_those_to_add_are_marked_in_the_snippet_itself() -> None:
    """The node definition's tolerations, a toleration to add: the snippet, copied alone (a page's copy button, a
    step of -o json), says which lines are new and which are there now, in YAML comment lines, and is the whole list:
    pasted as a values override, which replaces the list, it keeps the entries there now."""
    fix = symptom(snapshot.load(FIXTURES / "lock-taint-untolerated"), "pool-nodes-unusable").fix
    [snippet] = [text for kind, text in steps(fix) if kind == "yaml"]
    assert snippet == ("# to add:\n" + entry(key="sunk.coreweave.com/lock", operator="Exists", effect="NoExecute")
                       + "\n# there now, to keep as they are:\n"
                       + entry(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")), snippet
    assert yaml.safe_load(snippet) == [{"key": "sunk.coreweave.com/lock", "operator": "Exists", "effect": "NoExecute"},
                                       {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert "its entries today" not in fix and "the whole list then reads:" in fix


def test_an_affinity_key_typo_compares_with_a_node_of_the_pool_it_is_meant_for() -> None:
    """sunk.example.com/nodes for sunk.example.com/node: every Node fails, the control plane's first; the fix points at
    a Node carrying the near-miss key (slurm-cpu's) and offers it."""
    snap = snapshot.load(FIXTURES / "label-key-typo")
    fix = symptom(snap, "no-feasible-nodes").fix
    pool = {n["metadata"]["name"] for n in snap.nodes or ()
            if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu"}
    shown = next(line.split()[-1] for line in fix.splitlines() if line.startswith("kubectl describe node "))
    assert shown in pool
    assert f"did you mean sunk.example.com/node for sunk.example.com/nodes? Node {shown} of slurm-cpu carries it" in fix


def test_value_mismatch_names_the_value_not_a_missing_label() -> None:
    """With the pool unreadable too: the values come from the Nodes, not from the pool's nodeLabels."""
    snap = snapshot.load(FIXTURES / "label-value-case")
    for s in (snap, replace(snap, nodepools=None)):
        report = diagnose(s, Target(pools=("slurm-gpu",)))
        assert [x.id for x in report.results[0].symptoms] == ["no-feasible-nodes"]
        fix = report.results[0].symptoms[0].fix
        has(fix, "sunk.example.com/gpu In [H100]", entry(key="sunk.example.com/gpu", operator="In", values="[h100]"),
            never=("values: [H100]", "compute.coreweave.com/node-pool", "nodeLabels"))


def test_a_key_absent_from_the_pool_nodes_is_still_a_missing_label() -> None:
    snap = snapshot.load(FIXTURES / "label-value-case")
    nodes = tuple(n | {"metadata": n["metadata"] | {"labels": {k: v for k, v in n["metadata"]["labels"].items()
                                                                 if k != "sunk.example.com/gpu"}}} for n in snap.nodes or ())
    found = symptom(replace(snap, nodes=nodes), "pool-labels-missing")
    assert "sunk.example.com/gpu In [H100]: 0/4 Nodes in slurm-gpu carry sunk.example.com/gpu" in found.evidence
    assert "Node Pool slurm-gpu: spec.nodeLabels sets sunk.example.com/gpu=h100 but no Node carries it" in found.evidence


def test_os_arch_fix_pins_where_pods_run_ready_or_lets_the_image_decide() -> None:
    snap = snapshot.load(FIXTURES / "ds-arch-arm-majority")
    target = Target(daemonset="log-agent", namespace="monitoring")
    fix = symptom(snap, "daemonset-os-arch-unscoped", target).fix
    # its Pods run Ready on the 4 amd64 Nodes only, though most Nodes are arm64: the image is amd64's
    has(fix, "multi-arch", "nodeSelector:\n  kubernetes.io/arch: amd64", never=("arm64\n", "kubernetes.io/arch: arm64"))
    found = symptom(replace(snap, pods=None), "daemonset-os-arch-unscoped", target)  # no Pod tells
    has(found.fix, "multi-arch", "kubernetes.io/arch", "nodeSelector", "image",
        never=("kubernetes.io/arch: amd64", "kubernetes.io/arch: arm64"))
    assert "only the image can tell its platform" in found.evidence[-1]


def test_a_missing_key_next_to_a_wrong_value_reports_both() -> None:
    """pool-labels-missing explains no-feasible-nodes away, so it carries the value mismatch too."""
    snap = snapshot.load(FIXTURES / "label-value-case")
    ns = (snap.nodesets or ())[0]
    spec = ns["spec"]["template"]["spec"]
    term = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    both = {"nodeSelectorTerms": [{"matchExpressions": term["matchExpressions"] + [
        {"key": "sunk.example.com/rack", "operator": "Exists"}]}]}
    nodeset = ns | {"spec": ns["spec"] | {"template": {"spec": spec | {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": both}}}}}}
    report = diagnose(replace(snap, nodesets=(nodeset,)), Target())
    [found] = report.results[0].symptoms
    assert found.id == "pool-labels-missing"
    assert "sunk.example.com/rack Exists: 0/4 Nodes in slurm-gpu carry sunk.example.com/rack" in found.evidence
    assert "sunk.example.com/gpu In [H100]: the Nodes of slurm-gpu carry sunk.example.com/gpu = h100 (4); " \
           "values are case-sensitive" in found.evidence
    assert "sunk.example.com/gpu In [H100]" in found.fix
    assert found.fix.endswith(entry(key="sunk.example.com/gpu", operator="In", values="[h100]"))


def test_live_unreadable_pool_gets_an_appending_patch_and_a_key_its_nodes_do_not_use(serve: Callable[..., Any]) -> None:
    """403 on nodepools: the pool's taints are unknown to the patch, but its Nodes show the key already taken.
    The ETL Pod here tolerates no taint (it came before the pool's), so a taint is what the fix proposes."""
    snap = snapshot.load(FIXTURES / "foreign-pod-dedicated-pool")
    api = serve(replace(snap, pods=tuple(p | {"spec": {k: v for k, v in p["spec"].items() if k != "tolerations"}}
                                         if p["metadata"]["name"] == "etl-6c5d8-q7w2n" else p for p in snap.pods or ())))
    api.faults.forbidden.add("nodepools")
    doc = run("check", "-n", "tenant-slurm", "-o", "json").json()
    [found] = [s for s in doc["results"][0]["symptoms"] if s["id"] == "foreign-pod-resources"]
    patch = next(line for line in found["fix"].splitlines() if line.startswith("kubectl patch"))
    assert patch_body(patch) == ("json", [{"op": "add", "path": "/spec/nodeTaints/-", "value": {
        "key": "sunk.example.com/slurm", "value": "true", "effect": "NoSchedule"}}])
    assert "Node Pool slurm-cpu could not be read" in found["fix"]


def with_tolerations(snap: Snapshot, tolerations: list[Obj]) -> Snapshot:
    """The snapshot with its (one) NodeSet's template tolerating exactly `tolerations`."""
    [ns] = snap.nodesets or ()
    spec = ns["spec"]["template"]["spec"] | {"tolerations": tolerations}
    return replace(snap, nodesets=(ns | {"spec": ns["spec"] | {"template": ns["spec"]["template"] | {"spec": spec}}},))


LOCK = {"key": "sunk.coreweave.com/lock", "operator": "Exists", "effect": "NoExecute"}


def test_a_toleration_snippet_is_an_entry_to_add_next_to_the_ones_kept() -> None:
    """A bare `tolerations:` list pasted as a values override would drop the lock toleration."""
    fix = symptom(snapshot.load(FIXTURES / "no-feasible-nodes"), "no-feasible-nodes").fix
    has(fix, "sunk.example.com/node=true:NoSchedule", entry(key="sunk.example.com/node", operator="Exists",
                                                             effect="NoSchedule"),
        "keep", entry(key="sunk.coreweave.com/lock", operator="Exists", effect="NoExecute"),
        never=("tolerations:\n", "kubectl taint", "nodeTaints"))
    assert fix.index("- key: sunk.example.com/node") < fix.index("- key: sunk.coreweave.com/lock")  # added, then kept


def test_a_near_miss_toleration_key_is_corrected_not_added_to() -> None:
    typo = {"key": "sunk.example.com/nod", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    snap = with_tolerations(snapshot.load(FIXTURES / "no-feasible-nodes"), [LOCK, typo])
    fix = symptom(snap, "no-feasible-nodes").fix
    # the typo's entry is replaced by the corrected one (operator and value kept): adding beside it keeps the typo
    has(fix, "did you mean sunk.example.com/node?", "sunk.example.com/nod ",
        entry(key="sunk.example.com/node", operator="Equal", value="'true'", effect="NoSchedule"),
        never=("add this entry", "- key: sunk.example.com/nod\n"))


def test_another_key_of_the_same_domain_is_no_near_miss() -> None:
    other = {"key": "sunk.example.com/gpu", "operator": "Exists"}
    fix = symptom(with_tolerations(snapshot.load(FIXTURES / "no-feasible-nodes"), [LOCK, other]), "no-feasible-nodes").fix
    assert "did you mean" not in fix and "add this entry to the node definition's tolerations" in fix


def test_the_pool_given_with_flag_makes_pods_outside_it_nodeselector_ignored() -> None:
    """The template names no pool, so its pools are where its Pods run: only an expectation tells the strays."""
    snap = snapshot.load(FIXTURES / "nodeselector-ignored-annotated")
    plain = replace(snap, nodepools=tuple(p | {"metadata": {k: v for k, v in p["metadata"].items() if k != "annotations"}}
                                          for p in snap.nodepools or ()))
    assert not [s for r in diagnose(plain, Target()).results for s in r.symptoms]
    found = symptom(plain, "nodeselector-ignored", Target(pools=("slurm-cpu",)))
    assert "CURRENT 9 > 4 Nodes in slurm-cpu" in found.evidence


def test_strays_past_the_examples_are_counted_in_agreement(monkeypatch: pytest.MonkeyPatch) -> None:
    """Five strays, four named: `and 1 more Pod outside the pool`, never `1 more Pods`."""
    from sunkcheck.symptoms.nodeset import nodeselector_ignored

    monkeypatch.setattr(nodeselector_ignored, "EXAMPLES", 4)
    found = symptom(snapshot.load(FIXTURES / "nodeselector-ignored-annotated"), "nodeselector-ignored")
    assert found.evidence[-1] == "and 1 more Pod outside the pool"


def test_nodeselector_evidence_counts_matching_and_feasible_nodes_apart() -> None:
    """A cordoned Node still matches the template's affinity, but is not feasible."""
    snap = snapshot.load(FIXTURES / "nodeselector-ignored")
    cordoned = next(n["metadata"]["name"] for n in snap.nodes or ()
                    if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "k8s-cpu")
    nodes = tuple(n | {"spec": n["spec"] | {"unschedulable": True, "taints": [
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}} if n["metadata"]["name"] == cordoned else n
        for n in snap.nodes or ())
    found = symptom(replace(snap, nodes=nodes), "nodeselector-ignored")
    assert found.evidence[0] == ("spec.nodeSelector sunk.example.com/node=true sits outside spec.template.spec and never "
                                 "reaches the slurmd Pods: the template's affinity matches 5 Node(s) without those "
                                 "labels, 4 of them feasible")


def test_a_squatter_tolerating_only_the_new_key_still_gets_the_taint_plan() -> None:
    """Tolerating sunk.example.com/node by name is not tolerating every taint: the others still need the taint."""
    snap = snapshot.load(FIXTURES / "foreign-pod-resources")
    pods = tuple(p | {"spec": p["spec"] | {"tolerations": [{"key": "sunk.example.com/node", "operator": "Exists"}]}}
                 if p["metadata"]["name"] == "spark-exec-7d9f4-x2k8q" else p for p in snap.pods or ())
    fix = symptom(replace(snap, pods=pods), "foreign-pod-resources").fix
    assert fix.startswith("keep other Pods off the pool with a taint")
    assert "(data-eng/spark-exec-7d9f4-x2k8q tolerates that taint too: exclude the pool in its affinity instead)" in fix


def test_a_squatter_tolerating_the_pools_taint_loses_that_toleration_no_new_taint() -> None:
    """A second taint is defeated by the same copied toleration: the fix names the taint and the Pod's owner."""
    for case in ("foreign-pod-dedicated-pool", "foreign-pod-tolerates-pool-taint"):
        found = symptom(snapshot.load(FIXTURES / case), "foreign-pod-resources")
        assert "kubectl patch nodepool" not in found.fix and "example.com stands for" not in found.fix
        assert "so no taint keeps it off the pool: remove that toleration from" in found.fix
    assert found.fix.endswith(f"\n{eviction('ml-research', 'gpu-burn-5b8c7-t4xzm')}\n"
                              f"{eviction('ml-research', 'vllm-bench-llama3-70b-0')}")


def test_only_the_squatters_a_taint_keeps_off_get_the_taint_plan() -> None:
    """Beside a Pod tolerating every taint, one tolerating none: a taint for the pool, evicting that one once tainted;
    the other loses its toleration first."""
    snap = snapshot.load(FIXTURES / "foreign-pod-resources")
    spark = next(p for p in snap.pods or () if p["metadata"]["name"] == "spark-exec-7d9f4-x2k8q")
    debug = spark | {"metadata": spark["metadata"] | {"name": "debug-7d9f4-z9k2m"},
                     "spec": spark["spec"] | {"tolerations": [{"operator": "Exists"}]}}
    fix = symptom(replace(snap, pods=(*(snap.pods or ()), debug)), "foreign-pod-resources").fix
    plan, tolerant = fix.split("\ndata-eng/debug-7d9f4-z9k2m tolerates every taint")
    assert plan.startswith("keep other Pods off the pool with a taint") and '"/spec/nodeTaints"' in plan
    assert plan.index('"/spec/nodeTaints"') < plan.index("kubectl create --raw")  # evicted once tainted
    assert plan.endswith("\n" + eviction("data-eng", "spark-exec-7d9f4-x2k8q"))
    assert "remove that toleration from the Deployment owning ReplicaSet spark-exec-7d9f4" in tolerant
    assert tolerant.endswith("\n" + eviction("data-eng", "debug-7d9f4-z9k2m"))


def locked(snap: Snapshot, count: int) -> Snapshot:
    """The snapshot with SUNK's lock taint on the first `count` Nodes of slurm-gpu (Slurm jobs run there)."""
    lock = {"key": "sunk.coreweave.com/lock", "value": "true", "effect": "NoExecute"}
    gpu = [n["metadata"]["name"] for n in snap.nodes or ()
           if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-gpu"]
    return replace(snap, nodes=tuple(n | {"spec": n["spec"] | {"taints": [lock]}} if n["metadata"]["name"] in gpu[:count]
                                     else n for n in snap.nodes or ()))


LOCK_ENTRY = entry(key="sunk.coreweave.com/lock", operator="Exists", effect="NoExecute")
GPU_ENTRY = entry(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")  # the NodeSet's own, kept


def test_the_lock_taint_is_tolerated_never_removed_from_nodes_nor_set_on_the_pool() -> None:
    snap = snapshot.load(FIXTURES / "lock-taint-untolerated")
    [ns] = snap.nodesets or ()  # every Node runs a job: none is feasible, as the controller reports
    idle = ns | {"status": ns["status"] | {k: 0 for k, v in ns["status"].items() if k != "observedGeneration"}}
    for found in (symptom(snap, "pool-nodes-unusable"), symptom(replace(locked(snap, 4), nodesets=(idle,)),
                                                                 "no-feasible-nodes")):
        has(found.fix, "sunk.coreweave.com/lock=true:NoExecute", LOCK_ENTRY, "keep", GPU_ENTRY,
            never=("kubectl", "nodeTaints", "tolerations:\n"))
        assert found.fix.index(LOCK_ENTRY) < found.fix.index(GPU_ENTRY)  # the entry to add, then those to keep


def test_a_hand_taint_beside_the_lock_is_still_removed_from_its_node() -> None:
    snap = snapshot.load(FIXTURES / "lock-taint-untolerated")
    hand = {"key": "team.example.com/maintenance", "value": "true", "effect": "NoSchedule"}
    free = sorted(n["metadata"]["name"] for n in snap.nodes or () if not n["spec"].get("taints")
                  and n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-gpu")[0]
    nodes = tuple(n | {"spec": n["spec"] | {"taints": [hand]}} if n["metadata"]["name"] == free else n for n in snap.nodes or ())
    fix = symptom(replace(snap, nodes=nodes), "pool-nodes-unusable").fix
    has(fix, LOCK_ENTRY, GPU_ENTRY, never=("kubectl taint node g5670f6", "kubectl taint node ge28a20", "lock:NoExecute-"))
    assert fix.endswith(f"kubectl taint node {free} team.example.com/maintenance:NoSchedule-")
    assert fix.count("kubectl taint") == 1


def in_repair(node: Obj) -> Obj:
    """A Node CKS took out for triage: not production, cordoned (with Kubernetes' taint)."""
    labels = node["metadata"]["labels"] | {"node.coreweave.cloud/state": "triage", "node.coreweave.cloud/reserved": "triage"}
    cordon = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    spec = node["spec"] | {"unschedulable": True, "taints": [*node["spec"].get("taints", ()), cordon]}
    return node | {"metadata": node["metadata"] | {"labels": labels}, "spec": spec}


def test_node_health_is_a_cause_of_no_feasible_nodes_only_for_most_of_the_pool() -> None:
    """no-feasible-node-in-repair with 4 of slurm-cpu's 6 Nodes in triage: health is now most Nodes' reason and is
    counted; the production-state expression they fail is never offered to replace."""
    snap = snapshot.load(FIXTURES / "no-feasible-node-in-repair")
    pool = [n for n in snap.nodes or () if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu"]
    sick = {n["metadata"]["name"] for n in pool[2:]}
    snap = replace(snap, nodes=tuple(in_repair(n) if n["metadata"]["name"] in sick else n for n in snap.nodes or ()))
    fix = symptom(snap, "no-feasible-nodes", Target(nodeset="slurm-cpu-batch")).fix
    # the one-line part first: after the toleration snippet it would read as part of the YAML to paste
    has(fix.splitlines()[0], "4 of 6 Nodes", "repair", never=("- key:", "pool-nodes-in-repair"))
    has(fix, entry(key="sunk.example.com/node", operator="Exists", effect="NoSchedule"), LOCK_ENTRY)
    assert fix.endswith(LOCK_ENTRY)  # the snippet last: no prose after it
    assert "node.coreweave.cloud/state" not in fix and "bind by pool name" not in fix


def test_a_nodeset_bound_by_pool_name_is_told_which_expression_to_correct_not_to_bind_by_pool_name() -> None:
    snap = snapshot.load(FIXTURES / "no-feasible-node-in-repair")
    arm = next(ns for ns in snap.nodesets or () if ns["metadata"]["name"] == "slurm-cpu-arm")
    term = arm["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]
    term["matchExpressions"][-1] = {"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["amd64"]}
    fix = symptom(replace(snap, nodesets=(arm,)), "no-feasible-nodes").fix
    has(fix, "kubernetes.io/arch NotIn [amd64]", "\nkubectl describe node g10689d",
        never=("compute.coreweave.com/node-pool In", "values: [slurm-cpu]"))
    assert "bind by pool name" not in fix and "node.coreweave.cloud/state" not in fix


def relabelled(snap: Snapshot, count: int, labels: dict[str, str | None]) -> Snapshot:
    """The snapshot with `labels` merged into (None: removed from) the first `count` Nodes of slurm-gpu."""
    gpu = [n["metadata"]["name"] for n in snap.nodes or ()
           if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-gpu"]

    def relabel(node: Obj) -> Obj:
        kept = {k: v for k, v in (node["metadata"]["labels"] | labels).items() if v is not None}
        return node | {"metadata": node["metadata"] | {"labels": kept}}
    return replace(snap, nodes=tuple(relabel(n) if n["metadata"]["name"] in gpu[:count] else n for n in snap.nodes or ()))


def test_a_label_gpu_feature_discovery_sets_is_never_asked_of_the_node_pool() -> None:
    """GFD labels every GPU Node from its hardware: the pool need not set them, and must not (it would pin them)."""
    snap = snapshot.load(FIXTURES / "healthy-gfd-labels")
    assert not [s for r in diagnose(snap, Target()).results for s in r.symptoms]
    # GFD not running yet: no Node carries gpu.product; the pool's nodeLabels are no place for it
    found = {s.id: s.fix for r in diagnose(relabelled(snap, 4, {"nvidia.com/gpu.product": None}), Target()).results
             for s in r.symptoms}
    assert found and "pool-labels-missing" not in found and not [fix for fix in found.values() if "nodeLabels" in fix]


def test_a_node_short_of_a_gpu_is_no_label_the_pool_restores() -> None:
    """A Node whose GPU fell off the bus advertises gpu.count 7: GFD tells the truth, CKS reapplies nothing."""
    found = symptom(relabelled(snapshot.load(FIXTURES / "healthy-gfd-labels"), 1, {"nvidia.com/gpu.count": "7"}),
                    "pool-nodes-unusable")
    assert "nvidia.com/gpu.count Gt [7]: label is '7'" in "\n".join(found.evidence)
    assert "nodeLabels" not in found.fix and "NVIDIA GPU Feature Discovery" in found.fix


DCGM = Target(daemonset="dcgm-exporter", namespace="monitoring")


def with_daemon_tolerations(snap: Snapshot, tolerations: list[Obj]) -> Snapshot:
    [ds] = snap.daemonsets or ()
    spec = ds["spec"]["template"]["spec"] | {"tolerations": tolerations}
    return replace(snap, daemonsets=(ds | {"spec": ds["spec"] | {"template": ds["spec"]["template"] | {"spec": spec}}},))


def test_a_same_key_toleration_of_another_effect_gets_the_entry_that_matches_added() -> None:
    """Tolerating sunk.example.com/gpu with effect NoExecute misses its NoSchedule taint: correcting that entry to
    itself would change nothing. The DaemonSet and the NodeSet say the same: add the entry with the taint's effect."""
    wrong = {"key": "sunk.example.com/gpu", "operator": "Exists", "effect": "NoExecute"}
    fix = symptom(with_daemon_tolerations(snapshot.load(FIXTURES / "ds-untolerated-taint"), [wrong]),
                  "daemonset-untolerated-taint", DCGM).fix
    has(fix, entry(key="sunk.example.com/gpu", operator="Exists", effect="NoSchedule"), "keep",
        entry(key="sunk.example.com/gpu", operator="Exists", effect="NoExecute"), never=("did you mean", "correct"))
    assert fix.index("effect: NoSchedule") < fix.index("effect: NoExecute")  # the entry to add, then the one kept
    lock = {"key": "sunk.coreweave.com/lock", "operator": "Exists", "effect": "NoSchedule"}
    fix = symptom(with_tolerations(snapshot.load(FIXTURES / "lock-taint-untolerated"), [lock]), "pool-nodes-unusable").fix
    assert "did you mean" not in fix and "add this entry to the node definition's tolerations" in fix


def test_a_lock_toleration_of_the_wrong_effect_is_said_not_to_cover_the_lock_never_kept_as_sunks() -> None:
    """A lock toleration typed NoSchedule: the lock is NoExecute and evicts slurmd. The evidence and the fix say the
    entry there does not cover it; the fix adds the NoExecute entry and never calls the NoSchedule one SUNK's."""
    wrong = {"key": "sunk.coreweave.com/lock", "operator": "Exists", "effect": "NoSchedule"}
    found = symptom(with_tolerations(snapshot.load(FIXTURES / "lock-taint-untolerated"), [wrong]), "pool-nodes-unusable")
    said = ("toleration has effect NoSchedule, which does not cover the taint's NoExecute (a NoExecute taint evicts the "
            "Pods that do not tolerate it)")
    assert any(e.startswith("2/4 Nodes in slurm-gpu: untolerated taint sunk.coreweave.com/lock=true:NoExecute: the "
                            f"NodeSet's sunk.coreweave.com/lock {said}") for e in found.evidence), found.evidence
    has(found.fix, "the entry with key sunk.coreweave.com/lock in the node definition's tolerations has effect NoSchedule",
        LOCK_ENTRY, "keep", entry(**wrong), never=("is SUNK's",))
    assert found.fix.index(LOCK_ENTRY) < found.fix.index("effect: NoSchedule")  # the entry to add, then the one kept


def test_foreign_pod_resources_counts_the_nodes_it_leaves_out_in_its_title() -> None:
    """The runbook's "one or two below" is its row for any count: the report's title counts the pool Nodes other Pods
    keep out of FEASIBLE (3 in foreign-pod-job-and-pinned), and the table keeps the runbook's words."""
    titles = {case: symptom(snapshot.load(FIXTURES / case), "foreign-pod-resources").title
              for case in ("foreign-pod-job-and-pinned", "foreign-pod-tolerates-pool-taint", "foreign-pod-resources")}
    assert titles == {case: f"FEASIBLE leaves out {n} where other Pods hold what the slurmd Pod requests"
                      for case, n in (("foreign-pod-job-and-pinned", "3 pool Nodes"),
                                      ("foreign-pod-tolerates-pool-taint", "2 pool Nodes"),
                                      ("foreign-pod-resources", "1 pool Node"))}, titles
    assert next(r for r in NODESET_RULES if r.id == "foreign-pod-resources").symptom.startswith("FEASIBLE is one or two")


def test_a_daemonset_fix_keeps_the_templates_own_tolerations_not_the_controllers_defaults() -> None:
    """The controller adds its six default tolerations to every daemon Pod, never to the template: no snippet lists them."""
    fix = symptom(snapshot.load(FIXTURES / "ds-untolerated-taint"), "daemonset-untolerated-taint", DCGM).fix
    has(fix, "Pod template", entry(key="sunk.example.com/gpu", operator="Exists", effect="NoSchedule"),
        never=("node.kubernetes.io/", "its entries today"))
    assert fix.count("- key:") == 1


def test_a_notready_node_is_no_daemonset_scoping_problem() -> None:
    """A NotReady Node carries not-ready:NoSchedule, which no daemon Pod tolerates by default: the controller leaves it
    out until it recovers. Node health, not scope: no row, and no fix tolerating a taint of Kubernetes'."""
    snap = snapshot.load(FIXTURES / "ds-healthy")
    sick = next(n["metadata"]["name"] for n in snap.nodes or () if n["metadata"]["labels"]["node.coreweave.cloud/class"] == "gpu")
    not_ready = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                 {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]
    nodes = tuple(n | {"spec": n["spec"] | {"taints": n["spec"]["taints"] + not_ready}} if n["metadata"]["name"] == sick
                  else n for n in snap.nodes or ())
    assert not [s.id for r in diagnose(replace(snap, nodes=nodes), DCGM).results for s in r.symptoms]


HEAVY = "logging.example.com/heavy"


def with_scoped_daemon(snap: Snapshot, keep_spark: bool = True) -> tuple[Snapshot, str]:
    """foreign-pod-resources, with a heavy log agent on one more slurm-cpu Node: a DaemonSet scoped by a label someone
    set on that Node by hand (its slurmd Pod no longer fits there)."""
    host = (snap.nodes or ())[-1]["metadata"]["name"]
    spark = next(p for p in snap.pods or () if p["metadata"]["name"] == "spark-exec-7d9f4-x2k8q")
    fluentd = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "fluentd-heavy-9xk2p", "namespace": "logging", "ownerReferences": [
                   {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "fluentd-heavy", "controller": True}]},
               "spec": spark["spec"] | {"nodeName": host, "nodeSelector": {HEAVY: "true"}},
               "status": spark["status"]}
    nodes = tuple(n | {"metadata": n["metadata"] | {"labels": n["metadata"]["labels"] | {HEAVY: "true"}}}
                  if n["metadata"]["name"] == host else n for n in snap.nodes or ())
    pods = tuple(p for p in snap.pods or () if p["spec"].get("nodeName") != host and (keep_spark or p is not spark))
    return replace(snap, nodes=nodes, pods=(*pods, fluentd, *(p for p in snap.pods or () if p["spec"].get("nodeName") == host
                                                                and "slurm" not in p["metadata"]["name"]))), host


def test_a_scoped_daemonset_holding_a_pool_node_is_descoped_never_its_pod_deleted() -> None:
    """A NoSchedule taint does not evict a running daemon Pod, and a deleted one comes back: the fix takes the Node out
    of the DaemonSet's scope. Node agents on every Node (cilium) stay out of it."""
    snap, host = with_scoped_daemon(snapshot.load(FIXTURES / "foreign-pod-resources"))
    found = symptom(snap, "foreign-pod-resources")
    assert (f"Pod logging/fluentd-heavy-9xk2p is DaemonSet logging/fluentd-heavy's: the slurmd Pod would fit on {host} "
            "without it, not a node agent's few millicores") in found.evidence
    assert eviction("data-eng", "spark-exec-7d9f4-x2k8q") in found.fix  # the Deployment's Pod: as before
    assert "/namespaces/logging/pods" not in found.fix and "kubectl delete" not in found.fix and "cilium" not in found.fix
    assert f"its nodeSelector asks for {HEAVY}=true, which Node Pool slurm-cpu does not set: remove it" in found.fix
    assert f"\nkubectl label node {host} {HEAVY}-\n" in found.fix
    assert "every term" in found.fix
    assert found.fix.endswith(entry(key="compute.coreweave.com/node-pool", operator="NotIn", values="[slurm-cpu]"))
    alone = symptom(with_scoped_daemon(snapshot.load(FIXTURES / "foreign-pod-resources"), keep_spark=False)[0],
                    "foreign-pod-resources")
    assert "kubectl patch nodepool" not in alone.fix and alone.fix.startswith("DaemonSet logging/fluentd-heavy holds")


def test_a_request_that_fits_an_empty_node_is_never_lowered_the_pods_holding_it_are_named() -> None:
    """A DaemonSet holds all 8 GPUs of each pool Node: lowering the request would shrink a whole 8-GPU Slurm node to
    make room for it. The fix points at the Pods holding them, as foreign-pod-resources does."""
    snap = snapshot.load(FIXTURES / "no-feasible-daemon-holds-gpus")
    pool = ", ".join(sorted(o["metadata"]["name"] for o in snap.nodes or ()
                            if o["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-gpu"))
    has(symptom(snap, "no-feasible-nodes").fix, pool, "fits an empty Node",
        never=("resources.requests", "kubectl delete", "- key:"))


def test_a_scoped_daemonsets_cluster_text_stays_on_its_line_and_no_key_becomes_a_flag() -> None:
    """The API server does not check an ownerReference's name, and a hand-edited snapshot can hold any label: the
    fix names them on one line, and removes no label whose key would be a kubectl flag."""
    snap, host = with_scoped_daemon(snapshot.load(FIXTURES / "foreign-pod-resources"))
    flag = "--selector=kubernetes.io/os=linux"
    fluentd = next(p for p in snap.pods or () if p["metadata"]["name"] == "fluentd-heavy-9xk2p")
    fluentd["metadata"]["ownerReferences"][0]["name"] = "fluentd\nkubectl delete nodes --all\n#"
    fluentd["spec"] = fluentd["spec"] | {"nodeSelector": {flag: "true"}}
    node = next(n for n in snap.nodes or () if n["metadata"]["name"] == host)
    node["metadata"]["labels"] = node["metadata"]["labels"] | {flag: "true"}
    fix = symptom(snap, "foreign-pod-resources").fix
    assert f"DaemonSet logging/fluentd kubectl delete nodes --all # holds {host}:" in fix
    assert f"\n(no command for {flag}: not a label key the API server accepts)\n" in fix
    assert "kubectl label" not in fix and "\nkubectl delete nodes" not in fix


Relabel = Callable[[dict[str, str]], dict[str, str]]
"""A change of a Node's labels, or of a pool's nodeLabels."""


def _refusing(snap: Snapshot, node_labels: Relabel, pool_labels: Relabel, expr: Obj) -> Snapshot:
    """label-refused-on-node with g18d510's labels, slurm-cpu's nodeLabels and the NodeSet's second requirement
    changed."""
    nodes = tuple(n | {"metadata": n["metadata"] | {"labels": node_labels(n["metadata"]["labels"])}}
                  if n["metadata"]["name"] == "g18d510" else n for n in snap.nodes or ())
    pools = tuple(p | {"spec": p["spec"] | {"nodeLabels": pool_labels(p["spec"]["nodeLabels"])}}
                  if p["metadata"]["name"] == "slurm-cpu" else p for p in snap.nodepools or ())
    nodeset = json.loads(json.dumps((snap.nodesets or ())[0]))
    nodeset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"][-1] = expr
    return replace(snap, nodes=nodes, nodepools=pools, nodesets=(nodeset,))


def test_a_refused_label_the_pool_sets_is_the_pools_to_change_and_a_hand_value_over_it_is_put_back() -> None:
    """Nothing was lost: the Node carries the label. The pool's own value comes back on a Node relabelled by hand, so
    no `kubectl label` for it; a value set by hand over the pool's gets the pool's back, on the condition misscheduled
    puts on it: someone set it, maybe on purpose (a Node taken aside for debugging)."""
    snap = snapshot.load(FIXTURES / "label-refused-on-node")
    quarantine = {"key": "example.com/quarantine", "operator": "DoesNotExist"}
    added = _refusing(snap, lambda labels: labels, lambda labels: labels | {"example.com/quarantine": "true"}, quarantine)
    has(symptom(added, "pool-nodes-unusable").fix, "example.com/quarantine=true", "g18d510",
        "example.com/quarantine DoesNotExist", "Node Pool slurm-cpu", "nodeLabels", never=("kubectl label",))
    over = _refusing(snap, lambda labels: {k: v for k, v in labels.items() if k != "example.com/quarantine"}
                     | {"sunk.example.com/node": "false"}, lambda labels: labels,
                     {"key": "sunk.example.com/node", "operator": "In", "values": ["true"]})
    has(symptom(over, "pool-nodes-unusable").fix, "sunk.example.com/node=false", "sunk.example.com/node In [true]",
        "if g18d510 is still meant for the NodeSet", "kubectl label --overwrite node g18d510 sunk.example.com/node=true",
        never=("nodeLabels", "sunk.example.com/node-"))


def _hand_tainted(effect: str, on: int) -> Snapshot:
    """labels-not-from-pool-taint-daemonset with its hand taint's effect `effect`, on the first `on` pool Nodes."""
    snap = snapshot.load(FIXTURES / "labels-not-from-pool-taint-daemonset")
    pool = [n for n in snap.nodes or () if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu"]
    hand = dict(TAINT, effect=effect)
    changed = {n["metadata"]["name"]: n | {"spec": n["spec"] | {"taints": [t for t in n["spec"].get("taints", [])
                                                                         if t["key"] != TAINT["key"]] + [hand]}}
               for n in pool[:on]}
    return replace(snap, nodes=tuple(changed.get(n["metadata"]["name"], n) for n in snap.nodes or ()))


def test_moving_a_hand_taint_into_the_pool_names_the_daemonsets_it_newly_keeps_off() -> None:
    """The Nodes already carrying the taint change nothing for their daemon Pods; the two that lack it get it from the
    pool's nodeTaints, and node-exporter, which does not tolerate it, gets no Pod on a replaced Node (fluent-bit
    tolerates it)."""
    fix = symptom(_hand_tainted("NoSchedule", 2), "labels-not-from-pool").fix
    warning, patch = fix.rsplit("\n", 1)
    assert "DaemonSet monitoring/node-exporter (its Pod on ga6963c, ge2d421)" in warning
    assert "fluent-bit" not in fix and "cilium" not in fix and "g10689d" not in warning.split("(a DaemonSet")[1]
    assert patch_body(patch) == ("json", [{"op": "test", "path": "/spec/nodeTaints", "value": None},
                                {"op": "add", "path": "/spec/nodeTaints", "value": [TAINT]}])


def test_a_hand_taint_every_pool_node_carries_already_warns_of_no_daemonset() -> None:
    fix = symptom(_hand_tainted("NoSchedule", 4), "labels-not-from-pool").fix
    assert "DaemonSet" not in fix and "sunkcheck read" not in fix and "did not read" not in fix


def test_a_hand_noexecute_taint_deletes_the_running_daemon_pods_it_reaches_and_prefernoschedule_none() -> None:
    fix = symptom(_hand_tainted("NoExecute", 2), "labels-not-from-pool").fix
    assert "has its Pods there deleted once the taint reaches them" in fix
    assert "DaemonSet monitoring/node-exporter (its Pod on ga6963c, ge2d421)" in fix and "effect: NoExecute" in fix
    assert "DaemonSet" not in symptom(_hand_tainted("PreferNoSchedule", 2), "labels-not-from-pool").fix


def test_without_the_pods_the_hand_taint_move_says_which_nodes_daemonsets_to_check() -> None:
    fix = symptom(replace(_hand_tainted("NoSchedule", 2), pods=None), "labels-not-from-pool").fix
    assert "this check did not read the Pods of the 2 Nodes of slurm-cpu it would reach (ga6963c, ge2d421)" in fix
    assert "DaemonSet monitoring" not in fix


def _with_peer(snap: Snapshot, tolerations: list[Obj], host: str = "gf99f97") -> Snapshot:
    """foreign-pod-resources with a second NodeSet of the namespace pinned to one slurm-cpu Node by hostname."""
    ns = (snap.nodesets or ())[0]
    spec = ns["spec"]["template"]["spec"]
    term = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    pinned = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": term["matchExpressions"] + [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}]}}}
    peer = ns | {"metadata": ns["metadata"] | {"name": "slurm-cpu-small"},
                 "spec": ns["spec"] | {"template": {"spec": spec | {"affinity": pinned, "tolerations": tolerations}}}}
    return replace(snap, nodesets=(ns, peer))


def test_the_taint_plan_tolerates_the_taint_first_in_every_other_nodeset_on_the_pool() -> None:
    """slurm-cpu-small runs on one Node of the pool foreign-pod-resources would taint.
    Not tolerating the taint, it could no longer place its slurmd Pod there (FEASIBLE to 0): the fix names it, with
    the entry for its node definition, before the pool's patch; a NodeSet tolerating it already is not named."""
    snap = snapshot.load(FIXTURES / "foreign-pod-resources")
    lock = {"key": "sunk.coreweave.com/lock", "operator": "Exists", "effect": "NoExecute"}
    fix = symptom(_with_peer(snap, [lock]), "foreign-pod-resources").fix
    first, patch = fix.split("then taint the Node Pool")
    assert ("tolerate the taint in the other NodeSets that select its Nodes (a NodeSet that "
            "does not tolerate it can no longer place a slurmd Pod there: its FEASIBLE drops") in first
    assert ("NodeSet tenant-slurm/slurm-cpu-small (it selects gf99f97): add this entry to its node definition's "
            "tolerations, and keep the entries it has (") in first
    assert ("the whole list then reads:\n# to add:\n- key: sunk.example.com/node\n  operator: Exists\n  effect: NoSchedule\n"
            "# there now, to keep as they are:\n- key: sunk.coreweave.com/lock\n") in first
    kept = next(line for line in first.splitlines() if "and keep the entries it has" in line)
    has(kept, "sunk.coreweave.com/lock", "SUNK's", "keep it")
    assert "sunkcheck read NodeSet" not in fix and "kubectl patch nodepool slurm-cpu" in patch
    tolerant = symptom(_with_peer(snap, [lock, {"key": "sunk.example.com/node", "operator": "Exists"}]),
                       "foreign-pod-resources").fix
    assert "slurm-cpu-small" not in tolerant and "other NodeSets" not in tolerant


def test_the_taint_plan_says_which_nodesets_were_not_read() -> None:
    """Checked alone (--nodeset), or one namespace, a live check reads no other NodeSet: the fix says so, in prose
    no copied block would run, rather than naming none. A snapshot holding the others is read whole, --nodeset or
    not: the fix names them, and claims no more than that it read one namespace's."""
    snap = _with_peer(snapshot.load(FIXTURES / "foreign-pod-resources"), [])
    read_alone = replace(snap, nodesets=(snap.nodesets or ())[:1])  # what a live --nodeset check reads
    alone = symptom(read_alone, "foreign-pod-resources", Target(nodeset="slurm-cpu-batch", namespace="tenant-slurm")).fix
    assert "slurm-cpu-small" not in alone
    assert ("\nthis check read NodeSet tenant-slurm/slurm-cpu-batch only: check the other NodeSets on the pool and "
            "tolerate the taint in each that selects its Nodes") in alone and "\nkubectl get nodesets -A\n" in alone
    whole = symptom(snap, "foreign-pod-resources", Target()).fix
    assert "NodeSet tenant-slurm/slurm-cpu-small (it selects gf99f97)" in whole and "this check read" not in whole
    for target in (Target(nodeset="slurm-cpu-batch", namespace="tenant-slurm"), Target(namespace="tenant-slurm")):
        spaced = symptom(snap, "foreign-pod-resources", target).fix
        assert "NodeSet tenant-slurm/slurm-cpu-small (it selects gf99f97)" in spaced
        assert "\nthis check read the NodeSets of namespace tenant-slurm only" in spaced and "NodeSet tenant-slurm/" \
            "slurm-cpu-batch only" not in spaced


def test_a_key_set_in_two_layers_is_set_once_and_bound_by_name_when_another_pool_carries_the_value() -> None:
    """The value slurm-gpu's Nodes carry is gpu-reserve's too: one layer's expression alone would take both pools,
    so the fix binds by pool name beside it and says why."""
    snap = snapshot.load(FIXTURES / "label-value-other-pool")
    nodeset = copy.deepcopy((snap.nodesets or ())[0])
    terms = nodeset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    terms[0]["matchExpressions"].append({"key": "sunk.example.com/gpu", "operator": "In", "values": ["a100"]})
    fix = symptom(replace(snap, nodesets=(nodeset,)), "no-feasible-nodes").fix
    # one expression on the key, with the pool's value, beside the pool's name: never a100, never gpu-reserve's pool
    has(fix, "gpu-reserve", entry(key="sunk.example.com/gpu", operator="In", values="[h100]"),
        entry(key="compute.coreweave.com/node-pool", operator="In", values="[slurm-gpu]"),
        never=("a100", "values: [slurm-gpu, gpu-reserve]", "values: [gpu-reserve"))



@pytest.mark.parametrize("case", CASES)
def test_a_fix_names_only_rows_that_are_reported(case: str) -> None:
    """"as no-feasible-nodes says" beside no no-feasible-nodes sends the reader to a row that is not there: a fix
    names another row only when that row is reported (not explained away) for the same target."""
    from sunkcheck.symptoms.table import LINT_RULES, RULES

    doc = replayed(case).json()
    ids = [r.id for r in RULES + LINT_RULES if "-" in r.id]  # "misscheduled" alone is a word as well as a row
    for result in doc["results"]:
        shown = {s["id"] for s in result["symptoms"] if not s["suppressed"]}
        for s in result["symptoms"]:
            named = {i for i in ids if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", s["fix"])}
            assert named <= shown, (result["name"], s["id"], named - shown)


def fix_of(case: str, name: str, symptom_id: str) -> str:
    doc = replayed(case).json()
    fix: str = next(s["fix"] for r in doc["results"] if r["name"] == name for s in r["symptoms"] if s["id"] == symptom_id)
    return fix


def test_layered_values_keep_the_nodesets_own_and_never_widen_onto_another_nodesets_pool() -> None:
    """slurm-gpu-a100's own a100 and a shared layer's h100 on one key: the fix keeps a100 alone. h100 is what
    slurm-gpu-h100's Nodes carry: never offered, and those Nodes' claim and room (the affinity refuses them anyway)
    are no fix of this NodeSet's."""
    fix = fix_of("label-same-key-layers-other-pool", "slurm-gpu-a100", "no-feasible-nodes")
    assert "values: [a100]" in fix
    assert "h100]" not in fix.split(":\n", 1)[1]  # not in the snippet
    assert "another NodeSet holds these Nodes" not in fix and "resources.requests" not in fix


def test_labels_on_every_node_with_two_values_are_never_said_to_be_on_only_some() -> None:
    """All six Nodes carry sunk.example.com/tier, four a and two b: never "only 4 of the 6 carry the key"; a
    read-only listing comes first, and no whole-pool patch: tier=a on every Node would take slurm-cpu-debug's two
    Nodes (it selects tier=b), so the fix names it instead."""
    fix = fix_of("labels-not-from-pool-other-value", "slurm-cpu-batch", "labels-not-from-pool")
    assert "carry sunk.example.com/tier:" not in fix and "carry sunk.example.com/tier=a" in fix
    commands = [line for line in fix.splitlines() if line.startswith("kubectl ")]
    assert [c.split()[:3] for c in commands] == [["kubectl", "get", "nodes"]], commands
    assert "would take its Nodes from NodeSet tenant-slurm/slurm-cpu-debug" in fix


def test_a_toleration_with_the_wrong_value_is_replaced_never_kept() -> None:
    """slurm-gpu-spare copied slurm-gpu-h100's toleration (value h100) for a pool tainted h100-spare: the fix shows
    both values and a list without the wrong entry."""
    fix = fix_of("several-nodesets", "slurm-gpu-spare", "no-feasible-nodes")
    assert "value h100 where the taint has h100-spare" in fix
    assert "value: h100\n" not in fix + "\n" and fix.count("key: sunk.example.com/gpu") == 1


@pytest.mark.parametrize("case", CASES)
def test_a_snapshot_holding_every_pod_never_says_pods_were_not_read(case: str) -> None:
    """A recorded case has no meta.json podNodes: every Pod was read, so no fix says some were not."""
    doc = replayed(case).json()
    for s in (s for r in doc["results"] for s in r["symptoms"]):
        assert "read the Pods of" not in s["fix"], (s["id"], s["fix"])


def test_a_replay_knows_which_nodes_pods_the_recorded_check_read(tmp_path: Path) -> None:
    """meta.json's podNodes (a live check lists the Pods of the Nodes its rows declare): the replay says which
    Nodes' Pods it did not read, as the live check did; without podNodes it read them all."""
    import shutil

    shutil.copytree(FIXTURES / "foreign-pod-daemonset-untolerated", tmp_path / "s")
    hungry = "g18d510"  # the Node whose room the squatter takes
    (tmp_path / "s" / "meta.json").write_text(json.dumps({"podNodes": [hungry]}))
    fix = run("check", "--snapshot", str(tmp_path / "s"), "-o", "json").json()["results"][0]["symptoms"][0]["fix"]
    assert f"this check read the Pods of {hungry} only, of the 4 Nodes of slurm-cpu" in fix
    assert f"DaemonSet monitoring/node-exporter (its Pod on {hungry})" in fix


@pytest.mark.parametrize("meta, error", [
    ("{", "not JSON"), ("[]", "not a JSON object"), ('{"time": 5}', "time: not the type sunkcheck writes"),
    ('{"errors": "x"}', "errors: not the type sunkcheck writes"), ('{"podNodes": "g1"}', "podNodes: not a list of Node names"),
    ('{"podNodes": [1]}', "podNodes: not a list of Node names"), (None, "cannot read: a FIFO, not a regular file")])
def test_a_malformed_meta_json_is_refused_in_one_line(tmp_path: Path, meta: str | None, error: str) -> None:
    """It says which Nodes' Pods were read: taken for "none said", a replay would claim Pods it never had."""
    import os
    import shutil

    shutil.copytree(FIXTURES / "healthy-pool-name", tmp_path / "s")
    path = tmp_path / "s" / "meta.json"
    if meta is None:
        os.mkfifo(path)
    else:
        path.write_text(meta)
    r = run("check", "--snapshot", str(tmp_path / "s"))
    assert (r.code, r.out) == (3, "") and r.err.startswith(f"sunkcheck: error: {path}: ") and error in r.err, r.err
    assert r.err.count("\n") == 1


def _agents_short(all_nodes: bool = False, extra: dict[str, str] | None = None) -> Snapshot:
    """pool-short-beside-node-agents, every slurm-cpu Node replaced (`all_nodes`: FEASIBLE 0), and cilium's Pods
    asking `extra` on top of what they ask."""
    snap = copy.deepcopy(snapshot.load(FIXTURES / "pool-short-beside-node-agents"))
    small = next(n for n in snap.nodes or () if n["metadata"]["name"] == "g307b8b")["status"]["allocatable"]
    for n in snap.nodes or ():
        if all_nodes and n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu":
            n["status"]["allocatable"] = dict(small)
    for p in snap.pods or ():
        if p["metadata"]["name"].startswith("cilium-"):
            p["spec"]["containers"][0]["resources"]["requests"] |= extra or {}
    if all_nodes:  # no slurmd Pod anywhere, as the status says
        (snap.nodesets or ())[0]["status"] |= dict.fromkeys(("desiredNumberScheduled", "numberFeasible", "currentNumberScheduled",
                                                     "numberReady", "updatedNumberScheduled"), 0)
        snap = replace(snap, pods=tuple(p for p in snap.pods or () if p["metadata"]["labels"].get("app.kubernetes.io/name")
                                        != "slurmd"))
    return snap


def test_node_agents_are_overhead_their_nodes_get_a_request_that_fits_never_their_scope() -> None:
    """cilium and node-problem-detector (576Mi of 1200.293Gi) keep the slurmd Pod off Nodes it fits empty: taking the
    Nodes out of cilium's scope would take the CNI off them. The Nodes are unusable as they are (pool-nodes-unusable,
    as a Node with less memory than the request), no Pod squats on them: no foreign-pod-resources, which would route
    the finding (its JSON id, Nagios line and metric) as a squatter. With the whole pool short (FEASIBLE 0),
    no-feasible-nodes says the same request; neither taints the pool nor deletes a Pod."""
    safe = ("cilium", "node-problem-detector", "NotIn", "kubectl delete", "kubectl taint", "kubectl patch")
    found = symptom(_agents_short(), "pool-nodes-unusable")
    has("\n".join(found.evidence), "g307b8b", "gc80620", "576Mi", "node agents")
    has(found.fix, "resources.requests.memory to 1199Gi or less", "576Mi", never=safe)
    has(symptom(_agents_short(all_nodes=True), "no-feasible-nodes").fix, "1199Gi or less", "node agents",
        never=("cilium", "scope", "keep them off", "kubectl delete"))
    for snap in (_agents_short(), _agents_short(all_nodes=True)):
        assert "foreign-pod-resources" not in {s.id for r in diagnose(snap, Target()).results for s in r.symptoms}


def test_a_squatter_beside_nodes_short_of_node_agents_is_one_row_each() -> None:
    """A batch Pod holding 500Gi on g118188 (its slurmd Pod gone) is a squatter, its Node named by
    foreign-pod-resources; the two replacements, short beside cilium and node-problem-detector alone, by
    pool-nodes-unusable, never by the squatter's row."""
    snap = _agents_short()
    slurmd = next(p for p in snap.pods or () if p["spec"]["nodeName"] == "g118188" and p["metadata"]["name"].startswith("slurm"))
    batch = copy.deepcopy(slurmd)
    batch["metadata"] |= {"name": "etl-7d9f-x2k4q", "namespace": "data-eng", "labels": {"app": "etl"},
                          "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "etl-7d9f",
                                               "uid": "u-etl", "controller": True}]}
    batch["spec"]["containers"] = [{"name": "etl", "resources": {"requests": {"memory": "500Gi"}}}]
    snap = replace(snap, pods=(*(p for p in snap.pods or () if p is not slurmd), batch))
    rows = {s.id: s for r in diagnose(snap, Target()).results for s in r.symptoms}
    foreign, unusable = rows["foreign-pod-resources"], rows["pool-nodes-unusable"]
    has("\n".join(foreign.evidence), "g118188", never=("g307b8b", "gc80620", "node agents"))
    has("\n".join(unusable.evidence[1:]), "g307b8b", "gc80620", never=("g118188",))
    assert unusable.evidence[0].endswith("; 1 more short of what other Pods hold there: g118188)")  # accounted, no drift
    has(foreign.fix, "data-eng", never=("resources.requests",))


@pytest.mark.parametrize("extra", [{"memory": "80Gi"}, {"rdma/ib": "1"}])
def test_a_daemonset_holding_a_device_or_over_five_percent_is_a_squatter_its_scope_the_fix(extra: dict[str, str]) -> None:
    """80Gi is 6.7% of the Node's memory; an RDMA device is one the slurmd Pod may need, however little else the
    Pod asks: either makes cilium a squatter, its scope the fix (never a request lowered around it)."""
    fix = symptom(_agents_short(extra=extra), "foreign-pod-resources").fix
    has(fix, "DaemonSet kube-system/cilium holds", "NotIn", never=("resources.requests",))


def test_the_entries_to_keep_say_sunks_state_expression_is_inherited_not_the_users_to_write() -> None:
    """The runbook: SUNK's base definition contributes node.coreweave.cloud/state In [production]; don't write your
    own expression on that key. The list to keep still holds it (it is what the term holds), and the line above it
    says it is inherited, so the user writes nothing of their own on that key."""
    fix = symptom(snapshot.load(FIXTURES / "nodeselector-ignored"), "nodeselector-ignored").fix
    assert "\n- key: node.coreweave.cloud/state\n  operator: In\n  values: [production]" in fix
    kept = next(line for line in fix.splitlines() if "keep the entries it has" in line)
    has(kept, "node.coreweave.cloud/state In [production]", "SUNK's base definition",
        "no expression of your own on node.coreweave.cloud/state")


def test_a_replaced_toleration_list_says_the_lock_toleration_is_sunks() -> None:
    """several-nodesets: the copied toleration's value is replaced, the whole list printed; the lock's entry in it is
    SUNK's, said on the line above the list, and kept in the list."""
    fix = symptom(snapshot.load(FIXTURES / "several-nodesets"), "no-feasible-nodes").fix
    said = next(line for line in fix.splitlines() if "the list then reads" in line)
    has(said, "sunk.coreweave.com/lock toleration is SUNK's", "keep it")
    assert "\n- key: sunk.coreweave.com/lock\n  operator: Exists\n  effect: NoExecute" in fix


def test_another_pools_hand_labelled_nodes_are_drained_before_their_label_goes_never_patched_into_its_pool() -> None:
    """--pool slurm-cpu; sunk.example.com/node set by hand on 2 Nodes of batch-etl, the etl team's pool, where 2
    slurmd Pods run: drain their Slurm nodes, wait for their jobs, take the label off, then evict the Pods (each on a
    typed y). Never batch-etl's nodeLabels (all 6 of its Nodes)."""
    fix = fix_of("labels-by-hand-two-pools-flag", "slurm-cpu-batch", "nodeselector-ignored")
    lines = [line for line in fix.splitlines() if line.split(" ", 1)[0] in ("scontrol", "squeue", "kubectl", "printf")]
    assert [unasked(line).split(" ", 2)[:2] for line in lines] == [
        ["scontrol", "update"], ["squeue", "-h"], ["kubectl", "label"], ["kubectl", "create"], ["kubectl", "create"]], fix
    assert lines[3:] == [drained_eviction("tenant-slurm", f"slurm-cpu-batch-012-{i:03}", node)
                         for i, node in ((9, "gd05494"), (10, "g3db284"))]
    assert "nodepool batch-etl" not in fix


def test_another_pools_hand_labelled_nodes_without_slurmd_lose_the_label_never_patched_into_its_pool(tmp_path: Path) -> None:
    """The same, before any slurmd Pod reached batch-etl: nothing to drain, so labels-not-from-pool takes the label
    off those 2 Nodes; batch-etl's nodeLabels are never offered."""
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "labels-by-hand-two-pools-flag", case)
    pods = json.loads((case / "pods.json").read_text())
    pods["items"] = [p for p in pods["items"] if p["spec"].get("nodeName") not in ("g3db284", "gd05494")
                     or not p["metadata"]["name"].startswith("slurm-cpu-batch-")]
    (case / "pods.json").write_text(json.dumps(pods))
    doc = run("check", "--snapshot", str(case), "-o", "json", "--pool", "slurm-cpu").json()
    fix = next(s["fix"] for s in doc["results"][0]["symptoms"] if s["id"] == "labels-not-from-pool")
    has(fix, "kubectl label node g3db284 gd05494 sunk.example.com/node-", "kubectl patch nodepool slurm-cpu ",
        never=("nodepool batch-etl",))
    nodes = json.loads((case / "nodes.json").read_text())  # every batch-etl Node labelled by hand: each named
    etl = sorted(n["metadata"]["name"] for n in nodes["items"]
                 if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "batch-etl")
    for n in nodes["items"]:
        if n["metadata"]["name"] in etl:
            n["metadata"]["labels"]["sunk.example.com/node"] = "true"
    (case / "nodes.json").write_text(json.dumps(nodes))
    doc = run("check", "--snapshot", str(case), "-o", "json", "--pool", "slurm-cpu").json()
    fix = next(s["fix"] for s in doc["results"][0]["symptoms"] if s["id"] == "labels-not-from-pool")
    has(fix, f"kubectl label node {' '.join(etl)} sunk.example.com/node-", never=("nodepool batch-etl",))


def _renamed(nodeset: Obj, name: str, template: Obj) -> Obj:
    """`nodeset` under another name, with `template` as its Pod template's spec."""
    return nodeset | {"metadata": nodeset["metadata"] | {"name": name},
                      "spec": nodeset["spec"] | {"template": nodeset["spec"]["template"] | {"spec": template}}}


def test_a_typo_whose_every_near_pool_is_held_says_who_holds_the_one_suggested() -> None:
    """Both pools as near to slurm-cpu-c are another NodeSet's: the nearest is still named, with who holds it and
    the owners' choice, but no snippet points the NodeSet at it (pasted, it would share another NodeSet's Nodes)."""
    snap = snapshot.load(FIXTURES / "no-feasible-pool-typo-held")
    batch = next(n for n in snap.nodesets or () if n["metadata"]["name"] == "slurm-cpu-batch")
    spec = copy.deepcopy(batch["spec"]["template"]["spec"])
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"][-1]["values"] = ["slurm-cpu-a"]
    held = replace(snap, nodesets=(*(snap.nodesets or ()), _renamed(batch, "slurm-cpu-gpu", spec)))
    found = symptom(held, "no-feasible-nodes", Target(nodeset="slurm-cpu-small", namespace="tenant-slurm"))
    assert "did you mean slurm-cpu-b for slurm-cpu-c? NodeSet tenant-slurm/slurm-cpu-batch holds it:" in found.fix
    assert "give this NodeSet a Node Pool of its own" in found.fix
    assert "values:" not in found.fix and [kind for kind, _ in steps(found.fix)] == ["prose"], found.fix
    assert any(e.endswith("did you mean slurm-cpu-b (NodeSet tenant-slurm/slurm-cpu-batch holds it)?")
               for e in found.evidence)


def test_a_missing_label_is_never_set_on_another_nodesets_pool() -> None:
    """A NodeSet found by the taints it tolerates alone (its one requirement on no Node) reaches both pools; the
    one slurm-cpu-batch holds is never patched for it, and the fix offers dropping the requirement instead."""
    snap = snapshot.load(FIXTURES / "pool-labels-missing-beside-partition")
    small = next(n for n in snap.nodesets or () if n["metadata"]["name"] == "slurm-cpu-small")
    spec = {k: v for k, v in small["spec"]["template"]["spec"].items() if k != "affinity"}
    alone = replace(snap, nodesets=(*[n for n in snap.nodesets or () if n is not small],
                                    _renamed(small, "slurm-cpu-small", spec)))
    found = symptom(alone, "pool-labels-missing", Target(nodeset="slurm-cpu-small", namespace="tenant-slurm"))
    assert "kubectl patch nodepool slurm-cpu-b " in found.fix and "slurm-cpu-a" not in found.fix
    assert "Node Pool slurm-cpu-a: NodeSet tenant-slurm/slurm-cpu-batch holds it, so no fix labels it" in found.evidence
    assert "\nor, if no Node Pool is meant to carry slurm.example.com/tier, remove or correct it in the node " \
           "definition's nodeSelector" in found.fix


RELABELLED = "pool-relabelled-for-new-nodeset"
RESTORE_TRUE = ("kubectl patch nodepool slurm-cpu --type=merge -p "
                "'{\"spec\":{\"nodeLabels\":{\"sunk.example.com/node\":\"true\"}}}'")


def test_a_pool_relabelled_for_another_nodeset_is_left_or_restored_never_its_value_asked_for() -> None:
    """The pool's label now carries slurm-cpu-genoa's value: asking for it in slurm-cpu-batch put both NodeSets on the
    same Nodes. With misscheduled ignored, no-feasible-nodes spells both ways itself: the move intended, drain the Slurm
    nodes, then evict the Pods (asking first); if not, put the pool's label back, taking the pool from slurm-cpu-genoa."""
    doc = run("check", "--snapshot", str(FIXTURES / RELABELLED), "--nodeset", "slurm-cpu-batch", "-n", "tenant-slurm",
              "--ignore", "misscheduled", "-o", "json").json()
    fix = next(s["fix"] for s in doc["results"][0]["symptoms"] if s["id"] == "no-feasible-nodes")
    pods = {f"slurm-cpu-batch-012-00{i}": node for i, node in zip(range(5, 9), ("g18d510", "g10689d", "ge2d421", "ga6963c"),
                                                                  strict=True)}
    has(fix, "NodeSet tenant-slurm/slurm-cpu-genoa selects", "scontrol update nodename=" + ",".join(pods),
        *(f"\n{drained_eviction('tenant-slurm', pod, node)}" for pod, node in pods.items()), "takes the Nodes from NodeSet "
        "tenant-slurm/slurm-cpu-genoa:\n" + RESTORE_TRUE, never=("cpu-genoa]", "ask for", "misscheduled's fix",
                                                                  "kubectl delete"))
    assert fix.index("state=drain") < fix.index("/eviction") < fix.index("kubectl patch")


def test_nodes_another_nodeset_still_selects_are_never_all_left_out_by_name() -> None:
    """slurm-cpu-batch asks for both values, so its Pods belong where they run: slurm-cpu-genoa, whose every Node they
    hold, was told to leave all four out by name (FEASIBLE 0 for good) and to keep them off the pool as squatters."""
    snap = snapshot.load(FIXTURES / RELABELLED)
    nodesets = snap.nodesets or ()
    batch = next(n for n in nodesets if n["metadata"]["name"] == "slurm-cpu-batch")
    spec = copy.deepcopy(batch["spec"]["template"]["spec"])
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"][-1]["values"] = ["true", "cpu-genoa"]
    both = replace(snap, nodesets=tuple(_renamed(n, "slurm-cpu-batch", spec) if n is batch else n for n in nodesets))
    found = symptom(both, "no-feasible-nodes", Target(nodeset="slurm-cpu-genoa", namespace="tenant-slurm"))
    has(found.fix, "NodeSet tenant-slurm/slurm-cpu-batch holds g10689d, g18d510, ga6963c and 1 more and still selects them",
        "give each NodeSet its own Node Pool", never=("NotIn", "kubernetes.io/hostname", "keep them off", "MISSCHEDULED"))
    assert found.cause == "Another NodeSet holds the Nodes.", found.cause


def test_pods_on_a_pool_another_nodeset_names_now_are_never_told_to_name_it_too() -> None:
    """slurm-cpu-batch names slurm-cpuu, and its Pods run on slurm-cpu, which a new NodeSet names: accepting slurm-cpu
    again in slurm-cpu-batch put both NodeSets on the same Nodes; the owners decide."""
    snap = snapshot.load(FIXTURES / "pool-typo-pods-running")
    batch = (snap.nodesets or ())[0]
    spec = copy.deepcopy(batch["spec"]["template"]["spec"])
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"][-1]["values"] = ["slurm-cpu"]
    found = symptom(replace(snap, nodesets=(batch, _renamed(batch, "slurm-cpu-new", spec))), "misscheduled",
                    Target(nodeset="slurm-cpu-batch", namespace="tenant-slurm"))
    has(found.fix, "NodeSet tenant-slurm/slurm-cpu-new selects", "scontrol update nodename=slurm-cpu-batch-012-005,",
        "decide with the owners of NodeSet tenant-slurm/slurm-cpu-new", never=("values: [slurm-cpu]", "- key:"))


def test_a_relabelled_pools_fixes_pasted_delete_no_slurmd_pod_while_the_drain_waits(serve: Any, tmp_path: Path) -> None:
    """Both NodeSets' fixes, their commands pasted in turn into bash with the real kubectl against the test API server
    (no Slurm client here: the drain and the wait fail): the delete asks first and reads the next pasted line, no `y`,
    so no slurmd Pod is deleted, whichever way the fix goes."""
    api = serve(RELABELLED)
    doc = replayed(RELABELLED).json()
    for s in (s for r in doc["results"] for s in r["symptoms"]):
        commands = [t for kind, t in steps(s["fix"]) if kind == "command"]
        done = subprocess.run(["bash"], input="\n".join(commands), capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert not any(c.startswith("kubectl delete") for c in commands) or "pod/slurm-cpu-batch-012-005" in done.stdout
    assert [r for r in api.log if r.method == "DELETE"] == []


def test_no_feasible_node_for_sunks_lock_blames_the_lock_not_the_pool() -> None:
    """Every Node runs a Slurm job (SUNK locked them all) and the NodeSet lost the lock's toleration: the cause is
    SUNK's lock, not a taint of the pool, which sets none."""
    snap = snapshot.load(FIXTURES / "lock-taint-untolerated")
    lock = {"key": "sunk.coreweave.com/lock", "value": "true", "effect": "NoExecute"}
    nodes = tuple(n | {"spec": n["spec"] | {"taints": [lock]}} if n["metadata"]["labels"].get(
        "compute.coreweave.com/node-pool") == "slurm-gpu" else n for n in snap.nodes or ())
    ns = (snap.nodesets or ())[0]
    stuck = ns | {"status": ns["status"] | {"desiredNumberScheduled": 0, "numberFeasible": 0}}
    found = symptom(replace(snap, nodes=nodes, nodesets=(stuck,)), "no-feasible-nodes")
    assert "SUNK's lock taint, which SUNK sets on the Nodes running Slurm jobs" in found.cause
    assert "Node Pool's taint" not in found.cause and "kubectl taint" not in found.fix


# --- a fix as its steps: what a copy button copies -----------------------------------------------------------------

FIX_DOCS = {case: replayed(case).json() for case in CASES}


def _collection(text: str) -> object:
    """`text` as YAML when it is a list or a map, else None (words, or no YAML at all)."""
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return loaded if isinstance(loaded, (list, dict)) else None


@pytest.mark.parametrize("case", CASES)
def test_every_fix_splits_into_commands_snippets_and_words(case: str) -> None:
    """Every row's fix of every recorded case, as `-o json` gives its steps: the steps are the fix, line for line; a
    command step is one line that a shell splits into words, starting with a program and its subcommand or flag; a
    snippet step is YAML that `to_yaml` writes so (a list or a map); a line of words is neither."""
    for result in FIX_DOCS[case]["results"]:
        for s in result["symptoms"]:
            parts = [(p["kind"], p["text"]) for p in s["fix_steps"]]
            assert parts == steps(s["fix"]) and "\n".join(t for _, t in parts) == s["fix"]
            for kind, text in parts:
                if kind == "command":
                    assert "\n" not in text and COMMAND.match(unasked(text)) and shlex.split(text), (s["id"], text)
                elif kind == "yaml":  # less the comment lines saying which part is new and which there now
                    bare = "\n".join(line for line in text.split("\n") if line not in SNIPPET_MARKS)
                    assert to_yaml(_collection(bare)) == bare, (s["id"], text)
                else:
                    for line in text.split("\n"):
                        assert (found := COMMAND.search(line)) is None or found.start(), (s["id"], line)
                        # a sentence: words before its first colon, where a snippet's line has one key
                        assert _collection(line) is None or " " in line.split(":", 1)[0], (s["id"], line)


def test_one_step_per_command_whatever_runs_around_it() -> None:
    """Commands never merge, not even two in a row (a drain and the wait for it); words and snippets run on."""
    fix = "drain, then wait:\nscontrol update nodename=a state=drain\nsqueue -h -w a\nthen add:\n- key: k\n  operator: Exists"
    assert steps(fix) == [("prose", "drain, then wait:"), ("command", "scontrol update nodename=a state=drain"),
                          ("command", "squeue -h -w a"), ("prose", "then add:"), ("yaml", "- key: k\n  operator: Exists")]
    assert [line_kind(x) for x in ("kubectl get nodes", "nodeSelector:", "  a: b", "- a", "# to add:", "# a: b",
                                   "its entries today, to keep:", "Node g1: lacks it")] == [
        "command", "yaml", "yaml", "yaml", "yaml", "prose", "prose", "prose"]


@pytest.mark.parametrize("program", ["ssh", "kubectl", "helm", "sunkcheck", "sinfo", "squeue", "scontrol"])
def test_a_sentence_opening_with_a_node_named_like_a_program_is_words(program: str, tmp_path: Path) -> None:
    """misscheduled-lock-taint's Node renamed like a program (a valid Node name): its sentence ("ssh carries the
    taint ...") stays words, never a command with a Copy button of its own; the real commands stay commands."""
    case = tmp_path / program
    shutil.copytree(FIXTURES / "misscheduled-lock-taint", case)
    pods = json.loads((case / "pods.json").read_text())
    old = next(p["spec"]["nodeName"] for p in pods["items"] if p["metadata"]["name"] == "slurm-gpu-h100-012-005")
    for f in case.glob("*.json"):
        f.write_text(re.sub(rf"(?<![\w.-]){re.escape(old)}(?![\w-])", program, f.read_text()))
    # pool-nodes-unusable ignored: misscheduled spells its own restore ("ssh carries ...") rather than referring to it
    doc = run("check", "--snapshot", str(case), "-A", "-o", "json", "--ignore", "pool-nodes-unusable").json()
    fix_steps = [st for r in doc["results"] for sy in r["symptoms"] for st in sy["fix_steps"]]
    assert any(st["kind"] == "prose" and any(line.startswith(f"{program} carries") for line in st["text"].split("\n"))
               for st in fix_steps), fix_steps
    commands = [st["text"] for st in fix_steps if st["kind"] == "command"]
    assert commands and all(re.match(r"(kubectl|scontrol|squeue) ", unasked(c)) for c in commands), commands
    assert line_kind(f"{program} has 1080Gi of allocatable memory, which the slurmd Pod's 1200Gi exceeds") == "prose"


@pytest.mark.parametrize("case", CASES)
def test_words_quote_a_cluster_string_never_a_sentence(case: str) -> None:
    """A line of words reads as words: only a cluster string a shell would act on is quoted, on its own, so no
    sentence (with its apostrophes escaped as '"'"') sits inside quotes."""
    for result in FIX_DOCS[case]["results"]:
        for s in result["symptoms"]:
            prose = [t for p in s["fix_steps"] if p["kind"] == "prose" for t in p["text"].split("\n")]
            assert [line for line in prose if "'\"'\"'" in line or line.startswith("'")] == [], s["id"]


def test_a_list_of_cluster_strings_quotes_each_one_that_needs_it() -> None:
    assert prose_list(["g1", "a;b", "c"]) == "g1, 'a;b', c"
    assert prose_list(["x$y", "z"], " and ") == "'x$y' and z"


def test_a_whole_fix_pasted_into_a_shell_evicts_no_slurmd_pod_while_the_drain_waits(serve: Any, tmp_path: Path) -> None:
    """misscheduled: drain, wait until squeue lists no job, then evict the slurmd Pods (then look at a Node in
    repair). Pasted whole, every command runs in turn (here on a machine with kubectl and no Slurm client, so the
    drain and the wait fail; the words only give errors); each eviction asks first, reads the next pasted line (no
    `y`) and evicts nothing, as one pasted alone does on anything but a y; on a y it posts its Eviction. The real
    kubectl against the test API server, which counts every write."""
    api = serve("misscheduled-beside-repair")
    commands = [t for kind, t in steps(symptom(snapshot.load(FIXTURES / "misscheduled-beside-repair"), "misscheduled").fix)
                if kind == "command"]
    evictions = [c for c in commands if "/eviction " in c]
    assert len(evictions) == 2 and commands[-1] not in evictions  # a line follows each: the one a paste answers with
    for pasted in ("\n".join(commands), evictions[0], f"{evictions[0]}\nyes", f"{evictions[0]}\nn"):
        done = subprocess.run(["bash"], input=pasted + "\n", capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert "no Slurm job left on Slurm node slurm-cpu-batch-012-00" in done.stdout, done  # it asked
        assert api.writes == 0, done.stdout + done.stderr
    done = subprocess.run(["bash"], input=f"{evictions[1]}\ny\n", capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert api.writes == 1 and "read-only" in done.stderr, done  # the test API server refuses the Eviction it counts


@pytest.mark.parametrize("case", CASES)
def test_a_fix_pasted_whole_runs_nothing_the_cluster_wrote_in_any_case(case: str, tmp_path: Path) -> None:
    """Every recorded case with a command substitution appended to every value a fix may name, each fix pasted
    whole into bash (its programs stubbed): nothing runs. A word of a sentence quoted on its own keeps this only while
    no apostrophe of the sentence opens a quote before it, which a sentence quoted whole never had to care about."""
    marker, snap = tmp_path / "ran", tmp_path / "snap"
    shutil.copytree(FIXTURES / case, snap)
    for name in ("nodesets.json", "nodepools.json", "nodes.json", "daemonsets.json", "pods.json"):
        if (path := snap / name).exists():
            path.write_text(json.dumps(_with_payload(json.loads(path.read_text()), SHELL_PAYLOAD % marker)))
    doc = run("check", "--snapshot", str(snap), "-o", "json", *expected(case)["args"]).json()
    stubs = "kubectl(){ :; }; scontrol(){ :; }; squeue(){ :; }; sunkcheck(){ :; }\n"
    for s in (s for r in doc["results"] for s in r["symptoms"]):
        subprocess.run(["bash"], input=stubs + s["fix"] + "\n", text=True, capture_output=True, timeout=20, cwd=tmp_path)
        assert not marker.exists(), (s["id"], s["fix"])


# --- a taint set by hand on the key of the pool's own: the Node's drift, put back there alone ---------------------

EDITED = "sunk.example.com/node"


def _beside_pool_taint(snap: snapshot.Snapshot) -> snapshot.Snapshot:
    """pool-taint-effect-edited with the pool's own taint still on its edited Node: the NoExecute one set beside it."""
    pool_taint = {"key": EDITED, "value": "true", "effect": "NoSchedule"}
    return replace(snap, nodes=tuple(n | {"spec": n["spec"] | {"taints": [pool_taint, *n["spec"]["taints"]]}}
                                     if n["metadata"]["name"] == "ga6963c" else n for n in snap.nodes or ()))


@pytest.mark.parametrize(("case", "change"), [("pool-taint-effect-edited", None), ("pool-taint-value-edited", None),
                                              ("pool-taint-effect-edited", _beside_pool_taint)])
def test_the_pools_taint_edited_on_a_node_is_put_back_there_alone_by_the_real_kubectl(
        serve: Any, tmp_path: Path, case: str, change: Callable[[snapshot.Snapshot], snapshot.Snapshot] | None) -> None:
    """The NodeSet tolerates the pool's taint exactly; on one Node it reads with another effect or value (or another
    effect beside it). That taint in the pool's nodeTaints would evict or refuse every slurmd Pod: no row offers it.
    The printed command, run by the real kubectl against the test API server with --dry-run=client (it reads the
    Node, applies the change, prints the Node it would write, writes nothing): the Node carries the pool's taints,
    exactly, and nothing else."""
    snap = snapshot.load(FIXTURES / case)
    snap = change(snap) if change else snap
    api = serve(snap)
    found = [s for r in diagnose(snap, Target()).results for s in r.symptoms]
    assert [s.id for s in found if s.id != "misscheduled"] == ["pool-nodes-unusable"]
    assert not [s.id for s in found if "nodeTaints" in s.fix or "add this entry" in s.fix]
    commands = [t for s in found if s.id == "pool-nodes-unusable" for kind, t in steps(s.fix) if kind == "command"]
    assert len(commands) == 1 and shlex.split(commands[0])[:4] == ["kubectl", "taint", "node", "ga6963c"]
    env = dict(os.environ, KUBECONFIG=str(api.kubeconfig))
    done = subprocess.run([*shlex.split(commands[0]), "--dry-run=client", "-o", "json", "--cache-dir",
                           str(tmp_path / "kubectl-cache")], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    pool = next(p for p in snap.nodepools or () if p["metadata"]["name"] == "slurm-cpu")
    taints = [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in json.loads(done.stdout)["spec"]["taints"]]
    assert taints == pool["spec"]["nodeTaints"] and api.writes == 0


def test_a_hand_taint_tolerated_only_by_key_is_not_moved_into_the_pool() -> None:
    """A toleration naming the key with the pool's value and effect tolerates neither another value nor another effect:
    the feasibility engine's rule, not the key alone, says which hand taints are the NodeSet's to move."""
    for case in ("pool-taint-effect-edited", "pool-taint-value-edited"):
        snap = snapshot.load(FIXTURES / case)
        pool = next(p for p in snap.nodepools or () if p["metadata"]["name"] == "slurm-cpu")
        spec = o.pod_spec((snap.nodesets or ())[0])
        assert nd.moved_hand_taints(Pool("slurm-cpu", pool, tuple(snap.nodes or ()), ()), spec) == {}


def test_a_hand_value_over_the_pools_taint_is_never_moved_even_when_tolerated() -> None:
    """The NodeSet tolerating any value of the key keeps using the Node whose copy of the pool's taint reads maint: no
    row, and above all no patch adding a second taint of that key and effect to the pool (a Node holds one)."""
    snap = snapshot.load(FIXTURES / "pool-taint-value-edited")
    nodeset = copy.deepcopy((snap.nodesets or ())[0])
    nodeset["spec"]["template"]["spec"]["tolerations"][1:] = [{"key": EDITED, "operator": "Exists", "effect": "NoSchedule"}]
    assert [s.id for r in diagnose(replace(snap, nodesets=(nodeset,)), Target()).results for s in r.symptoms
            if s.id == "labels-not-from-pool" or "nodeTaints" in s.fix] == []


def test_the_pools_taint_edited_on_every_node_is_put_back_on_each_never_tolerated() -> None:
    """Every Node's copy of the pool's taint edited to maint: FEASIBLE 0, and the fix puts the pool's value back on
    each Node (never tolerates maint, nor removes the key alone, which would open the pool to every Pod)."""
    snap = snapshot.load(FIXTURES / "pool-taint-value-edited")
    maint = [{"key": EDITED, "value": "maint", "effect": "NoSchedule"}]
    nodes = tuple(n | {"spec": n["spec"] | {"taints": maint}}
                  if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu" else n for n in snap.nodes or ())
    nodeset = copy.deepcopy((snap.nodesets or ())[0])
    nodeset["status"] |= {"desiredNumberScheduled": 0, "numberFeasible": 0, "currentNumberScheduled": 0,
                          "numberReady": 0, "updatedNumberScheduled": 0, "numberMisscheduled": 4}
    fix = symptom(replace(snap, nodes=nodes, nodesets=(nodeset,)), "no-feasible-nodes").fix
    has(fix, *(f"\nkubectl taint node {n} sunk.example.com/node=true:NoSchedule --overwrite"
               for n in ("g10689d", "g18d510", "ga6963c")), "the taint Node Pool slurm-cpu sets",
        never=("add this entry", "sunk.example.com/node:NoSchedule-", "nodeTaints/-"))


def test_misscheduled_spells_the_pools_taint_put_back_when_it_restores_the_node_itself() -> None:
    """pool-nodes-unusable ignored: misscheduled restores the Node with the same command, never the key removed alone."""
    doc = run("check", "--snapshot", str(FIXTURES / "pool-taint-value-edited"), "-o", "json",
              "--ignore", "pool-nodes-unusable").json()
    fix = next(s["fix"] for r in doc["results"] for s in r["symptoms"] if s["id"] == "misscheduled")
    has(fix, "\nkubectl taint node ga6963c sunk.example.com/node=true:NoSchedule --overwrite\n",
        never=("sunk.example.com/node:NoSchedule-",))


def test_a_removal_and_its_restore_form_one_kubectl_taint_command() -> None:
    """kubectl refuses to set and remove one key and effect at once: a restored taint with the removed one's key and
    effect replaces it; another effect is removed beside it; nothing restored is a plain removal."""
    pool_taint = {"key": EDITED, "value": "true", "effect": "NoSchedule"}
    assert untaint_node("n1", dict(pool_taint, value="maint"), [pool_taint]) == \
        "kubectl taint node n1 sunk.example.com/node=true:NoSchedule --overwrite"
    assert untaint_node(["n1", "n2"], dict(pool_taint, effect="NoExecute"), [pool_taint]) == \
        "kubectl taint node n1 n2 sunk.example.com/node=true:NoSchedule sunk.example.com/node:NoExecute- --overwrite"
    assert untaint_node("n1", pool_taint) == "kubectl taint node n1 sunk.example.com/node:NoSchedule-"
    assert untaint_node("n1", pool_taint, [dict(pool_taint, value="no value a label may hold")]).startswith("(no command")


# --- foreign Pods: only those their controller recreates elsewhere are evicted --------------------------------------

def _squatter_fix(change: Callable[[Obj], Obj]) -> str:
    """foreign-pod-job-and-pinned's fix with the notebook Pod changed by `change`, its Node labelled HAND_LABEL."""
    snap = snapshot.load(FIXTURES / "foreign-pod-job-and-pinned")
    pods = tuple(change(copy.deepcopy(p)) if p["metadata"]["name"] == "notebook-6f8d9-k2x7p" else p for p in snap.pods or ())
    nodes = tuple(n | {"metadata": n["metadata"] | {"labels": n["metadata"]["labels"] | HAND_LABEL}}
                  if n["metadata"]["name"] == HOST else n for n in snap.nodes or ())
    return symptom(replace(snap, pods=pods, nodes=nodes), "foreign-pod-resources").fix


def _owned_by(kind: str) -> Callable[[Obj], Obj]:
    def change(pod: Obj) -> Obj:
        pod["metadata"]["ownerReferences"][0]["kind"] = kind
        return pod
    return change


def _placed(spec: Obj) -> Callable[[Obj], Obj]:
    def change(pod: Obj) -> Obj:
        pod["spec"] |= spec
        return pod
    return change


UNKNOWN_ELSEWHERE = "asks in its required node affinity or nodeSelector for"
SEEN_IN_POOL_ALONE = "which the check sees on no Node outside the pool"


HOST = "g5670f6"  # the notebook's Node
HAND_LABEL = {"team.example.com/notebooks": "yes"}  # set by hand on HOST alone


@pytest.mark.parametrize(("change", "said"), [
    (_owned_by("Job"), "runs for Job notebook-6f8d9"),
    (_owned_by("DaemonSet"), None),  # a DaemonSet's Pod: its scope, never an eviction
    (_owned_by("RayCluster"), "belongs to RayCluster notebook-6f8d9"),
    (_placed({"nodeSelector": {"kubernetes.io/hostname": HOST}}), f"is pinned to {HOST} by name"),
    # another Node named beside it: still held to Nodes by name, which may be as full (its owner knows)
    (_placed({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [HOST, "gae05ed"]}]}]}}}}),
     f"is pinned to {HOST} by name"),
    (_placed({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [HOST]}]}]}}}}), f"is pinned to {HOST}"),
    # any label of its Node (its pool, a hand label, or one of CKS or Kubernetes: an instance type, a zone, an arch):
    # the check reads no Node outside the pool, so none is known to carry it, and the copy its controller makes stays
    # Pending once the pool is tainted
    (_placed({"nodeSelector": {"compute.coreweave.com/node-pool": "slurm-gpu"}}),
     f"{UNKNOWN_ELSEWHERE} compute.coreweave.com/node-pool of its Node, {SEEN_IN_POOL_ALONE}"),
    (_placed({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "compute.coreweave.com/node-pool", "operator": "In", "values": ["slurm-gpu"]},
                              {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}}}}),
     f"{UNKNOWN_ELSEWHERE} compute.coreweave.com/node-pool, kubernetes.io/arch of its Node"),
    (_placed({"nodeSelector": HAND_LABEL}), f"{UNKNOWN_ELSEWHERE} team.example.com/notebooks of its Node"),
    (_placed({"nodeSelector": {"node.kubernetes.io/instance-type": "gd-8xh100ib-i128"}}),
     f"{UNKNOWN_ELSEWHERE} node.kubernetes.io/instance-type of its Node, {SEEN_IN_POOL_ALONE}"),
    (_placed({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["US-EAST-04A"]}]}]}}}}),
     f"{UNKNOWN_ELSEWHERE} topology.kubernetes.io/zone of its Node"),
    (_placed({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "topology.kubernetes.io/region", "operator": "Exists"}]}]}}}}),
     f"{UNKNOWN_ELSEWHERE} topology.kubernetes.io/region of its Node"),
    (_placed({"nodeSelector": {"kubernetes.io/arch": "amd64"}}), f"{UNKNOWN_ELSEWHERE} kubernetes.io/arch of its Node")])
def test_a_pod_no_controller_recreates_elsewhere_is_never_evicted(change: Callable[[Obj], Obj], said: str | None) -> None:
    fix = _squatter_fix(change)
    assert "kubectl delete" not in fix and "/pods/notebook-6f8d9-k2x7p/eviction" not in fix, fix
    if said:
        has(fix, f"Pod ml/notebook-6f8d9-k2x7p {said}", "ask its owner")


@pytest.mark.parametrize("change", [
    _owned_by("StatefulSet"),
    # NotIn other Nodes, a label many Nodes carry: the same Node under another name takes it
    _placed({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["gae05ed"]}]}]}}}}),
    # a pool it is not in: a Node without the label takes it
    _placed({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "compute.coreweave.com/node-pool", "operator": "NotIn",
                               "values": ["cpu-control-plane"]}]}]}}}})])
def test_a_pod_its_controller_recreates_elsewhere_is_evicted_by_name(change: Callable[[Obj], Obj]) -> None:
    assert f"\n{eviction('ml', 'notebook-6f8d9-k2x7p')}\n" in _squatter_fix(change)


def test_a_reserved_taint_moved_into_the_pool_is_tolerated_first_by_the_daemonsets_it_reaches() -> None:
    """CKS dropped the pool's reserved taint: moved to the operator's domain, it newly reaches every Node of the pool,
    so each DaemonSet running there that does not tolerate it (a NoExecute one would delete its Pods) gets its
    toleration first; the node agents tolerating every taint are not named."""
    snap = snapshot.load(FIXTURES / "reserved-taint-namespace")
    agents = [p for p in snap.pods or () if p["metadata"]["name"].startswith("cilium-")]
    exporters = []
    for p in agents:
        pod = copy.deepcopy(p)
        pod["metadata"]["name"] = pod["metadata"]["name"].replace("cilium", "node-exporter")
        pod["metadata"]["ownerReferences"][0]["name"] = "node-exporter"
        pod["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        exporters.append(pod)
    fix = symptom(replace(snap, pods=(*(snap.pods or ()), *exporters)), "reserved-label-namespace").fix
    has(fix, "before tainting the pool, tolerate the taint in the DaemonSets running on",
        "DaemonSet kube-system/node-exporter", entry(key="sunk.example.com/node", operator="Exists", effect="NoSchedule"),
        never=("DaemonSet kube-system/cilium", "node-problem-detector"))
    assert fix.index("DaemonSet kube-system/node-exporter") < fix.index("kubectl patch nodepool slurm-cpu --type=json")
