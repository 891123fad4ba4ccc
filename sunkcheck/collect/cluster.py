"""Collect a Snapshot for a target from a live cluster: independent steps run concurrently, the server
filters, and Pods are listed per Node only where the resource check can change a verdict."""

from __future__ import annotations

import contextlib
import datetime
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from http import HTTPStatus
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

from sunkcheck import __version__
from sunkcheck import objects as o
from sunkcheck.collect import daemonset, events, nodepool, nodes, nodeset, pods
from sunkcheck.collect.kube import DAEMONSETS, NODES, NODESETS, CallError, Kube
from sunkcheck.model import InputError, Lasting
from sunkcheck.reads import Read
from sunkcheck.snapshot import ShapeError, Snapshot, check_items
from sunkcheck.target import EVERY_NODESET, Target, daemonsets_instead, select

T = TypeVar("T")

WORKERS = 8


@dataclass(frozen=True)
class Collected:
    snapshot: Snapshot
    errors: tuple[str, ...]
    """Steps that could not be read, and why (they are `unknown` in the report)."""
    unread: dict[str, str]
    """Why each resource that could not be read was not, briefly, for its steps' summaries (`why`)."""
    meta: dict
    """Where and when: written as meta.json beside a saved snapshot."""


class Planner(Protocol):
    """What the collector asks of a read plan (sunkcheck.plan.Plan): it reads, the plan decides."""

    @property
    def reads(self) -> frozenset[Read]: ...

    @property
    def every_node(self) -> bool: ...

    def selectors(self, nodesets: list[dict], nodepools: list[dict] | None,
                  pools: tuple[str, ...] = ()) -> list[str] | None: ...

    def more_pools(self, nodesets: list[dict], nodepools: list[dict] | None, pools: tuple[str, ...], own: list[dict],
                   found: list[dict]) -> str | None: ...

    def carriers(self, nodesets: list[dict], selected: list[dict]) -> list[str]: ...

    def settled(self, nodesets: list[dict], selected: list[dict], nodepools: list[dict] | None = None,
                pools: tuple[str, ...] = (), own: list[dict] | None = None) -> bool: ...

    def probes(self, workloads: list[dict], nodes: list[dict], own: list[dict], nodepools: list[dict] | None,
               pools: tuple[str, ...]) -> list[str]: ...

    def in_use(self, pod: dict) -> bool: ...

    def idle_probe(self, names: list[str], known: list[dict], found: list[dict],
                   firsts: Callable[[list[str]], dict[str, str]], pods_on: Callable[[set[str]], list[dict] | None],
                   ) -> tuple[dict[str, str], list[dict] | None, list[str]]: ...

    def pod_nodes(self, workloads: list[dict], nodes: list[dict], own: list[dict], nodepools: list[dict] | None,
                  pools: tuple[str, ...]) -> set[str]: ...


