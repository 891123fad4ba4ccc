"""Per-Node feasibility of a pod template, with every failing reason.

Reproduces kube-scheduler's NodeAffinity, TaintToleration, NodeUnschedulable and NodeResourcesFit
filters and the DaemonSet controller's eligibility rule, but evaluates every check instead of stopping
at the first failure. Each check yields the comparisons it makes (`Check`s, the deep view); the verdict's
reasons are those of the failing ones: one engine for both.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from typing import Callable, NamedTuple

from sunkcheck import objects as o
from sunkcheck.model import Check, NodeVerdict, Reason

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
# Only these may be set at Pod level (PodLevelResources); they replace the container aggregate.
POD_LEVEL_RESOURCES = ("cpu", "memory")

# What the NodeSet controller weighs (CoreWeave docs: affinity, tolerations, resources, one NodeSet
# per Node; the inherited production-state requirement), in kube-scheduler's filter order.
NODESET_CHECKS = ("state", "unschedulable", "affinity", "taint", "resources", "claimed")
# The checks that read only the Node itself (labels, Ready, cordon, taints), not the Pods on it.
PLACEMENT_CHECKS = ("state", "unschedulable", "affinity", "taint")
# What the DaemonSet controller weighs (NodeShouldRunDaemonPod): nodeName, affinity, taints. Resources,
# readiness and cordon are left to the scheduler: they make a Pending Pod, not a missing one.
DAEMONSET_CHECKS = ("affinity", "taint")
# AddOrUpdateDaemonPodTolerations: every daemon Pod tolerates these, forever.
DAEMON_TOLERATIONS = tuple({"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": effect} for key, effect in (
    ("not-ready", "NoExecute"), ("unreachable", "NoExecute"), ("disk-pressure", "NoSchedule"),
    ("memory-pressure", "NoSchedule"), ("pid-pressure", "NoSchedule"), ("unschedulable", "NoSchedule")))
HOST_NETWORK_TOLERATION = {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}


@dataclass(frozen=True)
class Unreadable:
    """A quantity that is not one (or is out of range), with where it was read: unknown, never 0."""

    text: str
    """`containers[slurmd] requests memory '64gb', not a valid quantity`"""


Amount = Fraction | Unreadable
INVALID_QUANTITY = "node(s) had an invalid resource quantity"  # the Reason.scheduler phrase of an unknown


@dataclass(frozen=True)
class Workload:
    """A pod template as the engine sees it: its spec, its effective requests, the checks that apply."""

    pod_spec: dict
    requests: dict[str, Amount]
    checks: tuple[str, ...] = NODESET_CHECKS
    kind: str = "NodeSet"
    memo: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    """Checks by the values they read of a Node: to one template, thousands of Nodes are a few dozen kinds."""

    @classmethod
    def from_template(cls, pod_spec: dict) -> Workload:
        """A SUNK NodeSet's template. The API server copies limits into missing requests for Pods, not
        for templates: do it here."""
        return cls(pod_spec, pod_requests(pod_spec, limits_as_requests=True))

    @classmethod
    def staying(cls, pod_spec: dict) -> Workload:
        """What decides whether a Pod already on a Node belongs there (where not, the controller counts it
        MISSCHEDULED): the Node's placement checks, Kubernetes' Node-condition taints tolerated as the DaemonSet
        controller tolerates them. A cordon, not-ready or unreachable keeps new Pods off; a running Pod's fate there
        is the Node's health (the taint manager evicts by the Pod's own tolerations), never a binding problem."""
        return cls(with_daemon_tolerations(pod_spec), {}, PLACEMENT_CHECKS)

    @classmethod
    def from_daemonset(cls, pod_spec: dict) -> Workload:
        """A DaemonSet's template, with the tolerations the controller adds to every daemon Pod."""
        return cls(with_daemon_tolerations(pod_spec), pod_requests(pod_spec, limits_as_requests=True), DAEMONSET_CHECKS,
                   "DaemonSet")


def with_daemon_tolerations(pod_spec: dict) -> dict:
    """The template with the tolerations the DaemonSet controller adds to every daemon Pod."""
    extra = list(DAEMON_TOLERATIONS) + ([HOST_NETWORK_TOLERATION] if pod_spec.get("hostNetwork") else [])
    return dict(pod_spec, tolerations=list(pod_spec.get("tolerations") or []) + extra)


