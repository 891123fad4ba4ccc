"""Pure formatters: Report -> text. They never decide anything; the output choice maps to one. A terminal's
formats (table, plain, Nagios) are given the report with every string in it made inert (`text.inert`)."""

from __future__ import annotations

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


def render(report: Report, output: Output, *, width: int | None = None, problems_only: bool = False) -> str:
    """The report in the chosen format (imports the formatter lazily: rich is slow to import)."""
    if output is Output.JSON:
        from sunkcheck.render.json import render_report
        return render_report(report)
    if output is Output.HTML:
        from sunkcheck.render.html import page
        return page(report)
    report = inert(report)  # whatever row, step or note wrote a string, no escape in it reaches a terminal
    if output is Output.NAGIOS:
        from sunkcheck.render.nagios import render_report
        return render_report(report)
    if output is Output.PLAIN:
        from sunkcheck.render import plain
        return plain.render_report(report, problems_only, width)
    from sunkcheck.render import table
    return table.render_report(report, width=width, problems_only=problems_only)
