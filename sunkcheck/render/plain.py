"""Plain text for pipes, logs and e-mail: tabulate tables, no colour, cluster strings sanitised."""

from __future__ import annotations

from tabulate import tabulate

from sunkcheck.model import Report, Result
from sunkcheck.render.order import (headline, layout, no_symptoms, provenance, rows_omitted, shown_evidence,
                                    summary_lines)
from sunkcheck.text import safe


def render_result(r: Result) -> str:
    where = (f"{r.namespace}/{r.name}" if r.namespace else r.name) + (f" (context {r.context})" if r.context else "")
    lines = [f"{r.kind} {safe(where, one_line=True)}: {r.status.name}"]
    if r.steps:  # lint results have findings only
        lines += [f"Node Pool(s): {safe(', '.join(r.pools), one_line=True) or '-'} ({safe(r.pool_source, one_line=True)})", ""]
        rows = [(s.name, s.status.value, safe(s.summary, one_line=True)) for s in r.steps]
        lines.append(tabulate(rows, headers=("step", "status", "summary"), tablefmt="simple"))
    for s in r.symptoms:
        lines += ["", f"{'(suppressed) ' if s.suppressed else ''}{s.severity.name} {s.id}: {s.title}",
                  f"  cause: {s.cause}"]
        fix = safe(s.fix).splitlines()
        lines.append(f"  fix:   {fix[0] if fix else ''}")
        lines += [f"         {line}" for line in fix[1:]]
        lines += ["  evidence:"] + [f"    - {safe(e, one_line=True)}" for e in shown_evidence(r, s)]
    lines += [f"\n{more}" for more in rows_omitted(r)]
    if not r.symptoms:
        lines += ["", no_symptoms(r)]
    for n in r.notes:  # after the symptoms: worth knowing, never a problem
        lines += ["", f"NOTE {n.id} (not a symptom): {safe(n.text, one_line=True)}"]
        lines += [f"  {line}" for line in safe(n.hint).splitlines()]
    return "\n".join(lines)


def render_report(report: Report, problems_only: bool = False, width: int | None = None) -> str:
    """`width`: the summary of several targets fits it (folding names and lists); None keeps a line per target."""
    summary, details = layout(report, problems_only)
    parts = ["\n".join([headline(report), *provenance(report)])]
    if summary or report.unchecked:
        parts.append("\n".join(line for lines in summary_lines(summary, width, report.unchecked) for line in lines))
    parts += [render_result(r) for r in details]
    if report.errors:
        parts.append("could not check:\n" + "\n".join(f"  - {safe(e, one_line=True)}" for e in report.errors))
    return "\n\n".join(parts) + "\n"
