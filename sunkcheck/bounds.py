"""Every output bounded (docs/limits.md): a Node with 10,000 taints is 10,000 reasons, 10,000 evidence lines
and 80,000 commands in a fix, which no reader wants and no terminal or monitor should receive. Each list keeps
its first LIMIT items and says how many it left out; each line of text keeps its first LINE characters.
`--limit 0` lifts both caps. A fix is cut only between its commands, never inside one: what is printed
still pastes as printed."""

from __future__ import annotations

from dataclasses import replace
from itertools import groupby

from sunkcheck.model import Check, Explanation, NodeVerdict, Omitted, Report, Result, Symptom

LIMIT = 50
"""Items of each list a report shows: a Node's reasons, a row's evidence lines, the commands on one line of a fix,
the findings of one linted definition, the comparisons of each check in the deep view of a Node."""
LINE = 1000
"""Characters of one line of text: a summary, a reason, an evidence or an error line."""
LIFT = "--limit 0 shows all"
COMMANDS = {
    "kubectl": {"annotate", "apply", "cordon", "create", "delete", "describe", "drain", "edit", "get", "label", "logs",
                "patch", "rollout", "scale", "taint", "uncordon"},
    "scontrol": {"show", "update"},
    "sunkcheck": {"check", "explain", "lint", "rbac", "rules", "serve", "snapshot"},
    "helm": {"get", "install", "template", "upgrade"},
    "squeue": set(), "sinfo": set(), "ssh": set(),
}
"""The programs a fix's command lines run, and the verbs they run them with (an option may follow any of them
instead): a line opening with both is a command, cut or wrapped never inside; a sentence opening with a cluster
string named like a program (a Node called `ssh`: "ssh carries the taint ...") is not."""


def is_command(line: str) -> bool:
    """Whether a fix's line is a command by the form the fix writers give one: a program, then its verb or an option."""
    words = line.split(" ", 2)
    verbs = COMMANDS.get(words[0])
    return verbs is not None and len(words) > 1 and (words[1] in verbs or words[1].startswith("-"))
YAML_LINES = 4
"""Lines of a fix for each item a list shows: a YAML snippet's match expression takes up to four."""


def bounded(report: Report, limit: int = LIMIT) -> Report:
    """`report` with every list and line within the caps; `limit` 0 leaves it whole."""
    if not limit:
        return report
    return replace(report, results=tuple(_result(r, limit) for r in report.results),
                   errors=tuple(line(e) for e in report.errors))


def bounded_explanation(e: Explanation, limit: int = LIMIT) -> Explanation:
    """`explain` within the caps: each Node's reasons, and in the deep view of one Node each check's comparisons."""
    if not limit:
        return e
    kept: list[Check] = []
    omitted: list[Omitted] = []
    for _, comparisons in groupby(e.checks, key=lambda c: c.check):
        shown, left = _comparisons(list(comparisons), limit)
        kept += shown
        omitted += [left] if left.failing or left.ok else []
    return replace(e, summary=line(e.summary), nodes=tuple(_node(v, limit) for v in e.nodes),
                   node=e.node and _node(e.node, limit), checks=tuple(kept), checks_omitted=tuple(omitted))


def _comparisons(checks: list[Check], limit: int) -> tuple[list[Check], Omitted]:
    """One check's first `limit` comparisons, failing ones first (in their order), each value a line within LINE;
    and how many it left out: a Node with 10,000 taints is 10,000 taint comparisons, and a failing one is never
    hidden behind passing ones."""
    failing = [i for i, c in enumerate(checks) if not c.ok]
    passing = [i for i, c in enumerate(checks) if c.ok]
    kept_failing, kept_passing = failing[:limit], passing[:max(0, limit - len(failing))]
    chosen = set(kept_failing + kept_passing)
    shown = [replace(c, subject=line(c.subject), wanted=line(c.wanted), found=line(c.found))
             for i, c in enumerate(checks) if i in chosen]
    return shown, Omitted(checks[0].check, len(failing) - len(kept_failing), len(passing) - len(kept_passing))


