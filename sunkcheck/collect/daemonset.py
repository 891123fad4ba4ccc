"""DaemonSet scoping, live: the DaemonSet to check."""

from sunkcheck import objects as o
from sunkcheck.collect.kube import DAEMONSETS, CallError, Kube
from sunkcheck.collect.nodes import requirement
from sunkcheck.model import InputError

NAMED = 10  # DaemonSets a cluster without NodeSets is said to hold: one page of that many, never the whole list


def fetch(kube: Kube, namespace: str | None, name: str) -> list[dict]:
    return kube.named(DAEMONSETS, name, namespace)


def names(kube: Kube, namespace: str | None) -> list[str]:
    """The names of up to NAMED DaemonSets in scope (`namespace` None: every namespace), sorted: one LIST of one
    page, for the hint of a cluster without NodeSets. A name `--daemonset` could not take is left out, and a read
    that fails names none: the hint is a courtesy, never an error of its own."""
    try:
        listed = kube.get(DAEMONSETS.path(namespace), {"limit": NAMED}).get("items")
    except CallError:
        return []
    metas = [d.get("metadata") for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
    found = {m.get("name") for m in metas if isinstance(m, dict)}
    return sorted(n for n in found if isinstance(n, str) and o.DNS_SUBDOMAIN.fits(n))[:NAMED]


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
