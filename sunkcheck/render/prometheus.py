"""`--textfile`: Prometheus text exposition for node_exporter's textfile collector. Label values are
bounded (names and ids, never messages); HELP/TYPE once per metric; the file ends with a newline."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sunkcheck.model import DaemonSetCounts, NodeSetCounts, PoolCounts, Report, Result, SlurmCounts, Status
from sunkcheck.text import safe


@dataclass(frozen=True)
class Gauges:
    """A target's numbers under one metric name for NodeSets and DaemonSets; None where unknown."""

    desired: int | None = None
    feasible: int | None = None
    current: int | None = None
    ready: int | None = None
    misscheduled: int | None = None
    slurm_nodes: int | None = None
    pool_nodes: int | None = None
    feasible_computed: int | None = None


def gauges(r: Result) -> Gauges:
    """The status columns of the NodeSet or DaemonSet (a DaemonSet's FEASIBLE: the Nodes eligible by
    sunkcheck) and the Slurm nodes sinfo lists."""
    nodeset, daemonset, slurm = r.counts(NodeSetCounts), r.counts(DaemonSetCounts), r.counts(SlurmCounts)
    slurm_nodes = slurm.slurm_nodes if slurm is not None else None
    if nodeset is not None:
        return Gauges(nodeset.desired, nodeset.feasible, nodeset.current, nodeset.ready, nodeset.misscheduled,
                      slurm_nodes, nodeset.pool_nodes, nodeset.feasible_computed)
    if daemonset is not None:
        return Gauges(daemonset.desired, daemonset.eligible_computed, daemonset.current, daemonset.ready,
                      daemonset.misscheduled, slurm_nodes)
    return Gauges(slurm_nodes=slurm_nodes)


HELP = {
    "up": "1 when sunkcheck could run its checks, 0 when it could not (see its exit code and stderr).",
    "last_run_timestamp_seconds": "When what these metrics say was last current (Unix time): when sunkcheck ran, "
                                  "or last heard from the API server before it failed.",
    "status": "Worst status per target: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
    "desired": "DESIRED: Pods the workload wants (a NodeSet's replicas when set: it runs at most FEASIBLE of them).",
    "feasible": "FEASIBLE: Nodes the workload could use (DaemonSets: eligible Nodes).",
    "current": "CURRENT: Nodes running the workload's Pod.",
    "ready": "READY: Nodes whose Pod is Ready.",
    "misscheduled": "MISSCHEDULED: Pods on Nodes that no longer match.",
    "slurm_nodes": "Slurm nodes sinfo lists for the NodeSet (its partition, or named like its Pods).",
    "pool_nodes": "Nodes of the NodeSet's pool(s).",
    "feasible_computed": "Nodes the NodeSet could use, as sunkcheck judges them (beside the status's FEASIBLE).",
    "nodepool_target_nodes": "Node Pool TARGET.",
    "nodepool_current_nodes": "Node Pool CURRENT.",
    "symptom": "1 for each troubleshooting-table row that applies (suppressed rows carry suppressed=\"true\").",
}


def _escape(value: str) -> str:
    """A label value in the exposition format, without the escapes and controls a cluster's text can carry."""
    return safe(value, one_line=True).replace("\\", "\\\\").replace('"', '\\"')


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _target(r: Result) -> dict:
    return {"context": r.context, "kind": r.kind, "namespace": r.namespace, "name": r.name}


def _samples(report: Report) -> dict[str, list[str]]:
    samples: dict[str, list[str]] = {name: [] for name in HELP}
    pools: dict[tuple[str, str], PoolCounts] = {}
    for r in report.results:
        samples["status"].append(f"{_labels(**_target(r))} {r.status.exit_code}")
        for metric, value in asdict(gauges(r)).items():
            if value is not None:
                samples[metric].append(f"{_labels(**_target(r))} {int(value)}")
        for pool, counts in r.pool_sizes:  # each pool alone: an alert on CURRENT < TARGET fires for any of them
            pools[(r.context, pool)] = counts
        for s in r.symptoms:
            labels = _labels(**_target(r), id=s.id, severity=s.severity.value, suppressed=str(s.suppressed).lower())
            samples["symptom"].append(f"{labels} 1")
    for (context, pool), known in sorted(pools.items()):
        samples["nodepool_target_nodes"].append(f"{_labels(context=context, pool=pool)} {known.target}")
        samples["nodepool_current_nodes"].append(f"{_labels(context=context, pool=pool)} {known.current}")
    return samples


def render_textfile(report: Report | None, now: float, up: bool = True) -> str:
    """The exposition for a run; `report` None means the run could not check anything (sunkcheck_up 0), as does
    `up` False (serve: a source whose reads keep failing, its last state not reported), a report that judged
    nothing (`judged`), or one a --wait ended with while a source it needs was failing (Report.failing)."""
    return _exposition(_samples(report) if report is not None else {},
                       report is not None and up and judged(report) and not report.failing, now)


def judged(report: Report) -> bool:
    """Whether `report` judged anything: a step of a target known, or no error (a --wait ending while its API server
    is down keeps its targets, every step UNKNOWN: nothing was checked)."""
    return not report.errors or any(s.status is not Status.UNKNOWN for r in report.results for s in r.steps)


def render_unknown(report: Report | None, now: float) -> str:
    """What stands in for the exposition when it cannot be written whole (a full disk, a file size limit):
    sunkcheck_up 0 and every target UNKNOWN, a few hundred bytes, so that no earlier OK stays."""
    unknown = [f"{_labels(**_target(r))} {Status.UNKNOWN.exit_code}" for r in (report.results if report else ())]
    return _exposition({"status": unknown}, False, now)


def _exposition(samples: dict[str, list[str]], up: bool, now: float) -> str:
    samples = {**samples, "up": [f" {int(up)}"], "last_run_timestamp_seconds": [f" {now:.3f}"]}
    lines = []
    for name, help_text in HELP.items():
        if not samples.get(name):
            continue
        lines += [f"# HELP sunkcheck_{name} {help_text}", f"# TYPE sunkcheck_{name} gauge"]
        lines += [f"sunkcheck_{name}{sample}" for sample in samples[name]]
    return "\n".join(lines) + "\n"
