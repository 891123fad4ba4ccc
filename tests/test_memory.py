"""Memory proportional to what is used (issue 27 section 4), measured as a child's peak resident memory: a
generous bound, not a timing test."""

from __future__ import annotations

import subprocess
import sys

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
