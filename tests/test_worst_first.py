"""Worst first: a kubectl-style summary of several targets, then the non-OK targets' detail critical first,
rows critical -> warning -> info, a headline that counts symptoms, --problems-only, a stable JSON order."""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import pytest

from sunkcheck.model import Report, Result, Status, Symptom
from sunkcheck.render import Output, render
from tests.conftest import FIXTURES, run
from tests.test_unattended import two_clusters

SEVERAL = str(FIXTURES / "several-nodesets")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_headline_names_critical_and_warning_targets_and_counts_symptoms() -> None:
    first = run("check", "--snapshot", SEVERAL, "-o", "plain").out.splitlines()[0]
    assert first == ("sunkcheck CRITICAL: 1 critical, 1 warning on 2 of 3 targets "
                     "(critical: tenant-slurm/slurm-gpu-spare; warning: tenant-slurm/slurm-gpu-h100)")
    two = run("check", "--snapshot", str(FIXTURES / "two-problems"), "-o", "plain").out.splitlines()[0]
    assert two == "sunkcheck WARNING: 2 warnings on 1 target (warning: tenant-slurm/slurm-cpu-batch)"
    ok = run("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), "-o", "plain").out.splitlines()[0]
    assert ok == "sunkcheck OK: 1 target checked, no symptoms"
    ignored = run("check", "--snapshot", str(FIXTURES / "replicas-cap"), "--ignore", "replicas-cap", "-o", "plain").out
    assert ignored.splitlines()[0] == "sunkcheck OK: 1 target checked, no symptoms (1 suppressed)"  # not "none" above one


def test_headline_names_at_most_three_warning_targets() -> None:
    from sunkcheck.render.order import headline

    warning = Symptom("replicas-cap", Status.WARNING, "t", "cause", "fix", ("e",), "nodeset")
    results = tuple(Result("NodeSet", "ns", f"w{i}", ("p",), (), (warning,)) for i in range(5))
    assert headline(Report(results)) == "sunkcheck WARNING: 5 warnings on 5 targets (warning: ns/w0, ns/w1, ns/w2 and 2 more)"


def test_headline_of_targets_not_fully_checked_claims_no_clean_bill() -> None:
    """Three targets whose Nodes could not be read: no symptom was found in what was read, which is no "no
    symptoms"."""
    from sunkcheck.model import Step
    from sunkcheck.render.order import headline

    steps = (Step("nodepool", Status.OK, "ok"), Step("nodes", Status.UNKNOWN, "cannot read the Nodes"))
    results = tuple(Result("NodeSet", "ns", f"t{i}", ("p",), steps, ()) for i in range(3))
    assert headline(Report(results)) == ("sunkcheck UNKNOWN: 3 targets checked, no symptom found in what could be "
                                         "checked; 3 targets not fully checked")


def test_headline_and_wait_progress_count_in_agreement() -> None:
    from sunkcheck.converge import progress
    from sunkcheck.render.order import headline

    one, two = Report((), errors=("nodes: 403",)), Report((), errors=("nodes: 403", "pods: 403"))
    assert progress(one) == "1 check could not run" and progress(two) == "2 checks could not run"
    assert headline(one).endswith("0 targets checked, no symptoms; 1 check could not run")


def summary_and_details(text: str) -> tuple[list[str], list[str]]:
    lines = [ANSI.sub("", line).rstrip() for line in text.splitlines()]
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["NAMESPACE/NAME", "POOLS"])
    rows = []
    for line in lines[header + 1:]:
        if not line.strip():
            break
        if not set(line) <= set("- "):
            rows.append(line.split()[0])
    details = [m.group(1) for line in lines if (m := re.match(r"^(?:─+ )?NodeSet ([^\s:]+)", line))]
    return rows, details


