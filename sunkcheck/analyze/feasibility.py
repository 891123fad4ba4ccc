"""Per-Node feasibility of a pod template, with every failing reason.

Reproduces kube-scheduler's NodeAffinity, TaintToleration, NodeUnschedulable and NodeResourcesFit
filters and the DaemonSet controller's eligibility rule, but evaluates every check instead of stopping
at the first failure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

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
    """Reasons by what a check reads of a Node: to one template, thousands of Nodes are a few dozen kinds."""

    @cached_property
    def label_keys(self) -> tuple | None:
        """The Node labels the placement checks read; None when they read the Node's name too."""
        terms = required_terms(self.pod_spec) or []
        if self.pod_spec.get("nodeName") or any(t.get("matchFields") for t in terms):
            return None
        keys = {o.STATE_LABEL, *(self.pod_spec.get("nodeSelector") or {})}
        return tuple(keys | {e.get("key") for t in terms for e in t.get("matchExpressions") or ()})

    @cached_property
    def fit_keys(self) -> tuple[str, ...]:
        """The allocatable quantities NodeResourcesFit compares for this template."""
        return (*self.requests, "pods")

    @classmethod
    def from_template(cls, pod_spec: dict) -> Workload:
        """A SUNK NodeSet's template. The API server copies limits into missing requests for Pods, not
        for templates: do it here."""
        return cls(pod_spec, pod_requests(pod_spec, limits_as_requests=True))

    @classmethod
    def from_daemonset(cls, pod_spec: dict) -> Workload:
        """A DaemonSet's template, with the tolerations the controller adds to every daemon Pod."""
        extra = list(DAEMON_TOLERATIONS) + ([HOST_NETWORK_TOLERATION] if pod_spec.get("hostNetwork") else [])
        spec = dict(pod_spec, tolerations=list(pod_spec.get("tolerations") or []) + extra)
        return cls(spec, pod_requests(pod_spec, limits_as_requests=True), DAEMONSET_CHECKS, "DaemonSet")


# --- node affinity -------------------------------------------------------------------------------

def match_expression(expr: dict, node_labels: dict) -> bool:
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


def match_field(expr: dict, node: dict) -> bool:
    """A matchFields requirement: only metadata.name, only In/NotIn, exactly one value."""
    values = expr.get("values") or []
    if expr.get("key") != "metadata.name" or len(values) != 1 or expr.get("operator") not in ("In", "NotIn"):
        return False
    return (o.name(node) in values) == (expr["operator"] == "In")


def _int64(text) -> int | None:
    try:
        value = int(str(text), 10)
    except ValueError:
        return None
    return value if -(2**63) <= value < 2**63 else None


def describe_expression(expr: dict, node: dict | None = None) -> str:
    """`key Op [values]`, plus what the Node has when it is given."""
    values = expr.get("values") or []
    text = f"{expr.get('key')} {expr.get('operator')}" + (f" [{', '.join(map(str, values))}]" if values else "")
    if node is None:
        return text
    if expr.get("key") == "metadata.name":
        return f"{text}: Node is {o.name(node)}"
    node_labels = o.labels(node)
    have = f"label is {node_labels[expr.get('key')]!r}" if expr.get("key") in node_labels else "label absent"
    return f"{text}: {have}"


def required_terms(pod_spec: dict) -> list[dict] | None:
    """The required nodeSelectorTerms, or None when the template sets no required node affinity."""
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is None:
        return None
    return list(required.get("nodeSelectorTerms") or [])


def term_failures(term: dict, node: dict) -> list[dict]:
    """The expressions and fields of one term that the Node fails (all must pass: they are ANDed)."""
    node_labels = o.labels(node)
    failed = [e for e in term.get("matchExpressions") or [] if not match_expression(e, node_labels)]
    return failed + [f for f in term.get("matchFields") or [] if not match_field(f, node)]


