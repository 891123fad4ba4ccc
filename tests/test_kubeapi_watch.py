"""The test API server's watches, checked with the real kubectl and with raw HTTP: what serve's tests stand on."""

from __future__ import annotations

import json
import os
import queue
import shutil
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import TOKEN

KUBECTL = "/usr/bin/kubectl"


def node(name: str, **labels) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


class Stream:
    """A watch read line by line in a thread: events() waits for them, `ended` says how the body ended."""

    def __init__(self, api, cert, path: str):
        ctx = ssl.create_default_context(cafile=cert[0])
        req = urllib.request.Request(api.url + path, headers={"Authorization": f"Bearer {TOKEN}"})
        self.resp = urllib.request.urlopen(req, context=ctx, timeout=10)
        self.lines: queue.Queue = queue.Queue()
        self.ended: str | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buffer = b""
        try:  # read1 (not readline) raises IncompleteRead on a body cut short
            while chunk := self.resp.read1(1 << 16):
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    self.lines.put(json.loads(line))
            self.ended = "cleanly"
        except Exception as e:  # what the test asserts on
            self.ended = type(e).__name__
        self.lines.put(None)

    def next(self, timeout: float = 5.0) -> dict | None:
        return self.lines.get(timeout=timeout)

    def until(self, kind: str, timeout: float = 5.0) -> dict:
        end = time.monotonic() + timeout
        while True:
            event = self.next(end - time.monotonic())
            assert event is not None, f"the watch ended ({self.ended}) before a {kind} event"
            if event["type"] == kind:
                return event


def test_watch_streams_changes_after_the_lists_version(serve, cert):
    api = serve("healthy-pool-name")
    listed = api.state.version
    api.state.put("nodes", node("new-node", pool="x"))  # after the list: the watch from it sees it
    stream = Stream(api, cert, f"/api/v1/nodes?watch=1&resourceVersion={listed}")
    added = stream.next()
    assert (added["type"], added["object"]["metadata"]["name"], added["object"]["kind"]) == ("ADDED", "new-node", "Node")
    assert int(added["object"]["metadata"]["resourceVersion"]) == listed + 1
    api.state.put("nodes", node("new-node", pool="y"))
    modified = stream.next()
    assert (modified["type"], modified["object"]["metadata"]["labels"]) == ("MODIFIED", {"pool": "y"})
    api.state.delete("nodes", None, "new-node")
    assert stream.next()["type"] == "DELETED"


def test_a_watch_with_a_label_selector_sees_an_object_leave_it_as_deleted(serve, cert):
    api = serve("healthy-pool-name")
    api.state.put("nodes", node("n1", pool="x"))
    stream = Stream(api, cert, f"/api/v1/nodes?watch=1&labelSelector=pool%3Dx&resourceVersion={api.state.version}")
    api.state.put("nodes", node("n2", pool="elsewhere"))  # never matched: not seen
    api.state.put("nodes", node("n1", pool="elsewhere"))
    gone = stream.next()
    assert (gone["type"], gone["object"]["metadata"]["name"]) == ("DELETED", "n1")
    api.state.put("nodes", node("n2", pool="x"))
    added = stream.next()
    assert (added["type"], added["object"]["metadata"]["name"]) == ("ADDED", "n2")


def test_bookmarks_carry_the_current_version_when_asked_for(serve, cert):
    api = serve("healthy-pool-name")
    api.bookmark_every = 0.2
    start = api.state.version
    asked = Stream(api, cert, f"/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion={start}")
    plain = Stream(api, cert, f"/api/v1/nodes?watch=1&resourceVersion={start}&timeoutSeconds=1")
    api.state.put("pods", {"metadata": {"name": "p", "namespace": "x"}, "spec": {}})  # another resource moves on
    mark = asked.until("BOOKMARK")
    assert mark["object"]["kind"] == "Node" and int(mark["object"]["metadata"]["resourceVersion"]) == start + 1
    assert plain.next() is None and plain.ended == "cleanly"  # timeoutSeconds: no bookmark, then the end


