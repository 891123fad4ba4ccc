"""serve tells the truth about its watches: only a checked event, a bookmark with a resourceVersion, a list or a
watch the server ended as asked is hearing from the API server. A hostile or broken watch (tests/kubeapi.py's
HOSTILE modes) is a failure, backed off and counted, and one that lasts is reported (UNKNOWN, sunkcheck_up 0,
/readyz 503) until the server is fixed, while a brief outage of a quiet source still passes unreported."""

from __future__ import annotations

import copy
import re
import threading
import time
from typing import Any

import pytest

from sunkcheck.collect.kube import NODESETS, Kube
from sunkcheck.serve import watch as serve_watch
from sunkcheck.serve.cache import Cache
from sunkcheck.serve.selectors import outside
from sunkcheck.target import Target
from tests.conftest import run
from tests.test_serve import checked, eventually, follows, get, metric, served, serving

Api = Any  # tests.kubeapi.FakeApi


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bounds of serve/watch.py, from minutes down to about a second; the backoff kept below STALE_AFTER, as
    30 s is below 60 s (a failure that some reply clears at each retry must never show)."""
    monkeypatch.setattr(serve_watch, "STALE_AFTER", 1.0)
    monkeypatch.setattr(serve_watch, "BACKOFF_FIRST", 0.1)
    monkeypatch.setattr(serve_watch, "BACKOFF_MAX", 0.3)
    monkeypatch.setattr(serve_watch, "READ_GRACE", 0.5)
    monkeypatch.setattr(serve_watch, "RECHECK", 1)


def broken(api: Api) -> None:
    """Upstream, the NodeSet asks for a pool that does not exist: `check` no longer says OK."""
    nodeset = copy.deepcopy(api.state.objects["nodesets"][0])
    term = nodeset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    next(e for e in term["matchExpressions"] if e["key"] == "compute.coreweave.com/node-pool")["values"] = ["slurm-cpux"]
    api.state.put("nodesets", nodeset)
    assert checked(api)["status"] != "ok"


def reported(service: Any) -> bool:
    doc = served(service)
    return (doc["status"] == "unknown" and get(service.url + "/readyz")[0] == 503 and metric(service, "up") == 0
            and any(e.startswith("nodesets: ") and "failing for over 1s" in e for e in doc["errors"]))


@pytest.mark.parametrize("mode", ["wrongtype", "badshape", "wrongkind", "error-held", "silent", "trickle", "dribble"])
def test_a_hostile_nodeset_watch_is_reported_while_it_lasts_and_clears_once_fixed(serve: Any, fast: None,
                                                                                  mode: str) -> None:
    api = serve("healthy-pool-name")
    with serving(api, watch_seconds=2) as service:
        assert served(service)["status"] == "ok"
        api.faults.watch_pace = 1.2 if mode == "error-held" else 0.1  # held past a second: no proof of anything
        api.faults.watch_modes["nodesets"] = mode
        api.drop_watches()
        broken(api)
        assert eventually(lambda: reported(service), 20), served(service)
        for _ in range(15):  # and stays so: no watch answered meanwhile clears it
            assert reported(service), served(service)
            time.sleep(0.1)
        doc = served(service)
        assert [(r["namespace"], r["name"]) for r in doc["results"]] == [("tenant-slurm", "slurm-cpu-batch")], doc
        assert not service.cache.holds("nodesets", "tenant-slurm", "--all")
        if mode == "wrongkind":  # no made-up NodeSet default/x: the watch says what it dropped
            assert "dropped a v1 Pod, not a sunk.coreweave.com/v1alpha1 NodeSet" in str(doc["errors"]), doc
        del api.faults.watch_modes["nodesets"]
        api.drop_watches()
        got, want = follows(service, api)
        assert got == want and want["status"] == "warning"
        assert get(service.url + "/readyz")[0] == 200 and metric(service, "up") == 1


def test_a_watch_ended_after_a_bookmark_is_backed_off_and_counted(serve: Any, fast: None,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_watch, "STALE_AFTER", 10.0)  # above the backoffs, as 60 s is above 30 s
    monkeypatch.setattr(serve_watch, "BACKOFF_FIRST", 0.5)  # the real backoff: whether it doubles is the question
    monkeypatch.setattr(serve_watch, "BACKOFF_MAX", 30.0)
    api = serve("healthy-pool-name")
    with serving(api, watch_seconds=2) as service:
        api.faults.watch_modes["nodesets"] = "bookmark-end"
        api.drop_watches()
        start = len(api.log)
        time.sleep(3)
        asked = [r for r in api.log[start:] if r.path.endswith("/nodesets") and r.query.get("watch") == "1"]
        assert 1 <= len(asked) <= 8, len(asked)  # doubling from 0.5 s: renewed at once, it was asked ~60 times
        assert (metric(service, "watch_errors_total", source="nodesets") or 0) >= len(asked) - 1
        assert served(service)["status"] == "ok"  # each bookmark is the server's word that nothing changed


@pytest.mark.parametrize("mode", ["bookmark-410", "event-end"])
def test_a_watch_ended_at_once_after_its_first_word_is_backed_off(serve: Any, fast: None, monkeypatch: pytest.MonkeyPatch,
                                                                 mode: str) -> None:
    """A 410 after a bookmark, or one event then the end, every time: relisted or renewed at once the first time, then
    after the doubling backoff (before, at once every time: thousands of requests a second, forever)."""
    monkeypatch.setattr(serve_watch, "STALE_AFTER", 10.0)
    monkeypatch.setattr(serve_watch, "BACKOFF_FIRST", 0.5)
    monkeypatch.setattr(serve_watch, "BACKOFF_MAX", 30.0)
    api = serve("healthy-pool-name")
    with serving(api, watch_seconds=2) as service:
        api.faults.watch_modes["nodesets"] = mode
        api.drop_watches()
        start = len(api.log)
        time.sleep(3)
        asked = [r for r in api.log[start:] if r.path.endswith("/nodesets")]
        watches = [r for r in asked if r.query.get("watch") == "1"]
        assert 1 <= len(watches) <= 8 and len(asked) - len(watches) <= 8, (len(watches), len(asked))
        assert served(service)["status"] == "ok"  # each bookmark or event is the server's word: current
        del api.faults.watch_modes["nodesets"]
        broken(api)  # and a change after it arrives
        got, want = follows(service, api)
        assert got == want


def test_a_watch_whose_answer_dribbles_fails_at_the_request_timeout_and_lets_its_connection_go(
        serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server sending the status line and headers a byte at a time, each read well within the socket timeout: the
    watch fails at the request timeout (the bound on a list's whole answer), counted as failing since it was sent,
    its connection shut down (the server sees it go) and the next sent after a backoff."""
    monkeypatch.setattr(serve_watch, "STALE_AFTER", 1.0)
    api = serve("healthy-pool-name")
    api.faults.watch_modes["nodesets"], api.faults.watch_pace = "dribble", 0.1
    source = serve_watch.Source("nodesets", NODESETS)
    reflector = serve_watch.Reflector(Kube(str(api.kubeconfig), None, 1.0), source, Cache((source,)), threading.Event())
    reflector.thread.start()
    try:
        assert eventually(lambda: reflector.health.errors >= 3, 20), reflector.health
        said = "watch /apis/sunk.coreweave.com/v1alpha1/nodesets: no answer (status line and headers) from the API " \
               "server within 1s"
        assert reflector.health.last_error == said
        assert (fault := reflector.health.fault(time.monotonic())) and fault.error.startswith(said)
        assert eventually(lambda: len(api.connections) <= 1, 5), api.connections  # the one being dribbled, if any
    finally:
        reflector.cancel()
        reflector.thread.join(5)
    assert not reflector.thread.is_alive()


