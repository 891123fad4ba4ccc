"""The diagnosis loop: changes from the watches are debounced, the targets they can affect judged again through
the same pipeline as `check`, and the result published for the HTTP side, which never waits on it."""

from __future__ import annotations

import datetime
import gc
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import NamedTuple, TypeVar

from sunkcheck import objects as o
from sunkcheck.converge import judged_again_at
from sunkcheck.model import InputError, Lasting, Report, Result, Source, unknown
from sunkcheck.pipeline import Judged, diagnose
from sunkcheck.render.html import page
from sunkcheck.render.json import render_report
from sunkcheck.render.prometheus import render_textfile
from sunkcheck.serve.cache import Cache, Change
from sunkcheck.serve.sources import OTHERS
from sunkcheck.serve.watch import Fault, Health
from sunkcheck.snapshot import Snapshot
from sunkcheck.target import Target

DEBOUNCE = 0.1
"""Seconds without a change before re-diagnosing: a burst (a Node replaced, its Pods rescheduled) is one pass."""
MAX_DELAY = 1.0
"""Seconds a steady stream of changes may hold a diagnosis back."""
COLLECTOR_OFF_MAX = 60.0
"""Seconds serve's start may run with the cyclic garbage collector off, as the command line starts every run (it
would traverse the first lists' millions of objects as they arrive, a fifth of the start): it is turned on once
every source has answered, before the first diagnosis (whose cycles, a hundred NodeSets' judgements, are hundreds of
MB), or after this long without."""
HELD_MAX = 10.0
"""Seconds the watches moving (the read plan naming others, a judgement waiting for their lists) may hold a
publication back: past it the judgement is published as it stands, the sources not listed yet among its errors,
rather than an old verdict standing while they keep moving."""
RECOVERY_HELD = 30.0
"""Seconds the first source back after an outage may wait for the others before it is logged: each relists after
its own backoff, a pass or more apart, and the outage's end is one `recovered` line naming them, not one a source."""


R = TypeVar("R")


@dataclass(frozen=True)
class Published:
    """What the loop last computed, handed to the HTTP side whole (one reference swap). Its renderings are made
    at the first request for each, not by the loop: ready waits for the diagnosis alone, and a publication
    replaced before anyone asks for it renders nothing."""

    report: Report
    at: float  # time.time() when its data was last complete and current (known_at): the textfile's timestamp
    up: bool  # the textfile's sunkcheck_up (checked)
    took: float  # seconds the diagnosis took
    judged: int  # targets judged again (the others reused)
    complete: bool  # every source was listed when it was made (ready)
    failing: tuple[str, ...] = ()  # the sources whose errors it reports instead of their last state (not ready)

    lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)
    """Held while a rendering is made: requests asking at once for one not made yet share the one made."""

    @cached_property
    def nodes(self) -> int:
        """The Node verdicts its results hold, every target together: what its page and document would list."""
        return sum(len(r.nodes) for r in self.report.results)

    def _once(self, name: str, make: Callable[[], R]) -> R:
        """make()'s answer, made at the first call for `name` alone, then kept with the publication."""
        with self.lock:
            if name not in self.__dict__:
                self.__dict__[name] = make()  # frozen: the renderings are kept beside the fields
            return self.__dict__[name]

    @property
    def document(self) -> bytes:
        """`check -o json`'s document, rendered when first asked for (/api/v1/check, the page's poll), not in each
        diagnosis: a burst of changes nobody looks at between them costs no rendering."""
        return self._once("_document", lambda: render_report(self.report).encode())

    @property
    def etag(self) -> str:
        """The document's validator: a poll that sends it back is answered 304, without the document; the same
        verdict whatever time it is served with (weak: the served time moves, document_at)."""
        document = self.document
        return self._once("_etag", lambda: f'W/"{hashlib.sha256(document).hexdigest()[:32]}"')

    @cached_property
    def metrics(self) -> str:
        """The textfile exposition of the report."""
        return render_textfile(self.report, self.at, up=self.up)

    def metrics_at(self, current: float) -> str:
        """The exposition with `current` as its last run's time (Loop.current): the rest rendered once."""
        stamp = "sunkcheck_last_run_timestamp_seconds "
        return self.metrics.replace(f"{stamp}{self.at:.3f}\n", f"{stamp}{current:.3f}\n", 1)

    def document_at(self, checked_at: str) -> tuple[bytes | memoryview, ...]:
        """The document with `checked_at` as its time (Loop.current), in pieces (no copy of it a request): its
        top-level key, rendered before the results, cut out."""
        document = self.document

        def cut() -> Stamped:
            return Stamped.cut(document, json.dumps({"checked_at": self.report.checked_at})[1:-1].encode(),
                               first=True)
        return self._once("_document_cut", cut).at(json.dumps({"checked_at": checked_at})[1:-1].encode())

    def page_at(self, checked_at: str) -> tuple[bytes | memoryview, ...]:
        """The status page with `checked_at` as its time (Loop.current), in pieces: rendered once, when first
        asked for, with a placeholder where its time goes, not once a request (a hundred NodeSets on a
        2,000-Node pool make it 19 MB)."""

        def cut() -> Stamped:
            if not self.report.checked_at:  # a report of errors alone: no time on the page
                return Stamped((memoryview(page(self.report, live_url=LIVE_URL).encode()),))
            return Stamped.cut(page(replace(self.report, checked_at=STAMP), live_url=LIVE_URL).encode(), STAMP.encode())
        return self._once("_page", cut).at(checked_at.encode())


