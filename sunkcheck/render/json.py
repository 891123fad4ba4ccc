"""Contract 3: the versioned JSON document scripts parse."""

from __future__ import annotations

import json

from sunkcheck.model import Report, Result

SCHEMA = "sunkcheck/v1"


def report_dict(report: Report) -> dict:
    return {"schema": SCHEMA, "status": report.status.value,
            "results": [result_dict(r) for r in report.results], "errors": list(report.errors)}


def result_dict(r: Result) -> dict:
    return {
        "kind": r.kind, "namespace": r.namespace, "name": r.name, "pools": list(r.pools),
        **({"context": r.context} if r.context else {}),
        "pool_source": r.pool_source, "status": r.status.value,
        "steps": [{"name": s.name, "status": s.status.value, "summary": s.summary, "counts": s.counts} for s in r.steps],
        "symptoms": [{"id": s.id, "severity": s.severity.value, "title": s.title, "cause": s.cause, "fix": s.fix,
                      "evidence": list(s.evidence), "suppressed": s.suppressed} for s in r.symptoms],
        "nodes": [{"name": v.name, "pool": v.pool, "feasible": v.feasible, "placed": v.placed,
                   "reasons": [{"check": x.check, "detail": x.detail} for x in v.reasons]} for v in r.nodes],
    }


def render_report(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2, ensure_ascii=False) + "\n"
