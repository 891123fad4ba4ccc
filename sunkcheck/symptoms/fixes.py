"""Fix text spelled with the cluster's real names: kubectl commands (shell-quoted) and values snippets."""

from __future__ import annotations

import json
import shlex


def patch_nodepool(pool: str, spec: dict) -> str:
    """A merge patch of a Node Pool's spec (needs the CKS Admin role)."""
    body = json.dumps({"spec": spec}, separators=(",", ":"), sort_keys=True)
    return f"kubectl patch nodepool {shlex.quote(pool)} --type=merge -p {shlex.quote(body)}"


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