LIVE_URL = "/api/v1/check"
"""Where the page polls for the document."""
STAMP = f"checked-at-{secrets.token_hex(16)}"
"""The page's placeholder for its time: no cluster string can hold it (a secret of this process), and no renderer
escapes any of its characters."""


@dataclass(frozen=True)
class Stamped:
    """A rendering cut where its time goes: the pieces, the time written between each two."""

    pieces: tuple[memoryview, ...]

    @classmethod
    def cut(cls, rendered: bytes, placeholder: bytes, first: bool = False) -> Stamped:
        """`rendered` cut at each `placeholder` (the `first` only), views of it: no copy."""
        view, pieces, start = memoryview(rendered), [], 0
        while (found := rendered.find(placeholder, start)) >= 0:
            pieces.append(view[start:found])
            start = found + len(placeholder)
            if first:
                break
        return cls((*pieces, view[start:]))

    def at(self, stamp: bytes) -> tuple[bytes | memoryview, ...]:
        """The pieces with `stamp` between each two."""
        out: list[bytes | memoryview] = [self.pieces[0]]
        for piece in self.pieces[1:]:
            out += [stamp, piece]
        return tuple(out)


class Verdict(NamedTuple):
    """A target's status, the ids of its rows that fire, and each one's severity (id, severity), sorted."""

    status: str
    ids: frozenset[str]
    severities: tuple[tuple[str, str], ...] = ()


ABSENT = Verdict("absent", frozenset())


def verdicts(report: Report) -> dict[tuple[str, str, str], Verdict]:
    """Each target's status and its rows that fire (suppressed ones left out), with their severities."""
    found: dict[tuple[str, str, str], Verdict] = {}
    for r in report.results:
        fired = {s.id: s.severity.value for s in r.symptoms if not s.suppressed}
        found[(r.kind, r.namespace, r.name)] = Verdict(r.status.value, frozenset(fired), tuple(sorted(fired.items())))
    return found


def logged(new: dict[tuple[str, str, str], Verdict], last: dict[tuple[str, str, str], Verdict]
           ) -> dict[tuple[str, str, str], Verdict]:
    """The verdicts `new` as the log tells them, `last` as it told the previous ones: an UNKNOWN target keeps the
    rows of its last known verdict, as its rows were not judged (the ids a partial judgement fires are no news,
    and none is resolved), so that leaving UNKNOWN names what appeared, cleared and changed since that verdict."""
    return {key: last.get(key, ABSENT)._replace(status=v.status) if v.status == "unknown" else v
            for key, v in new.items()}


def transitions(old: dict[tuple[str, str, str], Verdict], new: dict[tuple[str, str, str], Verdict],
                now: str) -> list[dict]:
    """One record per target whose verdict (`logged`) changed: old -> new status, the row ids that appeared and
    cleared, and those firing before and after whose severity changed (a row escalating turns a target from warning
    to critical with the same ids), each as {id, old, new} (a target that appears comes from "absent", one that goes
    goes to it)."""
    out = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, ABSENT), new.get(key, ABSENT)
        if before != after:
            kind, namespace, name = key
            was = dict(before.severities)
            out.append({"time": now, "kind": kind, "namespace": namespace, "name": name, "old": before.status,
                        "new": after.status, "appeared": sorted(after.ids - before.ids),
                        "cleared": sorted(before.ids - after.ids),
                        "changed": [{"id": i, "old": was[i], "new": sev} for i, sev in after.severities
                                    if i in was and was[i] != sev]})
    return out


