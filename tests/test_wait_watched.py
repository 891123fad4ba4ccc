"""`--wait` on watches: one list per resource, then only the changes; it returns the moment the
binding converges, and falls back to polling, saying so in one line, where the role does not allow watching."""

from __future__ import annotations

import copy
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sunkcheck import snapshot
from sunkcheck.collect.kube import NODESETS, Kube, cluster_role
from sunkcheck.serve.cache import Cache
from sunkcheck.serve.watch import Reflector
from sunkcheck.serve.watch import Source as WatchSource
from tests.conftest import FIXTURES, run
from tests.kubeapi import FakeApi

STARTING = ("slurm-cpu-batch-012-008", "slurm-cpu-batch-012-009")
"""Two slurmd Pods of healthy-pool-name's 8 still starting after a scale-up: READY 6 of 8."""


Serve = Callable[..., Any]  # the fixture: a snapshot served by the test API server
POOL_LABEL, INSTANCE = "compute.coreweave.com/node-pool", "app.kubernetes.io/instance"
RESOURCES = {"nodesets", "daemonsets", "nodepools", "nodes", "pods", "events"}


def starting() -> snapshot.Snapshot:
    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    pods = [copy.deepcopy(p) for p in snap.pods or ()]
    for pod in pods:
        if pod["metadata"]["name"] in STARTING:
            pod["status"]["conditions"] = [dict(c, status="False") if c["type"] == "Ready" else c
                                           for c in pod["status"]["conditions"]]
    [nodeset] = copy.deepcopy(list(snap.nodesets or ()))
    nodeset["status"] |= {"numberReady": 6, "numberUnavailable": 2}
    return replace(snap, pods=tuple(pods), nodesets=(nodeset,))


def ready(api: FakeApi, pod_name: str, number_ready: int) -> None:
    """The Pod turns Ready and the NodeSet controller counts it, through the API server (watch events)."""
    with api.state.lock:
        pod = copy.deepcopy(next(p for p in api.state.objects["pods"] if p["metadata"]["name"] == pod_name))
        nodeset = copy.deepcopy(api.state.objects["nodesets"][0])
    pod["status"]["conditions"] = [dict(c, status="True") if c["type"] == "Ready" else c
                                   for c in pod["status"]["conditions"]]
    nodeset["status"] |= {"numberReady": number_ready, "numberUnavailable": 8 - number_ready}
    api.state.put("pods", pod)
    api.state.put("nodesets", nodeset)


def lists(api: FakeApi) -> list[tuple]:
    """Each list of a resource asked for (not a watch): its path and selectors."""
    return [(q.path, q.query.get("labelSelector"), q.query.get("fieldSelector")) for q in api.log
            if "watch" not in q.query and q.path.rsplit("/", 1)[1] in RESOURCES]


def test_a_wait_returns_when_the_pods_become_ready_having_listed_each_resource_once(serve: Serve) -> None:
    api = serve(starting())
    changed: list[float] = []

    def scale_up_finishes() -> None:
        while not any(q.query.get("watch") == "1" for q in api.log):  # its lists are read: the first judgement is due
            time.sleep(0.05)
        for i, name in enumerate(STARTING):
            time.sleep(1.0)
            ready(api, name, 7 + i)
            changed.append(time.monotonic())

    thread = threading.Thread(target=scale_up_finishes)
    thread.start()
    r = run("check", "--wait", "60s", "--interval", "10s", "-o", "json")
    returned = time.monotonic()
    thread.join()
    assert (r.code, r.json()["status"]) == (0, "ok"), r.err
    # a poll every 10s would answer up to 10s late; the 1s target is the benchmark's (benchmarks/wait.py), not a timed
    # test's: a loaded machine must not fail it
    assert len(changed) == 2 and returned - changed[-1] < 5.0, returned - changed[-1]
    assert r.err.startswith("sunkcheck: waiting (0s): slurm-cpu-batch: READY 6/8"), r.err
    read = lists(api)
    assert read and len(read) == len(set(read)), read  # one list per resource and selector, never again
    watched = {q.path.rsplit("/", 1)[1] for q in api.log if q.query.get("watch") == "1"}
    assert {"nodesets", "pods", "nodes", "nodepools"} <= watched, watched


def from_zero() -> snapshot.Snapshot:
    """healthy-pool-name as a scale-up from zero finds it: the pool without Nodes (CURRENT 0 of TARGET 8), the NodeSet
    without Pods, its status not yet reconciled."""
    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    pools = [copy.deepcopy(p) for p in snap.nodepools or ()]
    next(p for p in pools if p["metadata"]["name"] == "slurm-cpu")["status"]["currentNodes"] = 0
    return replace(snap, nodepools=tuple(pools),
                   nodes=tuple(n for n in snap.nodes or () if n["metadata"]["labels"].get(POOL_LABEL) != "slurm-cpu"),
                   pods=tuple(p for p in snap.pods or () if INSTANCE not in p["metadata"].get("labels", {})))


