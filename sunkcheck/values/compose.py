"""Helm's merge of values files, and SUNK's composition of `compute.nodes` definitions into the NodeSets a
release creates (rules from the "Bind NodeSets to Node Pools" guide):

- a definition with `enabled: true` becomes a NodeSet; one without `enabled` is a layer that others list
  under `definitions` (an enabled definition is no longer available as a layer);
- layers apply in the order listed, the definition's own values last;
- tolerations accumulate;
- only the first `nodeSelectorTerms` entry of each layer takes part; match expressions merge by key into
  one term: same-key expressions union their values, and the definition's own same-key expression stays
  in place beside the merged one (so the result is narrower);
- every NodeSet inherits `node.coreweave.cloud/state In [production]`;
- `nodeSelector` never reaches the Pod template (kept apart: the runbook's silent failure);
- other values merge like Helm maps, later wins.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from sunkcheck import objects as o
from sunkcheck.values.yamlfile import Document

BASE_EXPRESSION = {"key": o.STATE_LABEL, "operator": "In", "values": [o.PRODUCTION]}
NODES_PATH = ("compute", "nodes")
REQUIRED = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
PREFERRED = ("affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")

# The shape of a node definition's values that sunkcheck reads: a type, a mapping of keys to shapes, or a
# one-item list giving the shape of every item. A value of another shape is values-wrong-type.
@dataclass(frozen=True)
class Each:
    """The shape of every value of a mapping whose keys are free (a resource name -> its quantity)."""

    shape: object


_QUANTITIES = Each((str, int, float))  # "64Gi", 8, 0.5
_EXPRESSIONS = [{"key": str, "operator": str, "values": [str]}]
_TOLERATIONS = [{"key": str, "operator": str, "value": str, "effect": str, "tolerationSeconds": int}]
SHAPE = {"enabled": bool, "replicas": int, "definitions": [str], "tolerations": _TOLERATIONS, "nodeSelector": dict,
         "resources": {"requests": _QUANTITIES, "limits": _QUANTITIES}, "staticFeatures": list, "dynamicFeatures": (list, dict),
         "affinity": {"nodeAffinity": {
             "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": _EXPRESSIONS}]},
             "preferredDuringSchedulingIgnoredDuringExecution": [{"preference": {"matchExpressions": _EXPRESSIONS}}]}}}
_WANTED = {dict: "a mapping", list: "a list", bool: "true or false", int: "a whole number", str: "a string"}


@dataclass(frozen=True)
class Values:
    """Values files merged in order (like `helm -f a -f b`), with where each path was last set."""

    data: dict
    origin: dict = field(default_factory=dict)

    def where(self, path: tuple) -> str:
        while path and path not in self.origin:
            path = path[:-1]
        return self.origin.get(path, "values")

    @cached_property
    def nodes(self) -> dict:
        """compute.nodes, without the definitions set to null: Helm deletes a key whose value is null."""
        nodes = (self.data.get("compute") or {}).get("nodes") if isinstance(self.data.get("compute"), dict) else None
        return {k: v for k, v in nodes.items() if v is not None} if isinstance(nodes, dict) else {}

    @cached_property
    def users(self) -> dict[str, list[str]]:
        """Each layer's users: the definitions listing it under `definitions` (one pass, not one per layer)."""
        found: dict[str, list[str]] = {}
        for name, body in self.nodes.items():
            listed = body.get("definitions") if isinstance(body, dict) else None
            for layer in dict.fromkeys(n for n in (listed if isinstance(listed, list) else ()) if isinstance(n, str)):
                found.setdefault(layer, []).append(name)
        return found


def merge(docs: list[Document]) -> Values:
    data: dict = {}
    origin: dict = {}
    for doc in docs:
        _merge_into(data, doc.data, (), doc, origin)
    return Values(data, origin)


def _merge_into(target: dict, source: dict, path: tuple, doc: Document, origin: dict) -> None:
    for key, value in source.items():
        here = (*path, key)
        origin[here] = doc.where(here)
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge_into(target[key], value, here, doc, origin)
        else:
            target[key] = copy.deepcopy(value)
            if isinstance(value, (dict, list)):
                _record(value, here, doc, origin)


def _record(value: dict | list, path: tuple, doc: Document, origin: dict) -> None:
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        origin[(*path, key)] = doc.where((*path, key))
        if isinstance(child, (dict, list)):
            _record(child, (*path, key), doc, origin)


def misshapen(value: object, shape: Any = SHAPE, path: tuple = (), item: bool = False) -> list[tuple[tuple, str]]:
    """(path, why) of every value not of its SHAPE; an unset (null) value is never wrong, a null item of a
    list always is (a toleration, a layer name or a label value cannot be null). `true` is no whole number."""
    if value is None and not item:
        return []
    if isinstance(shape, dict) and isinstance(value, dict):
        return [found for key, inner in shape.items() if key in value for found in misshapen(value[key], inner, (*path, key))]
    if isinstance(shape, list) and isinstance(value, list):
        return [found for i, one in enumerate(value) for found in misshapen(one, shape[0], (*path, i), True)]
    if isinstance(shape, Each) and isinstance(value, dict):
        return [found for key, one in value.items() for found in misshapen(one, shape.shape, (*path, key), True)]
    kind = dict if isinstance(shape, (dict, Each)) else list if isinstance(shape, list) else shape
    if isinstance(value, kind) and not (isinstance(value, bool) and kind is int):
        return []
    wanted = _WANTED.get(kind, "a string or number" if kind == (str, int, float) else "a list or mapping")
    shown = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return [(path, f"{shown} is null, expected {wanted}" if value is None
             else f"{shown} is {type(value).__name__} {value!r}, expected {wanted}")]


