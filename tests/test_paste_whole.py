"""A fix block pasted whole, as a terminal's report prints it (table and plain, at any width), into bash: only its own
commands run, each as written, whatever the cluster wrote into its words or its snippets. bash runs in an empty
directory with every builtin disabled and a PATH holding only a recorder named after every program of the machine,
every builtin and every word of the block (kubectl among them: it points at nothing)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from sunkcheck.bounds import ASKED, asked
from sunkcheck.model import Report
from sunkcheck.pipeline import diagnose
from sunkcheck.render import Output, render
from sunkcheck.render.pasted import fix_lines
from sunkcheck.snapshot import load
from sunkcheck.symptoms.fixes import evict_drained, steps, to_yaml
from sunkcheck.text import inert
from tests.conftest import CASES, FIXTURES
from tests.test_terminal_text import RICH_STYLE, hostile_snapshot, report, target

WIDTHS = (60, 80, 100, 120, 200)
BUILTINS = subprocess.run(["bash", "-c", "compgen -b"], capture_output=True, text=True, check=True).stdout.split()
RECORDER = """#!/bin/sh
{ printf '%s\\037' "${0##*/}" "$@"; printf '\\036'; } >> "$PASTE_LOG"
"""
# what a shell would run, substitute, separate or redirect, in values a custom resource holds unvalidated
SHELL_WORDS = " touch PWNED; $(touch PWNED) `touch PWNED` >PWNED 'a\"b' (x) #c"


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of recorders: one per program on the machine's PATH directories and per bash builtin."""
    where = tmp_path_factory.mktemp("programs")
    (where / ".recorder").write_text(RECORDER)
    (where / ".recorder").chmod(0o755)
    names = set(BUILTINS)
    for directory in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        names |= set(os.listdir(directory)) if os.path.isdir(directory) else set()
    for name in names - {".recorder", ".", ".."}:
        (where / name).symlink_to(where / ".recorder")
    return where


def blocks(out: str, fmt: Output) -> list[list[str]]:
    """Each fix block of a report as a terminal shows it (the table's colours gone), the label column cut off."""
    found: list[list[str]] = []
    label, indent = ("  fix:", "    ") if fmt is Output.TABLE else ("  fix:   ", " " * 9)
    lines = RICH_STYLE.sub("", out).split("\n")
    for k, line in enumerate(lines):
        if line.startswith(label):
            block = [line[len(label):]] if fmt is Output.PLAIN else []
            for more in lines[k + 1:]:
                if not more.startswith(indent):
                    break
                block.append(more)
            found.append(block)
    return found


def ran(tmp: Path, programs: Path, pasted: list[list[str]]) -> list[list[list[str]]]:
    """What each pasted block ran (program and arguments), in order: bash reads the blocks one after the other, each
    followed by a sentinel, so a block that leaves a quote open or a line continued swallows the next."""
    words = {w for block in pasted for line in block for w in re.split(r"[\s'\"]+", line)
             if w and "/" not in w and "\0" not in w and len(w.encode()) < 255}
    mine = tmp / "words"
    shutil.rmtree(mine, ignore_errors=True)
    mine.mkdir()
    for w in words - set(os.listdir(programs)):
        (mine / w).symlink_to(programs / ".recorder")
    (mine / "sentinel.").symlink_to(programs / ".recorder")
    cwd, log = tmp / "cwd", tmp / "log"
    shutil.rmtree(cwd, ignore_errors=True)
    cwd.mkdir()
    log.write_text("")
    script = f"enable -n {' '.join(b for b in BUILTINS if b != 'enable')}\n" + "".join(
        "\n".join(block) + "\nsentinel.\n" for block in pasted)
    subprocess.run(["/bin/bash", "--norc", "--noprofile", "-i"], input=script, text=True, capture_output=True, timeout=60,
                   cwd=cwd, env={"PATH": f"{mine}:{programs}", "PASTE_LOG": str(log), "HOME": str(tmp), "HISTFILE": "/dev/null"})
    assert list(cwd.iterdir()) == []  # nothing was written, not even by a redirection
    calls = [record.split("\x1f")[:-1] for record in log.read_text().split("\x1e")[:-1]]
    out: list[list[list[str]]] = [[]]
    for call in calls:
        if call == ["sentinel."]:
            out.append([])
        else:
            out[-1].append(call)
    return out[:-1]


