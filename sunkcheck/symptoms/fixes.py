"""Fix text spelled with the cluster's real names: kubectl commands (shell-quoted) and values snippets.

A fix breaks lines only where sunkcheck does: pasted as a block, it runs no line the cluster wrote. So a cluster
string reaches a fix's words through `prose` (one line), a command through `arg` (one shell word), and a snippet
through `to_yaml` (a line break escaped); a key or name the API server would refuse gets no command at all, since
as an argument it could be a flag (`--selector=x`)."""

from __future__ import annotations

import difflib
import io
import json
import re
import shlex
from collections.abc import Callable, Iterable
from functools import cache
from itertools import chain, count
from typing import Any

from sunkcheck import objects as o
from sunkcheck.analyze.feasibility import required_terms, tolerates
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.bounds import ADDED, KEPT, WIDENED, Kind, asked, is_command, line_kind, unasked
from sunkcheck.objects import DNS_LABEL, DNS_SUBDOMAIN, LABEL_KEY, LABEL_VALUE
from sunkcheck.text import safe

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


SHELL_ACTIVE = re.compile(r"[$`;&|<>\\'\"!]")
"""What a shell acts on even in a line it cannot run whole ("(no command for ...)" is a subshell): substitutions,
separators, redirections, quotes, history. No label, taint or name the API server validates holds one; a
NodeSet's affinity values (a custom resource's) or a hand-made snapshot may."""


_SNIPPET_QUOTED = re.compile(r"[$`;&|<>\\'\"!()\s]")
"""What a snippet's string is quoted for: what a shell acts on, a space (where a word ends) or a parenthesis."""


def steps(fix: str) -> list[tuple[Kind, str]]:
    """A fix as the steps to take: each command a step of its own (copied alone it runs that command and no other,
    never one of two alternatives nor one past a wait), each YAML snippet one step, and each run of words one step."""
    out: list[tuple[Kind, str]] = []
    for line in fix.split("\n"):
        kind = line_kind(line)
        if out and kind != "command" and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + "\n" + line)
        else:
            out.append((kind, line))
    return out


def prose(text: object) -> str:
    """A cluster string in a fix's words: one line, escapes removed, and single-quoted where a shell would act on it,
    so a fix pasted whole into a shell runs nothing the cluster wrote."""
    line = safe(text, one_line=True)
    return shlex.quote(line) if SHELL_ACTIVE.search(line) else line


def value(text: object) -> str:
    """One value a cluster wrote (an affinity's, which nothing validates) in a fix's words: as `prose` writes it, and
    quoted where it holds a space too, so it reads as one value and a terminal's report never breaks a line in it."""
    line = prose(text)
    return shlex.quote(line) if " " in line and line == safe(text, one_line=True) else line


def prose_list(items: Iterable[object], sep: str = ", ") -> str:
    """Cluster strings listed in a fix's words, each quoted on its own where a shell would act on it: quoted whole,
    the list's separators would read as part of one string."""
    return sep.join(prose(item) for item in items)


def arg(text: object) -> str:
    """A cluster string as one shell word of a command: quoted, on one line (quoted once: never prose's quotes too,
    which would become part of the word)."""
    return shlex.quote(safe(text, one_line=True))


def pinned(fix: str, context: str) -> str:
    """`fix` with each kubectl command bound to the kubeconfig context it was checked on (`kubectl --context NAME
    ...`), one a question opens (`asked`) too: pasted in a shell whose current context is another cluster's, it acts
    on the cluster checked, or fails."""
    def pin(line: str) -> str:
        command = unasked(line)
        if not (command.startswith("kubectl ") and is_command(command)):
            return line
        return f"{line[:len(line) - len(command)]}kubectl --context {arg(context)} {command.removeprefix('kubectl ')}"
    return "\n".join(map(pin, fix.split("\n")))


def unlabel_node(nodes: str | list[str], keys: Iterable[str]) -> str:
    """The commands removing `keys` from a Node or several, one key a line; a key no label can have (a hand-edited
    snapshot's) gets words instead."""
    lines = [f"kubectl label node {_node_args(nodes)} {arg(k + '-')}" for k in keys if LABEL_KEY.fits(k)]
    bad = [prose(k) for k in keys if not LABEL_KEY.fits(k)]
    if bad:
        lines.append(f"(no command for {', '.join(bad)}: not a label key the API server accepts)")
    return "\n".join(lines)


