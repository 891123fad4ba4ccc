"""The facts about one NodeSet ↔ Node Pool binding that the symptom table is matched against."""

from __future__ import annotations

import copy
import datetime
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from sunkcheck import objects as o
from sunkcheck import slurm
from sunkcheck.analyze import events as ev
from sunkcheck.analyze import nodepool as np
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze import nodeset as ns
from sunkcheck.analyze import pods as pd
from sunkcheck.analyze.cluster import Cluster
from sunkcheck.analyze.discovery import discover_pools, neighbours, term_pools
from sunkcheck.analyze.feasibility import (NodeView, Workload, evaluate, explain_node, match_expression, match_field,
                                           passes, required_terms)
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.model import Check, NodeSetColumns, NodeVerdict, Reason, SlurmCounts, Summary
from sunkcheck.reads import Read
from sunkcheck.text import counted


HOSTNAME_LABEL = "kubernetes.io/hostname"
V = TypeVar("V")


@dataclass(frozen=True)
class Binding:
    cluster: Cluster
    nodeset: dict
    pools: tuple[Pool, ...]
    pool_source: str
    """How the pools were found, in words."""
    partition: str | None = None
    """The Slurm partition to compare with (--partition); None compares by Slurm node = Pod name."""
    expected: frozenset[str] = frozenset()
    """The pools the operator says the NodeSet is meant for (--pool, else the Node Pools annotated for it);
    empty when nobody said: then other pools are nobody's business. `pools` holds them and the pools the
    NodeSet itself points to."""
    peers: tuple[dict, ...] = ()
    """The other NodeSets read (a snapshot holds them all, a live check reads those it selects): a fix changing the
    pool must not shut them out."""
    peers_unread: str = ""
    """When not every NodeSet was read (--nodeset, a namespace), which were, in words ("... only"); else empty."""

    @property
    def name(self) -> str:
        return o.name(self.nodeset)

    @property
    def namespace(self) -> str:
        return o.namespace(self.nodeset)

    @cached_property
    def qualified_name(self) -> str:
        """`namespace/name`, as claims name a NodeSet (asked of every Node judged)."""
        return f"{self.namespace}/{self.name}"

    @property
    def pod_spec(self) -> dict:
        return o.pod_spec(self.nodeset)

    @property
    def pool_names(self) -> set[str]:
        return {p.name for p in self.pools}

    @property
    def pool_nodes(self) -> list[dict]:
        return [n for p in self.pools for n in p.nodes]

    @cached_property
    def pool_node_names(self) -> tuple[str, ...]:
        """The names of `pool_nodes`, in their order."""
        return self.cluster.each(("name",), self.pool_nodes, o.name)

    @cached_property
    def workload(self) -> Workload:
        return Workload.from_template(self.pod_spec)

    @cached_property
    def terms(self) -> list[list[dict]]:
        """The label requirements of each required term (nodeSelector outside the template included)."""
        return nd.binding_terms(self.pod_spec, o.spec(self.nodeset).get("nodeSelector"))

    @cached_property
    def term_nodes(self) -> list[list[dict]]:
        """The pool Nodes each term is judged against. Kubernetes ORs the terms: each, the Nodes of the pools it
        brings (names, or selects), or every pool Node when it brings none; a lone term, every pool Node (it must
        select every pool the NodeSet is meant for)."""
        if len(self.terms) == 1:
            return [self.pool_nodes]
        found = []
        specs = nd.term_specs(self.pod_spec, o.spec(self.nodeset).get("nodeSelector"))
        for raw, term, spec in zip(nd.live_terms(self.pod_spec), self.terms, specs, strict=True):
            named, judge = term_pools(raw), nd.selector(spec)
            mine = [p for p in self.pools if p.name in named or (not named and term and nd.selected_by(p, judge))]
            found.append([n for p in mine for n in p.nodes] if mine else self.pool_nodes)
        return found

    def picked_out(self, node: dict) -> bool:
        """Whether the NodeSet's required affinity leaves the Node out by its name: in every term, a kubernetes.io/hostname
        expression or a metadata.name field with In or NotIn fails it. Those pick Nodes one by one (several NodeSets
        sharing a pool, a NodeSet pinned to some of its Nodes: the runbook endorses both), so the Node not matching is
        the intent, never drift, and no slurmd Pod of this NodeSet is expected there."""
        if not self._name_picks:
            return False
        view = NodeView(node)
        return all(any(not match_expression(e, view.labels) for e in exprs) or any(not match_field(f, view) for f in fields)
                   for exprs, fields in self._name_picks)

    @cached_property
    def _name_picks(self) -> list[tuple[list[dict], list[dict]]]:
        """Each required term's expressions and fields that pick Nodes by name; none unless every term has one (a
        term without one may select any Node: none is left out by name)."""
        picks = []
        for t in required_terms(self.pod_spec) or ():
            if not (t.get("matchExpressions") or t.get("matchFields")):
                continue
            exprs = [e for e in t.get("matchExpressions") or ()
                     if e.get("key") == HOSTNAME_LABEL and e.get("operator") in ("In", "NotIn")]
            fields = [f for f in t.get("matchFields") or ()
                      if f.get("key") == "metadata.name" and f.get("operator") in ("In", "NotIn")]
            if not exprs and not fields:
                return []
            picks.append((exprs, fields))
        return picks

    @cached_property
    def pool_nodes_left_out(self) -> int:
        """The pool's Nodes in service that the NodeSet leaves out by name (`picked_out`): a Node both out of service
        and left out counts among the Nodes in repair only, so the pool's Nodes less both counts take a slurmd Pod."""
        if not self._name_picks:  # none is picked out: no pass over thousands of Nodes
            return 0
        return sum(self.picked_out(n) and not self.out_of_service(n) for n in self.pool_nodes)

    @cached_property
    def service(self) -> Workload:
        """The template judged by the Node's health alone (`nodes.in_service`): what counts a Node in repair."""
        return nd.in_service(self.pod_spec)

    @cached_property
    def pool_nodes_out_of_service(self) -> int:
        """How many pool Nodes are `out_of_service`: the Node's health a fact of each Node, kept between diagnoses, asked
        of the Nodes not feasible alone (a feasible Node is in service: right after a scale-up, every one)."""
        feasible = self.feasible_nodes
        infeasible = [n for n, name in zip(self.pool_nodes, self.pool_node_names, strict=True) if name not in feasible]
        return sum(self.cluster.each(("out of service",), infeasible, lambda n: nd.out_of_service(n, self.service),
                                     (self.nodeset,)))

    def out_of_service(self, node: dict) -> bool:
        """Out of production, not Ready, or cordoned without the template tolerating the cordon. A feasible Node
        passed those checks already (they are the engine's, `feasible_nodes` runs them all)."""
        return o.name(node) not in self.feasible_nodes and nd.out_of_service(node, self.service)

    @cached_property
    def clock(self) -> datetime.datetime | None:
        """The cluster's time when read, at least (`nodes.cluster_time`): without the API server's Date, a walk over
        every object read, made when asked."""
        return nd.cluster_time(self.cluster.snapshot)

    @cached_property
    def grace_clock(self) -> datetime.datetime | None:
        """The cluster's time the graces are judged by (Snapshot.grace_time: it leans late, where `clock` leans
        early, so a doubt ends a grace); None without the API server's Date or a recording's time: no grace."""
        return self.cluster.snapshot.grace_time

    def lingering(self, node: dict) -> list[dict]:
        """The start-up taints the NodeSet does not tolerate that a Node otherwise in service (production, Ready, not
        cordoned) has carried for `nodes.JOIN` or more by the cluster's time (`nodes.left_on`: since the taint went
        on where the API server says when, else since the Node registered): whoever removes one is not running there.
        None younger: the Node may still be joining, or the agent restarting (the wait waits for it)."""
        found = nd.startup_taints(node, self.pod_spec.get("tolerations") or [])
        clock = self.clock
        if not found or clock is None or not passes(self.service, node):
            return []
        created = o.timestamp(o.meta(node).get("creationTimestamp"))
        return [t for t in found if nd.left_on(t, created, clock)]

    @cached_property
    def selection(self) -> Workload:
        """What a Node's labels are judged by to say the NodeSet selects it: the template's scope, the NodeSet's
        spec.nodeSelector outside it included (`nodes.selector`)."""
        return nd.selector(nd.binding_spec(self.pod_spec, o.spec(self.nodeset).get("nodeSelector")))

    @cached_property
    def own_selection(self) -> Workload:
        """The template's own scope (a spec.nodeSelector outside it never reaches the Pods)."""
        return nd.selector(self.pod_spec)

    @cached_property
    def pods(self) -> list[dict]:
        return self.cluster.slurmd_pods(self.nodeset)

    @cached_property
    def placements(self) -> tuple[pd.Placement, ...]:
        """Each slurmd Pod's Node, whether it is Ready and whether it finished, in `pods`' order: facts of each Pod
        alone, kept between diagnoses (Cluster.each), as every pass over thousands of Pods asks them."""
        return self.cluster.each(("placement",), self.pods, pd.placement)

    @cached_property
    def not_ready(self) -> list[dict]:
        """The slurmd Pods placed on a Node that are not Ready (and not finished)."""
        return [p for p, (node, ready, done) in zip(self.pods, self.placements, strict=True) if node and not ready and not done]

    @cached_property
    def starting(self) -> dict[str, datetime.datetime]:
        """The Pods `not_ready` still in their start-up grace, by name, each with when it ends (pods.starting_until, by
        the cluster's time): starting, no failure yet. Judged at each diagnosis (the clock moves), never kept."""
        clock = self.grace_clock if self.not_ready else None
        return {o.name(p): until for p in self.not_ready if (until := pd.starting_until(p, clock)) is not None}

    @cached_property
    def not_ready_said(self) -> tuple[str, ...]:
        """`slurm-cpu-020-007 CrashLoopBackOff (6 restarts)`, `1 starting`, `1 being created`: the slurmd Pods READY
        does not count yet, each failing one by name, those starting or being created counted."""
        failing = [f"{o.name(p)} {pd.state(p)}" for p in self.not_ready if o.name(p) not in self.starting]
        return (*failing, *([f"{len(self.starting):,} starting"] if self.starting else []),
                *([f"{self.being_created:,} being created"] if self.being_created else []))

    @cached_property
    def size(self) -> int | None:
        """The slurmd Pods the NodeSet should run (nodeset.effective: DESIRED, at most FEASIBLE). Without a status
        (the operator never reconciled the NodeSet), DESIRED is what the controller would set: `replicas`, else
        sunkcheck's FEASIBLE, for a NodeSet the API server stored (a uid), not a --values prediction."""
        reported = self.counts.desired
        deployed = bool(o.meta(self.nodeset).get("uid"))
        want = reported if reported is not None or not deployed else ns.desired(ns.replicas(self.nodeset),
                                                                                self.computed_feasible)
        return ns.effective(want, self.feasible)

    @cached_property
    def on_nodes(self) -> int | None:
        """The Nodes the NodeSet's unfinished slurmd Pods run on (None when the Pods were not read)."""
        return None if self.cluster.snapshot.pods is None else \
            len({node for node, _, done in self.placements if node and not done})

    @cached_property
    def being_created(self) -> int:
        """How many of the slurmd Pods the NodeSet falls short of (`size` above CURRENT or `on_nodes`) SUNK is still
        creating: one per `creating` Node at most, so a Pod missing on a Node usable for longer is still missing."""
        known = [n for n in (self.counts.current, self.on_nodes) if n is not None]
        short = self.size - min(known) if self.size is not None and known else 0
        return min(len(self.creating), short) if short > 0 else 0

    @cached_property
    def creating(self) -> dict[str, datetime.datetime]:
        """The feasible Nodes running no slurmd Pod of the NodeSet that turned Ready moments ago, by name, each with
        when the grace for creating its Pod ends (pods.creating_until, by the cluster's time). Judged at each
        diagnosis (the clock moves), never kept."""
        idle = sorted(n for n in self.feasible_nodes if not self.verdict(n).placed)
        clock = self.grace_clock if idle else None
        return {n: until for n in idle if (until := pd.creating_until(self.cluster.nodes[n], clock)) is not None}

    @cached_property
    def graced_until(self) -> tuple[datetime.datetime, ...]:
        """When each grace the diagnosis gave ends (a slurmd Pod `starting`, a Node whose slurmd Pod is being created,
        `creating`, where some is `being_created` or where the status's FEASIBLE counts fewer Nodes than sunkcheck finds:
        slurmd-pods-missing judges those idle past the grace), by `clock`, which the wait and serve advance: each is
        judged by `grace_clock`, which leads it by as much as the recent Dates differ, so is moved back by that lead."""
        reported = self.counts.feasible
        graced = self.being_created or (reported is not None and self.computed_feasible > reported)
        ends = [*self.starting.values(), *(self.creating.values() if graced else ())]
        lead = self.grace_clock - self.clock if ends and self.grace_clock and self.clock else datetime.timedelta()
        return tuple(sorted(until - lead for until in ends))

    @cached_property
    def on_deleted_nodes(self) -> list[str]:
        """The Node each slurmd Pod bound to one that no longer exists names, in `pods`' order: a live read reads
        every Pod's Node by name, so one not found was deleted (its Pods not garbage-collected yet). None when the
        Nodes were not read: then no Node is known deleted."""
        if self.cluster.snapshot.nodes is None:
            return []
        return [node for node, _, _ in self.placements if node and node not in self.cluster.nodes]

    @cached_property
    def hosts(self) -> tuple[dict | None, ...]:
        """Each slurmd Pod's Node (None while Pending, or a Node not read), in `pods`' order."""
        nodes = self.cluster.nodes
        return tuple(nodes.get(node) if node else None for node, _, _ in self.placements)

    @cached_property
    def own_pods(self) -> set[int]:
        """The slurmd Pods by identity: the Cluster's indexes hold the snapshot's Pod objects, and a snapshot
        holds each Pod once (a second one of the same name is refused at load, live or replayed)."""
        return {id(p) for p in self.pods}

    @cached_property
    def verdicts(self) -> dict[str, NodeVerdict]:
        """Every Node of the cluster judged for this NodeSet, with every reason."""
        return {name: self.verdict(name) for name in self.cluster.nodes}

    def verdict(self, name: str) -> NodeVerdict:
        """One Node's full verdict (computed once)."""
        if name not in self._verdicts:
            self._verdicts[name] = self.judge(self.workload, self.cluster.nodes[name])
        return self._verdicts[name]

    @cached_property
    def _verdicts(self) -> dict[str, NodeVerdict]:
        return {}

    @cached_property
    def feasible_nodes(self) -> set[str]:
        """The Nodes this NodeSet could use; a short-circuiting pass, since most Nodes fail early."""
        # a fact of the NodeSet (its template, its Pods by identity), each Node and the Pods on it
        found = self.cluster.per_node(("feasible",), (self.nodeset,), self._feasible)
        for name, verdict in found.items():
            if verdict is not None:  # nothing failed, so this is the complete verdict too
                self._verdicts.setdefault(name, verdict)
        return {name for name, verdict in found.items() if verdict is not None}

    def _feasible(self, node: dict) -> NodeVerdict | None:
        verdict = self._verdicts.get(o.name(node)) or self.judge(self.workload, node, first_only=True)
        return verdict if verdict.feasible else None

    @cached_property
    def misscheduled_pods(self) -> list[dict]:
        """The slurmd Pods on Nodes the NodeSet now refuses for a mismatch: the controller counts them MISSCHEDULED,
        and they run on (a NoSchedule taint or an affinity change evicts nothing). Not those in `repair_pods`."""
        return [p for p in self._refused_pods if not self._for_health[o.node_name(p) or ""]]

    @cached_property
    def repair_pods(self) -> list[dict]:
        """The slurmd Pods on Nodes CKS took out of production for repair, refused for that alone (the inherited
        state expression): the controller counts them MISSCHEDULED too, but the Node's health is the nodes step's,
        and CKS returns the Node; nothing in the NodeSet or on the Node is to change."""
        return [p for p in self._refused_pods if self._for_health[o.node_name(p) or ""]]

    @cached_property
    def _for_health(self) -> dict[str, bool]:
        """_refused_for_health of each Node a refused Pod runs on: a fact of the NodeSet and the Node, kept per Node."""
        hosts = [self.cluster.nodes[o.node_name(p) or ""] for p in self._refused_pods]
        return self.cluster.per_node(("refused for health",), (self.nodeset,),
                                     lambda n: self._refused_for_health(o.name(n)), hosts)

    @cached_property
    def _refused_pods(self) -> list[dict]:
        # a fact of the NodeSet and each Pod's Node: judged again for the Nodes replaced alone
        return list(itertools.compress(self.pods, self.cluster.each(("refused",), self.hosts, self._refuses,
                                                                    (self.nodeset,))))

    def _refuses(self, node: dict | None) -> bool:
        return node is not None and bool(self.refusals(o.name(node)))

    def _refused_for_health(self, name: str) -> bool:
        """Whether the NodeSet would no longer refuse Node `name` once back in production."""
        back = nd.in_production(self.cluster.nodes[name])
        return not [r for r in evaluate(self.staying, back, []).reasons if r.check in ("affinity", "taint")]

    @cached_property
    def staying(self) -> Workload:
        return Workload.staying(self.pod_spec)

    def refusals(self, name: str) -> list[Reason]:
        """Why the NodeSet refuses Node `name` for a Pod already there: its required affinity, a taint it does
        not tolerate. Not a cordon (it keeps new Pods off, no more), nor the Node's health, its not-ready taint
        included (the nodes step's)."""
        known = self._verdicts.get(name)
        if known is not None and known.feasible:  # it passed the template's affinity and taints, fewer tolerations
            return []
        return [r for r in evaluate(self.staying, self.cluster.nodes[name], []).reasons if r.check in ("affinity", "taint")]

    def neighbours(self, node: dict) -> tuple[list[dict], str | None, bool]:
        return neighbours(self.cluster, self.own_pods, self.qualified_name, node)

    def judge(self, workload: Workload, node: dict, first_only: bool = False) -> NodeVerdict:
        """One Node for `workload` (this NodeSet's template, or a variant of it), as the controller would."""
        others, claimed_by, placed = self.neighbours(node)
        judge = lambda: evaluate(workload, node, others, placed=placed, claimed_by=claimed_by, first_only=first_only)  # noqa: E731
        if self.cluster.judged is None:
            return judge()
        return self.cluster.judged.verdict(workload, node, others, (placed, claimed_by, first_only), judge)

    def explain(self, node: dict) -> list[Check]:
        others, claimed_by, _ = self.neighbours(node)
        return explain_node(self.workload, node, others, claimed_by)

    def selects_pool(self, pool: Pool) -> bool:
        """Whether the required affinity selects the pool: its nodeLabels and name, or one of its Nodes, meet it."""
        return nd.selected_by(pool, self.own_selection)

    @cached_property
    def terms_without_selector(self) -> list[list[dict]]:
        """The template's own label requirements (a spec.nodeSelector outside it never reaches the Pods)."""
        return nd.binding_terms(self.pod_spec)

    @cached_property
    def selected_pools(self) -> frozenset[str]:
        """The existing pools the NodeSet selects now: as much meant for it as those said to be (--pool, the
        annotation), so a fix that binds by name keeps them beside the ones it adds."""
        return frozenset(p.name for p in self.pools if (p.obj is not None or p.nodes) and self.selects_pool(p))

    @cached_property
    def exclusions(self) -> list[tuple[Pool, list[dict], Workload]]:
        """The expected pools the required affinity shuts out (none of their Nodes matches it), each with the
        requirements none of its Nodes meets and the template without them: pool-split's capacity."""
        found = []
        own = self.terms_without_selector
        for pool_name in sorted(self.expected):
            pool = self.cluster.pool(pool_name)
            if not pool.nodes or self.selects_pool(pool):
                continue  # a pool the NodeSet does select: Nodes failing it drifted (pool-nodes-unusable)
            shut = nd.relied_on(own, nd.uncarried_by(pool.nodes))
            if shut:
                found.append((pool, shut, Workload.from_template(without_keys(self.pod_spec, {e["key"] for e in shut}))))
        return found

    @cached_property
    def excluded(self) -> list[tuple[Pool, list[dict], list[str]]]:
        """Each shut-out pool, its excluding requirements and the Nodes that would be feasible without them,
        judged like any Node (a squatting Pod, a cordon or another NodeSet's claim still counts)."""
        return [(pool, shut, [o.name(n) for n in pool.nodes if self.judge(relaxed, n).feasible])
                for pool, shut, relaxed in self.exclusions]

    @cached_property
    def all_slurm_nodes(self) -> dict[str, slurm.SlurmNode] | None:
        """Every node `sinfo` listed, or None when Slurm was not asked."""
        view = self.cluster.snapshot.sinfo
        return None if view is None else slurm.parse(view.text, view.format)

    @cached_property
    def slurm_nodes(self) -> dict[str, slurm.SlurmNode] | None:
        """The Slurm nodes of this NodeSet: its partition's, or those named like its Pods."""
        if self.all_slurm_nodes is None:
            return None
        prefix = o.spec(self.nodeset).get("podNamePrefix") or self.name
        return slurm.nodeset_nodes(self.all_slurm_nodes, prefix, {o.name(p) for p in self.pods}, self.partition)

    def kube_nodes_of(self, slurm_name: str) -> tuple[str, ...]:
        """The Kubernetes Node behind a Slurm node: its Pod's Node, else the Nodes whose IP ends in the name's two
        octets (`-012-006` is x.x.12.6). More than one is an ambiguous name, never settled by a guess."""
        pod = self.pods_by_name.get(slurm_name)
        if pod is not None and (node := o.node_name(pod)):
            return (node,)
        match = re.search(r"-(\d{3})-(\d{3})$", slurm_name)
        return self.cluster.nodes_by_ip_tail.get((int(match.group(1)), int(match.group(2))), ()) if match else ()

    @cached_property
    def pods_by_name(self) -> dict[str, dict]:
        """Looked up for every Slurm node: when slurmctld is down, thousands."""
        return {o.name(p): p for p in self.pods}

    @property
    def counts(self) -> NodeSetColumns:
        """The status's columns, none while the status describes an older spec (see `nodeset.reconciled_counts`)."""
        return ns.reconciled_counts(self.nodeset)

    @property
    def feasible(self) -> int:
        """FEASIBLE as the controller reports it; sunkcheck's own count when the status lacks it."""
        reported = self.counts.feasible
        return reported if reported is not None else self.computed_feasible

    @property
    def computed_feasible(self) -> int:
        return len(self.feasible_nodes)

    @property
    def events(self) -> list[dict]:
        """Events on the pools, on the NodeSet and on its Pods."""
        found = [e for p in self.pools for e in p.events]
        found += self.cluster.events_about("NodeSet", self.name, self.namespace)
        about = {name for kind, namespace, name in self.cluster.events if kind == "Pod" and namespace == self.namespace}
        if about:  # thousands of Pods, a few with Events: asked of those alone
            for name in self.cluster.each(("name",), self.pods, o.name):
                if name in about:
                    found += self.cluster.events_about("Pod", name, self.namespace)
        return found

    def once(self, make: Callable[[Binding], V]) -> V:
        """make(self), made once for this Binding: a fact a row derives that another row asks for too (each a pure
        function of the Binding, so one diagnosis needs it once)."""
        if make not in self._made:
            self._made[make] = make(self)
        return self._made[make]

    @cached_property
    def _made(self) -> dict[Callable[[Binding], Any], Any]:
        return {}


