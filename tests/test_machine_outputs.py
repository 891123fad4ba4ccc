"""Machine outputs never go empty: every failure path of README's exit codes section still prints one
Monitoring Plugins status line (`-o nagios`) or one JSON document (`-o json`) on stdout."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, TOKEN, run
from tests.kubeapi import kubeconfig
from tests.test_unattended import two_clusters

FAILURES = {  # README "Exit codes": bad arguments, unreadable snapshot, an unreachable API
    "missing snapshot": ("--snapshot", "/nonexistent/snap"),
    "bad flags after parsing": ("--snapshot", str(FIXTURES / "two-problems"), "--nodeset", "a", "--daemonset", "b"),
    "bad duration": ("--snapshot", str(FIXTURES / "two-problems"), "--wait", "soon"),
    "unknown nodeset": ("--snapshot", str(FIXTURES / "two-problems"), "--nodeset", "nope"),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_nagios_always_prints_a_status_line(case):
    r = run("check", *FAILURES[case], "-o", "nagios")
    assert r.code == 3
    first = r.out.splitlines()[0]
    assert first.startswith("SUNKCHECK UNKNOWN - ") and len(first) > len("SUNKCHECK UNKNOWN - ")
    reason = r.err.removeprefix("sunkcheck: error: ").strip()
    assert reason and reason.split(" (")[0][:40] in first  # the reason, not a count
    assert r.err.startswith("sunkcheck: error: ")


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_json_always_prints_a_document(case):
    r = run("check", *FAILURES[case], "-o", "json")
    assert r.code == 3
    doc = r.json()
    assert doc["schema"] == "sunkcheck/check/v1" and doc["status"] == "unknown" and doc["results"] == []
    assert doc["errors"] == [r.err.removeprefix("sunkcheck: error: ").strip()]


def test_no_cluster_is_unknown_with_a_document(tmp_path, no_backoff):
    config = kubeconfig(tmp_path / "dead", "https://127.0.0.1:9", token=TOKEN)
    for fmt in ("json", "nagios"):
        r = run("check", "--kubeconfig", str(config), "-o", fmt)
        assert r.code == 3 and "cannot reach the API server" in r.out, fmt
    assert json.loads(run("check", "--kubeconfig", str(config), "-o", "json").out)["status"] == "unknown"


def test_human_outputs_stay_off_stdout_on_bad_input():
    r = run("check", "--snapshot", "/nonexistent/snap", "-o", "plain")
    assert r.code == 3 and r.out == "" and r.err.startswith("sunkcheck: error: ")


def test_failed_textfile_write_makes_printed_status_and_exit_code_agree(tmp_path):
    bad = tmp_path / "nope" / "x.prom"
    for fmt, status in (("json", lambda out: json.loads(out)["status"]), ("nagios", lambda out: out.split()[1])):
        r = run("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), "--textfile", str(bad), "-o", fmt)
        assert r.code == 3 and status(r.out).lower() == "unknown", fmt
        assert "--textfile" in r.out and "--textfile" in r.err


def test_nagios_names_each_context_and_the_unreachable_one(tmp_path, cert, monkeypatch, no_backoff):
    config, apis = two_clusters(tmp_path, cert, "replicas-cap", "healthy-pool-name", "healthy-pool-name")
    apis[2].__exit__(None, None, None)  # cluster-2 goes away
    monkeypatch.setenv("KUBECONFIG", str(config))
    try:
        r = run("check", "--all-contexts", "-o", "nagios")
        doc = run("check", "--all-contexts", "-o", "json").json()
    finally:
        for api in apis[:2]:
            api.__exit__(None, None, None)
    first = r.out.splitlines()[0].split(" | ")[0]
    assert first.startswith("SUNKCHECK UNKNOWN - ")
    assert "cluster-0/slurm-cpu-batch: replicas-cap" in first
    assert "context cluster-2: cannot reach" in first
    assert "cluster-1: 1 NodeSet(s) bound as intended" in first or first.endswith("; and 1 more healthy cluster")
    assert "NodeSet tenant-slurm/slurm-cpu-batch (context cluster-1): OK" in r.out
    assert any(e.startswith("context cluster-2: cannot reach") for e in doc["errors"])


def test_lint_json_on_unreadable_values(tmp_path):
    bad = tmp_path / "values.yaml"
    bad.write_text("compute: [unclosed\n")
    r = run("lint", str(bad), "-o", "json")
    assert r.code == 3 and r.json()["status"] == "unknown" and str(bad) in r.json()["errors"][0]


def test_explain_json_on_bad_input():
    r = run("explain", "--snapshot", str(FIXTURES / "several-nodesets"), "--nodeset", "nope", "-o", "json")
    assert r.code == 3 and r.json()["status"] == "unknown" and "NodeSet nope not found" in r.json()["errors"][0]


def test_wait_that_never_converges_prints_the_status_it_exits_with(serve, clock):
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
def test_an_internal_error_still_prints_the_machine_document(monkeypatch, command, module, function):
    import importlib

    def broken(*args, **kwargs):
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


def test_ctrl_c_is_unknown_with_its_machine_output(monkeypatch):
    """typer turns Ctrl-C into exit 130; a monitor gets the plugin's UNKNOWN (3) and its status line."""
    from sunkcheck import runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "check", interrupted)
    r = run("check", "--snapshot", str(FIXTURES / "two-problems"), "-o", "nagios")
    assert (r.code, r.err) == (3, "sunkcheck: interrupted\n")
    assert r.out.startswith("SUNKCHECK UNKNOWN - interrupted")
