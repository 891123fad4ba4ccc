"""What an attacker tried after issue 16: names the API server would refuse (which printed fixes would
take as options), documents past the JSON parser's limits, list items that are not objects, duplicates
from a live server, option values that change a URL, bidirectional controls, `python -m sunkcheck.cli`.
Each case asserts the exit code and the one-line message, within a bounded run time."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from sunkcheck.snapshot import load
from sunkcheck.text import safe
from tests.conftest import FIXTURES, ROOT, TOKEN, run
from tests.kubeapi import kubeconfig

CASE = FIXTURES / "two-problems"
NODE, POD = "g18d510", "jupyter-alice-0"  # a pool Node, and the foreign Pod on it that a fix deletes
DEEP = "[" * 100_000 + "]" * 100_000
BIG = '{"kind": "List", "items": [], "metadata": {"resourceVersion": ' + "9" * 5000 + "}}"


def one_line_error(result, *needles: str) -> str:
    lines = result.err.strip().splitlines()
    assert result.code == 3 and len(lines) == 1 and lines[0].startswith("sunkcheck: error: "), result.err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def timed(*args: str):
    started = time.monotonic()
    result = run(*args)
    assert time.monotonic() - started < 30
    return result


@pytest.fixture
def snap(tmp_path):
    d = tmp_path / "snap"
    shutil.copytree(CASE, d)
    (d / "expected.json").unlink()
    return d


def edit(path, change) -> dict:
    doc = json.loads(path.read_text())
    change(doc["items"])
    path.write_text(json.dumps(doc))
    return doc


# --- names the API server would refuse ------------------------------------------------------------------

def test_the_fixture_prints_fixes_naming_a_node_and_a_pod(snap):
    """The premise of the cases below: renamed, these objects would be arguments of printed commands."""
    out = run("check", "--snapshot", str(snap)).out
    assert f"kubectl delete pod -n ml-team {POD}" in out and f"Node {NODE} (slurm-cpu)" in out


def _rename(field: str, value: str):
    def change(items):
        target = items[0]
        for key in field.split(".")[:-1]:
            target = target.setdefault(key, {})
        target[field.split(".")[-1]] = value
    return change


@pytest.mark.parametrize("stem, field, value, expected", [
    ("nodes", "metadata.name", "--all", "a DNS-1123 subdomain"),
    ("pods", "metadata.name", "--all", "a DNS-1123 subdomain"),
    ("pods", "metadata.namespace", "--all-namespaces", "a DNS-1123 label"),
    ("pods", "metadata.namespace", "tenant.slurm", "a DNS-1123 label"),  # a subdomain, but not a label
    ("pods", "spec.nodeName", "--all", "a DNS-1123 subdomain"),
    ("nodepools", "metadata.name", "Slurm CPU", "a DNS-1123 subdomain"),
    ("nodesets", "metadata.name", "x" * 254, "a DNS-1123 subdomain"),
    ("events", "metadata.name", "-x", "a DNS-1123 subdomain"),
])
def test_names_the_api_server_would_refuse_are_refused_at_load(snap, stem, field, value, expected):
    path = snap / f"{stem}.json"
    if stem == "events":  # the fixture has none: one about the NodeSet
        path.write_text(json.dumps({"kind": "List", "items": [{"metadata": {"name": "e", "namespace": "tenant-slurm"},
                                                               "reason": "FailedScheduling", "type": "Warning"}]}))
    edit(path, _rename(field, value))
    line = one_line_error(timed("check", "--snapshot", str(snap)), str(path), "item 0 (",
                          f"{field} is {value[:80]!r}, expected {expected}")
    assert "kubectl" not in line


def test_a_node_named_all_served_live_leaves_the_nodes_step_unknown_and_prints_no_fix_for_it(serve):
    served = load(CASE)
    nodes = copy.deepcopy(served.nodes)
    index = next(i for i, n in enumerate(nodes) if n["metadata"]["name"] == NODE)
    nodes[index]["metadata"]["name"] = "--all"
    serve(replace(served, nodes=nodes))
    r = timed("check", "-o", "json")
    assert r.code == 3
    doc = r.json()
    assert "(Node --all): metadata.name is '--all', expected a DNS-1123 subdomain" in " ".join(doc["errors"])
    assert "--all" not in json.dumps(doc["results"])


# --- past the parser's limits ----------------------------------------------------------------------------

@pytest.mark.parametrize("content, reason", [(DEEP, "nested too deeply"), (BIG, "Exceeds the limit (4300 digits)")])
def test_a_snapshot_file_past_the_parsers_limits_is_one_line(snap, content, reason):
    path = snap / "events.json"
    path.write_text(content)
    line = one_line_error(timed("check", "--snapshot", str(snap)), f"{path}: not JSON ({reason}")
    assert "set_int_max_str_digits" not in line


def test_a_deep_sinfo_json_in_a_snapshot_is_one_line(snap):
    path = snap / "sinfo.json"
    path.write_text(DEEP)
    one_line_error(timed("check", "--snapshot", str(snap)), f"{path}: sinfo --json: not JSON (nested too deeply)")


def test_a_values_file_with_a_5000_digit_integer_is_one_line(tmp_path):
    path = tmp_path / "values.yaml"
    path.write_text("compute:\n  nodes:\n    x:\n      enabled: true\n      replicas: " + "9" * 5000 + "\n")
    one_line_error(timed("lint", str(path)), f"{path}:5: invalid YAML: Exceeds the limit (4300 digits)")


@pytest.mark.parametrize("body, reason", [(DEEP, "nested too deeply"), (BIG, "Exceeds the limit (4300 digits)")])
def test_an_api_answer_past_the_parsers_limits_leaves_its_step_unknown(serve, body, reason):
    api = serve(CASE.name)
    api.faults.bodies["nodepools"] = body.encode()
    r = timed("check", "-o", "json")
    doc = r.json()
    assert r.code == 3 and any("the API server answered with something that is not JSON" in e and reason in e
                               for e in doc["errors"]), doc["errors"]
    steps = {s["name"]: s["status"] for s in doc["results"][0]["steps"]}
    assert steps["nodepool"] == "unknown" and steps["nodeset"] != "unknown"


# A lone UTF-16 surrogate is no character: Python decodes one from a `\\udXXX` escape (and from UTF-8 bytes that
# encode one) but can write it nowhere, so every output would fail on it.
LONE_SURROGATES = [  # a label written into every Node, and what the error says of it
    pytest.param('"team.example.com/owner": "t\\ud800"', "lone UTF-16 surrogate \\ud800", id="escape"),
    pytest.param('"team.example.com/owner": "\\udfffx"', "lone UTF-16 surrogate \\udfff", id="low-half"),
    pytest.param('"team.example.com/\\uDBFF": "t"', "lone UTF-16 surrogate \\udbff", id="in-a-key"),
    pytest.param('"team.example.com/owner": "t\udc80"', "can't decode byte 0xed", id="utf-8-bytes"),
]


def with_label(path, label: str) -> None:
    text = path.read_text().replace('"labels": {', '"labels": {' + label + ", ")
    path.write_bytes(text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("output", ["json", "plain", "nagios", "table"])
@pytest.mark.parametrize("label, reason", LONE_SURROGATES)
def test_a_lone_surrogate_in_a_snapshot_is_malformed_input(snap, label, reason, output):
    path = snap / "nodes.json"
    with_label(path, label)
    r = timed("check", "--snapshot", str(snap), "-o", output)
    one_line_error(r, f"{path}: not JSON (", reason)
    if output == "json":
        assert r.json()["status"] == "unknown"
    r = timed("explain", "--snapshot", str(snap), "--node", NODE, "-o", "json")
    one_line_error(r, f"{path}: not JSON (", reason)


def test_a_surrogate_pair_escape_is_a_character(snap):
    """What json.dumps writes for any character past U+FFFF, as in a label value: read as that character."""
    with_label(snap / "nodes.json", '"team.example.com/owner": "\\ud83d\\ude80"')
    r = timed("explain", "--snapshot", str(snap), "--node", NODE, "-o", "json")
    assert r.code == 0 and r.err == ""
    r = timed("check", "--snapshot", str(snap), "-o", "json")
    assert r.verdict() == run("check", "--snapshot", str(CASE), "-o", "json").verdict() and r.err == ""


def test_an_api_answer_with_a_lone_surrogate_leaves_its_step_unknown(serve):
    api = serve(CASE.name)
    pool = {"metadata": {"name": "p", "labels": {"a": "LONE"}}}
    api.faults.bodies["nodepools"] = json.dumps({"kind": "NodePoolList", "items": [pool]}).replace("LONE", "p\\ud800").encode()
    r = timed("check", "-o", "json")
    doc = r.json()
    assert r.code == 3 and any("not JSON" in e and "lone UTF-16 surrogate \\ud800" in e for e in doc["errors"])
    assert {s["name"]: s["status"] for s in doc["results"][0]["steps"]}["nodepool"] == "unknown"


# --- list items that are not objects, duplicates from a live server ----------------------------------------

@pytest.mark.parametrize("items, problem", [
    ([1, "x", None], "nodesets: item 0 is not a Kubernetes object"),
    ("abc", "the API server answered with items that are not a list"),
    ({"a": 1}, "the API server answered with items that are not a list"),
    ([{}], "nodesets: item 0 is not a Kubernetes object"),
])
def test_live_list_items_that_are_not_objects_are_one_line(serve, items, problem):
    api = serve(CASE.name)
    api.faults.bodies["nodesets"] = json.dumps({"kind": "List", "metadata": {}, "items": items}).encode()
    one_line_error(timed("check"), problem)


@pytest.mark.parametrize("page", [None, 1], ids=["same-page", "another-page"])
@pytest.mark.parametrize("stem, kind, name", [("nodes", "Node", NODE), ("pods", "Pod", POD)])
def test_a_live_server_repeating_an_object_is_refused_as_its_replay_would_be(serve, tmp_path, monkeypatch, stem, kind,
                                                                             name, page):
    from sunkcheck.collect import kube

    if page:  # the repeat on a page of its own: refused across pages, not only within one
        monkeypatch.setattr(kube, "PAGE", page)
    served = load(CASE)
    objects = getattr(served, stem)
    serve(replace(served, **{stem: objects + tuple(o for o in objects if o["metadata"]["name"] == name)}))
    r = timed("check", "-o", "json", "--save", str(tmp_path / "saved"))
    assert r.code == 3
    assert any(f"({kind} " in e and f"{name}) duplicates item " in e for e in r.json()["errors"]), r.json()["errors"]
    assert "duplicates" not in run("check", "--snapshot", str(tmp_path / "saved")).err  # what was saved, replay reads


def test_a_node_read_by_name_is_checked_as_a_listed_one_is(serve):
    """A slurmd Pod's Node outside the pool is read by name, not listed: misshapen, it is refused as a listed
    one is."""
    served = load(FIXTURES / "misscheduled")
    host = copy.deepcopy(next(n for n in served.nodes if n["metadata"]["name"] == "g369e7b"))  # slurm-cpu-milan
    host["metadata"]["labels"]["team"] = 7
    api = serve(replace(served, nodes=tuple(host if n["metadata"]["name"] == "g369e7b" else n for n in served.nodes)))
    r = timed("check", "-o", "json")
    assert "/api/v1/nodes/g369e7b" in [q.path for q in api.log]
    assert [e for e in r.json()["errors"] if "(Node g369e7b): metadata.labels['team'] is an integer" in e], r.json()["errors"]


def test_a_cluster_scoped_object_copied_into_a_namespace_is_still_a_duplicate(snap):
    path = snap / "nodepools.json"
    doc = edit(path, lambda items: items.append(copy.deepcopy(items[0]) | {
        "metadata": items[0]["metadata"] | {"namespace": "z"}}))
    one_line_error(timed("check", "--snapshot", str(snap)), str(path),
                   f"item {len(doc['items']) - 1} (NodePool z/{doc['items'][0]['metadata']['name']}) duplicates item 0")


# --- options that would change a URL or a selector ---------------------------------------------------------

OPTIONS = [
    (["-n", ".."], "-n/--namespace '..': not a name the API server accepts; expected a DNS-1123 label"),
    (["-n", "a/b"], "-n/--namespace 'a/b': not a name"),
    (["--nodeset", ".."], "--nodeset '..': not a name the API server accepts; expected a DNS-1123 subdomain"),
    (["--nodeset", "a,b"], "--nodeset 'a,b': not a name"),
    (["--daemonset", "x?y"], "--daemonset 'x?y': not a name"),
    (["--pool", "a=b"], "--pool 'a=b': not a name the API server accepts; expected a label value"),
    (["--pool", ""], "--pool '': not a name"),
]


@pytest.mark.parametrize("command, args, problem", [
    (command, args, problem) for command in ("check", "explain", "snapshot") for args, problem in OPTIONS
    if not (command == "snapshot" and args[0] == "--pool")])  # snapshot has no --pool
def test_option_values_that_are_no_name_are_refused_before_any_request(serve, tmp_path, command, args, problem):
    api = serve(CASE.name)
    extra = [str(tmp_path / "s")] if command == "snapshot" else []
    one_line_error(run(command, *extra, *args), problem)
    assert api.log == []


# --- what reaches a terminal or a textfile -----------------------------------------------------------------

@pytest.mark.parametrize("control", ["\u202e", "\u200e", "\u200f", "\u202a", "\u202d", "\u2066", "\u2069"])
def test_bidirectional_controls_are_neutralised(control):
    assert safe(f"evil{control}txt.exe") == "evil?txt.exe"


def test_no_escape_reaches_the_prometheus_textfile(serve, tmp_path, cert):
    """A kubeconfig's context name is free text, and with several contexts it labels every sample."""
    api = serve(CASE.name)
    hostile = 'x\x1b[2J\x1b]0;owned\x07\u202e"y\\'
    config = kubeconfig(tmp_path / "kc", api.url, token=TOKEN, ca=cert[0], context=hostile)
    doc = json.loads(config.read_text())
    doc["contexts"].append({"name": "plain", "context": doc["contexts"][0]["context"]})
    config.write_text(json.dumps(doc))
    textfile = tmp_path / "sunkcheck.prom"
    run("check", "--kubeconfig", str(config), "--context", hostile, "--context", "plain", "--textfile", str(textfile))
    text = textfile.read_text()
    assert 'sunkcheck_status{context="x?\\"y\\\\",kind="NodeSet"' in text
    assert not any(c in text for c in "\x1b\x07\u202e")


# --- python -m sunkcheck.cli --------------------------------------------------------------------------------

def test_python_m_sunkcheck_cli_runs_like_the_executable():
    p = subprocess.run([sys.executable, "-m", "sunkcheck.cli", "check", "--snapshot", str(CASE)],
                       capture_output=True, text=True, timeout=60, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert p.returncode == json.loads((CASE / "expected.json").read_text())["exit"]
    assert p.stdout.startswith("sunkcheck ")
