"""Errors that say where and what: what could not be read and why, what could not be
judged, each error once, and the next step to take."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, Serve, run


@pytest.mark.parametrize("nodesets", [None, {"apiVersion": "v1", "kind": "List", "items": []}],
                         ids=["missing", "empty list"])
def test_a_cluster_without_nodesets_suggests_its_daemonsets(tmp_path: Path, nodesets: dict[str, Any] | None) -> None:
    """ds-healthy's cluster runs the DaemonSet dcgm-exporter and no NodeSet."""
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "ds-healthy", snap)
    (snap / "nodesets.json").unlink(missing_ok=True)
    if nodesets is not None:
        (snap / "nodesets.json").write_text(json.dumps(nodesets))
    r = run("check", "--snapshot", str(snap))
    assert r.code == 3
    assert r.err.count("\n") == 1 and "pass --daemonset dcgm-exporter" in r.err, r.err


def test_a_live_read_that_failed_says_what_was_asked_and_the_answer_once(serve: Serve) -> None:
    """Events are listed cluster-wide (about NodePools) and in tenant-slurm (about the NodeSet): both 403."""
    api = serve("healthy-pool-name")
    api.faults.forbidden.add("events")
    plain, nagios = run("check", "-o", "plain"), run("check", "-o", "nagios")
    doc = run("check", "-o", "json").json()
    events = next(s for s in doc["results"][0]["steps"] if s["name"] == "events")
    assert events == {"name": "events", "status": "unknown", "counts": {},
                      "summary": "not read: 403 Forbidden, list events cluster-wide; "
                                 "403 Forbidden, list events in tenant-slurm"}
    assert len(doc["errors"]) == 2 and all("cannot list resource \"events\"" in e for e in doc["errors"])
    for r in (plain, nagios):
        assert r.code == 3 and "not captured" not in r.out
        for error in doc["errors"]:  # each once: nagios' status line names the target, not an error again
            assert r.out.count(error) == 1, r.out
    # the NodeSet has no symptom in what was read, but its Events could not be judged: never "looks right"
    assert "looks right" not in plain.out and "bound as intended" not in nagios.out
    assert "no symptoms in what could be read; not judged: events" in plain.out
    status_line = nagios.out.splitlines()[0].split(" | ")[0]
    assert status_line == "SUNKCHECK UNKNOWN - slurm-cpu-batch: not judged: events; and 2 more errors"


@pytest.mark.parametrize("path, status, said", [
    ("/api/v1/namespaces/slurm-prod/events?fieldSelector=x", 403, "403 Forbidden, list events in slurm-prod"),
    ("/api/v1/nodes?labelSelector=a%3Db", 500, "500 Internal Server Error, list nodes cluster-wide"),
    ("/apis/sunk.coreweave.com/v1alpha1/namespaces/t/nodesets/gpu", 404, "404 Not Found, get nodesets gpu in t"),
    ("/apis/compute.coreweave.com/v1alpha1/nodepools", 0, "timed out, list nodepools cluster-wide"),
    ("/api/v1/pods", 200, "an answer sunkcheck cannot use, list pods cluster-wide"),
    ("/api/v1/pods", 499, "status 499, list pods cluster-wide"),
])
def test_why_a_read_failed_in_a_few_words(path: str, status: int, said: str) -> None:
    from sunkcheck.collect.cluster import why
    from sunkcheck.collect.kube import CallError

    assert why(CallError(path, status, "the whole message")) == said


