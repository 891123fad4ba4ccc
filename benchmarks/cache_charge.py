"""Benchmark: what serve's cache is charged when the read plan names every new Node's other Pods, in process, on the
large cluster of benchmarks/large_cluster.py right after a scale-up (2,000 Nodes, no slurmd Pod yet).

    python benchmarks/cache_charge.py                  # a wait's cache, the NodeSet's status at FEASIBLE 0
    python benchmarks/cache_charge.py --serve 1000     # serve's, FEASIBLE 1,000 of 2,000 (its status trailing)
    python benchmarks/cache_charge.py --small          # 500 Nodes, 5,000 other Pods

Each source is listed into the cache as its watch would list it (its selectors applied to the cluster's objects,
every object through the cache's listing), the Node watches the read plan names added until they stay as they
are, then the watch of every other workload's Pod. Prints the bytes charged (serve/cache.py `cost`, against its
BUDGET) after the Nodes and the other sources, after every other Pod (held packed), and after a snapshot (the Pods
on the Nodes the plan names, unpacked). Bytes are load-independent. Not a test: the figures go in
docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.large_cluster import build  # noqa: E402
from sunkcheck.collect.kube import unmanaged  # noqa: E402
from sunkcheck.serve.cache import BUDGET, Cache  # noqa: E402
from sunkcheck.serve.sources import NODES_EVERY, OTHERS, other_pod_sources, own_pod_selector, sources  # noqa: E402
from sunkcheck.serve.selectors import outside  # noqa: E402
from sunkcheck.serve.watch import Source  # noqa: E402
from sunkcheck.target import Target  # noqa: E402

TARGET = Target(nodeset="slurm-cpu-batch")


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", type=int, metavar="FEASIBLE", help="serve's cache (its plan reads every Node "
                        "at once), the status counting FEASIBLE Nodes; default: a wait's, at FEASIBLE 0")
    parser.add_argument("--small", action="store_true", help="500 Nodes and 5,000 other Pods")
    args = parser.parse_args()
    snap = build(500, 5_000, scaled_up=True, real_sizes=True) if args.small else \
        build(5_000, 50_000, scaled_up=True, real_sizes=True)
    nodeset = copy.deepcopy((snap.nodesets or ())[0])
    nodeset["status"] |= {"numberFeasible": args.serve or 0, "desiredNumberScheduled": args.serve or 0}
    objects = {"nodesets": [nodeset], "nodepools": list(snap.nodepools or ()), "nodes": list(snap.nodes or ()),
               "pods": list(snap.pods or ()), "events": list(snap.events or ())}
    static = tuple(s for s in sources(TARGET, None, own_pod_selector(TARGET)) if s.name not in (OTHERS, NODES_EVERY))
    waiting = args.serve is None
    cache = Cache(static, eager=not waiting)

    def listed(source: Source) -> None:
        items = [o for o in objects[source.resource.plural] if not outside(o, source.label_selector,
                                                                           source.field_selector)]
        items = sorted(items, key=lambda o: o["metadata"]["name"])[:1] if source.one else items
        with cache.listing(source) as keep:
            cache.replace(source, [keep(unmanaged(copy.deepcopy(i))) for i in items])

    for source in static:
        listed(source)
    while True:  # the Node watches the plan names, until they stay as they are (a wait holds every Node back)
        cache.snapshot(TARGET)
        wanted = [s for s in cache.node_watches or () if not (waiting and s.name == NODES_EVERY)]
        new = [s for s in wanted if s.name not in {w.name for w in cache.watched}]
        if not new:
            break
        for source in new:
            cache.watch(source)
            listed(source)
    print(f"the Nodes and the other sources: {mib(cache.budget[0])} of {mib(BUDGET)}; the plan names the other Pods "
          f"of {len(cache.pod_nodes or ())} Nodes")
    every, = other_pod_sources(None, TARGET, None)
    cache.watch(every)
    listed(every)
    print(f"and every other Pod, packed: {mib(cache.budget[0])}")
    pods = cache.snapshot(TARGET).pods or ()
    print(f"and the {len(pods)} Pods the snapshot holds, unpacked: {mib(cache.budget[0])}")


if __name__ == "__main__":
    main()
