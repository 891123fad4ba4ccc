"""kube-scheduler's NodeResourcesFit filter: a Pod's effective requests, and what a Node has left for them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import partial

from sunkcheck import objects as o
from sunkcheck.analyze.nodeview import NodeView, compare, reasons_of
from sunkcheck.model import Check, Reason

# Only these may be set at Pod level (PodLevelResources); they replace the container aggregate.
POD_LEVEL_RESOURCES = ("cpu", "memory")


@dataclass(frozen=True)
class Unreadable:
    """A quantity that is not one (or is out of range), with where it was read: unknown, never 0."""

    text: str
    """`containers[slurmd] requests memory '64gb', not a valid quantity`"""


Amount = Fraction | Unreadable
INVALID_QUANTITY = "node(s) had an invalid resource quantity"  # the Reason.scheduler phrase of an unknown


def _add(total: dict, more: dict) -> None:
    for k, v in more.items():
        have = total.get(k, 0)
        total[k] = have if isinstance(have, Unreadable) else v if isinstance(v, Unreadable) else have + v


def _max(total: dict, other: dict) -> None:
    for k, v in other.items():
        have = total.get(k, 0)
        total[k] = have if isinstance(have, Unreadable) else v if isinstance(v, Unreadable) else max(have, v)


def read_quantity(value: object, what: str) -> Amount:
    """`value` parsed, or an Unreadable saying what it was (`what` names the field). Every amount read here (a
    request, limit, overhead or allocatable) is one the API server validates as non-negative: a negative
    quantity is refused like one that is none."""
    try:
        amount = o.quantity(value)
    except o.InvalidQuantity as e:
        return Unreadable(f"{what} {value!r}, {e}")
    return Unreadable(f"{what} {value!r}, a negative amount, which the API server refuses") if amount < 0 else amount


def _read(quantities: dict, what: str) -> dict[str, Amount]:
    return {k: read_quantity(v, f"{what} {k}") for k, v in quantities.items()}


def container_requests(container: dict, limits_as_requests: bool, kind: str = "containers") -> dict[str, Amount]:
    resources = container.get("resources") or {}
    where = f"{kind}[{container.get('name') or '?'}]"
    requests = _read(resources.get("requests") or {}, f"{where} requests")
    if limits_as_requests:
        for k, v in _read(resources.get("limits") or {}, f"{where} limits").items():
            requests.setdefault(k, v)
    return requests


def pod_requests(pod_spec: dict, limits_as_requests: bool = False) -> dict[str, Amount]:
    """component-helpers PodRequests: max(app + sidecars, each init + earlier sidecars) + overhead. A request
    that is not a valid quantity makes its resource's total Unreadable."""
    total: dict[str, Amount] = {}
    for c in pod_spec.get("containers") or []:
        _add(total, container_requests(c, limits_as_requests))
    init_max: dict[str, Amount] = {}
    sidecars: dict[str, Amount] = {}
    for c in pod_spec.get("initContainers") or []:
        requests = container_requests(c, limits_as_requests, "initContainers")
        if c.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            requests = dict(sidecars)
        else:
            _add(requests, sidecars)
        _max(init_max, requests)
    _max(total, init_max)
    pod_level = (pod_spec.get("resources") or {}).get("requests") or {}
    total |= _read({k: pod_level[k] for k in POD_LEVEL_RESOURCES if k in pod_level}, "resources.requests")
    _add(total, _read(pod_spec.get("overhead") or {}, "overhead"))
    return total



def _unknown(text: str) -> Reason:
    return Reason("resources", text, INVALID_QUANTITY)


def resource_checks(requests: dict[str, Amount], node: NodeView, others: list[dict]) -> list[Check]:
    """NodeResourcesFit: pod count, then every requested resource against allocatable minus what others hold.
    A quantity that cannot be read (requested, allocatable or held) leaves its resource unknown: a reason
    that says so, never a comparison with 0."""
    checks = pod_count_checks(node, len(others))
    held = [(p, pod_requests(o.spec(p))) for p in others]
    for resource, want in sorted(requests.items()):
        if isinstance(want, Unreadable):
            checks.append(Check("resources", resource, want.text, "cannot tell whether it fits", False,
                                (_unknown(f"{want.text}: cannot tell whether it fits"),)))
        elif want > 0 and resource != "pods":
            checks.append(resource_check(resource, want, node, held))
    return checks


Held = list[tuple[dict, dict[str, Amount]]]
"""The other Pods on a Node, each with its effective requests."""


def pod_count_checks(node: NodeView, running: int) -> list[Check]:
    """Room for one more Pod beside the `running` ones, when the Node advertises a pod count."""
    if (pods_text := node.allocatable("pods")) is None:
        return []
    pods = read_quantity(pods_text, "allocatable pods is")
    if isinstance(pods, Unreadable):
        return [Check("resources", "pods", "1 more", pods.text, False,
                      (_unknown(f"{pods.text}: cannot tell whether the request fits"),))]
    allowed = scheduler_units("pods", pods)  # AllowedPodNumber: Quantity.Value(), rounded up
    return [compare("resources", "pods", "1 more", f"{running} of {allowed} running", running + 1 <= allowed,
                    f"Too many pods: {running} of {allowed} allowed already run", "Too many pods")]


