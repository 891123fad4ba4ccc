"""A Node as the feasibility checks see it: every value a check reads, recorded, so that a Node judged once
stands for every Node that reads the same (to one template, thousands of Nodes are a few dozen kinds)."""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from sunkcheck import objects as o
from sunkcheck.model import Check, Reason


def _ready(node: dict) -> tuple:
    cond = o.condition(node, "Ready")
    return (None, None) if cond is None else (cond.get("status"), cond.get("reason"))


def not_ready(status: str | None, reason: str | None) -> str:
    """`not Ready (Ready=False: KubeletNotReady)`: a Node's Ready condition, as every report says it."""
    return f"not Ready (Ready={status or 'absent'}" + (f": {reason})" if reason else ")")


def _taints(node: dict) -> tuple:
    return tuple(tuple((k, t[k]) for k in ("key", "value", "effect") if k in t) for t in o.taints(node))


# Everything a check may read of a Node, by name: a check sees a Node only through a NodeView, so a new
# field a check reads is a new entry here, and the memo's key includes it without anyone remembering to. The Node
# comes last, after what a read asks of it (a label's key): the memo's key binds those, and calls each read of
# every Node judged at C speed.
READERS: dict[str, Callable[..., object]] = {
    "name": o.name,
    "label": lambda key, node: o.labels(node).get(key),
    "ready": _ready,
    "unschedulable": lambda node: bool(o.spec(node).get("unschedulable")),
    "taints": _taints,
    "allocatable": lambda resource, node: o.allocatable(node).get(resource),
}


class NodeView:
    """A Node as the checks see it, every value read recorded (`reads`, in order) for the memo."""

    __slots__ = ("_node", "labels", "reads")

    def __init__(self, node: dict):
        self._node = node
        self.reads: dict[tuple, object] = {}
        self.labels = Labels(self)

    def read(self, *what: Any) -> Any:
        if what not in self.reads:
            self.reads[what] = READERS[what[0]](*what[1:], self._node)
        return self.reads[what]

    @property
    def name(self) -> str:
        return self.read("name")

    @property
    def ready(self) -> tuple[str | None, str | None]:
        """The Ready condition's status and reason (None, None without one)."""
        return self.read("ready")

    @property
    def unschedulable(self) -> bool:
        return self.read("unschedulable")

    @property
    def taints(self) -> list[dict]:
        """The taints' key, value and effect (what toleration reads), in the Node's order."""
        return [dict(t) for t in self.read("taints")]

    def allocatable(self, resource: str) -> Any:
        """The raw allocatable quantity, None when the Node does not advertise it."""
        return self.read("allocatable", resource)


class Labels:
    """A Node's labels, read one key at a time (a label is absent or a string: None is absent)."""

    __slots__ = ("_view",)

    def __init__(self, view: NodeView):
        self._view = view

    def get(self, key: object, default: Any = None) -> Any:
        value = self._view.read("label", key)
        return default if value is None else value

    def __contains__(self, key: object) -> bool:
        return self._view.read("label", key) is not None

    def __getitem__(self, key: object) -> Any:
        return self._view.read("label", key)


_MISS = object()
T = TypeVar("T")


def memoized(memo: dict, node: dict, compute: Callable[[NodeView], T]) -> T:
    """`compute(NodeView(node))`, or the result of an earlier Node that read the same values. `compute` reads
    the Node only through the view, so the same values read mean the same reads in the same order (a check
    decides what to read next from what it read so far) and the same result. `memo` holds, for each list of
    reads seen, the function that reads those values of a Node and the results by those values."""
    for values_of, results in tuple(memo.values()):  # a copy: another thread may add a pattern meanwhile
        try:
            hit = results.get(values_of(node), _MISS)
        except TypeError:  # a malformed value (a list where a string belongs): judge the Node on its own
            return compute(NodeView(node))
        if hit is not _MISS:
            return hit
    view = NodeView(node)
    result = compute(view)
    reads = tuple(view.reads)
    try:
        if reads not in memo:
            memo[reads] = (_values_reader(reads), {})
        values_of, results = memo[reads]
        results[values_of(node)] = result
    except TypeError:
        pass
    return result


# What the memo's key holds of a read where its value alone would not do: a quantity may be a JSON float and
# an int that compare equal (1.152921504606847e18 == 1152921504606846976) but parse apart (o.quantity reads
# str() of each), so its type is in the key too.
KEYS: dict[str, Callable[..., object]] = {
    "allocatable": lambda resource, node: ((value := o.allocatable(node).get(resource)), type(value)),
}


def _values_reader(reads: tuple) -> Callable[[dict], tuple]:
    """The values `reads` read of a Node, read straight from it (the readers a NodeView calls, without
    recording, or their KEYS): the memo's key, computed for every Node judged."""
    readers = tuple(functools.partial(KEYS.get(what[0]) or READERS[what[0]], *what[1:]) for what in reads)
    return lambda node: tuple(map(operator.call, readers, itertools.repeat(node)))


def compare(check: str, subject: str, wanted: str, found: str, ok: bool, detail: str = "", scheduler: str = "") -> Check:
    """A comparison whose failure is one reason, `detail` worded as kube-scheduler's `scheduler` phrase."""
    return Check(check, subject, wanted, found, ok, () if ok else (Reason(check, detail, scheduler),))


def reasons_of(checks: Iterable[Check]) -> tuple[Reason, ...]:
    return tuple(r for c in checks for r in c.reasons)