def unfound(old: Report | None, new: Report, stamp: str) -> list[dict]:
    """One record per error of a report that judged no target (the target named not found, none left in scope)
    that the previous report did not carry: at the start too, where no transition says it."""
    return [] if new.results else [{"time": stamp, "error": str(e)} for e in new.errors if old is None or e not in old.errors]


def fault_records(old: Mapping[str, Fault], new: Mapping[str, Fault], watched: set[str], now: str) -> list[dict]:
    """One record per transition: the watched sources that started failing for long with the same error (the API
    server gone fails every watch alike), or recovered (no error), named together; not one whose error only changed
    wording (a refused connection, then a timeout)."""
    by_error: dict[str, list[str]] = {}
    for name in sorted(set(old) ^ set(new)):
        if name in watched:
            by_error.setdefault(new[name].error if name in new else "", []).append(name)
    return [{"time": now, "sources": names, "error": error} for error, names in by_error.items()]


@dataclass
class Recovered:
    """The sources back since the last `recovered` line, held until no watched source is failing (the outage
    over), a source starts failing (the lines stay in order), or RECOVERY_HELD seconds after the first."""

    sources: list[str] = field(default_factory=list)
    time: str = ""  # when the last of them was back
    first: float = 0.0  # time.monotonic() when the first was

    def add(self, names: list[str], stamp: str, now: float) -> None:
        self.first = self.first if self.sources else now
        self.sources, self.time = sorted({*self.sources, *names}), stamp

    def due(self, failing_left: bool, now: float) -> dict | None:
        """The `recovered` record to log now, if any (the sources held then start again)."""
        if not self.sources or (failing_left and now - self.first < RECOVERY_HELD):
            return None
        record = {"time": self.time, "sources": self.sources, "error": ""}
        self.sources = []
        return record


