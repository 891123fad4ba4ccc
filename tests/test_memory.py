"""Memory proportional to what is used (issue 27 section 4), measured as a child's peak resident memory: a
generous bound, not a timing test."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

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
    from tests.conftest import FIXTURES, run

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
