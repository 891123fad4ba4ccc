"""Every output bounded (docs/limits.md): a Node with 10,000 taints is 10,000 reasons, 10,000 evidence lines
and 80,000 commands in a fix, which no reader wants and no terminal or monitor should receive. Each list keeps
its first LIMIT items and says how many it left out; each line of text keeps its first LINE characters.
`--limit 0` lifts both caps. A fix is cut once, between two of its steps, and all of it from there is left out:
what is printed pastes as printed and never runs a step without the ones before it."""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import groupby
from typing import Literal

from sunkcheck.model import Check, Explanation, NodeVerdict, Omitted, Report, Result, Symptom

LIMIT = 50
"""Items of each list a report shows: a Node's reasons, a row's evidence lines, a run of commands alike in a fix,
the findings of one linted definition, the comparisons of each check in the deep view of a Node."""
LINE = 1000
"""Characters of one line of text: a summary, a reason, an evidence or an error line."""
LIFT = "--limit 0 shows all"
COMMANDS = {
    "kubectl": {"annotate", "apply", "cordon", "create", "delete", "describe", "drain", "edit", "get", "label", "logs",
                "patch", "rollout", "scale", "taint", "uncordon"},
    "scontrol": {"show", "update"},
    "sunkcheck": {"check", "explain", "lint", "rbac", "rules", "serve", "snapshot"},
    "helm": {"get", "install", "template", "upgrade"},
    "squeue": set(), "sinfo": set(), "ssh": set(),
}
"""The programs a fix's command lines run, and the verbs they run them with (an option may follow any of them
instead): a line opening with both is a command, cut or wrapped never inside; a sentence opening with a cluster
string named like a program (a Node called `ssh`: "ssh carries the taint ...") is not."""


def asked(pod: str, slurm_node: str, node: str | None) -> str:
    """What opens a command that must wait for the step before it (the eviction of slurmd Pod `pod`, namespace/name,
    for `squeue` to list no job on its Slurm node): it runs only on a typed y. Pasted whole without bracketed paste
    (bash before 5.1, tmux or screen), `read` takes the next pasted line as the answer: so the question names the Pod
    and where it runs, and an answer other than y says the Pod was skipped and what was read, to show a line eaten.
    The names are ones the API server accepts (no quote, `%` or backslash): each reads as is in single quotes."""
    where = f" on Node {node}" if node else ""
    return (f"printf 'no Slurm job left on Slurm node {slurm_node}? y evicts Pod {pod}{where}: ' "
            f"&& read -r answer && [ \"$answer\" = y ] || {{ printf 'skipped {pod}: the answer read was \"%s\"\\n' "
            '"$answer"; false; } && ')


ASKED = re.compile(r"printf '[^']*' && read -r answer && \[ \"\$answer\" = y \] "
                   r"\|\| \{ printf '[^']*' \"\$answer\"; false; \} && ")
"""The question `asked` writes, whatever it names: bash and zsh read it alike (`read -p` prompts in bash alone), and
the command after it runs on a y alone (the list skipping it is false whatever printf does)."""


def unasked(line: str) -> str:
    """A line without the question (`asked`) that opens it, if one does."""
    m = ASKED.match(line)
    return line[m.end():] if m else line


def is_command(line: str) -> bool:
    """Whether a fix's line is a command by the form the fix writers give one: a program, then its verb or an option
    (after the question a command waiting for a step opens with, `asked`)."""
    words = unasked(line).split(" ", 2)
    verbs = COMMANDS.get(words[0])
    return verbs is not None and len(words) > 1 and (words[1] in verbs or words[1].startswith("-"))


Kind = Literal["prose", "command", "yaml"]
_YAML_KEY = re.compile(r"[\w./-]+:( |$)")
ADDED, WIDENED, KEPT = "# to add:", "# there now, values added:", "# there now, to keep as they are:"
SNIPPET_MARKS = (ADDED, WIDENED, KEPT)
"""The comment lines of a snippet holding a whole list: which of its entries are new, and which are there now."""


def line_kind(line: str) -> Kind:
    """What a line of a fix is, by the form every fix writer gives it: a command starts with the program it runs and
    its verb or an option (alone on its line, never inside a sentence), a line of a snippet is indented, a list item
    or a key (as `to_yaml` writes them); every other line is words. A sentence never opens with a program's name and
    verb nor with a key and its colon; one opening with a cluster string named like a program (a Node called `ssh`)
    is still words, as its next word is no verb."""
    if is_command(line):
        return "command"
    if line[:1].isspace() or line.startswith("- ") or line in SNIPPET_MARKS or _YAML_KEY.match(line):
        return "yaml"
    return "prose"


YAML_LINES = 4
"""Lines of a fix for each item a list shows."""


def bounded(report: Report, limit: int = LIMIT) -> Report:
    """`report` with every list and line within the caps; `limit` 0 leaves it whole."""
    if not limit:
        return report
    return replace(report, results=tuple(_result(r, limit) for r in report.results),
                   errors=tuple(line(e) for e in report.errors))


def bounded_explanation(e: Explanation, limit: int = LIMIT) -> Explanation:
    """`explain` within the caps: each Node's reasons, and in the deep view of one Node each check's comparisons."""
    if not limit:
        return e
    kept: list[Check] = []
    omitted: list[Omitted] = []
    for _, comparisons in groupby(e.checks, key=lambda c: c.check):
        shown, left = _comparisons(list(comparisons), limit)
        kept += shown
        omitted += [left] if left.failing or left.ok else []
    return replace(e, summary=line(e.summary), nodes=tuple(_node(v, limit) for v in e.nodes),
                   node=e.node and _node(e.node, limit), checks=tuple(kept), checks_omitted=tuple(omitted))


