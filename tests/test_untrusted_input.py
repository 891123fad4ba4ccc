"""What an attacker tries beyond test_hardening.py: names the API server would refuse (which printed fixes would
take as options), documents past the JSON parser's limits, list items that are not objects, duplicates
from a live server, option values that change a URL, bidirectional controls, `python -m sunkcheck.cli`.
Each case asserts the exit code and the one-line message, within a bounded run time."""

from __future__ import annotations

import copy
import re
import shlex
import json
import pathlib
import shutil
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
import yaml

from sunkcheck.bounds import SNIPPET_MARKS
from sunkcheck.snapshot import load
from sunkcheck.text import json_escaped, safe
from tests.conftest import CASES, FIXTURES, ROOT, TOKEN, Run, expected, run
from tests.kubeapi import FakeApi, kubeconfig

Serve = Callable[..., FakeApi]  # the serve fixture: a fixture case's name, or a snapshot

CASE = FIXTURES / "two-problems"
NODE, POD = "g18d510", "jupyter-alice-0"  # a pool Node, and the foreign Pod on it that a fix evicts
DEEP = "[" * 100_000 + "]" * 100_000
BIG = '{"kind": "List", "items": [], "metadata": {"resourceVersion": ' + "9" * 5000 + "}}"


def one_line_error(result: Run, *needles: str) -> str:
    lines = result.err.strip().splitlines()
    assert result.code == 3 and len(lines) == 1 and lines[0].startswith("sunkcheck: error: "), result.err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def timed(*args: str) -> Run:
    started = time.monotonic()
    result = run(*args)
    assert time.monotonic() - started < 30
    return result


@pytest.fixture
def snap(tmp_path: pathlib.Path) -> pathlib.Path:
    d = tmp_path / "snap"
    shutil.copytree(CASE, d)
    (d / "expected.json").unlink()
    return d


def edit(path: pathlib.Path, change: Callable[[list[dict]], None]) -> dict:
    doc = json.loads(path.read_text())
    change(doc["items"])
    path.write_text(json.dumps(doc))
    return doc


# --- names the API server would refuse ------------------------------------------------------------------

def test_the_fixture_prints_fixes_naming_a_node_and_a_pod(snap: pathlib.Path) -> None:
    """The premise of the cases below: renamed, these objects would be arguments of printed commands."""
    out = run("check", "--snapshot", str(snap)).out
    assert f"kubectl create --raw /api/v1/namespaces/ml-team/pods/{POD}/eviction" in out and f"Node {NODE} (slurm-cpu)" in out


def _rename(field: str, value: str) -> Callable[[list[dict]], None]:
    def change(items: list[dict]) -> None:
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
def test_names_the_api_server_would_refuse_are_refused_at_load(snap: pathlib.Path, stem: str, field: str, value: str,
                                                               expected: str) -> None:
    path = snap / f"{stem}.json"
    if stem == "events":  # the fixture has none: one about the NodeSet
        path.write_text(json.dumps({"kind": "List", "items": [{"metadata": {"name": "e", "namespace": "tenant-slurm"},
                                                               "reason": "FailedScheduling", "type": "Warning"}]}))
    edit(path, _rename(field, value))
    line = one_line_error(timed("check", "--snapshot", str(snap)), str(path), "item 0 (",
                          f"{field} is {value[:80]!r}, expected {expected}")
    assert "kubectl" not in line


def test_a_node_named_all_served_live_leaves_the_nodes_step_unknown_and_prints_no_fix_for_it(serve: Serve) -> None:
    served = load(CASE)
    nodes = list(copy.deepcopy(served.nodes or ()))
    index = next(i for i, n in enumerate(nodes) if n["metadata"]["name"] == NODE)
    nodes[index]["metadata"]["name"] = "--all"
    serve(replace(served, nodes=tuple(nodes)))
    r = timed("check", "-o", "json")
    assert r.code == 3
    doc = r.json()
    assert "(Node --all): metadata.name is '--all', expected a DNS-1123 subdomain" in " ".join(doc["errors"])
    assert "--all" not in json.dumps(doc["results"])


