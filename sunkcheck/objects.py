"""Thin, defensive accessors over Kubernetes objects kept as the API server's JSON (dicts)."""

import datetime
import functools
import re
from dataclasses import dataclass
from fractions import Fraction

POOL_LABEL = "compute.coreweave.com/node-pool"
POOL_UID_LABEL = "compute.coreweave.com/node-pool-uid"  # CKS sets it beside POOL_LABEL: the pool's metadata.uid
STATE_LABEL = "node.coreweave.cloud/state"
CORDON_REASON = "node.coreweave.cloud/cordonReason"  # why CKS cordoned a Node (repair, triage)
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
INSTANCE_LABEL = "app.kubernetes.io/instance"
PRODUCTION = "production"
LOCK_TAINT = "sunk.coreweave.com/lock"  # SUNK's own NoExecute taint on the Nodes running Slurm jobs: slurmd tolerates it


# --- what the API server accepts: names and label syntax -------------------------------------

@dataclass(frozen=True)
class Syntax:
    """A string the API server would accept only in this syntax: object names reach printed fixes as
    arguments, where a name like `--all` would act on every object."""

    pattern: re.Pattern
    longest: int
    description: str

    def fits(self, text: str) -> bool:
        return len(text) <= self.longest and self.pattern.fullmatch(text) is not None


_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL = Syntax(re.compile(_LABEL), 63, "a DNS-1123 label: lowercase letters, digits and '-', at most 63")
DNS_SUBDOMAIN = Syntax(re.compile(rf"{_LABEL}(\.{_LABEL})*"), 253,
                       "a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', at most 253")
# a label or taint key: an optional prefix of at most 253 (a DNS subdomain) and '/', then a name of at most 63
LABEL_KEY = Syntax(re.compile(rf"((?=[^/]{{1,253}}/){_LABEL}(\.{_LABEL})*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?"),
                   253 + 1 + 63,
                   "a label key: an optional DNS-1123 subdomain and '/', then a name of at most 63")
LABEL_VALUE = Syntax(re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"), 63,
                     "a label value: letters, digits, '-', '_' and '.', at most 63")

RESERVED_DOMAINS = ("coreweave.com", "coreweave.cloud")
IGNORE_ANNOTATION = "sunkcheck.io/ignore"  # comma-separated symptom ids to report as suppressed
NODESETS_ANNOTATION = "sunkcheck.io/nodesets"  # on a Node Pool: the NodeSets (name or namespace/name) it is meant for


def meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


# The hottest accessors spell out `meta(obj)`, `spec(obj)` and `status(obj)`: analysis calls them for
# every Node and Pod, and the extra call was a tenth of its time.