def affinity_reasons(pod_spec: dict, node: dict, skip_keys: frozenset[str] = frozenset()) -> list[Reason]:
    """nodeSelector AND required node affinity (terms ORed; an empty term or list matches nothing).

    Expressions on `skip_keys` are left out of the explanation (not of the verdict) when another
    check already names the same fact.
    """
    reasons = []
    node_labels = o.labels(node)
    for key, value in sorted((pod_spec.get("nodeSelector") or {}).items()):
        if node_labels.get(key) != value:
            have = f"label is {node_labels[key]!r}" if key in node_labels else "label absent"
            reasons.append(Reason("affinity", f"nodeSelector {key}={value}: {have}"))
    terms = required_terms(pod_spec)
    if terms is None:
        return reasons
    usable = [(i, t) for i, t in enumerate(terms) if t.get("matchExpressions") or t.get("matchFields")]
    if not usable:
        return reasons + [Reason("affinity", "required node affinity has no non-empty nodeSelectorTerm: it matches no Node")]
    failures = [(i, term_failures(t, node)) for i, t in usable]
    if any(not failed for _, failed in failures):
        return reasons
    for i, failed in failures:
        shown = [e for e in failed if e.get("key") not in skip_keys]
        if not shown:
            continue
        where = f"term {i}: " if len(usable) > 1 else ""
        reasons.extend(Reason("affinity", f"required affinity {where}{describe_expression(e, node)}") for e in shown)
    if not reasons:  # every failing expression was skipped: still say affinity failed
        reasons.append(Reason("affinity", "required node affinity does not match"))
    return reasons


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
    """`value` parsed, or an Unreadable saying what it was (`what` names the field)."""
    try:
        return o.quantity(value)
    except o.InvalidQuantity as e:
        return Unreadable(f"{what} {value!r}, {e}")


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


def resource_reasons(requests: dict[str, Amount], node: dict, others: list[dict]) -> list[Reason]:
    """NodeResourcesFit: pod count, then every requested resource against allocatable minus what others hold.
    A quantity that cannot be read (requested, allocatable or held) leaves its resource unknown: a reason
    that says so, never a comparison with 0."""
    alloc = o.allocatable(node)
    reasons = []
    if "pods" in alloc:
        pods = read_quantity(alloc["pods"], "allocatable pods is")
        if isinstance(pods, Unreadable):
            reasons.append(_unknown(f"{pods.text}: cannot tell whether the request fits"))
        elif len(others) + 1 > pods:
            reasons.append(Reason("resources", f"Too many pods: {len(others)} of {int(pods)} allowed already run",
                                  "Too many pods"))
    held = [(p, pod_requests(o.spec(p))) for p in others]
    for resource, want in sorted(requests.items()):
        if isinstance(want, Unreadable):
            reasons.append(_unknown(f"{want.text}: cannot tell whether it fits"))
            continue
        if want <= 0 or resource == "pods":
            continue
        total = read_quantity(alloc.get(resource, 0), f"allocatable {resource} is")
        if isinstance(total, Unreadable):
            reasons.append(_unknown(f"{total.text}: cannot tell whether the request fits"))
            continue
        unread = [(p, r[resource]) for p, r in held if isinstance(r.get(resource), Unreadable)]
        if unread:
            reasons += [_unknown(f"Pod {o.namespace(p)}/{o.name(p)}: {q.text}: cannot tell what the Pod holds") for p, q in unread]
            continue
        used = sum((r.get(resource, 0) for _, r in held), Fraction(0))
        if want <= total - used:
            continue
        fmt = lambda q: o.format_quantity(resource, q)  # noqa: E731
        if resource not in alloc:
            reasons.append(Reason("resources", f"Insufficient {resource}: requests {fmt(want)}, Node does not advertise it",
                                  f"Insufficient {resource}"))
            continue
        holders = sorted(((r[resource], p) for p, r in held if r.get(resource, 0) > 0), key=lambda x: -x[0])
        by = ", ".join(f"{o.namespace(p)}/{o.name(p)} {fmt(q)}" for q, p in holders[:3])
        more = f" and {len(holders) - 3} more" if len(holders) > 3 else ""
        reasons.append(Reason("resources", f"Insufficient {resource}: requests {fmt(want)}, free {fmt(total - used)} "
                                           f"of {fmt(total)} allocatable, short {fmt(want - (total - used))}"
                              + (f" (held by {by}{more})" if by else ""), f"Insufficient {resource}"))
    return reasons


# --- the verdict ---------------------------------------------------------------------------------

AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
# kube-scheduler's filter order; the sunkcheck-only checks (state, claimed) slot in where they bite.
SCHEDULER_ORDER = ("unschedulable", "taint", "affinity", "state", "resources", "claimed")


def state_reasons(node: dict) -> list[Reason]:
    reasons = []
    why = "node(s) were not production or not Ready"
    state = o.labels(node).get(o.STATE_LABEL)
    if state != o.PRODUCTION:
        reasons.append(Reason("state", f"{o.STATE_LABEL} is {state!r}, not {o.PRODUCTION!r}" if state
                              else f"{o.STATE_LABEL} label absent (not a production Node)", why))
    if not o.is_ready(node):
        cond = o.condition(node, "Ready") or {}
        reasons.append(Reason("state", f"Node is not Ready (Ready={cond.get('status', 'absent')}"
                                       + (f": {cond['reason']})" if cond.get("reason") else ")"), why))
    return reasons