def log_line(record: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(record, sort_keys=True)
    if "kind" not in record and "sources" not in record:  # unfound
        return f"{record['time']} {record['error']}"
    if "sources" in record:
        return f"{record['time']} watch {', '.join(record['sources'])}: " + (
            f"failing: {record['error']}" if record["error"] else "recovered")
    shown = [f"{record['time']} {record['kind']} {record['namespace']}/{record['name']}: {record['old']} -> {record['new']}"]
    shown += [f"{what}: {', '.join(record[what])}" for what in ("appeared", "cleared") if record[what]]
    if record["changed"]:
        shown.append("changed: " + ", ".join(f"{c['id']} ({c['old']} -> {c['new']})" for c in record["changed"]))
    return "; ".join(shown)


def affected(changes: list[Change], kind: str, pod_nodes: frozenset[str] | None) -> set[tuple[str, str]] | None:
    """The targets (namespace, name) the changes can affect; None: every one. Another workload's Pod on a Node
    whose Pods the snapshot does not hold (`pod_nodes`, the read plan's) affects none: the snapshot is unchanged.
    An Event about the workload itself says something of that workload alone. Anything else (a Node, a Pod
    holding resources, a Node Pool, another NodeSet whose fix must not shut this one out, a relist) may change
    any verdict."""
    found = set()
    for c in changes:
        if c.source.startswith(OTHERS) and c.obj is not None and pod_nodes is not None \
                and o.node_name(c.obj) not in pod_nodes:
            continue
        involved = (c.obj or {}).get("involvedObject") if c.source.startswith("events-") else None
        if not isinstance(involved, dict) or involved.get("kind") != kind:
            return None
        found.add((str(involved.get("namespace") or o.namespace(c.obj or {})), str(involved.get("name") or "")))
    return found


class Loop:
    """Diagnose the cache whenever it changes; `published` is the latest result (None before the first)."""

    def __init__(self, cache: Cache, target: Target, health: dict[str, Health], source: Source,
                 log: Callable[[str], None], log_format: str = "text", debounce: float = DEBOUNCE,
                 follow: Callable[[frozenset[str] | None], bool] | None = None,
                 clock: Callable[[], datetime.datetime | None] = lambda: None,
                 grace_clock: Callable[[], datetime.datetime | None] = lambda: None):
        self.cache, self.target, self.health, self.source = cache, target, health, source
        # the API server's time (its answers' Dates, collect.clock): the earliest the Nodes' age, the latest the graces
        self.follow, self.clock, self.grace_clock = follow, clock, grace_clock
        """Told the Nodes whose other Pods the read plan names before each judgement (None: only the Node watches
        are to follow the plan): whether the watches moved (the judgement then waits for their lists). `health`
        is replaced whole when they do, never edited."""
        self.log, self.log_format, self.debounce = log, log_format, debounce
        self.published: Published | None = None
        self.through = 0
        """The cache's changes (Cache.made) the publication accounts for: judged, or found to change nothing read."""
        self.logged: dict[tuple[str, str, str], Verdict] = {}  # the verdicts as the log last told them (logged)
        self.faults: dict[str, Fault] = {}  # the sources failing now, and their errors (failing)
        self.recovered = Recovered()  # the sources back, not logged yet
        self.judged = Judged()  # per-Node verdicts: a change to one Node judges that Node again, not thousands
        self.ageing: dict[tuple[str, str], datetime.datetime] = {}
        """The targets published with a Node still young, or one not Ready for some minutes, and when the first of them
        no longer is, or reads a minute more (converge.judged_again_at): each is judged again then, no change needed."""
        self.diagnoses = 0
        self.held: float | None = None
        """time.monotonic() when the watches moving first held back a judgement since the last publication."""
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name="diagnosis", daemon=True)

    def run(self) -> None:
        pending: list[Change] = []
        begun = time.monotonic()
        while not self.stop.is_set():
            pending += self.cache.take(self.wake())
            if not gc.isenabled() and (self.settled() or time.monotonic() - begun >= COLLECTOR_OFF_MAX):
                gc.freeze()  # what the first lists made: held for good, never traversed
                gc.enable()  # before the first diagnosis: its cycles (hundreds of MB at a hundred NodeSets) collected
            if self.overdue():
                pending.append(Change("", None))  # published as it stands: every target judged again
            elif not self.settled():
                self.hold()
                if pending and self.follow is not None:  # the Node watches start as soon as the plan names them
                    self.cache.snapshot(self.target, early=True)
                    self.follow(None)
                continue
            if self.refault():
                pending.append(Change("", None))  # a source failing for long, or back: every target judged again
            aged = self.aged()
            if not pending and not aged and self.published is not None:
                continue
            first = time.monotonic()
            # a burst is one pass; the first waits for no quiet: every source has answered (settled), and /readyz waits
            while self.published and time.monotonic() - first < MAX_DELAY and (more := self.cache.take(self.debounce)):
                pending += more
            self.diagnose(pending, aged)
            pending = []

    def current(self) -> tuple[Published | None, float]:
        """The publication, and when its verdict was last known true (0 before one): when it was made or, while no
        change has come that it does not account for, the last moment every watch had heard from the API server
        (each source is current as of its last event, bookmark, list or watch ended as asked; a failing one stops
        the clock): on a quiet cluster, a minute ago or so, though nothing was diagnosed again."""
        through = self.through  # before the publication: the loop writes them the other way round
        published = self.published
        if published is None:
            return None, 0.0
        heard = [h.last_event for h in self.health.values()]
        if through != self.cache.made or not heard or None in heard:
            return published, published.at
        return published, max(published.at, min(h for h in heard if h is not None))

    def settled(self) -> bool:
        """Every source listed, or failed at least once: a check would report now (a failed read as an error
        line, its steps unknown), though /readyz waits for every list."""
        return all(h.synced or h.errors for h in self.health.values())

    def hold(self) -> None:
        """A judgement held back while the watches move: the first since the last publication starts the count."""
        self.held = time.monotonic() if self.held is None else self.held

    def overdue(self) -> bool:
        """Whether the watches moving have held a judgement back HELD_MAX seconds since the last publication (before
        a first one there is no old verdict to replace)."""
        return self.held is not None and self.published is not None and time.monotonic() - self.held >= HELD_MAX

    def refault(self) -> bool:
        """Whether the sources failing (refused by the cache, or failing for long) changed since the last pass;
        each change logged, the sources back after an outage together (Recovered)."""
        faults, now = failing(self.health, self.cache.refused), time.monotonic()
        changed = faults != self.faults
        if changed:
            stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            for record in sorted(fault_records(self.faults, faults, set(self.health), stamp), key=lambda r: bool(r["error"])):
                if record["error"]:  # those back are logged first: the lines stay in order
                    self.log_recovered(False, now)
                    self.log(log_line(record, self.log_format))
                else:
                    self.recovered.add(record["sources"], stamp, now)
            self.faults = faults
        self.log_recovered(bool(self.faults.keys() & self.health.keys()), now)
        return changed

    def log_recovered(self, failing_left: bool, now: float) -> None:
        """The `recovered` line of the sources back, once it is due."""
        if (record := self.recovered.due(failing_left, now)) is not None:
            self.log(log_line(record, self.log_format))

    def aged(self) -> frozenset[tuple[str, str]]:
        """The targets one of whose Nodes has aged past a rule of time since they were judged (`ageing`), by the API
        server's clock (its last Date advanced by the monotonic clock, never the local clock): none without it."""
        now = self.clock()
        return frozenset() if now is None else frozenset(k for k, at in self.ageing.items() if at <= now)

    def wake(self) -> float:
        """Seconds to wait for a change: a second at most, less where a Node ages sooner. A second where one has
        aged already (its target judged at the next pass the watches allow): never a busy loop."""
        now = self.clock()
        left = min(((at - now).total_seconds() for at in self.ageing.values()), default=1.0) if now else 1.0
        return min(left, 1.0) if left > 0 else 1.0

    def _snapshot(self) -> Snapshot:
        """What the watches hold, read at the API server's time, as a check (Snapshot.dated)."""
        snapshot = self.cache.snapshot(self.target)
        return snapshot.dated(self.clock(), self.grace_clock())

    def diagnose(self, changes: list[Change], aged: frozenset[tuple[str, str]] = frozenset()) -> Published | None:
        """Judge the targets `changes` can affect and those `aged` (every one, the first time) and publish the report,
        unless the read plan moved the watches: they are judged again once those are listed, or at once when the
        watches have held a judgement back too long (overdue: the sources not listed yet are then among the errors)."""
        started, complete, through = time.monotonic(), self.cache.ready, self.cache.taken  # `changes` and those before
        kind = "DaemonSet" if self.target.daemonset else "NodeSet"
        previous = self.published.report if self.published else None
        hit = affected(changes, kind, self.cache.pod_nodes) if previous is not None else None
        hit = None if hit is None else hit | aged
        if self.published is not None and hit == set():
            self.through = through
            return self.published  # nothing the pipeline reads changed (a list that completes is a change: hit None)
        reuse = {} if previous is None or hit is None else {
            (r.namespace, r.name): r for r in previous.results if (r.namespace, r.name) not in hit}
        snapshot = self._snapshot()
        if self.follow is not None and self.follow(self.cache.pod_nodes or frozenset()):
            self.hold()
            if not self.overdue():
                return self.published
            snapshot = self._snapshot()  # what the watches now hold, their sources not listed yet unknown
        self.refault()  # after the snapshot: a source it lacks for a refusal is among the faults, with the reason
        report = judge(self.cache, self.target, self.health, reuse, self.judged, snapshot, self.faults, previous)
        self.judged.turn()
        now = time.time()
        stamp = datetime.datetime.fromtimestamp(now, datetime.UTC).isoformat(timespec="seconds")  # the log's time
        known = known_at(self.health, self.faults, self.published.at if self.published else None, now)
        # a report of errors alone checked nothing: no checked_at, as check's document of one
        report = replace(report, sources=(self.source,), checked_at=datetime.datetime.fromtimestamp(
            known, datetime.UTC).isoformat(timespec="seconds") if report.results or not report.errors else "")
        told = logged(verdicts(report), self.logged)
        for record in [*transitions(self.logged, told, stamp), *unfound(previous, report, stamp)]:
            self.log(log_line(record, self.log_format))
        self.logged = told
        published = Published(report, known, checked(report, self.faults), time.monotonic() - started,
                              len(report.results) - len(reuse), complete, tuple(sorted(self.faults)))
        self.published, self.held = published, None
        self.ageing = {(r.namespace, r.name): at for r in report.results if (at := judged_again_at(r))}
        self.through = through  # after the publication: current() reads them the other way round
        self.diagnoses += 1  # once published: a scrape that sees the count sees the diagnosis
        if any(c.obj is None for c in changes):
            # a list just filled the cache: its objects (millions, acyclic, freed by reference counting when
            # replaced) leave the collector's reach, or each full collection walks them all, for a second; the
            # diagnosis's cycles collected first (one walk a list), or they would be held for good
            gc.collect()
            gc.freeze()
        return published