def analyze(cluster: Cluster, nodeset: dict, pools: list[str] | None = None, partition: str | None = None,
            peers: tuple[dict, ...] = (), peers_unread: str = "") -> Binding:
    """Judge one NodeSet; `pools` (the --pool flag) are the pools it is meant for, else the Node Pools whose
    sunkcheck.io/nodesets annotation names it; `peers` the other NodeSets read, `peers_unread` (when not every
    NodeSet was read) which were."""
    expected, how = (pools, "named by --pool") if pools else (
        [name for name, p in cluster.nodepools.items() if o.meant_for(p, nodeset)], f"annotated {o.NODESETS_ANNOTATION}")
    names, source = discover_pools(cluster, nodeset, frozenset(expected))
    if expected:  # the pools --pool names said as its, not the NodeSet's: it may name another NodeSet's
        told = f"{', '.join(sorted(expected))}: {how}" if pools else f"meant for {', '.join(sorted(expected))}: {how}"
        source = f"{source}; {told}" if names else how
    return Binding(cluster, nodeset, tuple(cluster.pool(n) for n in sorted(set(names) | set(expected))), source,
                   partition, frozenset(expected), peers, peers_unread)


def without_keys(pod_spec: dict, keys: set[str]) -> dict:
    """The template with every requirement on `keys` removed: nodeSelector entries and required
    expressions (terms left empty dropped)."""
    spec = copy.deepcopy(pod_spec)
    for key in keys & set(spec.get("nodeSelector") or {}):
        del spec["nodeSelector"][key]
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return spec
    terms = []
    for term in required.get("nodeSelectorTerms") or ():
        term["matchExpressions"] = [e for e in term.get("matchExpressions") or () if e.get("key") not in keys]
        if term["matchExpressions"] or term.get("matchFields"):
            terms.append(term)
    if terms:
        required["nodeSelectorTerms"] = terms
    else:
        del node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]
    return spec


