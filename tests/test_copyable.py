"""Fixes you can copy: commands and YAML printed whole, outside any border, at 80 columns as at 200;
`rules` ids whole; `rules ID` one row in full; `explain --node` never cuts a label key."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from sunkcheck import snapshot
from sunkcheck.bounds import unasked
from sunkcheck.symptoms.fixes import steps
from sunkcheck.symptoms.table import LINT_RULES, RULES
from sunkcheck.target import Target
from sunkcheck.text import safe
from tests.conftest import CASES, FIXTURES, replayed, run

ANSI = re.compile(r"\x1b\[[0-9;]*m")
BORDERS = set("│┃╭╮╰╯─━┏┓┗┛┡┩╇┳┻┠┨")


def plain_lines(text: str) -> list[str]:
    return [ANSI.sub("", line) for line in text.splitlines()]


FIX_CASES = [c for c in CASES if any(r["symptoms"] for r in replayed(c).json()["results"])]


def words(text: str) -> str:
    return " ".join(text.split())


def indent(line: str) -> int:
    return len(line) - len(line.lstrip())


@pytest.mark.parametrize("width", [60, 80, 200])
@pytest.mark.parametrize("case", CASES)
def test_the_terminal_report_fits_its_width_between_words_and_prints_each_command_whole(
        case: str, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns (60 on a phone) the terminal broke the report's long lines mid-word: each line now fits, broken
    between words only; each command and line of YAML is printed whole on a line of its own, outside any border, set
    in deeper than the words around it, a command in bold; and no word of a row is lost."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", str(width))
    args = ("check", "--snapshot", str(FIXTURES / case), *json.loads((FIXTURES / case / "expected.json").read_text())["args"])
    doc = run(*args, "-o", "json").json()
    raw = run(*args, "-o", "table").out
    lines, said = plain_lines(raw), " ".join(w for w in ANSI.sub("", raw).split() if w != "#")  # a fix's words' marks
    code = set()
    rows = [(s["title"], s["cause"], *s["evidence"][:9], s["fix"]) for result in doc["results"] for s in result["symptoms"]]
    rows += [(n["text"], n["hint"]) for result in doc["results"] for n in result.get("notes", [])]
    rows += [(step["summary"], "") for result in doc["results"] for step in result["steps"]]  # rich cut some with `…`
    for row in rows:
        for part in row:
            # every word, whole and in order: none split, none lost (a snippet's comment marks as the words' are)
            assert " ".join(w for w in safe(part).split() if w != "#") in said, part
        for kind, text in steps(row[-1]):  # the fix, or the note's hint
            for fix_line in filter(str.strip, text.splitlines() if kind != "prose" else []):
                # the line itself, not a line of words that reads the same (`nodeSelector:` ending a sentence)
                hits = [k for k, line in enumerate(lines) if line.strip() == fix_line.strip()]
                assert hits, (row[0], fix_line)
                hit = max(hits, key=lambda k: indent(lines[k]))
                assert not BORDERS & set(lines[hit]), lines[hit]
                words_in = 4 + 2  # a fix's words start 4 in, their later lines 2 further
                assert indent(lines[hit]) - indent(fix_line) > words_in, lines[hit]
                assert kind == "yaml" or raw.splitlines()[hit].startswith("\x1b[1m"), raw.splitlines()[hit]  # bold
                code.add(lines[hit])
    for line in lines:  # past the width only a command or YAML line, or a word longer than a line
        assert len(line) <= width or line in code or max(map(len, line.split())) > width // 2, line


@pytest.mark.parametrize("width", [60, 80])
def test_rules_table_keeps_every_id_and_word_whole_at_80_and_60_columns(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    """At 60 columns the symptom column was 8 wide: rich broke its words (`DaemonSe` / `t`)."""
    monkeypatch.setenv("COLUMNS", str(width))
    from sunkcheck.render.rules import render_rules, rows

    text = "\n".join(plain_lines(render_rules("table", width=width)))
    for rule in RULES + LINT_RULES:
        assert re.search(rf"(^|\W){re.escape(rule.id)}(\W|$)", text, re.M), rule.id
    for row in rows():
        assert words(row[2]) in words(text), row[2]  # the symptom, every word whole
    assert max(len(line) for line in text.splitlines()) <= width and "…" not in text
    assert "sunkcheck rules ID" in text  # where cause and fix went
    wide = "\n".join(plain_lines(render_rules("table", width=200)))
    assert "likely cause" in wide and "…" not in wide


@pytest.mark.parametrize("columns", [None, "60"])
def test_rules_id_shows_one_row_in_full(monkeypatch: pytest.MonkeyPatch, columns: str | None) -> None:
    """Within $COLUMNS (or the terminal) its words wrap under their labels; piped, a line per field, as before."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    rule = next(r for r in RULES if r.id == "pool-below-target")
    r = run("rules", "pool-below-target")
    assert r.code == 0
    text = " ".join(r.out.split())
    for part in (rule.id, rule.symptom, rule.cause, rule.fix, rule.severity.value, rule.severity_note, rule.step):
        assert " ".join(part.split()) in text, part
    assert "nodepools.json" in text  # what it reads
    assert "foreign-pod-resources" not in text
    lines = r.out.splitlines()
    if columns is None:
        assert any(line == f"  cause:     {rule.cause}" for line in lines)
    else:
        assert max(map(len, lines)) <= int(columns), r.out
        assert all(line.startswith(" " * 13) for line in lines if not re.match(r"pool-below-target$|  \w[\w ]*: ", line))


