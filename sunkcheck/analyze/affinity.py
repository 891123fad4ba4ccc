"""kube-scheduler's NodeAffinity filter: nodeName, nodeSelector and required node affinity, every comparison."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sunkcheck.analyze.nodeview import Labels, NodeView, compare, reasons_of
from sunkcheck.model import Check, Reason

AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"


def match_expression(expr: dict, node_labels: Mapping[Any, Any] | Labels) -> bool:
    """One nodeSelectorRequirement against a Node's labels; an invalid requirement matches nothing."""
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    present = key in node_labels
    if op in ("In", "NotIn"):
        if not values:
            return False
        return (present and node_labels[key] in values) if op == "In" else (not present or node_labels[key] not in values)
    if op in ("Exists", "DoesNotExist"):
        return not values and present == (op == "Exists")
    if op in ("Gt", "Lt"):
        if len(values) != 1 or not present:
            return False
        want, have = _int64(values[0]), _int64(node_labels[key])
        if want is None or have is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def match_field(expr: dict, node: NodeView) -> bool:
    """A matchFields requirement: only metadata.name, only In/NotIn, exactly one value."""
    values = expr.get("values") or []
    if expr.get("key") != "metadata.name" or len(values) != 1 or expr.get("operator") not in ("In", "NotIn"):
        return False
    return (node.name in values) == (expr["operator"] == "In")


# strconv.ParseInt(s, 10, 64), which kube-scheduler reads Gt/Lt with: an optional sign and ASCII digits, nothing
# else (Python's int() also takes `1_000`, ` 12` and other scripts' digits).
_INT = re.compile(r"[+-]?[0-9]+")


def _int64(text: object) -> int | None:
    if not _INT.fullmatch(text := str(text)):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def describe_expression(expr: dict, node: NodeView | None = None) -> str:
    """`key Op [values]`, plus what the Node has when it is given."""
    values = expr.get("values") or []
    text = f"{expr.get('key')} {expr.get('operator')}" + (f" [{', '.join(map(str, values))}]" if values else "")
    if node is None:
        return text
    if expr.get("key") == "metadata.name":
        return f"{text}: Node is {node.name}"
    have = f"label is {node.labels[expr.get('key')]!r}" if expr.get("key") in node.labels else "label absent"
    return f"{text}: {have}"


def required_terms(pod_spec: dict) -> list[dict] | None:
    """The required nodeSelectorTerms, or None when the template sets no required node affinity."""
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is None:
        return None
    return list(required.get("nodeSelectorTerms") or [])


def affinity_checks(pod_spec: dict, node: NodeView, skip_keys: frozenset[str] = frozenset()) -> list[Check]:
    """nodeName, nodeSelector AND required node affinity (terms ORed; an empty term or list matches nothing).

    A failing expression on `skip_keys` adds no reason of its own when another check already names the
    same fact; the affinity still fails.
    """
    checks = node_name_checks(pod_spec, node) + selector_checks(pod_spec, node)
    terms = required_terms(pod_spec)
    if terms is None:
        return checks
    return checks + required_checks(terms, node, skip_keys, said=bool(reasons_of(checks)))


def node_name_checks(pod_spec: dict, node: NodeView) -> list[Check]:
    """The template's nodeName, when it sets one: no other Node runs it."""
    want = pod_spec.get("nodeName")
    if not want:
        return []
    return [compare("affinity", "nodeName", want, node.name, want == node.name,
                    f"the template sets nodeName {want}: no other Node runs it",
                    "node(s) didn't match the requested node name")]


def selector_checks(pod_spec: dict, node: NodeView) -> list[Check]:
    """Each nodeSelector entry against the Node's label, by key."""
    labels = node.labels
    checks = []
    for key, value in sorted((pod_spec.get("nodeSelector") or {}).items()):
        have = f"label is {labels[key]!r}" if key in labels else "label absent"
        checks.append(compare("affinity", f"nodeSelector {key}", value, labels.get(key, "(absent)"),
                              labels.get(key) == value, f"nodeSelector {key}={value}: {have}", AFFINITY_MISMATCH))
    return checks


