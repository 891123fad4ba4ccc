"""Row slurmd-pods-missing: fewer slurmd Pods on Nodes than the NodeSet's effective size."""

from __future__ import annotations

from sunkcheck import duration
from sunkcheck import objects as o
from sunkcheck.analyze import events as ev
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze import nodeset as ns
from sunkcheck.analyze.nodeset import falls_short, shown
from sunkcheck.analyze.pods import CREATE_GRACE, overdue
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import EXAMPLES, Match, Rule, some
from sunkcheck.symptoms.fixes import arg
from sunkcheck.text import counted


def slurmd_pods_missing(b: Binding) -> Match | None:
    """The effective size (Binding.size: DESIRED, at most FEASIBLE) above the Pods on Nodes: by the controller's
    CURRENT, or by the slurmd Pods themselves (a stale status, or none reported), by more than the Pods SUNK is
    still creating on Nodes Ready moments ago (Binding.being_created: the nodeset step says them; serve and --wait
    judge again when their grace ends). The Pods that were never created leave no Pod to read, only the NodeSet's
    Events. A status that counts fewer feasible Nodes than sunkcheck finds, one of them idle past that grace
    (`_uncounted`), hides the same missing Pod behind its own counts."""
    size, on_nodes = b.size, b.on_nodes
    if not falls_short(None if size is None else size - b.being_created, b.counts.current, on_nodes):
        return _uncounted_match(b)
    unplaced = [p for p in b.pods if not o.node_name(p) and not o.is_terminal(p)]
    evidence = [_counts_evidence(b, size, on_nodes), *(f"Pod {o.name(p)} is not on a Node yet" for p in unplaced[:EXAMPLES])]
    events = b.cluster.events_about("NodeSet", b.name, b.namespace)
    for p in unplaced:
        events += b.cluster.events_about("Pod", o.name(p), b.namespace)
    evidence += [ev.describe(e) for e in events if ev.is_warning(e)]
    if idle := [n for n in b.feasible_nodes if not b.verdict(n).placed]:
        evidence.append(f"{len(idle)} feasible Node(s) run no slurmd Pod: {some(idle)}")
    if b.being_created:  # a grace that holds back no more than these: the rest are missing
        evidence.append(f"{len(b.creating)} of them turned Ready less than {duration.shown(CREATE_GRACE)} ago, "
                        f"whose Pods may still be being created: {some(list(b.creating))}")
    fixes = [f"kubectl describe nodeset -n {arg(b.namespace)} {arg(b.name)}"]
    fixes += [f"kubectl describe pod -n {arg(b.namespace)} {arg(o.name(p))}" for p in unplaced[:EXAMPLES]]
    passing = "a scale-up or rollout in progress clears by itself (--wait waits for it)"
    if (beyond := _counted_beyond(b)) is not None:
        evidence.insert(1, beyond)
        passing = "a status catching up with Pods removed (a scale-down) clears by itself (--wait waits for it)"
    return Match(tuple(evidence), f"{passing}; else read why the Pods are not created or placed (FailedCreate: a "
                 "namespace ResourceQuota or admission webhook; none: is the SUNK operator running?):\n" + "\n".join(fixes))


def _uncounted(b: Binding) -> list[str]:
    """The feasible Nodes the status does not count: with a current status (b.counts; a stale one reports none:
    nodeset-status-stale's) whose FEASIBLE is below sunkcheck's own, and fewer slurmd Pods on Nodes than the size
    sunkcheck's count gives (DESIRED as the controller sets it, capped by spec.replicas), the Nodes sunkcheck finds
    feasible that run no slurmd Pod and have been Ready for longer than SUNK takes to create one (pods.overdue: a
    scale-up inside that grace is no finding). Else none."""
    reported, found, on_nodes = b.counts.feasible, b.computed_feasible, b.on_nodes
    if reported is None or on_nodes is None or found <= reported:
        return []
    if not falls_short(ns.effective(ns.desired(ns.replicas(b.nodeset), found), found), on_nodes):
        return []
    return sorted(n for n in b.feasible_nodes
                  if not b.verdict(n).placed and overdue(b.cluster.nodes[n], b.grace_clock))


