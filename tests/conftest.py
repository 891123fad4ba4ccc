"""Shared helpers: run the CLI in-process exactly as the console script does, find fixture cases, serve them from
the test API server, and drive a real browser (Debian's chromium and chromedriver: tests/install-deps.sh)."""

from __future__ import annotations

import datetime
import functools
import io
import json
import re
import signal
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import typer.main as typer_main
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service as ChromeDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from sunkcheck.cli import main
from sunkcheck.model import Result
from sunkcheck.pipeline import diagnose
from sunkcheck.snapshot import Snapshot
from sunkcheck.snapshot import load as load_snapshot
from sunkcheck.target import Target
from tests.kubeapi import FakeApi, kubeconfig, make_cert

# sunkcheck keeps a SIGHUP its parent ignores ignored (as nohup asks); the tests that send SIGHUP to a sunkcheck they
# start need it not ignored, whatever started the suite (`nohup .ci/run` made those children ignore it)
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
ALL_CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").exists())


RECORDED = datetime.datetime(2026, 11, 29, 9, 12, 40, tzinfo=datetime.UTC)
"""When the dated fixtures were recorded (their meta.json): a scale-up's Pods and Nodes seconds old then."""


def judged(snap: Snapshot, at: datetime.datetime | None = RECORDED) -> Result:
    """The snapshot's one target diagnosed at the cluster's time `at` (None: not known), which both clocks read: a
    Node's age and the slurmd graces."""
    [result] = diagnose(replace(snap, server_time=at, grace_time=at), Target()).results
    return result


def expected(case: str) -> dict:
    return json.loads((FIXTURES / case / "expected.json").read_text())


# A case whose flags are refused before any diagnosis (exit 3, one line on stderr) expects that line; the
# others expect a diagnosis.
USAGE_CASES = [c for c in ALL_CASES if "usage_error" in expected(c)]
CASES = [c for c in ALL_CASES if c not in USAGE_CASES]


PROVENANCE = ("sunkcheck", "checked_at", "sources", "prediction", "predicted_from")
WHERE = re.compile(r" on context \S+ \(https?://[^)]*\)")
"""Where a live error was read ("on context test (https://...)"), which a replay of its snapshot cannot say."""


def unplaced(text: str) -> str:
    return WHERE.sub("", text)


@dataclass
class Run:
    code: int | str | None  # as SystemExit carries it: main exits with a number
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)

    def verdict(self) -> dict:
        """The JSON without where and when it was checked: a live run and its replay give the same verdict."""
        doc = {k: v for k, v in self.json().items() if k not in PROVENANCE}
        return doc | {"errors": [unplaced(e) for e in doc.get("errors", [])]}


def run(*args: str) -> Run:
    """`sunkcheck ARGS` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit) as exited:
        main(list(args))
    return Run(exited.value.code, out.getvalue(), err.getvalue())


@functools.cache
def replayed(case: str) -> Run:
    """`check --snapshot CASE -o json` with the case's own flags, run once per process: a recorded case never
    changes and a dozen tests read its report (each parses its own copy). Not for a test that patches sunkcheck."""
    return run("check", "--snapshot", str(FIXTURES / case), "-o", "json", *expected(case)["args"])


@pytest.fixture(autouse=True, scope="session")
def cli_built_once() -> Iterator[None]:
    """typer builds sunkcheck's click command from the app's functions each time the app is called (half of an
    in-process replay): a process calls it once, the suite thousands of times. Built once per process and reused:
    click gives each run a fresh context, and the functions, options and defaults it is built from never change."""
    from sunkcheck.cli import app

    built, build = typer_main.get_command(app), typer_main.get_command
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer_main, "get_command", lambda typer: built if typer is app else build(typer))
        yield


@pytest.fixture(autouse=True)
def no_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test inherits a terminal size from whatever runs it (pytest-xdist's workers start with COLUMNS=80 and
    LINES=24, which wrap plain output): a test about a width sets $COLUMNS itself."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


TOKEN = "sunkcheck-test-token"
Serve = Callable[..., FakeApi]
"""The `serve` fixture: serves a fixture case (by name) or a snapshot; the test API server."""


class Clock:
    """A virtual clock for `--wait`: sleep() advances it at once (after `on_sleep`), so a run polls a number of
    times set by --wait and --interval alone, however slow the machine."""

    def __init__(self, on_sleep: Callable[[], None] = lambda: None) -> None:
        self.now, self.on_sleep = 0.0, on_sleep

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.on_sleep()
        self.now += seconds

    def changed(self, cache: Any, seconds: float) -> bool:
        """A watched --wait's wait for a change: `seconds` pass at once (after `on_sleep`), then whether one came
        meanwhile (its watch event given a moment of real time to arrive)."""
        self.sleep(seconds)
        return bool(cache.take(0.3))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The runner's clock, virtual (see Clock)."""
    from sunkcheck import runner
    from sunkcheck.serve import wait

    virtual = Clock()
    monkeypatch.setattr(runner, "time", virtual)
    monkeypatch.setattr(wait, "time", virtual)  # the wait on watches keeps the same clock
    monkeypatch.setattr(wait, "_changed", virtual.changed)
    return virtual


