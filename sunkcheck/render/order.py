"""What a person reads first: targets worst first, rows by severity, a headline that counts symptoms and
a kubectl-get-style summary of several targets. Shared by the plain and the rich report."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from sunkcheck.bounds import LIFT
from sunkcheck.model import Report, Result, Source, Status, Symptom, Unchecked
from sunkcheck.render.prometheus import gauges
from sunkcheck.text import counted, safe

NAMED = 3  # critical targets, and warning ones, named in the headline; the rest are counted
UNCOUNTABLE = {Status.CRITICAL: "critical", Status.INFO: "info"}  # `2 critical`, `2 info`; but `2 warnings`
GAP = 2  # spaces between summary columns
HANG = "    "  # the lines of a record after its first
SHORT = {"DESIRED": "DES", "FEASIBLE": "FEAS", "CURRENT": "CUR"}  # the gauges' headers when the full ones do not fit
# lists, which fold between their items onto more lines to fit (a name is a list of one)
FOLDS = ("CONTEXT", "NAMESPACE/NAME", "POOLS", "SYMPTOMS", "FILE", "DEFINITION", "FINDINGS")
_ITEMS = re.compile(r"[^,]*,|[^,]+")  # a list's items, each but the last with the comma after it


EVIDENCE_SHOWN = 10  # lines of evidence a row shows a person; -o json keeps them all


def shown_evidence(r: Result, s: Symptom, limit: int = EVIDENCE_SHOWN) -> list[str]:
    """A row's evidence for a person: at most `limit` lines, the last saying how many more there are (those the
    output's bounds left out included) and where to read them (JSON keeps every line up to --limit; `explain`
    gives each Node's reasons)."""
    evidence = s.evidence
    if len(evidence) <= limit and not s.evidence_omitted:
        return list(evidence)
    kept = evidence[:limit - 1] if len(evidence) >= limit else evidence
    more = len(evidence) - len(kept) + s.evidence_omitted
    where = " and each Node's reasons: sunkcheck explain" if r.kind in ("NodeSet", "DaemonSet") else ""
    json = "-o json --limit 0" if s.evidence_omitted else "-o json"
    return [*kept, f"... {more:,} more lines of evidence (every line: {json}{where})"]


def unjudged(r: Result) -> list[str]:
    """The steps of `r` that could not be judged (their data missing or unreadable)."""
    return [s.name for s in r.steps if s.status is Status.UNKNOWN]


def rows_omitted(r: Result) -> list[str]:
    """The line saying how many rows the output's bounds left out of `r`, if any."""
    what = "symptoms" if r.steps else "findings"  # lint results have findings only
    return [f"... {r.symptoms_omitted:,} more {what} left out, the least severe ({LIFT})"] if r.symptoms_omitted else []


NOT_CONVERGED = "not converged when --wait ended"  # what a --wait that ended still waiting is said to be, everywhere


def not_converged(r: Result) -> str:
    """`not converged when --wait ended: READY 6/8`: what a --wait ended with `r` still waiting for; "" when it
    converged, or outside a wait."""
    return f"{NOT_CONVERGED}: {r.unconverged}" if r.unconverged else ""


def no_symptoms(r: Result) -> str:
    """What a target without symptoms says: "looks right" only when every step could be judged and no --wait ended
    with it still waiting (its rows may clear, or fire, once the scale-up is done)."""
    if not r.steps:
        return "no findings"
    said = f"no symptoms in what could be read; not judged: {', '.join(steps)}" if (steps := unjudged(r)) else ""
    if r.unconverged:
        return f"{said or 'no symptoms so far'}; {not_converged(r)}"
    return said or "no symptoms: the binding looks right"


def verdict(r: Result) -> str:
    """The line closing a target's rows: what a target without symptoms says (`no_symptoms`), or what a --wait ended
    with one with symptoms still waiting for; "" for a target with symptoms and nothing pending."""
    return not_converged(r) if r.symptoms else no_symptoms(r)