def test_rules_id_unknown_suggests_nearest() -> None:
    r = run("rules", "pool-below-targt")
    assert r.code == 3 and "pool-below-target" in r.err and r.err.startswith("sunkcheck: error: ")


def test_explain_node_never_cuts_label_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    from sunkcheck.pipeline import explain
    from sunkcheck.render.explain import render_explanation

    snap = snapshot.load(FIXTURES / "no-feasible-nodes")
    assert snap.nodes is not None
    e = explain(snap, Target(), snap.nodes[0]["metadata"]["name"])
    text = "\n".join(plain_lines(render_explanation(e, "table", 80)))
    assert "node.coreweave.cloud/state" in text and "sunk.example.com/node" in text
    assert "…" not in text
    for c in e.checks:
        for value in (c.subject, c.wanted, c.found):
            assert words(value) in words(text), value  # every word whole (a long value wraps between its words)


# A command sunkcheck prints: a word a shell runs first, then a subcommand or flag (prose says "kubectl" alone).
COMMAND = re.compile(r"(?<![\w/.-])(kubectl|scontrol|squeue|sinfo|helm|sunkcheck (check|explain|snapshot|rules|lint)) [a-z-]")


PROGRAMS = ("kubectl", "scontrol", "squeue", "sinfo", "helm", "sunkcheck")


def shared_lines(fix: str) -> list[str]:
    """The lines of a fix where prose and a command share the line: a command not at its start (in a sentence,
    quoted in backticks or not), a command line that does not paste as is (unbalanced quotes, or prose after
    it: a word ending a clause, a parenthesis, a backtick), or prose in a command's place (a sentence opening with
    a program's name, which a copied fix block would run)."""
    found = []
    for line in (unasked(x) for x in fix.split("\n")):  # a command asked for first is still alone on its line
        m = COMMAND.search(line)
        if m is None:
            if line.split(" ", 1)[0] in PROGRAMS:
                found.append(line)
            continue
        try:
            words = shlex.split(line)
        except ValueError:
            found.append(line)
            continue
        if m.start() or any(w.endswith((";", ":", ",")) or w.startswith(("(", "`")) for w in words):
            found.append(line)
    return found


def test_shared_lines_finds_prose_beside_a_command() -> None:
    assert shared_lines("put it back: kubectl label node n k=v") and shared_lines("scontrol show node a; once fixed:")
    assert shared_lines("(compare with `kubectl describe node n`)") and shared_lines("kubectl get nodes -l 'a")
    assert shared_lines("sunkcheck read NodeSet ns/a only: check the other NodeSets; this lists them:")
    assert not shared_lines("put it back:\nkubectl label --overwrite node n1 n2 'k=v'\nwait until this lists no job:")
    assert not shared_lines("scontrol update nodename=a,b state=drain reason='sunkcheck: Node no longer matches'")


@pytest.mark.parametrize("case", CASES)
def test_prose_and_a_command_never_share_a_line_in_any_fixture_fix(case: str) -> None:
    """Every fix of every recorded case: each command sits alone on its line and pastes as is."""
    doc = replayed(case).json()
    for result in doc["results"]:
        for symptom in result["symptoms"]:
            assert not shared_lines(symptom["fix"]), (symptom["id"], shared_lines(symptom["fix"]))
