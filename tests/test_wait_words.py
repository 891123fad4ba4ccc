"""What a `check --wait` that did not converge says of each target it ended still waiting for: what is still pending,
in every output, never that the binding looks right or that its cluster is bound as intended; a converged wait's
words are a check's."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By

from tests.conftest import Clock, assert_quiet, run, sections, squatter_ends
from tests.test_html import embedded, show
from tests.test_schemas import validate

Serve = Callable[..., Any]  # the fixture: a snapshot served by the test API server
WAIT = ("check", "--wait", "400ms", "--interval", "200ms")
PENDING = "not converged when --wait ended: READY 6/8"
COLOURS = re.compile(r"\x1b\[[0-9;]*m")


def pods_starting(serve: Serve) -> None:
    """healthy-pool-name served with 2 of its 8 slurmd Pods not counted Ready yet: no row fires, the wait never
    converges (READY 6/8)."""
    api = serve("healthy-pool-name")
    with api.state.lock:
        api.state.objects["nodesets"][0]["status"]["numberReady"] = 6


def test_a_wait_that_times_out_with_no_row_says_what_is_pending_in_text(serve: Serve, clock: Clock) -> None:
    pods_starting(serve)
    plain, table = run(*WAIT, "-o", "plain"), run(*WAIT, "-o", "table")
    for r in (plain, table):
        text = " ".join(COLOURS.sub("", r.out).split())
        assert r.code == 1 and text.startswith("sunkcheck WARNING: "), r.out
        assert "looks right" not in text and f"no symptoms so far; {PENDING}" in text, r.out
        assert "timed out after 400ms: never converged: slurm-cpu-batch: READY 6/8" in r.err


def test_a_wait_that_times_out_with_no_row_says_what_is_pending_in_nagios_long_output(serve: Serve,
                                                                                     clock: Clock) -> None:
    """Its status line: tests/test_unattended.py."""
    pods_starting(serve)
    r = run(*WAIT, "-o", "nagios")
    assert r.code == 1 and r.out.splitlines()[2:4] == ["NodeSet tenant-slurm/slurm-cpu-batch: WARNING", f"  {PENDING}"]


def test_a_wait_that_times_out_says_what_each_target_waits_for_in_json(serve: Serve, clock: Clock) -> None:
    pods_starting(serve)
    doc = validate(run(*WAIT, "-o", "json").json())
    assert doc["status"] == "warning" and doc["never_converged"] == "slurm-cpu-batch: READY 6/8"
    assert [(r["status"], r["never_converged"], r["symptoms"]) for r in doc["results"]] == [("warning", "READY 6/8", [])]


def test_the_page_of_a_wait_that_timed_out_says_what_the_target_waits_for(serve: Serve, clock: Clock, browser: Any,
                                                                          tmp_path: Path) -> None:
    pods_starting(serve)
    html = run(*WAIT, "-o", "html").out
    assert "looks right" not in html and embedded(html)["results"][0]["never_converged"] == "READY 6/8"
    show(browser, tmp_path, html)
    [target] = sections(browser)
    assert target.find_element(By.TAG_NAME, "h2").text.split()[0] == "WARNING"
    assert PENDING in [p.text for p in target.find_elements(By.CSS_SELECTOR, "p.banner")]
    assert_quiet(browser)


def test_a_target_with_rows_says_what_the_wait_ended_waiting_for(serve: Serve, clock: Clock) -> None:
    """two-problems, its squatter a Job's Pod (it may end): the wait runs its course beside the rows, which stay a
    check's, and the target's last line says what it still waited for."""
    squatter_ends(serve("two-problems"))
    r = run(*WAIT, "-o", "plain")
    pending = run(*WAIT, "-o", "json").json()["results"][0]["never_converged"]
    assert r.code == 1 and "waiting for ml-team/jupyter-alice-0" in pending, pending
    assert r.out.rstrip().endswith(f"not converged when --wait ended: {pending}"), r.out


def test_a_converged_wait_keeps_a_checks_words(serve: Serve, clock: Clock) -> None:
    serve("healthy-pool-name")
    plain, nagios, doc = (run("check", "--wait", "5s", "-o", o) for o in ("plain", "nagios", "json"))
    assert plain.code == 0 and "no symptoms: the binding looks right" in plain.out and "--wait" not in plain.out
    assert nagios.out.startswith("SUNKCHECK OK - 1 NodeSet(s) bound as intended |"), nagios.out
    assert "never_converged" not in doc.out
