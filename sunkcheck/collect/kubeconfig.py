"""sunkcheck's one kubeconfig loader, with kubectl as its reference: files merged exactly as kubectl merges
them, exec credential plugins run within a deadline, and the chosen context's connection settings made as
kubectl makes them (docs/kubernetes-client.md)."""

from __future__ import annotations

import base64
import datetime
import json
import math
import os
import re
import subprocess
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from sunkcheck import stop
from sunkcheck.model import InputError
from sunkcheck.objects import DNS_LABEL
from sunkcheck.text import json_doc, safe, shown_server

NAMED = {"clusters": "cluster", "contexts": "context", "users": "user"}
# client-go's GetClusterFileReferences / GetAuthInfoFileReferences: resolved from the file that set them
PATH_FIELDS = {"clusters": ("certificate-authority",), "users": ("client-certificate", "client-key", "tokenFile")}


def files(kubeconfig: str | None) -> tuple[list[Path], bool]:
    """The kubeconfig files to merge, in order, and whether the user named them: --kubeconfig alone, else
    $KUBECONFIG's existing files (missing ones are skipped, as kubectl does), else ~/.kube/config."""
    if kubeconfig:
        return [Path(kubeconfig).expanduser()], True
    listed = os.environ.get("KUBECONFIG")
    if listed:
        paths = dict.fromkeys(Path(p).expanduser() for p in listed.split(os.pathsep) if p)
        return [p for p in paths if p.exists()], True
    default = Path.home() / ".kube" / "config"
    return ([default] if default.exists() else []), False


def merge(paths: list[Path]) -> dict:
    """One kubeconfig dict: the first file to set a cluster, context or user name, or current-context,
    wins (client-go's loading rules); relative file paths are made absolute from the directory of the
    file that set them."""
    merged: dict[str, dict] = {key: {} for key in NAMED}
    current = ""
    for path in paths:
        doc = _read(path)
        base = Path(os.path.abspath(path)).parent
        for key, inner in NAMED.items():
            for name, value in _named(doc, key, inner, path).items():
                merged[key].setdefault(name, _resolved(key, value, base))
        current = current or _string(doc, "current-context", f"kubeconfig {path}") or ""
    return {"apiVersion": "v1", "kind": "Config", "current-context": current,
            **{key: [{"name": n, inner: v} for n, v in merged[key].items()] for key, inner in NAMED.items()}}


MAX_BYTES = 16 << 20  # a kubeconfig is kilobytes; /dev/zero or a runaway file is not one


def _read(path: Path) -> dict:
    """One kubeconfig file; a FIFO (`--kubeconfig <(...)`) is read without waiting for a writer, a device
    is refused unread, and no kubeconfig is larger than MAX_BYTES."""
    import yaml

    from sunkcheck.snapshot import read_regular

    if not os.path.lexists(path):  # worded as a missing $KUBECONFIG is
        raise InputError(f"kubeconfig {path}: no such file")
    try:
        doc = yaml.safe_load(read_regular(path, fifo=True, limit=MAX_BYTES).decode())
    except InputError as e:
        raise InputError(f"kubeconfig {e}") from None
    except UnicodeDecodeError:
        raise InputError(f"kubeconfig {path}: not UTF-8 text") from None
    except yaml.YAMLError as e:
        raise InputError(f"kubeconfig {path}: not valid YAML ({safe(e, one_line=True)})") from None
    except RecursionError:  # PyYAML composes and constructs recursively: a few KB of brackets reach the limit
        raise InputError(f"kubeconfig {path}: not valid YAML (nested too deeply)") from None
    if doc is None:  # an empty file is an empty config
        return {}
    if not isinstance(doc, dict):
        raise InputError(f"kubeconfig {path}: a {type(doc).__name__}, expected a Config mapping")
    if (lone := _lone_surrogate(doc)) is not None:  # kubectl's YAML parser refuses the escape that makes one
        raise InputError(f"kubeconfig {path}: not valid YAML (a string holds a lone UTF-16 surrogate "
                         f"\\u{ord(lone):04x}, not a character)")
    values, aliased = _expanded(doc)
    if values > MAX_VALUES:
        raise InputError(f"kubeconfig {path}: its YAML aliases expand to more than {MAX_VALUES:,} values (or without "
                         "end): not a kubeconfig" if aliased else
                         f"kubeconfig {path}: more than {MAX_VALUES:,} values: too large for a kubeconfig")
    return doc


