"""serve's parts put together: a reflector per source feeding the cache, the diagnosis loop, the HTTP server."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import replace

from sunkcheck.collect.kube import DAEMONSETS, CallError, Kube
from sunkcheck.model import InputError, Source
from sunkcheck.serve.cache import Cache
from sunkcheck.serve.sources import NODES_EVERY, OTHERS, of_kind, other_pod_sources, own_pod_selector, sources
from sunkcheck.serve.http import Server
from sunkcheck.serve.loop import DEBOUNCE, Loop
from sunkcheck.serve.watch import WATCH_SECONDS, Health, Reflector
from sunkcheck.serve.watch import Source as WatchSource
from sunkcheck.target import Target


def listen_address(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `:PORT` (every interface) or `[V6]:PORT`; an InputError otherwise."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]") if host.startswith("[") else host
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"--listen {text!r}: expected HOST:PORT (for example 127.0.0.1:8080, or :8080 for every "
                         "interface)")
    return host or "0.0.0.0", int(port)


def watched_sources(kube: Kube, target: Target, all_namespaces: bool) -> tuple[Target, tuple[WatchSource, ...]]:
    """The target in its namespace and what a check of it reads, as watches; an InputError for a DaemonSet that
    is not there."""
    namespace = None if all_namespaces else (target.namespace or kube.namespace)
    target = replace(target, namespace=namespace)
    daemonset = None
    if target.daemonset:  # its Pods' selector comes from it (immutable in apps/v1): read once
        try:
            found = kube.named(DAEMONSETS, target.daemonset, namespace)
        except CallError as e:
            raise InputError(str(e)) from None
        daemonset = found[0] if found else None
        if daemonset is None:
            raise InputError(f"DaemonSet {target.daemonset} not found in "
                             f"{'namespace ' + namespace if namespace else 'any namespace'}")
    return target, sources(target, namespace, own_pod_selector(target, daemonset))


class Watches:
    """Reflectors feeding one cache, the Node watches and other workloads' Pods' following the read plan: serve's
    and --wait's. `moved` is told the watches' health, whole, each time they move."""

    def __init__(self, kube: Kube, target: Target, watched: tuple[WatchSource, ...],
                 watch_seconds: float = WATCH_SECONDS, waiting: bool = False):
        self.kube, self.target, self.watch_seconds = kube, target, watch_seconds
        self.keep_every_pod = waiting
        """Once other workloads' Pods are watched whole, keep that watch whatever the plan names next (it holds them
        all): --wait's, for the minutes of a scale-up, whose plan swings between every Pod and none."""
        # the Nodes and other workloads' Pods: watched where the read plan names them, once a judgement has; a
        # wait's plan selects Nodes first (Plan.eager), its watch of every Node held back while the state moves
        static = tuple(s for s in watched if s.name not in (OTHERS, NODES_EVERY))
        self.cache = Cache(static, eager=not waiting)
        self.stop = threading.Event()
        self.reflectors = [Reflector(kube, s, self.cache, self.stop, watch_seconds) for s in static]
        self.moved: Callable[[dict[str, Health]], None] = lambda health: None
        self.cache.refusing = self._relist

    @property
    def health(self) -> dict[str, Health]:
        """Each watch's health by source name: a new dict, never edited (a scrape reads either)."""
        return {r.source.name: r.health for r in self.reflectors}

    def _relist(self, name: str) -> None:
        """The cache dropped the source `name` to make room for another's objects: its watch lists again."""
        for r in self.reflectors:
            if r.source.name == name:
                r.relist()

    def start(self) -> None:
        for r in self.reflectors:
            r.thread.start()

    def close(self) -> None:
        self.stop.set()
        for r in self.reflectors:
            r.cancel()

    def follow(self, nodes: frozenset[str] | None, every_node: bool = True) -> bool:
        """Watch the Nodes the read plan names (the cache's node_watches) and other workloads' Pods on the Nodes
        `nodes` (the read plan's; None: the Nodes alone), and no others: a watch started for each new source,
        stopped for each gone (its objects dropped); whether the watches moved. The Pods follow once the Nodes
        stay as they are: the plan names them from the Nodes. Not `every_node`: the watch of every Node the plan
        names beside those it selects is held back (the plan judges from those meanwhile). Called by the one thread
        that judges."""
        node_watches = self.cache.node_watches
        if node_watches is None:
            return False
        if not every_node and len(node_watches) > 1:
            node_watches = tuple(s for s in node_watches if s.name != NODES_EVERY)
        if not self._move({s.name: s for s in node_watches}, NODES_EVERY):
            pods = () if nodes is None else self._covering(other_pod_sources(nodes, self.target, self.target.namespace))
            return nodes is not None and self._move({s.name: s for s in pods}, OTHERS)
        return True

    def _covering(self, pods: tuple[WatchSource, ...]) -> tuple[WatchSource, ...]:
        """The watches of other workloads' Pods to keep: `pods`, or the watch of every such Pod where it is kept."""
        every = tuple(r.source for r in self.reflectors if r.source.name == OTHERS)
        return every if self.keep_every_pod and every else pods

    def _move(self, wanted: dict[str, WatchSource], kind: str) -> bool:
        """The watches whose names start with `kind` made those `wanted`; whether any was started or stopped."""
        kept = [r for r in self.reflectors if not of_kind(r.source.name, kind) or r.source.name in wanted]
        have = {r.source.name for r in kept}
        if len(kept) == len(self.reflectors) and have >= set(wanted):
            return False
        for r in self.reflectors:
            if r not in kept:
                r.cancel()
                self.cache.unwatch(r.source.name)
        started = [Reflector(self.kube, s, self.cache, self.stop, self.watch_seconds) for name, s in wanted.items()
                   if name not in have]
        for r in started:
            self.cache.watch(r.source)
            r.thread.start()
        self.reflectors = kept + started
        self.moved(self.health)
        return True


class Service:
    """`with Service(...) as s:` lists, watches, diagnoses and serves until the block ends; `s.url` is its address."""

    def __init__(self, kube: Kube, target: Target, all_namespaces: bool, listen: tuple[str, int] = ("127.0.0.1", 0),
                 log: Callable[[str], None] = print, log_format: str = "text", debounce: float = DEBOUNCE,
                 watch_seconds: float = WATCH_SECONDS):
        self.target, watched = watched_sources(kube, target, all_namespaces)
        self.watches = Watches(kube, self.target, watched, watch_seconds)
        self.cache, self.stop = self.watches.cache, self.watches.stop
        self.loop = Loop(self.cache, self.target, self.watches.health, Source("live", kube.context, kube.server), log,
                         log_format, debounce, self.watches.follow, kube.clock.now,
                         kube.clock.latest)
        self.watches.moved = self._moved
        try:
            self.server = Server(listen, self.loop)
        except OSError as e:
            raise InputError(f"--listen {listen[0]}:{listen[1]}: {e.strerror or e}") from None
        host, port = str(self.server.server_address[0]), self.server.server_address[1]
        self.url = f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    @property
    def reflectors(self) -> list[Reflector]:
        return self.watches.reflectors

    def _moved(self, health: dict[str, Health]) -> None:
        self.loop.health = health  # replaced whole: a scrape reads either

    def __enter__(self) -> Service:
        self.watches.start()
        self.loop.thread.start()
        self.http = threading.Thread(target=self.server.serve_forever, name="http", daemon=True)
        self.http.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.stop.set()
        self.watches.close()
        self.server.shutdown()
        self.server.server_close()


def say(line: str) -> None:
    """A transition, one line on stdout, at once (a log pipeline reads it line by line)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