# --- what the checks read of a Node --------------------------------------------------------------

def _ready(node: dict) -> tuple:
    cond = o.condition(node, "Ready")
    return (None, None) if cond is None else (cond.get("status"), cond.get("reason"))


def _taints(node: dict) -> tuple:
    return tuple(tuple((k, t[k]) for k in ("key", "value", "effect") if k in t) for t in o.taints(node))


# Everything a check may read of a Node, by name: a check sees a Node only through a NodeView, so a new
# field a check reads is a new entry here, and the memo's key includes it without anyone remembering to.
READERS: dict[str, Callable[..., object]] = {
    "name": o.name,
    "label": lambda node, key: o.labels(node).get(key),
    "ready": _ready,
    "unschedulable": lambda node: bool(o.spec(node).get("unschedulable")),
    "taints": _taints,
    "allocatable": lambda node, resource: o.allocatable(node).get(resource),
}


class NodeView:
    """A Node as the checks see it, every value read recorded (`reads`, in order) for the memo."""

    __slots__ = ("_node", "reads", "labels")

    def __init__(self, node: dict):
        self._node = node
        self.reads: dict[tuple, object] = {}
        self.labels = _Labels(self)

    def read(self, *what):
        if what not in self.reads:
            self.reads[what] = READERS[what[0]](self._node, *what[1:])
        return self.reads[what]

    @property
    def name(self) -> str:
        return self.read("name")

    @property
    def ready(self) -> tuple[str | None, str | None]:
        """The Ready condition's status and reason (None, None without one)."""
        return self.read("ready")

    @property
    def unschedulable(self) -> bool:
        return self.read("unschedulable")

    @property
    def taints(self) -> list[dict]:
        """The taints' key, value and effect (what toleration reads), in the Node's order."""
        return [dict(t) for t in self.read("taints")]

    def allocatable(self, resource: str):
        """The raw allocatable quantity, None when the Node does not advertise it."""
        return self.read("allocatable", resource)


class _Labels:
    """A Node's labels, read one key at a time (a label is absent or a string: None is absent)."""

    __slots__ = ("_view",)

    def __init__(self, view: NodeView):
        self._view = view

    def get(self, key, default=None):
        value = self._view.read("label", key)
        return default if value is None else value

    def __contains__(self, key) -> bool:
        return self._view.read("label", key) is not None

    def __getitem__(self, key):
        return self._view.read("label", key)


_MISS = object()


def _memoized(memo: dict, node: dict, compute):
    """`compute(NodeView(node))`, or the result of an earlier Node that read the same values. `compute` reads
    the Node only through the view, so the same values read mean the same reads in the same order (a check
    decides what to read next from what it read so far) and the same result. `memo` holds, for each list of
    reads seen, the function that reads those values of a Node and the results by those values."""
    for values_of, results in tuple(memo.values()):  # a copy: another thread may add a pattern meanwhile
        try:
            hit = results.get(values_of(node), _MISS)
        except TypeError:  # a malformed value (a list where a string belongs): judge the Node on its own
            return compute(NodeView(node))
        if hit is not _MISS:
            return hit
    view = NodeView(node)
    result = compute(view)
    reads = tuple(view.reads)
    try:
        if reads not in memo:
            memo[reads] = (_values_reader(reads), {})
        values_of, results = memo[reads]
        results[values_of(node)] = result
    except TypeError:
        pass
    return result


# What the memo's key holds of a read where its value alone would not do: a quantity may be a JSON float and
# an int that compare equal (1.152921504606847e18 == 1152921504606846976) but parse apart (o.quantity reads
# str() of each), so its type is in the key too.
KEYS: dict[str, Callable[..., object]] = {
    "allocatable": lambda node, resource: ((value := o.allocatable(node).get(resource)), type(value)),
}


def _values_reader(reads: tuple) -> Callable[[dict], tuple]:
    """The values `reads` read of a Node, read straight from it (the readers a NodeView calls, without
    recording, or their KEYS): the memo's key, computed for every Node judged."""
    readers = tuple((KEYS.get(what[0]) or READERS[what[0]], what[1:]) for what in reads)
    return lambda node: tuple([read(node, *args) for read, args in readers])