def line(text: str) -> str:
    """`text` up to LINE characters, saying how many more it had."""
    if len(text) <= LINE:
        return text
    return f"{text[:LINE]}... ({len(text) - LINE:,} more characters; {LIFT})"


def _result(r: Result, limit: int) -> Result:
    # the most severe rows, in their order: a definition with 10,000 unknown keys keeps its one error
    kept = set(sorted(range(len(r.symptoms)), key=lambda i: (r.symptoms[i].suppressed, -r.symptoms[i].severity.rank))[:limit])
    return replace(r, steps=tuple(replace(s, summary=line(s.summary)) for s in r.steps),
                   symptoms=tuple(_symptom(s, limit) for i, s in enumerate(r.symptoms) if i in kept),
                   symptoms_omitted=r.symptoms_omitted + len(r.symptoms) - len(kept),
                   nodes=tuple(_node(v, limit) for v in r.nodes))


def _node(v: NodeVerdict, limit: int) -> NodeVerdict:
    if not v.reasons:  # a feasible Node, most of thousands: nothing to cap
        return v
    kept = v.reasons[:limit]
    return replace(v, reasons=tuple(replace(x, detail=line(x.detail)) for x in kept),
                   reasons_omitted=v.reasons_omitted + len(v.reasons) - len(kept))


def _symptom(s: Symptom, limit: int) -> Symptom:
    kept = s.evidence[:limit]
    fix = _cut_runs("\n".join(_fix_line(x, limit) for x in s.fix.split("\n")).split("\n"), limit)
    return replace(s, evidence=tuple(line(e) for e in kept), evidence_omitted=s.evidence_omitted + len(s.evidence) - len(kept),
                   fix="\n".join(_cut_lines(fix, YAML_LINES * limit)))


def _cut_lines(lines: list[str], most: int) -> list[str]:
    """A fix of more than `most` lines (a YAML snippet of thousands of expressions) cut before an item or a
    command, with a line of words saying how many it left out: pasted, that line makes the YAML fail to parse
    rather than apply part of it."""
    if len(lines) <= most:
        return lines
    cut = next((i for i in range(most, 0, -1) if lines[i].lstrip().startswith("- ") or _verb(lines[i])), most)
    return [*lines[:cut], f"({len(lines) - cut:,} more lines left out: {LIFT})"]


def _cut_runs(lines: list[str], limit: int) -> list[str]:
    """`lines` with each run of more than `limit` commands alike (one program and verb, e.g. `kubectl taint` a line
    per Node and taint) cut after its first `limit`, and a line of words saying how many it left out: as
    `_fix_line` cuts within a line, between commands only."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        verb, j = _verb(lines[i]), i + 1
        while verb and j < len(lines) and _verb(lines[j]) == verb:
            j += 1
        out += lines[i:min(j, i + limit)]
        if j - i > limit:
            out.append(f"({j - i - limit:,} more like these left out: {LIFT})")
        i = j
    return out


def _verb(text: str) -> tuple[str, ...]:
    """A command's program and verb (`kubectl taint`), or () for a line that is no command."""
    words = text.split(" ", 4)
    if words[1:2] == ["--context"]:  # bound to a context (symptoms.fixes.pinned): the verb follows it
        words = [words[0], *words[3:]]
    return tuple(words[:2]) if is_command(text) else ()


def _fix_line(text: str, limit: int) -> str:
    """A line of a fix with at most `limit` of its `; `-separated commands, then a line of words saying how many
    it left out (a command and prose never share a line). A command or YAML line past LINE (a 1 MB label value
    quoted) is never cut, which would change what it sets: a line of words stands in its place."""
    parts = text.split("; ")
    if any(len(part) > LINE for part in parts[:limit]):
        return f"(a line of {len(text):,} characters left out: {LIFT})"
    if len(parts) <= limit:
        return text
    return "; ".join(parts[:limit]) + f"\n({len(parts) - limit:,} more like these left out: {LIFT})"
