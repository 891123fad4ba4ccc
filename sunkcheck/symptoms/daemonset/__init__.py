"""The DaemonSet table: one module per row (its condition, evidence and fix together), named after the row id
less its `daemonset-` prefix. Adding a row is one new module, its line here and its fixture."""

from __future__ import annotations

from sunkcheck.symptoms import Rule
from sunkcheck.symptoms.daemonset import (node_name_set, os_arch_unscoped, pod_pending, pods_missing,
                                          preferred_affinity_only, selector_matches_nothing, untolerated_taint)

RULES: tuple[Rule, ...] = (
    node_name_set.RULE,
    selector_matches_nothing.RULE,
    untolerated_taint.RULE,
    preferred_affinity_only.RULE,
    os_arch_unscoped.RULE,
    pods_missing.RULE,
    pod_pending.RULE,
)
