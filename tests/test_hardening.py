"""Hostile and broken input (issue 16): YAML bombs, special files, duplicate objects, malformed live
objects, garbage from a login node, secrets in snapshots, unsafe snapshot directories. Each test bounds its
own run time (and memory, where the defect was memory) and asserts the exit code and the one-line message."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT, run

MEMORY_LIMIT = 1 << 30  # bytes of address space for a subprocess that must not blow up


def sunkcheck(*args: str, timeout: float = 60, memory: int = MEMORY_LIMIT) -> subprocess.CompletedProcess:
    """The real executable in a subprocess whose address space is capped: an unbounded expansion fails."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run([sys.executable, "-m", "sunkcheck", *args], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=cap, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def one_line_error(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sunkcheck: error: "), err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# --- 16.5 YAML bombs ------------------------------------------------------------------------------------

def billion_laughs(levels: int = 9) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines.append(f"compute: {{nodes: {{x: {{enabled: true, tolerations: *{cur}}}}}}}")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_in_bounded_memory(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs())
    assert len(path.read_bytes()) < 400
    started = time.monotonic()
    r = sunkcheck("lint", str(path))
    assert r.returncode == 3, r.stderr
    one_line_error(r.stderr, f"{path}:", "aliases expand")
    assert time.monotonic() - started < 30


def test_recursive_alias_is_refused(tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text("compute: &c {nodes: {x: {enabled: true, tolerations: [*c]}}}\n")
    r = run("lint", str(path))
    assert r.code == 3
    one_line_error(r.err, f"{path}:1:", "refers to itself")


def test_a_few_aliases_are_fine(tmp_path):
    path = tmp_path / "anchors.yaml"
    path.write_text("common: &tol [{key: sunk.coreweave.com/lock, operator: Exists}]\ncompute:\n  nodes:\n"
                    + "".join(f"    d{i}: {{enabled: true, gresGpu: null, tolerations: *tol}}\n" for i in range(20)))
    r = run("lint", str(path), "-o", "json")
    assert r.code in (0, 1) and {s["id"] for res in r.json()["results"] for s in res["symptoms"]} == {"values-no-binding"}


def test_deep_document_is_one_line(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("[" * 20000 + "]" * 20000 + "\n")
    r = run("lint", str(path))
    assert r.code == 3
    one_line_error(r.err, f"{path}:1:", "nested deeper than")


def definitions(count: int) -> str:
    out = ["common: &tol [{key: sunk.coreweave.com/lock, operator: Exists}]", "compute:", "  nodes:",
           "    shared: {tolerations: *tol}"]
    for i in range(count):
        out += [f"    d{i}:", "      enabled: true", "      gresGpu: null", "      definitions: [shared]",
                "      affinity:", "        nodeAffinity:", "          requiredDuringSchedulingIgnoredDuringExecution:",
                "            nodeSelectorTerms:", "            - matchExpressions:",
                f"              - {{key: compute.coreweave.com/node-pool, operator: In, values: [p{i}]}}"]
    return "\n".join(out) + "\n"


def test_lint_is_linear_in_definitions(tmp_path):
    """Twice the definitions take about twice as long (quadratic lint took 6x from 500 to 2,000)."""
    def seconds(count: int) -> float:
        path = tmp_path / f"d{count}.yaml"
        path.write_text(definitions(count))
        from sunkcheck.values.lint import lint

        started = time.process_time()
        report = lint([str(path)], "slurm")
        assert len(report.results) == count + 1 and report.status.exit_code == 0
        return time.process_time() - started

    seconds(200)  # warm up imports
    small, large = min(seconds(500) for _ in range(2)), seconds(2000)
    assert large < 5.5 * small, (small, large)
