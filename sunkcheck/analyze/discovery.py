"""Which Node Pools a NodeSet is meant for, before any Binding exists: the pools its required affinity names or
selects (less those reached only by chance), else those whose nodeTaints it tolerates, else those its Pods run on."""

from __future__ import annotations

from sunkcheck import objects as o
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze import pods as pd
from sunkcheck.analyze.cluster import Cluster
from sunkcheck.analyze.feasibility import Workload, evaluate, required_terms, tolerates, untolerated_taints
from sunkcheck.analyze.nodepool import Pool


def discover_pools(cluster: Cluster, nodeset: dict, expected: frozenset[str] = frozenset(),
                   full: bool = False) -> tuple[list[str], str]:
    """Which Node Pool(s) the NodeSet is meant for, from the strongest evidence down: its required affinity, the
    pools whose nodeTaints it tolerates, the pools its Pods run on. `expected`: the pools said to be meant for it;
    `full`: every Node without its Pod taken as full (by_chance), as the other Pods not read yet may make it."""
    pod_spec = o.pod_spec(nodeset)
    return (by_affinity(cluster, nodeset, expected, full) or by_tolerations(cluster, pod_spec) or by_hosts(cluster, nodeset)
            or ([], "not found: the NodeSet names no pool, selects no pool label and has no Pods (pass --pool)"))


Found = tuple[list[str], str]
"""Pool names, and how they were found in words."""


def by_affinity(cluster: Cluster, nodeset: dict, expected: frozenset[str], full: bool = False) -> Found | None:
    """Kubernetes ORs the required terms, so each term brings its own: the pools it names, else those whose Nodes or
    nodeLabels meet it, less the pools it reaches only by chance (`by_chance`)."""
    pod_spec, outside = o.pod_spec(nodeset), o.spec(nodeset).get("nodeSelector") or {}
    named, selected, deliberate = affinity_reach(cluster, pod_spec, outside)
    selected -= by_chance(cluster, nodeset, selected - named - deliberate, named | selected, expected, full)
    found = [(sorted(named), f"named in the NodeSet's required affinity on {o.POOL_LABEL}")] if named else []
    if selected - named:
        how = ("spec.nodeSelector (which never reaches the Pods)" if outside and not required_terms(pod_spec)
               else "the labels its affinity selects")
        found.append((sorted(selected - named), f"pools whose Nodes or nodeLabels carry {how}"))
    if not found:
        return None
    source = found[0][1] if len(found) == 1 else "; ".join(f"{', '.join(names)}: {how}" for names, how in found)
    return sorted(named | selected), source


def affinity_reach(cluster: Cluster, pod_spec: dict, outside: dict) -> tuple[set[str], set[str], set[str]]:
    """The pools the required terms name, those the others select (whole terms, NotIn included: a pool whose Nodes
    a term excludes is not the NodeSet's, however alike), and of those the ones selected by a key a user sets or the
    pool's nodeLabels carry (deliberately, not by a label every Node of its kind has)."""
    named: set[str] = set()
    selected: set[str] = set()
    deliberate: set[str] = set()
    specs = nd.term_specs(pod_spec, outside)
    for raw, term, spec in zip(nd.live_terms(pod_spec), nd.binding_terms(pod_spec, outside), specs, strict=True):
        if term_pools(raw):
            named |= term_pools(raw)
        elif term:  # a term requiring no label selects no pool
            reached = pools_selected(cluster, nd.selector(spec)) or pools_selected(cluster, met_by_some(cluster, term))
            selected |= reached
            deliberate |= {p for p in reached if chosen_by_key(cluster.pool(p), positive_keys(term))}
    return named, selected, deliberate


def pools_selected(cluster: Cluster, judge: Workload | None) -> set[str]:
    """The pools the `selector` selects (none without one)."""
    return {p for p in cluster.pool_names if judge and nd.selected_by(cluster.pool(p), judge)}


def met_by_some(cluster: Cluster, term: list[dict]) -> Workload | None:
    """A term no pool meets, narrowed to the requirements some pool meets: a requirement no Node carries (a typo, a
    label never set) says nothing about which pool is meant, the others still do. None when nothing is left."""
    kept = [e for e in term if pools_selected(cluster, nd.expressions_selector([e]))]
    return nd.expressions_selector(kept) if kept and len(kept) < len(term) else None