def _node_args(nodes: str | list[str]) -> str:
    """One Node, or several: kubectl label and taint take several names in one command."""
    return " ".join(arg(n) for n in ([nodes] if isinstance(nodes, str) else nodes))


def relabel_node(nodes: str | list[str], key: str, value: str) -> str:
    """The command setting a label on Nodes over the value they have, or words for a label no Node can carry."""
    if LABEL_KEY.fits(key) and LABEL_VALUE.fits(value):
        return f"kubectl label --overwrite node {_node_args(nodes)} {arg(key + '=' + value)}"
    return f"(no command for {prose(key + '=' + value)}: not a label the API server accepts)"


def _valid_taint(taint: dict) -> bool:
    value = taint.get("value")
    return (LABEL_KEY.fits(str(taint.get("key", ""))) and taint.get("effect") in TAINT_EFFECTS
            and (value is None or (isinstance(value, str) and LABEL_VALUE.fits(value))))


HAND_TAINT_CAUTION = "check first with whoever set the taint: the maintenance it marks may still be in progress"
"""Said beside every removal of a taint set on Nodes by hand: the taint is someone's, for a reason sunkcheck cannot
read."""


def untaint_node(nodes: str | list[str], taint: dict, restore: Iterable[dict] = ()) -> str:
    """The command removing a taint from Nodes and putting `restore` (the pool's own taints) back in the same patch, or
    words for a taint no Node can carry. A Node holds one taint per key and effect: `--overwrite` sets a restored value
    over one edited in place, and a restored taint with the removed one's key and effect replaces it (kubectl refuses
    to set and remove one key and effect at once)."""
    key, effect, put = str(taint.get("key", "")), str(taint.get("effect", "")), list(restore)
    refused = [t for t in put if not _valid_taint(t)]
    if not (LABEL_KEY.fits(key) and effect in TAINT_EFFECTS) or refused:
        return (f"(no command for the taint {prose_list(map(o.format_taint, refused or [taint]))}: not a taint the API "
                "server accepts)")
    replaced = any((t.get("key"), t.get("effect")) == (key, effect) for t in put)
    words = [*(arg(o.format_taint(t)) for t in put), *([] if replaced else [f"{arg(key + ':' + effect)}-"])]
    return f"kubectl taint node {_node_args(nodes)} {' '.join(words)}" + (" --overwrite" if put else "")


def nodepool_command(verb: str, pool: str, rest: str = "") -> str:
    """`kubectl VERB nodepool POOL REST`; words for a pool only a Node's label or the NodeSet names with a name no
    Node Pool can have."""
    if DNS_SUBDOMAIN.fits(pool):
        return f"kubectl {verb} nodepool {arg(pool)}{rest}"
    return f"(no command for Node Pool {prose(pool)}: no Node Pool can have that name)"


def join_fixes(parts: list[str]) -> str:
    """Several fixes as one text: one-line fixes on one line; once one holds a snippet, each fix on its own line,
    the one-line fixes first, so none is glued onto a snippet's last line nor printed as if part of it, and every
    snippet pastes as printed."""
    if not any("\n" in p for p in parts):
        return "; ".join(parts)
    return "\n".join(sorted(parts, key=lambda p: "\n" in p))


def _patch_nodepool(pool: str, kind: str, body: object) -> str:
    text = json.dumps(body, separators=(",", ":"), sort_keys=True)  # JSON escapes a line break
    return nodepool_command("patch", pool, f" --type={kind} -p {shlex.quote(text)}")


def label_nodepool(pool: str, labels: dict) -> str:
    """A merge patch setting (None: removing) keys of a Node Pool's nodeLabels (needs the CKS Admin role). A merge
    patch merges a map key by key, so it names only the keys it changes and the pool's other labels stay. A label
    the API server would refuse (a NodeSet may select one no Node can carry) gets words instead."""
    refused = [f"{k}={v}" for k, v in labels.items()
               if not LABEL_KEY.fits(k) or (v is not None and not (isinstance(v, str) and LABEL_VALUE.fits(v)))]
    if refused:
        return f"(no command setting {prose_list(refused)} in Node Pool {prose(pool)}: not a label the API server accepts)"
    return _patch_nodepool(pool, "merge", {"spec": {"nodeLabels": labels}})


