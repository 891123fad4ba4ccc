"""What reaches a terminal: whatever string a row, a step, a note or the cluster wrote, no escape sequence, control,
Bidi override or invisible character reaches the table, plain, Nagios or explain output, and no such text breaks it."""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import json
import re
import shutil
import signal
import typing
from pathlib import Path
from typing import Any

import pytest

from sunkcheck import text
from sunkcheck.cli import MIN_WIDTH
from sunkcheck.model import Report, Status
from sunkcheck.render import Output, render
from sunkcheck.text import safe
from sunkcheck.pipeline import diagnose
from sunkcheck.snapshot import load
from sunkcheck.target import Target
from tests.conftest import CASES, FIXTURES, expected, run

# an OSC 52 clipboard write, a cursor move, an 8-bit CSI, a next line, a tab, a Bidi override, a zero-width space,
# a line separator, a word joiner and a tag character
PAYLOAD = "\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2A\x9b2J\x85\t\u202e\u200b\u2028\u2060\U000e0041z"
RICH_STYLE = re.compile(r"\x1b\[[0-9;]*m")  # the one sequence sunkcheck's own table writes: SGR (PAYLOAD holds none)
INVISIBLE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
                       "\U000e0000-\U000e007f]")
WIDTHS = (None, 60, 120)


def shown(text: str) -> str:
    """What a terminal is asked to act on in `text`: every control, override or invisible character left."""
    return "".join(INVISIBLE.findall(RICH_STYLE.sub("", text)))


def everywhere(value: Any) -> Any:
    """`value` with PAYLOAD in every string of it, at any depth (a multi-line fix or hint gets a line of it too)."""
    if isinstance(value, str):
        return value + ("\n" + PAYLOAD if "\n" in value else PAYLOAD)
    if isinstance(value, tuple):
        items = [everywhere(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: everywhere(getattr(value, f.name))
                                             for f in dataclasses.fields(value) if f.init})
    return value


def test_safe_shows_invisible_characters_and_drops_escapes() -> None:
    assert safe("a\u200bb\ufeffc\u2060d\U000e0041") == "a\\u200bb\\ufeffc\\u2060d\\U000e0041"
    assert safe("a\tb\u2028c\n") == "a?b\\u2028c\n"  # a break only sunkcheck writes: the newline
    assert safe("a\tb \u200b\u2028c", one_line=True) == "a b \\u200b c"
    assert safe("x\x1b]52;c;cm0=\x07\x1b[2Ay\u202e") == "xy?"
    plain = "already safe"
    assert safe(plain) is plain


def target(case: str) -> Target:
    """The case's target, as its flags name it."""
    args = expected(case)["args"]
    named = dict(zip(args[::2], args[1::2], strict=True))
    return Target(nodeset=named.get("--nodeset"), daemonset=named.get("--daemonset"), namespace=named.get("-n"),
                  pools=tuple(a for flag, a in itertools.pairwise(args) if flag == "--pool"))


def report(case: str) -> Report:
    return diagnose(load(FIXTURES / case), target(case))


@pytest.mark.parametrize("case", CASES)
def test_no_string_of_any_field_carries_a_control_to_a_terminal(case: str) -> None:
    """Every string of the report (names, pools, steps' summaries, rows' titles, causes, evidence and fixes, notes,
    errors, sources) with PAYLOAD in it: table, plain and Nagios print none of its controls."""
    hostile: Report = everywhere(report(case))
    for fmt in (Output.TABLE, Output.PLAIN, Output.NAGIOS):
        for width in WIDTHS if fmt is not Output.NAGIOS else (None,):
            out = render(hostile, fmt, width=width or 80 if fmt is Output.TABLE else width)
            assert "z" in out and shown(out) == "", (fmt, width, shown(out))


def hostile_snapshot(case: str, tmp: Path) -> Path:
    """`case` with PAYLOAD after every string the API server leaves free: every value of an affinity expression, a
    toleration or a taint (a NodeSet is a custom resource: even its label values go unvalidated), every Node Pool's
    instance type, and every message and reason."""
    def mutate(x: Any, key: str = "") -> Any:
        if isinstance(x, dict):
            return {k: mutate(v, k) for k, v in x.items()}
        if isinstance(x, list):
            return [mutate(v, key) for v in x]
        return x + PAYLOAD if isinstance(x, str) and key in FREE else x

    out = tmp / f"{case}-controls"
    shutil.copytree(FIXTURES / case, out)
    for path in out.glob("*.json"):
        if path.name != "expected.json":
            path.write_text(json.dumps(mutate(json.loads(path.read_text()))))
    return out


