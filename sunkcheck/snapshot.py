"""The snapshot directory (docs/snapshots.md): one `kubectl get <resource> -o json` file per resource."""

from __future__ import annotations

import datetime
import errno
import json
import os
import shutil
import stat
from dataclasses import dataclass, replace
from pathlib import Path

from sunkcheck import objects as o
from sunkcheck import shapes, slurm, stop
from sunkcheck.model import InputError
from sunkcheck.scratch import scratch
from sunkcheck.text import TooDense, json_doc

# file stem -> the kind of object the file holds (a List of them, or one of them)
RESOURCES = {
    "nodepools": "NodePool",
    "nodes": "Node",
    "events": "Event",
    "nodesets": "NodeSet",
    "pods": "Pod",
    "daemonsets": "DaemonSet",
}
FILES = frozenset({f"{stem}.json" for stem in RESOURCES} | {"sinfo.json", "sinfo.txt", "meta.json"})
"""Every name a snapshot directory can hold."""


@dataclass(frozen=True)
class SlurmView:
    """What `sinfo` printed on the login node, kept raw: `sinfo --json` ("json") or the text form ("text")."""

    format: str
    text: str

    @property
    def filename(self) -> str:
        return "sinfo.json" if self.format == "json" else "sinfo.txt"


@dataclass(frozen=True)
class Snapshot:
    """Raw API objects by resource; None means "not captured", which is not the same as empty."""

    nodepools: tuple[dict, ...] | None = None
    nodes: tuple[dict, ...] | None = None
    events: tuple[dict, ...] | None = None
    nodesets: tuple[dict, ...] | None = None
    pods: tuple[dict, ...] | None = None
    daemonsets: tuple[dict, ...] | None = None
    sinfo: SlurmView | None = None
    pod_nodes: frozenset[str] | None = None
    """The Nodes whose Pods were read (a live check lists the Pods of the Nodes its rows declare, meta.json's
    podNodes); None: every Pod (a snapshot without podNodes, `explain`, a list of every Pod)."""
    own_pods_of: frozenset[str] | None = None
    """The NodeSets (`namespace/name`) whose own Pods were read, wherever they run (meta.json's checked: a check reads
    every NodeSet, for what each holds, and the Pods of those it checks); None: every NodeSet's."""
    server_time: datetime.datetime | None = None
    """The API server's time when the read ended, at least (its answers' Date headers, collect.clock, else the newest
    creation time read); a recording's, its meta.json time; None when unknown (a recording that says not when)."""
    grace_time: datetime.datetime | None = None
    """The cluster's time the graces (a slurmd Pod starting, one being created) are judged by: the API server's when
    the read ended, at most as late as its recent answers' Dates say (collect.clock.ServerClock.latest), so a Date
    lagging ends a grace early, never extends it; a recording's, its meta.json time; None without either, never a
    creation time (a stuck Pod that is the newest object read would be new at every read)."""

    def dated(self, earliest: datetime.datetime | None, latest: datetime.datetime | None) -> Snapshot:
        """The snapshot read at the API server's time, by the earliest and the latest of its recent answers' Dates
        (collect.clock.ServerClock): a Node's age by the earliest (else the newest creation time read: it is never
        judged older than it is), the graces by the latest (none without a Date: each doubt ends a grace)."""
        return replace(self, server_time=earliest or self.newest_creation(), grace_time=latest)

    def newest_creation(self) -> datetime.datetime | None:
        """The newest creationTimestamp of the objects read: the API server sets it when it stores an object,
        whatever the client sent, so the server's time was at least that (a live read's clock where no answer had a
        Date)."""
        times = (o.timestamp(o.meta(obj).get("creationTimestamp")) for r in RESOURCES for obj in getattr(self, r) or ())
        return max((t for t in times if t is not None), default=None)

    def missing(self, *resources: str) -> list[str]:
        """Which of `resources` were not captured."""
        return [r for r in resources if getattr(self, r) is None]

    @property
    def captured(self) -> list[str]:
        return [r for r in (*RESOURCES, "sinfo") if getattr(self, r) is not None]

    def pods_read(self, node: str) -> bool:
        """Whether the Pods of Node `node` were read."""
        return self.pods is not None and (self.pod_nodes is None or node in self.pod_nodes)


