"""`sinfo` on a Slurm login node over SSH (paramiko), the way OpenSSH would connect: ssh_config (Host
aliases, HostName, User, Port, IdentityFile, ProxyJump, ProxyCommand, User/GlobalKnownHostsFile; HostKeyAlias
is refused), the agent,
strict host-key checking with an opt-in `accept-new`, and timeouts. Nothing user-supplied reaches the
remote shell unquoted; the output is kept raw (sinfo.json / sinfo.txt) and parsed elsewhere."""

from __future__ import annotations

import base64
import contextlib
import getpass
import hashlib
import logging
import os
import re
import select
import shlex
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sunkcheck import stop
from sunkcheck.collect.answers import MAX_PARSED, parsed_size, parsing
from sunkcheck.model import InputError
from sunkcheck.slurm import MAX_NAMES, TEXT_FORMAT, parse, validate_partition
from sunkcheck.snapshot import SlurmView
from sunkcheck.target import SlurmLogin

SYSTEM_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"
MAX_OUTPUT = 64 << 20
"""Bytes of sinfo's output read over SSH, the read stopped past it: `sinfo --json` writes about 3 KB a node, so
this holds 20,000 nodes, four times Kubernetes' 5,000 Nodes (the text form is refused at slurm.MAX_NAMES lines
well before it)."""
# What OpenSSH refuses in a host or user name from the command line (ssh.c valid_hostname, valid_ruser), plus
# known_hosts' pattern characters, so that neither a ProxyCommand's %h/%r nor a recorded key line (one
# `*` line would trust an attacker's key for every host) can carry anything else.
_INVALID = re.compile(r"""^-|['`"$\\;&<>|(){},*?!\s\x00-\x1f\x7f]""")
# paramiko's transport thread logs tracebacks and the server's raw text (a banner can carry terminal
# escapes); every failure reaches the user as one SshError line instead.
logging.getLogger("paramiko").addHandler(logging.NullHandler())
logging.getLogger("paramiko").propagate = False


class SshError(Exception):
    """The Slurm step could not run: one line saying why (the Kubernetes steps still report)."""


