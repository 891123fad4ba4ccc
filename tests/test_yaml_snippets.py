"""Fix snippets are YAML a reader gets back exactly: every value a string, whatever the cluster named."""

import re

import pytest
import yaml

from sunkcheck.symptoms.fixes import affinity_yaml, expression_yaml, to_yaml, toleration
from tests.conftest import CASES, expected, replayed, run

HOSTILE = ["0x1F", "1_000", "1e3", "0o17", "012", "+1", ".5", "1.0", ".inf", ".NaN", "-Inf", "+nan", "y", "N", "yes", "off",
           "true", "null", "~", "", "2001-01-01", "a: b", "#x", "x #y", "- x", "[x]", "{x}", "*a", "&a", "!x", "%x", "@x", "`x",
           "'q'", '"q"', " lead", "trail ", "x\ny", "\x1b[31mred", "é", "h100", "sunk.example.com/gpu"]


class GoLikeLoader(yaml.SafeLoader):
    """Reads plain scalars as liberally as helm and kubectl do (Go's strconv: underscores, 0o, exponents, y/n)."""


GoLikeLoader.add_implicit_resolver("tag:go,int", re.compile(r"^[-+]?(0[xX][0-9a-fA-F_]+|0[oObB]?[0-7_]+|[0-9_]+)$"),
                                   list("-+0123456789"))
GO_FLOAT = r"^[-+]?([0-9_]*\.?[0-9_]+([eE][-+]?[0-9]+)?|\.(inf|nan))$|^[-+](inf|infinity|nan)$"
GoLikeLoader.add_implicit_resolver("tag:go,float", re.compile(GO_FLOAT, re.I), list("-+.0123456789"))
GoLikeLoader.add_implicit_resolver("tag:go,bool", re.compile(r"^(y|Y|n|N)$"), list("yYnN"))
GoLikeLoader.add_constructor("tag:go,int", lambda loader, node: ("go-number", node.value))
GoLikeLoader.add_constructor("tag:go,float", lambda loader, node: ("go-number", node.value))
GoLikeLoader.add_constructor("tag:go,bool", lambda loader, node: ("go-bool", node.value))


def both_loaders(text: str):
    """What PyYAML and a Go-like reader make of `text`; they must agree."""
    safe, go = yaml.safe_load(text), yaml.load(text, Loader=GoLikeLoader)
    assert safe == go, text
    return safe


@pytest.mark.parametrize("value", HOSTILE)
def test_affinity_snippet_round_trips_hostile_keys_and_values(value):
    exprs = [{"key": value, "operator": "In", "values": [value, "h100"]}, {"key": value, "operator": "Exists"}]
    assert both_loaders(affinity_yaml(exprs)) == {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}}}


@pytest.mark.parametrize("value", HOSTILE)
def test_expression_toleration_and_selector_snippets_round_trip(value):
    assert both_loaders(expression_yaml({"key": "k", "operator": "In", "values": [value]})) == \
        [{"key": "k", "operator": "In", "values": [value]}]
    assert both_loaders(to_yaml([toleration({"key": value, "effect": "NoSchedule"})])) == \
        [{"key": value, "operator": "Exists", "effect": "NoSchedule"}]
    assert both_loaders(to_yaml({"nodeSelector": {value: value}})) == {"nodeSelector": {value: value}}


def test_snippets_keep_the_values_file_style_and_never_carry_a_raw_escape():
    assert affinity_yaml([{"key": "pool", "operator": "In", "values": ["a", "0x1F"]}]) == "\n".join([
        "affinity:",
        "  nodeAffinity:",
        "    requiredDuringSchedulingIgnoredDuringExecution:",
        "      nodeSelectorTerms:",
        "        - matchExpressions:",
        "            - key: pool",
        "              operator: In",
        "              values: [a, '0x1F']"])
    assert "\x1b" not in to_yaml([toleration({"key": "\x1b[31mred"})])


@pytest.mark.parametrize("key", ["1e3", "0x1F", "y", "a: b", "x\ny"])
def test_dedicated_pool_lint_snippet_round_trips_the_manifest_key(key, tmp_path):
    manifest = tmp_path / "pool.yaml"
    manifest.write_text(yaml.safe_dump({"apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
                                        "metadata": {"name": "p"}, "spec": {"nodeLabels": {"other": "x"},
                                        "nodeTaints": [{"key": key, "value": "v", "effect": "NoExecute"}]}}))
    doc = run("lint", str(manifest), "-o", "json").json()
    [fix] = [s["fix"] for r in doc["results"] for s in r["symptoms"] if s["id"] == "nodepool-dedicated-mismatch"]
    # the label the taint asks for, with the taint's own value; the pool's other labels kept, its taints untouched
    assert both_loaders(fix.split(":\n", 1)[1]) == {"nodeLabels": {"other": "x", key: "v"}}


YAML_START = re.compile(r"^(- |[A-Za-z_][\w.-]*:( |$))")


def yaml_snippets(fix: str):
    """Each YAML snippet of a fix, with the line after it: a snippet starts after a line ending in `:` with a list
    item or a `key:` line, and runs while its lines are list items, indented or `key:` lines."""
    lines = fix.split("\n")
    i = 1
    while i < len(lines):
        if lines[i - 1].endswith(":") and YAML_START.match(lines[i]):
            j = i
            while j < len(lines) and (YAML_START.match(lines[j]) or lines[j].startswith("  ")):
                j += 1
            yield "\n".join(lines[i:j]), lines[j] if j < len(lines) else None
            i = j
        i += 1


@pytest.mark.parametrize("case", CASES)
def test_every_yaml_snippet_in_a_fixture_fix_parses_and_no_prose_sits_inside_it(case):
    """A reader copies a YAML block to its last indented line: it must parse, and the line after it must open a new
    paste (a sentence ending in `:`), never be prose that reads as part of the block."""
    want = expected(case)
    if "usage_error" in want:
        return
    doc = replayed(case).json()
    for r in doc["results"]:
        for s in r["symptoms"]:
            for snippet, after in yaml_snippets(s["fix"]):
                assert isinstance(yaml.safe_load(snippet), (list, dict)), (case, s["id"], snippet)
                assert after is None or after.endswith(":"), (case, s["id"], after)