def test_summary_table_then_details_worst_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # a line per target (at 80 the rich summary folds its names)
    for fmt in ("plain", "table"):
        text = run("check", "--snapshot", SEVERAL, "-o", fmt).out
        header = next(ANSI.sub("", line) for line in text.splitlines() if "NAMESPACE/NAME" in line)
        assert header.split() == ["NAMESPACE/NAME", "POOLS", "DESIRED", "FEASIBLE", "CURRENT", "READY", "STATUS",
                                  "SYMPTOMS"], fmt
        rows, details = summary_and_details(text)
        worst_first = ["tenant-slurm/slurm-gpu-spare", "tenant-slurm/slurm-gpu-h100", "tenant-slurm/slurm-cpu-batch"]
        assert rows == worst_first and details == worst_first, fmt
    row = next(line for line in run("check", "--snapshot", SEVERAL, "-o", "plain").out.splitlines()
               if line.startswith("tenant-slurm/slurm-gpu-h100"))
    assert row.split()[1:] == ["slurm-gpu", "2", "4", "2", "2", "WARNING", "replicas-cap"]


def summary_block(text: str) -> list[str]:
    """The summary's lines, header first, colours removed."""
    lines = [ANSI.sub("", line) for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith(("NAMESPACE/NAME", "CONTEXT")))
    return lines[start:lines.index("", start)]


def summary_cells(block: list[str]) -> list[tuple[str, ...]]:
    """Each target's cells, a folded cell joined again: a row starts where its STATUS column is filled."""
    header = block[0]
    starts = [m.start() for m in re.finditer(r"\S+", header)] + [None]
    status = header.split().index("STATUS")
    rows: list[list[str]] = []
    for line in block[1:]:
        cells = [line[a:b].strip() for a, b in itertools.pairwise(starts)]
        if cells[status]:
            rows.append(cells)
        else:
            rows[-1] = [old + new for old, new in zip(rows[-1], cells, strict=True)]
    return [tuple(row) for row in rows]


def summary_items(block: list[str]) -> list[str]:
    """Every cell's items in order (a list split at its commas), from aligned columns or from records."""
    if "STATUS" in block[0].split():
        return [item for row in summary_cells(block) for cell in row for item in cell.split(",")]
    headers = {"CONTEXT", "NAMESPACE/NAME", "POOLS", "DESIRED", "FEASIBLE", "CURRENT", "READY", "STATUS", "SYMPTOMS"}
    return [word.rstrip(",") for line in block for word in line.split() if word not in headers]


