"""Which cluster, with which credentials: kubeconfig files merged as the real kubectl merges them, and exec
credential plugins that fail or hang (real scripts as plugins)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from sunkcheck import snapshot
from sunkcheck.collect import kubeconfig as kc
from sunkcheck.model import InputError
from sunkcheck.text import safe
from tests.conftest import FIXTURES, TOKEN, expected, run
from tests.kubeapi import FakeApi

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from sunkcheck.collect.kube import Kube


def write(path: Path, doc: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def config(current: str | None = None, clusters=(), users=(), contexts=()) -> dict:
    doc = {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": n, "cluster": c} for n, c in clusters],
           "users": [{"name": n, "user": u} for n, u in users],
           "contexts": [{"name": n, "context": c} for n, c in contexts]}
    return doc | ({"current-context": current} if current is not None else {})


# --- the merge, against the real kubectl ----------------------------------------------------------

def layouts(root: Path) -> dict[str, list[Path]]:
    """Files in several directories, each naming files relative to itself."""
    for rel in ("a/ca.crt", "a/certs/user.crt", "a/certs/user.key", "b/sub/ca.crt", "b/ca-other.crt", "b/user.key",
                "b/user.crt"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"contents of {rel}\n")
    a = write(root / "a" / "config", config(
        "prod", clusters=[("shared", {"server": "https://a.example:6443", "certificate-authority": "ca.crt"})],
        users=[("alice", {"client-certificate": "certs/user.crt", "client-key": "certs/user.key"})],
        contexts=[("prod", {"cluster": "shared", "user": "alice", "namespace": "from-a"})]))
    b = write(root / "b" / "sub" / "config", config(
        "staging",
        clusters=[("shared", {"server": "https://b.example:6443", "certificate-authority": "ca.crt"}),
                  ("other", {"server": "https://other.example", "certificate-authority": "../ca-other.crt"})],
        users=[("alice", {"token": "from-b"}),
               ("bob", {"client-certificate": "../user.crt", "client-key": str(root / "b" / "user.key")})],
        contexts=[("prod", {"cluster": "other", "user": "bob"}), ("staging", {"cluster": "other", "user": "bob"})]))
    no_current = write(root / "c" / "config", config("", contexts=[("late", {"cluster": "shared", "user": "alice"})]))
    empty = root / "empty"
    empty.write_text("")
    return {"same names, first file first": [a, b], "same names, other order": [b, a],
            "current-context only in a later file": [no_current, b, a],
            "empty and missing files skipped": [empty, root / "missing", a, b],
            "one file": [b]}


def flattened(merged: dict) -> dict:
    """What `kubectl config view --flatten` does to a merged config: file references become inline data."""
    inline = {"certificate-authority": "certificate-authority-data", "client-certificate": "client-certificate-data",
              "client-key": "client-key-data"}

    def flat(entry: dict) -> dict:
        return {inline.get(k, k): base64.b64encode(Path(v).read_bytes()).decode() if k in inline else v
                for k, v in entry.items()}

    return {"current-context": merged["current-context"],
            **{key: {e["name"]: flat(e[inner]) for e in merged[key]} for key, inner in kc.NAMED.items()}}


def kubectl_view(paths: list[Path], cwd: Path) -> dict:
    env = dict(os.environ, KUBECONFIG=os.pathsep.join(map(str, paths)))
    p = subprocess.run(["kubectl", "config", "view", "--merge", "--flatten", "-o", "json"], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=60, check=True)
    doc = json.loads(p.stdout)
    return {"current-context": doc.get("current-context", ""),
            **{key: {e["name"]: e[inner] for e in doc.get(key) or ()} for key, inner in kc.NAMED.items()}}


def test_the_merge_is_kubectls_for_every_layout(tmp_path):
    """First file wins for every name and for current-context; paths resolve from their own file's directory
    (kubectl --flatten reads each one: a wrong directory would be an error or other bytes)."""
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    for name, paths in layouts(tmp_path).items():
        existing = [p for p in paths if p.exists()]
        assert flattened(kc.merge(existing)) == kubectl_view(paths, elsewhere), name


def test_kubectl_and_sunkcheck_both_refuse_a_duplicate_name_in_one_file(tmp_path):
    dup = write(tmp_path / "dup", config(clusters=[("x", {"server": "https://one"}), ("x", {"server": "https://two"})]))
    p = subprocess.run(["kubectl", "config", "view", "--kubeconfig", str(dup)], capture_output=True, text=True,
                       timeout=60, check=False)
    assert p.returncode != 0 and 'duplicate name "x"' in p.stderr
    r = run("check", "--kubeconfig", str(dup))
    assert r.code == 3 and r.err == f"sunkcheck: error: kubeconfig {dup}: duplicate name 'x' in clusters\n"


def test_token_file_and_exec_command_resolve_from_their_files_directory(tmp_path):
    root = tmp_path / "dir"
    later = write(root / "config", config(users=[("u", {"tokenFile": "token", "exec": {"command": "./bin/plugin"}}),
                                                 ("v", {"exec": {"command": "plugin-on-path"}})]))
    user = kc.merge([write(tmp_path / "first", config("x")), later])["users"]
    assert user[0]["user"] == {"tokenFile": str(root / "token"), "exec": {"command": str(root / "bin" / "plugin")}}
    assert user[1]["user"] == {"exec": {"command": "plugin-on-path"}}


# --- the merge, live ------------------------------------------------------------------------------

@pytest.fixture
def two_clusters(cert):
    """Two API servers: a healthy cluster and a broken one."""
    with FakeApi(snapshot.load(FIXTURES / "healthy-pool-name"), cert=cert, token=TOKEN) as healthy, \
            FakeApi(snapshot.load(FIXTURES / "no-feasible-nodes"), cert=cert, token=TOKEN) as broken:
        yield healthy, broken


def test_the_first_files_context_and_cluster_are_the_ones_checked(two_clusters, cert, tmp_path, monkeypatch):
    """current-context in a, clusters in both: the kubernetes client's own merger let b's current-context
    win and checked b's cluster as though it were a's."""
    healthy, broken = two_clusters
    ca = {"certificate-authority": cert[0]}
    a = write(tmp_path / "a", config("prod", clusters=[("prod", {"server": healthy.url} | ca)],
                                     users=[("me", {"token": TOKEN})],
                                     contexts=[("prod", {"cluster": "prod", "user": "me", "namespace": "tenant-slurm"})]))
    b = write(tmp_path / "b", config("staging", clusters=[("prod", {"server": broken.url} | ca),
                                                          ("staging", {"server": broken.url} | ca)],
                                     users=[("me", {"token": "not-this-one"})],
                                     contexts=[("staging", {"cluster": "staging", "user": "me", "namespace": "tenant-slurm"})]))
    monkeypatch.setenv("KUBECONFIG", f"{a}{os.pathsep}{b}")
    r = run("check", "-o", "json")
    assert r.code == 0 and r.json()["status"] == "ok", r.err
    assert healthy.log and not broken.log
    assert run("check", "--context", "staging", "-o", "json").code == expected("no-feasible-nodes")["exit"]
    assert {q.status for q in broken.log} == {200}  # with a's user "me": the first file's token


def test_relative_paths_in_a_later_file_work_live(two_clusters, cert, tmp_path, monkeypatch):
    healthy, _ = two_clusters
    home = tmp_path / "kube"
    home.mkdir()
    (home / "ca.crt").write_bytes(Path(cert[0]).read_bytes())
    (home / "token").write_text(TOKEN)
    first = write(tmp_path / "first", config("", contexts=[("unused", {"cluster": "none", "user": "none"})]))
    later = write(home / "config", config("test", clusters=[("c", {"server": healthy.url, "certificate-authority": "ca.crt"})],
                                          users=[("u", {"tokenFile": "token"})],
                                          contexts=[("test", {"cluster": "c", "user": "u", "namespace": "tenant-slurm"})]))
    monkeypatch.setenv("KUBECONFIG", f"{first}{os.pathsep}{later}")
    monkeypatch.chdir(tmp_path)
    r = run("check", "-o", "json")
    assert r.code == 0, r.err
    assert {q.status for q in healthy.log} == {200}


@pytest.mark.parametrize("token", [f"{TOKEN}\n", f"{TOKEN}\r\nX-Injected: 1", f"{TOKEN}\u00e9\U0001f642"])
def test_a_token_no_http_header_can_carry_is_one_line_that_never_shows_it(two_clusters, cert, tmp_path, token):
    """urllib3 refuses such a header with an error quoting it: that was an internal error printing the token."""
    healthy, _ = two_clusters
    (tmp_path / "token").write_text(token)
    path = write(tmp_path / "config", config("test", clusters=[("c", {"server": healthy.url, "certificate-authority": cert[0]})],
                                             users=[("u", {"tokenFile": "token"})],
                                             contexts=[("test", {"cluster": "c", "user": "u", "namespace": "tenant-slurm"})]))
    r = run("check", "--kubeconfig", str(path))
    assert r.code == 3 and TOKEN not in r.err and healthy.log == []
    assert r.err == (f"sunkcheck: error: the credentials for {healthy.url} hold a line break or a character no HTTP "
                     "header can carry (a newline at the end of a token file?): not sent\n")


# --- exec credential plugins ------------------------------------------------------------------------

def plugin(directory: Path, body: str) -> Path:
    path = directory / "bin" / "credential-plugin"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def exec_config(directory: Path, api: FakeApi, cert, command: str = "./bin/credential-plugin") -> Path:
    return write(directory / "config", config(
        "test", clusters=[("c", {"server": api.url, "certificate-authority": cert[0]})],
        users=[("u", {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": command,
                               "args": ["get-token"], "env": [{"name": "PLUGIN_MODE", "value": "test"}]}})],
        contexts=[("test", {"cluster": "c", "user": "u", "namespace": "tenant-slurm"})]))


def test_a_working_plugin_supplies_the_token(two_clusters, cert, tmp_path, monkeypatch):
    healthy, _ = two_clusters
    plugin(tmp_path, f"""[ "$1 $PLUGIN_MODE" = "get-token test" ] || exit 9