FREE = {"values", "value", "instanceType", "message", "reason"}


SNAPSHOT_CASES = ["several-nodesets", "misscheduled-beside-repair", "no-feasible-pool-typo", "nodeselector-ignored",
                  "labels-not-from-pool", "hostile-strings", "ds-untolerated-taint", "pool-below-target",
                  "no-feasible-hand-taint", "label-value-case"]


@pytest.mark.parametrize("case", SNAPSHOT_CASES)
def test_no_cluster_string_carries_a_control_to_a_terminal(case: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster whose affinity, toleration and taint values, messages and reasons hold PAYLOAD: check's table, plain
    and Nagios, and explain's Node list, print none of its controls (the pool's cause once printed an OSC 52 clipboard
    write raw), and a tab in a cause no longer ends the table in an internal error."""
    snap = str(hostile_snapshot(case, tmp_path))
    args = expected(case)["args"]
    reached = ""
    for width in ("60", "200"):
        monkeypatch.setenv("COLUMNS", width)
        for fmt in ("table", "plain", "nagios"):
            r = run("check", "--snapshot", snap, "-o", fmt, *args)
            assert r.code in (0, 1, 2) and "internal error" not in r.err and shown(r.out + r.err) == "", (fmt, r.err)
            reached += r.out
        for fmt in ("table", "plain"):
            listed = run("explain", "--snapshot", snap, "-o", fmt, *args)
            assert shown(listed.out + listed.err) == "", (fmt, listed.err)
            reached += listed.out
    assert "\\u200b" in reached  # the payload got through, shown


def test_a_tab_in_a_cause_is_shown_and_the_table_still_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nodeselector-ignored's cause quotes the NodeSet's affinity values (a custom resource's: unvalidated), here one
    with a tab and a zero-width space: the table printed "internal error: ValueError" and nothing else."""
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "nodeselector-ignored-shared-label", snap)
    doc = json.loads((snap / "nodesets.json").read_text())
    for term in doc["items"][0]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]:
        for e in term["matchExpressions"]:
            if e["key"] == "node.kubernetes.io/instance-type":
                e["values"] = [*e["values"], "a\tb\u200bc"]
    (snap / "nodesets.json").write_text(json.dumps(doc))
    for width in ("60", "80", "200"):
        monkeypatch.setenv("COLUMNS", width)
        for fmt in ("table", "plain"):
            r = run("check", "--snapshot", str(snap), "-o", fmt, *expected("nodeselector-ignored-shared-label")["args"])
            assert r.code == 2 and "internal error" not in r.err, r.err
            assert "a?b\\u200bc" in RICH_STYLE.sub("", r.out).replace("\n", " ")


MARKER = re.compile(r"Q([A-Za-z]+_[a-z_]+)Q")  # which type's field a string of `made` fills


def made(kind: Any, where: str = "") -> Any:
    """A value of the model type `kind` with every string in it its type and field (`QSymptom_fixQ`: the output is
    searched for it) then PAYLOAD, every tuple of one item and every optional value set: each field a report has."""
    if kind is str:
        return f"Q{where}Q{PAYLOAD}"
    if kind in (bool, int, float):
        return kind(1)
    if kind is datetime.datetime:
        return datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    if kind is Status:
        return Status.WARNING
    args = typing.get_args(kind)
    if typing.get_origin(kind) is tuple:
        return (made(args[0], where),) if args[1:] == (Ellipsis,) else tuple(made(a, where) for a in args)
    if args:  # a union: its first type but None
        return made(next(a for a in args if a is not type(None)), where)
    hints = typing.get_type_hints(kind)
    names = [f.name for f in dataclasses.fields(kind) if f.init] if dataclasses.is_dataclass(kind) else kind._fields
    return kind(**{name: made(hints[name], f"{kind.__name__}_{name}") for name in names})


