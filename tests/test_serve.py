"""`sunkcheck serve` against the test API server: ready after its lists, the check's verdict kept current from
watches, recovery from a dropped watch, a compacted history and a restarted server, and a bounded, read-only
HTTP side."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from selenium.webdriver.common.by import By
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sunkcheck import runner
from sunkcheck import __version__
from sunkcheck.collect.kube import Kube, cluster_role
from sunkcheck.model import Report
from sunkcheck.render.html import POLL_MS
from sunkcheck.render.json import render_report
from sunkcheck.serve import http as serve_http
from sunkcheck.serve import loop as serve_loop
from sunkcheck.serve import watch as serve_watch
from sunkcheck.serve.service import Service
from sunkcheck.serve.watch import Fault, Source as WatchSource
from sunkcheck.snapshot import Snapshot, load
from sunkcheck.source import Access
from sunkcheck.target import Target
from tests.conftest import TOKEN, assert_quiet, run, sections, wait_for
from tests.test_fixes import drained_eviction

ROOT = Path(__file__).resolve().parent.parent
Serve = Callable[..., Any]  # the fixture: a fixture's case served by the test API server
Api = Any  # tests.kubeapi.FakeApi, its state and log
EVERY = Target()  # every NodeSet (with -A, or in the kubeconfig's namespace)


EVERY = Target()
"""Every NodeSet in scope."""


def get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def eventually(probe: Callable[[], Any], timeout: float = 10.0) -> Any:
    """probe()'s first truthy answer, polled; the last answer when time runs out."""
    end = time.monotonic() + timeout
    while True:
        found = probe()
        if found or time.monotonic() > end:
            return found
        time.sleep(0.05)


@contextlib.contextmanager
def serving(api: Api, target: Target = EVERY, all_namespaces: bool = True, lines: list | None = None,
            **kwargs: Any) -> Iterator[Service]:
    api.bookmark_every = 0.2
    kube = Kube(str(api.kubeconfig))
    with Service(kube, target, all_namespaces, log=(lines if lines is not None else []).append, debounce=0.02,
                 **kwargs) as service:
        assert eventually(lambda: get(service.url + "/readyz")[0] == 200), get(service.url + "/readyz")
        yield service


def checked(api: Api, target: Target = EVERY, all_namespaces: bool = True) -> dict:
    """What `check -o json` prints for the API server's state now."""
    report = runner.check(Access(kubeconfig=str(api.kubeconfig)), [None], target, all_namespaces)
    return json.loads(render_report(report))


def served(service: Service) -> dict:
    return json.loads(get(service.url + "/api/v1/check")[1])


def verdict(doc: dict) -> dict:
    """What must agree: every target's result, whole, and what could not be checked (not when or from where)."""
    return {"results": doc["results"], "errors": doc["errors"], "status": doc["status"]}


def follows(service: Service, api: Api, target: Target = EVERY) -> tuple[dict, dict]:
    """(serve's verdict once it agrees with a fresh check, the check's): serve catches up within seconds."""
    want = verdict(checked(api, target, all_namespaces=target.namespace is None))
    got = eventually(lambda: (v := verdict(served(service))) == want and v) or verdict(served(service))
    return got, want


def agrees(service: Service, api: Api) -> dict:
    got, want = follows(service, api)
    assert got == want
    return got


def metric(service: Service, metric_name: str, **labels: str) -> float | None:
    for line in get(service.url + "/metrics")[1].decode().splitlines():
        if line.startswith(f"sunkcheck_{metric_name}{{") or line.startswith(f"sunkcheck_{metric_name} "):
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
    return None


def nodes_of(api: Api) -> list[dict]:
    return [n for n in api.state.objects["nodes"]]


def tainted(node: dict, key: str) -> dict:
    node = copy.deepcopy(node)
    node["spec"].setdefault("taints", []).append({"key": key, "value": "true", "effect": "NoSchedule"})
    return node


# --- end to end --------------------------------------------------------------------------------------------

def test_ready_after_the_lists_and_the_same_document_as_check(serve: Serve) -> None:
    api = serve("pool-split")
    with serving(api) as service:
        doc = served(service)
        assert doc["schema"] == "sunkcheck/check/v1"
        assert verdict(doc) == verdict(checked(api))
        assert [s["id"] for s in doc["results"][0]["symptoms"]] == ["pool-split"]  # the fixture's scenario
        assert metric(service, "serve_ready") == 1 and metric(service, "watch_synced", source="nodes") == 1
        assert metric(service, "status", name="slurm-cpu-batch") == 1  # WARNING, as the textfile names it
    watches = [r for r in api.log if r.query.get("watch") == "1"]
    assert watches and all(r.query["allowWatchBookmarks"] == "true" and r.query["resourceVersion"] == "4242"
                           for r in watches)  # each from its list's version
    assert api.writes == 0


def test_each_pool_of_a_nodeset_has_its_size_in_metrics_as_in_the_textfile(serve: Serve, tmp_path: Path) -> None:
    """A NodeSet spanning two pools, one of them short of its TARGET: /metrics has each pool's TARGET and CURRENT,
    under the textfile's names and labels (an alert on CURRENT < TARGET fires for either pool)."""
    api = serve("pool-split")
    with api.state.lock:
        short = next(p for p in api.state.objects["nodepools"] if p["metadata"]["name"] == "slurm-cpu-b")
        short["status"]["currentNodes"] = short["spec"]["targetNodes"] - 1

    def sizes(exposition: str) -> set[str]:
        return {line for line in exposition.splitlines() if line.startswith("sunkcheck_nodepool_")}

    textfile = tmp_path / "sunkcheck.prom"
    run("check", "--kubeconfig", str(api.kubeconfig), "-A", "--textfile", str(textfile))
    want = sizes(textfile.read_text())
    assert {'sunkcheck_nodepool_target_nodes{context="",pool="slurm-cpu-a"} 6',
            'sunkcheck_nodepool_current_nodes{context="",pool="slurm-cpu-a"} 6',
            'sunkcheck_nodepool_target_nodes{context="",pool="slurm-cpu-b"} 4',
            'sunkcheck_nodepool_current_nodes{context="",pool="slurm-cpu-b"} 3'} <= want, want
    with serving(api) as service:
        assert eventually(lambda: sizes(get(service.url + "/metrics")[1].decode()) == want), want


def _selectors(requests: list, plural: str) -> set[tuple[str, str, str]]:
    """(path, labelSelector, fieldSelector) of the requests for `plural`."""
    return {(r.path, r.query.get("labelSelector", ""), r.query.get("fieldSelector", "")) for r in requests
            if r.path.endswith("/" + plural)}


NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"


@pytest.mark.parametrize("case, target, all_namespaces, others", [
    ("healthy-two-tenants-same-name", Target(), True, "!app.kubernetes.io/instance"),
    ("pool-split", Target(nodeset="slurm-cpu-batch"), True, "app.kubernetes.io/instance notin (slurm-cpu-batch)"),
    # within a namespace, a Pod of the other tenant's NodeSet of the same name is someone else's: no label selector
    # (and its Pods on the first Node of the other tenant's pool say that pool is in use, as check's probe finds)
    ("healthy-two-tenants-same-name", Target(nodeset="slurm-cpu-batch", namespace="tenant-a"), False, "")])
def test_each_watch_asks_the_server_for_what_check_reads_with_checks_selectors(serve: Serve, case: str, target: Target,
                                                                                 all_namespaces: bool, others: str) -> None:
    api = serve(case)
    runner.check(Access(kubeconfig=str(api.kubeconfig)), [None], target, all_namespaces)
    reads = list(api.log)
    with serving(api, target, all_namespaces) as service:
        assert eventually(lambda: len(api.watching) == len(service.reflectors))
        asked = api.log[len(reads):]
        got, want = follows(service, api, target)
        assert got == want
    watches = [r for r in asked if r.query.get("watch") == "1"]
    lists = [r for r in asked if r.query.get("watch") != "1"]
    assert len(watches) >= len(service.reflectors)
    # a watch follows its own list; a watch of one Node (a list of one: a pool's first) asks it by name too
    ones = {(r.path, r.query.get("labelSelector", "")) for r in lists if r.query.get("limit") == "1"}
    for plural in ("events", "pods", "nodesets", "nodepools", "nodes"):
        assert {(path, labels, "" if (path, labels) in ones and fields.startswith("metadata.name=") else fields)
                for path, labels, fields in _selectors(watches, plural)} == _selectors(lists, plural), plural
    # Events: check's field selectors exactly (a Deployment's Events, a Pod's Normal ones never arrive)
    assert _selectors(watches, "events") == _selectors(reads, "events")
    # the workload's own Pods by check's label selector; the others only while they hold a Node's resources
    ns = "" if all_namespaces else f"/namespaces/{target.namespace}"
    own = "app.kubernetes.io/instance" + (" in (slurm-cpu-batch)" if target.nodeset else "")
    # the others' Pods on the Nodes check lists them on, Node by Node with check's field selectors, leaving out
    # server-side the own Pods their twin watch sends whole
    by_node = {q for _, _, q in _selectors(reads, "pods") if q}
    serves = _selectors(watches, "pods") - {(f"/api/v1{ns}/pods", own, "")}
    assert all((path, labels) == ("/api/v1/pods", others) for path, labels, _ in serves) and len(serves) == len(by_node)
    assert {q for _, _, q in serves} == {f"spec.nodeName={n},{NON_TERMINAL}" for n in service.cache.pod_nodes or ()}
    # the same Nodes, but that the idle-pool probe takes a pool's first Node by name, as a real API server lists
    # them (this server lists in file order)
    pool = {n["metadata"]["name"]: n["metadata"]["labels"].get(POOL_LABEL) for n in api.state.objects["nodes"]}
    assert sorted(pool[q.split(",")[0].split("=")[1]] for _, _, q in serves) == \
        sorted(pool[q.split(",")[0].split("=")[1]] for q in by_node)
    # check names the NodeSets it found; a watch in every namespace must also see the Pods of one created later
    assert {r.query.get("labelSelector") for r in reads if r.path.endswith("/pods") and "labelSelector" in r.query} \
        == {"app.kubernetes.io/instance in (slurm-cpu-batch)"}
    assert all(r.query["fieldSelector"].endswith(NON_TERMINAL)  # check's, Node by Node
               for r in reads if r.path.endswith("/pods") and "fieldSelector" in r.query)
    # every NodeSet, cluster-wide, as check reads them beside its own: what the others hold decides the fixes
    assert _selectors(watches, "nodesets") == {("/apis/sunk.coreweave.com/v1alpha1/nodesets", "", "")}


@pytest.mark.parametrize("case", ["no-feasible-pool-typo-held", "pool-labels-missing-beside-partition",
                                  "foreign-pod-beside-other-nodesets"])
def test_one_nodeset_served_sees_what_the_others_hold_as_check_does(serve: Serve, case: str) -> None:
    """`serve --nodeset X`: the pool another NodeSet holds is never suggested nor labelled, as in check (which
    reads every NodeSet beside X); only X is judged."""
    api = serve(case)
    args = json.loads((ROOT / "fixtures" / case / "expected.json").read_text())["args"]
    name = args[args.index("--nodeset") + 1]
    namespace = args[args.index("-n") + 1] if "-n" in args else "tenant-slurm"
    target = Target(nodeset=name, namespace=namespace)
    with serving(api, target, all_namespaces=False) as service:
        got, want = follows(service, api, target)
    assert got == want and [r["name"] for r in got["results"]] == [name]


