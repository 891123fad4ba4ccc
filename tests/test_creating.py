"""slurmd Pods not created yet on Nodes that turned Ready moments ago are being created, not missing:
slurmd-pods-missing allows CREATE_GRACE from a Node's Ready transition, a time its kubelet writes, believed only up to
the API server's clock; check, --wait and serve judge alike, and serve and the wait judge again when the grace ends,
with no event."""

from __future__ import annotations

import copy
import datetime
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from sunkcheck import snapshot
from sunkcheck.analyze.pods import CREATE_GRACE, creating_until
from sunkcheck.collect.kube import cluster_role
from sunkcheck.converge import ages_in, judged_again_at
from sunkcheck.model import Report, Result, Status
from sunkcheck.pipeline import diagnose
from sunkcheck.target import Target
from tests.conftest import FIXTURES, RECORDED, judged, run

READ = RECORDED
"""When slurmd-pods-being-created was recorded (its meta.json): its 4 new Nodes turned Ready 20 s before."""
READY = READ - datetime.timedelta(seconds=20)
ENDS = READY + datetime.timedelta(seconds=CREATE_GRACE)
NEW = ("g118188", "g307b8b", "gc80620", "gf99f97")
FORMS = {"watched": {}, "polling": {"rbac": cluster_role()}}
"""The wait on watches, and polling (a role without watch)."""


def being_created() -> snapshot.Snapshot:
    return snapshot.load(FIXTURES / "slurmd-pods-being-created")



def ids(result: Result) -> list[str]:
    return [s.id for s in result.symptoms]


def step(result: Result, name: str) -> str:
    return next(s.summary for s in result.steps if s.name == name)


def ready_at(snap: snapshot.Snapshot, when: str, names: tuple[str, ...] = NEW) -> snapshot.Snapshot:
    """`snap` with the Ready condition of the Nodes `names` turned True at `when` (by their kubelet's clock)."""
    nodes = []
    for node in snap.nodes or ():
        if node["metadata"]["name"] in names:
            node = copy.deepcopy(node)
            next(c for c in node["status"]["conditions"] if c["type"] == "Ready")["lastTransitionTime"] = when
        nodes.append(node)
    return replace(snap, nodes=tuple(nodes))


def test_pods_not_created_yet_on_nodes_ready_moments_ago_are_being_created_and_judged_again_when_the_grace_ends() -> None:
    result = judged(being_created())
    assert (ids(result), result.status) == ([], Status.OK), result.symptoms
    assert step(result, "nodeset").endswith("; 4 slurmd Pods being created (on Nodes Ready less than 2m ago)")
    assert next(s.status for s in result.steps if s.name == "nodeset") is Status.OK
    assert (result.starting_until, result.clock) == ((ENDS,) * 4, READ)
    assert judged_again_at(result) == ENDS and ages_in(Report((result,))) == CREATE_GRACE - 20
    # a second before the grace ends, still being created; at its end, missing
    assert ids(judged(being_created(), ENDS - datetime.timedelta(seconds=1))) == []
    late = judged(being_created(), ENDS)
    assert (ids(late), late.status, late.starting_until) == (["slurmd-pods-missing"], Status.WARNING, ())
    assert "being created" not in step(late, "nodeset") and judged_again_at(late) is None


def test_the_recorded_cases_past_the_grace_and_a_pod_missing_on_an_old_node_fire() -> None:
    [late] = diagnose(snapshot.load(FIXTURES / "slurmd-pods-missing-past-creation-grace"), Target()).results
    assert (ids(late), late.starting_until) == (["slurmd-pods-missing"], ())
    # the new Nodes' grace covers their 4 Pods, never the old Node's: missing, reported beside them
    [beside] = diagnose(snapshot.load(FIXTURES / "slurmd-pods-missing-beside-being-created"), Target()).results
    assert ids(beside) == ["slurmd-pods-missing"] and beside.starting_until == (ENDS,) * 4
    assert "4 slurmd Pods being created" in step(beside, "nodeset")


