"""`sinfo` on a Slurm login node over SSH (`ssh.py`): `--json` when it works, the documented text form otherwise,
the whole step bounded by --ssh-timeout. Nothing user-supplied reaches the remote shell unquoted; the output is kept
raw (sinfo.json / sinfo.txt) and parsed elsewhere."""

from __future__ import annotations

import shlex
import threading
import time

from sunkcheck.collect.answers import MAX_PARSED, parsed_size, parsing
from sunkcheck.collect.ssh import close, connect, run, unanswered
from sunkcheck.collect.sshconfig import SshError
from sunkcheck.model import InputError
from sunkcheck.slurm import MAX_NAMES, TEXT_FORMAT, parse, validate_partition
from sunkcheck.snapshot import SlurmView
from sunkcheck.target import SlurmLogin

MAX_OUTPUT = 64 << 20
"""Bytes of sinfo's output read over SSH, the read stopped past it: `sinfo --json` writes about 3 KB a node, so
this holds 20,000 nodes, four times Kubernetes' 5,000 Nodes (the text form is refused at slurm.MAX_NAMES lines
well before it)."""


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
            close(clients)

    worker = threading.Thread(target=exchange, name="sinfo", daemon=True)
    worker.start()
    worker.join(max(deadline - time.monotonic(), 0) + _GRACE)
    if worker.is_alive():  # an agent still asked to sign says so, as paramiko's own auth timeout would have
        agent = unanswered(clients)
        close(clients)  # ends the worker's waits on them, and kills a ProxyCommand
        raise agent or SshError(f"the SSH step to {login.login} did not finish within {login.timeout:g}s "
                                "(--ssh-timeout)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["view"]


def _exchange(login: SlurmLogin, deadline: float, clients: list) -> SlurmView:
    as_json, as_text = commands(login.partition)
    client = connect(login, deadline, clients)
    code, out, err = run(client, as_json, deadline, login.timeout, MAX_OUTPUT)
    unparsed = ""
    if code == 0:
        try:
            return SlurmView("json", checked(out, "json"))
        except InputError as e:  # a controller error, garbage, or too much: the text form may say it better
            unparsed = f"; {e}"
    if code == 127:
        raise SshError(f"sinfo is not installed on {login.login} (exit 127: {_first(err, _text(out))})")
    code, out, err = run(client, as_text, deadline, login.timeout, MAX_OUTPUT)
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
