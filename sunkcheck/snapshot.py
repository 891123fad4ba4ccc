"""The snapshot directory (contract 1): one `kubectl get <resource> -o json` file per resource."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

from sunkcheck import shapes
from sunkcheck.analyze import slurm
from sunkcheck.model import InputError

# file stem -> the kind of object the file holds (a List of them, or one of them)
RESOURCES = {
    "nodepools": "NodePool",
    "nodes": "Node",
    "events": "Event",
    "nodesets": "NodeSet",
    "pods": "Pod",
    "daemonsets": "DaemonSet",
}


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

    def missing(self, *resources: str) -> list[str]:
        """Which of `resources` were not captured."""
        return [r for r in resources if getattr(self, r) is None]

    @property
    def captured(self) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]


def load(directory: str | Path) -> Snapshot:
    """Read a snapshot directory; a missing file is "not captured", a bad one an InputError."""
    directory = Path(directory)
    if not directory.exists():
        raise InputError(f"{directory}: does not exist (--snapshot takes a directory that `sunkcheck snapshot` wrote)")
    if not directory.is_dir():
        raise InputError(f"{directory}: is a file, not a snapshot directory (pass the directory that holds it)")
    if not any(directory.iterdir()):
        raise InputError(f"{directory}: is empty, not a snapshot (record one with `sunkcheck snapshot {directory}`)")
    found = {stem: _load_file(directory / f"{stem}.json", kind)
             for stem, kind in RESOURCES.items() if (directory / f"{stem}.json").exists()}
    sinfo = _load_sinfo(directory)
    if sinfo is not None:
        found["sinfo"] = sinfo
    if not found:
        raise InputError(f"{directory}: no snapshot files (expected any of {', '.join(f'{s}.json' for s in RESOURCES)})")
    return Snapshot(**found)


def _load_sinfo(directory: Path) -> SlurmView | None:
    for fmt in ("json", "text"):
        path = directory / SlurmView(fmt, "").filename
        if path.exists():
            try:
                view = SlurmView(fmt, path.read_text())
            except (OSError, UnicodeDecodeError) as e:
                raise InputError(f"{path}: cannot read: {e}") from None
            try:
                slurm.parse(view.text, fmt)
            except InputError as e:
                raise InputError(f"{path}: {e}") from None
            return view
    return None


def _load_file(path: Path, kind: str) -> tuple[dict, ...]:
    try:
        doc = json.loads(path.read_bytes())
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not JSON ({e})") from None
    return parse_list(doc, kind, str(path))


def parse_list(doc, kind: str, where: str) -> tuple[dict, ...]:
    """Accept what kubectl prints: a `<Kind>List`/`List` with items, or one `<Kind>` object."""
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(doc).__name__}")
    doc_kind = doc.get("kind")
    if doc_kind == kind:
        items = [doc]
    elif doc_kind in ("List", f"{kind}List") or (doc_kind is None and "items" in doc):
        items = doc.get("items")
        if items is None:
            items = []
        if not isinstance(items, list):
            raise InputError(f"{where}: 'items' is not a list")
    else:
        raise InputError(f"{where}: expected {kind} objects, got kind {doc_kind!r}")
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict):
            raise InputError(f"{where}: item {i} is not a Kubernetes object")
        if item.get("kind", kind) != kind:
            raise InputError(f"{where}: item {i} is a {item.get('kind')}, expected {kind}")
        if wrong := shapes.mismatch(item, kind):
            raise InputError(f"{where}: item {i} ({kind} {item['metadata'].get('name', '?')}): {wrong}")
    return tuple(items)


# Annotations that can carry a whole manifest, secrets included; env values can hold tokens.
REDACTED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
REDACTED = "<redacted by sunkcheck>"


def save(directory: str | Path, snapshot: Snapshot, meta: dict) -> list[Path]:
    """Write the captured resources as kubectl-style Lists plus meta.json; never a secret value."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        if snapshot.sinfo is not None:
            path = directory / snapshot.sinfo.filename
            path.write_text(snapshot.sinfo.text)
            written.append(path)
        for stem in (s for s in snapshot.captured if s in RESOURCES):
            path = directory / f"{stem}.json"
            doc = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                   "items": [redact(item) for item in getattr(snapshot, stem)]}
            path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
            written.append(path)
        (directory / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    except OSError as e:
        raise InputError(f"{directory}: cannot write the snapshot: {e.strerror or e}") from None
    return written + [directory / "meta.json"]


def redact(obj: dict) -> dict:
    """A copy without managedFields, last-applied manifests or literal environment values."""
    obj = json.loads(json.dumps(obj))
    meta = obj.get("metadata") or {}
    meta.pop("managedFields", None)
    for key in REDACTED_ANNOTATIONS:
        if key in (meta.get("annotations") or {}):
            meta["annotations"][key] = REDACTED
    spec = obj.get("spec") or {}
    for pod_spec in (spec, (spec.get("template") or {}).get("spec") or {}):
        for c in (pod_spec.get("containers") or []) + (pod_spec.get("initContainers") or []):
            for env in c.get("env") or ():
                if "value" in env:
                    env["value"] = REDACTED
    return obj
