"""Kubernetes access like kubectl's: kubeconfig(s), context, in-cluster config; raw read-only GETs
with paging, bounded retries and errors that say which call failed and why.

Responses are parsed as dicts (the client's model objects cost 10x the time and 3x the memory on big
lists), with the cyclic GC paused around each parse. Only GET is ever sent.
"""

from __future__ import annotations

import gc
import json
import os
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Callable

from sunkcheck.model import InputError

PAGE = 500  # kubectl's own list chunk size
RETRIES = 3  # for 429 and 5xx
MAX_RETRY_AFTER = 10.0  # seconds: honour the server, within reason
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
on_request: Callable | None = None
"""Called after each response (sunkcheck.verbose: `-v 6` lines, the progress line)."""


class Unreachable(InputError):
    """The API server cannot be used at all (connection, TLS, authentication): nothing can be checked."""


@dataclass
class CallError(Exception):
    """One GET failed; the steps that need it are reported unknown, the others carry on."""

    path: str
    status: int
    message: str

    def __str__(self) -> str:
        return self.message


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

    @property
    def display(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

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
READ_VERBS = ("get", "list")  # all sunkcheck ever does


def cluster_role(name: str = "sunkcheck") -> dict:
    """The least-privilege ClusterRole a run needs, derived from RESOURCES (one source of truth)."""
    groups: dict[str, list[str]] = {}
    for r in RESOURCES:
        groups.setdefault(r.group, []).append(r.plural)
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": [{"apiGroups": [g], "resources": sorted(rs), "verbs": list(READ_VERBS)}
                      for g, rs in sorted(groups.items())]}


MISSING_API = {
    NODEPOOLS.group: "this cluster has no NodePool API (compute.coreweave.com/v1alpha1) — is it a CKS cluster?",
    NODESETS.group: "this cluster has no NodeSet API (sunk.coreweave.com/v1alpha1) — is SUNK installed?",
}


