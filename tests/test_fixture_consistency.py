"""Every fixture's NodeSet and DaemonSet status agrees with its objects, recomputed here from scratch.

The statuses in fixtures/ are written by hand (fixtures/generate.py). This module recomputes them with
its own small model of the controllers, sharing no code with sunkcheck's analysis, so a fixture that
describes an impossible world (and a product that happens to agree with it) cannot pass unnoticed.

What is recomputed, Node by Node (kube-scheduler's filters and the DaemonSet controller's eligibility; CoreWeave's NodeSet docs):

Placement rules, shared by both kinds:
- affinity: the template's nodeSelector (exact labels) AND its required node affinity (terms ORed,
  expressions ANDed; a term with no expression is dropped; no term left matches nothing). Operators: In,
  NotIn (absent or not in), Exists, DoesNotExist, Gt/Lt (label and value read as Go's strconv.ParseInt
  base 10, an int64: `1_000`, ` 12`, `0x10` are no integers and match nothing); a
  malformed requirement matches nothing. Preferred affinity never counts.
- taints: every NoSchedule/NoExecute taint must be tolerated (effect, key, then Equal/Exists).
  PreferNoSchedule never counts. A cordon (spec.unschedulable) counts as the
  node.kubernetes.io/unschedulable:NoSchedule taint that Kubernetes puts with it. Readiness is no rule
  of its own: a NotReady Node carries node.kubernetes.io/not-ready:NoExecute.

NodeSet (SUNK: "affinity, tolerations and resources", one NodeSet per Node; DaemonSet-like columns):
- should run = affinity and taints hold with the DaemonSet controller's default tolerations added: as for a
  DaemonSet, Kubernetes' Node-condition taints (the cordon's, not-ready, unreachable, pressure) decide where a new
  Pod may go, never whether a running one belongs; a NotReady Node's Pod is the taint manager's to evict, by the
  Pod's own tolerations. matches = it should run and the template tolerates
  every taint (a cordoned or NotReady Node takes no new Pod). fits = the template's requests
  (app containers summed, limits copied into absent requests, at least each init container, plus
  overhead) fit in allocatable minus the
  requests of the non-terminal Pods bound to the Node other than this NodeSet's own, each compared as
  kube-scheduler's integers (a Pod's exact total and the allocatable rounded up to whole millicores for
  cpu, whole units for the rest; the other Pods' rounded totals summed), one more Pod fits
  under allocatable pods, and no other NodeSet has a Pod there. A request of another Pod that is no
  quantity (`64gb`: the API server refuses it, only a snapshot holds one) leaves that Node's fit unknown,
  never 0: the recorded status must be the one the Node gives counted as fitting, or as not.
- FEASIBLE = Nodes that match and fit; DESIRED = spec.replicas when set (1000 stays 1000), else FEASIBLE. The
  effective size, the Pods a converged NodeSet runs, is the lower of DESIRED and FEASIBLE (the runbook).
- CURRENT = Nodes it should run on that have a non-terminal NodeSet Pod (the DaemonSet rule: shouldRun && Pod;
  resources and a cordon decide where a new Pod can go, not whether a running one belongs). A Pod on a Node
  it should no longer run on is MISSCHEDULED, not CURRENT. A Pod maps to its Node by spec.nodeName, or, while
  Pending, by the controller's `matchFields metadata.name In [node]` pin; an unpinned Pending Pod has no
  Node yet.
- READY = Nodes of CURRENT whose Pod is Ready; UP-TO-DATE = CURRENT (no fixture is mid-rollout);
  UNAVAILABLE = max(effective size - READY, 0). DRAIN is Slurm's view and is not recomputed.

DaemonSet (NodeShouldRunDaemonPod): shouldRun = the template's nodeName (if set) is this Node, affinity
holds, and taints hold with the controller's default daemon tolerations added. No resource, readiness
or cordon check. DESIRED = shouldRun Nodes; CURRENT = shouldRun Nodes with a daemon Pod (Pending pinned
Pods count); READY = AVAILABLE = those whose Pod is Ready (minReadySeconds 0); UP-TO-DATE = CURRENT;
MISSCHEDULED = Nodes that should not run the daemon but have its Pod; UNAVAILABLE = DESIRED - AVAILABLE.

Node Pool: CURRENT (status.currentNodes) = the Nodes carrying its compute.coreweave.com/node-pool label.

A status that is inconsistent on purpose (the scenario itself: stale, never reconciled, lagging
observedGeneration) must be listed in DECLARED with the reason; nothing is skipped silently.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest

from tests.conftest import ALL_CASES, FIXTURES

# (case, "namespace/name") -> why its recorded status is allowed to disagree with its objects
DECLARED: dict[tuple[str, str], str] = {
    ("nodeset-status-stale", "tenant-slurm/slurm-cpu-batch"): "the status is generation 4's, the spec generation 5's "
                                                               "(the operator has not reconciled `helm upgrade` yet)",
    ("slurmd-pods-missing-not-counted", "tenant-slurm/slurm-cpu-batch"): "the operator has not counted the Node the pool "
                                                                         "gained twelve minutes ago (stuck): FEASIBLE 6 of 7",
    ("slurmd-pods-not-counted-yet", "tenant-slurm/slurm-cpu-batch"): "read 20 s after the pool's new Node turned Ready: the "
                                                                     "operator has not counted it yet, FEASIBLE 6 of 7",
}

BLOCKING = ("NoSchedule", "NoExecute")
CORDON = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
DAEMON_TOLERATIONS = [{"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": e} for k, e in (
    ("not-ready", "NoExecute"), ("unreachable", "NoExecute"), ("disk-pressure", "NoSchedule"),
    ("memory-pressure", "NoSchedule"), ("pid-pressure", "NoSchedule"), ("unschedulable", "NoSchedule"))]
NETWORK_TOLERATION = {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}

SUFFIX = {"": 1, "m": Fraction(1, 1000), "u": Fraction(1, 10**6), "n": Fraction(1, 10**9),
          "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
QUANTITY = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[munkMGTPE]?)")


def quantity(value) -> Fraction:
    """A Kubernetes quantity, exactly; a fixture with an invalid one in a template or a Node is a broken fixture."""
    match = QUANTITY.fullmatch(str(value))
    assert match, f"invalid quantity {value!r}"
    return Fraction(match.group(1)) * SUFFIX[match.group(2)]


def held(value) -> Fraction | None:
    """What another Pod requests; None when it is no quantity: what the Pod holds is unknown."""
    return quantity(value) if QUANTITY.fullmatch(str(value)) else None


def plus(a: Fraction | None, b: Fraction | None) -> Fraction | None:
    return None if a is None or b is None else a + b


# --- placement -----------------------------------------------------------------------------------

def requirement_holds(req: dict, labels: dict) -> bool:
    key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
    if op == "In":
        return bool(values) and key in labels and labels[key] in values
    if op == "NotIn":
        return bool(values) and (key not in labels or labels[key] not in values)
    if op in ("Exists", "DoesNotExist"):
        return not values and (key in labels) == (op == "Exists")
    if op in ("Gt", "Lt") and len(values) == 1 and key in labels:
        have, want = parse_int64(labels[key]), parse_int64(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def parse_int64(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): one optional sign, then ASCII digits only, within int64."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or any(c not in "0123456789" for c in digits):
        return None
    value = int(digits) * (-1 if text[0] == "-" else 1)
    return value if -(2**63) <= value <= 2**63 - 1 else None


def field_holds(req: dict, node_name: str) -> bool:
    values = req.get("values") or []
    if req.get("key") != "metadata.name" or len(values) != 1 or req.get("operator") not in ("In", "NotIn"):
        return False
    return (node_name in values) == (req["operator"] == "In")


def affinity_holds(pod_spec: dict, node: dict) -> bool:
    labels, name = node["metadata"].get("labels") or {}, node["metadata"]["name"]
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    terms = [t for t in required.get("nodeSelectorTerms") or [] if t.get("matchExpressions") or t.get("matchFields")]
    return any(all(requirement_holds(r, labels) for r in t.get("matchExpressions") or [])
               and all(field_holds(f, name) for f in t.get("matchFields") or []) for t in terms)


def tolerated(toleration: dict, taint: dict) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def node_taints(node: dict) -> list[dict]:
    spec = node.get("spec") or {}
    return list(spec.get("taints") or []) + ([CORDON] if spec.get("unschedulable") else [])


def taints_hold(tolerations: list[dict], node: dict) -> bool:
    return all(any(tolerated(t, taint) for t in tolerations)
               for taint in node_taints(node) if taint.get("effect") in BLOCKING)


# --- resources -----------------------------------------------------------------------------------

def container_requests(container: dict, read=quantity) -> dict[str, Fraction | None]:
    resources = container.get("resources") or {}
    merged = (resources.get("limits") or {}) | (resources.get("requests") or {})
    return {k: read(v) for k, v in merged.items()}


def pod_requests(pod_spec: dict, read=quantity) -> dict[str, Fraction | None]:
    """The template's requests (`read` strict), or another Pod's (`read=held`: None where one is unknown)."""
    total: dict[str, Fraction | None] = {}
    for c in pod_spec.get("containers") or []:
        for k, v in container_requests(c, read).items():
            total[k] = plus(total.get(k, Fraction(0)), v)
    for c in pod_spec.get("initContainers") or []:
        assert c.get("restartPolicy") != "Always", "sidecar init containers: extend this model first"
        for k, v in container_requests(c, read).items():
            have = total.get(k, Fraction(0))
            total[k] = None if have is None or v is None else max(have, v)
    for k, v in (pod_spec.get("overhead") or {}).items():
        total[k] = plus(total.get(k, Fraction(0)), read(v))
    return total


def whole(resource: str, amount: Fraction) -> int:
    """kube-scheduler's integer for an amount: cpu in millicores, anything else in units, rounded up (it holds a
    Pod's total and the allocatable as `MilliValue()`/`Value()`, and Quantity's ScaledValue rounds up)."""
    scaled = amount * (1000 if resource == "cpu" else 1)
    return scaled.numerator // scaled.denominator + (scaled.denominator != 1)


def fits(requests: dict[str, Fraction | None], node: dict, others: list[dict]) -> bool | None:
    """Whether the template fits beside `others`; None when only an unknown request of theirs could tell. Compared
    as kube-scheduler compares: each Pod's exact total rounded up to whole units (millicores for cpu), the other
    Pods' rounded totals summed, against the rounded allocatable."""
    allocatable = {k: whole(k, quantity(v)) for k, v in (node.get("status") or {}).get("allocatable", {}).items()}
    if "pods" in allocatable and len(others) + 1 > allocatable["pods"]:
        return False
    used: dict[str, int | None] = {}
    for pod in others:
        for k, v in pod_requests(pod["spec"], held).items():
            have = used.get(k, 0)
            used[k] = None if have is None or v is None else have + whole(k, v)
    verdicts = [None if (u := used.get(k, 0)) is None else whole(k, want) <= allocatable.get(k, 0) - u
                for k, want in requests.items() if want > 0]
    return False if False in verdicts else None if None in verdicts else True


