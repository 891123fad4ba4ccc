"""DaemonSet scoping, live: the DaemonSet to check."""

from sunkcheck.collect.kube import DAEMONSETS, Kube


def fetch(kube: Kube, namespace: str | None, name: str) -> list[dict]:
    return kube.named(DAEMONSETS, name, namespace)


def selector(daemonset: dict) -> str:
    """spec.selector as a label-selector string the server understands."""
    sel = (daemonset.get("spec") or {}).get("selector") or {}
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or ():
        op, key, values = e.get("operator"), e.get("key"), ",".join(e.get("values") or ())
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                      "Exists": key, "DoesNotExist": f"!{key}"}[op])
    return ",".join(parts)
