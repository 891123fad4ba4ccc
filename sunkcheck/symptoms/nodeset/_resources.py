"""What the slurmd Pod lacks on a Node (alone, or beside the node agents every Node runs) and the request fixes."""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import partial
from fractions import Fraction

from sunkcheck import objects as o
from sunkcheck.analyze import pods as pd
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.feasibility import (NodeView, Unreadable, container_requests, pod_requests, read_quantity,
                                           resource_checks, resource_reasons, scheduler_units, short_of)
from sunkcheck.symptoms import some
from sunkcheck.symptoms.fixes import arg, prose, prose_list
from sunkcheck.symptoms.nodeset._shared import daemonset_of, owner_kinds


def resources_fix(b: Binding, names: list[str]) -> list[str]:
    """A request larger than a Node's allocatable is lowered; one that fits the empty Node is not (a full-Node Slurm
    node would shrink to make room): what the other Pods there hold is the shortfall, and they are what moves. Not
    on a Node only another NodeSet's slurmd Pod leaves short: the claim says why (`claimed_fix`)."""
    names = short_beside_claims(b, names)
    held = [n for n in names if fits(b, b.cluster.nodes[n], [])]
    tight = [n for n in held if not fits(b, b.cluster.nodes[n], node_overhead(b, b.cluster.nodes[n]))]
    fixes = _requests_fix(b, [n for n in names if n not in held]) + _requests_fix(b, tight, beside_overhead=True)
    held = [n for n in held if n not in tight]
    if held:
        fixes.append(f"the slurmd Pod fits an empty Node, but other Pods hold what it requests on {some(held)} (named in "
                     "the evidence): keep them off the pool (a taint the NodeSet tolerates, their affinity, a DaemonSet's "
                     "scope) rather than lowering the request")
    return fixes


def short_beside_claims(b: Binding, names: Iterable[str]) -> list[str]:
    """Of Nodes `names`, short of room for the slurmd Pod, those still short without other NodeSets' slurmd Pods: a
    Node takes one NodeSet's slurmd Pod, so where such a Pod alone takes the room, its claim is the cause, and no
    request is to lower nor Pod to keep off the pool for it."""
    return [n for n in names if not fits(b, b.cluster.nodes[n], [
        p for p in b.neighbours(b.cluster.nodes[n])[0] if pd.nodeset_owner(p) is None])]


def shortfall(b: Binding, node: dict, beside_overhead: bool = False) -> dict[str, tuple[Fraction, Fraction]]:
    """What the slurmd Pod requests above the Node's allocatable (or, `beside_overhead`, above what its node overhead
    leaves), by resource: (request, allocatable)."""
    if not any(r.check == "resources" for r in b.verdict(o.name(node)).reasons):
        return {}
    return short_of(b.workload.requests, node, node_overhead(b, node) if beside_overhead else [])


def allocatable(node: dict, resource: str) -> Fraction:
    """The Node's allocatable `resource` (0 when not advertised or unreadable: the report's errors say it)."""
    have = read_quantity(o.allocatable(node).get(resource) or 0, "")
    return have if isinstance(have, Fraction) else Fraction(0)


def _largest(b: Binding, resource: str, nodes: list[dict]) -> tuple[Fraction, list[str]]:
    """The largest allocatable `resource` among `nodes` (0 when none advertises it) and the Nodes that have it."""
    have = {o.name(n): q for n in nodes
            if isinstance(q := read_quantity(o.allocatable(n).get(resource) or 0, ""), Fraction)}
    top = max(have.values(), default=Fraction(0))
    return top, sorted(n for n, q in have.items() if q == top)


def _requests_fix(b: Binding, names: list[str], beside_overhead: bool = False) -> list[str]:
    """For each resource the slurmd Pod requests above the allocatable of Nodes `names` (`beside_overhead`: above
    what their node overhead leaves, `node_overhead`): the request, the largest allocatable in the pool, and a request
    that fits them all, leaving room for the DaemonSet Pods already there and the Pod's other containers. When other
    Nodes of the pool have more, those may be short of the hardware their instance type has: that check comes
    first, as lowering the request shrinks every slurmd Pod."""
    nodes = [b.cluster.nodes[n] for n in names]
    shorts = {o.name(n): shortfall(b, n, beside_overhead) for n in nodes}
    fixes = []
    for resource in sorted({r for n in nodes for r in shorts[o.name(n)]}):
        short = [n for n in nodes if resource in shorts[o.name(n)]]
        want, _ = shorts[o.name(short[0])][resource]
        bare = [n for n in short if not allocatable(n, resource)]
        if bare:  # no request of it fits a Node advertising none: its device plugin's (or its health's) to fix
            fixes.append(_unadvertised_fix(b, resource, want, bare, nodes))
        if short := [n for n in short if n not in bare]:
            have = {shorts[o.name(n)][resource][1] for n in short}
            fixes.append(_short_fix(b, names, resource, (want, have), short, beside_overhead))
    return fixes


