"""daemonset-pods-missing: CURRENT below DESIRED, Pods the controller could not create."""

from __future__ import annotations

from sunkcheck.analyze import events as ev
from sunkcheck.analyze.daemonset import Scope, pinned_node
from sunkcheck.analyze.nodeset import falls_short, shown
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.symptoms.fixes import arg


def pods_missing(s: Scope) -> Match | None:
    """DESIRED above the Nodes that have a daemon Pod (bound or Pending): by CURRENT, or by the Pods when
    the status lags. A Pod the controller could not create (a ResourceQuota, an admission webhook, Pod
    Security) leaves no Pod, only Events on the DaemonSet."""
    desired, current = s.counts.desired, s.counts.current
    created = None if s.cluster.snapshot.pods is None else len({n for p in s.pods if (n := pinned_node(p))})
    if not falls_short(desired, current, created):
        return None
    evidence = [f"DESIRED {desired}, CURRENT {shown(current)}"
                + ("" if created is None else f": daemon Pods exist for {created} Node(s)")]
    evidence += [ev.describe(e) for e in s.cluster.events_about("DaemonSet", s.name, s.namespace) if ev.is_warning(e)]
    bare = [n for n in s.eligible if not s.verdicts[n].placed]
    if bare and created is not None:
        evidence.append(f"{len(bare)} eligible Node(s) have no daemon Pod: {some(bare)}")
    return Match(tuple(evidence), "read why the controller cannot create the Pods (FailedCreate names the quota, "
                 "webhook or Pod Security level); a rollout in progress clears by itself:\n"
                 f"kubectl describe daemonset -n {arg(s.namespace)} {arg(s.name)}")


RULE = Rule("daemonset-pods-missing", Status.WARNING, "pods",
            "daemon Pods are missing: fewer than DESIRED (by CURRENT or by the Pods read)",
            "The controller could not create Pods on some eligible Nodes (a ResourceQuota, an admission webhook, Pod "
            "Security), or a rollout is still under way.",
            "Read the DaemonSet's FailedCreate Events (`kubectl describe daemonset`) and fix what they name.",
            pods_missing, reads=(Read.EVERY_NODE,))
