"""Hostile and broken input: YAML bombs, special files, duplicate objects, malformed live
objects, garbage from a login node, secrets in snapshots, unsafe snapshot directories. Each test bounds its
own run time (and memory, where the defect was memory) and asserts the exit code and the one-line message."""

from __future__ import annotations

import copy
import errno
import json
import os
import resource
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from sunkcheck.snapshot import Snapshot, load
from tests.conftest import FIXTURES, ROOT, TOKEN, Serve, run
from tests.kubeapi import kubeconfig
from tests.slurmcluster import Sshd, free_ports, keypair, require
from tests.test_server_url import replayed_from

if TYPE_CHECKING:
    from _typeshed import TraceFunction

MEMORY_LIMIT = 1 << 30  # bytes of address space for a subprocess that must not blow up


def sunkcheck(*args: str, timeout: float = 60, memory: int = MEMORY_LIMIT) -> subprocess.CompletedProcess[str]:
    """The real executable in a subprocess whose address space is capped: an unbounded expansion fails."""
    def cap() -> None:
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


def test_billion_laughs_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs())
    assert len(path.read_bytes()) < 400
    started = time.monotonic()
    r = sunkcheck("lint", str(path))
    assert r.returncode == 3, r.stderr
    one_line_error(r.stderr, f"{path}:", "aliases expand")
    assert time.monotonic() - started < 30


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("compute: &c {nodes: {x: {enabled: true, tolerations: [*c]}}}\n")
    r = run("lint", str(path))
    assert r.code == 3
    one_line_error(r.err, f"{path}:1:", "refers to itself")


def test_a_few_aliases_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "anchors.yaml"
    path.write_text("common: &tol [{key: sunk.coreweave.com/lock, operator: Exists}]\ncompute:\n  nodes:\n"
                    + "".join(f"    d{i}: {{enabled: true, gresGpu: null, tolerations: *tol}}\n" for i in range(20)))
    r = run("lint", str(path), "-o", "json")
    assert r.code in (0, 1) and {s["id"] for res in r.json()["results"] for s in res["symptoms"]} == {"values-no-binding"}


def test_deep_document_is_one_line(tmp_path: Path) -> None:
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


def test_lint_is_linear_in_definitions(tmp_path: Path) -> None:
    """Four times the definitions run about four times the lines of sunkcheck's code.
    Lines executed, not seconds: deterministic on a loaded machine."""
    import sunkcheck
    from sunkcheck.values.lint import lint

    package = str(Path(sunkcheck.__file__).parent)

    def lines(count: int) -> int:
        path = tmp_path / f"d{count}.yaml"
        path.write_text(definitions(count))
        executed = 0

        def trace(frame: FrameType, event: str, arg: object) -> TraceFunction | None:
            nonlocal executed
            if not frame.f_code.co_filename.startswith(package):
                return None
            executed += event == "line"
            return trace

        sys.settrace(trace)
        try:
            report = lint([str(path)], "slurm")
        finally:
            sys.settrace(None)
        assert len(report.results) == count and report.status.exit_code == 0  # the layer `shared` is no target
        return executed

    small, large = lines(100), lines(400)
    assert large < 4.5 * small, (small, large)  # linear: 3.9x; the quadratic rules ran 5.3x


# --- 16.6 special files, 16.15 duplicates in a snapshot -------------------------------------------------

@pytest.fixture
def snap(tmp_path: Path) -> Path:
    d = tmp_path / "snap"
    shutil.copytree(FIXTURES / "healthy-pool-name", d)
    return d


def test_fifo_in_a_snapshot_is_refused_not_read(snap: Path) -> None:
    path = snap / "pods.json"
    path.unlink()
    os.mkfifo(path)  # no writer: reading it would block forever
    r = sunkcheck("check", "--snapshot", str(snap), timeout=30)
    assert r.returncode == 3
    one_line_error(r.stderr, f"{path}: cannot read: a FIFO, not a regular file")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_device_in_a_snapshot_is_refused_not_read(snap: Path, device: str) -> None:
    path = snap / "sinfo.txt"
    path.symlink_to(device)  # /dev/zero would never end
    r = sunkcheck("check", "--snapshot", str(snap), timeout=30)
    assert r.returncode == 3
    one_line_error(r.stderr, f"{path}: cannot read: a device, not a regular file")


@pytest.mark.parametrize("kind, reason", [("fifo", "cannot read: a FIFO, not a regular file"),
                                          ("/dev/zero", "cannot read: a device, not a regular file"),
                                          ("large", "larger than 1 MB: refusing the rest")])
def test_a_bad_meta_json_is_refused_without_reading_it(snap: Path, kind: str, reason: str) -> None:
    """meta.json says which Nodes' Pods were read, so a bad one is refused in one line (exit 3), read like the other
    files: a FIFO nobody writes hung the replay forever, /dev/zero ended in a MemoryError."""
    meta = snap / "meta.json"
    meta.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(meta)
    elif kind == "large":
        meta.write_text(json.dumps({"time": "2026-01-01T00:00:00Z", "padding": " " * (1 << 20)}))  # past 1 MiB
    else:
        meta.symlink_to(kind)
    r = sunkcheck("check", "--snapshot", str(snap), "-o", "plain", timeout=30, memory=1 << 30)
    assert r.returncode == 3 and r.stdout == ""
    one_line_error(r.stderr, f"{meta}: {reason}")


