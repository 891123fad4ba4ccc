"""daemonset-node-name-set: a hand-written nodeName in the Pod template."""

from __future__ import annotations

from sunkcheck.analyze.daemonset import Scope
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule


def node_name_set(s: Scope) -> Match | None:
    pinned = s.pod_spec.get("nodeName")
    if not pinned:
        return None
    return Match((f"spec.template.spec.nodeName is {pinned}: only that Node can run the daemon Pod "
                  f"({len(s.selected)} of {len(s.verdicts)} Nodes selected)",),
                 "remove nodeName from the Pod template; scope the DaemonSet with nodeSelector or required node "
                 "affinity (the controller pins each Pod to its Node itself)")


RULE = Rule("daemonset-node-name-set", Status.CRITICAL, "daemonset",
            "nodeName is set in the DaemonSet's Pod template",
            "A hand-written nodeName fights the controller, which pins each daemon Pod to its Node itself.",
            "Remove nodeName; scope with nodeSelector or required node affinity.",
            node_name_set, needs=("nodes",), reads=(Read.EVERY_NODE,))