def test_summary_fits_80_columns_and_keeps_every_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns the summary of several targets fits, plain and rich, and says all it said when wide:
    nothing is cut."""
    for scope in (["-A"], ["-n", "tenant-slurm"]):
        for fmt in ("plain", "table"):
            monkeypatch.setenv("COLUMNS", "300")
            wide = summary_block(run("check", "--snapshot", SEVERAL, *scope, "-o", fmt).out)
            monkeypatch.setenv("COLUMNS", "80")
            narrow = summary_block(run("check", "--snapshot", SEVERAL, *scope, "-o", fmt).out)
            assert len(wide) == 4 and max(map(len, wide)) > 80, (scope, fmt)
            assert max(map(len, narrow)) <= 80, (scope, fmt, narrow)
            assert summary_items(narrow) == summary_items(wide), (scope, fmt)


def test_lists_fold_between_items_when_the_names_fit() -> None:
    """Aligned columns while whole names fit: a long list of pools or ids folds after a comma, never inside one."""
    def symptom(id_: str) -> Symptom:
        return Symptom(id_, Status.WARNING, id_, "cause", "fix", ("e",), "nodeset")

    ids = ("replicas-cap", "pool-split", "pool-below-target", "no-feasible-nodes")
    results = [Result("NodeSet", "ns", f"n{i}", ("gpu-a", "gpu-b", "gpu-c", "gpu-d"), (), tuple(map(symptom, ids)))
               for i in range(2)]
    for output in (Output.PLAIN, Output.TABLE):
        block = summary_block(render(Report(tuple(results)), output, width=80))
        assert max(map(len, block)) <= 80 and block[0].split()[-1] == "SYMPTOMS" and len(block) > 3, block
        assert summary_cells(block) == [(f"ns/{r.name}", "gpu-a,gpu-b,gpu-c,gpu-d", "-", "-", "-", "-", "WARNING",
                                         ",".join(ids)) for r in results]
        assert all(line.split()[-1].endswith(",") for line in block[1:] if line.split()[0] == "ns/n0"), block


def test_piped_plain_summary_keeps_a_line_per_target(monkeypatch: pytest.MonkeyPatch) -> None:
    """No terminal and no $COLUMNS (a pipe to grep, a log): each target stays one greppable line."""
    def no_terminal(fd: int = 1) -> os.terminal_size:
        raise OSError("not a terminal")

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(os, "get_terminal_size", no_terminal)
    block = summary_block(run("check", "--snapshot", SEVERAL, "-o", "plain").out)
    assert len(block) == 4 and block[0].split()[2] == "DESIRED" and max(map(len, block)) > 80


def test_targets_too_long_for_columns_are_one_record_each_names_whole() -> None:
    """Names too long for aligned columns within 80: no header, each target `HEADER value` pairs wrapped between
    pairs or list items, no name, pool or id cut."""
    def symptom(id_: str) -> Symptom:
        return Symptom(id_, Status.WARNING, id_, "cause", "fix", ("e",), "nodeset")

    pools = ("slurm-gpu-h100-a", "slurm-gpu-h100-b")
    results = [Result("NodeSet", "tenant-production-slurm", f"slurm-gpu-h100-reserved-{i}", pools, (),
                      (symptom("replicas-cap"), symptom("pool-split")), context=f"coreweave-us-east-04-prod-{i}")
               for i in range(2)]
    for output in (Output.PLAIN, Output.TABLE):
        block = summary_block(render(Report(tuple(results)), output, width=80))
        assert max(map(len, block)) <= 80, block
        assert block[0] == "CONTEXT coreweave-us-east-04-prod-0" and block[1].startswith("    NAMESPACE/NAME "), block
        words = [w for line in block for w in line.split()]
        assert all(r.context in words and f"{r.namespace}/{r.name}" in words for r in results), block
        assert words.count("slurm-gpu-h100-a,") == words.count("slurm-gpu-h100-b") == 2, block
        assert words.count("replicas-cap,") == words.count("pool-split") == 2, block


def test_narrow_terminal_keeps_every_id_and_name_whole_on_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 60 and 80 columns, table and plain, the summary of several targets never cuts an id, a name or a pool
    (`no-feasible-` / `nodes`, `tenant-slurm/` / `slurm-cpu-a` were printed); the headline stays one line in plain
    text (what a script reads), and on a terminal wraps between its words."""
    monkeypatch.setenv("COLUMNS", "300")
    report = run("check", "--snapshot", SEVERAL, "-o", "json").json()
    names = {f"{r['namespace']}/{r['name']}" for r in report["results"]}
    tokens = names | {p for r in report["results"] for p in r["pools"]} | {
        s["id"] for r in report["results"] for s in r["symptoms"]}
    first = run("check", "--snapshot", SEVERAL, "-o", "plain").out.splitlines()[0]
    for columns in ("60", "80"):
        monkeypatch.setenv("COLUMNS", columns)
        for fmt in ("plain", "table"):
            lines = [ANSI.sub("", line) for line in run("check", "--snapshot", SEVERAL, "-o", fmt).out.splitlines()]
            head = lines[:next(k for k, line in enumerate(lines) if line.startswith("source:"))]
            assert head == [first] if fmt == "plain" else " ".join(" ".join(head).split()) == first, (columns, fmt)
            block = summary_block("\n".join(lines))
            assert max(map(len, block)) <= int(columns), (columns, fmt, block)
            words = {w.strip(",") for line in block for w in line.split()}
            assert tokens <= words, (columns, fmt, tokens - words, block)
            assert all(len(line) <= int(columns) for line in lines[1:lines.index("")]), (columns, fmt, lines)


def test_one_target_has_no_summary_table() -> None:
    assert "NAMESPACE/NAME" not in run("check", "--snapshot", str(FIXTURES / "two-problems"), "-o", "plain").out


def test_problems_only_hides_ok_details_but_keeps_them_in_the_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    for fmt in ("plain", "table"):
        r = run("check", "--snapshot", SEVERAL, "-o", fmt, "--problems-only")
        rows, details = summary_and_details(r.out)
        assert "tenant-slurm/slurm-cpu-batch" in rows and details == rows[:2], fmt
        assert r.code == 2


