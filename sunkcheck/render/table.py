"""The rich report for a terminal: steps, then symptoms with cause, evidence and a copyable fix.

The lines are laid out here, within the console's width and broken only between words (a word longer than a line
kept whole), as the plain report lays out its own; rich only colours them. A command or a line of YAML is printed as
written, one line however long (the terminal soft-wraps it, and it copies as one line), indented deeper than the words
around it and a command in bold, so the eye finds what to paste.

Cluster strings go in as `Text` (never markup) after `safe()`, so a label like `[red]x[/red]`
prints literally and an escape sequence in an Event cannot reach the terminal.
"""

from __future__ import annotations

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from sunkcheck.model import Report, Result, Status, Step, Symptom
from sunkcheck.render import ConsoleBuffer
from sunkcheck.render.explain import wrapped
from sunkcheck.render.order import (GAP, HANG, headline, layout, provenance, rows_omitted, shown_evidence,
                                    summary_lines, unjudged, verdict)
from sunkcheck.render.pasted import fix_lines
from sunkcheck.text import safe

STYLES = {Status.OK: "green", Status.INFO: "cyan", Status.WARNING: "yellow", Status.CRITICAL: "bold red",
          Status.UNKNOWN: "magenta", Status.SKIPPED: "dim"}
LABEL = 8  # the width of a row's labels (`cause`, `evidence`)
WORDS, CODE = "    ", "        "  # a fix's words, and its commands and YAML, set in deeper
CODE_STYLES = {"command": "bold", "yaml": ""}


def badge(status: Status) -> Text:
    return Text(status.name, style=STYLES[status])


def fitted(text: Text, width: int, indent: str = "", hang: str = HANG) -> list[Text]:
    """`text` (one line) broken at spaces within `width` as the plain report breaks its prose, the lines after the
    first indented by `hang` more, each piece with its styles."""
    plain, at, out = text.plain, 0, []
    for k, line in enumerate(wrapped(plain, width, indent, hang, whole=True)):
        body = line[len(indent if k == 0 else indent + hang):]  # a piece of `plain`: textwrap only drops the spaces between
        at = plain.index(body, at)
        out.append(Text(line[:len(line) - len(body)]) + text[at:at + len(body)])
        at += len(body)
    return out


def labelled(label: Text, text: Text, width: int, hang: str = "") -> list[Text]:
    """`text` within `width` after `label`, its later lines under its first (and `hang` further in)."""
    pad = " " * label.cell_len
    first, *rest = fitted(text, width, pad, hang)
    return [label + first[len(pad):], *rest]


def code_or_words(text: str, width: int) -> list[Text]:
    """A fix or a hint line for line (render.pasted): its words as comments within `width`, each command and line of
    YAML whole and further in (`CODE`), a command in bold."""
    return [Text(WORDS + line) if kind == "prose" else Text(CODE + line, style=CODE_STYLES[kind])
            for kind, line in fix_lines(text, width - len(WORDS))]


def label(name: str) -> Text:
    """A row's label (`cause`, `evidence`, or none: the next line of evidence), the text after it aligned."""
    return Text.assemble("  ", (name.ljust(LABEL), "bold"), " ")


def steps_lines(steps: tuple[Step, ...], width: int) -> list[Text]:
    """The runbook's steps as aligned columns, each summary wrapped in its own."""
    names = max(len("step"), *(len(s.name) for s in steps))
    statuses = max(len("status"), *(len(s.status.name) for s in steps))
    gap = " " * GAP
    lines = [Text(f"{'step':<{names}}{gap}{'status':<{statuses}}{gap}summary", style="bold")]
    for s in steps:
        columns = Text.assemble(f"{s.name:<{names}}{gap}", badge(s.status), " " * (statuses - len(s.status.name)) + gap)
        lines += labelled(columns, Text(safe(s.summary, one_line=True)), width)
    return lines


