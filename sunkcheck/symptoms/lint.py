"""Lint rows for SUNK values and Node Pool manifests: mistakes caught before `helm upgrade`.

A LintRule is not the NodeSet and DaemonSet tables' Rule because it differs in kind, not only in names: it reads
a file, not a cluster (no `needs`, no runbook `step`; `applies_to` picks the document kind), it reports every
place a mistake occurs (a list of Findings, each at its file:line, not one Match per target), and a row another
explains leaves the finding to it in its own check (no `explained_by`)."""

from __future__ import annotations

import difflib
from collections import defaultdict
from dataclasses import dataclass
from collections.abc import Callable

from sunkcheck import objects as o
from sunkcheck.model import Status
from sunkcheck.symptoms.fixes import affinity_yaml, to_yaml
from sunkcheck.values.compose import (NODES_PATH, PREFERRED, Effective, Values, at, compose_one, first_term, layers_of,
                                      listed, misshapen, required_terms)
from sunkcheck.values.yamlfile import Document

KNOWN_KEYS = ("enabled", "replicas", "image", "resources", "nodeSelector", "affinity", "tolerations", "gresGpu",
              "env", "definitions", "staticFeatures", "dynamicFeatures", "podNamePrefix", "annotations", "labels",
              "volumes", "volumeMounts", "securityContext", "priorityClassName", "features")


@dataclass(frozen=True)
class Finding:
    where: str
    """file:line"""
    message: str
    fix: str = ""
    severity: Status | None = None


@dataclass(frozen=True)
class Definition:
    """One `compute.nodes` entry in context: the merged values around it and the release name."""

    name: str
    body: dict
    values: Values
    release: str

    @property
    def nodes(self) -> dict:
        return self.values.nodes

    def where(self, *path: str | int) -> str:
        return self.values.where((*NODES_PATH, self.name, *path))

    @property
    def enabled(self) -> bool:
        return self.body.get("enabled") is True

    @property
    def users(self) -> list[str]:
        """Definitions that list this one under `definitions`."""
        return self.values.users.get(self.name, [])


@dataclass(frozen=True)
class LintRule:
    id: str
    severity: Status
    applies_to: str
    """"Values" (checked per definition) or "NodePool" (per manifest)."""
    title: str
    cause: str
    fix: str
    check: Callable[..., list[Finding]]


# --- values -------------------------------------------------------------------------------------------

def wrong_type(d: Definition) -> list[Finding]:
    return [Finding(d.where(*path), why) for path, why in misshapen(d.body)]


def unknown_key(d: Definition) -> list[Finding]:
    found = []
    for key in d.body:
        if key not in KNOWN_KEYS:
            near = difflib.get_close_matches(str(key), KNOWN_KEYS, 1, 0.6)
            if near:
                found.append(Finding(d.where(key), f"unknown key {key!r} under compute.nodes.{d.name}: did you mean "
                                                   f"{near[0]!r}? (as written, SUNK ignores it)", f"rename it to {near[0]}"))
    return found


def node_selector(d: Definition) -> list[Finding]:
    selector = d.body.get("nodeSelector")
    if not isinstance(selector, dict) or not selector:
        return []
    exprs = [{"key": k, "operator": "In", "values": [v]} for k, v in selector.items()]
    return [Finding(d.where("nodeSelector"), f"nodeSelector {selector} never reaches the slurmd Pod template: the "
                                             "NodeSet will schedule as if there were no constraint",
                    "replace it with required affinity:\n" + affinity_yaml(exprs))]


def layer_enabled(d: Definition) -> list[Finding]:
    if "enabled" not in d.body or not d.users:
        return []
    if d.body["enabled"] is True:
        return [Finding(d.where("enabled"), f"{d.name} is listed as a layer by {', '.join(d.users)} but has enabled: true: it "
                                            "deploys as a NodeSet of its own and stops being included in theirs",
                        "remove the enabled key from the shared layer")]
    return [Finding(d.where("enabled"), f"{d.name} is a layer for {', '.join(d.users)}; a layer should omit enabled",
                    "remove the enabled key from the shared layer", Status.WARNING)]


