"""List, then watch, one source of objects: the list's resourceVersion carried into the watch, bookmarks asked
for, `410 Gone` answered by a relist (at once the first time, backed off when it repeats), broken watches and
watches the server ends before their time without an event reconnected with capped exponential backoff and
jitter, as are watches it ends early again and again, and every wait bounded (connect, each watch's answer, each
watch whole, each backoff). What arrives is checked (its kind, its namespace and selectors, its shape), slimmed and
handed to a sink (the cache). Only what the server is sure to send when it works counts as hearing from it: a list,
a checked event, a bookmark with a resourceVersion, a watch ended at the timeout it was asked. A source that has not
heard so while its reads fail says so (Health.fault): the report then shows it as an error rather than its last
state."""

from __future__ import annotations

import contextlib
import random
import threading
import time
import urllib.parse
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from sunkcheck import duration
from sunkcheck.collect import answers, client, cuts
from sunkcheck.collect.kube import CallError, Kube, Resource, api_version, unmanaged
from sunkcheck.collect.cluster import why
from sunkcheck.collect.errors import Unreachable
from sunkcheck.model import InputError
from sunkcheck.serve.selectors import outside
from sunkcheck.snapshot import ShapeError, check_items
from sunkcheck.text import json_doc, safe

if TYPE_CHECKING:
    import urllib3

    from sunkcheck.collect.kubeconfig import Credential

WATCH_SECONDS = 300
"""timeoutSeconds asked of the server (jittered by up to a fifth): a watch ends and is renewed from its last
resourceVersion at least this often, as client-go's reflector does."""
RECHECK = 10
"""timeoutSeconds asked while the source is failing: a watch that a server answered proves nothing (it may then
send nothing), one it ends as asked does, so a quiet source is known current again within seconds of an outage,
well within STALE_AFTER, even from a server that sends no bookmark."""
READ_GRACE = 30.0
"""Seconds past timeoutSeconds a watch may stay open: the server ends it at timeoutSeconds, so one still open
then (silent, or sending blank lines, which are no event) has failed, as client-go's request timeout says."""
UNANSWERED, OVERDUE = "unanswered", "overdue"  # why a watch's exchange was ended by its deadline
ON_TIME = 0.9
"""The share of timeoutSeconds a watch must last to have been ended by the server's timeout: one ended sooner
without an event is a failure (backed off), or a server or proxy ending every watch at once is asked thousands of
times a second."""
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 30.0
STALE_AFTER = 60.0
"""Seconds a source may go without hearing from the server while its reads fail (no list done, no checked event,
no bookmark, no watch ended as asked) before the report says so: its error among the report's errors, the
resource it reads not captured (the targets that read it UNKNOWN), /readyz 503, until it hears again. Shorter
outages (an API server restarted) pass unreported, as the watch picks up where it stopped."""
WATCH_ROLE = "sunkcheck rbac --serve"
"""The command printing the role a watching client needs: get, list and watch."""


@dataclass(frozen=True)
class Source:
    """One list+watch: what `check` reads of a resource, with the same server-side selectors."""

    name: str
    resource: Resource
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    slim: Callable[[dict], dict] = unmanaged
    """Cut an object to what the analysis reads, as it arrives (the memory budget depends on it)."""
    one: bool = False
    """One object of those the selectors select, the first in the server's order: listed as a list of one, then
    watched by its name; gone from them (deleted, its labels changed), the first is listed again."""
    trim: Callable[[bytearray], Iterable[cuts.Span]] | None = None
    """Where a list page's or an event's text holds what the analysis never reads, emptied before it is parsed (a
    Node's image list and managedFields, as check's lists cut them: most of a real Node's bytes, and of the time to
    parse it)."""


class Sink(Protocol):
    def listing(self, source: Source) -> contextlib.AbstractContextManager[Callable[[dict], dict]]: ...

    def replace(self, source: Source, items: list[dict]) -> None: ...

    def apply(self, source: Source, kind: str, obj: dict) -> None: ...


class Fault(NamedTuple):
    """A source's error, as the report, /readyz and the log say it."""

    error: str
    names: str = ""
    """What `error` names first, as `check`'s line does ("" when nothing): a list or an event refused on shape its
    resource (`nodes: item 3 ...`), the cache's refusal its source."""

    def beside(self, name: str) -> str:
        """The error said after `name` and a colon: without its own first words where they are that name."""
        return self.error[len(name) + 2:] if self.names == name else self.error


