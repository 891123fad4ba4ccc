"""What to inspect: which NodeSets, in which namespace, against which Node Pools, ignoring which rows."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from sunkcheck import objects as o
from sunkcheck.model import InputError


@dataclass(frozen=True)
class SlurmLogin:
    """Where and how to run `sinfo`: a login node over SSH, OpenSSH-style."""

    login: str
    """`[user@]host[:port]`, or a Host alias of the SSH config."""
    partition: str | None = None
    user: str | None = None
    keys: tuple[str, ...] = ()
    config: str | None = None
    """ssh_config path; None means ~/.ssh/config when it exists."""
    timeout: float = 10.0
    accept_new_host_key: bool = False


@dataclass(frozen=True)
class Target:
    nodeset: str | None = None
    """One NodeSet by name; None checks every NodeSet in scope."""
    daemonset: str | None = None
    """A plain DaemonSet to check instead of NodeSets."""
    namespace: str | None = None
    """None means every namespace (-A, or a snapshot run without -n)."""
    pools: tuple[str, ...] = ()
    """Node Pools the NodeSet is meant for; empty derives them from the NodeSet."""
    ignore: frozenset[str] = frozenset()
    """Symptom ids reported as suppressed."""
    slurm: SlurmLogin | None = None
    """Ask Slurm too (`sinfo` on a login node); None skips that step."""
    cluster: str = ""
    """Where a live run reads (`read_on`), for the error naming what is not there."""


EVERY_NODESET = "*"
"""meta.json's `nodesets` where a live check read every NodeSet of the cluster (else the namespace, or the names,
read): the rows ask whether another NodeSet holds a pool or a Node, whichever NodeSet is checked."""


def read_on(context: str, server: str) -> str:
    """Where a live run reads, as its errors name it: `context staging (https://...)`."""
    return f"context {context} ({server})"


def _on(where: str) -> str:
    return f" on {where}" if where else ""


def daemonsets_instead(names: list[str]) -> str:
    """What to check where there is no NodeSet: the DaemonSets there (those `--daemonset` takes), "" for none."""
    return f"; it holds DaemonSets ({', '.join(names)}): pass --daemonset {names[0]}" if names else ""


def select(objects: tuple[dict, ...], kind: str, target: Target, instead: str = "") -> list[dict]:
    """The NodeSets (or the DaemonSet) the target names, in namespace/name order; naming one that isn't
    there is an error that lists what is, nearest first; `instead`, given where there is none at all, ends it."""
    from sunkcheck.suggest import nearest_first

    wanted = target.daemonset if kind == "DaemonSet" else target.nodeset
    in_scope = [n for n in objects if target.namespace is None or o.namespace(n) == target.namespace]
    where = (f"namespace {target.namespace}" if target.namespace is not None else "any namespace") + _on(target.cluster)
    if not in_scope and target.namespace is not None:
        spaces = ", ".join(nearest_first(target.namespace, {o.namespace(n) for n in objects})) or "none"
        raise InputError(f"no {kind}s in {where} (namespaces with {kind}s there: {spaces}){instead}")
    if wanted is None:
        if not in_scope:
            raise InputError(f"no {kind}s in {where}{instead}")
        return sorted(in_scope, key=lambda n: (o.namespace(n), o.name(n)))
    chosen = [n for n in in_scope if o.name(n) == wanted]
    if not chosen:
        elsewhere = sorted(o.namespace(n) for n in objects if o.name(n) == wanted)
        hint = f"; it is in namespace {', '.join(elsewhere)}: pass -n" if elsewhere else ""
        known = ", ".join(nearest_first(wanted, {o.name(n) for n in in_scope})) or "none"
        raise InputError(f"{kind} {wanted} not found in {where} ({kind}s there: {known}){hint or instead}")
    if len(chosen) > 1:
        spaces = ", ".join(sorted(o.namespace(n) for n in chosen))
        raise InputError(f"{kind} {wanted} exists in several namespaces ({spaces}): pass -n")
    return chosen


def check_pools(nodepools: tuple[dict, ...] | None, nodes: tuple[dict, ...] | None, pools: tuple[str, ...],
                where: str = "") -> tuple[str, ...]:
    """--pool naming a pool that does not exist (on `where`, a live run's cluster) is an error listing those that do,
    nearest first. A pool
    exists when a Node Pool or a Node carries its name; without the Node Pools (not captured, or a 403) a
    pool no Node carries may still exist, empty: the returned notes say it could not be told, not refused."""
    if not pools:  # nothing to check: not a pass over thousands of Nodes
        return ()
    known = {o.name(p) for p in nodepools or ()} | {pool for n in nodes or () if (pool := o.pool_of(n))}
    unknown = [p for p in dict.fromkeys(pools) if p not in known]
    if not unknown:
        return ()
    if nodepools is None:
        return tuple(f"--pool {p}: no Node carries {o.POOL_LABEL}={p} and the Node Pools could not be read: "
                     "cannot tell whether it exists" for p in unknown)
    from sunkcheck.suggest import listed

    nearest = sorted(known, key=lambda k: (-max(difflib.SequenceMatcher(None, u, k).ratio() for u in unknown), k))
    raise InputError(f"--pool {', '.join(unknown)}: no such Node Pool{_on(where)} "
                     + (f"(Node Pools, nearest first: {listed(nearest)})" if known else "(the cluster has no Node Pool)"))


def check_node(nodes: tuple[dict, ...] | None, node: str, where: str = "") -> None:
    """explain --node naming a Node that does not exist (on `where`) is an error listing those that do, nearest
    first."""
    from sunkcheck.suggest import listed, nearest_first

    names = {o.name(n) for n in nodes or ()}
    if node not in names:
        raise InputError(f"--node {node}: no such Node{_on(where)} " + (
            f"(Nodes, nearest first: {listed(nearest_first(node, names))})" if names else "(the cluster has no Node)"))
