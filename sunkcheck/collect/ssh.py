"""The SSH connection to a Slurm login node (paramiko), the way OpenSSH would make it from the Hops ssh_config
resolves to (`sshconfig.py`): each ProxyJump hop or a ProxyCommand, the agent, strict host-key checking with an
opt-in `accept-new`, and timeouts; and a command run on it, its output read by a deadline and up to a cap."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import os
import select
import shlex
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from sunkcheck import stop
from sunkcheck.collect.sshconfig import INVALID, Hop, SshError, expand_user, read_config, resolve
from sunkcheck.target import SlurmLogin

# paramiko's transport thread logs tracebacks and the server's raw text (a banner can carry terminal
# escapes); every failure reaches the user as one SshError line instead.
logging.getLogger("paramiko").addHandler(logging.NullHandler())
logging.getLogger("paramiko").propagate = False


def fingerprint(key: Any) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")


def _how_to_record(hop: Hop, ssh_config: str | None) -> str:
    """A command recording the hop's key in its first known_hosts file. ssh-keyscan connects directly: to a
    host behind a ProxyJump or ProxyCommand it fails, or asks another machine of that name, so there ssh itself
    goes the same way and shows the fingerprint to compare before it records the key."""
    if hop.record_to is None:
        return "add it to a known_hosts file (UserKnownHostsFile is none)"
    if not (hop.proxy_jump or hop.proxy_command):
        return f"add it with `ssh-keyscan -p {hop.port} {shlex.quote(hop.host)} >> {shlex.quote(hop.record_to)}`"
    args = (["-F", str(Path(ssh_config).expanduser())] if ssh_config else []) + [
        "-o", "StrictHostKeyChecking=ask", "-p", str(hop.port), "-l", hop.user] + [
        arg for key in hop.keys for arg in ("-i", key)] + [hop.alias, "true"]
    way = "ProxyJump" if hop.proxy_jump else "ProxyCommand"
    return f"connect once through its {way} with `ssh {shlex.join(args)}` and answer yes only to that fingerprint"


def _policy(hop: Hop, accept_new: bool, ssh_config: str | None) -> Any:
    import paramiko

    class Policy(paramiko.MissingHostKeyPolicy):
        """OpenSSH's StrictHostKeyChecking: `yes` by default, `accept-new` on request; never a silent add."""

        def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
            if not accept_new:
                raise SshError(
                    f"host key for {hostname} is not known ({key.get_name()} {fingerprint(key)}): refusing to connect. "
                    f"Check the fingerprint, then {_how_to_record(hop, ssh_config)}, or pass --accept-new-host-key")
            # exactly the host connected to: no pattern, list or second line (HostName comes from ssh_config)
            if hostname != hop.known_as or INVALID.search(hop.host):
                raise SshError(f"refusing to record a host key for {hostname!r}: not a plain host name")
            if hop.record_to is None:
                raise SshError(f"host key for {hostname} is not known and UserKnownHostsFile is none: nowhere to record it")
            path = Path(hop.record_to)
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as f:
                f.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
            client.get_host_keys().add(hostname, key.get_name(), key)

    return Policy()