# --- Pods ----------------------------------------------------------------------------------------

def is_terminal(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or [])


def node_of(pod: dict) -> str | None:
    """Where a Pod is, or is pinned to while Pending (the controllers' matchFields pin)."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return spec["nodeName"]
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    pins = [f["values"][0] for t in required.get("nodeSelectorTerms") or [] for f in t.get("matchFields") or []
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(f.get("values") or []) == 1]
    return pins[0] if len(pins) == 1 else None


def owner(pod: dict) -> tuple[str, str] | None:
    """The (kind, name) of the Pod's controller, in its namespace."""
    return next(((r["kind"], r["name"]) for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None)


def own_pods_by_node(workload: dict, pods: list[dict]) -> dict[str, dict]:
    """The workload's non-terminal Pods by the Node they are on (or pinned to); the oldest wins, as upstream."""
    me = (workload["kind"], workload["metadata"]["name"])
    found: dict[str, dict] = {}
    for pod in pods:
        node = node_of(pod)
        if node and not is_terminal(pod) and owner(pod) == me and pod["metadata"].get("namespace") == workload[
                "metadata"]["namespace"]:
            found.setdefault(node, pod)
    return found


# --- the two controllers ---------------------------------------------------------------------------

COLUMNS = {"NodeSet": ("desiredNumberScheduled", "numberFeasible", "currentNumberScheduled", "numberReady",
                       "updatedNumberScheduled", "numberMisscheduled", "numberUnavailable"),
           "DaemonSet": ("desiredNumberScheduled", "currentNumberScheduled", "numberReady", "numberAvailable",
                         "updatedNumberScheduled", "numberMisscheduled", "numberUnavailable")}


def nodeset_status(nodeset: dict, nodes: list[dict], pods: list[dict], unknown_fits: bool = False) -> dict[str, int]:
    """The controller's columns; a Node whose fit is unknown counts as `unknown_fits` says."""
    spec = nodeset["spec"]["template"]["spec"]
    requests = pod_requests(spec)
    mine = own_pods_by_node(nodeset, pods)
    bound: dict[str, list[dict]] = {}
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") and not is_terminal(pod):
            bound.setdefault(pod["spec"]["nodeName"], []).append(pod)
    feasible = current = ready = misscheduled = 0
    for node in nodes:
        name = node["metadata"]["name"]
        others = [p for p in bound.get(name, []) if owner(p) != ("NodeSet", nodeset["metadata"]["name"])
                  or p["metadata"].get("namespace") != nodeset["metadata"]["namespace"]]
        claimed = any((owner(p) or ("",))[0] == "NodeSet" for p in others)
        tolerations = spec.get("tolerations") or []
        should_run = affinity_holds(spec, node) and taints_hold([*tolerations, *daemon_tolerations(spec)], node)
        matches = should_run and taints_hold(tolerations, node)
        fit = fits(requests, node, others)
        feasible += matches and (unknown_fits if fit is None else fit) and not claimed
        if name in mine:
            current += should_run
            ready += should_run and is_ready(mine[name])
            misscheduled += not should_run
    replicas = nodeset["spec"].get("replicas")
    desired = feasible if replicas is None else int(replicas)
    return dict(zip(COLUMNS["NodeSet"], (desired, feasible, current, ready, current, misscheduled,
                                         max(min(desired, feasible) - ready, 0)), strict=True))


def daemon_tolerations(spec: dict) -> list[dict]:
    """What the DaemonSet controller adds to every daemon Pod (network-unavailable only with hostNetwork)."""
    return DAEMON_TOLERATIONS + ([NETWORK_TOLERATION] if spec.get("hostNetwork") else [])


def daemonset_status(ds: dict, nodes: list[dict], pods: list[dict]) -> dict[str, int]:
    spec = ds["spec"]["template"]["spec"]
    tolerations = list(spec.get("tolerations") or []) + daemon_tolerations(spec)
    mine = own_pods_by_node(ds, pods)
    desired = current = ready = misscheduled = 0
    for node in nodes:
        name = node["metadata"]["name"]
        should_run = (not spec.get("nodeName") or spec["nodeName"] == name) and affinity_holds(spec, node) \
            and taints_hold(tolerations, node)
        desired += should_run
        if name in mine:
            current += should_run
            ready += should_run and is_ready(mine[name])
            misscheduled += not should_run
    return dict(zip(COLUMNS["DaemonSet"], (desired, current, ready, ready, current, misscheduled, desired - ready), strict=True))


# --- the test --------------------------------------------------------------------------------------

def items(case: str, stem: str) -> list[dict]:
    path = FIXTURES / case / f"{stem}.json"
    return json.loads(path.read_text())["items"] if path.exists() else []


WORKLOADS = [(case, kind, w) for case in ALL_CASES for kind, stem in (("NodeSet", "nodesets"), ("DaemonSet", "daemonsets"))
             for w in items(case, stem)]


@pytest.mark.parametrize("case,kind,workload", WORKLOADS,
                         ids=[f"{c}:{w['metadata']['namespace']}/{w['metadata']['name']}" for c, _, w in WORKLOADS])
def test_recorded_status_agrees_with_the_objects(case, kind, workload):
    target = f"{workload['metadata']['namespace']}/{workload['metadata']['name']}"
    nodes, pods = items(case, "nodes"), items(case, "pods")
    # the status a Node of unknown fit gives either way (the two agree unless a Pod's request is no quantity)
    want = [nodeset_status(workload, nodes, pods, unknown) for unknown in (False, True)] if kind == "NodeSet" \
        else [daemonset_status(workload, nodes, pods)]
    recorded = {k: (workload.get("status") or {}).get(k) for k in want[0]}
    if (case, target) in DECLARED:
        assert recorded not in want, f"{case} {target} is declared inconsistent but agrees: drop it from DECLARED"
        return
    assert recorded in want, f"{case} {target}: recorded status vs recomputed from its objects"
    # a status for an older spec only agrees by chance: such a case is declared, not passed
    assert (workload.get("status") or {}).get("observedGeneration") == workload["metadata"].get("generation")


@pytest.mark.parametrize("case", ALL_CASES)
def test_node_pool_current_counts_its_nodes(case):
    """CURRENT is the Nodes booted and registered with the pool: those carrying its name label."""
    nodes = items(case, "nodes")
    for pool in items(case, "nodepools"):
        members = [n for n in nodes if n["metadata"]["labels"].get("compute.coreweave.com/node-pool") == pool["metadata"]["name"]]
        assert pool["status"]["currentNodes"] == len(members), pool["metadata"]["name"]


def test_declared_exceptions_name_real_workloads():
    known = {(case, f"{w['metadata']['namespace']}/{w['metadata']['name']}") for case, _, w in WORKLOADS}
    assert set(DECLARED) <= known


# --- the model itself, on the cases it must tell apart ------------------------------------------------

@pytest.mark.parametrize("text,value", [("100m", Fraction(1, 10)), ("8Gi", 8 * 2**30), ("1e3", 1000), ("1.5k", 1500),
                                        ("470000000Ki", 470000000 * 1024), ("0", 0), (".5", Fraction(1, 2))])
def test_quantity(text, value):
    assert quantity(text) == value


@pytest.mark.parametrize("text", ["64gb", "1.2.3", "", "Gi", "8 Gi"])
def test_invalid_quantity_is_refused(text):
    with pytest.raises(AssertionError):
        quantity(text)
    assert held(text) is None


@pytest.mark.parametrize("req,labels,holds", [
    ({"key": "a", "operator": "In", "values": ["x"]}, {"a": "x"}, True),
    ({"key": "a", "operator": "In", "values": ["x"]}, {}, False),
    ({"key": "a", "operator": "In", "values": []}, {"a": "x"}, False),
    ({"key": "a", "operator": "NotIn", "values": ["x"]}, {}, True),
    ({"key": "a", "operator": "NotIn", "values": ["x"]}, {"a": "x"}, False),
    ({"key": "a", "operator": "Exists"}, {"a": ""}, True),
    ({"key": "a", "operator": "Exists", "values": ["x"]}, {"a": "x"}, False),
    ({"key": "a", "operator": "DoesNotExist"}, {"a": "x"}, False),
    ({"key": "a", "operator": "Gt", "values": ["7"]}, {"a": "8"}, True),
    ({"key": "a", "operator": "Gt", "values": ["7"]}, {"a": "7"}, False),
    ({"key": "a", "operator": "Lt", "values": ["7"]}, {"a": "x"}, False),
    ({"key": "a", "operator": "Lt", "values": ["7", "8"]}, {"a": "1"}, False),
    ({"key": "a", "operator": "Equals", "values": ["x"]}, {"a": "x"}, False),
])
def test_requirement(req, labels, holds):
    assert requirement_holds(req, labels) is holds


@pytest.mark.parametrize("text, value", [("12", 12), ("+12", 12), ("-0", 0), ("007", 7), (str(-2**63), -2**63),
                                         ("1_000", None), (" 12", None), ("0x10", None), ("+", None), ("", None),
                                         ("\u0661", None), ("12\n", None), (str(2**63), None)])
def test_gt_lt_read_integers_as_go_parses_them(text, value):
    assert parse_int64(text) == value
    assert requirement_holds({"key": "a", "operator": "Gt", "values": ["5"]}, {"a": text}) is (value is not None
                                                                                               and value > 5)
    assert requirement_holds({"key": "a", "operator": "Lt", "values": [text]}, {"a": "5"}) is (value is not None
                                                                                               and 5 < value)


@pytest.mark.parametrize("op, matched", [("In", {"n1"}), ("NotIn", {"n2"})])
def test_match_fields_on_the_node_name(op, matched):
    assert {name for name in ("n1", "n2") if field_holds({"key": "metadata.name", "operator": op, "values": ["n1"]},
                                                         name)} == matched


def test_taints_prefer_no_schedule_never_blocks_and_a_cordon_does():
    node = {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]}}
    assert taints_hold([], node)
    node["spec"]["unschedulable"] = True
    assert not taints_hold([], node)
    assert taints_hold(DAEMON_TOLERATIONS, node)
    node["spec"]["taints"].append({"key": "k", "value": "v", "effect": "NoExecute"})
    assert not taints_hold([{"key": "k", "value": "w"}, *DAEMON_TOLERATIONS], node)
    assert taints_hold([{"key": "k", "operator": "Exists", "effect": "NoExecute"}, *DAEMON_TOLERATIONS], node)


