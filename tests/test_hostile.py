"""A faulty or hostile API server: every wait has a deadline, nothing unbounded is decoded, no escape
sequence reaches a terminal, and absurd durations are refused. Each test bounds its own run time."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sunkcheck import duration
from sunkcheck.collect import answers
from sunkcheck.collect import kube as kube_module
from sunkcheck.pipeline import NODESET_NODE_COUNTED
from tests.conftest import FIXTURES, ROOT, TOKEN, Run, Serve, run
from tests.kubeapi import FakeApi, Mute, Restarting, gzip_bomb, kubeconfig

MARGIN = 5.0  # seconds a run may take beyond its deadline on this shared machine
ESCAPES = "\x1b]0;owned\x07\x1b[31mred\x9b2J\rline\nnext"


def one_line(result: Run) -> str:
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.err, result.err
    return lines[0]


def timed(*args: str) -> tuple[Run, float]:
    started = time.monotonic()
    result = run(*args)
    return result, time.monotonic() - started


# --- time ----------------------------------------------------------------------------------------

def test_a_server_that_never_answers_ends_at_the_default_deadline(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(duration, "REQUEST_TIMEOUT", 2.0)  # the real default (60s) is the same code path
    api = serve("healthy-pool-name")
    api.faults.silent = True
    r, took = timed("check")
    assert r.code == 3 and took < 2 + MARGIN
    assert "timed out after 2s (the default deadline; --request-timeout changes it)" in one_line(r)


def test_the_default_deadline_is_documented() -> None:
    assert duration.REQUEST_TIMEOUT == 60 and duration.HANDSHAKE_TIMEOUT == 10
    text = " ".join(run("check", "--help").out.split())
    assert "(default 60s; e.g. 5s, 2m; 0 = never)" in text and "always gives up after 10s" in text


@pytest.mark.parametrize("fault, value", [("stall_after", 10), ("dribble", 0.05)])
def test_request_timeout_bounds_an_answer_that_stalls_or_dribbles(serve: Serve, fault: str, value: float) -> None:
    """A dribbled answer (headers, then body) keeps every socket read short: only a deadline on the whole
    exchange ends it."""
    api = serve("healthy-pool-name")
    setattr(api.faults, fault, value)
    r, took = timed("check", "--request-timeout", "1s")
    assert r.code == 3 and took < 1 + MARGIN
    assert "timed out after 1s (--request-timeout)" in one_line(r)


def test_a_list_timed_out_in_its_headers_lets_its_thread_and_connection_go(serve: Serve) -> None:
    """The exchange a list gave up on at its deadline, stuck in a status line arriving a byte at a time, is ended
    too: its thread and connection go at once (before, both stayed for as long as the server dribbled: serve, whose
    lists each give up so, gathered thousands a day)."""
    api = serve("healthy-pool-name")
    api.faults.dribble = 0.2  # its status line alone takes 3 s
    kube = kube_module.Kube(str(api.kubeconfig), None, 1.0)
    with pytest.raises(kube_module.CallError, match=r"timed out after 1s \(--request-timeout\)"):
        kube.list(kube_module.NODES)

    def gone() -> bool:
        with api.lock:
            open_ = len(api.connections)
        return open_ == 0 and not any(t.name.startswith("GET /api/v1/nodes") for t in threading.enumerate())

    deadline = time.monotonic() + 3
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(), ([t.name for t in threading.enumerate()], api.connections)


@pytest.mark.parametrize("flag", [[], ["--request-timeout", "0"]])
def test_tls_that_never_completes_is_bounded_even_without_a_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     flag: list[str]) -> None:
    monkeypatch.setattr(duration, "HANDSHAKE_TIMEOUT", 1.0)
    with Mute() as mute:
        config = kubeconfig(tmp_path / "kc", mute.url, token=TOKEN)
        r, took = timed("check", "--kubeconfig", str(config), *flag)
    assert r.code == 3 and took < 1 + MARGIN
    assert f"cannot reach the API server {mute.url}: no connection (TCP and TLS) within 1s" in one_line(r)


def test_the_mute_listener_stops_accepting_when_it_closes() -> None:
    """The harness itself: a Mute left accepting after its test took a later test's API connections."""
    import socket

    with Mute(greeting=b"hello") as mute:
        with socket.create_connection(("127.0.0.1", mute.port), timeout=5) as client:
            assert client.recv(5) == b"hello"
    mute.thread.join(5)
    assert not mute.thread.is_alive()


