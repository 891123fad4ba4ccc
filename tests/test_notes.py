"""Notes (sunkcheck/symptoms/notes.py): worth knowing, never a problem. The idle-pool note, judged from scenarios:
capacity beside the NodeSet that nobody declared, never another team's pool; and nothing a monitor reads changes."""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import replace

from sunkcheck import snapshot
from sunkcheck.pipeline import diagnose
from sunkcheck.render import Output, render
from sunkcheck.render.prometheus import render_textfile
from sunkcheck.target import Target
from tests.conftest import FIXTURES, run

IDLE = FIXTURES / "healthy-idle-pool"  # slurm-gpu bound by name; slurm-gpu-2, same type, 9 idle Nodes and 1 cordoned


def check(path, *args) -> dict:
    return run("check", "--snapshot", str(path), "-o", "json", *args).json()["results"][0]


def test_a_note_changes_no_status_exit_code_nagios_state_textfile_or_symptom():
    report = diagnose(snapshot.load(IDLE), Target())
    assert [n.id for r in report.results for n in r.notes] == ["idle-pool"]
    silent = replace(report, results=tuple(replace(r, notes=()) for r in report.results))
    assert report.status == silent.status
    assert render(report, Output.NAGIOS) == render(silent, Output.NAGIOS)
    assert render_textfile(report, 0.0) == render_textfile(silent, 0.0)
    with_notes, without = json.loads(render(report, Output.JSON)), json.loads(render(silent, Output.JSON))
    assert with_notes["results"][0].pop("notes") and without["results"][0].pop("notes") == []
    assert with_notes == without  # the symptoms, the status and everything else: the same
    result = run("check", "--snapshot", str(IDLE), "-o", "nagios")
    assert result.code == 0 and result.out.startswith("SUNKCHECK OK"), result.out


def test_plain_and_table_print_notes_after_the_symptoms_marked_as_notes():
    case = FIXTURES / "pool-nodes-unusable"  # a warning row, and k8s-cpu idle beside it
    for output in ("plain", "table"):
        out = run("check", "--snapshot", str(case), "-o", output).out
        assert "pool-nodes-unusable" in out and "NOTE" in out, out
        assert out.index("NOTE") > out.rindex("pool-nodes-unusable"), out
        note = out[out.index("NOTE"):]
        assert "idle-pool" in note and "k8s-cpu" in note and "kubectl annotate nodepool k8s-cpu" in note


def _hint_lines(result: dict) -> list[str]:
    return next(n["hint"] for n in result["notes"] if n["id"] == "idle-pool").splitlines()


def test_the_hints_pool_flags_declare_the_pool_and_pool_split_then_says_the_nodeset_does_not_use_it():
    command = next(line for line in _hint_lines(check(IDLE)) if line.startswith("sunkcheck check "))
    argv = shlex.split(command)[2:]
    assert argv == ["-n", "tenant-slurm", "--nodeset", "slurm-gpu-h100", "--pool", "slurm-gpu", "--pool", "slurm-gpu-2"]
    declared = check(IDLE, *argv)
    assert [s["id"] for s in declared["symptoms"]] == ["pool-split"] and declared["notes"] == []
    assert "slurm-gpu-2" in "\n".join(declared["symptoms"][0]["evidence"])


def _annotate(tmp_path, pool: str, value: str):
    copy = tmp_path / "case"
    shutil.copytree(IDLE, copy)
    doc = json.loads((copy / "nodepools.json").read_text())
    target = next(p for p in doc["items"] if p["metadata"]["name"] == pool)
    target["metadata"].setdefault("annotations", {})["sunkcheck.io/nodesets"] = value
    (copy / "nodepools.json").write_text(json.dumps(doc))
    return copy


def test_the_hints_annotation_declares_the_pool_too(tmp_path):
    command = next(line for line in _hint_lines(check(IDLE)) if line.startswith("kubectl annotate "))
    assert shlex.split(command) == ["kubectl", "annotate", "nodepool", "slurm-gpu-2",
                                    "sunkcheck.io/nodesets=tenant-slurm/slurm-gpu-h100"]
    annotated = check(_annotate(tmp_path, "slurm-gpu-2", "tenant-slurm/slurm-gpu-h100"))
    assert [s["id"] for s in annotated["symptoms"]] == ["pool-split"] and annotated["notes"] == []


