"""slurmd Pods seconds old after a scale-up are starting, not failing: slurmd-not-ready waits START_GRACE from a Pod's
creation, by the API server's clock, unless one of its containers failed; check, --wait and serve judge alike, and
serve and the wait judge again when the grace ends, with no event."""

from __future__ import annotations

import copy
import datetime
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from sunkcheck import snapshot
from sunkcheck.analyze.pods import START_GRACE, failed
from sunkcheck.collect.kube import cluster_role
from sunkcheck.converge import ages_in, judged_again_at
from sunkcheck.model import Report, Result, Status
from sunkcheck.pipeline import diagnose
from sunkcheck.target import Target
from tests.conftest import FIXTURES, RECORDED, Clock, judged, run

READ = RECORDED
"""When slurmd-starting was recorded (its meta.json): the 4 new slurmd Pods were created 20 s before."""
CREATED = READ - datetime.timedelta(seconds=20)
ENDS = CREATED + datetime.timedelta(seconds=START_GRACE)
NEW = ("slurm-cpu-batch-012-009", "slurm-cpu-batch-012-010", "slurm-cpu-batch-012-011", "slurm-cpu-batch-012-012")
FORMS = {"watched": {}, "polling": {"rbac": cluster_role()}}
"""The wait on watches, and polling (a role without watch)."""


def starting() -> snapshot.Snapshot:
    return snapshot.load(FIXTURES / "slurmd-starting")



def not_ready(result: Result) -> list[str]:
    """The Pods slurmd-not-ready names ([] when it does not fire)."""
    found = [s for s in result.symptoms if s.id == "slurmd-not-ready"]
    return [e.split()[1] for s in found for e in s.evidence]


def pods_step(result: Result) -> str:
    return next(s.summary for s in result.steps if s.name == "pods")


def pod(snap: snapshot.Snapshot, name: str) -> dict:
    return next(p for p in snap.pods or () if p["metadata"]["name"] == name)


def edited(snap: snapshot.Snapshot, name: str, edit: Callable[[dict], None]) -> snapshot.Snapshot:
    """`snap` with `edit` applied to a copy of the Pod `name`."""
    pods = []
    for pod in snap.pods or ():
        if pod["metadata"]["name"] == name:
            pod = copy.deepcopy(pod)
            edit(pod)
        pods.append(pod)
    return replace(snap, pods=tuple(pods))


def test_slurmd_pods_seconds_old_are_starting_said_in_the_pods_step_and_judged_again_when_their_grace_ends() -> None:
    result = judged(starting())
    assert (not_ready(result), result.status) == ([], Status.OK), result.symptoms
    assert "4 Ready; 4 starting (created less than 5m ago, no container failed)" in pods_step(result)
    assert next(s.status for s in result.steps if s.name == "pods") is Status.OK
    assert (result.starting_until, result.clock) == ((ENDS,) * 4, READ)
    assert judged_again_at(result) == ENDS and ages_in(Report((result,))) == START_GRACE - 20
    # a second before the grace ends, still starting; at its end, not Ready for as long as a Pod may take: reported
    assert not_ready(judged(starting(), ENDS - datetime.timedelta(seconds=1))) == []
    late = judged(starting(), ENDS)
    assert (not_ready(late), late.status, late.starting_until) == (list(NEW), Status.WARNING, ())
    assert "starting" not in pods_step(late) and judged_again_at(late) is None