echo "$KUBERNETES_EXEC_INFO" | grep -q '"interactive": false' || exit 8
echo '{{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {{"token": "{TOKEN}"}}}}'
""")
    monkeypatch.chdir(tmp_path.parent)  # the relative command resolves from the kubeconfig's directory
    r = run("check", "--kubeconfig", str(exec_config(tmp_path, healthy, cert)), "-o", "json")
    assert r.code == 0, r.err
    assert {q.status for q in healthy.log} == {200}


def test_a_failing_plugin_is_reported_with_its_stderr_not_as_401(two_clusters, cert, tmp_path):
    healthy, _ = two_clusters
    plugin(tmp_path, "printf 'error: refresh token expired\\033[31m\\nrun: login again\\n' >&2\nexit 4\n")
    r = run("check", "--kubeconfig", str(exec_config(tmp_path, healthy, cert)))
    command = tmp_path / "bin" / "credential-plugin"
    assert r.code == 3
    assert r.err == (f"sunkcheck: error: exec credential plugin {command} failed (exit 4): error: refresh token "
                     "expired run: login again\n")
    assert healthy.log == []  # no unauthenticated request was sent


@pytest.mark.parametrize("body, message", [
    ("echo not json\n", "printed no ExecCredential with a token or client certificate"),
    ("echo '{\"status\": {}}'\n", "printed no ExecCredential with a token or client certificate"),
    ("echo '[]'\n", "printed no ExecCredential with a token or client certificate"),
    # client-go reads each as a string: the token was sent as it was (401), the certificate was an AttributeError
    ("echo '{\"status\": {\"token\": 12345}}'\n", "status: token is an integer, expected a string"),
    ("echo '{\"status\": {\"clientCertificateData\": [\"c\"], \"clientKeyData\": \"k\"}}'\n",
     "status: clientCertificateData is a list, expected a string"),
    ("echo '{\"status\": {\"token\": \"t\", \"expirationTimestamp\": \"tomorrow\"}}'\n",
     "status: expirationTimestamp 'tomorrow' is not an RFC 3339 time"),
])
def test_a_plugin_printing_no_credential_is_an_error(two_clusters, cert, tmp_path, body, message):
    healthy, _ = two_clusters
    plugin(tmp_path, body)
    r = run("check", "--kubeconfig", str(exec_config(tmp_path, healthy, cert)))
    assert r.code == 3 and message in r.err and healthy.log == []


def test_a_missing_plugin_is_an_error(two_clusters, cert, tmp_path):
    healthy, _ = two_clusters
    r = run("check", "--kubeconfig", str(exec_config(tmp_path, healthy, cert, command="no-such-plugin-anywhere")))
    assert r.code == 3
    assert r.err == "sunkcheck: error: exec credential plugin no-such-plugin-anywhere: No such file or directory\n"


def test_a_hanging_plugin_is_bounded_by_the_request_timeout(two_clusters, cert, tmp_path):
    """`sleep` is the shell's child and holds the output pipe: killing the shell alone would still hang."""
    healthy, _ = two_clusters
    plugin(tmp_path, "sleep 300\n")
    started = time.monotonic()
    r = run("check", "--kubeconfig", str(exec_config(tmp_path, healthy, cert)), "--request-timeout", "1s")
    assert r.code == 3 and time.monotonic() - started < 6
    assert r.err == (f"sunkcheck: error: exec credential plugin {tmp_path / 'bin' / 'credential-plugin'} did not "
                     "finish within 1s (--request-timeout bounds it)\n")


