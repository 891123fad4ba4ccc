"""Runbook step 5: where the NodeSet's slurmd Pods run, Node by Node."""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from sunkcheck import duration
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


START_GRACE = 5 * 60.0
"""Seconds a slurmd Pod may take from its creation to Ready, by the API server's clock, before it counts as not
Ready: SUNK's slurmd images (CUDA, NCCL) are gigabytes, pulled anew on each Node a scale-up brings, which takes
minutes. Only a Pod none of whose containers failed (`failed`) is given it, so it delays no failure a kubelet
reports, only one that is silent (a volume never mounted, a probe never passing), by one interval of a
five-minute cron at most."""

STARTING_REASONS = frozenset({"ContainerCreating", "PodInitializing"})
"""The kubelet's reasons for a container waiting on the way to its first start; any other (CrashLoopBackOff,
ImagePullBackOff, ErrImagePull, CreateContainerConfigError, CreateContainerError, ...) says it failed."""


def _statuses(pod: dict) -> Iterable[tuple[dict, bool]]:
    """Each container's status, and whether it is an init container's."""
    for field, init in (("initContainerStatuses", True), ("containerStatuses", False)):
        for cs in o.status(pod).get(field) or ():
            yield cs, init


def failed(pod: dict) -> bool:
    """Whether one of the Pod's containers failed: it restarted, waits for any reason but a first start's
    (STARTING_REASONS), or terminated (an init container that completed, exit code 0, has not failed)."""
    return any(_failed(cs, init) for cs, init in _statuses(pod))


def _failed(cs: dict, init: bool) -> bool:
    state = cs.get("state") or {}
    waiting, ended = state.get("waiting"), state.get("terminated")
    if ended is not None and not (init and (ended or {}).get("exitCode") == 0):
        return True
    return bool(cs.get("restartCount")) or (waiting is not None and (waiting or {}).get("reason") not in STARTING_REASONS)


def state(pod: dict) -> str:
    """`CrashLoopBackOff (6 restarts)`: a slurmd Pod not Ready as `kubectl get pods` says it, its first container's
    waiting reason (else "not Ready") and its containers' restarts. A status may say `state: null` or `waiting: null`
    (the shape check lets null stand for absent)."""
    statuses = [cs for cs, _ in _statuses(pod)]
    reason = next((r for cs in statuses if (r := ((cs.get("state") or {}).get("waiting") or {}).get("reason"))),
                  "not Ready")
    restarts = sum(n for cs in statuses if isinstance(n := cs.get("restartCount"), int))
    return f"{reason} ({counted(restarts, 'restart')})" if restarts else str(reason)


def starting_until(pod: dict, clock: datetime.datetime | None) -> datetime.datetime | None:
    """When the slurmd Pod's start-up grace ends, by the API server's clock, while it is in it: created less than
    START_GRACE before `clock` (or after it by CLOCK_LAG at most, the second the clock trails the server's by; no
    further, so a creation time no API server wrote gives no grace), not being deleted, none of its containers
    `failed`. None otherwise, and without the cluster's time: its age unknown, it has none."""
    if o.meta(pod).get("deletionTimestamp") or failed(pod):
        return None
    return _grace_end(o.timestamp(o.meta(pod).get("creationTimestamp")), clock, START_GRACE)


def starting_text(starting: int) -> str:
    """The pods step's words for the Pods still starting ("" for none): no failure yet."""
    if not starting:
        return ""
    return f"; {starting:,} starting (created less than {duration.shown(START_GRACE)} ago, no container failed)"


CREATE_GRACE = 2 * 60.0
"""Seconds from a Node turning Ready to its slurmd Pod existing that slurmd-pods-missing allows: SUNK's operator
creates the Pod of a Node it finds feasible seconds after (a watch event, once its network's start-up taint is gone
too); two minutes cover a busy operator's queue, and a five-minute cron still reports a Pod never created at its next
run."""

CLOCK_LAG = 1.0
"""Seconds the cluster's time (an API server's Date header, whole seconds, advanced by the monotonic clock) may trail
the server's own."""


def creating_until(node: dict, clock: datetime.datetime | None) -> datetime.datetime | None:
    """When the grace for creating the slurmd Pod of a Node that turned Ready moments ago ends, by the API server's
    clock: CREATE_GRACE after its Ready condition's lastTransitionTime, which the kubelet writes by its own clock, so
    believed only up to the server's time (`clock`, which trails it by the second its Date header drops, CLOCK_LAG):
    a kubelet running behind shortens the grace, one ahead gives none, and none outlasts CREATE_GRACE past the
    server's time. None otherwise, and without the cluster's time."""
    return _grace_end(_ready_since(node), clock, CREATE_GRACE)


def _grace_end(since: datetime.datetime | None, clock: datetime.datetime | None,
               grace: float) -> datetime.datetime | None:
    """When a grace of `grace` seconds from `since` ends, while `clock` is in it; None once it has ended, without
    either time, or for a `since` ahead of the clock by more than CLOCK_LAG (a time no API server's clock reached)."""
    if clock is None or since is None or since > o.later(clock, CLOCK_LAG):
        return None
    return until if clock < (until := o.later(since, grace)) else None


