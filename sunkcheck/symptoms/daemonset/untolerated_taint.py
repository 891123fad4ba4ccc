"""daemonset-untolerated-taint: selected Nodes a taint keeps the agent off."""

from __future__ import annotations

from collections import defaultdict

from sunkcheck import objects as o
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.daemonset import Scope
from sunkcheck.analyze.feasibility import taint_reason
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.symptoms.fixes import add_toleration


def untolerated_taint(s: Scope) -> Match | None:
    """Selected Nodes a taint keeps the agent off, the controller's default tolerations counted. The taints of the
    Node's state are left out (a NotReady Node's not-ready:NoSchedule, a start-up taint): its health, gone once it
    recovers or has started, is no scoping to fix."""
    by_taint: dict[str, list[str]] = defaultdict(list)
    taints: dict[str, dict] = {}
    for name in s.selected:
        for taint in nd.untolerated_scoping_taints(s.workload.pod_spec.get("tolerations") or [], s.cluster.nodes[name]):
            by_taint[o.format_taint(taint)].append(name)
            taints[o.format_taint(taint)] = taint
    if not by_taint:
        return None
    evidence = [f"{len(names)} selected Node(s) ({some(names)}): {taint_reason(taints[text], 'DaemonSet').detail}"
                + (f" ({_LOCK_SAID})" if _is_lock(taints[text]) else "") for text, names in sorted(by_taint.items())]
    # the template's own entries: the controller adds its defaults to every daemon Pod, never to the template
    own = s.pod_spec.get("tolerations") or []
    taken = frozenset(str(t.get("key")) for name in s.selected for t in o.taints(s.cluster.nodes[name]))
    fixes = [(_LOCK_CHOICE if _is_lock(taints[text]) else "")
             + add_toleration(taints[text], own, "the Pod template's tolerations", taken) for text in sorted(taints)]
    return Match(tuple(evidence), "tolerate the taint in the Pod template if the agent belongs there: " + "\n".join(fixes))


_LOCK_SAID = "SUNK's lock taint: SUNK sets it on a Node while a Slurm job runs there and lifts it when the job ends"
_LOCK_CHOICE = (f"{o.LOCK_TAINT} is SUNK's lock, on the Nodes running Slurm jobs: it comes and goes with the jobs, so an "
                "agent that must run beside them (monitoring, logs) tolerates it, and one that must stay off Nodes "
                "running jobs is right not to; to run beside them: ")
"""Said of SUNK's lock: whether the agent should tolerate it is the agent's purpose, not a drift to undo."""


def _is_lock(taint: dict) -> bool:
    return taint.get("key") == o.LOCK_TAINT


RULE = Rule("daemonset-untolerated-taint", Status.WARNING, "nodes",
            "Nodes match the DaemonSet's selector but get no daemon Pod",
            "A NoSchedule/NoExecute taint on those Nodes is not tolerated (scoping narrows; tolerations widen).",
            "Add a toleration for the taint to the Pod template, if the agent belongs on those Nodes.",
            untolerated_taint, needs=("nodes",), reads=(Read.EVERY_NODE,))