def test_a_plugin_printing_without_end_is_stopped_with_what_it_started(
        two_clusters: tuple[FakeApi, FakeApi], cert: tuple[str, str], tmp_path: Path) -> None:
    """Its stdout was read to the end into memory (50 MB made 178 MB): past the cap the plugin's process group is
    killed, the `sleep` it left holding the pipe included, and the run says so in one line."""
    healthy, _ = two_clusters
    plugin(tmp_path, f"sleep 300 &\necho $! > {tmp_path / 'child'}\nhead -c 50000000 /dev/zero\n")
    r = run("check", "--kubeconfig", str(exec_config(tmp_path, healthy, cert)), "--request-timeout", "20s")
    assert r.code == 3 and healthy.log == []
    assert r.err == (f"sunkcheck: error: exec credential plugin {tmp_path / 'bin' / 'credential-plugin'} printed "
                     "more than 4 MiB: not an ExecCredential (stopped)\n")
    child = int((tmp_path / "child").read_text())
    for _ in range(100):  # killed at once; reaped by init a moment later
        if not Path(f"/proc/{child}").exists() or "\tZ" in Path(f"/proc/{child}/status").read_text():
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the plugin's child {child} outlived it")


def test_a_plugin_flooding_stderr_costs_no_memory(two_clusters: tuple[FakeApi, FakeApi], cert: tuple[str, str],
                                                  tmp_path: Path) -> None:
    """200 MB on stderr took 2.3 GB and 14 s: only its start is kept (and its first line shown)."""
    import sys

    healthy, _ = two_clusters
    plugin(tmp_path, "echo 'error: the login expired' >&2\nhead -c 200000000 /dev/zero >&2\nexit 1\n")
    measure = ("import resource, subprocess, sys\n"
               "r = subprocess.run([sys.executable, '-m', 'sunkcheck', 'check', '--kubeconfig', sys.argv[1]], "
               "capture_output=True, text=True)\n"
               "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss >> 10)\nprint(r.stderr)")
    p = subprocess.run([sys.executable, "-c", measure, str(exec_config(tmp_path, healthy, cert))],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=os.getcwd()))
    code, megabytes = map(int, p.stdout.splitlines()[0].split())
    assert code == 3 and megabytes < 120, p.stdout
    assert p.stdout.splitlines()[1].startswith(f"sunkcheck: error: exec credential plugin {tmp_path / 'bin'} "[:-1]
                                               + "/credential-plugin failed (exit 1): error: the login expired ")


def test_a_plugin_printing_deeply_nested_json_is_malformed_output(two_clusters: tuple[FakeApi, FakeApi], cert: tuple[str, str],
                                                                  tmp_path: Path) -> None:
    """Not `internal error: RecursionError`: output nested too deeply for the parser is no ExecCredential."""
    import sys

    healthy, _ = two_clusters
    plugin(tmp_path, f"{sys.executable} -c \"print('[' * 100000 + ']' * 100000)\"\n")
    r = run("check", "--kubeconfig", str(exec_config(tmp_path, healthy, cert)))
    assert r.code == 3 and healthy.log == []
    assert r.err == (f"sunkcheck: error: exec credential plugin {tmp_path / 'bin' / 'credential-plugin'} printed no "
                     "ExecCredential with a token or client certificate (not JSON: nested too deeply)\n")


# --- credentials made again: a long-running client outlives them -------------------------------------

def _watched(kube: Kube) -> int:
    """The status of a one-second watch of Nodes, sent as serve sends one (the client's headers, its pool)."""
    from sunkcheck.collect.kube import NODES

    resp = kube.pool.request("GET", f"{kube.cfg.host}{NODES.path()}?watch=1&timeoutSeconds=1", headers=kube.headers(),
                             retries=False, redirect=False, preload_content=True)
    return resp.status