def _compare(check: str, subject: str, wanted: str, found, ok: bool, detail: str = "", scheduler: str = "") -> Check:
    """A comparison whose failure is one reason, `detail` worded as kube-scheduler's `scheduler` phrase."""
    return Check(check, subject, wanted, found, ok, () if ok else (Reason(check, detail, scheduler),))


def reasons_of(checks) -> tuple[Reason, ...]:
    return tuple(r for c in checks for r in c.reasons)


# --- node affinity -------------------------------------------------------------------------------

AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"


def match_expression(expr: dict, node_labels) -> bool:
    """One nodeSelectorRequirement against a Node's labels; an invalid requirement matches nothing."""
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    present = key in node_labels
    if op in ("In", "NotIn"):
        if not values:
            return False
        return (present and node_labels[key] in values) if op == "In" else (not present or node_labels[key] not in values)
    if op in ("Exists", "DoesNotExist"):
        return not values and present == (op == "Exists")
    if op in ("Gt", "Lt"):
        if len(values) != 1 or not present:
            return False
        want, have = _int64(values[0]), _int64(node_labels[key])
        if want is None or have is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def match_field(expr: dict, node: NodeView) -> bool:
    """A matchFields requirement: only metadata.name, only In/NotIn, exactly one value."""
    values = expr.get("values") or []
    if expr.get("key") != "metadata.name" or len(values) != 1 or expr.get("operator") not in ("In", "NotIn"):
        return False
    return (node.name in values) == (expr["operator"] == "In")


# strconv.ParseInt(s, 10, 64), which kube-scheduler reads Gt/Lt with: an optional sign and ASCII digits, nothing
# else (Python's int() also takes `1_000`, ` 12` and other scripts' digits).
_INT = re.compile(r"[+-]?[0-9]+")


def _int64(text) -> int | None:
    if not _INT.fullmatch(text := str(text)):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def describe_expression(expr: dict, node: NodeView | None = None) -> str:
    """`key Op [values]`, plus what the Node has when it is given."""
    values = expr.get("values") or []
    text = f"{expr.get('key')} {expr.get('operator')}" + (f" [{', '.join(map(str, values))}]" if values else "")
    if node is None:
        return text
    if expr.get("key") == "metadata.name":
        return f"{text}: Node is {node.name}"
    have = f"label is {node.labels[expr.get('key')]!r}" if expr.get("key") in node.labels else "label absent"
    return f"{text}: {have}"


def required_terms(pod_spec: dict) -> list[dict] | None:
    """The required nodeSelectorTerms, or None when the template sets no required node affinity."""
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is None:
        return None
    return list(required.get("nodeSelectorTerms") or [])


