"""Plain text for pipes, logs and e-mail: tabulate tables, no colour, cluster strings sanitised. Within a width
($COLUMNS) prose wraps under a hanging indent, a word longer than the line kept whole; a fix or a hint prints line
for line, as the terminal report prints it (render.pasted), so pasted whole it runs its commands and nothing else."""

from __future__ import annotations

from tabulate import tabulate

from sunkcheck.model import Report, Result
from sunkcheck.render.explain import table, wrapped
from sunkcheck.render.order import headline, layout, provenance, rows_omitted, shown_evidence, summary_lines, verdict
from sunkcheck.render.pasted import fix_lines
from sunkcheck.text import safe

STEP_HEADERS = ("step", "status", "summary")


def _prose(text: str, width: int | None, indent: str = "", hang: str = "    ") -> list[str]:
    return wrapped(text, width, indent, hang, whole=True)


def _steps(text: str, width: int | None, first: str, indent: str) -> list[str]:
    """A fix or hint line for line under its label (`first`, as wide as `indent`, which starts the other lines): its
    words as comments wrapped within `width`, its commands and YAML as written (render.pasted)."""
    out = [indent + line for _, line in fix_lines(text, None if width is None else width - len(indent))]
    return [first + out[0][len(indent):], *out[1:]]


def render_result(r: Result, width: int | None = None) -> str:
    where = (f"{r.namespace}/{r.name}" if r.namespace else r.name) + (f" (context {r.context})" if r.context else "")
    lines = _prose(f"{r.kind} {safe(where, one_line=True)}: {r.status.name}", width)
    if r.steps:  # lint results have findings only
        lines += [*_prose(f"Node Pool(s): {safe(', '.join(r.pools), one_line=True) or '-'} "
                          f"({safe(r.pool_source, one_line=True)})", width), ""]
        rows = tuple((s.name, s.status.value, safe(s.summary, one_line=True)) for s in r.steps)
        lines += (tabulate(rows, headers=STEP_HEADERS, tablefmt="simple").splitlines() if width is None else
                  [line for row in table(STEP_HEADERS, rows, width) for line in row])
    for s in r.symptoms:
        lines += ["", *_prose(f"{'(suppressed) ' if s.suppressed else ''}{s.severity.name} {s.id}: {s.title}", width),
                  *_prose(f"cause: {s.cause}", width, "  ", "       ")]
        lines += _steps(s.fix, width, "  fix:   ", "         ")
        lines += ["  evidence:"] + [x for e in shown_evidence(r, s) for x in _prose(f"- {safe(e, one_line=True)}", width,
                                                                                   "    ", "  ")]
    for more in rows_omitted(r):
        lines += ["", *_prose(more, width)]
    if said := verdict(r):
        lines += ["", *_prose(said, width)]
    for n in r.notes:  # after the symptoms: worth knowing, never a problem
        lines += ["", *_prose(f"NOTE {n.id} (not a symptom): {safe(n.text, one_line=True)}", width)]
        lines += _steps(n.hint, width, "  ", "  ") if n.hint else []
    return "\n".join(lines)


def render_report(report: Report, problems_only: bool = False, width: int | None = None) -> str:
    """`width`: the summary of several targets fits it (folding names and lists), and so do the details' prose
    (not the headline); None keeps a line per target and per line of prose."""
    summary, details = layout(report, problems_only)
    # the headline stays one line: the status line a log or a monitor reads first
    parts = ["\n".join([headline(report), *(x for line in provenance(report) for x in _prose(line, width))])]
    if summary or report.unchecked:
        parts.append("\n".join(line for lines in summary_lines(summary, width, report.unchecked) for line in lines))
    parts += [render_result(r, width) for r in details]
    if report.errors:
        parts.append("\n".join(["could not check:"] + [x for e in report.errors
                                                      for x in _prose(f"- {safe(e, one_line=True)}", width, "  ", "  ")]))
    return "\n\n".join(parts) + "\n"
