"""Benchmark: a post-scale-up `check --wait` on watches, on the large cluster of benchmarks/large_cluster.py.

    python benchmarks/wait.py                # the pool's 2,000 Nodes join over 90 s, then their slurmd Pods over 90 s
    python benchmarks/wait.py --arrival 60   # ... over 60 s each
    python benchmarks/wait.py --small        # 500 Nodes (200 joining), 5,000 other Pods
    python benchmarks/wait.py --bare         # objects with only the fields the analysis reads

The cluster is the one benchmarks/large_cluster.py builds, real-size unless --bare, less the NodeSet's pool: its Node
Pool's target is 2,000 and none of its Nodes, nor their Pods, exists yet. `sunkcheck check --wait` starts; over
--arrival seconds the Nodes join, each with the Pods the cluster runs on it (node agents, other workloads), the Node
Pool's and the NodeSet's status counting them; then, over as long again, each Node's slurmd Pod is created Pending and
turns Ready a tick later, the NodeSet's status counting them. Reported: the bytes the wait read (its lists and every
watch event) against one `check` of the state it started in and of the converged state; how long after the last Pod
turned Ready (and the NodeSet's status counted it) the wait exited; its exit code, status and peak RSS. Both run from this
checkout (PYTHONPATH), as benchmarks/serve.py does. Not a test: the numbers go in docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.large_cluster import TOKEN, build  # noqa: E402
from benchmarks.serve import by_source  # noqa: E402
from sunkcheck.snapshot import Snapshot  # noqa: E402
from tests.kubeapi import FakeApi, kubeconfig, make_cert  # noqa: E402

POOL, NODESET, NAMESPACE = "slurm-cpu", "slurm-cpu-batch", "tenant-slurm"
POOL_LABEL = "compute.coreweave.com/node-pool"
TICK = 0.5
"""Seconds between two batches of changes."""
CHECK = ["check", "-n", NAMESPACE, "--nodeset", NODESET, "-o", "json"]


def read_bytes(api: FakeApi) -> int:
    return sum(r.size for r in api.log) + api.streamed


def status(nodeset: dict, joined: int, created: int, ready: int) -> dict:
    """The NodeSet as its controller reports `joined` Nodes, `created` slurmd Pods of which `ready` are Ready."""
    nodeset = copy.deepcopy(nodeset)
    nodeset["status"] |= {"desiredNumberScheduled": joined, "numberFeasible": joined,
                          "currentNumberScheduled": created, "numberReady": ready, "updatedNumberScheduled": created,
                          "numberDrain": 0, "numberMisscheduled": 0, "numberUnavailable": joined - ready}
    return nodeset


def pending(pod: dict) -> dict:
    """A slurmd Pod just created on its Node: not started, not Ready."""
    pod = copy.deepcopy(pod)
    pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"},
                                                        {"type": "Ready", "status": "False"}]}
    return pod


def batches(items: list, seconds: float) -> list[list]:
    """`items` cut into one batch a TICK over `seconds`."""
    n = max(int(seconds / TICK), 1)
    return [items[i * len(items) // n:(i + 1) * len(items) // n] for i in range(n)]


def scale_up(api: FakeApi, final: Snapshot, arrival: float) -> float:
    """The pool's Nodes join (with their Pods), then the slurmd Pods start: the monotonic time of the last change."""
    state = api.state
    nodes = [n for n in final.nodes or () if n["metadata"]["labels"].get(POOL_LABEL) == POOL]
    names = {n["metadata"]["name"] for n in nodes}
    on = {name: [p for p in final.pods or () if p["spec"].get("nodeName") == name] for name in names}
    slurmd = {name: next(p for p in pods if p["metadata"]["labels"].get("app.kubernetes.io/instance") == NODESET)
              for name, pods in on.items()}
    [nodeset] = final.nodesets or ()
    [pool] = [p for p in final.nodepools or () if p["metadata"]["name"] == POOL]
    joined = 0
    for batch in batches(nodes, arrival):
        time.sleep(TICK)
        joined += len(batch)
        state.put_all("nodes", batch)
        state.put_all("pods", [p for n in batch for p in on[n["metadata"]["name"]] if p is not slurmd[n["metadata"]["name"]]])
        state.put("nodepools", dict(pool, status=dict(pool["status"], currentNodes=joined)))
        state.put("nodesets", status(nodeset, joined, 0, 0))
    created: list[dict] = []
    starting: list[dict] = []
    for batch in [*batches(nodes, arrival), []]:
        time.sleep(TICK)
        new = [slurmd[n["metadata"]["name"]] for n in batch]
        state.put_all("pods", [pending(p) for p in new] + starting)  # the last tick's turn Ready
        created += new
        ready = len(created) - len(new)
        state.put("nodesets", status(nodeset, joined, len(created), ready))
        starting = new
    return time.monotonic()


