"""Other workloads' Pods held as text: the watch of every such Pod holds them all (52,000 on the benchmarks'
cluster: 150 MB as dicts, charged 560 MiB, past serve's cache budget), and a diagnosis reads only those on the Nodes
the read plan names, unpacked as it reads them."""

from __future__ import annotations

import json
from collections.abc import Collection

from sunkcheck import objects as o
from sunkcheck.collect import pods as collect_pods
from sunkcheck.collect.answers import parsed_size

Key = tuple[str, str]
TEXT = "packed"
"""The key of a packed Pod's text."""
COST = 1280
"""Bytes charged for each packed Pod beyond its text: its stub (namespace, name, Node) and its places in the cache's
maps and its Node's index (about 1,120 bytes, measured with tracemalloc on the benchmarks' Pods)."""


def pack(pod: dict) -> dict:
    """The Pod slimmed (collect.pods.slim), as its JSON text beside a stub that files it: namespace, name, Node."""
    pod = collect_pods.slim(pod)
    meta, spec = pod["metadata"], pod["spec"]
    return {"metadata": {k: meta[k] for k in ("namespace", "name") if k in meta},
            "spec": {k: spec[k] for k in ("nodeName",) if k in spec},
            TEXT: json.dumps(pod, separators=(",", ":"))}


def cost(obj: dict) -> int:
    """What a packed Pod is charged held: COST and its text (0: `obj` is not packed)."""
    text = obj.get(TEXT)
    return COST + len(text) if isinstance(text, str) else 0


class Unpacked:
    """The packed Pods a diagnosis reads, unpacked, each with what it is charged (its parsed size, collect.answers'
    estimate from above). Kept while the Pod and its Node's place in the read plan are: the kept per-Node facts
    know a Pod by identity."""

    def __init__(self) -> None:
        self._pods: dict[Key, tuple[dict, dict, int]] = {}  # by key: the packed copy, the Pod, its charge

    def pod(self, key: Key, packed: dict) -> tuple[dict, int]:
        """The Pod `packed` holds, and what unpacking it adds to the charge (0: unpacked before)."""
        kept = self._pods.get(key)
        if kept is not None and kept[0] is packed:
            return kept[1], 0
        text = packed[TEXT]
        pod, charge = json.loads(text), parsed_size(text.encode())
        self._pods[key] = (packed, pod, charge)
        return pod, charge

    def keep(self, held: dict[Key, dict], nodes: Collection[str]) -> dict[Key, int]:
        """Drop the Pods no longer read (on other Nodes than `nodes`, or their packed copy no longer `held`: replaced,
        deleted, its source dropped): the charge to give back of each still held (a copy gone took its charge)."""
        given: dict[Key, int] = {}
        for key, (packed, _, charge) in list(self._pods.items()):
            if held.get(key) is not packed or o.node_name(packed) not in nodes:
                del self._pods[key]
                if held.get(key) is packed:
                    given[key] = charge
        return given
