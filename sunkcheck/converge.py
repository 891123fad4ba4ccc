"""What `--wait` waits for: the binding has converged when every count agrees (pure, from a Report)."""

from __future__ import annotations

from sunkcheck.analyze.nodeset import shown, wanted
from sunkcheck.model import Report, Result, Status


def pending(result: Result) -> list[str]:
    """The conditions not yet met for one target, in runbook order (empty when converged)."""
    counts = {s.name: s.counts for s in result.steps}
    unknown = [s.name for s in result.steps if s.status is Status.UNKNOWN]
    out = [f"{name} step unknown" for name in unknown]
    for c in counts.values():  # a status for an older spec says nothing about the latest one yet
        if "observed_generation" in c:
            out.append(f"status generation {c['observed_generation']}/{c['generation']}")
    pool = counts.get("nodepool") or {}
    if pool.get("target") is not None and pool.get("current") != pool.get("target"):
        out.append(f"pool CURRENT {pool.get('current')}/{pool['target']}")
    if "nodeset" in counts:
        out += _nodeset(counts["nodeset"], counts.get("sinfo") or {})
    if "daemonset" in counts:
        ds = counts["daemonset"]
        for column in ("current", "ready"):
            if ds.get(column) != ds.get("desired"):
                out.append(f"{column.upper()} {ds.get(column)}/{ds.get('desired')}")
    return out


def _nodeset(ns: dict, sinfo: dict) -> list[str]:
    out = []
    # a status without FEASIBLE is judged by sunkcheck's count; a count the status lacks is not converged
    feasible = ns.get("feasible", ns.get("feasible_computed"))
    pool_nodes, desired, ready = ns.get("pool_nodes"), ns.get("desired"), ns.get("ready")
    if feasible is not None and pool_nodes is not None and feasible < pool_nodes:
        out.append(f"FEASIBLE {feasible}/{pool_nodes}")
    should = wanted(feasible, ns.get("replicas"))
    if desired is None or desired != should:  # an explicit replicas below FEASIBLE is an intentional cap
        out.append(f"DESIRED {shown(desired)}/{shown(should)}")
    if ready is None or ready != desired:
        out.append(f"READY {shown(ready)}/{shown(desired)}")
    if sinfo.get("slurm_nodes") is not None and sinfo["slurm_nodes"] != ready:
        out.append(f"Slurm nodes {sinfo['slurm_nodes']}/{ready}")
    return out


def progress(report: Report) -> str:
    """One line: what each target still waits for."""
    parts = [f"{r.name}: {', '.join(p)}" for r in report.results if (p := pending(r))]
    if report.errors:
        parts.append(f"{len(report.errors)} check(s) could not run")
    return "; ".join(parts) or "converged"


def converged(report: Report) -> bool:
    return not report.errors and bool(report.results) and not any(pending(r) for r in report.results)