def _rotating_plugin(directory: Path, expires: bool = False) -> Path:
    """A plugin printing the token in `current` (and, if `expires`, the expirationTimestamp in `expires`),
    counting its runs in `runs`."""
    status = {"token": "$(cat current)"} | ({"expirationTimestamp": "$(cat expires)"} if expires else {})
    credential = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                             "status": status})
    quoted = credential.replace('"', '\\"')  # in the shell's double quotes, where $(cat current) is run
    return plugin(directory, f'cd {directory}\necho run >> runs\necho "{quoted}"\n')


def _rotate(api: FakeApi, directory: Path) -> None:
    """The API server accepts only a new token, which the plugin or token file now gives, and ends its watches."""
    api.token = "rotated-token"
    (directory / "current").write_text("rotated-token")
    api.drop_watches()


def test_an_exec_credential_is_made_again_when_it_expires(two_clusters: tuple[FakeApi, FakeApi], cert: tuple[str, str],
                                                          tmp_path: Path) -> None:
    """A long serve or --wait kept the plugin's first token past its expirationTimestamp: a list and a watch (which
    is not retried on a 401) both carry the new one once it has expired."""
    from sunkcheck.collect.kube import NODES, Kube

    healthy, _ = two_clusters
    (tmp_path / "current").write_text(TOKEN)
    soon = time.time() + 2

    def expiring(at: float) -> None:
        (tmp_path / "expires").write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)))

    expiring(soon)
    _rotating_plugin(tmp_path, expires=True)
    kube = Kube(str(exec_config(tmp_path, healthy, cert, command=str(tmp_path / "bin" / "credential-plugin"))))
    assert kube.list(NODES) and _watched(kube) == 200
    _rotate(healthy, tmp_path)
    expiring(time.time() + 3600)
    time.sleep(max(0.0, soon - time.time() + 0.1))
    assert _watched(kube) == 200 and kube.list(NODES)
    assert (tmp_path / "runs").read_text().count("run") == 2  # run again once, not for each request
    assert 401 not in {q.status for q in healthy.log}


def test_an_exec_credential_refused_is_made_again_and_the_request_sent_again_once(
        two_clusters: tuple[FakeApi, FakeApi], cert: tuple[str, str], tmp_path: Path) -> None:
    """No expirationTimestamp: the 401 itself is the sign, as in client-go; the request is sent again once, and a
    new credential that is refused too is the run's 401 error, not a loop."""
    from sunkcheck.collect.errors import Unreachable
    from sunkcheck.collect.kube import NODES, Kube

    healthy, _ = two_clusters
    (tmp_path / "current").write_text(TOKEN)
    _rotating_plugin(tmp_path)
    kube = Kube(str(exec_config(tmp_path, healthy, cert, command=str(tmp_path / "bin" / "credential-plugin"))))
    assert kube.list(NODES)
    _rotate(healthy, tmp_path)
    assert kube.list(NODES) and _watched(kube) == 200
    assert (tmp_path / "runs").read_text().count("run") == 2
    healthy.token = "yet-another-token"
    with pytest.raises(Unreachable, match=r"rejected the credentials \(401 Unauthorized\)"):
        kube.list(NODES)
    assert (tmp_path / "runs").read_text().count("run") == 3