def where(r: Result) -> str:
    return f"{r.namespace}/{r.name}" if r.namespace else r.name


def definition(r: Result) -> str:
    """A lint target as its DEFINITION cell names it: a values definition by name, a manifest by kind/name."""
    return r.name if r.kind == "Values" else f"{r.kind}/{r.name}"


def by_severity(r: Result) -> Result:
    """Rows critical -> warning -> info, suppressed rows last; table order otherwise (sorted is stable)."""
    return replace(r, symptoms=tuple(sorted(r.symptoms, key=lambda s: (s.suppressed, -s.severity.rank))))


def worst_first(results: Iterable[Result]) -> list[Result]:
    return [by_severity(r) for r in sorted(results, key=lambda r: (-r.status.rank, r.context, r.namespace, r.name))]


def is_problem(r: Result) -> bool:
    return r.status not in (Status.OK, Status.INFO, Status.SKIPPED)


def headline(report: Report) -> str:
    """`sunkcheck CRITICAL: 1 critical, 2 warnings on 2 of 3 targets (critical: ns/a; warning: ns/b)`."""
    active = [s for r in report.results for s in r.symptoms if not s.suppressed]
    troubled = [r for r in report.results if any(not s.suppressed for s in r.symptoms)]
    total = len(report.results)
    unknown = sum(r.status is Status.UNKNOWN for r in report.results)
    if active:
        counts = [counted(sum(s.severity is level for s in active), level.value, UNCOUNTABLE.get(level))
                  for level in (Status.CRITICAL, Status.WARNING, Status.INFO) if any(s.severity is level for s in active)]
        on = counted(total, "target") if len(troubled) == total else f"{len(troubled)} of {counted(total, 'target')}"
        omitted = sum(r.symptoms_omitted for r in report.results)  # the counts are of the rows shown
        text = f"{', '.join(counts)}{f' (and {omitted:,} more left out)' if omitted else ''} on {on}"
        named = [_named(report.results, level) for level in (Status.CRITICAL, Status.WARNING)]
        if any(named):
            text += f" ({'; '.join(n for n in named if n)})"
    else:
        suppressed = sum(s.suppressed for r in report.results for s in r.symptoms)
        # beside targets not fully checked, "no symptoms" would read as a clean bill
        found = "no symptom found in what could be checked" if unknown else "no symptoms"
        text = f"{counted(total, 'target')} checked, {found}" + (f" ({suppressed} suppressed)" if suppressed else "")
    if unknown:
        text += f"; {counted(unknown, 'target')} not fully checked"
    if report.unchecked:
        text += f"; {counted(len(report.unchecked), 'context')} not checked ({', '.join(u.context for u in report.unchecked)})"
    if report.never_converged:  # converge.progress: it counts the checks that could not run
        text += f"; {NOT_CONVERGED}: {report.never_converged}"
    elif report.other_errors:
        text += f"; {counted(len(report.other_errors), 'check')} could not run"
    return safe(f"sunkcheck {report.status.name}: {text}", one_line=True)  # names may come from a hand-made snapshot


def _named(results: Iterable[Result], status: Status) -> str:
    """`critical: ns/a, ns/b and 2 more`: the first NAMED targets of `status`, worst first; "" when none is."""
    names = [_target(r) for r in worst_first(results) if r.status is status]
    more = f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
    return f"{status.value}: {', '.join(names[:NAMED])}{more}" if names else ""


def _target(r: Result) -> str:
    """A target in the headline: a lint target says which kind it is, a definition and a Node Pool may share a name."""
    if r.file:
        return f"values {r.name}" if r.kind == "Values" else definition(r)
    return where(r) + (f" ({r.context})" if r.context else "")


def describe(source: Source) -> str:
    if source.type == "live":
        return f"live, context {source.context or '-'}, API server {source.server or '-'}"
    if not source.recorded:
        return f"snapshot {source.path} ({'' if source.meta else 'no meta.json: '}recording time unknown)"
    origin = f" from context {source.context}" if source.context else ""
    return f"snapshot {source.path} recorded {source.recorded}{origin}" + (
        f", API server {source.server}" if source.server else "")