def test_the_recomputation_sees_a_squatter_and_a_missing_toleration():
    """Resources and taints really count: without the Spark executor slurm-cpu has 6 feasible Nodes, not
    5; without its toleration the dedicated NodeSet has none."""
    nodeset, nodes, pods = items("foreign-pod-resources", "nodesets")[0], items("foreign-pod-resources", "nodes"), \
        items("foreign-pod-resources", "pods")
    assert nodeset_status(nodeset, nodes, pods)["numberFeasible"] == 5
    assert nodeset_status(nodeset, nodes, [p for p in pods if p["metadata"]["namespace"] != "data-eng"])[
        "numberFeasible"] == 6
    nodeset, nodes, pods = items("healthy-dedicated", "nodesets")[0], items("healthy-dedicated", "nodes"), \
        items("healthy-dedicated", "pods")
    nodeset["spec"]["template"]["spec"]["tolerations"] = []
    assert nodeset_status(nodeset, nodes, pods)["numberFeasible"] == 0


def test_a_request_that_is_no_quantity_leaves_its_node_unknown_never_free():
    """quantity-invalid: the Ray worker's `64gb` read as 0 would make its Node the sixth feasible one; unknown,
    that Node counts either way, and a readable request decides again."""
    nodeset, nodes, pods = (items("quantity-invalid", stem) for stem in ("nodesets", "nodes", "pods"))
    ns = nodeset[0]
    assert [nodeset_status(ns, nodes, pods, unknown)["numberFeasible"] for unknown in (False, True)] == [5, 6]
    worker = next(p for p in pods if p["metadata"]["namespace"] == "ml-team")
    worker["spec"]["containers"][0]["resources"]["requests"]["memory"] = "64G"
    assert [nodeset_status(ns, nodes, pods, unknown)["numberFeasible"] for unknown in (False, True)] == [5, 5]
    worker["spec"]["containers"][0]["resources"]["requests"]["memory"] = "0"
    assert [nodeset_status(ns, nodes, pods, unknown)["numberFeasible"] for unknown in (False, True)] == [6, 6]


