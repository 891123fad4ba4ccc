"""Fix text spelled with the cluster's real names: kubectl commands (shell-quoted) and values snippets."""

from __future__ import annotations

import json
import shlex
from itertools import chain, count

from sunkcheck.analyze.nodepool import Pool


def _patch_nodepool(pool: str, kind: str, body) -> str:
    text = json.dumps(body, separators=(",", ":"), sort_keys=True)
    return f"kubectl patch nodepool {shlex.quote(pool)} --type={kind} -p {shlex.quote(text)}"


def label_nodepool(pool: str, labels: dict) -> str:
    """A merge patch setting (None: removing) keys of a Node Pool's nodeLabels (needs the CKS Admin role). A merge
    patch merges a map key by key, so it names only the keys it changes and the pool's other labels stay."""
    return _patch_nodepool(pool, "merge", {"spec": {"nodeLabels": labels}})


def taint_nodepool(pool: Pool, taints: list[dict]) -> str:
    """A JSON patch adding `taints` to a Node Pool's nodeTaints. A merge patch would replace the whole list, so it
    appends; only a pool read with no nodeTaints gets the list created (appending to an absent list fails)."""
    if pool.obj is not None and not pool.node_taints:
        return _patch_nodepool(pool.name, "json", [{"op": "add", "path": "/spec/nodeTaints", "value": taints}])
    patch = _patch_nodepool(pool.name, "json", [{"op": "add", "path": "/spec/nodeTaints/-", "value": t} for t in taints])
    if pool.obj is not None:
        return patch
    return (f"(Node Pool {pool.name} could not be read: this appends to its nodeTaints, and fails without changing "
            f"anything if it has none yet)\n{patch}")


def new_taint_key(taken: set[str]) -> str:
    """An example taint key (example.com stands for the operator's domain) that none of `taken` collides with."""
    keys = chain(("sunk.example.com/node", "sunk.example.com/slurm"), (f"sunk.example.com/slurm-{i}" for i in count(2)))
    return next(k for k in keys if k not in taken)


def yaml_value(value) -> str:
    """A scalar as YAML would need it (quoted when it would otherwise change type or meaning)."""
    text = str(value)
    plain = text and text[0].isalnum() and all(c.isalnum() or c in "-_./" for c in text)
    return text if plain and text.lower() not in ("true", "false", "null", "yes", "no", "on", "off") \
        and not text.replace(".", "", 1).isdigit() else json.dumps(text)


def expression_yaml(expr: dict, indent: int = 0) -> str:
    pad = " " * indent
    lines = [f"{pad}- key: {yaml_value(expr['key'])}", f"{pad}  operator: {expr['operator']}"]
    if expr.get("values"):
        lines.append(f"{pad}  values: [{', '.join(yaml_value(v) for v in expr['values'])}]")
    return "\n".join(lines)


def affinity_yaml(exprs: list[dict]) -> str:
    """The node definition's required affinity holding `exprs` in one term (SUNK merges layers into one)."""
    return "\n".join([
        "affinity:",
        "  nodeAffinity:",
        "    requiredDuringSchedulingIgnoredDuringExecution:",
        "      nodeSelectorTerms:",
        "        - matchExpressions:",
        *[expression_yaml(e, 12) for e in exprs],
    ])


def toleration_yaml(taint: dict) -> str:
    return "\n".join([
        "tolerations:",
        f"  - key: {yaml_value(taint.get('key', ''))}",
        "    operator: Exists",
        f"    effect: {taint.get('effect', 'NoSchedule')}",
    ])
