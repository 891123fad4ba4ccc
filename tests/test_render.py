"""Renderers: golden plain and JSON output, untrusted text stays text, NO_COLOR honoured."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from sunkcheck import snapshot
from sunkcheck.model import Report, Symptom
from sunkcheck.pipeline import diagnose
from sunkcheck.render import Output, render
from sunkcheck.render.json import _indented
from sunkcheck.target import Target
from tests.conftest import FIXTURES, ROOT, run

GOLDEN = ROOT / "tests" / "golden"
GOLDEN_CASES = ("two-problems", "healthy-dedicated")


def report(case: str) -> Report:
    return diagnose(snapshot.load(FIXTURES / case), Target())


def laid_out(r: Report) -> Report:
    """The report with each row's cause, fix and evidence replaced by stand-ins shaped like them (a fix's prose line,
    YAML snippet and command line; two evidence lines): the golden files pin the layout, not the wording, which the
    fixtures' needles check (tests/test_fixtures.py)."""
    def stand_in(s: Symptom) -> Symptom:
        fix = f"{s.id} fix: add this entry:\n- key: example.com/key\n  operator: Exists\nthen run:\nkubectl describe node n1"
        return replace(s, cause=f"{s.id} cause.", fix=fix, evidence=(f"{s.id} evidence 1", f"{s.id} evidence 2"))
    return replace(r, results=tuple(replace(x, symptoms=tuple(map(stand_in, x.symptoms))) for x in r.results))


@pytest.mark.parametrize("case", GOLDEN_CASES)
@pytest.mark.parametrize("output, suffix", [(Output.PLAIN, "txt"), (Output.JSON, "json")])
def test_golden(case: str, output: Output, suffix: str) -> None:
    """Set UPDATE_GOLDEN=1 to rewrite after an intended change, then review the diff."""
    text = render(laid_out(report(case)), output)
    path = GOLDEN / f"{case}.{suffix}"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_json_is_indented_like_json_dumps_except_one_line_per_node() -> None:
    doc = {"a": [1, {"b": {}, "c": [], "d": "é\u001b"}], "n": 1.5, "t": None,
           "nodes": [{"name": "x", "reasons": [{"check": "taint", "detail": "é"}]}, {"name": "y", "reasons": []}]}
    text = _indented(doc)
    assert json.loads(text) == doc
    rest = {k: v for k, v in doc.items() if k != "nodes"}
    assert _indented(rest) == json.dumps(rest, indent=2, ensure_ascii=False)
    assert text.splitlines()[-4:-1] == ['    {"name": "x", "reasons": [{"check": "taint", "detail": "é"}]},',
                                        '    {"name": "y", "reasons": []}', "  ]"]


def test_json_matches_the_check_schema_shape() -> None:
    doc = json.loads(render(report("two-problems"), Output.JSON))
    assert doc["schema"] == "sunkcheck/check/v1"
    assert set(doc) == {"schema", "status", "results", "errors", "sunkcheck", "sources", "prediction"}
    result = doc["results"][0]
    assert {"kind", "namespace", "name", "pools", "status", "steps", "symptoms", "nodes"} <= set(result)
    assert [s["name"] for s in result["steps"]] == ["nodepool", "nodes", "events", "nodeset", "pods", "sinfo"]
    assert set(result["symptoms"][0]) >= {"id", "severity", "title", "cause", "fix", "evidence"}
    node = next(n for n in result["nodes"] if not n["feasible"])
    assert set(node) == {"name", "pool", "feasible", "placed", "reasons"}
    assert node["reasons"][0]["check"] == "resources"


ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\x1b\]|\x07")


@pytest.mark.parametrize("output", [Output.PLAIN, Output.TABLE])
def test_untrusted_text_stays_text(output: Output) -> None:
    text = render(report("hostile-strings"), output, width=200)
    assert "label is '[red]pwned[/red]<img src=x onerror=alert(1)>'" in text  # markup printed literally, not interpreted
    if output is Output.PLAIN:
        assert not ESCAPE.search(text)
    else:  # rich's own styling only: no cursor moves, screen clears, blink or hyperlinks from the cluster
        assert not re.search(r"\x1b\[[0-9;]*[HJ]|\x1b\[5m|\x1b\]8;|\x07", text)
    assert "NoFeasible" in text