@pytest.mark.parametrize("stem, index", [("nodepools", 0), ("nodes", 2)])
def test_duplicate_objects_are_an_error_naming_them(snap: Path, stem: str, index: int) -> None:
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


def test_same_name_in_two_namespaces_is_not_a_duplicate(snap: Path) -> None:
    path = snap / "pods.json"
    doc = json.loads(path.read_text())
    twin = copy.deepcopy(doc["items"][0])
    twin["metadata"]["namespace"] = "elsewhere"
    twin["spec"].pop("nodeName", None)
    doc["items"].append(twin)
    path.write_text(json.dumps(doc))
    assert run("check", "--snapshot", str(snap)).code == 0


@pytest.mark.parametrize("where, field, value, shown", [
    ("status", "numberReady", 10**400, "100000000000... (401 digits)"),
    ("status", "desiredNumberScheduled", -7, "-7"),
    ("status", "observedGeneration", -10**300, "-10000000000... (301 digits)"),
    ("metadata", "generation", 2**63 + 5, "9223372036854775813"),
    ("metadata", "generation", -1, "-1"),
])
def test_counts_and_generations_outside_int64_or_negative_are_refused_at_load(snap: Path, tmp_path: Path, where: str,
                                                                            field: str, value: int, shown: str) -> None:
    """The API server keeps them int64 and non-negative: a 401-digit count went into the perfdata and the
    textfile (Prometheus drops a whole textfile with a sample past float range, sunkcheck_up included), and a
    negative observedGeneration fired nodeset-status-stale."""
    path = snap / "nodesets.json"
    doc = json.loads(path.read_text())
    doc["items"][0].setdefault(where, {})[field] = value
    path.write_text(json.dumps(doc))
    textfile = tmp_path / "out.prom"
    r = run("check", "--snapshot", str(snap), "-o", "nagios", "--textfile", str(textfile))
    name = doc["items"][0]["metadata"]["name"]
    assert r.code == 3 and r.out.startswith("SUNKCHECK UNKNOWN - ") and len(r.out) < 1000, r.out
    one_line_error(r.err, f"item 0 (NodeSet tenant-slurm/{name}): {where}.{field}: {shown} is not an integer from 0 "
                          "to 2^63-1, as the API server keeps it")
    samples = [line.split() for line in textfile.read_text().splitlines() if not line.startswith("#")]
    assert ["sunkcheck_up", "0"] in samples and all(len(sample[-1]) < 20 for sample in samples), samples


# --- 16.14 live objects are checked as their replay would be ---------------------------------------------

def test_live_object_its_replay_would_refuse_leaves_its_step_unknown(serve: Serve, tmp_path: Path) -> None:
    served = load(FIXTURES / "healthy-pool-name")
    pools = copy.deepcopy(served.nodepools or ())
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


def test_live_nodeset_of_the_wrong_shape_is_one_line(serve: Serve) -> None:
    served = load(FIXTURES / "healthy-pool-name")
    nodesets = copy.deepcopy(served.nodesets or ())
    nodesets[0]["spec"]["replicas"] = "4"
    serve(replace(served, nodesets=nodesets))
    r = run("check")
    assert r.code == 3
    name = nodesets[0]["metadata"]["name"]
    one_line_error(r.err, f"nodesets: item 0 (NodeSet tenant-slurm/{name}): spec.replicas is a string, expected an integer")


Nulled = tuple[str, int, str]
"""What an edit nulled: the file stem, the index of the item edited, the shape error."""
Edit = Callable[[Snapshot], Nulled]
"""An edit of healthy-pool-name nulling one item inside a list or map."""


