"""Signals and deadlines, with real signals sent to a real `python -m sunkcheck` child: SIGTERM and the first SIGINT
end the run at once wherever it is, with exit 3 and UNKNOWN in the chosen format and the textfile; the exec
credential plugin's and the ProxyCommand's process groups end with it; temporary files are removed, and those a
SIGKILL left are removed by a later run; --ssh-timeout bounds the SSH agent too; the shipped CronJob leaves the
time a stop needs."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest
import yaml

from sunkcheck import duration
from tests.conftest import ROOT, run, squatter_ends
from tests.kubeapi import Listener
from tests.slurmcluster import Sshd, keypair

STOPPED = "interrupted by {} before the check finished"
WITHIN = 1.0  # seconds from the signal to the exit: "within a second wherever it is"


def start(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "sunkcheck", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, **(env or {})), text=True)


def stopped(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> tuple[int, str, str, float]:
    """Send `sig`; (exit code, stdout, stderr, seconds until it exited)."""
    sent = time.monotonic()
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out, err, time.monotonic() - sent


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone but for its exit status
    return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text() if Path(f"/proc/{pid}/status").exists() else False


def pids_in(path: Path, count: int) -> list[int]:
    wait_for(lambda: path.exists() and len(path.read_text().split()) >= count, f"{count} pids in {path}")
    return [int(p) for p in path.read_text().split()]


@pytest.fixture
def survivors() -> Iterator[list[int]]:
    """Pids a test expects gone: killed after the test whatever it found, so a failure leaves no orphan."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# --- ending a run ----------------------------------------------------------------------------------------------

def _healthy_textfile(serve: Callable[..., Any], path: Path) -> None:
    """A previous run's textfile: up, OK."""
    serve("healthy-pool-name")
    assert run("check", "-o", "json", "--textfile", str(path)).code == 0
    assert "sunkcheck_up 1" in path.read_text().splitlines() and "sunkcheck_status{" in path.read_text()


