"""Every output bounded (docs/limits.md): a Node with 10,000 taints is 10,000 reasons, 10,000 evidence lines
and 80,000 commands in a fix, which no reader wants and no terminal or monitor should receive. Each list keeps
its first LIMIT items and says how many it left out; each line of text keeps its first LINE characters.
`--limit 0` lifts both caps. A fix is cut only between its commands, never inside one: what is printed
still pastes as printed."""

from __future__ import annotations

from dataclasses import replace

from sunkcheck.model import Explanation, NodeVerdict, Report, Result, Symptom

LIMIT = 50
"""Items of each list a report shows: a Node's reasons, a row's evidence lines, the commands on one line of a fix."""
LINE = 1000
"""Characters of one line of text: a summary, a reason, an evidence or an error line."""
LIFT = "--limit 0 shows all"


def bounded(report: Report, limit: int = LIMIT) -> Report:
    """`report` with every list and line within the caps; `limit` 0 leaves it whole."""
    if not limit:
        return report
    return replace(report, results=tuple(_result(r, limit) for r in report.results),
                   errors=tuple(line(e) for e in report.errors))


def bounded_explanation(e: Explanation, limit: int = LIMIT) -> Explanation:
    """`explain`'s per-Node table within the caps (the deep view of one Node stays whole: it is one Node's)."""
    if not limit:
        return e
    return replace(e, summary=line(e.summary), nodes=tuple(_node(v, limit) for v in e.nodes))


def line(text: str) -> str:
    """`text` up to LINE characters, saying how many more it had."""
    if len(text) <= LINE:
        return text
    return f"{text[:LINE]}... ({len(text) - LINE:,} more characters; {LIFT})"


def _result(r: Result, limit: int) -> Result:
    return replace(r, steps=tuple(replace(s, summary=line(s.summary)) for s in r.steps),
                   symptoms=tuple(_symptom(s, limit) for s in r.symptoms),
                   nodes=tuple(_node(v, limit) for v in r.nodes))


def _node(v: NodeVerdict, limit: int) -> NodeVerdict:
    kept = v.reasons[:limit]
    return replace(v, reasons=tuple(replace(x, detail=line(x.detail)) for x in kept),
                   reasons_omitted=v.reasons_omitted + len(v.reasons) - len(kept))


def _symptom(s: Symptom, limit: int) -> Symptom:
    kept = s.evidence[:limit]
    return replace(s, evidence=tuple(line(e) for e in kept), evidence_omitted=s.evidence_omitted + len(s.evidence) - len(kept),
                   fix="\n".join(_cut_runs("\n".join(_fix_line(x, limit) for x in s.fix.split("\n")).split("\n"), limit)))


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
    words = text.split(" ", 2)
    return tuple(words[:2]) if len(words) >= 2 and words[0] in ("kubectl", "scontrol", "squeue") else ()


def _fix_line(text: str, limit: int) -> str:
    """A line of a fix with at most `limit` of its `; `-separated commands, then a line of words saying how many
    it left out (a command and prose never share a line)."""
    parts = text.split("; ")
    if len(parts) <= limit:
        return text
    return "; ".join(parts[:limit]) + f"\n({len(parts) - limit:,} more like these left out: {LIFT})"
