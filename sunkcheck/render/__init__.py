"""Pure formatters: Report -> text. They never decide anything; the output choice maps to one. A terminal's
formats (table, plain, Nagios) are given what they print of the report, every string in it made inert (`printed`)."""

from __future__ import annotations

import dataclasses
import enum
import io
import sys

from sunkcheck.model import Report
from sunkcheck.text import inert


class Output(enum.StrEnum):
    TABLE = "table"
    PLAIN = "plain"
    JSON = "json"
    NAGIOS = "nagios"
    HTML = "html"


class ConsoleBuffer(io.StringIO):
    """Where a rich Console writes: it reports standard output's encoding, so rich draws its rules and boxes
    in ASCII where standard output cannot encode the line-drawing characters."""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(sys.stdout, "encoding", None) or "utf-8"


def printed(report: Report) -> Report:
    """What a terminal's formats print of `report`, every string in it made inert (`text.inert`): whatever row, step
    or note wrote a string, no escape in it reaches a terminal. Without the per-Node verdicts and the Nodes out of
    service (`Result.nodes`, `Result.unready`: thousands on a big pool, and no text format prints them), left out
    rather than walked."""
    results = tuple(dataclasses.replace(r, nodes=(), unready=()) for r in report.results)
    return inert(dataclasses.replace(report, results=results))


def render(report: Report, output: Output, *, width: int | None = None, problems_only: bool = False) -> str:
    """The report in the chosen format (imports the formatter lazily: rich is slow to import)."""
    if output is Output.JSON:
        from sunkcheck.render.json import render_report
        return render_report(report)
    if output is Output.HTML:
        from sunkcheck.render.html import page
        return page(report)
    report = printed(report)
    if output is Output.NAGIOS:
        from sunkcheck.render.nagios import render_report
        return render_report(report)
    if output is Output.PLAIN:
        from sunkcheck.render import plain
        return plain.render_report(report, problems_only, width)
    from sunkcheck.render import table
    return table.render_report(report, width=width, problems_only=problems_only)