def known_at(health: Mapping[str, Health], faults: Mapping[str, Fault], previous: float | None, now: float) -> float:
    """When what the watches hold was last complete and current: `now`, unless a source has failed since it last heard
    from the API server, or is failing (`faults`): then the earliest such hearing; a source never heard keeps the
    `previous` publication's time (now, at the first). An outage, and the recovery of some sources, never moves it
    forward: a staleness alert on it fires."""
    stale = [h for name, h in health.items() if h.down or name in faults]
    heard = [h.last_event for h in stale]
    if None in heard:
        return now if previous is None else min(previous, now)
    return min([now, *(at for at in heard if at is not None)])


def checked(report: Report, faults: Mapping[str, Fault]) -> bool:
    """`sunkcheck_up`: no source failing for long, and something checked (a report of errors alone, its
    targets never read, is check's `sunkcheck_up 0`)."""
    return not faults and bool(report.results or not report.errors)


def failing(health: Mapping[str, Health], refused: Mapping[str, Fault]) -> dict[str, Fault]:
    """The sources failing now, and their errors: failing for long (Health.fault), or refused by the cache
    (Cache.refused)."""
    now = time.monotonic()
    return {name: fault for name, h in health.items() if (fault := h.fault(now))} | dict(refused)


REFUSED = "refused by serve's cache (its error line says why)"
"""Why a step reads nothing of a source the cache refused (Cache.refused: past its budget, or too large)."""


