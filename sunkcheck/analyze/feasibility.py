"""Per-Node feasibility of a pod template, with every failing reason.

Reproduces kube-scheduler's NodeAffinity, TaintToleration, NodeUnschedulable and NodeResourcesFit
filters and the DaemonSet controller's eligibility rule, but evaluates every check instead of stopping
at the first failure. Each check yields the comparisons it makes (`Check`s, the deep view); the verdict's
reasons are those of the failing ones: one engine for both. The filters live in `affinity`, `taints` and
`resources`, the Node as they read it in `nodeview`; every caller imports them from here, the engine's one door.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from typing import NamedTuple

from sunkcheck import objects as o
from sunkcheck.analyze.affinity import (AFFINITY_MISMATCH, affinity_checks, affinity_reasons, describe_expression,
                                        match_expression, match_field, matches_affinity, required_terms)
from sunkcheck.analyze.nodeview import KEYS, READERS, NodeView, compare, memoized, not_ready, reasons_of
from sunkcheck.analyze.resources import (INVALID_QUANTITY, Amount, Unreadable, container_requests, pod_requests,
                                         read_quantity, resource_checks, resource_reasons, scheduler_units, short_of)
from sunkcheck.analyze.taints import (BLOCKING_EFFECTS, STARTUP_TAINTS, UNSCHEDULABLE_TAINT, taint_checks, taint_reason,
                                      tolerates, untolerated_taints)
from sunkcheck.model import Check, NodeVerdict, Reason

__all__ = [
    "AFFINITY_MISMATCH", "BLOCKING_EFFECTS", "DAEMONSET_CHECKS", "DAEMON_TOLERATIONS", "HOST_NETWORK_TOLERATION",
    "INVALID_QUANTITY", "KEYS", "NODESET_CHECKS", "PLACEMENT_CHECKS", "READERS", "STARTUP_TAINTS",
    "UNSCHEDULABLE_TAINT", "Amount", "NodeView", "Unreadable", "Workload", "affinity_checks", "affinity_reasons",
    "container_requests", "describe_expression", "evaluate", "explain_node", "match_expression", "match_field",
    "matches_affinity", "not_ready", "passes", "pod_requests", "pods_unrecorded", "read_quantity", "reasons_of",
    "required_terms", "resource_checks", "resource_reasons", "scheduler_summary", "scheduler_units", "short_of",
    "state_checks", "taint_checks", "taint_reason", "tolerates", "untolerated_taints", "with_daemon_tolerations",
]


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


# --- the verdict ---------------------------------------------------------------------------------

def state_checks(node: NodeView) -> list[Check]:
    why = "node(s) were not production or not Ready"
    state = node.labels.get(o.STATE_LABEL)
    status, reason = node.ready
    return [
        compare("state", o.STATE_LABEL, o.PRODUCTION, state or "(absent)", state == o.PRODUCTION,
                 f"{o.STATE_LABEL} is {state!r}, not {o.PRODUCTION!r}" if state
                 else f"{o.STATE_LABEL} label absent (not a production Node)", why),
        compare("state", "Ready condition", "True", status or "(absent)", status == "True",
                 f"Node is {not_ready(status, reason)}", why)]


def _placement(workload: Workload, node: NodeView) -> dict[str, list[Check]]:
    """The comparisons of the checks that read only the Node, by check; computed once per look-alike Node."""
    tolerations = workload.pod_spec.get("tolerations") or []
    found: dict[str, list[Check]] = {}
    for check in workload.checks:
        if check == "state":
            found[check] = state_checks(node)
        elif check == "unschedulable":
            cordoned, tolerated = node.unschedulable, any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations)
            # a cordon takes the Node out of service: it is lifted, never tolerated (so the wanted value says neither)
            found[check] = [compare("unschedulable", "spec.unschedulable", "not cordoned",
                                     ("cordoned (tolerated)" if tolerated else "cordoned: out of service") if cordoned
                                     else "false", not cordoned or tolerated, "Node is cordoned (spec.unschedulable)",
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
    return _outcome([compare("claimed", "other NodeSets on this Node", "none", claimed_by or "none", not claimed_by,
                              f"already claimed by NodeSet {claimed_by} (a Node belongs to one NodeSet)",
                              "node(s) were claimed by another NodeSet")])


def _outcomes(workload: Workload, node: dict, others: list[dict], claimed_by: str | None, first_only: bool) -> list[Outcome]:
    """The outcome of each of the workload's checks in order; `first_only` stops after the first that fails."""
    placement = memoized(workload.memo.setdefault("placement", {}), node,
                          lambda view: {check: _outcome(found) for check, found in _placement(workload, view).items()})
    found = []
    for check in workload.checks:
        if check in placement:
            outcome = placement[check]
        elif check == "resources" and others:
            outcome = _outcome(resource_checks(workload.requests, NodeView(node), others))
        elif check == "resources":  # a Node no other Pod uses: its allocatable quantities alone decide
            outcome = memoized(workload.memo.setdefault("fit", {}), node,
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


OTHERS_DECIDE = ("resources", "claimed")
"""The checks whose comparisons the other Pods on a Node decide."""


def pods_unrecorded(checks: Iterable[Check]) -> tuple[Check, ...]:
    """`checks` of a Node whose other Pods were not read: those the Pods decide are unknown where they pass without
    them (a request beyond the allocatable fails whatever runs there, but room left and no claim are not facts)."""
    return tuple(replace(c, found="Pods not recorded", ok=False, reasons=(), unknown=True)
                 if c.check in OTHERS_DECIDE and c.ok else c for c in checks)


def evaluate(workload: Workload, node: dict, others: list[dict], *, placed: bool = False,
             claimed_by: str | None = None, first_only: bool = False) -> NodeVerdict:
    """The verdict for one Node: the reasons of `explain_node`'s failing comparisons."""
    reasons = tuple(r for outcome in _outcomes(workload, node, others, claimed_by, first_only) for r in outcome.reasons)
    return NodeVerdict(o.name(node), o.pool_of(node), not reasons, placed, reasons)


def passes(workload: Workload, node: dict) -> bool:
    """Whether every check of the workload passes on a Node no other Pod uses: `evaluate`'s feasibility, without a
    verdict built (asked of every Node of every pool in discovery)."""
    return all(outcome.ok for outcome in _outcomes(workload, node, [], None, True))


def scheduler_summary(verdicts: Iterable[NodeVerdict]) -> str:
    """kube-scheduler's FitError line: `<feasible>/<N> nodes are available: <histogram>.`

    Each infeasible Node counts once, under its first failing filter in the scheduler's order (all of
    NodeResourcesFit's reasons when that is the one); entries are sorted as strings, as upstream does.
    """
    verdicts = list(verdicts)
    histogram: Counter = Counter()
    for v in verdicts:
        if v.feasible:
            continue
        histogram.update({r.scheduler or r.detail for r in v.scheduler_reasons()})
    available = sum(v.feasible for v in verdicts)
    entries = sorted(f"{count} {phrase}" for phrase, count in histogram.items())
    return f"{available}/{len(verdicts)} nodes are available" + (f": {', '.join(entries)}." if entries else ".")
