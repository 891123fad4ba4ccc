"""`sunkcheck explain`: the per-Node table and the single-Node deep view, as plain, rich or JSON."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from dataclasses import dataclass

from sunkcheck.bounds import LIFT
from sunkcheck.model import Explanation, NodeVerdict
from sunkcheck.objects import CORDON_REASON
from sunkcheck.render import ConsoleBuffer
from sunkcheck.render.order import GAP, fold
from sunkcheck.text import counted, inert, json_escaped, safe

NODE_HEADERS = ("node", "pool", "placed", "reasons")
CHECK_HEADERS = ("check", "subject", "wanted", "found", "result")
SCHEMA = "sunkcheck/explain/v1"  # sunkcheck/schemas/explain.v1.json
NAMES = 2  # the node and pool columns, which fold when the reasons need room
MIN_REASONS = 20  # the reasons column is never narrower while a name column can fold instead
INDENT = "  "


@dataclass(frozen=True)
class Group:
    """A heading, then a table of Nodes or lines of counts; `failing` groups print in red on a terminal."""

    heading: str
    rows: tuple[tuple[str, ...], ...] = ()
    counts: tuple[str, ...] = ()
    failing: bool = False


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def node_row(e: Explanation, v: NodeVerdict) -> tuple[str, ...]:
    return (safe(v.name, one_line=True), safe(v.pool or "-", one_line=True), _yes(v.placed),
            safe(_reasons(e, v), one_line=True))


def _reasons(e: Explanation, v: NodeVerdict) -> str:
    more = [f"... {v.reasons_omitted:,} more ({LIFT})"] if v.reasons_omitted else []
    return "; ".join([r.detail for r in v.reasons] + more) or _idle(e, v)


def _idle(e: Explanation, v: NodeVerdict) -> str:
    """Why a Node with no reason against it runs no Pod of the workload: its Pod is being created (the Node Ready
    moments ago), or there is none; `-` when it runs one."""
    if v.placed or not v.feasible:
        return "-"
    return "being created" if v.name in e.creating else f"no {'daemon' if e.kind == 'DaemonSet' else 'slurmd'} Pod"


def groups(e: Explanation, every: bool = False) -> list[Group]:
    """The workload's own pools' Nodes first, not feasible then feasible; the other Nodes listed the same way with
    `every` (--all), else counted by the first reason each is not usable (a big cluster's other pools are noise)."""
    mine = [v for v in e.nodes if not e.pools or v.pool in e.pools]
    others = [v for v in e.nodes if e.pools and v.pool not in e.pools]
    where = f"Node Pool(s) {', '.join(e.pools)}" if e.pools else "Nodes"
    found = _by_verdict(e, mine, safe(where, one_line=True))
    if others and every:
        found += _by_verdict(e, others, "other Nodes")
    elif others:
        found.append(Group(f"other Nodes: {counted(len(others), 'Node')}, by first reason (--all lists them):",
                           counts=_counts(others)))
    return found


def _by_verdict(e: Explanation, verdicts: list[NodeVerdict], where: str) -> list[Group]:
    bad = tuple(node_row(e, v) for v in verdicts if not v.feasible)
    good = tuple(node_row(e, v) for v in verdicts if v.feasible)
    found = [Group(f"{where}: {len(bad)} of {counted(len(verdicts), 'Node')} NOT feasible:", bad, failing=True)] if bad else []
    if good:
        found.append(Group(f"{where}: {len(good)} of {counted(len(verdicts), 'Node')} feasible:", good))
    return found or [Group(f"{where}: no Nodes")]


def _counts(verdicts: list[NodeVerdict]) -> tuple[str, ...]:
    """`N  reason`, most first: each Node under its first reason (kube-scheduler's words when it has them)."""
    first = Counter(_first_reason(v) for v in verdicts)
    digits = len(str(max(first.values())))
    return tuple(f"{n:>{digits}}  {safe(reason, one_line=True)}" for reason, n in
                 sorted(first.items(), key=lambda item: (-item[1], item[0])))


def _first_reason(v: NodeVerdict) -> str:
    """The reason the scheduler-style summary counts this Node under: one Node, one first reason in both."""
    first = (v.scheduler_reasons() or v.reasons)[:1]
    if not first:
        return "feasible" if v.feasible else "-"
    return first[0].scheduler or first[0].detail


def wrapped(text: str, width: int | None, indent: str = "", hang: str = "    ", whole: bool = False) -> list[str]:
    """Prose within `width` (None: one line), broken at spaces (a word longer than the line anywhere, unless kept
    `whole`: a label key or value is copied as one), the lines after the first indented by `hang` more."""
    if width is None:
        return [indent + text]
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + hang,
                         break_on_hyphens=False, break_long_words=not whole) or [indent]