def taint_nodepool(pool: Pool, taints: list[dict]) -> str:
    """A JSON patch adding `taints` to a Node Pool's nodeTaints. A merge patch would replace the whole list, so it
    appends; only a pool read with no nodeTaints gets the list created (appending to an absent list fails), behind a
    test of the list as read, so a list filled since fails the patch rather than losing its taints. A taint the API
    server would refuse gets words instead."""
    refused = [o.format_taint(t) for t in taints if not _valid_taint(t)]
    if refused:
        return (f"(no command adding {prose_list(refused)} to Node Pool {prose(pool.name)}: not a taint the API "
                "server accepts)")
    if pool.obj is not None and not pool.node_taints:
        # the API server's JSON patch tests an absent member as null: `null` guards an absent (or null) list
        read = o.spec(pool.obj).get("nodeTaints")
        return _patch_nodepool(pool.name, "json", [{"op": "test", "path": "/spec/nodeTaints", "value": read},
                                                   {"op": "add", "path": "/spec/nodeTaints", "value": taints}])
    patch = _patch_nodepool(pool.name, "json", [{"op": "add", "path": "/spec/nodeTaints/-", "value": t} for t in taints])
    if pool.obj is not None:
        return patch
    return (f"(Node Pool {prose(pool.name)} could not be read: this appends to its nodeTaints, and fails without changing "
            f"anything if it has none yet)\n{patch}")


def untaint_nodepool(pool: Pool, taints: list[dict]) -> str:
    """A JSON patch removing `taints` from a Node Pool's nodeTaints as read: each removal tests its entry first, so
    the patch fails without changing anything if the list changed since; from the last index, so none shifts."""
    at = sorted((i for i, t in enumerate(pool.node_taints) if t in taints), reverse=True)
    ops = [op for i in at for op in ({"op": "test", "path": f"/spec/nodeTaints/{i}", "value": pool.node_taints[i]},
                                     {"op": "remove", "path": f"/spec/nodeTaints/{i}"})]
    return _patch_nodepool(pool.name, "json", ops)


def new_taint_key(taken: set[str | None]) -> str:
    """An example taint key (example.com stands for the operator's domain) that none of `taken` collides with."""
    keys = chain(("sunk.example.com/node", "sunk.example.com/slurm"), (f"sunk.example.com/slurm-{i}" for i in count(2)))
    return next(k for k in keys if k not in taken)


@cache
def _dumper() -> tuple[Any, Callable[..., str]]:
    """Snippets in the style of SUNK's values files: lists indented under their key, lists of scalars on one line.
    Built on first use: `rules` and replays without a YAML fix never import PyYAML."""
    import yaml

    class Dumper(yaml.SafeDumper):
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            super().increase_indent(flow, False)

        def write_double_quoted(self, text: str, split: bool = True) -> None:
            """Inside double quotes a shell still expands `$` and a backquote (and `!`, history): written as YAML's
            escapes of them, which a shell leaves alone."""
            emitter: Any = self  # PyYAML's emitter is untyped
            stream, emitter.stream = emitter.stream, io.StringIO()
            try:
                super().write_double_quoted(text, split)
                written = emitter.stream.getvalue()
            finally:
                emitter.stream = stream
            stream.write(re.sub(r"[$`!]", lambda m: f"\\x{ord(m.group()):02x}", written))

    Dumper.add_representer(list, lambda dumper, data: dumper.represent_sequence(
        "tag:yaml.org,2002:seq", data, flow_style=not any(isinstance(v, (list, dict)) for v in data)))
    # helm and kubectl read YAML with Go parsers, which take more plain scalars for numbers and bools than PyYAML
    # does (`1e3`, `0o17`, `1_000`, `-Inf`, `y`): quote every string one of them could read as other than a string.
    Dumper.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+.0-9]"), list("-+.0123456789"))
    Dumper.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^[yYnN]$"), list("yYnN"))
    # a line break in a plain or single-quoted string is a line of the snippet; double-quoted, it is an escape
    # ("".join drops each break str.splitlines knows, as a terminal or a renderer would break there). A string a shell
    # would act on, split (a key opening a line would be a program) or refuse is single-quoted, which a shell reads
    # as YAML does (`''` is a quote to both): a snippet pasted into a shell runs, expands or redirects nothing
    Dumper.add_representer(str, lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style='"' if "".join(text.splitlines()) != text
        else "'" if _SNIPPET_QUOTED.search(text) else None))
    return Dumper, yaml.dump