SUMMARY_READS = (Read.POOL_NODES, Read.AFFINITY_NODES, Read.POD_HOSTS, Read.PODS_ON_USABLE_NODES, Read.PODS_ON_POOL_NODES)
"""What the summaries and a result's Nodes (pool Nodes, Pod hosts, feasible Nodes) read, as `Rule.reads` declares."""


def summaries(b: Binding) -> dict[str, Summary]:
    """Each runbook step's one-line summary and counts, by step name."""
    nodes_read = b.cluster.snapshot.nodes is not None
    return {
        "nodepool": np.summary(b.pools, nodes_read),
        "nodes": nd.summary(b.pools, b.terms, b.term_nodes, b.service, b.cluster.each, lambda: b.clock),
        "events": ev.summary(b.events),
        "nodeset": ns.summary(b.nodeset, len(b.pool_nodes), b.pool_nodes_out_of_service,
                              b.pool_nodes_left_out, b.computed_feasible, b.being_created, nodes_read),
        "pods": pd.summary(b.pods, b.pool_names, b.cluster.pool_by_node, len(b.misscheduled_pods), len(b.repair_pods),
                           sum(b.cluster.each(("unlabelled", b.name), b.pods, lambda p: pd.unlabelled(p, b.name))),
                           b.placements, len(b.starting), b.on_deleted_nodes, nodes_read),
        "sinfo": slurm_summary(b),
    }


def slurm_summary(b: Binding) -> Summary:
    """A Slurm node down, drained or not responding shows a failure."""
    nodes = b.slurm_nodes or {}
    healthy = sum(n.healthy for n in nodes.values())
    where = f"in partition {b.partition}" if b.partition else f"named like the Pods of {b.name}"
    ready = b.counts.ready
    return Summary(f"{counted(len(nodes), 'Slurm node')} {where}: {healthy} usable, {len(nodes) - healthy} down, drained or not "
                   f"responding; NodeSet READY {ns.shown(ready)}",
                   SlurmCounts(len(nodes), healthy), healthy < len(nodes))