def test_a_tainted_pool_node_shows_on_metrics_and_the_api_and_is_logged(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    lines: list[str] = []
    with serving(api, lines=lines) as service:
        assert served(service)["status"] == "ok" and metric(service, "symptom") is None
        pool_nodes = [n for n in nodes_of(api) if n["metadata"]["labels"].get("compute.coreweave.com/node-pool")]
        for node in pool_nodes:  # every pool Node tainted, and the controller sees it: nothing left for the NodeSet
            api.state.put("nodes", tainted(node, "example.com/broken"))
        nodeset = copy.deepcopy(api.state.objects["nodesets"][0])
        nodeset["status"].update(desiredNumberScheduled=0, numberFeasible=0, currentNumberScheduled=0, numberReady=0,
                                 updatedNumberScheduled=0)
        api.state.put("nodesets", nodeset)
        for pod in list(api.state.objects["pods"]):
            api.state.delete("pods", pod["metadata"]["namespace"], pod["metadata"]["name"])
        got, want = follows(service, api)
        assert got == want and want["status"] == "critical"
        assert "example.com/broken" in json.dumps(got["results"][0]["symptoms"])
        assert metric(service, "symptom", id="no-feasible-nodes") == 1
        assert metric(service, "status", name="slurm-cpu-batch") == 2
    assert lines[0].endswith("absent -> ok")
    assert any("ok -> critical" in line and "appeared: " in line and "no-feasible-nodes" in line for line in lines)


def test_an_escalation_is_logged_with_the_row_whose_severity_changed(serve: Serve) -> None:
    """pool-below-target fires as a warning (the pool short of its TARGET), then as critical (its Quota condition
    turned False): the same ids, so the line names the row and both severities, text and JSON alike."""
    api = serve("healthy-pool-name")
    lines: list[str] = []
    with serving(api, lines=lines) as service:
        pool = copy.deepcopy(next(p for p in api.state.objects["nodepools"] if p["metadata"]["name"] == "slurm-cpu"))
        pool["spec"]["targetNodes"] += 1
        api.state.put("nodepools", copy.deepcopy(pool))
        assert eventually(lambda: served(service)["status"] == "warning")
        quota = next(c for c in pool["status"]["conditions"] if c["type"] == "Quota")
        quota.update(status="False", reason="NotSet", message="quota limit is 0 for instance type cd-gp-a192-genoa")
        api.state.put("nodepools", pool)
        assert eventually(lambda: served(service)["status"] == "critical")
    assert lines[-1].split(" ", 1)[1] == ("NodeSet tenant-slurm/slurm-cpu-batch: warning -> critical; changed: "
                                          "pool-below-target (warning -> critical)"), lines
    from sunkcheck.serve.loop import Verdict, log_line, transitions

    key = ("NodeSet", "tenant-slurm", "slurm-cpu-batch")
    [record] = transitions({key: Verdict("warning", frozenset({"a", "b"}), (("a", "warning"), ("b", "info")))},
                           {key: Verdict("critical", frozenset({"a", "b"}), (("a", "critical"), ("b", "info")))}, "T")
    assert json.loads(log_line(record, "json"))["changed"] == [{"id": "a", "old": "warning", "new": "critical"}]


def test_recovers_from_a_dropped_watch_a_compacted_history_and_a_restarted_server(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    with serving(api, watch_seconds=30) as service:
        node = next(n for n in nodes_of(api) if n["metadata"]["labels"].get("compute.coreweave.com/node-pool"))
        eventually(lambda: len(api.watching) == len(service.reflectors))
        assert api.drop_watches() == len(service.reflectors)
        api.state.put("nodes", tainted(node, "example.com/after-drop"))
        agrees(service, api)

        api.stop()  # mid-watch: every connection cut, nothing listening
        assert eventually(lambda: (metric(service, "watch_errors_total", source="nodes") or 0) >= 1)
        name = served(service)["results"][0]["nodes"][0]["name"]
        api.state.delete("nodes", None, name)  # while the server is down: serve learns it after the restart
        api.state.compact()  # the history from before the restart is gone: 410, then a relist
        api.start()
        assert name not in {n["name"] for n in agrees(service, api)["results"][0]["nodes"]}
        assert eventually(lambda: (metric(service, "watch_relists_total", source="nodes") or 0) >= 1)
        assert (metric(service, "watch_last_event_age_seconds", source="nodes") or 0) < 5
        assert get(service.url + "/readyz")[0] == 200


def test_the_http_side_is_read_only_and_bounded(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    with serving(api) as service:
        assert service.server.server_address[0] == "127.0.0.1"  # loopback unless --listen says otherwise
        post = urllib.request.Request(service.url + "/api/v1/check", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(post, timeout=5)
        assert refused.value.code == 405
        big = urllib.request.Request(service.url + "/metrics", headers={"X-Big": "x" * (serve_http.MAX_HEADER_BYTES + 1)})
        with pytest.raises(urllib.error.HTTPError) as too_big:
            urllib.request.urlopen(big, timeout=5)
        assert too_big.value.code == 431
        assert get(service.url + "/nowhere")[0] == 404
        with urllib.request.urlopen(service.url + "/healthz", timeout=5) as ok:
            assert ok.headers["Server"] == f"sunkcheck/{__version__}"  # no Python version, no trailing space
        for method in ("TRACE", "CONNECT", "BREW"):  # not only the methods http.server knows of
            answer = raw(service, f"{method} / HTTP/1.0\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.0 405 ") and b"Allow: GET, HEAD" in answer, answer
        for request in (b"\x16\x03\x01\x02\x00 \x01 \x00\x01\xfc\x03\x03\r\n\r\n", b"GET / HTTP/x.y\r\n\r\n",
                        b"GET / HTTP/9.9\r\n\r\n", b"GET /a b c d\x1b]0;\r\n\r\n",
                        b"GET /" + b"a" * 100_000 + b" HTTP/1.0\r\n\r\n",
                        b"GET / HTTP/1.0\r\nX-A: " + b"a" * 100_000 + b"\r\n\r\n"):
            status, _, body = raw(service, request).partition(b"\r\n")
            assert re.fullmatch(rb"HTTP/1\.0 (400|414|431|505) .*", status), (request[:40], status)
            assert b"text/plain" in body and b"<" not in body and b"\x1b" not in body, body
            assert len(body.partition(b"\r\n\r\n")[2]) < 250, body
        assert eventually(lambda: get(service.url + "/healthz")[0] == 200)
        api.state.put("nodes", tainted(nodes_of(api)[0], "example.com/x"))  # the diagnosis went on meanwhile
        agrees(service, api)
    assert api.writes == 0


def raw(service: Service, request: bytes) -> bytes:
    """What serve answers `request`, sent as is on a connection of its own."""
    with socket.create_connection((str(service.server.server_address[0]), service.server.server_port), timeout=5) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
        return answer


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def test_a_page_reaching_loopback_under_another_name_is_refused(serve: Serve) -> None:
    """DNS rebinding: a web page at evil.example, its name pointed at 127.0.0.1, sends `Host: evil.example`; serve
    on loopback answers only its loopback names, so the page cannot read the cluster's state through the browser."""
    api = serve("healthy-pool-name")
    with serving(api) as service:
        port = service.server.server_port
        for host in (f"evil.example:{port}", "evil.example", f"10.0.0.1:{port}", f"127.0.0.1.evil.example:{port}"):
            answer = raw(service, f"GET /api/v1/check HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            assert status_of(answer) == 421 and b"tenant-slurm" not in answer, (host, answer[:200])
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", "127.0.0.1", f"[::1]:{port}"):
            assert status_of(raw(service, f"GET /api/v1/check HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())) == 200, host
        assert status_of(raw(service, b"GET /api/v1/check HTTP/1.0\r\n\r\n")) == 200  # no Host: no browser sent it


def test_hosts_no_client_sends_and_absolute_urls_are_judged_as_a_server_must(serve: Serve) -> None:
    """A Host no client sends (garbage after a bracketed address, an IPv6 address without brackets, a port that is
    not a number, userinfo, two Hosts) is a bad request (400), not the loopback name in it. A proxy's absolute-form
    request line is served, its URL's host judged in place of Host (RFC 9112): a loopback URL answered whatever
    Host says, another one misdirected (421)."""
    api = serve("healthy-pool-name")
    with serving(api) as service:
        port = service.server.server_port
        for host in ("[::1]evil", f"[::1]:{port}evil", f"[::1]evil:{port}", "::1", f"::1:{port}", "[::1", "[evil]",
                     f"localhost:{port}x", f"localhost:{port}:1", "localhost:", f"user@localhost:{port}", ""):
            answer = raw(service, f"GET /api/v1/check HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            assert status_of(answer) == 400 and b"tenant-slurm" not in answer, (host, answer[:200])
        two = raw(service, f"GET /api/v1/check HTTP/1.1\r\nHost: localhost:{port}\r\nHost: evil.example\r\n\r\n".encode())
        assert status_of(two) == 400 and b"tenant-slurm" not in two, two[:200]
        for url, host in ((f"http://127.0.0.1:{port}/api/v1/check", "evil.example"),
                          (f"HTTP://[::1]:{port}/api/v1/check?x=1", f"127.0.0.1:{port}")):
            answer = raw(service, f"GET {url} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            assert status_of(answer) == 200 and b"tenant-slurm" in answer, (url, answer[:200])
        page = raw(service, f"GET http://localhost:{port} HTTP/1.1\r\n\r\n".encode())  # no path: `/`
        assert status_of(page) == 200 and b"<!doctype html>" in page.lower(), page[:200]
        for url in ("http://evil.example/api/v1/check", f"http://127.0.0.1.evil.example:{port}/api/v1/check"):
            answer = raw(service, f"GET {url} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            assert status_of(answer) == 421 and b"tenant-slurm" not in answer, (url, answer[:200])
        for url in (f"http://user@127.0.0.1:{port}/api/v1/check", f"ftp://127.0.0.1:{port}/api/v1/check", "*",
                    "api/v1/check"):
            answer = raw(service, f"GET {url} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            assert status_of(answer) == 400 and b"tenant-slurm" not in answer, (url, answer[:200])


def test_an_http_0_9_request_is_answered_400_with_a_status_line_at_once(serve: Serve) -> None:
    """`GET /` (HTTP/0.9: no version, no headers) had its answer's body alone, no status line to tell an error by,
    and only once the client sent a blank line (else nothing, after the request deadline)."""
    api = serve("healthy-pool-name")
    with serving(api) as service:
        for request in (b"GET /api/v1/check\r\n", b"GET /api/v1/check\n", b"GET /api/v1/check\r\n\r\n"):
            started = time.monotonic()
            answer = raw(service, request)
            assert answer.startswith(b"HTTP/1.0 400 ") and b"tenant-slurm" not in answer, (request, answer[:200])
            assert time.monotonic() - started < 2, request


def test_serve_listening_on_every_interface_answers_any_name(serve: Serve) -> None:
    """In a Pod (`--listen :8080`) Prometheus scrapes by the Pod's IP and people through Services and port-forwards."""
    api = serve("healthy-pool-name")
    with serving(api, listen=("0.0.0.0", 0)) as service:
        answer = raw(service, b"GET /metrics HTTP/1.1\r\nHost: sunkcheck-serve.monitoring.svc:8080\r\n\r\n")
        assert status_of(answer) == 200


def test_slow_or_silent_clients_keep_neither_the_probes_nor_the_scrapes_out(serve: Serve,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Clients sending their request a byte at a time, or nothing at all, more of them than requests are answered
    at once: /healthz, /metrics and /api/v1/check still answer at once; past the deadline for the whole request
    line and headers (not each read), a dribbling client is closed."""
    monkeypatch.setattr(serve_http, "TIMEOUT", 2.0)
    api = serve("healthy-pool-name")
    with serving(api) as service:
        address = (str(service.server.server_address[0]), service.server.server_port)
        idle = [socket.create_connection(address, timeout=5) for _ in range(serve_http.MAX_READING + 4)]
        slow = [socket.create_connection(address, timeout=5) for _ in range(serve_http.MAX_CONCURRENT + 4)]
        try:
            for s in slow:
                s.sendall(b"GET / HTTP/1.1\r\n")
            start = time.monotonic()
            closed: set[int] = set()
            while time.monotonic() - start < 3.5:  # past the deadline, each read well within it
                for s in slow:
                    with contextlib.suppress(OSError):
                        s.sendall(b"X")
                for url in ("/healthz", "/metrics", "/api/v1/check"):
                    asked = time.monotonic()
                    assert get(service.url + url, timeout=2)[0] == 200, url
                    assert time.monotonic() - asked < 1.5
                time.sleep(0.5)
            for i, s in enumerate(slow):
                s.settimeout(1)
                with contextlib.suppress(OSError):
                    if s.recv(100) == b"":
                        closed.add(i)
            assert len(closed) == len(slow)  # closed without an answer once the deadline passed
        finally:
            for s in slow + idle:
                s.close()


def test_a_newcomer_closes_the_connection_that_has_been_sending_its_request_longest(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    with serving(api) as service:
        address = (str(service.server.server_address[0]), service.server.server_port)
        reading = [socket.create_connection(address, timeout=5) for _ in range(serve_http.MAX_READING + 1)]
        try:
            reading[0].settimeout(2)  # well within the deadline for a request
            assert reading[0].recv(100) == b""  # closed, without an answer
            reading[1].settimeout(0.5)
            with pytest.raises(TimeoutError):
                reading[1].recv(100)
            assert get(service.url + "/metrics")[0] == 200  # closing reading[1] for it
            reading[2].sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
            assert reading[2].recv(100).startswith(b"HTTP/1.0 200 ")
            assert reading[1].recv(100) == b""
        finally:
            for s in reading:
                s.close()


def test_the_probes_answer_when_every_slot_is_taken(serve: Serve) -> None:
    """Every slot of its kind taken: a document gets 503 at once, and so does /metrics, each in its own slots;
    the liveness and readiness probes still their 200."""
    api = serve("healthy-pool-name")
    with serving(api) as service:
        for slots, limit, url in ((service.server.slots, serve_http.MAX_CONCURRENT, "/"),
                                  (service.server.probes, serve_http.MAX_PROBES, "/metrics")):
            for _ in range(limit):
                assert slots.acquire(timeout=5)
            assert get(service.url + url) == (503, b"busy: too many requests at once\n")
            assert get(service.url + "/healthz") == get(service.url + "/readyz") == (200, b"ok\n")
            slots.release()
            assert get(service.url + url)[0] == 200
            for _ in range(limit - 1):
                slots.release()


def test_clients_that_never_read_the_page_keep_neither_the_probes_nor_the_scrapes_out(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """More clients than documents are sent at once ask for a page larger than the socket buffers and never read
    it: /readyz and /metrics answer at once meanwhile, each such answer is given up at the deadline for the whole
    answer (not each write), and the slots are free again."""
    monkeypatch.setattr(serve_http, "TIMEOUT", 3.0)
    api = serve("pool-split")
    with serving(api) as service:
        fat = b"x" * (8 << 20)  # the page as large as a hundred NodeSets make it; what it says matters not here
        published = service.loop.published
        monkeypatch.setattr(type(published), "page_at", lambda self, checked_at: (fat,))
        address = (str(service.server.server_address[0]), service.server.server_port)
        stuck = []
        for _ in range(serve_http.MAX_CONCURRENT + 4):
            conn = socket.socket()
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            conn.connect(address)
            conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
            stuck.append(conn)
        try:
            time.sleep(0.5)
            assert get(service.url + "/")[0] == 503  # the page's slots are taken...
            started = time.monotonic()
            for url in ("/readyz", "/metrics", "/healthz", "/readyz"):  # ...not the probes'
                asked = time.monotonic()
                assert get(service.url + url, timeout=2)[0] == 200, url
                assert time.monotonic() - asked < 1, url
            assert eventually(lambda: get(service.url + "/")[0] == 200, 6)  # given up within the deadline
            assert time.monotonic() - started < serve_http.TIMEOUT + 2
        finally:
            for conn in stuck:
                conn.close()


def test_blank_lines_before_the_request_line_are_ignored_and_a_port_past_65535_refused(serve: Serve) -> None:
    """RFC 9112 2.2: a server ignores at least one CRLF before the request line; a Host whose port no TCP can
    have is a request no client sends (400)."""
    api = serve("healthy-pool-name")
    with serving(api) as service:
        port = service.server.server_port
        for request in (b"\r\nGET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                        b"\r\n\r\nGET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b"\nGET /readyz HTTP/1.0\n\n"):
            answer = raw(service, request)
            assert answer.startswith(b"HTTP/1.0 200 ") and answer.endswith(b"\r\n\r\nok\n"), (request, answer)
        for host in ("127.0.0.1:99999", "localhost:65536", "[::1]:70000"):
            answer = raw(service, f"GET /metrics HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            assert status_of(answer) == 400, (host, answer[:200])
        for host in (f"127.0.0.1:{port}", "localhost:65535", "[::1]:0"):
            assert status_of(raw(service, f"GET /readyz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())) == 200, host


def conditional(url: str, if_none_match: str | None) -> tuple[int, str | None, bytes]:
    """(status, ETag, body) of a GET sending If-None-Match."""
    request = urllib.request.Request(url, headers={"If-None-Match": if_none_match} if if_none_match else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status, resp.headers["ETag"], resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["ETag"], e.read()


def test_a_poll_that_has_the_documents_etag_gets_304_and_no_document(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    with serving(api) as service:
        url = service.url + "/api/v1/check"
        code, etag, body = conditional(url, None)
        assert code == 200 and etag and json.loads(body)["status"] == "ok"
        strong = etag.removeprefix("W/")  # weak: its checked_at moves on while the verdict stays
        for sent in (etag, strong, f'"stale", {etag}', "*"):  # RFC 9110: weak comparison, a list, any
            assert conditional(url, sent) == (304, etag, b""), sent
        code, again, fresh = conditional(url, '"stale"')
        assert (code, again, timeless(fresh)) == (200, etag, timeless(body))
        assert conditional(service.url + "/metrics", etag)[0] == 200  # a scrape is never conditional
        judged = json.loads(body)["results"][0]["nodes"][0]["name"]  # a Node of the NodeSet's pool
        api.state.put("nodes", tainted(next(n for n in nodes_of(api) if n["metadata"]["name"] == judged), "example.com/x"))
        assert "example.com/x" in json.dumps(agrees(service, api))
        code, now, changed = conditional(url, etag)  # a change: the new document, under a new tag
        assert code == 200 and now != etag and changed != body and timeless(changed) == timeless(served(service))


def timeless(document: bytes | dict) -> dict:
    """The document without its checked_at, which moves on while the verdict stays."""
    found = json.loads(document) if isinstance(document, bytes) else dict(document)
    found.pop("checked_at")
    return found


def test_a_diagnosis_renders_no_document_until_one_is_asked_for(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[int] = []
    real = serve_loop.render_report

    def render(report: Report) -> str:
        rendered.append(1)
        return real(report)

    monkeypatch.setattr(serve_loop, "render_report", render)
    api = serve("healthy-pool-name")
    with serving(api) as service:
        before = service.loop.diagnoses
        judged = (service.cache.snapshot(service.target).nodes or ())[0]["metadata"]["name"]
        api.state.put("nodes", tainted(next(n for n in nodes_of(api) if n["metadata"]["name"] == judged), "example.com/x"))
        assert eventually(lambda: service.loop.diagnoses > before)
        assert rendered == [] and metric(service, "up") == 1  # the diagnosis and /metrics: no JSON document
        code, etag, body = conditional(service.url + "/api/v1/check", None)
        assert code == 200 and rendered == [1] and json.loads(body)["status"] == "warning"
        assert conditional(service.url + "/api/v1/check", None) == (200, etag, body) and rendered == [1]  # once


def test_a_page_and_document_past_the_bound_on_node_verdicts_are_refused_saying_why(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hundred NodeSets on a 2,000-Node pool rendered 20 MB documents, taking 130 MB more to render: past
    MAX_DOCUMENT_NODES verdicts, the page and the document are refused (503, why, in their own type), never
    rendered; the probes and the scrape answer as ever."""
    api = serve("pool-split")
    with serving(api) as service:
        published = service.loop.published
        assert published is not None
        held = sum(len(r.nodes) for r in published.report.results)
        monkeypatch.setattr(serve_http, "MAX_DOCUMENT_NODES", held - 1)
        page, document = get(service.url + "/"), get(service.url + "/api/v1/check")
        why = f"the targets judged hold {held:,} Node verdicts together, more than serve renders ({held - 1:,})"
        assert page[0] == 503 and why in page[1].decode() and page[1].startswith(b"<!doctype html>")
        assert document[0] == 503 and why in json.loads(document[1])["error"]
        assert "_document" not in vars(published) and "_page" not in vars(published)  # never rendered
        assert get(service.url + "/readyz")[0] == 200 and metric(service, "up") == 1
        monkeypatch.setattr(serve_http, "MAX_DOCUMENT_NODES", held)
        assert get(service.url + "/")[0] == 200 and get(service.url + "/api/v1/check")[0] == 200


def test_the_page_is_rendered_once_a_verdict_and_each_request_gets_its_time(serve: Serve,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The page (19 MB at a hundred NodeSets on a 2,000-Node pool) was rendered again for each request: requests
    share one rendering a publication, each answer the renderer's page with the time the verdict was last known
    true, byte for byte."""
    rendered: list[Report] = []
    real = serve_loop.page

    def page(report: Report, *, live_url: str | None = None) -> str:
        rendered.append(report)
        return real(report, live_url=live_url)

    monkeypatch.setattr(serve_loop, "page", page)
    api = serve("pool-split")
    with serving(api) as service:
        pages = [get(service.url + "/")[1] for _ in range(3)]
        assert len(rendered) == 1
        published = service.loop.published
        assert published is not None
        for body in pages:
            stamp = re.search(rb'"checked_at": "([^"]+)"', body)
            assert stamp is not None and b"checked-at-" not in body
            want = real(replace(published.report, checked_at=stamp[1].decode()), live_url="/api/v1/check")
            assert body == want.encode()
        judged = json.loads(pages[0].split(b'id="sunkcheck-report">')[1].split(b"</script>")[0])["results"][0]
        api.state.put("nodes", tainted(next(n for n in nodes_of(api) if n["metadata"]["name"] == judged["nodes"][0]["name"]),
                                       "example.com/x"))
        assert eventually(lambda: b"example.com/x" in get(service.url + "/")[1])  # a new verdict: a new page
        now, made = service.loop.published, len(rendered)
        get(service.url + "/")
        assert made >= 2 and (len(rendered) == made or service.loop.published is not now)


def test_the_page_is_the_html_renderers_live_and_keeps_cluster_strings_inert(serve: Serve) -> None:
    hostile = "<img src=x onerror=alert(1)>"  # a label value of the fixture's Nodes and Node Pool
    api = serve("hostile-strings")
    with serving(api) as service:
        assert hostile in json.dumps(served(service), ensure_ascii=False)  # it reaches the report...
        code, body = get(service.url + "/")
        text = body.decode()
        assert code == 200 and "/api/v1/check" in text  # the live page, polling serve
        assert "<img" not in text  # ...and the page only as text
    assert serve_http.NOT_READY_PAGE.startswith(b"<!doctype html>")


# --- the page in a real browser, served by serve -------------------------------------------------------------

def open_page(browser: Any, service: Service) -> None:
    """serve's `/` in the browser, drawn; what an earlier page logged is dropped."""
    browser.get(service.url + "/")
    wait_for(browser, sections)
    browser.get_log("browser")


def test_the_page_in_a_browser_shows_the_critical_target_first_and_follows_a_change_without_a_reload(
        serve: Serve, browser: Any) -> None:
    api = serve("several-nodesets")  # slurm-gpu-spare tolerates the wrong taint value: critical
    with serving(api) as service:
        with urllib.request.urlopen(service.url + "/", timeout=5) as resp:
            header, html = resp.headers["Content-Security-Policy"], resp.read().decode()
        # serve's header is the page's own policy (the browser applies both): its inline code alone, by digest
        meta = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
        assert meta and header == meta[1]
        assert "default-src 'none'" in header and "unsafe" not in header
        open_page(browser, service)
        headings = [s.find_element(By.TAG_NAME, "h2").text for s in sections(browser)]
        assert headings[0].split()[:3] == ["CRITICAL", "NodeSet", "tenant-slurm/slurm-gpu-spare"]
        browser.execute_script("window.sunkcheckMarker = 'still here'")
        polls = ("return performance.getEntriesByType('resource')"
                 ".filter((e) => e.name.endsWith('/api/v1/check')).map((e) => e.responseStatus)")
        # the first poll fetches serve's document; the next ones send its ETag back and get 304, no document
        wait_for(browser, lambda d: (seen := d.execute_script(polls))[:1] == [200] and 304 in seen,
                 timeout=2 * POLL_MS / 1000 + 5)
        cell = "button.node[aria-label^='Node g89b7b9:']"  # a feasible Node of slurm-gpu-h100's pool
        assert "v-feasible" in browser.find_element(By.CSS_SELECTOR, cell).get_attribute("class")
        browser.find_element(By.CSS_SELECTOR, cell).click()
        node = next(n for n in nodes_of(api) if n["metadata"]["name"] == "g89b7b9")
        api.state.put("nodes", tainted(node, "example.com/repair"))
        wait_for(browser, lambda d: "v-taint" in d.find_element(By.CSS_SELECTOR, cell).get_attribute("class"),
                 timeout=POLL_MS / 1000 + 5)  # within a poll and serve's debounced diagnosis
        assert browser.execute_script(polls)[-1] == 200  # the new document
        assert browser.execute_script("return window.sunkcheckMarker") == "still here"  # the same document
        h100 = next(s for s in sections(browser) if "slurm-gpu-h100" in s.find_element(By.TAG_NAME, "h2").text)
        assert "example.com/repair" in h100.find_element(By.CSS_SELECTOR, ".detail").text  # still selected
        assert "STALE" not in browser.find_element(By.CSS_SELECTOR, ".live").text
        assert_quiet(browser)  # serve's Content-Security-Policy and the page's together let it run
        agrees(service, api)


def test_the_page_in_a_browser_copies_one_command_per_click(serve: Serve, browser: Any) -> None:
    """misscheduled through serve, drawn from its /api/v1/check: each command and snippet of a fix is a block with
    its own button, and one click copies that one command (the slurmd Pods' delete, never with the drain before it)."""
    api = serve("misscheduled")
    with serving(api) as service:
        open_page(browser, service)
        wait_for(browser, lambda d: "updated" in d.find_element(By.CSS_SELECTOR, ".live").text)  # from serve's answer
        browser.execute_cdp_cmd("Browser.grantPermissions", {
            "origin": service.url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
        with urllib.request.urlopen(service.url + "/api/v1/check", timeout=5) as resp:
            doc = json.loads(resp.read())
        fix = next(s for s in doc["results"][0]["symptoms"] if s["id"] == "misscheduled")
        copyable = [p["text"] for p in fix["fix_steps"] if p["kind"] != "prose"]
        article = browser.find_element(By.XPATH, "//article[.//code[text()='misscheduled']]")
        buttons = article.find_elements(By.CSS_SELECTOR, "button.copy")
        assert [b.find_element(By.XPATH, "..").find_element(By.TAG_NAME, "pre").text for b in buttons] == copyable
        evict = next(i for i, text in enumerate(copyable) if "/eviction " in text)
        buttons[evict].click()
        wait_for(browser, lambda d: article.find_element(By.CSS_SELECTOR, ".copied").text == "Copied")
        copied = browser.execute_async_script("navigator.clipboard.readText().then(arguments[0])")
        assert copied == copyable[evict] and copied.count("\n") == 0 and "scontrol" not in copied
        assert copied == drained_eviction("tenant-slurm", "slurm-cpu-batch-012-005", "g369e7b")
        assert_quiet(browser)


def test_a_hostile_label_renders_as_text_through_serve(serve: Serve, browser: Any) -> None:
    hostile = "<img src=x onerror=alert(1)>"  # a label value of the fixture's Nodes and Node Pool
    api = serve("hostile-strings")
    with serving(api) as service:
        open_page(browser, service)
        assert hostile in browser.find_element(By.TAG_NAME, "body").text
        wait_for(browser, lambda d: "updated" in d.find_element(By.CSS_SELECTOR, ".live").text)  # from serve's answer
        assert hostile in browser.find_element(By.TAG_NAME, "body").text
        assert browser.find_elements(By.TAG_NAME, "img") == []
        assert_quiet(browser)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_the_cli_serves_until_sigterm_or_sighup(serve: Serve, tmp_path: Path, sig: signal.Signals) -> None:
    """A service's stop (systemd, the kubelet: SIGTERM) or its terminal closed (SIGHUP): a clean end, exit 0."""
    serve("pool-split")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "sunkcheck", "serve", "-A", "--listen", f"127.0.0.1:{port}",
                             "--log-format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=tmp_path)
    try:
        assert eventually(lambda: _up(f"http://127.0.0.1:{port}/readyz"), 30)
        assert json.loads(get(f"http://127.0.0.1:{port}/api/v1/check")[1])["status"] == "warning"
    finally:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "interrupted" not in err, err
    first = json.loads(out.splitlines()[0])
    assert (first["name"], first["old"], first["new"], first["appeared"]) == ("slurm-cpu-batch", "absent", "warning",
                                                                             ["pool-split"])
    assert f"listening on http://127.0.0.1:{port}" in err


def _up(url: str) -> bool:
    try:
        return get(url, timeout=1)[0] == 200
    except OSError:
        return False


def test_bad_listen_address_is_one_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "sunkcheck", "serve", "--listen", "nowhere"], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1 and "--listen 'nowhere'" in proc.stderr


# --- the property: serve's verdict is a fresh check's -----------------------------------------------------

POOL_LABEL = "compute.coreweave.com/node-pool"


def apply(api: Api, op: tuple, n: int) -> None:
    """One random change to the served objects (by index into what is served now)."""
    what, i = op
    state = api.state
    nodes, pods = state.objects.get("nodes", []), state.objects.get("pods", [])
    if what == "taint" and nodes:
        state.put("nodes", tainted(nodes[i % len(nodes)], f"example.com/t{n}"))
    elif what == "cordon" and nodes:
        node = copy.deepcopy(nodes[i % len(nodes)])
        node["spec"]["unschedulable"] = True
        state.put("nodes", node)
    elif what == "unlabel" and nodes:
        node = copy.deepcopy(nodes[i % len(nodes)])
        node["metadata"]["labels"].pop(POOL_LABEL, None)
        state.put("nodes", node)
    elif what == "delete-node" and nodes:
        state.delete("nodes", None, nodes[i % len(nodes)]["metadata"]["name"])
    elif what == "empty-pool" and nodes:  # every Node of a pool gone (a pool scaled to zero)
        empty(api, nodes[i % len(nodes)]["metadata"]["labels"].get(POOL_LABEL))
    elif what == "delete-pod" and pods:
        pod = pods[i % len(pods)]
        state.delete("pods", pod["metadata"]["namespace"], pod["metadata"]["name"])
    elif what == "squat" and nodes:  # a foreign Pod takes most of a Node's CPU
        node = nodes[i % len(nodes)]
        state.put("pods", {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": f"squatter-{n}", "namespace": "data-eng", "uid": f"u{n}"},
                           "spec": {"nodeName": node["metadata"]["name"], "containers": [
                               {"name": "c", "resources": {"requests": {"cpu": "200", "memory": "1Gi"}}}]},
                           "status": {"phase": "Running"}})
    elif what == "feasible" and state.objects.get("nodesets"):
        ns = copy.deepcopy(state.objects["nodesets"][i % len(state.objects["nodesets"])])
        ns.setdefault("status", {})["numberFeasible"] = i % 9
        state.put("nodesets", ns)
    elif what == "finished" and nodes:  # a Pod that ran to completion holds nothing: outside every Pod selector
        state.put("pods", {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": f"finished-{n}", "namespace": "data-eng", "uid": f"f{n}"},
                           "spec": {"nodeName": nodes[i % len(nodes)]["metadata"]["name"], "containers": [
                               {"name": "c", "resources": {"requests": {"cpu": "200", "memory": "1Gi"}}}]},
                           "status": {"phase": "Succeeded"}})
    elif what in ("deployment-event", "normal-pod-event"):  # outside every Event selector
        kind, kind_type = ("Deployment", "Warning") if what == "deployment-event" else ("Pod", "Normal")
        state.put("events", {"apiVersion": "v1", "kind": "Event", "type": kind_type, "reason": "Pulled",
                             "message": f"outside {n}", "metadata": {"name": f"o{n}", "namespace": "data-eng"},
                             "involvedObject": {"kind": kind, "name": f"x{i}", "namespace": "data-eng"}})
    elif what == "event" and state.objects.get("nodesets"):
        ns = state.objects["nodesets"][i % len(state.objects["nodesets"])]
        state.put("events", {"apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": "FailedScheduling",
                             "message": f"0/9 nodes are available: {n}", "metadata": {
                                 "name": f"e{n}", "namespace": ns["metadata"]["namespace"]},
                             "involvedObject": {"kind": "NodeSet", "name": ns["metadata"]["name"],
                                                "namespace": ns["metadata"]["namespace"]}})


OUTSIDE = ("finished", "deployment-event", "normal-pod-event")
"""Changes to objects no watch's selector selects: the server sends serve nothing, and it does no work."""
OPS = st.lists(st.tuples(st.sampled_from(["taint", "cordon", "unlabel", "delete-node", "empty-pool", "delete-pod",
                                          "squat", "feasible", "event", *OUTSIDE]), st.integers(0, 50)),
               min_size=1, max_size=6)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# a Pod on a Node a check reads no Pod of: serve must not either
@example(case="healthy-pool-name", ops=[("squat", 2)], scoped=False)
@example(case="foreign-pod-resources", ops=[("finished", 1), ("deployment-event", 0), ("normal-pod-event", 2)],
         scoped=False)
@example(case="healthy-two-tenants-same-name", ops=[("taint", 0)], scoped=True)  # the other tenant's pool is in use
@example(case="healthy-pool-name", ops=[("empty-pool", 2)], scoped=False)  # the NodeSet's pool without Nodes
@given(case=st.sampled_from(["healthy-pool-name", "pool-split", "foreign-pod-resources", "several-nodesets",
                             "healthy-two-tenants-same-name"]), ops=OPS, scoped=st.booleans())
def test_serve_agrees_with_a_fresh_check_after_any_changes(serve: Serve, case: str, ops: list, scoped: bool) -> None:
    api = serve(case)
    # -n the first NodeSet's namespace, or -A
    target = Target(namespace=api.state.objects["nodesets"][0]["metadata"]["namespace"]) if scoped else Target()
    with serving(api, target, all_namespaces=not scoped) as service:
        assert eventually(lambda: len(api.watching) == len(service.reflectors))
        made = metric(service, "diagnoses_total")
        for n, op in enumerate(ops):
            apply(api, op, n)
        if all(what in OUTSIDE for what, _ in ops):
            time.sleep(0.3)  # several debounce periods: anything sent would have been diagnosed by now
            assert metric(service, "diagnoses_total") == made
            names = {f"finished-{n}" for n in range(len(ops))} | {f"o{n}" for n in range(len(ops))}
            assert not any(service.cache.holds(s.name, "data-eng", name) for s in service.cache.watched for name in names)
        got, want = follows(service, api, target)
        assert got == want


def empty(api: Api, pool: str | None) -> None:
    """Every Node of `pool` deleted."""
    for node in [n for n in nodes_of(api) if pool and n["metadata"]["labels"].get(POOL_LABEL) == pool]:
        api.state.delete("nodes", None, node["metadata"]["name"])


def own_pods_deleted(api: Api) -> None:
    """Every slurmd Pod deleted (a NodeSet whose Pods are gone, its status not yet updated)."""
    for pod in [p for p in api.state.objects["pods"] if INSTANCE in p["metadata"].get("labels", {})]:
        api.state.delete("pods", pod["metadata"]["namespace"], pod["metadata"]["name"])


def asked_in(api: Api, seconds: float) -> list[str]:
    """The requests the API server was sent over the next `seconds`."""
    start = len(api.log)
    time.sleep(seconds)
    return [f"{q.path}?{q.query}" for q in api.log[start:]]


INSTANCE = "app.kubernetes.io/instance"
EVERY_NODE, SLURM_CPU = "nodes", "nodes/compute.coreweave.com/node-pool in (slurm-cpu)"
CARRIER = "nodes/one:compute.coreweave.com/node-pool"
"""The watch of one Node carrying the pool-name label: while the pool has none, it says some Node does."""


def test_a_pool_without_nodes_is_published_as_check_says_and_its_node_watches_stay(serve: Serve) -> None:
    """The NodeSet's pool has no Node (a scale-up from zero): its selector selects none, so the plan needs one Node
    carrying the pool-name label it relies on (a reserved key), not every Node, as check reads it; the selector's
    watch stays beside that one (it tells when the plan no longer needs it), rather than each replacing the other
    and the lists starting again without end."""
    snap = load(ROOT / "fixtures" / "healthy-pool-name")
    api = serve(replace(snap, nodes=tuple(n for n in snap.nodes or () if n["metadata"]["labels"].get(POOL_LABEL) != "slurm-cpu"),
                        pods=tuple(p for p in snap.pods or () if INSTANCE not in p["metadata"].get("labels", {}))))
    with serving(api) as service:
        assert agrees(service, api)["status"] == "warning"  # slurmd-pods-missing
        watches = node_watches(service)
        assert watches == {CARRIER, SLURM_CPU}
        asked = asked_in(api, 5.0)
        assert len(asked) < 20, asked  # the watches held open: no lists, no watches asked again
        assert node_watches(service) == watches


def test_the_pools_nodes_deleted_under_serve_publish_checks_verdict(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    with serving(api) as service:
        assert agrees(service, api)["status"] == "ok"
        empty(api, "slurm-cpu")  # the pool still counts 8 Nodes, none in the cluster: not delivered, as check says
        emptied = agrees(service, api)
        assert emptied["status"] == "warning"
        assert [s["id"] for s in emptied["results"][0]["symptoms"]] == ["pool-below-target"]
        assert eventually(lambda: {CARRIER, SLURM_CPU} <= node_watches(service))
        assert EVERY_NODE not in node_watches(service)
        asked = asked_in(api, 5.0)
        assert len(asked) < 20, asked
        made = metric(service, "diagnoses_total")
        own_pods_deleted(api)  # the slurmd Pods gone too
        assert agrees(service, api)["results"][0]["steps"] != emptied["results"][0]["steps"]
        assert (metric(service, "diagnoses_total") or 0) > (made or 0)
        assert metric(service, "status", name="slurm-cpu-batch") == 1


def test_watches_moving_without_end_hold_a_publication_back_held_max_seconds_at_most(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever keeps the read plan moving the watches, the old verdict does not stand: the judgement is published
    as it stands after HELD_MAX seconds."""
    monkeypatch.setattr(serve_loop, "HELD_MAX", 1.0)
    api = serve("healthy-pool-name")
    with serving(api) as service:
        assert agrees(service, api)["status"] == "ok"
        moves: list[frozenset[str] | None] = []

        def moved(nodes: frozenset[str] | None) -> bool:
            moves.append(nodes)
            return True  # each time

        service.loop.follow = moved
        own_pods_deleted(api)
        got, want = follows(service, api)
        assert got == want and want["status"] == "warning" and moves


# --- deployment ---------------------------------------------------------------------------------------------

def test_deploy_serve_rbac_is_what_sunkcheck_rbac_serve_prints() -> None:
    printed = subprocess.run([sys.executable, "-m", "sunkcheck", "rbac", "--serve", "--service-account",
                              "sunkcheck-serve"], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                             timeout=60).stdout
    assert (ROOT / "deploy" / "serve-rbac.yaml").read_text() == printed
    role, binding = yaml.safe_load_all(printed)
    assert role["rules"] == cluster_role("sunkcheck-serve", ("get", "list", "watch"))["rules"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "sunkcheck-serve", "namespace": "monitoring"}]


def test_deploy_serve_runs_read_only_with_its_role_and_alerts_on_metrics_it_exports(serve: Serve) -> None:
    account, deployment, service, rule = yaml.safe_load_all((ROOT / "deploy" / "serve.yaml").read_text())
    role = next(yaml.safe_load_all((ROOT / "deploy" / "serve-rbac.yaml").read_text()))
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["serviceAccountName"] == account["metadata"]["name"] == "sunkcheck-serve"
    assert pod["securityContext"]["runAsNonRoot"] and container["securityContext"]["readOnlyRootFilesystem"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    api = serve("several-nodesets", rbac=role)
    args = container["args"]
    assert args[:2] == ["serve", "-A"] and args[args.index("--listen") + 1] == ":8080"
    with serving(api) as running:  # the Deployment's target (-A), with its role: nothing refused
        assert get(running.url + "/api/v1/check")[0] == 200
        assert eventually(lambda: len(api.watching) == len(running.reflectors))
        exported = get(running.url + "/metrics")[1].decode()
    assert not [r for r in api.log if r.status == 403] and {r.method for r in api.log} == {"GET"}
    names = {line.split("{")[0].split(" ")[0] for line in exported.splitlines() if not line.startswith("#")}
    for alert in rule["spec"]["groups"][0]["rules"]:
        assert set(re.findall(r"sunkcheck_\w+", alert["expr"])) <= names, alert["alert"]
    assert any("sunkcheck_up == 0" in alert["expr"] for alert in rule["spec"]["groups"][0]["rules"])
    # an outage fails /readyz: the Service still reaches the metrics and page, and a serve not scraped is alerted on
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert any(alert["expr"] == "absent(sunkcheck_up)" for alert in rule["spec"]["groups"][0]["rules"])


def quantity_mib(text: str) -> float:
    found = re.fullmatch(r"([0-9.]+)(Mi|Gi)", text)
    assert found, text
    number, unit = found.groups()
    return float(number) * (1024 if unit == "Gi" else 1)


def test_deploy_serve_memory_holds_the_documented_peak_rss() -> None:
    """The benchmark's peak RSS (docs/serve.md, Figures, every measured run) fits the request, and the limit leaves a
    fifth more at least: a limit below it OOM-kills serve on the cluster size the comment names."""
    _, deployment, _, _ = yaml.safe_load_all((ROOT / "deploy" / "serve.yaml").read_text())
    resources = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]
    row = next(line for line in (ROOT / "docs" / "serve.md").read_text().splitlines() if line.startswith("| peak RSS"))
    measured = [int(mb) for cell in row.split("|")[2:] if "≤" not in cell for mb in re.findall(r"([0-9]+) MB", cell)]
    peak = max(measured)  # the benchmark's MB are VmHWM's kB / 1024: MiB
    assert quantity_mib(resources["requests"]["memory"]) >= peak
    assert quantity_mib(resources["limits"]["memory"]) >= 1.2 * peak
    assert "5,000 Nodes" in (ROOT / "deploy" / "serve.yaml").read_text().split("apiVersion")[0]


# --- incremental re-diagnosis --------------------------------------------------------------------------------

def test_an_event_about_one_nodeset_rejudges_it_alone_and_a_node_change_every_one(serve: Serve) -> None:
    api = serve("several-nodesets")
    with serving(api) as service:
        everyone = len(served(service)["results"])
        assert everyone > 1 and metric(service, "diagnosis_targets_judged") == everyone  # the first: every one
        nodeset = api.state.objects["nodesets"][0]["metadata"]
        apply(api, ("event", 0), 1)
        assert eventually(lambda: metric(service, "diagnosis_targets_judged") == 1)
        agrees(service, api)
        assert nodeset["name"] in json.dumps(api.state.objects["events"][-1]["involvedObject"])
        apply(api, ("taint", 0), 2)
        assert eventually(lambda: metric(service, "diagnosis_targets_judged") == everyone)
        agrees(service, api)


def test_a_pod_elsewhere_never_reaches_serve_and_one_on_a_node_that_counts_does(serve: Serve) -> None:
    api = serve("foreign-pod-resources")
    with serving(api) as service:
        made = metric(service, "diagnoses_total")
        read = service.cache.pod_nodes
        assert read and {r.source.name for r in service.reflectors if r.source.name.startswith("pods-elsewhere")} \
            == {f"pods-elsewhere/spec.nodeName={n}" for n in read}  # a watch on each Node whose Pods the plan weighs
        unread = next(i for i, n in enumerate(api.state.objects["nodes"]) if n["metadata"]["name"] not in read)
        apply(api, ("squat", unread), 1)  # another workload's Pod on a Node no verdict weighs: no watch selects it
        time.sleep(0.3)  # several debounce periods: anything sent would have been diagnosed by now
        assert metric(service, "diagnoses_total") == made
        assert not any(service.cache.holds(s.name, "data-eng", "squatter-1") for s in service.cache.watched)
        agrees(service, api)
        counted = next(i for i, n in enumerate(api.state.objects["nodes"]) if n["metadata"]["name"] in read)
        apply(api, ("squat", counted), 2)
        assert eventually(lambda: metric(service, "diagnoses_total") == (made or 0) + 1)
        agrees(service, api)


def test_transitions_name_what_appeared_and_cleared() -> None:
    from sunkcheck.serve.loop import Verdict, log_line, logged, transitions

    old = {("NodeSet", "ns", "a"): Verdict("warning", frozenset({"pool-split"})),
           ("NodeSet", "ns", "gone"): Verdict("ok", frozenset())}
    new = {("NodeSet", "ns", "a"): Verdict("critical", frozenset({"no-feasible-nodes"})),
           ("NodeSet", "ns", "b"): Verdict("ok", frozenset())}
    records = transitions(old, new, "T")
    assert [(r["name"], r["old"], r["new"], r["appeared"], r["cleared"]) for r in records] == [
        ("a", "warning", "critical", ["no-feasible-nodes"], ["pool-split"]), ("b", "absent", "ok", [], []),
        ("gone", "ok", "absent", [], [])]
    assert log_line(records[0], "text") == \
        "T NodeSet ns/a: warning -> critical; appeared: no-feasible-nodes; cleared: pool-split"
    assert json.loads(log_line(records[0], "json"))["cleared"] == ["pool-split"]
    assert transitions(new, new, "T") == []
    # an outage: the rows were not judged, nothing was resolved
    [unknown] = transitions(old, logged({**old, ("NodeSet", "ns", "a"): Verdict("unknown", frozenset())}, old), "T")
    assert (unknown["new"], unknown["cleared"]) == ("unknown", [])
    assert log_line(unknown, "text") == "T NodeSet ns/a: warning -> unknown"


def test_sources_failing_alike_are_one_line_naming_them_together() -> None:
    """The API server gone fails every watch with the same error at once: one line naming the sources together, not
    one identical line per source; sources with another error, and those recovering, are a line each."""
    from sunkcheck.serve.loop import fault_records, log_line

    gone = "NewConnectionError: [Errno 111] Connection refused (failing for over 60s: its last state is not reported)"
    watched = {"nodes", "nodesets", "pods", "events-nodeset"}
    new = {name: Fault(gone) for name in ("nodes", "nodesets", "pods", "unwatched")} | {
        "events-nodeset": Fault("403 Forbidden")}
    records = fault_records({}, new, watched, "T")
    assert [log_line(r, "text") for r in records] == [
        "T watch events-nodeset: failing: 403 Forbidden", f"T watch nodes, nodesets, pods: failing: {gone}"]
    assert json.loads(log_line(records[1], "json")) == {"time": "T", "sources": ["nodes", "nodesets", "pods"],
                                                       "error": gone}
    back = fault_records(new, {"events-nodeset": Fault("403 Forbidden")}, watched, "U")
    assert [log_line(r, "text") for r in back] == ["U watch nodes, nodesets, pods: recovered"]
    assert fault_records(new, new | {"nodes": Fault("timed out")}, watched, "V") == []  # only the wording changed


def test_ready_names_the_sources_failing_alike_on_one_line() -> None:
    from sunkcheck.serve.http import failing_lines

    gone = Fault("NewConnectionError: [Errno 111] Connection refused")
    faults = {"nodes": gone, "pods": gone, "nodesets": Fault("nodesets: past its 0 MiB budget", "nodesets"),
              "events-nodeset": gone}
    assert failing_lines(("events-nodeset", "nodes", "nodesets", "pods"), faults) == (
        f"not ready: failing: events-nodeset, nodes, pods: {gone.error}\n"
        "not ready: failing: nodesets: past its 0 MiB budget\n")
    assert failing_lines(("nodes",), {}) == "not ready: failing: nodes\n"


def test_a_fault_names_its_source_once_where_it_names_it_already(monkeypatch: pytest.MonkeyPatch) -> None:
    """A report's error line and /readyz name each source first, once: a list or an event refused on shape names its
    resource already, as check's line does (events-nodeset's `events: ...` is not its name), and the cache's refusal
    its source (`nodes/SELECTOR`'s is not the resource's); each fault says what it names where it is made."""
    from sunkcheck import snapshot
    from sunkcheck.serve.cache import Cache
    from sunkcheck.serve.http import failing_lines
    from sunkcheck.serve.loop import judge
    from sunkcheck.serve.sources import node_source, own_pod_selector, sources
    from sunkcheck.serve.watch import Health, Refused
    from sunkcheck.snapshot import ShapeError, check_items

    def refused_on_shape(plural: str) -> ShapeError:
        with pytest.raises(ShapeError) as refused:
            check_items([{"kind": "Node"}], "Node", plural)
        return refused.value

    pooled = node_source(label_selector="compute.coreweave.com/node-pool in (p)")
    cache = Cache((pooled, *sources(EVERY, None, own_pod_selector(EVERY))))
    health = {s.name: Health(synced=True) for s in cache.watched}
    for name, plural in (("nodes", "nodes"), ("events-nodeset", "events")):
        e = refused_on_shape(plural)
        health[name].failed(str(e), names=e.where)
    health["nodesets"].failed("GET /apis/sunk.coreweave.com/v1alpha1/nodesets failed (500): boom")
    monkeypatch.setattr(snapshot, "MAX_ITEMS", 0)
    with pytest.raises(Refused) as refusal:
        cache.apply(pooled, "ADDED", {"metadata": {"name": "n1"}})
    assert refusal.value.names == pooled.name
    cap = ("its watch sent more than 0 Nodes, Kubernetes' own limit for a cluster: its events are dropped until a list "
           "holds no more")
    faults = {name: h.said for name, h in health.items() if h.last_error} | cache.refused
    every = ("nodesets", "events-nodeset")  # judged alone: the NodeSets not read, nothing else is
    for nodes, line in (("nodes", "nodes: item 0 is not a Kubernetes object"),
                        (pooled.name, f"nodes: {pooled.name}: {cap}")):
        report = judge(cache, EVERY, {n: health[n] for n in (*every, nodes)}, faults=faults)
        assert report.errors == ("nodesets: GET /apis/sunk.coreweave.com/v1alpha1/nodesets failed (500): boom",
                                 "events-nodeset: events: item 0 is not a Kubernetes object", line)
    assert failing_lines(("events-nodeset", "nodes", pooled.name), faults) == (
        "not ready: failing: events-nodeset: events: item 0 is not a Kubernetes object\n"
        "not ready: failing: nodes: item 0 is not a Kubernetes object\n"
        f"not ready: failing: {pooled.name}: {cap}\n")


def test_sources_back_after_an_outage_are_one_line_once_none_is_failing() -> None:
    """Each source relists after its own backoff: those back are held and logged together when the last is back,
    before a source starts failing again, or RECOVERY_HELD seconds after the first (one failing for good)."""
    from sunkcheck.serve.loop import RECOVERY_HELD, Recovered

    back = Recovered()
    assert back.due(False, 0.0) is None
    back.add(["pods"], "T", 1.0)
    back.add(["nodes", "events-nodeset"], "U", 5.0)
    assert back.due(True, 1.0 + RECOVERY_HELD - 0.1) is None  # others still failing
    assert back.due(False, 6.0) == {"time": "U", "sources": ["events-nodeset", "nodes", "pods"], "error": ""}
    assert back.due(False, 7.0) is None  # logged once
    back.add(["nodes"], "V", 10.0)
    assert back.due(True, 10.0 + RECOVERY_HELD) == {"time": "V", "sources": ["nodes"], "error": ""}


def test_backoff_doubles_to_a_cap_with_jitter() -> None:
    from sunkcheck.serve.watch import BACKOFF_FIRST, BACKOFF_MAX, backoff

    for failures in range(1, 40):
        cap = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (failures - 1))
        assert all(cap / 2 <= backoff(failures) <= cap for _ in range(20))
    assert len({backoff(10) for _ in range(20)}) > 1  # jittered


def test_a_forbidden_source_is_reported_as_check_reports_it_and_never_ready(serve: Serve) -> None:
    role = cluster_role("sunkcheck-serve", ("get", "list", "watch"))
    role["rules"] = [dict(r, resources=[x for x in r["resources"] if x != "nodes"]) for r in role["rules"]]
    api = serve("healthy-pool-name", rbac=role)
    kube = Kube(str(api.kubeconfig))
    with Service(kube, Target(), True, log=list[str]().append, debounce=0.02) as service:
        assert eventually(lambda: get(service.url + "/api/v1/check")[0] == 200)
        code, why = get(service.url + "/readyz")
        assert code == 503 and b"nodes" in why and get(service.url + "/healthz")[0] == 200
        doc = served(service)
        assert doc["status"] == "unknown" and any(e.startswith("nodes: forbidden") for e in doc["errors"])
        assert metric(service, "serve_ready") == 0 and metric(service, "watch_synced", source="nodes") == 0
        want = verdict(checked(api))
    # the same error, but serve's role is the one that watches
    assert [e for e in doc["errors"] if "403" in e] and all("`sunkcheck rbac --serve` prints" in e
                                                           for e in doc["errors"] if "403" in e)
    assert verdict(doc) == want | {"errors": [e.replace("`sunkcheck rbac`", "`sunkcheck rbac --serve`") for e in want["errors"]]}


def test_refused_credentials_at_start_say_so_at_once_and_check_nothing(serve: Serve) -> None:
    """A token refused from the first list: /readyz names the 401 at once (not in 60 s), and so does the log (its
    first line came after 60 s), nothing is checked (`sunkcheck_up` 0, as check's textfile), and no snapshot
    wording (`nodesets.json is missing`) leaks in."""
    api = serve("healthy-pool-name")
    api.token = "renewed-elsewhere"
    kube = Kube(str(api.kubeconfig))
    lines: list[str] = []
    with Service(kube, Target(), True, log=lines.append, debounce=0.02) as service:
        assert eventually(lambda: get(service.url + "/api/v1/check")[0] == 200)
        # the fault's line may follow the publication by a moment: waited for, not raced
        assert eventually(lambda: [line for line in lines if "401" in line and re.search(
            r" watch [a-z, -]*\bnodesets\b[a-z, -]*: failing: ", line)]), lines
        code, why = get(service.url + "/readyz")
        # every source, one error (counted by its words: the server's port may hold "401")
        assert code == 503 and re.search(rb"\bnodesets\b", why) and why.count(b"(401 Unauthorized)") == 1, why
        doc = served(service)
        assert doc["status"] == "unknown" and not doc["results"] and any("401" in e for e in doc["errors"]), doc
        assert not [e for e in doc["errors"] if ".json" in e], doc["errors"]
        assert metric(service, "up") == 0 and metric(service, "serve_ready") == 0


def test_a_client_that_sends_nothing_is_cut_off(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_http, "TIMEOUT", 0.5)
    api = serve("healthy-pool-name")
    with serving(api) as service:
        with socket.create_connection((str(service.server.server_address[0]), service.server.server_address[1]),
                                      timeout=5) as idle:
            started = time.monotonic()
            assert idle.recv(100) == b""  # closed, without an answer
            assert time.monotonic() - started < 3  # after the handler's timeout, not the client's


@pytest.mark.parametrize("case", ["ds-untolerated-taint", "ds-pod-pending"])
def test_a_daemonset_target_agrees_with_check(serve: Serve, case: str) -> None:
    target = Target(daemonset="dcgm-exporter", namespace="monitoring")
    api = serve(case)
    with serving(api, target, all_namespaces=False) as service:
        got, want = follows(service, api, target)
        assert got == want and got["results"][0]["kind"] == "DaemonSet"
        apply(api, ("taint", 0), 1)
        got, want = follows(service, api, target)
        assert got == want


def test_a_daemonset_that_does_not_exist_is_one_line(serve: Serve) -> None:
    api = serve("ds-healthy")
    proc = subprocess.run([sys.executable, "-m", "sunkcheck", "serve", "--daemonset", "nope", "-n", "monitoring",
                           "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), KUBECONFIG=str(api.kubeconfig)))
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1 and "DaemonSet nope" in proc.stderr


@pytest.mark.parametrize("garbage", [b"not json", b'{"type": "ERROR", "object": {"code": 500, "message": "\\u001b[31mboom"}}',
                                     b'{"type": "MODIFIED", "object": {"metadata": {"name": 7}}}', b'{"type": "SURPRISE"}'])
def test_a_hostile_watch_stream_is_counted_and_outlived(serve: Serve, garbage: bytes) -> None:
    api = serve("healthy-pool-name")
    with serving(api) as service:
        api.faults.watch_garbage["nodes"] = garbage
        api.drop_watches()  # every watch starts again; the Nodes' now begins with the garbage line
        assert eventually(lambda: (metric(service, "watch_errors_total", source="nodes") or 0) >= 1)
        assert get(service.url + "/healthz")[0] == 200 and get(service.url + "/readyz")[0] == 200
        nodes = next(r.health for r in service.reflectors if r.source.name.partition("/")[0] == "nodes")
        assert nodes.last_error and "\x1b" not in nodes.last_error  # kept as inert text
        del api.faults.watch_garbage["nodes"]
        apply(api, ("cordon", 0), 1)  # once the server behaves, serve follows again
        agrees(service, api)


# --- watches that follow the read plan, and what a diagnosis keeps -------------------------------------------

def test_other_pods_are_watched_node_by_node_up_to_checks_cap_then_in_one_watch() -> None:
    from sunkcheck.collect.pods import BY_NODE_MAX
    from sunkcheck.serve.sources import OTHERS, other_pod_sources

    few = frozenset(f"n{i}" for i in range(BY_NODE_MAX))
    by_node = other_pod_sources(few, Target(), None)
    assert [s.field_selector for s in by_node] == [f"spec.nodeName={n},{NON_TERMINAL}" for n in sorted(few)]
    assert {s.label_selector for s in by_node} == {"!app.kubernetes.io/instance"}  # the own Pods come whole
    many = other_pod_sources(few | {"one-more"}, Target(), None)
    assert [(s.name, s.field_selector) for s in many] == [(OTHERS, NON_TERMINAL)]  # one connection, not 51


def test_the_pod_watches_follow_the_read_plan_as_nodes_come_and_go(serve: Serve) -> None:
    api = serve("foreign-pod-resources")
    with serving(api) as service:
        def watched() -> set[str]:
            return {r.source.name.rpartition("=")[2] for r in service.reflectors if r.source.name.startswith("pods-elsewhere/")}

        read = sorted(service.cache.pod_nodes or ())
        assert read and watched() == set(read)
        name = read[0]
        node = next(n for n in api.state.objects["nodes"] if n["metadata"]["name"] == name)
        squatters = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in api.state.objects["pods"]
                     if p["spec"].get("nodeName") == name
                     and "app.kubernetes.io/instance" not in (p["metadata"].get("labels") or {})}
        assert squatters and all(service.cache.holds(f"pods-elsewhere/spec.nodeName={name}", *k) for k in squatters)
        api.state.delete("nodes", None, name)  # the plan no longer names it: its watch stops, its Pods leave the cache
        assert eventually(lambda: name not in watched())
        agrees(service, api)
        assert not any(service.cache.holds(s.name, *k) for s in service.cache.watched for k in squatters)
        api.state.put("nodes", node)  # back: watched again, from a new list
        assert eventually(lambda: name in watched())
        agrees(service, api)
        assert all(service.cache.holds(f"pods-elsewhere/spec.nodeName={name}", *k) for k in squatters)


def test_a_change_to_one_node_reuses_what_the_snapshot_derives_from_the_rest(serve: Serve) -> None:
    api = serve("foreign-pod-resources")
    with serving(api) as service:
        before = service.cache.snapshot(service.target)
        held = (before.nodes or ())[0]["metadata"]["name"]
        node = next(n for n in api.state.objects["nodes"] if n["metadata"]["name"] == held)
        api.state.put("nodes", tainted(node, "example.com/x"))
        assert eventually(lambda: "example.com/x" in json.dumps(service.cache.snapshot(service.target).nodes))
        after = service.cache.snapshot(service.target)
        assert after.nodesets is before.nodesets and after.events is before.events  # not merged and sorted again
        assert after.nodes is not before.nodes
        agrees(service, api)


def test_per_node_verdicts_are_kept_until_the_node_or_a_pod_on_it_changes() -> None:
    from dataclasses import replace as changed

    from sunkcheck.pipeline import Judged, diagnose
    from sunkcheck.snapshot import load

    snap = load(ROOT / "fixtures" / "healthy-pool-name")
    judged = Judged()
    first = diagnose(snap, Target(), judged=judged).results[0]
    judged.turn()
    verdicts = {v.name: v for v in first.nodes}
    busy = first.nodes[0].name  # a pool Node: a Pod taking its CPU makes it infeasible
    squatter = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "squatter", "namespace": "data-eng"},
                "spec": {"nodeName": busy, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1000"}}}]},
                "status": {"phase": "Running"}}
    busier = changed(snap, pods=(*(snap.pods or ()), squatter))
    second = diagnose(busier, Target(), judged=judged).results[0]
    again = {v.name: v for v in second.nodes}
    assert verdicts[busy].feasible and not again[busy].feasible
    assert [r.check for r in again[busy].reasons] == ["resources"]
    assert all(again[n] is verdicts[n] for n in verdicts if n != busy)  # the others: not judged again
    assert second == diagnose(busier, Target()).results[0]  # as a fresh check


def node_watches(service: Service) -> set[str]:
    return {r.source.name for r in service.reflectors if r.source.resource.plural == "nodes"}


def test_a_pool_one_nodeset_selects_and_anothers_probe_reads_is_one_watch(serve: Serve) -> None:
    """Two NodeSets of one instance type on two pools: each pool selected by one, probed (idle-pool) by the other;
    a watch each, not two watches streaming the same Nodes."""
    api = serve("healthy-two-tenants-same-name")
    with serving(api) as service:
        got, want = follows(service, api)
        names = node_watches(service)
    assert got == want
    pools = [n.removeprefix("nodes/compute.coreweave.com/node-pool") for n in names if "node-pool" in n]
    single = [p.strip(" =()in") for p in pools if "," not in p and not p.startswith(" notin")]
    assert single and len(single) == len(set(single)), sorted(names)


def holds_node(service: Service, name: str) -> bool:
    return any(service.cache.holds(s.name, "", name) for s in service.cache.watched if s.resource.plural == "nodes")


def listed(snap: Snapshot, source: WatchSource) -> list[dict]:
    """What the API server lists for `source` from `snap` (every namespace), slimmed as serve keeps it."""
    from tests.kubeapi import field_match, field_requirements, label_match, label_requirements

    labels, fields = label_requirements(source.label_selector or ""), field_requirements(source.field_selector or "")
    return [source.slim(obj) for obj in getattr(snap, source.resource.plural) or ()
            if label_match(labels, obj["metadata"].get("labels") or {}) and field_match(fields, obj)]


def node_watch_rounds(snap: Snapshot, rounds: int) -> list[frozenset[str]]:
    """The Node watches the read plan names at each of `rounds` diagnoses of `snap`, each round's moves made (the
    watches stopped, the new ones listed) before the next, as serve makes them."""
    from sunkcheck.serve.cache import Cache
    from sunkcheck.serve.sources import NODES_EVERY, OTHERS, of_kind, own_pod_selector, sources

    static = tuple(s for s in sources(EVERY, None, own_pod_selector(EVERY)) if s.name not in (OTHERS, NODES_EVERY))
    cache = Cache(static)
    for s in static:
        cache.replace(s, listed(snap, s))
    found = []
    for _ in range(rounds):
        cache.snapshot(EVERY)
        wanted = {s.name: s for s in cache.node_watches or ()}
        found.append(frozenset(wanted))
        for s in cache.watched:
            if of_kind(s.name, NODES_EVERY) and s.name not in wanted:
                cache.unwatch(s.name)
        for name, s in wanted.items():
            if name not in {w.name for w in cache.watched}:
                cache.watch(s)
                cache.replace(s, listed(snap, s))
    return found


def pool_emptied(snap: Snapshot, pods_too: bool) -> Snapshot:
    """`snap` with the Nodes the NodeSets' Pods run on gone (a pool scaled to zero), and with `pods_too` the Pods."""
    own = [p for p in snap.pods or () if INSTANCE in p["metadata"].get("labels", {})]
    hosts = {p["spec"].get("nodeName") for p in own}
    return replace(snap, nodes=tuple(n for n in snap.nodes or () if n["metadata"]["name"] not in hosts),
                   pods=tuple(p for p in snap.pods or () if not (pods_too and p in own)))


NODESET_CASES = sorted(p.name for p in (ROOT / "fixtures").iterdir() if (p / "nodesets.json").exists())


@pytest.mark.parametrize("case", NODESET_CASES)
def test_the_node_watches_reach_a_fixed_point_the_same_nodes_giving_the_same_watches(case: str) -> None:
    """Whatever the cluster (each case as recorded, its NodeSets' Nodes gone, those and their Pods gone), the Node
    watches the plan names stop moving within a few diagnoses, each list done: those watches then name
    themselves again, rather than every Node's watch and the selectors' replacing each other without end."""
    snap = load(ROOT / "fixtures" / case)
    for variant in (snap, pool_emptied(snap, False), pool_emptied(snap, True)):
        found = node_watch_rounds(variant, 6)
        assert found[-1] == found[-2] == found[-3], found


def test_nodes_are_watched_by_the_plans_selectors_and_a_node_gaining_the_pool_label_arrives(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    with serving(api) as service:
        assert "nodes/compute.coreweave.com/node-pool in (slurm-cpu)" in node_watches(service)
        assert "nodes" not in node_watches(service)  # not every Node: the pool's, as check reads them
        other = copy.deepcopy(next(n for n in nodes_of(api) if n["metadata"]["labels"].get(POOL_LABEL) == "inference-h100"))
        assert not holds_node(service, other["metadata"]["name"])
        other["metadata"]["labels"][POOL_LABEL] = "slurm-cpu"  # now the pool's: the selector's watch sends it
        api.state.put("nodes", other)
        assert eventually(lambda: holds_node(service, other["metadata"]["name"]))
        assert other["metadata"]["name"] in {n["name"] for n in agrees(service, api)["results"][0]["nodes"]}


def test_a_nodeset_moved_to_another_pool_replaces_the_node_watches(serve: Serve) -> None:
    api = serve("healthy-busy-same-type-pool")  # k8s-cpu: of slurm-cpu's instance type, probed for the idle-pool note
    with serving(api) as service:
        probed = next(n["metadata"]["name"] for n in nodes_of(api) if n["metadata"]["labels"].get(POOL_LABEL) == "k8s-cpu")
        assert node_watches(service) == {"nodes/compute.coreweave.com/node-pool in (slurm-cpu)",  # k8s-cpu's first
                                         "nodes/one:compute.coreweave.com/node-pool in (k8s-cpu)"} and holds_node(service, probed)
        nodeset = copy.deepcopy(api.state.objects["nodesets"][0])
        terms = nodeset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        next(e for e in terms[0]["matchExpressions"] if e["key"] == POOL_LABEL)["values"] = ["elsewhere"]
        api.state.put("nodesets", nodeset)
        assert eventually(lambda: "nodes/compute.coreweave.com/node-pool in (elsewhere)" in node_watches(service))
        agrees(service, api)
        after = node_watches(service)
        assert "nodes/compute.coreweave.com/node-pool in (slurm-cpu)" not in after  # stopped: the own Pods' hosts
        assert any(w.startswith("nodes/metadata.name=") for w in after)  # are watched one by one instead
        # no pool of slurm-cpu's type is the NodeSet's now: k8s-cpu is not probed, its Nodes leave the cache
        assert "nodes/one:compute.coreweave.com/node-pool in (k8s-cpu)" not in after and not holds_node(service, probed)


def test_a_stopped_watch_never_reaches_the_one_that_replaces_it() -> None:
    from sunkcheck.collect.kube import PODS
    from sunkcheck.serve.cache import Cache
    from sunkcheck.serve.watch import Source

    def pod(name: str) -> dict:
        return {"metadata": {"name": name, "namespace": "data-eng"}, "spec": {"nodeName": "n1"}}

    old, new = Source("pods-elsewhere/spec.nodeName=n1", PODS), Source("pods-elsewhere/spec.nodeName=n1", PODS)
    cache = Cache(())
    cache.watch(old)
    cache.replace(old, [pod("a")])
    cache.unwatch(old.name)  # the plan moved away from n1, then back: a new watch, listed afresh
    cache.watch(new)
    cache.replace(new, [pod("b")])
    cache.apply(old, "ADDED", pod("stale"))  # the old watch's last event, read before its connection closed
    cache.replace(old, [pod("stale")])
    assert not cache.holds(new.name, "data-eng", "stale") and cache.holds(new.name, "data-eng", "b")
    assert [p["metadata"]["name"] for p in cache.on_nodes({"n1"})] == ["b"]


def test_the_cache_charges_each_object_once_and_refuses_events_first_else_the_source_that_grew(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Lists, changes, deletions and a stopped watch keep the charge equal to the held objects' cost. What would
    pass the budget (every source together) refuses the least essential sources (Events, then other workloads'
    Pods) where they make the room, else the source that grew, never a more essential one for it: it used to refuse
    the source costing the most, so that a flood of Events refused the Nodes (every target UNKNOWN, the Nodes
    listed again and again) and a Node event beside a larger quiet Node source refused that one. A source refused
    for another's objects is told to list again, its events and list under way refused until a list of it fits."""
    from sunkcheck.collect.kube import EVENTS, NODES, PODS
    from sunkcheck.serve import cache as serve_cache
    from sunkcheck.serve.cache import Change
    from sunkcheck.serve.sources import OTHERS
    from sunkcheck.serve.watch import Refused, Source

    def obj(name: str, size: int = 0) -> dict:
        return {"metadata": {"name": name, "labels": {"pad": "x" * size}}}

    def budget(room: int) -> None:
        monkeypatch.setattr(serve_cache, "BUDGET", cache.budget[0] + room)

    a, b = Source("nodes/a", NODES), Source("nodes/b", NODES)
    ev, others = Source("events-nodeset", EVENTS), Source(OTHERS, PODS)
    cache = serve_cache.Cache((a, b, ev, others))
    told: list[str] = []
    cache.refusing = told.append
    with cache.listing(a) as keep:
        cache.replace(a, [keep(obj("n1", 20_000)), keep(obj("n2"))])
    cache.replace(b, [obj("m1")])
    cache.replace(ev, [obj("e1"), obj("e2")])
    cache.replace(others, [obj("p1")])
    cost = serve_cache.cost
    assert cache.budget[0] == sum(map(cost, [obj("n1", 20_000), obj("n2"), obj("m1"), obj("e1"), obj("e2"),
                                             obj("p1")]))
    cache.apply(a, "MODIFIED", obj("n1", 30_000))
    cache.apply(a, "DELETED", obj("n2"))
    assert cache.budget[0] == sum(map(cost, [obj("n1", 30_000), obj("m1"), obj("e1"), obj("e2"), obj("p1")]))
    budget(cost(obj("m2")))
    cache.apply(b, "ADDED", obj("m2"))  # exactly the budget: held
    cache.take(0)
    with pytest.raises(Refused, match=r"^events-nodeset: its objects would take serve's cache past its 0 MiB"):
        cache.apply(ev, "ADDED", obj("e3"))  # Events grow past it: the Events go, not the Nodes costing the most
    assert not told and list(cache.refused) == ["events-nodeset"] and cache.holds(a.name, "", "n1")
    assert cache.refused[ev.name].names == ev.name  # the refusal names its source first
    assert Change(ev.name, None) in cache.take(0)  # the loop told at once, the refusal already there to say why
    with pytest.raises(Refused, match="past its 0 MiB budget"):  # its watch's events, until a list of it fits
        cache.apply(ev, "ADDED", obj("e4"))
    with cache.listing(ev) as keep:
        cache.replace(ev, [keep(obj("e1"))])  # a list that fits: no longer refused
    assert not cache.refused
    budget(cost(obj("e1")) // 2)
    cache.apply(b, "ADDED", obj("m3"))  # a Node past it: the Events go first, the other Pods stay
    assert told == [ev.name] and list(cache.refused) == [ev.name] and cache.holds(others.name, "", "p1")
    assert "dropped for nodes/b's, more essential" in cache.refused[ev.name].error
    budget(0)
    cache.apply(b, "ADDED", obj("m4"))  # then the other Pods
    assert told == [ev.name, others.name] and cache.holds(b.name, "", "m4")
    budget(0)
    with pytest.raises(Refused, match=r"^nodes/b: .*past its 0 MiB budget"):
        cache.apply(b, "ADDED", obj("m5"))  # nothing less essential left: the Nodes that grew, not the larger `a`
    assert cache.holds(a.name, "", "n1") and told == [ev.name, others.name]
    monkeypatch.setattr(serve_cache, "BUDGET", 1 << 30)
    with pytest.raises(Refused, match=r"^events-nodeset: "), cache.listing(ev) as keep:  # a list under way
        keep(obj("e1", 20_000))
        budget(cost(obj("n9")) - 1)
        cache.apply(a, "ADDED", obj("n9"))  # the Events' list makes the room: stopped at its next object
        keep(obj("e2"))
    assert told[-1] == ev.name and cache.holds(a.name, "", "n9")
    monkeypatch.setattr(serve_cache, "BUDGET", 1 << 30)
    with cache.listing(b) as keep:
        cache.replace(b, [keep(obj("m1"))])
    budget(3 * cost(obj("flood-0")))
    with pytest.raises(Refused, match=r"^events-nodeset: .*past its 0 MiB budget"), cache.listing(ev) as keep:
        for i in range(10):  # a list of a flood stops at the budget, refusing its own source
            keep(obj(f"flood-{i}"))
    cache.unwatch(ev.name)
    cache.unwatch(others.name)
    cache.unwatch(b.name)
    cache.unwatch(a.name)
    assert cache.budget[0] == 0


def test_an_object_larger_than_any_api_server_sends_is_refused_and_its_source_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An object whose JSON passes answers.MAX_OBJECT (etcd stores 1.5 MiB at most) is refused, from a watch's event
    or a list's page, its source refused and named (its JSON copy made one at a time, never kept): it was charged
    and held, a 60 MiB annotation taking serve from 39 to 347 MB."""
    from sunkcheck.collect import answers
    from sunkcheck.collect.kube import NODES
    from sunkcheck.serve import cache as serve_cache
    from sunkcheck.serve.watch import Refused, Source

    monkeypatch.setattr(serve_cache, "MAX_OBJECT", 1 << 10)
    assert answers.MAX_OBJECT == 8 << 20
    a = Source("nodes/a", NODES)
    cache = serve_cache.Cache((a,))
    cache.replace(a, [{"metadata": {"name": "n1"}}])
    with pytest.raises(Refused, match=r"^nodes/a: it sent an object of 1,0\d\d bytes of JSON, more than the 0 MiB"):
        cache.apply(a, "MODIFIED", {"metadata": {"name": "n1", "annotations": {"x": "x" * 1000}}})
    assert list(cache.refused) == ["nodes/a"] and cache.budget[0] == 0 and not cache.holds(a.name, "", "n1")
    with pytest.raises(Refused, match=r"^nodes/a: it sent an object"), cache.listing(a) as keep:
        keep({"metadata": {"name": "n1"}})
        keep({"metadata": {"name": "n2", "annotations": {"x": "x" * 1000}}})
    assert cache.budget[0] == 0 and list(cache.refused) == ["nodes/a"]


def test_every_other_pod_is_held_packed_and_those_read_unpacked_once_charged_while_read() -> None:
    """The watch of every other workload's Pod holds each as its slimmed text (charged packed.COST and its length,
    not a dict's estimate: 52,000 were charged 560 MiB); the Pods on the Nodes a snapshot reads come out as
    collect.pods.slim makes them, the same object while the Pod is (the kept per-Node facts know Pods by identity),
    charged while read, and the charge given back when they are replaced or no longer read."""
    from sunkcheck.collect import pods as collect_pods
    from sunkcheck.serve import cache as serve_cache
    from sunkcheck.serve import packed as serve_packed
    from sunkcheck.serve.sources import other_pod_sources
    from sunkcheck.target import Target

    def pod(name: str, node: str, cpu: str = "1") -> dict:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "data-eng", "uid": name,
                                                                "annotations": {"big": "x" * 1000}},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i",
                                                           "resources": {"requests": {"cpu": cpu}}}]},
                "status": {"phase": "Running", "podIP": "10.0.0.1"}}

    every, = other_pod_sources(None, Target(), None)
    cache = serve_cache.Cache((every,))
    pods = [pod(f"p{i}", f"n{i % 3}") for i in range(6)]
    with cache.listing(every) as keep:
        cache.replace(every, [keep(p) for p in pods])  # slimmed and packed as each arrives
    packed = cache.budget[0]
    assert packed == sum(serve_packed.COST + len(json.dumps(collect_pods.slim(p), separators=(",", ":")))
                         for p in pods) < 6 * serve_cache.cost(collect_pods.slim(pods[0])) / 3
    read = cache._others(frozenset({"n1"}))
    assert sorted(read, key=lambda p: p["metadata"]["name"]) == [collect_pods.slim(p) for p in pods if
                                                                 p["spec"]["nodeName"] == "n1"]
    assert cache.budget[0] > packed and all(a is b for a, b in zip(read, cache._others(frozenset({"n1"})),
                                                                    strict=True))
    cache.apply(every, "MODIFIED", every.slim(pod("p1", "n1", "2")))  # replaced: its unpacked copy's charge goes too
    assert {p["metadata"]["name"]: p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
            for p in cache._others(frozenset({"n1"}))} == {"p1": "2", "p4": "1"}
    cache._others(frozenset({"n2"}))  # n1 no longer read: its Pods packed alone again
    cache._others(frozenset())
    assert cache.budget[0] == packed - len('"1"') + len('"2"')
    cache.unwatch(every.name)
    assert cache.budget[0] == 0


def test_serve_reading_every_pod_of_a_cluster_past_the_caches_budget_agrees_with_check(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """serve's read plan naming more Nodes than are read one by one watches every other Pod: 4,000 of them would
    pass a 12 MiB budget as dicts (the source refused and listed again, the target UNKNOWN); packed, they fit, and
    serve agrees with a fresh check."""
    from sunkcheck.collect import pods
    from sunkcheck.serve import cache as serve_cache
    from sunkcheck.serve.sources import OTHERS
    from tests.test_wait_watched import crowd, two_executors

    monkeypatch.setattr(pods, "BY_NODE_MAX", 1)
    monkeypatch.setattr(serve_cache, "BUDGET", 12 << 20)
    api = serve(crowd(two_executors(), 4_000))  # two pool Nodes without a slurmd Pod: every Pod read
    with serving(api) as service:
        doc = agrees(service, api)
        assert doc["status"] != "unknown" and not service.cache.refused, doc["errors"]
        assert any(r.source.name == OTHERS for r in service.reflectors)


def warnings_about(kind: str, n: int, message: str = "0/2013 nodes are available: 2013 Insufficient cpu.") -> list[dict]:
    """`n` Warning Events a tenant's own objects cause, in its own namespace (FailedScheduling, by the thousand)."""
    return [{"apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": "FailedScheduling", "message": message,
             "metadata": {"name": f"spam.{i:06d}", "namespace": "tenant-evil", "uid": f"spam-{i}"},
             "involvedObject": {"apiVersion": "v1", "kind": kind, "name": "job-x", "namespace": "tenant-evil"},
             "count": 1, "firstTimestamp": "2026-12-05T00:00:00Z", "lastTimestamp": "2026-12-05T00:00:00Z"}
            for i in range(n)]


@pytest.mark.parametrize("kind", ["Pod", "NodeSet"])
def test_a_flood_of_events_past_the_budget_refuses_the_events_alone_and_the_rest_agrees_with_check(
        serve: Serve, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Ordinary Warning Events of one namespace (a Job's Pods unschedulable, or Events about a tenant's NodeSet) past
    the budget refuse their own source, not the Nodes costing the most (every target was UNKNOWN, the Nodes named,
    Nodes and Events listed again in turn without end): every other step as a fresh check judges it, the events step
    "not read" with why, the Events' source named on /readyz and /metrics, listed again with backoff only; back,
    agreeing with check, once the flood is gone."""
    from sunkcheck.serve import cache as serve_cache
    from tests.kubeapi import _key

    api = serve("healthy-pool-name")
    with serving(api) as service:
        agrees(service, api)
        source = f"events-{kind.lower()}" if kind == "NodeSet" else "events-pod-warnings"
        nodes = sum(sum(sizes.values()) for name, sizes in service.cache._sizes.items() if name.startswith("nodes"))
        monkeypatch.setattr(serve_cache, "BUDGET", service.cache.budget[0] + nodes // 4)  # the Nodes cost the most
        flood = warnings_about(kind, 300)  # 3 MB charged
        api.state.put_all("events", flood)
        doc = eventually(lambda: (d := served(service))["errors"] and d)
        assert len(doc["errors"]) == 1 and re.fullmatch(
            rf"{source}: its objects would take serve's cache past its \d+ MiB budget \(\d+ MiB held, every source "
            r"together, estimated\): they are dropped until a list of it fits", doc["errors"][0]), doc["errors"]
        want = checked(api)
        assert (want["status"], want["results"][0].pop("status")) == ("ok", "ok")
        assert (doc["status"], doc["results"][0].pop("status")) == ("unknown", "unknown")  # as check's, Events unread
        got_steps, want_steps = doc["results"][0].pop("steps"), want["results"][0].pop("steps")
        assert doc["results"] == want["results"]  # the same Nodes, symptoms and notes
        assert [s for s in got_steps if s["name"] != "events"] == [s for s in want_steps if s["name"] != "events"]
        events, = (s for s in got_steps if s["name"] == "events")
        assert (events["status"], events["summary"]) == ("unknown", "not read: " + serve_loop.REFUSED)
        code, body = get(service.url + "/readyz")
        assert code == 503 and body.decode().startswith(f"not ready: failing: {source}: "), body
        assert metric(service, "serve_cache_refused", source=source) == 1 and metric(service, "up") == 0
        assert metric(service, "serve_cache_refused", source="nodes") is None
        started = len(api.log)
        time.sleep(4)
        lists = Counter(q.path for q in api.log[started:] if "watch" not in q.query)
        assert set(lists) <= {"/api/v1/events"} and lists["/api/v1/events"] <= 4, lists  # backed off, nothing else
        api.state.delete_all("events", {_key(e) for e in flood})
        assert eventually(lambda: not service.cache.refused, 40), service.cache.refused  # its backoff: up to 16 s
        agrees(service, api)
        assert metric(service, "serve_cache_refused", source=source) is None


def test_the_first_diagnosis_after_a_refusal_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """A source the cache refuses is named with the reason from the first diagnosis that lacks its objects, and
    logged with it: the reason used to come from the watch's thread after the refusal, and a diagnosis in
    between said only that a resource was not captured (for about a second, its loop computing what fails before
    its debounce)."""
    from sunkcheck.model import Source as Origin
    from sunkcheck.serve import cache as serve_cache
    from sunkcheck.serve.cache import Cache, Change
    from sunkcheck.serve.sources import NODES_EVERY, of_kind, own_pod_selector, sources
    from sunkcheck.serve.watch import Health, Refused

    snap = load(ROOT / "fixtures" / "healthy-pool-name")
    cache = Cache(sources(EVERY, None, own_pod_selector(EVERY)))
    for s in cache.watched:
        cache.replace(s, listed(snap, s) if not of_kind(s.name, NODES_EVERY) else [])
    for _ in range(3):  # the Node watches the read plan names, each listed
        cache.snapshot(EVERY)
        for s in cache.node_watches or ():
            if s not in cache.watched:
                cache.watch(s)
                cache.replace(s, listed(snap, s))
    lines: list[str] = []
    health = {s.name: Health(synced=True) for s in cache.watched}
    loop = serve_loop.Loop(cache, EVERY, health, Origin("live"), lines.append)
    published = loop.diagnose([Change("", None)])
    assert published and published.report.status.value == "ok" and not published.report.errors, published
    cache.take(0)
    monkeypatch.setattr(serve_cache, "BUDGET", cache.budget[0])
    nodes = next(s for s in cache.watched if of_kind(s.name, NODES_EVERY) and cache.holds(s.name, "", "g18d510"))
    with contextlib.suppress(Refused):  # refused, the source costing the most (the watch then fails, later)
        cache.apply(nodes, "ADDED", {"metadata": {"name": "one-more"}})
    published = loop.diagnose(cache.take(0))
    assert published and published.report.status.value == "unknown", published
    assert [e for e in published.report.errors if "past its 0 MiB budget" in e], published.report.errors
    assert [line for line in lines if ": failing: " in line and "past its 0 MiB budget" in line], lines


# --- faults of the watches: no request loop, no stale OK, bounded memory and CPU -----------------------------

@pytest.mark.parametrize("fault", [("watch_gone", "status"), ("watch_gone", "event"), ("watch_empty", True)])
def test_watches_answered_410_or_ended_at_once_are_asked_again_after_a_backoff(serve: Serve, fault: tuple) -> None:
    api = serve("healthy-pool-name")
    with serving(api) as service:
        setattr(api.faults, *fault)
        api.drop_watches()
        start = len(api.log)
        time.sleep(3)
        asked = Counter((q.path, q.query.get("labelSelector"), q.query.get("fieldSelector")) for q in api.log[start:])
        # relisted at once after the first 410, then each list and watch after a doubling backoff: a few each
        assert asked and max(asked.values()) <= 12, asked.most_common(3)
        assert get(service.url + "/healthz")[0] == 200


def test_a_source_failing_for_long_is_reported_as_an_error_until_it_recovers(serve: Serve,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_watch, "STALE_AFTER", 1.0)
    api = serve("healthy-pool-name")
    lines: list[str] = []
    with serving(api, lines=lines) as service:
        assert served(service)["status"] == "ok" and metric(service, "up") == 1
        targets = [(r["namespace"], r["name"]) for r in served(service)["results"]]
        assert targets
        # the credentials refused are said at once (waiting cannot clear them), the API server gone once it lasts
        for fail, recover, said in ((lambda: setattr(api, "token", "renewed-elsewhere"),
                                     lambda: setattr(api, "token", TOKEN), "(401 Unauthorized)"),
                                    (api.stop, api.start, "failing for over 1s: its last state is not reported")):
            fail()  # the credentials refused from now on, then the API server gone
            api.drop_watches()
            doc = eventually(lambda: (d := served(service))["errors"] and d, 20)
            assert doc and doc["status"] == "unknown" and all(r["status"] == "unknown" for r in doc["results"]), doc
            # the NodeSets' own source fails too: their targets stay, UNKNOWN, never vanish (an alert would resolve)
            assert eventually(lambda: any(e.startswith("nodesets: ") for e in served(service)["errors"]), 20)
            doc = served(service)
            assert [(r["namespace"], r["name"]) for r in doc["results"]] == targets, doc
            assert all(r["status"] == "unknown" and not r["symptoms"] for r in doc["results"]), doc
            namespace, name = targets[0]
            assert metric(service, "status", kind="NodeSet", namespace=namespace, name=name) == 3
            assert metric(service, "serve_ready") == 0
            assert any(e.startswith("nodes: ") and said in e for e in doc["errors"]), doc["errors"]
            assert metric(service, "up") == 0
            code, why = get(service.url + "/readyz")
            assert code == 503 and why.startswith(b"not ready: failing: "), why
            # one line per error, naming the sources failing with it: the API server gone says its error once
            assert all(line.startswith(b"not ready: failing: ") and line.count(b"(failing for over") <= 1
                       for line in why.splitlines()), why
            recover()
            assert eventually(lambda: (d := served(service))["status"] == "ok" and not d["errors"], 30), served(service)
            assert get(service.url + "/readyz")[0] == 200 and metric(service, "up") == 1
    failing = [line for line in lines if " watch " in line and ": failing: " in line]
    recovered = [line for line in lines if " watch " in line and line.endswith(": recovered")]
    sources = sorted(service.loop.health)
    named = {name: (sum(f" {name}:" in x or f" {name}," in x for x in failing),
                    sum(f" {name}:" in x or f" {name}," in x for x in recovered)) for name in sources}
    assert named == dict.fromkeys(sources, (2, 2)), lines  # each source named once each way, per fault
    assert len(recovered) == 2, lines  # each outage's end one line, though the sources relist a pass or more apart
    # the API server gone fails every watch alike at once: a line or two naming them together, not one a source
    gone = [line for line in failing if "(401 Unauthorized)" not in line]
    assert gone and len(gone) < len(sources) / 2, lines


def test_credentials_refused_while_serving_are_one_fault_for_every_source(serve: Serve,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A token that expires while serving refuses every watch and list alike: /readyz says the 401 once, naming the
    sources failing with it, and the log as few lines as the API server gone gives (not one a source, each naming
    its own request), as the JSON errors say it."""
    monkeypatch.setattr(serve_watch, "STALE_AFTER", 1.0)
    api = serve("healthy-pool-name")
    lines: list[str] = []
    with serving(api, lines=lines) as service:
        assert served(service)["status"] == "ok"
        sources = sorted(service.loop.health)
        api.token = "renewed-elsewhere"
        api.drop_watches()
        every = lambda: (w := get(service.url + "/readyz")[1]).count(b"(401 Unauthorized)") and all(  # noqa: E731
            f"{name}".encode() in w for name in sources) and w
        why = eventually(every, 20)
        assert why, get(service.url + "/readyz")
        assert why.count(b"\n") == 1 and why.count(b"(401 Unauthorized)") == 1 and b"watch /" not in why, why
        refused = [line for line in lines if " watch " in line and ": failing: " in line and "401" in line]
        assert refused and len(refused) < len(sources) / 2, lines
        assert not [e for e in served(service)["errors"] if "watch /" in e], served(service)["errors"]


def test_objects_deleted_while_a_list_was_paged_leave_the_cache(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """A list of the pool's Nodes in two pages, a flood of them deleted once the first is served (the test API
    server's later pages are of later moments): the watch goes on from the first page's resourceVersion and
    replays the deletions. From the last page's it missed them, and serve reported the deleted Nodes of the first
    page for good (a flood deleted, serve WARNING with no error ever after)."""
    from sunkcheck.collect.kube import PAGE
    from tests.kubeapi import _key

    api = serve("healthy-pool-name")
    flood = [{"metadata": {"name": f"flood-{i:04d}", "labels": {POOL_LABEL: "slurm-cpu"}}} for i in range(PAGE + 10)]
    api.state.put_all("nodes", flood)
    first_page = api._page
    spanned: list[bool] = []

    def page(kind: Any, objects: list[dict], query: dict, accept: str) -> dict | bytes:
        answer = first_page(kind, objects, query, accept)
        if kind.plural == "nodes" and not query.get("continue") and not spanned:  # the flood's first page is out
            api.state.delete_all("nodes", {_key(o) for o in flood})
            spanned.append(True)
        return answer

    monkeypatch.setattr(api, "_page", page)
    with serving(api) as service:
        agrees(service, api)
        assert spanned and verdict(served(service))["status"] == "ok"


def test_a_watch_past_the_object_cap_is_refused_until_a_list_fits(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    from sunkcheck import snapshot

    api = serve("healthy-pool-name")
    with serving(api) as service:
        monkeypatch.setattr(snapshot, "MAX_ITEMS", len(nodes_of(api)))  # what a list may hold, lowered for the test
        node = next(n for n in nodes_of(api) if n["metadata"]["labels"].get("compute.coreweave.com/node-pool") == "slurm-cpu")
        flood = [copy.deepcopy(node) for _ in range(20)]  # Nodes of the NodeSet's pool: its watch sees them
        for i, extra in enumerate(flood):
            extra["metadata"]["name"] = f"flood-{i}"
            api.state.put("nodes", extra)
        capped = f"more than {len(nodes_of(api)) - 20:,} Nodes"  # the reason, once the refusal is reported (the
        # source dropped first: a diagnosis between the two says only that the Nodes are not captured)

        def refused() -> dict | None:
            doc = served(service)
            return doc if any(capped in e for e in doc["errors"]) else None

        doc = eventually(refused)
        assert doc and doc["status"] == "unknown", served(service)
        assert get(service.url + "/readyz")[0] == 503 and metric(service, "up") == 0
        held = max(len(service.cache._objects[r.source.name]) for r in service.reflectors if r.source.resource.plural == "nodes")
        assert held <= snapshot.MAX_ITEMS
        for extra in flood:
            api.state.delete("nodes", None, extra["metadata"]["name"])
        assert eventually(lambda: (d := served(service))["status"] == "ok" and not d["errors"], 20), served(service)
        assert get(service.url + "/readyz")[0] == 200


def test_a_watch_line_is_charged_to_the_answers_held_at_once_and_given_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each watch held its line (up to 64 MiB) outside the budget of the answers held at once: a dozen watches
    sending such lines together held them all. A line is charged while it is read and parsed, and one the budget
    cannot hold stops its watch (retried); every byte is given back."""
    from sunkcheck.collect import answers

    class Body:
        def __init__(self, *lines: bytes):
            self.data = b"".join(line + b"\n" for line in lines)

        def stream(self, amount: int, decode_content: bool) -> Iterator[bytes]:
            return iter([self.data[i:i + amount] for i in range(0, len(self.data), amount)])

    monkeypatch.setattr(answers, "MAX_IN_FLIGHT", 1 << 20)
    before = answers.budget.used
    small = b'{"type": "BOOKMARK", "object": {}}'
    lines = serve_watch._lines(Body(small, small))  # type: ignore[arg-type]
    assert next(lines) == small and answers.budget.used == before + len(small)  # held while it is handled
    assert next(lines) == small
    lines.close()
    assert answers.budget.used == before
    with pytest.raises(ValueError, match="the answers being read at once would pass 1 MiB"):
        list(serve_watch._lines(Body(b"x" * (2 << 20))))  # type: ignore[arg-type]
    assert answers.budget.used == before


def watch_errors(service: Service, plural: str) -> list[str]:
    return [r.health.last_error for r in service.reflectors if r.source.resource.plural == plural and r.health.errors]


def test_a_huge_watch_line_is_read_in_linear_time(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    from sunkcheck.collect import answers

    monkeypatch.setattr(answers, "MAX_OBJECT", 64 << 20)  # a line of one answer's size, not refused unread
    api = serve("healthy-pool-name")
    with serving(api) as service:
        api.faults.watch_garbage["nodes"] = b"A" * (63 << 20)  # one line, just under what one answer may be
        started = time.process_time()  # CPU of the whole process: the test server's and serve's threads
        api.drop_watches()
        assert eventually(lambda: any("Expecting value" in e for e in watch_errors(service, "nodes")), 60), \
            watch_errors(service, "nodes")
        assert time.process_time() - started < 5  # splitting it at each 64 KiB chunk took 35 s of CPU


def test_a_watch_event_too_dense_to_parse_is_refused_unparsed_and_the_source_listed_again(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    from sunkcheck.collect import answers

    monkeypatch.setattr(answers, "MAX_OBJECT", 64 << 20)  # refused for its density, not its length
    api = serve("healthy-pool-name")
    with serving(api) as service:
        # 8 MiB of `{"a":0},`: about 400 MiB once parsed
        api.faults.watch_garbage["nodes"] = (b'{"type": "ADDED", "object": {"metadata": {"name": "dense"}, "x": ['
                                             + b'{"a":0},' * (1 << 20) + b"{}]}}")
        api.drop_watches()
        errors = eventually(lambda: [e for e in watch_errors(service, "nodes") if "once parsed" in e], 20)
        assert errors and "more than the 192 MiB sunkcheck parses at once" in errors[0], watch_errors(service, "nodes")
        assert eventually(lambda: (metric(service, "watch_relists_total", source="nodes") or 0) >= 1)