# --- past the parser's limits ----------------------------------------------------------------------------

@pytest.mark.parametrize("content, reason", [(DEEP, "nested too deeply"), (BIG, "Exceeds the limit (4300 digits)")])
def test_a_snapshot_file_past_the_parsers_limits_is_one_line(snap: pathlib.Path, content: str, reason: str) -> None:
    path = snap / "events.json"
    path.write_text(content)
    line = one_line_error(timed("check", "--snapshot", str(snap)), f"{path}: not JSON ({reason}")
    assert "set_int_max_str_digits" not in line


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(snap: pathlib.Path, serve: Serve, constant: str) -> None:
    """Python's json reads them by default (`remainingItemCount: Infinity` was an OverflowError); the same
    document with a number in their place parses."""
    from sunkcheck.text import json_doc

    with pytest.raises(ValueError, match=f"^{constant} is not JSON$"):
        json_doc(f'{{"metadata": {{"remainingItemCount": {constant}}}}}'.encode())
    assert json_doc('{"a": [1e400, -0.0, "NaN"]}') == {"a": [float("inf"), -0.0, "NaN"]}
    path = snap / "events.json"
    path.write_text(f'{{"kind": "List", "items": [], "metadata": {{"remainingItemCount": {constant}}}}}')
    one_line_error(timed("check", "--snapshot", str(snap)), f"{path}: not JSON ({constant} is not JSON)")
    api = serve(CASE.name)
    api.faults.bodies["nodepools"] = f'{{"kind": "NodePoolList", "items": [], "x": {constant}}}'.encode()
    doc = timed("check", "-o", "json").json()
    assert any(f"the API server answered with something that is not JSON ({constant} is not JSON)" in e
               for e in doc["errors"]), doc["errors"]
    assert {s["name"]: s["status"] for s in doc["results"][0]["steps"]}["nodepool"] == "unknown"


def test_a_deep_sinfo_json_in_a_snapshot_is_one_line(snap: pathlib.Path) -> None:
    path = snap / "sinfo.json"
    path.write_text(DEEP)
    one_line_error(timed("check", "--snapshot", str(snap)), f"{path}: sinfo --json: not JSON (nested too deeply)")


def test_a_values_file_with_a_5000_digit_integer_is_one_line(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "values.yaml"
    path.write_text("compute:\n  nodes:\n    x:\n      enabled: true\n      replicas: " + "9" * 5000 + "\n")
    one_line_error(timed("lint", str(path)), f"{path}:5: invalid YAML: Exceeds the limit (4300 digits)")


@pytest.mark.parametrize("body, reason", [(DEEP, "nested too deeply"), (BIG, "Exceeds the limit (4300 digits)")])
def test_an_api_answer_past_the_parsers_limits_leaves_its_step_unknown(serve: Serve, body: str, reason: str) -> None:
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


def with_label(path: pathlib.Path, label: str) -> None:
    text = path.read_text().replace('"labels": {', '"labels": {' + label + ", ")
    path.write_bytes(text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("output", ["json", "plain", "nagios", "table"])
@pytest.mark.parametrize("label, reason", LONE_SURROGATES)
def test_a_lone_surrogate_in_a_snapshot_is_malformed_input(snap: pathlib.Path, label: str, reason: str, output: str) -> None:
    path = snap / "nodes.json"
    with_label(path, label)
    r = timed("check", "--snapshot", str(snap), "-o", output)
    one_line_error(r, f"{path}: not JSON (", reason)
    if output == "json":
        assert r.json()["status"] == "unknown"
    r = timed("explain", "--snapshot", str(snap), "--node", NODE, "-o", "json")
    one_line_error(r, f"{path}: not JSON (", reason)


def test_a_surrogate_pair_escape_is_a_character(snap: pathlib.Path) -> None:
    """What json.dumps writes for any character past U+FFFF, as in a label value: read as that character."""
    with_label(snap / "nodes.json", '"team.example.com/owner": "\\ud83d\\ude80"')
    r = timed("explain", "--snapshot", str(snap), "--node", NODE, "-o", "json")
    assert r.code == 0 and r.err == ""
    r = timed("check", "--snapshot", str(snap), "-o", "json")
    assert r.verdict() == run("check", "--snapshot", str(CASE), "-o", "json").verdict() and r.err == ""


def test_an_api_answer_with_a_lone_surrogate_leaves_its_step_unknown(serve: Serve) -> None:
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
    ({}, "the API server answered with items that are not a list"),  # falsy, but no list: never read as empty
    (False, "the API server answered with items that are not a list"),
    ([{}], "nodesets: item 0 is not a Kubernetes object"),
])
def test_live_list_items_that_are_not_objects_are_one_line(serve: Serve, items: object, problem: str) -> None:
    api = serve(CASE.name)
    api.faults.bodies["nodesets"] = json.dumps({"kind": "List", "metadata": {}, "items": items}).encode()
    one_line_error(timed("check"), problem)


