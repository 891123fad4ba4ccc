"""A plain DaemonSet's scope: which Nodes the controller should run it on, and where its Pods are."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property

from sunkcheck import objects as o
from sunkcheck.analyze import events as ev
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.cluster import Cluster
from sunkcheck.analyze.feasibility import Workload, evaluate, explain_node, required_terms
from sunkcheck.analyze.nodeset import columns_line, falls_short, lagging
from sunkcheck.model import Check, DaemonNodeCounts, DaemonPodCounts, DaemonSetColumns, DaemonSetCounts, NodeVerdict, Summary
from sunkcheck.text import counted

def pinned_node(pod: dict) -> str | None:
    """The Node a daemon Pod belongs to: its nodeName, or the controller's `metadata.name In [node]` pin."""
    if o.node_name(pod):
        return o.node_name(pod)
    return next((f["values"][0] for t in required_terms(o.spec(pod)) or () for f in t.get("matchFields") or ()
                 if f.get("key") == "metadata.name" and f.get("operator") == "In" and f.get("values")), None)


@dataclass(frozen=True)
class Scope:
    cluster: Cluster
    daemonset: dict

    @property
    def name(self) -> str:
        return o.name(self.daemonset)

    @property
    def namespace(self) -> str:
        return o.namespace(self.daemonset)

    @property
    def pod_spec(self) -> dict:
        return o.pod_spec(self.daemonset)

    @cached_property
    def workload(self) -> Workload:
        return Workload.from_daemonset(self.pod_spec)

    @cached_property
    def pods(self) -> list[dict]:
        return [p for p in self.cluster.snapshot.pods or ()
                if o.namespace(p) == self.namespace and o.owned_by(p, "DaemonSet", self.name) and not o.is_terminal(p)]

    @cached_property
    def verdicts(self) -> dict[str, NodeVerdict]:
        """Every Node judged as NodeShouldRunDaemonPod would (feasible = the controller wants a Pod there)."""
        placed = {pinned_node(p) for p in self.pods}
        return {name: evaluate(self.workload, node, [], placed=name in placed) for name, node in self.cluster.nodes.items()}

    def explain(self, node: dict) -> list[Check]:
        return explain_node(self.workload, node, [])

    def node_of(self, pod: dict) -> dict | None:
        return self.cluster.nodes.get(pinned_node(pod) or "")

    @property
    def eligible(self) -> list[str]:
        return sorted(n for n, v in self.verdicts.items() if v.feasible)

    @property
    def selected(self) -> list[str]:
        """Nodes the scope (nodeName, nodeSelector, required affinity) selects, before taints."""
        return sorted(n for n, v in self.verdicts.items() if not any(r.check == "affinity" for r in v.reasons))

    @cached_property
    def kept_off(self) -> dict[str, list[dict]]:
        """The selected Nodes a taint keeps the agent off, each with those taints (the controller's default
        tolerations counted), less the taints of the Node's state (nodes.untolerated_scoping_taints)."""
        tolerations = self.workload.pod_spec.get("tolerations") or []
        return {name: found for name in self.selected
                if (found := nd.untolerated_scoping_taints(tolerations, self.cluster.nodes[name]))}

    @property
    def locked(self) -> list[str]:
        """The selected Nodes SUNK's lock alone keeps the agent off: busy with Slurm jobs, the lock lifted when they
        end. An agent that does not tolerate it stays off Nodes running jobs by design, no drift."""
        return [name for name, taints in self.kept_off.items() if all(map(o.is_lock, taints))]

    @property
    def pools(self) -> tuple[tuple[str, ...], str]:
        """The Node Pools its report names, and how they were found: those of the Nodes it is eligible for; when a
        taint keeps it off every Node its scope selects, those of the selected Nodes, said so; else why none."""
        for names, which, more in ((self.eligible, "the Nodes it is eligible for", ""),
                                   (self.selected, "the Nodes its scope selects", ": it is eligible for none")):
            if names:
                pools = tuple(sorted({p for n in names if (p := self.verdicts[n].pool)}))
                return pools, (f"the pools of {which}{more}" if pools
                               else f"not found: none of {which} ({len(names)}) is in a Node Pool{more}")
        return (), "not found: its scope (nodeName, nodeSelector, required affinity) selects no Node"

    @property
    def pending(self) -> list[dict]:
        return [p for p in self.pods if o.status(p).get("phase") == "Pending"]

    @property
    def counts(self) -> DaemonSetColumns:
        return DaemonSetColumns(**o.status_counts(self.daemonset, o.DAEMONSET_COLUMNS))

    @property
    def events(self) -> list[dict]:
        found = self.cluster.events_about("DaemonSet", self.name, self.namespace)
        for pod in self.pods:
            found += self.cluster.events_about("Pod", o.name(pod), self.namespace)
        return found


def summaries(s: Scope) -> dict[str, Summary]:
    """Each step's summary; a failure shows as no Node selected or some kept off by taints (SUNK's lock alone is
    none: Scope.locked), DESIRED 0 or a count short of it, MISSCHEDULED Pods, no daemon Pod, or one Pending or not Ready."""
    c = s.counts
    running = [p for p in s.pods if o.node_name(p)]
    ready = sum(o.is_ready(p) for p in s.pods)
    nodes = len(s.verdicts)
    lag_text, lag = lagging(s.daemonset)
    selected, eligible, locked = len(s.selected), len(s.eligible), len(s.locked)
    nodes_read = s.cluster.snapshot.nodes is not None  # else eligible by sunkcheck is not known, never 0
    return {
        "nodes": Summary(f"{counted(nodes, 'Node')}: {selected} selected by the template's scope, "
                         f"{eligible} eligible after taints" + _locked(locked),
                         DaemonNodeCounts(nodes, selected, eligible), not selected or eligible + locked < selected),
        "events": ev.summary(s.events),
        "daemonset": Summary(f"{columns_line(asdict(c), o.DAEMONSET_COLUMNS)}; "
                             + (f"eligible by sunkcheck {eligible}" if nodes_read else "Nodes not read") + _leaving(s)
                             + lag_text, DaemonSetCounts(**asdict(c), eligible_computed=eligible if nodes_read else None,
                                                         **lag),
                             not c.desired or bool(c.misscheduled) or falls_short(c.desired, c.current, c.ready)),
        "pods": Summary(f"{counted(len(s.pods), 'daemon Pod')}: {len(running)} bound, {len(s.pending)} Pending, {ready} Ready",
                        DaemonPodCounts(len(s.pods), len(running), len(s.pending), ready),
                        not s.pods or bool(s.pending) or ready < len(s.pods)),
    }


def _locked(count: int) -> str:
    """The selected Nodes locked by Slurm jobs now (Scope.locked): said, no failure."""
    if not count:
        return ""
    return (f"; {count} locked by Slurm jobs now (SUNK's lock taint, not tolerated: the agent returns when their jobs "
            "end; one that must run beside the jobs tolerates it)")


def _leaving(s: Scope) -> str:
    """Pods on Nodes the scope no longer selects: label removal is live, the controller deletes them."""
    stale = sorted(o.name(p) for p in s.pods if (node := s.node_of(p)) is not None
                   and any(r.check == "affinity" for r in s.verdicts[o.name(node)].reasons))
    if not stale:
        return ""
    return (f"; {len(stale)} daemon Pod(s) on Nodes that no longer match the scope ({', '.join(stale[:3])}"
            f"{' ...' if len(stale) > 3 else ''}): the controller deletes them")
