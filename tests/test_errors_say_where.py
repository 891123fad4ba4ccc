"""Errors that say where and what (issue 27 section 9): what could not be read and why, what could not be
judged, each error once, and the next step to take."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import FIXTURES, run


@pytest.mark.parametrize("nodesets", [None, {"apiVersion": "v1", "kind": "List", "items": []}],
                         ids=["missing", "empty list"])
def test_a_cluster_without_nodesets_suggests_its_daemonsets(tmp_path, nodesets):
    """ds-healthy's cluster runs the DaemonSet dcgm-exporter and no NodeSet."""
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "ds-healthy", snap)
    (snap / "nodesets.json").unlink(missing_ok=True)
    if nodesets is not None:
        (snap / "nodesets.json").write_text(json.dumps(nodesets))
    r = run("check", "--snapshot", str(snap))
    assert r.code == 3
    assert r.err.count("\n") == 1 and "pass --daemonset dcgm-exporter" in r.err, r.err


def test_a_live_read_that_failed_says_what_was_asked_and_the_answer_once(serve):
    """Events are listed cluster-wide (about NodePools) and in tenant-slurm (about the NodeSet): both 403."""
    api = serve("healthy-pool-name")
    api.faults.forbidden.add("events")
    plain, nagios = run("check", "-o", "plain"), run("check", "-o", "nagios")
    doc = run("check", "-o", "json").json()
    events = next(s for s in doc["results"][0]["steps"] if s["name"] == "events")
    assert events == {"name": "events", "status": "unknown", "counts": {},
                      "summary": "not read: 403 Forbidden, list events cluster-wide; "
                                 "403 Forbidden, list events in tenant-slurm"}
    assert len(doc["errors"]) == 2 and all("cannot list resource \"events\"" in e for e in doc["errors"])
    for r in (plain, nagios):
        assert r.code == 3 and "not captured" not in r.out
        for error in doc["errors"]:  # each once: nagios' status line names the target, not an error again
            assert r.out.count(error) == 1, r.out
    # the NodeSet has no symptom in what was read, but its Events could not be judged: never "looks right"
    assert "looks right" not in plain.out and "bound as intended" not in nagios.out
    assert "no symptoms in what could be read; not judged: events" in plain.out
    status_line = nagios.out.splitlines()[0].split(" | ")[0]
    assert status_line == "SUNKCHECK UNKNOWN - slurm-cpu-batch: not judged: events; and 2 more errors"


@pytest.mark.parametrize("path, status, said", [
    ("/api/v1/namespaces/slurm-prod/events?fieldSelector=x", 403, "403 Forbidden, list events in slurm-prod"),
    ("/api/v1/nodes?labelSelector=a%3Db", 500, "500 Internal Server Error, list nodes cluster-wide"),
    ("/apis/sunk.coreweave.com/v1alpha1/namespaces/t/nodesets/gpu", 404, "404 Not Found, get nodesets gpu in t"),
    ("/apis/compute.coreweave.com/v1alpha1/nodepools", 0, "timed out, list nodepools cluster-wide"),
    ("/api/v1/pods", 200, "an answer sunkcheck cannot use, list pods cluster-wide"),
    ("/api/v1/pods", 499, "status 499, list pods cluster-wide"),
])
def test_why_a_read_failed_in_a_few_words(path, status, said):
    from sunkcheck.collect.cluster import why
    from sunkcheck.collect.kube import CallError

    assert why(CallError(path, status, "the whole message")) == said