def _connect(hop: Hop, login: SlurmLogin, deadline: float, clients: list, sock: Any = None) -> Any:
    """The hop's SSHClient, in `clients` from the start: closing it from another thread ends its connecting."""
    import paramiko

    client = paramiko.SSHClient()
    clients.append(client)
    agent = client._agent = _Agent(hop, deadline, login.timeout)  # paramiko asks self._agent, else a blocking Agent()
    for path in hop.known_hosts:
        if Path(path).exists():
            try:
                client.load_system_host_keys(path)
            except (OSError, paramiko.SSHException) as e:
                raise SshError(f"cannot read known_hosts {path}: {e}") from None
    client.set_missing_host_key_policy(_policy(hop, login.accept_new_host_key, login.config))
    if sock is None and hop.proxy_command:
        sock = _proxy(hop.proxy_command)
    try:
        client.connect(hop.host, hop.port, hop.user, key_filename=[expand_user(k, f"key {k!r}") for k in hop.keys] or None,
                       allow_agent=True, look_for_keys=True, timeout=login.timeout, banner_timeout=login.timeout,
                       auth_timeout=login.timeout, sock=sock)
    except SshError:
        client.close()
        raise
    except paramiko.BadHostKeyException as e:
        client.close()
        raise SshError(
            f"WARNING: the host key of {hop.host}:{hop.port} has CHANGED (known {fingerprint(e.expected_key)}, offered "
            f"{fingerprint(e.key)}): refusing to connect, someone may be intercepting the connection. If the change is "
            f"expected, remove the old key with `{_removal(hop, e.expected_key)}` and verify the new one") from None
    except paramiko.AuthenticationException as e:
        client.close()
        if str(e) == "Authentication timeout." and (unanswered := agent.unanswered()):  # paramiko's auth_timeout
            raise unanswered from None
        raise SshError(f"authentication failed for {hop.shown} ({e}); tried the agent, "
                       f"{', '.join(hop.keys) or 'the default keys in ~/.ssh'}") from None
    except socket.gaierror:
        client.close()
        raise SshError(f"cannot resolve host {hop.host}") from None
    except paramiko.ssh_exception.NoValidConnectionsError:
        client.close()
        raise SshError(f"nothing is listening on {hop.host}:{hop.port} (connection refused)") from None
    except TimeoutError:
        client.close()
        raise SshError(f"timed out connecting to {hop.host}:{hop.port} after {login.timeout:g}s (--ssh-timeout)") from None
    except (paramiko.SSHException, OSError, EOFError) as e:
        client.close()
        raise SshError(f"SSH to {hop.shown} failed: {' '.join(str(e).split()) or type(e).__name__}") from None
    return client


def _removal(hop: Hop, old: Any) -> str:
    """The ssh-keygen command(s) removing the host's `old` key from the known_hosts files that hold it."""
    import paramiko

    holding = [path for path in hop.known_hosts  # each was read before connecting
               if Path(path).exists() and old in (paramiko.HostKeys(path).lookup(hop.known_as) or {}).values()]
    return "; ".join(f"ssh-keygen -R {shlex.quote(hop.known_as)} -f {shlex.quote(path)}"
                     for path in holding or hop.known_hosts[:1])


def connect(login: SlurmLogin, deadline: float, clients: list) -> Any:
    """The login node's SSHClient (through every ProxyJump hop); every client made, the hops' first, is in
    `clients` from the start, for the caller to close (also from another thread: that ends the connecting)."""
    config = read_config(login.config)
    target = resolve(login.login, login, config)
    chain: list[Hop] = []
    jump = target.proxy_jump
    while jump:  # ProxyJump hops, first hop first; each may have its own config entry and jumps
        hops = [resolve(h.strip(), login, config, first=False) for h in jump.split(",")]
        chain = hops + chain
        jump = hops[0].proxy_jump if len(chain) < 8 else None
    sock = None
    for hop in [*chain, target]:
        if clients:
            transport = clients[-1].get_transport()
            try:
                sock = transport.open_channel("direct-tcpip", (hop.host, hop.port), ("127.0.0.1", 0),
                                              timeout=login.timeout)
            except Exception as e:  # paramiko raises ChannelException or SSHException here
                raise SshError(f"jump host {chain[-1].shown} cannot reach {hop.host}:{hop.port}: {e}") from None
        client = _connect(hop, login, deadline, clients, sock)
    return client


def _proxy(command: str) -> Any:
    """paramiko's ProxyCommand, started in its own process group (stop.spawn): closing it, or a stop, kills it
    with what it started (a shell's `nc`), never leaving them behind."""
    import paramiko

    class Proxy(paramiko.ProxyCommand):
        def __init__(self, command_line: str) -> None:  # paramiko's, but for the process group
            self.cmd = shlex.split(command_line)
            self.process = stop.spawn(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, bufsize=0)
            self.timeout = None

        def close(self) -> None:
            if self.process.returncode is None:
                stop.kill(self.process)

    return Proxy(command)


