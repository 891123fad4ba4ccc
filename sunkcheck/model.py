"""The vocabulary shared by every stage: statuses, steps, symptoms, per-Node verdicts, the report."""

from __future__ import annotations

import datetime
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import NamedTuple, TypeVar


class Status(enum.Enum):
    """A check's outcome; the value is the JSON spelling, `exit_code` the Nagios code (docs/exit-codes.md)."""

    OK = "ok"
    INFO = "info"
    """A lint finding worth knowing that is not a problem: leaves the status OK."""
    WARNING = "warning"
    CRITICAL = "critical"
    UNKNOWN = "unknown"
    SKIPPED = "skipped"

    @property
    def exit_code(self) -> int:
        return _EXIT_CODES[self]

    @property
    def rank(self) -> int:
        """How bad: a certain CRITICAL outranks UNKNOWN, which outranks a WARNING it might be hiding."""
        return _RANKS[self]


_EXIT_CODES = {Status.OK: 0, Status.INFO: 0, Status.SKIPPED: 0, Status.WARNING: 1, Status.CRITICAL: 2, Status.UNKNOWN: 3}
_RANKS = {Status.SKIPPED: 0, Status.INFO: 1, Status.OK: 1, Status.WARNING: 2, Status.UNKNOWN: 3, Status.CRITICAL: 4}


def worst(statuses: Iterable[Status], default: Status = Status.OK) -> Status:
    """The worst of `statuses` by `Status.rank`; `default` when there are none."""
    return max(statuses, key=lambda s: s.rank, default=default)


@dataclass(frozen=True)
class Step:
    """One runbook verification step as sunkcheck saw it."""

    name: str
    """Step id: nodepool, nodes, events, nodeset, pods, sinfo, daemonset."""
    status: Status
    summary: str
    """One line a human can read."""
    counts: Counts | None = None
    """The numbers behind the summary (JSON `counts`); None when the step could not count."""


# Each step's counts, typed so that a renamed count fails where it is read (`--wait`, Nagios perfdata,
# Prometheus gauges) instead of silently dropping a metric. The field names are the JSON `counts` keys, in
# order; a None field is left out of the JSON (the status lacks that column).

@dataclass(frozen=True)
class PoolCounts:
    """nodepool: the Node Pools' TARGET and CURRENT, summed over the pools that exist."""

    target: int
    current: int
    present: int | None = None
    """The pool's Nodes in the cluster (those carrying its label): set per pool in Result.pool_sizes where the Nodes
    were read, what `--wait` weighs CURRENT against; None in the step's counts."""


@dataclass(frozen=True)
class NodeCounts:
    """nodes (NodeSet): the pools' Nodes."""

    nodes: int
    ready: int
    production: int
    cordoned: int


@dataclass(frozen=True)
class EventCounts:
    events: int
    warnings: int


@dataclass(frozen=True)
class NodeSetColumns:
    """A NodeSet's status columns as kubectl prints them (None where the status lacks one): what the rows judge."""

    desired: int | None
    feasible: int | None
    current: int | None
    ready: int | None
    up_to_date: int | None
    drain: int | None
    misscheduled: int | None
    unavailable: int | None


@dataclass(frozen=True)
class NodeSetCounts(NodeSetColumns):
    """nodeset: kubectl's status columns (None where the status lacks one) beside sunkcheck's own counts (None where
    the Nodes were not read: never a measured 0)."""

    pool_nodes: int | None
    pool_nodes_in_repair: int | None
    """Out of service: out of production, not Ready, or cordoned without the template tolerating the cordon
    (sunkcheck.analyze.nodes.out_of_service: the feasibility engine's state and unschedulable checks): no slurmd Pod
    is expected there."""
    pool_nodes_left_out: int | None
    """In service, yet left out by name by the NodeSet's required affinity (a kubernetes.io/hostname expression or a
    metadata.name field: several NodeSets sharing a pool, one pinned to some of its Nodes): no slurmd Pod of this
    NodeSet is expected there. A Node both out of service and left out counts in `pool_nodes_in_repair` only."""
    feasible_computed: int | None
    replicas: int | None = None
    generation: int | None = None
    observed_generation: int | None = None
    """Set with `generation` only while the status describes an older spec."""