def _ready_since(node: dict) -> datetime.datetime | None:
    """When a Ready Node turned Ready, by its kubelet's clock (its Ready condition's lastTransitionTime); None when
    it is not Ready or says no time."""
    cond = o.condition(node, "Ready") or {}
    return o.timestamp(cond.get("lastTransitionTime")) if cond.get("status") == "True" else None


def overdue(node: dict, clock: datetime.datetime | None) -> bool:
    """Whether a Node has been Ready for CREATE_GRACE or more by the cluster's time (`clock`): its slurmd Pod, if
    SUNK meant to create it, is overdue. False without the cluster's time or a Ready transition time: never judged
    overdue on an age not known."""
    since = _ready_since(node)
    return clock is not None and since is not None and o.later(since, CREATE_GRACE) <= clock


def creating_text(being_created: int) -> str:
    """The nodeset step's words for the slurmd Pods SUNK is still creating ("" for none): not missing yet."""
    if not being_created:
        return ""
    return (f"; {counted(being_created, 'slurmd Pod')} being created (on Nodes Ready less than "
            f"{duration.shown(CREATE_GRACE)} ago)")


def deleted_text(deleted: Sequence[str]) -> str:
    """`, 1 on a deleted Node (g7a1b12)`: the Pods bound to Nodes that no longer exist, and the first few of those
    ("" for none)."""
    if not deleted:
        return ""
    names = list(dict.fromkeys(deleted))
    more = f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
    return (f", {len(deleted):,} on {'a deleted Node' if len(names) == 1 else 'deleted Nodes'} "
            f"({', '.join(names[:NAMED])}{more})")


NAMED = 3
"""The deleted Nodes the pods step names, at most."""


def summary(pods: list[dict], pool_names: set[str], pool_by_node: Mapping[str, str | None], misscheduled: int,
            in_repair: int = 0, unlabelled: int = 0, placements: Sequence[Placement] | None = None,
            starting: int = 0, deleted: Sequence[str] = (), nodes_read: bool = True) -> Summary:
    """No slurmd Pod at all, or one elsewhere, on a Node `deleted` (its Node's name, one a Pod), Pending, not Ready or
    misscheduled (on a Node the NodeSet now refuses), shows a failure; one on a Node in repair (`in_repair`,
    MISSCHEDULED counts it too) is said, not a failure: the Node's health; nor one `starting` (starting_until): not
    Ready yet. `placements`: each Pod's (placement), when known already. Without the Nodes (`nodes_read` False) which
    pool a Pod runs in is not known: not counted, never "elsewhere"."""
    placed = tuple(map(placement, pods)) if placements is None else placements
    hosts = [node for node, _, _ in placed if node]
    inside, elsewhere, where = _pools_of(hosts, pool_names, pool_by_node, deleted) if nodes_read else (
        None, None, "pools not known (Nodes not read)")
    ready = sum(is_ready for _, is_ready, _ in placed)
    # by phase: a Pod bound to its Node stays Pending until its containers start (ContainerCreating, image pulls)
    pending = sum(not done and (not node or o.status(p).get("phase") == "Pending")
                  for p, (node, _, done) in zip(pods, placed, strict=True))
    text = f"{counted(len(pods), 'slurmd Pod')}: {where}, {pending} Pending, {ready} Ready" + starting_text(starting)
    if misscheduled:
        text += f"; {misscheduled:,} on Nodes the NodeSet now refuses (misscheduled)"
    if in_repair:  # the controller counts them MISSCHEDULED: the line says why, without a failure
        text += f"; {in_repair:,} on {'a Node' if in_repair == 1 else 'Nodes'} in repair (counted MISSCHEDULED)"
    if unlabelled:  # the live read lists a NodeSet's Pods by that label: elsewhere than on the Nodes it reads, missed
        text += (f"; {unlabelled:,} without {o.INSTANCE_LABEL}=<NodeSet> (the NodeSet's by their controller "
                 "ownerReference; -l selections by that label miss them)")
    return Summary(text, PodCounts(len(pods), inside, elsewhere, pending, ready, misscheduled, in_repair,
                                   len(deleted) or None),
                   not pods or (inside is not None and inside < len(pods)) or ready + starting < len(pods)
                   or bool(misscheduled))


def _pools_of(hosts: list[str], pool_names: set[str], pool_by_node: Mapping[str, str | None],
              deleted: Sequence[str]) -> tuple[int, int, str]:
    """The Pods (by their Nodes, `hosts`) in the pools, elsewhere (not on a Node `deleted`), and the words saying so."""
    per_pool = Counter(map(pool_by_node.get, hosts))
    inside = sum(per_pool[name] for name in pool_names)
    elsewhere = len(hosts) - inside - len(deleted)
    where = ", ".join(f"{per_pool[name]} on {name}" for name in sorted(pool_names)) or "0 on the pool"
    return inside, elsewhere, f"{where}, {elsewhere} elsewhere{deleted_text(deleted)}"
