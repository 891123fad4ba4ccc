"""daemonset-untolerated-taint: selected Nodes a taint keeps the agent off."""

from __future__ import annotations

from collections import defaultdict

from sunkcheck import objects as o
from sunkcheck.analyze.daemonset import Scope
from sunkcheck.analyze.feasibility import taint_reason
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.symptoms.fixes import HAND_TAINT_CAUTION, add_toleration, prose
from sunkcheck.symptoms.nodeset._shared import hand_said, taint_source, untaint_hand


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
    tolerated = {text: add_toleration(taints[text], own, "the Pod template's tolerations", taken) for text in taints}
    hand = {text: _by_hand(s, taints[text], by_taint[text]) for text in taints}
    fixes = [f"{removal}\nor, if the agent must run there while the taint stays, tolerate it: {tolerated[text]}"
             for text, removal in sorted(hand.items()) if removal]
    others = [tolerated[text] for text, removal in sorted(hand.items()) if not removal]
    fixes += ["tolerate the taint in the Pod template if the agent belongs there: " + "\n".join(others)] if others else []
    return Match(tuple(evidence), "\n".join(fixes))


def _by_hand(s: Scope, taint: dict, names: list[str]) -> str:
    """The removal of a taint set by hand on every Node carrying it (a user taint in no nodeTaints of their Node
    Pools, read), recognised as the NodeSet rows do; empty for another taint. Someone set it for a reason sunkcheck
    cannot read (a Node taken aside for repair), so tolerating it is only the alternative."""
    by_pool: dict[str, list[str]] = defaultdict(list)
    for n in names:
        by_pool[o.pool_of(s.cluster.nodes[n]) or ""].append(n)
    pools = [(s.cluster.pool(name), on) for name, on in sorted(by_pool.items())]
    if any(taint_source(pool, taint) != "hand" for pool, _ in pools):
        return ""
    # no apostrophe in these words: before a quoted cluster string, pasted whole, it would end that string's quotes
    return (f"{some(names)} {'carry' if len(names) > 1 else 'carries'} {prose(o.format_taint(taint))}, set by hand "
            f"(no Node Pool sets it in its nodeTaints): remove it ({HAND_TAINT_CAUTION})"
            + "".join(hand_said(pool, taint) for pool, _ in pools) + ":\n"
            + "\n".join(untaint_hand(pool, taint, on) for pool, on in pools))


RULE = Rule("daemonset-untolerated-taint", Status.WARNING, "nodes",
            "Nodes match the DaemonSet's selector but get no daemon Pod",
            "A NoSchedule/NoExecute taint on those Nodes is not tolerated (scoping narrows; tolerations widen). SUNK's "
            "lock taint does not count: it sits on the Nodes running Slurm jobs while they run, and an agent that does "
            "not tolerate it stays off them by design.",
            "Remove a taint set by hand (in no Node Pool's nodeTaints) once whoever set it agrees; otherwise add a "
            "toleration for the taint to the Pod template, if the agent belongs on those Nodes.",
            untolerated_taint, needs=("nodes",), reads=(Read.EVERY_NODE,))