def to_yaml(data: object) -> str:
    """`data` as a YAML snippet to paste: every value quoted where it would otherwise change type or meaning."""
    dumper, dump = _dumper()
    # never folded: a long string stays one line
    return dump(data, Dumper=dumper, default_flow_style=False, sort_keys=False, width=float("inf")).rstrip("\n")


def _expression(expr: dict) -> dict:
    values = {"values": list(expr["values"])} if expr.get("values") else {}
    return {"key": expr["key"], "operator": expr["operator"], **values}


def expression_yaml(*exprs: dict) -> str:
    """Required expressions as a YAML list, in order."""
    return to_yaml([_expression(e) for e in exprs])


def add_entries(entries: list[dict], current: list[dict], where: str) -> str:
    """Entries to add to a list that holds `current`: pasted alone as a values override, a list replaces the one it
    has, so the text says to keep those and shows the whole list, a comment line above each part saying which lines
    are new and which are there now. An entry excluding values of a key (NotIn) that an entry of `current` already
    excludes values of adds them to that entry: two exclusions of one key exclude the same Nodes as one of both."""
    if not current:
        return f"add {_these(entries)} to {where} (keep the ones it has):\n{to_yaml(entries)}"
    new = [e for e in entries if not any(_excludes_too(e, c) for c in current)]
    more = [_more_excluded(c, entries) for c in current]
    widened = [c | {"values": [*c["values"], *m]} for c, m in zip(current, more, strict=True) if m]
    kept = [c for c, m in zip(current, more, strict=True) if not m]
    said = (f"add {_these(new)} to {where}" if new else f"in {where}") + "".join(
        f"{', and' if new else ','} add {prose_list(m)} to the values of its {prose(c.get('key'))} NotIn entry"
        for c, m in zip(current, more, strict=True) if m)
    parts = [f"{mark}\n{to_yaml(part)}" for mark, part in ((ADDED, new), (WIDENED, widened), (KEPT, kept)) if part]
    return (f"{said}, and keep the {'other ' if widened else ''}entries it has{_sunks_said(kept)}; the whole list then "
            "reads:\n" + "\n".join(parts))


def _these(entries: list[dict]) -> str:
    return "this entry" if len(entries) == 1 else "these entries"


def _excludes_too(entry: dict, have: dict) -> bool:
    """Whether `entry` and `have` both exclude values of one key (NotIn)."""
    return entry.get("operator") == have.get("operator") == "NotIn" and entry.get("key") == have.get("key")


def _more_excluded(have: dict, entries: list[dict]) -> list:
    """The values `entries` exclude of `have`'s key beyond those `have` excludes (both NotIn)."""
    old = list(have.get("values") or ())
    return list(dict.fromkeys(v for e in entries if _excludes_too(e, have) for v in e.get("values") or ()
                              if v not in old))


def _sunks_said(entries: list[dict]) -> str:
    """` (what SUNK's entries among `entries` are)`, or nothing: said before the list, never in the snippet."""
    sunks = [said for entry in entries if (said := _sunks(entry))]
    return f" ({'; '.join(sunks)})" if sunks else ""


