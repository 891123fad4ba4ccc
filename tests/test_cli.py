"""The command line: version, help, rules, exit codes for usage errors, suppressions, the console script."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sunkcheck import __version__
from sunkcheck.render.rules import markdown
from tests.conftest import FIXTURES, ROOT, run


def test_version() -> None:
    r = run("--version")
    assert r.code == 0 and r.out.strip() == f"sunkcheck {__version__}"


def test_help_documents_exit_codes() -> None:
    for args in (["--help"], ["check", "--help"]):
        r = run(*args)
        assert r.code == 0
        assert "0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN" in " ".join(r.out.split())


def test_usage_errors_are_unknown_not_click_2() -> None:
    for args in (["check", "--snapshot"], ["check", "--no-such-flag"], ["check", "--snapshot", ".", "-o", "xml"],
                 ["nosuchcommand"]):
        r = run(*args)
        assert r.code == 3, args
        assert r.err.startswith("sunkcheck: error: ") and "Traceback" not in r.err


def test_ignore_marks_symptoms_suppressed_without_hiding_them() -> None:
    r = run("check", "--snapshot", str(FIXTURES / "replicas-cap"), "-o", "json", "--ignore", "replicas-cap")
    symptoms = r.json()["results"][0]["symptoms"]
    assert [(s["id"], s["suppressed"]) for s in symptoms] == [("replicas-cap", True)]
    assert r.code == 0 and r.json()["status"] == "ok"


def test_suppressing_a_row_lets_the_rows_it_explained_through() -> None:
    r = run("check", "--snapshot", str(FIXTURES / "pool-labels-missing"), "-o", "json", "--ignore", "pool-labels-missing")
    ids = {s["id"]: s["suppressed"] for s in r.json()["results"][0]["symptoms"]}
    assert ids == {"pool-labels-missing": True, "no-feasible-nodes": False}
    assert r.code == 2


def test_ignore_rejects_unknown_ids() -> None:
    r = run("check", "--snapshot", str(FIXTURES / "replicas-cap"), "--ignore", "replica-cap")
    assert r.code == 3 and "unknown symptom id(s) replica-cap" in r.err


def test_rules_lists_every_id() -> None:
    from sunkcheck.symptoms.nodeset import RULES

    r = run("rules", "-o", "plain")
    assert r.code == 0
    for rule in RULES:
        assert rule.id in r.out


def test_readme_symptom_table_is_the_rules_table() -> None:
    readme = (ROOT / "README.md").read_text()
    assert markdown() in readme, "README's symptom table is stale: paste `sunkcheck rules -o markdown`"


def test_installed_console_script_runs_out_of_process() -> None:
    exe = shutil.which("sunkcheck")
    assert exe, "install the package first: pip install -e '.[test]'"
    p = subprocess.run([exe, "check", "--snapshot", str(FIXTURES / "no-feasible-nodes")],
                       capture_output=True, text=True, check=False)
    assert p.returncode == 2
    assert "CRITICAL no-feasible-nodes" in p.stdout  # piped: plain output


@pytest.mark.parametrize("args, used", [(["--help"], []), (["check", "--help"], []), (["lint", "--help"], []),
                                        (["rules", "-o", "plain"], []),
                                        (["check", "--snapshot", str(FIXTURES / "healthy-dedicated"), "-o", "json"], []),
                                        (["check", "--snapshot", str(FIXTURES / "two-problems"), "-n", "tenant-slurm",
                                          "--ignore", "replicas-cap", "-o", "json"], ["yaml"])])
def test_help_rules_and_replays_do_not_import_the_clients(args: tuple[str, ...], used: list[str]) -> None:
    """Keep --help fast: the kubernetes client, paramiko (and sunkcheck's SSH modules) and YAML are imported only
    when used (YAML by a replay whose fix prints a values snippet: pool-split's here), and pydantic never (typer
    0.29 validates every option through it: +0.14 s a run, hence typer<0.29)."""
    code = ("import sys; from sunkcheck.cli import main\n"
            f"try: main({args!r})\nexcept SystemExit: pass\n"
            "print(sorted(m for m in ('kubernetes', 'paramiko', 'sunkcheck.collect.sinfo', 'sunkcheck.collect.ssh', "
            "'yaml', 'pydantic') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip().splitlines()[-1] == repr(used)


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    command = next(line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pytest" in line)
    assert command in readme


def test_a_closed_pipe_is_unknown_not_a_warning() -> None:
    """Nothing was delivered: exit 3 (UNKNOWN), whatever the report said, quietly."""
    p = subprocess.Popen([sys.executable, "-m", "sunkcheck", "check", "--snapshot", str(FIXTURES / "healthy-pool-name"),
                          "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    assert p.wait(timeout=60) == 3
    assert p.stderr.read() == b""


def test_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    """`sunkcheck ... | head -1` on a large report: no traceback or 'Exception ignored' noise."""
    script = tmp_path / "pipe.sh"
    script.write_text(f"{sys.executable} -m sunkcheck rules -o json | head -c 10 > /dev/null\n"
                      f"{sys.executable} -m sunkcheck check --snapshot {FIXTURES / 'several-nodesets'} -o json"
                      " | head -c 10 > /dev/null\n")
    p = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr


ENTRY = "from sunkcheck.cli import entry; entry()"


def executable(*args: str) -> tuple[int, str, str]:
    """The console script as installed (`sunkcheck = sunkcheck.cli:entry`), this checkout's, in its own process."""
    p = subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, text=True, timeout=120, check=False,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"})
    return p.returncode, p.stdout, p.stderr


def same_run(out: str) -> str:
    """A run's output without when it ran."""
    return re.sub(r'("checked_at": "|checked )[0-9]{4}-[0-9-]+T[0-9:.+Z-]*', r"\1", out)  # wrapped or not


@pytest.mark.parametrize("args", [
    ("check", "--snapshot", str(FIXTURES / "two-problems"), "-o", "json"),
    ("check", "--snapshot", str(FIXTURES / "two-problems"), "-o", "nagios"),
    ("explain", "--snapshot", str(FIXTURES / "healthy-pool-name"), "-o", "plain"),
    ("check", "--snapshot", str(FIXTURES / "two-problems"), "--nodeset", "no-such", "-o", "json"),
    ("check", "--wait", "1s", "--snapshot", str(FIXTURES / "two-problems")),
])
def test_the_executable_is_main_with_a_fast_exit(args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """What the tests call (main) and what users run (entry) print the same and end with the same code."""
    monkeypatch.setenv("COLUMNS", "100")
    r = run(*args)
    code, out, err = executable(*args)
    assert (code, same_run(out), err) == (r.code, same_run(r.out), r.err)


def test_main_keeps_nothing_from_one_run_for_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """A program may call main again and again: runs in one process print what each prints in a process of its
    own, whatever ran before (another snapshot, another format, a failure)."""
    monkeypatch.setenv("COLUMNS", "100")
    runs = [("check", "--snapshot", str(FIXTURES / "two-problems"), "-o", "json"),
            ("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), "-o", "plain"),
            ("check", "--snapshot", str(FIXTURES / "no-such-fixture"), "-o", "json"),
            ("explain", "--snapshot", str(FIXTURES / "two-problems"), "-o", "json"),
            ("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), "-o", "json")]
    together = [run(*args) for args in runs]
    apart = [executable(*args) for args in runs]
    assert [(r.code, same_run(r.out), r.err) for r in together] == [(c, same_run(o), e) for c, o, e in apart]
    assert len({r.out for r in together}) == len(runs)  # each run printed its own
