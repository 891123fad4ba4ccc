"""`sunkcheck explain`: the per-Node table and the single-Node deep view, as plain, rich or JSON."""

from __future__ import annotations

import json

from sunkcheck.model import Explanation, NodeVerdict
from sunkcheck.render import ConsoleBuffer
from sunkcheck.text import json_escaped, safe

NODE_HEADERS = ("node", "pool", "feasible", "placed", "reasons")
CHECK_HEADERS = ("check", "subject", "wanted", "found", "result")
SCHEMA = "sunkcheck/explain/v1"  # sunkcheck/schemas/explain.v1.json


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def node_rows(e: Explanation) -> list[tuple[str, ...]]:
    return [(safe(v.name, one_line=True), safe(v.pool or "-", one_line=True), _yes(v.feasible), _yes(v.placed),
             safe(_reasons(v), one_line=True)) for v in e.nodes]


def _reasons(v: NodeVerdict) -> str:
    more = [f"... {v.reasons_omitted:,} more (--limit 0 shows all)"] if v.reasons_omitted else []
    return "; ".join([r.detail for r in v.reasons] + more) or "-"


def check_rows(e: Explanation) -> list[tuple[str, ...]]:
    return [(c.check, safe(c.subject, one_line=True), safe(c.wanted, one_line=True), safe(c.found, one_line=True),
             "ok" if c.ok else "FAIL") for c in e.checks]


def title(e: Explanation) -> str:
    return safe(f"{e.kind} {e.namespace}/{e.name}: {e.summary}", one_line=True)


def render_json(e: Explanation) -> str:
    doc: dict[str, object] = {"schema": SCHEMA, "kind": e.kind, "namespace": e.namespace, "name": e.name, "summary": e.summary,
           "nodes": [{"name": v.name, "pool": v.pool, "feasible": v.feasible, "placed": v.placed,
                      "reasons": [{"check": r.check, "detail": r.detail} for r in v.reasons],
                      **({"reasons_omitted": v.reasons_omitted} if v.reasons_omitted else {})} for v in e.nodes]}
    if e.node is not None:
        doc["node"] = {"name": e.node.name, "pool": e.node.pool, "feasible": e.node.feasible,
                       "checks": [{"check": c.check, "subject": c.subject, "wanted": c.wanted, "found": c.found,
                                   "ok": c.ok} for c in e.checks]}
    return json_escaped(json.dumps(doc, indent=2, ensure_ascii=False)) + "\n"


def render_plain(e: Explanation) -> str:
    from tabulate import tabulate

    if e.node is not None:
        verdict = "feasible" if e.node.feasible else "NOT feasible"
        return (f"{title(e)}\nNode {safe(e.node.name, one_line=True)} ({safe(e.node.pool or '-', one_line=True)}): "
                f"{verdict}\n\n{tabulate(check_rows(e), headers=CHECK_HEADERS, tablefmt='simple')}\n")
    return f"{title(e)}\n\n{tabulate(node_rows(e), headers=NODE_HEADERS, tablefmt='simple')}\n"


def render_table(e: Explanation, width: int | None = None) -> str:
    from rich.console import Console
    from rich.text import Text
    from tabulate import tabulate

    out = ConsoleBuffer()
    console = Console(file=out, width=width, force_terminal=True, highlight=False, emoji=False, markup=False)
    console.print(Text(title(e), style="bold"))
    if e.node is None:
        # thousands of Nodes: tabulate lays the columns out fast; rich only colours the lines
        lines = tabulate(node_rows(e), headers=NODE_HEADERS, tablefmt="simple").splitlines()
        text = Text()
        text.append("\n".join(lines[:2]) + "\n", style="bold")
        for line, verdict in zip(lines[2:], e.nodes):
            text.append(line + "\n", style=None if verdict.feasible else "red")
        console.print(text, soft_wrap=True, end="")
        return out.getvalue()
    # one block per check, never a table: a label key or value is never cut to fit a column
    for check, subject, wanted, found, result in check_rows(e):
        style = "red" if result == "FAIL" else None
        console.print(Text.assemble((f"{result:<4} ", style or "green"), (check, "bold"), f"  {subject}"), soft_wrap=True)
        console.print(Text(f"     wanted: {wanted}\n     found:  {found}", style=style or ""), soft_wrap=True)
    return out.getvalue()


def render_explanation(e: Explanation, output: str, width: int | None = None) -> str:
    return {"json": render_json, "plain": render_plain}.get(output, lambda x: render_table(x, width))(e)