def test_a_cordon_leaves_a_running_pod_current_and_an_untolerated_taint_does_not():
    """A cordon keeps new Pods off a Node (not FEASIBLE) and leaves the running one CURRENT, never MISSCHEDULED;
    a NoSchedule taint the NodeSet does not tolerate makes it MISSCHEDULED."""
    nodeset, nodes, pods = (items("healthy-cordoned-pod-running", stem) for stem in ("nodesets", "nodes", "pods"))
    counts = ("numberFeasible", "currentNumberScheduled", "numberMisscheduled")
    assert [nodeset_status(nodeset[0], nodes, pods)[k] for k in counts] == [5, 6, 0]
    link_flap = next(n for n in nodes if n["spec"].get("unschedulable"))
    link_flap["spec"]["taints"].append({"key": "team.example.com/maintenance", "value": "true", "effect": "NoSchedule"})
    assert [nodeset_status(nodeset[0], nodes, pods)[k] for k in counts] == [5, 5, 1]


def test_a_not_ready_node_leaves_a_running_pod_current_and_takes_no_new_one():
    """Kubernetes' not-ready taint is the Node's health: the Node is not FEASIBLE, its running Pod stays CURRENT,
    never MISSCHEDULED; the same NoExecute taint with a key of the operator's makes it MISSCHEDULED."""
    nodeset, nodes, pods = (items("slurmd-on-not-ready-node", stem) for stem in ("nodesets", "nodes", "pods"))
    counts = ("numberFeasible", "currentNumberScheduled", "numberMisscheduled")
    assert [nodeset_status(nodeset[0], nodes, pods)[k] for k in counts] == [3, 4, 0]
    sick = next(n for n in nodes if any(t["key"] == "node.kubernetes.io/not-ready" for t in n["spec"].get("taints", [])))
    sick["spec"]["taints"].append({"key": "team.example.com/maintenance", "value": "true", "effect": "NoExecute"})
    assert [nodeset_status(nodeset[0], nodes, pods)[k] for k in counts] == [3, 3, 1]
