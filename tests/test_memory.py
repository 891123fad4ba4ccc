"""Memory proportional to what is used (issue 27 section 4), measured as a child's peak resident memory: a
generous bound, not a timing test."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES, ROOT, run

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


def test_an_endless_sinfo_answer_is_refused_at_its_line_cap_without_a_copy_of_its_lines():
    """Two million lines (64 MB): split into lines first, the parse took three and a half times the answer."""
    p = subprocess.run([sys.executable, "-c", SINFO_PEAK, "2000000"], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    said, numbers = p.stdout.splitlines()
    grown, size = map(int, numbers.split())
    assert said == "sinfo: lists more than 262144 node names"
    assert grown < size // 4, (grown, size)


def test_a_list_past_the_item_cap_is_one_line_naming_it(tmp_path):
    from sunkcheck.snapshot import MAX_ITEMS
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "healthy-pool-name", snap)
    nodes = [{"metadata": {"name": f"n{i}"}} for i in range(MAX_ITEMS + 1)]
    (snap / "nodes.json").write_text(json.dumps({"kind": "List", "items": nodes}))
    r = run("check", "--snapshot", str(snap))
    assert r.code == 3
    assert r.err == (f"sunkcheck: error: {snap / 'nodes.json'}: more than {MAX_ITEMS:,} Nodes, Kubernetes' own limit "
                     "for a cluster: refusing the list\n")


def test_a_live_list_is_capped_across_its_pages():
    from sunkcheck.snapshot import MAX_ITEMS, ShapeError, check_items

    page = [{"metadata": {"name": "n"}}]
    check_items(page, "Node", "nodes", first=MAX_ITEMS - 1)
    with pytest.raises(ShapeError, match=f"nodes: more than {MAX_ITEMS:,} Nodes"):
        check_items(page, "Node", "nodes", first=MAX_ITEMS)


def _dense_nodes(nodes: list[dict], per_node: int) -> list[dict]:
    """Nodes with `per_node` empty objects in a field sunkcheck never reads."""
    return [n | {"status": n.get("status", {}) | {"unread": [{}] * per_node}} for n in nodes]


def test_a_file_dense_with_empty_objects_is_refused_unparsed_in_bounded_memory(tmp_path):
    """Nodes carrying millions of `{}` in an unread field: parsed, 42 MB took 1.64 GB (a MemoryError under a
    900 MB limit). Here 24 MB: refused in one line, before json builds any of them."""
    from tests.test_hostile import peak_rss

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


def test_a_live_answer_dense_with_empty_objects_leaves_only_its_steps_unknown(serve):
    from dataclasses import replace

    from sunkcheck import snapshot

    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    api = serve(replace(snap, nodes=tuple(_dense_nodes(list(snap.nodes), 20_000))))
    doc = run("check", "-o", "json").json()
    steps = {s["name"]: s["status"] for s in doc["results"][0]["steps"]}
    assert steps["nodes"] == "unknown" and steps["nodeset"] != "unknown", steps
    assert any("/api/v1/nodes" in e and "more than one in 8 bytes" in e for e in doc["errors"]), doc["errors"]
    assert api.log