@pytest.mark.parametrize("output", ["json", "nagios", "plain"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_mid_request_ends_the_run_at_once_unknown_and_the_textfile_says_up_0(
        serve: Callable[..., Any], tmp_path: Path, output: str, sig: int) -> None:
    textfile = tmp_path / "sunkcheck.prom"
    _healthy_textfile(serve, textfile)
    api = serve("healthy-pool-name")
    api.faults.silent = True  # every request hangs until its 60 s deadline
    proc = start("check", "-o", output, "--textfile", str(textfile), env={"KUBECONFIG": str(api.kubeconfig)})
    assert api.arrived.wait(30)
    code, out, err, took = stopped(proc, sig)
    reason = STOPPED.format(signal.Signals(sig).name)
    assert code == 3 and took < WITHIN, (code, took, err)
    if output == "json":
        assert json.loads(out)["status"] == "unknown" and json.loads(out)["errors"] == [reason]
    elif output == "nagios":
        assert out.startswith(f"SUNKCHECK UNKNOWN - {reason}\n")
    else:
        assert out.startswith("sunkcheck UNKNOWN:") and reason in out
    assert f"sunkcheck: interrupted by {signal.Signals(sig).name}" in err and "Traceback" not in err
    metrics = textfile.read_text().splitlines()
    assert "sunkcheck_up 0" in metrics and not [m for m in metrics if m.startswith("sunkcheck_status")]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


STOPPED_MID_IMPORT = """\
import importlib._bootstrap, os, signal, sys
from pathlib import Path
from typing import Any
from sunkcheck import cli, stop
from sunkcheck.render import Output

owed = cli.Owed()
stop.install(owed.last_words)
owed.owe(Output(sys.argv[1]), Path(sys.argv[2]))

class Seen:  # an import the stop makes, of a module whose import another place of the main thread may hold
    @staticmethod
    def find_spec(name, path=None, target=None):
        sys.stderr.write(f"imported {name}\\n")

sys.meta_path.insert(0, Seen)
# the main thread inside the import of the modules the last words use: their module locks' own locks held
held = [importlib._bootstrap._get_module_lock(name) for name in sys.argv[3:]]
for lock in held:
    lock.lock.acquire()
os.kill(os.getpid(), signal.SIGTERM)
print("not stopped")
"""


@pytest.mark.parametrize("output", ["json", "nagios", "plain", "table", "html"])
def test_a_signal_mid_import_ends_the_run_with_its_last_words(tmp_path: Path, output: str) -> None:
    """The handler interrupts the main thread anywhere, also while it holds an import's lock, which the same
    thread cannot take again: the last words were rehearsed when they became owed, so the stop imports nothing."""
    textfile = tmp_path / "sunkcheck.prom"
    renderer = f"sunkcheck.render.{output}"
    proc = subprocess.Popen([sys.executable, "-c", STOPPED_MID_IMPORT, output, str(textfile), renderer,
                             "sunkcheck.render.prometheus", "sunkcheck.textfile"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # the handler waits for the lock its own thread holds
        proc.kill()
        out, err = proc.communicate()
    code, reason = proc.returncode, STOPPED.format("SIGTERM")
    assert code == 3 and "imported" not in err and "not stopped" not in out, (code, out, err)
    assert "sunkcheck: interrupted by SIGTERM" in err and reason in out and "Traceback" not in err
    assert "sunkcheck_up 0" in textfile.read_text().splitlines()


IMPORTS_WHILE_STOPPING = """\
import sys

class Seen:  # loaded by Python at startup (sitecustomize): says what is imported once the stop has begun
    @staticmethod
    def find_spec(name, path=None, target=None):
        stop = sys.modules.get("sunkcheck.stop")
        if stop is not None and stop._stopping:
            sys.stderr.write(f"imported while stopping: {name}\\n")

sys.meta_path.insert(0, Seen)
"""


@pytest.mark.parametrize("output", ["json", "nagios", "plain", "table", "html"])
def test_a_live_check_stopped_mid_request_imports_nothing(serve: Callable[..., Any], tmp_path: Path,
                                                          output: str) -> None:
    """The executable as it runs: whatever the format, the stop finds the modules of its last words imported."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(IMPORTS_WHILE_STOPPING)
    api = serve("healthy-pool-name")
    api.faults.silent = True
    path = os.pathsep.join(filter(None, (os.environ.get("PYTHONPATH"), str(site))))
    proc = start("check", "-o", output, "--textfile", str(tmp_path / "sunkcheck.prom"),
                 env={"KUBECONFIG": str(api.kubeconfig), "PYTHONPATH": path})
    assert api.arrived.wait(30)
    code, out, err, took = stopped(proc, signal.SIGINT)
    assert code == 3 and took < WITHIN and STOPPED.format("SIGINT") in out, (code, took, err)
    assert "imported while stopping" not in err, err


def test_sigterm_while_waiting_for_convergence_ends_the_wait_unknown(serve: Callable[..., Any], tmp_path: Path) -> None:
    api = squatter_ends(serve("two-problems"))  # never converges
    textfile = tmp_path / "sunkcheck.prom"
    proc = start("check", "--wait", "1h", "--interval", "1h", "-o", "json", "--textfile", str(textfile),
                 env={"KUBECONFIG": str(api.kubeconfig)})
    assert proc.stderr is not None
    line = proc.stderr.readline()  # the first poll's progress line: then it sleeps for an hour
    assert line.startswith("sunkcheck: waiting ("), line
    code, out, err, took = stopped(proc)
    assert code == 3 and took < WITHIN, (code, took, err)
    assert json.loads(out)["status"] == "unknown" and json.loads(out)["errors"] == [STOPPED.format("SIGTERM")]
    assert "sunkcheck_up 0" in textfile.read_text().splitlines()


def test_an_exec_credential_plugin_ends_with_the_run_with_what_it_started(serve: Callable[..., Any], tmp_path: Path,
                                                                          survivors: list[int]) -> None:
    api = serve("healthy-pool-name")
    pids = tmp_path / "pids"
    plugin = tmp_path / "plugin.sh"
    plugin.write_text(f"#!/bin/sh\nsleep 300 &\necho $! >> {pids}\necho $$ >> {pids}\nwait\n")  # it hangs, with a child
    plugin.chmod(0o755)
    config = json.loads(api.kubeconfig.read_text())
    config["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin),
                                           "interactiveMode": "Never"}}
    api.kubeconfig.write_text(json.dumps(config))
    proc = start("check", "-o", "json", env={"KUBECONFIG": str(api.kubeconfig)})
    survivors += pids_in(pids, 2)
    code, out, err, took = stopped(proc)
    assert code == 3 and took < WITHIN and json.loads(out)["status"] == "unknown", (code, took, err)
    wait_for(lambda: not any(map(alive, survivors)), "the plugin and its child to be gone", timeout=WITHIN)


def test_a_proxycommand_ends_with_the_run_with_what_it_started(serve: Callable[..., Any], tmp_path: Path,
                                                               survivors: list[int]) -> None:
    """Mid-SSH: the login node is reached through a ProxyCommand that never passes a byte (the banner wait is
    60 s); the Kubernetes steps are done, the run waits for the Slurm step."""
    api = serve("healthy-pool-name")
    pids = tmp_path / "pids"
    config = tmp_path / "ssh_config"
    config.write_text(f'Host login\n  ProxyCommand sh -c "sleep 300 & echo $! >> {pids}; echo $$ >> {pids}; wait"\n')
    proc = start("check", "-o", "json", "--login", "login", "--ssh-config", str(config), "--ssh-timeout", "60s",
                 env={"KUBECONFIG": str(api.kubeconfig), "SSH_AUTH_SOCK": ""})
    survivors += pids_in(pids, 2)
    code, out, err, took = stopped(proc)
    assert code == 3 and took < WITHIN and json.loads(out)["status"] == "unknown", (code, took, err)
    wait_for(lambda: not any(map(alive, survivors)), "the ProxyCommand and its child to be gone", timeout=WITHIN)


def child(script: str) -> tuple[subprocess.Popen[str], IO[str]]:
    """`python -c script`, and what it prints (a pipe)."""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout


def test_a_second_sigint_kills_at_once_even_if_the_last_words_hang(tmp_path: Path) -> None:
    """The handler ignores further SIGTERMs but gives SIGINT back its default: a second Ctrl-C while the last
    words hang (a textfile on a stuck filesystem) ends the process."""
    script = ("import time, sys\nfrom sunkcheck import stop\n"
              "stop.install(lambda reason: (print('last words', flush=True), time.sleep(300)))\n"
              "print('ready', flush=True)\ntime.sleep(300)\n")
    proc, said = child(script)
    assert said.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    assert said.readline() == "last words\n"
    proc.send_signal(signal.SIGTERM)  # ignored: ending already
    time.sleep(0.2)
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=WITHIN * 5) == -signal.SIGINT


def test_a_stop_waits_for_a_step_that_must_not_be_cut_in_two() -> None:
    """stop.deferred (a child started and registered, a snapshot directory swapped): the stop runs at its end."""
    script = ("import time\nfrom sunkcheck import stop\nstop.install(lambda reason: print(reason, flush=True))\n"
              "with stop.deferred():\n    print('in', flush=True)\n    time.sleep(1)\n    print('out', flush=True)\n"
              "print('after', flush=True)\n")
    proc, said = child(script)
    assert said.readline() == "in\n"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert (proc.returncode, out) == (3, "out\ninterrupted by SIGTERM\n")


# --- temporary files ------------------------------------------------------------------------------------------

def test_a_stop_removes_the_temporary_directory_being_written(tmp_path: Path) -> None:
    """Mid-save: a snapshot directory in the making (scratch) is removed by the stop."""
    destination = tmp_path / "snap"
    script = ("import sys, time\nfrom pathlib import Path\nfrom sunkcheck import stop\nfrom sunkcheck.scratch import scratch\n"
              "stop.install(lambda reason: None)\n"
              f"with scratch(Path({str(destination)!r}), directory=True) as (path, _):\n"
              "    (path / 'nodes.json').write_text('{}')\n    print(path, flush=True)\n    time.sleep(300)\n")
    proc, said = child(script)
    made = Path(said.readline().strip())
    assert made.is_dir() and re.fullmatch(r"\.snap\.sunkcheck-[a-z0-9_]{8}\.tmp", made.name)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 3
    assert list(tmp_path.iterdir()) == []


def test_a_later_run_removes_only_the_stale_temporary_files_sunkcheck_made(serve: Callable[..., Any], tmp_path: Path) -> None:
    """What a SIGKILL left beside --save's directory and the --textfile is removed by the next run writing there:
    sunkcheck's names for that destination only, a minute old, not a symbolic link, not one a live run holds."""
    import fcntl

    serve("healthy-pool-name")
    old = time.time() - 3600
    stale = [tmp_path / ".snap.sunkcheck-abcd1234.tmp", tmp_path / ".snap.sunkcheck-efgh5678.old",
             tmp_path / ".m.prom.sunkcheck-ijkl9012.tmp"]
    for path in stale[:2]:
        path.mkdir()
        (path / "nodes.json").write_text("{}")
    stale[2].write_text("sunkcheck_up 1\n")
    kept = {tmp_path / ".snap.sunkcheck-young123.tmp": "young", tmp_path / ".other.sunkcheck-abcd1234.tmp": "another's",
            tmp_path / ".snap.mine-abcd1234.tmp": "not sunkcheck's", tmp_path / ".snap.sunkcheck-held1234.tmp": "held"}
    for path in kept:
        path.mkdir()
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "precious").write_text("x")
    link = tmp_path / ".snap.sunkcheck-link1234.tmp"
    link.symlink_to(target)
    for path in [*stale, *kept, link]:
        if path.name != ".snap.sunkcheck-young123.tmp":
            os.utime(path, (old, old), follow_symlinks=False)
    held = os.open(tmp_path / ".snap.sunkcheck-held1234.tmp", os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # a live run's, however old
    try:
        r = run("check", "-o", "json", "--save", str(tmp_path / "snap"), "--textfile", str(tmp_path / "m.prom"))
    finally:
        os.close(held)
    assert r.code == 0, r.err
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in kept) and link.is_symlink() and (target / "precious").exists()
    assert (tmp_path / "snap" / "nodes.json").exists() and "sunkcheck_up 1" in (tmp_path / "m.prom").read_text().splitlines()


def test_credential_files_from_kubeconfig_data_are_removed_by_a_stop_and_swept_after_a_sigkill(serve: Callable[..., Any],
                                                                                               tmp_path: Path) -> None:
    """The CA written from certificate-authority-data (the client's TLS reads files only) was left in $TMPDIR by
    a signal; a stop removes it, and what a SIGKILL left is removed by the next run."""
    api = serve("healthy-pool-name")
    config = json.loads(api.kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    cluster["certificate-authority-data"] = base64.b64encode(Path(cluster.pop("certificate-authority")).read_bytes()).decode()
    api.kubeconfig.write_text(json.dumps(config))
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {"KUBECONFIG": str(api.kubeconfig), "TMPDIR": str(temp)}
    api.faults.silent = True
    proc = start("check", "-o", "json", env=env)
    assert api.arrived.wait(30)
    assert len(list(temp.iterdir())) == 1  # the CA file, while the run lives
    code, out, err, _took = stopped(proc)
    assert code == 3 and list(temp.iterdir()) == [], (code, err)

    left = temp / ".credential.sunkcheck-abcd1234.tmp"  # as a SIGKILLed run leaves it
    left.write_text("-----BEGIN CERTIFICATE-----\n")
    os.utime(left, (time.time() - 3600,) * 2)
    api.faults.silent = False
    proc = start("check", "-o", "json", env=env)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and json.loads(out)["status"] == "ok", err
    assert list(temp.iterdir()) == []


# --- the SSH agent ------------------------------------------------------------------------------------------

class Late(Listener):
    """A TCP forwarder to 127.0.0.1:`port` that passes the server's bytes on `delay` seconds late, from its
    banner on: the key exchange ends that much later, as on a loaded machine."""

    def __init__(self, port: int, delay: float):
        self.to, self.delay = port, delay
        super().__init__()

    def took(self, conn: socket.socket) -> None:
        server = socket.create_connection(("127.0.0.1", self.to), timeout=30)
        self.open.append(server)
        threading.Thread(target=self._pipe, args=(conn, server, 0), daemon=True).start()
        threading.Thread(target=self._pipe, args=(server, conn, self.delay), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket, delay: float) -> None:
        time.sleep(delay)
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
            sink.shutdown(socket.SHUT_WR)


def _check_through_agent(serve: Callable[..., Any], tmp_path: Path, agent_sock: Path,
                         late: float = 0) -> tuple[dict, dict, str, int, float]:
    """A check with --login to a real sshd, no key but the agent's, --ssh-timeout 2s, the sshd's answers `late`
    seconds late: (JSON, the sinfo step, stderr, exit code, seconds taken)."""
    api = serve("healthy-pool-name")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    with Sshd(tmp_path / "sshd", [tmp_path / "key"]) as sshd, Late(sshd.port, late) as link:
        key = sshd.known_hosts_line().split(" ", 1)[1]
        (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{link.port} {key}")
        began = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "sunkcheck", "check", "-o", "json", "--login",
                               f"root@127.0.0.1:{link.port}", "--ssh-timeout", "2s"], capture_output=True, text=True,
                              timeout=60, env=dict(os.environ, KUBECONFIG=str(api.kubeconfig), HOME=str(home),
                                                   SSH_AUTH_SOCK=str(agent_sock)))
        took = time.monotonic() - began
    doc = json.loads(proc.stdout)
    [result] = doc["results"]
    assert all(s["status"] == "ok" for s in result["steps"] if s["name"] != "sinfo")  # the rest of the diagnosis
    assert proc.stderr.count("\n") <= 1 and "Traceback" not in proc.stderr
    return doc, next(s for s in result["steps"] if s["name"] == "sinfo"), proc.stderr, proc.returncode, took


def test_an_ssh_agent_that_never_answers_fails_the_sinfo_step_within_the_timeout(serve: Callable[..., Any],
                                                                                 tmp_path: Path) -> None:
    """An agent that accepts and never answers blocked the run until it went away; the sinfo step fails at
    --ssh-timeout in one line, and the rest of the diagnosis prints."""
    keypair(tmp_path / "key")
    agent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    agent.bind(str(tmp_path / "agent.sock"))
    agent.listen(8)  # accepted by the kernel, never read, never answered
    with agent:
        doc, sinfo, _err, code, took = _check_through_agent(serve, tmp_path, tmp_path / "agent.sock")
    reason = f"the SSH agent ({tmp_path / 'agent.sock'}) did not answer within 2s (--ssh-timeout)"
    assert sinfo["status"] == "unknown" and sinfo["summary"] == reason, sinfo
    assert doc["errors"] == [f"sinfo: {reason}"] and code == 3
    assert took < 2 + duration.HANDSHAKE_TIMEOUT, took


@pytest.mark.parametrize("late", [0, 1.0], ids=["at-once", "after-a-slow-key-exchange"])
def test_an_ssh_agent_waiting_on_a_confirmation_prompt_fails_the_sinfo_step_within_the_timeout(serve: Callable[..., Any],
                                                                                               tmp_path: Path,
                                                                                               late: float) -> None:
    """The agent lists its key (the one the login node accepts) and never answers the signing request, as one
    waiting for the user to confirm (ssh-add -c): the step ends at --ssh-timeout all the same, and says so
    however long the key exchange took (paramiko's own auth timeout, counted from the end of it, then comes
    after the step's deadline)."""
    import struct

    key = keypair(tmp_path / "key")
    blob = base64.b64decode(Path(f"{key}.pub").read_text().split()[1])
    agent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    agent.bind(str(tmp_path / "agent.sock"))
    agent.listen(8)
    held: list[socket.socket] = []

    def serve_agent() -> None:
        def string(b: bytes) -> bytes:
            return struct.pack(">I", len(b)) + b
        while True:
            try:
                conn = agent.accept()[0]
            except OSError:
                return
            held.append(conn)
            with contextlib.suppress(OSError):
                while (head := conn.recv(4)) and len(head) == 4:
                    message = conn.recv(struct.unpack(">I", head)[0])
                    if message[:1] == b"\x0b":  # REQUEST_IDENTITIES: the key; a SIGN_REQUEST (13) is never answered
                        conn.sendall(string(b"\x0c" + struct.pack(">I", 1) + string(blob) + string(b"test key")))

    threading.Thread(target=serve_agent, daemon=True).start()
    try:
        doc, sinfo, _err, code, took = _check_through_agent(serve, tmp_path, tmp_path / "agent.sock", late)
    finally:
        agent.close()
        for conn in held:
            conn.close()
    reason = (r"authentication to root@127\.0\.0\.1:\d+ did not finish within 2s \(--ssh-timeout\): the SSH agent "
              rf"\({re.escape(str(tmp_path / 'agent.sock'))}\) was asked to sign and did not answer \(a confirmation prompt\?\)")
    assert sinfo["status"] == "unknown" and re.fullmatch(reason, sinfo["summary"]) and code == 3, sinfo
    assert doc["errors"] == [f"sinfo: {sinfo['summary']}"]
    assert took < 2 + duration.HANDSHAKE_TIMEOUT, took


def test_ssh_timeout_bounds_the_whole_ssh_step_even_what_paramiko_does_not(serve: Callable[..., Any], tmp_path: Path,
                                                                           survivors: list[int]) -> None:
    """A `Match exec` command of the ssh_config that hangs (paramiko runs it without a deadline, as ssh does)
    held the run until it ended; the step is abandoned at --ssh-timeout, the rest of the diagnosis prints."""
    api = serve("healthy-pool-name")
    pids, script = tmp_path / "pids", tmp_path / "hang.sh"
    script.write_text(f"#!/bin/sh\necho $$ >> {pids}\nexec sleep 60\n")
    script.chmod(0o755)
    config = tmp_path / "ssh_config"
    config.write_text(f"Match exec {script}\n  Port 2222\n")
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "sunkcheck", "check", "-o", "json", "--login", "login", "--ssh-config",
                           str(config), "--ssh-timeout", "1s"], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, KUBECONFIG=str(api.kubeconfig), SSH_AUTH_SOCK=""))
    took = time.monotonic() - began
    survivors += pids_in(pids, 1)
    doc = json.loads(proc.stdout)
    [result] = doc["results"]
    sinfo = next(s for s in result["steps"] if s["name"] == "sinfo")
    reason = "the SSH step to login did not finish within 1s (--ssh-timeout)"
    assert sinfo["status"] == "unknown" and sinfo["summary"] == reason and doc["errors"] == [f"sinfo: {reason}"]
    assert all(s["status"] == "ok" for s in result["steps"] if s["name"] != "sinfo") and proc.returncode == 3
    assert took < 30, took  # 1 s, and the start of a Python process on a loaded machine; never the 60 s it hangs


