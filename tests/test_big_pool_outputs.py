"""A big pool's evidence stays readable and within what monitoring reads: Nodes that say the same thing are one
line, a person sees a bounded number of lines, JSON keeps every one, and `-o nagios` stays within the 8 KB
Nagios reads with its performance data whole."""

from __future__ import annotations

import importlib.util
import json

import pytest

from sunkcheck.render import nagios
from tests.conftest import FIXTURES, run

NODES = 400


def _generate():
    spec = importlib.util.spec_from_file_location("generate", FIXTURES / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    return generate


def big_pool(tmp_path, distinct: bool, sizes: bool = False):
    """A 400-Node H100 pool whose NodeSet asks more memory than a Node has (FEASIBLE 0). `sizes`: each Node also
    runs a Pod of its own size. `distinct`: each Node has its own allocatable memory too, so no two Nodes' reasons
    read alike."""
    g = _generate()
    c = g.Cluster()
    _, nodes = c.pool("slurm-gpu", g.H100, NODES)
    c.nodeset("slurm-gpu-h100", g.by_pool_name("slurm-gpu"), (0,) * 8, gpus=8,
              requests={"cpu": "110", "memory": "2100Gi"}, limits={"memory": "2100Gi"})
    for i, n in enumerate(nodes):
        if distinct or sizes:
            c.pod("ops", f"probe-{i}", n, {"cpu": "10m", "memory": f"{i + 1}Gi"})
        if distinct:
            n["status"]["allocatable"] = n["status"]["allocatable"] | {"memory": f"{1500 + i}Gi"}
    for stem, doc in c.files().items():
        (tmp_path / f"{stem}.json").write_text(json.dumps(doc))
    return str(tmp_path)


def _evidence(doc: dict) -> list[str]:
    [symptom] = [s for s in doc["results"][0]["symptoms"] if s["id"] == "no-feasible-nodes"]
    return symptom["evidence"]


def test_nodes_whose_reasons_differ_only_in_their_own_agents_are_one_line(tmp_path):
    """Each Node's own cilium and node-problem-detector Pods hold its memory: one line for the 400 Nodes, with the
    first Node's Pods as the example, not 400 lines."""
    snap = big_pool(tmp_path, distinct=False)
    doc = run("check", "--snapshot", snap, "-o", "json").json()
    grouped = [e for e in _evidence(doc) if "Nodes in slurm-gpu" in e]
    assert len(grouped) == 1 and grouped[0].startswith(f"{NODES}/{NODES} Nodes in slurm-gpu: Insufficient memory: ")
    assert "(e.g. on " in grouped[0] and grouped[0].endswith(f"and {NODES - 3} more)")
    out = run("check", "--snapshot", snap, "-o", "nagios").out
    assert len(out.encode()) < 2048 and "... " not in out


def test_nodes_short_by_different_amounts_of_the_same_request_are_one_line(tmp_path):
    """Each Node runs a Pod of its own size: the Nodes are short by different amounts of the same request and
    allocatable, which says the same thing: one line with one Node as the example, not 400."""
    doc = run("check", "--snapshot", big_pool(tmp_path, distinct=False, sizes=True), "-o", "json").json()
    grouped = [e for e in _evidence(doc) if "Nodes in slurm-gpu" in e]
    assert len(grouped) == 1 and grouped[0].startswith(
        f"{NODES}/{NODES} Nodes in slurm-gpu: Insufficient memory: requests 2100.125Gi, more than other Pods leave free of ")
    assert "(e.g. on " in grouped[0] and ": free " in grouped[0] and grouped[0].endswith(f"and {NODES - 3} more)")


@pytest.fixture
def distinct(tmp_path):
    return big_pool(tmp_path, distinct=True)


def test_json_keeps_every_line_of_evidence(distinct):
    doc = run("check", "--snapshot", distinct, "-o", "json", "--limit", "0").json()
    assert len([e for e in _evidence(doc) if "Nodes in slurm-gpu" in e]) == NODES


def test_plain_shows_a_bounded_number_of_lines_and_where_the_rest_are(distinct):
    out = run("check", "--snapshot", distinct, "-o", "plain").out
    evidence = out[out.index("  evidence:"):].splitlines()[1:]
    assert len(evidence) == 10
    assert evidence[-1] == (f"    - ... {NODES + 1 - 9} more lines of evidence (every line: -o json --limit 0 and each "
                            "Node's reasons: sunkcheck explain)")


def test_nagios_stays_within_8_kb_with_its_performance_data_whole(distinct):
    r = run("check", "--snapshot", distinct, "-o", "nagios")
    assert r.code == 2
    assert len(r.out.encode()) <= 8192
    first, *rest = r.out.splitlines()
    assert first.startswith("SUNKCHECK CRITICAL - slurm-gpu-h100: no-feasible-nodes | ")
    assert f"'slurm-gpu-h100 feasible'=0;;;0;{NODES}" in first
    assert f"    - ... {NODES + 1 - 4} more lines of evidence (every line: -o json" in rest[-1]
    assert rest[-1].endswith(f" | 'slurm-gpu-h100 misscheduled'=0;;;0;{NODES} 'slurm-gpu-h100 pool_target'={NODES};;;0; "
                             f"'slurm-gpu-h100 pool_current'={NODES};;;0;")


def test_nagios_cuts_the_long_output_not_the_performance_data():
    """Long output past 8 KB (many targets, each a few lines) loses its last lines, for a line saying how many; the
    status line and every performance data value stay."""
    lines = [f"NodeSet tenant/slurm-{i:03}: OK" for i in range(1000)]
    rest = [f"'slurm-{i:03} ready'=8;;;0;8" for i in range(50)]
    out = nagios._within("SUNKCHECK OK - 1000 NodeSet(s) bound as intended", lines, rest)
    assert len(out.encode()) <= 8192
    first, *kept, last = out.splitlines()
    assert first == "SUNKCHECK OK - 1000 NodeSet(s) bound as intended" and kept == lines[:len(kept)]
    assert last == (f"... {1000 - len(kept)} more lines left out to stay within the 8 KB a Nagios check may print (every "
                    "line: -o json) | " + " ".join(rest))
    assert len(out.encode()) > 8192 - 100  # nothing cut that would have fit


def test_nagios_keeps_the_worst_targets_performance_data_when_all_of_it_cannot_fit():
    """Hundreds of targets: their performance data alone passes 8 KB. The output still fits; the counts of the
    targets listed last go, and the last line says how many values were left out."""
    lines = [f"line {i}" for i in range(50)]
    rest = [f"'slurm-{i:03} ready'={i};;;0;8" for i in range(400)]
    out = nagios._within("SUNKCHECK OK - 400 NodeSet(s) bound as intended", lines, rest)
    assert len(out.encode()) <= 8192
    *_, last = out.splitlines()
    text, perf = last.split(" | ", 1)
    kept = next(k for k in range(len(rest), 0, -1) if " ".join(rest[:k]) == perf)
    assert 100 < kept < 400 and text.endswith(f"; {400 - kept} performance data values left out too")


def test_a_report_within_8_kb_is_printed_whole():
    out = nagios._within("SUNKCHECK OK - fine | 'a ready'=1;;;0;1", ["line"], ["'a pool_target'=1;;;0;"])
    assert out == "SUNKCHECK OK - fine | 'a ready'=1;;;0;1\nline | 'a pool_target'=1;;;0;\n"
