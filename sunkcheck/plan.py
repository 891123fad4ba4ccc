"""Which Nodes and Pods a live check reads, planned from the reads its rules declare (`Rule.reads`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from sunkcheck import objects as o
from sunkcheck.analyze.binding import Binding, analyze
from sunkcheck.analyze.discovery import discover_pools, named_pools, names_every_pool
from sunkcheck.analyze.cluster import Cluster, Judged, NodeIndex
from sunkcheck.analyze.daemonset import pinned_node
from sunkcheck.analyze.feasibility import PLACEMENT_CHECKS, Workload, evaluate, passes, required_terms
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.analyze.nodes import (Each, afresh, binding_terms, carried, keeps_off, moved_hand_taints, positive,
                                     relied_reserved_taints, uncarried_reserved)
from sunkcheck.analyze.nodeset import reconciled_counts
from sunkcheck.collect.nodes import requirement, term_selector
from sunkcheck.reads import Read
from sunkcheck.snapshot import Snapshot
from sunkcheck.symptoms import Rule
from sunkcheck.symptoms.nodeset._shared import absent_pools
from sunkcheck.symptoms.notes import runs_a_workload, same_type_pools

T = TypeVar("T")


def _none_yet(nodeset: dict, nodepools: list[dict], pools: tuple[str, ...]) -> bool:
    """Whether every pool the NodeSet names or is meant for exists and reports no Node (CURRENT 0): a scale-up from
    none, where FEASIBLE 0 weighs no Node (settled checks it on the Nodes read)."""
    by_name = {o.name(p): p for p in nodepools}
    bound = set(named_pools(o.pod_spec(nodeset))) | set(pools or (n for n, p in by_name.items() if o.meant_for(p, nodeset)))
    return bool(bound) and all(name in by_name and o.status(by_name[name]).get("currentNodes") == 0 for name in bound)


def declared(rules: Iterable[Rule], *more: Iterable[Read]) -> frozenset[Read]:
    """Every read the rules (and the `more` declarations: summaries, listed Nodes) rely on."""
    return frozenset[Read]().union(*(r.reads or () for r in rules), *more)


@dataclass(frozen=True)
class Plan:
    """The reads of one check; a check reads the union of what its rows and summaries declare."""

    reads: frozenset[Read]
    slurm: bool = False
    """Slurm is asked (--login)."""
    judged: Judged | None = field(default=None, compare=False)
    """Per-Node verdicts kept from the last plan of the same objects (serve: a change to one Node of thousands
    judges that Node again); None: every Node judged afresh."""
    eager: bool = True
    """Every Node at once where the workloads say a read needs them (FEASIBLE 0 on a pool reporting Nodes): a check
    saves a round trip. Not eager (--wait's watches): the Nodes selected first, and every Node beside them only
    when they leave a read unsettled (settled), so that a status trailing the Nodes a moment lists nothing whole."""

    @property
    def every_node(self) -> bool:
        """Every Node, whatever the workloads say: read at once."""
        return Read.EVERY_NODE in self.reads or (self.slurm and Read.NODES_BY_IP_WHEN_SLURM in self.reads)

    def selectors(self, nodesets: list[dict], nodepools: list[dict] | None,
                  pools: tuple[str, ...] = ()) -> list[str] | None:
        """Label selectors whose union holds every Node the reads ask for; None: read them all.

        A Node outside them fails every NodeSet's required affinity and is in none of the pools they name or
        are meant for, so no declared read reaches it. On a 5,000-Node cluster this reads the pool, as the
        runbook's `kubectl get nodes -l` does; other pools of its instance type only matter when they are
        meant for it.
        """
        if self.every_node or not nodesets or nodepools is None:
            return None
        wanted: set[tuple[str | None, ...]] = set()
        for nodeset in nodesets:
            found = self._wanted(nodeset, nodepools, pools)
            if found is None:
                return None
            wanted |= found
        if any(None in w for w in wanted):
            return None
        # a selector that adds requirements to another selects a subset of it: it reads nothing new
        return sorted(",".join(r for r in w if r is not None) for w in wanted if not any(set(v) < set(w) for v in wanted))

    def _wanted(self, nodeset: dict, nodepools: list[dict], pools: tuple[str, ...]) -> set | None:
        """One NodeSet's selectors, as requirement tuples; None when a read needs every Node."""
        spec = o.pod_spec(nodeset)
        if (self.eager and Read.EVERY_NODE_WHEN_FEASIBLE_0 in self.reads and not reconciled_counts(nodeset).feasible
                and not _none_yet(nodeset, nodepools, pools)):
            return None
        wanted: set[tuple[str | None, ...]] = set()
        if Read.POOL_NODES in self.reads:
            expected = pools or [o.name(p) for p in nodepools if o.meant_for(p, nodeset)]
            bound = sorted(set(named_pools(spec)) | set(expected))
            if not bound:
                return None
            wanted.add((requirement(o.POOL_LABEL, "in", bound),))
        if Read.AFFINITY_NODES in self.reads:
            if required_terms(spec) is None:
                return None
            # at least the Nodes pool discovery's terms match (its Nodes in repair included; the nodeSelector outside
            # the template would only narrow them): a pool found in a replay is found live
            terms = [term_selector(t) for t in binding_terms(spec)]
            if None in terms:
                return None
            wanted |= {t for t in terms if t is not None}
        return wanted

    def more_pools(self, nodesets: list[dict], nodepools: list[dict] | None, pools: tuple[str, ...], own: list[dict],
                   found: list[dict]) -> str | None:
        """A selector for the pools a NodeSet is found to use from the Nodes read (their labels, its tolerations,
        its Pods' hosts) beyond those it names or is meant for, whose other Nodes are unread; None if none."""
        # the pools a NodeSet's terms name and those meant for it are read already: only one with a term that
        # names none can be found to use others (and the Nodes need indexing only then)
        unnamed = [ns for ns in nodesets if not names_every_pool(o.pod_spec(ns))]
        if Read.POOL_NODES not in self.reads or nodepools is None or not unnamed:
            return None
        cluster = Cluster.of(Snapshot(nodepools=tuple(nodepools), nodes=tuple(found), pods=tuple(own)), self.judged)
        extra: set[str] = set()
        for nodeset in unnamed:
            b = analyze(cluster, nodeset, list(pools) or None)
            extra |= {p.name for p in self._pools(b)} - b.expected - set(named_pools(o.pod_spec(nodeset)))
        return requirement(o.POOL_LABEL, "in", sorted(extra)) if extra else None

    def carriers(self, nodesets: list[dict], selected: list[dict]) -> list[str]:
        """Label selectors, one per reserved key the NodeSets rely on that no selected Node carries (the pool-name
        label while the pool has no Node yet): one Node each selects settles "a reserved key no Node carries" as
        every Node would, and none leaves it to them."""
        return sorted(s for key in self._uncarried(nodesets, selected) if (s := requirement(key, "", [])))

    def _uncarried(self, nodesets: list[dict], selected: list[dict]) -> set[str]:
        """The reserved keys the NodeSets rely on that none of `selected` carries, where that read is declared."""
        if Read.RESERVED_KEY_CARRIERS not in self.reads:
            return set()
        return {e["key"] for ns in nodesets
                for e in uncarried_reserved(binding_terms(o.pod_spec(ns), o.spec(ns).get("nodeSelector")), selected)}

    def settled(self, nodesets: list[dict], selected: list[dict], nodepools: list[dict] | None = None,
                pools: tuple[str, ...] = (), own: list[dict] | None = None) -> bool:
        """Whether the selected Nodes (with the carriers found) settle every read; otherwise read every Node after
        all. "A reserved key no Node carries" is settled when they carry every reserved key the NodeSets rely on;
        "every Node when FEASIBLE is 0" when no-feasible-nodes has no Node to judge (known from the Node Pools,
        `pools` given with --pool and the own Pods; without the Node Pools, never)."""
        return not self._uncarried(nodesets, selected) and not self._judges_nodes(nodesets, selected, nodepools, pools,
                                                                                   own)

    def _judges_nodes(self, nodesets: list[dict], selected: list[dict], nodepools: list[dict] | None,
                      pools: tuple[str, ...], own: list[dict] | None) -> bool:
        """Whether a NodeSet at FEASIBLE 0 (or unreported) has Nodes for no-feasible-nodes to judge against every
        other (the scheduler's 0/N line). None when its pools are known, all exist and none has a Node yet (a
        scale-up from none): the selected Nodes hold every Node of the pools (POOL_NODES), and a Node outside them
        joins none."""
        zero = [ns for ns in nodesets if not reconciled_counts(ns).feasible]
        if Read.EVERY_NODE_WHEN_FEASIBLE_0 not in self.reads or not zero:
            return False
        if Read.POOL_NODES not in self.reads or nodepools is None:
            return True
        cluster = Cluster.of(Snapshot(nodepools=tuple(nodepools), nodes=tuple(selected), pods=tuple(own or ())),
                             self.judged)
        return any(not b.pools or b.pool_nodes or absent_pools(b)
                   for b in (analyze(cluster, ns, list(pools) or None) for ns in zero))

    def pod_nodes(self, workloads: list[dict], nodes: list[dict], own: list[dict], nodepools: list[dict] | None,
                  pools: tuple[str, ...]) -> set[str]:
        """The Nodes whose other Pods the reads ask for: those Pods can change a verdict by their resources."""
        # by namespace too: two tenants' NodeSets may share a name, and one's Pod says nothing of the other's Node
        placed = self._kept(("placed",), own, lambda: _placed(own))
        relevant: set[str] = set()
        if Read.PODS_ON_PENDING_DAEMON_NODES in self.reads:
            relevant |= {n for p in own if o.status(p).get("phase") == "Pending" and (n := pinned_node(p))}
        if not self.reads & {Read.PODS_ON_USABLE_NODES, Read.PODS_ON_POOL_NODES, Read.PODS_ON_UNEVEN_POOL_NODES,
                             Read.PODS_ON_EVERY_NODE_WITHOUT_A_POOL, Read.PODS_ON_SHUT_OUT_NODES,
                             Read.PODS_ON_NODES_LACKING_A_HAND_TAINT, Read.PODS_ON_NODES_A_MOVED_RESERVED_TAINT_REACHES}:
            return relevant
        cluster = Cluster.of(Snapshot(nodepools=None if nodepools is None else tuple(nodepools), nodes=tuple(nodes),
                                      pods=tuple(own)), self.judged)
        for w in workloads:
            b = analyze(cluster, w, list(pools) or None)
            relevant |= self._weighed(b, nodes) - placed.get((o.namespace(w), o.name(w)), set())
            relevant |= self._beside_its_pods(b)
        return relevant

    def _kept(self, how: tuple, objects: list[dict], make: Callable[[], T]) -> T:
        """make(), or its answer kept in `judged` for the same objects (Judged.kept)."""
        return make() if self.judged is None else self.judged.kept(how, objects, make)

    def _weighed(self, b: Binding, nodes: list[dict]) -> set[str]:
        """The Nodes whose Pods can change one NodeSet's verdict by the resources they hold, less its own Pods' Nodes
        (the caller's): none of those its template can be placed on when its status already counts each feasible."""
        placement = Workload(b.pod_spec, {}, PLACEMENT_CHECKS)  # only a Node it could be placed on at all
        # Pods aside, a fact of the template and each Node: judged again for the Nodes that changed alone
        placeable = b.cluster.per_node(("placeable",), (b.nodeset,), lambda n: self._placeable(placement, n))
        usable = {name for name, ok in placeable.items() if ok}  # the Cluster's Nodes are `nodes`
        settled = usable if self.settles_resources(b.nodeset, len(usable)) else set()
        weighed = usable - settled if Read.PODS_ON_USABLE_NODES in self.reads else set()
        if Read.PODS_ON_POOL_NODES in self.reads:
            weighed |= {o.name(n) for p in self._pools(b) for n in p.nodes} - settled
        if Read.PODS_ON_EVERY_NODE_WITHOUT_A_POOL in self.reads and not b.pools and not b.counts.feasible:
            weighed |= {o.name(n) for n in nodes}
        return weighed

    def _placeable(self, workload: Workload, node: dict) -> bool:
        """Whether `workload` passes every check on `node`, Pods aside (kept in `judged`, where there is one; else no
        verdict is built: a check asks it of thousands of Nodes)."""
        if self.judged is None:
            return passes(workload, node)
        return self.judged.verdict(workload, node, [], ("plan",), lambda: evaluate(workload, node, [], first_only=True)
                                   ).feasible

    def _beside_its_pods(self, b: Binding) -> set[str]:
        """The Nodes whose Pods the reads ask for whether or not the NodeSet runs a Pod there: those of the pools its
        affinity shuts out that it could use (pool-split), those a hand taint set in the pool's spec would reach, and
        every Node of a pool its Nodes do not select alike (a workload beside its Pod makes the pool another team's)."""
        found: set[str] = set()
        pools = self._pools(b)
        if Read.PODS_ON_SHUT_OUT_NODES in self.reads:
            found |= {o.name(n) for p, _, relaxed in b.exclusions for n in p.nodes
                      if self._placeable(relaxed, n)}
        if Read.PODS_ON_NODES_LACKING_A_HAND_TAINT in self.reads:  # whatever Pods they run, the NodeSet's beside
            found |= {o.name(n) for p in pools for taint, _ in moved_hand_taints(p, b.pod_spec, b.cluster.each).values()
                      for n in keeps_off(p, taint)}
        if Read.PODS_ON_UNEVEN_POOL_NODES in self.reads:
            found |= {o.name(n) for p in pools if not self.alike(p, b.terms, b.cluster.each) for n in p.nodes}
        if Read.PODS_ON_NODES_A_MOVED_RESERVED_TAINT_REACHES in self.reads:
            tolerations = b.pod_spec.get("tolerations") or []
            found |= {o.name(n) for p in pools if relied_reserved_taints(p, b.terms, tolerations) for n in p.nodes}
        return found

    @staticmethod
    def _pools(b: Binding) -> list[Pool]:
        """The NodeSet's pools, and those it may be found to use once the Pods planned are read: judged from its own
        Pods alone, a pool reached by chance (an instance type) that takes none of them is left out only while another
        takes some, and the other Pods may fill that one too (then every pool reached is its own)."""
        more = set(discover_pools(b.cluster, b.nodeset, b.expected, full=True)[0]) - b.pool_names
        return [*b.pools, *map(b.cluster.pool, sorted(more))]

    def settles_resources(self, nodeset: dict, usable: int) -> bool:
        """Whether the NodeSet's own status says no other Pod keeps it off a Node it can be placed on: current (its
        observedGeneration is its generation) and FEASIBLE equal to the `usable` Nodes, with every Node its affinity
        matches read (so none it counts is unread). The controller weighs the Pods on every Node; right after a
        scale-up that spares reading the Pods of thousands of Nodes that run no slurmd Pod yet."""
        feasible = o.status_counts(nodeset)["feasible"]
        return (bool(self.reads & {Read.AFFINITY_NODES, Read.EVERY_NODE}) and feasible == usable
                and Plan.current(nodeset))

    @staticmethod
    def current(nodeset: dict) -> bool:
        """Whether the status describes the latest spec: observedGeneration is the generation (a status without either
        is not known to be current)."""
        generation = o.meta(nodeset).get("generation")
        return isinstance(generation, int) and o.status(nodeset).get("observedGeneration") == generation

    @staticmethod
    def alike(pool: Pool, terms: list[list[dict]], each: Each = afresh) -> bool:
        """Whether each requirement the binding may rely on a label for is met by all the pool's Nodes or by none
        (`each` makes the passes over them: serve keeps them)."""
        return all(carried(e, pool.nodes, each) in (0, len(pool.nodes)) for e in positive(terms))

    def probes(self, workloads: list[dict], nodes: list[dict], own: list[dict], nodepools: list[dict] | None,
               pools: tuple[str, ...]) -> list[str]:
        """The other Node Pools of the instance type of the workloads' pools (found from the Nodes read) whose Nodes
        and Pods the idle-pool note weighs: one Pod of a workload (`in_use`) on any Node makes a pool someone's, so
        the collector reads the Pods on one Node of each, and the pool's Nodes and their Pods only when that one
        runs none (a pool in use costs one request, however big)."""
        if Read.SAME_TYPE_POOLS not in self.reads or nodepools is None:
            return []
        cluster = Cluster.of(Snapshot(nodepools=tuple(nodepools), nodes=tuple(nodes), pods=tuple(own)), self.judged)
        return sorted({p.name for w in workloads for p in same_type_pools(analyze(cluster, w, list(pools) or None))})

    def index(self, nodes: list[dict]) -> NodeIndex:
        """The Nodes by name and by pool, in the server's order (by name): kept in `judged`, where a change
        re-indexes only the Nodes it replaced."""
        if self.judged is None:
            return NodeIndex.of(nodes, ())
        last = self.judged.last("nodes")
        return self.judged.kept(("nodes",), (*nodes, None), lambda: NodeIndex.of(nodes, (), last))

    @staticmethod
    def in_use(pod: dict) -> bool:
        return runs_a_workload(pod)

    def idle_probe(self, names: list[str], known: list[dict], found: list[dict],
                   firsts: Callable[[list[str]], dict[str, str]], pods_on: Callable[[set[str]], list[dict] | None],
                   busy: Collection[str | None] = ()) -> tuple[dict[str, str], list[dict] | None, list[str]]:
        """The idle-pool probe of the pools `names` (probes), for the collector and serve alike: a pool the Nodes
        `known` and Pods `found` show in use needs nothing more; of each other, `firsts` gives the first Node (in
        the server's order) and `pods_on` the Pods on those Nodes (None: not read). `busy`: Nodes known to run a
        workload already (serve keeps its own Pods' hosts). Returns the Node probed of each pool, the Pods probed,
        and the pools whose probed Node runs no workload: their Nodes and Pods are read."""
        used = {*busy, *(o.node_name(p) for p in found if self.in_use(p))}
        in_use = {o.pool_of(n) for n in known if o.name(n) in used}
        first = firsts([name for name in names if name not in in_use])
        probe = pods_on(set(first.values()))
        used |= {o.node_name(p) for p in probe or () if self.in_use(p)}
        return first, probe, sorted(name for name, node in first.items() if node not in used)


def _placed(pods: list[dict]) -> dict[tuple[str, str | None], set[str | None]]:
    """The Nodes the Pods run on, by their namespace and instance label (the NodeSet they are named for)."""
    found: dict[tuple[str, str | None], set[str | None]] = {}
    for p in pods:
        found.setdefault((o.namespace(p), o.labels(p).get(o.INSTANCE_LABEL)), set()).add(o.node_name(p))
    return found
