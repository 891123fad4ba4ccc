"""daemonset-os-arch-unscoped: a mixed os/arch fleet the scope does not pin, the daemon Pods Ready on part of it."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import NamedTuple

from sunkcheck import objects as o
from sunkcheck.analyze.daemonset import Scope
from sunkcheck.analyze.feasibility import required_terms
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.symptoms.fixes import prose, to_yaml

PLATFORM_KEYS = ("kubernetes.io/os", "kubernetes.io/arch")
ABSENT = "(absent)"


class Spread(NamedTuple):
    """A platform label the eligible Nodes disagree on, with the daemon Pods not Ready on every value of it."""

    key: str
    values: list[str]
    """The values the eligible Nodes carry, sorted."""
    evidence: list[str]
    pin: str | None
    """The one value the Pods run Ready on (the image's); None when only the image can tell."""


def scope_keys(pod_spec: dict) -> set[str]:
    """The label keys the nodeSelector and the required expressions name."""
    keys = set(pod_spec.get("nodeSelector") or {})
    for term in required_terms(pod_spec) or ():
        keys |= {e.get("key") for e in term.get("matchExpressions") or ()}
    return keys


def placed_by_value(s: Scope, key: str) -> dict[str, list[dict]]:
    """The bound daemon Pods by their Node's value of `key`."""
    placed: dict[str, list[dict]] = defaultdict(list)
    for pod in s.pods:
        if o.node_name(pod) and (node := s.node_of(pod)) is not None:
            placed[o.labels(node).get(key, ABSENT)].append(pod)
    return placed


def readiness_lines(values: list[str], runs: list[str], placed: dict[str, list[dict]]) -> list[str]:
    """Where the daemon Pods are Ready and where not, with the Pods not Ready named."""
    share = {v: f"{sum(map(o.is_ready, placed[v]))}/{len(placed[v])}" if placed[v] else "no daemon Pod" for v in values}
    lines = [f"daemon Pods are Ready on {', '.join(f'{v} Nodes ({share[v]})' for v in runs)} and not on "
             + ", ".join(f"{v} Nodes ({share[v]})" for v in values if v not in runs)]
    return lines + [f"not Ready on {v}: {some(o.name(p) for p in placed[v])}" for v in values
                    if v not in runs and placed[v]]


def spread(s: Scope, key: str) -> Spread | None:
    """The eligible Nodes' spread over `key`, unless one value only, or the Pods are Ready on every value (a
    multi-arch image: nothing to pin). The platform where they run Ready is the image's; the majority says nothing."""
    counts = Counter(o.labels(s.cluster.nodes[n]).get(key, ABSENT) for n in s.eligible)
    values = sorted(counts)
    placed = placed_by_value(s, key)
    runs = [v for v in values if any(o.is_ready(p) for p in placed[v])]
    if len(values) < 2 or len(runs) == len(values):
        return None
    evidence = [f"eligible Nodes span {key}: " + ", ".join(f"{v} ({n})" for v, n in sorted(counts.items()))]
    if not runs:
        return Spread(key, values, [*evidence, "no daemon Pod runs Ready on any of them: only the image can tell its "
                                    "platform"], None)
    return Spread(key, values, evidence + readiness_lines(values, runs, placed), runs[0] if len(runs) == 1 else None)


def pin_fixes(spreads: list[Spread]) -> list[str]:
    """The nodeSelector snippet pinning the platforms the Pods run Ready on; words for those only the image tells."""
    pins = {sp.key: sp.pin for sp in spreads if sp.pin is not None}
    undecided = [sp.key for sp in spreads if sp.pin is None]
    fixes = []
    if pins:
        fixes.append("pin the platform its Pods run Ready on (the image's) in the Pod template's nodeSelector:\n"
                     + to_yaml({"nodeSelector": pins}))
    if undecided:
        fixes.append(f"pin {' and '.join(undecided)} in the Pod template's nodeSelector to the platform the image is "
                     "built for (the image decides, not the Nodes' majority)")
    return fixes


def os_arch_unscoped(s: Scope) -> Match | None:
    """A mixed fleet the scope does not pin. The platform where the daemon Pods run Ready is the image's; Ready on
    every platform is a multi-arch image, with nothing to pin. The majority says nothing about the image."""
    keys = scope_keys(s.pod_spec)
    spreads = [found for key in PLATFORM_KEYS if key not in keys and (found := spread(s, key)) is not None]
    if not spreads:
        return None
    platforms = "; ".join(f"{sp.key} " + "/".join(sp.values) for sp in spreads)
    # the alternative first: a line after the nodeSelector snippet would read as part of it
    return Match(tuple(line for sp in spreads for line in sp.evidence),
                 f"ship a multi-arch image ({prose(platforms)}), or\n" + "\n".join(pin_fixes(spreads)))


RULE = Rule("daemonset-os-arch-unscoped", Status.WARNING, "daemonset",
            "The DaemonSet runs on a mixed os/arch fleet without pinning kubernetes.io/os or arch",
            "Pods pull an image built for another platform and crash-loop on a subset of Nodes.",
            "Pin the platform its Pods run Ready on (the image's, not the majority's) in the nodeSelector, or ship a "
            "multi-arch image.",
            os_arch_unscoped, needs=("nodes",), reads=(Read.EVERY_NODE,))
