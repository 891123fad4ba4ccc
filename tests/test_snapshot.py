"""The snapshot directory (docs/snapshots.md): files as kubectl prints them; every bad input is one line and exit 3."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sunkcheck.snapshot import load
from tests.conftest import FIXTURES, run

CASE = FIXTURES / "healthy-pool-name"


@pytest.fixture
def snap(tmp_path):
    d = tmp_path / "snap"
    shutil.copytree(CASE, d)
    return d


def check(d, *extra):
    return run("check", "--snapshot", str(d), "-o", "json", *extra)


def assert_one_line_error(result, *needles):
    assert result.code == 3
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sunkcheck: error: "), result.err
    doc = result.json()  # -o json: still a document, saying why nothing could be checked
    assert doc["status"] == "unknown" and doc["results"] == [] and doc["errors"] == [lines[0].removeprefix("sunkcheck: error: ")]
    assert "Traceback" not in result.err
    for needle in needles:
        assert needle in lines[0]


def test_accepts_a_single_object_and_a_typed_list(snap):
    nodesets = json.loads((snap / "nodesets.json").read_text())
    (snap / "nodesets.json").write_text(json.dumps(nodesets["items"][0]))
    nodes = json.loads((snap / "nodes.json").read_text())
    (snap / "nodes.json").write_text(json.dumps(nodes | {"kind": "NodeList"}))
    assert load(snap).nodesets[0]["kind"] == "NodeSet"
    assert check(snap).code == 0


@pytest.mark.parametrize("content, problem", [
    ("{not json", "not JSON"),
    ("[1, 2]", "expected a JSON object, got list"),
    ('{"kind": "PodList", "items": []}', "expected Node objects, got kind 'PodList'"),
    ('{"kind": "List", "items": {"a": 1}}', "'items' is not a list"),
    ('{"kind": "List", "items": [42]}', "item 0 is not a Kubernetes object"),
    ('{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "x"}}]}', "item 0 is a Pod, expected Node"),
    ('{"kind": "List", "items": [{"metadata": {"name": "g1"}, "spec": {"taints": [{"key": ["a"]}]}}]}',
     "item 0 (Node g1): spec.taints[0].key is a list, expected a string"),
    ('{"kind": "List", "items": [{"metadata": {"name": "g1", "labels": {"a/b": 7}}}]}',
     "item 0 (Node g1): metadata.labels['a/b'] is an integer, expected a string"),
    ('{"kind": "List", "items": [{"metadata": {"name": "g1"}, "status": {"allocatable": {"cpu": true}}}]}',
     "item 0 (Node g1): status.allocatable['cpu'] is a boolean, expected a string or an integer or a number"),
    (b"\xff\xfe\x00garbage", "not JSON"),
])
def test_bad_file_names_the_file_and_the_problem(snap, content, problem):
    path = snap / "nodes.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert_one_line_error(check(snap), str(path), problem)


@pytest.mark.parametrize("node, problem", [
    ({"metadata": {"name": "g1", "labels": {"a": 1}}, "spec": {"unschedulable": "yes"}},
     "metadata.labels['a'] is an integer"),  # the shape's order of fields, not the object's
    ({"status": {"conditions": [{"type": "Ready"}, {"type": 2}]}, "metadata": {"generation": "1", "name": "g1"}},
     "metadata.generation is a string"),
    ({"metadata": {"name": "g1"}, "status": {"conditions": [{"type": "Ready"}, {"status": []}, None, {"type": 1}]}},
     "status.conditions[1].status is a list"),
    ({"metadata": {"name": "g1", "labels": {"a": "x", "b": None}}, "status": {"conditions": [None]}},
     "metadata.labels['b'] is null, expected a string"),  # Go writes no null item nor map value
    ({"metadata": {"name": "g1"}, "status": {"allocatable": {"cpu": "1", "memory": [], "pods": {}}}},
     "status.allocatable['memory'] is a list"),
    ({"metadata": {"name": "G1"}}, "metadata.name is 'G1', expected a DNS-1123 subdomain"),
])
def test_of_several_mismatches_the_first_is_named(node, problem):
    from sunkcheck.shapes import mismatch

    assert mismatch(node, "Node").startswith(problem)


def test_unreadable_file(snap):
    (snap / "pods.json").unlink()
    (snap / "pods.json").mkdir()  # reading a directory fails even for root
    assert_one_line_error(check(snap), "pods.json: cannot read")


@pytest.mark.parametrize(("stem", "target", "why"), [
    ("pods", "/nonexistent", "a symbolic link to a file that does not exist"),
    ("nodes", "nodes.json", "Too many levels of symbolic links"),
    ("sinfo", "sinfo.json", "Too many levels of symbolic links"),
    ("meta", "/nonexistent", "a symbolic link to a file that does not exist"),
])
def test_a_broken_symbolic_link_is_refused_naming_it_not_taken_for_not_captured(snap: Path, stem: str, target: str,
                                                                               why: str) -> None:
    (snap / f"{stem}.json").unlink(missing_ok=True)
    (snap / f"{stem}.json").symlink_to(target)
    assert_one_line_error(check(snap), f"{snap / stem}.json: cannot read: {why}")


def test_not_a_directory_and_empty_directory(tmp_path):
    assert_one_line_error(check(tmp_path / "nope"), "does not exist")
    assert_one_line_error(check(tmp_path), "is empty")
    (tmp_path / "notes.txt").write_text("")
    assert_one_line_error(check(tmp_path), "no snapshot files")
    assert_one_line_error(check(tmp_path / "notes.txt"), "is a file, not a snapshot directory")


def test_no_nodesets_captured(snap):
    (snap / "nodesets.json").unlink()
    assert_one_line_error(check(snap), "nodesets.json is missing")


@pytest.mark.parametrize("missing, step", [("nodepools", "nodepool"), ("nodes", "nodes"), ("events", "events"),
                                           ("pods", "pods")])
def test_missing_file_makes_its_step_unknown_never_ok(snap, missing, step):
    (snap / f"{missing}.json").unlink()
    result = check(snap)
    report = result.json()
    steps = {s["name"]: s["status"] for s in report["results"][0]["steps"]}
    assert steps[step] == "unknown"
    assert report["status"] == "unknown" and result.code == 3
    assert any(f"{missing} not captured" in e for e in report["errors"])


def test_missing_nodes_still_reports_what_was_checked(snap):
    (snap / "nodes.json").unlink()
    report = check(snap).json()
    steps = {s["name"]: s["status"] for s in report["results"][0]["steps"]}
    # the NodeSet's and its Pods' steps count Nodes: unknown with them (never "0 pool Nodes" under ok)
    assert steps == {"nodepool": "ok", "nodes": "unknown", "events": "ok", "nodeset": "unknown", "pods": "unknown",
                     "sinfo": "skipped"}


def test_critical_outranks_unknown(tmp_path):
    d = tmp_path / "s"
    shutil.copytree(FIXTURES / "no-feasible-nodes", d)
    (d / "events.json").unlink()
    result = check(d)
    assert result.json()["status"] == "critical" and result.code == 2


def test_warning_with_an_unknown_step_is_unknown(tmp_path):
    d = tmp_path / "s"
    shutil.copytree(FIXTURES / "replicas-cap", d)
    (d / "events.json").unlink()
    assert check(d).code == 3