@dataclass(frozen=True)
class Hop:
    """One SSH connection: resolved host, port, user, keys, proxy settings and known_hosts files."""

    alias: str
    host: str
    port: int
    user: str
    keys: tuple[str, ...]
    known_hosts: tuple[str, ...]
    proxy_jump: str | None
    proxy_command: str | None
    user_files: int = 1
    """How many of `known_hosts` are UserKnownHostsFiles (first): a new key is recorded in the first of them."""

    @property
    def record_to(self) -> str | None:
        return self.known_hosts[0] if self.user_files else None

    @property
    def shown(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def known_as(self) -> str:
        """The host as known_hosts names it (OpenSSH's put_host_port): plain on port 22, else `[host]:port`."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"


def parse_login(spec: str) -> tuple[str | None, str, int | None]:
    """`[user@]host[:port]` (IPv6 as `[addr]:port`) -> (user, host, port), each validated as OpenSSH does
    before any ssh_config expansion."""
    user, _, rest = spec.rpartition("@") if "@" in spec else (None, "", spec)
    match = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?|([^:\[\]]+)(?::(\d+))?", rest)
    if not match or not rest:
        raise InputError(f"--login {spec!r}: expected [USER@]HOST[:PORT]")
    host = match.group(1) or match.group(3)
    port = match.group(2) or match.group(4)
    if _INVALID.search(host):
        raise InputError(f"--login {spec!r}: hostname contains invalid characters")
    if user and _INVALID.search(user):
        raise InputError(f"--login {spec!r}: remote username contains invalid characters")
    if port and not 0 < int(port) < 65536:
        raise InputError(f"--login {spec!r}: port {port} is not between 1 and 65535")
    return user or None, host, int(port) if port else None


def validate_user(user: str) -> str:
    """--ssh-user, held to the rule of a user in --login."""
    if not user or _INVALID.search(user):
        raise InputError(f"--ssh-user {user!r}: remote username contains invalid characters")
    return user


# The keywords whose arguments are file names (or one name) that OpenSSH splits as a shell would: paramiko keeps
# the raw text (stripping one pair of quotes around all of it), so these are tokenised here, as readconf.c does.
_WORDS = ("userknownhostsfile", "globalknownhostsfile", "identityfile", "hostkeyalias")
_NAMES = {"userknownhostsfile": "UserKnownHostsFile", "globalknownhostsfile": "GlobalKnownHostsFile",
          "identityfile": "IdentityFile", "hostkeyalias": "HostKeyAlias"}
_TOKENS = "\x00sunkcheck-words:"  # their words hex-encoded: no `~` or `%` for paramiko to expand in them


def split_words(text: str) -> list[str]:
    """OpenSSH's argv_split: words separated by spaces or tabs outside quotes; single or double quotes group
    (and may open mid-word); a backslash escapes a quote, a backslash or (outside quotes) a space. An unclosed
    quote is a ValueError; a `#` starting a word ends the line."""
    words: list[str] = []
    i = 0
    while i < len(text):
        if text[i] in " \t":
            i += 1
            continue
        if text[i] == "#":
            break
        word, quote = [], ""
        while i < len(text):
            c = text[i]
            if c == "\\" and i + 1 < len(text) and (text[i + 1] in "'\"\\" or (not quote and text[i + 1] == " ")):
                i += 1
                word.append(text[i])
            elif not quote and c in " \t":
                break
            elif not quote and c in "'\"":
                quote = c
            elif quote and c == quote:
                quote = ""
            else:
                word.append(c)
            i += 1
        if quote:
            raise ValueError("invalid quotes")
        words.append("".join(word))
    return words


def _config(path: str | None) -> Any:
    import paramiko

    chosen = Path(path).expanduser() if path else Path("~/.ssh/config").expanduser()
    if not chosen.exists():
        if path:
            raise InputError(f"--ssh-config {path}: no such file")
        return None
    try:
        lines = chosen.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"--ssh-config {chosen}: {e}") from None
    for n, line in enumerate(lines):
        found = re.match(paramiko.SSHConfig.SETTINGS_REGEX, line.strip())
        if found and found.group(1).lower() in _WORDS:
            try:
                words = split_words(found.group(2))
            except ValueError as e:
                raise InputError(f"--ssh-config {chosen} line {n + 1}: {e}") from None
            lines[n] = f"{found.group(1)} {_TOKENS}{' '.join(w.encode().hex() for w in words) or '-'}"
    try:
        config = paramiko.SSHConfig()
        config.parse(lines)
        return config
    except paramiko.SSHException as e:
        raise InputError(f"--ssh-config {chosen}: {e}") from None


def _words(found: dict, key: str) -> list[str] | None:
    value = found.get(key)
    if value is None:
        return None
    hexed = value.removeprefix(_TOKENS)
    return [bytes.fromhex(w).decode() for w in hexed.split() if w != "-"] if hexed != value else split_words(value)


def _expand(path: str, tokens: dict[str, str], key: str) -> str:
    """`~` and the %-tokens OpenSSH expands in a file name; a token sunkcheck does not know is refused, never
    kept as a literal name (a key must not be recorded in a file nobody named)."""
    def token(m: re.Match) -> str:
        if m.group(1) not in tokens:
            raise InputError(f"ssh_config {key} {path!r}: %{m.group(1)} is not supported (only "
                             f"{' '.join('%' + t for t in tokens)})")
        return tokens[m.group(1)]
    return _home(re.sub(r"%(.?)", token, path), f"ssh_config {key} {path!r}")


def _home(path: str, what: str) -> str:
    """`path` with its leading `~` or `~user` expanded; an unknown user (or no home at all) is refused in one
    line, as ssh refuses it."""
    try:
        return str(Path(path).expanduser())
    except RuntimeError:
        raise SshError(f"{what}: no home directory for {path.split('/')[0]!r} (ssh refuses it too)") from None


def _checked(found: dict, alias: str) -> None:
    """Values OpenSSH refuses to start with (a Port that is no port, a keyword sunkcheck reads without an
    argument) are refused for the sinfo step, never used as something else."""
    text = found.get("port", "22")
    if not (text.isascii() and text.isdigit() and 0 < int(text) < 65536):
        raise SshError(f"ssh_config Port {text!r} for {alias}: not a port between 1 and 65535 (ssh refuses it too)")
    for key in _WORDS:
        values = found.get(key)
        for value in values if isinstance(values, list) else () if values is None else (values,):
            if not _words({"v": value}, "v"):
                raise SshError(f"ssh_config {_NAMES[key]} for {alias} has no argument (a word starting with `#` "
                               "starts a comment; ssh refuses it too)")


def resolve(spec: str, login: SlurmLogin, config: Any, first: bool = True) -> Hop:
    """A login spec through the SSH config; command-line user/port/keys win over the config (as in ssh)."""
    user, alias, port = parse_login(spec)
    found = config.lookup(alias) if config else {}
    _checked(found, alias)
    if _words(found, "hostkeyalias"):
        raise SshError(f"ssh_config HostKeyAlias is set for {alias}: sunkcheck does not look host keys up by an "
                       "alias, so it would check and record the key under another name than ssh does; remove it "
                       "for this host, or connect through a ProxyCommand")
    proxy_command = found.get("proxycommand")
    host = found.get("hostname", alias)
    port = port or int(found.get("port", 22))
    user = user or (login.user if first else None) or found.get("user") or getpass.getuser()
    tokens = {"%": "%", "d": str(Path.home()), "u": getpass.getuser(), "h": host, "n": alias, "p": str(port), "r": user}
    users = _words(found, "userknownhostsfile")
    users = ["~/.ssh/known_hosts", "~/.ssh/known_hosts2"] if users is None else users
    if [w.lower() for w in users] == ["none"]:
        users = []
    globals_ = _words(found, "globalknownhostsfile")
    globals_ = [SYSTEM_KNOWN_HOSTS, SYSTEM_KNOWN_HOSTS + "2"] if globals_ is None else globals_
    if [w.lower() for w in globals_] == ["none"]:
        globals_ = []
    keys = [_expand(w, tokens, "IdentityFile") for value in found.get("identityfile", ())
            for w in _words({"v": value}, "v") or ()]
    return Hop(
        alias=alias, host=host, port=port, user=user,
        keys=tuple(login.keys) + tuple(keys),
        known_hosts=tuple(_expand(f, tokens, "UserKnownHostsFile") for f in users)
        + tuple(_expand(f, tokens, "GlobalKnownHostsFile") for f in globals_),
        proxy_jump=found.get("proxyjump") if found.get("proxyjump", "none").lower() != "none" else None,
        proxy_command=proxy_command if proxy_command and proxy_command.lower() != "none" else None,
        user_files=len(users))


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
            if hostname != hop.known_as or _INVALID.search(hop.host):
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
        client.connect(hop.host, hop.port, hop.user, key_filename=[_home(k, f"key {k!r}") for k in hop.keys] or None,
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
    config = _config(login.config)
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


def run(client: Any, command: str, deadline: float, timeout: float) -> tuple[int, bytes, str]:
    """(exit status, stdout unread, stderr) of `command`, all of it by `deadline` (time.monotonic()): output
    trickled forever, or a channel that never reports an exit status, ends there, as does output past
    MAX_OUTPUT."""
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
            if len(out) + len(err) > MAX_OUTPUT:
                raise SshError(f"`{command}` printed more than {MAX_OUTPUT >> 20} MiB: refusing the rest")
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


def commands(partition: str | None) -> tuple[str, str]:
    """The JSON and the text command; the partition is validated and quoted, never interpolated raw."""
    scope = f" -p {shlex.quote(validate_partition(partition))}" if partition else ""
    return f"sinfo --json{scope}", f"sinfo -N -h -o {shlex.quote(TEXT_FORMAT)}{scope}"


_GRACE = 0.5
"""Seconds past the deadline that fetch waits for the step's own, more precise, timeout message."""


def fetch(login: SlurmLogin) -> SlurmView:
    """Run sinfo on the login node: `--json` when it works, the documented text form otherwise; output
    that neither parses is an SshError (only the Slurm step is unknown), never kept. The whole step, from
    resolving the host to the last byte, the agent and any ProxyCommand included, ends by --ssh-timeout: each
    wait has its own deadline, and what still hangs (a name lookup, a wait paramiko does not bound) is
    abandoned then, its connections closed."""
    deadline = time.monotonic() + login.timeout
    clients: list = []  # paramiko.SSHClient, imported lazily
    outcome: dict = {}

    def exchange() -> None:
        try:
            outcome["view"] = _exchange(login, deadline, clients)
        except BaseException as e:  # raised in the caller's thread
            outcome["error"] = e
        finally:
            _close(clients)

    worker = threading.Thread(target=exchange, name="sinfo", daemon=True)
    worker.start()
    worker.join(max(deadline - time.monotonic(), 0) + _GRACE)
    if worker.is_alive():  # an agent still asked to sign says so, as paramiko's own auth timeout would have
        agents = [c._agent for c in clients if isinstance(c._agent, _Agent)]  # None once paramiko closed one
        unanswered = next((e for a in agents if (e := a.unanswered())), None)
        _close(clients)  # ends the worker's waits on them, and kills a ProxyCommand
        raise unanswered or SshError(f"the SSH step to {login.login} did not finish within {login.timeout:g}s "
                                     "(--ssh-timeout)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["view"]


def _close(clients: list) -> None:
    """Close every client, the login node's first (from two threads at once, when the step is abandoned)."""
    for c in reversed(list(clients)):
        with contextlib.suppress(Exception):
            c.close()


def _exchange(login: SlurmLogin, deadline: float, clients: list) -> SlurmView:
    as_json, as_text = commands(login.partition)
    client = connect(login, deadline, clients)
    code, out, err = run(client, as_json, deadline, login.timeout)
    unparsed = ""
    if code == 0:
        try:
            return SlurmView("json", checked(out, "json"))
        except InputError as e:  # a controller error, garbage, or too much: the text form may say it better
            unparsed = f"; {e}"
    if code == 127:
        raise SshError(f"sinfo is not installed on {login.login} (exit 127: {_first(err, _text(out))})")
    code, out, err = run(client, as_text, deadline, login.timeout)
    if code != 0:
        raise SshError(f"sinfo failed on {login.login} (exit {code}): {_first(err, _text(out))}{unparsed}")
    try:
        return SlurmView("text", checked(out, "text"))
    except InputError as e:
        raise SshError(f"{login.login} did not answer as sinfo does: {e}{unparsed}") from None


def checked(out: bytes, fmt: str) -> str:
    """sinfo's output as text, once it parses as `fmt` (an InputError if it does not), within the caps the SSH
    read keeps: MAX_OUTPUT bytes, and for the JSON form objects that fit MAX_PARSED, estimated before it is
    parsed, and for the text form up to slurm.MAX_NAMES lines, counted before it is decoded."""
    if len(out) > MAX_OUTPUT:
        raise InputError(f"sinfo: more than {MAX_OUTPUT >> 20} MiB of output")
    if fmt == "text" and out.count(b"\n") >= MAX_NAMES:  # as parse would refuse it, before a copy is decoded
        raise InputError(f"sinfo: lists more than {MAX_NAMES} node names")
    objects = parsed_size(out) if fmt == "json" else 0
    if objects > MAX_PARSED:
        raise InputError(f"sinfo --json: {len(out):,} bytes would take up to {objects >> 20:,} MiB once parsed, "
                         f"more than {MAX_PARSED >> 20} MiB, the most sunkcheck parses at once")
    text = _text(out)
    parsing.charge(objects, wait=True)  # with the API answers being parsed
    try:
        parse(text, fmt)
    finally:
        parsing.release(objects)
    return text


def _text(out: bytes) -> str:
    return out.decode("utf-8", "replace")


def _first(*texts: str) -> str:
    return next((" ".join(line.split()) for t in texts for line in t.splitlines() if line.strip()), "no output")

