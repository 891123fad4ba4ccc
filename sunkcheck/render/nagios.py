"""`-o nagios`: Monitoring Plugins output. A short first line (`SUNKCHECK CRITICAL - ...`), long output,
then performance data after a `|`; the exit code is the plugin's (docs/exit-codes.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from sunkcheck.model import DaemonSetCounts, NodeSetCounts, PoolCounts, Report, Result, SlurmCounts
from sunkcheck.render.order import (definition, not_converged, provenance, shown_evidence, unjudged, where,
                                    worst_first)
from sunkcheck.text import safe

SERVICE = "SUNKCHECK"
FIRST_LINE_TEXT = 160  # characters of summary before "and N more": Nagios reads little of line one
MAX_OUTPUT = 8192  # bytes of plugin output Nagios 3 reads; the rest is lost, performance data included
EVIDENCE_SHOWN = 5  # lines of evidence per row in the long output


def _text(value: str) -> str:
    """Plugin text: one line, no `|` (it would start performance data)."""
    return safe(value, one_line=True).replace("|", "/")


def namer(report: Report) -> Callable[[Result], str]:
    """How the status line and perfdata labels name a target: `name`, or `namespace/name` where another
    target of its context has the name (one label is one series to a grapher: two would merge). Unqualified
    otherwise, so that the labels of a run over one namespace stay what they always were."""
    seen = Counter((r.context, r.name) for r in report.results)
    return lambda r: r.name if seen[r.context, r.name] == 1 else definition(r) if r.file else f"{r.namespace}/{r.name}"


def _label(result: Result, name: str, metric: str) -> str:
    label = f"{result.context + '/' if result.context else ''}{name} {metric}"  # unique across clusters
    # a label may hold anything but `=` and `'`; it is quoted because it holds a space
    return "'" + _text(label).replace("=", "_").replace("'", "_") + "'"


def perfdata(result: Result, name: str) -> list[str]:
    """The workload's status columns, bounded by the pool's Node count (a DaemonSet's: DESIRED; a NodeSet's DESIRED is
    its `replicas` when set, unbounded where replicas exceed the pool: 1000 on an 8-Node pool), then the Node Pool's
    and Slurm's counts, unbounded; a count the status lacks is left out. `name` names the workload in the labels
    (`namer`)."""
    nodeset, daemonset = result.counts(NodeSetCounts), result.counts(DaemonSetCounts)
    pool, slurm = result.counts(PoolCounts), result.counts(SlurmCounts)
    top = (nodeset.pool_nodes if nodeset else None) or (daemonset.desired if daemonset else None)
    bounded = [("desired", nodeset.desired), ("feasible", nodeset.feasible), ("current", nodeset.current),
               ("ready", nodeset.ready), ("misscheduled", nodeset.misscheduled)] if nodeset else []
    bounded += [("desired", daemonset.desired), ("current", daemonset.current), ("ready", daemonset.ready),
                ("misscheduled", daemonset.misscheduled)] if daemonset else []
    unbounded = [("pool_target", pool.target), ("pool_current", pool.current)] if pool else []
    unbounded += [("slurm_nodes", slurm.slurm_nodes)] if slurm else []
    maximum = "" if top is None else str(top)
    free = {"desired"} if nodeset and nodeset.replicas is not None and (top is None or nodeset.replicas > top) else set()
    return [f"{_label(result, name, metric)}={value};;;0;{'' if metric in free else bound}"
            for metrics, bound in ((bounded, maximum), (unbounded, "")) for metric, value in metrics if value is not None]


Part = tuple[str, str]  # a headline part: its kind (counted when it does not fit), then its text


def headline(report: Report, named: Callable[[Result], str]) -> str:
    """Problems first, worst first as the text headline (critical, unknown, warning; rows likewise), then the
    targets that could not be judged, the contexts not checked at all, what never converged and why a check
    could not run, then the clusters found healthy, each named. What does not fit is counted by kind."""
    parts = [*_judged_parts(report, named), *_error_parts(report), *_healthy_parts(report)]
    return f"{SERVICE} {report.status.name} - {_text(_fitted(parts or [('', 'nothing was checked')]))}"


def _clean(r: Result) -> bool:
    """No symptom shown (a suppressed one is not)."""
    return all(s.suppressed for s in r.symptoms)


def _judged_parts(report: Report, named: Callable[[Result], str]) -> list[Part]:
    """The targets with symptoms, then the clean ones some step of which could not be judged, worst first."""
    def name(r: Result) -> str:
        return f"{r.context + '/' if r.context else ''}{named(r)}"

    ordered = worst_first(report.results)
    parts = [("target with symptoms", f"{name(r)}: {', '.join(s.id for s in r.symptoms if not s.suppressed)}")
             for r in ordered if not _clean(r)]
    return parts + [("target not judged", f"{name(r)}: not judged: {', '.join(steps)}")
                    for r in ordered if _clean(r) and (steps := unjudged(r))]


def _error_parts(report: Report) -> list[Part]:
    """The contexts not checked, what never converged, and why a check could not run."""
    parts = [("context not checked", u.error) for u in report.unchecked]
    parts += [("never-converged list", f"never converged: {report.never_converged}")] if report.never_converged else []
    return parts + [("error", e) for e in report.other_errors]


def _healthy_parts(report: Report) -> list[Part]:
    """Each context whose targets are all clean, one at least judged, and none a --wait ended still waiting for
    (named in never_converged: no cluster holding one is healthy, nor is it "bound as intended")."""
    parts = []
    for context in dict.fromkeys(r.context for r in report.results):
        results = [r for r in report.results if r.context == context]
        judged = [r for r in results if not unjudged(r)]
        if judged and all(_clean(r) and not r.unconverged for r in results):
            kinds = "/".join(sorted({r.kind for r in judged}))
            parts.append(("healthy cluster", f"{context + ': ' if context else ''}{len(judged)} {kinds}(s) "
                                             "bound as intended"))
    return parts


def _fitted(parts: list[Part]) -> str:
    """The parts' texts joined while they fit FIRST_LINE_TEXT (the first always), then the rest counted by kind."""
    text, shown = "", 0
    for _, part in parts:
        candidate = f"{text}; {part}" if text else part
        if len(candidate) > FIRST_LINE_TEXT and text:
            break
        text, shown = candidate, shown + 1
    if left := Counter(kind for kind, _ in parts[shown:]):
        text += "; and " + ", ".join(f"{n} more {kind if n == 1 else _plural(kind)}" for kind, n in left.items())
    return text


