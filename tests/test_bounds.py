"""Every output bounded (issue 27 section 5): a Node's reasons, a row's evidence, the commands of a fix line
and every line of text are capped, with counts of what was left out; `--limit 0` lifts the caps."""

from __future__ import annotations

import json
import shutil

import pytest

from sunkcheck.bounds import LIMIT, LINE
from tests.conftest import FIXTURES, run
from tests.test_schemas import validate

TAINTS = 2_000  # each pool Node of healthy-pool-name gets this many taints the NodeSet does not tolerate


@pytest.fixture(scope="module")
def tainted(tmp_path_factory):
    snap = tmp_path_factory.mktemp("tainted") / "snap"
    shutil.copytree(FIXTURES / "healthy-pool-name", snap)
    doc = json.loads((snap / "nodes.json").read_text())
    for node in doc["items"]:
        node["spec"].setdefault("taints", []).extend(
            {"key": f"example.com/t{i}", "value": "v", "effect": "NoSchedule"} for i in range(TAINTS))
    (snap / "nodes.json").write_text(json.dumps(doc))
    return snap


def test_json_caps_each_nodes_reasons_and_counts_the_rest(tainted):
    capped = run("check", "--snapshot", str(tainted), "-o", "json")
    whole = run("check", "--snapshot", str(tainted), "-o", "json", "--limit", "0")
    assert capped.code == whole.code == 1
    nodes = {n["name"]: n for n in validate(capped.json())["results"][0]["nodes"]}
    every = {n["name"]: n for n in validate(whole.json())["results"][0]["nodes"]}
    assert nodes.keys() == every.keys()
    for name, node in nodes.items():
        assert len(every[name]["reasons"]) >= TAINTS and "reasons_omitted" not in every[name]
        assert node["reasons"] == every[name]["reasons"][:LIMIT]
        assert node["reasons_omitted"] == len(every[name]["reasons"]) - LIMIT
    assert len(capped.out) < 100_000 < 20 * len(capped.out) < len(whole.out)


def test_evidence_and_fix_are_capped_and_say_what_was_left_out(tainted):
    doc = run("check", "--snapshot", str(tainted), "-o", "json").json()
    whole = run("check", "--snapshot", str(tainted), "-o", "json", "--limit", "0").json()
    row = next(s for s in doc["results"][0]["symptoms"] if s["id"] == "pool-nodes-unusable")
    untolerated = TAINTS  # one evidence line per taint, each naming the Nodes that carry it
    assert len(row["evidence"]) == LIMIT and row["evidence_omitted"] == untolerated + 1 - LIMIT
    lines = row["fix"].splitlines()
    # a command a line, as it pastes: the run of them is cut after LIMIT, never inside a command
    commands = [line for line in lines if "kubectl taint node" in line]
    assert len(commands) == LIMIT and all(line.startswith("kubectl taint node ") for line in commands)
    after = lines[lines.index(commands[-1]) + 1]
    assert after.endswith("more like these left out: --limit 0 shows all)")
    left_out = int(after.strip("(").split()[0].replace(",", ""))
    every = next(s for s in whole["results"][0]["symptoms"] if s["id"] == "pool-nodes-unusable")
    assert left_out + LIMIT == every["fix"].count("kubectl taint node") >= TAINTS
    assert list(every["evidence"][:LIMIT]) == row["evidence"] and len(every["evidence"]) == untolerated + 1
    assert "evidence_omitted" not in every


def test_text_counts_the_evidence_the_bounds_left_out(tainted):
    out = run("check", "--snapshot", str(tainted), "-o", "plain").out
    assert (f"    - ... {TAINTS + 1 - 9:,} more lines of evidence (every line: -o json --limit 0 and each Node's reasons: "
            "sunkcheck explain)") in out.splitlines()


@pytest.mark.parametrize("fmt", ["plain", "table", "nagios"])
def test_no_text_line_passes_the_cap(tainted, fmt):
    out = run("check", "--snapshot", str(tainted), "-o", fmt).out
    # a fix line holds LIMIT commands (never cut inside one); every other line at most LINE and its note
    longest = max(len(line) for line in out.splitlines() if "kubectl taint node" not in line)
    assert longest < LINE + 100


def test_a_long_line_keeps_its_start_and_counts_the_rest(tmp_path):
    """pool-quota-zero: the NodePool's Quota condition message is evidence; here it is 100,000 characters."""
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "pool-quota-zero", snap)
    doc = json.loads((snap / "nodepools.json").read_text())
    for condition in (c for p in doc["items"] for c in p.get("status", {}).get("conditions", [])):
        if condition.get("message", "").startswith("quota limit is 0"):
            condition["message"] = "quota limit is 0 " + "x" * 100_000
    (snap / "nodepools.json").write_text(json.dumps(doc))
    evidence = [e for s in run("check", "--snapshot", str(snap), "-o", "json").json()["results"][0]["symptoms"]
                for e in s["evidence"] if "quota limit is 0" in e]
    assert evidence and all(len(e) < LINE + 100 and e.endswith(" more characters; --limit 0 shows all)") for e in evidence)
    whole = run("check", "--snapshot", str(snap), "-o", "json", "--limit", "0").json()
    assert any("x" * 100_000 in e for s in whole["results"][0]["symptoms"] for e in s["evidence"])


def test_explain_caps_each_nodes_reasons_too(tainted):
    capped = validate(run("explain", "--snapshot", str(tainted), "-o", "json").json())
    whole = validate(run("explain", "--snapshot", str(tainted), "-o", "json", "--limit", "0").json())
    every = {n["name"]: n for n in whole["nodes"]}
    for node in capped["nodes"]:
        assert node["reasons"] == every[node["name"]]["reasons"][:LIMIT]
        assert node.get("reasons_omitted", 0) == len(every[node["name"]]["reasons"]) - len(node["reasons"])
    assert any(node.get("reasons_omitted", 0) > TAINTS - LIMIT for node in capped["nodes"])
    plain = run("explain", "--snapshot", str(tainted), "-o", "plain").out
    for node in capped["nodes"]:
        if node.get("reasons_omitted"):
            assert f"; ... {node['reasons_omitted']:,} more (--limit 0 shows all)" in plain
    assert max(map(len, plain.splitlines())) < 20 * LINE < max(map(len, run(
        "explain", "--snapshot", str(tainted), "-o", "plain", "--limit", "0").out.splitlines()))
