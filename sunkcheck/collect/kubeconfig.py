"""kubeconfig files merged exactly as kubectl merges them, and exec credential plugins run within a deadline."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
from pathlib import Path

from sunkcheck.model import InputError
from sunkcheck.text import safe

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
        current = current or str(doc.get("current-context") or "")
    return {"apiVersion": "v1", "kind": "Config", "current-context": current,
            **{key: [{"name": n, inner: v} for n, v in merged[key].items()] for key, inner in NAMED.items()}}


MAX_BYTES = 16 << 20  # a kubeconfig is kilobytes; /dev/zero or a runaway file is not one


def _read(path: Path) -> dict:
    """One kubeconfig file; a FIFO (`--kubeconfig <(...)`) is read without waiting for a writer, a device
    is refused unread, and no kubeconfig is larger than MAX_BYTES."""
    import yaml

    from sunkcheck.snapshot import read_regular

    try:
        doc = yaml.safe_load(read_regular(path, fifo=True, limit=MAX_BYTES).decode())
    except InputError as e:
        raise InputError(f"kubeconfig {e}") from None
    except UnicodeDecodeError:
        raise InputError(f"kubeconfig {path}: not UTF-8 text") from None
    except yaml.YAMLError as e:
        raise InputError(f"kubeconfig {path}: not valid YAML ({safe(e, one_line=True)})") from None
    if doc is None:  # an empty file is an empty config
        return {}
    if not isinstance(doc, dict):
        raise InputError(f"kubeconfig {path}: a {type(doc).__name__}, expected a Config mapping")
    return doc


def _named(doc: dict, key: str, inner: str, path: Path) -> dict[str, dict]:
    entries: dict[str, dict] = {}
    for entry in doc.get(key) or ():
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not isinstance(entry.get(inner) or {}, dict):
            raise InputError(f"kubeconfig {path}: {key} entries need a name and a {inner} mapping")
        if name in entries:  # kubectl refuses the file too
            raise InputError(f"kubeconfig {path}: duplicate name {safe(name, one_line=True)!r} in {key}")
        entries[name] = dict(entry.get(inner) or {})
    return entries


def _resolved(key: str, value: dict, base: Path) -> dict:
    for field in PATH_FIELDS.get(key, ()):
        if isinstance(value.get(field), str) and value[field]:
            value[field] = str(base / value[field])  # an absolute path stays as it is; no ~, as in kubectl
    spec = value.get("exec")
    if isinstance(spec, dict) and isinstance(spec.get("command"), str) and os.sep in spec["command"]:
        value["exec"] = dict(spec, command=str(base / spec["command"]))  # a bare name is looked up on PATH
    return value


def with_exec_credentials(config: dict, context: str | None, timeout: float | None) -> dict:
    """`config` with the chosen context's exec plugin (if any) already run and its credential in place, so
    that a failing or hanging plugin is an error here, not an unauthenticated request later."""
    name = context or config.get("current-context")
    ctx = next((c["context"] for c in config["contexts"] if c["name"] == name), None) or {}
    user = next((u for u in config["users"] if u["name"] == ctx.get("user")), None)
    spec = (user or {}).get("user", {}).get("exec")
    if user is None or not isinstance(spec, dict) or (user["user"].get("token") or user["user"].get("tokenFile")):
        return config
    cluster: dict = next((c["cluster"] for c in config["clusters"] if c["name"] == ctx.get("cluster")), {})
    status = run_plugin(spec, cluster, timeout)
    if status.get("token"):
        credential = {"token": status["token"]}
    else:
        credential = {"client-certificate-data": base64.b64encode(status["clientCertificateData"].encode()).decode(),
                      "client-key-data": base64.b64encode(status["clientKeyData"].encode()).decode()}
    users = [dict(u, user=credential) if u is user else u for u in config["users"]]
    return dict(config, users=users)


def run_plugin(spec: dict, cluster: dict, timeout: float | None) -> dict:
    """The ExecCredential status an exec plugin prints (client.authentication.k8s.io), run non-interactively
    and killed with its children after `timeout` seconds."""
    command = str(spec.get("command") or "")
    shown = safe(command, one_line=True)
    info: dict = {"apiVersion": spec.get("apiVersion"), "kind": "ExecCredential", "spec": {"interactive": False}}
    if spec.get("provideClusterInfo"):
        info["spec"]["cluster"] = cluster
    env = dict(os.environ, **{str(e.get("name")): str(e.get("value")) for e in spec.get("env") or ()},
               KUBERNETES_EXEC_INFO=json.dumps(info))
    try:  # its own process group: killing it on timeout also kills what it started, which holds the pipes
        proc = subprocess.Popen([command, *map(str, spec.get("args") or ())], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    except OSError as e:
        raise InputError(f"exec credential plugin {shown}: {e.strerror}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise InputError(f"exec credential plugin {shown} did not finish within {timeout:g}s "
                         "(--request-timeout bounds it)") from None
    if proc.returncode:
        detail = safe(err.decode("utf-8", "replace"), one_line=True)[:300] or "no message on stderr"
        raise InputError(f"exec credential plugin {shown} failed (exit {proc.returncode}): {detail}")
    try:
        status = json.loads(out)["status"]
        if status.get("token") or (status["clientCertificateData"] and status["clientKeyData"]):
            return status
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    raise InputError(f"exec credential plugin {shown} printed no ExecCredential with a token or client certificate")
