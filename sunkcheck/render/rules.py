"""The symptom table itself (`sunkcheck rules`), generated from the rule registry: one source of truth."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sunkcheck.render.explain import wrapped
from sunkcheck.symptoms.table import LINT_RULES, RULES

if TYPE_CHECKING:
    from rich.text import Text

HEADERS = ("id", "severity", "symptom", "likely cause", "fix")
SCHEMA = "sunkcheck/rules/v1"  # sunkcheck/schemas/rules.v1.json
WIDE = 140  # columns from which the table shows cause and fix too
INDENT = "    "  # a row's symptom, under its id
MORE = "`sunkcheck rules ID` shows one row in full: severity rule, cause, fix."


def rows(only: str | None = None) -> list[tuple[str, str, str, str, str]]:
    """Every row of the table, or the row of the id `only`."""
    checks = [(r.id, r.severity.value + (f" ({r.severity_note})" if r.severity_note else ""), r.symptom, r.cause, r.fix)
              for r in RULES]
    every = checks + [(r.id, r.severity.value, f"lint: {r.title}", r.cause, r.fix) for r in LINT_RULES]
    return every if only is None else [r for r in every if r[0] == only]


def markdown(only: str | None = None) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join([f"`{r[0]}`", *map(cell, r[1:])]) + " |" for r in rows(only)]
    return "\n".join(lines) + "\n"


def render_rules(fmt: str, width: int | None = None, only: str | None = None) -> str:
    """The table in `fmt`; `only` (an id) keeps its row alone, for the machine formats (json, markdown)."""
    if fmt == "markdown":
        return markdown(only)
    if fmt == "json":
        doc = {"schema": SCHEMA,
               "rules": [dict(zip(("id", "severity", "symptom", "cause", "fix"), r, strict=True)) for r in rows(only)]}
        return json.dumps(doc, indent=2) + "\n"
    if fmt == "plain":
        from tabulate import tabulate
        return tabulate(rows(), headers=HEADERS, tablefmt="simple", maxcolwidths=[None, 12, 30, 40, 40]) + "\n"
    from rich.console import Console
    from rich.table import Table

    from sunkcheck.render import ConsoleBuffer

    out = ConsoleBuffer()
    console = Console(file=out, width=width, force_terminal=True, markup=False, highlight=False)
    if console.width < WIDE:  # five prose columns do not fit: the row's own page has cause and fix
        for line in records(console.width):
            console.print(line, soft_wrap=True)
        return out.getvalue()
    table = Table(*HEADERS, show_lines=True)
    for column in table.columns:
        column.overflow = "fold"  # wrap, never cut with an ellipsis
    table.columns[0].no_wrap = True  # an id is what --ignore and `rules ID` take: never break it
    for r in rows():
        table.add_row(*r)
    console.print(table)
    return out.getvalue()


def records(width: int) -> list[Text]:
    """The table where its columns do not fit: each row's id (bold) and severity on a line, its symptom under them,
    words wrapped within `width` and never broken (columns this narrow would break them), then where the rest is."""
    from rich.text import Text

    lines = []
    for r in rows():
        lines += [Text.assemble((r[0], "bold"), f" ({r[1].split(' (')[0]})")]
        lines += [Text(line) for line in wrapped(r[2], width, INDENT, "", whole=True)]
    return [*lines, Text(), *map(Text, wrapped(MORE, width, whole=True))]


def render_rule(rule_id: str, width: int | None = None) -> str:
    """`sunkcheck rules ID`: one row in full, with what it reads and when another row speaks for it; within `width`
    (None: a line per field) its words wrap under their label."""
    from sunkcheck.symptoms.lint import LintRule

    rule = next(r for r in RULES + LINT_RULES if r.id == rule_id)
    note = getattr(rule, "severity_note", "")  # lint rows have none
    severity = rule.severity.value + (f" ({note})" if note else "")
    if isinstance(rule, LintRule):
        fields = [("symptom", f"lint: {rule.title}"), ("severity", severity),
                  ("looks at", f"{rule.applies_to} documents given to `sunkcheck lint` (or --values)")]
    else:
        reads = ", ".join(f"{n}.json" for n in rule.needs) or "the NodeSet or DaemonSet and its status"
        fields = [("symptom", rule.symptom), ("severity", severity),
                  ("looks at", f"runbook step {rule.step}; reads {reads}")]
        if rule.explained_by:
            fields.append(("not shown", f"when {', '.join(rule.explained_by)} fires (it explains this row)"))
    fields += [("cause", rule.cause), ("fix", rule.fix)]
    return rule.id + "\n" + "".join(f"{line}\n" for name, text in fields
                                    for line in wrapped(f"{name + ':':<11}{text}", width, "  ", " " * 11, whole=True))