def table(headers: tuple[str, ...], rows: tuple[tuple[str, ...], ...], width: int | None) -> list[list[str]]:
    """Aligned columns as lines: the header's (header and separator), then each row's. Within `width` when given:
    the last column wraps at spaces, and the name columns fold only when it would get narrower than MIN_REASONS.
    Narrower than the narrowest it can be, a line is wider than asked."""
    widths = [max(map(len, column)) for column in zip(headers, *rows, strict=True)]
    if width is not None and _span(widths) > width:
        budget = width - _span(widths[:-1]) - GAP
        short = min(MIN_REASONS, widths[-1]) - budget
        if short > 0:  # fold the names, the widest first
            room, cap = sum(widths[:NAMES]) - short, max(widths[:NAMES])
            while cap > 1 and sum(min(w, cap) for w in widths[:NAMES]) > room:
                cap -= 1
            widths[:NAMES] = [max(len(headers[i]), min(widths[i], cap)) for i in range(NAMES)]
        widths[-1] = max(len(headers[-1]), min(widths[-1], width - _span(widths[:-1]) - GAP))
    separator = tuple("-" * w for w in widths)
    return [_lines(headers, widths) + _lines(separator, widths)] + [_lines(row, widths) for row in rows]


def _span(widths: list[int]) -> int:
    return sum(widths) + GAP * (len(widths) - 1)


def _lines(row: tuple[str, ...], widths: list[int]) -> list[str]:
    *names, prose = row
    cells = [fold(cell, w) for cell, w in zip(names, widths[:-1], strict=True)] + [wrapped(prose, widths[-1], hang="")]
    return [(" " * GAP).join((cell[k] if k < len(cell) else "").ljust(w) for cell, w in zip(cells, widths, strict=True)).rstrip()
            for k in range(max(map(len, cells)))]


def text_lines(e: Explanation, width: int | None, every: bool) -> list[tuple[str, str]]:
    """The Node list as (line, kind) pairs, `kind` one of title, heading, failing-heading, header, row, failing-row,
    count, blank: the plain and the rich output print the same lines, the rich one in colour."""
    inner = None if width is None else width - len(INDENT)
    lines = [(line, "title") for line in wrapped(title(e), width)]
    for group in groups(e, every):
        lines.append(("", "blank"))
        lines += [(line, "failing-heading" if group.failing else "heading") for line in wrapped(group.heading, width)]
        if group.rows:
            header, *rows = table(NODE_HEADERS, group.rows, inner)
            lines += [(INDENT + line, "header") for line in header]
            lines += [(INDENT + line, "failing-row" if group.failing else "row") for row in rows for line in row]
        lines += [(line, "count") for count in group.counts for line in wrapped(count, width, INDENT)]
    return lines


def check_rows(e: Explanation) -> list[tuple[str, ...]]:
    return [(c.check, safe(c.subject, one_line=True), safe(c.wanted, one_line=True), safe(c.found, one_line=True),
             "unknown" if c.unknown else "ok" if c.ok else "FAIL") for c in e.checks]


def verdict(e: Explanation) -> str:
    """The deep view's Node's verdict; feasible only as far as recorded where its Pods were not."""
    if e.node is None or not e.node.feasible:
        return "NOT feasible"
    return "feasible" if e.pods_recorded else "feasible as far as recorded (the Pods on it were not recorded)"


def unrecorded_line(e: Explanation) -> str:
    """What the deep view cannot say of a Node whose Pods the snapshot does not hold ("" when it does)."""
    return "" if e.pods_recorded else ("Pods not recorded: this snapshot holds the Pods of the Nodes its check weighed, "
                                       "not this one's; the room they leave and claims on it are unknown (explain on "
                                       "the live cluster reads every Pod)")


def omitted_lines(e: Explanation) -> list[str]:
    """What the bounds left out of the deep view, a line per check."""
    return [f"... {o.failing + o.ok:,} more {o.check} comparisons left out ({o.failing:,} FAIL, {o.ok:,} ok; "
            f"{LIFT})" for o in e.checks_omitted]


