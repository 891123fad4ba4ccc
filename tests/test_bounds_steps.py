"""The output limits cut a fix only between its steps, and once: a YAML snippet is printed whole or replaced by
words, and nothing of a fix is printed after a step left out, so a delete never prints without the drain before
it and a caution never loses its sentence."""

from __future__ import annotations

import copy
import html
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from sunkcheck.bounds import ASKED, LIFT, bounded, line_kind
from sunkcheck.model import Report
from sunkcheck.pipeline import diagnose
from sunkcheck.snapshot import load
from sunkcheck.target import Target
from tests.conftest import CASES, FIXTURES, expected, run

DRAIN = re.compile(r"^scontrol update .* state=drain ")
DESTRUCTIVE = re.compile(rf"^({ASKED.pattern})?kubectl (--context \S+ )?(delete|create --raw \S+/eviction)\b")


def snippets(lines: list[str]) -> list[tuple[int, str]]:
    """Each YAML snippet of a fix's lines (a run of them), with the index of its first line."""
    out: list[tuple[int, str]] = []
    for i, text in enumerate(lines):
        if line_kind(text) != "yaml":
            continue
        if out and i > 0 and line_kind(lines[i - 1]) == "yaml":
            out[-1] = (out[-1][0], out[-1][1] + "\n" + text)
        else:
            out.append((i, text))
    return out


def entries(snippet: str) -> int:
    doc = yaml.safe_load(snippet)
    return len(doc) if isinstance(doc, list | dict) else 1


def assert_safe(whole: str, printed: str) -> None:
    """`printed` is `whole` (a fix uncut) or its first steps and one line of words for the rest."""
    every, shown = whole.split("\n"), printed.split("\n")
    kept = shown if shown == every else shown[:-1]
    if kept != shown:
        assert re.fullmatch(rf"\(.+ left out(, and the [\d,]+ lines after)?: {LIFT}\)", shown[-1]), shown[-1]
    assert kept == every[:len(kept)], "a step of the fix was changed or skipped"
    for i, text in enumerate(kept):
        if DESTRUCTIVE.match(text):
            assert [x for x in every[:i] if DRAIN.match(x)] == [x for x in kept[:i] if DRAIN.match(x)], text
    uncut = dict(snippets(every))
    for i, snippet in snippets(kept):
        assert entries(snippet) == entries(uncut[i]), f"a YAML snippet printed shorter than it is:\n{snippet}"


def target(case: str) -> Target:
    args = expected(case).get("args", [])
    daemonset = args[args.index("--daemonset") + 1] if "--daemonset" in args else None
    return Target(daemonset=daemonset, namespace=args[args.index("-n") + 1] if daemonset and "-n" in args else None)


def fixes(report: Report) -> dict[tuple[int, str, str], str]:
    """Each row's fix (a row the limit leaves out has none to cut)."""
    return {(i, s.id, s.title + s.cause): s.fix for i, r in enumerate(report.results) for s in r.symptoms}


def assert_every_limit_safe(report: Report) -> None:
    whole = fixes(report)
    for limit in range(1, 61):
        for row, printed in fixes(bounded(report, limit)).items():
            assert_safe(whole[row], printed)


@pytest.mark.parametrize("case", CASES)
def test_every_fixtures_fixes_cut_safely_at_every_limit(case: str) -> None:
    assert_every_limit_safe(diagnose(load(FIXTURES / case), target(case)))


def misscheduled(directory: Path, pods: int) -> Path:
    """fixtures/misscheduled with `pods` misscheduled slurmd Pods: the drain line names them all."""
    snap = directory / "snap"
    shutil.copytree(FIXTURES / "misscheduled", snap)
    doc = json.loads((snap / "pods.json").read_text())
    moved = [p for p in doc["items"] if p["metadata"]["name"] in ("slurm-cpu-batch-012-005", "slurm-cpu-batch-012-006")]
    doc["items"] = [p for p in doc["items"] if p not in moved]
    for i in range(pods):
        pod = copy.deepcopy(moved[i % 2])
        pod["metadata"] |= {"name": f"slurm-cpu-batch-013-{i:03d}", "uid": f"uid-m-{i}"}
        doc["items"].append(pod)
    (snap / "pods.json").write_text(json.dumps(doc))
    return snap


@pytest.mark.parametrize("pods", [2, 38, 120])
def test_many_misscheduled_pods_cut_safely_at_every_limit(tmp_path: Path, pods: int) -> None:
    report = diagnose(load(misscheduled(tmp_path, pods)), Target())
    assert any(DRAIN.match(x) for fix in fixes(report).values() for x in fix.split("\n"))
    assert_every_limit_safe(report)