def name(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name") or ""


def namespace(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("namespace") or ""


def labels(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("labels") or {}


def annotations(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("annotations") or {}


def ignored_ids(obj: dict | None) -> frozenset[str]:
    """The symptom ids an object's `sunkcheck.io/ignore` annotation suppresses."""
    text = annotations(obj or {}).get(IGNORE_ANNOTATION) or ""
    return frozenset(i.strip() for i in text.split(",") if i.strip())


def meant_for(nodepool: dict, nodeset: dict) -> bool:
    """Whether a Node Pool's `sunkcheck.io/nodesets` annotation names the NodeSet (`name` or `namespace/name`)."""
    text = annotations(nodepool).get(NODESETS_ANNOTATION) or ""
    wanted = {name(nodeset), f"{namespace(nodeset)}/{name(nodeset)}"}
    return any(entry.strip() in wanted for entry in text.split(","))


def spec(obj: dict) -> dict:
    return obj.get("spec") or {}


def status(obj: dict) -> dict:
    return obj.get("status") or {}


def pod_spec(workload: dict) -> dict:
    """The Pod spec a NodeSet or DaemonSet stamps out: `spec.template.spec`."""
    return (spec(workload).get("template") or {}).get("spec") or {}


def owned_by(obj: dict, kind: str, owner_name: str) -> bool:
    return any(o.get("kind") == kind and o.get("name") == owner_name for o in meta(obj).get("ownerReferences") or ())


def is_reserved_key(key: str) -> bool:
    """Whether a label or taint key's prefix sits in a namespace CKS reserves for itself."""
    prefix = key.partition("/")[0] if "/" in key else ""
    return any(prefix == d or prefix.endswith("." + d) for d in RESERVED_DOMAINS)


# --- Nodes ---------------------------------------------------------------------------------------

def pool_of(node: dict) -> str | None:
    return ((node.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL)


def taints(node: dict) -> list[dict]:
    return spec(node).get("taints") or []


def condition(obj: dict, ctype: str) -> dict | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == ctype:
            return c
    return None


def is_ready(obj: dict) -> bool:
    """Ready condition True, for a Node or a Pod."""
    cond = condition(obj, "Ready")
    return cond is not None and cond.get("status") == "True"


def timestamp(value: object) -> datetime.datetime | None:
    """A time the API server returned (RFC 3339, `2026-12-05T06:01:02Z`), in UTC; None when absent, unreadable, or
    out of a datetime's range in UTC (`0001-01-01T00:00:00+01:00`)."""
    if not isinstance(value, str):
        return None
    try:
        return utc(datetime.datetime.fromisoformat(value))
    except (ValueError, OverflowError):
        return None


def utc(when: datetime.datetime) -> datetime.datetime:
    """`when` in UTC, naive taken as UTC; OverflowError where UTC is past what a datetime holds."""
    return when.replace(tzinfo=datetime.UTC) if when.tzinfo is None else when.astimezone(datetime.UTC)


END_OF_TIME = datetime.datetime.max.replace(tzinfo=datetime.UTC)


def later(when: datetime.datetime, seconds: float) -> datetime.datetime:
    """`when` advanced by `seconds`, or END_OF_TIME past it: a cluster's time can be read as late as a datetime
    holds (9999-12-31T23:59:59Z), and advancing it must not fail."""
    try:
        return when + datetime.timedelta(seconds=seconds)
    except OverflowError:
        return END_OF_TIME


def internal_ip(node: dict) -> str | None:
    return next((a.get("address") for a in status(node).get("addresses") or () if a.get("type") == "InternalIP"), None)


def allocatable(node: dict) -> dict[str, str]:
    """The raw allocatable quantities: parse only what is compared (a Node lists many resources)."""
    return status(node).get("allocatable") or {}


def is_lock(taint: dict) -> bool:
    """Whether the taint is SUNK's lock (LOCK_TAINT), whatever its value and effect."""
    return taint.get("key") == LOCK_TAINT


def format_taint(taint: dict) -> str:
    value = taint.get("value")
    return f"{taint.get('key', '')}{'=' + value if value else ''}:{taint.get('effect', '')}"


# --- Pods ----------------------------------------------------------------------------------------

def node_name(pod: dict) -> str | None:
    return (pod.get("spec") or {}).get("nodeName")


def is_terminal(pod: dict) -> bool:
    return status(pod).get("phase") in ("Succeeded", "Failed")


# --- Status columns -------------------------------------------------------------------------------

# kubectl column -> status field, in `kubectl get nodeset` / `kubectl get daemonset` order: what the
# reports print and what a snapshot's shape check requires to be a count
NODESET_COLUMNS = (
    ("DESIRED", "desiredNumberScheduled"),
    ("FEASIBLE", "numberFeasible"),
    ("CURRENT", "currentNumberScheduled"),
    ("READY", "numberReady"),
    ("UP-TO-DATE", "updatedNumberScheduled"),
    ("DRAIN", "numberDrain"),
    ("MISSCHEDULED", "numberMisscheduled"),
    ("UNAVAILABLE", "numberUnavailable"),
)
DAEMONSET_COLUMNS = (
    ("DESIRED", "desiredNumberScheduled"),
    ("CURRENT", "currentNumberScheduled"),
    ("READY", "numberReady"),
    ("UP-TO-DATE", "updatedNumberScheduled"),
    ("AVAILABLE", "numberAvailable"),
    ("MISSCHEDULED", "numberMisscheduled"),
    ("UNAVAILABLE", "numberUnavailable"),
)


DAEMONSET_OMITTED_AT_ZERO = frozenset({"updatedNumberScheduled", "numberAvailable", "numberUnavailable"})
"""The DaemonSet status fields Kubernetes declares `omitempty`: absent from a status the controller wrote, they are 0
(a healthy DaemonSet has no numberUnavailable), not unknown."""


def status_counts(obj: dict, columns: tuple[tuple[str, str], ...] = NODESET_COLUMNS) -> dict[str, int | None]:
    """kubectl's status columns as JSON-friendly keys (`up_to_date`); None where the field is absent (a DaemonSet's
    omitted zero is 0 where the controller wrote its status: desiredNumberScheduled there)."""
    st = status(obj)
    written = columns is DAEMONSET_COLUMNS and st.get("desiredNumberScheduled") is not None
    return {column.lower().replace("-", "_"): (int(st[field]) if st.get(field) is not None else
                                               0 if written and field in DAEMONSET_OMITTED_AT_ZERO else None)
            for column, field in columns}


# --- Quantities ----------------------------------------------------------------------------------

class InvalidQuantity(ValueError):
    """A resource quantity the API server would refuse, or one beyond the int64 range Kubernetes compares in."""


# apimachinery resource.ParseQuantity: a signed decimal, then a binary-SI suffix, a decimal-SI one or a
# decimal exponent (a signed integer: "1E" is an exa, "1E3" a thousand)
_QUANTITY = re.compile(r"([+-]?)([0-9]+)?(?:\.([0-9]*))?(?:([KMGTPE]i)|([numkMGTPE]?)|[eE]([+-]?[0-9]+))")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_LIMIT = 2**63  # Kubernetes' int64: the scheduler and the kubelet compare quantities in it
_NANO = Fraction(1, 10**9)
_LONGEST = 64  # characters: far beyond any real quantity, and an int parsed from it stays small


def quantity(value: object) -> Fraction:
    """A Kubernetes resource quantity ("100m", "8Gi", "1e3", 4) exactly; InvalidQuantity when the API server
    would refuse it, or it is out of int64 range (checked before any big number is built: "1e999999999")."""
    if isinstance(value, bool):  # JSON true: not a number, though Python's bool is an int
        raise InvalidQuantity("not a valid quantity")
    return _quantity(str(value).strip())


@functools.lru_cache(maxsize=4096)  # a cluster repeats the same few quantities thousands of times
def _quantity(text: str) -> Fraction:
    match = _QUANTITY.fullmatch(text) if len(text) <= _LONGEST else None
    if not match or (match.group(2) is None and not match.group(3)):
        raise InvalidQuantity("not a valid quantity")
    sign, whole, fraction, binary, decimal, exponent = match.groups()
    digits = (whole or "") + (fraction or "")
    mantissa = Fraction(int(digits), 10 ** len(fraction or ""))
    if mantissa == 0:
        return Fraction(0)
    if binary:
        scale = Fraction(2 ** _BINARY[binary])
    else:
        power = _DECIMAL[decimal] if exponent is None else int(exponent)
        order = len(digits.lstrip("0")) - len(fraction or "") + power  # the value is below 10**order
        if order > 20:
            raise InvalidQuantity("out of range")
        if order <= -9:  # below 1n: the API server rounds any non-zero value up to it
            return (-1 if sign == "-" else 1) * _NANO
        scale = Fraction(10) ** power
    value = mantissa * scale
    if value >= _LIMIT:
        raise InvalidQuantity("out of range")
    nanos = -(-value // _NANO)  # the API server rounds a value up to a whole number of nano units
    return (-1 if sign == "-" else 1) * nanos * _NANO


@functools.lru_cache(maxsize=4096)  # the deep view formats the same few amounts for thousands of Nodes
def format_quantity(resource: str, value: Fraction) -> str:
    """Render a quantity the way a human reads it for that resource: cores (millicores below one), memory in
    the largest binary unit it reaches (Gi, Mi, Ki), or a plain count. Memory is always binary, as kube-scheduler
    users read it, so a request and an allocatable compared in one sentence share a unit (never `2000Gi` beside
    `2105.344G`, which reads as the smaller). Exact, so that the sums and differences printed beside it add up
    (`free 1535.5Gi = allocatable 1536Gi - requested by others 512Mi`); an amount with no short exact binary form
    (a quantity written in bytes or decimal units) is marked approximate: `≈1999.844Gi`."""
    if resource == "memory" or resource.startswith(("hugepages-", "ephemeral-storage")):
        if value == 0:
            return "0"
        unit, scale = next(((u, s) for u, s in _BINARY_UNITS if abs(value) >= s), ("", 1))
        # under 1Ki: whole nano units, always exact (`1n` is no `≈0`)
        text = _exact(value / scale, 6 if unit else 9)
        return f"≈{_approx(value / scale)}{unit}" if text is None else text + unit
    if resource == "cpu" and abs(value) < 1 and (value * 1000).denominator == 1:
        return f"{int(value * 1000)}m"
    text = _exact(value, 9)  # quantities are whole nano units: always exact
    return f"≈{_approx(value)}" if text is None else text


_BINARY_UNITS = (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _exact(value: Fraction, places: int) -> str | None:
    """`value` as a decimal with at most `places` digits after the point (none when whole), or None if it has more."""
    scaled = value * 10**places
    if scaled.denominator != 1:
        return None
    whole, part = divmod(abs(scaled.numerator), 10**places)
    return ("-" if value < 0 else "") + str(whole) + (f".{part:0{places}d}".rstrip("0") if part else "")


def _approx(value: Fraction) -> str:
    return f"{float(value):.3f}".rstrip("0").rstrip(".")