def _null_affinity_value(snap: Snapshot) -> Nulled:
    (snap.nodesets or ())[0]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][1]["values"].append(None)
    return "nodesets", 0, ("spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                           "nodeSelectorTerms[0].matchExpressions[1].values[1] is null, expected a string")


def _null_label_value(snap: Snapshot) -> Nulled:
    (snap.nodes or ())[2]["metadata"]["labels"]["kubernetes.io/arch"] = None  # the pool's first Node
    return "nodes", 2, "metadata.labels['kubernetes.io/arch'] is null, expected a string"


def _null_toleration(snap: Snapshot) -> Nulled:
    (snap.nodesets or ())[0]["spec"]["template"]["spec"]["tolerations"].append(None)
    return "nodesets", 0, "spec.template.spec.tolerations[1] is null, expected an object"


NULLS_INSIDE: list[Edit] = [_null_affinity_value, _null_label_value, _null_toleration]


def _nulled(edit: Edit) -> tuple[Snapshot, str, int, str, str]:
    """healthy-pool-name with one null inside a list or map, which Go never writes: (the snapshot, the file
    stem, the index of the item edited, its kind and name, the shape error)."""
    served = copy.deepcopy(load(FIXTURES / "healthy-pool-name"))
    stem, index, wrong = edit(served)
    meta = getattr(served, stem)[index]["metadata"]
    shown = f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta["name"]
    return served, stem, index, f"{ {'nodes': 'Node', 'nodesets': 'NodeSet'}[stem]} {shown}", wrong


@pytest.mark.parametrize("edit", NULLS_INSIDE)
def test_a_null_list_item_or_map_value_is_refused_naming_it(snap: Path, edit: Edit) -> None:
    served, stem, index, what, wrong = _nulled(edit)
    path = snap / f"{stem}.json"
    path.write_text(json.dumps({"kind": "List", "items": list(getattr(served, stem))}))
    r = run("check", "--snapshot", str(snap))
    assert r.code == 3
    one_line_error(r.err, f"{path}: item {index} ({what}): {wrong}")


@pytest.mark.parametrize("edit", NULLS_INSIDE)
def test_a_live_null_list_item_or_map_value_is_refused_like_other_shapes(serve: Serve, edit: Edit) -> None:
    served, stem, _, what, wrong = _nulled(edit)
    serve(served)
    r = run("check", "-o", "json")
    message = f"{stem}: item 0 ({what}): {wrong}"  # the pool's Nodes are listed by its label: its first is item 0
    assert r.code == 3
    if stem == "nodesets":  # nothing to check without the NodeSet
        one_line_error(r.err, message)
    else:
        assert message in r.json()["errors"]
        assert {s["name"]: s["status"] for s in r.json()["results"][0]["steps"]}["nodes"] == "unknown"


# A DaemonSet's spec.selector lists its Pods live: each is one the API server would never have stored
BAD_SELECTORS = [
    (["app"], "spec.selector is a list, expected an object"),
    ("app=x", "spec.selector is a string, expected an object"),
    ({"matchLabels": ["a"]}, "spec.selector.matchLabels is a list, expected an object"),
    ({"matchLabels": {"app": 5}}, "spec.selector.matchLabels['app'] is an integer, expected a string"),
    ({"matchLabels": {"app.kubernetes.io/name": "dcgm-exporter,kubernetes.io/os!=linux"}},
     "spec.selector.matchLabels['app.kubernetes.io/name'] is 'dcgm-exporter,kubernetes.io/os!=linux', expected a label value"),
    ({"matchLabels": {"app=x,b": "y"}}, "spec.selector.matchLabels has the key 'app=x,b', expected a label key"),
    ({"matchLabels": {"a b": "y"}}, "spec.selector.matchLabels has the key 'a b', expected a label key"),
    ({"matchExpressions": "x"}, "spec.selector.matchExpressions is a string, expected a list"),
    ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
     "spec.selector.matchExpressions[0].operator is 'Gt', expected In, NotIn, Exists or DoesNotExist"),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": [1, 2]}]},
     "spec.selector.matchExpressions[0].values[0] is an integer, expected a string"),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x y"]}]},
     "spec.selector.matchExpressions[0].values[0] is 'x y', expected a label value"),
    ({"matchExpressions": [{"key": "!a", "operator": "Exists"}]},
     "spec.selector.matchExpressions[0].key is '!a', expected a label key"),
    ({"matchExpressions": [{"key": "a", "operator": "In"}]},
     "spec.selector.matchExpressions[0]: In and NotIn need values"),
    ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
     "spec.selector.matchExpressions[0]: Exists and DoesNotExist take no values"),
    # the API server's words; an empty selector took every Pod of the namespace as the DaemonSet's
    ({}, "spec.selector: empty selector is invalid for daemonset"),
    ({"matchLabels": {}, "matchExpressions": []}, "spec.selector: empty selector is invalid for daemonset"),
    ({"matchLabels": None}, "spec.selector: empty selector is invalid for daemonset"),
]


def _with_selector(selector: dict[str, Any]) -> Snapshot:
    served = copy.deepcopy(load(FIXTURES / "ds-healthy"))
    (served.daemonsets or ())[0]["spec"]["selector"] = selector
    return served


@pytest.mark.parametrize("selector, wrong", BAD_SELECTORS)
def test_a_daemonset_selector_the_api_server_would_refuse_is_one_line_live_and_replayed(serve: Serve, tmp_path: Path,
                                                                                       selector: dict[str, Any],
                                                                                       wrong: str) -> None:
    served = _with_selector(selector)
    api = serve(served)
    args = ("check", "--daemonset", "dcgm-exporter", "-n", "monitoring", "-o", "json")
    live = run(*args)
    one_line_error(live.err, f"/daemonsets/dcgm-exporter: item 0 (DaemonSet monitoring/dcgm-exporter): {wrong}")
    assert not [r for r in api.log if r.path.endswith("/pods")]  # nothing spliced into a labelSelector
    d = tmp_path / "snap"
    shutil.copytree(FIXTURES / "ds-healthy", d)
    (d / "daemonsets.json").write_text(json.dumps({"kind": "List", "items": list(served.daemonsets or ())}))
    replay = run(*args, "--snapshot", str(d))
    one_line_error(replay.err, f"{d / 'daemonsets.json'}: item 0 (DaemonSet monitoring/dcgm-exporter): {wrong}")


