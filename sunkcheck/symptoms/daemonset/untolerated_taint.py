"""daemonset-untolerated-taint: selected Nodes a taint keeps the agent off."""

from __future__ import annotations

from collections import defaultdict

from sunkcheck import objects as o
from sunkcheck.analyze.daemonset import Scope
from sunkcheck.analyze.feasibility import taint_reason
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.symptoms.fixes import add_toleration


def untolerated_taint(s: Scope) -> Match | None:
    """Selected Nodes a taint keeps the agent off, the controller's default tolerations counted. The taints of the
    Node's state are left out (a NotReady Node's not-ready:NoSchedule, a start-up taint): its health, gone once it
    recovers or has started, is no scoping to fix. So is SUNK's lock: it comes and goes with the Slurm jobs, and an
    agent that does not tolerate it is kept off the Nodes running them by design (the nodes step counts them)."""
    by_taint: dict[str, list[str]] = defaultdict(list)
    taints: dict[str, dict] = {}
    for name, found in s.kept_off.items():
        for taint in found:
            if not o.is_lock(taint):
                by_taint[o.format_taint(taint)].append(name)
                taints[o.format_taint(taint)] = taint
    if not by_taint:
        return None
    evidence = [f"{len(names)} selected Node(s) ({some(names)}): {taint_reason(taints[text], 'DaemonSet').detail}"
                for text, names in sorted(by_taint.items())]
    # the template's own entries: the controller adds its defaults to every daemon Pod, never to the template
    own = s.pod_spec.get("tolerations") or []
    taken = frozenset(str(t.get("key")) for name in s.selected for t in o.taints(s.cluster.nodes[name]))
    fixes = [add_toleration(taints[text], own, "the Pod template's tolerations", taken) for text in sorted(taints)]
    return Match(tuple(evidence), "tolerate the taint in the Pod template if the agent belongs there: " + "\n".join(fixes))


RULE = Rule("daemonset-untolerated-taint", Status.WARNING, "nodes",
            "Nodes match the DaemonSet's selector but get no daemon Pod",
            "A NoSchedule/NoExecute taint on those Nodes is not tolerated (scoping narrows; tolerations widen). SUNK's "
            "lock taint does not count: it sits on the Nodes running Slurm jobs while they run, and an agent that does "
            "not tolerate it stays off them by design.",
            "Add a toleration for the taint to the Pod template, if the agent belongs on those Nodes.",
            untolerated_taint, needs=("nodes",), reads=(Read.EVERY_NODE,))
