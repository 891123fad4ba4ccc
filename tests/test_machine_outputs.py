"""Machine outputs never go empty: every failure path of README's exit codes section still prints one
Monitoring Plugins status line (`-o nagios`) or one JSON document (`-o json`) on stdout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

import pytest

from tests.conftest import FIXTURES, TOKEN, Clock, Serve, run
from tests.kubeapi import kubeconfig
from tests.test_unattended import one_unreachable

FAILURES = {  # README "Exit codes": bad arguments, unreadable snapshot, an unreachable API
    "missing snapshot": ("--snapshot", "/nonexistent/snap"),
    "bad flags after parsing": ("--snapshot", str(FIXTURES / "two-problems"), "--nodeset", "a", "--daemonset", "b"),
    "bad duration": ("--snapshot", str(FIXTURES / "two-problems"), "--wait", "soon"),
    "unknown nodeset": ("--snapshot", str(FIXTURES / "two-problems"), "--nodeset", "nope"),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_nagios_always_prints_a_status_line(case: str) -> None:
    r = run("check", *FAILURES[case], "-o", "nagios")
    assert r.code == 3
    first = r.out.splitlines()[0]
    assert first.startswith("SUNKCHECK UNKNOWN - ") and len(first) > len("SUNKCHECK UNKNOWN - ")
    reason = r.err.removeprefix("sunkcheck: error: ").strip()
    assert reason and reason.split(" (")[0][:40] in first  # the reason, not a count
    assert r.err.startswith("sunkcheck: error: ")


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_json_always_prints_a_document(case: str) -> None:
    r = run("check", *FAILURES[case], "-o", "json")
    assert r.code == 3
    doc = r.json()
    assert doc["schema"] == "sunkcheck/check/v1" and doc["status"] == "unknown" and doc["results"] == []
    assert doc["errors"] == [r.err.removeprefix("sunkcheck: error: ").strip()]


def test_no_cluster_is_unknown_with_a_document(tmp_path: Path, no_backoff: None) -> None:
    config = kubeconfig(tmp_path / "dead", "https://127.0.0.1:9", token=TOKEN)
    for fmt in ("json", "nagios"):
        r = run("check", "--kubeconfig", str(config), "-o", fmt)
        assert r.code == 3 and "cannot reach the API server" in r.out, fmt
    assert json.loads(run("check", "--kubeconfig", str(config), "-o", "json").out)["status"] == "unknown"


def test_human_outputs_stay_off_stdout_on_bad_input() -> None:
    r = run("check", "--snapshot", "/nonexistent/snap", "-o", "plain")
    assert r.code == 3 and r.out == "" and r.err.startswith("sunkcheck: error: ")


def test_failed_textfile_write_makes_printed_status_and_exit_code_agree(tmp_path: Path) -> None:
    bad = tmp_path / "nope" / "x.prom"
    for fmt, status in (("json", lambda out: json.loads(out)["status"]), ("nagios", lambda out: out.split()[1])):
        r = run("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), "--textfile", str(bad), "-o", fmt)
        assert r.code == 3 and status(r.out).lower() == "unknown", fmt
        assert "--textfile" in r.out and "--textfile" in r.err


def test_nagios_names_each_context_and_the_unreachable_one(tmp_path: Path, cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch,
                                                          no_backoff: None) -> None:
    r, answer = one_unreachable(tmp_path, cert, monkeypatch, "nagios", "json")
    doc = answer.json()
    first = r.out.splitlines()[0].split(" | ")[0]
    assert first.startswith("SUNKCHECK UNKNOWN - ")
    assert "cluster-0/slurm-cpu-batch: replicas-cap" in first
    assert "context cluster-2: cannot reach" in first
    assert "cluster-1: 1 NodeSet(s) bound as intended" in first or first.endswith("; and 1 more healthy cluster")
    assert "NodeSet tenant-slurm/slurm-cpu-batch (context cluster-1): OK" in r.out
    assert any(e.startswith("context cluster-2: cannot reach") for e in doc["errors"])


def test_lint_json_on_unreadable_values(tmp_path: Path) -> None:
    bad = tmp_path / "values.yaml"
    bad.write_text("compute: [unclosed\n")
    r = run("lint", str(bad), "-o", "json")
    assert r.code == 3 and r.json()["status"] == "unknown" and str(bad) in r.json()["errors"][0]


def test_explain_json_on_bad_input() -> None:
    r = run("explain", "--snapshot", str(FIXTURES / "several-nodesets"), "--nodeset", "nope", "-o", "json")
    assert r.code == 3 and r.json()["status"] == "unknown" and "NodeSet nope not found" in r.json()["errors"][0]


def test_wait_that_never_converges_prints_the_status_it_exits_with(serve: Serve, clock: Clock) -> None:
    api = serve("healthy-pool-name")
    with api.state.lock:  # a healthy binding whose Pods are not all Ready yet
        api.state.objects["nodesets"][0]["status"]["numberReady"] = 6
    doc = run("check", "--wait", "400ms", "--interval", "200ms", "-o", "json")
    assert doc.code == 1 and doc.json()["status"] == "warning" and "READY 6/8" in doc.json()["never_converged"]
    nagios = run("check", "--wait", "400ms", "--interval", "200ms", "-o", "nagios")
    assert nagios.code == 1 and nagios.out.startswith("SUNKCHECK WARNING - ") and "never converged" in nagios.out


@pytest.mark.parametrize("command, module, function", [
    (("check", "--snapshot", str(FIXTURES / "two-problems")), "sunkcheck.runner", "diagnose"),
    (("explain", "--snapshot", str(FIXTURES / "two-problems"), "--nodeset", "slurm-cpu-batch"),
     "sunkcheck.pipeline", "explain"),
    (("lint", str(FIXTURES / "lint" / "values-gres-on-cpu.ok.yaml")), "sunkcheck.values.lint", "lint"),
])
def test_an_internal_error_still_prints_the_machine_document(monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...],
                                                             module: str, function: str) -> None:
    import importlib

    def broken(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError("a bug")

    monkeypatch.setattr(importlib.import_module(module), function, broken)
    formats = ("json", "nagios") if command[0] != "explain" else ("json",)
    for fmt in formats:
        r = run(*command, "-o", fmt)
        assert r.code == 3 and "internal error: RuntimeError: a bug" in r.err, fmt
        if fmt == "json":
            doc = r.json()
            assert doc["status"] == "unknown" and any("RuntimeError: a bug" in e for e in doc["errors"])
        else:
            assert r.out.startswith("SUNKCHECK UNKNOWN - ") and "RuntimeError: a bug" in r.out.splitlines()[0]


def test_ctrl_c_is_unknown_with_its_machine_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """typer turns Ctrl-C into exit 130; a monitor gets the plugin's UNKNOWN (3) and its status line."""
    from sunkcheck import runner

    def interrupted(*args: object, **kwargs: object) -> NoReturn:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "check", interrupted)
    r = run("check", "--snapshot", str(FIXTURES / "two-problems"), "-o", "nagios")
    assert (r.code, r.err) == (3, "sunkcheck: interrupted\n")
    assert r.out.startswith("SUNKCHECK UNKNOWN - interrupted")