@dataclass
class Health:
    """What /metrics says of one watch: a stale or failing cache is visible and alertable."""

    synced: bool = False
    last_event: float | None = None
    """time.time() when it last heard from the server: a list, a checked event, a bookmark, a watch ended as asked."""
    relists: int = 0
    errors: int = 0
    last_error: str = ""
    names: str = ""
    """What the last error names first (Fault.names)."""
    reason: str = ""
    """Why the last read failed, briefly, as `check` says it in a step's summary (collect.cluster.why)."""
    lasting: bool = False
    """Whether the last failure is one waiting cannot clear (401, 403, a missing API: the error's `lasting`)."""
    denied: bool = False
    """Whether the last failure is the server refusing the credentials (401) or the role (403, a role without watch
    among them): no read succeeds until someone fixes them, so the source fails at once, listed or not."""
    failing_since: float | None = None
    """time.monotonic() since which it has not heard from the server while failing (None: heard since)."""
    watch_refused: bool | None = None
    """Whether the last watch was answered 403 (a role with get and list only, as `check` needs); None before
    one was answered."""
    failed_at: float | None = None  # time.time() of the last failure
    awaiting: float | None = None
    """time.monotonic() since which its watch has been waiting for the API server's answer (its status line and
    headers; None once answered): until then, the source is current only as of its last word."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def down(self) -> bool:
        """Whether it failed since it last heard from the server: what it holds may be out of date."""
        return self.failed_at is not None and (self.last_event is None or self.failed_at >= self.last_event)

    def saw(self) -> None:
        """It heard from the server (a list done, a checked event, a bookmark, a watch ended as asked): the
        source is current."""
        with self.lock:
            self.last_event, self.failing_since = time.time(), None

    def failed(self, error: str, reason: str = "", lasting: bool = False, since: float | None = None,
               names: str = "", denied: bool = False) -> None:
        """A read failed; `since` (time.monotonic()): when the failure began, if before now (a watch silent since);
        `names`: what `error` names first (Fault.names); `denied`: a 401 or 403 (Health.denied)."""
        with self.lock:
            self.errors += 1
            self.failed_at = time.time()
            self.last_error, self.names, self.reason, self.lasting = error, names, reason, lasting
            self.denied = denied
            if self.failing_since is None:
                self.failing_since = time.monotonic() if since is None else since

    def failing_at(self) -> float | None:
        """time.time() since which it has failed without hearing from the server (None: heard since)."""
        since = self.failing_since
        return None if since is None else time.time() - (time.monotonic() - since)

    @property
    def said(self) -> Fault:
        """The last error ("not listed yet" before any)."""
        return Fault(self.last_error, self.names) if self.last_error else Fault("not listed yet")

    def fault(self, now: float) -> Fault | None:
        """The error the report shows for this source at `now` (time.monotonic()); None while it is sound: its
        reads failing with nothing heard for STALE_AFTER seconds, or refused for good: never listed, or denied
        (Health.denied: a watch answered 403 by a get-and-list role, a token expired while serving), said at once,
        as waiting cannot clear it and the watch that would keep its state current is gone. A watch merely open
        is no sign (a server can answer one and send nothing): one ended as asked is (RECHECK)."""
        with self.lock:
            if self.failing_since is not None and self.lasting and (self.denied or not self.synced):
                return Fault(self.last_error, self.names)
            if self.failing_since is None or now - self.failing_since < STALE_AFTER:
                return None
            return Fault(f"{self.last_error} (failing for over {STALE_AFTER:g}s: its last state is not reported)",
                         self.names)


class Expired(Exception):
    """The server no longer holds the resourceVersion asked for (410 Gone): relist."""


class Overdue(ValueError):
    """A watch not answered within the request timeout, or still open past its timeoutSeconds and READ_GRACE: the
    server failed to answer it, or to end it."""

    def __init__(self, message: str, since: float):
        super().__init__(message)
        self.since = since
        """time.monotonic() when the watch last sent a checked event or a bookmark (or was answered)."""


STATUS_MAX = 1 << 16
"""Bytes of a refused watch's answer read for its Status message (a few hundred, from an API server)."""


class Renewed(Exception):
    """A watch refused with 401 whose credentials were made again (an exec plugin's, a token file's): watch again."""