Row = tuple[dict, str, str, bool]
"""One requirement of a term compared: the requirement, its subject, what the Node has, whether it holds."""


def term_rows(i: int, term: dict, node: NodeView) -> list[Row]:
    """Every expression, then every field, of required term `i` against the Node."""
    labels = node.labels
    rows: list[Row] = [(e, f"term {i} expression", labels.get(e.get("key"), "(absent)"), match_expression(e, labels))
                       for e in term.get("matchExpressions") or ()]
    return rows + [(f, f"term {i} field", node.name, match_field(f, node)) for f in term.get("matchFields") or ()]


def required_checks(terms: list[dict], node: NodeView, skip_keys: frozenset[str], said: bool) -> list[Check]:
    """The required terms' comparisons, and whether any term matches. `said`: a check before them already gives
    a reason; when none does and every failing expression is skipped, the affinity still says it fails."""
    usable = [(i, t) for i, t in enumerate(terms) if t.get("matchExpressions") or t.get("matchFields")]
    if not usable:
        return [compare("affinity", "required node affinity", "a non-empty nodeSelectorTerm", "none", False,
                        "required node affinity has no non-empty nodeSelectorTerm: it matches no Node",
                        AFFINITY_MISMATCH)]
    compared = [(i, term_rows(i, t, node)) for i, t in usable]
    matched = next((i for i, rows in compared if all(ok for *_, ok in rows)), None)
    checks = [term_check(row, matched, node, f"term {i}: " if len(usable) > 1 else "", skip_keys)
              for i, rows in compared for row in rows]
    unsaid = matched is None and not said and not reasons_of(checks)
    fallback = (Reason("affinity", "required node affinity does not match", AFFINITY_MISMATCH),) if unsaid else ()
    checks.append(Check("affinity", "required node affinity", "any term matches (terms are ORed)",
                        "no term matches" if matched is None else f"term {matched} matches", matched is not None, fallback))
    return checks


def term_check(row: Row, matched: int | None, node: NodeView, where: str, skip_keys: frozenset[str]) -> Check:
    """One requirement's comparison: a failure is no reason when another term matches (the terms are ORed), nor
    on `skip_keys`."""
    expr, subject, found, ok = row
    if ok or matched is not None:
        return Check("affinity", subject, describe_expression(expr), found if ok else f"{found} (term {matched} matches)",
                     True)
    said = () if expr.get("key") in skip_keys else (_affinity_reason(expr, node, where),)
    return Check("affinity", subject, describe_expression(expr), found, False, said)


def _affinity_reason(expr: dict, node: NodeView, where: str) -> Reason:
    """A failing expression or field. One the Node fails with a value of its own (a label it carries, its name) says in
    `common` what Nodes alike share, and its value in `variant`: a pool pinned to some of its Nodes by hostname fails
    each of the others with another value."""
    detail = f"required affinity {where}{describe_expression(expr, node)}"
    key, op = expr.get("key"), expr.get("operator")
    if key == "metadata.name":
        own, what = node.name, "Node name"
    elif key in node.labels and op in ("In", "NotIn", "Gt", "Lt"):
        own, what = node.labels[key], "label"
    else:
        return Reason("affinity", detail, AFFINITY_MISMATCH)
    other = f"{what} is another value" if op == "In" else f"{what} is a value it refuses"
    return Reason("affinity", detail, AFFINITY_MISMATCH, f"required affinity {where}{describe_expression(expr)}: {other}",
                  repr(own))


def affinity_reasons(pod_spec: dict, node: dict) -> list[Reason]:
    return list(reasons_of(affinity_checks(pod_spec, NodeView(node))))


def matches_affinity(pod_spec: dict, node: dict) -> bool:
    return not affinity_reasons(pod_spec, node)
