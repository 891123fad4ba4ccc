"""`sunkcheck rbac`: the ClusterRole a run needs and an example binding, as YAML or JSON."""

from __future__ import annotations

import json
import re

from sunkcheck.collect.kube import SERVE_VERBS, cluster_role


def documents(service_account: str, namespace: str, serve: bool = False) -> list[dict]:
    """The ClusterRole of a check (get, list), or of `sunkcheck serve` (get, list, watch), and its binding."""
    role = cluster_role("sunkcheck-serve", SERVE_VERBS) if serve else cluster_role()
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": role["metadata"]["name"]},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]},
               "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}]}
    return [role, binding]


# A plain scalar every YAML reader takes for this very string: a word starting with a letter that is none of YAML
# 1.1's booleans or null (kubectl's go-yaml reads y, n, yes, on, off as booleans). Anything else, a name such as
# 0755 (octal), 1e3 (a float) or true included, is written as a JSON string, which YAML reads as the same string.
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9./-]*")
_NOT_STRINGS = frozenset({"y", "yes", "n", "no", "true", "false", "on", "off", "null"})


def _scalar(text: str) -> str:
    return text if _PLAIN.fullmatch(text) and text.lower() not in _NOT_STRINGS else json.dumps(text)


def _yaml(value: dict, indent: int = 0) -> list[str]:
    """Block YAML for the small, known shapes above: a mapping of mappings, lists of mappings and lists and
    scalars that are strings."""
    pad = " " * indent
    lines = []
    for key, item in value.items():
        key = _scalar(key)
        if isinstance(item, dict):
            lines += [f"{pad}{key}:", *_yaml(item, indent + 2)]
        elif isinstance(item, list) and item and isinstance(item[0], dict):
            lines.append(f"{pad}{key}:")
            for entry in item:
                sub = _yaml(entry, indent + 4)
                lines += [f"{pad}  - {sub[0].lstrip()}", *sub[1:]]
        elif isinstance(item, list):
            lines.append(f"{pad}{key}: [{', '.join(json.dumps(x) for x in item)}]")
        else:
            lines.append(f"{pad}{key}: {_scalar(item)}")
    return lines


def render_rbac(service_account: str, namespace: str, fmt: str, serve: bool = False) -> str:
    docs = documents(service_account, namespace, serve)
    if fmt == "json":
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}, indent=2) + "\n"
    verbs = "get, list and watch" if serve else "get and list"
    header = f"# sunkcheck{' serve' if serve else ''} only reads: {verbs}, nothing else. Apply with `kubectl apply -f -`.\n"
    return header + "---\n".join("\n".join(_yaml(d)) + "\n" for d in docs)
