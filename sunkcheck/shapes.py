"""The JSON shape of every field the analysis reads, by kind: a snapshot file edited by hand into another
shape is refused at load with the file, the object and the field, instead of failing deep in a rule.

A shape is a type (or a tuple of types) for a scalar, a dict of fields for an object (fields not listed
are not read, so not checked), `[shape]` for a list, `MapOf(shape)` for a map (`MapOf(shape, keys)`: its
keys in a Syntax too), a `Syntax` for a string the API server validates and `Rule(shape, problem)` for an
object whose fields the API server validates together, or a number it keeps in a range (COUNT). An absent
or null field always passes: real objects omit what they do not set, and Go writes a nil map, slice or
pointer as null. A null item of a list or value of a map never does (Go's slices and maps of strings and
structs hold no nil), so it is refused like any other wrong shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from collections.abc import Callable
from typing import Any

from sunkcheck import objects as o
from sunkcheck.objects import DNS_LABEL, DNS_SUBDOMAIN, Syntax


@dataclass(frozen=True)
class MapOf:
    values: object
    keys: Syntax | None = None


@dataclass(frozen=True)
class Rule:
    """`shape`, and then `problem(value)` None: what it returns otherwise says what is wrong in words."""
    shape: object
    problem: Callable[[Any], str | None]


def _requirement_problem(requirement: dict) -> str | None:
    """apimachinery's ValidateLabelSelectorRequirement: In and NotIn need values, the others take none."""
    if requirement.get("operator") in ("In", "NotIn"):
        return None if requirement.get("values") else "In and NotIn need values"
    return "Exists and DoesNotExist take no values" if requirement.get("values") else None


def _daemonset_selector_problem(selector: dict) -> str | None:
    """apps/v1's ValidateDaemonSetSpec: a selector with no requirement is refused (it would select every Pod of
    the namespace), so such a DaemonSet comes only from a hand-made snapshot or a server that is no API server."""
    return None if selector.get("matchLabels") or selector.get("matchExpressions") else "empty selector is invalid for daemonset"


def _count_problem(value: int) -> str | None:
    """A count or generation is an int64 the API server keeps non-negative: anything else never came from one (a
    401-digit count printed into a textfile would make Prometheus drop the whole file)."""
    if 0 <= value < 2**63:
        return None
    shown = str(value) if len(str(value)) <= 24 else f"{str(value)[:12]}... ({len(str(value).lstrip('-'))} digits)"
    return f"{shown} is not an integer from 0 to 2^63-1, as the API server keeps it"


QUANTITY = (str, int, float)  # "250m", "64Gi", or a bare number
COUNT = Rule(int, _count_problem)
LABELS = MapOf(str)
META = {"name": str, "namespace": str, "uid": str, "generation": COUNT, "labels": LABELS, "annotations": LABELS,
        "ownerReferences": [{"kind": str, "name": str}]}
CONDITION = {"type": str, "status": str, "reason": str, "message": str}
TAINT = {"key": str, "value": str, "effect": str}
REQUIREMENT = {"key": str, "operator": str, "values": [str]}
TERM = {"matchExpressions": [REQUIREMENT], "matchFields": [REQUIREMENT]}
RESOURCES = {"requests": MapOf(QUANTITY), "limits": MapOf(QUANTITY)}
CONTAINER = {"name": str, "resources": RESOURCES, "restartPolicy": str}
POD_SPEC = {
    "nodeName": str, "nodeSelector": LABELS, "hostNetwork": bool, "overhead": MapOf(QUANTITY), "resources": RESOURCES,
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [TERM]},
                                  "preferredDuringSchedulingIgnoredDuringExecution": [{"preference": TERM}]}},
    "tolerations": [{"key": str, "operator": str, "value": str, "effect": str}],
    "containers": [CONTAINER], "initContainers": [CONTAINER],
}
TEMPLATE = {"metadata": META, "spec": POD_SPEC}
SELECTOR_OPERATOR = Syntax(re.compile("In|NotIn|Exists|DoesNotExist"), 12, "In, NotIn, Exists or DoesNotExist")
# a metav1.LabelSelector, which the server turns into a label selector: only label syntax, as it validates it
LABEL_SELECTOR = {"matchLabels": MapOf(o.LABEL_VALUE, keys=o.LABEL_KEY),
                  "matchExpressions": [Rule({"key": o.LABEL_KEY, "operator": SELECTOR_OPERATOR, "values": [o.LABEL_VALUE]},
                                            _requirement_problem)]}
OBJECT_META = META | {"name": DNS_SUBDOMAIN, "namespace": DNS_LABEL}  # what the API server validates
INVOLVED = {"kind": str, "name": str, "namespace": str}
CONTAINER_STATUS = {"name": str, "restartCount": COUNT,
                    "state": {"waiting": {"reason": str}, "terminated": {"exitCode": int}}}


def _counts(columns: tuple[tuple[str, str], ...]) -> dict:
    """A status of kubectl's count columns and the generation it describes: integers."""
    return {field: COUNT for _, field in columns} | {"observedGeneration": COUNT}


