"""Memory proportional to what is used, measured as a child's peak resident memory: a
generous bound, not a timing test."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import test_hardening
from tests.conftest import FIXTURES, ROOT, run
from tests.kubeapi import FakeApi
from tests.test_hostile import Serve, peak_rss

login_node = test_hardening.login_node  # the fixture: an sshd whose every session runs a script
LoginNode = Callable[[str], list[str]]

SINFO_PEAK = """
import resource, sys
from sunkcheck import slurm
from sunkcheck.model import InputError
text = "slurm-a-001-001|cpu*|idle|none\\n" * int(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
try:
    slurm.parse(text, "text")
    print("parsed")
except InputError as e:
    print(e)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10) - before, len(text))
"""


def test_an_endless_sinfo_answer_is_refused_at_its_line_cap_without_a_copy_of_its_lines() -> None:
    """Two million lines (64 MB): split into lines first, the parse took three and a half times the answer."""
    p = subprocess.run([sys.executable, "-c", SINFO_PEAK, "2000000"], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    said, numbers = p.stdout.splitlines()
    grown, size = map(int, numbers.split())
    assert said == "sinfo: lists more than 262144 node names"
    assert grown < size // 4, (grown, size)


def test_a_list_past_the_item_cap_is_one_line_naming_it(tmp_path: Path) -> None:
    from sunkcheck.snapshot import MAX_ITEMS
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "healthy-pool-name", snap)
    nodes = [{"metadata": {"name": f"n{i}"}} for i in range(MAX_ITEMS + 1)]
    (snap / "nodes.json").write_text(json.dumps({"kind": "List", "items": nodes}))
    r = run("check", "--snapshot", str(snap))
    assert r.code == 3
    assert r.err == (f"sunkcheck: error: {snap / 'nodes.json'}: more than {MAX_ITEMS:,} Nodes, Kubernetes' own limit "
                     "for a cluster: refusing the list\n")


def test_a_live_list_is_capped_across_its_pages() -> None:
    from sunkcheck.snapshot import MAX_ITEMS, ShapeError, check_items

    page = [{"metadata": {"name": "n"}}]
    check_items(page, "Node", "nodes", first=MAX_ITEMS - 1)
    with pytest.raises(ShapeError, match=f"nodes: more than {MAX_ITEMS:,} Nodes"):
        check_items(page, "Node", "nodes", first=MAX_ITEMS)


def _dense_nodes(nodes: list[dict], per_node: int) -> list[dict]:
    """Nodes with `per_node` empty objects in a field sunkcheck never reads."""
    return [n | {"status": n.get("status", {}) | {"unread": [{}] * per_node}} for n in nodes]


def test_a_file_dense_with_empty_objects_is_refused_unparsed_in_bounded_memory(tmp_path: Path) -> None:
    """Nodes carrying millions of `{}` in an unread field: parsed, 42 MB took 1.64 GB (a MemoryError under a
    900 MB limit). Here 24 MB: refused in one line, before json builds any of them."""
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "healthy-pool-name", snap)
    doc = json.loads((snap / "nodes.json").read_text())
    doc["items"] = _dense_nodes(doc["items"], 1_000_000)
    (snap / "nodes.json").write_text(json.dumps(doc, separators=(",", ":")))
    size = (snap / "nodes.json").stat().st_size
    r, peak = peak_rss("check", "--snapshot", str(snap))
    assert r.returncode == 3 and r.stderr.startswith(f"sunkcheck: error: {snap / 'nodes.json'}: holds "), r.stderr
    assert "more than one in 8 bytes" in r.stderr and r.stderr.count("\n") == 0
    assert peak < 150 * 2**20 + 4 * size, (peak, size)


def test_a_live_answer_dense_with_empty_objects_leaves_only_its_steps_unknown(serve: Serve) -> None:
    from dataclasses import replace

    from sunkcheck import snapshot

    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    api = serve(replace(snap, nodes=tuple(_dense_nodes(list(snap.nodes or ()), 20_000))))
    doc = run("check", "-o", "json").json()
    steps = {s["name"]: s["status"] for s in doc["results"][0]["steps"]}
    # what reads the Nodes is unknown (the Node counts not made, never 0), what does not is still checked
    assert steps["nodes"] == steps["nodeset"] == steps["pods"] == "unknown" and steps["nodepool"] == "ok", steps
    assert any("/api/v1/nodes" in e and "more than one in 8 bytes" in e for e in doc["errors"]), doc["errors"]
    assert api.log


# --- live answers: parsed only within MAX_PARSED -------------------------------------------------------------

def _node_list(items: str, count: int) -> bytes:
    """A NodeList of `count` copies of the JSON text `items`, as an API server writes it."""
    return b'{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[' + b",".join([items.encode()] * count) + b"]}"


def _refused_live(serve: Serve, body: bytes, bound: int) -> tuple[str, list[str]]:
    """The Node list answered with `body`, whatever its limit: the nodes step alone is unknown, in one line naming
    the GET and the cap, the child's peak resident memory under `bound`; that line, and the limits asked."""
    api = serve("healthy-pool-name")
    api.faults.bodies["nodes"] = body
    r, peak = peak_rss("check", "-o", "json")
    assert r.returncode == 3 and "internal error" not in r.stderr and "MemoryError" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    steps = {s["name"]: s["status"] for s in doc["results"][0]["steps"]}
    # what reads the Nodes is unknown (the Node counts not made, never 0), what does not is still checked
    assert steps["nodes"] == steps["nodeset"] == steps["pods"] == "unknown" and steps["nodepool"] == "ok", steps
    said = [e for e in doc["errors"] if e.startswith("nodes: GET /api/v1/nodes?")]
    assert len(said) == 1 and "\n" not in said[0], doc["errors"]
    assert peak < bound, f"{peak >> 20} MiB for a {len(body) >> 20} MiB answer"
    return said[0], [q.query["limit"] for q in api.log if q.path == "/api/v1/nodes"]