def _sunks(entry: dict) -> str:
    """What an entry of the list to keep is when SUNK, not the user, puts it there: the production-state expression
    every NodeSet inherits from SUNK's base definition (the runbook: write none of your own on that key), and the
    toleration of SUNK's NoExecute lock taint (slurmd stays on the Nodes running its jobs; one of another effect
    tolerates no lock)."""
    key = entry.get("key")
    if key == o.STATE_LABEL and entry.get("operator") == "In" and list(entry.get("values") or ()) == [o.PRODUCTION]:
        return (f"{o.STATE_LABEL} In [{o.PRODUCTION}] is inherited from SUNK's base definition: keep it as it is, and "
                f"write no expression of your own on {o.STATE_LABEL}")
    if key == o.LOCK_TAINT and "values" not in entry and entry.get("effect") in (None, "", "NoExecute"):
        return f"the {o.LOCK_TAINT} toleration is SUNK's, for its lock taint on the Nodes running Slurm jobs: keep it"
    return ""


def add_expressions(exprs: list[dict], pod_spec: dict) -> str:
    """Expressions to add to the node definition's required terms (SUNK merges layers into one). Kubernetes ORs
    the terms, so each term that lacks them gets its own addition beside its own entries: one list of every
    term's entries pasted into one term would AND them."""
    terms = required_terms(pod_spec) or [{}]
    if len(terms) == 1:
        return add_entries([_expression(e) for e in exprs], terms[0].get("matchExpressions") or [],
                           "the matchExpressions of the node definition's required affinity")
    parts = [f"Kubernetes ORs the {len(terms)} nodeSelectorTerms of the node definition's required affinity, so add to "
             f"each term on its own (one list of {'both' if len(terms) == 2 else 'all'} terms' entries would AND them):"]
    for i, term in enumerate(terms):
        current = term.get("matchExpressions") or []
        if missing := [_expression(e) for e in exprs if not any(_narrows(c, e) for c in current)]:
            parts.append(add_entries(missing, current, f"the matchExpressions of term {i + 1} (nodeSelectorTerms[{i}])"))
    return "\n".join(parts)


def _replace_toleration(wrong: dict, taint: dict, current: list[dict], where: str) -> str:
    """The entry for the taint's key corrected to the taint's value, in place, with the whole list it makes."""
    value = taint.get("value") or ""
    whole = [wrong | {"value": value} if t is wrong else t for t in current]
    return (f"the entry with key {prose(wrong.get('key'))} in {where} has value {prose(wrong.get('value') or '(empty)')} "
            f"where the taint has {prose(value or '(empty)')} ({prose(o.format_taint(taint))}): replace that entry; "
            "the list then reads" + _sunks_said(whole) + ":\n" + to_yaml(whole))


def _narrows(have: dict, expr: dict) -> bool:
    """Whether a term holding `have` already requires what `expr` would add: `expr` itself, or `In` on its key
    with no value `expr` lacks."""
    return have == expr or (have.get("key") == expr["key"] and have.get("operator") == expr["operator"] == "In" \
        and set(have.get("values") or ()) <= set(expr.get("values") or ()))


def affinity_yaml(exprs: list[dict]) -> str:
    """The node definition's required affinity holding `exprs` in one term (SUNK merges layers into one)."""
    return to_yaml({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [_expression(e) for e in exprs]}]}}}})


def toleration(taint: dict) -> dict:
    return {"key": taint.get("key", ""), "operator": "Exists", "effect": taint.get("effect", "NoSchedule")}


def add_toleration(taint: dict, current: list[dict], where: str = "the node definition's tolerations",
                   taken: frozenset[str] = frozenset()) -> str:
    """The toleration of `taint`, to add to `current`; an entry whose key is a near miss of the taint's (one or two
    characters off) and names no taint in `taken` is a typo to correct instead. An entry with the taint's own key
    and effect but another value is wrong: it is replaced, its value said beside the taint's (kept beside a new one,
    it would still be wrong). One with another effect tolerates another taint: kept, and the matching entry added."""
    key = str(taint.get("key", ""))
    wrong = next((t for t in current if t.get("key") == key and (t.get("operator") or "Equal") == "Equal"
                  and t.get("effect") in (None, "", taint.get("effect")) and not tolerates(t, taint)), None)
    if wrong is not None:
        return _replace_toleration(wrong, taint, current, where)
    keys = [k for t in current if (k := str(t.get("key") or "")) and k not in taken and k != key]
    near = difflib.get_close_matches(key, keys, 1, 0.9)
    if near:
        typo = next(t for t in current if t.get("key") == near[0])
        return (f"did you mean {prose(key)}? correct the entry with key {prose(near[0])} in {where}:\n"
                + to_yaml([typo | {"key": key}]))
    other = other_effect(taint, current)
    said = f"the entry with key {prose(key)} in {where} {uncovered(other, taint)}; " if other else ""
    return said + add_entries([toleration(taint)], current, where)