def test_a_watch_stopped_while_its_answer_dribbles_ends_at_once(serve: Any) -> None:
    """The read plan stops watches as it moves: one still waiting for its answer ends at once, not at its deadline."""
    api = serve("healthy-pool-name")
    api.faults.watch_modes["nodesets"], api.faults.watch_pace = "dribble", 0.1
    source = serve_watch.Source("nodesets", NODESETS)
    reflector = serve_watch.Reflector(Kube(str(api.kubeconfig)), source, Cache((source,)), threading.Event())
    reflector.thread.start()
    assert eventually(lambda: reflector.health.awaiting is not None, 10)
    time.sleep(0.5)  # its status line arriving a byte at a time
    reflector.cancel()
    reflector.thread.join(2)
    assert not reflector.thread.is_alive() and reflector.health.errors == 0


def test_an_object_outside_a_watch_by_name_is_dropped_and_counted(serve: Any, fast: None) -> None:
    api = serve("ds-healthy")
    target = Target(daemonset="dcgm-exporter", namespace="monitoring")
    with serving(api, target, all_namespaces=False, watch_seconds=2) as service:
        assert served(service)["status"] == "ok"
        api.faults.watch_modes["daemonsets"] = "othername"
        api.drop_watches()
        assert eventually(lambda: "its selector does not select (metadata.name=dcgm-exporter)" in next(
            r.health.last_error for r in service.reflectors if r.source.name == "daemonsets"), 10)
        assert not service.cache.holds("daemonsets", "monitoring", "dcgm-exporter-other")
        daemonset = copy.deepcopy(api.state.objects["daemonsets"][0])
        daemonset["spec"]["template"]["spec"]["tolerations"] = []  # the GPU Nodes' taint no longer tolerated
        api.state.put("daemonsets", daemonset)  # the watch reads on after what it dropped: the change arrives
        got, want = follows(service, api, target)
        assert got == want and want["status"] != "ok"
        assert [r["name"] for r in served(service)["results"]] == ["dcgm-exporter"]