def test_a_wait_through_a_scale_up_from_zero_ends_when_the_nodes_arrive_its_watches_at_rest(serve: Serve) -> None:
    """While the pool has no Node the plan needs every Node (as check reads them), and the pool's selector's watch
    stays beside that one: the watches stay as they are until the Nodes arrive, rather than replacing each other
    (thousands of requests) and the wait never judging."""
    api = serve(from_zero())
    threading.Timer(3.0, lambda: api.state.load(snapshot.load(FIXTURES / "healthy-pool-name"))).start()
    r = run("check", "--wait", "30s", "--interval", "10s", "-o", "json")
    assert (r.code, r.json()["status"]) == (0, "ok"), r.err
    assert len(api.log) < 50, Counter(q.path for q in api.log).most_common(5)  # each watch asked once: 16 requests
    assert "waiting (0s): slurm-cpu-batch: pool CURRENT 0/8" in r.err, r.err  # judged while the pool was empty


def test_a_wait_that_may_not_watch_says_so_once_and_polls(serve: Serve) -> None:
    api = serve(starting(), rbac=cluster_role())  # check's role: get and list, no watch
    r = run("check", "--wait", "2s", "--interval", "500ms", "-o", "json")
    assert r.code == 1 and "never converged: slurm-cpu-batch: READY 6/8" in r.err, r.err
    refused = [line for line in r.err.splitlines() if "watching is not allowed" in line]
    assert len(refused) == 1 and "403" in refused[0] and "polling every 0.5s instead" in refused[0], r.err
    assert "`sunkcheck rbac --serve` prints the role with watch" in refused[0], r.err
    nodesets = [q for q in api.log if q.path.endswith("/nodesets") and "watch" not in q.query]
    assert len(nodesets) >= 4  # the list before the watch was refused, then a poll every 500ms


def test_a_wait_against_a_server_answering_every_watch_410_relists_after_a_backoff(serve: Serve) -> None:
    api = serve(starting())
    api.faults.watch_gone = "status"
    r = run("check", "--wait", "3s", "--interval", "1s", "-o", "json")
    assert r.code == 1 and "never converged" in r.err, r.err
    asked = Counter(lists(api))
    # the first 410 relists at once, the next after a doubling backoff: a few lists each, not thousands
    assert asked and max(asked.values()) <= 6, asked.most_common(3)


def test_a_wait_lists_the_nodes_the_read_plan_names_not_every_node(serve: Serve) -> None:
    api = serve(starting())
    r = run("check", "--wait", "2s", "--interval", "500ms", "-o", "json")
    assert r.code == 1 and "READY 6/8" in r.err, r.err
    nodes = {q.query.get("labelSelector") or q.query.get("fieldSelector") for q in api.log
             if q.path.endswith("/nodes") and "watch" not in q.query}
    assert nodes and None not in nodes, nodes  # by the pool's selector, as serve and check read them


def test_a_wait_whose_api_server_dies_says_so_and_is_unknown(serve: Serve) -> None:
    api = serve(starting())
    threading.Timer(2.0, api.stop).start()  # mid-wait: every watch cut, nothing listening
    r = run("check", "--wait", "6s", "--interval", "1s", "-o", "json")
    document = r.json()
    assert (r.code, document["status"]) == (3, "unknown"), r.err
    failing = [e for e in document["errors"] if "its watch failing" in e]
    assert {e.split(":")[0] for e in failing} >= {"nodesets", "pods"}, document["errors"]


def test_a_watch_stopped_mid_read_ends_at_once(serve: Serve) -> None:
    """The read plan stops watches as it moves (serve, --wait): stopping one that waits for the server's next byte
    must not wait for its read timeout (minutes), holding the judgement back."""
    api = serve(starting())
    api.bookmark_every = 60.0  # a real API server's pace: nothing arrives while the watch is stopped
    source = WatchSource("nodesets", NODESETS)
    reflector = Reflector(Kube(str(api.kubeconfig), None, 10), source, Cache((source,)), threading.Event())
    reflector.thread.start()
    deadline = time.monotonic() + 10
    while not (reflector.health.synced and api.watching) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the watch's reader waits for its next byte
    cancelling = threading.Thread(target=reflector.cancel, daemon=True)
    cancelling.start()
    cancelling.join(5)
    reflector.thread.join(5)
    assert not cancelling.is_alive() and not reflector.thread.is_alive()


def test_a_wait_keeps_the_watch_of_every_pod_once_made() -> None:
    """After a scale-up the plan swings between every Pod (the status not yet counting the new Nodes) and none (it
    counts them all): a wait keeping the watch of every Pod lists them once, not at every swing; serve follows."""
    from types import SimpleNamespace

    from sunkcheck.collect.kube import PODS
    from sunkcheck.serve.cache import OTHERS, on_node_source_name
    from sunkcheck.serve.service import Watches
    from sunkcheck.target import Target

    kube: Any = SimpleNamespace(role="")
    per_node = (WatchSource(on_node_source_name("n1"), PODS),)
    for keep, kept in ((True, (OTHERS,)), (False, (on_node_source_name("n1"),))):
        watches = Watches(kube, Target(), (), keep_every_pod=keep)
        watches.reflectors = [Reflector(kube, WatchSource(OTHERS, PODS), watches.cache, watches.stop)]
        assert tuple(s.name for s in watches._covering(per_node)) == kept
        assert watches._covering(()) == (() if not keep else (watches.reflectors[0].source,))