def test_a_compacted_version_is_410_gone(serve, cert):
    api = serve("healthy-pool-name")
    old = api.state.version
    api.state.put("nodes", node("n1"))
    api.state.compact()
    stream = Stream(api, cert, f"/api/v1/nodes?watch=1&resourceVersion={old}")
    error = stream.next()
    assert error["type"] == "ERROR" and error["object"]["code"] == 410 and error["object"]["reason"] == "Expired"
    assert stream.next() is None
    fresh = Stream(api, cert, f"/api/v1/nodes?watch=1&resourceVersion={api.state.version}&timeoutSeconds=1")
    assert fresh.next() is None and fresh.ended == "cleanly"


def test_a_watch_dropped_mid_stream_ends_without_the_last_chunk(serve, cert):
    api = serve("healthy-pool-name")
    stream = Stream(api, cert, f"/api/v1/nodes?watch=1&resourceVersion={api.state.version}")
    api.state.put("nodes", node("n1"))
    assert stream.next()["type"] == "ADDED"
    assert api.drop_watches() == 1
    assert stream.next() is None and stream.ended != "cleanly"


def test_a_restarted_server_listens_on_the_same_port_with_the_same_objects(serve, cert):
    api = serve("healthy-pool-name")
    stream = Stream(api, cert, f"/api/v1/nodes?watch=1&resourceVersion={api.state.version}")
    api.stop()
    assert stream.next() is None and stream.ended != "cleanly"
    with pytest.raises(urllib.error.URLError):
        Stream(api, cert, "/api/v1/nodes")
    api.state.put("nodes", node("while-down"))
    api.start()
    ctx = ssl.create_default_context(cafile=cert[0])
    req = urllib.request.Request(api.url + "/api/v1/nodes", headers={"Authorization": f"Bearer {TOKEN}"})
    listed = json.load(urllib.request.urlopen(req, context=ctx, timeout=10))
    assert "while-down" in {n["metadata"]["name"] for n in listed["items"]}
    assert listed["metadata"]["resourceVersion"] == str(api.state.version)


@pytest.mark.skipif(not shutil.which(KUBECTL), reason="kubectl is installed by tests/install-deps.sh")
def test_kubectl_get_watch_follows_the_server(serve, tmp_path):
    """The real kubectl lists, then watches from the list's version: it prints what the server streams."""
    api = serve("healthy-pool-name")
    proc = subprocess.Popen([KUBECTL, "--kubeconfig", str(api.kubeconfig), "--cache-dir", str(tmp_path / "cache"),
                             "get", "nodes", "--watch", "--output-watch-events", "-o", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, HOME=str(tmp_path)))
    events: queue.Queue = queue.Queue()

    def read():
        decoder, buffer = json.JSONDecoder(), ""
        for line in proc.stdout:  # -o json prints each event as an indented document
            buffer += line
            try:
                doc, _ = decoder.raw_decode(buffer.strip())
            except ValueError:
                continue
            events.put(doc)
            buffer = ""
    threading.Thread(target=read, daemon=True).start()
    try:
        nodes = len(api.state.objects["nodes"])
        first = [events.get(timeout=30) for _ in range(nodes)]
        assert {e["type"] for e in first} == {"ADDED"}
        watches = lambda: [r for r in api.log if r.query.get("watch") in ("1", "true")]  # noqa: E731
        deadline = time.monotonic() + 20
        while not watches() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert watches() and watches()[0].query["resourceVersion"] == str(api.state.version)
        api.state.put("nodes", node("arrived", pool="x"))
        got = events.get(timeout=10)
        assert (got["type"], got["object"]["metadata"]["name"]) == ("ADDED", "arrived")
        api.state.put("nodes", node("arrived", pool="y"))
        got = events.get(timeout=10)
        assert (got["type"], got["object"]["metadata"]["labels"]) == ("MODIFIED", {"pool": "y"})
        api.state.delete("nodes", None, "arrived")
        assert events.get(timeout=10)["type"] == "DELETED"
    finally:
        proc.kill()
        proc.wait()