@dataclass(frozen=True)
class PodCounts:
    """pods (NodeSet): the slurmd Pods and where they run (None where the Nodes, and so their pools, were not read)."""

    pods: int
    in_pools: int | None
    elsewhere: int | None
    pending: int
    ready: int
    misscheduled: int
    """On Nodes the NodeSet's taints or affinity now refuse (counted MISSCHEDULED)."""
    in_repair: int = 0
    """On Nodes in repair, refused for that alone (the controller counts them MISSCHEDULED too): Node health."""
    on_deleted_nodes: int | None = None
    """Bound to Nodes that no longer exist (not `elsewhere`); None when none, or the Nodes were not read."""


@dataclass(frozen=True)
class SlurmCounts:
    """sinfo: the Slurm nodes of the NodeSet."""

    slurm_nodes: int
    slurm_usable: int


@dataclass(frozen=True)
class DaemonNodeCounts:
    """nodes (DaemonSet): the Nodes its scope selects and those it is eligible for."""

    nodes: int
    selected: int
    eligible: int


@dataclass(frozen=True)
class DaemonSetColumns:
    """A DaemonSet's status columns as kubectl prints them (None where the status lacks one): what the rows judge."""

    desired: int | None
    current: int | None
    ready: int | None
    up_to_date: int | None
    available: int | None
    misscheduled: int | None
    unavailable: int | None


@dataclass(frozen=True)
class DaemonSetCounts(DaemonSetColumns):
    """daemonset: kubectl's status columns (None where the status lacks one) beside sunkcheck's own count (None where
    the Nodes were not read)."""

    eligible_computed: int | None
    generation: int | None = None
    observed_generation: int | None = None


@dataclass(frozen=True)
class DaemonPodCounts:
    """pods (DaemonSet): the daemon Pods."""

    pods: int
    bound: int
    pending: int
    ready: int


Counts = (PoolCounts | NodeCounts | EventCounts | NodeSetCounts | PodCounts | SlurmCounts | DaemonNodeCounts
          | DaemonSetCounts | DaemonPodCounts)
CountsT = TypeVar("CountsT", bound=Counts)


class Summary(NamedTuple):
    """What a step's analysis says in one line, the counts behind it, and whether those counts show a failure."""

    text: str
    counts: Counts | None
    failing: bool = False
    """The step's own facts show something wrong (no Node in the pool, a Warning Event, a Pod Pending...):
    next to the rows that fired, the step takes their severity instead of reading green."""


# the --wait conditions a dead end can hold back (DeadEnd.holds), as sunkcheck.converge.pending names them
POOL_CURRENT, FEASIBLE, NO_POOL, NO_NODE = "pool CURRENT", "FEASIBLE", "nodepool step unknown", "DESIRED 0"


@dataclass(frozen=True)
class DeadEnd:
    """What a row found that cannot clear by itself, so `--wait` gives up at once rather than at its deadline."""

    why: str
    """One clause saying why waiting cannot help (Quota False, a label CKS drops...)."""
    holds: tuple[str, ...] = ()
    """The --wait conditions it keeps from ever being met (sunkcheck.converge's words: "pool CURRENT", "FEASIBLE");
    none when the state it reports is the converged one (a replicas cap), which --wait only explains."""


@dataclass(frozen=True)
class Symptom:
    """A troubleshooting-table row that applies to a target, with the objects that prove it."""

    id: str
    severity: Status
    title: str
    cause: str
    fix: str
    evidence: tuple[str, ...]
    step: str
    """The runbook step this row belongs to; its severity colours that step."""
    suppressed: bool = False
    """Ignored by `--ignore` or an annotation: reported, but not counted in the status."""
    dead_end: DeadEnd | None = None
    """Set when waiting cannot change what the row found (not part of the JSON)."""
    awaits: str = ""
    """What may clear by itself, which `--wait` waits for: named on its progress line (not part of the JSON)."""
    evidence_omitted: int = 0
    """Lines left out of `evidence` to bound the output (sunkcheck.bounds)."""


