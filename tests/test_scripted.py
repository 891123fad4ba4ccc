"""Unattended use: Nagios plugin output, the Prometheus textfile, suppressions by flag and annotation."""

from __future__ import annotations

import json
import re
import shutil
import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import CASES, FIXTURES, expected, run

PERF_ITEM = r"'[^'=]+'=-?\d+;;;0;\d*"


def valid_perfdata(text: str) -> bool:
    """Space-separated `'label'=value;warn;crit;min;max` items and nothing else."""
    return " ".join(re.findall(PERF_ITEM, text)) == text.strip()


@pytest.mark.parametrize("case", CASES)
def test_nagios_format_and_exit_codes(case):
    want = expected(case)
    r = run("check", "--snapshot", str(FIXTURES / case), "-o", "nagios", *want["args"])
    assert r.code == want["exit"]
    first, *rest = r.out.rstrip("\n").split("\n")
    head, _, perf = first.partition(" | ")
    assert re.match(rf"^SUNKCHECK {want['status'].upper()} - [^|]+$", head), head
    assert len(head) < 250
    assert valid_perfdata(perf), perf
    body = "\n".join(rest)
    assert body.count("|") <= 1  # only the separator before the trailing performance data
    if "|" in body:
        assert valid_perfdata(body.rsplit("| ", 1)[1])
    for ids in want["symptoms"].values():
        for symptom in ids:
            assert symptom in head


def test_nagios_names_the_namespace_of_a_name_two_targets_share(tmp_path):
    """Perfdata labels stay unique (a grapher merges two series of one label) and the status line says which
    target has the problem; a name only one target has stays unqualified, as in single-namespace runs."""
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "several-nodesets", snap)
    doc = json.loads((snap / "nodesets.json").read_text())
    twin = json.loads(json.dumps(doc["items"][0]))  # slurm-cpu-batch, in tenant-slurm
    twin["metadata"] |= {"namespace": "tenant-b", "uid": "another-uid"}
    doc["items"].append(twin)
    (snap / "nodesets.json").write_text(json.dumps(doc))
    r = run("check", "--snapshot", str(snap), "-o", "nagios")
    head = r.out.splitlines()[0].partition(" | ")[0]
    labels = re.findall(r"'([^']+)'=", r.out)
    assert len(labels) == len(set(labels))
    assert {label.rsplit(" ", 1)[0] for label in labels} == {
        "tenant-slurm/slurm-cpu-batch", "tenant-b/slurm-cpu-batch", "slurm-gpu-h100", "slurm-gpu-spare"}
    # the twin's Pods never ran, on Nodes the original claims: its rows, named with its namespace
    assert "tenant-b/slurm-cpu-batch: pool-nodes-unusable, slurmd-pods-missing;" in head and " slurm-gpu-spare: " in head


def test_nagios_keeps_untrusted_text_inert():
    out = run("check", "--snapshot", str(FIXTURES / "hostile-strings"), "-o", "nagios").out
    assert "\x1b" not in out and "[red]pwned[/red]" in out