def _uncounted_match(b: Binding) -> Match | None:
    """The slurmd Pods missing on Nodes the NodeSet's status does not count (`_uncounted`): its counts agree with
    themselves, so only sunkcheck's own count shows them."""
    idle = _uncounted(b)
    if not idle:
        return None
    reported = b.counts.feasible
    evidence = [f"FEASIBLE {reported} (DESIRED {shown(b.counts.desired)}, CURRENT {shown(b.counts.current)}), but "
                f"sunkcheck finds {counted(b.computed_feasible, 'feasible Node')}: the status does not count "
                f"{len(idle)} of them",
                f"{some(idle)} {'has' if len(idle) == 1 else 'have'} been Ready for more than "
                f"{duration.shown(CREATE_GRACE)} and run{'s' if len(idle) == 1 else ''} no slurmd Pod"]
    evidence += [ev.describe(e) for e in b.cluster.events_about("NodeSet", b.name, b.namespace) if ev.is_warning(e)]
    return Match(tuple(evidence), "the SUNK operator has not counted these Nodes though its status is for the latest "
                 "spec: check that the SUNK operator's Pod is running and read its log; read the NodeSet's Events, "
                 "and why sunkcheck finds each Node feasible:\n"
                 f"kubectl describe nodeset -n {arg(b.namespace)} {arg(b.name)}\n"
                 f"sunkcheck explain -n {arg(b.namespace)} --nodeset {arg(b.name)}")


def _counted_beyond(b: Binding) -> str | None:
    """CURRENT above the NodeSet's Pods that exist (Pending ones included): the status still counts Pods removed,
    most often with the Nodes a scale-down removed, so its DESIRED and FEASIBLE may be as stale; else nothing."""
    current = b.counts.current
    if b.cluster.snapshot.pods is None or current is None or current <= len(b.pods):
        return None
    return (f"CURRENT {current} counts more slurmd Pods than the {len(b.pods)} that exist: the status has not caught "
            "up with Pods removed (with their Nodes by a scale-down, or deleted)")


def _counts_evidence(b: Binding, size: int | None, on_nodes: int | None) -> str:
    """The counts compared: the status's (or, without one, sunkcheck's own size) and the Nodes slurmd Pods run on."""
    reported = b.counts.desired
    if reported is None:
        return (f"the NodeSet reports no DESIRED (has the SUNK operator reconciled it?); sunkcheck finds {size} "
                f"Node(s) it should run on" + ("" if on_nodes is None else f", and slurmd Pods run on {on_nodes}"))
    current = b.counts.current
    # CURRENT may count Pods sunkcheck does not read as the NodeSet's: say which count falls short
    counted_all = current is not None and size is not None and current >= size
    return (f"DESIRED {reported}" + (f", FEASIBLE {b.feasible}" if size != reported else "")
            + f", CURRENT {shown(current)}" + ("" if on_nodes is None else
                                                  f"{', but' if counted_all else ':'} slurmd Pods run on {on_nodes} Node(s)"))


RULE = Rule("slurmd-pods-missing", Status.WARNING, "nodeset",
            "slurmd Pods are missing: fewer on Nodes than DESIRED (by CURRENT or by the Pods read), or than the feasible Nodes",
            "The NodeSet could not create or place some of its Pods (a ResourceQuota, an admission webhook, the operator "
            "down), or a scale-up or rollout is still under way. A Pod not created yet on a Node Ready less than 2 minutes "
            "ago is being created, not reported. A current status whose FEASIBLE counts fewer Nodes than sunkcheck finds "
            "feasible, one of them Ready for longer and running no slurmd Pod, hides the missing Pod behind its own counts "
            "(the operator has not counted that Node).",
            "Read the NodeSet's Events (`kubectl describe nodeset`) and the SUNK operator's log; wait for a rollout to finish.",
            slurmd_pods_missing, explained_by=("nodeset-status-stale",), reads=(Read.AFFINITY_NODES, Read.PODS_ON_USABLE_NODES))
