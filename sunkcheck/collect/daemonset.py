"""DaemonSet scoping, live: the DaemonSet to check."""

from sunkcheck import objects as o
from sunkcheck.collect.kube import DAEMONSETS, Kube
from sunkcheck.collect.nodes import requirement
from sunkcheck.model import InputError


def fetch(kube: Kube, namespace: str | None, name: str) -> list[dict]:
    return kube.named(DAEMONSETS, name, namespace)


_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "", "DoesNotExist": "!"}


def selector(daemonset: dict) -> str:
    """spec.selector as a label-selector string the server understands. Kube refuses a DaemonSet whose selector
    the API server would not have stored (shapes.LABEL_SELECTOR); a requirement that is no label syntax is
    still never spliced into the query."""
    sel = (daemonset.get("spec") or {}).get("selector") or {}
    wanted: list[tuple[object, str | None, list]] = [(k, "=", [v]) for k, v in sorted((sel.get("matchLabels") or {}).items())]
    wanted += [(e.get("key"), _OPERATORS.get(e.get("operator")), e.get("values") or [])
               for e in sel.get("matchExpressions") or ()]
    parts = [None if op is None else requirement(key, op, values) for key, op, values in wanted]
    if None in parts:
        raise InputError(f"DaemonSet {o.namespace(daemonset)}/{o.name(daemonset)}: spec.selector is not a label "
                         "selector the API server accepts")
    return ",".join(map(str, parts))