def test_rows_within_a_target_critical_then_warning_then_info() -> None:
    def symptom(id_: str, severity: Status, suppressed: bool = False) -> Symptom:
        return Symptom(id_, severity, id_, "cause", "fix", ("e",), "nodeset", suppressed)

    result = Result("NodeSet", "ns", "x", ("p",), (), (symptom("i", Status.INFO), symptom("s", Status.CRITICAL, True),
                                                      symptom("w", Status.WARNING), symptom("c", Status.CRITICAL)))
    for output in (Output.PLAIN, Output.TABLE):
        text = ANSI.sub("", render(Report((result,)), output, width=120))
        order = [m.group(1) for m in re.finditer(r"^(?:\(suppressed\) )?(?:[A-Z]+) ([a-z]):? ", text, re.M)]
        assert order == ["c", "w", "i", "s"], (output, order)


def test_nagios_status_line_lists_targets_worst_first() -> None:
    """As the text headline: critical targets, then unknown, then warning, rows within each likewise (the line
    named targets in the order they were read, a WARNING ahead of the CRITICAL the status is about)."""
    from sunkcheck.model import Step

    first = run("check", "--snapshot", SEVERAL, "-o", "nagios").out.splitlines()[0]
    assert first.startswith("SUNKCHECK CRITICAL - slurm-gpu-spare: no-feasible-nodes; slurm-gpu-h100: replicas-cap |")

    def symptom(id_: str, severity: Status) -> Symptom:
        return Symptom(id_, severity, id_, "cause", "fix", ("e",), "nodeset")

    unknown = (Step("nodes", Status.UNKNOWN, "403"),)
    results = (Result("NodeSet", "ns", "w", ("p",), (), (symptom("pool-split", Status.WARNING),)),
               Result("NodeSet", "ns", "u", ("p",), unknown, (symptom("replicas-cap", Status.WARNING),)),
               Result("NodeSet", "ns", "c", ("p",), (), (symptom("replicas-cap", Status.WARNING),
                                                         symptom("no-feasible-nodes", Status.CRITICAL))),
               Result("NodeSet", "ns", "ok", ("p",), (), ()))
    first, *long = render(Report(results), Output.NAGIOS).splitlines()
    assert first == "SUNKCHECK CRITICAL - c: no-feasible-nodes, replicas-cap; u: replicas-cap; w: pool-split"
    # the long output likewise: past 8 KB its last lines go, so the least bad targets' first
    assert [line.split(":")[0] for line in long if line.startswith("NodeSet ")] == [
        "NodeSet ns/c", "NodeSet ns/u", "NodeSet ns/w", "NodeSet ns/ok"]
    assert [line.split()[1] for line in long if line.startswith("  CRITICAL ") or line.startswith("  WARNING ")][:2] == [
        "no-feasible-nodes:", "replicas-cap:"]


def test_json_results_in_stable_order(tmp_path: Path, cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    config, apis = two_clusters(tmp_path, cert, "no-feasible-nodes", "healthy-pool-name")
    monkeypatch.setenv("KUBECONFIG", str(config))
    try:
        r = run("check", "--context", "cluster-1", "--context", "cluster-0", "-o", "json")
    finally:
        for api in apis:
            api.__exit__(None, None, None)
    assert [x["context"] for x in r.json()["results"]] == ["cluster-0", "cluster-1"]
    several = run("check", "--snapshot", SEVERAL, "-o", "json").json()["results"]
    assert [x["name"] for x in several] == sorted(x["name"] for x in several)


def test_summary_names_the_context_of_each_target(tmp_path: Path, cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    config, apis = two_clusters(tmp_path, cert, "healthy-pool-name", "no-feasible-nodes")
    monkeypatch.setenv("KUBECONFIG", str(config))
    try:
        out = run("check", "--all-contexts", "-o", "plain").out.splitlines()
    finally:
        for api in apis:
            api.__exit__(None, None, None)
    assert out[0].startswith("sunkcheck CRITICAL: 1 critical on 1 of 2 targets "
                             "(critical: tenant-slurm/slurm-cpu-batch (cluster-1))")
    header = next(i for i, line in enumerate(out) if line.startswith("CONTEXT"))
    assert out[header].split()[:2] == ["CONTEXT", "NAMESPACE/NAME"]
    assert [line.split()[0] for line in out[header + 1:header + 3]] == ["cluster-1", "cluster-0"]
