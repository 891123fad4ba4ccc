"""The feasibility engine against kube-scheduler's and the DaemonSet controller's rules, case by case."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sunkcheck.analyze.feasibility import (Workload, affinity_reasons, evaluate, match_expression, pod_requests,
                                           resource_reasons, tolerates, untolerated_taints)


def node(labels=None, taints=None, allocatable=None, name="n1", unschedulable=False, ready=True):
    labels = {"node.coreweave.cloud/state": "production"} | (labels or {})
    n = {"metadata": {"name": name, "labels": labels},
         "spec": {"taints": taints or []},
         "status": {"allocatable": allocatable or {"cpu": "8", "memory": "32Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}
    if unschedulable:
        n["spec"]["unschedulable"] = True
    return n


def affinity(*terms):
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


@pytest.mark.parametrize("expr, labels, want", [
    ({"key": "a", "operator": "In", "values": ["x", "y"]}, {"a": "y"}, True),
    ({"key": "a", "operator": "In", "values": ["x"]}, {"a": "z"}, False),
    ({"key": "a", "operator": "In", "values": ["x"]}, {}, False),
    ({"key": "a", "operator": "In", "values": []}, {"a": "x"}, False),  # invalid: no values
    ({"key": "a", "operator": "NotIn", "values": ["x"]}, {}, True),  # NotIn matches a missing label
    ({"key": "a", "operator": "NotIn", "values": ["x"]}, {"a": "x"}, False),
    ({"key": "a", "operator": "NotIn", "values": ["x"]}, {"a": "y"}, True),
    ({"key": "a", "operator": "Exists"}, {"a": ""}, True),
    ({"key": "a", "operator": "Exists"}, {}, False),
    ({"key": "a", "operator": "Exists", "values": ["x"]}, {"a": "x"}, False),  # invalid: values with Exists
    ({"key": "a", "operator": "DoesNotExist"}, {}, True),
    ({"key": "a", "operator": "DoesNotExist"}, {"a": "x"}, False),
    ({"key": "a", "operator": "Gt", "values": ["5"]}, {"a": "6"}, True),
    ({"key": "a", "operator": "Gt", "values": ["5"]}, {"a": "5"}, False),
    ({"key": "a", "operator": "Lt", "values": ["5"]}, {"a": "-3"}, True),
    ({"key": "a", "operator": "Gt", "values": ["5"]}, {"a": "6.5"}, False),  # non-integer label: no match
    ({"key": "a", "operator": "Gt", "values": ["five"]}, {"a": "6"}, False),  # non-integer value: no match
    ({"key": "a", "operator": "Gt", "values": ["1", "2"]}, {"a": "6"}, False),  # exactly one value
    ({"key": "a", "operator": "Gt", "values": ["5"]}, {}, False),
    ({"key": "a", "operator": "Gt", "values": ["1"]}, {"a": str(2**63)}, False),  # overflows int64
    ({"key": "a", "operator": "Matches", "values": ["x"]}, {"a": "x"}, False),  # unknown operator
])
def test_match_expression(expr, labels, want):
    assert match_expression(expr, labels) is want


# strconv.ParseInt(s, 10, 64), as kube-scheduler reads both sides of Gt/Lt: an optional sign and ASCII digits only.
INT64_TEXTS = [("12", 12), ("+12", 12), ("-12", -12), ("007", 7), ("-0", 0), (str(2**63 - 1), 2**63 - 1),
               (str(-2**63), -2**63), ("1_000", None), (" 12", None), ("12 ", None), ("12\n", None), ("0x10", None),
               ("+", None), ("-", None), ("", None), ("+-1", None), ("1e3", None), ("1.0", None),
               ("\u0661\u0662", None), (str(2**63), None)]


@pytest.mark.parametrize("text, value", INT64_TEXTS)
def test_gt_lt_read_label_and_value_as_kubernetes_parses_integers(text, value):
    def holds(op, values, label):
        return match_expression({"key": "a", "operator": op, "values": values}, {"a": label})

    assert holds("Gt", ["5"], text) is (value is not None and value > 5)
    assert holds("Lt", ["5"], text) is (value is not None and value < 5)
    assert holds("Gt", [text], "5") is (value is not None and 5 > value)
    assert holds("Lt", [text], "5") is (value is not None and 5 < value)


def test_terms_are_ored_expressions_anded():
    spec = affinity({"matchExpressions": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]},
                    {"matchExpressions": [{"key": "c", "operator": "Exists"}]})
    assert affinity_reasons(spec, node({"a": "1", "b": "1"})) == []
    assert affinity_reasons(spec, node({"c": "1"})) == []
    reasons = affinity_reasons(spec, node({"a": "1"}))
    assert [r.detail for r in reasons] == ["required affinity term 0: b Exists: label absent",
                                          "required affinity term 1: c Exists: label absent"]


@pytest.mark.parametrize("terms", [[], [{}], [{"matchExpressions": []}], [{}, {"matchFields": []}]])
def test_empty_terms_match_nothing(terms):
    assert affinity_reasons(affinity(*terms), node({"a": "1"}))


def test_no_required_affinity_matches_everything_and_preferred_is_ignored():
    spec = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "zzz", "operator": "Exists"}]}}]}}}
    assert affinity_reasons(spec, node()) == []


@pytest.mark.parametrize("op, matched", [("In", {"n1"}), ("NotIn", {"n2", "n3"})])
def test_match_fields_on_node_name(op, matched):
    spec = affinity({"matchFields": [{"key": "metadata.name", "operator": op, "values": ["n1"]}]})
    assert {name for name in ("n1", "n2", "n3") if not affinity_reasons(spec, node(name=name))} == matched
    nodeset = Workload.from_template(spec)
    assert {name for name in ("n1", "n2", "n3") if evaluate(nodeset, node(name=name), []).feasible} == matched
    bad = affinity({"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["n1"]}]})
    assert affinity_reasons(bad, node(name="n1"))


def test_node_selector_is_anded_with_affinity():
    spec = affinity({"matchExpressions": [{"key": "a", "operator": "Exists"}]}) | {"nodeSelector": {"b": "x"}}
    assert affinity_reasons(spec, node({"a": "1", "b": "x"})) == []
    assert [r.detail for r in affinity_reasons(spec, node({"a": "1", "b": "y"}))] == ["nodeSelector b=x: label is 'y'"]


@pytest.mark.parametrize("tol, taint, want", [
    ({"key": "k", "operator": "Exists"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
    ({"key": "k", "operator": "Equal", "value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
    ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoExecute"}, True),  # operator defaults to Equal
    ({"key": "k", "operator": "Equal", "value": "w"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
    ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, {"key": "k", "effect": "NoSchedule"}, False),
    ({"operator": "Exists"}, {"key": "anything", "value": "v", "effect": "NoExecute"}, True),  # empty key + Exists
    ({"operator": "Exists", "effect": "NoSchedule"}, {"key": "x", "effect": "NoExecute"}, False),
    ({"key": "other", "operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, False),
    ({"key": "k", "operator": "Lt", "value": "3"}, {"key": "k", "value": "1", "effect": "NoSchedule"}, False),
])
def test_tolerates(tol, taint, want):
    assert tolerates(tol, taint) is want


def test_prefer_no_schedule_never_blocks():
    taints = [{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "NoSchedule"}]
    assert untolerated_taints([], taints) == [taints[1]]


def test_requests_sidecars_and_init_containers():
    spec = {
        "initContainers": [
            {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"name": "init", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}},
        ],
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "2", "memory": "2Gi"}}}],
        "overhead": {"cpu": "250m"},
    }
    # containers: app 2 + sidecar 1 = 3; init: 3 + earlier sidecar 1 = 4 -> max 4, + overhead
    assert pod_requests(spec) == {"cpu": Fraction(17, 4), "memory": 2 * 2**30}


def test_limits_become_requests_for_templates_only():
    spec = {"containers": [{"name": "a", "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": "8"}}}]}
    assert pod_requests(spec, limits_as_requests=True) == {"cpu": 2, "nvidia.com/gpu": 8}
    assert pod_requests(spec) == {}


def test_pod_level_requests_replace_the_aggregate():
    spec = {"resources": {"requests": {"cpu": "6"}},
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
    assert pod_requests(spec) == {"cpu": 6, "memory": 2**30}


def pod(name, cpu, ns="other"):
    return {"metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}


def test_resources_name_the_holders_and_the_numbers():
    reasons = resource_reasons({"cpu": Fraction(6)}, node(), [pod("big", "3"), pod("small", "500m")])
    assert [r.detail for r in reasons] == [
        "Insufficient cpu: requests 6, free 4.5 of 8 allocatable, short 1.5 (held by other/big 3, other/small 500m)"]


def test_printed_amounts_are_exact_so_the_arithmetic_adds_up():
    """A few MiB beside hundreds of GiB: rounded, `free 1536Gi = allocatable 1536Gi - 512Mi` and `requests 2100Gi,
    free 2000Gi, short 100.6Gi`, which do not add up; exact, every difference printed is the one computed."""
    from sunkcheck.analyze.feasibility import explain_node
    from sunkcheck.objects import format_quantity, quantity

    big = node(allocatable={"cpu": "190", "memory": "2000Gi", "pods": "110"})
    agent = {"metadata": {"name": "agent", "namespace": "kube-system"},
             "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "200m", "memory": "512Mi"}}}]}}
    want = {"memory": quantity("2100Gi") + quantity("128Mi")}
    assert [r.detail for r in resource_reasons(want, big, [agent])] == [
        "Insufficient memory: requests 2100.125Gi, free 1999.5Gi of 2000Gi allocatable, short 100.625Gi "
        "(held by kube-system/agent 512Mi)"]
    checks = explain_node(Workload({}, {"memory": quantity("1000Gi")}), big, [agent])
    assert [c.found for c in checks if c.subject == "memory"] == [
        "free 1999.5Gi = allocatable 2000Gi - requested by others 512Mi"]
    # an allocatable in decimal units beside a binary request: both binary (`2105.344G` read as above `2000.125Gi`)
    decimal = node(allocatable={"cpu": "126", "memory": "2105344M", "pods": "110"})
    assert [r.detail for r in resource_reasons(want, decimal, [agent])] == [
        "Insufficient memory: requests 2100.125Gi, free ≈1960.254Gi of ≈1960.754Gi allocatable, short ≈139.871Gi "
        "(held by kube-system/agent 512Mi)"]
    # a small shortfall is never rounded away; an amount with no short exact form says it is approximate
    assert format_quantity("memory", quantity("1Mi")) == "1Mi"
    # decimal units are read in binary, as the request and allocatable beside them (the oncall's `2105.344G` beside
    # `2000.125Gi` read as the smaller)
    assert format_quantity("memory", quantity("200M")) == "≈190.735Mi"
    assert format_quantity("memory", quantity("2056000000Ki")) == "≈1960.754Gi"
    assert format_quantity("memory", quantity("2000Gi") - quantity("200M")) == "≈1999.814Gi"
    assert format_quantity("cpu", quantity("149.75")) == "149.75" and format_quantity("cpu", quantity("250m")) == "250m"
    assert format_quantity("cpu", quantity("1234.5678")) == "1234.5678"
    # under 1Ki an amount is whole nano units: exact, never `≈0` for a `1n` allocatable
    assert format_quantity("memory", quantity("1n")) == "0.000000001"
    assert format_quantity("memory", quantity("1000001n")) == "0.001000001"


def _holder(name, requests, containers=1):
    return {"metadata": {"name": name, "namespace": "other"},
            "spec": {"containers": [{"name": f"c{i}", "resources": {"requests": requests}} for i in range(containers)]}}


def test_cpu_is_compared_in_whole_millicores_rounded_up_like_the_scheduler():
    """100.000001 cores fit the exact 100.0005 left free, but kube-scheduler holds cpu as
    MilliValue(), rounded up: 100001m requested against 190000m - 90000m = 100000m free. Insufficient cpu; the
    amounts printed stay exact, and the reason says the rounding decided."""
    from sunkcheck.analyze.feasibility import explain_node
    from sunkcheck.objects import quantity

    big = node(allocatable={"cpu": "190", "memory": "2000Gi", "pods": "110"})
    want = {"cpu": quantity("100000001u")}
    assert [r.detail for r in resource_reasons(want, big, [pod("x", "89999500u")])] == [
        "Insufficient cpu: requests 100.000001, free 100.0005 of 190 allocatable (kube-scheduler compares whole "
        "millicores, each Pod's total and the allocatable rounded up: requests 100001m, free 100000m = 190000m - "
        "90000m) (held by other/x 89.9995)"]
    [check] = [c for c in explain_node(Workload({}, want), big, [pod("x", "89999500u")]) if c.subject == "cpu"]
    assert not check.ok and check.found.startswith("free 100.0005 = allocatable 190 - requested by others 89.9995 (")
    assert resource_reasons({"cpu": quantity("100000001u")}, big, [pod("x", "89999000u")]) == []  # 100001m + 89999m
    # rounding up can also make room: an allocatable of 1500u is 2m to the scheduler
    assert resource_reasons({"cpu": quantity("2m")}, node(allocatable={"cpu": "1500u", "pods": "110"}), []) == []


def test_the_rounding_is_of_each_pods_total_not_of_each_container():
    """resourcehelper.PodRequests sums the containers' Quantities exactly; framework.Resource rounds the Pod's total
    once (the incoming Pod's in PreFilter, each bound Pod's in NodeInfo), then NodeInfo adds the Pods' integers."""
    one_milli = node(allocatable={"cpu": "1m", "pods": "110"})
    template = pod_requests({"containers": [{"name": f"c{i}", "resources": {"requests": {"cpu": "500u"}}}
                                            for i in range(2)]})
    assert resource_reasons(template, one_milli, []) == []  # 1000u is 1m; per container it would be 2m
    two_milli = node(allocatable={"cpu": "2m", "pods": "110"})
    assert resource_reasons({"cpu": Fraction(1, 1000)}, two_milli, [_holder("a", {"cpu": "500u"}, 2)]) == []
    # two Pods of 500u each hold 1m to the scheduler: 2m in all, no room for 1m (exactly, 1m would be left)
    [reason] = resource_reasons({"cpu": Fraction(1, 1000)}, two_milli,
                                [_holder("a", {"cpu": "500u"}), _holder("b", {"cpu": "500u"})])
    assert reason.scheduler == "Insufficient cpu" and "requests 1m, free 0m = 2m - 2m" in reason.detail


