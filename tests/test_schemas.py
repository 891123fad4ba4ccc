"""Every JSON document sunkcheck prints validates against the schema it names, as shipped in the package."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from importlib.resources import files

import pytest
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError

from tests.conftest import CASES, FIXTURES, ROOT, expected, replayed, run
from tests.test_machine_outputs import FAILURES
from tests.test_unattended import two_clusters

OUTPUTS = ("check", "explain", "rules")


def schema(output: str) -> dict:
    """A schema as an installed package reads it."""
    return json.loads((files("sunkcheck") / "schemas" / f"{output}.v1.json").read_text(encoding="utf-8"))


VALIDATORS = {f"sunkcheck/{o}/v1": Draft202012Validator(schema(o), format_checker=FormatChecker()) for o in OUTPUTS}
VALIDATORS["sunkcheck/v1"] = VALIDATORS["sunkcheck/check/v1"]  # the id before each output had its own


def validate(doc: dict) -> dict:
    """Validate `doc` against the schema its `schema` field names, as a consumer dispatches."""
    VALIDATORS[doc["schema"]].validate(doc)
    return doc


def check_json(*args: str) -> dict:
    return validate(run("check", *args, "-o", "json").json())


def test_the_schemas_are_valid_draft_2020_12():
    for output in OUTPUTS:
        Draft202012Validator.check_schema(schema(output))
        assert schema(output)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_check_and_explain_share_their_node_definitions():
    """The per-Node verdict is one shape in both documents: its definitions are copied, never diverge."""
    check, explain = schema("check")["$defs"], schema("explain")["$defs"]
    for name in ("node", "reason", "check_name"):
        assert check[name] == explain[name], name


@pytest.mark.parametrize("case", CASES)
def test_check_of_every_fixture_validates(case):
    doc = check_json("--snapshot", str(FIXTURES / case), *expected(case)["args"])
    assert doc["schema"] == "sunkcheck/check/v1" and doc["results"]


@pytest.mark.parametrize("case", CASES)
def test_explain_of_every_fixture_target_validates_with_a_deep_view(case):
    targets = replayed(case).json()["results"]
    for t in targets:
        flag = "--daemonset" if t["kind"] == "DaemonSet" else "--nodeset"
        args = ("explain", "--snapshot", str(FIXTURES / case), flag, t["name"], "-n", t["namespace"], "-o", "json")
        doc = validate(run(*args).json())
        assert doc["schema"] == "sunkcheck/explain/v1" and "node" not in doc
        if doc["nodes"]:
            deep = validate(run(*args, "--node", doc["nodes"][0]["name"]).json())
            assert deep["node"]["name"] == doc["nodes"][0]["name"]


def test_rules_validate():
    doc = validate(json.loads(run("rules", "-o", "json").out))
    assert doc["schema"] == "sunkcheck/rules/v1"
    assert {"pool-split", "values-nodeselector", "daemonset-pod-pending"} <= {r["id"] for r in doc["rules"]}


@pytest.mark.parametrize("rule_id", ["pool-split", "values-nodeselector"])
def test_one_rule_honours_the_output_format(rule_id):
    """`rules ID -o json` is the rules document with that row alone; `-o markdown` the table's header and row."""
    whole = json.loads(run("rules", "-o", "json").out)
    r = run("rules", rule_id, "-o", "json")
    assert r.code == 0
    assert validate(json.loads(r.out)) == {"schema": "sunkcheck/rules/v1",
                                           "rules": [row for row in whole["rules"] if row["id"] == rule_id]}
    table = run("rules", "-o", "markdown").out.splitlines()
    r = run("rules", rule_id, "-o", "markdown")
    assert r.code == 0 and r.out.splitlines() == table[:2] + [line for line in table if line.startswith(f"| `{rule_id}` |")]
    assert run("rules", rule_id, "-o", "plain").out == run("rules", rule_id).out  # one row in full, as text


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_unknown_documents_printed_on_failures_validate(case):
    doc = validate(run("check", *FAILURES[case], "-o", "json").json())
    assert doc["status"] == "unknown" and doc["errors"]


def test_explain_that_cannot_answer_prints_a_check_document():
    r = run("explain", "--snapshot", str(FIXTURES / "two-problems"), "--nodeset", "nope", "-o", "json")
    doc = validate(r.json())
    assert r.code == 3 and doc["schema"] == "sunkcheck/check/v1" and doc["status"] == "unknown"


def test_lint_of_every_lint_fixture_validates():
    for path in sorted((FIXTURES / "lint").glob("*.yaml")):
        assert validate(run("lint", str(path), "-o", "json").json())["results"], path
    assert validate(run("lint", str(FIXTURES / "lint" / "absent.yaml"), "-o", "json").json())["status"] == "unknown"


