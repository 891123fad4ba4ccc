"""Every output bounded: a Node's reasons, a row's evidence, the commands of a fix line
and every line of text are capped, with counts of what was left out; `--limit 0` lifts the caps."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from sunkcheck.bounds import LIMIT, LINE
from tests.conftest import FIXTURES, run
from tests.test_schemas import validate

TAINTS = 2_000  # each pool Node of healthy-pool-name gets this many taints the NodeSet does not tolerate


@pytest.fixture(scope="module")
def tainted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    snap = tmp_path_factory.mktemp("tainted") / "snap"
    shutil.copytree(FIXTURES / "healthy-pool-name", snap)
    doc = json.loads((snap / "nodes.json").read_text())
    for node in doc["items"]:
        node["spec"].setdefault("taints", []).extend(
            {"key": f"example.com/t{i}", "value": "v", "effect": "NoSchedule"} for i in range(TAINTS))
    (snap / "nodes.json").write_text(json.dumps(doc))
    return snap


def test_json_caps_each_nodes_reasons_and_counts_the_rest(tainted: Path) -> None:
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


def test_evidence_and_fix_are_capped_and_say_what_was_left_out(tainted: Path) -> None:
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


def test_text_counts_the_evidence_the_bounds_left_out(tainted: Path) -> None:
    out = run("check", "--snapshot", str(tainted), "-o", "plain").out
    assert (f"    - ... {TAINTS + 1 - 9:,} more lines of evidence (every line: -o json --limit 0 and each Node's reasons: "
            "sunkcheck explain)") in out.splitlines()


@pytest.mark.parametrize("fmt", ["plain", "table", "nagios"])
def test_no_text_line_passes_the_cap(tainted: Path, fmt: str) -> None:
    out = run("check", "--snapshot", str(tainted), "-o", fmt).out
    # a fix line holds LIMIT commands (never cut inside one); every other line at most LINE and its note
    longest = max(len(line) for line in out.splitlines() if "kubectl taint node" not in line)
    assert longest < LINE + 100


def test_a_long_line_keeps_its_start_and_counts_the_rest(tmp_path: Path) -> None:
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


def test_explain_caps_each_nodes_reasons_too(tainted: Path) -> None:
    capped = validate(run("explain", "--snapshot", str(tainted), "-o", "json").json())
    whole = validate(run("explain", "--snapshot", str(tainted), "-o", "json", "--limit", "0").json())
    every = {n["name"]: n for n in whole["nodes"]}
    for node in capped["nodes"]:
        assert node["reasons"] == every[node["name"]]["reasons"][:LIMIT]
        assert node.get("reasons_omitted", 0) == len(every[node["name"]]["reasons"]) - len(node["reasons"])
    assert any(node.get("reasons_omitted", 0) > TAINTS - LIMIT for node in capped["nodes"])
    plain = run("explain", "--snapshot", str(tainted), "--all", "-o", "plain").out  # every Node listed
    for node in capped["nodes"]:
        if node.get("reasons_omitted"):
            assert f"; ... {node['reasons_omitted']:,} more (--limit 0 shows all)" in plain
    assert max(map(len, plain.splitlines())) < 20 * LINE < max(map(len, run(
        "explain", "--snapshot", str(tainted), "-o", "plain", "--limit", "0").out.splitlines()))


HOSTILE = "g18d510"  # a slurm-cpu Node of healthy-pool-name
BIG = 1 << 20


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One Node with 10,000 taints, 10,000 labels, a 1 MB label value and a 1 MB taint value; its NodeSet with 5,000
    more affinity expressions, the last comparing the 1 MB label (and failing)."""
    snap = tmp_path_factory.mktemp("hostile") / "snap"
    shutil.copytree(FIXTURES / "healthy-pool-name", snap)
    doc = json.loads((snap / "nodes.json").read_text())
    node = next(n for n in doc["items"] if n["metadata"]["name"] == HOSTILE)
    node["spec"]["taints"] = [{"key": "example.com/big", "value": "z" * BIG, "effect": "NoSchedule"}] + [
        {"key": f"example.com/t{i}", "value": "v", "effect": "NoSchedule"} for i in range(10_000)]
    node["metadata"]["labels"] |= {f"example.com/l{i}": "v" for i in range(10_000)} | {"example.com/big": "x" * BIG}
    node["metadata"]["annotations"]["example.com/big"] = "y" * BIG
    (snap / "nodes.json").write_text(json.dumps(doc))
    doc = json.loads((snap / "nodesets.json").read_text())
    term = doc["items"][0]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    term["matchExpressions"] += [{"key": f"example.com/e{i}", "operator": "NotIn", "values": ["z"]} for i in range(5_000)]
    term["matchExpressions"].append({"key": "example.com/big", "operator": "In", "values": ["w"]})
    (snap / "nodesets.json").write_text(json.dumps(doc))
    return str(snap)