def _pool_of_nodes(b: Binding, nodes: list[dict]) -> tuple[list[dict], str]:
    """The Nodes to compare `nodes` with (the pool's, else themselves) and their pools in words."""
    pool = b.pool_nodes or nodes
    return pool, prose_list(sorted({p for n in pool if (p := o.pool_of(n))})) or "the pool"


def _short_fix(b: Binding, names: list[str], resource: str, asked: tuple[Fraction, set[Fraction]], short: list[dict],
               beside_overhead: bool) -> str:
    """The Nodes `short` of `resource` (the request, and what they have): short beside the node agents alone, short of
    what the pool's largest Nodes have (their hardware, or lower the request), or smaller than the request anywhere."""
    want, have = asked
    fmt = partial(o.format_quantity, resource)
    pool, where = _pool_of_nodes(b, [b.cluster.nodes[n] for n in names])
    largest, biggest = _largest(b, resource, pool)
    roomy = [n for n in biggest if n not in names]
    lower = _lower_request(b, resource, want, short)
    they_have = (f"{some(o.name(n) for n in short)} {'has' if len(short) == 1 else 'have'} "
                 f"{', '.join(fmt(q) for q in sorted(have))} of allocatable {resource}")
    if beside_overhead and not (roomy and largest > max(have)):
        return (f"{they_have} and the slurmd Pod requests {fmt(want)}: it fits them empty, not beside the node agents "
                f"every Node runs (DaemonSet Pods holding at most {float(OVERHEAD_SHARE):.0%} of it, no device), which "
                f"stay: {lower}")
    if roomy and largest >= want:
        return (f"{they_have}, {some(roomy)} {fmt(largest)} (the largest in {where}), and the slurmd Pod requests "
                f"{fmt(want)}: if their instance type should have as much as the others, they are short of "
                "hardware, a Node health matter for CKS (ask CoreWeave support); compare their Capacity and "
                f"Allocatable:\nkubectl describe node {arg(o.name(short[0]))}\nkubectl describe node {arg(roomy[0])}"
                f"\nTo use them as they are instead, {lower}")
    return (f"the slurmd Pod requests {fmt(want)} of {resource}, above the largest allocatable {resource} in "
            f"{where}, {fmt(largest)}" + (f" ({some(biggest)})" if biggest else "") + f": {lower}")


def _unadvertised_fix(b: Binding, resource: str, want: Fraction, bare: list[dict], nodes: list[dict]) -> str:
    """Nodes advertising none of a resource the slurmd Pod requests (a device: rdma/ib, nvidia.com/gpu): its device
    plugin is not running or not healthy there, unless the pool's instance type has no such device at all."""
    fmt = partial(o.format_quantity, resource)
    names = some(o.name(n) for n in bare)
    pool, where = _pool_of_nodes(b, nodes)
    largest, biggest = _largest(b, resource, pool)
    if largest > 0:
        return (f"{names} {'advertises' if len(bare) == 1 else 'advertise'} no {resource} (none allocatable) where "
                f"{some(biggest)} {'advertises' if len(biggest) == 1 else 'advertise'} {fmt(largest)}, and the slurmd Pod "
                f"requests {fmt(want)}: its device plugin does not "
                "advertise the device there, a Node health matter (ask CoreWeave support if it stays so), no request to "
                f"change; compare their Capacity and Allocatable:\nkubectl describe node {arg(o.name(bare[0]))}"
                f"\nkubectl describe node {arg(biggest[0])}")
    return (f"no Node of {where} advertises {resource} (none allocatable), and the slurmd Pod requests {fmt(want)}: "
            "if the pool's instance type has that device, its device plugin does not advertise it (a Node health matter: "
            "ask CoreWeave support); if not, the node definition is bound to a pool without it. What a Node "
            f"advertises:\nkubectl describe node {arg(o.name(bare[0]))}")


