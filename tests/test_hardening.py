"""Hostile and broken input (issue 16): YAML bombs, special files, duplicate objects, malformed live
objects, garbage from a login node, secrets in snapshots, unsafe snapshot directories. Each test bounds its
own run time (and memory, where the defect was memory) and asserts the exit code and the one-line message."""

from __future__ import annotations

import copy
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from sunkcheck.snapshot import load
from tests.conftest import FIXTURES, ROOT, run

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


# --- 16.6 special files, 16.15 duplicates in a snapshot -------------------------------------------------

@pytest.fixture
def snap(tmp_path):
    d = tmp_path / "snap"
    shutil.copytree(FIXTURES / "healthy-pool-name", d)
    return d


def test_fifo_in_a_snapshot_is_refused_not_read(snap):
    path = snap / "pods.json"
    path.unlink()
    os.mkfifo(path)  # no writer: reading it would block forever
    r = sunkcheck("check", "--snapshot", str(snap), timeout=30)
    assert r.returncode == 3
    one_line_error(r.stderr, f"{path}: cannot read: a FIFO, not a regular file")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_device_in_a_snapshot_is_refused_not_read(snap, device):
    path = snap / "sinfo.txt"
    path.symlink_to(device)  # /dev/zero would never end
    r = sunkcheck("check", "--snapshot", str(snap), timeout=30)
    assert r.returncode == 3
    one_line_error(r.stderr, f"{path}: cannot read: a device, not a regular file")


@pytest.mark.parametrize("stem, index", [("nodepools", 0), ("nodes", 2)])
def test_duplicate_objects_are_an_error_naming_them(snap, stem, index):
    path = snap / f"{stem}.json"
    doc = json.loads(path.read_text())
    twin = copy.deepcopy(doc["items"][index])
    twin.setdefault("metadata", {})["uid"] = "another-uid"
    doc["items"].append(twin)
    path.write_text(json.dumps(doc))
    r = run("check", "--snapshot", str(snap))
    kind = {"nodepools": "NodePool", "nodes": "Node"}[stem]
    assert r.code == 3
    one_line_error(r.err, f"{path}: item {len(doc['items']) - 1} ({kind} {twin['metadata']['name']}) duplicates "
                          f"item {index}")


def test_same_name_in_two_namespaces_is_not_a_duplicate(snap):
    path = snap / "pods.json"
    doc = json.loads(path.read_text())
    twin = copy.deepcopy(doc["items"][0])
    twin["metadata"]["namespace"] = "elsewhere"
    twin["spec"].pop("nodeName", None)
    doc["items"].append(twin)
    path.write_text(json.dumps(doc))
    assert run("check", "--snapshot", str(snap)).code == 0


# --- 16.14 live objects are checked as their replay would be ---------------------------------------------

def test_live_object_its_replay_would_refuse_leaves_its_step_unknown(serve, tmp_path):
    served = load(FIXTURES / "healthy-pool-name")
    pools = copy.deepcopy(served.nodepools)
    pools[0]["spec"]["targetNodes"] = str(pools[0]["spec"]["targetNodes"])
    serve(replace(served, nodepools=pools))
    message = (f"nodepools: item 0 (NodePool {pools[0]['metadata']['name']}): spec.targetNodes is a string, "
               "expected an integer")
    live = run("check", "-o", "json", "--save", str(tmp_path / "snap"))
    assert live.code == 3 and message in live.json()["errors"]
    steps = {s["name"]: s["status"] for s in live.json()["results"][0]["steps"]}
    assert steps["nodepool"] == "unknown" and steps["nodeset"] == "ok"
    replay = run("check", "-o", "json", "--snapshot", str(tmp_path / "snap"))
    assert replay.code == 3 and {s["name"]: s["status"] for s in replay.json()["results"][0]["steps"]} == steps


def test_live_nodeset_of_the_wrong_shape_is_one_line(serve):
    served = load(FIXTURES / "healthy-pool-name")
    nodesets = copy.deepcopy(served.nodesets)
    nodesets[0]["spec"]["replicas"] = "4"
    serve(replace(served, nodesets=nodesets))
    r = run("check")
    assert r.code == 3
    name = nodesets[0]["metadata"]["name"]
    one_line_error(r.err, f"nodesets: item 0 (NodeSet tenant-slurm/{name}): spec.replicas is a string, expected an integer")