def test_the_deep_view_of_a_hostile_node_is_bounded_in_every_format(hostile: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Main printed every comparison: 15,000 lines, 2.6 MB of plain text."""
    whole = validate(run("explain", "--snapshot", hostile, "--node", HOSTILE, "-o", "json", "--limit", "0").json())
    capped = validate(run("explain", "--snapshot", hostile, "--node", HOSTILE, "-o", "json").json())
    every = whole["node"]["checks"]
    counts = {check: (sum(not c["ok"] for c in every if c["check"] == check), sum(c["ok"] for c in every if c["check"] == check))
              for check in ("affinity", "taint")}
    # the expression on example.com/big fails, and so "any term matches"
    assert counts == {"affinity": (2, 5_002), "taint": (10_001, 0)} and "checks_omitted" not in whole["node"]
    assert capped["node"]["checks_omitted"] == [{"check": "affinity", "failing": 0, "ok": 5_002 - (LIMIT - 2)},
                                                {"check": "taint", "failing": 10_001 - LIMIT, "ok": 0}]
    shown = capped["node"]["checks"]
    assert sum(c["check"] == "affinity" for c in shown) == sum(c["check"] == "taint" for c in shown) == LIMIT
    # a failing comparison is never hidden behind passing ones: the last affinity expression is kept
    assert any(c["subject"] == "term 0 expression" and c["wanted"] == "example.com/big In [w]" and not c["ok"]
               and c["found"].endswith(" more characters; --limit 0 shows all)") for c in shown)
    assert max(len(v) for c in shown for v in c.values() if isinstance(v, str)) < LINE + 100
    for fmt in ("plain", "table"):
        out = run("explain", "--snapshot", hostile, "--node", HOSTILE, "-o", fmt).out
        assert len(out.encode()) < 400_000, (fmt, len(out))  # tabulate pads each cell to its column's widest
        out = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", out).split())  # the table's lines wrap
        assert f"... {5_002 - (LIMIT - 2):,} more affinity comparisons left out (0 FAIL, {5_002 - (LIMIT - 2):,} ok; " \
               "--limit 0 shows all)" in out
        assert f"... {10_001 - LIMIT:,} more taint comparisons left out ({10_001 - LIMIT:,} FAIL, 0 ok; --limit 0 shows " \
               "all)" in out
    monkeypatch.setenv("COLUMNS", "120")  # a block per comparison: one table would pad every row to the 1 MB value
    lifted = run("explain", "--snapshot", hostile, "--node", HOSTILE, "-o", "plain", "--limit", "0").out
    assert "left out" not in lifted and "example.com/t9999" in lifted and "z" * BIG in lifted


LINT_KEYS = 2_000  # YAML is parsed in pure Python: fewer than the Node's, still 40 times the cap


@pytest.fixture(scope="module")
def hostile_lint(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A definition with 2,000 misspelt keys and a 500-key nodeSelector (one value 1 MB; its fix: 2,000 lines of YAML),
    and a Node Pool with 2,000 reserved label keys."""
    import yaml

    where = tmp_path_factory.mktemp("lint")
    body: dict[str, Any] = {"enabled": True, "gresGpu": None, "nodeSelector": {f"example.com/k{i}": "v" for i in range(500)},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "compute.coreweave.com/node-pool", "operator": "In",
                                       "values": ["slurm-cpu"]}]}]}}}}
    body |= {f"tolerationz{i:04}": [] for i in range(LINT_KEYS)}
    body["nodeSelector"]["example.com/k0"] = "v" * BIG
    (where / "values.yaml").write_text(yaml.safe_dump({"compute": {"nodes": {"cpu": body}}}))
    pool = {"apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"instanceType": "cd-gp-a192-genoa", "targetNodes": 1,
                     "nodeLabels": {f"x{i}.coreweave.com/k": "v" for i in range(LINT_KEYS)}}}
    (where / "pool.yaml").write_text(yaml.safe_dump(pool))
    return [str(where / "values.yaml"), str(where / "pool.yaml")]


