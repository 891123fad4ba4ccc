"""Slurm's view (`sinfo` from a login node), parsed from either output shape and reconciled with the
NodeSet: in SUNK the Slurm node name is the slurmd Pod's name, derived from its Node's IP."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from collections.abc import Iterator
from itertools import product
from typing import TypeVar

from sunkcheck.model import InputError
from sunkcheck.text import json_doc

# The text form sunkcheck asks for when `sinfo --json` is not available (one line per node per partition):
#   sinfo -N -h -o '%N|%P|%t|%E'   ->   slurm-a2|gpu*|drain*|gpu xid 79
TEXT_FORMAT = "%N|%P|%t|%E"
# Suffixes `sinfo %t` appends to a state, and the flag each one means.
SUFFIXES = {"*": "NOT_RESPONDING", "~": "POWERED_DOWN", "#": "POWERING_UP", "!": "POWER_DOWN", "%": "POWERING_DOWN",
            "$": "MAINTENANCE", "@": "REBOOT_REQUESTED", "^": "REBOOT_ISSUED", "-": "PLANNED"}
# `%t` abbreviations of base states that carry a flag in --json output (drain = idle+DRAIN, ...).
SHORT_STATES = {"alloc": ("allocated", ()), "comp": ("completing", ()), "drain": ("idle", ("DRAIN",)),
                "drng": ("mixed", ("DRAIN",)), "drained": ("idle", ("DRAIN",)), "draining": ("mixed", ("DRAIN",)),
                "fail": ("idle", ("FAIL",)), "failg": ("allocated", ("FAIL",)), "mix": ("mixed", ()), "unk": ("unknown", ()),
                "npc": ("allocated", ("NO_RESPOND",)), "plnd": ("planned", ()), "resv": ("reserved", ()),
                "maint": ("maintenance", ()), "boot": ("rebooting", ()), "pow_dn": ("powered_down", ()),
                "pow_up": ("powering_up", ())}
# What makes a node unusable for jobs, in flags and base states.
BAD_FLAGS = frozenset({"DRAIN", "FAIL", "NOT_RESPONDING", "NO_RESPOND", "POWERED_DOWN", "POWER_DOWN", "REBOOT_ISSUED",
                       "REBOOT_REQUESTED", "MAINTENANCE"})
BAD_STATES = frozenset({"down", "unknown", "error", "future", "fail", "powered_down"})
PARTITION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_NAMES = 1 << 18
"""Node names sinfo may list in all (a node once per partition): past it the output is refused, and a
hostlist that would expand past it is never expanded (`x[0-99999999]`)."""


@dataclass
class SlurmNode:
    name: str
    partitions: set[str] = field(default_factory=set)
    state: str = "unknown"
    flags: set[str] = field(default_factory=set)
    reason: str = ""

    @property
    def healthy(self) -> bool:
        return self.state not in BAD_STATES and not (self.flags & BAD_FLAGS)

    def describe(self) -> str:
        text = "+".join([self.state, *sorted(f.lower() for f in self.flags)])
        return text + (f": {self.reason}" if self.reason else "")


def validate_partition(name: str) -> str:
    """A partition name sunkcheck will put on a remote command line (quoted too, but never trusted)."""
    if not PARTITION.match(name):
        raise InputError(f"--partition {name!r}: not a Slurm partition name (letters, digits, '.', '_', '-')")
    return name


def parse(text: str, fmt: str) -> dict[str, SlurmNode]:
    """Slurm nodes by name from `sinfo --json` (fmt "json") or the documented text form (fmt "text"); any
    output of another shape is an InputError."""
    return parse_text(text) if fmt == "text" else parse_json(text)


def parse_json(text: str) -> dict[str, SlurmNode]:
    """All three shapes: 22.05 and 23.02 list `nodes` (state a string + `state_flags`, then a list);
    23.11+ list `sinfo` entries, each a partition/state group with its node names. Every field read is
    checked to be of the type sinfo writes (null where sinfo may leave one out): a login node is not trusted."""
    try:
        doc = json_doc(text)
    except ValueError as e:
        raise InputError(f"sinfo --json: not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise InputError("sinfo --json: not a JSON object")
    grouped = isinstance(doc.get("sinfo"), list)
    entries = doc["sinfo"] if grouped else doc.get("nodes")
    if not isinstance(entries, list):
        raise InputError("sinfo --json: neither a 'nodes' nor a 'sinfo' list in the output")
    errors = [e for e in _typed(doc.get("errors"), list, "errors") if e]
    if errors and not entries:
        raise InputError(f"sinfo reported: {_error_text(errors[0])}")
    nodes: dict[str, SlurmNode] = {}
    listed = 0
    for i, raw in enumerate(entries):
        where = f"{'sinfo' if grouped else 'nodes'}[{i}]"
        raw = _typed(raw, dict, where)
        names, state, flags, partitions = (_group_entry(raw, where, MAX_NAMES - listed) if grouped
                                           else _node_entry(raw, where))
        listed += len(names)
        if listed > MAX_NAMES:
            raise InputError(f"sinfo --json: lists more than {MAX_NAMES} node names")
        reason = _reason(raw, where)
        for name in filter(None, names):
            node = nodes.setdefault(name, SlurmNode(name))
            node.partitions |= partitions
            node.state, node.flags, node.reason = state, flags, reason
    return nodes


Entry = tuple[list[str], str, set[str], set[str]]
"""An entry's node names, base state, state flags and partitions."""