def test_json_escapes_control_characters() -> None:
    text = render(report("hostile-strings"), Output.JSON)
    assert "\x1b" not in text  # JSON keeps the data exact but escaped
    assert "\\u001b[2J" in text


# C1 controls (U+009B is an 8-bit CSI, U+0085 a next line), DEL, a bidi override and a line separator:
# json.dumps(ensure_ascii=False) writes them raw, and `jq -r` passes them on to a terminal
RAW = "\x9b\x85\x7f\u202e\u2028"


def strings(doc: object) -> Iterator[str]:
    """Every string in a decoded JSON document."""
    if isinstance(doc, str):
        yield doc
    for item in doc.values() if isinstance(doc, dict) else doc if isinstance(doc, list) else ():
        yield from strings(item)


def test_json_escapes_what_a_terminal_would_act_on_and_keeps_the_data(tmp_path: Path) -> None:
    """Free text reaches `check` JSON raw (an Event's reason), a label value `explain` JSON (a Node's pool)."""
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "hostile-strings", snap)
    reason, pool = f"NoFeasible{RAW}!", f"cpu-control-plane{RAW}"
    events = json.loads((snap / "events.json").read_text())
    events["items"][1]["reason"] = reason
    nodes = json.loads((snap / "nodes.json").read_text())
    nodes["items"][0]["metadata"]["labels"]["compute.coreweave.com/node-pool"] = pool
    for stem, doc in (("events", events), ("nodes", nodes)):
        (snap / f"{stem}.json").write_text(json.dumps(doc))
    escaped = "\\u009b\\u0085\\u007f\\u202e\\u2028"
    for command, shown in (("check", reason), ("explain", pool)):
        out = run(command, "--snapshot", str(snap), "-o", "json").out
        assert not set(RAW) & set(out)
        assert shown.replace(RAW, escaped) in out
        assert any(shown in text for text in strings(json.loads(out)))  # the decoded value is the cluster's


def test_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    text = render(report("no-feasible-nodes"), Output.TABLE)
    assert "no-feasible-nodes" in text
    assert not re.search(r"\x1b\[[0-9;]*3[0-7]m", text)  # no foreground colours


def test_colour_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert re.search(r"\x1b\[[0-9;]*31m", render(report("no-feasible-nodes"), Output.TABLE))


WRAPPED_CASES = ("two-problems", "misscheduled", "labels-not-from-pool", "no-feasible-daemon-holds-gpus", "healthy-idle-pool",
                 "pool-split")
COMMAND = re.compile(r"(kubectl|scontrol|squeue|sinfo|sunkcheck|helm|ssh) [a-z-]")
YAML = re.compile(r"- |[\w./-]+:( |$)")


def _text(out: str) -> str:
    """The words of a report, without its table rules, the time it was checked (they differ by run) and the comment
    marks of a fix's words (a line's own, wherever it wraps)."""
    return " ".join(w for w in re.sub(r"checked\s+\S+;", "", out).split() if set(w) != {"-"} and w != "#")


def _commands(out: str) -> list[str]:
    """The command lines of fixes and hints (indented, the first under `fix:`)."""
    return [m[1] for line in out.splitlines() if (m := re.match(r"\s+(?:fix:\s+)?(\S.*)", line)) and COMMAND.match(m[1])]


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("case", WRAPPED_CASES)
def test_plain_details_fit_columns_without_losing_a_word_or_breaking_a_command(
        monkeypatch: pytest.MonkeyPatch, case: str, columns: int) -> None:
    """Main fitted only the summary to $COLUMNS: steps, causes, evidence and a fix's words ran past it."""
    monkeypatch.delenv("COLUMNS", raising=False)
    piped = run("check", "--snapshot", str(FIXTURES / case), "-o", "plain").out
    monkeypatch.setenv("COLUMNS", str(columns))
    fitted = run("check", "--snapshot", str(FIXTURES / case), "-o", "plain").out
    for line in fitted.splitlines()[1:]:  # the headline stays one line
        body = re.sub(r"^\s*(fix:)?\s*", "", line)
        # past the width only a command or YAML line, printed as written, or a word longer than the line
        assert len(line) <= columns or COMMAND.match(body) or YAML.match(body) or max(map(len, line.split())) > columns // 2, line
    assert _text(fitted) == _text(piped)
    assert _commands(fitted) == _commands(piped)  # each command whole, on a line of its own
    assert fitted != piped


