"""The symptom table itself (`sunkcheck rules`), generated from the rule registry: one source of truth."""

from __future__ import annotations

import json

from sunkcheck.symptoms.table import LINT_RULES, RULES

HEADERS = ("id", "severity", "symptom", "likely cause", "fix")


def rows() -> list[tuple[str, str, str, str, str]]:
    checks = [(r.id, r.severity.value + (f" ({r.severity_note})" if r.severity_note else ""), r.symptom, r.cause, r.fix)
              for r in RULES]
    return checks + [(r.id, r.severity.value, f"lint: {r.title}", r.cause, r.fix) for r in LINT_RULES]


def markdown() -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join([f"`{r[0]}`", *map(cell, r[1:])]) + " |" for r in rows()]
    return "\n".join(lines) + "\n"


def render_rules(fmt: str) -> str:
    if fmt == "markdown":
        return markdown()
    if fmt == "json":
        return json.dumps([dict(zip(("id", "severity", "symptom", "cause", "fix"), r)) for r in rows()], indent=2) + "\n"
    if fmt == "plain":
        from tabulate import tabulate
        return tabulate(rows(), headers=HEADERS, tablefmt="simple", maxcolwidths=[None, 12, 30, 40, 40]) + "\n"
    import io

    from rich.console import Console
    from rich.table import Table

    table = Table(*HEADERS, show_lines=True)
    for r in rows():
        table.add_row(*r)
    out = io.StringIO()
    Console(file=out, force_terminal=True, markup=False, highlight=False).print(table)
    return out.getvalue()