def before(final: Snapshot) -> Snapshot:
    """`final` before the scale-up: the pool's target set, none of its Nodes (nor their Pods) there yet."""
    gone = {n["metadata"]["name"] for n in final.nodes or () if n["metadata"]["labels"].get(POOL_LABEL) == POOL}
    pools = tuple(dict(p, status=dict(p["status"], currentNodes=0)) if p["metadata"]["name"] == POOL else p
                  for p in final.nodepools or ())
    return replace(final, nodes=tuple(n for n in final.nodes or () if n["metadata"]["name"] not in gone),
                   pods=tuple(p for p in final.pods or () if p["spec"].get("nodeName") not in gone),
                   nodepools=pools, nodesets=tuple(status(ns, 0, 0, 0) for ns in final.nodesets or ()))


def check(api: FakeApi, env: dict) -> dict:
    """One `check` now: its bytes, seconds and status."""
    start, read = time.perf_counter(), read_bytes(api)
    proc = subprocess.run([sys.executable, "-m", "sunkcheck", *CHECK], env=env, capture_output=True, text=True,
                          check=False)
    return {"bytes": read_bytes(api) - read, "s": round(time.perf_counter() - start, 2),
            "status": json.loads(proc.stdout)["status"] if proc.stdout else proc.stderr.strip()[-300:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="500 Nodes and 5,000 other Pods")
    parser.add_argument("--bare", action="store_true", help="objects with only the fields the analysis reads")
    parser.add_argument("--arrival", type=float, default=90.0, metavar="SECONDS",
                        help="how long the Nodes take to join, and then their slurmd Pods to start")
    args = parser.parse_args()
    nodes, pods = (500, 5_000) if args.small else (5_000, 50_000)
    final = build(nodes, pods, real_sizes=not args.bare)
    out: dict = {"nodes": len(final.nodes or ()), "pods": len(final.pods or ()), "arrival_s": args.arrival,
                 "objects": "bare" if args.bare else "real-size"}
    with tempfile.TemporaryDirectory() as tmp, FakeApi(before(final), cert=make_cert(Path(tmp)), token=TOKEN) as api:
        api.bookmark_every = 60.0  # a real API server's pace
        config = kubeconfig(Path(tmp) / "kubeconfig", api.url, token=TOKEN, ca=str(Path(tmp) / "apiserver.crt"))
        env = dict(os.environ, PYTHONPATH=str(ROOT), KUBECONFIG=str(config))
        out["check_before"] = check(api, env)
        read, streamed, first, start = read_bytes(api), api.streamed, len(api.log), time.monotonic()
        streamed_by = dict(api.streamed_by)
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "sunkcheck", *CHECK, "--wait", "30m",
                                 "--interval", "30s"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        answered: dict = {}
        reader = threading.Thread(target=lambda: answered.update(zip(("out", "err"), proc.communicate(), strict=True)))
        reader.start()
        while not api.watching and proc.poll() is None:
            time.sleep(0.05)
        out["wait_watching_after_s"] = round(time.monotonic() - start, 2)
        last = scale_up(api, final, args.arrival)
        reader.join()
        ended = time.monotonic()
        out["wait"] = {"bytes": read_bytes(api) - read, "watch_event_bytes": api.streamed - streamed,
                       "list_bytes_by_source": by_source(api.log[first:]),
                       "watch_event_bytes_by_source": {k: n - streamed_by.get(k, 0) for k, n in api.streamed_by.items()
                                                       if n > streamed_by.get(k, 0)},
                       "exit_code": proc.returncode,
                       "answered_after_last_ready_s": round(ended - last, 2),
                       "status": json.loads(answered["out"])["status"] if answered.get("out") else None,
                       "peak_rss_mb": int(err[-1]) // 1024 if (err := answered.get("err", "").split()) else None,
                       "stderr_tail": answered.get("err", "").strip().splitlines()[-3:-1]}
        out["check_after"] = check(api, env)
    out["wait_bytes / check_after_bytes"] = round(out["wait"]["bytes"] / out["check_after"]["bytes"], 2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