def affinity_checks(pod_spec: dict, node: NodeView, skip_keys: frozenset[str] = frozenset()) -> list[Check]:
    """nodeName, nodeSelector AND required node affinity (terms ORed; an empty term or list matches nothing).

    A failing expression on `skip_keys` adds no reason of its own when another check already names the
    same fact; the affinity still fails.
    """
    checks = []
    if pod_spec.get("nodeName"):
        want = pod_spec["nodeName"]
        checks.append(_compare("affinity", "nodeName", want, node.name, want == node.name,
                               f"the template sets nodeName {want}: no other Node runs it",
                               "node(s) didn't match the requested node name"))
    labels = node.labels
    for key, value in sorted((pod_spec.get("nodeSelector") or {}).items()):
        have = f"label is {labels[key]!r}" if key in labels else "label absent"
        checks.append(_compare("affinity", f"nodeSelector {key}", value, labels.get(key, "(absent)"),
                               labels.get(key) == value, f"nodeSelector {key}={value}: {have}", AFFINITY_MISMATCH))
    terms = required_terms(pod_spec)
    if terms is None:
        return checks
    usable = [(i, t) for i, t in enumerate(terms) if t.get("matchExpressions") or t.get("matchFields")]
    if not usable:
        return checks + [_compare("affinity", "required node affinity", "a non-empty nodeSelectorTerm", "none", False,
                                  "required node affinity has no non-empty nodeSelectorTerm: it matches no Node",
                                  AFFINITY_MISMATCH)]
    compared = [(i, [(e, f"term {i} expression", labels.get(e.get("key"), "(absent)"), match_expression(e, labels))
                     for e in t.get("matchExpressions") or ()]
                 + [(f, f"term {i} field", node.name, match_field(f, node)) for f in t.get("matchFields") or ()])
                for i, t in usable]
    matched = next((i for i, rows in compared if all(ok for *_, ok in rows)), None)
    for i, rows in compared:
        where = f"term {i}: " if len(usable) > 1 else ""
        for expr, subject, found, ok in rows:
            if ok or matched is not None:  # a term that fails does not block when another matches
                checks.append(Check("affinity", subject, describe_expression(expr), found if ok else
                                    f"{found} (term {matched} matches)", True))
            else:
                said = () if expr.get("key") in skip_keys else (_affinity_reason(expr, node, where),)
                checks.append(Check("affinity", subject, describe_expression(expr), found, False, said))
    unsaid = matched is None and not reasons_of(checks)  # every failing expression was skipped: still say it
    fallback = (Reason("affinity", "required node affinity does not match", AFFINITY_MISMATCH),) if unsaid else ()
    checks.append(Check("affinity", "required node affinity", "any term matches (terms are ORed)",
                        "no term matches" if matched is None else f"term {matched} matches", matched is not None, fallback))
    return checks


def _affinity_reason(expr: dict, node: NodeView, where: str) -> Reason:
    """A failing expression or field. One the Node fails with a value of its own (a label it carries, its name) says in
    `common` what Nodes alike share, and its value in `variant`: a pool pinned to some of its Nodes by hostname fails
    each of the others with another value."""
    detail = f"required affinity {where}{describe_expression(expr, node)}"
    key, op = expr.get("key"), expr.get("operator")
    if key == "metadata.name":
        own, what = node.name, "Node name"
    elif key in node.labels and op in ("In", "NotIn", "Gt", "Lt"):
        own, what = node.labels[key], "label"
    else:
        return Reason("affinity", detail, AFFINITY_MISMATCH)
    other = f"{what} is another value" if op == "In" else f"{what} is a value it refuses"
    return Reason("affinity", detail, AFFINITY_MISMATCH, f"required affinity {where}{describe_expression(expr)}: {other}",
                  repr(own))


def affinity_reasons(pod_spec: dict, node: dict) -> list[Reason]:
    return list(reasons_of(affinity_checks(pod_spec, NodeView(node))))


def matches_affinity(pod_spec: dict, node: dict) -> bool:
    return not affinity_reasons(pod_spec, node)


# --- taints --------------------------------------------------------------------------------------

def tolerates(toleration: dict, taint: dict) -> bool:
    """k8s.io/api/core/v1 Toleration.ToleratesTaint: effect, key, then operator."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taints(tolerations: list[dict], node_taints: list[dict]) -> list[dict]:
    """The NoSchedule/NoExecute taints no toleration covers, in the Node's order (PreferNoSchedule never blocks)."""
    return [t for t in node_taints
            if t.get("effect") in BLOCKING_EFFECTS and not any(tolerates(tol, t) for tol in tolerations)]


