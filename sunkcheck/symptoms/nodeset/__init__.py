"""The runbook's troubleshooting table for SUNK NodeSets: one module per row (its condition, evidence and fix),
assembled here in the table's order."""

from sunkcheck.symptoms.nodeset import (foreign_pod_resources, labels_not_from_pool, misscheduled, no_feasible_nodes,
                                        nodepool_missing, nodeselector_ignored, nodeset_status_stale, pool_below_target,
                                        pool_labels_missing, pool_nodes_in_repair, pool_nodes_unusable, pool_split,
                                        replicas_cap, reserved_label_namespace, slurm_node_count_mismatch,
                                        slurmd_not_ready, slurmd_pods_missing)

RULES = (
    pool_below_target.RULE,
    reserved_label_namespace.RULE,
    pool_labels_missing.RULE,
    labels_not_from_pool.RULE,
    no_feasible_nodes.RULE,
    pool_nodes_in_repair.RULE,
    pool_nodes_unusable.RULE,
    nodepool_missing.RULE,
    pool_split.RULE,
    replicas_cap.RULE,
    foreign_pod_resources.RULE,
    misscheduled.RULE,
    slurmd_pods_missing.RULE,
    nodeset_status_stale.RULE,
    nodeselector_ignored.RULE,
    slurmd_not_ready.RULE,
    slurm_node_count_mismatch.RULE,
)