@pytest.mark.parametrize("output", ["plain", "table"])
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_deep_view_of_a_node_fits_columns(monkeypatch: pytest.MonkeyPatch, columns: int, output: str) -> None:
    """The terminal's deep view printed each comparison on one line, which the terminal broke mid-word."""
    args = ("explain", "--snapshot", str(FIXTURES / "no-feasible-nodes"), "--node", "g18d510")
    checks = run(*args, "-o", "json").json()["node"]["checks"]
    monkeypatch.setenv("COLUMNS", str(columns))
    lines = re.sub(r"\x1b\[[0-9;]*m", "", run(*args, "-o", output).out).splitlines()
    assert max(map(len, lines)) <= columns, "\n".join(line for line in lines if len(line) > columns)
    text = " ".join(" ".join(lines).split())
    for c in checks:
        assert f"{'ok' if c['ok'] else 'FAIL'} {c['check']} {c['subject']}" in text
        assert f"wanted: {' '.join(c['wanted'].split())} found: {' '.join(c['found'].split())}" in text


@pytest.mark.parametrize("width", [60, 80])
def test_a_target_name_too_long_for_its_rule_is_printed_whole_above_it(width: int) -> None:
    """rich cut a title longer than its rule with an ellipsis: the context, the name the reader needs, was lost."""
    context = "a-very-long-context-name-of-the-production-cluster"
    r = report("two-problems")
    r = replace(r, results=tuple(replace(x, context=context) for x in r.results))
    text = re.sub(r"\x1b\[[0-9;]*m", "", render(r, Output.TABLE, width=width))
    assert "…" not in text
    assert f"NodeSet tenant-slurm/slurm-cpu-batch (context {context}) WARNING" in " ".join(text.split())


def test_nagios_never_calls_a_cluster_that_never_converged_healthy() -> None:
    """A --wait that timed out on its one target: the status line names what never converged, and neither says its
    cluster is healthy nor counts it as one without symptoms (it is still waiting)."""
    joining = "; ".join(f"g{n:06x} registered 2026-12-05T07:00:59Z, not Ready (Ready=False: KubeletNotReady)"
                        for n in range(3))
    waited = f"3 Nodes joining ({joining})"
    healthy = report("healthy-pool-name")
    timed_out = replace(healthy, never_converged=f"slurm-cpu-batch: {waited}",
                        results=tuple(replace(r, unconverged=waited) for r in healthy.results))
    line = render(timed_out, Output.NAGIOS).splitlines()[0].split(" | ")[0]
    assert line.startswith("SUNKCHECK WARNING - never converged: slurm-cpu-batch: 3 Nodes joining")
    assert "symptoms" not in line and "healthy" not in line and "bound as intended" not in line, line


def test_nagios_calls_only_the_clusters_a_wait_converged_on_healthy() -> None:
    """Two clusters, the wait ended still waiting on one: the other, converged with no symptom, is bound as intended."""
    healthy = report("healthy-pool-name")
    [a] = [replace(r, context="a", unconverged="READY 6/8") for r in healthy.results]
    [b] = [replace(r, context="b") for r in healthy.results]
    waited = replace(healthy, results=(a, b), never_converged="slurm-cpu-batch: READY 6/8")
    line = render(waited, Output.NAGIOS).splitlines()[0].split(" | ")[0]
    assert line == "SUNKCHECK WARNING - never converged: slurm-cpu-batch: READY 6/8; b: 1 NodeSet(s) bound as intended"
