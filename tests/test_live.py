"""Live runs through the real `kubernetes` client against the test API server (TLS + bearer token)."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, cast
from pathlib import Path

import pytest

from sunkcheck import objects as o
from sunkcheck import snapshot
from sunkcheck.collect import kube as kube_module
from sunkcheck.collect import pods as pods_module
from sunkcheck.collect.kube import cluster_role
from tests.conftest import CASES, FIXTURES, USAGE_CASES, expected, run
from tests.conftest import TOKEN
from tests.kubeapi import FakeApi, kubeconfig, make_cert

Serve = Callable[..., FakeApi]
"""The `serve` fixture: a test API server for a fixture case or a snapshot."""

def _args(case: str) -> list[str]:
    return expected(case)["args"]


def read_at(case: str) -> datetime.datetime:
    """When the live run of a case reads it, by the test API server's clock: when it was recorded, where it says (a
    case whose Pods are seconds old: ages are counted from it, and the run's seconds are well within its bounds),
    else a day after its newest Node registered, and 30 s into a minute of a Node's age (ages are said in whole
    minutes: the run's seconds do not change them)."""
    recorded = snapshot.load(FIXTURES / case)
    if recorded.server_time is not None:
        return recorded.server_time
    nodes = recorded.nodes or ()
    newest = max((t for n in nodes if (t := o.timestamp(n["metadata"].get("creationTimestamp")))), default=None)
    return (newest or datetime.datetime(2026, 11, 2, tzinfo=datetime.UTC)) + datetime.timedelta(days=1, seconds=30)


def as_read_live(api: FakeApi, directory: Path, when: datetime.datetime) -> Path:
    """`directory` with a meta.json naming the Nodes whose Pods the live run listed and whether it read every NodeSet,
    when (`when`, the API server's time), and only the NodeSets it read (as `sunkcheck snapshot` records them): a
    recorded case holds every Pod and NodeSet, and its replay would tell what the live check could not know."""
    pod_nodes = api.pod_nodes()
    every = any(r.status == 200 and r.path == "/apis/sunk.coreweave.com/v1alpha1/nodesets" and not r.query.get("fieldSelector")
                for r in api.log)
    meta = ({} if pod_nodes is None else {"podNodes": pod_nodes}) | ({"nodesets": "*"} if every else {})
    (directory / "meta.json").write_text(json.dumps(meta | {"time": when.strftime("%Y-%m-%dT%H:%M:%SZ")}))
    listed = directory / "nodesets.json"
    if listed.exists():
        doc = json.loads(listed.read_text())
        doc["items"] = [w for w in doc["items"] if _read_live(api, w["metadata"]["namespace"], w["metadata"]["name"])]
        listed.write_text(json.dumps(doc))
    return directory


def _read_live(api: FakeApi, namespace: str, name: str) -> bool:
    """Whether the live run read the NodeSet: listed in every namespace or in its own (by name or whole), or got."""
    for r in api.log:
        head, _, tail = r.path.partition("/nodesets")
        if r.method != "GET" or not r.path.startswith("/apis/sunk.coreweave.com/") or tail not in ("", f"/{name}"):
            continue
        names = [f.split("=", 1)[1] for f in r.query.get("fieldSelector", "").split(",") if f.startswith("metadata.name=")]
        if "/namespaces/" in head and not head.endswith(f"/namespaces/{namespace}"):
            continue
        if not names or name in names:
            return True
    return False


@pytest.mark.parametrize("case", CASES)
def test_live_diagnosis_equals_the_snapshot_diagnosis(serve: Serve, case: str, tmp_path: Path) -> None:
    when = read_at(case)
    api = serve(case, skew=when.timestamp() - time.time())
    args = _args(case)
    namespace = ["-A"] if not args else []
    live = run("check", "-o", "json", *args, *namespace)
    kube_only = tmp_path / case  # Slurm's recorded view is not the API server's: compare the Kubernetes part
    shutil.copytree(FIXTURES / case, kube_only, ignore=shutil.ignore_patterns("sinfo.*"))
    replay = run("check", "--snapshot", str(as_read_live(api, kube_only, when)), "-o", "json", *args)
    assert live.code == replay.code, live.err
    assert live.verdict() == replay.verdict()
    if not list((FIXTURES / case).glob("sinfo.*")):
        assert live.code == expected(case)["exit"]
    assert {r.method for r in api.log} == {"GET"} and api.writes == 0


@pytest.mark.parametrize("case", USAGE_CASES)
def test_live_usage_error_equals_the_snapshot_usage_error(serve: Serve, case: str) -> None:
    """Flags the cluster refutes are refused live as in the replay: the one line, exit 3, for check and explain; live,
    it says where it was read."""
    api = serve(case)
    want = expected(case)
    where = f" on context test ({api.url})"
    for command in ("check", "explain"):
        live = run(command, *want["args"])
        replay = run(command, "--snapshot", str(FIXTURES / case), *want["args"])
        assert where in one_line(live)
        assert (live.code, live.out, one_line(live).replace(where, "", 1)) == (
            replay.code, replay.out, replay.err.rstrip("\n")) == (want["exit"], "", f"sunkcheck: error: {want['usage_error']}")
    assert {r.method for r in api.log} == {"GET"} and api.writes == 0