def load(directory: str | Path) -> Snapshot:
    """Read a snapshot directory; a missing file is "not captured", a bad one an InputError."""
    directory = Path(directory)
    if not directory.exists():
        raise InputError(f"{directory}: does not exist (--snapshot takes a directory that `sunkcheck snapshot` wrote)")
    if not directory.is_dir():
        raise InputError(f"{directory}: is a file, not a snapshot directory (pass the directory that holds it)")
    if not any(directory.iterdir()):
        raise InputError(f"{directory}: is empty, not a snapshot (record one with `sunkcheck snapshot {directory}`)")
    found: dict = {stem: _load_file(directory / f"{stem}.json", kind)
                    for stem, kind in RESOURCES.items() if _present(directory / f"{stem}.json")}
    sinfo = _load_sinfo(directory)
    if sinfo is not None:
        found["sinfo"] = sinfo
    if not found:
        raise InputError(f"{directory}: no snapshot files (expected any of {', '.join(f'{s}.json' for s in RESOURCES)})")
    meta = load_meta(directory) or {}
    pod_nodes, checked, at = meta.get("podNodes"), meta.get("checked"), o.timestamp(meta.get("time"))
    return Snapshot(**found, pod_nodes=None if pod_nodes is None else frozenset(pod_nodes),
                    own_pods_of=None if checked is None else frozenset(checked), server_time=at, grace_time=at)


META_LIMIT = 1 << 20
"""Bytes of a meta.json read (sunkcheck writes a few hundred, plus the run's error lines and the Nodes whose Pods
it read)."""
META_TEXT = ("time", "context", "server", "serverVersion", "sunkcheck", "namespace", "login", "nodesets")
"""meta.json's fields that are text (or null)."""


def load_meta(directory: str | Path) -> dict | None:
    """A snapshot's meta.json (None: there is none), read like the other files (a FIFO or a device is not read
    from, nor past META_LIMIT). It says which Nodes' Pods were read, so a bad one is refused, not skipped: a replay
    that took it for "every Pod read" would tell what the recorded check could not know."""
    path = Path(directory) / "meta.json"
    if not _present(path):
        return None
    try:
        meta = json_doc(read_regular(path, limit=META_LIMIT))
    except ValueError as e:  # UnicodeDecodeError too
        raise InputError(f"{path}: not JSON ({e})") from None
    if not isinstance(meta, dict):
        raise InputError(f"{path}: not a JSON object")
    wrong = [k for k in META_TEXT if not isinstance(meta.get(k, ""), (str, type(None)))]
    wrong += [k for k, kind in (("errors", list), ("filters", dict)) if not isinstance(meta.get(k, kind()), kind)]
    if wrong:
        raise InputError(f"{path}: {', '.join(wrong)}: not the type sunkcheck writes")
    for key, what in (("podNodes", "Node names"), ("checked", "NodeSets (namespace/name)")):
        names = meta.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise InputError(f"{path}: {key}: not a list of {what}")
    return meta


class ShapeError(InputError):
    """An object is not shaped as the analysis reads it (replay refuses the file; live, the step is unknown)."""

    def __init__(self, where: str, detail: str):
        super().__init__(f"{where}: {detail}")
        self.where = where
        """What its line names first: the file, or the list read (`nodes`)."""


