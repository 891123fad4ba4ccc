"""Snapshot -> analyze -> match -> Report: the pure core shared by live runs and replays."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from sunkcheck import objects as o
from sunkcheck.analyze import daemonset as ds
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.binding import Binding, analyze, summaries
from sunkcheck.analyze.cluster import Cluster, Judged
from sunkcheck.analyze.feasibility import INVALID_QUANTITY, pods_unrecorded, scheduler_summary
from sunkcheck.analyze.nodepool import sizes, uncounted
from sunkcheck.model import (Explanation, InputError, NodeVerdict, Report, Result, Status, Step, Summary, Symptom,
                             worst)
from sunkcheck.snapshot import Snapshot
from sunkcheck.symptoms import daemonset as ds_rules
from sunkcheck.symptoms import fixes, match, some
from sunkcheck.symptoms import nodeset as nodeset_rules
from sunkcheck.symptoms.notes import notes
from sunkcheck.target import Target, check_node, check_pools, daemonsets_instead, select
from sunkcheck.text import counted

# runbook step -> the snapshot resource it reads, in runbook order
NODESET_STEPS = (
    ("nodepool", "nodepools"),
    ("nodes", "nodes"),
    ("events", "events"),
    ("nodeset", "nodesets"),
    ("pods", "pods"),
)
DAEMONSET_STEPS = (
    ("nodes", "nodes"),
    ("events", "events"),
    ("daemonset", "daemonsets"),
    ("pods", "pods"),
)
# the steps that count Nodes besides their own resource (sunkcheck's FEASIBLE, the pool a slurmd Pod runs in):
# UNKNOWN without them, what their own resource holds still said
NODESET_NODE_COUNTED = frozenset({"nodeset", "pods"})
DAEMONSET_NODE_COUNTED = frozenset({"daemonset"})


def diagnose(snapshot: Snapshot, target: Target, errors: tuple[str, ...] = (), slurm_error: str = "",
             read_namespace: str | None = None, failed: Mapping[str, str] = MappingProxyType({}),
             reuse: Mapping[tuple[str, str], Result] | None = None, judged: Judged | None = None,
             every_nodeset: bool = False) -> Report:
    """Judge every target; `errors` are what the collector could not read (reported first), `slurm_error`
    why Slurm's view could not be read (the sinfo step's reason), `read_namespace` the one namespace a recorded
    snapshot's NodeSets were read in (its meta.json), `failed` why a live run could not read a resource (by
    resource: its steps say so), `reuse` results by (namespace, name) still true of this snapshot (serve: those of
    the targets a change cannot affect), taken instead of judged again, and `judged` the per-Node verdicts kept from
    the last diagnosis (serve: Cluster's Judged), and `every_nodeset` whether every NodeSet of the cluster was read,
    whichever the target names."""
    kind, resource, steps = (("DaemonSet", "daemonsets", DAEMONSET_STEPS) if target.daemonset
                             else ("NodeSet", "nodesets", NODESET_STEPS))
    objects = getattr(snapshot, resource)
    if not objects:  # missing, or listed empty (as `kubectl get nodesets -A -o json` writes none)
        names = sorted({o.name(d) for d in snapshot.daemonsets or ()}) if kind == "NodeSet" else []
        hint = daemonsets_instead(names)
        if objects is None:
            raise InputError(f"no {kind}s captured ({resource}.json is missing): nothing to check{hint}")
        if hint:
            raise InputError(f"no {kind}s in {resource}.json: nothing to check{hint}")
    chosen = select(objects, kind, target) if target.daemonset else own_pods_recorded(snapshot, select(objects, kind, target))
    unverified = () if target.daemonset else check_pools(snapshot.nodepools, snapshot.nodes, target.pools, target.cluster)
    cluster = Cluster.of(snapshot, judged)
    reuse = reuse or {}
    results = tuple(reuse.get((o.namespace(obj), o.name(obj))) or (
        check_daemonset(cluster, obj, target, failed) if target.daemonset
        else check_nodeset(cluster, obj, target, slurm_error, tuple(objects), read_namespace, failed, every_nodeset))
        for obj in chosen)
    # a read that failed is among `errors` already, with its reason: only a recording's gap needs a line
    missing = tuple(uncaptured(step, r) for step, r in steps
                    if snapshot.missing(r) and r not in failed)
    unreadable = tuple(line for r in results for line in unreadable_quantities(r))
    return Report(results, tuple(errors) + missing + unverified + unreadable)


def own_pods_recorded(snapshot: Snapshot, chosen: list[dict]) -> list[dict]:
    """The chosen NodeSets whose own Pods the snapshot holds (a saved check holds every NodeSet, for what each holds,
    but the Pods of those it checked alone): judged without its Pods, another would miss every one of them."""
    if snapshot.own_pods_of is None:
        return chosen
    kept = [n for n in chosen if f"{o.namespace(n)}/{o.name(n)}" in snapshot.own_pods_of]
    if not kept:
        names = ", ".join(f"{o.namespace(n)}/{o.name(n)}" for n in chosen)
        held = ", ".join(sorted(snapshot.own_pods_of)) or "none"
        raise InputError(f"this snapshot holds the Pods of NodeSet {held} only, not those of {names}: record them with "
                         "`sunkcheck snapshot DIR --nodeset NAME` or `sunkcheck check --nodeset NAME --save DIR`")
    return kept


def uncaptured(step: str, resource: str) -> str:
    """The error line of a resource the snapshot lacks, its step then unknown."""
    return f"{resource} not captured: the {step} step could not be checked"


def unreadable_quantities(result: Result) -> list[str]:
    """The Nodes whose resource check an invalid quantity left unknown, one line per quantity: a verdict that
    could not be made keeps the report from reading OK."""
    nodes: dict[str, list[str]] = {}
    for verdict in result.nodes:
        for reason in verdict.reasons:
            if reason.scheduler == INVALID_QUANTITY:
                nodes.setdefault(reason.detail, []).append(verdict.name)
    where = f"{result.kind} {result.namespace}/{result.name}"
    return [f"{where}: Node{'s' if len(names) > 1 else ''} {some(names)}: {detail}" for detail, names in nodes.items()]


def check_nodeset(cluster: Cluster, nodeset: dict, target: Target, slurm_error: str = "",
                  read: tuple[dict, ...] = (), read_namespace: str | None = None,
                  failed: Mapping[str, str] = MappingProxyType({}), every_nodeset: bool = False) -> Result:
    """One NodeSet; `read` every NodeSet read (a live check reads every NodeSet, else those of its namespace, a
    snapshot holds those it recorded): a fix must not shut the others out of their Nodes, and says which were not
    read (`read_namespace`: a recording's one namespace; `every_nodeset`: none)."""
    partition = target.slurm.partition if target.slurm else None
    namespace = target.namespace if target.namespace is not None else read_namespace
    unread = ("" if every_nodeset else f"NodeSet {o.namespace(nodeset)}/{o.name(nodeset)} only"
              if target.nodeset and len(read) == 1 else f"the NodeSets of namespace {namespace} only"
              if namespace is not None and all(o.namespace(n) == namespace for n in read) else "")
    binding = analyze(cluster, nodeset, list(target.pools), partition, tuple(n for n in read if n is not nodeset), unread)
    missing = set(cluster.snapshot.missing(*(r for _, r in NODESET_STEPS)))
    if cluster.snapshot.sinfo is None:
        missing.add("sinfo")
    ignored = target.ignore | o.ignored_ids(nodeset) | frozenset().union(*(o.ignored_ids(p.obj) for p in binding.pools))
    symptoms = match(nodeset_rules.RULES, binding, missing, ignored)
    texts = summaries(binding)
    if "nodesets" in failed:  # the NodeSets are read, not every one: what others hold is seen of those read only
        texts["nodeset"] = texts["nodeset"]._replace(text=f"{texts['nodeset'].text}; other NodeSets not read "
                                                     f"({failed['nodesets']}): what another NodeSet holds is told of "
                                                     f"{binding.peers_unread}")
    steps = tuple(_step(name, _gap(cluster, resource, failed),
                        (not binding.pools and name == "nodepool") or _nodes_unread(cluster, name, NODESET_NODE_COUNTED),
                        texts[name],
                        symptoms) for name, resource in NODESET_STEPS)
    # the pool's Nodes not Ready or starting, with the cluster's time --wait ages them by (converge.joining): their
    # creation times against the API server's clock only, never a kubelet's, which may run ahead by any amount; the
    # same time where a pool counts Nodes the cluster does not hold (--wait waits for those a while, converge.pending),
    # or a slurmd Pod is starting or being created (judged again when its grace ends, converge.ages_at)
    tolerations = binding.pod_spec.get("tolerations") or []
    unready = tuple(u for n in binding.pool_nodes if binding.out_of_service(n) and (u := nd.unready(n, tolerations)))
    pool_sizes = sizes(binding.pools, cluster.snapshot.nodes is not None)
    return Result("NodeSet", binding.namespace, binding.name, tuple(sorted(binding.pool_names)),
                  (*steps, _sinfo_step(cluster, target, texts["sinfo"], symptoms, slurm_error)),
                  tuple(symptoms), considered_nodes(binding), binding.pool_source,
                  notes=() if missing & {"nodepools", "nodes", "pods"} else notes(binding), unready=unready,
                  pool_sizes=pool_sizes, starting_until=binding.graced_until, not_ready_pods=binding.not_ready_said,
                  clock=binding.clock if unready or binding.graced_until or any(uncounted(c) for _, c in pool_sizes)
                  else None)


def _sinfo_step(cluster: Cluster, target: Target, text: Summary, symptoms: list[Symptom],
                slurm_error: str) -> Step:
    """Slurm's view: skipped unless asked for (--login) or recorded; unknown, with the reason, when it failed."""
    if cluster.snapshot.sinfo is not None:
        return _step("sinfo", "", False, text, symptoms)
    if target.slurm is None:
        return Step("sinfo", Status.SKIPPED, "not requested (--login asks Slurm on a login node)")
    return Step("sinfo", Status.UNKNOWN, slurm_error or "not captured")


def check_daemonset(cluster: Cluster, daemonset: dict, target: Target,
                    failed: Mapping[str, str] = MappingProxyType({})) -> Result:
    scope = ds.Scope(cluster, daemonset)
    missing = set(cluster.snapshot.missing(*(r for _, r in DAEMONSET_STEPS)))
    symptoms = match(ds_rules.RULES, scope, missing, target.ignore | o.ignored_ids(daemonset))
    texts = ds.summaries(scope)
    steps = tuple(_step(name, _gap(cluster, resource, failed), _nodes_unread(cluster, name, DAEMONSET_NODE_COUNTED),
                        texts[name], symptoms)
                  for name, resource in DAEMONSET_STEPS)
    verdicts = tuple(v for _, v in sorted(scope.verdicts.items()))
    pools, found = scope.pools
    return Result("DaemonSet", scope.namespace, scope.name, pools, steps, tuple(symptoms), verdicts, found)


def _gap(cluster: Cluster, resource: str, failed: Mapping[str, str]) -> str:
    """Why `resource` is missing, "" when it is there: a live read that failed says what it asked and what the
    server answered; a recording that lacks it, that it was not captured."""
    if getattr(cluster.snapshot, resource) is not None:
        return ""
    return f"not read: {failed[resource]}" if resource in failed else "not captured"


def _nodes_unread(cluster: Cluster, step: str, counting: frozenset[str]) -> bool:
    """Whether `step`, one of those `counting` Nodes, lacks them: its summary says what it could, its status UNKNOWN."""
    return step in counting and cluster.snapshot.nodes is None


def _step(name: str, gap: str, undetermined: bool, summary: Summary, symptoms: list[Symptom]) -> Step:
    """A step's status: unknown for a `gap` in its data (_gap); else the worst of its own rows; when its
    summary itself shows a failure, the worst of every row that fired (a step never reads green beside the
    failure it shows, and never alarms alone)."""
    if gap:
        return Step(name, Status.UNKNOWN, gap)
    if undetermined:
        return Step(name, Status.UNKNOWN, summary.text, summary.counts)
    status = worst(s.severity for s in symptoms if (summary.failing or s.step == name) and not s.suppressed)
    return Step(name, Status.OK if status is Status.INFO else status, summary.text, summary.counts)


def considered_nodes(b: Binding) -> tuple[NodeVerdict, ...]:
    """The pool's Nodes, Nodes hosting the NodeSet's Pods, and any other Node it finds feasible."""
    wanted = set(b.pool_node_names) | {node for node, _, _ in b.placements if node}
    return tuple(b.verdict(name) for name in sorted((wanted & b.cluster.nodes.keys()) | b.feasible_nodes))


def explain(snapshot: Snapshot, target: Target, node: str | None = None) -> Explanation:
    """Every Node's verdict for one NodeSet or DaemonSet (rows limited to `target.pools` when given),
    and the deep view of `node`."""
    kind, resource = ("DaemonSet", "daemonsets") if target.daemonset else ("NodeSet", "nodesets")
    for needed in (resource, "nodes"):
        if getattr(snapshot, needed) is None:
            raise InputError(f"{needed}.json is missing: nothing to explain")
    chosen = select(getattr(snapshot, resource), kind, target)
    chosen = chosen if target.daemonset else own_pods_recorded(snapshot, chosen)
    if len(chosen) > 1:
        names = ", ".join(o.name(c) for c in chosen)
        raise InputError(f"several {kind}s in scope ({names}): pass --{kind.lower()} NAME")
    unverified = check_pools(snapshot.nodepools, snapshot.nodes, target.pools, target.cluster)
    if node is not None:  # before the analysis: a typo costs nothing on a big cluster
        check_node(snapshot.nodes, node, target.cluster)
    cluster = Cluster.of(snapshot)
    subject = ds.Scope(cluster, chosen[0]) if target.daemonset else analyze(cluster, chosen[0])
    verdicts = [v for _, v in sorted(subject.verdicts.items())]
    shown = tuple(v for v in verdicts if not target.pools or v.pool in target.pools)
    own = subject.pool_names if isinstance(subject, Binding) else set()  # a DaemonSet has no pools of its own
    pools = tuple(sorted(target.pools or own))
    unseen = sum(v.feasible and not snapshot.pods_read(v.name) for v in shown)  # a saved check's: those it weighed
    base = Explanation(kind, o.namespace(chosen[0]), o.name(chosen[0]), scheduler_summary(verdicts), shown,
                       notes=unverified + ((f"{counted(unseen, 'Node')} listed feasible: feasible as far as recorded (the "
                                            "Pods on them were not recorded)",) if unseen else ()), pools=pools,
                       creating=tuple(subject.creating) if isinstance(subject, Binding) else ())
    if node is None:
        return base
    checks, recorded = tuple(subject.explain(cluster.nodes[node])), snapshot.pods_read(node)
    return replace(base, node=subject.verdicts[node], checks=checks if recorded else pods_unrecorded(checks),
                   cordon_reason=str(o.annotations(cluster.nodes[node]).get(o.CORDON_REASON) or ""),
                   pods_recorded=recorded)


def pinned(report: Report, context: str) -> Report:
    """`report` with its fixes' and notes' kubectl commands bound to the kubeconfig context it read (`kubectl
    --context NAME`): a run that named its context acts on that cluster alone, whatever the shell's is."""
    return replace(report, results=tuple(
        replace(r, symptoms=tuple(replace(s, fix=fixes.pinned(s.fix, context)) for s in r.symptoms),
                notes=tuple(replace(n, hint=fixes.pinned(n.hint, context)) for n in r.notes)) for r in report.results))
