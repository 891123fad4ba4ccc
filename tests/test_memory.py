"""Memory proportional to what is used, measured as a child's peak resident memory: a
generous bound, not a timing test."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import test_hardening
from tests.conftest import FIXTURES, ROOT, run
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
    assert steps["nodes"] == "unknown" and steps["nodeset"] != "unknown", steps
    assert any("/api/v1/nodes" in e and "more than one in 8 bytes" in e for e in doc["errors"]), doc["errors"]
    assert api.log


# --- live answers: parsed only within MAX_PARSED -------------------------------------------------------------

def _node_list(items: str, count: int) -> bytes:
    """A NodeList of `count` copies of the JSON text `items`, as an API server writes it."""
    return b'{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[' + b",".join([items.encode()] * count) + b"]}"


def _refused_live(serve: Serve, body: bytes, bound: int) -> str:
    """The Node list answered with `body`: the nodes step alone is unknown, in one line naming the GET and the
    cap, the child's peak resident memory under `bound`; that line."""
    api = serve("healthy-pool-name")
    api.faults.bodies["nodes"] = body
    r, peak = peak_rss("check", "-o", "json")
    assert r.returncode == 3 and "internal error" not in r.stderr and "MemoryError" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    steps = {s["name"]: s["status"] for s in doc["results"][0]["steps"]}
    assert steps["nodes"] == "unknown" and steps["nodeset"] != "unknown", steps
    said = [e for e in doc["errors"] if e.startswith("nodes: GET /api/v1/nodes?")]
    assert len(said) == 1 and "\n" not in said[0], doc["errors"]
    assert peak < bound, f"{peak >> 20} MiB for a {len(body) >> 20} MiB answer"
    return said[0]


def test_a_page_of_a_million_tiny_nodes_is_refused_unparsed_in_bounded_memory(serve: Serve) -> None:
    """One page of 1,000,000 Nodes of 27 bytes each (29 MB): parsed whole before the 150,000-item cap refused it,
    it took 667 MB and 13 s. Estimated before it is parsed, it is refused unparsed: the answer's own bytes and the
    interpreter."""
    from sunkcheck.collect.answers import MAX_PARSED

    body = _node_list('{"metadata":{"name":"n"}}', 1_000_000)
    said = _refused_live(serve, body, (100 << 20) + 2 * len(body))
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
    said = _refused_live(serve, body, (100 << 20) + 2 * len(body))
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