def test_an_eviction_is_never_printed_without_its_drain(tmp_path: Path) -> None:
    """38 Pods with 23-character names: the drain line passes 1,000 characters, no eviction line does. Once the drain
    line was replaced by words while `squeue` and the slurmd Pods' removal were printed whole."""
    snap = str(misscheduled(tmp_path, 38))
    doc = run("check", "--snapshot", snap, "-A", "-o", "json").json()
    [fix] = [s["fix"] for r in doc["results"] for s in r["symptoms"] if s["id"] == "misscheduled"]
    assert "state=drain" not in fix and "/eviction" not in fix and "squeue" not in fix
    assert re.search(rf"^\(a line of 1,0\d\d characters left out, and the \d+ lines after: {LIFT}\)$", fix, re.M), fix
    whole = run("check", "--snapshot", snap, "-A", "-o", "json", "--limit", "0").json()
    [every] = [s["fix"] for r in whole["results"] for s in r["symptoms"] if s["id"] == "misscheduled"]
    assert "state=drain" in every and every.count("/eviction") == 38
    assert_safe(every, fix)


def many_tolerations(directory: Path) -> Path:
    """fixtures/no-feasible-nodes whose NodeSet tolerates 70 more taints before SUNK's lock taint."""
    snap = directory / "snap"
    shutil.copytree(FIXTURES / "no-feasible-nodes", snap)
    doc = json.loads((snap / "nodesets.json").read_text())
    spec = doc["items"][0]["spec"]["template"]["spec"]
    spec["tolerations"] = [{"key": f"example.com/t{i}", "operator": "Exists", "effect": "NoSchedule"}
                           for i in range(70)] + spec["tolerations"][-1:]
    (snap / "nodesets.json").write_text(json.dumps(doc))
    return snap


LEFT_OUT = f"a YAML snippet of 8 lines left out: {LIFT}"


@pytest.mark.parametrize("fmt", ["plain", "table", "json", "html"])
def test_a_list_snippet_is_never_printed_shorter_in_any_format(fmt: str) -> None:
    """--limit 2: main printed the entry to add, then `# there now, to keep as they are:` and a `#` line of words,
    a YAML comment: the snippet parsed as a list without SUNK's lock toleration."""
    out = run("check", "--snapshot", str(FIXTURES / "no-feasible-nodes"), "-A", "--limit", "2", "-o", fmt).out
    text = html.unescape(out) if fmt == "html" else out
    assert LEFT_OUT in " ".join(text.split()), text
    assert "there now, to keep" not in text and "key: sunk.example.com/node" not in text
    if fmt == "json":
        [row] = json.loads(out)["results"][0]["symptoms"]
        assert [s["kind"] for s in row["fix_steps"]] == ["prose"]
        assert row["fix"].split("\n")[-1] == f"({LEFT_OUT[:-len(LIFT) - 2]}: {LIFT})"
    whole = run("check", "--snapshot", str(FIXTURES / "no-feasible-nodes"), "-A", "--limit", "3", "-o", fmt).out
    assert "key: sunk.coreweave.com/lock" in whole and "left out" not in whole


def test_seventy_tolerations_at_the_default_limit(tmp_path: Path) -> None:
    snap = str(many_tolerations(tmp_path))
    [row] = run("check", "--snapshot", snap, "-A", "-o", "json").json()["results"][0]["symptoms"]
    [every] = run("check", "--snapshot", snap, "-A", "-o", "json", "--limit", "0").json()["results"][0]["symptoms"]
    assert "- key: sunk.coreweave.com/lock" in every["fix"] and "example.com/t69" in every["fix"]
    assert "- key:" not in row["fix"] and re.search(r"\(a YAML snippet of 2\d\d lines left out: ", row["fix"])
    assert_safe(every["fix"], row["fix"])
    assert_every_limit_safe(diagnose(load(snap), Target()))


def test_the_words_of_a_fix_are_never_split_into_a_list() -> None:
    """--limit 1: main split the sentence at its `; ` and left out its end, "the whole list then reads:"."""
    doc = run("check", "--snapshot", str(FIXTURES / "no-feasible-nodes"), "-A", "--limit", "1", "-o", "json").json()
    [row] = doc["results"][0]["symptoms"]
    first, *rest = row["fix"].split("\n")
    assert first.endswith("keep it); the whole list then reads:") and "more like these" not in row["fix"]
    assert rest == [f"(a YAML snippet of 8 lines left out: {LIFT})"]
