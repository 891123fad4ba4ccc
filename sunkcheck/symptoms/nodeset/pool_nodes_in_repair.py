"""Row pool-nodes-in-repair: every Node of the pool out of service, a Node health matter."""

from __future__ import annotations

from sunkcheck import objects as o
from sunkcheck.analyze.binding import Binding
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import EXAMPLES, Match, Rule
from sunkcheck.symptoms.fixes import arg
from sunkcheck.symptoms.nodeset._shared import CORDON_REASON, health_reasons, repair_said
from sunkcheck.text import counted


def pool_nodes_in_repair(b: Binding) -> Match | None:
    """Every pool Node is out of service (cordoned, out of production, not Ready) and none is feasible: a Node
    health matter for CKS, no NodeSet change. A mismatch beside it is still no-feasible-nodes'."""
    nodes = b.pool_nodes
    if not nodes or not b.feasible_nodes.isdisjoint(b.pool_node_names) or not all(map(b.out_of_service, nodes)):
        return None
    evidence = [f"all {counted(len(nodes), 'Node')} of {', '.join(sorted(b.pool_names))} are out of service "
                f"(FEASIBLE {b.feasible})"]
    running = {o.node_name(p): p for p in b.pods if not o.is_terminal(p)}
    for n in nodes[:EXAMPLES]:
        pod = running.get(o.name(n))
        evidence.append(f"Node {o.name(n)}: {repair_said(b, n)}"
                        + (f"; slurmd Pod {o.name(pod)} still runs there (a cordon evicts nothing)" if pod else ""))
    if len(nodes) > EXAMPLES:
        evidence.append(f"and {counted(len(nodes) - EXAMPLES, 'more Node')} out of service")
    # the Nodes may refuse the NodeSet for a mismatch too (no-feasible-nodes'): the repair asks nothing of it, the
    # mismatch still does
    mismatch = any(set(b.verdict(o.name(n)).reasons) - health_reasons(b, n) for n in nodes)
    change = ("Change nothing in the NodeSet or the Node Pool for the repair; the mismatch no-feasible-nodes reports "
              "besides is still to fix, or the Nodes stay unusable once back" if mismatch else
              "Change nothing in the NodeSet or the Node Pool")
    return Match(tuple(evidence), "a Node health matter, not the NodeSet's: CKS cordons Nodes and takes them out of "
                 f"production to repair them, and returns them itself. {change} "
                 f"(never tolerate the cordon nor write a {o.STATE_LABEL} expression). If the Nodes stay out, ask "
                 f"CoreWeave support. Follow the repair (its {CORDON_REASON} annotation, state label and conditions):\n"
                 f"kubectl describe node {arg(o.name(nodes[0]))}")


RULE = Rule("pool-nodes-in-repair", Status.WARNING, "nodes",
            "Every Node of the pool is out of service: cordoned, out of production or not Ready",
            "CKS is repairing the Nodes (a cordon for a link flap or a failed health check, a state such as triage), or "
            "they have not joined yet: a Node health matter, not a NodeSet one. FEASIBLE is 0 until they return.",
            "Change nothing in the NodeSet (never tolerate the cordon): follow the repair with `kubectl describe node` "
            "(the node.coreweave.cloud/cordonReason annotation); ask CoreWeave support if the Nodes stay out.",
            pool_nodes_in_repair, needs=("nodes",), reads=(Read.POOL_NODES, Read.AFFINITY_NODES))