MAX_VALUES = 1_000_000
"""Values a kubeconfig may hold once its YAML aliases are written out, as an exec plugin's KUBERNETES_EXEC_INFO
writes its cluster: a few hundred bytes of nested aliases expand to billions (go-yaml refuses such documents too)."""


def _expanded(doc: object) -> tuple[float, bool]:
    """How many values `doc` holds with every alias written out, counted without writing any out (a mapping or list
    that holds itself, `&a [*a]`, never ends), and whether it has aliases at all."""
    sizes: dict[int, float] = {}
    aliased = False
    todo: list[tuple[object, bool]] = [(doc, False)]
    while todo:
        item, counted = todo.pop()
        if not isinstance(item, (dict, list)):
            continue
        inner = [*item.keys(), *item.values()] if isinstance(item, dict) else item
        if counted:
            sizes[id(item)] = 1 + sum(sizes[id(i)] if isinstance(i, (dict, list)) else 1 for i in inner)
        elif id(item) in sizes:
            if sizes[id(item)] < 0:  # still being counted: it holds itself
                return float("inf"), True
            aliased = True
        else:
            sizes[id(item)] = -1
            todo.append((item, True))
            todo.extend((i, False) for i in inner)
    return sizes.get(id(doc), 1), aliased


_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(doc: object) -> str | None:
    """The first lone surrogate in a string (key or value) of a parsed document: YAML's `"\\uD800"` makes one,
    and no output could write it. Each mapping or list is visited once, however many aliases name it."""
    todo, seen = [doc], set()
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            if found := _SURROGATE.search(item):
                return found.group()
        elif isinstance(item, (dict, list)) and id(item) not in seen:
            seen.add(id(item))
            todo.extend([*item.keys(), *item.values()] if isinstance(item, dict) else item)
    return None


_KINDS = {list: "a list", dict: "a mapping", int: "an integer", float: "a number", bool: "a boolean", str: "a string"}


def _string(entry: dict, field: str, where: str) -> str | None:
    """A field that kubectl reads as a string (absent or null: None); another type is refused, as kubectl does."""
    value = entry.get(field)
    if value is not None and type(value) is not str:
        raise InputError(f"{where}: {field} is {_KINDS.get(type(value), type(value).__name__)}, expected a string")
    return value


def context(config: dict, name: str, where: str) -> dict:
    """The merged config's context `name` ({} when it has none), its cluster and user names strings and its
    cluster's server an http(s) URL."""
    chosen = next((c["context"] for c in config["contexts"] if c["name"] == name), None) or {}
    where = f"{where}: context {name}"
    for field in ("cluster", "user"):
        _string(chosen, field, where)
    cluster = next((c["cluster"] for c in config["clusters"] if c["name"] == chosen.get("cluster")), None) or {}
    if (server := _string(cluster, "server", f"{where}: cluster {chosen.get('cluster')}")) is not None:
        check_server(server, where)
    return chosen


def namespace(value: object, where: str) -> str:
    """A context's namespace (or the service account's), kubectl's default for -n, checked as -n is: it goes
    into URL paths. Unset is `default`."""
    if value is None or value == "":
        return "default"
    text = _string({"namespace": value}, "namespace", where)
    if not DNS_LABEL.fits(text or ""):
        raise InputError(f"{where}: namespace {text!r}: not a name the API server accepts; expected {DNS_LABEL.description}")
    return text or "default"


def check_server(host: str, where: str) -> None:
    """A server that is no http(s) URL with a host is one line, before urllib3 warns about it or tries it."""
    try:
        parts = urllib.parse.urlsplit(host)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 0) >= 0
    except ValueError:  # an IPv6 host without its ']', a port past 65535
        usable = False
    if not usable:
        shown = shown_server(safe(host, one_line=True))[:200]
        raise InputError(f"{where}: server {shown!r} is not an http:// or https:// URL with a host")