def meant(fix: str) -> list[list[str]]:
    """What a fix's steps (JSON fix_steps) run, pasted: each command as its words, each snippet's line as a shell
    splits it (a key or a list's dash, a program no machine has; its comment lines nothing); never a line of words."""
    return [words for kind, text in steps(fix) if kind != "prose" for line in text.split("\n")
            for words in argv(line)
            if words and "/" not in words[0]]  # a path (`kubernetes.io/arch:`): none in the empty directory


def argv(line: str) -> list[list[str]]:
    """What a line runs, each program with its words as it receives them (its comment nothing): a here-string
    (`<<< WORD`, an eviction's body) is its input. A command asked for first (`ASKED`: `printf ... && read -r answer
    && [ "$answer" = y ] || { printf ...; false; } && ...`) runs each program of that first list first: here `read`
    and `[` are recorders too, so the answer stays unset (empty) and the test succeeds, skipping the second list."""
    if m := ASKED.match(line):
        question = m.group().split(" || ")[0]
        ran = [shlex.split(part.replace('"$answer"', "''")) for part in question.split(" && ")]
        return [*ran, *argv(line[m.end():])]
    words = shlex.split(line, comments=True)
    at = words.index("<<<") if "<<<" in words else len(words)
    return [words[:at] + words[at + 2:]]


def check_pasted(report: Report, tmp: Path, programs: Path) -> int:
    """Every fix block of `report`, table and plain at every width, pasted into bash: each ran its own commands and
    snippet lines as written, and nothing else. The number of blocks pasted."""
    wanted = sorted(meant(s.fix) for r in inert(report).results for s in r.symptoms)
    for fmt in (Output.TABLE, Output.PLAIN):
        for width in WIDTHS:
            pasted = blocks(render(report, fmt, width=width), fmt)
            assert len(pasted) == len(wanted), (fmt, width)
            assert sorted(ran(tmp, programs, pasted)) == wanted, (fmt, width)
    return len(wanted)


@pytest.mark.parametrize("case", CASES)
def test_every_fix_block_pasted_whole_runs_only_its_commands(case: str, tmp_path: Path, programs: Path) -> None:
    check_pasted(report(case), tmp_path, programs)


def with_values(case: str, tmp: Path, extra: str) -> Path:
    """`case` with `extra` after every affinity or toleration value and Node Pool label value (a custom resource's:
    the API server validates none of them as a label value)."""
    from tests.test_untrusted_input import _with_payload

    snap = tmp / f"{case}-values"
    shutil.copytree(FIXTURES / case, snap)
    for name in ("nodesets.json", "nodepools.json"):
        if (path := snap / name).exists():
            path.write_text(json.dumps(_with_payload(json.loads(path.read_text()), extra)))
    return snap


def _report(snap: Path, case: str) -> Report:
    return diagnose(load(snap), target(case))


HOSTILE_CASES = ["no-feasible-pool-typo", "nodeselector-ignored", "nodeselector-ignored-shared-label", "several-nodesets",
                 "misscheduled-label-not-from-pool", "misscheduled-label-changed", "label-value-case",
                 "lock-taint-untolerated", "labels-not-from-pool", "ds-untolerated-taint", "hostile-strings"]


