"""Real Slurm daemons (munged, slurmctld, one slurmd per node) and a real OpenSSH server on loopback,
all state in one temporary directory; nothing in /etc is touched. Torn down whatever happens."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

SLURM_BIN = Path("/usr/sbin")
SSHD = Path("/usr/sbin/sshd")


def require(what: str, why_root: str, *programs: Path) -> None:
    """Real daemons (and mknod) need their programs and root. Without them a test is skipped with one line saying
    so, but not in CI (CI=true), which must run every test: there it fails."""
    missing = [str(p) for p in programs if not p.exists()]
    if missing:
        problem = f"{what}: {', '.join(missing)} not installed (bash tests/install-deps.sh)"
    elif os.geteuid() != 0:
        problem = f"{what} needs root ({why_root}); run the tests as root"
    else:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{problem}; CI=true runs every test", pytrace=False)
    pytest.skip(problem)


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def _kill_pidfile(path: Path, sig: signal.Signals = signal.SIGTERM) -> None:
    try:
        os.kill(int(path.read_text().split()[0]), sig)
    except (OSError, ValueError):
        pass


class Slurm:
    """A Slurm cluster named `test` whose nodes are `names` (all in partition `partition`)."""

    def __init__(self, root: Path, names: list[str], partition: str, *, started: list[str] | None = None,
                 extra_partitions: dict[str, list[str]] | None = None):
        require("Slurm", "slurmd runs as SlurmdUser=root with munge's key", *(SLURM_BIN / p for p in
                ("munged", "slurmctld", "slurmd")))
        self.root, self.names, self.partition = root, names, partition
        self.started = names if started is None else started
        self.extra_partitions = extra_partitions or {}
        self.conf = root / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))

    def __enter__(self) -> Slurm:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start(self) -> None:
        r = self.root
        for d in ("munge", "state", "spool", "log"):
            (r / d).mkdir(parents=True, exist_ok=True)
        os.chmod(r / "munge", 0o755)
        (r / "munge.key").write_bytes(os.urandom(1024))
        os.chmod(r / "munge.key", 0o600)
        subprocess.run([str(SLURM_BIN / "munged"), "--force", f"--socket={r / 'munge/munge.socket'}",
                        f"--key-file={r / 'munge.key'}", f"--pid-file={r / 'munge/munged.pid'}",
                        f"--log-file={r / 'log/munged.log'}", f"--seed-file={r / 'munge/seed'}"], check=True)
        ctld_port, *node_ports = free_ports(1 + len(self.names))
        (r / "plugstack.conf").write_text("")
        nodes = "\n".join(f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={p} CPUs=2 State=UNKNOWN"
                          for n, p in zip(self.names, node_ports, strict=True))
        self.conf.write_text(f"""ClusterName=test
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={r / 'munge/munge.socket'}
CredType=cred/munge
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}/%n
SlurmctldPidFile={r / 'slurmctld.pid'}
SlurmdPidFile={r / 'spool'}/slurmd-%n.pid
SlurmctldLogFile={r / 'log/slurmctld.log'}
SlurmdLogFile={r / 'log'}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
ReturnToService=1
MessageTimeout=2
SlurmdTimeout=10
PlugStackConfig={r / 'plugstack.conf'}
MailProg=/bin/true
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
{nodes}
PartitionName={self.partition} Nodes=ALL Default=YES State=UP
""" + "".join(f"PartitionName={p} Nodes={','.join(ns)} State=UP\n" for p, ns in self.extra_partitions.items()))
        self.start_controller()
        for name in self.started:
            self.start_slurmd(name, wait=False)
        _wait(lambda: self._idle_count() == len(self.started), 30, "the slurmd nodes to come up idle")

    def start_slurmd(self, name: str, wait: bool = True) -> None:
        (self.root / "spool" / name).mkdir(exist_ok=True)
        subprocess.run([str(SLURM_BIN / "slurmd"), "-f", str(self.conf), "-N", name], check=True, env=self.env)
        if wait:
            # one line per partition the node is in
            _wait(lambda: set(self.sinfo("-N", "-h", "-n", name, "-o", "%t").stdout.split()) == {"idle"}, 60,
                  f"slurmd {name} to be idle again")

    def stop_slurmd(self, name: str) -> None:
        pidfile = self.root / "spool" / f"slurmd-{name}.pid"
        _kill_pidfile(pidfile)
        _wait(lambda: not pidfile.exists(), 20, f"slurmd {name} to stop")

    def start_controller(self, restart: bool = False) -> None:
        subprocess.run([str(SLURM_BIN / "slurmctld"), "-f", str(self.conf)], check=True, env=self.env)
        _wait(lambda: self.sinfo("-h", "-o", "%P").returncode == 0, 20, "slurmctld")
        if restart:  # the nodes re-register with the new controller: wait until they are idle again
            _wait(lambda: self._idle_count() == len(self.started), 60, "the nodes to be idle after a restart")

    def stop_controller(self) -> None:
        _kill_pidfile(self.root / "slurmctld.pid")
        _wait(lambda: self.sinfo("-h").returncode != 0, 20, "slurmctld to stop")

    def _idle_count(self) -> int:
        out = self.sinfo("-N", "-h", "-p", self.partition, "-o", "%N %t").stdout.split()
        return sum(state == "idle" for state in out[1::2])

    def sinfo(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sinfo", *args], env=self.env, capture_output=True, text=True, timeout=30)

    def scontrol(self, *args: str) -> None:
        subprocess.run(["scontrol", *args], env=self.env, check=True, capture_output=True, timeout=30)

    def stop(self) -> None:
        for name in self.started:
            _kill_pidfile(self.root / "spool" / f"slurmd-{name}.pid")
        _kill_pidfile(self.root / "slurmctld.pid")
        _kill_pidfile(self.root / "munge/munged.pid")


class Sshd:
    """OpenSSH on 127.0.0.1:`port` accepting `authorized` keys; `extra` lines go into sshd_config."""

    def __init__(self, root: Path, authorized: list[Path], *, env: dict[str, str] | None = None, extra: str = ""):
        require("sshd", "it switches to the user who logs in, root here", SSHD)
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.port = free_ports(1)[0]
        self.host_key = root / "host_ed25519"
        if not self.host_key.exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.host_key)], check=True)
        (root / "authorized_keys").write_text("".join(Path(f"{k}.pub").read_text() for k in authorized))
        setenv = " ".join(f"{k}={v}" for k, v in (env or {}).items())
        (root / "sshd_config").write_text(f"""Port {self.port}
ListenAddress 127.0.0.1
HostKey {self.host_key}
PidFile {root / 'sshd.pid'}
AuthorizedKeysFile {root / 'authorized_keys'}
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
AllowTcpForwarding yes
{'SetEnv ' + setenv if setenv else ''}
{extra}
""")

    def __enter__(self) -> Sshd:
        Path("/run/sshd").mkdir(exist_ok=True)
        subprocess.run([str(SSHD), "-f", str(self.root / "sshd_config"), "-E", str(self.root / "sshd.log")], check=True)
        _wait(self._listening, 10, f"sshd on port {self.port}")
        return self

    def _listening(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def __exit__(self, *exc: object) -> None:
        _kill_pidfile(self.root / "sshd.pid")

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {' '.join(Path(f'{self.host_key}.pub').read_text().split()[:2])}\n"


def keypair(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path
