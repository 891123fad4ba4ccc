"""DaemonSet scoping rows: selector typos, taints, nodeName, soft affinity, mixed fleets."""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict

from sunkcheck import objects as o
from sunkcheck.analyze import events as ev
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.daemonset import Scope, pinned_node
from sunkcheck.analyze.feasibility import describe_expression, required_terms, resource_reasons, taint_reason
from sunkcheck.analyze.nodeset import falls_short, shown
from sunkcheck.model import Status
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.objects import LABEL_KEY, LABEL_VALUE
from sunkcheck.symptoms.fixes import add_toleration, arg, prose, to_yaml

PLATFORM_KEYS = ("kubernetes.io/os", "kubernetes.io/arch")
LABEL_REMOVAL = ("removing or changing a label the scope keys on is live: the controller deletes the daemon Pod "
                 "on that Node within seconds")


def _scope_keys(pod_spec: dict) -> set[str]:
    keys = set(pod_spec.get("nodeSelector") or {})
    for term in required_terms(pod_spec) or ():
        keys |= {e.get("key") for e in term.get("matchExpressions") or ()}
    return keys


def node_name_set(s: Scope) -> Match | None:
    pinned = s.pod_spec.get("nodeName")
    if not pinned:
        return None
    return Match((f"spec.template.spec.nodeName is {pinned}: only that Node can run the daemon Pod "
                  f"({len(s.selected)} of {len(s.verdicts)} Nodes selected)",),
                 "remove nodeName from the Pod template; scope the DaemonSet with nodeSelector or required node "
                 "affinity (the controller pins each Pod to its Node itself)")


def selector_matches_nothing(s: Scope) -> Match | None:
    desired = s.counts["desired"]
    if s.selected or not (desired == 0 or (desired is None and not s.eligible)):
        return None
    evidence = [f"DESIRED {desired if desired is not None else 0}: no Node matches the template's scope"]
    cluster_values: dict[str, Counter] = defaultdict(Counter)
    for n in s.cluster.nodes.values():
        for k, v in o.labels(n).items():
            cluster_values[k][v] += 1
    wanted = [{"key": k, "operator": "In", "values": [v]} for k, v in sorted((s.pod_spec.get("nodeSelector") or {}).items())]
    wanted += [e for t in required_terms(s.pod_spec) or () for e in t.get("matchExpressions") or ()]
    for expr in wanted:
        key = expr.get("key")
        if key in cluster_values:
            values = ", ".join(f"{v} ({n})" for v, n in sorted(cluster_values[key].items()))
            near = difflib.get_close_matches(str((expr.get("values") or [""])[0]), list(cluster_values[key]), 1)
            evidence.append(f"{describe_expression(expr)}: Nodes carry {key} = {values}"
                            + (f"; did you mean {near[0]}?" if near and near[0] not in (expr.get("values") or []) else ""))
        else:
            near = difflib.get_close_matches(key, list(cluster_values), 1)
            evidence.append(f"{describe_expression(expr)}: no Node carries {key}"
                           
                            + (f"; did you mean {near[0]}?" if near else ""))
    stale = [p for p in s.pods if s.node_of(p)]
    if stale:
        evidence.append(f"{len(stale)} daemon Pod(s) still on Nodes that no longer match ({some(o.name(p) for p in stale)}): "
                        "the controller deletes them")
    pairs = sorted((s.pod_spec.get("nodeSelector") or {}).items())
    # a selector of labels the API server would refuse (a hand-edited snapshot's) selects nothing: show them all
    selector = ",".join(f"{k}={v}" for k, v in pairs) if all(LABEL_KEY.fits(k) and LABEL_VALUE.fits(v) for k, v in pairs) else ""
    check = f"kubectl get nodes -l {arg(selector)}" if selector else "kubectl get nodes --show-labels"
    return Match(tuple(evidence), f"correct the selector to labels the Nodes carry; {LABEL_REMOVAL}. Check with:\n{check}")