SHAPES = {
    "Node": {"metadata": OBJECT_META, "spec": {"taints": [TAINT], "unschedulable": bool},
             "status": {"conditions": [CONDITION], "allocatable": MapOf(QUANTITY),
                        "addresses": [{"type": str, "address": str}]}},
    "Pod": {"metadata": OBJECT_META, "spec": POD_SPEC | {"nodeName": DNS_SUBDOMAIN},
            "status": {"phase": str, "conditions": [CONDITION], "containerStatuses": [CONTAINER_STATUS],
                       "initContainerStatuses": [CONTAINER_STATUS]}},
    "NodePool": {"metadata": OBJECT_META,
                 "spec": {"instanceType": str, "targetNodes": COUNT, "targetRacks": COUNT, "nodeLabels": LABELS,
                          "nodeTaints": [TAINT]},
                 "status": {"currentNodes": COUNT, "conditions": [CONDITION]}},
    "NodeSet": {"metadata": OBJECT_META,
                "spec": {"replicas": COUNT, "podNamePrefix": str, "nodeSelector": LABELS, "template": TEMPLATE},
                "status": _counts(o.NODESET_COLUMNS)},
    "DaemonSet": {"metadata": OBJECT_META, "spec": {"selector": Rule(LABEL_SELECTOR, _daemonset_selector_problem),
                                                    "template": TEMPLATE},
                  "status": _counts(o.DAEMONSET_COLUMNS)},
    "Event": {"metadata": OBJECT_META, "involvedObject": INVOLVED, "regarding": INVOLVED, "reason": str, "message": str,
              "note": str, "type": str, "count": COUNT, "series": {"count": COUNT}},
}


def mismatch(obj: dict, kind: str) -> str | None:
    """The first field of `obj` whose value has another shape than the analysis reads, in words."""
    found = mismatch_at(obj, kind)
    return found[1] if found else None


def mismatch_at(obj: dict, kind: str) -> tuple[tuple, str] | None:
    """mismatch's field as a path of keys and list indexes too (for a file's `file:line`), and its words."""
    found = _checker(kind)(obj)
    if found is None:
        return None
    path, value, expected = found
    where = "".join(f"[{p}]" if isinstance(p, int) else f"[{p!r}]" if key else f".{p}"
                    for p, key in path).lstrip(".")
    keys = tuple(p for p, _ in path)
    if type(expected) is Syntax:  # a string, but not one the API server accepts: show it
        return keys, f"{where} is {value[:80]!r}, expected {expected.description}"
    if type(expected) is _Key:
        return keys, f"{where} has the key {value[:80]!r}, expected {expected.syntax.description}"
    if type(expected) is Rule:
        return keys, f"{where}: {expected.problem(value)}"
    return keys, f"{where} is {_NAMES.get(type(value), type(value).__name__)}, expected {expected}"


Checker = Callable[[object], "tuple | None"]
"""None when a (non-null) value fits a shape, else (path, the value, what was expected)."""


@cache
def _checker(kind: str) -> Checker:
    return _compile(SHAPES[kind])


# The shape check runs over every object a check reads, live and replayed (thousands of Nodes and Pods): each
# shape is compiled once into closures specialised for it, so that walking an object does no dispatch on the
# shape, a scalar field of the right type costs no call, and a list or map of scalars is checked at C speed.
# The path is built only on a mismatch. Exact types: JSON gives no subclasses.

def _compile(shape: Any) -> Checker:
    kind = type(shape)
    if kind is dict:
        return _fields_checker(shape)
    if kind is list:
        return _items_checker(shape[0], list)
    if kind is MapOf:
        return _items_checker(shape.values, dict, shape.keys)
    if kind is Rule:
        check = _compile(shape.shape)
        return lambda value: check(value) or (None if shape.problem(value) is None else ((), value, shape))
    if kind is Syntax:
        def check_syntax(value: object) -> tuple | None:
            if type(value) is not str:
                return (), value, _NAMES[str]
            return None if shape.fits(value) else ((), value, shape)
        return check_syntax
    allowed = shape if kind is tuple else (shape,)
    expected = _expected(allowed)
    return lambda value: None if type(value) in allowed else ((), value, expected)


def _fields_checker(shape: dict) -> Checker:
    # (name, the exact type of a scalar field, or None, its checker): a scalar of its type needs no call
    fields = tuple((name, want if type(want) is type else None, _compile(want)) for name, want in shape.items())

    def check_fields(value: object) -> tuple | None:
        if type(value) is not dict:
            return (), value, "an object"
        for name, scalar, check in fields:
            item = value.get(name)
            if item is not None and type(item) is not scalar and (found := check(item)):
                return ((name, False), *found[0]), found[1], found[2]
        return None
    return check_fields


@dataclass(frozen=True)
class _Key:
    """What a map's key was expected to be."""
    syntax: Syntax


def _items_checker(want: Any, container: type[Any], keys: Syntax | None = None) -> Checker:
    is_map = container is dict
    key_expected = None if keys is None else _Key(keys)
    wrong = "an object" if is_map else "a list"
    check = _compile(want)
    scalars = _types(want) if _scalar(want) else None

    def check_items(value: Any) -> tuple | None:
        if type(value) is not container:
            return (), value, wrong
        if keys is not None and (key := next((k for k in value if not keys.fits(k)), None)) is not None:
            return (), key, key_expected  # JSON's keys are strings
        if scalars is not None and set(map(type, value.values() if is_map else value)) <= scalars:
            return None  # labels: a dozen per object, at C speed
        for key, item in value.items() if is_map else enumerate(value):
            if (found := check(item)) is not None:
                return ((key, is_map), *found[0]), found[1], found[2]
        return None
    return check_items


def _scalar(shape: Any) -> bool:
    return type(shape) is type or type(shape) is tuple


@cache
def _types(shape: Any) -> frozenset:
    return frozenset((shape,) if type(shape) is type else shape)


def _expected(allowed: tuple) -> str:
    return " or ".join(_NAMES[t] for t in allowed)


_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", dict: "an object",
          list: "a list", type(None): "null"}