class _Agent:
    """The SSH agent (SSH_AUTH_SOCK) as paramiko's client asks it for `hop`, within the step's deadline: an
    agent that accepts and never answers (one waiting on a confirmation prompt) fails the step at
    --ssh-timeout, in one line, instead of blocking the run until it goes away. Asked only when paramiko gets
    to it (after the keys given), as paramiko's own Agent."""

    def __init__(self, hop: Hop, deadline: float, timeout: float) -> None:
        self.hop, self.deadline, self.timeout = hop, deadline, timeout
        self.path = os.environ.get("SSH_AUTH_SOCK")
        self.agent: Any = None  # _signing_agent(), paramiko imported lazily

    def get_keys(self) -> tuple:
        path = self.path
        if not path:
            return ()
        if self.agent is None:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.settimeout(max(self.deadline - time.monotonic(), 0.01))
            self.agent = _signing_agent()
            try:
                conn.connect(path)
                self.agent._connect(conn)  # paramiko's Agent() does exactly this, without a timeout
                # signing is asked from paramiko's transport thread, which a timeout there kills with a traceback:
                # a signature never given (a prompt never confirmed) ends when fetch closes the client (close)
                conn.settimeout(None)
            except TimeoutError:
                self.close()
                raise SshError(f"the SSH agent ({path}) did not answer within {self.timeout:g}s (--ssh-timeout)") from None
            except OSError:  # no agent there any more: as paramiko, go on without one
                self.close()
                return ()
        return self.agent.get_keys()

    def unanswered(self) -> SshError | None:
        """The step's line once the agent was asked to sign and never answered (a human never confirmed), for
        paramiko's auth timeout or the step's deadline: a slow key exchange puts the first past the second."""
        if self.agent is None or not self.agent.unanswered:
            return None
        return SshError(f"authentication to {self.hop.shown} did not finish within {self.timeout:g}s (--ssh-timeout): "
                        f"the SSH agent ({self.path}) was asked to sign and did not answer (a confirmation prompt?)")

    def close(self) -> None:
        if self.agent is not None and self.agent._conn is not None:
            with contextlib.suppress(OSError):  # wakes a thread waiting on it, which close() alone does not
                self.agent._conn.shutdown(socket.SHUT_RDWR)
            self.agent._close()  # AgentSSH's own close


def _signing_agent() -> Any:
    """paramiko's AgentSSH, noting whether its last request was a signature that got no answer: one never
    answered (a prompt not confirmed) ends only by the connection's close, which leaves the note set."""
    import paramiko.agent
    from paramiko.util import asbytes

    class SigningAgent(paramiko.agent.AgentSSH):
        unanswered = False

        def _send_message(self, msg: Any) -> Any:
            self.unanswered = asbytes(msg)[:1] == paramiko.agent.cSSH2_AGENTC_SIGN_REQUEST
            answer = super()._send_message(msg)
            self.unanswered = False
            return answer

    return SigningAgent()


def run(client: Any, command: str, deadline: float, timeout: float, most: int) -> tuple[int, bytes, str]:
    """(exit status, stdout unread, stderr) of `command`, all of it by `deadline` (time.monotonic()): output
    trickled forever, or a channel that never reports an exit status, ends there, as does output past `most`
    bytes."""
    import paramiko

    late = SshError(f"`{command}` did not finish within {timeout:g}s (--ssh-timeout)")
    try:
        channel = client.get_transport().open_session(timeout=max(deadline - time.monotonic(), 0.1))
    except Exception as e:  # paramiko raises SSHException or ChannelException here
        raise SshError(f"cannot open an SSH session: {' '.join(str(e).split()) or type(e).__name__}") from None
    out, err = bytearray(), bytearray()
    try:
        channel.exec_command(command)
        while True:
            while channel.recv_ready():
                out += channel.recv(1 << 16)
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(1 << 16)
            if len(out) + len(err) > most:
                raise SshError(f"`{command}` printed more than {most >> 20} MiB: refusing the rest")
            if channel.exit_status_ready() and not (channel.recv_ready() or channel.recv_stderr_ready()):
                return channel.recv_exit_status(), bytes(out), err.decode("utf-8", "replace")
            left = deadline - time.monotonic()
            if left <= 0:
                raise late
            if channel.eof_received:  # the output is complete; only the exit status is awaited
                channel.status_event.wait(left)
            else:
                select.select([channel], [], [], left)
    except TimeoutError:
        raise late from None
    except (paramiko.SSHException, OSError, EOFError) as e:
        raise SshError(f"`{command}` failed: {' '.join(str(e).split()) or type(e).__name__}") from None
    finally:
        channel.close()


def close(clients: list) -> None:
    """Close every client, the login node's first (from two threads at once, when the step is abandoned)."""
    for c in reversed(list(clients)):
        with contextlib.suppress(Exception):
            c.close()


def unanswered(clients: list) -> SshError | None:
    """The line of an agent one of `clients` asked to sign and that never answered, if any."""
    agents = [c._agent for c in clients if isinstance(c._agent, _Agent)]  # None once paramiko closed one
    return next((e for a in agents if (e := a.unanswered())), None)