def test_a_pool_annotated_for_another_nodeset_or_an_expectation_elsewhere_gets_no_note(tmp_path):
    assert check(_annotate(tmp_path, "slurm-gpu-2", "tenant-slurm/slurm-gpu-other"))["notes"] == []
    assert check(IDLE, "--pool", "slurm-gpu")["notes"] == []  # the operator said which pool is the NodeSet's


def _edit_nodes(tmp_path, change):
    copy = tmp_path / "case"
    shutil.copytree(IDLE, copy)
    doc = json.loads((copy / "nodes.json").read_text())
    for node in doc["items"]:
        if node["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-gpu-2":
            change(node)
    (copy / "nodes.json").write_text(json.dumps(doc))
    return copy


def test_nodes_the_nodeset_could_not_use_are_no_idle_capacity(tmp_path):
    def tainted(node):
        node["spec"]["taints"] = [{"key": "inference.example.com/team", "value": "vllm", "effect": "NoSchedule"}]

    def smaller(node):  # 4 GPUs where the slurmd Pod asks for 8
        node["status"]["allocatable"] = dict(node["status"]["allocatable"], **{"nvidia.com/gpu": "4"})

    for change in (tainted, smaller):
        assert check(_edit_nodes(tmp_path / change.__name__, change))["notes"] == [], change.__name__


LEFTOVER = FIXTURES / "healthy-reserved-key-unused"  # slurm-cpu sets sunk.coreweave.com/legacy; nothing selects it


def _pool_spec(tmp_path, change) -> str:
    copy = tmp_path / "case"
    shutil.copytree(LEFTOVER, copy)
    pools = json.loads((copy / "nodepools.json").read_text())
    change(next(p["spec"] for p in pools["items"] if p["metadata"]["name"] == "slurm-cpu"))
    (copy / "nodepools.json").write_text(json.dumps(pools))
    return str(copy)


def test_a_reserved_taint_nothing_tolerates_is_a_note_whose_hint_removes_only_it(tmp_path):
    """CKS drops it, and the NodeSet never needed it: no row; the hint tests and removes that entry, keeping the
    pool's own taint (a merge patch would replace the whole list)."""
    taint = {"key": "team.coreweave.com/old", "value": "x", "effect": "NoSchedule"}
    result = check(_pool_spec(tmp_path, lambda spec: spec["nodeTaints"].append(taint)))
    assert result["status"] == "ok" and result["symptoms"] == []
    note = next(n for n in result["notes"] if n["id"] == "unused-reserved-key")
    assert "team.coreweave.com/old=x:NoSchedule" in note["text"] and "sunk.coreweave.com/legacy" in note["text"]
    command = next(line for line in note["hint"].splitlines() if "nodeTaints" in line)
    ops = json.loads(shlex.split(command)[-1])
    assert ops == [{"op": "test", "path": "/spec/nodeTaints/1", "value": taint}, {"op": "remove", "path": "/spec/nodeTaints/1"}]


def test_a_reserved_key_the_nodeset_selects_is_the_rows_not_a_note(tmp_path):
    """The same leftover key, now the one the NodeSet's pool label would need: CKS drops it, so it stays critical."""
    def relied(spec):
        spec["nodeLabels"] = {"sunk.coreweave.com/legacy": "true"}
    copy = _pool_spec(tmp_path, relied)
    nodesets = json.loads((tmp_path / "case" / "nodesets.json").read_text())
    term = nodesets["items"][0]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    term["matchExpressions"] = [{"key": "sunk.coreweave.com/legacy", "operator": "Exists"}]
    (tmp_path / "case" / "nodesets.json").write_text(json.dumps(nodesets))
    result = check(copy)
    assert next(s["id"] for s in result["symptoms"]) == "reserved-label-namespace", result["symptoms"]
    assert not any(n["id"] == "unused-reserved-key" for n in result["notes"])