def collect(kube: Kube, target: Target, namespace: str | None, plan: Planner, record: bool = False,
            every_pod: bool = False, predicted: tuple[dict, ...] = ()) -> Collected:
    """`plan` says which Nodes and Pods to read (sunkcheck.plan, from what the rows declare: the caller
    makes it, so the collector runs no analysis); `namespace` None means every namespace;
    `record` also asks for what a saved snapshot's meta.json tells (the server version);
    `every_pod` lists every non-terminal Pod (explain: exact reasons on every
    Node) instead of only the Pods on Nodes where resources can change the verdict; `predicted` NodeSets
    (a what-if) count as workloads for that choice too."""
    errors: list[str] = []
    unread: dict[str, str] = {}

    def attempt(read: Callable[[], T], what: str) -> T | None:
        """What `read` returns; a failure, or an object its replay would refuse (Kube checks each as it
        arrives), leaves only the steps that need it unknown. `what` starts with the resource read."""
        try:
            return read()
        except (CallError, ShapeError) as e:
            line = f"{what}: {_missing_on(e, target)}" if isinstance(e, CallError) else str(e)
            errors.append(Lasting(line) if not isinstance(e, CallError) or e.lasting else line)
            resource = what.partition(" ")[0]
            unread[resource] = "; ".join(filter(None, (unread.get(resource), why(e))))
            return None

    def result(future: Future[T], what: str) -> T | None:
        return attempt(future.result, what)

    with ThreadPoolExecutor(WORKERS) as pool:
        kind = "DaemonSet" if target.daemonset else "NodeSet"
        peers_f: Future[nodeset.Peers] | None = None
        if target.daemonset:
            workloads_f = pool.submit(daemonset.fetch, kube, namespace, target.daemonset)
        else:
            workloads_f = pool.submit(nodeset.fetch, kube, namespace, target.nodeset)
            # the rows ask whether another NodeSet, in any namespace, holds a pool or a Node: -A alone reads them all
            if namespace is not None or target.nodeset:
                peers_f = pool.submit(nodeset.peers, kube, namespace, target.nodeset)
            pools_f = pool.submit(nodepool.fetch, kube)
            pool_events_f = pool.submit(events.for_nodepools, kube)
        version_f = pool.submit(kube.version) if record else None
        workload_events_f = pool.submit(events.for_workload, kube, kind, namespace)
        if target.nodeset:  # the Pods' selector is known already: don't wait for the NodeSet
            pods_f = pool.submit(pods.by_label, kube, namespace, _pod_selector([{"metadata": {"name": target.nodeset}}], kind))
        # a plain check may read fewer Nodes, once the NodeSets say which; anything else reads them all now
        selective = not (plan.every_node or record or every_pod or predicted)
        nodes_f = None if selective else pool.submit(nodes.fetch, kube, None, record)  # a saved snapshot: whole Nodes
        try:
            workloads = workloads_f.result()
        except CallError as e:
            if e.status == 404:
                _say_what_exists(kube, kind, target, namespace)
            raise InputError(_missing_on(e, target) if e.status == 404 else f"{e} on {target.cluster}"
                             if target.cluster else str(e), e.lasting) from None
        if not workloads and not predicted:  # a what-if may precede any NodeSet
            if namespace is not None:
                _say_what_exists(kube, kind, target, namespace)
            elif kind == "NodeSet" and (instead := _instead(kube, namespace)):  # none anywhere: what there is instead
                select((), kind, target, instead)
        if not target.nodeset:
            pods_f = pool.submit(pods.by_label, kube, namespace, _pod_selector(workloads, kind))
        peers = peers_f.result() if peers_f else nodeset.Peers([], EVERY_NODESET)
        if peers.failure is not None:  # no error: the checked NodeSets are read, only what others hold is unseen
            unread["nodesets"] = why(peers.failure)
        nodepools = None if target.daemonset else result(pools_f, "nodepools")
        selectors = plan.selectors(workloads, nodepools, target.pools) if selective else None
        if selectors is None and nodes_f is None:
            nodes_f = pool.submit(nodes.fetch, kube)
        selected = [pool.submit(nodes.fetch, kube, s) for s in selectors or ()]
        own_pods = result(pods_f, "pods")
        if own_pods is not None and not target.daemonset:  # before the plan: where they run is read as the labelled
            found = own_pods
            own_pods = _merge(found, [attempt(lambda: nodeset.unlabelled_pods(kube, workloads, found), "pods")])
        all_nodes = attempt(lambda: _nodes(kube, pool, plan, nodes_f, selected, workloads, own_pods or [], nodepools,
                                           target.pools), "nodes")
        relevant = set() if every_pod else plan.pod_nodes(workloads + list(predicted), all_nodes or [], own_pods or [],
                                                          nodepools, target.pools)
        read: set[str] = set()  # the Nodes whose Pods the snapshot holds: the read plan's, and the idle-pool probe's

        def read_on(names: set[str]) -> list[dict] | None:
            """The Pods on the Nodes `names`: a list of each, or one paged list of every Pod when fewer requests."""
            if pods.cheaper_everywhere(kube, len(names)):
                found = result(pool.submit(pods.everywhere, kube, names), "pods")
            else:
                per_node = {name: pool.submit(pods.on_node, kube, name) for name in sorted(names)}
                got = [result(f, f"pods on Node {n}") for n, f in per_node.items()]
                found = None if any(g is None for g in got) else [p for g in got for p in g or ()]
            if found is not None:
                read.update(names)
            return found

        def first_names(names: list[str]) -> dict[str, str]:
            """The first Node of each pool in `names`, in the server's order (a pool whose read fails is left out)."""
            firsts = {name: pool.submit(nodes.first_name, kube, selector) for name in names
                      if (selector := nodes.requirement(o.POOL_LABEL, "=", [name]))}
            return {name: node for name, f in firsts.items() if (node := result(f, "nodes"))}

        def idle_pools(names: list[str], known: list[dict], found: list[dict]) -> tuple[list[dict], list[dict] | None]:
            """The Nodes and Pods read, and the Nodes and Pods of each pool in `names` whose Pods on one of its Nodes show
            no workload. What cannot be read is an error, and its pool's Nodes are left out: no note from half a pool."""
            first, probe, idle = plan.idle_probe(names, known, found, first_names, lambda on: read_on(on - relevant))
            if probe is None:
                return known, found
            if not idle:  # the Pods that show the pools in use go along: without them, Nodes already read look idle
                return known, _merge(found, [probe])
            more = attempt(lambda: nodes.fetch(kube, nodes.requirement(o.POOL_LABEL, "in", idle), record), "nodes")
            more_pods = read_on({o.name(n) for n in more} - relevant - set(first.values())) if more else None
            if more is None or more_pods is None:
                return known, found
            by_name = {o.name(n): n for n in [*known, *more]}
            return sorted(by_name.values(), key=o.name), _merge(found, [probe, more_pods])

        if every_pod:
            found_pods = _merge(own_pods, [result(pool.submit(pods.everywhere, kube, None), "pods")])
        else:
            found_pods = _merge(own_pods, [read_on(relevant)])
            # another pool of the NodeSet's type: the Pods on one of its Nodes; its Nodes and theirs only if none is a workload
            probed = plan.probes(workloads + list(predicted), all_nodes or [], own_pods or [], nodepools, target.pools)
            if probed and all_nodes is not None and found_pods is not None:
                all_nodes, found_pods = idle_pools(probed, all_nodes, found_pods)
        if target.daemonset:
            event_lists = [result(workload_events_f, "events")]
        else:
            event_lists = [result(pool_events_f, "events"), result(workload_events_f, "events")]
        read_events = [e for e in event_lists if e is not None]
        all_events = None if len(read_events) < len(event_lists) else attempt(
            lambda: _once_each([x for e in read_events for x in e], "Event", "events"), "events")
        server_version = attempt(version_f.result, "version") if version_f else None
    snapshot = Snapshot(
        nodepools=_tuple(nodepools), nodes=_tuple(all_nodes),
        events=_tuple(all_events),
        nodesets=None if target.daemonset else tuple(nodeset.beside(workloads, peers)), pods=_tuple(found_pods),
        daemonsets=tuple(workloads) if target.daemonset else None, pod_nodes=None if every_pod else frozenset(read))
    snapshot = snapshot.dated(kube.clock.now(), kube.clock.latest())
    meta = {
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "context": kube.context, "server": kube.server, "serverVersion": server_version,
        "sunkcheck": __version__, "namespace": namespace or "*",
        "filters": {"pods": f"{_pod_selector(workloads, kind)} in {namespace or 'every namespace'}, plus " + (
            "every non-terminal Pod" if every_pod else f"non-terminal Pods on {len(relevant)} Node(s) where resources decide"),
                    "events": f"about NodePools, {kind}s and (Warning) Pods"},
        "errors": errors,
    }
    if not target.daemonset:  # a replay then knows whether any NodeSet was not read
        meta["nodesets"] = peers.scope or _names(workloads)
        meta["checked"] = [f"{o.namespace(n)}/{o.name(n)}" for n in workloads]  # whose Pods were listed: not the others'
    if not every_pod:  # and which Nodes' Pods were not
        meta["podNodes"] = sorted(read)
    return Collected(snapshot, tuple(errors), unread, meta)