def read_regular(path: Path, fifo: bool = False, limit: int | None = None) -> bytes:
    """A regular file's bytes; a FIFO (unless `fifo`), a device or a directory is refused without reading
    from it (a FIFO would block, /dev/zero never end). An allowed FIFO's open never waits for a writer (one
    nobody writes reads as empty); more than `limit` bytes are refused while reading."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        dangling = e.errno == errno.ENOENT and path.is_symlink()  # "No such file" of a file `ls` lists
        why = "a symbolic link to a file that does not exist" if dangling else e.strerror or e
        raise InputError(f"{path}: cannot read: {why}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or (fifo and stat.S_ISFIFO(mode))):
            raise InputError(f"{path}: cannot read: {file_type(mode)}, not a regular file{' or FIFO' if fifo else ''}")
        os.set_blocking(fd, True)  # a FIFO's writer may not have written yet
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read() if limit is None else f.read(limit + 1)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if limit is not None and len(data) > limit:
        raise InputError(f"{path}: larger than {limit >> 20} MB: refusing the rest")
    return data


def _present(path: Path) -> bool:
    """Whether the snapshot has the file: a symbolic link that leads nowhere (dangling, a loop) is a broken
    file, refused when read, not one the snapshot did not capture."""
    return path.exists() or path.is_symlink()


def file_type(mode: int) -> str:
    """What a file that is not a regular one is, in words (`mode` from stat, or lstat for a symbolic link)."""
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a directory" if stat.S_ISDIR(mode)
            else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device")


def _load_sinfo(directory: Path) -> SlurmView | None:
    for fmt in ("json", "text"):
        path = directory / SlurmView(fmt, "").filename
        if _present(path):
            try:
                view = SlurmView(fmt, read_regular(path).decode())
            except UnicodeDecodeError as e:
                raise InputError(f"{path}: cannot read: {e}") from None
            try:
                slurm.parse(view.text, fmt)
            except InputError as e:
                raise InputError(f"{path}: {e}") from None
            return view
    return None


def _load_file(path: Path, kind: str) -> tuple[dict, ...]:
    try:
        doc = json_doc(read_regular(path))
    except TooDense as e:
        raise InputError(f"{path}: holds {e}") from None
    except ValueError as e:  # UnicodeDecodeError too
        raise InputError(f"{path}: not JSON ({e})") from None
    return parse_list(doc, kind, str(path))


def parse_list(doc: object, kind: str, where: str) -> tuple[dict, ...]:
    """Accept what kubectl prints: a `<Kind>List`/`List` with items, or one `<Kind>` object."""
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(doc).__name__}")
    doc_kind = doc.get("kind")
    if doc_kind == kind:
        items: list = [doc]
    elif doc_kind in ("List", f"{kind}List") or (doc_kind is None and "items" in doc):
        listed = items_of(doc)
        if listed is None:
            raise InputError(f"{where}: 'items' is not a list")
        items = listed
    else:
        raise InputError(f"{where}: expected {kind} objects, got kind {doc_kind!r}")
    check_items(items, kind, where)
    return tuple(items)


def items_of(doc: dict) -> list | None:
    """A List's items, the same for a file and a live page: Go writes a nil slice as null (no items); None when
    they are no list at all ({} or false, which must not read as empty)."""
    items = doc.get("items")
    return [] if items is None else items if isinstance(items, list) else None


CLUSTER_SCOPED = frozenset({"Node", "NodePool"})
"""Kinds named by their name alone: a `metadata.namespace` on one does not make it another object."""


MAX_ITEMS = 150_000
"""Objects of one kind a list may hold: Kubernetes' own limit for a cluster (150,000 Pods, on at most 5,000
Nodes). Past it a list is refused in one line, before its objects are judged."""


def check_items(items: list, kind: str, where: str, first: int = 0, seen: dict[tuple, int] | None = None) -> None:
    """Refuse (ShapeError) a list longer than MAX_ITEMS, an item that is not a `kind` object shaped as the
    analysis reads it, or one that repeats an earlier one (the analysis indexes objects by name: the second
    would silently win); the same rule for a file and for a live list, so that a live run accepts exactly what
    its replay will. For a list's later page, `first` numbers its items as in the whole list and `seen` holds
    the earlier pages'."""
    if first + len(items) > MAX_ITEMS:
        raise ShapeError(where, f"more than {MAX_ITEMS:,} {kind}s, Kubernetes' own limit for a cluster: refusing the list")
    seen = {} if seen is None else seen
    for i, item in enumerate(items, first):
        if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict):
            raise ShapeError(where, f"item {i} is not a Kubernetes object")
        if item.get("kind", kind) != kind:
            raise ShapeError(where, f"item {i} is a {item.get('kind')}, expected {kind}")
        meta = item["metadata"]
        if wrong := shapes.mismatch(item, kind):
            raise ShapeError(where, f"item {i} ({kind} {_shown(meta)}): {wrong}")
        if meta.get("name") is not None:
            key = (None if kind in CLUSTER_SCOPED else meta.get("namespace"), meta["name"])
            if key in seen:
                raise ShapeError(where, f"item {i} ({kind} {_shown(meta)}) duplicates item {seen[key]}: "
                                 "each object may appear once")
            seen[key] = i


def _shown(meta: dict) -> str:
    name = meta.get("name", "?")
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else str(name)


# What a saved snapshot never keeps (docs/snapshots.md): annotations that can carry a whole manifest,
# secrets included, and, in every container of a Pod or a NodeSet/DaemonSet template, literal environment
# values, the command line and the probes' and lifecycle hooks' commands and HTTP header values (tokens are
# passed in all of them). None of them is read by the analysis.
REDACTED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
HOOKS = ("postStart", "preStop")
REDACTED = "<redacted by sunkcheck>"


class SaveError(InputError):
    """The snapshot could not be written: reported beside the diagnosis, which still stands."""