def other_effect(taint: dict, tolerations: Iterable[dict]) -> dict | None:
    """The entry on the taint's key that would tolerate it but for its effect: it tolerates the key's taints of that
    effect only (a NoSchedule entry keeps a Pod off no Node a NoExecute taint evicts it from)."""
    effect = taint.get("effect")
    return next((t for t in tolerations if t.get("key") == taint.get("key") and t.get("effect") not in (None, "", effect)
                 and tolerates(t | {"effect": effect}, taint)), None)


def uncovered(entry: dict, taint: dict) -> str:
    """`has effect NoSchedule, which does not cover the taint's NoExecute (...)`: why `other_effect`'s entry does not
    tolerate `taint`."""
    effect = str(taint.get("effect") or "")
    return (f"has effect {prose(entry.get('effect'))}, which does not cover the taint's {prose(effect)}"
            + (" (a NoExecute taint evicts the Pods that do not tolerate it)" if effect == "NoExecute" else ""))


def drain(pods: list[dict], reason: str) -> str:
    """Drain the Slurm nodes of slurmd `pods` (named like them), then wait until no job runs on them."""
    names = ",".join(o.name(p) for p in pods)
    return (f"scontrol update {arg('nodename=' + names)} state=drain reason={arg(reason)}\n"
            "wait until this lists no job on them:\n"
            f"squeue -h -w {arg(names)}")


EVICTION_REFUSED = ("an eviction honours the PodDisruptionBudgets a delete bypasses: a 429 TooManyRequests answer means "
                    "one refuses it for now, so retry later, never delete instead")


DRAINED_EVICTION = ("each command asks first, naming its Pod and Slurm node: answer y only once no job runs there; "
                    + EVICTION_REFUSED)
"""Said before `evict_drained`'s commands."""


def evict_drained(pods: list[dict]) -> str:
    """The commands evicting slurmd `pods` whose Slurm nodes `drain` drains, to run once `squeue` lists no job on
    them: `evict_pods`' each behind a question naming the Pod, its Node and its Slurm node (`asked`), as a fix pasted
    whole runs the drain and goes on to them at once, and a slurmd Pod removed kills the jobs on its Slurm node."""
    return evict_pods(pods, ask=True)


def evict_pods(pods: list[dict], ask: bool = False) -> str:
    """The commands evicting exactly these Pods by name, one a Pod, each opened by its question if `ask`: the Eviction
    API (what a drain uses, without cordoning the Node) honours the Pods' PodDisruptionBudgets. kubectl has no verb for
    it, so `create --raw` posts the Eviction, read from a here-string: from the line itself, never from the pasted
    lines after it (a shell without here-strings refuses the line, evicting nothing). A name the API server would
    refuse (a Pod's, or the Node's a question names) gets words."""
    lines = []
    for p in sorted(pods, key=o.namespace):
        ns, name, node = o.namespace(p), o.name(p), o.node_name(p)
        if not (DNS_LABEL.fits(ns) and DNS_SUBDOMAIN.fits(name)):
            lines.append(f"(no command for Pod {prose(ns)}/{prose(name)}: not a name the API server accepts)")
            continue
        if ask and node is not None and not DNS_SUBDOMAIN.fits(node):
            lines.append(f"(no command for Pod {ns}/{name}: its Node {prose(node)} is not a name the API server accepts)")
            continue
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}}
        lines.append(f"{asked(f'{ns}/{name}', name, node) if ask else ''}kubectl create --raw "
                     f"/api/v1/namespaces/{ns}/pods/{name}/eviction -f - <<< {arg(json.dumps(body, separators=(',', ':')))}")
    return "\n".join(lines)