def test_a_token_file_is_read_again_each_minute_and_after_a_401(two_clusters: tuple[FakeApi, FakeApi], cert: tuple[str, str],
                                                                tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rewritten tokenFile (a projected service account token is rotated on disk) was never read again."""
    from sunkcheck.collect.kube import NODES, Kube

    healthy, _ = two_clusters
    (tmp_path / "current").write_text(TOKEN)
    path = write(tmp_path / "config", config(
        "test", clusters=[("c", {"server": healthy.url, "certificate-authority": cert[0]})],
        users=[("u", {"tokenFile": "current"})], contexts=[("test", {"cluster": "c", "user": "u"})]))
    kube = Kube(str(path))
    assert kube.list(NODES)
    _rotate(healthy, tmp_path)
    assert kube.list(NODES)  # a 401, the file read again, the request sent again
    monkeypatch.setattr(kc, "TOKEN_FILE_LIFE", 0.5)
    _rotate(healthy, tmp_path)
    (tmp_path / "current").write_text("third-token")
    healthy.token = "third-token"
    assert kube.list(NODES)  # read again after the 401: from now on, every half second
    (tmp_path / "current").write_text("fourth-token")
    healthy.token = "fourth-token"
    time.sleep(0.6)
    assert _watched(kube) == 200  # a watch is not sent again after a 401: it carried the token read again


def test_a_kubeconfig_that_is_a_fifo_or_a_device_never_hangs(tmp_path):
    """A FIFO nobody writes is read as empty (no wait for a writer); a device is refused unread."""
    import threading

    fifo = tmp_path / "kubeconfig"
    os.mkfifo(fifo)
    r = run("check", "--kubeconfig", str(fifo), "-o", "json")
    assert r.code == 3 and r.json()["status"] == "unknown"
    r = run("check", "--kubeconfig", "/dev/zero")
    assert r.code == 3 and r.err == "sunkcheck: error: kubeconfig /dev/zero: cannot read: a device, not a regular file or FIFO\n"

    written = threading.Thread(target=lambda: fifo.write_text("apiVersion: v1\nkind: Config\ncontexts: []\n"))
    written.start()  # `--kubeconfig <(...)`: a writer is there, and what it writes is read
    try:
        r = run("check", "--kubeconfig", str(fifo), "--context", "nope")
    finally:
        with open(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK), "rb", closefd=True):
            pass  # unblock the writer if the run did not read
        written.join(5)
    assert r.code == 3 and "nope" in r.err


# --- the connection, against the real kubectl ---------------------------------------------------------

def _pem(text: str) -> str:
    return base64.b64encode(f"-----BEGIN CERTIFICATE-----\n{text}\n-----END CERTIFICATE-----\n".encode()).decode()


def _merged_kubeconfigs() -> SearchStrategy[tuple[dict, ...]]:
    """KUBECONFIG lists of one to three files, each in a directory of its own, whose clusters, users and contexts
    overlap by name; every relative path is unique to the file that names it (f<i>-...), so that where kubectl
    resolved it from can be told from its name. The last file defines every cluster and user a context names."""
    from hypothesis import strategies as st

    def some(options: dict) -> st.SearchStrategy[dict]:
        return st.fixed_dictionaries({}, optional={k: st.sampled_from(v) for k, v in options.items()})

    def tls_file(i: int, kind: str) -> st.SearchStrategy[dict]:
        relative = f"f{i}-{kind}"
        return st.sampled_from([{kind: relative}, {kind: f"sub/../{relative}"}, {f"{kind}-data": _pem(f"{kind} {i}")},
                                {kind: relative, f"{kind}-data": _pem(f"{kind} data {i}")},
                                {kind: relative, f"{kind}-data": ""}])

    def cluster(i: int) -> st.SearchStrategy[dict]:
        plain = some({"server": ["https://a.example:6443", f"https://f{i}.example/", "http://127.0.0.1:8080"],
                      "tls-server-name": ["kubernetes.default"], "proxy-url": ["http://proxy:3128", "socks5://s:1080"],
                      "insecure-skip-tls-verify": [False], "disable-compression": [True]})
        verified = st.one_of(st.just({}), tls_file(i, "certificate-authority"),
                             st.just({"insecure-skip-tls-verify": True}))
        return st.builds(lambda a, b: {"server": "https://a.example:6443"} | a | b, plain, verified)

    def user(i: int) -> st.SearchStrategy[dict]:
        return st.one_of(
            st.just({}), st.just({"token": f"token-{i}"}), st.just({"tokenFile": f"f{i}-token"}),
            st.just({"token": "", "tokenFile": f"f{i}-token"}), st.just({"username": f"user-{i}", "password": "pw"}),
            st.builds(lambda c, k: c | k, tls_file(i, "client-certificate"), tls_file(i, "client-key")),
            st.just({"exec": {"command": f"./f{i}-plugin", "apiVersion": "client.authentication.k8s.io/v1"},
                     "token": f"token-{i}"}),
            st.just({"exec": {"command": "plugin-on-path", "apiVersion": "client.authentication.k8s.io/v1"}}))

    def context() -> st.SearchStrategy[dict]:
        return st.builds(lambda c, u, ns: {"cluster": c} | u | ns, st.sampled_from(["c1", "c2"]),
                         st.sampled_from([{}, {"user": "u1"}, {"user": "u2"}]),
                         st.sampled_from([{}, {"namespace": "ns-a"}, {"namespace": ""}]))

    def file(i: int, last: bool) -> st.SearchStrategy[dict]:
        names = (lambda pool: st.sets(st.sampled_from(pool))) if not last else (lambda pool: st.just(set(pool)))
        return st.builds(
            lambda cs, us, xs, current: config(current, clusters=cs, users=us, contexts=xs),
            names(["c1", "c2"]).flatmap(lambda ns: st.tuples(*[st.tuples(st.just(n), cluster(i)) for n in sorted(ns)])),
            names(["u1", "u2"]).flatmap(lambda ns: st.tuples(*[st.tuples(st.just(n), user(i)) for n in sorted(ns)])),
            st.sets(st.sampled_from(["x1", "x2", "x3"])).flatmap(
                lambda ns: st.tuples(*[st.tuples(st.just(n), context()) for n in sorted(ns)])),
            st.sampled_from([None, "", "x1", "x2", "x3"]))

    return st.integers(1, 3).flatmap(lambda n: st.tuples(*[file(i, i == n - 1) for i in range(n)]))


def _kubectls_connection(view: dict, dirs: list[Path]) -> dict:
    """What kubectl connects with, read off `kubectl config view --minify --flatten` (files inlined as data; a
    token file and an exec command stay as written, resolved here from the file whose f<i>- names them)."""
    [cluster], [ctx] = view["clusters"], view["contexts"]
    c, x = cluster["cluster"], ctx["context"]
    u = (view.get("users") or [{"user": {}}])[0]["user"]

    def resolved(relative: str) -> Path:
        return dirs[int(relative.removeprefix("./").split("-")[0][1:])] / relative

    tls = c["server"].startswith("https")
    data = {k: base64.b64decode(v) if tls and v else None
            for k, v in ((k, e.get(f"{k}-data")) for e, k in ((c, "certificate-authority"), (u, "client-certificate"),
                                                              (u, "client-key")))}
    token = u.get("token") or (resolved(u["tokenFile"]).read_text() if u.get("tokenFile") else None)
    basic = base64.b64encode(f"{u['username']}:{u['password']}".encode()).decode() if "username" in u else None
    command = (u.get("exec") or {}).get("command")
    return {"server": c["server"].rstrip("/"), "namespace": x.get("namespace") or "default",
            "authorization": f"Bearer {token}" if token else f"Basic {basic}" if basic else None,
            "ca": data["certificate-authority"], "cert": data["client-certificate"], "key": data["client-key"],
            "verify_ssl": not c.get("insecure-skip-tls-verify"), "tls_server_name": c.get("tls-server-name"),
            "proxy": c.get("proxy-url"),
            "exec": str(resolved(command)) if command and "/" in command else command}


def _sunkchecks_connection(merged: dict, context: str | None) -> dict:
    found = kc.connection(merged, context, "kubeconfig")
    name = context or merged["current-context"]
    chosen = kc.context(merged, name, "kubeconfig")
    user: dict = next((u["user"] for u in merged["users"] if u["name"] == chosen.get("user")), {})

    def content(value: str | bytes | None) -> bytes | None:
        return Path(value).read_bytes() if isinstance(value, str) else value

    return {"server": found.host, "namespace": kc.namespace(chosen.get("namespace"), "kubeconfig"),
            "authorization": found.authorization, "ca": content(found.ca), "cert": content(found.cert),
            "key": content(found.key), "verify_ssl": found.verify_ssl, "tls_server_name": found.tls_server_name,
            "proxy": found.proxy, "exec": (user.get("exec") or {}).get("command")}


def test_every_contexts_connection_is_kubectls_on_merged_kubeconfigs(tmp_path_factory: pytest.TempPathFactory) -> None:
    """For every context of generated KUBECONFIG lists (and the current one), sunkcheck connects to the server,
    in the namespace, with the credentials, CA, TLS name and proxy that kubectl would: kubectl config view
    --minify --flatten says what kubectl resolved, a plain reading of it what that means."""
    from hypothesis import HealthCheck, Phase, given, settings

    compared = []

    # each example runs kubectl a few times: shrinking one would take minutes, so a failing one is shown whole
    @settings(max_examples=30, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate),
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(_merged_kubeconfigs())
    def same(docs: tuple[dict, ...]) -> None:
        root = tmp_path_factory.mktemp("merged")
        dirs = [root / f"d{i}" for i in range(len(docs))]
        for i, (d, doc) in enumerate(zip(dirs, docs, strict=True)):
            (d / "sub").mkdir(parents=True)
            for kind in ("certificate-authority", "client-certificate", "client-key", "token"):
                (d / f"f{i}-{kind}").write_text(f"{kind} of file {i}\n")
            write(d / "config", doc)
        env = dict(os.environ, KUBECONFIG=os.pathsep.join(str(d / "config") for d in dirs))
        merged = kc.merge([d / "config" for d in dirs])
        for context in [None, *sorted({c["name"] for c in merged["contexts"]})]:
            view = subprocess.run(["kubectl", "config", "view", "--minify", "--flatten", "-o", "json",
                                   *(["--context", context] if context else [])], env=env, cwd=root,
                                  capture_output=True, text=True, timeout=60, check=False)
            if view.returncode:  # no current context, one that names none, or a file given both as path and data
                assert re.search("current-context must exist|cannot locate context|both path and contents",
                                 view.stderr), view.stderr
                with pytest.raises(InputError):
                    kc.connection(merged, context, "kubeconfig")
                continue
            assert _sunkchecks_connection(merged, context) == _kubectls_connection(json.loads(view.stdout), dirs)
            compared.append(context)

    same()
    assert len(compared) > 30


def test_kubectls_refusals_are_sunkchecks(tmp_path: Path) -> None:
    """What kubectl refuses before it connects, sunkcheck refuses too, in one line; and what kubectl would do
    that sunkcheck does not (impersonate, an auth provider it cannot refresh), it refuses rather than skips."""
    files = {"token": tmp_path / "token"}
    files["token"].write_text("t")

    def refused(user: dict, context: str | None = None) -> str:
        doc = config("ctx", clusters=[("c", {"server": "https://api.example:6443"})], users=[("u", user)],
                     contexts=[("ctx", {"cluster": "c", "user": "u"})])
        with pytest.raises(InputError) as e:
            kc.connection(doc, context, "kubeconfig k")
        return str(e.value)

    assert refused({"token": "t", "username": "a", "password": "b"}) == (
        "kubeconfig k: context ctx: user u: more than one authentication method (a token and a user name and "
        "password), only one is allowed")
    assert refused({"tokenFile": str(files["token"]), "password": "b"}).endswith("only one is allowed")
    assert refused({}, "nope") == "kubeconfig k: context nope not found"
    assert refused({"token": "t", "as": "admin"}) == "kubeconfig k: context ctx: user u: impersonation (as) is not supported"
    assert refused({"auth-provider": {"name": "gcp"}}) == (
        "kubeconfig k: context ctx: user u: auth-provider gcp is not supported (kubectl has only oidc): use an exec "
        "credential plugin")
    assert "no valid id-token" in refused({"auth-provider": {"name": "oidc", "config": {"id-token": _jwt(time.time() - 5)}}})
    assert refused({"tokenFile": str(tmp_path / "missing")}) == (
        f"kubeconfig k: context ctx: user u: tokenFile {tmp_path / 'missing'}: cannot read: No such file or directory")


def test_a_token_file_that_is_no_token_is_refused_unread(tmp_path: Path) -> None:
    """/dev/zero reached 22 GB, a 4 GB sparse file was a MemoryError, a FIFO nobody writes hung past the request
    timeout: a token is a few KB of a regular file."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "sparse").write_bytes(b"")
    os.truncate(tmp_path / "sparse", 4 << 30)
    (tmp_path / "dir").mkdir()

    def refused(path: str) -> str:
        doc = config("ctx", clusters=[("c", {"server": "https://api.example:6443"})], users=[("u", {"tokenFile": path})],
                     contexts=[("ctx", {"cluster": "c", "user": "u"})])
        with pytest.raises(InputError) as e:
            kc.connection(doc, None, "kubeconfig k")
        return str(e.value)

    where = "kubeconfig k: context ctx: user u: tokenFile"
    started = time.monotonic()
    assert refused(str(tmp_path / "fifo")) == f"{where} {tmp_path / 'fifo'}: cannot read: a FIFO, not a regular file"
    assert time.monotonic() - started < 5
    assert refused("/dev/zero") == f"{where} /dev/zero: cannot read: a device, not a regular file"
    assert refused(str(tmp_path / "dir")) == f"{where} {tmp_path / 'dir'}: cannot read: a directory, not a regular file"
    assert refused(str(tmp_path / "sparse")) == f"{where} {tmp_path / 'sparse'}: larger than 1 MB: refusing the rest"


def _jwt(expires: float) -> str:
    claims = base64.urlsafe_b64encode(json.dumps({"exp": expires}).encode()).decode().rstrip("=")
    return f"e30.{claims}.signature"


def test_an_oidc_id_token_is_sent_while_it_is_valid() -> None:
    token = _jwt(time.time() + 600)
    doc = config("ctx", clusters=[("c", {"server": "https://api.example:6443"})],
                 users=[("u", {"auth-provider": {"name": "oidc", "config": {"id-token": token, "client-id": "x"}}})],
                 contexts=[("ctx", {"cluster": "c", "user": "u"})])
    assert kc.connection(doc, None, "kubeconfig").authorization == f"Bearer {token}"


def test_a_token_file_path_is_cleaned_before_it_is_read(tmp_path: Path) -> None:
    """`link/../token` is the token beside `link`, as kubectl reads it (it cleans the path first), not the one
    beside the directory `link` points to."""
    (tmp_path / "elsewhere" / "sub").mkdir(parents=True)
    (tmp_path / "elsewhere" / "token").write_text("beside-the-target")
    (tmp_path / "token").write_text("beside-the-link")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere" / "sub")
    doc = config("ctx", clusters=[("c", {"server": "https://api.example:6443"})],
                 users=[("u", {"tokenFile": str(tmp_path / "link" / ".." / "token")})],
                 contexts=[("ctx", {"cluster": "c", "user": "u"})])
    assert kc.connection(doc, None, "kubeconfig").authorization == "Bearer beside-the-link"


def test_a_live_check_never_imports_the_clients_loader(serve):
    """The start-up the direct settings save, end to end: the console script's imports, as -X importtime
    lists them, hold no kubernetes.config (nor the oauthlib/requests it drags in)."""
    import sys

    api = serve("healthy-pool-name")
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "sunkcheck", "check", "-n", "tenant-slurm", "-o", "json"],
                       capture_output=True, text=True, timeout=120, check=False,
                       env=dict(os.environ, KUBECONFIG=str(api.kubeconfig)))
    imported = {line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    assert p.returncode == 0 and json.loads(p.stdout)["status"] == "ok", p.stderr[-2000:]
    assert "kubernetes.client.rest" in imported  # the client's own transport carries the requests
    assert not {"kubernetes.config", "kubernetes.config.kube_config", "requests", "oauthlib"} & imported


# --- odd kubeconfigs: one line each, never an internal error ----------------------------------------------

def odd_config(api: FakeApi, cert, **lines: str) -> str:
    """A working kubeconfig as YAML text, a top-level line replaced by `lines` (key with '-' as '_')."""
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "t",
           "clusters": f"[{{name: c, cluster: {{server: '{api.url}', certificate-authority: '{cert[0]}'}}}}]",
           "users": f"[{{name: u, user: {{token: {TOKEN}}}}}]",
           "contexts": "[{name: t, context: {cluster: c, user: u, namespace: tenant-slurm}}]"}
    doc |= {key.replace("_", "-"): value for key, value in lines.items()}
    return "".join(f"{key}: {value}\n" for key, value in doc.items())


