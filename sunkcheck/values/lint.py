"""`sunkcheck lint`: read values files and Node Pool manifests, judge each definition and pool."""

from __future__ import annotations

from dataclasses import dataclass

from sunkcheck.model import InputError, Report, Result, Symptom
from sunkcheck.symptoms.lint import RULES, Definition
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
    return Inputs(values, tuple(pools))


def lint(files: list[str], release: str, ignore: frozenset[str] = frozenset()) -> Report:
    inputs = read(files)
    results = []
    if inputs.values is not None:
        for name, body in inputs.values.nodes.items():
            if not isinstance(body, dict):
                raise InputError(f"{inputs.values.where(('compute', 'nodes', name))}: compute.nodes.{name} is not a mapping")
            definition = Definition(name, body, inputs.values, release)
            results.append(_result("Values", name, [(r, f) for r in RULES if r.applies_to == "Values"
                                                    for f in r.check(definition)], ignore))
    for doc in inputs.nodepools:
        name = str((doc.data.get("metadata") or {}).get("name") or f"{doc.file}#{doc.index + 1}")
        results.append(_result("NodePool", name, [(r, f) for r in RULES if r.applies_to == "NodePool"
                                                  for f in r.check(doc)], ignore))
    return Report(tuple(results))


def _result(kind: str, name: str, findings, ignore: frozenset[str]) -> Result:
    symptoms = tuple(Symptom(rule.id, f.severity or rule.severity, rule.title, rule.cause, f.fix or rule.fix,
                             (f"{f.where}: {f.message}",), "lint", rule.id in ignore) for rule, f in findings)
    return Result(kind, "", name, (), (), symptoms)


def effective(files: list[str], release: str) -> list[Effective]:
    """The NodeSets the values would create (for --render and the what-if check)."""
    inputs = read(files)
    if inputs.values is None:
        raise InputError("no SUNK values among the files (only Node Pool manifests)")
    wrong = next(((name, path, why) for name, body in inputs.values.nodes.items() if isinstance(body, dict)
                  for path, why in misshapen(body)), None)
    if wrong:  # a prediction from misshapen values would mislead
        name, path, why = wrong
        raise InputError(f"{inputs.values.where(NODES_PATH + (name,) + path)}: compute.nodes.{name}.{why} "
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