def test_a_grace_is_given_no_more_than_the_pods_the_nodeset_falls_short_of() -> None:
    """spec.replicas 6 on the 8 Nodes: 2 Pods being created, never 4 (2 of the new Nodes will get none)."""
    snap = being_created()
    nodeset = copy.deepcopy((snap.nodesets or ())[0])
    nodeset["spec"]["replicas"] = 6
    nodeset["status"]["desiredNumberScheduled"] = 6
    result = judged(replace(snap, nodesets=(nodeset,)))
    assert "slurmd-pods-missing" not in ids(result) and "; 2 slurmd Pods being created" in step(result, "nodeset")


@pytest.mark.parametrize(("when", "graced"), [
    ("2026-11-29T09:12:40Z", True),  # the server's second itself
    ("2026-11-29T09:12:41Z", True),  # the second the cluster's time (a Date header, whole seconds) trails by
    ("2026-11-29T09:12:45Z", False),  # a kubelet ahead of the server: believed, it would extend the grace
    ("2099-01-01T00:00:00Z", False),
    ("2026-11-29T09:10:41Z", True),  # a kubelet behind: the grace shortened, never lengthened
    ("2026-11-29T09:10:40Z", False),  # CREATE_GRACE ago: over
    ("not a time", False),
])
def test_the_kubelets_ready_transition_shortens_the_grace_never_extends_it(when: str, graced: bool) -> None:
    result = judged(ready_at(being_created(), when))
    assert ids(result) == ([] if graced else ["slurmd-pods-missing"])
    # the grace never ends later than CREATE_GRACE past the server's time (the clock, and the second it trails by)
    assert all(at <= READ + datetime.timedelta(seconds=CREATE_GRACE + 1) for at in result.starting_until)


def test_no_grace_without_the_clusters_time_nor_for_a_node_not_ready() -> None:
    assert ids(judged(being_created(), None)) == ["slurmd-pods-missing"]
    node = copy.deepcopy(next(n for n in being_created().nodes or () if n["metadata"]["name"] == NEW[0]))
    next(c for c in node["status"]["conditions"] if c["type"] == "Ready")["status"] = "False"
    assert creating_until(node, READ) is None


def served_at(serve: Callable[..., Any], at: datetime.datetime, **kwargs: Any) -> Any:
    """slurmd-pods-being-created served by a test API server whose clock reads `at` as it starts (its answers' Date)."""
    return serve("slurmd-pods-being-created", skew=at.timestamp() - time.time(), **kwargs)


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_while_pods_are_being_created_waits_for_them_without_reporting_them(form: str,
                                                                                 serve: Callable[..., Any]) -> None:
    served_at(serve, READ, **FORMS[form])
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    doc = r.json()
    assert (r.code, doc["status"], doc["results"][0]["symptoms"]) == (1, "warning", []), r.err
    assert "READY 4/8" in doc["never_converged"]


def test_serve_logs_no_warning_while_pods_are_being_created_and_judges_again_when_the_grace_ends(
        serve: Callable[..., Any]) -> None:
    """A scale-up's Nodes turned Ready before SUNK created their Pods: serve stays ok (no `ok -> warning` a cron
    would page on); 6 s later, nothing changed on the server, the grace ends and the Pods are reported missing, as a
    fresh check then says."""
    from tests.test_serve import checked, eventually, served, serving, verdict

    api = served_at(serve, ENDS - datetime.timedelta(seconds=6))
    version, lines = api.state.version, list[str]()
    with serving(api, lines=lines) as service:
        assert served(service)["status"] == "ok"
        # the grace ends by the latest recent Date, which leads the earliest (the Nodes' age) by under a second
        [(key, at)] = service.loop.ageing.items()
        assert key == ("tenant-slurm", "slurm-cpu-batch") and ENDS - datetime.timedelta(seconds=1) < at <= ENDS
        doc = eventually(lambda: (d := served(service))["status"] == "warning" and d, timeout=20)
        assert doc, f"never judged again: {served(service)['status']}"
        assert [s["id"] for s in doc["results"][0]["symptoms"]] == ["slurmd-pods-missing"], doc
        said = [line.split(" ", 1)[1] for line in lines if "slurm-cpu-batch" in line]
        assert said[-1] == "NodeSet tenant-slurm/slurm-cpu-batch: ok -> warning; appeared: slurmd-pods-missing", said
        assert api.state.version == version  # no object changed: no event
        assert verdict(doc) == verdict(checked(api))