def _named(doc: dict, key: str, inner: str, path: Path) -> dict[str, dict]:
    entries: dict[str, dict] = {}
    if not isinstance(doc.get(key) or [], list):
        raise InputError(f"kubeconfig {path}: {key} is {_KINDS.get(type(doc[key]), type(doc[key]).__name__)}, "
                         "expected a list")
    for entry in doc.get(key) or ():
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not isinstance(entry.get(inner) or {}, dict):
            raise InputError(f"kubeconfig {path}: {key} entries need a name and a {inner} mapping")
        if name in entries:  # kubectl refuses the file too
            raise InputError(f"kubeconfig {path}: duplicate name {safe(name, one_line=True)!r} in {key}")
        entries[name] = dict(entry.get(inner) or {})
        _booleans(entries[name], BOOLEAN_FIELDS.get(key, ()), f"kubeconfig {path}: {inner} {safe(name, one_line=True)}")
    return entries


# client-go's bool fields of a Cluster and an AuthInfo's exec: Go refuses a file where one holds anything else
BOOLEAN_FIELDS = {"clusters": ("insecure-skip-tls-verify", "disable-compression"), "users": ("exec.provideClusterInfo",)}


def _booleans(entry: dict, fields: tuple[str, ...], where: str) -> None:
    """Each boolean field of `entry` (`exec.x`: x of its exec mapping) true, false or unset, as kubectl reads
    it: the client's loader takes a quoted `"false"` for true, which turns certificate checks off."""
    for field in fields:
        outer, _, inner = field.rpartition(".")
        holder = entry.get(outer) if outer else entry
        value = holder.get(inner) if isinstance(holder, dict) else None
        if value is not None and type(value) is not bool:
            raise InputError(f"{where}: {field} is {_KINDS.get(type(value), type(value).__name__)}, expected true or false")


def _resolved(key: str, value: dict, base: Path) -> dict:
    for field in PATH_FIELDS.get(key, ()):
        if isinstance(value.get(field), str) and value[field]:
            value[field] = str(base / value[field])  # an absolute path stays as it is; no ~, as in kubectl
    spec = value.get("exec")
    if isinstance(spec, dict) and isinstance(spec.get("command"), str) and os.sep in spec["command"]:
        value["exec"] = dict(spec, command=str(base / spec["command"]))  # a bare name is looked up on PATH
    return value


@dataclass(frozen=True)
class Connection:
    """A context's connection settings, as kubectl makes them from the merged kubeconfig. Each TLS file is a
    path or the bytes of a `*-data` field (Python's TLS reads files only: the caller writes them to one)."""

    host: str
    authorization: str | None = None
    """The Authorization header: `Bearer TOKEN` or `Basic ...`."""
    ca: str | bytes | None = None
    cert: str | bytes | None = None
    key: str | bytes | None = None
    verify_ssl: bool = True
    tls_server_name: str | None = None
    proxy: str | None = None


# A user's fields kubectl acts on that sunkcheck does not: refused, not ignored (the requests would not be the ones
# kubectl sends). Other fields kubectl does not read either (extensions, disable-compression) are left alone.
UNSUPPORTED = ("as", "as-uid", "as-groups", "as-user-extra")


def connection(config: dict, context: str | None, where: str) -> Connection:
    """The settings kubectl would connect with for `context` (None: the current one) of a merged config whose
    exec plugin, if any, has run (credential). kubectl's order of credentials: a token (inline, else
    from tokenFile), then an auth provider's, then a user name and password; client certificates beside them. A
    field set to null is unset, as in kubectl; one of another type, or a file that cannot be read, is an error."""
    name = context or config.get("current-context") or ""
    if not name:
        raise InputError(f"{where}: no current-context set; choose one with --context")
    ctx = _named_entry(config, "contexts", "context", name)
    if ctx is None:
        raise InputError(f"{where}: context {safe(name, one_line=True)} not found")
    where = f"{where}: context {name}"
    cluster = _present(_named_entry(config, "clusters", "cluster", ctx.get("cluster")) or {})
    user = _present(_named_entry(config, "users", "user", ctx.get("user")) or {})
    if impersonating := [field for field in UNSUPPORTED if field in user]:
        raise InputError(f"{where}: user {ctx.get('user')}: impersonation ({impersonating[0]}) is not supported")
    if len({bool(user.get(k) or user.get(f"{k}-data")) for k in ("client-certificate", "client-key")}) > 1:
        raise InputError(f"{where}: user {ctx.get('user')}: a client certificate needs its key and a key its "
                         "certificate (client-certificate and client-key, or their -data)")
    server = _string(cluster, "server", where)
    if not server:
        raise InputError(f"{where}: cluster {ctx.get('cluster')} has no server")
    host = server.partition("?")[0].partition("#")[0].rstrip("/")  # kubectl sends neither query nor fragment
    tls = host.startswith("https")  # an http:// server is spoken to in the clear: its TLS files are not read
    files = {k: _file_or_data(e, k, where, read=tls)
             for e, k in ((cluster, "certificate-authority"), (user, "client-certificate"), (user, "client-key"))}
    return Connection(host, _authorization(user, f"{where}: user {ctx.get('user')}"), files["certificate-authority"],
                      files["client-certificate"], files["client-key"],
                      verify_ssl=not cluster.get("insecure-skip-tls-verify"),
                      tls_server_name=_string(cluster, "tls-server-name", where) or None,
                      proxy=_string(cluster, "proxy-url", where) or None)