def at(value: object, path: tuple) -> object:
    """The value at `path` through nested mappings; None where it is unset or a level is not a mapping."""
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def listed(value: object) -> list:
    """`value` when it is a list, else none (a misshapen one is values-wrong-type's to report)."""
    return value if isinstance(value, list) else []


def required_terms(definition: dict) -> list:
    return listed(at(definition, (*REQUIRED, "nodeSelectorTerms")))


def first_term(definition: dict) -> list[dict]:
    """The well-formed match expressions of a definition's first required nodeSelectorTerm (the only one
    SUNK merges)."""
    terms = required_terms(definition)
    return [e for e in listed(at(terms[0], ("matchExpressions",)))
            if isinstance(e, dict) and not misshapen(e, _EXPRESSIONS[0])] if terms else []


def layers_of(name: str, nodes: dict) -> list[str]:
    """The layers a definition includes, in order: listed, existing, and not themselves enabled."""
    return [n for n in listed(at(nodes, (name, "definitions")))
            if isinstance(n, str) and isinstance(nodes.get(n), dict) and not nodes[n].get("enabled")]


@dataclass(frozen=True)
class Effective:
    """What SUNK deploys for one enabled definition."""

    key: str
    nodeset: str
    layers: tuple[str, ...]
    expressions: tuple[dict, ...]
    tolerations: tuple[dict, ...]
    values: dict
    """Every other value after layering (resources, gresGpu, replicas, nodeSelector, preferred affinity...)."""

    @property
    def pod_spec(self) -> dict:
        """The slurmd Pod template's placement and resources (nodeSelector does not reach it)."""
        spec: dict = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [dict(e) for e in self.expressions]}]}}},
            "tolerations": [dict(t) for t in self.tolerations],
            "containers": [{"name": "slurmd", "resources": copy.deepcopy(self.values.get("resources") or {})}]}
        preferred = listed(at(self.values, PREFERRED))
        if preferred:
            spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
        return spec

    def nodeset_object(self, namespace: str) -> dict:
        """A NodeSet as the release would create it (no status yet: a prediction)."""
        spec = {"template": {"metadata": {"labels": {o.INSTANCE_LABEL: self.nodeset}}, "spec": self.pod_spec}}
        if self.values.get("replicas") is not None:
            spec["replicas"] = self.values["replicas"]
        if self.values.get("nodeSelector"):
            spec["nodeSelector"] = dict(self.values["nodeSelector"])
        return {"apiVersion": "sunk.coreweave.com/v1alpha1", "kind": "NodeSet",
                "metadata": {"name": self.nodeset, "namespace": namespace}, "spec": spec}


def compose(values: Values, release: str) -> list[Effective]:
    nodes = values.nodes
    return [compose_one(name, nodes, release) for name, body in nodes.items()
            if isinstance(body, dict) and body.get("enabled") is True]


def compose_one(name: str, nodes: dict, release: str) -> Effective:
    layers = layers_of(name, nodes)
    merged: dict[str | None, dict] = {o.STATE_LABEL: copy.deepcopy(BASE_EXPRESSION)}
    tolerations: list[dict] = []
    other: dict = {}
    for layer in layers:
        body = nodes[layer]
        for expr in first_term(body):
            _union(merged, expr)
        tolerations += [t for t in listed(body.get("tolerations")) if isinstance(t, dict)]
        _deep_update(other, {k: v for k, v in body.items() if k not in ("tolerations", "definitions", "enabled")})
    own = nodes[name]
    left_in_place = []
    for expr in first_term(own):
        if expr.get("key") in merged:
            _union(merged, expr)
            left_in_place.append(copy.deepcopy(expr))
        else:
            merged[expr.get("key")] = copy.deepcopy(expr)
    tolerations += [t for t in listed(own.get("tolerations")) if isinstance(t, dict)]
    _deep_update(other, {k: v for k, v in own.items() if k not in ("tolerations", "definitions", "enabled")})
    return Effective(name, f"{release}-{name}", tuple(layers), tuple(merged.values()) + tuple(left_in_place),
                     tuple(tolerations), other)


def _union(merged: dict[str | None, dict], expr: dict) -> None:
    key = expr.get("key")
    if key not in merged:
        merged[key] = copy.deepcopy(expr)
        return
    values = list(merged[key].get("values") or [])
    values += [v for v in expr.get("values") or [] if v not in values]
    if values:
        merged[key]["values"] = values


def _deep_update(target: dict, source: dict) -> None:
    for key, value in source.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