def check_block(row: tuple[str, ...], width: int | None) -> tuple[list[str], list[str]]:
    """One comparison as the deep view prints it, never as a table (a label key or value is never cut to fit a column):
    its heading's lines (result, check, subject), then its values' (wanted, found); within `width`, words wrap under
    their label and a value longer than a line stays whole."""
    check, subject, wanted, found, result = row
    return (wrapped(f"{result:<4} {check}  {subject}", width, hang="     ", whole=True),
            wrapped(f"wanted: {wanted}", width, "     ", "        ", whole=True)
            + wrapped(f"found:  {found}", width, "     ", "        ", whole=True))


def cordon_line(e: Explanation) -> str:
    """Why CKS cordoned the deep view's Node, as its annotation says ("" when it says nothing)."""
    return safe(f"cordoned: {CORDON_REASON}: {e.cordon_reason}", one_line=True) if e.cordon_reason else ""


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
                                   "ok": c.ok, **({"unknown": True} if c.unknown else {})} for c in e.checks],
                       **({} if e.pods_recorded else {"pods_recorded": False}),
                       **({"checks_omitted": [{"check": o.check, "failing": o.failing, "ok": o.ok}
                                              for o in e.checks_omitted]} if e.checks_omitted else {}),
                       **({"cordon_reason": e.cordon_reason} if e.cordon_reason else {})}
    return json_escaped(json.dumps(doc, indent=2, ensure_ascii=False)) + "\n"


def render_plain(e: Explanation, width: int | None = None, every: bool = False) -> str:
    """`width` None (piped, no $COLUMNS): a line per Node, and the deep view as one table, for grep; else within
    `width` (the deep view as the terminal shows it)."""
    from tabulate import tabulate

    if e.node is None:
        return "".join(line + "\n" for line, _ in text_lines(e, width, every))
    head = [*wrapped(title(e), width), *wrapped(f"Node {safe(e.node.name, one_line=True)} "
                                                  f"({safe(e.node.pool or '-', one_line=True)}): {verdict(e)}", width),
            *(wrapped(cordoned, width, whole=True) if (cordoned := cordon_line(e)) else []),
            *(wrapped(unrecorded, width) if (unrecorded := unrecorded_line(e)) else []), ""]
    if width is None:
        body = tabulate(check_rows(e), headers=CHECK_HEADERS, tablefmt="simple").splitlines()
    else:
        body = [line for row in check_rows(e) for part in check_block(row, width) for line in part]
    return "".join(line + "\n" for line in head + body + [x for o in omitted_lines(e) for x in wrapped(o, width)])


STYLES = {"title": "bold", "heading": "bold", "failing-heading": "bold red", "header": "bold", "failing-row": "red"}


def render_table(e: Explanation, width: int | None = None, every: bool = False) -> str:
    from rich.console import Console
    from rich.text import Text

    out = ConsoleBuffer()
    console = Console(file=out, width=width, force_terminal=True, highlight=False, emoji=False, markup=False)
    if e.node is None:
        # thousands of Nodes: the lines are laid out here, rich only colours them
        text = Text()
        for line, kind in text_lines(e, console.width, every):
            text.append(line + "\n", style=STYLES.get(kind))
        console.print(text, soft_wrap=True, end="")
        return out.getvalue()
    for line in wrapped(title(e), console.width):
        console.print(Text(line, style="bold"), soft_wrap=True)
    for line in wrapped(cordoned, console.width, whole=True) if (cordoned := cordon_line(e)) else []:
        console.print(Text(line, style="yellow"), soft_wrap=True)
    for line in wrapped(unrecorded, console.width) if (unrecorded := unrecorded_line(e)) else []:
        console.print(Text(line, style="yellow"), soft_wrap=True)
    # one block per check, never a table: a label key or value is never cut to fit a column
    for row in check_rows(e):
        check, result = row[0], row[-1]
        style = {"FAIL": "red", "unknown": "yellow"}.get(result)
        head, values = check_block(row, console.width)
        first, mark = Text(head[0]), max(4, len(result))
        first.stylize(style or "green", 0, mark)
        first.stylize("bold", mark + 1, mark + 1 + len(check))
        for piece in [first, *map(Text, head[1:]), *(Text(v, style=style or "") for v in values)]:
            console.print(piece, soft_wrap=True)
    for line in (x for o in omitted_lines(e) for x in wrapped(o, console.width)):
        console.print(Text(line, style="magenta"), soft_wrap=True)
    return out.getvalue()


def render_explanation(e: Explanation, output: str, width: int | None = None, every: bool = False) -> str:
    if output == "json":
        return render_json(e)
    return (render_plain if output == "plain" else render_table)(inert(e), width, every)