@pytest.mark.parametrize("selector", [
    {"matchLabels": {"app": "a,b!=c"}}, {"matchLabels": {"a b": "x"}},
    {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
    {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x y"]}]},
    {"matchExpressions": [{"key": "!a", "operator": "Exists"}]}])
def test_the_selector_builder_itself_never_splices_what_is_no_label_syntax(selector: dict[str, Any]) -> None:
    """Behind the shape check, the builder refuses too: a query is never written from text that is no label syntax."""
    from sunkcheck.collect import daemonset
    from sunkcheck.model import InputError

    with pytest.raises(InputError, match=r"DaemonSet n/d: spec.selector is not a label selector the API server accepts"):
        daemonset.selector({"metadata": {"name": "d", "namespace": "n"}, "spec": {"selector": selector}})


def test_a_daemonset_selector_reaches_the_server_as_label_syntax(serve: Serve) -> None:
    api = serve(_with_selector({"matchLabels": {"app.kubernetes.io/name": "dcgm-exporter", "tier": ""},
                                "matchExpressions": [{"key": "b", "operator": "NotIn", "values": ["y", "x"]},
                                                     {"key": "c", "operator": "DoesNotExist"}]}))
    run("check", "--daemonset", "dcgm-exporter", "-n", "monitoring", "-o", "json")
    assert {r.query.get("labelSelector") for r in api.log if r.path == "/api/v1/namespaces/monitoring/pods"} == {
        "app.kubernetes.io/name=dcgm-exporter,tier=,b notin (x,y),!c"}


# --- 16.3, 16.7, 16.8, 16.13: the login node --------------------------------------------------------------

Login = Callable[[str], list[str]]
"""The `login_node` fixture: starts an sshd whose sessions run a script, and gives the --login arguments."""


@pytest.fixture
def login_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Login]:
    """Start an sshd whose every session runs `script` (ForceCommand; $SSH_ORIGINAL_COMMAND is sinfo's
    command line); HOME trusts its host key. Returns the --login arguments."""
    key = keypair(tmp_path / "id_client")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    servers: list[Sshd] = []

    def start(script: str) -> list[str]:
        path = tmp_path / f"login-{len(servers)}.sh"
        path.write_text("#!/bin/sh\n" + script)
        path.chmod(0o755)
        sshd = Sshd(tmp_path / f"sshd-{len(servers)}", [key], extra=f"ForceCommand {path}").__enter__()
        servers.append(sshd)
        (home / ".ssh" / "known_hosts").write_text(sshd.known_hosts_line())
        return ["--login", f"root@127.0.0.1:{sshd.port}", "--ssh-key", str(key)]

    yield start
    for sshd in servers:
        sshd.__exit__(None, None, None)


def steps_of(out: str) -> dict[str, Any]:
    return {s["name"]: s for s in json.loads(out)["results"][0]["steps"]}


@pytest.mark.parametrize("script", [
    "while :; do echo x; sleep 0.2; done\n",  # output trickled forever
    "echo x\nexec >&- 2>&-\nsleep 20\n",      # output closed, no exit status for 20 s
], ids=["trickle", "no-exit-status"])
def test_ssh_timeout_bounds_the_whole_exchange(serve: Serve, login_node: Login, script: str) -> None:
    serve("healthy-pool-name")
    started = time.monotonic()
    r = sunkcheck("check", "-o", "json", *login_node(script), "--ssh-timeout", "2s", timeout=40, memory=4 << 30)
    assert r.returncode == 3, r.stderr
    steps = steps_of(r.stdout)
    assert steps["sinfo"]["status"] == "unknown"
    assert steps["sinfo"]["summary"].endswith("did not finish within 2s (--ssh-timeout)")
    assert steps["nodeset"]["status"] == "ok"
    assert time.monotonic() - started < 20


def test_garbage_from_the_login_node_leaves_only_the_sinfo_step_unknown(serve: Serve, login_node: Login) -> None:
    serve("healthy-pool-name")
    r = run("check", "-o", "json", *login_node("echo 'Welcome! This is not sinfo.'\n"))
    assert r.code == 3 and r.err == ""
    steps = steps_of(r.out)
    assert steps["sinfo"]["status"] == "unknown"
    assert "did not answer as sinfo does: sinfo: unexpected line 'Welcome! This is not sinfo.'" in steps["sinfo"]["summary"]
    assert {name: s["status"] for name, s in steps.items() if name != "sinfo"} == dict.fromkeys(
        ["nodepool", "nodes", "events", "nodeset", "pods"], "ok")


def _sinfo_json_naming(name: object) -> str:
    return json.dumps({"meta": {}, "errors": [], "nodes": [{"name": name, "partitions": ["cpu-batch"], "state": "idle",
                                                            "state_flags": [], "reason": ""}]})


@pytest.mark.parametrize("name, said", [(5, "a number"), (True, "a boolean")])
def test_a_login_node_naming_a_node_with_a_number_leaves_only_the_sinfo_step_unknown(
        serve: Serve, login_node: Login, name: object, said: str) -> None:
    """`sinfo --json` was parsed and its name 5 crashed the analysis later: an internal error, no result."""
    serve("healthy-pool-name")
    for text_form in ("echo 'no' >&2; exit 1", f"echo '{_sinfo_json_naming(name)}'"):  # refused, or garbage too
        script = f"case \"$SSH_ORIGINAL_COMMAND\" in *--json*) echo '{_sinfo_json_naming(name)}';; *) {text_form};; esac\n"
        r = run("check", "-o", "json", *login_node(script))
        assert r.code == 3 and r.err == ""
        steps = steps_of(r.out)
        assert steps["sinfo"]["status"] == "unknown"
        assert f"sinfo --json: nodes[0].name is {said}, not a string" in steps["sinfo"]["summary"]
        assert {n: s["status"] for n, s in steps.items() if n != "sinfo"} == dict.fromkeys(
            ["nodepool", "nodes", "events", "nodeset", "pods"], "ok")


@pytest.mark.parametrize("name, said", [(5, "a number"), (True, "a boolean")])
def test_a_recorded_sinfo_naming_a_node_with_a_number_is_one_line(snap: Path, name: object, said: str) -> None:
    """In a snapshot, like any malformed file (a live run never keeps output that does not parse)."""
    (snap / "sinfo.json").write_text(_sinfo_json_naming(name))
    r = run("check", "--snapshot", str(snap))
    assert r.code == 3
    one_line_error(r.err, f"{snap / 'sinfo.json'}: sinfo --json: nodes[0].name is {said}, not a string")


BOMB = '{"sinfo": [{"nodes": {"nodes": ["x[0-99999999]"]}, "node": {"state": ["IDLE"]}, "partition": {"name": "p"}}]}'


def test_hostlist_bomb_from_the_login_node_is_refused_not_expanded(serve: Serve, login_node: Login) -> None:
    serve("healthy-pool-name")
    script = f"case \"$SSH_ORIGINAL_COMMAND\" in *--json*) echo '{BOMB}';; *) echo 'no' >&2; exit 1;; esac\n"
    r = sunkcheck("check", "-o", "json", *login_node(script), timeout=60, memory=4 << 30)
    assert r.returncode == 3, r.stderr
    summary = steps_of(r.stdout)["sinfo"]["summary"]
    assert "hostlist 'x[0-99999999]' names more than 262144 nodes" in summary


def test_hostlist_bomb_in_a_snapshot_is_one_line(snap: Path) -> None:
    (snap / "sinfo.json").write_text(BOMB)
    r = sunkcheck("check", "--snapshot", str(snap), timeout=60)
    assert r.returncode == 3
    one_line_error(r.stderr, f"{snap / 'sinfo.json'}: sinfo: hostlist 'x[0-99999999]' names more than 262144 nodes")


@pytest.mark.parametrize("args, message", [
    (["--login", "login;touch {marker}"], "hostname contains invalid characters"),
    (["--login", "login$(touch {marker})"], "hostname contains invalid characters"),
    (["--login", "-oProxyCommand=touch {marker}"], "hostname contains invalid characters"),
    (["--login", "127.0.0.1\n* ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAttacker"], "hostname contains invalid characters"),
    (["--login", "login host"], "hostname contains invalid characters"),
    (["--login", "*"], "hostname contains invalid characters"),
    (["--login", "x`touch {marker}`@login"], "remote username contains invalid characters"),
    (["--login", "login:70000"], "port 70000 is not between 1 and 65535"),
    (["--login", "login", "--ssh-user", "root;touch {marker}"], "remote username contains invalid characters"),
])
def test_login_is_validated_like_openssh_before_anything_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              args: list[str], message: str) -> None:
    marker = tmp_path / "pwned"
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    # were the host expanded into it, this ProxyCommand would run the marker's command in a shell
    (home / ".ssh" / "config").write_text("Host *\n    ProxyCommand sh -c 'echo %h %r > /dev/null'\n")
    monkeypatch.setenv("HOME", str(home))
    r = run("check", *(a.format(marker=marker) for a in args), "--accept-new-host-key")
    assert r.code == 3
    one_line_error(r.err, message)
    assert not marker.exists() and not (home / ".ssh" / "known_hosts").exists()


