"""Benchmark: serve's re-diagnosis of one change, in process, on the large cluster of benchmarks/large_cluster.py.

    python benchmarks/rediagnose.py              # 5,000 Nodes, 50,000 other Pods, real-size objects
    python benchmarks/rediagnose.py --small      # 500 Nodes, 5,000 other Pods
    python benchmarks/rediagnose.py --profile    # and a cProfile of one re-diagnosis, by cumulative time

serve (sunkcheck.serve.service) lists and watches the test API server (tests/kubeapi.py) until ready; its watches
and diagnosis thread are then stopped, so the cache holds what serve holds and nothing else runs. Each
repetition taints another pool Node in the cache (as its watch's event would) and times the diagnosis the Loop
runs for it (Loop.diagnose: the snapshot, the read plan, the pipeline; then the metrics, as the first scrape
renders them; the JSON document is rendered when first asked for, not by the diagnosis).
Prints the medians and every figure, in wall time and in the CPU time of the diagnosing thread (on a shared
machine the wall time counts what other processes took meanwhile; the CPU time does not). Not a test: the
numbers go in docs/serve.md by hand.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import io
import json
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.large_cluster import build  # noqa: E402
from sunkcheck import objects as o  # noqa: E402
from sunkcheck.collect.kube import Kube  # noqa: E402
from sunkcheck.serve.cache import Cache  # noqa: E402
from sunkcheck.serve.loop import Loop  # noqa: E402
from sunkcheck.serve.service import Service  # noqa: E402
from sunkcheck.target import Target  # noqa: E402
from tests.kubeapi import FakeApi, kubeconfig  # noqa: E402

POOL = "slurm-cpu"


def settle(service: Service, timeout: float = 600.0) -> None:
    """Until serve is ready and its last diagnosis moved no watch, then its watches and loop stopped."""
    end = time.monotonic() + timeout
    while not (service.cache.ready and service.loop.published is not None and service.loop.published.complete):
        if time.monotonic() > end:
            raise SystemExit("serve never became ready")
        time.sleep(0.1)
    time.sleep(1.0)  # a last burst of events (a move of the watches) diagnosed
    service.loop.stop.set()
    service.loop.thread.join()
    service.watches.close()
    service.cache.take(0)


def pool_source(cache: Cache, node: str) -> tuple[object, dict]:
    """The watch that holds the Node `node`, and its copy there."""
    for source in cache.watched:
        if source.resource.plural == "nodes" and (held := cache._objects[source.name].get(("", node))) is not None:
            return source, held
    raise SystemExit(f"Node {node} not held")


def taint(cache: Cache, node: str, n: int) -> None:
    """A taint added to the Node `node`, as its watch's MODIFIED event puts it in the cache."""
    source, held = pool_source(cache, node)
    changed = copy.deepcopy(held)
    changed["spec"].setdefault("taints", []).append({"key": f"example.com/bench-{n}", "effect": "NoSchedule"})
    cache.apply(source, "MODIFIED", changed)  # type: ignore[arg-type]


def once(loop: Loop, cache: Cache, node: str, n: int) -> tuple[float, float]:
    """One taint re-diagnosed: (wall seconds, seconds of the diagnosing thread's CPU)."""
    taint(cache, node, n)
    start, cpu = time.perf_counter(), time.thread_time()
    published = loop.diagnose(cache.take(0))
    assert published is not None and published.judged >= 1, "the change was not diagnosed"
    assert published.metrics  # rendered at the first scrape, no longer by the diagnosis: timed as before
    took = time.perf_counter() - start, time.thread_time() - cpu
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="500 Nodes and 5,000 other Pods")
    parser.add_argument("--repeat", type=int, default=15, help="changes timed (each a taint on another pool Node)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one more re-diagnosis")
    args = parser.parse_args()
    nodes, pods = (500, 5_000) if args.small else (5_000, 50_000)
    snapshot = build(nodes, pods, real_sizes=True)
    pool = sorted(o.name(n) for n in snapshot.nodes or () if o.pool_of(n) == POOL)
    with tempfile.TemporaryDirectory() as tmp, FakeApi(snapshot) as api:
        api.bookmark_every = 60.0  # a real server's pace: no bookmark lands during the timings
        kube = Kube(str(kubeconfig(Path(tmp) / "kubeconfig", api.url)))
        with Service(kube, Target(), all_namespaces=True, log=lambda line: None) as service:
            started = time.perf_counter()
            settle(service)
            ready = time.perf_counter() - started
            loop, cache = service.loop, service.cache
            once(loop, cache, pool[0], 0)  # the first after the lists: what they left to derive, not one change
            times = [once(loop, cache, pool[(i * 97 + 1) % len(pool)], i + 1) for i in range(args.repeat)]
            if args.profile:
                profile = cProfile.Profile()
                profile.enable()
                once(loop, cache, pool[-1], args.repeat + 1)
                profile.disable()
                out = io.StringIO()
                pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(40)
                print(out.getvalue(), file=sys.stderr)
    print(json.dumps({"nodes": len(snapshot.nodes or ()), "pods": len(snapshot.pods or ()), "ready_s": round(ready, 1),
                      "rediagnosis_median_ms": round(statistics.median(t for t, _ in times) * 1000, 1),
                      "rediagnosis_cpu_median_ms": round(statistics.median(c for _, c in times) * 1000, 1),
                      "rediagnosis_ms": [round(t * 1000, 1) for t, _ in times],
                      "rediagnosis_cpu_ms": [round(c * 1000, 1) for _, c in times]}))


if __name__ == "__main__":
    main()