def test_a_page_of_a_million_tiny_nodes_is_refused_unparsed_in_bounded_memory(serve: Serve) -> None:
    """One page of 1,000,000 Nodes of 27 bytes each (29 MB): parsed whole before the 150,000-item cap refused it,
    it took 667 MB and 13 s. Estimated before it is parsed, it is refused unparsed: the answer's own bytes and the
    interpreter."""
    from sunkcheck.collect.answers import MAX_PARSED

    body = _node_list('{"metadata":{"name":"n"}}', 1_000_000)
    said, limits = _refused_live(serve, body, (100 << 20) + 2 * len(body))
    assert limits == ["500", "250", "125", "62", "31", "15", "10"]  # too large at every limit: refused at the last
    assert "&limit=10: " in said, said
    assert said.endswith(f"once parsed ({len(body):,} bytes), more than {MAX_PARSED >> 20} MiB, the most sunkcheck "
                         "parses at once"), said


@pytest.mark.parametrize("unread", ["{}", '{"a":0}'], ids=["empty-objects", "one-key-objects"])
def test_a_node_list_of_42_mb_dense_with_objects_in_an_unread_field_is_refused_in_bounded_memory(serve: Serve,
                                                                                                 unread: str) -> None:
    """Nodes carrying millions of objects in a field sunkcheck never reads: parsed, 42 MB of `{}` took 1.64 GB.
    `{"a":0}` is as dense as the density rule lets through (one object in 8 bytes) and takes 24 times its size
    parsed: the estimate refuses both unparsed."""
    per_node = (42 << 20) // 20 // (len(unread) + 1)
    node = '{"metadata":{"name":"n%d"},"status":{"unread":[' + ",".join([unread] * per_node) + "]}}"
    body = b'{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[' + b",".join(
        (node % i).encode() for i in range(20)) + b"]}"
    assert len(body) > 42 << 20
    said, _ = _refused_live(serve, body, (100 << 20) + 2 * len(body))
    assert "once parsed" in said or "more than one in 8 bytes" in said, said