def symptom_lines(r: Result, s: Symptom, width: int, bullet: str) -> list[Text]:
    """One row: heading, then cause and evidence (words wrapped under their labels), then the fix."""
    title = Text.assemble(badge(Status.SKIPPED if s.suppressed else s.severity), " ", (s.id, "bold"), f"  {s.title}",
                          (" (suppressed)" if s.suppressed else "", "dim"))
    lines = [Text(), *fitted(title, width, hang="  ")]
    lines += labelled(label("cause"), Text(s.cause), width)
    for k, e in enumerate(shown_evidence(r, s)):
        lines += labelled(label("" if k else "evidence"), Text(f"{bullet} {safe(e, one_line=True)}"), width, "  ")
    return [*lines, Text("  fix:", style="bold"), *code_or_words(s.fix, width)]


def heading(r: Result, width: int) -> list[Text | Rule]:
    """The target's name and status on a rule, or above one where the name is too long to share it (rich would cut
    it short)."""
    where = f"{r.namespace}/{r.name}" + (f" (context {r.context})" if r.context else "")
    title = Text.assemble(f"{r.kind} ", (safe(where, one_line=True), "bold"), "  ", badge(r.status))
    if title.cell_len + 4 <= width:
        return [Rule(title, align="left", style=STYLES[r.status])]
    return [*fitted(title, width), Rule(style=STYLES[r.status])]


def result_lines(r: Result, width: int, bullet: str) -> list[Text | Rule]:
    lines: list[Text | Rule] = [Text(), *heading(r, width)]
    if r.steps:  # lint results have findings only
        lines += fitted(Text.assemble(("Node Pool(s): ", "bold"), safe(", ".join(r.pools), one_line=True) or "-",
                                      (f"  ({safe(r.pool_source, one_line=True)})", "dim")), width)
        lines += steps_lines(r.steps, width)
    for s in r.symptoms:
        lines += symptom_lines(r, s, width, bullet)
    for more in rows_omitted(r):
        lines += [Text(), *fitted(Text(more, style=STYLES[Status.UNKNOWN]), width)]
    if said := verdict(r):
        lines += [*([Text()] if r.symptoms else []), *fitted(Text(said, style=_verdict_style(r)), width)]
    for n in r.notes:  # after the symptoms: worth knowing, never a problem
        lines += [Text(), Text.assemble(("NOTE", STYLES[Status.INFO]), " ", (n.id, "bold"), "  (not a symptom)")]
        lines += fitted(Text(safe(n.text, one_line=True)), width, "  ", "  ")
        lines += code_or_words(n.hint, width) if n.hint else []
    return lines


def _verdict_style(r: Result) -> str:
    """`verdict`'s colour: a step not judged's, else a --wait not converged's (WARNING), else green."""
    return STYLES[Status.UNKNOWN] if unjudged(r) else STYLES[Status.WARNING] if r.unconverged else "green"


def render_report(report: Report, *, width: int | None = None, problems_only: bool = False) -> str:
    out = ConsoleBuffer()
    # force_terminal: the caller chose this format for a TTY; NO_COLOR is still honoured by rich
    console = Console(file=out, width=width, force_terminal=True, highlight=False, emoji=False, markup=False)
    width = console.width  # rich's own guess where none was given
    bullet = "•" if console.encoding.startswith("utf") else "*"
    lines: list[Text | Rule] = [*fitted(Text(headline(report), style=STYLES[report.status]), width)]
    for line in provenance(report):
        lines += fitted(Text(line, style="bold" if line.startswith("PREDICTION") else "dim"), width)
    summary, details = layout(report, problems_only)
    if summary or report.unchecked:  # kubectl-style lines that fit the console, each target's in its colour
        header, *rows = summary_lines(summary, width, report.unchecked)
        lines += [Text(), *(Text(line, style="bold") for line in header)]
        statuses = [r.status for r in summary] + [Status.UNKNOWN] * len(report.unchecked)
        lines += [Text(line, style=STYLES[status]) for row, status in zip(rows, statuses, strict=True) for line in row]
    for r in details:
        lines += result_lines(r, width, bullet)
    lines += [x for e in report.errors
              for x in fitted(Text(f"could not check: {safe(e, one_line=True)}", style="magenta"), width)]
    for laid in lines:  # laid out already: soft_wrap keeps rich from breaking a line, or a word, again
        console.print(laid, soft_wrap=True)
    return out.getvalue()