def taint_reason(taint: dict, kind: str) -> Reason:
    detail = f"untolerated taint {o.format_taint(taint)}"
    if kind == "DaemonSet":  # NodeShouldRunDaemonPod: only NoExecute removes a running daemon Pod
        detail += (": a running daemon Pod is evicted" if taint.get("effect") == "NoExecute"
                   else ": no new daemon Pod; a running one stays (counted MISSCHEDULED)")
    return Reason("taint", detail, f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value') or ''}}}")


def taint_checks(tolerations: list[dict], node: NodeView, kind: str) -> list[Check]:
    """Every taint of the Node: tolerated, never blocking (PreferNoSchedule), or a reason."""
    checks = []
    for taint in node.taints:
        by = next((t for t in tolerations if tolerates(t, taint)), None)
        blocks = taint.get("effect") in BLOCKING_EFFECTS
        found = ((f"tolerated by {_describe_toleration(by)}" if by else "not tolerated") if blocks
                 else f"{taint.get('effect')}: never blocks")
        ok = bool(by) or not blocks
        checks.append(Check("taint", o.format_taint(taint), "tolerated", found, ok,
                            () if ok else (taint_reason(taint, kind),)))
    return checks


def _describe_toleration(t: dict) -> str:
    text = f"{t.get('key') or '*'} {t.get('operator') or 'Equal'}"
    return text + (f" {t['value']}" if t.get("value") else "") + (f" ({t['effect']})" if t.get("effect") else "")


# --- resources -----------------------------------------------------------------------------------


def _add(total: dict, more: dict) -> None:
    for k, v in more.items():
        have = total.get(k, 0)
        total[k] = have if isinstance(have, Unreadable) else v if isinstance(v, Unreadable) else have + v


def _max(total: dict, other: dict) -> None:
    for k, v in other.items():
        have = total.get(k, 0)
        total[k] = have if isinstance(have, Unreadable) else v if isinstance(v, Unreadable) else max(have, v)


def read_quantity(value, what: str) -> Amount:
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
    checks = []
    if (pods_text := node.allocatable("pods")) is not None:
        pods = read_quantity(pods_text, "allocatable pods is")
        if isinstance(pods, Unreadable):
            checks.append(Check("resources", "pods", "1 more", pods.text, False,
                                (_unknown(f"{pods.text}: cannot tell whether the request fits"),)))
        else:
            allowed = scheduler_units("pods", pods)  # AllowedPodNumber: Quantity.Value(), rounded up
            checks.append(_compare("resources", "pods", "1 more", f"{len(others)} of {allowed} running",
                                   len(others) + 1 <= allowed,
                                   f"Too many pods: {len(others)} of {allowed} allowed already run", "Too many pods"))
    held = [(p, pod_requests(o.spec(p))) for p in others]
    for resource, want in sorted(requests.items()):
        if isinstance(want, Unreadable):
            checks.append(Check("resources", resource, want.text, "cannot tell whether it fits", False,
                                (_unknown(f"{want.text}: cannot tell whether it fits"),)))
            continue
        if want <= 0 or resource == "pods":
            continue
        fmt = lambda q: o.format_quantity(resource, q)  # noqa: E731
        advertised = node.allocatable(resource)
        total = read_quantity(0 if advertised is None else advertised, f"allocatable {resource} is")
        if isinstance(total, Unreadable):
            checks.append(Check("resources", resource, f"requests {fmt(want)}", total.text, False,
                                (_unknown(f"{total.text}: cannot tell whether the request fits"),)))
            continue
        unread = [(p, q) for p, r in held if isinstance(q := r.get(resource), Unreadable)]
        if unread:
            checks.append(Check("resources", resource, f"requests {fmt(want)}",
                                "; ".join(f"Pod {o.namespace(p)}/{o.name(p)}: {q.text}" for p, q in unread), False,
                                tuple(_unknown(f"Pod {o.namespace(p)}/{o.name(p)}: {q.text}: cannot tell what the Pod holds")
                                      for p, q in unread)))
            continue
        used = sum((q for _, r in held if isinstance(q := r.get(resource, Fraction(0)), Fraction)), Fraction(0))  # none unread
        free = total - used
        # kube-scheduler compares integers: each Pod's total and the allocatable rounded up (scheduler_units),
        # the other Pods' rounded totals summed. The amounts printed stay exact; a note says when rounding decides.
        want_n, total_n = scheduler_units(resource, want), scheduler_units(resource, total)
        used_n = sum(scheduler_units(resource, q) for _, r in held if isinstance(q := r.get(resource), Fraction))
        fits = want_n <= total_n - used_n
        rounded = (_rounding_note(resource, want_n, total_n, used_n)
                   if fits != (want <= free) and advertised is not None else "")
        found = (f"free {fmt(free)} = allocatable {fmt(total)} - requested by others {fmt(used)}{rounded}"
                 if advertised is not None else "not advertised (0)")
        checks.append(Check("resources", resource, f"requests {fmt(want)}", found, fits,
                            () if fits else (_insufficient(resource, want, total, used, held, advertised is not None,
                                                           rounded),)))
    return checks


def short_of(requests: dict[str, Amount], node: dict) -> dict[str, tuple[Fraction, Fraction]]:
    """The resources the Node cannot give the workload even with no other Pod on it, each as (request, allocatable;
    0 when not advertised): the request is above what the Node has, and no Pod moving frees it. A quantity that
    cannot be read is no size (the report's errors say it)."""
    found = {}
    for c in resource_checks(requests, NodeView(node), []):
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
    unit = (lambda n: f"{n}m") if resource == "cpu" else str  # noqa: E731
    whole = "millicores" if resource == "cpu" else "units"
    return (f" (kube-scheduler compares whole {whole}, each Pod's total and the allocatable rounded up: "
            f"requests {unit(want_n)}, free {unit(total_n - used_n)} = {unit(total_n)} - {unit(used_n)})")


def _insufficient(resource: str, want: Fraction, total: Fraction, used: Fraction, held: list, advertised: bool,
                  rounded: str = "") -> Reason:
    fmt = lambda q: o.format_quantity(resource, q)  # noqa: E731
    if not advertised:
        return Reason("resources", f"Insufficient {resource}: requests {fmt(want)}, Node does not advertise it",
                      f"Insufficient {resource}")
    holders = sorted(((r[resource], p) for p, r in held if r.get(resource, 0) > 0), key=lambda x: -x[0])
    by = ", ".join(f"{o.namespace(p)}/{o.name(p)} {fmt(q)}" for q, p in holders[:3])
    more = f" and {len(holders) - 3} more" if len(holders) > 3 else ""
    common = (f"Insufficient {resource}: requests {fmt(want)}, free {fmt(total - used)} of {fmt(total)} allocatable"
              + (rounded or f", short {fmt(want - (total - used))}"))
    family = f"Insufficient {resource}: requests {fmt(want)}, more than other Pods leave free of {fmt(total)} allocatable"
    return Reason("resources", common + (f" (held by {by}{more})" if by else ""), f"Insufficient {resource}", common,
                  family=family)


def resource_reasons(requests: dict[str, Amount], node: dict, others: list[dict]) -> list[Reason]:
    return list(reasons_of(resource_checks(requests, NodeView(node), others)))


# --- the verdict ---------------------------------------------------------------------------------

# kube-scheduler's filter order; the sunkcheck-only checks (state, claimed) slot in where they bite.
SCHEDULER_ORDER = ("unschedulable", "taint", "affinity", "state", "resources", "claimed")


def state_checks(node: NodeView) -> list[Check]:
    why = "node(s) were not production or not Ready"
    state = node.labels.get(o.STATE_LABEL)
    status, reason = node.ready
    return [
        _compare("state", o.STATE_LABEL, o.PRODUCTION, state or "(absent)", state == o.PRODUCTION,
                 f"{o.STATE_LABEL} is {state!r}, not {o.PRODUCTION!r}" if state
                 else f"{o.STATE_LABEL} label absent (not a production Node)", why),
        _compare("state", "Ready condition", "True", status or "(absent)", status == "True",
                 f"Node is {not_ready(status, reason)}", why)]


def not_ready(status: str | None, reason: str | None) -> str:
    """`not Ready (Ready=False: KubeletNotReady)`: a Node's Ready condition, as every report says it."""
    return f"not Ready (Ready={status or 'absent'}" + (f": {reason})" if reason else ")")


def _placement(workload: Workload, node: NodeView) -> dict[str, list[Check]]:
    """The comparisons of the checks that read only the Node, by check; computed once per look-alike Node."""
    tolerations = workload.pod_spec.get("tolerations") or []
    found: dict[str, list[Check]] = {}
    for check in workload.checks:
        if check == "state":
            found[check] = state_checks(node)
        elif check == "unschedulable":
            cordoned, tolerated = node.unschedulable, any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations)
            found[check] = [_compare("unschedulable", "spec.unschedulable", "false, or tolerated",
                                     "cordoned" + (" (tolerated)" if tolerated else "") if cordoned else "false",
                                     not cordoned or tolerated, "Node is cordoned (spec.unschedulable)",
                                     "node(s) were unschedulable")]
        elif check == "affinity":
            skip = frozenset({o.STATE_LABEL}) if "state" in workload.checks else frozenset()
            found[check] = affinity_checks(workload.pod_spec, node, skip)
        elif check == "taint":
            found[check] = taint_checks(tolerations, node, workload.kind)
    return found


