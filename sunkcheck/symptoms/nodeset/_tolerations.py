"""Tolerations to add before the pool is tainted, so the taint shuts out nothing that belongs there."""

from __future__ import annotations

from collections.abc import Sequence

from sunkcheck import objects as o
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.feasibility import (BLOCKING_EFFECTS, DAEMON_TOLERATIONS, HOST_NETWORK_TOLERATION,
                                           matches_affinity)
from sunkcheck.symptoms import some
from sunkcheck.symptoms.fixes import add_toleration, prose, prose_list
from sunkcheck.symptoms.nodeset._shared import daemonset_of, tolerated_by


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
    daemons = _untolerating_daemons(b, taint, seen, leaving)
    peers = _untolerating_peers(b, taint, reached)
    why, shut = _left_out(taint)
    where, scope = _reach(b, reached)
    # what was not read comes first, under a heading of its own: a sentence after a YAML snippet reads as part of it
    notes = _unread(b, reached, seen, scope, "" if daemons else f" ({why})", shut)
    before = "" if notes else "before tainting the pool, "
    parts = ["before tainting the pool:\n", *notes] if notes else []
    if daemons:
        parts.append(f"{before}tolerate the taint in the DaemonSets running on {where} ({why}):\n")
    parts += [_daemon_toleration(taint, ns, ds, pod, hosts) for (ns, ds), (pod, hosts) in sorted(daemons.items())]
    if peers:
        parts.append(f"{before}tolerate the taint in the other NodeSets that select its Nodes ({shut}):\n")
    parts += [f"NodeSet {prose(o.namespace(w) + '/' + o.name(w))} (it selects {some(hosts)}): "
              + add_toleration(taint, o.pod_spec(w).get("tolerations") or [], "its node definition's tolerations") + "\n"
              for w, hosts in sorted(peers, key=lambda found: (o.namespace(found[0]), o.name(found[0])))]
    text = "".join(parts)
    return lead + text if text else ""  # the lead joins the step to the fix before it


def _untolerating_daemons(b: Binding, taint: dict, seen: list[dict], leaving: Sequence[dict],
                          ) -> dict[tuple[str, str], tuple[dict, list[str]]]:
    """The DaemonSets with a running Pod on the `seen` Nodes that does not tolerate `taint`, by namespace and name:
    one of their Pods and the Nodes they run on. Those `leaving` the pool are left out."""
    gone = {(o.namespace(p), daemonset_of(p)) for p in leaving}
    found: dict[tuple[str, str], tuple[dict, list[str]]] = {}
    for n in seen:
        for p in b.neighbours(n)[0]:
            ds = daemonset_of(p)
            if ds is not None and not o.is_terminal(p) and (o.namespace(p), ds) not in gone \
                    and not tolerated_by(o.spec(p).get("tolerations") or (), taint):
                found.setdefault((o.namespace(p), ds), (p, []))[1].append(o.name(n))
    return found


def _untolerating_peers(b: Binding, taint: dict, reached: list[dict]) -> list[tuple[dict, list[str]]]:
    """The other NodeSets read that do not tolerate `taint`, each with the `reached` Nodes its affinity selects."""
    return [(w, hosts) for w in b.peers if not tolerated_by(o.pod_spec(w).get("tolerations") or (), taint)
            and (hosts := [o.name(n) for n in reached if matches_affinity(o.pod_spec(w), n)])]


def _left_out(taint: dict) -> tuple[str, str]:
    """What an untolerated `taint` does to a DaemonSet and to another NodeSet: NoExecute also deletes their Pods."""
    noexec = taint.get("effect") == "NoExecute"
    why = ("a DaemonSet that does not tolerate it " + ("has its Pods there deleted once the taint reaches them, and "
                                                       if noexec else "keeps its running Pods, but ")
           + "gets none on the Nodes CKS adds or replaces later")
    shut = ("a NodeSet that does not tolerate it can no longer place a slurmd Pod there: its FEASIBLE drops, and "
            + ("its Pods there are deleted" if noexec else "its Pods there count as MISSCHEDULED"))
    return why, shut


def _reach(b: Binding, reached: list[dict]) -> tuple[str, str]:
    """The Nodes the taint newly reaches, in words: all of their pools' (`its Nodes`), or those lacking it."""
    pools = [p for p in b.pools if any(o.pool_of(n) == p.name for n in reached)]
    total, names = sum(len(p.nodes) for p in pools), prose_list(p.name for p in pools)
    if len(reached) >= total:
        return "its Nodes", f"the {total} Nodes of {names}"
    return (f"{some(o.name(n) for n in reached)}, its Nodes that lack it",
            f"the {len(reached)} Nodes of {names} it would reach")


def _unread(b: Binding, reached: list[dict], seen: list[dict], scope: str, why: str, shut: str) -> list[str]:
    """What sunkcheck did not read and the operator must check: the DaemonSets on the Nodes whose Pods were not
    read, the NodeSets not read."""
    notes = []
    if len(seen) < len(reached):
        notes.append((f"this check read the Pods of {some(o.name(n) for n in seen)} only, of {scope}: check the "
                      "DaemonSets on the others too" if seen else
                      f"this check did not read the Pods of {scope} ({some(o.name(n) for n in reached)}): check the "
                      "DaemonSets on them")
                     + why + " and tolerate the taint in each that belongs on the pool; "
                     "this lists each one's node selector:\nkubectl get daemonsets -A -o wide\n")
    if b.peers_unread:
        notes.append(f"this check read {prose(b.peers_unread)}: check the other NodeSets on the pool and tolerate the "
                     f"taint in each that selects its Nodes ({shut}); this lists them:\nkubectl get nodesets -A\n")
    return notes


def _daemon_toleration(taint: dict, ns: str, ds: str, pod: dict, hosts: list[str]) -> str:
    """The toleration a DaemonSet's Pod template lacks, beside the ones it has there (not those the controller adds
    to every daemon Pod)."""
    own = [t for t in o.spec(pod).get("tolerations") or () if t not in DAEMON_TOLERATIONS and t != HOST_NETWORK_TOLERATION]
    return (f"DaemonSet {prose(ns + '/' + ds)} (its Pod on {some(hosts)}): "
            + add_toleration(taint, own, "its Pod template's tolerations") + "\n")