def _plural(kind: str) -> str:
    """`targets with symptoms`, `errors`: the plural of a headline part's kind (its first word)."""
    first, _, rest = kind.partition(" ")
    return f"{first}s{' ' + rest if rest else ''}"


def render_report(report: Report) -> str:
    """The status line with the worst target's first counts, the long output, then the rest of the performance
    data after a second `|`. Nagios 3 reads at most 8 KB (MAX_OUTPUT): past it the long output is cut, never the
    status line nor the performance data, and a line says what was left out (`-o json` has it all)."""
    named = namer(report)
    worst = sorted(report.results, key=lambda r: -r.status.rank)
    first = perfdata(worst[0], named(worst[0]))[:4] if worst else []
    status = headline(report, named) + (" | " + " ".join(first) if first else "")
    lines = [_text(line) for line in provenance(report)]
    for r in worst_first(report.results):  # as the status line: past 8 KB the least bad targets' lines go first
        context = f" (context {r.context})" if r.context else ""
        lines.append(f"{r.kind} {_text(where(r) + context)}: {r.status.name}")
        lines += [f"  {_text(said)}"] if (said := not_converged(r)) else []
        lines += [f"  {s.name}: {s.status.value}: {_text(s.summary)}" for s in r.steps]
        for s in r.symptoms:
            lines.append(f"  {'(suppressed) ' if s.suppressed else ''}{s.severity.name} {s.id}: {_text(s.title)}")
            lines += [f"    - {_text(e)}" for e in shown_evidence(r, s, EVIDENCE_SHOWN)]
    lines += [f"UNKNOWN: {_text(e)}" for e in report.errors]
    rest = [p for r in worst for p in perfdata(r, named(r)) if p not in first]
    return _within(status, lines, rest)


def _size(text: str) -> int:
    return len(text.encode())


def _within(status: str, lines: list[str], rest: list[str]) -> str:
    """`status`, the long output `lines` and the performance data `rest` (after a `|` on the last line), in at most
    MAX_OUTPUT bytes: the long output loses its last lines first, for a line saying how many; performance data of
    the targets listed last goes only when it alone would not fit."""
    def text(kept: list[str], perf: list[str]) -> str:
        body = [status, *kept]
        if perf:
            body[-1] += " | " + " ".join(perf)
        return "\n".join(body) + "\n"

    if _size(whole := text(lines, rest)) <= MAX_OUTPUT:
        return whole
    cut = "... {} more lines left out to stay within the 8 KB a Nagios check may print (every line: -o json)"
    worst_cut = cut.format(len(lines)) + f"; {len(rest)} performance data values left out too"
    room, perf = MAX_OUTPUT - _size(text([worst_cut], [])) - len(" |"), []
    for value in rest:  # the least bad targets' counts go first: the worst's are on the status line
        room -= _size(value) + 1
        if room < 0:
            break
        perf.append(value)
    if dropped := len(rest) - len(perf):
        cut += f"; {dropped} performance data values left out too"
    used = _size(text([cut.format(len(lines))], perf))  # the cut line's count only shrinks as lines are kept
    kept: list[str] = []
    for line in lines:
        used += _size(line) + 1
        if used > MAX_OUTPUT:
            break
        kept.append(line)
    return text([*kept, cut.format(len(lines) - len(kept))], perf)
