"""See what it does: -v N / --v=N logs each request at 6 and headers (never credentials) above; on a
terminal a transient progress line on stderr says what is being read."""

from __future__ import annotations

import logging
import os
import pty
import re
import select
import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.conftest import ROOT, TOKEN, run
from tests.kubeapi import FakeApi

Serve = Callable[..., FakeApi]  # the serve fixture: a fixture case served by the test API server

REQUEST = re.compile(r"^sunkcheck: GET (https://\S+) (\d{3}) (\d+)ms (\d+) bytes$")


def test_v6_logs_one_line_per_request(serve: Serve) -> None:
    api = serve("two-problems")
    for flag in (("-v", "6"), ("--v=6",)):
        r = run("check", *flag, "-o", "json")
        assert r.code == 1, r.err
        lines = [line for line in r.err.splitlines() if REQUEST.match(line)]
        assert lines
        matches = [m for line in lines if (m := REQUEST.match(line))]
        assert any("/apis/compute.coreweave.com/" in m.group(1) and "nodepools" in m.group(1) for m in matches)
        assert all(m.group(2) == "200" for m in matches)
        assert "Authorization" not in r.err and TOKEN not in r.err
        api.log.clear()


def test_v6_request_count_matches_the_server_log(serve: Serve) -> None:
    api = serve("two-problems")
    r = run("check", "--v=6", "-o", "json")
    assert r.code == 1 and api.log
    assert len([line for line in r.err.splitlines() if REQUEST.match(line)]) == len(api.log)


def test_below_6_logs_nothing(serve: Serve) -> None:
    serve("two-problems")
    r = run("check", "-v", "5", "-o", "json")
    assert r.code == 1 and not any(REQUEST.match(line) for line in r.err.splitlines())


def test_v8_shows_headers_without_credentials(serve: Serve) -> None:
    serve("two-problems")
    r = run("check", "--v=8", "-o", "json")
    assert "Accept: application/json" in r.err
    assert TOKEN not in r.err and re.search(r"(?i)authorization: <redacted>", r.err)
    assert re.search(r"(?i)content-type: application/json", r.err)  # response headers too


def test_v8_shows_the_servers_headers_and_reason_as_inert_text(serve: Serve) -> None:
    """A header carrying `ESC]0;...BEL ESC[2J` retitled and cleared the terminal at -v 7 and above."""
    api = serve("two-problems")
    api.faults.headers = {"X-Hostile": "before\x1b]0;owned\x07\x1b[2J\x9b31m after"}
    api.faults.reason = "OK\x1b]0;owned\x07\x1b[2J"
    r = run("check", "--v=8", "-o", "json")
    assert r.code == 1 and not any(c in r.err for c in "\x1b\x07\x9b"), r.err
    assert "sunkcheck: response X-Hostile: before?31m after\n" in r.err


def test_progress_line_on_a_terminal_is_transient(serve: Serve) -> None:
    serve("two-problems")
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="100", TERM="xterm")  # serve set $KUBECONFIG
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "sunkcheck", "check", "-o", "json"], stdout=subprocess.PIPE,
                            stderr=slave, env=env)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    out, _ = proc.communicate(timeout=30)
    os.close(master)
    text = seen.decode(errors="replace")
    assert proc.returncode == 1 and out.startswith(b"{")
    assert "reading" in text and "requests" in text and re.search(r"reading \w+: [1-9][\d,]* objects", text), text
    assert "\x1b[2K" in text or "\r" in text  # rewritten in place, then cleared


def test_sunkcheck_debug_is_documented() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "SUNKCHECK_DEBUG" in readme and "-v 6" in readme
    assert "SUNKCHECK_DEBUG" in run("check", "--help").out


class Line:
    text = ""

    def update(self, text: str) -> None:
        self.text = text


def test_progress_line_counts_the_objects_read_so_far() -> None:
    from sunkcheck.collect import httplog
    from sunkcheck.verbose import Progress

    line = Line()
    progress = Progress(line)
    httplog.REQUESTS.addHandler(progress)
    httplog.REQUESTS.setLevel(logging.DEBUG)
    try:
        httplog.page("nodes", 500)
        httplog.page("nodes", 120)
        httplog.request("GET", "https://h/api/v1/pods?limit=500", 200, 0.01, 2_000_000, {}, {})
    finally:
        httplog.REQUESTS.removeHandler(progress)
        httplog.REQUESTS.setLevel(logging.NOTSET)
    assert line.text == "reading pods: 620 objects, 1 request, 2.0 MB so far"


def test_a_program_reading_the_cluster_gets_the_requests_as_log_records(
        serve: Serve, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    """The records -v prints are standard logging's: a program that reads a cluster through sunkcheck and
    configures logging gets them (its own routing, nothing on stderr), with the fields as attributes, the
    headers' credentials redacted and the server's text inert."""
    from sunkcheck import source
    from sunkcheck.target import Target

    api = serve("two-problems")
    api.faults.headers = {"X-Hostile": "before\x1b]0;owned\x07 after"}
    with caplog.at_level(logging.DEBUG, logger="sunkcheck.http"):
        loaded = source.load(source.Access(), Target(), False)
    assert loaded.snapshot.nodesets and not loaded.errors
    requests = [r for r in caplog.records if r.name == "sunkcheck.http"]
    fields = [vars(r) for r in requests]  # the record's attributes
    assert len(requests) == len(api.log) and {(f["method"], f["status"]) for f in fields} == {("GET", 200)}
    assert all(REQUEST.match(f"sunkcheck: {r.getMessage()}") for r in requests)
    assert {f["url"].split("?")[0].rsplit("/", 1)[1] for f in fields} >= {"nodepools", "nodesets", "nodes"}
    headers = "\n".join(r.getMessage() for r in caplog.records if r.name == "sunkcheck.http.headers")
    assert re.search(r"(?m)^request (?i:authorization): <redacted>$", headers) and TOKEN not in caplog.text
    assert "response X-Hostile: before after" in headers and "\x1b" not in caplog.text
    pages = [vars(r) for r in caplog.records if r.name == "sunkcheck.http.pages"]
    # the namespace's NodeSets, checked, and every namespace's (the same one here)
    assert [p["count"] for p in pages if p["resource"] == "nodesets"] == [len(loaded.snapshot.nodesets)] * 2
    assert capsys.readouterr().err == ""


def test_the_command_line_leaves_logging_as_it_found_it(serve: Serve) -> None:
    """-v's handlers and levels live only while the command reads: a program calling main twice, or logging
    afterwards, sees no line of the first run's."""
    from sunkcheck.collect import httplog

    serve("two-problems")
    before = [(lg.level, list(lg.handlers)) for lg in (httplog.REQUESTS, httplog.HEADERS, httplog.PAGES)]
    assert run("check", "--v=8", "-o", "json").code == 1
    assert [(lg.level, list(lg.handlers)) for lg in (httplog.REQUESTS, httplog.HEADERS, httplog.PAGES)] == before
    assert not any(REQUEST.match(line) for line in run("check", "-o", "json").err.splitlines())