def test_a_quiet_source_without_bookmarks_is_not_reported_after_a_brief_outage(serve: Any, fast: None,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An open watch proves nothing, but one the server ends as asked does: while failing, a watch asks a short
    timeout (RECHECK), so a quiet source is known current again long before STALE_AFTER."""
    monkeypatch.setattr(serve_watch, "STALE_AFTER", 4.0)
    api = serve("healthy-pool-name")
    with serving(api, watch_seconds=30) as service:
        api.bookmark_every = 1000.0  # no bookmark: as from a server whose watches bypass its watch cache
        api.stop()
        time.sleep(0.3)
        api.start()
        until = time.monotonic() + 6
        while time.monotonic() < until:
            doc = served(service)
            assert doc["status"] == "ok" and not doc["errors"], doc
            time.sleep(0.1)
        assert get(service.url + "/readyz")[0] == 200


def test_failing_is_counted_from_the_last_word_of_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_watch, "STALE_AFTER", 0.2)
    h = serve_watch.Health()
    h.failed("refused")
    assert h.fault(time.monotonic()) is None  # within the bound: a short outage passes unreported
    time.sleep(0.25)
    assert h.fault(time.monotonic()) == serve_watch.Fault("refused (failing for over 0.2s: its last state is not "
                                                          "reported)")
    h.saw()
    assert h.fault(time.monotonic()) is None
    h.failed("silent", since=time.monotonic() - 1)  # a watch silent for a second: failing since it went quiet
    assert (fault := h.fault(time.monotonic())) and fault.error.startswith("silent")
    assert h.errors == 2 and h.down


def test_a_watch_checks_what_its_selectors_select() -> None:
    pod = {"metadata": {"name": "a", "labels": {"app.kubernetes.io/instance": "x", "k": "v"}},
           "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}
    assert outside(pod, "app.kubernetes.io/instance in (x,y),k=v,k!=w,!zz", None) == ""
    assert outside(pod, "app.kubernetes.io/instance notin (x)", None) == "app.kubernetes.io/instance notin (x)"
    assert outside(pod, "!app.kubernetes.io/instance", None) and outside(pod, "zz", None)
    assert outside(pod, None, "spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed") == ""
    assert outside(pod, None, "metadata.name=b") == "metadata.name=b"
    assert outside(pod, None, "involvedObject.kind=Pod") == "involvedObject.kind=Pod"  # absent: ""
    assert outside(pod, "a syntax (this module does not read", "spec.x=a\\,b") == ""  # never refused for it


def test_a_server_ignoring_field_selectors_leaves_no_stale_pod_behind(serve: Any, fast: None) -> None:
    """The API server ignores the Pod watches' field selectors: a foreign Pod that finishes (Succeeded: outside
    `status.phase!=Succeeded`) arrives as MODIFIED, outside the selector. It is dropped, and its cached copy goes
    with it: the executor that held the Node's CPUs no longer does, and serve agrees with a fresh check."""
    api = serve("foreign-pod-resources")
    api.faults.unfiltered.add("pods")
    with serving(api) as service:
        assert served(service)["status"] != "ok"
        with api.state.lock:  # the fixture's Spark executor, holding g18d510's CPUs
            pod = next(p for p in api.state.objects["pods"] if p["metadata"]["name"] == "spark-exec-7d9f4-x2k8q")
        done = copy.deepcopy(pod)
        done["status"] = {**(done.get("status") or {}), "phase": "Succeeded"}
        api.state.put("pods", done)
        got, want = follows(service, api)
        assert got == want, (got, want)