class Moved(Exception):
    """The object a source of one follows is gone from its selectors, or none was there and one came: list again."""


class Refused(ValueError):
    """What a watch or a list sent cannot be held (an event too large to parse; objects past what the cache holds,
    which then says so, naming the source first: `names`): the watch fails, and the source is listed again."""

    def __init__(self, message: str, names: str = ""):
        super().__init__(message)
        self.names = names


class Reflector:
    """Keeps `sink` current for `source` from a thread of its own until `stop` is set."""

    def __init__(self, kube: Kube, source: Source, sink: Sink, stop: threading.Event,
                 watch_seconds: float = WATCH_SECONDS):
        self.kube, self.source, self.sink, self.stop = kube, source, sink, stop
        kube.role = WATCH_ROLE  # a 403 to its lists says which role watches too
        self.watch_seconds = watch_seconds
        self.health = Health()
        self.cancelled = threading.Event()
        self.dropped_all = False  # the cache dropped the source's objects for another's: the watch ends, and lists
        self._exchange: client.Exchange | None = None  # the watch being sent or read: ended by cancel()
        self.sent = 0.0  # time.monotonic() when the watch being read (or the last one) was sent
        self.seconds = 0  # the timeoutSeconds it asked
        self.heard_at = 0.0  # time.monotonic() of the watch's last event or bookmark (or of its answer)
        self.events = 0  # the changes the watch being read (or the last one) sent
        self.dropped = ""  # why the watch being read (or the last one) last dropped an object
        self._renewed = False  # whether this watch is sent again at once with credentials a 401 had made again
        self.named = ""  # the name a source of `one` follows (its list's one object; empty: it selected none)
        self.version = ""  # the resourceVersion the cache holds the source as of (its list's, then each event's)
        self.refused = False  # whether it refused an object since its watch last worked: a list is no sign then
        self.thread = threading.Thread(target=self.run, name=f"watch {source.name}", daemon=True)

    def cancel(self) -> None:
        """Stop this watch alone (the read plan no longer names what it selects), its connection at once."""
        self.cancelled.set()
        self._shut()

    def relist(self) -> None:
        """The cache dropped the source's objects to make room for another's: end the watch being read at once,
        and list again."""
        self.dropped_all = True
        self._shut()

    def _shut(self) -> None:
        exchange = self._exchange
        if exchange is not None:  # waiting for its answer or reading its body: ended at once
            exchange.end("stopped")

    def run(self) -> None:
        """List, then watch from the resourceVersion the cache holds the source as of (`self.version`): a watch that
        fails is sent again after the last event it applied, so no event is applied, nor heard, twice."""
        failures, quick = 0, 0  # quick: watches in a row the server ended early (before ON_TIME), however it did
        while not (self.stop.is_set() or self.cancelled.is_set()):
            if self.dropped_all:
                self.version = ""
            try:
                if not self.version:
                    self.version = self._list()
                self._watch()
                quick = quick + 1 if self._early() else 0
                failures = max(quick - 1, 0)  # renewed at once, once: a server ending each at once is not asked in a loop
            except Renewed:
                continue  # at once, and once: a 401 to the watch sent again is an error like any other
            except Moved:
                self.version = ""  # at once: the server's own event says the object followed is another now
                continue
            except Expired:
                self.version, quick = "", quick + 1 if self._early() else 0
                if quick < 2:
                    continue  # relist at once: the server said what to do (the history was compacted)
                failures += 1  # 410 again at once, after a bookmark or an event or none: not asked in a loop
            except Refused as e:
                self.version = ""  # what the cache holds may be short of the server's: a list replaces it
                self.health.failed(str(e), names=e.names)
                failures += 1
            except ShapeError as e:  # an object the check refuses: the cache holds its last state, not its current
                # one; listed again (backed off), which fails as check does until it is fixed, and then proves
                # nothing until a watch works (a watch sending what its list does not hold is broken)
                self.version, self.refused = "", True
                self.health.failed(safe(str(e), one_line=True), why(e), names=e.where)
                failures += 1
            except (CallError, InputError, OSError, ValueError) as e:  # Unreachable is an InputError
                self.health.failed(safe(str(e), one_line=True), why(e) if isinstance(e, CallError) else "",
                                   bool(getattr(e, "lasting", False)), getattr(e, "since", None), denied=denied(e))
                failures += 1
            except Exception as e:  # a watch thread must never die silently: retried, and counted
                self.health.failed(f"{type(e).__name__}: {safe(str(e), one_line=True)}")
                failures += 1
            if failures:
                self.stop.wait(backoff(failures))

    def _list(self) -> str:
        s, self.dropped_all = self.source, False
        with self.sink.listing(s) as keep:  # each object slimmed and charged as it arrives
            items, version = self.kube.listed(s.resource, s.namespace, label_selector=s.label_selector,
                                              field_selector=s.field_selector, keep=keep, one=s.one, trim=s.trim)
            self.sink.replace(s, items)
        self.named = str((items[0].get("metadata") or {}).get("name") or "") if s.one and items else ""
        with self.health.lock:
            self.health.relists += self.health.synced
            self.health.synced = True
        if not self.refused:
            self.health.saw()
        return version

    def _early(self) -> bool:
        """Whether the last watch ended before ON_TIME of the timeoutSeconds it asked."""
        return time.monotonic() - self.sent < self.seconds * ON_TIME

    def _watch(self) -> None:
        """Follow the watch from `self.version` until the server ends it, advancing it with each event applied
        or bookmark; or raise. Its answer (status line and headers) is due within the request timeout, and its
        end within timeoutSeconds and READ_GRACE: a server sending a byte now and then keeps neither from it."""
        import urllib3

        s = self.source
        asked = RECHECK if self.health.failing_since is not None else self.watch_seconds
        seconds = max(1, int(asked * (1 + random.random() / 5)))  # renewals spread, not all at once
        query = {k: v for k, v in {"watch": "1", "allowWatchBookmarks": "true", "resourceVersion": self.version,
                                   "timeoutSeconds": str(seconds), "labelSelector": s.label_selector,
                                   "fieldSelector": self._fields()}.items() if v}
        path = s.resource.path(s.namespace)
        url = self.kube.cfg.host + path + "?" + urllib.parse.urlencode(query)
        whole = seconds + READ_GRACE
        answer = min(whole, self.kube.timeout or whole)  # as a list's whole answer is due
        timeout = urllib3.Timeout(connect=duration.HANDSHAKE_TIMEOUT, read=whole)
        headers, used = self.kube.headers(), self.kube.credential
        exchange = self._exchange = client.Exchange()
        self.sent, self.seconds, self.events, self.dropped = time.monotonic(), seconds, 0, ""
        if self.cancelled.is_set() or self.dropped_all:  # before the exchange could be ended
            return
        with exchange:
            exchange.end_in(answer, UNANSWERED)
            self.health.awaiting = self.sent
            try:
                resp = self.kube.pool.request("GET", url, headers=headers, timeout=timeout, retries=False,
                                              redirect=False, preload_content=False, decode_content=False)
            except Exception as e:
                if self.cancelled.is_set() or self.dropped_all:
                    return
                raise self._cut(exchange.why, path, answer, self.sent) or e from None
            finally:
                self.health.awaiting = None
            opened = self.heard_at = time.monotonic()
            exchange.end_in(whole, OVERDUE)  # blank lines or a byte at a time never keep it open past this
            ended = False
            try:
                # ended while its answer came, its headers cut short may read as whole: not read
                if not (self.cancelled.is_set() or self.dropped_all or exchange.why):
                    self._read(resp, path, used)
                    ended = True
            except Exception as e:
                timed_out = isinstance(e, urllib3.exceptions.ReadTimeoutError)
                raise self._cut(exchange.why or (OVERDUE if timed_out else ""), path, answer, opened) or e from None
            finally:
                if not ended:  # the rest of a broken or abandoned body must never be read as the next answer
                    resp.close()
                resp.release_conn()
        if self.cancelled.is_set() or self.dropped_all:
            return
        if cut := self._cut(exchange.why, path, answer, opened):  # a body ending with its connection looks ended
            raise cut
        lasted = time.monotonic() - opened
        if lasted >= seconds * ON_TIME:
            self._heard()  # ended by its timeout, as asked: the server is there, however quiet the source
        elif not self.events:
            raise ValueError(f"watch {path}: the API server ended it after {lasted:.2f}s of the {seconds}s asked, "
                             "with no event" + (f" (it {self.dropped.partition(': ')[2]})" if self.dropped else ""))

    def _cut(self, why: str, path: str, answer: float, opened: float) -> Overdue | None:
        """The failure of a watch its deadline ended (None when none did): not answered within `answer` seconds of
        being sent, or still open past its timeoutSeconds and READ_GRACE after it was answered at `opened`."""
        now = time.monotonic()
        if why == UNANSWERED:
            return Overdue(f"watch {path}: no answer (status line and headers) from the API server within "
                           f"{answer:g}s", self.sent)
        if why == OVERDUE:
            return Overdue(f"watch {path}: still open {now - opened:.0f}s after it was answered, its timeoutSeconds "
                           f"{self.seconds}, with no event or bookmark for {now - self.heard_at:.0f}s", self.heard_at)
        return None

    def _read(self, resp: urllib3.BaseHTTPResponse, path: str, used: Credential | None) -> None:
        """The watch's answer, its events applied until the body ends; or raise."""
        if resp.status == 410:
            raise Expired()
        renew, self._renewed = resp.status == 401 and not self._renewed, False
        if renew and self.kube.renewed(used):  # refused again right after: the source's error, backed off
            self._renewed = True
            raise Renewed()
        if resp.status == 401:  # refused again after renewing: the error a list's 401 is
            raise self.kube.rejected(bytearray(resp.read(STATUS_MAX)))
        self.health.watch_refused = resp.status == 403
        if resp.status != 200:
            raise CallError(path, resp.status, f"watch {path} failed ({resp.status})" + (
                f"; `{WATCH_ROLE}` prints the role with watch" if resp.status == 403 else ""))
        self.kube.clock.saw(resp.status, resp.headers)
        with contextlib.closing(_lines(resp)) as lines:  # closed at once, whatever ends it
            for line in lines:
                with _parsed(line, self.source.trim) as event:
                    self.version = self._event(event, self.version)

    def _event(self, event: dict, version: str) -> str:
        """One event: an ERROR raised, a bookmark's resourceVersion kept, a change checked and applied; each
        bookmark with a resourceVersion and each change applied is hearing from the server."""
        kind, obj = event.get("type"), event.get("object")
        if not isinstance(obj, dict):
            raise ValueError("a watch event without an object")
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Expired()
            raise CallError(self.source.resource.path(), int(obj.get("code") or 0),
                            f"watch error: {obj.get('message') or obj.get('reason')}")
        if kind not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
            raise ValueError(f"a watch event of type {safe(str(kind), one_line=True)}")
        meta = obj.get("metadata")
        found = meta.get("resourceVersion") if isinstance(meta, dict) else None
        marked = isinstance(found, str) and bool(found)
        if kind == "BOOKMARK" and not marked:
            return version  # a bookmark without a resourceVersion marks nothing: no sign of life
        if kind != "BOOKMARK":
            stray, unselected = self._stray(obj)
            if stray:  # a real server never sends it: dropped, counted, the watch read on
                self.health.failed(stray)
                self.dropped = stray
                if unselected:  # a server ignoring selectors, or an object that stopped matching sent as
                    # MODIFIED: what was cached of it goes, as a real server's DELETED would take it
                    self.sink.apply(self.source, "DELETED", self.source.slim(unmanaged(obj)))
                return version
            r = self.source.resource
            check_items([obj], r.kind, r.plural)  # what a list would refuse, a watch refuses
            self.sink.apply(self.source, kind, self.source.slim(unmanaged(obj)))
            self.events += 1
            if self.source.one and (kind == "DELETED" or not self.named):
                raise Moved()
        self.heard_at = time.monotonic()
        self._heard()
        return str(found) if marked else version

    def _heard(self) -> None:
        """The watch works (a checked event, a bookmark, an end as asked): the source is current."""
        self.refused = False
        self.health.saw()

    def _stray(self, obj: dict) -> tuple[str, bool]:
        """Why `obj` is not one this watch selects (empty when it is), and whether it is of the watch's kind and
        namespace, outside its selectors only (a copy of it may be cached)."""
        s, r = self.source, self.source.resource
        meta = obj.get("metadata")
        namespace = meta.get("namespace") if isinstance(meta, dict) else None
        if (obj.get("kind"), obj.get("apiVersion")) != (r.kind, api_version(r)):
            got = f"{safe(str(obj.get('apiVersion')), one_line=True)} {safe(str(obj.get('kind')), one_line=True)}"
            return f"watch {r.path(s.namespace)}: dropped a {got}, not a {api_version(r)} {r.kind}", False
        if s.namespace and namespace != s.namespace:
            return (f"watch {r.path(s.namespace)}: dropped an object of the namespace "
                    f"{safe(str(namespace), one_line=True)}"), False
        if unmet := outside(obj, s.label_selector, self._fields()):
            return f"watch {r.path(s.namespace)}: dropped an object its selector does not select ({unmet})", True
        return "", False

    def _fields(self) -> str | None:
        """The field selector a watch asks: the source's, and for a source of one, the name of the one it follows."""
        named = f"metadata.name={self.named}" if self.source.one and self.named else None
        return ",".join(filter(None, (self.source.field_selector, named))) or None


