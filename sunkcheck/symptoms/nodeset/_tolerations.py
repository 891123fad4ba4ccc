"""Tolerations to add before the pool is tainted, so the taint shuts out nothing that belongs there."""

from __future__ import annotations

from collections.abc import Sequence

from sunkcheck import objects as o
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.feasibility import (
    BLOCKING_EFFECTS,
    DAEMON_TOLERATIONS,
    HOST_NETWORK_TOLERATION,
    matches_affinity,
    tolerates,
)
from sunkcheck.symptoms import some
from sunkcheck.symptoms.fixes import (
    add_toleration,
    prose,
)
from sunkcheck.symptoms.nodeset._shared import daemonset_of


def tolerate(b: Binding, taint: dict, taken: frozenset[str] = frozenset(), whose: str = "the pool's") -> str:
    """The toleration the NodeSet lacks. SUNK's lock is no drift: SUNK puts it on the Nodes running Slurm jobs
    and lifts it after, so it is never removed from a Node nor set on the pool."""
    what = (f"SUNK's lock taint {prose(o.format_taint(taint))} (SUNK sets it on the Nodes running Slurm jobs: leave it "
            "there)" if taint.get("key") == o.LOCK_TAINT else f"{whose} taint {prose(o.format_taint(taint))}")
    return f"tolerate {what}: " + add_toleration(taint, b.pod_spec.get("tolerations") or [], taken=taken)


def tolerate_first(b: Binding, taint: dict, reached: list[dict], seen: list[dict], lead: str = "",
                    leaving: Sequence[dict] = ()) -> str:
    """What a fix tainting the pool must do first, so the taint shuts nothing out that belongs there: tolerate it in
    each DaemonSet whose Pods run on the `reached` Nodes (those the taint newly reaches: a Node already carrying it
    changes nothing, `nd.keeps_off`) and in each other NodeSet read whose affinity selects one of them, with the entry
    to add. An untolerated NoSchedule taint makes a Node no longer one the DaemonSet controller wants a Pod on: its
    running Pod stays, but a Node CKS adds or replaces later gets none; an untolerated NoExecute one also deletes the
    running Pod. Another NodeSet can no longer place a slurmd Pod there (its FEASIBLE drops). PreferNoSchedule never
    keeps a Pod off: nothing to say. Only the Pods of `seen` (of `reached`) were read (a live check lists the Pods of
    the Nodes its rows declare), so a DaemonSet running on none of them is not named, and the text says which Nodes
    were read; likewise which NodeSets were, when not all. Pods of a DaemonSet `leaving` the pool (its scope taken
    off it) need no toleration."""
    if taint.get("effect") not in BLOCKING_EFFECTS or not reached:
        return ""
    gone = {(o.namespace(p), daemonset_of(p)) for p in leaving}
    found: dict[tuple[str, str], tuple[dict, list[str]]] = {}
    for n in seen:
        for p in b.neighbours(n)[0]:
            if (ds := daemonset_of(p)) is None or o.is_terminal(p) or (o.namespace(p), ds) in gone:
                continue
            if any(tolerates(t, taint) for t in o.spec(p).get("tolerations") or ()):
                continue
            pod, hosts = found.setdefault((o.namespace(p), ds), (p, []))
            hosts.append(o.name(n))
    pools = [p for p in b.pools if any(o.pool_of(n) == p.name for n in reached)]
    total, names = sum(len(p.nodes) for p in pools), [o.name(n) for n in reached]
    where, scope = ("its Nodes", f"the {total} Nodes of {prose(', '.join(p.name for p in pools))}") if len(reached) >= total \
        else (f"{some(names)}, its Nodes that lack it", f"the {len(reached)} Nodes of "
              f"{prose(', '.join(p.name for p in pools))} it would reach")
    noexec = taint.get("effect") == "NoExecute"
    why = ("a DaemonSet that does not tolerate it " + ("has its Pods there deleted once the taint reaches them, and "
                                                       if noexec else "keeps its running Pods, but ")
           + "gets none on the Nodes CKS adds or replaces later")
    shut = ("a NodeSet that does not tolerate it can no longer place a slurmd Pod there: its FEASIBLE drops, and "
            + ("its Pods there are deleted" if noexec else "its Pods there count as MISSCHEDULED"))
    # what was not read comes first, under a heading of its own: a sentence after a YAML snippet reads as part of it
    notes = []
    if len(seen) < len(reached):
        notes.append((f"sunkcheck read the Pods of {some(o.name(n) for n in seen)} only, of {scope}: check the "
                      "DaemonSets on the others too" if seen else
                      f"sunkcheck did not read the Pods of {scope} ({some(names)}): check the DaemonSets on them")
                     + ("" if found else f" ({why})") + " and tolerate the taint in each that belongs on the pool; "
                     "this lists each one's node selector:\nkubectl get daemonsets -A -o wide\n")
    if b.peers_unread:
        notes.append(f"sunkcheck read {prose(b.peers_unread)}: check the other NodeSets on the pool and tolerate the "
                     f"taint in each that selects its Nodes ({shut}); this lists them:\nkubectl get nodesets -A\n")
    before = "" if notes else "before tainting the pool, "
    parts = ["before tainting the pool:\n", *notes] if notes else []
    if found:
        parts.append(f"{before}tolerate the taint in the DaemonSets running on {where} ({why}):\n")
    for (ns, ds), (pod, hosts) in sorted(found.items()):
        own = [t for t in o.spec(pod).get("tolerations") or () if t not in DAEMON_TOLERATIONS
               and t != HOST_NETWORK_TOLERATION]  # the controller adds those to every daemon Pod, not to the template
        parts.append(f"DaemonSet {prose(ns + '/' + ds)} (its Pod on {some(hosts)}): "
                     + add_toleration(taint, own, "its Pod template's tolerations") + "\n")
    peers = [(w, hosts) for w in b.peers
             if not any(tolerates(t, taint) for t in o.pod_spec(w).get("tolerations") or ())
             and (hosts := [o.name(n) for n in reached if matches_affinity(o.pod_spec(w), n)])]
    if peers:
        parts.append(f"{before}tolerate the taint in the other NodeSets that select its Nodes ({shut}):\n")
    for w, hosts in sorted(peers, key=lambda found: (o.namespace(found[0]), o.name(found[0]))):
        parts.append(f"NodeSet {prose(o.namespace(w) + '/' + o.name(w))} (it selects {some(hosts)}): "
                     + add_toleration(taint, o.pod_spec(w).get("tolerations") or [], "its node definition's tolerations")
                     + "\n")
    text = "".join(parts)
    return lead + text if text else ""  # the lead joins the step to the fix before it