def _group_entry(raw: dict, where: str, room: int) -> Entry:
    """23.11+: a partition/state group, its node names as hostlists (expanded up to `room` names)."""
    names: list[str] = []
    for group in _strings(_typed(raw.get("nodes"), dict, f"{where}.nodes").get("nodes"), f"{where}.nodes.nodes"):
        names += expand_hostlist(group, room - len(names))
    node = _typed(raw.get("node"), dict, f"{where}.node")
    state, flags = _json_state(_strings(node.get("state"), f"{where}.node.state"), [])
    partitions = {_typed(_typed(raw.get("partition"), dict, f"{where}.partition").get("name"), str,
                         f"{where}.partition.name") or ""} - {""}
    return names, state, flags, partitions


def _node_entry(raw: dict, where: str) -> Entry:
    """22.05 and 23.02: one node, its state a string with `state_flags`, then a list."""
    names = [_typed(raw.get("name"), str, f"{where}.name") or _typed(raw.get("hostname"), str, f"{where}.hostname") or ""]
    state = raw.get("state")
    base, flags = _json_state(_strings(state, f"{where}.state") if isinstance(state, list) else
                              _typed(state, str, f"{where}.state"),
                              _strings(raw.get("state_flags"), f"{where}.state_flags"))
    partitions = {p.rstrip("*") for p in _strings(raw.get("partitions"), f"{where}.partitions")} - {""}
    return names, base, flags, partitions


def _reason(raw: dict, where: str) -> str:
    """Why the node is drained or down: a string, or (23.11+) an object with its description."""
    reason = raw.get("reason")
    return (_typed(reason.get("description"), str, f"{where}.reason.description") if isinstance(reason, dict)
            else _typed(reason, str, f"{where}.reason")) or ""


T = TypeVar("T")
_JSON_TYPES: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}


def _typed(value: object, kind: type[T], where: str) -> T:
    """`value` when it is of `kind` (a dict, list or str), its empty value when it is null or missing, else an
    InputError naming the field: `"name": 5` or `true` from a hostile login node is no node name."""
    if value is None:
        return kind()
    if not isinstance(value, kind):
        shown = "a boolean" if isinstance(value, bool) else "a number" if isinstance(value, (int, float)) else \
            _JSON_TYPES.get(type(value), type(value).__name__)
        raise InputError(f"sinfo --json: {where} is {shown}, not {_JSON_TYPES[kind]}")
    return value


def _strings(value: object, where: str) -> list[str]:
    """A list of strings (null: none)."""
    return [_typed(item, str, f"{where}[{i}]") for i, item in enumerate(_typed(value, list, where))]


def expand_hostlist(text: str, limit: int = MAX_NAMES) -> list[str]:
    """The names of a Slurm hostlist in the order `scontrol show hostnames` lists them: `a,b[1-2]`,
    `n[006-008,010]`, `gpu[01-04]-ib[1-2]` (several bracket groups; nothing may follow the last one). More
    than `limit` names, or a hostlist scontrol calls invalid, is an InputError before anything is expanded."""
    text = str(text)
    if not re.fullmatch(r"(?:[^\[\]]|\[[^\[\]]*\])*", text):
        raise InputError(f"sinfo: hostlist {_clip(text)!r}: unbalanced brackets")
    hosts = [_brackets(text, token) for token in re.findall(r"(?:\[[^\]]*\]|[^\s,\[])+", text)]
    if sum(math.prod(sum(hi - int(lo) + 1 for lo, hi in g) for g in groups) for _, groups in hosts) > limit:
        raise InputError(f"sinfo: hostlist {_clip(text)!r} names more than {MAX_NAMES} nodes")
    return [name for literals, groups in hosts for name in _names(literals, groups)]