def check_destination(directory: str | Path, force: bool = False) -> bool:
    """Whether saving to `directory` replaces a snapshot there; refuse a symlink, a file, a non-empty
    directory without `force`, and, even with it, one holding anything but snapshot files."""
    directory = Path(directory)
    try:
        mode = directory.lstat().st_mode
    except FileNotFoundError:
        return False
    except OSError as e:
        raise SaveError(f"{directory}: cannot save a snapshot there: {e.strerror or e}") from None
    if stat.S_ISLNK(mode):
        raise SaveError(f"{directory}: is a symbolic link: refusing to save a snapshot through it")
    if not stat.S_ISDIR(mode):
        raise SaveError(f"{directory}: exists and is not a directory")
    found = sorted(directory.iterdir())
    if not found:
        return False
    if not force:
        raise SaveError(f"{directory}: not empty: pass --force to replace the snapshot there")
    # a directory named like a snapshot file is not one: replacing it would delete what it holds (a planted
    # symbolic link goes alone: rmtree never follows it)
    if strangers := [p.name for p in found if p.name not in FILES or stat.S_ISDIR(p.lstat().st_mode)]:
        raise SaveError(f"{directory}: holds {', '.join(strangers[:3])}, not snapshot files: refusing to replace it")
    return True


def save(directory: str | Path, snapshot: Snapshot, meta: dict, force: bool = False) -> list[Path]:
    """Write the captured resources as kubectl-style Lists plus meta.json, never a secret value, into a
    fresh directory beside `directory` that is then renamed into place: a reader finds no snapshot or a
    whole one, never a file left from an earlier one, and nothing planted in `directory` is followed."""
    directory = Path(directory)
    replacing = check_destination(directory, force)
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        with scratch(directory, directory=True) as (fresh, _):
            try:
                names = _write(fresh, snapshot, meta)
                if replacing:
                    _swap(fresh, directory)
                else:
                    os.rename(fresh, directory)  # replaces an empty directory, refuses a non-empty one
            finally:
                shutil.rmtree(fresh, ignore_errors=True)  # gone already when the rename succeeded
    except OSError as e:
        raise SaveError(f"{directory}: cannot write the snapshot: {e.strerror or e}") from None
    return [directory / name for name in names]


def _swap(fresh: Path, directory: Path) -> None:
    """Put `fresh` in place of `directory` and delete the old one (rmtree never follows a symlink)."""
    with scratch(directory, ".old", directory=True) as (old, _):
        try:
            with stop.deferred():  # a stop between the renames would remove both snapshots, leaving none
                os.rename(directory, old)
                try:
                    os.rename(fresh, directory)
                except OSError:
                    os.rename(old, directory)
                    raise
        finally:
            shutil.rmtree(old, ignore_errors=True)


def _write(directory: Path, snapshot: Snapshot, meta: dict) -> list[str]:
    names = []
    if snapshot.sinfo is not None:
        (directory / snapshot.sinfo.filename).write_text(snapshot.sinfo.text, encoding="utf-8")
        names.append(snapshot.sinfo.filename)
    for stem in (s for s in snapshot.captured if s in RESOURCES):
        doc = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
               "items": [redact(item) for item in getattr(snapshot, stem)]}
        (directory / f"{stem}.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        names.append(f"{stem}.json")
    (directory / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return [*names, "meta.json"]


def redact(obj: dict) -> dict:
    """A copy without managedFields, manifest annotations, literal environment values or command lines
    (the container's, its probes' and its lifecycle hooks', with their HTTP header values).
    Environment references (`valueFrom`, `envFrom`) stay: they name a Secret or ConfigMap, not its data."""
    obj = json.loads(json.dumps(obj))
    meta = obj.get("metadata") or {}
    meta.pop("managedFields", None)
    for key in REDACTED_ANNOTATIONS:
        if key in (meta.get("annotations") or {}):
            meta["annotations"][key] = REDACTED
    spec = _mapping(obj.get("spec"))
    for pod_spec in (spec, _mapping(_mapping(spec.get("template")).get("spec"))):
        for container in (c for key in CONTAINER_LISTS for c in _list(pod_spec.get(key)) if isinstance(c, dict)):
            for env in _list(container.get("env")):
                if isinstance(env, dict) and "value" in env:
                    env["value"] = REDACTED
            for key in ("command", "args"):
                if container.get(key):
                    container[key] = [REDACTED]
            lifecycle = _mapping(container.get("lifecycle"))
            for handler in [_mapping(container.get(p)) for p in PROBES] + [_mapping(lifecycle.get(h)) for h in HOOKS]:
                _redact_handler(handler)
    return obj


def _redact_handler(handler: dict) -> None:
    """A probe's or lifecycle hook's exec command and HTTP header values, in place."""
    exec_ = _mapping(handler.get("exec"))
    if exec_.get("command"):
        exec_["command"] = [REDACTED]
    for header in _list(_mapping(handler.get("httpGet")).get("httpHeaders")):
        if isinstance(header, dict) and "value" in header:
            header["value"] = REDACTED


def _mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list:
    return value if isinstance(value, list) else []