def resource_check(resource: str, want: Fraction, node: NodeView, held: Held) -> Check:
    """One requested resource against the Node's allocatable less what the others hold; unknown when the
    allocatable or another Pod's request cannot be read."""
    wanted = f"requests {o.format_quantity(resource, want)}"
    advertised = node.allocatable(resource)
    total = read_quantity(0 if advertised is None else advertised, f"allocatable {resource} is")
    if isinstance(total, Unreadable):
        return Check("resources", resource, wanted, total.text, False,
                     (_unknown(f"{total.text}: cannot tell whether the request fits"),))
    unread = [(p, q) for p, r in held if isinstance(q := r.get(resource), Unreadable)]
    if unread:
        return Check("resources", resource, wanted,
                     "; ".join(f"Pod {o.namespace(p)}/{o.name(p)}: {q.text}" for p, q in unread), False,
                     tuple(_unknown(f"Pod {o.namespace(p)}/{o.name(p)}: {q.text}: cannot tell what the Pod holds")
                           for p, q in unread))
    return fit_check(resource, want, total, held, advertised is not None)


def fit_check(resource: str, want: Fraction, total: Fraction, held: Held, advertised: bool) -> Check:
    """The comparison kube-scheduler makes, every quantity read (`total`: the allocatable, 0 when not `advertised`)."""
    fmt = partial(o.format_quantity, resource)
    used = sum((q for _, r in held if isinstance(q := r.get(resource), Fraction)), Fraction(0))
    free = total - used
    # kube-scheduler compares integers: each Pod's total and the allocatable rounded up (scheduler_units),
    # the other Pods' rounded totals summed. The amounts printed stay exact; a note says when rounding decides.
    want_n, total_n = scheduler_units(resource, want), scheduler_units(resource, total)
    used_n = sum(scheduler_units(resource, q) for _, r in held if isinstance(q := r.get(resource), Fraction))
    fits = want_n <= total_n - used_n
    rounded = _rounding_note(resource, want_n, total_n, used_n) if fits != (want <= free) and advertised else ""
    by = "" if fits or not advertised else _held_by(resource, held)  # who holds it: what the on-call asks next
    found = (f"free {fmt(free)} = allocatable {fmt(total)} - requested by others {fmt(used)}"
             f"{f' (held by {by})' if by else ''}{rounded}" if advertised else "not advertised (0)")
    return Check("resources", resource, f"requests {fmt(want)}", found, fits,
                 () if fits else (_insufficient(resource, want, total, used, held, advertised, rounded),))


def short_of(requests: dict[str, Amount], node: dict, staying: Sequence[dict] = ()) -> dict[str, tuple[Fraction, Fraction]]:
    """The resources the Node cannot give the workload even with no other Pod on it than `staying` (Pods no fix
    moves), each as (request, allocatable; 0 when not advertised): no other Pod moving frees them. A quantity that
    cannot be read is no size (the report's errors say it)."""
    found = {}
    for c in resource_checks(requests, NodeView(node), list(staying)):
        if c.ok or any(r.scheduler == INVALID_QUANTITY for r in c.reasons):
            continue
        have = read_quantity(o.allocatable(node).get(c.subject) or 0, "")
        want = Fraction(1) if c.subject == "pods" else requests[c.subject]
        if isinstance(have, Fraction) and isinstance(want, Fraction):
            found[c.subject] = (want, have)
    return found


def scheduler_units(resource: str, amount: Fraction) -> int:
    """The integer kube-scheduler compares for `amount` of `resource`: framework.Resource holds cpu as
    `Quantity.MilliValue()` (whole millicores) and every other resource as `Quantity.Value()` (whole units,
    bytes for memory), both rounded up. Upstream converts a Pod's total (resourcehelper.PodRequests, summed
    exactly), not each container's request, and the Node's allocatable; NodeInfo then adds the Pods' integers."""
    return math.ceil(amount * 1000) if resource == "cpu" else math.ceil(amount)


def _rounding_note(resource: str, want_n: int, total_n: int, used_n: int) -> str:
    unit = (lambda n: f"{n}m") if resource == "cpu" else str
    whole = "millicores" if resource == "cpu" else "units"
    return (f" (kube-scheduler compares whole {whole}, each Pod's total and the allocatable rounded up: "
            f"requests {unit(want_n)}, free {unit(total_n - used_n)} = {unit(total_n)} - {unit(used_n)})")


def _insufficient(resource: str, want: Fraction, total: Fraction, used: Fraction, held: list, advertised: bool,
                  rounded: str = "") -> Reason:
    fmt = lambda q: o.format_quantity(resource, q)  # noqa: E731
    if not advertised:
        return Reason("resources", f"Insufficient {resource}: requests {fmt(want)}, Node does not advertise it",
                      f"Insufficient {resource}")
    by = _held_by(resource, held)
    common = (f"Insufficient {resource}: requests {fmt(want)}, free {fmt(total - used)} of {fmt(total)} allocatable"
              + (rounded or f", short {fmt(want - (total - used))}"))
    family = f"Insufficient {resource}: requests {fmt(want)}, more than other Pods leave free of {fmt(total)} allocatable"
    return Reason("resources", common + (f" (held by {by})" if by else ""), f"Insufficient {resource}", common,
                  family=family)


def _held_by(resource: str, held: Held, most: int = 3) -> str:
    """The other Pods holding `resource`, the largest first: `ns/a 1400Gi, ns/b 2Gi and 4 more`; empty for none."""
    holders = sorted(((q, p) for p, r in held if isinstance(q := r.get(resource), Fraction) and q > 0),
                     key=lambda x: -x[0])
    by = ", ".join(f"{o.namespace(p)}/{o.name(p)} {o.format_quantity(resource, q)}" for q, p in holders[:most])
    return by + (f" and {len(holders) - most} more" if len(holders) > most else "")


def resource_reasons(requests: dict[str, Amount], node: dict, others: list[dict]) -> list[Reason]:
    return list(reasons_of(resource_checks(requests, NodeView(node), others)))