def untolerated_taint(s: Scope) -> Match | None:
    """Selected Nodes a taint keeps the agent off, the controller's default tolerations counted. Kubernetes' own
    taints are left out (a NotReady Node's not-ready:NoSchedule): the Node's health, gone once it recovers, is no
    scoping to fix."""
    by_taint: dict[str, list[str]] = defaultdict(list)
    taints: dict[str, dict] = {}
    for name in s.selected:
        for taint in nd.untolerated_scoping_taints(s.workload.pod_spec.get("tolerations") or [], s.cluster.nodes[name]):
            by_taint[o.format_taint(taint)].append(name)
            taints[o.format_taint(taint)] = taint
    if not by_taint:
        return None
    evidence = [f"{len(names)} selected Node(s) ({some(names)}): {taint_reason(taints[text], 'DaemonSet').detail}"
                for text, names in sorted(by_taint.items())]
    # the template's own entries: the controller adds its defaults to every daemon Pod, never to the template
    own = s.pod_spec.get("tolerations") or []
    taken = frozenset(str(t.get("key")) for name in s.selected for t in o.taints(s.cluster.nodes[name]))
    fixes = [add_toleration(taints[text], own, "the Pod template's tolerations", taken) for text in sorted(taints)]
    return Match(tuple(evidence), "tolerate the taint in the Pod template if the agent belongs there: " + "\n".join(fixes))