def test_a_continue_token_that_comes_back_stops_the_list(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    api.faults.endless = "same"
    r, took = timed("check", "--request-timeout", "0")
    assert r.code == 3 and took < MARGIN
    assert "GET /apis/sunk.coreweave.com/v1alpha1/namespaces/tenant-slurm/nodesets: the API server repeated a " \
           "continue token after 2 pages; stopped" in one_line(r)


def test_a_list_that_never_ends_stops_at_the_page_limit(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_module, "MAX_PAGES", 30)
    api = serve("healthy-pool-name")
    api.faults.endless = "new"
    r, took = timed("check", "--request-timeout", "0")  # no deadline: the page limit alone ends it
    assert r.code == 3 and took < MARGIN
    assert "nodesets: more than 30 pages of 500; stopped" in one_line(r)
    assert len([q for q in api.log if q.path.endswith("/tenant-slurm/nodesets")]) == 30


def test_a_list_that_never_ends_stops_at_the_deadline_too(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    api.faults.endless, api.faults.latency = "new", 0.05
    r, took = timed("check", "--request-timeout", "1s")
    assert r.code == 3 and took < 1 + MARGIN
    assert "timed out after 1s (--request-timeout)" in one_line(r)


def test_throttling_that_would_outlast_the_timeout_gives_up_at_once(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    api = serve("healthy-pool-name")
    api.faults.throttle["nodesets"] = 99
    api.faults.retry_after = "5"
    slept: list[float] = []
    monkeypatch.setattr(kube_module, "time", SimpleNamespace(monotonic=time.monotonic, time=time.time, sleep=slept.append))
    r = run("check", "--request-timeout", "2s")
    assert r.code == 3 and slept == []  # it does not sleep 5s for a retry it could not finish
    assert "failed (429) and waiting 5s to retry would pass the 2s deadline (--request-timeout)" in one_line(r)
    assert len([q for q in api.log if q.path.endswith("/tenant-slurm/nodesets")]) == 1


# --- dropped connections ----------------------------------------------------------------------------

def steps_of(doc: dict) -> dict[str, str]:
    return {s["name"]: s["status"] for s in doc["results"][0]["steps"]}


@pytest.mark.parametrize("plural", ["events", "nodes", "pods", "nodepools", "nodesets"])
@pytest.mark.parametrize("drop", ["resets", "hangups", "truncated"])
def test_a_connection_dropped_once_on_any_get_is_retried_and_the_diagnosis_is_whole(serve: Serve, plural: str, drop: str) -> None:
    """A restarting API server resets the connection or cuts an answer off; a load balancer closes an idle
    kept-alive one just as a request goes out (the client reads EOF before a status line). Each cost the whole
    run (exit 3, no diagnosis, one request in the server's log): the GET is sent again."""
    api = serve("two-problems")
    whole = run("check", "-o", "json")
    requests = sorted((q.path, sorted(q.query.items())) for q in api.log)
    getattr(api.faults, drop)[plural] = 1
    api.log.clear()
    r = run("check", "-o", "json")
    assert (r.code, r.err) == (whole.code, "") and r.json()["results"] == whole.json()["results"]
    assert whole.code == 1 and r.json()["errors"] == []
    retried = sorted((q.path, sorted(q.query.items())) for q in api.log)
    for request in requests:
        retried.remove(request)
    assert len(retried) == 1 and plural in retried[0][0]  # the one request sent again


def test_a_connection_reset_on_every_events_list_costs_only_the_events_step(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    api.faults.resets["events"] = 10**6
    r, took = timed("check", "-o", "json")
    doc = r.json()
    assert took < MARGIN and steps_of(doc) == {"nodepool": "ok", "nodes": "ok", "events": "unknown", "nodeset": "ok",
                                              "pods": "ok", "sinfo": "skipped"}
    assert r.code == 3 and doc["status"] == "unknown"  # a step whose data is missing (docs/exit-codes.md)
    # a reset can reach the client before or after it reads the end of the stream
    assert re.fullmatch(rf"events: GET /api/v1/\S+: the connection to {api.url} ended without an answer \((connection "
                        r"reset by peer|remote end closed connection without response)\), 4 times", doc["errors"][0])
    tries = [(q.path, q.query.get("fieldSelector")) for q in api.log if q.status == 0]
    assert tries and {tries.count(t) for t in tries} == {4}  # the first GET and three retries


def test_retries_of_a_dropped_connection_end_at_the_deadline(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    api = serve("healthy-pool-name")
    api.faults.hangups["nodesets"] = 10**6
    slept: list[float] = []
    monkeypatch.setattr(kube_module, "time", SimpleNamespace(monotonic=time.monotonic, time=time.time, sleep=slept.append))
    monkeypatch.setattr(kube_module, "_backoff", lambda attempt: 3.0)
    r = run("check", "--request-timeout", "2s")
    assert r.code == 3 and slept == []
    assert ("ended without an answer (remote end closed connection without response) and waiting 3s to retry would "
            "pass the 2s deadline (--request-timeout)") in one_line(r)
    assert len([q for q in api.log if q.path.endswith("/tenant-slurm/nodesets")]) == 1


def restarting(api: FakeApi, tmp_path: Path, cert: tuple[str, str]) -> tuple[kube_module.Kube, Restarting]:
    """A Kube reaching `api` through a Restarting forwarder, and the forwarder."""
    forwarder = Restarting(api)
    return kube_module.Kube(str(kubeconfig(tmp_path / "kc-restarting", forwarder.url, token=TOKEN, ca=cert[0]))), forwarder


@pytest.mark.parametrize("answered_before", [True, False])
def test_connections_refused_while_the_api_server_restarts_are_retried(serve: Serve, tmp_path: Path, cert: tuple[str, str],
                                                                       answered_before: bool) -> None:
    """A restart as a client sees it: the connection reset, then connections refused for a while. The reset
    was retried, the refusal ended the run."""
    kube, forwarder = restarting(serve("healthy-pool-name"), tmp_path, cert)
    with forwarder:
        if answered_before:
            kube.version()
        forwarder.down()
        back = threading.Timer(0.5, forwarder.up)  # the retries wait at least 0.2 + 0.4 + 0.8 s
        back.start()
        assert kube.get("/api/v1/nodes")["items"]
        back.join()


def test_a_connection_refused_after_the_first_answer_costs_only_that_read(serve: Serve, tmp_path: Path, cert: tuple[str,
                                                                          str]) -> None:
    kube, forwarder = restarting(serve("healthy-pool-name"), tmp_path, cert)
    with forwarder:
        kube.version()
        forwarder.down()
        with pytest.raises(kube_module.CallError) as failed:  # not Unreachable, which ends the run
            kube.get("/api/v1/nodes")
    assert str(failed.value) == (f"GET /api/v1/nodes: cannot reach the API server {forwarder.url}: connection "
                                 f"refused, {kube_module.RETRIES + 1} times")


def test_a_connection_refused_before_any_answer_still_means_the_api_server_cannot_be_used(serve: Serve, tmp_path: Path,
                                                                                          cert: tuple[str, str]) -> None:
    kube, forwarder = restarting(serve("healthy-pool-name"), tmp_path, cert)
    forwarder.down()
    with pytest.raises(kube_module.Unreachable, match=f"^cannot reach the API server {forwarder.url}: connection "
                                                      "refused$"):
        kube.version()


def test_backoff_doubles_with_jitter() -> None:
    pauses = [[kube_module._backoff(attempt) for attempt in range(3)] for _ in range(50)]
    assert all(0.2 * 2**a <= p[a] <= 0.3 * 2**a for p in pauses for a in range(3))
    assert len({p[0] for p in pauses}) > 1


@pytest.mark.parametrize("flood, what", [("many", "got more than 100 headers"),
                                         ("long", "got more than 65536 bytes when reading header line")])
def test_an_answer_with_too_many_or_too_long_headers_fails_that_read_not_the_run(serve: Serve, flood: str, what: str) -> None:
    api = serve("healthy-pool-name")
    api.faults.header_flood["events"] = flood
    r = run("check", "-o", "json")
    doc = r.json()
    assert r.code == 3 and steps_of(doc)["events"] == "unknown" and steps_of(doc)["nodeset"] == "ok"
    assert doc["errors"][0].startswith("events: GET /api/v1/") and doc["errors"][0].endswith(
        f"the API server's answer cannot be read ({what}; sunkcheck reads at most 100 headers, of up to 64 KiB a "
        "line)"), doc["errors"]


# --- memory --------------------------------------------------------------------------------------

def test_two_different_content_lengths_are_an_unreadable_answer_not_an_unreachable_server(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    api.faults.headers = {"content-length": "900000"}  # beside the real one: urllib3 refuses both
    r = run("check")
    assert r.code == 3 and re.match(r"sunkcheck: error: GET /apis/sunk\.coreweave\.com/\S+: the API server's answer "
                                        r"cannot be read \(Content-Length contained multiple unmatching values "
                                        r"\(\d+, 900000\)\) on context test ", one_line(r)), r.err


def test_a_chunk_length_that_is_no_number_fails_that_read_once_and_not_as_a_dropped_connection(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    api.faults.bad_chunks = {"events"}
    r = run("check", "-o", "json")
    doc = r.json()
    assert r.code == 3 and steps_of(doc)["events"] == "unknown" and steps_of(doc)["nodeset"] == "ok"
    assert doc["errors"][0].startswith("events: GET /api/v1/") and doc["errors"][0].endswith(
        ": the API server's answer cannot be read (a chunk's length is zz)"), doc["errors"]
    events = [q for q in api.log if q.path.endswith("/events")]
    assert len(events) == len({(q.path, q.query.get("fieldSelector")) for q in events})  # none sent again


def test_a_gzip_bomb_is_refused_without_decoding_it(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    api.faults.gzip_bomb = 1 << 28  # 256 MB of JSON in about 260 KB
    gzip_bomb(api.faults.gzip_bomb)  # made before the clock starts
    r, took = timed("check", "-o", "json")
    assert r.code == 3 and took < MARGIN
    assert "sent a gzip-encoded body sunkcheck did not ask for (it accepts identity only)" in one_line(r)


def nodes_alone_unread(result: dict) -> bool:
    """The Nodes alone not read: the steps counting them UNKNOWN (the nodeset step still saying the NodeSet's status),
    every other step judged."""
    steps = {s["name"]: s for s in result["steps"]}
    counting = {name for name in steps if name in NODESET_NODE_COUNTED or name == "nodes"}
    return ({name for name, s in steps.items() if s["status"] == "unknown"} == counting
            and "desired" in steps["nodeset"]["counts"])


def test_a_gzip_body_on_one_step_leaves_only_what_reads_it_unknown(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not decoded even when it is small: how far it expands is the server's choice."""
    api = serve("healthy-pool-name")
    page = api._page
    monkeypatch.setattr(api, "_page", lambda kind, *rest: gzip_bomb(1 << 20) if kind.plural == "nodes" else page(kind, *rest))
    doc = run("check", "-o", "json").json()
    assert nodes_alone_unread(doc["results"][0])
    assert any("/api/v1/nodes" in e and "gzip-encoded body" in e for e in doc["errors"])


def test_a_body_that_never_ends_is_refused_at_the_cap_in_bounded_memory(serve: Serve) -> None:
    """A chunked answer that never ends was read until the deadline (1.4 GB in 10s; past the address space
    below, a MemoryError and an internal error): reading stops at MAX_RESPONSE, and only that call fails."""
    from tests.test_hardening import sunkcheck

    api = serve("healthy-pool-name")
    api.faults.endless_body = {"nodes"}
    started = time.monotonic()
    r = sunkcheck("check", "-o", "json", timeout=120, memory=1 << 30)
    assert r.returncode == 3 and "internal error" not in r.stderr and time.monotonic() - started < 30, r.stderr
    doc = json.loads(r.stdout)
    assert nodes_alone_unread(doc["results"][0])
    assert any(e.startswith("nodes: GET /api/v1/nodes?") and e.endswith(": the API server's answer is larger than "
                                                                         "64 MiB, the most sunkcheck reads of one answer")
               for e in doc["errors"]), doc["errors"]


def test_an_answer_is_read_up_to_the_cap_and_not_a_byte_more(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exactly MAX_RESPONSE bytes is an answer; one more fails the call (refused from its Content-Length)."""
    api = serve("healthy-pool-name")
    body = json.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": []}).encode() + b" " * 5000
    api.faults.bodies["nodes"] = body
    monkeypatch.setattr(answers, "MAX_RESPONSE", len(body))
    steps = {s["name"]: s for s in run("check", "-o", "json").json()["results"][0]["steps"]}
    assert "could not" not in steps["nodes"]["summary"] and steps["nodes"]["status"] != "unknown"
    monkeypatch.setattr(answers, "MAX_RESPONSE", len(body) - 1)
    doc = run("check", "-o", "json").json()
    assert {s["name"]: s["status"] for s in doc["results"][0]["steps"]}["nodes"] == "unknown"
    assert any(e.startswith("nodes: GET /api/v1/nodes?") and e.endswith(f": the API server's answer is larger than "
                                                                         f"{len(body) - 1:,} bytes, the most sunkcheck "
                                                                         "reads of one answer") for e in doc["errors"])


PEAK_RSS = """import atexit, os, runpy, sys
sys.path.insert(0, os.getcwd())
atexit.register(lambda: sys.stderr.write(next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))))
sys.argv = ["sunkcheck", *sys.argv[1:]]
runpy.run_module("sunkcheck", run_name="__main__", alter_sys=True)
"""


def peak_rss(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    """The real executable in a subprocess, and its peak resident memory in bytes (VmHWM, of its own process
    image: ru_maxrss would count the test process it was forked from)."""
    r = subprocess.run([sys.executable, "-c", PEAK_RSS, *args], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    *lines, peak = r.stderr.splitlines()
    r.stderr = "\n".join(lines)
    return r, int(peak.split()[1]) << 10


def test_answers_read_at_once_are_bounded_together_inside_the_cronjobs_memory(serve: Serve) -> None:
    """Five endless answers at once took 1.2 GB (128 MiB each, twice that while read): past the 512Mi of
    deploy/cronjob.yaml, a SIGKILL and no output. All answers held at once are charged to MAX_IN_FLIGHT,
    each read into one buffer; the calls past it fail in one line, the JSON is still written."""
    api = serve("two-problems")
    api.faults.endless_body = {"nodepools", "nodes", "pods", "events"}
    r, peak = peak_rss("check", "-o", "json", "-n", "tenant-slurm", "--nodeset", "slurm-cpu-batch")
    assert r.returncode == 3 and "internal error" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    nodeset = next(s for s in doc["results"][0]["steps"] if s["name"] == "nodeset")
    assert "desired" in nodeset["counts"], nodeset  # the NodeSet read, what counts the Nodes unknown
    assert any(e.endswith("the most sunkcheck reads of one answer") for e in doc["errors"]), doc["errors"]
    assert peak < 320 << 20, f"{peak >> 20} MiB"


def test_the_budget_of_answers_held_at_once_fails_the_call_past_it_and_is_given_back(serve: Serve,
                                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer that the budget cannot hold fails its call in one line; every byte charged is given back,
    failed calls included (their tracebacks do not keep the buffer charged)."""
    api = serve("healthy-pool-name")
    api.faults.endless_body = {"nodes"}
    monkeypatch.setattr(answers, "MAX_IN_FLIGHT", 8 << 20)
    held = answers.budget.used  # by an earlier test's request still running (a hung one, left at its deadline)
    doc = run("check", "-o", "json").json()
    assert {s["name"]: s["status"] for s in doc["results"][0]["steps"]}["nodes"] == "unknown"
    assert any(e.startswith("nodes: GET /api/v1/nodes?") and e.endswith(": the answers being read at once would "
                                                                         "pass 8 MiB, the most sunkcheck holds; this "
                                                                         "one was stopped") for e in doc["errors"])
    assert answers.budget.used <= held
    api.faults.endless_body = set()
    assert run("check", "-o", "json").code == 0 and answers.budget.used <= held


def _settled(value: Callable[[], int], quiet: float = 0.3, limit: float = 10.0) -> int:
    """`value` once it has not changed for `quiet` seconds (or after `limit`): the budget the process's answers
    hold is shared with any read still running from an earlier test in the same worker."""
    end, last, since = time.monotonic() + limit, value(), time.monotonic()
    while time.monotonic() < end and time.monotonic() - since < quiet:
        time.sleep(0.05)
        if (now := value()) != last:
            last, since = now, time.monotonic()
    return last


def test_an_answer_of_known_length_past_the_budget_is_refused_unread_and_nothing_stays_charged(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Content-Length the budget cannot hold is refused before a byte of the body is read (the read path of
    every ordinary answer), that call alone fails, and the charge of the answers that fit is given back.
    The Node list alone is longer than the budget and every other answer fits beside the rest: which call is
    refused does not depend on which answers happen to be held at once (a budget the lists passed only
    together refused a different call, or refused it while decoding, 5 runs in 6)."""
    api = serve("healthy-pool-name")
    held = _settled(lambda: answers.budget.used)  # reads an earlier test left running in this process end first
    budget = ((held >> 20) + 8) << 20  # room beside them: the other answers of this case hold a few KiB
    monkeypatch.setattr(answers, "MAX_IN_FLIGHT", budget)
    api.faults.bodies["nodes"] = b'{"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": []}'.ljust(budget + 1)
    asked, charge = [], answers.Body.charge

    def counted(body: answers.Body, n: int) -> bool:
        asked.append(n)
        return charge(body, n)

    monkeypatch.setattr(answers.Body, "charge", counted)
    doc = run("check", "-o", "json").json()
    assert nodes_alone_unread(doc["results"][0])
    other_calls = [e for e in doc["errors"] if "GET" in e and not e.startswith("nodes: GET /api/v1/nodes?")]
    assert not other_calls, other_calls
    assert any(e.startswith("nodes: GET /api/v1/nodes?") and e.endswith(
        f": the answers being read at once would pass {budget >> 20} MiB, the most sunkcheck holds; this one was stopped")
        for e in doc["errors"]), doc["errors"]
    assert budget + 1 in asked  # the whole Content-Length, asked for before the body is read
    assert _settled(lambda: answers.budget.used) <= held


def test_an_answer_whose_decoded_text_the_budget_cannot_hold_is_refused_before_decoding(serve: Serve,
                                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """One character past U+FFFF makes the text json parses four bytes a character: it is charged too."""
    api = serve("healthy-pool-name")
    items = [{"metadata": {"name": "n", "annotations": {"a": "x" * (3 << 20), "b": "\U0001F600"}}}]
    api.faults.bodies["nodes"] = json.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": {},
                                             "items": items}, ensure_ascii=False).encode()
    monkeypatch.setattr(answers, "MAX_IN_FLIGHT", 8 << 20)
    held = answers.budget.used
    doc = run("check", "-o", "json").json()
    assert any(e.startswith("nodes: GET /api/v1/nodes?") and e.endswith(": the API server's answer, decoded to be "
                                                                         "parsed, would pass with the other answers "
                                                                         "held 8 MiB, the most sunkcheck holds at once")
               for e in doc["errors"]), doc["errors"]
    assert answers.budget.used <= held


# --- escapes -------------------------------------------------------------------------------------

def clean(text: str) -> bool:
    return not any(c in text for c in "\x1b\x07\x9b\r")


def test_escapes_in_error_bodies_are_plain_text_in_json_and_on_stderr(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    api.faults.forbidden.add("nodepools")
    api.faults.message = ESCAPES
    r = run("check", "-o", "json")
    assert r.code == 3 and clean(r.out) and clean(r.err)
    errors = r.json()["errors"]
    assert any("forbidden: red?2J?line next" in e for e in errors), errors
    plain = run("check", "-o", "plain")
    assert clean(plain.out) and "red?2J?line next" in plain.out
    explained = run("explain")
    assert clean(explained.err) and "could not read nodepools: forbidden:" in explained.err
    assert len(explained.err.strip().splitlines()) == 1


@pytest.mark.parametrize("fault", ["401", "500"])
def test_escapes_in_fatal_errors_are_one_clean_line(serve: Serve, tmp_path: Path, cert: tuple[str, str], fault: str) -> None:
    api = serve("healthy-pool-name")
    api.faults.message = ESCAPES
    if fault == "401":
        args = ["--kubeconfig", str(kubeconfig(tmp_path / "kc", api.url, token="wrong", ca=cert[0]))]
    else:
        api.faults.errors["nodesets"] = 99
        args = ["--request-timeout", "0"]
    r = run("check", *args)
    line = one_line(r)
    assert r.code == 3 and clean(r.err) and "red?2J?line next" in line


def test_shape_errors_naming_an_object_are_one_clean_line(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "healthy-pool-name", snap)
    nodes = json.loads((snap / "nodes.json").read_text())
    nodes["items"][0]["metadata"]["name"] = ESCAPES
    nodes["items"][0]["spec"] = {"taints": [{"key": ["a"]}]}
    (snap / "nodes.json").write_text(json.dumps(nodes))
    r = run("check", "--snapshot", str(snap))
    assert r.code == 3 and clean(r.err)
    # the name itself is what the API server would refuse (shown escaped, as Python writes a string)
    assert "(Node red?2J?line next): metadata.name is '\\x1b]0;owned" in one_line(r)
    nodes["items"][0]["metadata"]["name"] = "g1"
    (snap / "nodes.json").write_text(json.dumps(nodes))
    assert "(Node g1): spec.taints[0].key is a list" in one_line(run("check", "--snapshot", str(snap)))


# --- absurd numbers ------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["inf", "nan", "1e400", "-1", "-5s", "1e300", "9999999999h"])
@pytest.mark.parametrize("flag", ["--request-timeout", "--wait", "--interval", "--ssh-timeout"])
def test_absurd_durations_are_refused(flag: str, value: str) -> None:
    extra = ["--login", "login.example"] if flag == "--ssh-timeout" else []
    r = run("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), *extra, flag, value)
    assert r.code == 3
    assert one_line(r) == (f"sunkcheck: error: {flag}: {value!r} is not a duration from 0 to 7 days "
                           "(examples: 0, 30s, 5m, 1h, 1m30s)")


@pytest.mark.parametrize("flag", ["--request-timeout", "--wait", "--interval", "--ssh-timeout"])
def test_a_duration_flag_without_its_value_is_named_not_the_stray_word_after(flag: str) -> None:
    """`--wait --interval 5s`: click took `--interval` as --wait's value and blamed `5s`, an extra argument."""
    r = run("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), flag, "--interval", "5s")
    assert r.code == 3 and "Traceback" not in r.err and "extra argument" not in r.err
    assert r.err.startswith(f"sunkcheck: error: Invalid value for '{flag}': '--interval' is an option, not a duration")


@pytest.mark.parametrize("command", [["explain"], ["snapshot", "out"]])
def test_absurd_request_timeouts_are_refused_by_every_command(command: list[str]) -> None:
    r = run(*command, "--request-timeout", "inf")
    assert r.code == 3 and "--request-timeout: 'inf' is not a duration" in one_line(r)


@pytest.mark.parametrize("text, seconds", [("0", 0), ("1.5", 1.5), ("1m30s", 90), ("500ms", 0.5), ("168h", 604800)])
def test_sensible_durations_still_parse(text: str, seconds: float) -> None:
    assert duration.parse(text, "--wait") == seconds


@pytest.mark.parametrize("value", ["1_0", "\u0663s", "1\u00a0s", "\uff15s", "1_0ms"])
@pytest.mark.parametrize("flag", ["--request-timeout", "--wait"])
def test_durations_take_ascii_digits_only_as_go_does(flag: str, value: str) -> None:
    """float() took `1_0` as 10 and other scripts' digits (`٣` is 3); Go's time.ParseDuration takes neither."""
    r = run("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), flag, value)
    assert r.code == 3 and one_line(r) == (f"sunkcheck: error: {flag}: {value!r} is not a duration from 0 to 7 days "
                                           "(examples: 0, 30s, 5m, 1h, 1m30s)")


def test_an_interval_below_100ms_is_refused_not_raised_in_silence(serve: Serve) -> None:
    serve("healthy-pool-name")
    r = run("check", "--wait", "2s", "--interval", "0.5ms")
    assert r.code == 3 and one_line(r) == "sunkcheck: error: --interval 0.5ms: the time between polls must be at least 100ms"