@dataclass(frozen=True)
class Note:
    """Something worth knowing about a target that is no problem: printed after the symptoms, and counted in no
    status, exit code, Nagios state or textfile (sunkcheck/symptoms/notes.py computes every kind)."""

    id: str
    """What kind of note (a stable id, like a symptom's)."""
    text: str
    """One line a human can read."""
    hint: str = ""
    """What to do about it if it matters, spelled like a fix: prose and each command on lines of their own."""


# kube-scheduler's filter order; the sunkcheck-only checks (state, claimed) slot in where they bite.
SCHEDULER_ORDER = ("unschedulable", "taint", "affinity", "state", "resources", "claimed")


@dataclass(frozen=True)
class Reason:
    """Why a Node is not feasible for a workload; `check` is one of the JSON schema's check names."""

    check: str
    detail: str
    scheduler: str = ""
    """How kube-scheduler words it in `0/N nodes are available: ...` (not part of the JSON)."""
    common: str = field(default="", compare=False)
    """The start of `detail` that Nodes alike share, when the rest names this Node's own objects (the Pods holding
    its resources), or with `variant`, what Nodes alike share in its place: evidence groups the Nodes whose reasons
    agree there (not part of the JSON)."""
    variant: str = field(default="", compare=False)
    family: str = field(default="", compare=False)
    """What Nodes short of a resource by different amounts share (the request and the allocatable): evidence makes
    one line of the Nodes that differ only in how much other Pods hold (not part of the JSON)."""
    """This Node's own value in `detail` (the label value an expression refuses), which `common` says in general:
    evidence lists the values of the Nodes grouped (not part of the JSON)."""


@dataclass(frozen=True)
class NodeVerdict:
    """The per-Node answer: is this Node usable by the workload, does it host its Pod, and why not."""

    name: str
    pool: str | None
    feasible: bool
    placed: bool
    reasons: tuple[Reason, ...] = ()
    reasons_omitted: int = 0
    """Reasons left out of `reasons` to bound the output (sunkcheck.bounds)."""

    def scheduler_reasons(self) -> tuple[Reason, ...]:
        """The reasons kube-scheduler gives for this Node: those of its first failing filter in SCHEDULER_ORDER
        (all of NodeResourcesFit's when that is the one, only the first untolerated taint); none when feasible or
        when no reason is the scheduler's."""
        ranks = [SCHEDULER_ORDER.index(r.check) for r in self.reasons if r.check in SCHEDULER_ORDER]
        chosen = tuple(r for r in self.reasons if ranks and r.check == SCHEDULER_ORDER[min(ranks)])
        return chosen[:1] if chosen and chosen[0].check == "taint" else chosen


@dataclass(frozen=True)
class Check:
    """One comparison behind a verdict: what the workload wants, what the Node has, whether it passes."""

    check: str
    subject: str
    wanted: str
    found: str
    ok: bool
    reasons: tuple[Reason, ...] = ()
    """What this comparison adds to the verdict when it fails (none when another row already says it)."""
    unknown: bool = False
    """What it compares was not recorded (`found` says what): it neither passes nor fails, and `ok` is False."""


@dataclass(frozen=True)
class Omitted:
    """The comparisons of one check left out of the deep view of a Node to bound the output (sunkcheck.bounds)."""

    check: str
    failing: int
    ok: int


@dataclass(frozen=True)
class Explanation:
    """`sunkcheck explain`: every Node's verdict for one workload, and optionally one Node in depth."""

    kind: str
    namespace: str
    name: str
    summary: str
    """kube-scheduler's wording over every Node: `k/N nodes are available: ...`."""
    nodes: tuple[NodeVerdict, ...]
    node: NodeVerdict | None = None
    checks: tuple[Check, ...] = ()
    """The deep view of `node`: each comparison with the values compared."""
    checks_omitted: tuple[Omitted, ...] = ()
    cordon_reason: str = ""
    """The deep view's Node's node.coreweave.cloud/cordonReason annotation: why CKS cordoned it ("" when none)."""
    notes: tuple[str, ...] = ()
    """What could not be verified (a --pool no Node carries, when the Node Pools could not be read)."""
    pools: tuple[str, ...] = ()
    """The workload's own pools (--pool, else the NodeSet's): their Nodes are listed first, the others counted."""
    creating: tuple[str, ...] = ()
    """The feasible Nodes whose slurmd Pod is being created (sunkcheck.analyze.binding.Binding.creating)."""
    pods_recorded: bool = True
    """Whether the Pods on the deep view's Node were read (a snapshot a check saved holds those of the Nodes it
    weighed): where not, what they decide (room, a claim) is unknown."""