@pytest.mark.parametrize("lines, problem", [
    ({"contexts": "5"}, "contexts is an integer, expected a list"),
    ({"users": "{u: x}"}, "users is a mapping, expected a list"),
    ({"current_context": "[t]"}, "current-context is a list, expected a string"),
    ({"current_context": '"t\\uD800"', "contexts": '[{name: "t\\uD800", context: {cluster: c, user: u}}]'},
     "not valid YAML (a string holds a lone UTF-16 surrogate \\ud800, not a character)"),
    ({"contexts": '[{name: t, context: {cluster: c, user: u, namespace: "tenant\\uDC80"}}]'},
     "not valid YAML (a string holds a lone UTF-16 surrogate \\udc80, not a character)"),
    ({"users": '[{name: u, user: {token: "tok\\U0000DBFF"}}]'},
     "not valid YAML (a string holds a lone UTF-16 surrogate \\udbff, not a character)"),
    ({"clusters": "[" * 5000 + "]" * 5000}, "not valid YAML (nested too deeply)"),
    ({"users": "{a: " * 3000 + "b" + "}" * 3000}, "not valid YAML (nested too deeply)"),
    # a few hundred bytes of aliases, 10^9 values written out ("billion laughs"); a list that holds itself
    ({"preferences": "{a0: &a0 [x, x, x, x, x, x, x, x, x, x], "
                     + ", ".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)) + "}"},
     "its YAML aliases expand to more than 1,000,000 values (or without end): not a kubeconfig"),
    ({"preferences": "&p [*p]"}, "its YAML aliases expand to more than 1,000,000 values (or without end): not a kubeconfig"),
    # the client's loader read any non-empty string as true: "false" turned certificate checks off
    ({"clusters": "[{name: c, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: 'false'}}]"},
     "cluster c: insecure-skip-tls-verify is a string, expected true or false"),
    ({"clusters": "[{name: c, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: 0}}]"},
     "cluster c: insecure-skip-tls-verify is an integer, expected true or false"),
    ({"clusters": "[{name: c, cluster: {server: 'https://127.0.0.1:1', disable-compression: 'true'}}]"},
     "cluster c: disable-compression is a string, expected true or false"),
    ({"users": "[{name: u, user: {exec: {command: x, apiVersion: v1, provideClusterInfo: 'no'}}}]"},
     "user u: exec.provideClusterInfo is a string, expected true or false"),
])
def test_a_kubeconfig_of_another_shape_is_one_line(two_clusters, cert, tmp_path, lines, problem):
    """kubectl refuses each of these files (a type error; YAML with a surrogate escape is not valid to it)."""
    healthy, _ = two_clusters
    path = tmp_path / "config"
    path.write_text(odd_config(healthy, cert, **lines))
    for args in (["-o", "json"], ["--all-contexts", "-o", "plain"], ["-o", "nagios"]):
        r = run("check", "--kubeconfig", str(path), *args)
        assert r.code == 3 and r.err == f"sunkcheck: error: kubeconfig {path}: {problem}\n", r.err
    assert healthy.log == []