def _named_entry(config: dict, key: str, inner: str, name: object) -> dict | None:
    return next((e[inner] for e in config[key] if e["name"] == name), None) if isinstance(name, str) else None


def _present(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if v is not None}


def _authorization(user: dict, where: str) -> str | None:
    username, password = _string(user, "username", where), _string(user, "password", where)
    if (username or password) and (_string(user, "token", where) or _string(user, "tokenFile", where)):
        raise InputError(f"{where}: more than one authentication method (a token and a user name and password), "
                         "only one is allowed")
    token = _string(user, "token", where) or _token_file(user, where) or _auth_provider_token(user, where)
    if token:
        return f"Bearer {token}"
    if not (username or password):
        return None
    # as Go sends it: the UTF-8 bytes
    return "Basic " + base64.b64encode(f"{username or ''}:{password or ''}".encode()).decode()


MAX_TOKEN_FILE = 1 << 20
"""Bytes a tokenFile may hold: a token is a few KB at most (/dev/zero or a runaway file is not one)."""


def _token_file(user: dict, where: str) -> str | None:
    """A token file, its path cleaned first as kubectl does (`link/../token` is the `token` beside `link`, not the
    one beside what `link` points to), read as it is. A FIFO, a device or a directory is refused unread."""
    from sunkcheck.snapshot import read_regular

    path = _string(user, "tokenFile", where)
    if not path:
        return None
    try:
        return read_regular(Path(os.path.normpath(path)), limit=MAX_TOKEN_FILE).decode()
    except InputError as e:
        raise InputError(f"{where}: tokenFile {e}") from None
    except UnicodeDecodeError:
        raise InputError(f"{where}: tokenFile {path}: not UTF-8 text") from None


def _auth_provider_token(user: dict, where: str) -> str | None:
    """An oidc auth provider's id-token while it is valid, as kubectl sends it. Refreshing one needs the identity
    provider, which a read-only check does not call; kubectl no longer has the gcp and azure providers."""
    provider = user.get("auth-provider")
    if provider is None:
        return None
    name = provider.get("name") if isinstance(provider, dict) else None
    settings = provider.get("config") if isinstance(provider, dict) else None
    if name != "oidc" or not isinstance(settings, dict):
        raise InputError(f"{where}: auth-provider {safe(str(name), one_line=True)} is not supported (kubectl has "
                         "only oidc): use an exec credential plugin")
    token = settings.get("id-token")
    if not isinstance(token, str) or not token or _expired(token):
        raise InputError(f"{where}: auth-provider oidc: no valid id-token (sunkcheck does not refresh one; running "
                         "a kubectl command refreshes it)")
    return token