@dataclass(frozen=True)
class Unready:
    """A pool Node out of service, not Ready or starting (a start-up taint not tolerated), with its creation time,
    which `--wait` weighs against the API server's clock to tell one still joining from one broken
    (sunkcheck.converge.joining; never its Ready condition's times, written by the kubelet's clock). Not part of the
    JSON."""

    name: str
    created: datetime.datetime | None
    """metadata.creationTimestamp: when it registered (the API server's clock)."""
    status: str
    """Its Ready condition's status ("" without one)."""
    reason: str
    starting: tuple[str, ...] = ()
    """Its start-up taints not tolerated, each with who removes it (sunkcheck.analyze.nodes.removed_by)."""
    down_since: datetime.datetime | None = None
    """When its time not Ready, which the nodes step says in whole minutes, counts from (None when Ready, or
    unknown): serve judges it again as that count grows (sunkcheck.converge.retold_at)."""
    added: tuple[datetime.datetime, ...] = ()
    """The timeAdded of those that carry one: each is left on JOIN after it, where believed
    (sunkcheck.analyze.nodes.left_at)."""
    awaited: bool = False
    """`--wait`: it saw this Node joining and it has been out of service at every read since
    (sunkcheck.converge.Clock): once no longer young and still not Ready, a Node the scale-up never delivered
    (sunkcheck.converge.overdue)."""


@dataclass(frozen=True)
class Result:
    """Everything sunkcheck found about one NodeSet or DaemonSet."""

    kind: str
    namespace: str
    name: str
    pools: tuple[str, ...]
    steps: tuple[Step, ...]
    symptoms: tuple[Symptom, ...]
    nodes: tuple[NodeVerdict, ...] = ()
    pool_source: str = ""
    """How the pools were found (flag, affinity, Node labels, Pods), shown to the user."""
    context: str = ""
    """The kubeconfig context it was read from, when several clusters are checked at once."""
    file: str = ""
    """`lint`: the file and line that define it (its summary lists definitions by file, not gauges)."""
    notes: tuple[Note, ...] = ()
    """Worth knowing, no problem: never part of `status`."""
    symptoms_omitted: int = 0
    """Rows (a linted definition's findings) left out of `symptoms` to bound the output, the least severe
    (sunkcheck.bounds): `status` is the same without them."""
    unready: tuple[Unready, ...] = ()
    """The NodeSet's pool Nodes out of service and not Ready or starting (not part of the JSON)."""
    pool_sizes: tuple[tuple[str, PoolCounts], ...] = ()
    """Each of its existing Node Pools' TARGET and CURRENT, by name: the per-pool metrics (not part of the JSON, whose
    nodepool counts are their sums)."""
    clock: datetime.datetime | None = None
    """The cluster's time when read, at least: the API server's (sunkcheck.analyze.nodes.cluster_time; set only
    where `unready` holds a Node, `starting_until` a grace, or a pool counts Nodes the cluster does not hold,
    sunkcheck.analyze.nodepool.uncounted; `--wait` advances it by the seconds waited, sunkcheck.converge.Clock). Not
    part of the JSON."""
    starting_until: tuple[datetime.datetime, ...] = ()
    """When each slurmd Pod still starting leaves its start-up grace, and each Node whose slurmd Pod is being created
    its own, by the cluster's time (sunkcheck.analyze.binding.Binding.graced_until): slurmd-not-ready or
    slurmd-pods-missing may fire then without any event (sunkcheck.converge.ages_at). Not part of the JSON."""
    not_ready_pods: tuple[str, ...] = ()
    """The slurmd Pods READY does not count yet (sunkcheck.analyze.binding.Binding.not_ready_said): what `--wait`
    names beside READY. Not part of the JSON."""
    uncounted_since: datetime.datetime | None = None
    """`--wait`: the cluster's time when it first saw a pool count (CURRENT) Nodes the cluster does not hold
    (sunkcheck.converge.Clock); None outside a wait, or while none is missing. Not part of the JSON."""
    unconverged: str = ""
    """`--wait` ended with this target still waiting: what for (sunkcheck.converge.waiting), at least WARNING, as the
    run is; empty when it converged, or outside a wait."""

    def counts(self, kind: type[CountsT]) -> CountsT | None:
        """The counts of the step that produces `kind`; None when that step did not run or could not count."""
        return next((s.counts for s in self.steps if isinstance(s.counts, kind)), None)

    @property
    def status(self) -> Status:
        status = worst([s.status for s in self.steps] + [s.severity for s in self.symptoms if not s.suppressed]
                       + [Status.WARNING] * bool(self.unconverged))
        return Status.OK if status is Status.INFO else status