def test_accept_new_records_exactly_one_line_for_the_host(serve: Serve, login_node: Login) -> None:
    serve("healthy-pool-name")
    args = login_node("echo 'garbage'\n")
    known = Path(os.environ["HOME"]) / ".ssh" / "known_hosts"
    known.unlink()
    run("check", *args, "--accept-new-host-key")
    port = args[1].rsplit(":", 1)[1]
    lines = known.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"[127.0.0.1]:{port} ssh-ed25519 ")


# --- 16.10 what a snapshot keeps and redacts -----------------------------------------------------------

def plant(pod_spec: dict[str, Any], where: str) -> None:
    """A secret in every place a Pod spec carries one, each marked SECRET-<where>-<place>."""
    first = pod_spec["containers"][0]
    first["env"] = [{"name": "TOKEN", "value": f"SECRET-{where}-env"},
                    {"name": "DB", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]
    first["command"], first["args"] = [f"SECRET-{where}-command"], [f"--token=SECRET-{where}-args"]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        first[probe] = {"exec": {"command": ["sh", "-c", f"curl -H 'X-Token: SECRET-{where}-{probe}-exec' x"]}}
    first["readinessProbe"]["httpGet"] = {"path": "/ready", "port": 8080, "httpHeaders": [
        {"name": "Authorization", "value": f"Bearer SECRET-{where}-probe-header"}]}
    first["lifecycle"] = {"postStart": {"exec": {"command": [f"SECRET-{where}-postStart"]}},
                          "preStop": {"httpGet": {"port": 80, "httpHeaders": [
                              {"name": "X-Token", "value": f"SECRET-{where}-preStop-header"}]}}}
    pod_spec["initContainers"] = [{"name": "init", "env": [{"name": "X", "value": f"SECRET-{where}-init"}],
                                   "startupProbe": {"exec": {"command": [f"SECRET-{where}-init-probe"]}},
                                   "lifecycle": {"preStop": {"exec": {"command": [f"SECRET-{where}-init-preStop"]}}}}]
    pod_spec["ephemeralContainers"] = [{"name": "debug", "env": [{"name": "X", "value": f"SECRET-{where}-ephemeral"}]}]


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@pytest.mark.parametrize("case, kind", [("healthy-pool-name", "nodesets"), ("ds-pod-pending", "daemonsets")])
def test_snapshot_redacts_a_secret_planted_in_every_place(serve: Serve, tmp_path: Path, cert: tuple[str, str],
                                                          monkeypatch: pytest.MonkeyPatch, case: str, kind: str) -> None:
    served = load(FIXTURES / case)
    workloads, pods = copy.deepcopy(getattr(served, kind)), copy.deepcopy(served.pods or ())
    plant(workloads[0]["spec"]["template"]["spec"], kind)
    workloads[0]["metadata"].setdefault("annotations", {})[LAST_APPLIED] = f"SECRET-{kind}-last-applied"
    for pod in pods:
        plant(pod["spec"], "pod")
        pod["metadata"].setdefault("annotations", {})[LAST_APPLIED] = "SECRET-pod-last-applied"
    api = serve(replace(served, pods=pods, **{kind: workloads}))
    kubeconfig(api.kubeconfig, api.url.replace("https://", "https://admin:SECRET-url@"), token=TOKEN, ca=cert[0])
    target = ["--daemonset", workloads[0]["metadata"]["name"], "-n", workloads[0]["metadata"]["namespace"]] \
        if kind == "daemonsets" else []
    live = run("check", "-o", "json", *target, "--save", str(tmp_path / "saved"))
    recorded = run("snapshot", str(tmp_path / "recorded"), *target)
    assert recorded.code == 0 and "SECRET" not in live.out + live.err + recorded.out + recorded.err
    for directory in (tmp_path / "saved", tmp_path / "recorded"):
        text = "".join(p.read_text() for p in sorted(directory.iterdir()))
        assert "SECRET" not in text
        assert "<redacted by sunkcheck>" in text and "secretKeyRef" in text  # a reference names no secret
        assert json.loads((directory / "meta.json").read_text())["server"] == api.url
    replay = run("check", "-o", "json", *target, "--snapshot", str(tmp_path / "saved"))
    assert replay.verdict() == live.verdict() and replay.code == live.code


def test_server_userinfo_never_reaches_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = kubeconfig(tmp_path / "kubeconfig", f"https://admin:SECRET-url@127.0.0.1:{free_ports(1)[0]}", token=TOKEN)
    monkeypatch.setenv("KUBECONFIG", str(path))
    r = run("check")
    assert r.code == 3 and "cannot reach the API server https://127.0.0.1:" in r.err and "SECRET" not in r.err


def test_v6_request_lines_carry_no_userinfo(serve: Serve, cert: tuple[str, str]) -> None:
    api = serve("two-problems")
    kubeconfig(api.kubeconfig, api.url.replace("https://", "https://admin:SECRET-url@"), token=TOKEN, ca=cert[0])
    r = run("check", "-v", "6", "-o", "json")
    assert r.code == 1 and f"sunkcheck: GET {api.url}/" in r.err and "SECRET" not in r.err


@pytest.mark.parametrize("server, shown", [("https://u:SECRET-pw@h.example:6443", "https://h.example:6443"),
                                           ("https://u:SECRET-pw@[h", "https://[h")])  # not a URL urlsplit reads
def test_a_replayed_meta_json_server_shows_no_userinfo(tmp_path: Path, server: str, shown: str) -> None:
    text, doc = replayed_from(tmp_path, server)
    assert f"API server {shown}" in text.out and "SECRET" not in text.out + text.err
    assert doc.json()["sources"][0]["server"] == shown and "SECRET" not in doc.out


# --- 16.11 saving into a directory, 16.12 a failing save -----------------------------------------------

def test_save_refuses_a_non_empty_directory_before_reading_the_cluster(serve: Serve, tmp_path: Path) -> None:
    api = serve("healthy-pool-name")
    old = tmp_path / "snap"
    old.mkdir()
    (old / "sinfo.txt").write_text("stale-node-001|cpu|idle|none\n")  # from an earlier snapshot
    for args in (["check", "--save", str(old)], ["snapshot", str(old)]):
        r = run(*args)
        assert r.code == 3 and r.out == ""
        one_line_error(r.err, f"{old}: not empty: pass --force to replace the snapshot there")
    assert [p.name for p in old.iterdir()] == ["sinfo.txt"]
    assert api.log == []  # refused before the cluster was read


def test_force_replaces_the_old_snapshot_whole_and_follows_no_planted_symlink(serve: Serve, tmp_path: Path) -> None:
    serve("healthy-pool-name")
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "sinfo.txt").write_text("stale-node-001|cpu|idle|none\n")
    (snap / "nodes.json").symlink_to(victim)
    r = run("check", "-o", "json", "--save", str(snap), "--force")
    assert r.code == 0, r.err
    assert victim.read_text() == "keep me\n"
    names = sorted(p.name for p in snap.iterdir())
    assert "sinfo.txt" not in names and "meta.json" in names and not (snap / "nodes.json").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kubeconfig-1", "snap", "victim"]  # no temp dir left
    assert run("check", "-o", "json", "--snapshot", str(snap)).verdict() == r.verdict()