@pytest.mark.parametrize("page", [None, 1], ids=["same-page", "another-page"])
@pytest.mark.parametrize("stem, kind, name", [("nodes", "Node", NODE), ("pods", "Pod", POD)])
def test_a_live_server_repeating_an_object_is_refused_as_its_replay_would_be(
        serve: Serve, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, stem: str, kind: str, name: str,
        page: int | None) -> None:
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


def test_a_node_read_by_name_is_checked_as_a_listed_one_is(serve: Serve) -> None:
    """A slurmd Pod's Node outside the pool is read by name, not listed: misshapen, it is refused as a listed
    one is."""
    served = load(FIXTURES / "misscheduled")
    host = copy.deepcopy(next(n for n in served.nodes or () if n["metadata"]["name"] == "g369e7b"))  # slurm-cpu-milan
    host["metadata"]["labels"]["team"] = 7
    api = serve(replace(served, nodes=tuple(host if n["metadata"]["name"] == "g369e7b" else n for n in served.nodes or ())))
    r = timed("check", "-o", "json")
    assert "/api/v1/nodes/g369e7b" in [q.path for q in api.log]
    assert [e for e in r.json()["errors"] if "(Node g369e7b): metadata.labels['team'] is an integer" in e], r.json()["errors"]


def test_a_cluster_scoped_object_copied_into_a_namespace_is_still_a_duplicate(snap: pathlib.Path) -> None:
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
def test_option_values_that_are_no_name_are_refused_before_any_request(
        serve: Serve, tmp_path: pathlib.Path, command: str, args: list[str], problem: str) -> None:
    api = serve(CASE.name)
    extra = [str(tmp_path / "s")] if command == "snapshot" else []
    one_line_error(run(command, *extra, *args), problem)
    assert api.log == []


# --- sunkcheck rbac: YAML for kubectl apply ----------------------------------------------------------------

@pytest.mark.parametrize("args, problem", [
    (["--service-account", "x\n  - kind: Group\n    name: system:authenticated"],
     "--service-account 'x\\n - kind: Group\\n name: system:authenticated': not a name the API server accepts; "
     "expected a DNS-1123 subdomain"),
    (["--service-account", "Monitor"], "--service-account 'Monitor': not a name"),
    (["--service-account", ""], "--service-account '': not a name"),
    (["-n", "a.b"], "-n/--namespace 'a.b': not a name the API server accepts; expected a DNS-1123 label"),
    (["-n", "x\n    name: y"], "-n/--namespace 'x\\n name: y': not a name"),
])
def test_rbac_refuses_names_the_api_server_would(args: list[str], problem: str) -> None:
    for fmt in ("yaml", "json"):
        r = run("rbac", *args, "-o", fmt)
        one_line_error(r, problem)
        assert r.out == ""