def test_a_missing_object_names_the_context_and_the_api_server(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    r = run("check", "--nodeset", "slurm-gpu", "-o", "json")
    assert r.code == 3
    assert (f"NodeSet slurm-gpu not found in namespace tenant-slurm on context test ({api.url}) "
            "(NodeSets there: slurm-cpu-batch)") in r.err
    assert r.json()["sources"] == [{"type": "live", "context": "test", "server": api.url}]
    r = run("check", "-n", "slurm-prod")
    assert f"no NodeSets in namespace slurm-prod on context test ({api.url})" in r.err


@pytest.mark.parametrize("args, said", [
    (["--nodeset", "nope"], "NodeSet nope not found in namespace tenant-slurm on {where} (NodeSets there: slurm-cpu-batch)"),
    # the NodeSets read beside the one named: those of every namespace
    (["--nodeset", "nope", "-A"], "NodeSet nope not found in any namespace on {where} (NodeSets there: slurm-cpu-batch)"),
    (["--daemonset", "nope", "-A"], "DaemonSet nope not found in any namespace on {where} (DaemonSets there: none)"),
    (["--pool", "nopool"], "--pool nopool: no such Node Pool on {where} (Node Pools, nearest first: "),
], ids=["nodeset", "nodeset -A", "daemonset -A", "node pool"])
def test_a_missing_object_names_the_context_once_with_one_context_or_several(
        tmp_path: Path, cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch, args: list[str], said: str) -> None:
    """Main said `context cluster-0: NodeSet nope not found ... on context cluster-0 (...)` with several contexts;
    a missing Node Pool named neither, and a NodeSet missing from every namespace left `sources` empty."""
    from tests.test_unattended import two_clusters

    config, apis = two_clusters(tmp_path, cert, "healthy-pool-name", "healthy-pool-name")
    monkeypatch.setenv("KUBECONFIG", str(config))
    try:
        several = run("check", "--all-contexts", "-o", "json", *args).json()
        one = run("check", "--context", "cluster-1", "-o", "json", *args)
    finally:
        for api in apis:
            api.__exit__(None, None, None)
    where = [f"context cluster-{i} ({api.url})" for i, api in enumerate(apis)]
    assert [e.startswith(said.format(where=w)) for e, w in zip(several["errors"], where, strict=True)] == [True, True]
    assert all(e.count("cluster-") == 1 for e in several["errors"]), several["errors"]
    assert several["sources"] == [{"type": "live", "context": f"cluster-{i}", "server": api.url}
                                  for i, api in enumerate(apis)]
    assert one.code == 3 and one.err.startswith("sunkcheck: error: " + said.format(where=where[1]))
    assert one.json()["errors"] == [one.err.removeprefix("sunkcheck: error: ").rstrip("\n")]
    assert one.json()["sources"] == several["sources"][1:]


def test_a_missing_api_names_the_context_and_server_first_and_once(
        tmp_path: Path, cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The NodeSet CRD missing ends the run; the NodePool CRD missing is an error line. Main said `... is SUNK
    installed? on context cluster-1 (...)` (twice with several contexts) and never where the NodePool API was missing."""
    from tests.test_unattended import two_clusters

    config, apis = two_clusters(tmp_path, cert, "healthy-pool-name", "healthy-pool-name")
    apis[0].faults.missing_groups.add("compute.coreweave.com")
    apis[1].faults.missing_groups.add("sunk.coreweave.com")
    monkeypatch.setenv("KUBECONFIG", str(config))
    try:
        several = run("check", "--all-contexts", "-o", "json").json()
        one = run("check", "--context", "cluster-1")
    finally:
        for api in apis:
            api.__exit__(None, None, None)
    assert several["errors"] == [
        f"nodepools: context cluster-0 ({apis[0].url}): this cluster has no NodePool API (compute.coreweave.com/v1alpha1) "
        "— is it a CKS cluster?",
        f"context cluster-1 ({apis[1].url}): this cluster has no NodeSet API (sunk.coreweave.com/v1alpha1) — is SUNK "
        "installed?"]
    assert one.err == f"sunkcheck: error: {several['errors'][1]}\n"


def test_explain_of_a_missing_node_names_the_context_and_server(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    r = run("explain", "--node", "nope")
    assert r.code == 3 and r.err.startswith(f"sunkcheck: error: --node nope: no such Node on context test ({api.url}) "
                                            "(Nodes, nearest first: ")


def test_json_sources_name_an_unreachable_server(serve: Serve, no_backoff: None) -> None:
    api = serve("healthy-pool-name")
    api.__exit__(None, None, None)
    r = run("check", "-o", "json")
    assert r.code == 3 and "cannot reach the API server" in r.err
    assert r.json()["sources"] == [{"type": "live", "context": "test", "server": api.url}]


def test_an_unreachable_context_is_a_row_counted_and_named(tmp_path: Path, cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch,
                                                          no_backoff: None) -> None:
    from tests.test_unattended import one_unreachable

    plain, nagios, answer = one_unreachable(tmp_path, cert, monkeypatch, "plain", "nagios", "json")
    doc = answer.json()
    headline, rows = plain.out.splitlines()[0], plain.out.splitlines()
    assert "1 context not checked (cluster-2)" in headline
    header = next(line for line in rows if line.startswith("CONTEXT"))
    row = next(line for line in rows if line.startswith("cluster-2"))
    assert row.split(None, 8) == ["cluster-2", "-", "-", "-", "-", "-", "-", "UNKNOWN", "not checked"], (header, row)
    status_line = nagios.out.splitlines()[0].split(" | ")[0]
    assert "context cluster-2: cannot reach" in status_line
    assert {s["context"] for s in doc["sources"]} == {"cluster-0", "cluster-1", "cluster-2"}


def test_a_large_kubeconfig_without_aliases_is_not_said_to_have_them(serve: Serve, cert: tuple[str, str], tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from sunkcheck.collect import kubeconfig as kc
    from tests.test_kubeconfig import odd_config

    monkeypatch.setattr(kc, "MAX_VALUES", 1000)  # a million values take PyYAML half a minute to parse
    api = serve("healthy-pool-name")
    path = tmp_path / "config"
    path.write_text(odd_config(api, cert, preferences="{" + ", ".join(f"k{i}: v" for i in range(600)) + "}"))
    r = run("check", "--kubeconfig", str(path))
    assert r.err == f"sunkcheck: error: kubeconfig {path}: more than 1,000 values: too large for a kubeconfig\n"
    path.write_text(odd_config(api, cert, preferences="{a: &a [" + ", ".join(["x"] * 40) + "], b: [" +
                               ", ".join(["*a"] * 40) + "]}"))
    assert "its YAML aliases expand to more than 1,000 values" in run("check", "--kubeconfig", str(path)).err


@pytest.mark.parametrize("ca, kind", [("dir", "a directory"), ("/dev/null", "a device")])
def test_a_certificate_file_that_is_no_file_is_named_as_such(serve: Serve, cert: tuple[str, str], tmp_path: Path, ca: str,
                                                             kind: str) -> None:
    from tests.test_kubeconfig import odd_config

    api = serve("healthy-pool-name")
    ca = str(tmp_path) if ca == "dir" else ca
    path = tmp_path / "config"
    path.write_text(odd_config(api, cert, clusters=f"[{{name: c, cluster: {{server: '{api.url}', "
                                                   f"certificate-authority: '{ca}'}}}}]"))
    r = run("check", "--kubeconfig", str(path))
    assert r.code == 3 and r.err == f"sunkcheck: error: kubeconfig {path}: context t: certificate-authority {ca} is {kind}, " \
                                    "not a file\n"


def test_a_missing_kubeconfig_is_worded_one_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nope"
    by_flag = run("check", "--kubeconfig", str(missing))
    monkeypatch.setenv("KUBECONFIG", str(missing))
    by_env = run("check")
    assert by_flag.err == by_env.err == f"sunkcheck: error: kubeconfig {missing}: no such file\n"


@pytest.mark.parametrize("key, values", [("sunk.example.com/node name", ["true"]), ("sunk.example.com/node", ["a b"]),
                                         ("-selector", ["x"])])
def test_no_fix_sets_a_label_the_api_server_would_refuse(key: str, values: list[str]) -> None:
    """pool-labels-missing: the NodeSet requires a label no pool Node carries, one no Node could carry either
    (a hand-edited snapshot's); the fix says so in words rather than print a patch the API server refuses."""
    from dataclasses import replace

    from sunkcheck import snapshot
    from sunkcheck.pipeline import diagnose
    from sunkcheck.target import Target

    snap = snapshot.load(FIXTURES / "pool-labels-missing")
    nodeset = json.loads(json.dumps((snap.nodesets or ())[0]))
    term = nodeset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    term["matchExpressions"][1] = {"key": key, "operator": "In", "values": values}
    report = diagnose(replace(snap, nodesets=(nodeset,)), Target())
    fix = next(s.fix for r in report.results for s in r.symptoms if s.id == "pool-labels-missing")
    assert "kubectl patch" not in fix and f"no command setting {key}={values[0]} in Node Pool slurm-cpu" in fix, fix


def test_no_fix_adds_a_taint_the_api_server_would_refuse() -> None:
    from sunkcheck.analyze.nodepool import Pool
    from sunkcheck.symptoms.fixes import taint_nodepool

    pool = Pool("slurm-cpu", {"spec": {}}, (), ())
    fix = taint_nodepool(pool, [{"key": "sunk.example.com/node", "value": "a b", "effect": "NoSchedule"}])
    assert "kubectl" not in fix and "not a taint the API server accepts" in fix
    assert "kubectl patch" in taint_nodepool(pool, [{"key": "sunk.example.com/node", "effect": "NoSchedule"}])


def test_an_unreachable_context_is_told_once_with_why(tmp_path: Path, cert: tuple[str, str],
                                                     monkeypatch: pytest.MonkeyPatch, no_backoff: None) -> None:
    """Its error is the one Nagios part naming it, the headline counts it as a context not checked (not also as a
    check that could not run), and -o json has an entry for it."""
    from tests.test_schemas import validate
    from tests.test_unattended import one_unreachable

    plain, nagios, answer = one_unreachable(tmp_path, cert, monkeypatch, "plain", "nagios", "json")
    doc = answer.json()
    headline = plain.out.splitlines()[0]
    assert headline.endswith("; 1 context not checked (cluster-2)"), headline
    status_line = nagios.out.splitlines()[0].split(" | ")[0]
    assert status_line.count("cluster-2") == 1 and "; context cluster-2: cannot reach" in status_line, status_line
    assert "more error" not in status_line
    validate(doc)
    [entry] = doc["unchecked"]
    assert entry["context"] == "cluster-2" and entry["error"].startswith("context cluster-2: cannot reach")
    assert entry["error"] in doc["errors"]