def test_the_parse_estimate_is_at_least_what_json_takes() -> None:
    """parsed_size bounds what json.loads allocates (its peak, traced) for real objects and for JSON written to
    take the most for its size, within about 2.5 times for real Nodes and Pods."""
    code = r"""
import json, sys, tracemalloc
from sunkcheck.collect.answers import parsed_size
from benchmarks.large_cluster import build
snap = build(500, 1500, real_sizes=True)
shapes = {
    "nodes": {"kind": "NodeList", "items": list(snap.nodes)[:500]},
    "pods": {"kind": "PodList", "items": list(snap.pods)[:500]},
    "tiny": [{"metadata": {"name": f"n{i}"}} for i in range(100000)],
    "one-key": [{"a": 0}] * 100000, "nested": [[[]]] * 100000, "empty": [{}] * 100000,
    "strings": [f"{i:x}" for i in range(100000)], "floats": [1.5] * 100000, "ints": list(range(1000, 101000)),
    "big-dict": {f"k{i}": 0 for i in range(100000)}, "unique-keys": [{f"{i:x}": 0} for i in range(100000)],
    "astral": [f"{i}\U0001F600" for i in range(100000)],
}
for name, doc in shapes.items():
    for text in (json.dumps(doc, separators=(",", ":")), json.dumps(doc, ensure_ascii=False, indent=1)):
        data = text.encode()
        decoded = data.decode()
        tracemalloc.start()
        json.loads(decoded)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(name, peak, parsed_size(data))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    for line in p.stdout.splitlines():
        name, peak, estimate = line.split()
        assert int(peak) <= int(estimate), line
        if name in ("nodes", "pods"):
            assert int(estimate) < 4 * int(peak), line


_FEATURES = [f"cpu-cpuid.{f}" for f in (
    "ADX AESNI AVX AVX2 AVX512BW AVX512CD AVX512DQ AVX512F AVX512VL AVX512VNNI AVX512BF16 AVX512IFMA AVX512VBMI "
    "AVX512VBMI2 AVX512BITALG AVX512VPOPCNTDQ AMXBF16 AMXINT8 AMXTILE CMPXCHG8 FMA3 FSRM FXSR FXSROPT GFNI HYPERVISOR "
    "IBPB LAHF MOVBE MOVDIR64B MOVDIRI OSXSAVE SERIALIZE SHA STIBP SYSCALL SYSEE TSXLDTRK VAES VMX VPCLMULQDQ WAITPKG "
    "WBNOINVD X87 XGETBV1 XSAVE XSAVEC XSAVEOPT XSAVES").split()]


def _gpu_node(template: dict, i: int) -> dict:
    """`template` as big as a GPU Node of a real CKS cluster (68 KB): 460 labels (node-feature-discovery's, the
    GPU operator's), each also in managedFields, 83 annotations, and the kubelet's 50 images with their digests."""
    meta = template["metadata"]
    name = f"gpu-{i:05d}"
    labels = meta["labels"] | {"kubernetes.io/hostname": name}
    labels |= {f"feature.node.kubernetes.io/{f}": "true" for f in _FEATURES}
    labels |= {f"feature.node.kubernetes.io/pci-{v:04x}.present": "true" for v in range(60)}
    labels |= {f"nvidia.com/gpu.{k}-{j}": f"value-{j}-{i}" for k in ("product", "memory", "family", "compute")
               for j in range(40)}
    labels |= {f"node.coreweave.cloud/setting-{j}": f"enabled-{j}" for j in range(180)}
    annotations = {f"nfd.node.kubernetes.io/feature-labels-{j}": ",".join(_FEATURES) for j in range(3)}
    annotations |= {f"node.coreweave.cloud/annotation-{j}": f"{j:x}" * 40 for j in range(80)}
    managed: dict[str, dict] = {f"f:{k}": {} for k in (*labels, *annotations)}
    images = [{"names": [f"registry.example.com/team-{j % 9}/image-{j}@sha256:{i * 50 + j:064x}",
                         f"registry.example.com/team-{j % 9}/image-{j}:v1.{j}.0"], "sizeBytes": 1_000_000 * (j + 1)}
              for j in range(50)]
    return template | {"metadata": meta | {"name": name, "labels": labels, "annotations": annotations, "managedFields": [
        {"manager": "nfd-master", "operation": "Update", "apiVersion": "v1", "time": "2026-11-02T09:14:27Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": managed}}}]},
                       "status": template["status"] | {"images": images}}


def _with_gpu_nodes(serve: Serve, count: int, pool: str = "slurm-cpu") -> tuple[FakeApi, list[dict], int]:
    """healthy-pool-name served with `count` GPU Nodes more, in `pool`: the API server, those Nodes, and how many
    Nodes the NodeSet's pool (slurm-cpu) then holds."""
    from dataclasses import replace

    from sunkcheck import snapshot

    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    nodes = snap.nodes or ()
    template = next(n for n in nodes if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu")
    template = template | {"metadata": template["metadata"] | {
        "labels": template["metadata"]["labels"] | {"compute.coreweave.com/node-pool": pool}}}
    big = [_gpu_node(template, i) for i in range(count)]
    in_pool = sum(n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu" for n in (*nodes, *big))
    return serve(replace(snap, nodes=(*nodes, *big))), big, in_pool


def test_a_page_of_large_real_nodes_is_read_whole_without_what_is_never_read(serve: Serve) -> None:
    """1,000 GPU Nodes of 68 KB each: 58 KB without the image lists, a page of 500 estimated at 197 MiB, past
    MAX_PARSED, was asked again with half the limit, six requests for the Node list. Their managedFields (each label
    again) are cut too: 31 KB a Node, a page of 500 estimated at 69 MiB, read in three requests, and every Node read
    in memory bounded by what is kept."""
    from sunkcheck.collect.answers import MAX_PARSED, parsed_size
    from sunkcheck.collect.cuts import empty
    from sunkcheck.collect.kube import PAGE
    from sunkcheck.collect.nodes import image_lists, unread

    api, big, in_pool = _with_gpu_nodes(serve, 1000)
    assert 67_000 < len(json.dumps(big[0])) < 69_000
    page, without_images = (bytearray(json.dumps({"items": big[:PAGE]}).encode()) for _ in range(2))
    empty(page, unread(page))
    empty(without_images, image_lists(without_images))
    assert parsed_size(page) < MAX_PARSED / 2 < MAX_PARSED < parsed_size(without_images)
    r, peak = peak_rss("check", "-o", "json")
    doc = json.loads(r.stdout)
    assert doc["errors"] == [], doc["errors"]
    steps = {s["name"]: s for s in doc["results"][0]["steps"]}
    assert steps["nodes"]["status"] == "ok" and steps["nodes"]["counts"]["nodes"] == in_pool, steps["nodes"]
    asked = [(q.query["limit"], q.query.get("continue")) for q in api.log if q.path == "/api/v1/nodes"]
    assert [limit for limit, _ in asked] == ["500"] * 3 and len({token for _, token in asked}) == 3, asked
    assert peak < 400 << 20, f"{peak >> 20} MiB"  # it peaked at 211 MiB (219 in pages of 250), holding 1,008 Nodes


@pytest.mark.parametrize("cap, wait, limits", [
    ("MAX_RESPONSE", False, [500, 250, 125, 62, 31, 15, 15, 15, 15]),  # the pool's 48 Nodes, 40 of them large
    ("MAX_PARSED", True, [500, 250, 125, 62, 31, 15, 15, 15, 15]),  # the same Nodes, by the pool's selector
], ids=["too-large-to-read", "too-large-to-parse-watched-wait"])
def test_a_page_too_large_is_asked_again_halved_down_to_one_that_fits(serve: Serve, monkeypatch: pytest.MonkeyPatch,
                                                                      cap: str, wait: bool, limits: list[int]) -> None:
    """A page past MAX_RESPONSE, like one estimated past MAX_PARSED, is asked again with half the limit from the
    same continue token until it fits, and the list goes on at that limit; `--wait` on watches (serve's reflectors)
    lists the same way (the pool's Nodes, by its selector as the read plan names them). The caps lowered to 20 of
    these Nodes: 500, 250, 125 and 62 hold them all, 31 large ones are still too many."""
    from sunkcheck.collect import answers

    api, big, in_pool = _with_gpu_nodes(serve, 40)
    from sunkcheck.collect.cuts import empty
    from sunkcheck.collect.nodes import unread

    node = json.dumps(big[0]).encode()
    parsed = bytearray(node)  # what is parsed of it: its image list and managedFields are cut first, by check and serve
    empty(parsed, unread(parsed))
    assert len(parsed) < len(node)
    monkeypatch.setattr(answers, cap, 20 * (len(node) if cap == "MAX_RESPONSE" else answers.parsed_size(parsed)))
    r = run("check", *(["--wait", "8s"] if wait else []), "-o", "json")  # room for every list, on a busy machine too
    # every Node read and no page refused; the new Nodes run no slurmd Pod, which their NodeSet's status does not
    # count: a check reports them missing, a wait ends unconverged
    assert r.code == 1 and r.json()["errors"] == [], r.err
    if not wait:
        assert [s["id"] for s in r.json()["results"][0]["symptoms"]] == ["slurmd-pods-missing"], r.out
    steps = {s["name"]: s for s in r.json()["results"][0]["steps"]}
    assert steps["nodes"]["counts"]["nodes"] == in_pool, steps["nodes"]
    asked = [q.query for q in api.log if q.path == "/api/v1/nodes" and "watch" not in q.query]
    assert [int(q["limit"]) for q in asked] == limits, asked
    for page, after in itertools.pairwise(asked):  # a page asked again smaller carries the same token
        assert (after.get("continue") == page.get("continue")) == (after["limit"] != page["limit"]), asked
    if wait:
        assert any(q.path == "/api/v1/nodes" and "watch" in q.query for q in api.log)


SINFO_CHECKED = """
import resource, sys
from sunkcheck.collect.sinfo import checked
from sunkcheck.model import InputError
size, fmt = int(sys.argv[1]), sys.argv[2]
item = b'{"name":"a","state":0},' if fmt == "json" else b"slurm-a-001-001|cpu*|idle|none\\n"
answer = (b'{"sinfo":[' if fmt == "json" else b"") + item * (size // len(item))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
try:
    checked(answer, fmt)
    print("parsed")
except InputError as e:
    print(e)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10) - before, len(answer))
"""


@pytest.mark.parametrize("size, fmt, said", [
    (250 << 20, "json", "sinfo: more than 64 MiB of output"),
    (250 << 20, "text", "sinfo: more than 64 MiB of output"),
    (60 << 20, "json", "once parsed, more than 192 MiB, the most sunkcheck parses at once"),
    (60 << 20, "text", "sinfo: lists more than 262144 node names"),
], ids=["json-250MB", "text-250MB", "json-60MB-dense", "text-60MB"])
def test_a_large_sinfo_answer_is_refused_at_its_caps_in_bounded_memory(size: int, fmt: str, said: str) -> None:
    """A 250 MB sinfo answer took 822 MB. The SSH read stops at MAX_OUTPUT (64 MiB) and keeps the same cap as
    this check of what it read; within it, `--json` is estimated before it is parsed and the text form parsed
    a line at a time to its line cap: neither takes more than a quarter of the answer on top of it."""
    p = subprocess.run([sys.executable, "-c", SINFO_CHECKED, str(size), fmt], capture_output=True, text=True,
                       timeout=120, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    message, numbers = p.stdout.splitlines()
    grown, length = map(int, numbers.split())
    assert message.endswith(said), message
    assert grown < length // 4, (grown, length)


def test_the_cronjobs_memory_limit_holds_the_documented_cluster_and_every_cap() -> None:
    """deploy/cronjob.yaml's limit: twice the peak docs/limits.md gives for the CronJob's command on its largest
    cluster, and more than the interpreter (64 MiB) with every answer the caps let a run hold at once."""
    import re

    import yaml

    from sunkcheck.collect.answers import MAX_IN_FLIGHT, MAX_PARSED

    docs = (ROOT / "docs" / "limits.md").read_text()
    cronjob = next(d for d in yaml.safe_load_all((ROOT / "deploy" / "cronjob.yaml").read_text()) if d["kind"] == "CronJob")
    container, = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    limit = container["resources"]["limits"]["memory"]
    assert limit.endswith("Mi") and f"limits the container to {limit}" in docs, limit
    limit_mib = int(limit.removesuffix("Mi"))
    measured = [int(m) for m in re.findall(r"peaked at (\d+) MiB", docs[docs.index("**The CronJob.**"):])]
    assert len(measured) == 2 and 2 * max(measured) <= limit_mib, (measured, limit)
    assert 64 + (MAX_IN_FLIGHT + MAX_PARSED) / 2**20 < limit_mib


def test_a_250_mb_sinfo_answer_is_read_no_further_than_its_cap_in_bounded_memory(serve: Serve, login_node: LoginNode) -> None:
    """A login node printing 250 MB (both forms) over real SSH: the read stops at 64 MiB, and the Slurm step
    alone is unknown, in one line; the run's peak stays under 100 MiB beyond the cap (it took 822 MB)."""
    from sunkcheck.collect.sinfo import MAX_OUTPUT

    serve("healthy-pool-name")
    r, peak = peak_rss("check", "-o", "json", *login_node("head -c 262144000 /dev/zero | tr '\\0' x\n"))
    assert r.returncode == 3 and "internal error" not in r.stderr, r.stderr
    steps = {s["name"]: s for s in json.loads(r.stdout)["results"][0]["steps"]}
    assert steps["sinfo"]["status"] == "unknown" and steps["nodeset"]["status"] == "ok"
    assert steps["sinfo"]["summary"].endswith("printed more than 64 MiB: refusing the rest"), steps["sinfo"]["summary"]
    assert peak < MAX_OUTPUT + (100 << 20), f"{peak >> 20} MiB"


POOL = "compute.coreweave.com/node-pool"
SERVE_BUDGET = """import os, runpy, sys
sys.path.insert(0, os.getcwd())
from sunkcheck.serve import cache
cache.BUDGET = int(sys.argv[1])
sys.argv = ["sunkcheck", *sys.argv[2:]]
runpy.run_module("sunkcheck", run_name="__main__", alter_sys=True)
"""


def _vm(pid: int, field: str) -> int:
    """A /proc/PID/status figure (VmHWM: the peak resident memory), in bytes."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return int(next(line for line in status if line.startswith(field + ":")).split()[1]) << 10


class ServeChild:
    """`sunkcheck serve -A` in a child process, its cache's budget `budget`, asked over HTTP what it says."""

    def __init__(self, budget: int) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.url = f"http://127.0.0.1:{s.getsockname()[1]}"
        self.proc = subprocess.Popen([sys.executable, "-c", SERVE_BUDGET, str(budget), "serve", "-A", "--listen",
                                      self.url.removeprefix("http://")], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))

    def answer(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return 0, ""

    def state(self) -> tuple[str, list[str], int, str]:
        """The status and errors /api/v1/check says, /readyz's code, and /metrics' sunkcheck_up line."""
        code, doc = self.answer("/api/v1/check")
        found: dict = json.loads(doc) if code == 200 else {"status": "", "errors": []}
        metrics = self.answer("/metrics")[1]
        up = next((line for line in metrics.splitlines() if line.startswith("sunkcheck_up ")), "")
        return found["status"], found["errors"], self.answer("/readyz")[0], up

    def until(self, wanted: Callable[[tuple[str, list[str], int, str]], bool], timeout: float) -> tuple:
        end, now = time.monotonic() + timeout, self.state()
        while not wanted(now) and time.monotonic() < end:
            time.sleep(0.5)
            now = self.state()
        return now

    def stop(self) -> str:
        """Its stderr, once stopped."""
        self.proc.terminate()
        return self.proc.communicate(timeout=30)[1].decode()


def test_serve_under_a_watch_flood_stays_in_its_budget_says_why_and_recovers(serve: Serve, tmp_path: Path) -> None:
    """Tiny Nodes of the NodeSet's pool, then tiny slurmd Pods on one of its Nodes, thousands streamed by the
    watches: each about 7 KB once held and diagnosed, 150,000 of them per source fit the object cap and took 1.4 GB,
    past deploy/serve.yaml's limit. Charged to one byte budget (lowered here, as its share of a real limit), the
    flooded source is refused past it: the target UNKNOWN with the reason, sunkcheck_up 0, /readyz 503, the peak
    within the budget; and all of it clears once the flood is deleted."""
    from tests.kubeapi import _key

    budget = 48 << 20
    api = serve("healthy-pool-name")
    api.bookmark_every = 0.2
    node = next(n for n in api.state.objects["nodes"] if n["metadata"]["labels"].get(POOL) == "slurm-cpu")
    floods = {
        "nodes": [{"metadata": {"name": f"flood-{i:05d}", "labels": {POOL: "slurm-cpu"}}} for i in range(12_000)],
        "pods": [{"metadata": {"name": f"flood-{i:05d}", "namespace": "tenant-slurm", "labels": {
            "app.kubernetes.io/instance": "slurm-cpu-batch", "app.kubernetes.io/name": "slurmd"}},
            "spec": {"nodeName": node["metadata"]["name"], "containers": [{"name": "slurmd"}]},
            "status": {"phase": "Running"}} for i in range(12_000)],
    }
    child = ServeChild(budget)
    try:
        healthy = child.until(lambda s: s[0] == "ok" and s[2] == 200, 60)
        assert healthy[:3] == ("ok", [], 200), healthy
        for plural, flood in floods.items():
            api.state.put_all(plural, flood)
            flooded = child.until(lambda s: s[0] == "unknown" and s[3] == "sunkcheck_up 0", 60)
            status, errors, ready, up = flooded
            assert status == "unknown" and ready == 503 and up == "sunkcheck_up 0", flooded
            said = [e for e in errors if f"past its {budget >> 20} MiB budget" in e]
            assert len(said) == 1 and said[0].startswith(f"{plural}: "), errors
            assert child.proc.poll() is None
            api.state.delete_all(plural, {_key(o) for o in flood})
            recovered = child.until(lambda s: s[0] == "ok" and s[2] == 200, 60)  # listed again, within budget
            assert recovered[:3] == ("ok", [], 200) and recovered[3] == "sunkcheck_up 1", recovered
        peak = _vm(child.proc.pid, "VmHWM")
    finally:
        err = child.stop()
    assert "Traceback" not in err, err
    assert peak < (80 << 20) + budget, f"{peak >> 20} MiB"


@pytest.mark.parametrize("plurals", [("nodes",), ("nodes", "nodesets", "pods")], ids=["one", "three-at-once"])
def test_a_watch_event_larger_than_any_object_is_refused_unparsed_and_its_source_named(
        serve: Serve, plurals: tuple[str, ...]) -> None:
    """A pool Node given a 40 MiB annotation (etcd stores 1.5 MiB at most: only a hostile server sends it), or the
    NodeSet and one of its Pods too: each watch event was read, parsed, measured through two more copies and held,
    serve's peak going up by about 5 times its size (60 MiB: 39 to 347 MB; three at once, 601 MB), the cache
    charged for it, and nothing said. The event is refused at answers.MAX_OBJECT unparsed, the list then asked
    refuses the object before it is kept (one copy measured at a time): each source named, the target UNKNOWN,
    sunkcheck_up 0, /readyz 503; back once the objects are."""
    size = 40 << 20
    api = serve("healthy-pool-name")
    api.bookmark_every = 0.2
    objs = {"nodes": next(n for n in api.state.objects["nodes"] if n["metadata"]["labels"].get(POOL) == "slurm-cpu"),
            "nodesets": api.state.objects["nodesets"][0],
            "pods": next(p for p in api.state.objects["pods"] if p["metadata"]["name"].startswith("slurm-cpu-batch"))}
    child = ServeChild(256 << 20)
    try:
        healthy = child.until(lambda s: s[0] == "ok" and s[2] == 200, 60)
        assert healthy[:3] == ("ok", [], 200), healthy
        before = _vm(child.proc.pid, "VmHWM")
        for plural in plurals:
            obj = objs[plural]
            api.state.put(plural, {**obj, "metadata": {**obj["metadata"], "annotations": {"x": "a" * size}}})
        _, errors, _, up = child.until(lambda s: s[0] == "unknown" and s[2] == 503 and len(s[1]) == len(plurals), 60)
        said = [e for e in errors if "bytes of JSON, more than the 8 MiB no API server" in e]
        # three lists of 40 MiB pages at once: one may find the answers' budget full instead, and say so
        held = [e for e in errors if "the other answers held 128 MiB" in e]
        assert sorted(e.partition(":")[0] for e in said + held) == sorted(plurals) and said, errors
        assert up == "sunkcheck_up 0"
        time.sleep(5)  # lists of them again, backed off
        peak = _vm(child.proc.pid, "VmHWM")
        for plural in plurals:
            api.state.put(plural, objs[plural])
        recovered = child.until(lambda s: s[0] == "ok" and s[2] == 200, 60)
        assert recovered[:3] == ("ok", [], 200), recovered
    finally:
        err = child.stop()
    assert "Traceback" not in err, err
    # the lists' pages holding them (their bytes, text and parsed strings, within the answers' caps, as check's),
    # one copy measured at a time: never an event's, nor one held (3 and 4.3 times the size; 5 and 9 before)
    assert peak - before < (3 + len(plurals)) * size, f"{before >> 20} MiB, then {peak >> 20} MiB"


def test_serves_budget_holds_the_documented_cluster_inside_its_memory_limit() -> None:
    """deploy/serve.yaml's limit holds every budget at once: the interpreter (64 MiB), the answers being read
    (MAX_IN_FLIGHT) and parsed (MAX_PARSED), the cache's, and the one JSON copy the cache measures an object by
    (at most an answer's size); it counted two answers instead of the two answers' budgets, 448 MiB where they
    add up to 704 MiB, past its 512Mi. The 5,000-Node cluster docs/limits.md gives is charged well within the
    budget (under three fifths: room for a scale-up's Pods)."""
    import re

    import yaml

    from sunkcheck.collect.answers import MAX_IN_FLIGHT, MAX_PARSED, MAX_RESPONSE
    from sunkcheck.serve.cache import BUDGET

    docs = (ROOT / "docs" / "limits.md").read_text()
    deployment = next(d for d in yaml.safe_load_all((ROOT / "deploy" / "serve.yaml").read_text())
                      if d["kind"] == "Deployment")
    container, = deployment["spec"]["template"]["spec"]["containers"]
    limit = int(container["resources"]["limits"]["memory"].removesuffix("Mi")) << 20
    serve_part = docs[docs.index("**serve.**"):]
    assert f"one byte budget over every watched source, {BUDGET >> 20} MiB" in serve_part.replace("\n", " ")
    charged = int(re.findall(r"is charged (\d+) MiB", serve_part)[0]) << 20
    assert charged < BUDGET * 3 / 5, (charged, BUDGET)
    assert (64 << 20) + MAX_IN_FLIGHT + MAX_PARSED + BUDGET + MAX_RESPONSE <= limit, (BUDGET, limit)
    assert f"limits serve's container to {limit >> 20}Mi" in docs