def _comparisons(checks: list[Check], limit: int) -> tuple[list[Check], Omitted]:
    """One check's first `limit` comparisons, failing ones first (in their order), each value a line within LINE;
    and how many it left out: a Node with 10,000 taints is 10,000 taint comparisons, and a failing one is never
    hidden behind passing ones."""
    failing = [i for i, c in enumerate(checks) if not c.ok]
    passing = [i for i, c in enumerate(checks) if c.ok]
    kept_failing, kept_passing = failing[:limit], passing[:max(0, limit - len(failing))]
    chosen = set(kept_failing + kept_passing)
    shown = [replace(c, subject=line(c.subject), wanted=line(c.wanted), found=line(c.found))
             for i, c in enumerate(checks) if i in chosen]
    return shown, Omitted(checks[0].check, len(failing) - len(kept_failing), len(passing) - len(kept_passing))


def line(text: str) -> str:
    """`text` up to LINE characters, saying how many more it had."""
    if len(text) <= LINE:
        return text
    return f"{text[:LINE]}... ({len(text) - LINE:,} more characters; {LIFT})"


def _result(r: Result, limit: int) -> Result:
    # the most severe rows, in their order: a definition with 10,000 unknown keys keeps its one error
    kept = set(sorted(range(len(r.symptoms)), key=lambda i: (r.symptoms[i].suppressed, -r.symptoms[i].severity.rank))[:limit])
    return replace(r, steps=tuple(replace(s, summary=line(s.summary)) for s in r.steps),
                   symptoms=tuple(_symptom(s, limit) for i, s in enumerate(r.symptoms) if i in kept),
                   symptoms_omitted=r.symptoms_omitted + len(r.symptoms) - len(kept),
                   nodes=tuple(_node(v, limit) for v in r.nodes))


def _node(v: NodeVerdict, limit: int) -> NodeVerdict:
    if not v.reasons:  # a feasible Node, most of thousands: nothing to cap
        return v
    kept = v.reasons[:limit]
    return replace(v, reasons=tuple(replace(x, detail=line(x.detail)) for x in kept),
                   reasons_omitted=v.reasons_omitted + len(v.reasons) - len(kept))


def _symptom(s: Symptom, limit: int) -> Symptom:
    kept = s.evidence[:limit]
    return replace(s, evidence=tuple(line(e) for e in kept), evidence_omitted=s.evidence_omitted + len(s.evidence) - len(kept),
                   fix="\n".join(_fix(s.fix.split("\n"), limit)))


def _fix(lines: list[str], limit: int) -> list[str]:
    """A fix's `lines` within the caps, cut once, between two steps: each command, line of words and whole YAML
    snippet is printed whole or not at all, and once one is left out, so is everything after it, in one line of
    words saying so. A fix is a sequence: a delete printed without the drain before it, a list that replaces the
    one there now printed shorter (a `#` line inside it is a YAML comment, so it would still parse) or a command
    without the caution before it would each do harm pasted."""
    at = 0
    for block in _blocks(lines):
        what, spans = _left_out(block, lines, at, limit)
        if what:
            rest = len(lines) - at - spans
            return [*lines[:at], f"({what} left out{f', and the {rest:,} lines after' if rest else ''}: {LIFT})"]
        at += len(block)
    return lines


def _blocks(lines: list[str]) -> list[list[str]]:
    """A fix's steps: each YAML snippet (its run of lines) one, every other line one."""
    out: list[list[str]] = []
    for text in lines:
        if out and line_kind(text) == "yaml" and line_kind(out[-1][-1]) == "yaml":
            out[-1].append(text)
        else:
            out.append([text])
    return out


def _left_out(block: list[str], lines: list[str], at: int, limit: int) -> tuple[str, int]:
    """Words for a step of a fix (`block`, from `lines[at]` on) the caps leave out, and how many lines from it they
    stand for; ("", 0) for a step printed whole. A fix holds YAML_LINES lines an item (a YAML snippet's match
    expression takes up to four); a snippet goes whole or not at all; a line within LINE is always whole (its words
    are one sentence, never a list to cut), a longer one holds at most `limit` `; `-separated parts of at most LINE
    characters, and is never cut (past LINE, it quotes a 1 MB label value: cut, it would set another); a run of
    commands alike (one program and verb, e.g. `kubectl taint` a line per Node and taint) stops after `limit`."""
    room = YAML_LINES * limit - at
    if len(block) > 1 or line_kind(block[0]) == "yaml":
        if len(block) > room or any(len(x) > LINE for x in block):
            return f"a YAML snippet of {len(block):,} lines", len(block)
        return "", 0
    if room < 1:
        return f"{len(lines) - at:,} more lines", len(lines) - at
    text, verb = block[0], _verb(block[0])
    if verb and at >= limit and all(_verb(x) == verb for x in lines[at - limit:at]):
        alike = next((i - at for i in range(at, len(lines)) if _verb(lines[i]) != verb), len(lines) - at)
        return f"{alike:,} more like these", alike
    parts = text.split("; ")
    if len(text) > LINE and (len(parts) > limit or any(len(part) > LINE for part in parts)):
        return f"a line of {len(text):,} characters", 1
    return "", 0


def _verb(text: str) -> tuple[str, ...]:
    """A command's program and verb (`kubectl taint`), or () for a line that is no command."""
    words = unasked(text).split(" ", 4)
    if words[1:2] == ["--context"]:  # bound to a context (symptoms.fixes.pinned): the verb follows it
        words = [words[0], *words[3:]]
    return tuple(words[:2]) if is_command(text) else ()
