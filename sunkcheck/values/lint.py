"""`sunkcheck lint`: read values files and Node Pool manifests, judge each definition and pool."""

from __future__ import annotations

from dataclasses import dataclass

from sunkcheck import shapes
from sunkcheck.model import InputError, Report, Result, Symptom
from sunkcheck.symptoms.lint import RULES, Definition, Finding, LintRule
from sunkcheck.values import yamlfile
from sunkcheck.values.compose import NODES_PATH, Effective, Values, compose, merge, misshapen


@dataclass(frozen=True)
class Inputs:
    values: Values | None
    """The values files merged in order; None when only Node Pool manifests were given."""
    nodepools: tuple[yamlfile.Document, ...]


def read(files: list[str]) -> Inputs:
    """Sort every YAML document into SUNK values or NodePool manifests; anything else is an error."""
    values_docs, pools = [], []
    docs = [doc for file in files for doc in yamlfile.load(file)]
    if not docs:
        raise InputError(f"{', '.join(files)}: no YAML document (expected SUNK values or a NodePool manifest)")
    for doc in docs:
        if not isinstance(doc.data, dict):
            raise InputError(f"{doc.where(())}: document {doc.index + 1} is a {type(doc.data).__name__}, "
                             "not SUNK values or a NodePool")
        kind = doc.data.get("kind")
        if kind == "NodePool":
            pools.append(doc)
        elif kind is None:
            values_docs.append(doc)
        else:
            raise InputError(f"{doc.where(('kind',))}: a {kind}, not SUNK values or a NodePool manifest")
    values = merge(values_docs) if values_docs else None
    if values is not None and not values.nodes:
        raise InputError(f"{', '.join(sorted({d.file for d in values_docs}))}: no compute.nodes in these values")
    if values is not None:
        _refuse_misshapen_definitions(values)
    for doc in pools:
        _refuse_misshapen_nodepool(doc)
    return Inputs(values, tuple(pools))


# Each shape every command reads the same way (lint, --render, check --values): what cannot be a table of node
# definitions or a Node Pool is refused here, once; a definition's value of the wrong type is lint's
# values-wrong-type finding (and refused by --render and check --values, which cannot predict from it).

def _refuse_misshapen_definitions(values: Values) -> None:
    for name, body in values.nodes.items():
        where = values.where((*NODES_PATH, name))
        if not isinstance(name, str):  # YAML's `1:`, `null:`, `2020-01-01:`, `true:` are no names
            shown = _yaml_scalar(name)
            raise InputError(f"{where}: compute.nodes key {shown}: YAML reads it as {_a(name)}, not a name; quote it "
                             f"(\"{shown}\") if that is the definition's name")
        if not isinstance(body, dict):
            raise InputError(f"{where}: compute.nodes.{name} is {_a(body)}, not a mapping (a node definition)")


def _refuse_misshapen_nodepool(doc: yamlfile.Document) -> None:
    wrong = shapes.mismatch_at(doc.data, "NodePool")
    if wrong:
        path, why = wrong
        raise InputError(f"{doc.where(path)}: NodePool {_pool_name(doc)}: {why}")


def _pool_name(doc: yamlfile.Document) -> str:
    meta = doc.data.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) and name else f"{doc.file}#{doc.index + 1}"


def _yaml_scalar(value: object) -> str:
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _a(value: object) -> str:
    """What YAML made of a value, in words."""
    import datetime

    if value is None:
        return "null"
    for kind, words in ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (datetime.date, "a date"),
                        (bytes, "binary data"), (list, "a list"), (str, "a string")):
        if isinstance(value, kind):
            return words
    return f"a {type(value).__name__}"


def lint(files: list[str], release: str, ignore: frozenset[str] = frozenset()) -> Report:
    inputs = read(files)
    results = []
    if inputs.values is not None:
        for name, body in inputs.values.nodes.items():
            definition = Definition(name, body, inputs.values, release)
            findings = [(r, f) for r in RULES if r.applies_to == "Values" for f in r.check(definition)]
            if definition.enabled or findings:  # a layer creates no NodeSet: listed only for its own findings
                results.append(_result("Values", name, definition.where(), findings, ignore))
    for doc in inputs.nodepools:
        results.append(_result("NodePool", _pool_name(doc), doc.where(()), [(r, f) for r in RULES
                                                                           if r.applies_to == "NodePool"
                                                                           for f in r.check(doc)], ignore))
    return Report(tuple(results))


def _result(kind: str, name: str, where: str, findings: list[tuple[LintRule, Finding]],
            ignore: frozenset[str]) -> Result:
    symptoms = tuple(Symptom(rule.id, f.severity or rule.severity, rule.title, rule.cause, f.fix or rule.fix,
                             (f"{f.where}: {f.message}",), "lint", rule.id in ignore) for rule, f in findings)
    return Result(kind, "", name, (), (), symptoms, file=where)


def effective(files: list[str], release: str) -> list[Effective]:
    """The NodeSets the values would create (for --render and the what-if check)."""
    inputs = read(files)
    if inputs.values is None:
        raise InputError("no SUNK values among the files (only Node Pool manifests)")
    wrong = next(((name, path, why) for name, body in inputs.values.nodes.items() if isinstance(body, dict)
                  for path, why in misshapen(body)), None)
    if wrong:  # a prediction from misshapen values would mislead
        name, path, why = wrong
        raise InputError(f"{inputs.values.where((*NODES_PATH, name, *path))}: compute.nodes.{name}.{why} "
                         "(`sunkcheck lint` reports every such value)")
    return compose(inputs.values, release)


def render_effective(nodesets: list[Effective]) -> str:
    """Each effective NodeSet as YAML, with where its parts came from."""
    import yaml

    parts = []
    for e in nodesets:
        doc = {"nodeset": e.nodeset, "definition": e.key, "layers": list(e.layers),
               "affinity": e.pod_spec["affinity"], "tolerations": list(e.tolerations)}
        doc |= {k: e.values[k] for k in ("resources", "gresGpu", "replicas") if k in e.values}  # absent stays absent
        if e.values.get("nodeSelector"):
            doc["nodeSelectorIgnored"] = e.values["nodeSelector"]
        parts.append(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
    return "---\n".join(parts)
