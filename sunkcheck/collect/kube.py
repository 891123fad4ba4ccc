"""Kubernetes access like kubectl's: kubeconfig(s), context, in-cluster config; raw read-only GETs
with paging, bounded retries, a deadline on each whole request, and errors that say which call failed
and why.

Requests go through the kubernetes client's Configuration and urllib3 transport (`client`); responses are parsed as
dicts (the client's model objects cost 10x the time and 3x the memory on big lists), with the cyclic GC
paused around each parse. Only GET is ever sent.
"""

from __future__ import annotations

import builtins
import functools
import http.client
import os
import random
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sunkcheck import __version__, duration
from sunkcheck.collect import answers, client, clock, cuts, httplog, proxy
from sunkcheck.collect.answers import MAX_RESPONSE as MAX_RESPONSE
from sunkcheck.collect.answers import unmanaged as unmanaged
from sunkcheck.collect.errors import (TRANSIENT, CallError, Dropped, NoConnection, Unreachable, in_tunnel, one_line,
                                      reason, retry_after, status_message)
from sunkcheck.model import InputError
from sunkcheck.snapshot import check_items, items_of
from sunkcheck.text import safe, shown_server

if TYPE_CHECKING:
    from sunkcheck.collect.kubeconfig import Credential

PAGE = 500  # kubectl's own list chunk size
MIN_PAGE = 10  # the smallest page asked for when a page of PAGE objects is too large to read or parse
RETRIES = 3  # for 429, 5xx and a connection that ended without an answer
MAX_PAGES = 10_000  # 5 million objects: a list that goes on longer is a server bug, not a cluster
MAX_RETRY_AFTER = 10.0  # seconds: honour the server, within reason
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
USER_AGENT = f"sunkcheck/{__version__}"  # what the API server's audit log names as the reader
_HEADER_TEXT = re.compile(r"[\t\x20-\x7e\x80-\xff]*")  # what an HTTP header value can hold: no line breaks


def _backoff(attempt: int) -> float:
    """Seconds before retry `attempt` + 1: doubling from 0.2s, with jitter so that clients dropped together
    do not come back together."""
    return 0.2 * 2**attempt * random.uniform(1, 1.5)


@dataclass(frozen=True)
class Resource:
    """An API resource as sunkcheck reads it."""

    plural: str
    group: str  # "" for the core group
    version: str
    namespaced: bool
    kind: str

    @property
    def api(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = self.api + (f"/namespaces/{urllib.parse.quote(namespace, safe='')}" if namespace and self.namespaced else "")
        return f"{base}/{self.plural}" + (f"/{urllib.parse.quote(name, safe='')}" if name else "")


NODEPOOLS = Resource("nodepools", "compute.coreweave.com", "v1alpha1", False, "NodePool")
NODESETS = Resource("nodesets", "sunk.coreweave.com", "v1alpha1", True, "NodeSet")
NODES = Resource("nodes", "", "v1", False, "Node")
PODS = Resource("pods", "", "v1", True, "Pod")
EVENTS = Resource("events", "", "v1", True, "Event")
DAEMONSETS = Resource("daemonsets", "apps", "v1", True, "DaemonSet")
RESOURCES = (NODEPOOLS, NODESETS, NODES, PODS, EVENTS, DAEMONSETS)


def api_version(resource: Resource) -> str:
    return f"{resource.group}/{resource.version}" if resource.group else resource.version


READ_VERBS = ("get", "list")  # all a check ever does
SERVE_VERBS = (*READ_VERBS, "watch")  # and `sunkcheck serve`, which watches what it listed


def cluster_role(name: str = "sunkcheck", verbs: tuple[str, ...] = READ_VERBS) -> dict:
    """The least-privilege ClusterRole a run needs, derived from RESOURCES (one source of truth)."""
    groups: dict[str, list[str]] = {}
    for r in RESOURCES:
        groups.setdefault(r.group, []).append(r.plural)
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": [{"apiGroups": [g], "resources": sorted(rs), "verbs": list(verbs)}
                      for g, rs in sorted(groups.items())]}


MISSING_API = {
    NODEPOOLS.group: "this cluster has no NodePool API (compute.coreweave.com/v1alpha1) — is it a CKS cluster?",
    NODESETS.group: "this cluster has no NodeSet API (sunk.coreweave.com/v1alpha1) — is SUNK installed?",
}