def provenance(report: Report) -> list[str]:
    """The lines under the headline saying where the answer came from; none for a report of no source."""
    from sunkcheck import __version__

    if not report.sources:
        return []
    lines = [f"PREDICTION: the NodeSets of --values {', '.join(report.predicted_from)}, not deployed ones"
             ] if report.predicted_from else []
    lines.append(f"source: {'; '.join(describe(s) for s in report.sources)}; checked {report.checked_at or '-'}; "
                 f"sunkcheck {__version__}")
    return [safe(line, one_line=True) for line in lines]


LINT_HEADERS = ("FILE", "DEFINITION", "STATUS", "FINDINGS")


def summary_headers(results: Sequence[Result], unchecked: tuple[Unchecked, ...] = ()) -> tuple[str, ...]:
    if results and not unchecked and all(r.file for r in results):  # lint: no pools or gauges, but a file
        return LINT_HEADERS
    context = ("CONTEXT",) if unchecked or any(r.context for r in results) else ()
    return (*context, "NAMESPACE/NAME", "POOLS", "DESIRED", "FEASIBLE", "CURRENT", "READY", "STATUS", "SYMPTOMS")


def unchecked_row(context: str) -> tuple[str, ...]:
    """A context that could not be checked at all, in the summary beside the others (why: under the report)."""
    return (context, "-", "-", "-", "-", "-", "-", Status.UNKNOWN.name, "not checked")


def summary_row(r: Result, headers: tuple[str, ...]) -> tuple[str, ...]:
    ids = dict.fromkeys(s.id for s in r.symptoms if not s.suppressed)  # lint: a finding's id once
    if headers == LINT_HEADERS:
        return r.file, definition(r), r.status.name, ", ".join(ids) or "-"
    g = gauges(r)
    return ((r.context or "-",) if "CONTEXT" in headers else ()) + (where(r), ",".join(r.pools) or "-") + tuple(
        "-" if n is None else str(n) for n in (g.desired, g.feasible, g.current, g.ready)) + (r.status.name,
                                                                                              ",".join(ids) or "-")


def summary_lines(results: list[Result], width: int | None = None,
                  unchecked: tuple[Unchecked, ...] = ()) -> list[list[str]]:
    """The summary as kubectl prints it, aligned columns: the header's lines, then each target's, then each
    `unchecked` context's. A line per target while that fits in `width`; past it the gauges' headers shorten,
    then lists fold between their items onto more lines. A name or an id is never cut (a reader greps and copies
    it): when the columns cannot fit so, no header, and each target is one record wrapped between words."""
    headers = summary_headers(results, unchecked)
    rows = [tuple(safe(cell, one_line=True) for cell in summary_row(r, headers)) for r in results]
    rows += [tuple(safe(cell, one_line=True) for cell in unchecked_row(u.context)) for u in unchecked]
    widths = _widths(headers, rows)
    if width is None or _span(widths) <= width:
        return [_lines(row, widths) for row in (headers, *rows)]
    short = tuple(SHORT.get(h, h) for h in headers)
    if fitted := _fitted(short, rows, width):
        return [_lines(row, fitted) for row in (short, *rows)]
    return [[], *(record(headers, row, width) for row in rows)]


def record(headers: tuple[str, ...], row: tuple[str, ...], width: int) -> list[str]:
    """A target as `HEADER value` pairs within `width`, broken only between pairs or a list's items (a header
    stays with the value's first item); only a pair longer than a whole line folds (`fold`), as it must."""
    units = []
    for h, cell in zip(headers, row, strict=True):
        first, *rest = _items(cell) if h in FOLDS else [cell]
        units += [f"{GAP * ' '}{h} {first}", *(f" {item}" for item in rest)]
    lines: list[str] = []
    for unit in units:
        if lines and len(lines[-1]) + len(unit) <= width:
            lines[-1] += unit
            continue
        first, *more = fold(unit.lstrip(), width - len(HANG))
        lines += [(HANG if lines else "") + first, *(HANG + piece for piece in more)]
    return lines