def taint_reason(taint: dict, kind: str) -> Reason:
    detail = f"untolerated taint {o.format_taint(taint)}"
    if kind == "DaemonSet":  # NodeShouldRunDaemonPod: only NoExecute removes a running daemon Pod
        detail += (": a running daemon Pod is evicted" if taint.get("effect") == "NoExecute"
                   else ": no new daemon Pod; a running one stays (counted MISSCHEDULED)")
    return Reason("taint", detail, f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value') or ''}}}")


def placement_reasons(workload: Workload, node: dict) -> dict[str, list[Reason]]:
    """The reasons of the checks that read only the Node, by check; computed once per look-alike Node."""
    return _memoized(workload.memo, _lookalike(workload, node), lambda: _placement(workload, node))


def _lookalike(workload: Workload, node: dict) -> tuple | None:
    """Everything the placement checks read from `node` (None: they read its name too)."""
    if workload.label_keys is None:
        return None
    node_labels, ready = o.labels(node), o.condition(node, "Ready") or {}
    return (tuple(map(node_labels.get, workload.label_keys)), ready.get("status"), ready.get("reason"),
            bool(o.spec(node).get("unschedulable")),
            tuple((t.get("key"), t.get("value"), t.get("effect")) for t in o.taints(node)))


def _empty_node_fit(workload: Workload, node: dict) -> list[Reason]:
    """NodeResourcesFit on a Node no other Pod uses: it depends on the allocatable quantities alone."""
    key = ("resources", *map(o.allocatable(node).get, workload.fit_keys))
    return _memoized(workload.memo, key, lambda: resource_reasons(workload.requests, node, []))


def _memoized(memo: dict, key: tuple | None, compute):
    if key is None:
        return compute()
    try:
        hash(key)
    except TypeError:  # a malformed object (a list where a string belongs): judge it on its own
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def _placement(workload: Workload, node: dict) -> dict[str, list[Reason]]:
    spec = workload.pod_spec
    tolerations = spec.get("tolerations") or []
    found: dict[str, list[Reason]] = {}
    for check in workload.checks:
        if check == "state":
            found[check] = state_reasons(node)
        elif check == "unschedulable":
            found[check] = [Reason("unschedulable", "Node is cordoned (spec.unschedulable)", "node(s) were unschedulable")] \
                if o.spec(node).get("unschedulable") and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations) \
                else []
        elif check == "affinity":
            reasons = []
            if spec.get("nodeName") and spec["nodeName"] != o.name(node):
                reasons.append(Reason("affinity", f"the template sets nodeName {spec['nodeName']}: no other Node runs it",
                                      "node(s) didn't match the requested node name"))
            skip = frozenset({o.STATE_LABEL}) if "state" in workload.checks else frozenset()
            found[check] = reasons + [Reason(r.check, r.detail, AFFINITY_MISMATCH) for r in affinity_reasons(spec, node, skip)]
        elif check == "taint":
            found[check] = [taint_reason(t, workload.kind) for t in untolerated_taints(tolerations, o.taints(node))]
    return found


def evaluate(workload: Workload, node: dict, others: list[dict], *, placed: bool = False,
             claimed_by: str | None = None, first_only: bool = False) -> NodeVerdict:
    """The verdict for one Node.

    `others` are the non-terminal Pods bound to the Node that are not this workload's own;
    `claimed_by` names another NodeSet already running its Pod there. `first_only` stops at the first
    failing check: the same `feasible`, for a fraction of the work, when the reasons are not shown.
    """
    placement = placement_reasons(workload, node)
    reasons: list[Reason] = []
    for check in workload.checks:
        if check in placement:
            reasons += placement[check]
        elif check == "resources":
            reasons += resource_reasons(workload.requests, node, others) if others else _empty_node_fit(workload, node)
        elif check == "claimed" and claimed_by:
            reasons.append(Reason("claimed", f"already claimed by NodeSet {claimed_by} (a Node belongs to one NodeSet)",
                                  "node(s) were claimed by another NodeSet"))
        if first_only and reasons:
            break
    return NodeVerdict(o.name(node), o.pool_of(node), not reasons, placed, tuple(reasons))


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


# --- the deep view of one Node ---------------------------------------------------------------------