@pytest.mark.parametrize("word", ["true", "0755", "null", "1e3", "yes", "on", "n", "y", "0x1f", "12", "off"])
def test_rbac_yaml_keeps_every_name_a_string(word: str) -> None:
    """A valid name can be a YAML 1.1 bool, null, int (octal, hex) or float: printed plain, kubectl (go-yaml) would
    read another type. Each is quoted; the binding has one subject, the ServiceAccount."""
    out = run("rbac", "--service-account", word, "-n", word).out
    _role, binding = yaml.safe_load_all(out)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": word, "namespace": word}]
    assert f'name: "{word}"' in out and f'namespace: "{word}"' in out  # y, n, 1e3: booleans and a float to go-yaml
    assert run("rbac").out.count('"') == run("rbac", "--service-account", "a", "-n", "b").out.count('"')


# --- what reaches a terminal or a textfile -----------------------------------------------------------------

# Unicode's Bidi_Control property (PropList.txt): the marks, then the embeddings, overrides and isolates
BIDI_CONTROLS = ["\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))]


def test_the_bidi_controls_listed_are_all_of_them() -> None:
    """Every character of an explicit bidi class is in the list (the three marks have ordinary classes: AL, L, R)."""
    explicit = {"LRE", "RLE", "PDF", "LRO", "RLO", "LRI", "RLI", "FSI", "PDI"}
    assert {c for c in map(chr, range(0x110000)) if unicodedata.bidirectional(c) in explicit} <= set(BIDI_CONTROLS)
    assert len(BIDI_CONTROLS) == 12


def test_json_escapes_del_in_text_otherwise_ascii() -> None:
    """DEL is ASCII: an all-ASCII document (the common one, passed through unscanned) may still hold it."""
    assert json_escaped(json.dumps("a\x7fb", ensure_ascii=False)) == '"a\\u007fb"'
    assert json_escaped('{"plain": "text"}') == '{"plain": "text"}'


@pytest.mark.parametrize("control", BIDI_CONTROLS)
def test_bidirectional_controls_are_neutralised(control: str) -> None:
    assert safe(f"evil{control}txt.exe") == "evil?txt.exe"
    assert json_escaped(json.dumps(f"a{control}b", ensure_ascii=False)) == f'"a\\u{ord(control):04x}b"'


def test_no_escape_reaches_the_prometheus_textfile(serve: Serve, tmp_path: pathlib.Path, cert: tuple[str, str]) -> None:
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

def test_python_m_sunkcheck_cli_runs_like_the_executable() -> None:
    p = subprocess.run([sys.executable, "-m", "sunkcheck.cli", "check", "--snapshot", str(CASE)],
                       capture_output=True, text=True, timeout=60, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert p.returncode == json.loads((CASE / "expected.json").read_text())["exit"]
    assert p.stdout.startswith("sunkcheck ")


# --- cluster text in printed fixes ---------------------------------------------------------------------------

PAYLOAD = "touch /tmp/pwned"
FLAG = "--hostile."  # a prefix that keeps a key's meaning (its domain, who sets it) and makes it a kubectl flag


def _hostile(text: str) -> str:
    """One-to-one, so the mutated cluster still matches as the recorded one did: flag-like, and breaking lines."""
    return f"{FLAG}{text}\n{PAYLOAD}\u2028{PAYLOAD}\n#"


def _hostile_labels(labels: dict, pools: bool) -> dict:
    from sunkcheck import objects as o
    from sunkcheck.analyze import nodes as nd

    if pools:
        return {k: _hostile(v) if k == o.POOL_LABEL else v for k, v in labels.items()}
    return {(_hostile(k) if nd.is_user_key(k) else k): (_hostile(v) if nd.is_user_key(k) else v) for k, v in labels.items()}


def _mutate(node: Any, pools: bool, daemonsets: set[str], parent: str = "") -> Any:
    """Every label key and value, taint key and value, owner name and instance type a NodeSet's fix can name
    (or, with `pools`, every pool name on a Node or in an affinity), made hostile wherever it occurs."""
    from sunkcheck import objects as o
    from sunkcheck.analyze import nodes as nd

    if isinstance(node, list):
        return [_mutate(v, pools, daemonsets, parent) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in ("nodeSelector", "nodeLabels") or (k == "labels" and parent == "node-metadata"):
            v = _hostile_labels(v, pools)
        elif k in ("matchExpressions", "matchFields"):
            v = [e | {"key": _hostile(e["key"]), "values": [_hostile(x) for x in e.get("values") or ()]}
                 if not pools and nd.is_user_key(e.get("key", "")) else
                 e | {"values": [_hostile(x) for x in e.get("values") or ()]}
                 if pools and e.get("key") == o.POOL_LABEL else e for e in v]
        elif k in ("taints", "nodeTaints", "tolerations") and not pools:
            v = [t | {"key": _hostile(t["key"])} | ({"value": _hostile(t["value"])} if t.get("value") else {})
                 if t.get("key") and nd.is_user_taint(t["key"]) else t for t in v]
        elif k == "ownerReferences" and not pools:
            v = [r | {"name": _hostile(r["name"])} if r.get("kind") != "NodeSet" and r.get("name") not in daemonsets
                 else r for r in v]
        elif k == "instanceType" and not pools:
            v = _hostile(v)
        else:
            v = _mutate(v, pools, daemonsets, "node-metadata" if k == "metadata" and node.get("kind") == "Node" else k)
        out[k] = v
    return out


def _cases(tmp: pathlib.Path) -> Iterator[tuple[str, pathlib.Path, list[str]]]:
    """Every recorded case, and foreign-pod-resources with a scoped DaemonSet's Pod on a pool Node."""
    from tests.test_fixes import with_scoped_daemon

    for case in CASES:
        yield case, FIXTURES / case, expected(case)["args"]
    snap, _ = with_scoped_daemon(load(FIXTURES / "foreign-pod-resources"))
    directory = tmp / "foreign-pod-resources-scoped-daemon"
    shutil.copytree(FIXTURES / "foreign-pod-resources", directory)
    (directory / "pods.json").write_text(json.dumps({"kind": "List", "items": [p | {"kind": "Pod"} for p in snap.pods or ()]}))
    (directory / "nodes.json").write_text(json.dumps({"kind": "List", "items": [n | {"kind": "Node"} for n in snap.nodes or ()]}))
    yield directory.name, directory, []


def _the_clusters(line: str) -> bool:
    """Whether a fix line is one the cluster's text made: it starts where a cluster string broke a line, or a
    command on it (several join with '; ', or sit in backquotes) is cut by a line break or takes a cluster
    string as a flag."""
    if line.lstrip().startswith((PAYLOAD, "#")):
        return line not in SNIPPET_MARKS  # sunkcheck's own comment lines in a snippet, none of the cluster's text

    try:
        words = [w for command in re.findall(r"(?:kubectl|scontrol|sinfo) [^;`]*", line) for w in shlex.split(command)]
    except ValueError:  # a quote left open: the command goes on at a line the cluster's text began
        return True
    return any(w.startswith(FLAG) for w in words)


@pytest.mark.parametrize("pools", [False, True], ids=["labels-taints-owners", "pool-names"])
def test_no_fix_line_and_no_command_word_is_the_clusters(tmp_path: pathlib.Path, pools: bool) -> None:
    """A fix breaks lines only where sunkcheck does: pasted as a block, it runs no line the cluster wrote, and no
    cluster string becomes a kubectl flag. Every case, its label keys and values, taints, owner names, instance
    types (or its pool names) carrying line breaks and a leading `--`."""
    reached, injected = 0, []
    for case, source, args in _cases(tmp_path):
        hostile = tmp_path / "hostile" / case
        hostile.mkdir(parents=True)
        daemonsets = {d["metadata"]["name"] for d in json.loads((source / "daemonsets.json").read_text())["items"]} \
            if (source / "daemonsets.json").exists() else set()
        for path in source.glob("*.json"):
            if path.name != "expected.json":
                doc = json.loads(path.read_text())
                doc["items"] = [_mutate(item, pools, daemonsets) for item in doc.get("items", [])]
                (hostile / path.name).write_text(json.dumps(doc))
        for extra in source.iterdir():
            if not extra.name.endswith(".json") and extra.is_file():
                shutil.copy(extra, hostile / extra.name)
        doc = run("check", "--snapshot", str(hostile), "-o", "json", *args).json()
        for s in (s for r in doc["results"] for s in r["symptoms"]):
            reached += FLAG in s["fix"]
            injected += [(case, s["id"], line) for line in s["fix"].splitlines() if _the_clusters(line)]
    assert injected == [], "\n".join(map(str, injected))
    assert reached > (5 if pools else 15)  # the cluster's text does reach the fixes, one line each


SHELL_PAYLOAD = "X$(touch${IFS}%s)Y"


def _with_payload(obj: object, payload: str) -> object:
    """Every affinity or toleration value, taint value and Node Pool label value of `obj` with `payload` appended:
    a NodeSet is a custom resource whose values the API server does not validate as label values."""
    if isinstance(obj, list):
        return [_with_payload(x, payload) for x in obj]
    if not isinstance(obj, dict):
        return obj
    out: dict = {}
    for k, v in obj.items():
        if k == "values" and isinstance(v, list):
            out[k] = [x + payload if isinstance(x, str) else x for x in v]
        elif k == "value" and isinstance(v, str):
            out[k] = v + payload
        elif k == "nodeLabels" and isinstance(v, dict):
            out[k] = {a: b + payload for a, b in v.items()}
        else:
            out[k] = _with_payload(v, payload)
    return out


@pytest.mark.parametrize("case", ["misscheduled-label-not-from-pool", "several-nodesets", "misscheduled-label-changed"])
def test_a_fix_pasted_whole_into_a_shell_runs_nothing_the_cluster_wrote(case: str, tmp_path: pathlib.Path) -> None:
    """A value with `$(...)` quoted in a fix's words ("(no command setting ...)", "the taint K=V of ...") ran when the
    fix was pasted as a block: a line bash cannot run whole still expands what it holds. Each fix is pasted into bash
    with kubectl, scontrol and squeue stubbed: the marker file is never made."""
    marker = tmp_path / "ran"
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / case, snap)
    for name in ("nodesets.json", "nodepools.json"):
        path = snap / name
        if path.exists():
            path.write_text(json.dumps(_with_payload(json.loads(path.read_text()), SHELL_PAYLOAD % marker)))
    args = json.loads((FIXTURES / case / "expected.json").read_text()).get("args", [])
    doc = run("check", "--snapshot", str(snap), "-o", "json", *args).json()
    fixes = [s["fix"] for r in doc["results"] for s in r["symptoms"]]
    assert fixes and any("touch" in f for f in fixes), fixes  # the payload reached a fix: the paste is a real test
    stubs = "kubectl(){ :; }; scontrol(){ :; }; squeue(){ :; }; sunkcheck(){ :; }\n"
    for fix in fixes:
        subprocess.run(["bash"], input=stubs + fix + "\n", text=True, capture_output=True, timeout=20, cwd=tmp_path)
        assert not marker.exists(), fix


def test_a_command_word_is_quoted_once() -> None:
    """A cluster string a shell acts on is quoted in a fix's words; as a command's word it is quoted once, the word
    the shell then passes being the string itself."""
    from sunkcheck.symptoms.fixes import arg, prose

    text = "a$(b)'c"
    assert shlex.split(arg(text)) == [text]
    assert shlex.split(prose(text)) == [text]