def why(e: CallError | ShapeError) -> str:
    """`403 Forbidden, list events in slurm-prod`: what the server answered to which read, short enough for
    a step's summary (the error line has the whole message)."""
    if isinstance(e, ShapeError):
        return "an object the API server sent is malformed"
    path = e.path.partition("?")[0].strip("/").split("/")
    namespace = path[path.index("namespaces") + 1] if "namespaces" in path[:-2] else None
    rest = path[path.index("namespaces") + 2:] if namespace else path[2 if path[0] == "api" else 3:]
    asked = (f"get {rest[0]} {rest[1]}" if len(rest) > 1 else f"list {rest[0]}" if rest else f"GET /{'/'.join(path)}")
    asked += f" in {namespace}" if namespace else " cluster-wide"
    if e.status >= 400:
        with contextlib.suppress(ValueError):
            return f"{e.status} {HTTPStatus(e.status).phrase}, {asked}"
        return f"status {e.status}, {asked}"
    return f"{'timed out' if e.status == 0 else 'an answer sunkcheck cannot use'}, {asked}"


def _missing_on(e: CallError, target: Target) -> str:
    """A list's 404 (an API, its CRD, not installed) names the cluster first, not after its question."""
    return f"{target.cluster}: {e}" if e.status == 404 and target.cluster else str(e)