def explain_node(workload: Workload, node: dict, others: list[dict], claimed_by: str | None = None) -> list[Check]:
    """Every comparison `evaluate` makes for this Node, passing or not, with the values compared."""
    spec, labels = workload.pod_spec, o.labels(node)
    tolerations = spec.get("tolerations") or []
    checks: list[Check] = []
    if "state" in workload.checks:
        state = labels.get(o.STATE_LABEL)
        checks.append(Check("state", o.STATE_LABEL, o.PRODUCTION, state or "(absent)", state == o.PRODUCTION))
        ready = (o.condition(node, "Ready") or {}).get("status", "(absent)")
        checks.append(Check("state", "Ready condition", "True", ready, ready == "True"))
    if "unschedulable" in workload.checks:
        cordoned = bool(o.spec(node).get("unschedulable"))
        tolerated = any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations)
        checks.append(Check("unschedulable", "spec.unschedulable", "false, or tolerated",
                            "cordoned" + (" (tolerated)" if tolerated else "") if cordoned else "false",
                            not cordoned or tolerated))
    if spec.get("nodeName"):
        checks.append(Check("affinity", "nodeName", spec["nodeName"], o.name(node), spec["nodeName"] == o.name(node)))
    for key, value in sorted((spec.get("nodeSelector") or {}).items()):
        checks.append(Check("affinity", f"nodeSelector {key}", value, labels.get(key, "(absent)"), labels.get(key) == value))
    terms = required_terms(spec)
    for i, term in enumerate(terms or ()):
        for expr in term.get("matchExpressions") or ():
            checks.append(Check("affinity", f"term {i} expression", describe_expression(expr),
                                labels.get(expr.get("key"), "(absent)"), match_expression(expr, labels)))
        for by_field in term.get("matchFields") or ():
            checks.append(Check("affinity", f"term {i} field", describe_expression(by_field), o.name(node),
                                match_field(by_field, node)))
    if terms is not None:
        matched = [i for i, t in enumerate(terms) if (t.get("matchExpressions") or t.get("matchFields"))
                   and not term_failures(t, node)]
        checks.append(Check("affinity", "required node affinity", "any term matches (terms are ORed)",
                            f"term {matched[0]} matches" if matched else "no term matches", bool(matched)))
    for taint in o.taints(node):
        by = next((t for t in tolerations if tolerates(t, taint)), None)
        blocks = taint.get("effect") in BLOCKING_EFFECTS
        found = (f"tolerated by {_describe_toleration(by)}" if by else "not tolerated") if blocks             else f"{taint.get('effect')}: never blocks"
        checks.append(Check("taint", o.format_taint(taint), "tolerated", found, bool(by) or not blocks))
    if "resources" in workload.checks:
        checks += _resource_checks(workload.requests, node, others)
    if "claimed" in workload.checks:
        checks.append(Check("claimed", "other NodeSets on this Node", "none", claimed_by or "none", not claimed_by))
    return checks


def _describe_toleration(t: dict) -> str:
    text = f"{t.get('key') or '*'} {t.get('operator') or 'Equal'}"
    return text + (f" {t['value']}" if t.get("value") else "") + (f" ({t['effect']})" if t.get("effect") else "")


def _resource_checks(requests: dict[str, Amount], node: dict, others: list[dict]) -> list[Check]:
    alloc = o.allocatable(node)
    checks = []
    if "pods" in alloc:
        pods = read_quantity(alloc["pods"], "allocatable is")
        checks.append(Check("resources", "pods", "1 more", pods.text, False) if isinstance(pods, Unreadable) else
                      Check("resources", "pods", "1 more", f"{len(others)} of {int(pods)} running", len(others) + 1 <= pods))
    held = [(p, pod_requests(o.spec(p))) for p in others]
    for resource, want in sorted(requests.items()):
        if isinstance(want, Unreadable):
            checks.append(Check("resources", resource, want.text, "cannot tell whether it fits", False))
            continue
        if want <= 0 or resource == "pods":
            continue
        fmt = lambda q: o.format_quantity(resource, q)  # noqa: E731
        total = read_quantity(alloc.get(resource, 0), "allocatable is")
        unread = [f"Pod {o.namespace(p)}/{o.name(p)}: {r[resource].text}" for p, r in held
                  if isinstance(r.get(resource), Unreadable)]
        if isinstance(total, Unreadable) or unread:
            found = "; ".join([total.text] if isinstance(total, Unreadable) else unread)
            checks.append(Check("resources", resource, f"requests {fmt(want)}", found, False))
            continue
        used = sum((r.get(resource, 0) for _, r in held), Fraction(0))
        found = (f"free {fmt(total - used)} = allocatable {fmt(total)} - requested by others {fmt(used)}"
                 if resource in alloc else "not advertised (0)")
        checks.append(Check("resources", resource, f"requests {fmt(want)}", found, want <= total - used))
    return checks