def chosen_by_key(pool: Pool, keys: set[str]) -> bool:
    """Whether one of `keys` is a user's (set by hand or by a pool) or the pool's nodeLabels carry it."""
    return any(nd.is_user_key(k) or k in pool.node_labels for k in keys)


def by_tolerations(cluster: Cluster, pod_spec: dict) -> Found | None:
    """The pools whose nodeTaints the template tolerates by key."""
    tolerations = [t for t in pod_spec.get("tolerations") or () if t.get("key")]
    tolerated = sorted(p for p in cluster.pool_names
                       if any(tolerates(t, taint) for t in tolerations for taint in cluster.pool(p).node_taints))
    return (tolerated, "pools whose nodeTaints the NodeSet tolerates") if tolerated else None


def by_hosts(cluster: Cluster, nodeset: dict) -> Found | None:
    """The pools the NodeSet's Pods run on."""
    hosting = sorted({p for pod in cluster.slurmd_pods(nodeset)
                      if (p := cluster.pool_of(o.node_name(pod)))})
    return (hosting, "pools its Pods run on") if hosting else None


def positive_keys(term: list[dict]) -> set[str]:
    """The keys a term needs present: those it selects Nodes by (NotIn and DoesNotExist only keep some out)."""
    return {e["key"] for e in nd.positive([term])}


def by_chance(cluster: Cluster, nodeset: dict, shared: set[str], found: set[str], expected: frozenset[str],
              full: bool = False) -> set[str]:
    """Of the pools the NodeSet reaches only through labels every Node of their kind carries (`shared`: the
    instance type, the region; no key a user sets, on the pool or by hand, and no pool name), those that are another
    team's: with an expectation, all but the expected ones; without, those whose own nodeTaints it does not tolerate
    (how a team keeps others off its pool) and those none of whose Nodes takes its Pod (it runs none there, and their
    own Pods fill them), unless no other pool is left to be its own (`full`: none of its Nodes without its Pod takes it)."""
    if expected:
        return shared - expected
    tolerations = o.pod_spec(nodeset).get("tolerations") or []
    own = {id(p) for p in cluster.slurmd_pods(nodeset)}
    workload, who = Workload.from_template(o.pod_spec(nodeset)), f"{o.namespace(nodeset)}/{o.name(nodeset)}"
    kept_off = {p for p in shared if untolerated_taints(tolerations, cluster.pool(p).node_taints)
                or takes_none(cluster, workload, who, own, cluster.pool(p), full)}
    return kept_off if found - kept_off else set()


def neighbours(cluster: Cluster, own: set[int], qualified_name: str, node: dict) -> tuple[list[dict], str | None, bool]:
    """The Pods on `node` that are not the NodeSet's (`own`: its Pods by identity), the other NodeSet(s) claiming
    it, and whether the NodeSet has its Pod there."""
    here = cluster.pods_on.get(o.name(node), [])
    others = [p for p in here if id(p) not in own]
    if not others:  # most Nodes: none, or this NodeSet's Pod alone (asked of every Node judged)
        return others, None, bool(here)
    claims = {c for p in others if (c := pd.nodeset_owner(p)) is not None and c != qualified_name}
    return others, ", ".join(sorted(claims)) or None, len(others) < len(here)


def takes_none(cluster: Cluster, workload: Workload, who: str, own: set[int], pool: Pool, full: bool = False) -> bool:
    """Whether no Node of the pool takes a slurmd Pod of NodeSet `who` (its template `workload`, `own` its Pods by
    identity): none runs one, and none is feasible for it (another team's Pods fill them, they are in repair; `full`:
    none is)."""
    for node in pool.nodes:
        others, claimed_by, placed = neighbours(cluster, own, who, node)
        if placed or (not full and evaluate(workload, node, others, claimed_by=claimed_by, first_only=True).feasible):
            return False
    return True


def term_pools(term: dict) -> set[str]:
    """The pools a required term names with `In` on the pool-name label (CoreWeave's recommended binding)."""
    return {v for e in term.get("matchExpressions") or () if e.get("key") == o.POOL_LABEL and e.get("operator") == "In"
            for v in e.get("values") or ()}


def named_pools(pod_spec: dict) -> list[str]:
    """The pools the required affinity's terms name."""
    return sorted({v for term in required_terms(pod_spec) or () for v in term_pools(term)})


def names_every_pool(pod_spec: dict) -> bool:
    """Whether every required term names its pools: then no term finds others from the Nodes' labels."""
    terms = required_terms(pod_spec) or []
    return bool(terms) and all(term_pools(t) for t in terms)