def _items(cell: str) -> list[str]:
    """A list's items, each but the last with its comma: `a,b` -> `a,` `b`."""
    return _ITEMS.findall(cell)


def _fitted(headers: tuple[str, ...], rows: list[tuple[str, ...]], width: int) -> list[int] | None:
    """Column widths within `width`, no item of a list cut: the fewest lines a target takes, then the room left
    unfolds the columns that need least of it. None when even a line per item is wider."""
    natural = _widths(headers, rows)
    columns = {i: [row[i] for row in rows] for i, h in enumerate(headers) if h in FOLDS}
    floors = {i: max([len(headers[i])] + [len(item) for cell in cells for item in _items(cell)])
              for i, cells in columns.items()}
    for lines in range(1, max(natural) + 1):
        widths = [_narrowest(columns[i], lines, floors[i]) if i in columns else w for i, w in enumerate(natural)]
        if _span(widths) <= width:
            room = width - _span(widths)
            for i in sorted(columns, key=lambda i: natural[i] - widths[i]):
                if natural[i] - widths[i] <= room:
                    room -= natural[i] - widths[i]
                    widths[i] = natural[i]
            return widths
        if all(widths[i] == floors[i] for i in columns):
            return None
    return None


def _narrowest(cells: list[str], lines: int, floor: int) -> int:
    """The narrowest a column gets, from `floor` up, with no cell folded onto more than `lines` lines (by
    bisection: a wider column takes no more lines, and at its widest every cell takes one)."""
    distinct = set(cells)
    low, high = floor, max([floor] + [len(cell) for cell in distinct])
    while low < high:
        middle = (low + high) // 2
        if all(len(_packed(cell, middle)) <= lines for cell in distinct):
            high = middle
        else:
            low = middle + 1
    return low


def _packed(cell: str, width: int) -> list[str]:
    """A list's items packed onto lines of at most `width` (an item wider than that alone on its line)."""
    lines: list[str] = []
    for item in _items(cell):
        if lines and len(lines[-1]) + len(item) <= width:
            lines[-1] += item
        else:
            lines.append(item)
    return lines or [""]


def _widths(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[int]:
    return [max(map(len, column)) for column in zip(headers, *rows, strict=True)]


def _span(widths: list[int]) -> int:
    return sum(widths) + GAP * (len(widths) - 1)


def _lines(row: tuple[str, ...], widths: list[int]) -> list[str]:
    cells = [_packed(cell, width) for cell, width in zip(row, widths, strict=True)]
    return [(" " * GAP).join((cell[k] if k < len(cell) else "").ljust(width)
                             for cell, width in zip(cells, widths, strict=True)).rstrip()
            for k in range(max(map(len, cells)))]


def fold(text: str, width: int) -> list[str]:
    """`text` in pieces of at most `width`, each ending after a ',' or '/' where one fits, else after a '-': for
    what cannot fit whole (a summary's pair longer than a line, explain's Node names)."""
    pieces = []
    while len(text) > width:
        cut = max(text.rfind(",", 0, width), text.rfind("/", 0, width))
        if cut < 0:
            cut = text.rfind("-", 0, width)
        cut = cut + 1 if cut >= 0 else width
        pieces.append(text[:cut])
        text = text[cut:].lstrip(" ")  # a list written `a, b` folds after its comma, the space with it
    return [*pieces, text]


def layout(report: Report, problems_only: bool = False) -> tuple[list[Result], list[Result]]:
    """(targets for the summary table, empty for one target; targets whose detail follows), worst first."""
    ordered = worst_first(report.results)
    details = [r for r in ordered if is_problem(r)] if problems_only else ordered
    return (ordered if len(ordered) > 1 or report.unchecked else []), details
