"""Step counts are typed hand-offs: every count a step produces (its JSON `counts`) reaches each consumer
that reads it — Nagios perfdata, Prometheus gauges, the summary table and `--wait` — over every fixture.
A renamed or dropped count fails here instead of silently dropping a metric or changing when --wait stops."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from sunkcheck import snapshot
from sunkcheck.analyze import pods as pd
from sunkcheck.converge import pending
from sunkcheck.model import PodCounts, Report, Result
from sunkcheck.pipeline import diagnose
from sunkcheck.render import json as json_render
from sunkcheck.render import nagios, prometheus
from sunkcheck.render.order import summary_headers, summary_row
from sunkcheck.target import SlurmLogin, Target
from tests.conftest import CASES, FIXTURES, expected

# (step, JSON count) -> the name each consumer publishes it under (docs/unattended.md), written here
PERFDATA = {("nodeset", "desired"): "desired", ("nodeset", "feasible"): "feasible", ("nodeset", "current"): "current",
            ("nodeset", "ready"): "ready", ("nodeset", "misscheduled"): "misscheduled",
            ("daemonset", "desired"): "desired", ("daemonset", "current"): "current",
            ("daemonset", "ready"): "ready", ("daemonset", "misscheduled"): "misscheduled",
            ("nodepool", "target"): "pool_target", ("nodepool", "current"): "pool_current",
            ("sinfo", "slurm_nodes"): "slurm_nodes"}
GAUGES = {("nodeset", "desired"): "desired", ("nodeset", "feasible"): "feasible", ("nodeset", "current"): "current",
          ("nodeset", "ready"): "ready", ("nodeset", "misscheduled"): "misscheduled",
          ("daemonset", "desired"): "desired", ("daemonset", "eligible_computed"): "feasible",
          ("daemonset", "current"): "current", ("daemonset", "ready"): "ready",
          ("daemonset", "misscheduled"): "misscheduled", ("sinfo", "slurm_nodes"): "slurm_nodes",
          ("nodeset", "pool_nodes"): "pool_nodes", ("nodeset", "feasible_computed"): "feasible_computed"}
SUMMARY_COLUMNS = ("desired", "feasible", "current", "ready")


def target(args: list[str]) -> Target:
    """The Target a fixture's expected.json `args` name (the flags its cases use)."""
    flags: dict[str, list[str]] = {}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        flags.setdefault(flag, []).append(value)
    return Target(daemonset=flags.get("--daemonset", [None])[0], namespace=flags.get("-n", [None])[0],
                  pools=tuple(flags.get("--pool", ())))


def case_report(case: str) -> Report:
    return diagnose(snapshot.load(FIXTURES / case), target(expected(case)["args"]))


def step_counts(result: Result) -> dict[tuple[str, str], int]:
    """What the producers set, as the JSON document publishes it."""
    doc = json_render.result_dict(result)
    return {(step["name"], key): value for step in doc["steps"] for key, value in step["counts"].items()}


@pytest.mark.parametrize("case", CASES)
def test_every_count_reaches_nagios_and_prometheus(case: str) -> None:
    report = case_report(case)
    exposition = prometheus.render_textfile(report, 0)
    for r in report.results:
        counts = step_counts(r)
        name = nagios.namer(report)(r)  # namespace/name where two targets share the name
        assert name == (f"{r.namespace}/{r.name}" if sum(t.name == r.name for t in report.results) > 1 else r.name)
        perfdata = dict(p.split("=") for p in nagios.perfdata(r, name))
        want = {f"'{name} {metric}'": value for key, metric in PERFDATA.items() if (value := counts.get(key)) is not None}
        assert {label: int(data.split(";")[0]) for label, data in perfdata.items()} == want
        labels = f'{{context="",kind="{r.kind}",namespace="{r.namespace}",name="{r.name}"}}'
        gauges = {metric: value for key, metric in GAUGES.items() if (value := counts.get(key)) is not None}
        got = {m.group(1): int(m.group(2)) for m in re.finditer(rf"^sunkcheck_(\w+){re.escape(labels)} (\d+)$",
                                                                    exposition, re.M) if m.group(1) != "status"}
        assert got == gauges
        row = summary_row(r, summary_headers([r]))[2:2 + len(SUMMARY_COLUMNS)]
        assert row == tuple(str(gauges[c]) if c in gauges else "-" for c in SUMMARY_COLUMNS)
        if ("nodepool", "target") in counts:  # a gauge for each pool that exists, alone: the step's counts are sums
            existing = {p["metadata"]["name"] for p in snapshot.load(FIXTURES / case).nodepools or ()}
            sizes = {(pool, metric): [int(m.group(1)) for m in re.finditer(
                rf'^sunkcheck_nodepool_{metric}_nodes{{context="",pool="{re.escape(pool)}"}} (\d+)$', exposition, re.M)]
                     for pool in r.pools for metric in ("target", "current")}
            known = [pool for pool in r.pools if pool in existing]
            assert {key for key, found in sizes.items() if found} == {(p, m) for p in known for m in ("target", "current")}
            for metric in ("target", "current"):
                assert sum(sizes[pool, metric][0] for pool in known) == counts["nodepool", metric]