def poisoned(api: Api, plural: str) -> tuple[dict, dict]:
    """(an object of `plural` as it is, a copy changed twice upstream: a change the check reads, then one it refuses
    (a Node's taint key a number, a NodeSet's count below zero)); the changes are made in that order."""
    original = copy.deepcopy(next(o for o in api.state.objects[plural] if plural == "nodesets" or
                                  o["metadata"]["labels"].get("compute.coreweave.com/node-pool") == "slurm-cpu"))
    changed = copy.deepcopy(original)
    if plural == "nodes":
        changed["spec"]["unschedulable"] = True
        api.state.put(plural, copy.deepcopy(changed))
        changed["spec"]["taints"] = [{"key": 5, "effect": "NoSchedule"}]
    else:
        changed["spec"]["replicas"] = 3
        api.state.put(plural, copy.deepcopy(changed))
        changed["status"]["numberUnavailable"] = -1
    api.state.put(plural, changed)
    return original, changed


@pytest.mark.parametrize("plural", ["nodes", "nodesets"])
def test_an_object_the_check_refuses_fails_its_source_until_it_is_fixed(serve: Any, fast: None, plural: str) -> None:
    """Before: the watch failed at the refused event and was sent again from where the previous one had ended, so
    the change before it, applied again, counted as hearing from the server: serve said OK for good on the state
    before it, and /readyz stayed 200. Now the source is listed again, which fails as `check` does (exit 3, the
    same error) until the object is fixed: reported once stale (UNKNOWN, the error, /readyz 503), then recovered."""
    api = serve("healthy-pool-name")
    with serving(api, watch_seconds=2) as service:
        assert served(service)["status"] == "ok"
        original, _ = poisoned(api, plural)
        refused = run("check", "-A", "--kubeconfig", str(api.kubeconfig))
        said = re.search(r"\): ([^\n]+(integer|negative)[^\n]*)", refused.out + refused.err)
        assert refused.code == 3 and said, refused
        shape = said[1]  # the object's fault, as the check says it

        def stale() -> bool:
            doc = served(service)
            return (doc["status"] == "unknown" and get(service.url + "/readyz")[0] == 503 and metric(service, "up") == 0
                    and any(e.startswith(f"{plural}: ") and shape in e and "failing for over 1s" in e
                            for e in doc["errors"]))

        assert eventually(stale, 20), (shape, served(service))
        assert not any(e.startswith(f"{plural}: {plural}: ") for e in served(service)["errors"]), served(service)
        for _ in range(15):  # and stays so: no list or event meanwhile clears it
            assert stale(), served(service)
            time.sleep(0.1)
        api.state.put(plural, original)
        got, want = follows(service, api)
        assert got == want and want["status"] == "ok"
        assert get(service.url + "/readyz")[0] == 200 and metric(service, "up") == 1