def test_requests_are_filtered_by_the_server(serve: Serve) -> None:
    api = serve("foreign-pod-resources")
    assert run("check", "-o", "json").code == 1
    queries = [(r.path, r.query.get("labelSelector"), r.query.get("fieldSelector")) for r in api.log]
    assert ("/api/v1/namespaces/tenant-slurm/pods", "app.kubernetes.io/instance in (slurm-cpu-batch)", None) in queries
    per_node = [q for q in queries if q[0] == "/api/v1/pods"]
    # only the one slurm-cpu Node without a slurmd Pod needs its Pods listed; healthy Nodes cost nothing
    assert len(per_node) == 1 and str(per_node[0][2]).startswith("spec.nodeName=")
    assert str(per_node[0][2]).endswith(",status.phase!=Succeeded,status.phase!=Failed")
    assert all(r.query.get("limit") == "500" for r in api.log if r.path not in ("/version",))


def unreconciled(case: str) -> snapshot.Snapshot:
    """`case` with no observedGeneration in its NodeSets' status: not known to describe the latest spec, the status
    spares no read of the Pods on the Nodes the NodeSet can be placed on (it is no lagging one either)."""
    recorded = snapshot.load(FIXTURES / case)
    nodesets = tuple(dict(ns, status={k: v for k, v in ns["status"].items() if k != "observedGeneration"})
                     for ns in recorded.nodesets or ())
    return dataclasses.replace(recorded, nodesets=nodesets)