def _lines(resp: urllib3.BaseHTTPResponse) -> Generator[bytes]:
    """The newline-separated events of a watch body, each at most answers.MAX_OBJECT bytes (one object, and no API
    server sends a larger one: Refused, unparsed, the source listed again). Only each new chunk is
    searched for a newline, and a line's pieces are joined once: a line costs its length, not its square. What
    a line holds is charged to the answers held at once (answers.MAX_IN_FLIGHT, with every list's and every
    other watch's) until the next line is read: two dozen watches each sending 8 MiB lines at once fail past it
    rather than hold them all."""
    pieces: list[bytes] = []
    held = charged = 0
    try:
        for chunk in resp.stream(1 << 16, decode_content=False):
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                line, pieces, held = b"".join([*pieces, chunk[start:end]]), [], 0
                start = end + 1
                if len(line) > answers.MAX_OBJECT:
                    break
                if line.strip():
                    charged = _charged(charged, len(line))
                    yield line
                charged = _charged(charged, 0)
            else:
                pieces.append(chunk[start:])
                held += len(chunk) - start
                if held <= answers.MAX_OBJECT:
                    charged = _charged(charged, held)
                    continue
            raise Refused(f"a watch event larger than {answers.MAX_OBJECT >> 20} MiB, more than any object an API "
                          "server sends (etcd stores 1.5 MiB at most)")
        if (line := b"".join(pieces)).strip():
            yield line
    finally:
        answers.budget.release(charged)


