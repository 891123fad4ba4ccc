"""A server URL may carry a credential (`user:password@`, a query's `?access_token=`): shown nowhere, and its query and
fragment sent nowhere, as kubectl sends neither."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sunkcheck.text import shown_server
from tests.conftest import FIXTURES, TOKEN, Run, run
from tests.kubeapi import kubeconfig


def test_a_server_s_query_and_fragment_never_reach_a_message_a_snapshot_or_json(
        serve: Callable[..., Any], cert: tuple[str, str], tmp_path: Path) -> None:
    """A kubeconfig server with a token in its query and fragment: check's JSON, its -v lines, its errors and a
    recorded snapshot's meta.json show the server without them (they showed `?access_token=...`), and the cluster is
    read as kubectl reads it (the query sent with every request made each one miss)."""
    api = serve("two-problems")
    kubeconfig(api.kubeconfig, api.url + "/?access_token=SECRET-tok#SECRET-frag", token=TOKEN, ca=cert[0])
    r = run("check", "-o", "json", "-v", "6")
    recorded = run("snapshot", str(tmp_path / "recorded"))
    assert r.code == 1 and r.json()["sources"][0]["server"] == api.url
    assert "SECRET" not in r.out + r.err + recorded.out + recorded.err
    assert "SECRET" not in "".join(p.read_text() for p in (tmp_path / "recorded").iterdir())
    assert json.loads((tmp_path / "recorded" / "meta.json").read_text())["server"] == api.url


def replayed_from(tmp_path: Path, server: str) -> tuple[Run, Run]:
    """`check --snapshot` of healthy-pool-name, its meta.json saying it was read from `server`: text, then JSON."""
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "healthy-pool-name", snap)
    (snap / "meta.json").write_text(json.dumps({"server": server, "context": "c", "time": "2026-01-01T00:00:00Z"}))
    return run("check", "--snapshot", str(snap)), run("check", "--snapshot", str(snap), "-o", "json")


@pytest.mark.parametrize("server, shown", [("https://h.example:6443/?access_token=SECRET-tok#SECRET-f", "https://h.example:6443/"),
                                           ("https://u:SECRET-pw@h.example:6443/k8s#SECRET-f?x", "https://h.example:6443/k8s")])
def test_a_replayed_meta_json_server_shows_no_query_or_fragment(tmp_path: Path, server: str, shown: str) -> None:
    text, doc = replayed_from(tmp_path, server)
    assert f"API server {shown}" in text.out and "SECRET" not in text.out + text.err
    assert doc.json()["sources"][0]["server"] == shown == shown_server(server) and "SECRET" not in doc.out