class Kube:
    """A read-only connection to one cluster context. `request_timeout` bounds each request (its pages and
    retries included): None means duration.REQUEST_TIMEOUT, 0 no deadline at all."""

    role = "sunkcheck rbac"
    """The command printing the role this client's reads need, said with a 403 (one that watches: WATCH_ROLE)."""

    def __init__(self, kubeconfig: str | None = None, context: str | None = None, request_timeout: float | None = None):
        from sunkcheck.collect import kubeconfig as kc

        configuration, rest = client.transport()
        self.timeout = duration.REQUEST_TIMEOUT if request_timeout is None else request_timeout or None
        self.timeout_source = "the default deadline; --request-timeout changes it" if request_timeout is None \
            else "--request-timeout"
        cfg = configuration.Configuration()
        cfg.proxy = None  # not the client's choice from the environment: kubectl's, below
        self.context = context or ""
        self._namespace: tuple[str | None, str] = None, ""  # the context's namespace, and where it was set
        self.credential: Credential | None = None  # one a kubeconfig made, and how to make it again
        self._remake: Callable[[], Credential] | None = None
        self._renewing = threading.Lock()  # watches ask for headers in several threads: one plugin run serves them
        paths, named = kc.files(kubeconfig)
        if paths:
            merged = kc.merge(paths)
            shown = os.pathsep.join(map(str, paths))
            self.context = context or merged["current-context"]
            chosen = kc.context(merged, self.context, f"kubeconfig {shown}")
            self._remake = functools.partial(kc.credential, merged, context, self.timeout, f"kubeconfig {shown}")
            self.credential = self._remake()
            client.configure(cfg, self.credential.connection)
            self._namespace = chosen.get("namespace"), f"kubeconfig {shown}: context {self.context}"
            if not cfg.verify_ssl and cfg.ssl_ca_cert:  # kubectl's refusal, in its words
                raise InputError(f"kubeconfig {shown}: context {self.context}: specifying a root certificates file "
                                 "with the insecure flag is not allowed")
        elif named:
            raise InputError(f"kubeconfig {kubeconfig or os.environ.get('KUBECONFIG')}: no such file")
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            self._load_in_cluster(cfg)
        else:
            raise InputError(f"no kubeconfig ({Path.home() / '.kube' / 'config'} does not exist, $KUBECONFIG unset) "
                             "and not running in a Pod")
        cfg.retries = False  # sunkcheck retries itself, visibly and within the request timeout
        self.answered = False  # whether the API server has answered a request yet (a connection works)
        self.clock = clock.ServerClock()  # the API server's time, from its answers' Date headers
        self.server = shown_server(cfg.host)  # meta.json and messages never carry a password or token
        # a kubeconfig's proxy-url serves every host, as in kubectl; else the environment's, by kubectl's rules
        self.proxy = (cfg.proxy, "the kubeconfig's proxy-url") if cfg.proxy else proxy.from_environment(cfg.host, os.environ)
        if self.proxy and (why := proxy.problem(self.proxy[0])):  # before urllib3 quotes it, password and all
            where = f"kubeconfig {shown}: context {self.context}: proxy-url" if cfg.proxy else self.proxy[1]
            raise InputError(f"{where} {shown_server(safe(self.proxy[0], one_line=True))[:200]!r}: {why}")
        cfg.proxy, cfg.no_proxy = self.proxy and self.proxy[0], ""  # NO_PROXY is applied already
        # for an HTTP proxy's CONNECT; a SOCKS proxy gets them from its URL (the client would send these headers to
        # the API server on every request)
        cfg.proxy_headers = self.proxy and self.proxy[0].startswith("http") and client.proxy_authorization(self.proxy[0])
        if cfg.host.startswith("https") and not cfg.verify_ssl:
            client.warn_insecure(self.server)
        self.cfg = cfg
        self.pool = client.pool_manager(rest, cfg)

    def _renew(self, refused: Credential | None = None) -> bool:
        """Make the credential again when it has expired, or after a 401 to `refused` while that is still the one in
        use (other threads may have renewed it already); whether the credential in use changed. A plugin that now
        fails leaves nothing to read with: the run's API server is unusable, as after a 401."""
        with self._renewing:
            held, remake = self.credential, self._remake
            if held is None or remake is None or not (time.time() >= held.expires or (held.renewable and refused is held)):
                return held is not refused
            try:
                made = remake()
            except InputError as e:
                raise Unreachable(f"cannot renew the credentials for {self.server}: {e}", lasting=True) from None
            files = self.cfg.cert_file, self.cfg.key_file
            client.authorize(self.cfg, made.connection)
            if (self.cfg.cert_file, self.cfg.key_file) != files:  # the pool's connections hold the old certificate
                self.pool = client.pool_manager(client.transport()[1], self.cfg)
            self.credential = made
            return True

    def renewed(self, refused: Credential | None) -> bool:
        """A watch's 401 (a list's is renewed in `_fetch`): the credentials it was sent with made again."""
        return self._renew(refused)

    def _load_in_cluster(self, cfg: Any) -> None:
        ConfigException, InClusterConfigLoader = client.in_cluster_loader()
        try:
            InClusterConfigLoader(token_filename=str(SERVICE_ACCOUNT / "token"),
                                  cert_filename=str(SERVICE_ACCOUNT / "ca.crt")).load_and_set(cfg)
        except ConfigException as e:
            raise InputError(f"in-cluster config: {one_line(e)}") from None
        self.context = "in-cluster"
        ns_file = SERVICE_ACCOUNT / "namespace"
        self._namespace = ns_file.read_text().strip() if ns_file.exists() else None, f"in-cluster config: {ns_file}"

    @property
    def namespace(self) -> str:
        """The context's namespace, kubectl's default for -n (checked as -n is only when it is used)."""
        from sunkcheck.collect import kubeconfig as kc

        return kc.namespace(*self._namespace)

    # --- raw GET --------------------------------------------------------------------------------

    def get(self, path: str, query: dict | None = None, deadline: float | None = None) -> dict:
        """GET `path` as JSON, retrying 429/5xx with backoff (Retry-After honoured), all before `deadline`
        (a time.monotonic() value; by default the request timeout from now)."""
        with answers.parsed(*self._fetch(path, query, deadline)) as doc:
            return doc

    def _fetch(self, path: str, query: dict | None = None, deadline: float | None = None) -> tuple[bytearray, str]:
        """get's answer unparsed, and the request as shown in messages."""
        deadline = deadline or self._deadline()
        query = {k: v for k, v in (query or {}).items() if v not in (None, "")}
        shown = path + ("?" + urllib.parse.urlencode(query) if query else "")
        url = self.cfg.host + shown
        headers, used, renewed = self.headers(), self.credential, False
        for attempt in range(RETRIES + 1):
            try:
                status, body, after = self._send(url, headers, shown, deadline)
            except Dropped as e:  # a GET is safe to send again, as client-go sends it
                late = "" if attempt == RETRIES else self._wait(_backoff(attempt), deadline)
                if attempt == RETRIES or late:
                    raise self._gave_up(e, late or f", {attempt + 1} times") from None
                continue
            if status == 200:
                return body, shown
            if (status == 429 or status >= 500) and attempt < RETRIES:
                pause = min(after, MAX_RETRY_AFTER) if after is not None else _backoff(attempt)
                if late := self._wait(pause, deadline):
                    raise CallError(shown, status, f"GET {shown} failed ({status}){late}")
                continue
            if status == 401 and not renewed and self._renew(used):  # once, as a rotated credential needs
                headers, used, renewed = self.headers(), self.credential, True
                continue
            error = self._error(status, body, shown)
            answers.drop(body)  # the traceback would keep it
            raise error
        raise AssertionError("unreachable")  # pragma: no cover - the loop always returns or raises

    def headers(self) -> dict[str, str]:
        """Every GET's headers, credentials included (a watch sends them too), renewed first if they expired."""
        self._renew()
        headers = {"Accept": "application/json", "Accept-Encoding": "identity", "User-Agent": USER_AGENT}
        headers |= {a["key"]: a["value"] for a in self.cfg.auth_settings().values() if a["value"]}
        if not all(_HEADER_TEXT.fullmatch(v) for v in headers.values()):  # else urllib3's error quotes the token
            raise Unreachable(f"the credentials for {self.server} hold a line break or a character no HTTP header can "
                              "carry (a newline at the end of a token file?): not sent")
        return headers

    def _wait(self, pause: float, deadline: float | None) -> str:
        """Sleep `pause` before a retry; or, when the retry could not end in time, say so at once."""
        if deadline is not None and time.monotonic() + pause >= deadline:
            return f" and waiting {pause:.2g}s to retry would pass the {self.timeout:g}s deadline ({self.timeout_source})"
        time.sleep(pause)
        return ""

    def _gave_up(self, e: Dropped, why: str) -> Exception:
        """What a GET that got no answer means for the run: a connection never made, before the API server first
        answered, that it cannot be used at all; after, as any other failed read, that this read failed."""
        if not isinstance(e, NoConnection):
            return CallError(e.path, 0, e.message + why)
        return CallError(e.path, 0, f"GET {e.path}: {e.message}{why}") if self.answered else Unreachable(e.message)

    def _deadline(self) -> float | None:
        return None if self.timeout is None else time.monotonic() + self.timeout

    def _send(self, url: str, headers: dict, shown: str, deadline: float | None) -> tuple[int, bytearray, float | None]:
        """One GET exchange (the only place a request is sent). Socket timeouts bound each wait, but a server
        can dribble headers or body a byte at a time: the exchange runs in a thread that this one stops
        waiting for at the deadline, its connection then shut down, so that the thread ends too."""
        import urllib3

        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise self._timed_out(shown)
        connect = duration.HANDSHAKE_TIMEOUT if remaining is None else min(duration.HANDSHAKE_TIMEOUT, remaining)
        timeout = urllib3.Timeout(connect=connect, read=remaining)
        outcome: dict = {}
        started = time.monotonic()
        exchange = client.Exchange()

        def run() -> None:
            try:
                with exchange:
                    resp = self.pool.request(
                        "GET", url, headers=headers, timeout=timeout, retries=False, redirect=False,
                        preload_content=False, decode_content=False)
                    outcome["response"] = resp
                    encoding = resp.headers.get("Content-Encoding", "identity").lower()
                    if encoding != "identity":  # never decoded: a small gzip body can expand to gigabytes
                        resp.close()
                        raise CallError(shown, resp.status, f"GET {shown}: the API server sent a {one_line(encoding)}"
                                                            "-encoded body sunkcheck did not ask for (it accepts identity only)")
                    outcome["result"] = (resp.status, answers.read(resp, shown),
                                         retry_after(resp.headers.get("Retry-After")))
            except Exception as e:  # handed to the waiting thread, which maps it
                outcome["error"] = e

        worker = threading.Thread(target=run, name=f"GET {shown}", daemon=True)
        worker.start()
        worker.join(remaining)
        if worker.is_alive():
            exchange.end("timed out")  # its read ends now, status line and headers or body
            raise self._timed_out(shown)
        if "error" in outcome:
            raise self._failure(outcome["error"], shown, deadline) from None
        status, body, after = outcome["result"]
        self.answered = True
        self.clock.saw(status, outcome["response"].headers)
        # the server as shown: its userinfo, query and fragment (kubectl sends neither) are no part of the line
        httplog.request("GET", self.server + shown, status, time.monotonic() - started, len(body), headers,
                        outcome["response"].headers)
        return status, body, after

    def _timed_out(self, shown: str) -> CallError:
        return CallError(shown, 0, f"GET {shown} timed out after {self.timeout:g}s ({self.timeout_source})")

    def _failure(self, error: Exception, shown: str, deadline: float | None) -> Exception:
        """What a transport error means for the run."""
        import urllib3

        if isinstance(error, CallError):
            return error
        if isinstance(error, urllib3.exceptions.ProxyError) and self.proxy:  # not the API server's failure
            return self._no_connection(shown, self._proxy_failed(reason(error.original_error)), error)
        if isinstance(error, urllib3.exceptions.NewConnectionError):  # a TimeoutError subclass: test it first
            # a SOCKS proxy's failures come as the API server's, connected through it
            return self._no_connection(shown, self._proxy_failed(reason(error)) if self._socks else
                                       f"cannot reach the API server {self.server}: {reason(error)}", error)
        if isinstance(error, urllib3.exceptions.TimeoutError):
            # socket waits end at the deadline, never before it: earlier, connecting hit its own limit
            if deadline is None or time.monotonic() < deadline:
                return Unreachable(f"cannot reach the API server {self.server}: no connection (TCP and TLS) within "
                                   f"{duration.HANDSHAKE_TIMEOUT:g}s")
            return self._timed_out(shown)
        if isinstance(error, urllib3.exceptions.ProtocolError):  # connected, then no answer or an unreadable one
            cause = error.args[-1] if error.args else error
            if self.proxy and in_tunnel(cause):  # the proxy's answer to CONNECT, not the API server's
                return self._no_connection(shown, self._proxy_failed(f"its answer to CONNECT cannot be read "
                                                                     f"({reason(cause)})"), cause)
            if self.proxy and not self._socks and proxy.tunnel_closed(cause):
                return self._no_connection(shown, self._proxy_failed(proxy.TUNNEL_CLOSED), cause)
            if isinstance(cause, urllib3.exceptions.InvalidChunkLength) and cause.length:  # not a cut-off: a wrong one
                return CallError(shown, 0, f"GET {shown}: the API server's answer cannot be read (a chunk's length "
                                           f"is {one_line(cause.length[:40].decode('latin-1').strip())})")
            if isinstance(cause, http.client.HTTPException) and not isinstance(
                    cause, (http.client.IncompleteRead, ConnectionError)):  # a status line or headers past the limits
                return CallError(shown, 0, f"GET {shown}: the API server's answer cannot be read ({one_line(cause)}; "
                                           "sunkcheck reads at most 100 headers, of up to 64 KiB a line)")
            return Dropped(shown, 0, f"GET {shown}: the connection to {self.server} ended without an answer "
                                      f"({reason(cause)})")  # reset, or closed before the answer or its end
        if isinstance(error, urllib3.exceptions.InvalidHeader):  # two different Content-Lengths
            return CallError(shown, 0, f"GET {shown}: the API server's answer cannot be read ({one_line(error)})")
        if isinstance(error, urllib3.exceptions.SSLError):
            if self.proxy and not self._socks and proxy.tunnel_closed(error):
                return self._no_connection(shown, self._proxy_failed(proxy.TUNNEL_CLOSED), error)
            return Unreachable(f"TLS failure talking to {self.server}: {reason(error)}")
        if isinstance(error, (urllib3.exceptions.HTTPError, OSError)):
            return Unreachable(f"cannot reach the API server {self.server}: {reason(error)}")
        return error

    @property
    def _socks(self) -> bool:
        return self.proxy is not None and self.proxy[0].startswith("socks")

    def _proxy_failed(self, reason: str) -> str:
        proxy_url, source = self.proxy or ("", "")
        if password := urllib.parse.unquote(urllib.parse.urlsplit(proxy_url).password or ""):
            reason = reason.replace(password, "***")  # a proxy may quote what it was sent
        return (f"the proxy {shown_server(proxy_url)} ({source}) failed: {reason}; the API server {self.server} "
                "was not reached")

    def _no_connection(self, shown: str, message: str, error: BaseException) -> Dropped | Exception:
        """A connection that could not be made: sent again when what ended it passes (a refusal, a reset, a proxy's
        5xx or 429), else given up on at once."""
        failed = NoConnection(shown, 0, message)
        return failed if TRANSIENT.search(str(error)) else self._gave_up(failed, "")

    def rejected(self, body: bytearray) -> Unreachable:
        """A 401's error, a list's and a watch's alike: it names no request, so serve tells the credentials refused
        once for every source, as the API server gone."""
        return Unreachable(f"the API server {self.server} rejected the credentials (401 Unauthorized): "
                           f"{status_message(body)}", lasting=True)

    def _error(self, status: int, body: bytearray, shown: str) -> Exception:
        if status == 401:
            return self.rejected(body)
        message = status_message(body)
        if status == 403:
            return CallError(shown, 403, f"forbidden: {message} (403; `{self.role}` prints the role a run needs)")
        return CallError(shown, status, f"GET {shown} failed ({status}): {message}")

    def list(self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, keep: Callable[[dict], dict | None] | None = None,
             trim: Callable[[bytearray], Iterable[cuts.Span]] | None = None) -> list[dict]:
        """Every item of a list, page by page (limit/continue), as dicts, within one request timeout, each
        checked (snapshot.check_items) as its page arrives: a replay of the list would refuse what it refuses.
        `keep` then trims each item, or drops it (None), so that a large list never holds every full object
        at once; `trim` finds lists never read in each page's text, emptied before it is parsed (collect.cuts)."""
        return self.listed(resource, namespace, label_selector=label_selector, field_selector=field_selector,
                           keep=keep, trim=trim)[0]

    def listed(self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None,
               field_selector: str | None = None, keep: Callable[[dict], dict | None] | None = None,
               trim: Callable[[bytearray], Iterable[cuts.Span]] | None = None, one: bool = False,
               ) -> tuple[builtins.list[dict], str]:
        """list's items and the list's resourceVersion (a watch goes on from it; "" when the server gave none): the
        first page's, as client-go's pager takes it (from the last page's, a watch missed what a server whose later
        pages are of later moments deleted after the first: cached for good). `one`: the first item alone."""
        items: builtins.list[dict] = []
        token, tag, deadline = None, (resource.kind, api_version(resource)), self._deadline()
        path, seen, received, names = resource.path(namespace), set[int](), 0, dict[tuple, int]()

        def fetch(token: str | None, limit: int) -> tuple[bytearray, str, int, int]:
            """The page after `token`, its parse estimate and its limit: a page too large to read or to parse
            (many large objects, as real GPU Nodes are) is asked again with half the limit, down to MIN_PAGE."""
            while True:
                try:
                    body, shown = self._fetch(path, {"labelSelector": label_selector, "fieldSelector": field_selector,
                                                     "limit": limit, "continue": token}, deadline)
                    if trim:
                        cuts.empty(body, trim(body))
                    return body, shown, answers.estimated(body, shown), limit
                except answers.Oversized:
                    if limit == MIN_PAGE:
                        raise
                    limit = max(limit // 2, MIN_PAGE)  # the same token: a list's pages may change their limit
                except CallError as e:
                    if e.status == 404 and resource.group in MISSING_API:
                        raise CallError(e.path, 404, MISSING_API[resource.group]) from None
                    raise

        ahead: tuple[str, answers.Ahead] | None = None  # the next page, asked for while this one is parsed
        guessing, limit = not one, 1 if one else PAGE
        for pages in range(1, MAX_PAGES + 1):
            if ahead and ahead[0] != token:  # a head that lied: its request is left running (it may hang until the
                guessing = False  # deadline), so one is all a server gets; real heads never lie
            body, shown, objects, limit = ahead[1].result() if ahead and ahead[0] == token else fetch(token, limit)
            guess = answers.continue_ahead(body) if guessing and pages < MAX_PAGES else None
            ahead = (guess, answers.Ahead(fetch, guess, limit)) if guess and hash(guess) not in seen else None
            with answers.parsed(body, shown, objects) as page:  # charged until what is not kept of it can go
                found = items_of(page)
                if found is None:
                    raise CallError(path, 200, f"GET {path}: the API server answered with items that are not a list")
                check_items(found, resource.kind, resource.plural, received, names)  # before anything reads them
                received += len(found)
                httplog.page(resource.plural, len(found))
                for item in found:  # list items come without them; the parsed page is ours to change
                    item["kind"], item["apiVersion"] = tag
                    unmanaged(item)
                items += filter(None, map(keep, found)) if keep else found
                meta = page.get("metadata")
                del page, found
            if pages == 1:
                version = v if isinstance(meta, dict) and isinstance(v := meta.get("resourceVersion"), str) else ""
            token = meta.get("continue") if isinstance(meta, dict) and not one else None
            if not token:
                return items[:1] if one else items, version
            if not isinstance(token, str):
                raise CallError(path, 200, f"GET {path}: the API server answered with a continue token that is "
                                           "not a string")
            if hash(token) in seen:  # a hash, not the token: a hostile server's tokens can be huge
                raise CallError(path, 200, f"GET {path}: the API server repeated a continue token after "
                                           f"{len(seen) + 1} pages; stopped")
            seen.add(hash(token))
        raise CallError(path, 200, f"GET {path}: more than {MAX_PAGES:,} pages of {limit}; stopped")

    def read(self, resource: Resource, name: str, namespace: str | None = None) -> dict | None:
        """One object by name, or None when it does not exist; checked as a list's items are."""
        try:
            found = unmanaged(self.get(resource.path(namespace, name))) | {"kind": resource.kind,
                                                                             "apiVersion": api_version(resource)}
            check_items([found], resource.kind, resource.path(namespace, name))
            return found
        except CallError as e:
            if e.status == 404:
                if resource.group in MISSING_API and not self._served(resource):
                    raise CallError(e.path, 404, MISSING_API[resource.group]) from None
                return None
            raise

    def named(self, resource: Resource, name: str, namespace: str | None) -> builtins.list[dict]:  # Kube.list shadows it
        """The object called `name` (in every namespace when `namespace` is None); missing is an error."""
        if namespace is None:
            return self.list(resource, field_selector=f"metadata.name={name}")
        found = self.read(resource, name, namespace)
        if found is None:
            raise CallError(resource.path(namespace, name), 404, f"{resource.kind} {name} not found in namespace {namespace}")
        return [found]

    def _served(self, resource: Resource) -> bool:
        try:
            doc = self.get(resource.api)
        except CallError:
            return False
        return any(r.get("name") == resource.plural for r in doc.get("resources") or ())

    def version(self) -> str:
        return str(self.get("/version").get("gitVersion", "unknown"))