def _brackets(text: str, token: str) -> tuple[list[str], list[list[tuple[str, int]]]]:
    """`gpu[01-02]-ib[1-2]` -> the text around the brackets (gpu, -ib, "") and each bracket's (low, high) ranges."""
    parts = re.split(r"\[([^\]]*)\]", token)
    literals, groups = parts[::2], []
    if len(parts) > 1 and literals[-1]:
        raise InputError(f"sinfo: hostlist {_clip(text)!r}: {literals[-1]!r} follows the last bracket")
    for group in parts[1::2]:
        bounds = []
        for part in group.split(","):
            lo, _, hi = part.partition("-")
            if not re.fullmatch(r"\d{1,18}", lo) or not re.fullmatch(r"\d{0,18}", hi) or int(hi or lo) < int(lo):
                raise InputError(f"sinfo: hostlist {_clip(text)!r}: {part!r} is not a range")
            bounds.append((lo, int(hi or lo)))
        groups.append(bounds)
    return literals, groups


def _names(literals: list[str], groups: list[list[tuple[str, int]]]) -> list[str]:
    """Every combination, ordered as Slurm's hostlist.c recurses: the bracket before the last varies slowest,
    then the ones before it right to left, and the last bracket fastest (`a[1-2]b[3-4]c[5-6]`: a1b3c5 a1b3c6
    a2b3c5 ...). A number keeps the width of its range's low end (`[01-2]`: 01 02)."""
    values = [[str(i).zfill(len(lo)) for lo, hi in bounds for i in range(int(lo), hi + 1)] for bounds in groups]
    order = [*range(len(groups) - 2, -1, -1), len(groups) - 1] if groups else []
    names = []
    for combination in product(*(values[i] for i in order)):
        picked = dict(zip(order, combination, strict=True))
        names.append("".join(text + picked.get(i, "") for i, text in enumerate(literals)))
    return names


def _clip(text: object) -> str:
    text = str(text)
    return text if len(text) <= 80 else text[:77] + "..."


def _json_state(state: str | list[str], state_flags: list[str]) -> tuple[str, set[str]]:
    """22.05: `state` "idle" + `state_flags` ["DRAIN"]; 23.02+: `state` ["IDLE", "DRAIN"] (base first)."""
    if isinstance(state, list):
        base = next((s for s in state if s.upper() not in BAD_FLAGS | {"COMPLETING", "RESERVED", "PLANNED",
                                                                      "NOT_RESPONDING", "DYNAMIC_NORM", "CLOUD"}),
                    state[0] if state else "unknown")
        return base.lower(), {s.upper() for s in state if s != base}
    return (state or "unknown").lower(), {f.upper() for f in state_flags}


def _error_text(error: object) -> str:
    if isinstance(error, dict):
        return str(error.get("description") or error.get("error") or error)
    return str(error)


def _lines(text: str) -> Iterator[str]:
    """text.split("\n"), one line at a time: a login node's endless answer is refused at MAX_NAMES lines
    without a string made of each of its lines first (three times the answer's memory)."""
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        yield text[start:end]
        start = end + 1


def parse_text(text: str) -> dict[str, SlurmNode]:
    nodes: dict[str, SlurmNode] = {}
    # sinfo ends its lines with \n alone: a reason an admin typed may hold U+2028 or U+0085, which
    # str.splitlines() would also break at
    for count, line in enumerate(_lines(text)):
        if count >= MAX_NAMES:
            raise InputError(f"sinfo: lists more than {MAX_NAMES} node names")
        if not line.strip() or line.startswith("NODELIST"):
            continue
        parts = line.split("|", 3)
        if len(parts) < 3:
            raise InputError(f"sinfo: unexpected line {line[:80]!r} (expected {TEXT_FORMAT!r})")
        name, partition, short = parts[0].strip(), parts[1].strip().rstrip("*"), parts[2].strip().lower()
        flags = set()
        while short and short[-1] in SUFFIXES:
            flags.add(SUFFIXES[short[-1]])
            short = short[:-1]
        base, implied = SHORT_STATES.get(short, (short or "unknown", ()))
        node = nodes.setdefault(name, SlurmNode(name))
        node.partitions.add(partition)
        node.state, node.flags = base, flags | set(implied)
        node.reason = parts[3].strip() if len(parts) > 3 and parts[3].strip() != "none" else ""
    return nodes


def nodeset_nodes(nodes: dict[str, SlurmNode], prefix: str, pod_names: set[str],
                  partition: str | None) -> dict[str, SlurmNode]:
    """The Slurm nodes that belong to a NodeSet: its partition's when one is named, otherwise those named
    like its Pods (`<prefix>-ooo-ooo`, the Node IP's last two octets)."""
    if partition:
        return {n: v for n, v in nodes.items() if partition in v.partitions}
    pattern = re.compile(rf"^{re.escape(prefix)}-\d{{3}}-\d{{3}}$")
    return {n: v for n, v in nodes.items() if n in pod_names or pattern.match(n)}