def _last_known(previous: Report | None, cache: Cache, target: Target, listed: bool) -> tuple[Result, ...]:
    """The targets a report kept while the workloads cannot be read (each then told UNKNOWN): the `previous`
    report's; before one, those the workloads' list found where it was `listed` (a role that may list but not
    watch: its watch refused before a first judgement), so that each target's status says UNKNOWN from the start."""
    if previous is not None or not listed:
        return previous.results if previous else ()
    try:
        return diagnose(cache.snapshot(target), target, (), every_nodeset=not target.daemonset).results
    except InputError:  # none in scope
        return ()


def judge(cache: Cache, target: Target, health: dict[str, Health],
          reuse: dict[tuple[str, str], Result] | None = None, judged: Judged | None = None,
          snapshot: Snapshot | None = None, faults: Mapping[str, Fault] | None = None,
          previous: Report | None = None) -> Report:
    """The cache's state diagnosed as `check` diagnoses what it reads; a source never listed is an error line
    (why, when its watch said), as a failed read is, and so is one failing (`faults`, by source: failing() now
    when None), its resource then not captured: its last state is not reported as current. When
    the workloads themselves cannot be read, the targets of the `previous` report stay, each UNKNOWN: a target
    that vanished in an outage would end its alert as if it were healthy."""
    refused, plurals = cache.refused, {s.name: s.resource.plural for s in cache.watched}
    faults = failing(health, refused) if faults is None else faults
    unlisted: dict[str, tuple[str, str]] = {}  # by resource: one line, as check's one read fails once, however many watches
    failed: dict[str, str] = {}  # why, by resource (an Event source's is `events`): its steps say it, as check's
    for name, h in health.items():
        if not h.synced or name in faults:
            kind = name.partition("/")[0]  # its name first, once (a fault naming it already, as check's line does)
            unlisted.setdefault(kind, (f"{kind}: {(faults.get(name) or h.said).beside(kind)}", h.reason))
            if reason := REFUSED if name in refused else h.reason:
                failed.setdefault(plurals.get(name, kind), reason)
    errors = tuple(error for error, _ in unlisted.values())
    workloads = "daemonsets" if target.daemonset else "nodesets"
    if workloads in unlisted:
        error = unlisted[workloads][0]
        listed = all(h.synced for name, h in health.items() if name.partition("/")[0] == workloads)
        return Report(tuple(unknown(r, error) for r in _last_known(previous, cache, target, listed)), errors)
    snapshot = snapshot or cache.snapshot(target)
    if faults:
        snapshot = replace(snapshot, **{plurals[name]: None for name in faults if name in plurals})
    try:
        return diagnose(snapshot, target, errors, failed=failed, reuse=reuse, judged=judged,
                        every_nodeset=not target.daemonset)  # every NodeSet is watched (serve.sources)
    except InputError as e:  # the NodeSet is gone, or none is left in scope: unknown, until one is back
        return Report((), (*errors, Lasting(e) if e.lasting else str(e)))  # serve goes on; --wait stops at a Lasting
