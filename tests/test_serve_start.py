"""serve's start, against the test API server: Node pages and events are parsed without their image lists."""

from __future__ import annotations

import copy
import threading
from dataclasses import replace
from typing import Any

import pytest

from benchmarks.large_cluster import real_size
from sunkcheck.collect import answers
from sunkcheck.serve import watch as serve_watch
from sunkcheck.snapshot import load
from tests.conftest import FIXTURES
from tests.test_serve import Serve, agrees, eventually, serving


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
