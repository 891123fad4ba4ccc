"""The vocabulary of `Rule.reads`: what a row's verdict, count or evidence may depend on beyond the workload and its
Pods. The rows, the summaries and notes declare it; the planner (sunkcheck.plan) and the collector act on it. One
enum for all of them, at the bottom of the layering so each may import it: a misspelt read is a type error."""

from __future__ import annotations

from enum import StrEnum


class Read(StrEnum):
    """One kind of read; the value is its stable spelling."""

    # Nodes
    EVERY_NODE = "every-node"
    """Every Node of the cluster."""
    POOL_NODES = "pool-nodes"
    """The Nodes of the pools the NodeSet names or is meant for (--pool, else annotated), then of those the Nodes read
    show it uses (a label, a toleration, its Pods' hosts); every Node when it names none and none is meant for it."""
    AFFINITY_NODES = "affinity-nodes"
    """The Nodes the NodeSet's required affinity can match, those in repair too (pool discovery weighs them); every
    Node without one."""
    POD_HOSTS = "pod-hosts"
    """The Nodes the workload's own Pods run on."""
    EVERY_NODE_WHEN_FEASIBLE_0 = "every-node-when-feasible-0"
    """Every Node when FEASIBLE is 0 or unreported (the scheduler's 0/N line)."""
    RESERVED_KEY_CARRIERS = "reserved-key-carriers"
    """Every Node, unless the Nodes read carry each reserved key the binding relies on."""
    NODES_BY_IP_WHEN_SLURM = "nodes-by-ip-when-slurm"
    """Every Node when Slurm is asked (a Slurm node with no Pod is found by its IP)."""
    # other workloads' Pods
    PODS_ON_USABLE_NODES = "pods-on-usable-nodes"
    """The Pods on Nodes the template could be placed on that have no Pod of the NodeSet."""
    PODS_ON_POOL_NODES = "pods-on-pool-nodes"
    """The Pods on the pool's Nodes that have no Pod of the NodeSet (their every reason is shown, resources
    included)."""
    PODS_ON_UNEVEN_POOL_NODES = "pods-on-uneven-pool-nodes"
    """The Pods on every Node of a pool whose Nodes meet a requirement of the binding only in part (a label set by hand
    on some), the NodeSet's own Pods' Nodes too: whether another workload runs on the pool."""
    PODS_ON_EVERY_NODE_WITHOUT_A_POOL = "pods-on-every-node-without-a-pool"
    """The Pods on every Node without the NodeSet's Pod when it has no pool and FEASIBLE is 0 or unreported
    (no-feasible-nodes then weighs every Node)."""
    PODS_ON_SHUT_OUT_NODES = "pods-on-shut-out-nodes"
    """The Pods on the Nodes of expected pools the affinity shuts out (pool-split)."""
    PODS_ON_NODES_LACKING_A_HAND_TAINT = "pods-on-nodes-lacking-a-hand-taint"
    """The Pods on the pool's Nodes that lack a NoSchedule or NoExecute taint others of its Nodes carry by hand and
    the NodeSet tolerates (set in the pool's nodeTaints, it reaches them: which DaemonSets tolerate it)."""
    PODS_ON_NODES_A_MOVED_RESERVED_TAINT_REACHES = "pods-on-nodes-a-moved-reserved-taint-reaches"
    """The Pods on the Nodes of a pool whose nodeTaints hold a reserved key the NodeSet relies on (moved to the
    operator's own domain, the taint reaches every Node of the pool: which DaemonSets tolerate it)."""
    SAME_TYPE_POOLS = "same-type-pools"
    """Of each other Node Pool of the instance type of the NodeSet's pools, when none is meant for it: the Pods on one
    of its Nodes, and only when those show no workload, its Nodes and their Pods (the idle-pool note)."""
    PODS_ON_PENDING_DAEMON_NODES = "pods-on-pending-daemon-nodes"
    """The Pods on the Nodes of Pending daemon Pods."""

