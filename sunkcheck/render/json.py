"""`check -o json`: the versioned document scripts parse (its schema: sunkcheck/schemas/check.v1.json)."""

from __future__ import annotations

import json
from dataclasses import fields

from sunkcheck.model import Counts, Report, Result
from sunkcheck.symptoms.fixes import steps
from sunkcheck.text import json_escaped

SCHEMA = "sunkcheck/check/v1"  # was "sunkcheck/v1", which the schema still accepts until v2


def report_dict(report: Report) -> dict:
    return {"schema": SCHEMA, "status": report.status.value, **provenance(report),
            **({"unchecked": [u._asdict() for u in report.unchecked]} if report.unchecked else {}),
            "results": [result_dict(r) for r in report.results], "errors": list(report.errors)}


def provenance(report: Report) -> dict:
    """Where, when and how (fields added within v1): a source's empty fields are left out, never null."""
    from sunkcheck import __version__

    return {"sunkcheck": __version__, **({"checked_at": report.checked_at} if report.checked_at else {}),
            "sources": [{k: v for k, v in vars(s).items() if v and k != "meta"} for s in report.sources],
            "prediction": bool(report.predicted_from),
            **({"predicted_from": list(report.predicted_from)} if report.predicted_from else {}),
            **({"never_converged": report.never_converged} if report.never_converged else {})}


def result_dict(r: Result) -> dict:
    return {
        "kind": r.kind, "namespace": r.namespace, "name": r.name, "pools": list(r.pools),
        **({"context": r.context} if r.context else {}),
        "pool_source": r.pool_source, "status": r.status.value,
        **({"never_converged": r.unconverged} if r.unconverged else {}),
        "steps": [{"name": s.name, "status": s.status.value, "summary": s.summary, "counts": counts_dict(s.counts)}
                  for s in r.steps],
        "symptoms": [{"id": s.id, "severity": s.severity.value, "title": s.title, "cause": s.cause, "fix": s.fix,
                      "fix_steps": [{"kind": kind, "text": text} for kind, text in steps(s.fix)],
                      "evidence": list(s.evidence), "suppressed": s.suppressed,
                      **({"evidence_omitted": s.evidence_omitted} if s.evidence_omitted else {})} for s in r.symptoms],
        **({"symptoms_omitted": r.symptoms_omitted} if r.symptoms_omitted else {}),
        "notes": [{"id": n.id, "text": n.text, "hint": n.hint} for n in r.notes],
        "nodes": [{"name": v.name, "pool": v.pool, "feasible": v.feasible, "placed": v.placed,
                   "reasons": [{"check": x.check, "detail": x.detail} for x in v.reasons],
                   **({"reasons_omitted": v.reasons_omitted} if v.reasons_omitted else {})} for v in r.nodes],
    }


def counts_dict(counts: Counts | None) -> dict:
    """A step's JSON `counts`: its fields in order, without the columns the status lacks (never null)."""
    return {} if counts is None else {f.name: v for f in fields(counts) if (v := getattr(counts, f.name)) is not None}


ONE_LINE_ITEMS = frozenset({"nodes"})
"""Lists whose items each take one line: a 5,000-Node report stays readable and greppable, and it is
encoded at C speed (json.dumps with an indent runs the pure-Python encoder, a tenth of a live check)."""
_encode = json.JSONEncoder(ensure_ascii=False).encode


def render_report(report: Report) -> str:
    return json_escaped(_indented(report_dict(report))) + "\n"


def _indented(value: object, indent: str = "", one_line_items: bool = False) -> str:
    """json.dumps(value, indent=2), except the items of ONE_LINE_ITEMS lists."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        fields = (f"{inner}{_encode(k)}: {_indented(v, inner, k in ONE_LINE_ITEMS)}" for k, v in value.items())
        return "{\n" + ",\n".join(fields) + f"\n{indent}}}"
    if isinstance(value, list) and value:
        items = (inner + (_encode(v) if one_line_items else _indented(v, inner)) for v in value)
        return "[\n" + ",\n".join(items) + f"\n{indent}]"
    return _encode(value)
