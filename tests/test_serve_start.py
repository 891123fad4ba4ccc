"""serve's start, against the test API server: the lists a check runs side by side run side by side, the first
diagnosis is made once the last list is in and is not held back for quiet, with the cyclic collector off until then,
nothing is rendered until asked for, and Node pages and events are parsed without their image lists."""

from __future__ import annotations

import copy
import gc
import json
import threading
import weakref
from dataclasses import replace
from typing import Any

import pytest

from benchmarks.large_cluster import real_size
from sunkcheck.collect import answers
from sunkcheck.collect.kube import Kube
from sunkcheck.serve import loop as serve_loop
from sunkcheck.serve import watch as serve_watch
from sunkcheck.serve.service import Service
from sunkcheck.snapshot import load
from tests.conftest import FIXTURES
from tests.test_serve import EVERY, Serve, agrees, eventually, get, serving

POOL = "compute.coreweave.com/node-pool in (slurm-cpu)"
PROBED = "compute.coreweave.com/node-pool in (k8s-cpu)"  # of slurm-cpu's instance type: the idle-pool probe's


def test_the_probed_pools_are_listed_beside_the_pools_nodes_not_after_them(serve: Serve) -> None:
    """The pool's Node list is held by the server until the other pool of its type is asked for: a start that waits
    for the pool's Nodes before asking for the probed pool's (one step after the other) never gets either."""
    api = serve("healthy-busy-same-type-pool")
    asked = threading.Event()
    held: list[bool] = []
    answer = api.answer

    def answering(handler: Any) -> Any:
        query = handler.path.partition("?")[2]
        if "/nodes?" in handler.path and "watch=1" not in query:
            if "k8s-cpu" in query:
                asked.set()
            elif "slurm-cpu" in query and "spare" not in query and not held:
                held.append(asked.wait(10))
        return answer(handler)

    api.answer = answering
    with serving(api) as service:
        assert held == [True]  # the probed pool was asked for while the pool's Nodes were still coming
        # the probe's first Node of the busy pool (a pool found idle would be watched whole as well)
        assert {r.source.name for r in service.reflectors} >= {f"nodes/{POOL}", f"nodes/one:{PROBED}"}
        agrees(service, api)


def test_the_first_diagnosis_waits_for_no_quiet(serve: Serve) -> None:
    """The debounce merges a burst of changes into one pass; before the first publication every source has
    answered already, so ready does not wait `debounce` seconds for the changes to stop."""
    api = serve("healthy-busy-same-type-pool")
    with Service(Kube(str(api.kubeconfig)), EVERY, True, log=lambda line: None, debounce=120) as service:
        assert eventually(lambda: get(service.url + "/readyz")[0] == 200, timeout=30), get(service.url + "/readyz")


def test_nothing_is_rendered_until_asked_for(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ready is the diagnosis: `check -o json`'s document and the metrics are rendered at their first request,
    once each per publication."""
    made: dict[str, int] = {"document": 0, "metrics": 0}

    def counted(name: str, render: Any) -> Any:
        def counting(*args: Any, **kwargs: Any) -> Any:
            made[name] += 1
            return render(*args, **kwargs)
        return counting

    monkeypatch.setattr(serve_loop, "render_report", counted("document", serve_loop.render_report))
    monkeypatch.setattr(serve_loop, "render_textfile", counted("metrics", serve_loop.render_textfile))
    api = serve("healthy-busy-same-type-pool")
    with serving(api) as service:
        assert made == {"document": 0, "metrics": 0}
        published = service.loop.published
        first = get(service.url + "/api/v1/check")
        assert get(service.url + "/api/v1/check") == first and first[0] == 200
        assert get(service.url + "/metrics")[0] == get(service.url + "/metrics")[0] == 200
        assert service.loop.published is published and made == {"document": 1, "metrics": 1}  # one of each
        assert json.loads(first[1])["results"]


def test_the_collector_is_off_while_the_first_lists_arrive_and_on_before_the_first_diagnosis(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """Started as the command line starts it (the cyclic collector off), serve takes its first lists with it off
    (it would walk their millions of objects as they arrive), then freezes what they made out of its reach and
    turns it on before its first diagnosis: judged with it off, then frozen, that diagnosis's cycles were held for
    good (450 MB at a hundred NodeSets on a 2,000-Node pool, past the 512Mi limit)."""
    class Cycle:
        me: object

    listing: list[bool] = []
    judging: list[bool] = []
    made: list[weakref.ref] = []
    settled, judge = serve_loop.Loop.settled, serve_loop.judge

    def settling(self: serve_loop.Loop) -> bool:
        done = settled(self)
        if self.published is None and not done:
            listing.append(gc.isenabled())
        return done

    def judged(*args: Any, **kwargs: Any) -> Any:
        cycle = Cycle()
        cycle.me = cycle  # garbage the collector alone frees
        made.append(weakref.ref(cycle))
        judging.append(gc.isenabled())
        return judge(*args, **kwargs)

    monkeypatch.setattr(serve_loop.Loop, "settled", settling)
    monkeypatch.setattr(serve_loop, "judge", judged)
    api = serve("healthy-busy-same-type-pool")
    # an earlier test's loop, stopped, ends within a second: until then it may turn the collector on
    assert eventually(lambda: not any(t.name == "diagnosis" for t in threading.enumerate()), timeout=30)
    frozen = gc.get_freeze_count()
    gc.disable()
    try:
        with serving(api) as service:
            assert not any(listing) and judging and all(judging)
            assert gc.get_freeze_count() > frozen
            assert eventually(lambda: gc.collect() >= 0 and made[0]() is None, timeout=3)  # not frozen with the lists
            agrees(service, api)
    finally:
        gc.enable()


def test_node_pages_and_events_are_parsed_without_their_image_lists(serve: Serve,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """As check's lists: the kubelet's image list (most of a real Node's bytes) is cut from the text before it is
    parsed, in a list's pages and in a watch's events; the verdict is check's."""
    snap = load(FIXTURES / "healthy-busy-same-type-pool")
    nodes = [copy.deepcopy(n) for n in snap.nodes or ()]
    for node in nodes:
        real_size(node)
    parsed: list[tuple[bool, bool]] = []  # each text parsed: whether it held an image list, and the touched Node

    def recorded(module: Any) -> Any:
        json_doc = module.json_doc

        def recording(text: Any) -> Any:
            if threading.current_thread().name.startswith("watch "):  # serve's (check's probe gets a Node whole)
                parsed.append((b"registry.example.com/team-" in bytes(text), b"example.com/touched" in bytes(text)))
            return json_doc(text)
        return recording

    monkeypatch.setattr(answers, "json_doc", recorded(answers))
    monkeypatch.setattr(serve_watch, "json_doc", recorded(serve_watch))
    api = serve(replace(snap, nodes=tuple(nodes)))
    with serving(api) as service:
        node = copy.deepcopy(next(n for n in nodes if n["metadata"]["labels"].get("compute.coreweave.com/node-pool")
                                  == "slurm-cpu"))
        node["metadata"]["labels"]["example.com/touched"] = "yes"
        api.state.put("nodes", node)
        assert eventually(lambda: any(touched for _, touched in parsed))  # its watch event
        agrees(service, api)
    assert parsed and not any(images for images, _ in parsed)