def preferred_affinity_only(s: Scope) -> Match | None:
    affinity = (s.pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    preferred = affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
    if not preferred or required_terms(s.pod_spec) is not None or s.pod_spec.get("nodeSelector"):
        return None
    exprs = [describe_expression(e) for p in preferred for e in (p.get("preference") or {}).get("matchExpressions") or ()]
    return Match((f"only preferred node affinity ({'; '.join(exprs) or 'empty'}): it does not narrow the DaemonSet, "
                  f"which runs on {len(s.eligible)} of {len(s.verdicts)} Nodes",),
                 "move the expressions to requiredDuringSchedulingIgnoredDuringExecution (or a nodeSelector): the "
                 "controller pins each Pod to its Node, so there is nothing left for a preference to rank")


def os_arch_unscoped(s: Scope) -> Match | None:
    """A mixed fleet the scope does not pin. The platform where the daemon Pods run Ready is the image's; Ready on
    every platform is a multi-arch image, with nothing to pin. The majority says nothing about the image."""
    keys = _scope_keys(s.pod_spec)
    evidence, pins, undecided, platforms = [], [], [], []
    for key in PLATFORM_KEYS:
        if key in keys:
            continue
        values = Counter(o.labels(s.cluster.nodes[n]).get(key, "(absent)") for n in s.eligible)
        placed: dict[str, list[dict]] = defaultdict(list)
        for pod in s.pods:
            if o.node_name(pod) and (node := s.node_of(pod)) is not None:
                placed[o.labels(node).get(key, "(absent)")].append(pod)
        runs = sorted(v for v in values if any(o.is_ready(p) for p in placed[v]))
        if len(values) < 2 or len(runs) == len(values):
            continue
        evidence.append(f"eligible Nodes span {key}: " + ", ".join(f"{v} ({n})" for v, n in sorted(values.items())))
        platforms.append(f"{key} " + "/".join(sorted(values)))
        if not runs:
            evidence.append("no daemon Pod runs Ready on any of them: only the image can tell its platform")
            undecided.append(key)
            continue
        share = {v: f"{sum(map(o.is_ready, placed[v]))}/{len(placed[v])}" if placed[v] else "no daemon Pod" for v in values}
        evidence.append(f"daemon Pods are Ready on {', '.join(f'{v} Nodes ({share[v]})' for v in runs)} and not on "
                        + ", ".join(f"{v} Nodes ({share[v]})" for v in sorted(values) if v not in runs))
        evidence += [f"not Ready on {v}: {some(o.name(p) for p in placed[v])}" for v in sorted(values)
                     if v not in runs and placed[v]]
        if len(runs) == 1:
            pins.append((key, runs[0]))
        else:
            undecided.append(key)
    if not evidence:
        return None
    fixes = []
    if pins:
        fixes.append("pin the platform its Pods run Ready on (the image's) in the Pod template's nodeSelector:\n"
                     + to_yaml({"nodeSelector": dict(pins)}))
    if undecided:
        fixes.append(f"pin {' and '.join(undecided)} in the Pod template's nodeSelector to the platform the image is "
                     "built for (the image decides, not the Nodes' majority)")
    # the alternative first: a line after the nodeSelector snippet would read as part of it
    return Match(tuple(evidence), f"ship a multi-arch image ({prose('; '.join(platforms))}), or\n" + "\n".join(fixes))


def pods_pending(s: Scope) -> Match | None:
    evidence = []
    for pod in s.pending:
        node = s.node_of(pod)
        if node is None:
            evidence.append(f"Pod {o.name(pod)} is Pending and not pinned to a known Node")
            continue
        others = [p for p in s.cluster.pods_on.get(o.name(node), []) if p is not pod]
        short = resource_reasons(s.workload.requests, node, others)
        why = "; ".join(r.detail for r in short) or "no resource shortfall sunkcheck can see (check its Events)"
        evidence.append(f"Pod {o.name(pod)} Pending on Node {o.name(node)}: {why}")
    if not evidence:
        return None
    return Match(tuple(evidence), "free the Node or lower the agent's requests; critical agents can take "
                 "priorityClassName: system-node-critical to preempt ordinary Pods")


def pods_missing(s: Scope) -> Match | None:
    """DESIRED above the Nodes that have a daemon Pod (bound or Pending): by CURRENT, or by the Pods when
    the status lags. A Pod the controller could not create (a ResourceQuota, an admission webhook, Pod
    Security) leaves no Pod, only Events on the DaemonSet."""
    desired, current = s.counts["desired"], s.counts["current"]
    created = None if s.cluster.snapshot.pods is None else len({n for p in s.pods if (n := pinned_node(p))})
    if not falls_short(desired, current, created):
        return None
    evidence = [f"DESIRED {desired}, CURRENT {shown(current)}"
                + ("" if created is None else f": daemon Pods exist for {created} Node(s)")]
    evidence += [ev.describe(e) for e in s.cluster.events_about("DaemonSet", s.name, s.namespace) if ev.is_warning(e)]
    bare = [n for n in s.eligible if not s.verdicts[n].placed]
    if bare and created is not None:
        evidence.append(f"{len(bare)} eligible Node(s) have no daemon Pod: {some(bare)}")
    return Match(tuple(evidence), "read why the controller cannot create the Pods (FailedCreate names the quota, "
                 "webhook or Pod Security level); a rollout in progress clears by itself:\n"
                 f"kubectl describe daemonset -n {arg(s.namespace)} {arg(s.name)}")


RULES = (
    Rule("daemonset-node-name-set", Status.CRITICAL, "daemonset",
         "nodeName is set in the DaemonSet's Pod template",
         "A hand-written nodeName fights the controller, which pins each daemon Pod to its Node itself.",
         "Remove nodeName; scope with nodeSelector or required node affinity.",
         node_name_set, needs=("nodes",), reads=("every-node",)),
    Rule("daemonset-selector-matches-nothing", Status.CRITICAL, "nodes",
         "DaemonSet DESIRED is 0",
         "Its nodeSelector or required affinity matches no Node, often a typo: no Pods, no errors, no Events.",
         "Compare the selector with `kubectl get nodes -l <selector>` and correct it.",
         selector_matches_nothing, needs=("nodes",), explained_by=("daemonset-node-name-set",), reads=("every-node",)),
    Rule("daemonset-untolerated-taint", Status.WARNING, "nodes",
         "Nodes match the DaemonSet's selector but get no daemon Pod",
         "A NoSchedule/NoExecute taint on those Nodes is not tolerated (scoping narrows; tolerations widen).",
         "Add a toleration for the taint to the Pod template, if the agent belongs on those Nodes.",
         untolerated_taint, needs=("nodes",), reads=("every-node",)),
    Rule("daemonset-preferred-affinity-only", Status.WARNING, "daemonset",
         "The DaemonSet is scoped with preferred node affinity only",
         "Preferred affinity has no effect on a DaemonSet's scope: it runs on every Node it tolerates.",
         "Use requiredDuringSchedulingIgnoredDuringExecution or a nodeSelector.",
         preferred_affinity_only, needs=("nodes",), reads=("every-node",)),
    Rule("daemonset-os-arch-unscoped", Status.WARNING, "daemonset",
         "The DaemonSet runs on a mixed os/arch fleet without pinning kubernetes.io/os or arch",
         "Pods pull an image built for another platform and crash-loop on a subset of Nodes.",
         "Pin the platform its Pods run Ready on (the image's, not the majority's) in the nodeSelector, or ship a "
         "multi-arch image.",
         os_arch_unscoped, needs=("nodes",), reads=("every-node",)),
    Rule("daemonset-pods-missing", Status.WARNING, "pods",
         "CURRENT is below DESIRED: daemon Pods are missing",
         "The controller could not create Pods on some eligible Nodes (a ResourceQuota, an admission webhook, Pod "
         "Security), or a rollout is still under way.",
         "Read the DaemonSet's FailedCreate Events (`kubectl describe daemonset`) and fix what they name.",
         pods_missing, reads=("every-node",)),
    Rule("daemonset-pod-pending", Status.WARNING, "pods",
         "Daemon Pods are Pending",
         "The controller created the Pod, but the Node lacks the resources it requests (resources make a Pending "
         "daemon Pod, not a missing one).",
         "Free the Node or lower the requests; critical agents can use priorityClassName system-node-critical.",
         pods_pending, needs=("pods", "nodes"), reads=("every-node", "pods-on-pending-daemon-nodes")),
)
