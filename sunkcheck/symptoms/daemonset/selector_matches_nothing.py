"""daemonset-selector-matches-nothing: DESIRED 0, the scope a typo away from the Nodes' labels."""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from collections.abc import Iterable

from sunkcheck import objects as o
from sunkcheck.analyze.daemonset import Scope
from sunkcheck.analyze.feasibility import describe_expression, required_terms
from sunkcheck.analyze.nodes import selected_by, selector
from sunkcheck.model import NO_NODE, DeadEnd, Status
from sunkcheck.objects import LABEL_KEY, LABEL_VALUE
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.symptoms.fixes import arg

LABEL_REMOVAL = ("removing or changing a label the scope keys on is live: the controller deletes the daemon Pod "
                 "on that Node within seconds")


def selects_nothing(s: Scope) -> bool:
    """No Node selected, and the controller agrees (DESIRED 0), or has not said and no Node is eligible."""
    desired = s.counts.desired
    return not s.selected and (desired == 0 or (desired is None and not s.eligible))


def label_census(nodes: Iterable[dict]) -> dict[str, Counter]:
    """How many Nodes carry each value of each label key."""
    found: dict[str, Counter] = defaultdict(Counter)
    for n in nodes:
        for k, v in o.labels(n).items():
            found[k][v] += 1
    return found


def requirements(pod_spec: dict) -> list[dict]:
    """The scope's requirements: nodeSelector entries as `In`, then every required expression."""
    wanted = [{"key": k, "operator": "In", "values": [v]} for k, v in sorted((pod_spec.get("nodeSelector") or {}).items())]
    return wanted + [e for t in required_terms(pod_spec) or () for e in t.get("matchExpressions") or ()]


def near_miss(expr: dict, census: dict[str, Counter]) -> str:
    """What the Nodes carry of the expression's key, and the nearest value (or key) it may have meant."""
    key = expr.get("key")
    if key not in census:
        near = difflib.get_close_matches(key, list(census), 1) if isinstance(key, str) else []
        return f"{describe_expression(expr)}: no Node carries {key}" + (f"; did you mean {near[0]}?" if near else "")
    values = ", ".join(f"{v} ({n})" for v, n in sorted(census[key].items()))
    near = difflib.get_close_matches(str((expr.get("values") or [""])[0]), list(census[key]), 1)
    meant = f"; did you mean {near[0]}?" if near and near[0] not in (expr.get("values") or []) else ""
    return f"{describe_expression(expr)}: Nodes carry {key} = {values}{meant}"


def dead_end(s: Scope) -> DeadEnd | None:
    """Waiting cannot help when no Node Pool brings a Node into the scope: neither a pool's nodeLabels (what its new
    Nodes carry; known where the NodePools were read) nor its Nodes meet it."""
    if any(selected_by(p, selector(s.pod_spec)) for p in s.cluster.pools.values()):
        return None
    scope = "; ".join(describe_expression(e) for e in requirements(s.pod_spec)) or "its nodeName"
    return DeadEnd(f"no Node, nor any Node Pool's nodeLabels, meets its scope ({scope}): none enters it by itself",
                   (NO_NODE,))


def check_command(pod_spec: dict) -> str:
    """`kubectl get nodes -l <the nodeSelector>`; a selector of labels the API server would refuse (a hand-edited
    snapshot's) selects nothing: then every Node's labels."""
    pairs = sorted((pod_spec.get("nodeSelector") or {}).items())
    valid = all(LABEL_KEY.fits(k) and LABEL_VALUE.fits(v) for k, v in pairs)
    selector = ",".join(f"{k}={v}" for k, v in pairs) if valid else ""
    return f"kubectl get nodes -l {arg(selector)}" if selector else "kubectl get nodes --show-labels"


def selector_matches_nothing(s: Scope) -> Match | None:
    if not selects_nothing(s):
        return None
    desired = s.counts.desired
    evidence = [f"DESIRED {desired if desired is not None else 0}: no Node matches the template's scope"]
    census = label_census(s.cluster.nodes.values())
    evidence += [near_miss(expr, census) for expr in requirements(s.pod_spec)]
    stale = [p for p in s.pods if s.node_of(p)]
    if stale:
        evidence.append(f"{len(stale)} daemon Pod(s) still on Nodes that no longer match ({some(o.name(p) for p in stale)}): "
                        "the controller deletes them")
    return Match(tuple(evidence), f"correct the selector to labels the Nodes carry; {LABEL_REMOVAL}. Check with:\n"
                 + check_command(s.pod_spec), dead_end=dead_end(s))


RULE = Rule("daemonset-selector-matches-nothing", Status.CRITICAL, "nodes",
            "DaemonSet DESIRED is 0",
            "Its nodeSelector or required affinity matches no Node, often a typo: no Pods, no errors, no Events.",
            "Compare the selector with `kubectl get nodes -l <selector>` and correct it.",
            selector_matches_nothing, needs=("nodes",), explained_by=("daemonset-node-name-set",), reads=(Read.EVERY_NODE,))