def test_lint_output_is_bounded_and_counts_the_findings_left_out(hostile_lint: list[str]) -> None:
    """Main printed every finding and the whole 2,000-line YAML fix."""
    whole = validate(run("lint", *hostile_lint, "-o", "json", "--limit", "0").json())
    capped = run("lint", *hostile_lint, "-o", "json")
    doc = validate(capped.json())
    assert capped.code == 2 and doc["status"] == whole["status"] == "critical"
    found = {r["name"]: r for r in whole["results"]}
    assert len(found["cpu"]["symptoms"]) == LINT_KEYS + 1 and len(found["p"]["symptoms"]) == LINT_KEYS
    for r in doc["results"]:
        assert len(r["symptoms"]) == LIMIT and r["symptoms_omitted"] == len(found[r["name"]]["symptoms"]) - LIMIT
        assert r["status"] == found[r["name"]]["status"] == "critical"
    cpu = next(r for r in doc["results"] if r["name"] == "cpu")
    [error] = [s for s in cpu["symptoms"] if s["id"] == "values-nodeselector"]  # the error kept, warnings left out
    fix = error["fix"].splitlines()
    # the 2,000-line snippet (one line the 1 MB value's) is never cut, which would paste a shorter selector or
    # another value: words stand for it whole
    every = next(s for s in found["cpu"]["symptoms"] if s["id"] == "values-nodeselector")["fix"].splitlines()
    assert fix == [every[0], f"(a YAML snippet of {len(every) - 1:,} lines left out: --limit 0 shows all)"]
    assert len(every) > 4 * LIMIT and all(line.startswith(("  ", "- ")) for line in every[2:])
    assert max(len(e) for r in doc["results"] for s in r["symptoms"] for e in s["evidence"]) < LINE + 100
    assert len(capped.out) < 150_000
    for fmt in ("plain", "table"):
        out = run("lint", *hostile_lint, "-o", fmt).out
        assert len(out.encode()) < 150_000, (fmt, len(out))
        out = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", out).split())
        assert f"... {LINT_KEYS + 1 - LIMIT:,} more findings left out, the least severe (--limit 0 shows all)" in out
        assert f"... {LINT_KEYS - LIMIT:,} more findings left out, the least severe (--limit 0 shows all)" in out
    plain = run("lint", *hostile_lint, "-o", "plain").out.splitlines()
    left_out = 2 * LINT_KEYS + 1 - 2 * LIMIT
    assert plain[0] == (f"sunkcheck CRITICAL: {LIMIT + 1} critical, {LIMIT - 1} warnings (and {left_out:,} more left out) "
                        "on 2 targets (critical: values cpu, NodePool/p)")
    assert next(line for line in plain if line.startswith(hostile_lint[0])).endswith(
        " values-nodeselector, values-unknown-key")  # each id once
