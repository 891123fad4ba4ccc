"""`check --wait` while the API server is gone: each progress line says what could not be read since when and why,
never the counts read before the outage as if they were the cluster's. Against the test API server, through the
real client, stopped mid-wait."""

from __future__ import annotations

import datetime
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from sunkcheck.serve.wait import outage
from sunkcheck.serve.watch import Health
from tests.conftest import run
from tests.test_wait_watched import starting

Serve = Callable[..., Any]  # the fixture: a snapshot served by the test API server
LINE = re.compile(r"^sunkcheck: waiting \((\d+)s\): (.*)$")


def test_a_wait_whose_api_server_stops_says_since_when_it_read_nothing_not_the_counts_before(serve: Serve) -> None:
    api = serve(starting())
    stopped: list[float] = []

    def stop() -> None:  # mid-wait: every watch cut, nothing listening
        stopped.append(time.time())
        api.stop()

    threading.Timer(2.0, stop).start()
    r = run("check", "--wait", "7s", "--interval", "1s", "-o", "json")
    assert r.code == 3, r.err
    said = [(int(m[1]), m[2]) for line in r.err.splitlines() if (m := LINE.match(line))]
    assert said and said[0][1].startswith("slurm-cpu-batch: READY 6/8"), r.err  # read before the outage
    late = [text for elapsed, text in said if elapsed >= 4]  # 2 s or more after the stop: every watch failed
    assert len(late) >= 2 and not [text for text in late if "READY" in text or "6/8" in text], r.err
    for text in late:
        found = re.fullmatch(r"slurm-cpu-batch: every step unknown; the API server not read since (\d\d:\d\d:\d\d) UTC, "
                             r"every watch failing: (.+)", text)
        assert found, text
        since = datetime.datetime.strptime(found[1], "%H:%M:%S").time()
        at = datetime.datetime.fromtimestamp(stopped[0], datetime.UTC)
        gap = (datetime.datetime.combine(at.date(), since, datetime.UTC) - at).total_seconds()
        assert -2 <= gap <= 2, (text, at)  # when the API server stopped, in UTC
        assert "connection refused" in found[2].lower(), text  # why: nothing listens any more


def test_the_sources_not_read_are_named_by_error_each_since_it_first_failed() -> None:
    """Part of the watches failing (a 403 on one resource, say): the progress line names those, grouped by error,
    and since when each error has lasted; none failing, it says nothing."""
    now = time.monotonic()
    health = {name: Health(synced=True) for name in ("nodes", "nodesets", "pods", "pods-elsewhere/spec.nodeName=g1")}
    for h in health.values():
        h.saw()
    assert outage(health) == ""
    health["nodes"].failed("watch /api/v1/nodes failed (500)", since=now - 30)
    for name in ("pods", "pods-elsewhere/spec.nodeName=g1"):
        health[name].failed("watch failed (403)", since=now - 90 - len(name))
    said = outage(health)
    found = re.fullmatch(r"nodes not read since (\S+) UTC, its watch failing: watch /api/v1/nodes failed \(500\); pods, "
                         r"pods-elsewhere not read since (\S+) UTC, their watches failing: watch failed \(403\)", said)
    assert found, said
    assert 30 <= ago(found[1]) < 32 and 121 <= ago(found[2]) < 123, said  # each error since the earliest it failed


def ago(clock: str) -> float:
    """Seconds from `clock` (HH:MM:SS, UTC, today or yesterday) to now."""
    at = datetime.datetime.now(datetime.UTC)
    then = datetime.datetime.combine(at.date(), datetime.time.fromisoformat(clock), datetime.UTC)
    return (at - then).total_seconds() % 86400


def test_a_wait_whose_node_watch_fails_names_the_nodes_not_read_since_when(serve: Serve) -> None:
    """The Nodes' watch answered 500 from mid-wait on, the rest read: the progress line says the Nodes are not read
    since then (not the API server), the steps that read them unknown, no count read before them told."""
    api = serve(starting())

    def fail() -> None:
        api.faults.errors["nodes"] = 10**6
        api.drop_watches()

    threading.Timer(2.0, fail).start()
    r = run("check", "--wait", "6s", "--interval", "1s", "-o", "json")
    said = [(int(m[1]), m[2]) for line in r.err.splitlines() if (m := LINE.match(line))]
    late = [text for elapsed, text in said if elapsed >= 4]
    assert late, r.err
    for text in late:
        assert re.search(r"; nodes(, [a-z-]+)* not read since \d\d:\d\d:\d\d UTC, (its watch|their watches) failing: "
                         r"watch \S+ failed \(500\)", text), text
        assert text.startswith("slurm-cpu-batch: nodes step unknown") and "6/8" not in text, text
        assert "the API server not read" not in text, text
