"""daemonset-preferred-affinity-only: a preference, which narrows no DaemonSet."""

from __future__ import annotations

from sunkcheck.analyze.daemonset import Scope
from sunkcheck.analyze.feasibility import describe_expression, required_terms
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule


def preferred_affinity_only(s: Scope) -> Match | None:
    affinity = (s.pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    preferred = affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
    if not preferred or required_terms(s.pod_spec) is not None or s.pod_spec.get("nodeSelector"):
        return None
    exprs = [describe_expression(e) for p in preferred for e in (p.get("preference") or {}).get("matchExpressions") or ()]
    return Match((f"only preferred node affinity ({'; '.join(exprs) or 'empty'}): it does not narrow the DaemonSet, "
                  f"which runs on {len(s.eligible)} of {len(s.verdicts)} Nodes",),
                 "move the expressions to requiredDuringSchedulingIgnoredDuringExecution (or a nodeSelector): the "
                 "controller pins each Pod to its Node, so there is nothing left for a preference to rank")


RULE = Rule("daemonset-preferred-affinity-only", Status.WARNING, "daemonset",
            "The DaemonSet is scoped with preferred node affinity only",
            "Preferred affinity has no effect on a DaemonSet's scope: it runs on every Node it tolerates.",
            "Use requiredDuringSchedulingIgnoredDuringExecution or a nodeSelector.",
            preferred_affinity_only, needs=("nodes",), reads=(Read.EVERY_NODE,))