# what the table, plain and Nagios outputs print of a report (`made`'s); the rest is no terminal's: the per-Node
# verdicts and the Nodes out of service (explain and JSON print them), a row's dead end and step, a source's type
PRINTED = {"Report_errors", "Report_checked_at", "Report_predicted_from", "Report_never_converged", "Unchecked_context",
           "Unchecked_error", "Source_context", "Source_server", "Source_path", "Source_recorded", "Result_kind",
           "Result_namespace", "Result_name", "Result_pools", "Result_pool_source", "Result_context", "Result_file",
           "Result_unconverged", "Step_name", "Step_summary", "Symptom_id", "Symptom_title", "Symptom_cause",
           "Symptom_fix", "Symptom_evidence", "Note_id", "Note_text", "Note_hint"}


def test_a_hostile_string_in_every_printed_field_is_made_inert() -> None:
    """Every field the terminal formats print, each holding PAYLOAD: none of its controls is printed, and each field is
    (so the check above reaches it). Two linted definitions, every context checked: the summary lists their files."""
    report = made(Report)
    linted = dataclasses.replace(report, results=report.results * 2, unchecked=())
    reached: set[str] = set()
    for fmt, shape in itertools.product((Output.TABLE, Output.PLAIN, Output.NAGIOS), (report, linted)):
        for width in WIDTHS if fmt is not Output.NAGIOS else (None,):
            out = render(shape, fmt, width=width or 80 if fmt is Output.TABLE else width)
            assert shown(out) == "", (fmt, width, shown(out))
            reached |= set(MARKER.findall(out))
    assert reached == PRINTED


def test_the_terminal_formats_make_inert_only_what_they_print(monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-Node verdicts and the Nodes out of service (thousands on a big pool), which no terminal format prints,
    are left out of what is made inert rather than walked."""
    walked: list[str] = []
    safe_of = text.safe

    def counted(value: object, *, one_line: bool = False) -> str:
        walked.extend(MARKER.findall(str(value)))
        return safe_of(value, one_line=one_line)

    monkeypatch.setattr(text, "safe", counted)
    report = made(Report)
    assert report.results[0].nodes[0].reasons and report.results[0].unready
    for fmt in (Output.TABLE, Output.PLAIN, Output.NAGIOS):
        render(report, fmt, width=80)
    assert {w.partition("_")[0] for w in walked} == {"Report", "Unchecked", "Source", "Result", "Step", "Symptom",
                                                     "DeadEnd", "Note"}


NOW = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")
NARROW = (("check", "--snapshot", str(FIXTURES / "two-tenants-share-pool"), "-A"),
          ("check", "--snapshot", str(FIXTURES / "hostile-strings"), "-A"),
          ("check", "--snapshot", str(FIXTURES / "foreign-pod-beside-other-nodesets"), "-A"),
          ("explain", "--snapshot", str(FIXTURES / "hostile-strings"), "-n", "tenant-slurm", "--node", "g10689d"),
          ("rules",))


@pytest.mark.parametrize("args", NARROW, ids=lambda args: "-".join(Path(a).name for a in args[:3]))
@pytest.mark.parametrize("fmt", ["table", "plain"])
def test_a_terminal_narrower_than_the_least_width_gets_that_width(args: tuple[str, ...], fmt: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: $COLUMNS 1 to 4 made the summary's records fold forever (a hang, memory growing), 5 to 9 an internal
    error (a negative width). Now every width below cli.MIN_WIDTH prints what that width prints, within a second."""
    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"COLUMNS={width}: no output within 5 s")

    args = (*args, "-o", fmt) if args[0] != "rules" else args
    previous = signal.signal(signal.SIGALRM, hung)
    try:
        printed = {}
        for width in range(MIN_WIDTH, 0, -1):
            monkeypatch.setenv("COLUMNS", str(width))
            signal.alarm(5)
            got = run(*args)
            signal.alarm(0)
            assert "internal error" not in got.err and got.code in (0, 1, 2), (width, got.err)
            printed[width] = NOW.sub("NOW", got.out)  # a recording without meta.json is told as read now
        assert all(out == printed[MIN_WIDTH] for out in printed.values())
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