def test_memory_and_other_resources_are_compared_in_whole_units_rounded_up():
    """Memory, ephemeral-storage and extended resources are held as Value(): whole bytes (units), rounded up. A
    `1.5` bytes request is 2; so is one of `1500m`."""
    three = node(allocatable={"cpu": "8", "memory": "3", "pods": "110"})
    [reason] = resource_reasons({"memory": Fraction(3, 2)}, three, [_holder("a", {"memory": "1.5"})])
    assert reason.scheduler == "Insufficient memory"
    assert reason.detail == ("Insufficient memory: requests 1.5, free 1.5 of 3 allocatable (kube-scheduler compares "
                             "whole units, each Pod's total and the allocatable rounded up: requests 2, free 1 = 3 - 2) "
                             "(held by other/a 1.5)")
    assert resource_reasons({"memory": Fraction(1)}, three, [_holder("a", {"memory": "1500m"})]) == []
    assert resource_reasons({"memory": Fraction(3)}, node(allocatable={"memory": "2.5", "pods": "110"}), []) == []
    gpus = node(allocatable={"cpu": "8", "example.com/dev": "2", "pods": "110"})
    [reason] = resource_reasons({"example.com/dev": Fraction(1, 2)}, gpus, [_holder("a", {"example.com/dev": "1.5"})])
    assert reason.scheduler == "Insufficient example.com/dev"


