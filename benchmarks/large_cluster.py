"""Benchmark: sunkcheck's full live check against the runbook's kubectl commands, on a large cluster.

    python benchmarks/large_cluster.py              # 5,000 Nodes, 7 pools, 2,000-Node NodeSet, 50,000 other Pods
    python benchmarks/large_cluster.py --rtt 0.03   # the same, 30 ms away (every request and handshake)
    python benchmarks/large_cluster.py --small      # a quick smoke run (500 Nodes)
    python benchmarks/large_cluster.py --scaled-up  # right after a scale-up: 2,000 Nodes without slurmd Pods
    python benchmarks/large_cluster.py --bare       # objects with only the fields the analysis reads

Objects are as big as real ones unless --bare: a Node carries the kubelet's image list and every object
the managedFields an API server keeps. That is what both sides parse on a real cluster; kubectl's Tables
carry each object's metadata (the server's default includeObject=Metadata), managedFields included.

Both sides talk to the same test API server (tests/kubeapi.py) over TLS with a bearer token; the server counts
requests and response bytes. It runs in a process of its own, as a real one does, with the built cluster
frozen out of Python's garbage collector (a real API server has no collector walking 55,000 objects while it
writes a page): served from threads of the benchmark's process, the same code's ratio moved by 0.1 between
runs. sunkcheck runs as a user installs it (README, pipx or a venv): `pip install .` into a virtual
environment of its own, made for the run (or --venv DIR, kept for the next), and its `sunkcheck` executable,
bytecode compiled as pip does. Not this checkout's development install: an editable install adds a path finder
to every start, and a Python whose site-packages runs other .pth hooks (a sandbox's CA injector importing
certifi) charges their start-up to whatever Python program runs. The sides alternate, run by run, so that a
noisy machine slows both alike. Peak RSS is each child process's own.
Not a test: the numbers go in docs/performance.md by hand, with the machine they were measured on.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sunkcheck.snapshot import Snapshot  # noqa: E402
from tests.kubeapi import FakeApi, kubeconfig, make_cert  # noqa: E402

spec = importlib.util.spec_from_file_location("generate", ROOT / "fixtures" / "generate.py")
generate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(generate)

TOKEN = "benchmark-token"
# A healthy cluster shaped like a real one: the control-plane pool (the rest of the Nodes), a general pool
# and a spare pool share the NodeSet's instance type, and one Pod fills a spare Node. None of them is meant
# for the NodeSet, so none is a symptom, and none should cost the check a request.
POOLS = (("slurm-cpu", generate.GENOA, 0.40), ("k8s-cpu", generate.GENOA, 0.16), ("slurm-cpu-spare", generate.GENOA, 0.04),
         ("inference-h100", generate.H100, 0.16), ("slurm-gpu", generate.H100, 0.12),
         ("arm-batch", generate.GH200, 0.10))  # + cpu-control-plane


def real_size(obj: dict) -> None:
    """Pad an object to the size a real one has (what the analysis never reads, but must parse): a
    kubelet's image list (50 images, its default cap) on a Node, and every object's managedFields."""
    managers = ("kubelet", "kube-controller-manager", "node-problem-detector") if obj["kind"] == "Node" else (
        "kube-controller-manager", "kube-scheduler", "kubelet")
    obj["metadata"]["managedFields"] = [
        {"manager": m, "operation": "Update", "apiVersion": "v1", "time": generate.LATER, "fieldsType": "FieldsV1",
         "fieldsV1": {f"f:{k}": {} for k in ("metadata", "spec", "status", *(f"f:field-{i}" for i in range(40)))}}
        for m in managers]
    if obj["kind"] == "Node":
        obj["status"]["images"] = [{"names": [f"registry.example.com/team-{i % 9}/image-{i}@sha256:{i:064x}",
                                              f"registry.example.com/team-{i % 9}/image-{i}:v1.{i}.0"],
                                    "sizeBytes": 1_000_000 * (i + 1)} for i in range(50)]
    else:
        for container in obj["spec"]["containers"]:
            container["env"] = [{"name": f"SETTING_{i}", "value": f"value-{i}"} for i in range(20)]
            container["volumeMounts"] = [{"name": f"vol-{i}", "mountPath": f"/mnt/vol-{i}"} for i in range(6)]


def build(nodes: int, other_pods: int, scaled_up: bool = False, real_sizes: bool = False) -> Snapshot:
    """`scaled_up`: the pool has just grown by all its Nodes and no slurmd Pod exists yet. `real_sizes`:
    objects as big as real ones, not only the fields the analysis reads."""
    c = generate.Cluster(control_plane=generate.GENOA)  # cpu-control-plane (2 Nodes); every Node runs 2 daemon Pods
    made = {name: c.pool(name, itype, int(nodes * share))[1] for name, itype, share in POOLS}
    while len(c.nodes) < nodes:
        c.node("cpu-control-plane", generate.GENOA)
    c.pod("research", "trainer-0", made["slurm-cpu-spare"][0], {"cpu": "150", "memory": "1Ti"})  # the squatter
    slurm_nodes = [n for n in c.nodes if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu"]
    n_slurm = len(slurm_nodes)
    placed = 0 if scaled_up else n_slurm
    ns = c.nodeset("slurm-cpu-batch", generate.by_pool_name("slurm-cpu"), 
                   
                   (n_slurm, n_slurm) + (placed,) * 3 + (0, 0, n_slurm - placed))
    for n in slurm_nodes[:placed]:
        c.slurmd(ns, n)
    filler = other_pods - (len(c.pods) - placed)
    for i in range(max(filler, 0)):
        node = c.nodes[i % len(c.nodes)]
        c.pod(f"team-{i % 40}", f"worker-{i:06d}", node, {"cpu": "250m", "memory": "512Mi"},
              owner={"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": f"worker-{i % 400}", "uid": "x"}})
    if real_sizes:
        for obj in c.nodes + c.pods:
            real_size(obj)
    files = c.files()
    return Snapshot(**{k: tuple(v["items"]) for k, v in files.items()})


class Server:
    """The test API server in a child process of its own (forked: it inherits the built cluster), asked over
    a pipe what it served: `served(since)` is the response sizes of its requests from the `since`-th on."""

    def __init__(self, snapshot: Snapshot, cert: tuple[str, str], rtt: float) -> None:
        self.conn, child = multiprocessing.Pipe()
        self.process = multiprocessing.get_context("fork").Process(target=serve, args=(snapshot, cert, rtt, child),
                                                                   daemon=True)
        self.process.start()
        self.url = self.conn.recv()

    def served(self, since: int = 0) -> list[int]:
        self.conn.send(since)
        return self.conn.recv()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.send(None)
        self.process.join(10)


def serve(snapshot: Snapshot, cert: tuple[str, str], rtt: float, conn) -> None:
    gc.freeze()  # the built cluster is never garbage: a collection need not walk it
    with FakeApi(snapshot, cert=cert, token=TOKEN) as api:
        api.faults.latency, api.faults.connect_latency = rtt, 2 * rtt
        conn.send(api.url)
        while (since := conn.recv()) is not None:
            conn.send([r.size for r in api.log[since:]])


def installed(venv: Path | None, tmp: Path) -> Path:
    """The `sunkcheck` executable of this checkout as it is now, installed as a user installs it: in a virtual
    environment of its own (`venv`, made if missing and kept; else a new one in `tmp`)."""
    venv = venv or tmp / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # its dependencies, then the checkout as it is now over whatever an earlier run installed
    for args in ([str(ROOT)], ["--no-deps", "--force-reinstall", str(ROOT)]):
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args], check=True)
    subprocess.run([str(python), "-m", "compileall", "-q", str(venv / "lib")], check=False)
    exe = venv / "bin" / "sunkcheck"
    if not exe.exists():
        sys.exit(f"{exe}: not installed")
    return exe


def measure(argv: list[str], env: dict) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in MB, exit code) of one child process. GNU time reports the child's own
    peak: wait4 on a child forked from this large process would count pages it shares with us."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - start
    return wall, int(proc.stderr.strip().splitlines()[-1]) // 1024, proc.returncode


def preflight(check: list[str], runbook: list[list[str]], env: dict) -> None:
    """Each side once, untimed: a side that cannot run (say, a stale install) must stop the benchmark,
    not time how fast it fails."""
    for argv in runbook:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if proc.returncode:
            sys.exit(f"{' '.join(argv[:3])}... failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    proc = subprocess.run(check, env=env, capture_output=True, text=True, check=False)
    try:
        status = json.loads(proc.stdout)["status"]
    except (ValueError, KeyError, TypeError):
        status = None
    if status in (None, "unknown") or proc.returncode > 2:
        sys.exit(f"sunkcheck could not check ({proc.returncode}, status {status}): {proc.stderr.strip()[-500:]}")


def run_sides(api: Server, sides: dict[str, list[list[str]]], env: dict, repeat: int) -> dict:
    """Each side's median wall time over `repeat` runs of its whole sequence, the sides taking turns;
    requests and bytes of its last run."""
    walls: dict[str, list[float]] = {name: [] for name in sides}
    peak = dict.fromkeys(sides, 0)
    codes: dict[str, list[int]] = {}
    served: dict[str, list[int]] = {}
    for _ in range(repeat):
        for name, commands in sides.items():
            before, wall, codes[name] = len(api.served()), 0.0, []
            for argv in commands:
                w, rss, code = measure(argv, env)
                wall, peak[name] = wall + w, max(peak[name], rss)
                codes[name].append(code)
            walls[name].append(wall)
            served[name] = api.served(before)
    return {name: {"wall_s_median": round(statistics.median(walls[name]), 2), "wall_s_runs": [round(w, 2) for w in walls[name]],
                   "peak_rss_mb": peak[name], "requests": len(served[name]),
                   "bytes_read_mb": round(sum(served[name]) / 2**20, 1), "exit_codes": codes[name]}
            for name in sides}


def paired(first: list[float], second: list[float]) -> dict:
    """The first side against the second, run by run: on a machine whose speed drifts, each pair ran
    back to back, so their ratio is steadier than the ratio of the two medians."""
    ratios = [a / b for a, b in zip(first, second, strict=True)]
    quartiles = statistics.quantiles(ratios, n=4)[::2] if len(ratios) > 1 else ratios * 2  # one run: no spread
    return {"wall_ratio_median": round(statistics.median(ratios), 3),
            "wall_ratio_middle_half": [round(r, 3) for r in quartiles],
            "first_faster_in": f"{sum(r < 1 for r in ratios)}/{len(ratios)} runs"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="500 Nodes and 5,000 other Pods")
    parser.add_argument("--scaled-up", action="store_true",
                        help="the NodeSet's pool has just grown: its Nodes are usable and run no slurmd Pod yet")
    parser.add_argument("--bare", action="store_true",
                        help="objects with only the fields the analysis reads, not as big as real ones")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each side (the median is reported)")
    parser.add_argument("--venv", type=Path, metavar="DIR",
                        help="install sunkcheck into this virtual environment (made if missing, kept for the next run) "
                             "instead of a new one in a temporary directory")
    parser.add_argument("--rtt", type=float, default=0.0, metavar="SECONDS",
                        help="a network round trip to a real cluster: the server waits this long before every answer, "
                             "and twice as long before a new connection's first (TCP and TLS handshakes)")
    args = parser.parse_args()
    nodes, pods = (500, 5_000) if args.small else (5_000, 50_000)
    t0 = time.perf_counter()
    snapshot = build(nodes, pods, args.scaled_up, real_sizes=not args.bare)
    print(f"built {len(snapshot.nodes)} Nodes, {len(snapshot.pods)} Pods in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cert = make_cert(tmp)
        with Server(snapshot, cert, args.rtt) as api:
            config = kubeconfig(tmp / "kubeconfig", api.url, token=TOKEN, ca=cert[0])
            env = dict(os.environ, KUBECONFIG=str(config))
            kubectl = ["kubectl", "--cache-dir", str(tmp / "cache")]
            subprocess.run([*kubectl, "get", "--raw", "/version"], env=env, capture_output=True, check=True)  # warm
            runbook = [
                [*kubectl, "get", "nodepool", "slurm-cpu"],
                [*kubectl, "get", "nodes", "-l", "compute.coreweave.com/node-pool=slurm-cpu"],
                [*kubectl, "describe", "nodepool", "slurm-cpu"],
                [*kubectl, "get", "nodeset", "-n", "tenant-slurm"],
                [*kubectl, "get", "pods", "-n", "tenant-slurm", "-l", "app.kubernetes.io/instance=slurm-cpu-batch", "-o", "wide"],
            ]
            # the venv's console script by its path: a version manager's shim on PATH (pyenv's costs ~65 ms a
            # run) is not part of sunkcheck
            check = [str(installed(args.venv, tmp)), "check", "-n", "tenant-slurm", "--nodeset", "slurm-cpu-batch",
                     "-o", "json"]
            preflight(check, runbook, env)
            results = run_sides(api, {"sunkcheck check": [check], "kubectl runbook sequence": runbook}, env, args.repeat)
    comparison = paired(*(r["wall_s_runs"] for r in results.values()))
    print(json.dumps({"nodes": len(snapshot.nodes), "pods": len(snapshot.pods), "objects": "bare" if args.bare else "real-size",
                      "rtt_s": args.rtt, "results": results,
                      "sunkcheck / kubectl": comparison}, indent=2))


if __name__ == "__main__":
    main()