@pytest.mark.parametrize("context, problem", [
    ({"namespace": ["a"]}, "namespace is a list, expected a string"),
    ({"namespace": 123}, "namespace is an integer, expected a string"),
    ({"namespace": "a\x1b[31mb"}, "namespace 'a\\x1b[31mb': not a name the API server accepts; expected a DNS-1123 label"),
    ({"namespace": "../../x"}, "namespace '../../x': not a name the API server accepts; expected a DNS-1123 label"),
    ({"cluster": ["c"]}, "cluster is a list, expected a string"),
])
def test_a_context_the_api_server_could_not_use_is_one_line_and_other_contexts_still_report(
        two_clusters, cert, tmp_path, context, problem):
    """The context's namespace is checked as -n is, before it reaches a URL path; with --all-contexts that
    context is an error line and the others still report."""
    healthy, _ = two_clusters
    good = {"cluster": "c", "user": "u", "namespace": "tenant-slurm"}
    path = write(tmp_path / "config", config("t", clusters=[("c", {"server": healthy.url, "certificate-authority": cert[0]})],
                                             users=[("u", {"token": TOKEN})],
                                             contexts=[("t", good | context), ("good", good)]))
    r = run("check", "--kubeconfig", str(path))
    assert r.code == 3 and r.err.startswith(f"sunkcheck: error: kubeconfig {path}: context t: {safe(problem)}"), r.err
    assert r.err.count("\n") == 1
    assert healthy.log == []
    r = run("check", "--kubeconfig", str(path), "--all-contexts", "-o", "json")
    assert r.code == 3 and r.err == ""
    [error] = r.json()["errors"]
    assert error.startswith(f"context t: kubeconfig {path}: context t: {problem}")
    assert {t["context"] for t in r.json()["results"]} == {"good"} and r.json()["results"][0]["status"] == "ok"
    if "namespace" in context:  # read only when -n does not say
        assert run("check", "--kubeconfig", str(path), "-n", "tenant-slurm").code == 0


