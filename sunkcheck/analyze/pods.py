"""Runbook step 5: where the NodeSet's slurmd Pods run, Node by Node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from sunkcheck import objects as o
from sunkcheck.model import PodCounts, Summary
from sunkcheck.text import counted


def slurmd_pods(pods: Iterable[dict] | None, nodeset: dict) -> list[dict]:
    """The NodeSet's Pods, in its namespace: those labelled for it, and those its controller ownerReference says
    the NodeSet created, labelled or not: they hold their Nodes as its own, never as another workload's."""
    name, ns = o.name(nodeset), o.namespace(nodeset)
    return [p for p in pods or ()
            if o.namespace(p) == ns and (controlled_by(p, name) or labelled(p, name))]


def labelled(pod: dict, nodeset: str) -> bool:
    """Whether the Pod carries `app.kubernetes.io/instance=<NodeSet>` and, if it has ownerReferences, one naming the
    NodeSet (a Deployment may share the instance label)."""
    return o.labels(pod).get(o.INSTANCE_LABEL) == nodeset and (
        not o.meta(pod).get("ownerReferences") or o.owned_by(pod, "NodeSet", nodeset))


def controlled_by(pod: dict, nodeset: str) -> bool:
    """Whether the Pod's controller ownerReference is the NodeSet named `nodeset` (in the Pod's namespace)."""
    return any(ref.get("kind") == "NodeSet" and ref.get("name") == nodeset and ref.get("controller")
               for ref in o.meta(pod).get("ownerReferences") or ())


def unlabelled(pod: dict, nodeset: str) -> bool:
    """Whether a Pod of the NodeSet (by its controller ownerReference) lacks `app.kubernetes.io/instance=<NodeSet>`."""
    return o.labels(pod).get(o.INSTANCE_LABEL) != nodeset


def nodeset_owner(pod: dict) -> str | None:
    """The NodeSet a Pod belongs to, if any (a Node belongs to one NodeSet), as `namespace/name`: an
    ownerReference names an owner in the Pod's own namespace, and two tenants' NodeSets may share a name."""
    return next((f"{o.namespace(pod)}/{ref['name']}" for ref in o.meta(pod).get("ownerReferences") or ()
                 if ref.get("kind") == "NodeSet" and ref.get("name")), None)  # a nameless reference owns nothing


Placement = tuple[str, bool, bool]
"""A Pod's Node ("" while Pending), whether it is Ready, whether it finished."""


def placement(pod: dict) -> Placement:
    return o.node_name(pod) or "", o.is_ready(pod), o.is_terminal(pod)


def summary(pods: list[dict], pool_names: set[str], pool_by_node: Mapping[str, str | None], misscheduled: int,
            in_repair: int = 0, unlabelled: int = 0, placements: Sequence[Placement] | None = None) -> Summary:
    """No slurmd Pod at all, or one elsewhere, Pending, not Ready or misscheduled (on a Node the NodeSet now
    refuses), shows a failure; one on a Node in repair (`in_repair`, MISSCHEDULED counts it too) is said, not a
    failure: the Node's health. `placements`: each Pod's (placement), when known already."""
    placed = tuple(map(placement, pods)) if placements is None else placements
    hosts = [node for node, _, _ in placed if node]
    per_pool = Counter(map(pool_by_node.get, hosts))
    inside = sum(per_pool[name] for name in pool_names)
    ready = sum(is_ready for _, is_ready, _ in placed)
    # by phase: a Pod bound to its Node stays Pending until its containers start (ContainerCreating, image pulls)
    pending = sum(not done and (not node or o.status(p).get("phase") == "Pending")
                  for p, (node, _, done) in zip(pods, placed, strict=True))
    where = ", ".join(f"{per_pool[name]} on {name}" for name in sorted(pool_names)) or "0 on the pool"
    text = f"{counted(len(pods), 'slurmd Pod')}: {where}, {len(hosts) - inside} elsewhere, {pending} Pending, {ready} Ready"
    if misscheduled:
        text += f"; {misscheduled:,} on Nodes the NodeSet now refuses (misscheduled)"
    if in_repair:  # the controller counts them MISSCHEDULED: the line says why, without a failure
        text += f"; {in_repair:,} on {'a Node' if in_repair == 1 else 'Nodes'} in repair (counted MISSCHEDULED)"
    if unlabelled:  # the live read lists a NodeSet's Pods by that label: elsewhere than on the Nodes it reads, missed
        text += (f"; {unlabelled:,} without {o.INSTANCE_LABEL}=<NodeSet> (the NodeSet's by their controller "
                 "ownerReference; -l selections by that label miss them)")
    return Summary(text, PodCounts(len(pods), inside, len(hosts) - inside, pending, ready, misscheduled, in_repair),
                   not pods or inside < len(pods) or ready < len(pods) or bool(misscheduled))
