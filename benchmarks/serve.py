"""Benchmark: `sunkcheck serve` on the large cluster of benchmarks/large_cluster.py.

    python benchmarks/serve.py            # 5,000 Nodes, 50,000 other Pods, real-size objects
    python benchmarks/serve.py --small    # 500 Nodes, 5,000 other Pods
    python benchmarks/serve.py --bare     # objects with only the fields the analysis reads
    python benchmarks/serve.py --starts 5 # check, then serve's start, five times in turn: each pair's ratio

Measures, against the test API server (tests/kubeapi.py, TLS and a bearer token): one `check -A` (wall time, CPU
time, bytes read); serve's start to ready (/readyz), its CPU time then and the bytes of its lists, by source; one
change (a taint on one pool Node) until /metrics shows the new diagnosis, and that diagnosis' own duration; the
bytes its watches read in a quiet period; its peak and current RSS, and what its cache is charged of its budget.
Both run from this checkout (PYTHONPATH), not an installed copy: start-up costs differ a little from
large_cluster.py's. Not a test: the numbers go in the README by hand.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.large_cluster import TOKEN, build  # noqa: E402
from tests.kubeapi import FakeApi, Request, kubeconfig, make_cert  # noqa: E402


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except OSError as e:
        return getattr(e, "code", 0), ""


def metric(text: str, name: str) -> float | None:
    return next((float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + " ")), None)


def read_bytes(api: FakeApi) -> int:
    return sum(r.size for r in api.log) + api.streamed


def by_source(requests: list[Request]) -> dict[str, int]:
    """Bytes listed per resource and selector: which of serve's sources costs what."""
    found: dict[str, int] = {}
    for r in requests:
        if r.query.get("watch") != "1":
            key = " ".join([r.path.rsplit("/", 1)[-1], *(r.query[k] for k in ("labelSelector", "fieldSelector")
                                                         if k in r.query)])
            found[key] = found.get(key, 0) + r.size
    return found


def timed_check(api: FakeApi, env: dict) -> tuple[float, float, int]:
    """One `check -A`: its wall time, its CPU time (less sensitive than the wall time to what else runs), and the
    bytes it read."""
    before, start, cpu = read_bytes(api), time.perf_counter(), children_cpu()
    subprocess.run([sys.executable, "-m", "sunkcheck", "check", "-A", "-o", "json"], env=env, check=False,
                   stdout=subprocess.DEVNULL)
    return round(time.perf_counter() - start, 2), round(children_cpu() - cpu, 2), read_bytes(api) - before


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_s(pid: int) -> float:
    """The CPU seconds a running process has taken (user and system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def started(api: FakeApi, env: dict) -> tuple[str, subprocess.Popen, float, float, int, dict[str, int]]:
    """`serve -A` started and polled until /readyz says ready: its URL, its process, the time that took and its
    CPU time then, and the bytes its lists read, whole and by source."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    before, start, first = read_bytes(api), time.perf_counter(), len(api.log)
    proc = subprocess.Popen([sys.executable, "-m", "sunkcheck", "serve", "-A", "--listen", f"127.0.0.1:{port}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while fetch(url + "/readyz")[0] != 200:
        if proc.poll() is not None:
            raise SystemExit(f"serve ended with {proc.returncode} before it was ready")
        time.sleep(0.02)
    took = round(time.perf_counter() - start, 2)
    return url, proc, took, round(cpu_s(proc.pid), 2), read_bytes(api) - before, by_source(api.log[first:])


def rss_mb(pid: int) -> dict:
    status = Path(f"/proc/{pid}/status").read_text()
    return {k: int(line.split()[1]) // 1024 for line in status.splitlines() for k in ("VmHWM", "VmRSS")
            if line.startswith(k + ":")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="500 Nodes and 5,000 other Pods")
    parser.add_argument("--bare", action="store_true", help="objects with only the fields the analysis reads")
    parser.add_argument("--quiet", type=float, default=60.0, metavar="SECONDS", help="the quiet period measured")
    parser.add_argument("--starts", type=int, default=1, metavar="N",
                        help="one check, then serve's start to ready, N times in turn, each pair's ratio reported "
                             "(on a shared machine one pair says little); the last serve goes on to be measured")
    args = parser.parse_args()
    nodes, pods = (500, 5_000) if args.small else (5_000, 50_000)
    snapshot = build(nodes, pods, real_sizes=not args.bare)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out: dict = {"nodes": len(snapshot.nodes or ()), "pods": len(snapshot.pods or ()),
                 "objects": "bare" if args.bare else "real-size"}
    with tempfile.TemporaryDirectory() as tmp, FakeApi(snapshot, cert=make_cert(Path(tmp)), token=TOKEN) as api:
        env["KUBECONFIG"] = str(kubeconfig(Path(tmp) / "kubeconfig", api.url, token=TOKEN, ca=str(Path(tmp) / "apiserver.crt")))
        pairs, cpu = [], []
        for n in range(args.starts):
            check_s, check_cpu, out["check_bytes"] = timed_check(api, env)
            url, proc, ready_s, ready_cpu, out["serve_list_bytes"], out["serve_list_bytes_by_source"] = started(api, env)
            pairs.append((check_s, ready_s))
            cpu.append((check_cpu, ready_cpu))
            if n < args.starts - 1:
                proc.terminate()
                proc.wait(30)
        (out["check_s"], out["serve_ready_s"]), (out["check_cpu_s"], out["serve_ready_cpu_s"]) = pairs[-1], cpu[-1]
        if args.starts > 1:
            out["check_s_each"], out["serve_ready_s_each"] = [c for c, _ in pairs], [r for _, r in pairs]
            out["ready_to_check_each"] = [round(r / c, 2) for c, r in pairs]
            out["cpu_ready_to_check_each"] = [round(r / c, 2) for c, r in cpu]
        try:
            made = metric(fetch(url + "/metrics")[1], "sunkcheck_diagnoses_total")
            node = copy.deepcopy(next(n for n in api.state.objects["nodes"]
                                      if n["metadata"]["labels"].get("compute.coreweave.com/node-pool") == "slurm-cpu"))
            node["spec"].setdefault("taints", []).append({"key": "example.com/bench", "effect": "NoSchedule"})
            start = time.perf_counter()
            api.state.put("nodes", node)
            while (metric(text := fetch(url + "/metrics")[1], "sunkcheck_diagnoses_total") or 0) <= (made or 0):
                time.sleep(0.01)
            out["change_visible_s"] = round(time.perf_counter() - start, 3)
            out["rediagnosis_s"] = metric(text, "sunkcheck_diagnosis_duration_seconds")
            time.sleep(1)
            before = read_bytes(api)
            time.sleep(args.quiet)
            out[f"quiet_{args.quiet:g}s_bytes"] = read_bytes(api) - before
            out["serve_rss_mb"] = rss_mb(proc.pid)
            charged = metric(fetch(url + "/metrics")[1], "sunkcheck_serve_cache_bytes")
            out["serve_cache_charged_mb"] = round((charged or 0) / 2**20, 1)
        finally:
            proc.terminate()
            proc.wait(30)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