def unknown(result: Result, why: str) -> Result:
    """`result`'s target as one whose state cannot be read: every step UNKNOWN saying why, no finding of its
    last state (counts, its Node Pools' sizes, symptoms, Node verdicts, notes, what is ageing) reported as current."""
    return replace(result, steps=tuple(Step(s.name, Status.UNKNOWN, why) for s in result.steps), symptoms=(),
                   nodes=(), notes=(), symptoms_omitted=0, unready=(), pool_sizes=(), clock=None, starting_until=(),
                   not_ready_pods=(), uncounted_since=None)


@dataclass(frozen=True)
class Source:
    """Where a report's objects came from: a live cluster, or a snapshot and what its meta.json recorded."""

    type: str
    """"live" or "snapshot"."""
    context: str = ""
    server: str = ""
    path: str = ""
    """The snapshot directory."""
    recorded: str = ""
    """When the snapshot was recorded (its meta.json `time`); empty when unknown."""
    meta: bool = False
    """The snapshot has a meta.json (not in the JSON document: its fields are)."""


class Unchecked(NamedTuple):
    """A context of a run over several that could not be checked at all, and the error line saying why (that line is
    among the report's `errors` too)."""

    context: str
    error: str


@dataclass(frozen=True)
class Report:
    """The whole run: one result per target, plus what could not be checked."""

    results: tuple[Result, ...]
    errors: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ()
    checked_at: str = ""
    """When the check ran (UTC, ISO 8601)."""
    predicted_from: tuple[str, ...] = ()
    """The values files of a --values what-if: the NodeSets judged are a prediction, not deployed."""
    never_converged: str = ""
    """--wait timed out, or stopped where waiting cannot help: what was still pending. A binding that never converged
    is at least WARNING."""
    unchecked: tuple[Unchecked, ...] = ()
    """The contexts of a run over several that could not be checked at all."""
    failing: tuple[str, ...] = ()
    """The resources a live run could not read (a --wait on watches: at its end, their watch failing): what the steps
    they feed say is not known or not current, so its textfile says sunkcheck_up 0, as serve's does for a source
    failing."""
    current_at: float | None = None
    """When what it says was last complete and current (Unix time), where that is before it was made (a --wait
    ending while a watch fails: when that watch last heard from the API server): the textfile's timestamp, which an
    outage must not move forward. None: when it was made."""

    @property
    def other_errors(self) -> tuple[str, ...]:
        """The errors but those saying why a context was not checked: each is told once, with its context."""
        told = {u.error for u in self.unchecked}
        return tuple(e for e in self.errors if e not in told)

    @property
    def status(self) -> Status:
        statuses = [r.status for r in self.results]
        if self.errors or not self.results:
            statuses.append(Status.UNKNOWN)
        if self.never_converged:
            statuses.append(Status.WARNING)
        return worst(statuses)


class InputError(Exception):
    """Input sunkcheck cannot use (bad snapshot, bad flag, unreachable API): one line, exit UNKNOWN. `lasting`: waiting
    cannot clear it (a refused kubeconfig, 401, 403, a missing API or NodeSet), so --wait stops at it; an API server
    that cannot be reached, or answers 5xx or 429, may come back."""

    source: Source | None = None
    """The cluster it was read from, when known (the report's `sources`, even of a run that never got an answer)."""

    def __init__(self, message: str = "", lasting: bool = True):
        super().__init__(message)
        self.lasting = lasting


class Lasting(str):
    """An error line of a report that waiting cannot clear (an InputError's `lasting`): --wait stops at it."""
