"""The rich report for a terminal: steps, then symptoms with cause, evidence and a copyable fix.

Cluster strings go in as `Text` (never markup) after `safe()`, so a label like `[red]x[/red]`
prints literally and an escape sequence in an Event cannot reach the terminal.
"""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from sunkcheck.model import Report, Result, Status, Symptom
from sunkcheck.render import ConsoleBuffer
from sunkcheck.render.explain import wrapped
from sunkcheck.render.order import (headline, layout, no_symptoms, provenance, rows_omitted, shown_evidence,
                                    summary_lines, unjudged)
from sunkcheck.text import safe

STYLES = {Status.OK: "green", Status.INFO: "cyan", Status.WARNING: "yellow", Status.CRITICAL: "bold red",
          Status.UNKNOWN: "magenta", Status.SKIPPED: "dim"}


def badge(status: Status) -> Text:
    return Text(status.name, style=STYLES[status])


def symptom_block(console: Console, r: Result, s: Symptom) -> None:
    """One row: heading, then cause and evidence (prose, wrapped), then the fix printed as it is, line for
    line, outside any border: the terminal soft-wraps a long command, which then copies as one line."""
    title = Text.assemble(badge(Status.SKIPPED if s.suppressed else s.severity), " ", (s.id, "bold"), f"  {s.title}",
                          (" (suppressed)" if s.suppressed else "", "dim"))
    body = Table.grid(padding=(0, 1))
    body.add_column(style="bold", no_wrap=True)
    body.add_column(ratio=1)
    body.add_row("cause", Text(s.cause))
    bullet = "•" if console.encoding.startswith("utf") else "*"
    body.add_row("evidence", Text("\n".join(f"{bullet} {safe(e, one_line=True)}" for e in shown_evidence(r, s))))
    console.print()
    console.print(title)
    console.print(Padding(body, (0, 0, 0, 2)))
    console.print(Text("  fix:", style="bold"))
    for line in safe(s.fix).splitlines():
        console.print(Text(f"    {line}"), soft_wrap=True)


def result_block(console: Console, r: Result) -> None:
    where = f"{r.namespace}/{r.name}" + (f" (context {r.context})" if r.context else "")
    console.print()
    console.print(Rule(Text.assemble(f"{r.kind} ", (safe(where, one_line=True), "bold"), "  ", badge(r.status)),
                       align="left", style=STYLES[r.status]))
    if r.steps:  # lint results have findings only
        console.print(Text.assemble(("Node Pool(s): ", "bold"), safe(", ".join(r.pools), one_line=True) or "-",
                                    (f"  ({safe(r.pool_source, one_line=True)})", "dim")))
        steps = Table(box=None, show_header=True, header_style="bold", expand=True)
        steps.add_column("step", no_wrap=True)
        steps.add_column("status", no_wrap=True)
        steps.add_column("summary", ratio=1)
        for step in r.steps:
            steps.add_row(step.name, badge(step.status), Text(safe(step.summary, one_line=True)))
        console.print(steps)
    for s in r.symptoms:
        symptom_block(console, r, s)
    for more in rows_omitted(r):
        console.print()
        console.print(Text(more, style=STYLES[Status.UNKNOWN]))
    if not r.symptoms:
        console.print(Text(no_symptoms(r), style=STYLES[Status.UNKNOWN] if unjudged(r) else "green"))
    for n in r.notes:  # after the symptoms: worth knowing, never a problem
        console.print()
        console.print(Text.assemble(("NOTE", STYLES[Status.INFO]), " ", (n.id, "bold"), "  (not a symptom)"))
        console.print(Padding(Text(safe(n.text, one_line=True)), (0, 0, 0, 2)))
        for line in safe(n.hint).splitlines():
            console.print(Text(f"    {line}"), soft_wrap=True)


def render_report(report: Report, *, width: int | None = None, problems_only: bool = False) -> str:
    out = ConsoleBuffer()
    # force_terminal: the caller chose this format for a TTY; NO_COLOR is still honoured by rich
    console = Console(file=out, width=width, force_terminal=True, highlight=False, emoji=False, markup=False)
    # the headline stays one line, as in plain text: the status line scripts grep; the lines under it wrap
    console.print(Text(headline(report), style=STYLES[report.status]), soft_wrap=True)
    for line in provenance(report):
        for part in wrapped(line, console.width, whole=True):
            console.print(Text(part, style="bold" if line.startswith("PREDICTION") else "dim"), soft_wrap=True)
    summary, details = layout(report, problems_only)
    if summary or report.unchecked:  # kubectl-style lines that fit the console, each target's in its colour
        header, *rows = summary_lines(summary, console.width, report.unchecked)
        console.print()
        for line in header:
            console.print(Text(line, style="bold"), soft_wrap=True)
        statuses = [r.status for r in summary] + [Status.UNKNOWN] * len(report.unchecked)
        for lines, status in zip(rows, statuses, strict=True):
            for line in lines:
                console.print(Text(line, style=STYLES[status]), soft_wrap=True)
    for r in details:
        result_block(console, r)
    for e in report.errors:
        console.print(Text(f"could not check: {safe(e, one_line=True)}", style="magenta"))
    return out.getvalue()
