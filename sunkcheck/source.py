"""Where the objects come from: a recorded snapshot directory, or the live cluster (read-only)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from sunkcheck.model import InputError, Source
from sunkcheck.reads import Read
from sunkcheck.snapshot import SlurmView, Snapshot
from sunkcheck.target import EVERY_NODESET, SlurmLogin, Target, read_on
from sunkcheck.text import shown_server


@dataclass(frozen=True)
class Access:
    """How to reach a cluster, kubectl-style; `snapshot` set means replay instead."""

    snapshot: Path | None = None
    kubeconfig: str | None = None
    context: str | None = None
    request_timeout: float | None = None  # None: the default deadline; 0: none at all


@dataclass(frozen=True)
class Loaded:
    snapshot: Snapshot
    target: Target
    """The target with its namespace resolved (a live run defaults to the context's namespace)."""
    errors: tuple[str, ...] = ()
    meta: dict | None = None
    source: Source | None = None
    slurm_error: str = ""
    """Why Slurm's view could not be read (also among `errors`); empty when it was, or was not asked for."""
    read_namespace: str | None = None
    """The one namespace a recorded snapshot's NodeSets were read in (its meta.json), when it says one: a replay
    without -n then tells, as the live check did, that no other namespace's NodeSet was read."""
    unread: dict[str, str] = field(default_factory=dict)
    """Why a live run could not read a resource, by resource (sunkcheck.collect.cluster.why)."""
    every_nodeset: bool = False
    """Every NodeSet of the cluster was read (meta.json's `nodesets` is `*`), whichever the check names."""


def _unrecorded(snap: Snapshot, target: Target) -> tuple[str, ...]:
    """An error line per NodeSet in the namespaces a replay names (-A, -n) whose own Pods the recorded check did not
    list (meta.json's checked): left out of the replay, it must not leave the answer OK. Without -A or -n, a replay
    judges what the recorded check judged."""
    if snap.own_pods_of is None or target.nodeset or target.daemonset:
        return ()
    held = ", ".join(sorted(snap.own_pods_of)) or "none"
    names = sorted(f"{ns}/{n['metadata']['name']}" for n in snap.nodesets or ()
                   if (ns := n["metadata"].get("namespace", "")) == (target.namespace or ns))
    return tuple(f"NodeSet {name} not judged: its Pods were not recorded (this snapshot holds those of NodeSet {held} "
                 "only; record every NodeSet's with `sunkcheck snapshot DIR -A`)" for name in names
                 if name not in snap.own_pods_of)


def load(access: Access, target: Target, all_namespaces: bool, record: bool = False, every_pod: bool = False,
         predicted: tuple[dict, ...] = ()) -> Loaded:
    """Read the target's objects; `record` when they will be saved as a snapshot, `every_pod` for explain,
    `predicted` NodeSets (a what-if) whose Nodes' Pods matter too."""
    if access.snapshot is not None:
        if access.kubeconfig or access.context or target.slurm:
            raise InputError("--snapshot replays a recording: --kubeconfig, --context and --login do not apply")
        from sunkcheck import snapshot

        source, namespace, every_nodeset = _recorded(access.snapshot)
        snap = snapshot.load(access.snapshot)
        unjudged = _unrecorded(snap, target) if all_namespaces or target.namespace else ()
        return Loaded(snap, target, unjudged, source=source, read_namespace=namespace, every_nodeset=every_nodeset)
    from concurrent.futures import ThreadPoolExecutor

    from sunkcheck.collect.cluster import collect
    from sunkcheck.collect.kube import Kube
    from sunkcheck.plan import Plan

    if target.slurm:
        # paramiko imports invoke's vendored yaml.cyaml, whose yaml._yaml imports yaml: importing it here first
        # keeps the SSH thread and the kubeconfig reader from importing the two in opposite orders (a deadlock)
        import yaml  # noqa: F401
    with ThreadPoolExecutor(1) as ssh:  # Slurm's view is read while the cluster is
        slurm_f = ssh.submit(_sinfo, target.slurm) if target.slurm else None
        kube = Kube(access.kubeconfig, access.context, access.request_timeout)
        source = Source("live", kube.context, kube.server)
        try:
            namespace = None if all_namespaces else (target.namespace or kube.namespace)
            scoped = replace(target, namespace=namespace, cluster=read_on(kube.context, kube.server))
            plan = Plan(declared_reads(target), slurm=target.slurm is not None)
            collected = collect(kube, scoped, namespace, plan, record, every_pod, predicted)
        except InputError as e:  # the report says where, even when the server never answered
            e.source = e.source or source
            raise
        view, slurm_error = slurm_f.result() if slurm_f else (None, "")
    snap = replace(collected.snapshot, sinfo=view)
    errors = collected.errors + ((f"sinfo: {slurm_error}",) if slurm_error else ())
    meta = dict(collected.meta, errors=list(errors), login=target.slurm.login if target.slurm else None)
    return Loaded(snap, scoped, errors, meta, source, slurm_error,
                  unread=collected.unread, every_nodeset=meta.get("nodesets") == EVERY_NODESET)


def _recorded(directory: Path) -> tuple[Source, str | None, bool]:
    """A snapshot's source, with where and when it was recorded when its meta.json says (a hand-made snapshot has
    none; a bad one is refused, snapshot.load_meta), the one namespace it was read in (None: every namespace,
    or unsaid), and whether it holds every NodeSet of the cluster."""
    from sunkcheck.snapshot import load_meta

    meta = load_meta(directory) if directory.is_dir() else None  # a path that is no directory: load says why
    if meta is None:
        return Source("snapshot", path=str(directory)), None, False
    text = {k: v for k, v in meta.items() if isinstance(v, str)}
    server = shown_server(text.get("server", ""))  # a hand-made meta.json may carry `user:password@`, a token
    namespace = text.get("namespace")
    return (Source("snapshot", text.get("context", ""), server, str(directory), text.get("time", ""), meta=True),
            None if namespace in (None, "", "*") else namespace, meta.get("nodesets") == EVERY_NODESET)


def _sinfo(login: SlurmLogin) -> tuple[SlurmView | None, str]:
    """(SlurmView, "") or (None, the one-line reason the Slurm step could not run)."""
    from sunkcheck.collect.sinfo import fetch
    from sunkcheck.collect.sshconfig import SshError
    from sunkcheck.text import safe

    try:
        return fetch(login), ""
    except SshError as e:  # it may quote the server (a banner, sinfo's stderr)
        return None, safe(str(e), one_line=True)


def declared_reads(target: Target) -> frozenset[Read]:
    """What the check's rows and step summaries say they read: the live collector plans its requests from it."""
    from sunkcheck.analyze.binding import SUMMARY_READS
    from sunkcheck.plan import declared
    from sunkcheck.symptoms import daemonset, nodeset
    from sunkcheck.symptoms.notes import NOTE_READS

    return declared(daemonset.RULES) if target.daemonset else declared(nodeset.RULES, SUMMARY_READS, NOTE_READS)
