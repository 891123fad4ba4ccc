"""Real objects omit optional fields, and Go controllers write null for nil maps and slices: no object
shaped like that may stop the analysis. Every field of one object of each kind is removed in turn (and
nulled, when it holds a map or a list), then the case is diagnosed, rendered and explained. A field edited
by hand into another type, or a scalar, a list item or a map value edited into null (which Go never
writes), is either refused at load, naming it, or read all the same."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from sunkcheck import snapshot
from sunkcheck.model import InputError
from sunkcheck.snapshot import RESOURCES, parse_list
from sunkcheck.pipeline import diagnose, explain
from sunkcheck.render import Output, render
from sunkcheck.target import Target
from tests.conftest import FIXTURES, expected

# cases whose objects between them carry every field the analysis reads (a crash-looping slurmd Pod: its containers' states)
CASES = ("healthy-dedicated", "foreign-pod-resources", "slurmd-pods-missing", "pool-below-target", "pool-nodes-unusable",
         "ds-pod-pending", "slurmd-starting-crashloop")
KEPT = {("metadata",), ("metadata", "name"), ("kind",)}  # what snapshot.load refuses to go without
# the DaemonSet's only selector requirement (its one label) goes nowhere either: the API server refuses an empty
# selector, which selects every Pod of the namespace
SELECTOR_LABELS = ("spec", "selector", "matchLabels")


def fields(obj, path=()):
    """Every path into `obj`, with the value there."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield (*path, key), value
        yield from fields(value, (*path, key))


def mutated(obj: dict, mode: str = "absent-or-null"):
    """(what changed, the object with it changed), one field at a time: removed and nulled ("absent-or-null"),
    given a value of another JSON type ("retyped"), or, for a scalar, a list item or a map value, nulled
    ("null-inside")."""
    for path, value in fields(obj):
        if path in KEPT or (mode == "absent-or-null" and path[:len(SELECTOR_LABELS)] == SELECTOR_LABELS):
            continue
        if mode == "retyped":
            changes = [("as a list", [])] if isinstance(value, str) else [("as a string", "x")]
        elif mode == "null-inside":
            inside = isinstance(path[-1], int) or not isinstance(value, (dict, list))
            changes = [("null", None)] if inside and value is not None else []
        else:
            nullable = isinstance(value, (dict, list)) and isinstance(path[-1], str)
            changes = [("without", None)] + ([("null", None)] if nullable else [])
        for how, new in changes:
            copied = copy.deepcopy(obj)
            parent = copied
            for key in path[:-1]:
                parent = parent[key]
            if how == "without":
                del parent[path[-1]]
            else:
                parent[path[-1]] = new
            yield f"{how} {'.'.join(map(str, path))}", copied


def _chosen(objects: tuple[dict, ...]) -> set[int]:
    """The first, the last and the largest object: say, both pod kinds, and the Node a case is about."""
    if not objects:
        return set()
    return {0, len(objects) - 1, max(range(len(objects)), key=lambda i: len(json.dumps(objects[i])))}


def run_all(snap: snapshot.Snapshot, target: Target) -> None:
    report = diagnose(snap, target)
    for output in (Output.PLAIN, Output.JSON, Output.NAGIOS):  # the table renders the same text, slowly
        render(report, output, width=120)
    explain(snap, target)


@pytest.mark.parametrize("mode", ["absent-or-null", "retyped", "null-inside"])
@pytest.mark.parametrize("case", CASES)
def test_odd_fields_never_stop_the_analysis(case, mode):
    base = snapshot.load(FIXTURES / case)
    args = expected(case)["args"]
    target = Target(daemonset=args[args.index("--daemonset") + 1]) if "--daemonset" in args else Target()
    failures = []
    for resource, kind in RESOURCES.items():
        objects = getattr(base, resource)
        for index in _chosen(objects or ()):
            for change, obj in mutated(objects[index], mode):
                try:
                    parse_list(obj, kind, resource)  # what snapshot.load checks of every file
                    run_all(replace(base, **{resource: (*objects[:index], obj, *objects[index + 1:])}), target)
                except InputError as e:
                    if mode == "absent-or-null":
                        failures.append(f"{resource}[{index}] {change}: refused: {e}")
                except Exception as e:  # every crash is collected and reported together
                    failures.append(f"{resource}[{index}] {change}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures[:20])