def conditions(counts: dict[tuple[str, str], int]) -> set[str]:
    """What --wait still waits for, read from the JSON counts alone (docs/unattended.md: `--wait`)."""
    found = set()
    if ("nodeset", "observed_generation") in counts or ("daemonset", "observed_generation") in counts:
        found.add("status generation")
    if ("nodepool", "target") in counts and counts["nodepool", "current"] != counts["nodepool", "target"]:
        found.add("pool CURRENT")
    if ("nodeset", "pool_nodes") in counts:
        feasible = counts.get(("nodeset", "feasible"), counts["nodeset", "feasible_computed"])
        desired, ready, replicas = (counts.get(("nodeset", k)) for k in ("desired", "ready", "replicas"))
        # a Node in repair takes no Pod, nor one the NodeSet leaves out by name
        away = counts["nodeset", "pool_nodes_in_repair"] + counts["nodeset", "pool_nodes_left_out"]
        usable = counts["nodeset", "pool_nodes"] - away
        if feasible < usable:
            found.add("FEASIBLE")
        # DESIRED is replicas when set, else FEASIBLE; the NodeSet runs the lower of DESIRED and FEASIBLE
        size = None if desired is None else min(desired, feasible)
        if size is None or size != min(feasible if replicas is None else replicas, feasible):
            found.add("DESIRED")
        # READY = that size, or above it by at most the Nodes in repair (a cordoned Node keeps its running Pod)
        if ready is None or size is None or not size <= ready <= size + counts["nodeset", "pool_nodes_in_repair"]:
            found.add("READY")
        if ("sinfo", "slurm_nodes") in counts and counts["sinfo", "slurm_nodes"] != ready:
            found.add("Slurm nodes")
    if ("daemonset", "eligible_computed") in counts:
        if counts.get(("daemonset", "desired")) == 0:  # a DaemonSet on no Node has not converged
            found.add("DESIRED")
        for column in ("current", "ready"):
            if counts.get(("daemonset", column)) != counts.get(("daemonset", "desired")):
                found.add(column.upper())
    return found


@pytest.mark.parametrize("case", CASES)
def test_wait_reads_every_count_it_needs(case: str) -> None:
    report = case_report(case)
    for r in report.results:
        got = {p.rsplit(" ", 1)[0] for p in pending(r) if not p.endswith(" step unknown")}  # without "a/b"
        assert got == conditions(step_counts(r)), r.name


def test_wait_compares_slurm_nodes_with_ready() -> None:
    """The fixture with a recorded Slurm view, one Slurm node short of READY 4: its sinfo count reaches --wait."""
    snap = snapshot.load(FIXTURES / "slurm-count-mismatch")
    assert snap.sinfo is not None
    listed = json.loads(snap.sinfo.text)
    short = replace(snap.sinfo, text=json.dumps(listed | {"nodes": listed["nodes"][1:]}))
    result = diagnose(replace(snap, sinfo=short), Target()).results[0]
    assert pending(result) == ["Slurm nodes 3/4"]


def test_sinfo_step_gives_the_collectors_slurm_error() -> None:
    """Slurm's failure travels as its own field: the step shows it, and no other error line is taken for it."""
    snap = replace(snapshot.load(FIXTURES / "healthy-pool-name"), sinfo=None)
    wanted = Target(slurm=SlurmLogin("login.example"))
    failed = diagnose(snap, wanted, ("sinfo: cannot resolve host login.example",), "cannot resolve host login.example")
    step = next(s for s in failed.results[0].steps if s.name == "sinfo")
    assert (step.status.value, step.summary) == ("unknown", "cannot resolve host login.example")
    unrelated = diagnose(snap, wanted, ("sinfo: a collector line that is not Slurm's failure",))
    assert next(s for s in unrelated.results[0].steps if s.name == "sinfo").summary == "not captured"


def test_a_daemonsets_zero_counts_left_out_of_its_status_read_zero_not_unknown() -> None:
    """The API server leaves a DaemonSet's updatedNumberScheduled, numberAvailable and numberUnavailable out of the
    status when they are 0 (omitempty): a healthy DaemonSet as a real cluster serves it reads UNAVAILABLE 0, not
    "?"; a status the controller has not written yet (no desiredNumberScheduled) stays unknown."""
    snap = snapshot.load(FIXTURES / "ds-healthy")
    ds = (snap.daemonsets or ())[0]
    served = ds | {"status": {k: v for k, v in ds["status"].items() if k != "numberUnavailable"}}
    wanted = Target(daemonset=ds["metadata"]["name"])
    result = diagnose(replace(snap, daemonsets=(served,)), wanted).results[0]
    line = next(s.summary for s in result.steps if s.name == "daemonset")
    assert "UNAVAILABLE 0" in line and "?" not in line, line
    unwritten = ds | {"status": {}}
    result = diagnose(replace(snap, daemonsets=(unwritten,)), wanted).results[0]
    assert "UNAVAILABLE ?" in next(s.summary for s in result.steps if s.name == "daemonset")


def test_the_pods_count_of_pending_is_by_phase() -> None:
    """Two Pods bound to their Nodes but still creating their containers are Pending (their phase), beside one not
    yet bound; a finished one is not."""
    phases = [("a1", "Running"), ("a2", "Pending"), ("a3", "Pending"), (None, "Pending"), ("a4", "Succeeded")]
    pods = [{"metadata": {"name": f"p{i}"}, "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}
            for i, (node, phase) in enumerate(phases)]
    found = pd.summary(pods, {"hpc-a"}, dict.fromkeys(["a1", "a2", "a3", "a4"], "hpc-a"), 0)
    assert "4 on hpc-a, 0 elsewhere, 3 Pending" in found.text and found.counts == PodCounts(5, 4, 0, 3, 0, 0)