def metrics(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_textfile_parses_with_the_prometheus_parser(tmp_path):
    path = tmp_path / "sunkcheck.prom"
    r = run("check", "--snapshot", str(FIXTURES / "several-nodesets"), "--textfile", str(path), "-o", "json")
    assert r.code == 2
    text = path.read_text()
    assert text.endswith("\n")
    m = metrics(text)
    assert m["sunkcheck_up"][0].value == 1
    status = {s.labels["name"]: s.value for s in m["sunkcheck_status"]}
    assert status == {"slurm-cpu-batch": 0, "slurm-gpu-h100": 1, "slurm-gpu-spare": 2}
    assert {s.labels["name"]: s.value for s in m["sunkcheck_feasible"]}["slurm-gpu-h100"] == 4
    assert {(s.labels["name"], s.labels["id"]) for s in m["sunkcheck_symptom"]} == {
        ("slurm-gpu-h100", "replicas-cap"), ("slurm-gpu-spare", "no-feasible-nodes")}
    assert {s.labels["pool"]: s.value for s in m["sunkcheck_nodepool_target_nodes"]} == {
        "slurm-cpu": 4, "slurm-gpu": 4, "slurm-gpu-spare": 2}
    for family in m.values():  # label values stay bounded: names and ids, never messages
        for sample in family:
            assert all(len(v) < 80 and " " not in v for v in sample.labels.values())


def test_textfile_says_down_when_nothing_could_be_checked(tmp_path):
    path = tmp_path / "sunkcheck.prom"
    r = run("check", "--snapshot", str(tmp_path / "missing"), "--textfile", str(path))
    assert r.code == 3
    m = metrics(path.read_text())
    assert m["sunkcheck_up"][0].value == 0 and "sunkcheck_status" not in m


def test_textfile_is_replaced_atomically(tmp_path):
    """A reader racing the writer only ever sees a whole file (old or new), never a partial one."""
    path = tmp_path / "sunkcheck.prom"
    run("check", "--snapshot", str(FIXTURES / "two-problems"), "--textfile", str(path))
    seen, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            seen.append(path.read_text())

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for case in ("several-nodesets", "two-problems") * 5:
            run("check", "--snapshot", str(FIXTURES / case), "--textfile", str(path), "-o", "json")
    finally:
        stop.set()
        thread.join()
    assert seen and all(text.endswith("\n") and metrics(text)["sunkcheck_up"] for text in seen)
    assert [p.name for p in tmp_path.iterdir()] == ["sunkcheck.prom"]  # no temp files left behind


def test_textfile_unwritable_directory(tmp_path):
    r = run("check", "--snapshot", str(FIXTURES / "two-problems"), "--textfile", str(tmp_path / "nope" / "x.prom"))
    assert r.code == 3 and "--textfile" in r.err and "Traceback" not in r.err


def annotate(tmp_path, case: str, resource: str, name: str, ids: str):
    d = tmp_path / case
    shutil.copytree(FIXTURES / case, d)
    doc = json.loads((d / f"{resource}.json").read_text())
    obj = next(i for i in doc["items"] if i["metadata"]["name"] == name)
    obj["metadata"].setdefault("annotations", {})["sunkcheck.io/ignore"] = ids
    (d / f"{resource}.json").write_text(json.dumps(doc))
    return d


def test_annotation_on_the_nodeset_suppresses(tmp_path):
    d = annotate(tmp_path, "replicas-cap", "nodesets", "slurm-cpu-batch", "replicas-cap, pool-split")
    r = run("check", "--snapshot", str(d), "-o", "json")
    symptoms = r.json()["results"][0]["symptoms"]
    assert [(s["id"], s["suppressed"]) for s in symptoms] == [("replicas-cap", True)] and r.code == 0
    plain = run("check", "--snapshot", str(d), "-o", "plain").out
    assert "(suppressed) WARNING replicas-cap" in plain


def test_annotation_on_the_node_pool_suppresses(tmp_path):
    d = annotate(tmp_path, "pool-below-target", "nodepools", "slurm-gpu", "pool-below-target")
    r = run("check", "--snapshot", str(d), "-o", "json")
    assert r.json()["results"][0]["symptoms"][0]["suppressed"] is True and r.code == 0


def test_annotation_on_a_daemonset_suppresses(tmp_path):
    d = annotate(tmp_path, "ds-os-arch-unscoped", "daemonsets", "log-agent", "daemonset-os-arch-unscoped")
    r = run("check", "--snapshot", str(d), "--daemonset", "log-agent", "-n", "monitoring", "-o", "json")
    assert r.code == 0 and r.json()["results"][0]["symptoms"][0]["suppressed"] is True


def test_suppressed_rows_stay_in_nagios_long_output_but_not_the_status():
    r = run("check", "--snapshot", str(FIXTURES / "replicas-cap"), "-o", "nagios", "--ignore", "replicas-cap")
    assert r.code == 0 and r.out.startswith("SUNKCHECK OK - ") and "(suppressed) WARNING replicas-cap" in r.out