@pytest.mark.parametrize("make, message", [
    (lambda d: d.symlink_to(d.parent / "elsewhere", target_is_directory=True), "is a symbolic link"),
    (lambda d: (d.mkdir(), (d / "notes.txt").write_text("mine")), "holds notes.txt, not snapshot files"),
    (lambda d: ((d / "nodes.json").mkdir(parents=True), (d / "nodes.json" / "thesis.tex").write_text("mine")),
     "holds nodes.json, not snapshot files"),
])
def test_force_never_replaces_what_is_not_a_snapshot(serve: Serve, tmp_path: Path, make: Callable[[Path], object],
                                                     message: str) -> None:
    serve("healthy-pool-name")
    (tmp_path / "elsewhere").mkdir()
    snap = tmp_path / "snap"
    make(snap)
    r = run("snapshot", str(snap), "--force")
    assert r.code == 3
    one_line_error(r.err, f"{snap}: {message}")
    assert not (snap / "nodes.json").is_dir() or (snap / "nodes.json" / "thesis.tex").read_text() == "mine"


def test_a_failing_save_keeps_the_diagnosis(serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sunkcheck import snapshot

    def disk_full(*args: object) -> NoReturn:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    serve("healthy-pool-name")
    monkeypatch.setattr(snapshot, "_write", disk_full)
    r = run("check", "-o", "json", "--save", str(tmp_path / "snap"))
    doc = r.json()
    assert r.code == 3 and doc["status"] == "unknown" and doc["results"][0]["status"] == "ok"
    assert doc["errors"] == [f"--save: {tmp_path / 'snap'}: cannot write the snapshot: No space left on device"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kubeconfig-1"]  # no temporary directory left


def test_a_destination_that_cannot_be_one_is_refused_first(serve: Serve, tmp_path: Path) -> None:
    api = serve("healthy-pool-name")
    (tmp_path / "file").write_text("")
    r = run("check", "--save", str(tmp_path / "file" / "snap"))
    assert r.code == 3 and api.log == []
    one_line_error(r.err, f"{tmp_path / 'file' / 'snap'}: cannot save a snapshot there: Not a directory")


def test_an_internal_error_still_writes_up_0_and_leaves_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sunkcheck import runner

    def broken(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError("a bug")

    monkeypatch.setattr(runner, "diagnose", broken)
    prom = tmp_path / "metrics" / "sunkcheck.prom"
    prom.parent.mkdir()
    prom.write_text("sunkcheck_up 1\n")
    r = run("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), "--textfile", str(prom))
    assert r.code == 3 and "internal error: RuntimeError: a bug" in r.err
    assert "sunkcheck_up 0" in prom.read_text()
    assert [p.name for p in prom.parent.iterdir()] == ["sunkcheck.prom"]


@pytest.mark.parametrize("limit", [1024, 0])
def test_a_textfile_too_big_for_the_disk_is_replaced_by_up_0(tmp_path: Path, limit: int) -> None:
    """The whole file past a file size limit (as a full disk): the few hundred bytes of sunkcheck_up 0 and
    every target UNKNOWN take its place, so monitoring never keeps the previous run's OK; when even they cannot
    be written, the one error line says so."""
    def cap() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # as Python does: the write fails with EFBIG, not the run
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    prom = tmp_path / "sunkcheck.prom"
    prom.write_text("sunkcheck_up 1\n")
    r = subprocess.run([sys.executable, "-m", "sunkcheck", "check", "--snapshot", str(FIXTURES / "several-nodesets"),
                        "--textfile", str(prom), "-o", "nagios"], capture_output=True, text=True, timeout=60,
                       preexec_fn=cap, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    failed = f"--textfile {prom}: cannot write in {tmp_path}: File too large"
    assert r.returncode == 2 and r.stdout.startswith("SUNKCHECK CRITICAL - ") and "and 1 more error" in r.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["sunkcheck.prom"]  # no temporary file left
    if limit == 0:
        one_line_error(r.stderr, f"{failed}; nor sunkcheck_up 0 in its place: File too large")
        assert prom.read_text() == "sunkcheck_up 1\n"
        return
    one_line_error(r.stderr, f"{failed}; wrote sunkcheck_up 0 in its place")
    samples = [line for line in prom.read_text().splitlines() if not line.startswith("#")]
    assert samples[0] == "sunkcheck_up 0" and samples[1].startswith("sunkcheck_last_run_timestamp_seconds ")
    assert len(samples) == 5 and all(re.fullmatch(r'sunkcheck_status\{.*,name="[^"]+"\} 3', s) for s in samples[2:])


def _special(kind: str, path: Path) -> None:
    """Make `path` a file sunkcheck must never replace (never the real /dev/null: a device node of our own)."""
    if kind == "device":
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is; needs root
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink to stdout":
        path.symlink_to("/proc/self/fd/1")
    elif kind == "symlink to a file":
        (path.parent / "real.prom").write_text("sunkcheck_up 1\n")
        path.symlink_to("real.prom")
    else:
        path.mkdir()


SPECIAL = {"device": "a device", "fifo": "a FIFO", "symlink to stdout": "a symbolic link",
           "symlink to a file": "a symbolic link", "directory": "a directory"}


@pytest.mark.parametrize("kind", SPECIAL)
@pytest.mark.parametrize("output", ["plain", "nagios"])
def test_textfile_never_replaces_what_is_not_a_regular_file(tmp_path: Path, kind: str, output: str) -> None:
    """Renaming over /dev/null as root replaces the device with a file: such a path is refused before the check
    runs, in one line, and is left as it was with nothing beside it."""
    if kind == "device":
        require("mknod", "it makes a device node")
    target = tmp_path / "metrics" / "sunkcheck.prom"
    target.parent.mkdir()
    _special(kind, target)
    before = {p.name: p.lstat() for p in target.parent.iterdir()}
    r = run("check", "--snapshot", str(FIXTURES / "two-problems"), "--textfile", str(target), "-o", output)
    assert r.code == 3
    one_line_error(r.err, f"--textfile {target}: is {SPECIAL[kind]}, not a regular file: refusing to replace it")
    assert (r.out.startswith(f"SUNKCHECK UNKNOWN - --textfile {target}: is {SPECIAL[kind]}") if output == "nagios"
            else r.out == "")
    after = {p.name: p.lstat() for p in target.parent.iterdir()}
    assert {n: (s.st_mode, s.st_ino, s.st_rdev) for n, s in after.items()} == \
        {n: (s.st_mode, s.st_ino, s.st_rdev) for n, s in before.items()}


def test_an_empty_textfile_path_is_the_current_directory_and_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = run("check", "--snapshot", str(FIXTURES / "two-problems"), "--textfile", "")
    assert r.code == 3 and list(tmp_path.iterdir()) == []
    one_line_error(r.err, "--textfile .: is a directory, not a regular file: refusing to replace it")


def test_a_textfile_replaced_by_a_fifo_during_the_run_is_not_written(tmp_path: Path) -> None:
    """The check before the run cannot see what happens during it (--wait runs for hours): the write checks
    again, and its refusal is the report's error like any failed write."""
    from sunkcheck.textfile import TargetError, write_atomically

    target = tmp_path / "sunkcheck.prom"
    os.mkfifo(target)
    with pytest.raises(TargetError, match="is a FIFO, not a regular file"):
        write_atomically(target, "sunkcheck_up 1\n")
    assert stat.S_ISFIFO(target.lstat().st_mode) and [p.name for p in tmp_path.iterdir()] == ["sunkcheck.prom"]


def test_an_internal_error_printing_the_report_still_writes_up_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The metrics are written before the report is printed (so a failed write is in it): a bug in the
    printing must still leave the scrape saying the run failed, as its exit code does."""
    from sunkcheck import render

    def broken(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError("a bug")

    monkeypatch.setattr(render, "render", broken)
    prom = tmp_path / "sunkcheck.prom"
    r = run("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), "--textfile", str(prom))
    assert r.code == 3 and "internal error: RuntimeError: a bug" in r.err
    assert "sunkcheck_up 0" in prom.read_text() and "sunkcheck_status" not in prom.read_text()


def test_host_key_hints_quote_what_they_print_for_copying(tmp_path: Path) -> None:
    """A HostName from ssh_config is not validated (the user wrote it): the hint still pastes safely."""
    import paramiko

    from sunkcheck.collect.ssh import _policy
    from sunkcheck.collect.sshconfig import Hop, SshError

    key = paramiko.Ed25519Key.from_private_key_file(str(keypair(tmp_path / "host")))
    hop = Hop("login", "login $(touch pwned)", 2222, "root", (), (str(tmp_path / "known_hosts"),), None, None)
    with pytest.raises(SshError) as refused:
        _policy(hop, False, None).missing_host_key(None, "[login $(touch pwned)]:2222", key)
    assert f"`ssh-keyscan -p 2222 'login $(touch pwned)' >> {tmp_path / 'known_hosts'}`" in str(refused.value)
    with pytest.raises(SshError, match="refusing to record a host key"):
        _policy(hop, True, None).missing_host_key(None, "[login $(touch pwned)]:2222", key)
    assert not (tmp_path / "known_hosts").exists()
    # behind a ProxyCommand ssh-keyscan would ask the wrong machine: ssh goes the same way (config and key quoted)
    proxied = replace(hop, keys=(str(tmp_path / "my key"),), proxy_command="ssh -W %h:%p bastion")
    with pytest.raises(SshError) as refused:
        _policy(proxied, False, str(tmp_path / "ssh config")).missing_host_key(None, "[login $(touch pwned)]:2222", key)
    said = str(refused.value)
    assert (f"connect once through its ProxyCommand with `ssh -F '{tmp_path / 'ssh config'}' -o StrictHostKeyChecking=ask "
            f"-p 2222 -l root -i '{tmp_path / 'my key'}' login true` and answer yes only to that fingerprint") in said
    assert "ssh-keyscan" not in said


IMPORT_ORDER = """
import sys, threading
import sunkcheck.collect.kube as kube
from sunkcheck import source
from sunkcheck.target import SlurmLogin, Target

started, seen = threading.Event(), {}
class Stop(Exception): pass
def sinfo(login):  # the SSH thread's first step would import paramiko, and with it yaml._yaml
    seen["yaml"] = "yaml" in sys.modules
    started.set()
    return None, "stopped"
def stop(*args):  # the main thread reads the kubeconfig (yaml) only once the SSH thread has started
    started.wait(10)
    raise Stop
source._sinfo, kube.Kube = sinfo, stop
before = "yaml" in sys.modules
try:
    source.load(source.Access(), Target(nodeset="n", slurm=SlurmLogin("login")), False)
except Stop:
    pass
print(before, seen["yaml"])
"""


def test_yaml_is_imported_before_the_ssh_thread_starts() -> None:
    """The SSH thread imports paramiko, whose invoke imports yaml._yaml, which imports yaml; the main thread
    reads the kubeconfig with yaml meanwhile. Imported from both sides in opposite orders, Python raised
    _DeadlockError (an internal error seen once in the suite), so yaml is imported before the thread starts."""
    out = subprocess.run([sys.executable, "-c", IMPORT_ORDER], capture_output=True, text=True, timeout=60, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.split() == ["False", "True"], out.stderr