def _lower_request(b: Binding, resource: str, want: Fraction, nodes: list[dict]) -> str:
    """The request of the container asking most of `resource` (the Pod's is `want`) that fits every one of `nodes`,
    as kube-scheduler counts (whole millicores or units, rounded up): their allocatable less what the DaemonSet (and
    static) Pods on them request and what the Pod's other containers do."""
    fmt = partial(o.format_quantity, resource)
    found = [(q, c) for c in o.pod_spec(b.nodeset).get("containers") or ()
             if isinstance(q := container_requests(c, True).get(resource), Fraction)]
    if not found:
        return f"lower what the node definition requests of {resource}"
    own, container = max(found, key=lambda found: found[0])
    scale = 1000 if resource == "cpu" else 1
    besides = want - own
    agents = {o.name(n): _agent_requests(b, n, resource) for n in nodes}
    room = min(scheduler_units(resource, allocatable(n, resource))
               - sum(scheduler_units(resource, q) for q in agents[o.name(n)]) for n in nodes) - math.ceil(besides * scale)
    value = _round_down(resource, Fraction(room, scale))
    names = some(o.name(n) for n in nodes)
    held = max((sum(q, Fraction(0)) for q in agents.values()), default=Fraction(0))
    room_for = f"the DaemonSet Pods already there ({fmt(held)})" + (
        f" and the Pod's other containers ({fmt(besides)})" if besides else "")
    if value <= 0:
        return f"no request of {resource} fits {names} once {room_for} are placed"
    return (f"set containers[{prose(container.get('name') or '?')}] resources.{_request_field(container, resource)} "
            f"to {fmt(value)} or less{_limit_too(container, resource)}, from {fmt(own)}: that fits {names} with room for "
            f"{room_for}")


def _agent_requests(b: Binding, node: dict, resource: str) -> list[Fraction]:
    """What the DaemonSet and static Pods running on the Node request of `resource`: they stay."""
    return [q for p in b.neighbours(node)[0] if not o.is_terminal(p) and (daemonset_of(p) or "Node" in owner_kinds(p))
            and isinstance(q := pod_requests(o.spec(p)).get(resource), Fraction)]


def _request_field(container: dict, resource: str) -> str:
    """Where the container sets `resource`: its request, else its limit (which stands for a request)."""
    return f"{'requests' if resource in _set_in(container, 'requests') else 'limits'}.{resource}"


def _limit_too(container: dict, resource: str) -> str:
    """A limit beside the request changes with it."""
    both = resource in _set_in(container, "requests") and resource in _set_in(container, "limits")
    return " (and its limit with it)" if both else ""


def _set_in(container: dict, kind: str) -> dict:
    """The container's resource `kind` (requests, limits), empty when it sets none."""
    return (container.get("resources") or {}).get(kind) or {}


def _round_down(resource: str, amount: Fraction) -> Fraction:
    """`amount` rounded down to a round request: whole Gi (else Mi) of memory, whole cores (else millicores), whole
    units of the rest."""
    if resource == "memory" or resource.startswith(("hugepages-", "ephemeral-storage")):
        unit = Fraction(next((u for u in (2**30, 2**20) if amount >= u), 1))
    else:
        unit = Fraction(1 if resource != "cpu" or amount >= 1 else Fraction(1, 1000))
    return math.floor(amount / unit) * unit


OVERHEAD_SHARE = Fraction(1, 20)  # product decision: a node agent holds at most 5% of what the slurmd Pod lacks


def node_overhead(b: Binding, node: dict) -> list[dict]:
    """The Pods on `node` no fix moves: static Pods, and the DaemonSet Pods that are node overhead (`_is_overhead`)."""
    here = [p for p in b.neighbours(node)[0] if not o.is_terminal(p)]
    lacking = {c.subject for c in resource_checks(b.workload.requests, NodeView(node), here) if not c.ok}
    return [p for p in here if "Node" in owner_kinds(p) or (daemonset_of(p) and _is_overhead(p, node, lacking))]


def _is_overhead(pod: dict, node: dict, lacking: set[str]) -> bool:
    """A DaemonSet Pod is node overhead (cilium, node-problem-detector: never de-scoped nor deleted, the CNI would
    go with it) when it requests no extended resource (a GPU, an RDMA device: a burn-in holding those is a squatter)
    and at most OVERHEAD_SHARE of the Node's allocatable of each resource the slurmd Pod lacks there."""
    held = pod_requests(o.spec(pod)) | {"pods": Fraction(1)}
    if any("/" in r and not r.startswith("hugepages-") and (isinstance(q, Unreadable) or q > 0) for r, q in held.items()):
        return False
    return all(isinstance(q := held.get(r, Fraction(0)), Fraction) and q <= allocatable(node, r) * OVERHEAD_SHARE
               for r in lacking)


def fits(b: Binding, node: dict, others: list[dict]) -> bool:
    """Whether the slurmd Pod's requests fit the Node beside `others`, by the feasibility engine's rule."""
    return not resource_reasons(b.workload.requests, node, others)