# --- the CronJob's deadline ------------------------------------------------------------------------------------

STOP_BUDGET = 5
"""Seconds the shipped CronJob must leave between SIGTERM and SIGKILL: sunkcheck ends within one (WITHIN) with its
output written; the rest is margin for a loaded node."""


def test_the_shipped_cronjob_ends_a_hung_run_by_sigterm_with_time_to_say_so() -> None:
    """docs/signals.md: activeDeadlineSeconds makes the Job controller delete the Pod, the kubelet sends SIGTERM,
    then SIGKILL after terminationGracePeriodSeconds. The deadline must end a hung run before the next one is due
    (concurrencyPolicy Forbid would skip it), past a whole request timeout; the grace must leave the stop its time;
    and SIGTERM must reach sunkcheck itself (PID 1: an exec-form ENTRYPOINT, not a shell that does not forward it)."""
    _, cronjob = yaml.safe_load_all((ROOT / "deploy" / "cronjob.yaml").read_text())
    schedule = re.fullmatch(r"\*/(\d+) \* \* \* \*", cronjob["spec"]["schedule"])
    assert schedule is not None, cronjob["spec"]["schedule"]
    minutes = int(schedule.group(1))
    job = cronjob["spec"]["jobTemplate"]["spec"]
    pod = job["template"]["spec"]
    args = pod["containers"][0]["args"]
    request_timeout = duration.parse(args[args.index("--request-timeout") + 1], "--request-timeout")
    deadline, grace = job["activeDeadlineSeconds"], pod["terminationGracePeriodSeconds"]
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    assert request_timeout < deadline and deadline + grace < minutes * 60
    assert STOP_BUDGET <= grace
    entrypoint = next(line for line in (ROOT / "deploy" / "Containerfile").read_text().splitlines()
                      if line.startswith("ENTRYPOINT"))
    assert json.loads(entrypoint.removeprefix("ENTRYPOINT").strip())[0] == "sunkcheck"  # exec form: sunkcheck is PID 1
    assert "activeDeadlineSeconds" in (ROOT / "docs" / "signals.md").read_text()

