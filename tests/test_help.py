"""Help that helps: typos list what exists nearest first, distinct --snapshot messages, flag misuse,
durations with units, --wait's early return explained, explain -o, shell completion."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, Clock, run, squatter_ends
from tests.kubeapi import FakeApi
from tests.test_unattended import two_clusters

SEVERAL = str(FIXTURES / "several-nodesets")


def listed(err: str) -> list[str]:
    """The names in the parenthesised list of a one-line error."""
    return err.split("there: ")[1].split(")")[0].split(", ")


def test_nodeset_typo_lists_nearest_first_replay() -> None:
    r = run("check", "--snapshot", SEVERAL, "--nodeset", "slurm-gpu-spar")
    assert r.code == 3 and listed(r.err)[0] == "slurm-gpu-spare"


def test_nodeset_typo_lists_nearest_first_live(serve: Callable[..., FakeApi]) -> None:
    serve("several-nodesets")
    r = run("check", "--nodeset", "slurm-cpu-btach")
    assert r.code == 3 and r.err.startswith("sunkcheck: error: NodeSet slurm-cpu-btach not found")
    assert listed(r.err)[0] == "slurm-cpu-batch", r.err


def test_namespace_typo_lists_namespaces_replay_and_live(serve: Callable[..., FakeApi]) -> None:
    r = run("check", "--snapshot", SEVERAL, "-n", "tenant-slrum")
    assert r.code == 3 and "namespaces with NodeSets there: tenant-slurm" in r.err, r.err
    serve("several-nodesets")
    live = run("check", "-n", "tenant-slrum")
    assert live.code == 3 and "namespaces with NodeSets there: tenant-slurm" in live.err, live.err


def test_daemonset_typo_lists_nearest_first() -> None:
    r = run("check", "--snapshot", str(FIXTURES / "ds-healthy"), "--daemonset", "dcgm-exporte", "-n", "monitoring")
    assert r.code == 3 and listed(r.err)[0] == "dcgm-exporter", r.err


def test_node_typo_lists_nearest_first_replay_and_live(serve: Callable[..., FakeApi]) -> None:
    """explain --node with a Node that does not exist: one line, exit 3, the Nodes nearest first (the pool
    has 12: ten named, two counted), live as in the replay but for where it was read."""
    replay = run("explain", "--snapshot", str(FIXTURES / "healthy-pool-name"), "--node", "g18d51")
    api = serve("healthy-pool-name")
    live = run("explain", "--node", "g18d51")
    where = f" on context test ({api.url})"
    assert where in live.err
    assert (replay.code, replay.out, replay.err) == (live.code, live.out, live.err.replace(where, "", 1))
    assert replay.code == 3 and replay.out == "" and replay.err.count("\n") == 1
    head, _, names = replay.err.rstrip("\n").partition(" (Nodes, nearest first: ")
    assert head == "sunkcheck: error: --node g18d51: no such Node" and names.endswith(" and 2 more)")
    named = names.removesuffix(" and 2 more)").split(", ")
    nodes = {n["metadata"]["name"] for n in json.loads((FIXTURES / "healthy-pool-name" / "nodes.json").read_text())["items"]}
    assert named[0] == "g18d510" and len(set(named)) == 10 and set(named) <= nodes


def test_ignore_typo_suggests_the_nearest_id() -> None:
    r = run("check", "--snapshot", SEVERAL, "--ignore", "replica-cap")
    assert r.code == 3 and "did you mean replicas-cap" in r.err


def test_context_typo_lists_contexts_nearest_first(tmp_path: Path, cert: tuple[str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    config, apis = two_clusters(tmp_path, cert, "healthy-pool-name", "healthy-pool-name")
    monkeypatch.setenv("KUBECONFIG", str(config))
    try:
        r = run("check", "--context", "cluster-l", "-o", "json")
    finally:
        for api in apis:
            api.__exit__(None, None, None)
    assert r.code == 3 and "context cluster-l not in the kubeconfig" in r.err, r.err
    assert listed(r.err)[:2] == ["cluster-0", "cluster-1"] or listed(r.err)[:2] == ["cluster-1", "cluster-0"]


def test_snapshot_missing_file_and_empty_directory_differ(tmp_path: Path) -> None:
    (tmp_path / "file.json").write_text("{}")
    (tmp_path / "empty").mkdir()
    missing = run("check", "--snapshot", str(tmp_path / "nope")).err
    a_file = run("check", "--snapshot", str(tmp_path / "file.json")).err
    empty = run("check", "--snapshot", str(tmp_path / "empty")).err
    assert "does not exist" in missing
    assert "is a file" in a_file and "directory" in a_file
    assert "is empty" in empty
    assert len({missing, a_file, empty}) == 3


def test_snapshot_of_only_daemonsets_suggests_daemonset(tmp_path: Path) -> None:
    d = tmp_path / "ds"
    shutil.copytree(FIXTURES / "ds-healthy", d)
    (d / "nodesets.json").unlink(missing_ok=True)
    r = run("check", "--snapshot", str(d))
    assert r.code == 3 and "--daemonset dcgm-exporter" in r.err, r.err


def test_interval_without_wait_is_an_error() -> None:
    r = run("check", "--snapshot", SEVERAL, "--interval", "5s")
    assert r.code == 3 and "--interval" in r.err and "--wait" in r.err


def test_wait_timeout_prints_units(serve: Callable[..., FakeApi], clock: Clock) -> None:
    squatter_ends(serve("two-problems"))
    r = run("check", "--wait", "1", "--interval", "300ms", "-o", "json")
    assert "timed out after 1s:" in r.err, r.err


def test_wait_says_when_a_replicas_cap_makes_waiting_pointless(serve: Callable[..., FakeApi], clock: Clock) -> None:
    serve("replicas-cap")
    r = run("check", "--wait", "30s", "--interval", "200ms", "-o", "json")
    assert r.code == 1
    assert "replicas" in r.err and "first read" in r.err, r.err


def test_explain_output_accepts_only_what_it_documents() -> None:
    r = run("explain", "--snapshot", SEVERAL, "--nodeset", "slurm-cpu-batch", "-o", "nagios")
    assert r.code == 3 and r.err.startswith("sunkcheck: error: ")


def sunkcheck(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sunkcheck", *args], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})), check=False)


# the shell named, not detected from the parent process (a test runner may have none: cron, CI, setsid)
NAMED_SHELL = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}


def test_show_completion_exits_0() -> None:
    p = sunkcheck("--show-completion", "bash", env=NAMED_SHELL)
    assert p.returncode == 0 and "_sunkcheck_completion" in p.stdout


def test_install_completion_exits_0(tmp_path: Path) -> None:
    p = sunkcheck("--install-completion", "bash", env={"HOME": str(tmp_path)} | NAMED_SHELL)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / ".bashrc").exists()


def complete(words: str) -> list[str]:
    p = sunkcheck(env={"_SUNKCHECK_COMPLETE": "complete_bash", "COMP_WORDS": words,
                       "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))})
    return p.stdout.split()


def test_completion_offers_ids_contexts_and_snapshot_nodesets(tmp_path: Path) -> None:
    assert "replicas-cap" in complete("sunkcheck check --ignore repl")
    assert complete(f"sunkcheck check --snapshot {SEVERAL} --nodeset slurm-g") == ["slurm-gpu-h100", "slurm-gpu-spare"]
    config = tmp_path / "kc"
    config.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "prod-a",
                                  "clusters": [{"name": "c", "cluster": {"server": "https://x"}}],
                                  "users": [{"name": "u", "user": {}}],
                                  "contexts": [{"name": n, "context": {"cluster": "c", "user": "u"}}
                                               for n in ("prod-a", "prod-b", "staging")]}))
    assert complete(f"sunkcheck check --kubeconfig {config} --context prod") == ["prod-a", "prod-b"]


def test_nearest_first_with_nothing_to_suggest() -> None:
    from sunkcheck.suggest import nearest_first

    assert nearest_first("x", []) == []
    assert nearest_first("slurm-cpu", ["zeta", "slurm-gpu", "alpha"]) == ["slurm-gpu", "alpha", "zeta"]
    assert nearest_first("slurm-cpu-b", ["slurm-cpu-c", "slurm-cpu-a", "slurm-cpu-batch"]) == [
        "slurm-cpu-a", "slurm-cpu-c", "slurm-cpu-batch"]  # as near: alphabetically