def _charged(charged: int, now: int) -> int:
    """`now` bytes charged to answers.budget in place of `charged`; a ValueError (`charged` still charged) when
    they would pass it."""
    if now < charged:
        answers.budget.release(charged - now)
    elif now > charged and not answers.budget.charge(now - charged):
        raise ValueError(f"the answers being read at once would pass {answers.size(answers.MAX_IN_FLIGHT)}, the "
                         "most sunkcheck holds: this watch's event was stopped")
    return now


@contextlib.contextmanager
def _parsed(line: bytes | bytearray, trim: Callable[[bytearray], Iterable[cuts.Span]] | None = None) -> Iterator[dict]:
    """One event parsed, as a list's page is (`trim` cutting its text first): refused unparsed (Refused) when the
    objects json would make of it are estimated past what sunkcheck parses at once, else charged to it
    (answers.MAX_PARSED, with every list page and every other watch's event being parsed: waiting for room) until
    the block ends."""
    if trim is not None:
        line = bytearray(line)
        cuts.empty(line, trim(line))
    estimate = answers.parsed_size(line)
    if estimate > answers.MAX_PARSED:
        raise Refused(f"a watch event of {len(line):,} bytes would take up to {estimate >> 20:,} MiB once parsed, "
                      f"more than the {answers.MAX_PARSED >> 20} MiB sunkcheck parses at once")
    answers.parsing.charge(estimate, wait=True)
    try:
        event = json_doc(line)
        if not isinstance(event, dict):
            raise ValueError(f"a watch event that is a JSON {type(event).__name__}")
        yield event
    finally:
        answers.parsing.release(estimate)


def denied(error: Exception) -> bool:
    """Whether `error` is the server refusing the credentials (a 401's lasting Unreachable, or credentials that
    cannot be made again) or the role (403)."""
    if isinstance(error, CallError):
        return error.status in (401, 403)
    return isinstance(error, Unreachable) and error.lasting


def backoff(failures: int) -> float:
    """Seconds before retry number `failures` (1, 2, ...): doubling from BACKOFF_FIRST up to BACKOFF_MAX, with
    full jitter on the upper half so that many servers restarted at once do not come back in step."""
    cap = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** min(failures - 1, 16))
    return cap / 2 + random.random() * cap / 2