class Outcome(NamedTuple):
    """One check's comparisons, whether they all pass, and the reasons of those that fail: memoized with the
    comparisons, so that judging a look-alike Node rebuilds none of them."""

    checks: tuple[Check, ...]
    ok: bool
    reasons: tuple[Reason, ...]


def _outcome(checks: list[Check]) -> Outcome:
    return Outcome(tuple(checks), all(c.ok for c in checks), reasons_of(checks))


@cache
def _claimed(claimed_by: str | None) -> Outcome:
    return _outcome([_compare("claimed", "other NodeSets on this Node", "none", claimed_by or "none", not claimed_by,
                              f"already claimed by NodeSet {claimed_by} (a Node belongs to one NodeSet)",
                              "node(s) were claimed by another NodeSet")])


def _outcomes(workload: Workload, node: dict, others: list[dict], claimed_by: str | None, first_only: bool) -> list[Outcome]:
    """The outcome of each of the workload's checks in order; `first_only` stops after the first that fails."""
    placement = _memoized(workload.memo.setdefault("placement", {}), node,
                          lambda view: {check: _outcome(found) for check, found in _placement(workload, view).items()})
    found = []
    for check in workload.checks:
        if check in placement:
            outcome = placement[check]
        elif check == "resources" and others:
            outcome = _outcome(resource_checks(workload.requests, NodeView(node), others))
        elif check == "resources":  # a Node no other Pod uses: its allocatable quantities alone decide
            outcome = _memoized(workload.memo.setdefault("fit", {}), node,
                                lambda view: _outcome(resource_checks(workload.requests, view, [])))
        elif check == "claimed":
            outcome = _claimed(claimed_by)
        found.append(outcome)
        if first_only and not outcome.ok:
            break
    return found