@pytest.mark.parametrize(("status", "fails"), [
    ({"restartCount": 1, "state": {"running": {}}}, True),  # it ran, exited and ran again
    ({"restartCount": 0, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}, True),
    ({"restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}, True),
    ({"restartCount": 0, "state": {"waiting": {"reason": "ErrImagePull"}}}, True),
    ({"restartCount": 0, "state": {"waiting": {"reason": "CreateContainerConfigError"}}}, True),
    ({"restartCount": 0, "state": {"waiting": {"reason": "CreateContainerError"}}}, True),
    ({"restartCount": 0, "state": {"waiting": {"reason": "InvalidImageName"}}}, True),  # any reason but a first start's
    ({"restartCount": 0, "state": {"waiting": {}}}, True),
    ({"restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}, True),  # slurmd never ends
    ({"restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}, False),
    ({"restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}, False),
    ({"restartCount": 0, "state": {"running": {"startedAt": "2026-11-29T09:12:35Z"}}}, False),  # up, not Ready yet
    ({"restartCount": None, "state": None}, False),  # Go's nil: nothing said yet
])
def test_a_failed_container_is_never_starting_however_young_the_pod(status: dict, fails: bool) -> None:
    def fail(pod: dict) -> None:
        pod["status"]["containerStatuses"][0] |= status

    assert failed(pod(edited(starting(), NEW[1], fail), NEW[1])) is fails
    assert not_ready(judged(edited(starting(), NEW[1], fail))) == ([NEW[1]] if fails else [])


@pytest.mark.parametrize(("init", "fails"), [
    ({"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}, False),  # done, as an init container ends
    ({"state": {"terminated": {"exitCode": 1, "reason": "Error"}}}, True),
    ({"restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}, True),  # Init:CrashLoopBackOff
    ({"state": {"running": {}}}, False),
])
def test_an_init_container_that_completed_has_not_failed_one_that_crashed_has(init: dict, fails: bool) -> None:
    def with_init(pod: dict) -> None:
        pod["status"]["initContainerStatuses"] = [{"name": "wait-for-controller", "ready": False, "restartCount": 0} | init]

    assert not_ready(judged(edited(starting(), NEW[2], with_init))) == ([NEW[2]] if fails else [])


def test_the_grace_is_bounded_by_times_the_api_server_wrote() -> None:
    """No time to age a Pod by (a recording that says not when), no grace; a creation time far ahead of the cluster's
    clock is none an API server wrote (its clock trails the server's by CLOCK_LAG at most): no grace, never one that
    lasts, not even one minutes ahead, within START_GRACE of it (before: given, until its creation time plus
    START_GRACE, as far as ten minutes); a Pod being deleted is not starting."""
    assert not_ready(judged(starting(), None)) == list(NEW)

    def future(pod: dict) -> None:
        pod["metadata"]["creationTimestamp"] = "2099-01-01T00:00:00Z"

    assert not_ready(judged(edited(starting(), NEW[0], future))) == [NEW[0]]

    for created, graced in (("2026-11-29T09:12:41Z", True), ("2026-11-29T09:12:42Z", False),
                            ("2026-11-29T09:17:00Z", False)):  # a second ahead of a clock that trails, more
        def ahead(pod: dict, at: str = created) -> None:
            pod["metadata"]["creationTimestamp"] = at

        assert not_ready(judged(edited(starting(), NEW[0], ahead))) == ([] if graced else [NEW[0]]), created

    def deleting(pod: dict) -> None:
        pod["metadata"]["deletionTimestamp"] = "2026-11-29T09:12:39Z"

    assert not_ready(judged(edited(starting(), NEW[3], deleting))) == [NEW[3]]


def test_the_recorded_cases_a_crash_loop_20_s_old_fires_and_pods_10_minutes_old_fire() -> None:
    [crash] = diagnose(snapshot.load(FIXTURES / "slurmd-starting-crashloop"), Target()).results
    assert (not_ready(crash), crash.starting_until) == ([NEW[0]], (ENDS,) * 3)
    [old] = diagnose(snapshot.load(FIXTURES / "slurmd-not-ready-past-grace"), Target()).results
    assert (not_ready(old), old.starting_until) == (list(NEW), ())


def served_at(serve: Callable[..., Any], at: datetime.datetime, **kwargs: Any) -> Any:
    """slurmd-starting served by a test API server whose clock reads `at` as it starts (its answers' Date)."""
    return serve("slurmd-starting", skew=at.timestamp() - time.time(), **kwargs)


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_while_slurmd_pods_start_waits_for_them_without_reporting_them(form: str, serve: Callable[..., Any],
                                                                             clock: Clock) -> None:
    served_at(serve, READ, **FORMS[form])
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    doc = r.json()
    assert (r.code, doc["status"], doc["results"][0]["symptoms"]) == (1, "warning", []), r.err
    assert "READY 4/8" in doc["never_converged"]


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_judges_again_when_the_grace_ends_not_at_its_next_poll(form: str, serve: Callable[..., Any],
                                                                     clock: Clock) -> None:
    """The Pods 6 s short of their grace: the wait wakes then (by the cluster's time, advanced by the seconds waited),
    not at its next poll, 30 s on."""
    served_at(serve, ENDS - datetime.timedelta(seconds=6), **FORMS[form])
    woke: list[float] = []
    clock.on_sleep = lambda: woke.append(clock.now)
    r = run("check", "--wait", "60s", "--interval", "30s", "-o", "json")
    assert r.code == 1 and any(3 <= t <= 6.5 for t in woke), (woke, r.err)  # less the seconds the server ran first


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_through_the_end_of_the_grace_ends_reporting_the_pods_as_a_check_then_does(
        form: str, serve: Callable[..., Any]) -> None:
    """The real clock: the API server's advances with it, and so does the Pods' age as the check reads it."""
    api = served_at(serve, ENDS - datetime.timedelta(seconds=2), **FORMS[form])
    began = time.monotonic()
    r = run("check", "--wait", "4s", "--interval", "4s", "-o", "json")
    assert [s["id"] for s in r.json()["results"][0]["symptoms"]] == ["slurmd-not-ready"], r.err
    assert r.code == 1 and time.monotonic() - began < 20
    assert [s["id"] for s in run("check", "-o", "json").json()["results"][0]["symptoms"]] == ["slurmd-not-ready"]
    assert api.writes == 0


def test_serve_judges_again_when_the_grace_ends_with_no_event(serve: Callable[..., Any]) -> None:
    """serve judges on changes, but a Pod's age changes with none: the 4 Pods 6 s short of their grace, starting; 6 s
    later, nothing changed on the server, they are reported and the change logged, as a fresh check then says."""
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
        assert [s["id"] for s in doc["results"][0]["symptoms"]] == ["slurmd-not-ready"], doc
        assert [line.split(" ", 1)[1] for line in lines if "slurm-cpu-batch" in line][-1] == (
            "NodeSet tenant-slurm/slurm-cpu-batch: ok -> warning; appeared: slurmd-not-ready")
        assert api.state.version == version  # no object changed: no event
        assert verdict(doc) == verdict(checked(api))
        assert service.loop.ageing == {}


def doubted(serve: Callable[..., Any], case: str | snapshot.Snapshot, dated: bool = True, lag: float = 0.0) -> Any:
    """`case` served at its recording's time, its answers without a Date (a proxy stripping it) or, `lag`, the
    Nodes list's Date that many seconds behind the others' (a replica whose clock trails answering it)."""
    api = serve(case, skew=READ.timestamp() - time.time())
    api.dated, api.date_lag = dated, {"/nodes": lag}
    return api


def said(doc: dict) -> list[str]:
    return [s["id"] for s in doc["results"][0]["symptoms"]]


def newest_ready() -> snapshot.Snapshot:
    """slurmd-pods-being-created, its new Nodes' Ready transition at the newest creation time read (a kubelet that
    restarted since the last object was created)."""
    from tests.test_creating import being_created, ready_at

    snap = being_created()
    return ready_at(snap, f"{snap.newest_creation():%Y-%m-%dT%H:%M:%SZ}")


@pytest.mark.parametrize(("case", "row"), [(starting, "slurmd-not-ready"), (newest_ready, "slurmd-pods-missing")])
def test_without_a_date_no_grace_check_wait_and_serve_alike(case: Callable[[], snapshot.Snapshot], row: str,
                                                            serve: Callable[..., Any]) -> None:
    """An API server's answers without a Date (a proxy stripping it): no clock the server gave, so no grace (before:
    the newest creation time read stood for it, and a stuck slurmd Pod that was the newest object, or a Node whose
    Ready transition was as new, was new at every check, never reported); check, --wait and serve report alike."""
    from tests.test_serve import checked, eventually, served, serving, verdict

    api = doubted(serve, case(), dated=False)
    assert said(run("check", "-o", "json").json()) == [row]
    assert said(run("check", "--wait", "1s", "--interval", "1s", "-o", "json").json()) == [row]
    with serving(api) as service:
        assert eventually(lambda: said(served(service)) == [row]), served(service)
        assert verdict(served(service)) == verdict(checked(api))


def test_a_date_lagging_the_others_never_extends_a_grace(serve: Callable[..., Any]) -> None:
    """slurmd Pods stuck for 10 minutes, the Nodes list answered with a Date 6 minutes behind the others' (a replica
    whose clock trails): the graces go by the latest recent Date, so the Pods are reported by check, --wait and
    serve (before: by the earliest, the Pods were 4 minutes old, starting, and the check said OK)."""
    from tests.test_serve import checked, eventually, served, serving, verdict

    api = doubted(serve, "slurmd-not-ready-past-grace", lag=360.0)
    assert said(run("check", "-o", "json").json()) == ["slurmd-not-ready"]
    assert said(run("check", "--wait", "1s", "--interval", "1s", "-o", "json").json()) == ["slurmd-not-ready"]
    with serving(api) as service:
        assert eventually(lambda: said(served(service)) == ["slurmd-not-ready"]), served(service)
        assert verdict(served(service)) == verdict(checked(api))


def test_a_grace_is_judged_again_when_the_graces_clock_ends_it_not_the_nodes_ages_clock() -> None:
    """The latest recent Date 6 minutes ahead of the earliest (the Nodes' age, which serve and the wait advance): a
    grace ends by the latest, so it is judged again 6 minutes before the earliest reaches its end, when it does."""
    lag = datetime.timedelta(minutes=6)
    [result] = diagnose(replace(starting(), server_time=READ - lag, grace_time=READ), Target()).results
    assert (not_ready(result), result.clock) == ([], READ - lag)
    assert result.starting_until == (ENDS - lag,) * 4 and judged_again_at(result) == ENDS - lag