def unknown_definition(d: Definition) -> list[Finding]:
    listed = d.body.get("definitions")
    found = []
    for i, name in enumerate(listed if isinstance(listed, list) else []):
        if not isinstance(name, str):
            continue  # values-wrong-type's
        target = d.nodes.get(name)
        if not isinstance(target, dict):
            layers = [n for n, b in d.nodes.items() if isinstance(b, dict) and not b.get("enabled") and n != d.name]
            near = difflib.get_close_matches(str(name), layers, 1)
            found.append(Finding(d.where("definitions", i), f"definitions lists {name!r}, which does not exist"
                                 + (f" (did you mean {near[0]!r}?)" if near else ""),
                                 f"layers available: {', '.join(layers) or 'none'}"))
        elif target.get("enabled") is True:
            found.append(Finding(d.where("definitions", i), f"definitions lists {name!r}, which is enabled: an enabled "
                                                            "definition is not included as a layer",
                                 f"remove enabled from {name}, or stop listing it"))
    return found


def layer_multi_term(d: Definition) -> list[Finding]:
    terms = required_terms(d.body)
    if len(terms) < 2:
        return []
    keys = {e.get("key") for t in terms for e in listed(at(t, ("matchExpressions",)))
            if isinstance(e, dict) and isinstance(e.get("key"), str)}
    return [Finding(d.where("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                            "nodeSelectorTerms", 1),
                    f"{len(terms)} nodeSelectorTerms: SUNK merges only the first, terms 2 and later are dropped",
                    "keep one term; express alternatives with operator In and several values"
                    + (f" on {', '.join(sorted(k for k in keys if k))}" if keys else ""))]


def same_key_layers(d: Definition) -> list[Finding]:
    if not d.enabled:
        return []
    seen: dict[str, list[str]] = defaultdict(list)
    for part in [*layers_of(d.name, d.nodes), d.name]:
        for expr in first_term(d.nodes[part]):
            if isinstance(expr, dict) and expr.get("key") and expr["key"] != o.STATE_LABEL:
                seen[expr["key"]].append(part)
    found = []
    for key, parts in seen.items():
        if len(parts) > 1:
            found.append(Finding(d.where("definitions") if d.body.get("definitions") else d.where(),
                                 f"{key} is matched in {' and '.join(parts)}: the values are unioned and "
                                 f"{'the own expression stays in place, narrowing the result' if d.name in parts else 'widen'}",
                                 f"set {key} in one layer only"))
    return found


def state_expression(d: Definition) -> list[Finding]:
    return [Finding(d.where("affinity"), f"an expression on {o.STATE_LABEL} ({expr.get('operator')} "
                                          f"{expr.get('values') or ''}): every NodeSet inherits {o.STATE_LABEL} In "
                                          "[production], and a same-key expression cannot cleanly override it",
                    f"remove the {o.STATE_LABEL} expression")
            for expr in first_term(d.body) if isinstance(expr, dict) and expr.get("key") == o.STATE_LABEL]


def _effective(d: Definition) -> Effective | None:
    return compose_one(d.name, d.nodes, d.release) if d.enabled else None


def preferred_only(d: Definition) -> list[Finding]:
    eff = _effective(d)
    if eff is None:
        return []
    preferred = listed(at(eff.values, PREFERRED))
    if not preferred or len(eff.expressions) > 1:
        return []
    exprs = [e for p in preferred for e in listed(at(p, ("preference", "matchExpressions")))]
    return [Finding(d.where("affinity"), "only preferred node affinity: the NodeSet reads only the required part, so "
                                         "this has no effect on which Nodes are feasible",
                    "move it to requiredDuringSchedulingIgnoredDuringExecution:\n" + affinity_yaml(exprs))]


def gres_on_cpu(d: Definition) -> list[Finding]:
    eff = _effective(d)
    resources = eff.values.get("resources") if eff else None
    if eff is None or not isinstance(resources, dict) or not resources:
        return []
    asks_gpu = any(isinstance(asked, dict) and "nvidia.com/gpu" in asked
                   for asked in (resources.get("requests"), resources.get("limits")))
    if asks_gpu or ("gresGpu" in eff.values and eff.values["gresGpu"] is None):
        return []
    inherited = next((layer for layer in reversed(eff.layers) if "gresGpu" in d.nodes[layer]), None)
    return [Finding(d.where("resources"), "a CPU definition (no nvidia.com/gpu requested) that does not set gresGpu: null"
                    + (f": it inherits gresGpu {eff.values.get('gresGpu')!r} from {inherited}" if inherited else "")
                    + ", so Slurm may advertise GPUs on a CPU node", "add `gresGpu: null` to the definition")]


def replicas_set(d: Definition) -> list[Finding]:
    eff = _effective(d)
    if eff is None or eff.values.get("replicas") is None:
        return []
    return [Finding(d.where("replicas"), f"replicas {eff.values['replicas']}: DESIRED will not follow the Node Pool's "
                                         "scale (the effective size is the lower of replicas and FEASIBLE)",
                    "omit replicas to track FEASIBLE, unless the cap is intended")]


def no_binding(d: Definition) -> list[Finding]:
    eff = _effective(d)
    if eff is None or len(eff.expressions) > 1 or at(eff.values, ("affinity", "nodeAffinity")):
        return []  # preferred-only affinity is values-preferred-only's to report
    if eff.values.get("nodeSelector"):
        return []  # values-nodeselector's fix turns that selector into the binding, with its real names
    example = {"key": o.POOL_LABEL, "operator": "In", "values": ["<node-pool-name>"]}
    return [Finding(d.where(), f"{eff.nodeset} has no required affinity of its own: its Pods spread over every "
                               "production Node they fit on, including Nodes reserved for other work",
                    "bind it to its Node Pool by name:\n" + affinity_yaml([example]))]


# --- Node Pool manifests -------------------------------------------------------------------------------

def reserved_namespace(doc: Document) -> list[Finding]:
    spec = doc.data.get("spec") or {}
    found = [Finding(doc.where(("spec", "nodeLabels", k)), f"nodeLabels key {k} is in a reserved namespace: CKS drops "
                                                           "it (CWNodePoolMetadataSanitized) and no Node carries it",
                     f"use a domain you control, e.g. {k.split('/')[0].split('.')[0]}.example.com/{k.split('/')[-1]}")
             for k in (spec.get("nodeLabels") or {}) if o.is_reserved_key(str(k))]
    found += [Finding(doc.where(("spec", "nodeTaints", i)), f"nodeTaints key {t.get('key')} is in a reserved namespace: "
                                                            "CKS drops it", "use a domain you control")
              for i, t in enumerate(spec.get("nodeTaints") or [])
             
              if isinstance(t, dict) and o.is_reserved_key(str(t.get("key", "")))]
    return found


def target_conflict(doc: Document) -> list[Finding]:
    spec = doc.data.get("spec") or {}
    if spec.get("targetNodes") is None or spec.get("targetRacks") is None:
        return []
    return [Finding(doc.where(("spec", "targetRacks")), "targetNodes and targetRacks are both set: they are mutually "
                                                        "exclusive (targetRacks is for NVL72 rack types only)",
                    "keep targetNodes, or targetRacks for a GB200/GB300 pool")]


def dedicated_mismatch(doc: Document) -> list[Finding]:
    spec = doc.data.get("spec") or {}
    labels = spec.get("nodeLabels") or {}
    taints = [t for t in spec.get("nodeTaints") or [] if isinstance(t, dict) and t.get("key")]
    if not taints or any(t["key"] in labels for t in taints):
        return []
    key = taints[0]["key"]
    # the label takes the taint's own value and joins the labels there: a NodeSet tolerating `Equal <value>` still
    # tolerates the taint, and a nodeLabels block pasted whole keeps the labels it had
    snippet = to_yaml({"nodeLabels": {**labels, key: str(taints[0].get("value") or "true")}})
    message = (f"taint {key} has no label with the same key ({', '.join(sorted(map(str, labels)))} instead)" if labels
               else f"taint {key} has no matching label: a NodeSet has nothing to select these Nodes by")
    return [Finding(doc.where(("spec", "nodeTaints")), message,
                    "add a label with the taint's key and value, so the NodeSet can select these Nodes; the taints "
                    "stay as they are:\n" + snippet)]


RULES = (
    LintRule("values-wrong-type", Status.CRITICAL, "Values", "A node definition value has the wrong type",
             "SUNK cannot use a value of the wrong type (a string where a list or mapping belongs).",
             "Write the value in the documented shape.", wrong_type),
    LintRule("values-unknown-key", Status.WARNING, "Values", "An unknown key under a node definition (a likely typo)",
             "SUNK ignores keys it does not know, so the setting silently has no effect.",
             "Rename it to the valid key sunkcheck suggests.", unknown_key),
    LintRule("values-nodeselector", Status.CRITICAL, "Values", "A node definition sets nodeSelector",
             "nodeSelector does not reach the generated Pod template: the NodeSet schedules as though unconstrained.",
             "Move the constraint into affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.", node_selector),
    LintRule("values-layer-enabled", Status.CRITICAL, "Values", "A definition used as a layer sets enabled",
             "enabled: true deploys the layer as its own NodeSet, and definitions including it silently lose its rules.",
             "Omit enabled on shared layers.", layer_enabled),
    LintRule("values-unknown-definition", Status.CRITICAL, "Values",
             "definitions lists a layer that does not exist or is itself enabled",
             "The listed layer contributes nothing: its affinity and tolerations are missing from the NodeSet.",
             "List existing layers without enabled.", unknown_definition),
    LintRule("values-layer-multi-term", Status.WARNING, "Values", "A definition has more than one nodeSelectorTerm",
             "SUNK merges only the first term of each layer; later terms are dropped.",
             "Keep one term and express alternatives with operator In and several values.", layer_multi_term),
    LintRule("values-same-key-layers", Status.WARNING, "Values",
             "One label key is matched in two layers, or a layer and the definition",
             "Same-key expressions union their values and the definition's own stays in place, narrowing the result.",
             "Set a given key in one layer only.", same_key_layers),
    LintRule("values-state-expression", Status.WARNING, "Values",
             "A definition sets its own node.coreweave.cloud/state expression",
             "Every NodeSet inherits state In [production]; a same-key expression cannot cleanly override it.",
             "Remove the expression.", state_expression),
    LintRule("values-preferred-only", Status.WARNING, "Values", "A definition has only preferred node affinity",
             "The NodeSet reads only required affinity: a preference has no effect on feasibility.",
             "Use requiredDuringSchedulingIgnoredDuringExecution.", preferred_only),
    LintRule("values-gres-on-cpu", Status.WARNING, "Values", "A CPU definition does not set gresGpu: null",
             "Without it the definition may inherit a GPU generic resource, and Slurm advertises GPUs on a CPU node.",
             "Add gresGpu: null to CPU-only definitions.", gres_on_cpu),
    LintRule("values-replicas-set", Status.INFO, "Values", "A definition sets replicas",
             "An explicit replicas caps the NodeSet: scaling the Node Pool adds Nodes that run no slurmd Pod.",
             "Omit replicas so DESIRED tracks FEASIBLE, unless the cap is intended.", replicas_set),
    LintRule("values-no-binding", Status.WARNING, "Values", "An enabled definition has no affinity of its own",
             "With only the inherited production requirement, its Pods spread over every production Node they fit on.",
             "Bind it to its Node Pool by name, or by a dedicated label and taint.", no_binding),
    LintRule("nodepool-reserved-namespace", Status.CRITICAL, "NodePool",
             "A Node Pool label or taint key is in coreweave.com/coreweave.cloud",
             "CKS reserves those namespaces: it drops the key (CWNodePoolMetadataSanitized) and no Node carries it.",
             "Pick a key in a domain you control.", reserved_namespace),
    LintRule("nodepool-target-conflict", Status.CRITICAL, "NodePool", "A Node Pool sets both targetNodes and targetRacks",
             "The two are mutually exclusive.", "Keep one.", target_conflict),
    LintRule("nodepool-dedicated-mismatch", Status.WARNING, "NodePool",
             "A dedicated Node Pool's taint has no label with the same key",
             "A taint without a matching label repels Pods but gives the NodeSet nothing to select.",
             "Use the same key for nodeLabels and nodeTaints.", dedicated_mismatch),
)