@pytest.mark.parametrize("case", HOSTILE_CASES)
def test_a_hostile_cluster_s_fix_blocks_pasted_whole_run_only_their_commands(case: str, tmp_path: Path,
                                                                           programs: Path) -> None:
    """The values a NodeSet, a DaemonSet or a Node Pool holds with words a shell would run (a value with spaces, a
    substitution, a separator, a redirection, quotes) or with controls; and the NodeSet naming Node Pool
    "slurm-cpu touch PWNED", which once wrapped at 118 to 125 columns into a line `touch PWNED? If so, ...`."""
    pasted = 0
    for snap in (with_values(case, tmp_path, SHELL_WORDS), hostile_snapshot(case, tmp_path)):
        pasted += check_pasted(_report(snap, case), tmp_path, programs)
    assert pasted


def test_a_pool_named_with_words_is_quoted_and_never_broken(tmp_path: Path, programs: Path) -> None:
    snap = tmp_path / "typo"
    shutil.copytree(FIXTURES / "no-feasible-pool-typo", snap)
    (snap / "nodesets.json").write_text((snap / "nodesets.json").read_text().replace('"slurm-cpus"',
                                                                                     '"slurm-cpu touch PWNED"'))
    hostile = _report(snap, "no-feasible-pool-typo")
    assert check_pasted(hostile, tmp_path, programs)
    for width in range(100, 131):
        for fmt in (Output.TABLE, Output.PLAIN):
            lines = [line for block in blocks(render(hostile, fmt, width=width), fmt) for line in block]
            assert any("'slurm-cpu touch PWNED'" in line for line in lines), (fmt, width)
            assert not any(line.lstrip().startswith(("touch", "PWNED")) for line in lines), (fmt, width, lines)


def test_a_snippet_pasted_into_a_shell_expands_separates_and_redirects_nothing(tmp_path: Path, programs: Path) -> None:
    """An affinity's values kept in a snippet (the entries there now, to keep): `values: [$(touch x)]` ran `touch` when
    pasted, and a value with a line break is double-quoted, where a shell still expands `$`."""
    hostile = ["a b", "$(touch PWNED)", "x;touch PWNED", "it's", ">PWNED", "l\n$(touch PWNED)`touch PWNED`!!\\"]
    entries = [{"key": "example.com/k", "operator": "NotIn", "values": hostile}, {"touch PWNED": "(x)"}]
    snippet = to_yaml(entries)
    assert yaml.safe_load(snippet) == entries
    assert ran(tmp_path, programs, [snippet.split("\n")]) == [[shlex.split(line) for line in snippet.split("\n")]]


@pytest.mark.parametrize("name", ["slurm-cpu-batch-012-005'x", "slurm-cpu-batch-012-005$(touch PWNED)",
                                  "slurm-cpu-batch-012-005\n$(touch PWNED)`touch PWNED`"])
def test_a_slurmd_pod_named_as_no_api_server_names_one_is_never_evicted(name: str, tmp_path: Path,
                                                                        programs: Path) -> None:
    """A snapshot's loader refuses such a name, but Pods read otherwise may hold one: a quote, a substitution or a
    line break. Its eviction is words (in the Eviction's here-string or its path they would reach the shell), the
    other drained Pod's is still asked for first, and the lines pasted into bash as a terminal prints them run only
    that one's question and eviction."""
    pods = [{"metadata": {"name": n, "namespace": "tenant-slurm"}, "spec": {"nodeName": "g10689d"}}
            for n in (name, "slurm-cpu-batch-012-006")]
    fix = evict_drained(pods)
    said, question = fix.split("\n")
    assert said.startswith("(no command for Pod tenant-slurm/") and said.endswith(": not a name the API server accepts)")
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "slurm-cpu-batch-012-006",
                                                                         "namespace": "tenant-slurm"}}
    assert question == (f"{asked('tenant-slurm/slurm-cpu-batch-012-006', 'slurm-cpu-batch-012-006', 'g10689d')}"
                        "kubectl create --raw /api/v1/namespaces/tenant-slurm/pods/slurm-cpu-batch-012-006/eviction "
                        f"-f - <<< '{json.dumps(body, separators=(',', ':'))}'")
    block = [text for _, text in fix_lines(fix, 80)]
    assert ran(tmp_path, programs, [block]) == [meant(fix)] and len(meant(fix)) == 4