def test_extended_resource_not_advertised_counts_zero():
    reasons = resource_reasons({"nvidia.com/gpu": Fraction(8)}, node(), [])
    assert [r.detail for r in reasons] == ["Insufficient nvidia.com/gpu: requests 8, Node does not advertise it"]


def test_zero_requests_are_skipped_but_pod_count_is_checked():
    full = node(allocatable={"cpu": "1", "pods": "2"})
    reasons = resource_reasons({"cpu": Fraction(0)}, full, [pod("a", "0"), pod("b", "0")])
    assert [r.detail for r in reasons] == ["Too many pods: 2 of 2 allowed already run"]


def test_verdict_lists_every_failing_check():
    spec = affinity({"matchExpressions": [{"key": "a", "operator": "Exists"}]}) | {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100"}}}]}
    n = node(taints=[{"key": "t", "value": "1", "effect": "NoSchedule"}], unschedulable=True, ready=False,
             labels={"node.coreweave.cloud/state": "triage"})
    verdict = evaluate(Workload.from_template(spec), n, [], claimed_by="other-nodeset")
    assert not verdict.feasible
    assert [r.check for r in verdict.reasons] == ["state", "state", "unschedulable", "affinity", "taint",
                                                 "resources", "claimed"]


def test_cordon_is_tolerated_like_the_scheduler_does():
    spec = {"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]}
    assert evaluate(Workload.from_template(spec), node(unschedulable=True), []).feasible


# --- properties ------------------------------------------------------------------------------------

keys = st.sampled_from(["a", "b", "sunk.example.com/node"])
values = st.sampled_from(["x", "y", "true"])
effects = st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"])
taint_st = st.fixed_dictionaries({"key": keys, "value": values, "effect": effects})
toleration_st = st.one_of(
    st.fixed_dictionaries({"key": keys, "operator": st.just("Exists")}, optional={"effect": effects}),
    st.fixed_dictionaries({"key": keys, "operator": st.just("Equal"), "value": values}, optional={"effect": effects}),
    st.fixed_dictionaries({"operator": st.just("Exists")}, optional={"effect": effects}),
)
expr_st = st.one_of(
    st.fixed_dictionaries({"key": keys, "operator": st.sampled_from(["In", "NotIn"]),
                           "values": st.lists(values, min_size=1, max_size=2)}),
    st.fixed_dictionaries({"key": keys, "operator": st.sampled_from(["Exists", "DoesNotExist"])}),
)
term_st = st.fixed_dictionaries({"matchExpressions": st.lists(expr_st, max_size=3)})


def feasible(tolerations, taints, terms=None, labels=None):
    spec = {"tolerations": tolerations} | (affinity(*terms) if terms is not None else {})
    return evaluate(Workload.from_template(spec), node(labels, taints), []).feasible


@given(st.lists(toleration_st), st.lists(taint_st), toleration_st)
def test_adding_a_toleration_never_makes_a_node_infeasible(tolerations, taints, extra):
    if feasible(tolerations, taints):
        assert feasible([*tolerations, extra], taints)


@given(st.lists(toleration_st), st.lists(taint_st), taint_st)
def test_adding_a_taint_never_makes_a_node_feasible(tolerations, taints, extra):
    if not feasible(tolerations, taints):
        assert not feasible(tolerations, [*taints, extra])


@given(st.lists(toleration_st), st.lists(taint_st), st.lists(term_st, min_size=1, max_size=3),
       st.dictionaries(keys, values), st.randoms())
def test_verdict_does_not_depend_on_order(tolerations, taints, terms, labels, rnd):
    before = feasible(tolerations, taints, terms, labels)
    shuffled_terms = [dict(t, matchExpressions=rnd.sample(t["matchExpressions"], len(t["matchExpressions"])))
                      for t in rnd.sample(terms, len(terms))]
    after = feasible(rnd.sample(tolerations, len(tolerations)), rnd.sample(taints, len(taints)), shuffled_terms, labels)
    assert before == after


def slurmd(requests):
    return Workload.from_template({"containers": [{"name": "slurmd", "resources": {"requests": requests}}]})


def test_an_invalid_allocatable_leaves_the_resource_check_unknown_not_zero():
    v = evaluate(slurmd({"memory": "1Gi"}), node(allocatable={"cpu": "8", "memory": "64gb", "pods": "110"}), [])
    assert not v.feasible
    assert [r.detail for r in v.reasons] == [
        "allocatable memory is '64gb', not a valid quantity: cannot tell whether the request fits"]
    # a resource the template does not request is not compared, so not read
    assert evaluate(slurmd({"cpu": "1"}), node(allocatable={"cpu": "8", "memory": "64gb"}), []).feasible


def test_an_invalid_request_in_the_template_is_never_read_as_zero():
    v = evaluate(slurmd({"memory": "64gb", "cpu": "1"}), node(), [])
    assert not v.feasible
    assert [r.detail for r in v.reasons] == [
        "containers[slurmd] requests memory '64gb', not a valid quantity: cannot tell whether it fits"]


def test_an_invalid_request_of_another_pod_leaves_the_node_unknown():
    other = {"metadata": {"name": "x", "namespace": "ml"},
             "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}
    v = evaluate(slurmd({"cpu": "1"}), node(), [other])
    assert not v.feasible
    assert [r.detail for r in v.reasons] == [
        "Pod ml/x: containers[c] requests cpu 'lots', not a valid quantity: cannot tell what the Pod holds"]


NEGATIVE = "a negative amount, which the API server refuses"


def test_a_negative_amount_is_refused_like_an_invalid_one_never_counted_as_fitting():
    """cpu "-5" and memory "-100Gi" parse as quantities, but the API server refuses a negative request, limit,
    overhead or allocatable: read, they fitted every Node (and a negative foreign Pod freed room)."""
    v = evaluate(slurmd({"cpu": "-5", "memory": "-100Gi"}), node(), [])
    assert not v.feasible
    assert [r.detail for r in v.reasons] == [
        f"containers[slurmd] requests cpu '-5', {NEGATIVE}: cannot tell whether it fits",
        f"containers[slurmd] requests memory '-100Gi', {NEGATIVE}: cannot tell whether it fits"]
    v = evaluate(slurmd({"memory": "1Gi"}), node(allocatable={"cpu": "8", "memory": "-1Ki", "pods": "110"}), [])
    assert [r.detail for r in v.reasons] == [
        f"allocatable memory is '-1Ki', {NEGATIVE}: cannot tell whether the request fits"]
    other = {"metadata": {"name": "x", "namespace": "ml"},
             "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "-0.1n"}}}]}}
    v = evaluate(slurmd({"cpu": "1"}), node(), [other])
    assert not v.feasible and [r.detail for r in v.reasons] == [
        f"Pod ml/x: containers[c] requests cpu '-0.1n', {NEGATIVE}: cannot tell what the Pod holds"]
    assert evaluate(slurmd({"cpu": "-0", "memory": "0"}), node(), []).feasible  # zero is zero, signed or not


# --- one engine: the deep view is the verdict's checks, and the memo keys on what they read ------

WORKLOADS = {
    "nodeset": Workload.from_template(affinity({"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]})
                                      | {"tolerations": [{"key": "ok", "operator": "Exists"}],
                                         "containers": [{"name": "slurmd", "resources": {"requests": {"cpu": "4"}}}]}),
    "by-name": Workload.from_template(affinity({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]})),
    "node-name": Workload.from_template({"nodeName": "n1"}),
    "daemonset": Workload.from_daemonset({"nodeSelector": {"pool": "a"}}),
}
BASE = {"labels": {"pool": "a"}}
# one variant per field a check reads: each differs from the base Node in that field alone
VARIANTS = [
    {}, {"labels": {"pool": "b"}}, {"labels": {"pool": "a", "node.coreweave.cloud/state": "repair"}}, {"ready": False},
    {"unschedulable": True}, {"taints": [{"key": "x", "effect": "NoSchedule"}]},
    {"taints": [{"key": "x", "effect": "NoExecute"}]}, {"taints": [{"key": "ok", "effect": "NoSchedule"}]},
    {"taints": [{"key": "x", "effect": "PreferNoSchedule"}]}, {"allocatable": {"cpu": "2", "pods": "110"}},
    {"allocatable": {"cpu": "8", "pods": "0"}}, {"allocatable": {"cpu": "8x"}}, {"name": "n2"},
]


@pytest.mark.parametrize("kind", WORKLOADS)
def test_a_node_judged_after_look_alikes_gets_its_own_verdict(kind):
    """Judging every variant with one warm memo gives what a fresh engine gives each variant alone."""
    warm = WORKLOADS[kind]
    for fields in VARIANTS + VARIANTS[::-1]:
        n = node(**(BASE | fields))
        fresh = Workload(warm.pod_spec, warm.requests, warm.checks, warm.kind)
        assert evaluate(warm, n, []) == evaluate(fresh, n, []), fields


def test_quantities_equal_in_python_but_parsed_apart_are_not_look_alikes():
    """A JSON float and an int that compare equal: o.quantity parses str() of each, 1152921504606847000 and
    1152921504606846976, so a request between them fits the first Node only, whichever is judged first."""
    request = {"cpu": "1152921504606846980"}
    fits = node(name="a", allocatable={"cpu": json.loads("1.152921504606847e18")})
    short = node(name="b", allocatable={"cpu": json.loads("1152921504606846976")})
    for order in ((fits, short), (short, fits)):
        warm = slurmd(request)
        assert [evaluate(warm, n, []).feasible for n in order] == [n is fits for n in order]


def test_the_memo_keys_on_a_field_a_check_starts_reading(monkeypatch):
    """A check reading a field no check read before: Nodes that differ only there are not look-alikes."""
    from sunkcheck.analyze import feasibility
    from sunkcheck.model import Check, Reason

    monkeypatch.setitem(feasibility.READERS, "kernel", lambda n: n["status"].get("nodeInfo", {}).get("kernelVersion"))
    plain = feasibility.state_checks

    def state_checks(view):
        kernel = view.read("kernel")
        ok = kernel != "5.4"
        return [*plain(view), Check("state", "kernel", "not 5.4", kernel, ok, () if ok else (Reason("state", "old kernel"),))]

    monkeypatch.setattr(feasibility, "state_checks", state_checks)
    w = Workload.from_template({})
    new, old = node(), node()
    new["status"]["nodeInfo"], old["status"]["nodeInfo"] = {"kernelVersion": "6.8"}, {"kernelVersion": "5.4"}
    assert evaluate(w, new, []).feasible
    assert [r.detail for r in evaluate(w, old, []).reasons] == ["old kernel"]


def test_checks_read_a_node_only_through_its_view():
    """The memo is sound only if no check reads the Node dict itself: `_placement` and the resource check
    get a view that has no way to the dict but the recorded readers."""
    from sunkcheck.analyze.feasibility import NodeView, _placement, resource_checks

    view = NodeView(node(labels={"pool": "a"}))
    _placement(WORKLOADS["nodeset"], view)
    resource_checks(WORKLOADS["nodeset"].requests, view, [])
    assert {what[0] for what in view.reads} <= {"name", "label", "ready", "unschedulable", "taints", "allocatable"}
    assert ("label", "pool") in view.reads and ("allocatable", "cpu") in view.reads


@pytest.mark.parametrize("kind", WORKLOADS)
def test_the_deep_view_fails_exactly_where_the_verdict_has_reasons(kind):
    from sunkcheck.analyze.feasibility import explain_node

    for fields in VARIANTS:
        n = node(**(BASE | fields))
        checks = explain_node(WORKLOADS[kind], n, [pod("big", "7")])
        verdict = evaluate(WORKLOADS[kind], n, [pod("big", "7")])
        assert verdict.reasons == tuple(r for c in checks for r in c.reasons)
        assert {c.check for c in checks if not c.ok} == {r.check for r in verdict.reasons}
        assert verdict.feasible == all(c.ok for c in checks) == (not verdict.reasons)


def test_a_failing_term_does_not_fail_the_deep_view_when_another_matches():
    from sunkcheck.analyze.feasibility import explain_node

    spec = affinity({"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                    {"matchExpressions": [{"key": "c", "operator": "Exists"}]})
    checks = explain_node(Workload.from_template(spec), node({"c": "1"}), [])
    assert all(c.ok for c in checks)
    row = next(c for c in checks if c.subject == "term 0 expression")
    assert row.found == "(absent) (term 1 matches)"