def _say_what_exists(kube: Kube, kind: str, target: Target, namespace: str | None) -> None:
    """A typo in the workload's name or namespace: raise the error listing what exists cluster-wide,
    nearest first (one more list), or, with no NodeSet anywhere, the DaemonSets in the namespace; when that list
    fails too, the caller's own error stands."""
    try:
        everything = tuple(kube.list(DAEMONSETS if kind == "DaemonSet" else NODESETS))
    except CallError:
        return
    instead = _instead(kube, namespace) if kind == "NodeSet" and not everything else ""
    select(everything, kind, replace(target, namespace=namespace), instead)


def _instead(kube: Kube, namespace: str | None) -> str:
    return daemonsets_instead(daemonset.names(kube, namespace))


def _nodes(kube: Kube, pool: ThreadPoolExecutor, plan: Planner, every: Future | None, selected: list[Future],
           workloads: list[dict], own: list[dict], nodepools: list[dict] | None, pools: tuple[str, ...]) -> list[dict]:
    """Every Node when `every` was asked for; else the union of the selected lists, (when declared) the Nodes
    the workload's Pods run on outside them, the pools those Nodes show it uses, and a Node carrying each reserved
    key the binding relies on that none of those carries, unless that leaves a read unsettled: then every Node."""
    if every is None:
        found = {o.name(n): n for f in selected for n in f.result()}
        hosts = sorted({n for p in own if (n := o.node_name(p))} - set(found)) if Read.POD_HOSTS in plan.reads else []
        found |= {o.name(n): n for n in pool.map(lambda name: kube.read(NODES, name), hosts) if n is not None}
        if more := plan.more_pools(workloads, nodepools, pools, own, list(found.values())):
            found |= {o.name(n): n for n in nodes.fetch(kube, more)}
        carriers = plan.carriers(workloads, list(found.values()))
        found |= {o.name(n): n for one in pool.map(lambda s: nodes.first(kube, s), carriers) for n in one}
        if plan.settled(workloads, list(found.values()), nodepools, pools, own):
            return sorted(found.values(), key=o.name)
        every = pool.submit(nodes.fetch, kube)
    return every.result()


def _once_each(items: list[dict], kind: str, what: str) -> list[dict]:
    """Lists Kube checked one by one, joined: an object in two of them (from a server that ignores a field
    selector) is one the replay of the saved file would refuse."""
    check_items(items, kind, what)
    return items


def _tuple(items: Iterable[dict] | None) -> tuple[dict, ...] | None:
    return None if items is None else tuple(items)


def _names(nodesets: list[dict]) -> str:
    """The NodeSets read, when neither every namespace's nor one namespace's were: `namespace/name, ...`."""
    return ", ".join(f"{o.namespace(n)}/{o.name(n)}" for n in nodesets)


def _pod_selector(workloads: list[dict], kind: str) -> str:
    if kind == "DaemonSet":
        return daemonset.selector(workloads[0]) if workloads else ""
    names = sorted({o.name(w) for w in workloads})
    return f"{o.INSTANCE_LABEL} in ({','.join(names)})" if names else o.INSTANCE_LABEL


def _merge(first: list[dict] | None, more: list[list[dict] | None]) -> list[dict] | None:
    """All Pods once each (a Pod on a listed Node may also be one of the workload's own); None when a list
    failed: Pods with a Node's missing would judge it free, here and in the replay of a saved snapshot."""
    if first is None or any(batch is None for batch in more):
        return None
    seen, merged = set(), []
    for batch in [first, *more]:
        for p in batch or ():
            key = (o.namespace(p), o.name(p))
            if key not in seen:
                seen.add(key)
                merged.append(p)
    return merged