def explain_node(workload: Workload, node: dict, others: list[dict], claimed_by: str | None = None,
                 first_only: bool = False) -> list[Check]:
    """Every comparison behind the verdict for this Node, passing or not, with the values compared.

    `others` are the non-terminal Pods bound to the Node that are not this workload's own;
    `claimed_by` names another NodeSet already running its Pod there. `first_only` stops after the first
    failing check: the same feasibility, for a fraction of the work, when the reasons are not shown.
    """
    return [c for outcome in _outcomes(workload, node, others, claimed_by, first_only) for c in outcome.checks]


def evaluate(workload: Workload, node: dict, others: list[dict], *, placed: bool = False,
             claimed_by: str | None = None, first_only: bool = False) -> NodeVerdict:
    """The verdict for one Node: the reasons of `explain_node`'s failing comparisons."""
    reasons = tuple(r for outcome in _outcomes(workload, node, others, claimed_by, first_only) for r in outcome.reasons)
    return NodeVerdict(o.name(node), o.pool_of(node), not reasons, placed, reasons)


def scheduler_summary(verdicts) -> str:
    """kube-scheduler's FitError line: `<feasible>/<N> nodes are available: <histogram>.`

    Each infeasible Node counts once, under its first failing filter in the scheduler's order (all of
    NodeResourcesFit's reasons when that is the one); entries are sorted as strings, as upstream does.
    """
    verdicts = list(verdicts)
    histogram: Counter = Counter()
    for v in verdicts:
        if v.feasible:
            continue
        first = min((SCHEDULER_ORDER.index(r.check) for r in v.reasons if r.check in SCHEDULER_ORDER), default=None)
        chosen = [r for r in v.reasons if first is not None and SCHEDULER_ORDER.index(r.check) == first]
        phrases = {r.scheduler or r.detail for r in chosen}
        if chosen and chosen[0].check == "taint":
            phrases = {chosen[0].scheduler}  # upstream names only the first untolerated taint
        histogram.update(phrases)
    available = sum(v.feasible for v in verdicts)
    entries = sorted(f"{count} {phrase}" for phrase, count in histogram.items())
    return f"{available}/{len(verdicts)} nodes are available" + (f": {', '.join(entries)}." if entries else ".")