def wait_through(api: FakeApi, clock: Clock, after: Snapshot, polls: int = 2) -> tuple[str, int]:
    """`check --wait 60s --interval 5s -o json` against `api`, which serves `after` from the wait's `polls`th sleep on
    (a change the wait must see, on its watches or by polling), asserted to end converged and OK: its progress lines
    (stderr), and how many times it slept."""
    slept = 0

    def change() -> None:
        nonlocal slept
        slept += 1
        if slept == polls:
            api.state.load(after)

    clock.on_sleep = change
    r = run("check", "--wait", "60s", "--interval", "5s", "-o", "json")
    assert (r.code, r.json()["status"]) == (0, "ok"), r.err
    return r.err, slept


@pytest.fixture(scope="session")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return make_cert(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def serve(cert: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Serve]:
    """Start a test API server for a fixture case and point $KUBECONFIG at it; yields the FakeApi."""
    servers: list[FakeApi] = []

    def start(case: str | Snapshot, **kwargs: Any) -> FakeApi:
        """A fixture case by name, or a snapshot a test made."""
        served = load_snapshot(FIXTURES / case) if isinstance(case, str) else case
        api = FakeApi(served, cert=cert, token=TOKEN, **kwargs).__enter__()
        servers.append(api)
        api.kubeconfig = kubeconfig(tmp_path / f"kubeconfig-{len(servers)}", api.url, token=TOKEN, ca=cert[0])
        monkeypatch.setenv("KUBECONFIG", str(api.kubeconfig))
        return api

    yield start
    for api in servers:
        api.__exit__(None, None, None)


def squatter_ends(api: FakeApi) -> FakeApi:
    """The served two-problems with its squatter (ml-team/jupyter-alice-0) a Job's Pod, which may end by itself: a
    wait on it runs its course (a StatefulSet's, as recorded, never leaves, and `--wait` stops at once)."""
    with api.state.lock:
        pod = next(p for p in api.state.objects["pods"] if p["metadata"]["name"] == "jupyter-alice-0")
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "jupyter-alice",
                                               "uid": "9916a5fb-8a8d-51c1-412e-88aed98e4405", "controller": True}]
    return api



# --- a real browser (tests/test_html.py, tests/test_serve.py) ----------------------------------------------

@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=ChromeDriver("/usr/bin/chromedriver"))  # never a downloaded one
    yield driver
    driver.quit()


def wait_for(driver: Any, condition: Callable[[Any], Any], timeout: float = 15) -> Any:
    """`condition` once true; an element redrawn between finding it and reading it is looked for again."""
    redrawn = (StaleElementReferenceException,)
    return WebDriverWait(driver, timeout, poll_frequency=0.1, ignored_exceptions=redrawn).until(condition)


def sections(driver: Any) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, "section.target")


def assert_quiet(driver: Any) -> None:
    """No alert opened, nothing logged as an error (a script error, a resource or a policy refused)."""
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.accept()
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries of a dropped or refused connection sent at once: a test about what an unreachable server means,
    not about when the retries are sent, need not wait out their backoff (about two seconds a run)."""
    from sunkcheck.collect import kube

    monkeypatch.setattr(kube, "_backoff", lambda attempt: 0.0)