@pytest.mark.parametrize("server", ["ht!tp://[::1", "127.0.0.1:6443", "https://", "https://[::1", "https://h:99999",
                                    "ftp://h.example", 6443])
def test_a_server_that_is_no_http_url_is_one_line(tmp_path, cert, server):
    """Without a scheme urllib3 printed a multi-line FutureWarning (a subprocess: a warning shows once per process)."""
    import sys

    path = write(tmp_path / "config", config("t", clusters=[("c", {"server": server, "certificate-authority": cert[0]})],
                                             users=[("u", {"token": TOKEN})],
                                             contexts=[("t", {"cluster": "c", "user": "u", "namespace": "tenant-slurm"})]))
    p = subprocess.run([sys.executable, "-m", "sunkcheck", "check", "--kubeconfig", str(path), "--request-timeout", "5s"],
                       capture_output=True, text=True, timeout=60, env={k: v for k, v in os.environ.items()
                                                                        if k != "PYTHONWARNINGS"})
    assert p.returncode == 3
    assert p.stderr == (f"sunkcheck: error: kubeconfig {path}: context t: server {server!r} is not an http:// or "
                        "https:// URL with a host\n" if isinstance(server, str) else
                        f"sunkcheck: error: kubeconfig {path}: context t: cluster c: server is an integer, expected a string\n")


def test_a_watch_refused_makes_the_credentials_again_and_watches_on(two_clusters: tuple[FakeApi, FakeApi],
                                                                    cert: tuple[str, str], tmp_path: Path) -> None:
    """No expirationTimestamp, and a watch (serve's, --wait's) is refused with 401 once the token rotated: the 401
    itself makes the plugin's credential again and the watch is sent again at once, from where it was, as a list's
    401 is; it used to fail, back off and list everything again."""
    import threading

    from sunkcheck.collect.kube import NODES, Kube
    from sunkcheck.serve.watch import Reflector, Source

    class Sink:
        def listing(self, source: Source) -> contextlib.AbstractContextManager[Callable[[dict], dict]]:
            return contextlib.nullcontext(source.slim)

        def replace(self, source: Source, items: list[dict]) -> None:
            pass

        def apply(self, source: Source, kind: str, obj: dict) -> None:
            pass

    healthy, _ = two_clusters
    healthy.bookmark_every = 0.2
    (tmp_path / "current").write_text(TOKEN)
    _rotating_plugin(tmp_path)
    kube = Kube(str(exec_config(tmp_path, healthy, cert, command=str(tmp_path / "bin" / "credential-plugin"))))
    stop = threading.Event()
    reflector = Reflector(kube, Source("nodes", NODES), Sink(), stop, watch_seconds=30)
    reflector.thread.start()
    try:
        deadline = time.monotonic() + 10
        while not reflector.health.synced and time.monotonic() < deadline:
            time.sleep(0.05)
        rotated = len(healthy.log)
        _rotate(healthy, tmp_path)
        while not [q for q in healthy.log[rotated:] if q.query.get("watch") and q.status == 200]:
            assert time.monotonic() < deadline, [(q.query, q.status) for q in healthy.log]
            time.sleep(0.05)
        failed = (reflector.health.errors, reflector.health.relists)  # before the cancel below breaks its read
    finally:
        stop.set()
        reflector.cancel()
    refused = [q for q in healthy.log if q.status == 401]
    assert len(refused) == 1 and refused[0].query.get("watch"), refused  # the watch's, renewed at once
    assert failed == (1, 0), [(q.query, q.status) for q in healthy.log]  # the watch cut, and no list again
    assert (tmp_path / "runs").read_text().count("run") == 2
