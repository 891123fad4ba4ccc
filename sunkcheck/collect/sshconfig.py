"""Where, as whom and through what ssh would connect for `--login`: the login spec validated as OpenSSH validates
it, then ssh_config (Host aliases, HostName, User, Port, IdentityFile, ProxyJump, ProxyCommand,
User/GlobalKnownHostsFile; HostKeyAlias is refused) resolved into one Hop per connection, its file names split and
expanded as OpenSSH does. Nothing here connects."""

from __future__ import annotations

import getpass
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sunkcheck.model import InputError
from sunkcheck.target import SlurmLogin

SYSTEM_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"
# What OpenSSH refuses in a host or user name from the command line (ssh.c valid_hostname, valid_ruser), plus
# known_hosts' pattern characters, so that neither a ProxyCommand's %h/%r nor a recorded key line (one
# `*` line would trust an attacker's key for every host) can carry anything else.
INVALID = re.compile(r"""^-|['`"$\\;&<>|(){},*?!\s\x00-\x1f\x7f]""")


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
    if INVALID.search(host):
        raise InputError(f"--login {spec!r}: hostname contains invalid characters")
    if user and INVALID.search(user):
        raise InputError(f"--login {spec!r}: remote username contains invalid characters")
    if port and not 0 < int(port) < 65536:
        raise InputError(f"--login {spec!r}: port {port} is not between 1 and 65535")
    return user or None, host, int(port) if port else None


def validate_user(user: str) -> str:
    """--ssh-user, held to the rule of a user in --login."""
    if not user or INVALID.search(user):
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


def read_config(path: str | None) -> Any:
    """paramiko's SSHConfig of --ssh-config, else of ~/.ssh/config (None when there is none), the words of the
    keywords naming files split as OpenSSH splits them."""
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
    return expand_user(re.sub(r"%(.?)", token, path), f"ssh_config {key} {path!r}")


def expand_user(path: str, what: str) -> str:
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