def _expired(jwt: str) -> bool:
    """Whether an ID token's `exp` has passed (unreadable counts as expired, as kubectl then refreshes)."""
    try:
        claims = json.loads(base64.urlsafe_b64decode(jwt.split(".")[1] + "=" * (-len(jwt.split(".")[1]) % 4)))
        return not time.time() < float(claims["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return True


def _file_or_data(entry: dict, key: str, where: str, read: bool) -> str | bytes | None:
    """`KEY-data` (base64) or the file `KEY`, which must be a file; kubectl refuses both at once (an empty one is
    unset)."""
    if (data := _string(entry, f"{key}-data", where)) and _string(entry, key, where):
        raise InputError(f"{where}: {key}-data and {key} are both set: only one is allowed")
    if not read:
        return None
    if data:
        try:
            return base64.b64decode("".join(data.split()), validate=True)  # line breaks are skipped, as Go's reader
        except ValueError:  # binascii.Error included
            raise InputError(f"{where}: {key}-data is not base64") from None
    given = _string(entry, key, where)
    if not given:
        return None
    path = os.path.normpath(given)
    if not os.path.isfile(path):
        from sunkcheck.snapshot import file_type

        what = file_type(os.stat(path).st_mode) if os.path.exists(path) else "missing"
        raise InputError(f"{where}: {key} {path} is {what}, not a file" if what != "missing" else
                         f"{where}: {key} {path}: no such file")
    return path


TOKEN_FILE_LIFE = 60.0
"""Seconds a tokenFile's token is used before the file is read again (client-go's cachingTokenSource: a token that
is rotated on disk, as a projected service account token is, is picked up within a minute)."""


@dataclass(frozen=True)
class Credential:
    """The connection settings made from the chosen user, and when to make them again, as client-go does: an exec
    plugin is run again once its credential's status.expirationTimestamp has passed, a tokenFile read again each
    TOKEN_FILE_LIFE; both are made again at once after a 401. Inline credentials never change."""

    connection: Connection
    expires: float = math.inf
    """time.time() after which the credential is made again before the next request."""
    renewable: bool = False
    """Whether making it again can change it (a 401 is then worth one retry with the new credential)."""


def credential(config: dict, context: str | None, timeout: float | None, where: str) -> Credential:
    """The chosen context's connection settings (connection), its exec plugin, if any, run first (within
    `timeout` seconds), so that a failing or hanging plugin is an error here, not an unauthenticated request
    later."""
    try:
        return _credential(config, context, timeout, where)
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:  # a value no check above foresaw
        raise InputError(f"{where}: cannot use it ({type(e).__name__}: {safe(e, one_line=True) or 'no detail'})") from None


def _credential(config: dict, context: str | None, timeout: float | None, where: str) -> Credential:
    name = context or config.get("current-context")
    ctx = next((c["context"] for c in config["contexts"] if c["name"] == name), None) or {}
    user = next((u for u in config["users"] if u["name"] == ctx.get("user")), None)
    settings = (user or {}).get("user", {})
    spec = settings.get("exec")
    if user is None or not isinstance(spec, dict) or (settings.get("token") or settings.get("tokenFile")):
        made = connection(config, context, where)
        if settings.get("tokenFile") and not settings.get("token"):  # read just now: again a minute from now
            return Credential(made, time.time() + TOKEN_FILE_LIFE, True)
        return Credential(made)
    cluster: dict = next((c["cluster"] for c in config["clusters"] if c["name"] == ctx.get("cluster")), {})
    status = run_plugin(spec, cluster, timeout)
    if status.get("token"):
        made_by: dict = {"token": status["token"]}
    else:
        made_by = {"client-certificate-data": base64.b64encode(status["clientCertificateData"].encode()).decode(),
                   "client-key-data": base64.b64encode(status["clientKeyData"].encode()).decode()}
    users = [dict(u, user=made_by) if u is user else u for u in config["users"]]
    return Credential(connection(dict(config, users=users), context, where), _expiry(status, spec), True)


def _expiry(status: dict, spec: dict) -> float:
    """When an exec plugin's credential expires (time.time()); never without an expirationTimestamp."""
    stamp = status.get("expirationTimestamp")
    if stamp is None:
        return math.inf
    try:
        when = datetime.datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:  # client-go cannot decode one either
        shown = safe(str(spec.get("command") or ""), one_line=True)
        raise InputError(f"exec credential plugin {shown} status: expirationTimestamp {safe(str(stamp), one_line=True)[:60]!r} "
                         "is not an RFC 3339 time")
    return when.timestamp()


MAX_PLUGIN_OUTPUT = 4 << 20
"""Bytes an exec plugin may print on stdout: an ExecCredential is a few KB, a client certificate and key included."""
MAX_PLUGIN_ERRORS = 64 << 10
"""Bytes of an exec plugin's stderr kept (its first line is shown); the rest is read and dropped, so it never blocks."""


def run_plugin(spec: dict, cluster: dict, timeout: float | None) -> dict:
    """The ExecCredential status an exec plugin prints (client.authentication.k8s.io), run non-interactively
    and killed with its children after `timeout` seconds or once it has printed more than MAX_PLUGIN_OUTPUT."""
    command = str(spec.get("command") or "")
    shown = safe(command, one_line=True)
    info: dict = {"apiVersion": spec.get("apiVersion"), "kind": "ExecCredential", "spec": {"interactive": False}}
    if spec.get("provideClusterInfo"):
        info["spec"]["cluster"] = cluster
    env = dict(os.environ, **{str(e.get("name")): str(e.get("value")) for e in spec.get("env") or ()},
               KUBERNETES_EXEC_INFO=json.dumps(info))
    try:  # its own process group: killing it on timeout, or when the run is stopped, also kills what it started
        proc = stop.spawn([command, *map(str, spec.get("args") or ())], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    except OSError as e:
        raise InputError(f"exec credential plugin {shown}: {e.strerror}") from None
    try:
        out, err = _output(proc, None if timeout is None else time.monotonic() + timeout)
    except TimeoutError:
        stop.kill(proc)
        raise InputError(f"exec credential plugin {shown} did not finish within {timeout:g}s "
                         "(--request-timeout bounds it)") from None
    except OverflowError:
        stop.kill(proc)
        raise InputError(f"exec credential plugin {shown} printed more than {MAX_PLUGIN_OUTPUT >> 20} MiB: not an "
                         "ExecCredential (stopped)") from None
    stop.release(proc)
    if proc.returncode:
        detail = safe(err.decode("utf-8", "replace"), one_line=True)[:300] or "no message on stderr"
        raise InputError(f"exec credential plugin {shown} failed (exit {proc.returncode}): {detail}")
    try:
        status = json_doc(out)["status"]
    except (KeyError, TypeError):
        status = None
    except ValueError as e:  # a document nested too deeply among them
        raise InputError(f"exec credential plugin {shown} printed no ExecCredential with a token or client "
                         f"certificate (not JSON: {safe(e, one_line=True)[:200]})") from None
    if isinstance(status, dict):
        for field in ("token", "clientCertificateData", "clientKeyData"):  # client-go reads each as a string
            _string(status, field, f"exec credential plugin {shown} status")
        if status.get("token") or (status.get("clientCertificateData") and status.get("clientKeyData")):
            return status
    raise InputError(f"exec credential plugin {shown} printed no ExecCredential with a token or client certificate")


def _output(proc: subprocess.Popen, deadline: float | None) -> tuple[bytes, bytes]:
    """A plugin's stdout and the start of its stderr, read as it writes them (communicate() would hold all of
    both) until both end and it exits. TimeoutError past `deadline`, OverflowError past MAX_PLUGIN_OUTPUT."""
    import selectors

    assert proc.stdout is not None and proc.stderr is not None  # both are pipes
    read = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    with selectors.DefaultSelector() as waiting:
        for pipe in read:
            waiting.register(pipe, selectors.EVENT_READ)
        while waiting.get_map():
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError
            for key, _ in waiting.select(remaining):
                chunk, kept = os.read(key.fd, 1 << 16), read[key.fileobj]  # type: ignore[index]
                if not chunk:
                    waiting.unregister(key.fileobj)
                elif key.fileobj is proc.stdout:
                    kept += chunk
                    if len(kept) > MAX_PLUGIN_OUTPUT:
                        raise OverflowError
                else:
                    kept += chunk[:MAX_PLUGIN_ERRORS - len(kept)]
    proc.stdout.close()
    proc.stderr.close()
    try:
        proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:  # it closed its output and goes on
        raise TimeoutError from None
    return bytes(read[proc.stdout]), bytes(read[proc.stderr])


def context_names(kubeconfig: str | None = None) -> list[str]:
    """Every context of the kubeconfig ($KUBECONFIG files merged), for --all-contexts."""
    paths, _ = files(kubeconfig)
    return sorted(c["name"] for c in merge(paths)["contexts"])