@dataclass
class Stats:
    """What a run cost: requests sent and bytes read (thread-safe counters)."""

    requests: int = 0
    bytes: int = 0
    log: list[tuple[str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, method: str, url: str, status: int, size: int) -> None:
        with self.lock:
            self.requests += 1
            self.bytes += size
            self.log.append((method, url, status))


def context_names(kubeconfig: str | None = None) -> list[str]:
    """Every context of the kubeconfig ($KUBECONFIG files merged), for --all-contexts."""
    import yaml
    from kubernetes import config

    files = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    try:
        contexts, _ = config.list_kube_config_contexts(config_file=files)
    except (config.ConfigException, yaml.YAMLError, OSError, ValueError, TypeError, KeyError) as e:
        raise InputError(f"kubeconfig {files}: {_one_line(e)}") from None
    return sorted(c["name"] for c in contexts or ())


class Kube:
    """A read-only connection to one cluster context."""

    def __init__(self, kubeconfig: str | None = None, context: str | None = None, request_timeout: float | None = None):
        import yaml
        from kubernetes import client, config

        cfg = client.Configuration()
        self.context, self.namespace = context or "", "default"
        files = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
        explicit = bool(kubeconfig or os.environ.get("KUBECONFIG"))
        if explicit or Path(files).exists():
            try:
                config.load_kube_config(config_file=files, context=context, client_configuration=cfg,
                                        persist_config=False)
                contexts, active = config.list_kube_config_contexts(config_file=files)
            except config.ConfigException as e:
                raise InputError(f"kubeconfig {files}: {_one_line(e)}") from None
            except yaml.YAMLError as e:
                raise InputError(f"kubeconfig {files}: not valid YAML ({_one_line(e)})") from None
            except (OSError, ValueError, TypeError, KeyError) as e:
                raise InputError(f"kubeconfig {files}: cannot use it ({type(e).__name__}: {_one_line(e)})") from None
            chosen = next((c for c in contexts if c.get("name") == context), active) if context else active
            self.context = (chosen or {}).get("name", "")
            self.namespace = ((chosen or {}).get("context") or {}).get("namespace") or "default"
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            self._load_in_cluster(cfg)
        else:
            raise InputError(f"no kubeconfig ({files} does not exist, $KUBECONFIG unset) and not running in a Pod")
        cfg.retries = False  # sunkcheck retries itself, visibly and within the request timeout
        self.server = without_userinfo(cfg.host)  # meta.json and messages never carry a password
        self.timeout = request_timeout
        self.api = client.ApiClient(cfg)
        self.stats = Stats()

    def _load_in_cluster(self, cfg) -> None:
        from kubernetes import config
        from kubernetes.config.incluster_config import InClusterConfigLoader

        try:
            InClusterConfigLoader(token_filename=str(SERVICE_ACCOUNT / "token"),
                                  cert_filename=str(SERVICE_ACCOUNT / "ca.crt")).load_and_set(cfg)
        except config.ConfigException as e:
            raise InputError(f"in-cluster config: {_one_line(e)}") from None
        self.context = "in-cluster"
        ns_file = SERVICE_ACCOUNT / "namespace"
        self.namespace = ns_file.read_text().strip() if ns_file.exists() else "default"

    # --- raw GET --------------------------------------------------------------------------------

    def get(self, path: str, query: dict | None = None) -> dict:
        """GET `path` as JSON, retrying 429/5xx with backoff (Retry-After honoured)."""
        query = {k: v for k, v in (query or {}).items() if v not in (None, "")}
        method, url, headers, _, _ = self.api.param_serialize(
            "GET", path, query_params=list(query.items()), header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"])
        shown = path + ("?" + urllib.parse.urlencode(query) if query else "")
        for attempt in range(RETRIES + 1):
            status, body, retry_after = self._send(method, url, headers, shown)
            if status == 200:
                return _parse(body, shown)
            if (status == 429 or status >= 500) and attempt < RETRIES:
                time.sleep(min(retry_after if retry_after is not None else 0.2 * 2**attempt, MAX_RETRY_AFTER))
                continue
            raise self._error(status, body, shown)
        raise AssertionError("unreachable")  # pragma: no cover - the loop always returns or raises

    def _send(self, method: str, url: str, headers: dict, shown: str) -> tuple[int, bytes, float | None]:
        import urllib3
        from kubernetes.client.exceptions import ApiException

        started = time.monotonic()
        try:
            resp = self.api.call_api(method, url, headers, _request_timeout=self.timeout)
            body = resp.read()
        except urllib3.exceptions.NewConnectionError as e:  # a ConnectTimeoutError subclass: test it first
            raise Unreachable(f"cannot reach the API server {self.server}: {_reason(e)}") from None
        except urllib3.exceptions.ConnectTimeoutError:
            raise Unreachable(f"cannot reach the API server {self.server}: connect timed out") from None
        except urllib3.exceptions.TimeoutError:
            raise CallError(shown, 0, f"GET {shown} timed out after {self.timeout:g}s (--request-timeout)") from None
        except ApiException as e:  # the client wraps TLS failures this way
            raise Unreachable(f"TLS failure talking to {self.server}: {_one_line(e.reason)}") from None
        except urllib3.exceptions.HTTPError as e:
            raise Unreachable(f"cannot reach the API server {self.server}: {_reason(e)}") from None
        self.stats.add(method, url, resp.status, len(body))
        if on_request is not None:
            on_request(method, url, resp.status, time.monotonic() - started, len(body), headers, resp.headers)
        return resp.status, body, _retry_after(resp.headers.get("Retry-After"))

    def _error(self, status: int, body: bytes, shown: str) -> Exception:
        message = _status_message(body)
        if status == 401:
            return Unreachable(f"the API server {self.server} rejected the credentials (401 Unauthorized): {message}")
        if status == 403:
            return CallError(shown, 403, f"forbidden: {message} (403; `sunkcheck rbac` prints the role a run needs)")
        return CallError(shown, status, f"GET {shown} failed ({status}): {message}")

    def list(self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, keep: Callable[[dict], dict | None] | None = None) -> list[dict]:
        """Every item of a list, page by page (limit/continue), as dicts; `keep` trims each item as its
        page arrives, or drops it (None), so that a large list never holds every full object at once."""
        items: list[dict] = []
        token, tag = None, (resource.kind, _api_version(resource))
        while True:
            try:
                page = self.get(resource.path(namespace), {"labelSelector": label_selector, "fieldSelector": field_selector,
                                                           "limit": PAGE, "continue": token})
            except CallError as e:
                if e.status == 404 and resource.group in MISSING_API:
                    raise CallError(e.path, 404, MISSING_API[resource.group]) from None
                raise
            found = page.get("items") or []
            for item in found:  # list items come without them; the parsed page is ours to change
                item["kind"], item["apiVersion"] = tag
                _unmanaged(item)
            items += filter(None, map(keep, found)) if keep else found
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    def read(self, resource: Resource, name: str, namespace: str | None = None) -> dict | None:
        """One object by name, or None when it does not exist."""
        try:
            return _unmanaged(self.get(resource.path(namespace, name))) | {"kind": resource.kind,
                                                                            "apiVersion": _api_version(resource)}
        except CallError as e:
            if e.status == 404:
                if resource.group in MISSING_API and not self._served(resource):
                    raise CallError(e.path, 404, MISSING_API[resource.group]) from None
                return None
            raise

    def named(self, resource: Resource, name: str, namespace: str | None) -> list[dict]:
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


def without_userinfo(url: str) -> str:
    """`https://user:pass@host:6443/x` -> `https://host:6443/x`."""
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl() if "@" in parts.netloc else url


def _unmanaged(obj: dict) -> dict:
    """Drop the server's field-manager bookkeeping as it arrives, as `kubectl get -o json` does: never read,
    and a large share of a real object's size (so of peak memory on a big list)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def _api_version(resource: Resource) -> str:
    return f"{resource.group}/{resource.version}" if resource.group else resource.version


def _parse(body: bytes, shown: str) -> dict:
    # Pausing the cyclic GC makes parsing a large list several times faster (no collections of the
    # millions of young containers json creates).
    enabled = gc.isenabled()
    gc.disable()
    try:
        doc = json.loads(body)
    except ValueError:
        raise CallError(shown, 200, f"GET {shown}: the API server answered with something that is not JSON") from None
    finally:
        if enabled:
            gc.enable()
    if not isinstance(doc, dict):
        raise CallError(shown, 200, f"GET {shown}: the API server answered with a JSON {type(doc).__name__}")
    return doc


def _status_message(body: bytes) -> str:
    try:
        doc = json.loads(body)
        return _one_line(doc.get("message") or doc.get("reason") or "no message")
    except (ValueError, AttributeError):
        return _one_line(body.decode("utf-8", "replace")[:200] or "no message")


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _reason(error: Exception) -> str:
    inner = getattr(error, "reason", None) or error
    text = str(inner)
    for known in ("Connection refused", "Name or service not known", "No route to host", "timed out",
                  "Temporary failure in name resolution", "certificate verify failed"):
        if known in text:
            return known.lower()
    return _one_line(text)


def _one_line(text) -> str:
    return " ".join(str(text).split()) if str(text).strip() else "no detail"