def test_live_check_and_explain_validate(serve):
    serve("two-problems")
    doc = check_json()
    assert doc["sources"][0]["type"] == "live" and doc["checked_at"]
    validate(run("explain", "-o", "json", "--node", "g18d510").json())


def test_wait_that_never_converged_validates(serve, clock):
    serve("two-problems")
    doc = check_json("--wait", "500ms", "--interval", "200ms")
    assert "slurm-cpu-batch" in doc["never_converged"]


def test_a_values_prediction_validates(tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text("compute:\n  nodes:\n    cpu-batch:\n      enabled: true\n      gresGpu: null\n")
    doc = check_json("--snapshot", str(FIXTURES / "healthy-pool-name"), "--values", str(values))
    assert doc["prediction"] is True and doc["predicted_from"] == [str(values)]


def test_several_contexts_one_unreachable_validate(tmp_path, cert, monkeypatch, no_backoff):
    config, apis = two_clusters(tmp_path, cert, "replicas-cap", "healthy-pool-name")
    apis[1].__exit__(None, None, None)  # cluster-1 goes away
    monkeypatch.setenv("KUBECONFIG", str(config))
    try:
        doc = check_json("--all-contexts")
    finally:
        apis[0].__exit__(None, None, None)
    assert [r["context"] for r in doc["results"]] == ["cluster-0"] and doc["errors"]


def test_a_document_of_the_previous_id_still_validates():
    doc = run("check", "--snapshot", str(FIXTURES / "two-problems"), "-o", "json").json()
    validate(doc | {"schema": "sunkcheck/v1"})


def broken(doc: dict, path: tuple, value) -> dict:
    """A copy of `doc` with the field at `path` set to `value` (None removes it)."""
    doc = copy.deepcopy(doc)
    *parents, last = path
    holder = doc
    for key in parents:
        holder = holder[key]
    if value is None:
        del holder[last]
    else:
        holder[last] = value
    return doc


@pytest.mark.parametrize("path,value", [
    (("status",), "fine"),
    (("results", 0, "status"), "WARNING"),
    (("results", 0, "steps", 0, "status"), "info"),
    (("results", 0, "steps", 0, "name"), "nodepools"),
    (("results", 0, "steps", 0, "counts", "target"), "6"),
    (("results", 0, "symptoms", 0, "severity"), "error"),
    (("results", 0, "nodes", 1, "reasons", 0, "check"), "resource"),
    (("results", 0, "nodes", 0, "feasible"), "yes"),
    (("sources", 0, "type"), "file"),
    (("schema",), "sunkcheck/v2"),
    (("prediction",), None),
    (("results", 0, "symptoms", 0, "suppressed"), None),
])
def test_a_wrong_check_document_is_rejected(path, value):
    doc = check_json("--snapshot", str(FIXTURES / "two-problems"))
    with pytest.raises(ValidationError):
        VALIDATORS["sunkcheck/check/v1"].validate(broken(doc, path, value))


def test_wrong_explain_and_rules_documents_are_rejected():
    deep = validate(run("explain", "--snapshot", str(FIXTURES / "two-problems"), "-o", "json", "--node", "g18d510").json())
    rules = validate(json.loads(run("rules", "-o", "json").out))
    for doc in (broken(deep, ("node", "checks", 0, "ok"), "ok"), broken(deep, ("kind",), "Deployment"),
                broken(rules, ("rules", 0, "severity"), "major"), broken(rules, ("rules", 0, "id"), "Pool Split")):
        with pytest.raises(ValidationError):
            validate(doc)


def test_docs_ship_the_package_schemas_byte_for_byte():
    """docs/schemas/ is a copy for readers of the repository; the package's files are the source."""
    for output in OUTPUTS:
        shipped = (files("sunkcheck") / "schemas" / f"{output}.v1.json").read_bytes()
        assert (ROOT / "docs" / "schemas" / f"{output}.v1.json").read_bytes() == shipped, output


def test_a_built_package_ships_the_schemas(tmp_path):
    """What setuptools puts in a wheel (build_py): the schemas are package data, declared in pyproject.toml."""
    build = ["-c", "import setuptools; setuptools.setup()", "-q", "egg_info", "--egg-base", str(tmp_path),
             "build_py", "--build-lib", str(tmp_path / "lib")]
    subprocess.run([sys.executable, *build], cwd=ROOT, check=True, capture_output=True)
    for output in OUTPUTS:
        assert (tmp_path / "lib" / "sunkcheck" / "schemas" / f"{output}.v1.json").read_bytes() == \
            (ROOT / "sunkcheck" / "schemas" / f"{output}.v1.json").read_bytes()
