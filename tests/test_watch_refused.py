"""A watch the server refuses for good (403: a role that may get and list but not watch; 401: a token that expired
while serving) fails its source at once, not after STALE_AFTER: /readyz 503 saying why, `sunkcheck_up` 0, the
targets UNKNOWN, a log line; once the role or the token is fixed, the watches retried with backoff bring it back.
Against the test API server, through the real client, with STALE_AFTER as it ships."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from sunkcheck.collect.kube import Kube, cluster_role
from sunkcheck.model import Status
from sunkcheck.serve.cache import Cache
from sunkcheck.serve.loop import judge
from sunkcheck.serve.service import Service
from sunkcheck.serve.sources import NODES_EVERY, of_kind, own_pod_selector, sources
from sunkcheck.serve.watch import STALE_AFTER, Health
from sunkcheck.snapshot import load
from sunkcheck.target import Target
from tests.conftest import FIXTURES, TOKEN
from tests.test_serve import eventually, get, listed, metric, served

Serve = Callable[..., Any]  # the fixture: a fixture's case served by the test API server
AT_ONCE = 15.0
"""Seconds within which a refusal is reported: a fraction of STALE_AFTER."""
BACK = 45.0
"""Seconds within which a fixed role or token is current again: a backoff (under 30 s) and a watch heard."""


@contextlib.contextmanager
def started(api: Any, lines: list[str]) -> Iterator[Service]:
    """serve on the test API server, once it has answered a check (ready or not)."""
    api.bookmark_every = 0.2
    with Service(Kube(str(api.kubeconfig)), Target(), True, log=lines.append, debounce=0.02) as service:
        assert eventually(lambda: get(service.url + "/api/v1/check")[0] == 200, AT_ONCE)
        yield service


def refused(service: Service, needle: bytes) -> bytes:
    """/readyz's 503 once it names `needle` (b"" while it does not)."""
    code, why = get(service.url + "/readyz")
    return why if code == 503 and needle in why else b""


def recovered(service: Service) -> bool:
    return get(service.url + "/readyz")[0] == 200 and served(service)["status"] == "ok"


def test_the_check_role_alone_fails_serve_at_once_and_a_role_that_watches_brings_it_back(serve: Serve) -> None:
    assert AT_ONCE < STALE_AFTER / 2
    api = serve("healthy-pool-name", rbac=cluster_role())  # what `sunkcheck rbac` prints: get and list, no watch
    lines: list[str] = []
    with started(api, lines) as service:
        why = eventually(lambda: refused(service, b"`sunkcheck rbac --serve` prints the role with watch"), AT_ONCE)
        assert why and b"403" in why and b"failing for over" not in why, get(service.url + "/readyz")
        doc = served(service)
        # every target listed UNKNOWN, though the NodeSets' watch was refused before a first judgement
        assert doc["status"] == "unknown" and {r["status"] for r in doc["results"]} == {"unknown"}, doc
        assert metric(service, "status", kind="NodeSet", name=doc["results"][0]["name"]) == 3
        assert metric(service, "up") == 0
        assert [line for line in lines if ": failing: " in line and "(403)" in line and "rbac --serve" in line], lines
        assert {q.query.get("watch") for q in api.log if q.status == 403} == {"1"}  # the lists were allowed
        api.rbac = cluster_role("sunkcheck-serve", ("get", "list", "watch"))  # `sunkcheck rbac --serve | kubectl apply`
        assert eventually(lambda: recovered(service), BACK), get(service.url + "/readyz")
        assert metric(service, "up") == 1


def test_a_token_refused_while_serving_fails_serve_at_once_and_the_token_fixed_brings_it_back(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    lines: list[str] = []
    with started(api, lines) as service:
        assert eventually(lambda: recovered(service), AT_ONCE)
        api.token = "renewed-elsewhere"  # the token expired: every request from now on is answered 401
        api.drop_watches()
        why = eventually(lambda: refused(service, b"rejected the credentials (401 Unauthorized)"), AT_ONCE)
        assert why and b"failing for over" not in why, get(service.url + "/readyz")
        assert served(service)["status"] == "unknown" and metric(service, "up") == 0
        assert [line for line in lines if ": failing: " in line and "401" in line], lines
        api.token = TOKEN
        assert eventually(lambda: recovered(service), BACK), get(service.url + "/readyz")


def test_the_nodesets_watch_refused_before_a_first_judgement_keeps_each_listed_target_unknown() -> None:
    """Listed, then refused the watch before serve first judged them: each NodeSet listed is a target, UNKNOWN (its
    status series there from the start), none of its counts or findings told."""
    snap, every = load(FIXTURES / "healthy-pool-name"), Target()
    cache = Cache(sources(every, None, own_pod_selector(every)))
    for s in cache.watched:
        cache.replace(s, listed(snap, s) if not of_kind(s.name, NODES_EVERY) else [])
    health = {s.name: Health(synced=True) for s in cache.watched}
    health["nodesets"].failed("watch /apis/sunk.coreweave.com/v1alpha1/nodesets failed (403)", lasting=True,
                              denied=True)
    report = judge(cache, every, health)
    assert [r.name for r in report.results] == [n["metadata"]["name"] for n in snap.nodesets or ()], report
    assert all(r.status is Status.UNKNOWN and not r.symptoms for r in report.results), report
    assert [e for e in report.errors if e.startswith("nodesets: ") and "(403)" in e], report.errors