def test_past_a_few_nodes_one_list_of_every_pod_replaces_the_lists_by_node(serve: Serve,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """After a scale-up thousands of usable Nodes have no slurmd Pod yet: listing each one's Pods would
    cost a request per Node, one paged list of every Pod costs a request per page."""
    monkeypatch.setattr(pods_module, "BY_NODE_MAX", 1)
    api = serve(unreconciled("replicas-cap"))  # 4 feasible Nodes without a slurmd Pod; every Pod fits in one page
    live = run("check", "-o", "json")
    assert live.verdict() == run("check", "--snapshot", str(FIXTURES / "replicas-cap"), "-o", "json").verdict()
    pod_lists = [r.query for r in api.log if r.path == "/api/v1/pods"]
    assert pod_lists == [{"limit": "1"}, {"fieldSelector": "status.phase!=Succeeded,status.phase!=Failed", "limit": "500"}]
    # what it keeps: the slurmd Pods whole, and only the other Pods on the Nodes that need them, slimmed
    assert run("check", "-o", "json", "--save", str(tmp_path / "rec")).code == 1
    kept = json.loads((tmp_path / "rec" / "pods.json").read_text())["items"]
    slurmd = [p for p in kept if p["metadata"].get("labels", {}).get("app.kubernetes.io/instance") == "slurm-cpu-batch"]
    others = [p for p in kept if p not in slurmd]
    idle = {n["name"] for n in live.json()["results"][0]["nodes"] if n["feasible"] and not n["placed"]}
    assert len(idle) == 4 and others and {p["spec"]["nodeName"] for p in others} == idle
    assert all(p["status"] == {"phase": "Running"} and set(p["spec"]["containers"][0]) <= {"name", "resources"}
               for p in others)
    assert slurmd and all("conditions" in p["status"] for p in slurmd)


def test_the_every_pod_read_keeps_what_a_squatters_evidence_reads(serve: Serve,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A squatter that tolerates the pool's taint is told apart by its tolerations: the slimmed Pods of the
    one-list read keep them, so the live diagnosis is the replay's."""
    monkeypatch.setattr(pods_module, "BY_NODE_MAX", 0)
    api = serve("foreign-pod-tolerates-pool-taint")
    live = run("check", "-o", "json")
    assert next(r.query for r in api.log if r.path == "/api/v1/pods") == {"limit": "1"}  # the one-list read
    replayed = run("check", "--snapshot", str(FIXTURES / "foreign-pod-tolerates-pool-taint"), "-o", "json")
    assert live.verdict() == replayed.verdict()
    assert live.json()["results"][0]["symptoms"] == replayed.json()["results"][0]["symptoms"]


def test_pool_split_weighs_the_other_pools_pods_live_too(serve: Serve, tmp_path: Path) -> None:
    """pool-split judges the same-type pool's Nodes as the NodeSet would use them: a Node that a big Pod
    fills is not counted, live as in the replay (so those Nodes' Pods are read)."""
    recorded = snapshot.load(FIXTURES / "pool-split")
    other = next(n for n in recorded.nodes or () if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu-b")
    big = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer-0", "namespace": "research"},
           "spec": {"nodeName": other["metadata"]["name"],
                    "containers": [{"name": "trainer", "resources": {"requests": {"cpu": "150"}}}]},
           "status": {"phase": "Running"}}
    filled = dataclasses.replace(recorded, pods=(*(recorded.pods or ()), big))
    serve(filled)
    live = run("check", "-o", "json")
    snapshot.save(tmp_path / "filled", filled, {})
    assert live.verdict() == run("check", "--snapshot", str(tmp_path / "filled"), "-o", "json").verdict()
    evidence = next(s for s in live.json()["results"][0]["symptoms"] if s["id"] == "pool-split")["evidence"]
    assert "3/4 of its Nodes would be feasible" in evidence[0] and evidence[1] == "FEASIBLE 6; with slurm-cpu-b it would be 9"


@pytest.mark.parametrize("tenant,other,held", [("tenant-a", "tenant-b", 2), ("tenant-b", "tenant-a", 4)])
def test_one_tenant_checked_live_sees_the_other_tenants_claim(serve: Serve, tenant: str, other: str, held: int) -> None:
    """Checked alone, a tenant's NodeSet still finds the pool Nodes the other tenant's NodeSet of the same name
    holds: their Pods are read from the other namespace, and the claim names it, as in the replay."""
    serve("two-tenants-share-pool")
    args = ("--nodeset", "slurm-cpu-batch", "-n", tenant, "-o", "json")
    live = run("check", *args)
    assert live.verdict() == run("check", "--snapshot", str(FIXTURES / "two-tenants-share-pool"), *args).verdict()
    found = next(s for s in live.json()["results"][0]["symptoms"] if s["id"] == "pool-nodes-unusable")
    assert found["evidence"][1].startswith(f"{held}/6 Nodes in slurm-cpu: already claimed by NodeSet {other}/slurm-cpu-batch")


class Probe:
    """Answers the one-item list of Pods with this list metadata, or this error."""

    def __init__(self, meta: object = None, error: Exception | None = None, items: object = ({},)) -> None:
        self.meta, self.error, self.calls, self.items = {} if meta is None else meta, error, 0, items

    def get(self, path: str, query: dict) -> dict:
        assert (path, query) == ("/api/v1/pods", {"limit": 1})
        self.calls += 1
        if self.error:
            raise self.error
        return {"items": list(self.items) if isinstance(self.items, tuple) else self.items, "metadata": self.meta}


@pytest.mark.parametrize("nodes, probe, everywhere", [
    (1, Probe({"remainingItemCount": 10**6}), False),  # few Nodes: listed one by one, nothing asked
    (5, Probe({"remainingItemCount": 999}), True),  # 1,000 Pods are 2 pages, fewer than 5 lists
    (2, Probe({"remainingItemCount": 999}), False),  # 2 pages are not fewer than 2 lists
    (5, Probe({"continue": "c"}), False),  # the server does not count: Node by Node
    (5, Probe(error=kube_module.CallError("/api/v1/pods", 403, "forbidden")), False),
    (5, Probe({"remainingItemCount": 10**400}), False),  # a count, too large for a float: no OverflowError
    # not a count (a hostile or broken server): ignored, as when the server does not say
    *[(10**6, Probe({"remainingItemCount": bad}), False)
      for bad in ("12", 12.0, float("inf"), float("nan"), True, -5, [1], {"n": 1}, None)],
    (5, Probe([1]), False),  # metadata that is not an object
    (5, Probe({"remainingItemCount": 999}, items=5), False),  # items that are not a list
    (5, Probe({"remainingItemCount": 999}, items=None), True),  # Go writes an empty list as null
])
def test_pods_are_listed_everywhere_only_when_that_takes_fewer_requests(monkeypatch: pytest.MonkeyPatch,
        nodes: int, probe: Probe, everywhere: bool) -> None:
    monkeypatch.setattr(pods_module, "BY_NODE_MAX", 1)
    assert pods_module.cheaper_everywhere(cast("kube_module.Kube", probe), nodes) is everywhere
    assert probe.calls == (nodes > 1)


def test_lists_are_paged(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_module, "PAGE", 2)
    api = serve("several-nodesets")
    live = run("check", "-o", "json")
    assert live.verdict() == run("check", "--snapshot", str(FIXTURES / "several-nodesets"), "-o", "json").verdict()
    node_lists = [r for r in api.log if r.path == "/api/v1/nodes"]
    every_node = [r for r in node_lists if "labelSelector" not in r.query]  # 11 Nodes, 2 a page
    assert len(every_node) == 6 and sum("continue" in r.query for r in every_node) == 5
    # besides, the one-item lists finding a Node of each same-type pool (the idle-pool note), paged like any other
    assert all(r.query["limit"] == "2" for r in node_lists if r.query.get("labelSelector", "").count("=") != 1)



def test_the_next_page_is_asked_for_while_this_one_is_checked(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """The continue token is read from a page's head, so the server writes the next page while this one is
    parsed and checked: the server has answered page 2 of the Nodes before page 1 is through its check."""
    monkeypatch.setattr(kube_module, "PAGE", 2)
    api = serve("several-nodesets")
    real, answered_meanwhile = kube_module.check_items, []

    def checking(items: list, kind: str, where: str, first: int = 0, seen: Any = None) -> Any:
        if kind == "Node" and first == 0:
            give_up = time.monotonic() + 10
            while sum(r.path == "/api/v1/nodes" for r in api.log) < 2 and time.monotonic() < give_up:
                time.sleep(0.01)
            answered_meanwhile.append(sum(r.path == "/api/v1/nodes" for r in api.log))
        return real(items, kind, where, first, seen)

    monkeypatch.setattr(kube_module, "check_items", checking)
    live = run("check", "-o", "json")
    assert live.verdict() == run("check", "--snapshot", str(FIXTURES / "several-nodesets"), "-o", "json").verdict()
    assert answered_meanwhile and all(n >= 2 for n in answered_meanwhile)
    pages = [(r.query.get("labelSelector"), r.query.get("continue")) for r in api.log if r.path == "/api/v1/nodes"]
    assert len(pages) == len(set(pages))  # and each page once


def test_a_page_head_that_disagrees_with_the_page_is_not_followed(serve: Serve) -> None:
    """The head read ahead is a guess: the token of the parsed page decides (JSON's last `metadata` wins)."""
    recorded = snapshot.load(FIXTURES / "healthy-pool-name")
    api = serve(recorded)
    items = json.dumps([{k: v for k, v in n.items() if k not in ("kind", "apiVersion")} for n in recorded.nodesets or ()])
    api.faults.bodies["nodesets"] = (
        '{"kind": "NodeSetList", "apiVersion": "sunk.coreweave.com/v1alpha1", "metadata": {"continue": "guess"}, '
        f'"items": {items}, "metadata": {{}}}}').encode()
    r = run("check", "-o", "json")
    assert (r.code, r.err) == (0, "")
    # the page as parsed (no continue token): its one NodeSet, healthy
    assert [(x["name"], x["status"], x["symptoms"]) for x in r.json()["results"]] == [("slurm-cpu-batch", "ok", [])]
    assert r.verdict() == run("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), "-o", "json").verdict()

def test_a_server_whose_heads_lie_gets_one_wrong_guess_per_list(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong guess's request is left running, and may hang until the deadline: a server lying in every page's
    head made one such request (and two threads) per page, thousands on an endless list, past the deadline."""
    monkeypatch.setattr(kube_module, "PAGE", 2)
    api = serve("several-nodesets")
    api.faults.lying_heads = True
    live = run("check", "-o", "json")
    assert live.verdict() == run("check", "--snapshot", str(FIXTURES / "several-nodesets"), "-o", "json").verdict()
    lists = Counter((r.path, r.query.get("labelSelector"), r.query.get("fieldSelector")) for r in api.log
                    if r.query.get("continue", "").startswith("lie-"))
    assert lists and max(lists.values()) == 1
    assert sum(r.path == "/api/v1/nodes" for r in api.log) > 3  # several pages each, lies or not


def test_an_event_in_two_lists_is_refused_live_as_its_replay_refuses_it(serve: Serve, tmp_path: Path) -> None:
    """The Events are several lists joined (about NodeSets, about Pods, about NodePools): each is checked as it
    arrives, and the join too, or a server that ignores their field selectors had `--save` write an events.json
    its own replay refused."""
    api = serve("step-statuses")
    api.faults.unfiltered.add("events")
    live = run("check", "-o", "json", "--save", str(tmp_path / "saved"))
    errors = live.json()["errors"]
    assert errors[:1] and errors[0].startswith("events: item ") and errors[0].endswith("duplicates item 0: each object "
                                                                                       "may appear once"), errors
    assert len(errors) == 1  # said once: the step's summary says it, not a second "not captured" line
    replay = run("check", "--snapshot", str(tmp_path / "saved"), "-o", "json")  # events not captured, not refused
    missing = ["events not captured: the events step could not be checked"]
    assert replay.code == live.code == 2 and replay.verdict()["errors"] == missing
    said = {"not read: an object the API server sent is malformed": live.verdict(), "not captured": replay.verdict()}
    for summary, verdict in said.items():  # the step says why: a live read refused, a recording without it
        for result in verdict["results"]:
            events = next(step for step in result["steps"] if step["name"] == "events")
            assert (events["status"], events.pop("summary")) == ("unknown", summary)
    live_results, replay_results = (verdict["results"] for verdict in said.values())
    assert replay_results == live_results


def test_managed_fields_are_dropped_as_objects_arrive(serve: Serve) -> None:
    """Never read, and a large share of a real object: gone from listed and read objects alike."""
    recorded = snapshot.load(FIXTURES / "healthy-pool-name")
    managed = {"managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}]}

    def with_managed(objects: tuple[dict, ...] | None) -> tuple[dict, ...]:
        return tuple(x | {"metadata": x["metadata"] | managed} for x in objects or ())

    serve(dataclasses.replace(recorded, nodes=with_managed(recorded.nodes), nodesets=with_managed(recorded.nodesets)))
    kube = kube_module.Kube()
    nodes = kube.list(kube_module.NODES)
    nodeset = kube.read(kube_module.NODESETS, "slurm-cpu-batch", "tenant-slurm")
    assert nodes and all("managedFields" not in n["metadata"] for n in nodes)
    assert nodeset is not None and nodeset["metadata"]["name"] == "slurm-cpu-batch" and "managedFields" not in nodeset["metadata"]


def test_context_namespace_is_the_default(serve: Serve, tmp_path: Path) -> None:
    api = serve("several-nodesets")
    ca = json.loads(api.kubeconfig.read_text())["clusters"][0]["cluster"]["certificate-authority"]
    config = kubeconfig(tmp_path / "other-ns", api.url, token=TOKEN, ca=ca, namespace="elsewhere")
    r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and "no NodeSets in namespace elsewhere" in r.err
    assert run("check", "--kubeconfig", str(config), "-n", "tenant-slurm", "-o", "json").code == 2


def test_several_kubeconfig_files_are_merged(serve: Serve,
        tmp_path: Path, cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    api = serve("healthy-pool-name")
    full = json.loads(api.kubeconfig.read_text())
    clusters = dict(full, users=[], contexts=[], **{"current-context": ""})
    rest = dict(full, clusters=[])
    (tmp_path / "a").write_text(json.dumps(clusters))
    (tmp_path / "b").write_text(json.dumps(rest))
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    assert run("check", "-o", "json").json()["status"] == "ok"


def test_client_certificate_auth(cert: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client = make_cert(tmp_path)  # self-signed: it is its own CA
    with FakeApi(snapshot.load(FIXTURES / "healthy-pool-name"), cert=cert, client_ca=client[0]) as api:
        config = kubeconfig(tmp_path / "kc", api.url, ca=cert[0], client_cert=client)
        assert run("check", "--kubeconfig", str(config)).code == 0
        anonymous = kubeconfig(tmp_path / "anon", api.url, ca=cert[0])
        r = run("check", "--kubeconfig", str(anonymous))
        assert r.code == 3 and ("TLS failure" in r.err or "cannot reach" in r.err)


def test_the_executable_exits_fast_but_still_deletes_the_clients_certificate_files(serve: Serve,
        cert: tuple[str, str], tmp_path: Path) -> None:
    """`sunkcheck` skips interpreter teardown; the kubernetes client's exit handler, which deletes the
    files it writes for kubeconfig *-data fields, must still run."""
    api = serve("healthy-pool-name")
    config = json.loads(Path(api.kubeconfig).read_text())
    cluster = config["clusters"][0]["cluster"]
    cluster["certificate-authority-data"] = base64.b64encode(Path(cluster.pop("certificate-authority")).read_bytes()).decode()
    (tmp_path / "kc-data").write_text(json.dumps(config))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = dict(os.environ, KUBECONFIG=str(tmp_path / "kc-data"), TMPDIR=str(scratch))
    p = subprocess.run([shutil.which("sunkcheck") or "sunkcheck", "check", "-o", "json"], env=env, capture_output=True, text=True,
                       timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["status"] == "ok"
    assert list(scratch.iterdir()) == []
    # the control: without exit handlers the client's CA file stays behind
    skip = "import os, sys\nfrom sunkcheck.cli import main\ntry: main()\nexcept SystemExit as e: os._exit(e.code)\n"
    p = subprocess.run([sys.executable, "-c", skip, "check", "-o", "json"], env=env, capture_output=True, text=True,
                       timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    assert len(list(scratch.iterdir())) == 1


def test_in_cluster_service_account(cert: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(TOKEN)
    (account / "ca.crt").write_text(Path(cert[0]).read_text())
    (account / "namespace").write_text("tenant-slurm")
    monkeypatch.setattr(kube_module, "SERVICE_ACCOUNT", account)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with FakeApi(snapshot.load(FIXTURES / "replicas-cap"), cert=cert, token=TOKEN) as api:
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", api.url.rsplit(":", 1)[1])
        r = run("check", "-o", "json")
        assert r.code == 1 and r.json()["results"][0]["namespace"] == "tenant-slurm"
        assert {req.status for req in api.log} == {200}


# --- failures ----------------------------------------------------------------------------------------

def one_line(result: Any) -> str:
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.err, result.err
    return lines[0]


def test_forbidden_resource_leaves_its_step_unknown_and_others_report(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    api.faults.forbidden.add("nodepools")
    r = run("check", "-o", "json")
    doc = r.json()
    steps = {s["name"]: s["status"] for s in doc["results"][0]["steps"]}
    assert steps == {"nodepool": "unknown", "nodes": "ok", "events": "ok", "nodeset": "ok", "pods": "ok", "sinfo": "skipped"}
    assert r.code == 3
    assert any('cannot list resource "nodepools" in API group "compute.coreweave.com"' in e for e in doc["errors"])
    assert any("sunkcheck rbac" in e for e in doc["errors"])


def test_missing_nodepool_api(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    api.faults.missing_groups.add("compute.coreweave.com")
    doc = run("check", "-o", "json").json()
    assert any("this cluster has no NodePool API (compute.coreweave.com/v1alpha1) — is it a CKS cluster?" in e
               for e in doc["errors"])


def test_missing_nodeset_api_is_fatal(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    api.faults.missing_groups.add("sunk.coreweave.com")
    r = run("check")
    assert r.code == 3 and "no NodeSet API (sunk.coreweave.com/v1alpha1) — is SUNK installed?" in one_line(r)
    r = run("check", "--nodeset", "slurm-cpu-batch")
    assert r.code == 3 and "is SUNK installed?" in one_line(r)


def test_named_nodeset_not_found(serve: Serve) -> None:
    serve("healthy-pool-name")
    r = run("check", "--nodeset", "nope")
    assert r.code == 3 and "NodeSet nope not found in namespace tenant-slurm" in one_line(r)


def test_throttling_and_server_errors_are_retried(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    api = serve("healthy-pool-name")  # its Nodes are one list (no other pool of its type): the retries are one sequence
    api.faults.throttle["nodes"] = 2
    api.faults.retry_after = "0.8"  # the client's own backoff would wait 0.2 s then 0.4 s
    api.faults.errors["nodepools"] = 1
    from types import SimpleNamespace

    from sunkcheck.collect import kube
    slept: list[float] = []
    monkeypatch.setattr(kube, "time", SimpleNamespace(monotonic=time.monotonic, time=time.time,
                                                          sleep=slept.append))
    r = run("check", "-o", "json")
    assert r.code == 0 and r.json()["errors"] == []
    statuses = [r.status for r in api.log if r.path == "/api/v1/nodes"]
    assert statuses == [429, 429, 200]
    assert slept.count(0.8) == 2  # it waited as the server asked, each time


def test_persistent_server_errors_give_up(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_module, "MAX_RETRY_AFTER", 0.01)
    api = serve("healthy-dedicated")
    api.faults.errors["nodes"] = 99
    doc = run("check", "-o", "json").json()
    assert any("GET /api/v1/nodes?limit=500 failed (500)" in e for e in doc["errors"])
    assert len([r for r in api.log if r.path == "/api/v1/nodes"]) == kube_module.RETRIES + 1


def test_request_timeout_names_the_call(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    api.faults.latency = 1.5
    r = run("check", "--request-timeout", "300ms", "-o", "json")
    assert r.code == 3
    text = r.err + r.out
    assert "timed out after 0.3s (--request-timeout)" in text and "GET /" in text


def test_wrong_token(serve: Serve, tmp_path: Path, cert: tuple[str, str]) -> None:
    api = serve("healthy-pool-name")
    config = kubeconfig(tmp_path / "bad-token", api.url, token="wrong", ca=cert[0])
    r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and "rejected the credentials (401 Unauthorized)" in one_line(r)


def test_untrusted_certificate(serve: Serve, tmp_path: Path) -> None:
    api = serve("healthy-pool-name")
    other = make_cert(tmp_path)
    config = kubeconfig(tmp_path / "bad-ca", api.url, token=TOKEN, ca=other[0])
    r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and "TLS failure talking to" in one_line(r)


def test_unreachable(tmp_path: Path, no_backoff: None) -> None:
    config = kubeconfig(tmp_path / "dead", "https://127.0.0.1:9", token=TOKEN)
    r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and "cannot reach the API server https://127.0.0.1:9: connection refused" in one_line(r)


@pytest.mark.parametrize("content, message", [
    ("{not yaml: [", "kubeconfig"),
    ('{"apiVersion": "v1", "kind": "Config", "contexts": [], "current-context": "x"}', "kubeconfig"),
])
def test_bad_kubeconfig(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "kc"
    path.write_text(content)
    r = run("check", "--kubeconfig", str(path))
    assert r.code == 3 and one_line(r).startswith(f"sunkcheck: error: {message}")


def test_unknown_context(serve: Serve) -> None:
    serve("healthy-pool-name")
    r = run("check", "--context", "nope")
    assert r.code == 3 and "nope" in one_line(r)


def test_no_kubeconfig_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    r = run("check")
    assert r.code == 3 and "no kubeconfig" in one_line(r)


# --- least privilege ---------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["several-nodesets", "ds-pod-pending", "two-problems"])
def test_rbac_role_is_sufficient(serve: Serve, case: str) -> None:
    api = serve(case, rbac=cluster_role())
    live = run("check", "-o", "json", *_args(case), *([] if _args(case) else ["-A"]))
    assert live.code == expected(case)["exit"] and live.json()["errors"] == []
    assert not [r for r in api.log if r.status == 403]


def test_rbac_role_is_sufficient_for_one_list_of_every_pod(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pods_module, "BY_NODE_MAX", 1)
    api = serve(unreconciled("replicas-cap"), rbac=cluster_role())
    live = run("check", "-o", "json")
    assert live.code == expected("replicas-cap")["exit"] and live.json()["errors"] == []
    assert {"limit": "1"} in [r.query for r in api.log if r.path == "/api/v1/pods"]
    assert not [r for r in api.log if r.status == 403]


def test_rbac_enforcement_is_real(serve: Serve) -> None:
    role = cluster_role()
    role["rules"] = [r for r in role["rules"] if r["apiGroups"] != ["compute.coreweave.com"]]
    api = serve("healthy-pool-name", rbac=role)
    assert run("check").code == 3
    assert [r.path for r in api.log if r.status == 403] == ["/apis/compute.coreweave.com/v1alpha1/nodepools"]


def test_rbac_command_prints_get_and_list_only() -> None:
    doc = json.loads(run("rbac", "-o", "json").out)
    role = doc["items"][0]
    assert {v for rule in role["rules"] for v in rule["verbs"]} == {"get", "list"}
    assert {r for rule in role["rules"] for r in rule["resources"]} == {
        "nodes", "pods", "events", "nodepools", "nodesets", "daemonsets"}


# --- recording ---------------------------------------------------------------------------------------

def test_snapshot_command_records_a_replayable_snapshot_without_secrets(serve: Serve, tmp_path: Path) -> None:
    api = serve("foreign-pod-resources")
    with api.state.lock:  # a Pod with a literal secret in its environment
        api.state.objects["pods"][0]["spec"]["containers"][0]["env"] = [{"name": "TOKEN", "value": "hunter2"}]
    out = tmp_path / "snap"
    r = run("snapshot", str(out))
    assert r.code == 0, r.err
    assert sorted(p.name for p in out.iterdir()) == ["events.json", "meta.json", "nodepools.json", "nodes.json",
                                                     "nodesets.json", "pods.json"]
    assert "hunter2" not in "".join(p.read_text() for p in out.iterdir())
    meta = json.loads((out / "meta.json").read_text())
    assert meta["context"] == "test" and meta["serverVersion"] == "v1.32.4" and meta["namespace"] == "tenant-slurm"
    # the Nodes whose Pods it listed: the squatter's, not every one of slurm-cpu's (its replay says so, as live)
    assert meta["podNodes"] == api.pod_nodes() and 0 < len(meta["podNodes"]) < len(snapshot.load(out).nodes or ())
    replay = run("check", "--snapshot", str(out), "-o", "json")
    assert replay.verdict() == run("check", "-o", "json").verdict()


def test_check_save(serve: Serve, tmp_path: Path) -> None:
    serve("replicas-cap")
    r = run("check", "--save", str(tmp_path / "s"), "-o", "json")
    assert r.code == 1
    assert run("check", "--snapshot", str(tmp_path / "s"), "-o", "json").verdict() == r.verdict()


def test_explain_live_node(serve: Serve) -> None:
    serve("foreign-pod-resources")
    doc = run("explain", "-o", "json").json()
    bad = [n for n in doc["nodes"] if n["pool"] == "slurm-cpu" and not n["feasible"]]
    assert len(bad) == 1
    deep = run("explain", "--node", bad[0]["name"], "-o", "json").json()
    assert [c["subject"] for c in deep["node"]["checks"] if not c["ok"]] == ["cpu"]


# --- the real kubectl against the same server -------------------------------------------------------

def kubectl(api: FakeApi, tmp_path: Path, *args: str) -> str:
    env = dict(os.environ, KUBECONFIG=str(api.kubeconfig))
    p = subprocess.run(["kubectl", "--cache-dir", str(tmp_path / "kubectl-cache"), *args], env=env,
                       capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_kubectl_reads_the_test_server(serve: Serve, tmp_path: Path) -> None:
    api = serve("two-problems")
    snap = snapshot.load(FIXTURES / "two-problems")
    nodes = kubectl(api, tmp_path, "get", "nodes")
    assert nodes.split()[:4] == ["NAME", "STATUS", "AGE", "VERSION"]
    assert {n["metadata"]["name"] for n in snap.nodes or ()} == {line.split()[0] for line in nodes.splitlines()[1:]}
    pools = kubectl(api, tmp_path, "get", "nodepools")
    assert "slurm-cpu" in pools and "cd-gp-a192-genoa" in pools
    assert "slurm-cpu-batch" in kubectl(api, tmp_path, "get", "nodesets", "-n", "tenant-slurm")
    pods = kubectl(api, tmp_path, "get", "pods", "-n", "tenant-slurm", "-l", "app.kubernetes.io/instance=slurm-cpu-batch",
                   "-o", "name")
    batch = [p for p in snap.pods or () if p["metadata"].get("labels", {}).get("app.kubernetes.io/instance") == "slurm-cpu-batch"]
    assert sorted(pods.split()) == sorted(f"pod/{p['metadata']['name']}" for p in batch)
    notin = kubectl(api, tmp_path, "get", "pods", "-A", "-l", "app.kubernetes.io/name notin (cilium),!app.kubernetes.io/instance",
                    "-o", "name")
    want = {"pod/jupyter-alice-0"} | {f"pod/node-problem-detector-{n['metadata']['name'][1:6]}" for n in snap.nodes or ()}
    assert set(notin.split()) == want
    json_nodes = json.loads(kubectl(api, tmp_path, "get", "nodes", "-o", "json"))
    assert json_nodes["kind"] == "List" and len(json_nodes["items"]) == len(snap.nodes or ())


def test_kubectl_event_field_selector(serve: Serve, tmp_path: Path) -> None:
    api = serve("reserved-label-namespace")
    out = kubectl(api, tmp_path, "get", "events", "-A", "--field-selector", "involvedObject.kind=NodePool",
                  "-o", "jsonpath={.items[*].reason}")
    assert out.split() == ["CWNodePoolMetadataSanitized"]
    none = kubectl(api, tmp_path, "get", "events", "-A", "--field-selector", "involvedObject.kind=Pod", "-o", "name")
    assert none.strip() == ""


@pytest.mark.parametrize("case", ["several-nodesets", "foreign-pod-resources", "two-problems"])
def test_live_explain_equals_the_replay_for_every_node(serve: Serve, case: str) -> None:
    """explain reads every non-terminal Pod live, so its reasons match a full recording Node for Node."""
    api = serve(case)
    for target in expected(case)["nodes"]:
        namespace, name = target.split("/")
        live = run("explain", "--nodeset", name, "-n", namespace, "-o", "json")
        replay = run("explain", "--snapshot", str(FIXTURES / case), "--nodeset", name, "-n", namespace, "-o", "json")
        assert live.verdict() == replay.verdict()
    assert any(r.query.get("fieldSelector") == "status.phase!=Succeeded,status.phase!=Failed" and r.path == "/api/v1/pods"
               for r in api.log)


def test_live_what_if_lists_pods_where_the_predicted_nodeset_would_go(serve: Serve, tmp_path: Path) -> None:
    """Before any NodeSet is deployed, the what-if still sees the foreign Pod on the pool it would use."""
    api = serve("foreign-pod-resources")
    recorded = snapshot.load(FIXTURES / "foreign-pod-resources")
    api.state.load(dataclasses.replace(  # nothing deployed yet: no NodeSet, no slurmd Pods
        recorded, nodesets=(), pods=tuple(p for p in recorded.pods or () if "slurm-cpu-batch" not in p["metadata"]["name"])))
    values = tmp_path / "values.yaml"
    values.write_text("compute:\n  nodes:\n    cpu-batch:\n      enabled: true\n      gresGpu: null\n"
                      "      resources: {requests: {cpu: \"160\", memory: 1200Gi}, limits: {memory: 1200Gi}}\n"
                      "      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
                      "[{matchExpressions: [{key: compute.coreweave.com/node-pool, operator: In, values: [slurm-cpu]}]}]}}}\n")
    r = run("check", "--values", str(values), "-n", "tenant-slurm", "-o", "json")
    ids = [s["id"] for s in r.json()["results"][0]["symptoms"]]
    assert ids == ["foreign-pod-resources"], r.json()
    assert "data-eng/spark-exec-7d9f4-x2k8q" in r.json()["results"][0]["symptoms"][0]["evidence"][0]


def test_a_pool_that_does_not_exist_is_a_usage_error_live_too(serve: Serve) -> None:
    api = serve("several-nodesets")
    for command in (["check"], ["explain", "--nodeset", "slurm-cpu-batch"]):
        r = run(*command, "--pool", "slurm-cpuu")
        assert r.code == 3 and r.out == ""
        assert one_line(r) == (f"sunkcheck: error: --pool slurm-cpuu: no such Node Pool on context test ({api.url}) (Node "
                               "Pools, nearest first: slurm-cpu, slurm-gpu, slurm-gpu-spare, cpu-control-plane)")
    api.faults.forbidden.add("nodepools")  # unreadable: the Nodes' labels say which pools exist
    doc = run("check", "-o", "json", "--nodeset", "slurm-cpu-batch", "--pool", "slurm-gpu").json()
    # the pools it selects and the one it is said to be meant for
    assert doc["results"][0]["pools"] == ["slurm-cpu", "slurm-gpu"] and not any("--pool" in e for e in doc["errors"])
    doc = run("check", "-o", "json", "--nodeset", "slurm-cpu-batch", "--pool", "slurm-cpuu").json()
    assert any("--pool slurm-cpuu: no Node carries" in e for e in doc["errors"])


@pytest.mark.parametrize("args", [("-A",), ("--nodeset", "slurm-cpu-batch", "-n", "tenant-slurm")])
def test_the_other_nodesets_a_taint_plan_names_are_those_read_live_as_in_the_replay(serve: Serve,
        tmp_path: Path, args: tuple[str, ...]) -> None:
    """foreign-pod-resources names the other NodeSets on the pool lacking its taint's toleration: a live check reads
    every NodeSet, with -A and with --nodeset alike, as the replay of what it records does."""
    from tests.test_fixes import _with_peer

    serve(_with_peer(snapshot.load(FIXTURES / "foreign-pod-resources"), []))
    live = run("check", "-o", "json", *args)
    recorded = run("snapshot", str(tmp_path / "peer"), *args)
    assert recorded.code == 0, recorded.err
    assert live.verdict() == run("check", "--snapshot", str(tmp_path / "peer"), "-o", "json", *args).verdict()
    fix = next(s for r in live.json()["results"] if r["name"] == "slurm-cpu-batch" for s in r["symptoms"]
               if s["id"] == "foreign-pod-resources")["fix"]
    assert "NodeSet tenant-slurm/slurm-cpu-small (it selects gf99f97)" in fix and "NodeSets of namespace" not in fix
    assert "this check read NodeSet" not in fix
