"""Where the answer came from: source (live, or the snapshot and when it was recorded), context and API
server, time of the check and version, in the human header and in JSON; a --values what-if says so."""

from __future__ import annotations

import datetime
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from sunkcheck import __version__
from tests.conftest import FIXTURES, run
from tests.kubeapi import FakeApi


def recent(stamp: str) -> bool:
    when = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return abs((datetime.datetime.now(datetime.UTC) - when).total_seconds()) < 120


def test_live_json_names_context_server_time_and_version(serve: Callable[..., FakeApi]) -> None:
    api = serve("two-problems")
    doc = run("check", "-o", "json").json()
    assert doc["schema"] == "sunkcheck/check/v1" and doc["sunkcheck"] == __version__ and recent(doc["checked_at"])
    assert doc["sources"] == [{"type": "live", "context": "test", "server": api.url}]
    assert doc["prediction"] is False
    assert "null" not in json.dumps(doc["sources"])


def test_live_header_names_context_and_server(serve: Callable[..., FakeApi]) -> None:
    api = serve("two-problems")
    for fmt in ("plain", "table"):
        lines = run("check", "-o", fmt).out.splitlines()
        source = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", " ".join(lines[:lines.index("")])).split())  # it wraps
        assert f"live, context test, API server {api.url}" in source, fmt
        assert f"sunkcheck {__version__}" in source and "checked 20" in source


def test_snapshot_source_with_its_recording_time(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "two-problems", snap)
    (snap / "meta.json").write_text(json.dumps({"time": "2026-11-30T21:04:00+00:00", "context": "prod-east",
                                                "server": "https://api.prod:6443", "sunkcheck": "0.1"}))
    doc = run("check", "--snapshot", str(snap), "-o", "json").json()
    assert doc["sources"] == [{"type": "snapshot", "path": str(snap), "recorded": "2026-11-30T21:04:00+00:00",
                               "context": "prod-east", "server": "https://api.prod:6443"}]
    line = run("check", "--snapshot", str(snap), "-o", "plain").out.splitlines()[1]
    assert f"snapshot {snap} recorded 2026-11-30T21:04:00+00:00 from context prod-east" in line


def test_snapshot_without_meta_says_so() -> None:
    doc = run("check", "--snapshot", str(FIXTURES / "two-problems"), "-o", "json").json()
    assert doc["sources"] == [{"type": "snapshot", "path": str(FIXTURES / "two-problems")}]
    line = run("check", "--snapshot", str(FIXTURES / "two-problems"), "-o", "plain").out.splitlines()[1]
    assert "(no meta.json: recording time unknown)" in line


def test_values_what_if_says_it_is_a_prediction(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("compute:\n  nodes:\n    cpu-batch:\n      enabled: true\n      gresGpu: null\n")
    args = ("check", "--snapshot", str(FIXTURES / "healthy-pool-name"), "--values", str(values))
    r = run(*args, "-o", "json")
    assert r.json()["prediction"] is True, r.err
    line = run(*args, "-o", "plain").out.splitlines()[1]
    assert line.startswith("PREDICTION") and str(values) in line


def test_nagios_long_output_says_where_it_came_from() -> None:
    out = run("check", "--snapshot", str(FIXTURES / "two-problems"), "-o", "nagios").out.splitlines()
    assert out[0].startswith("SUNKCHECK WARNING - ") and out[1].startswith(f"source: snapshot {FIXTURES / 'two-problems'}")


def test_a_meta_json_without_a_time_is_said_to_leave_the_time_unknown_not_to_be_missing(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "two-problems", tmp_path / "s")
    (tmp_path / "s" / "meta.json").write_text('{"context": "prod"}')
    line = run("check", "--snapshot", str(tmp_path / "s"), "-o", "plain").out.splitlines()[1]
    assert f"snapshot {tmp_path / 's'} (recording time unknown)" in line and "no meta.json" not in line, line
    doc = run("check", "--snapshot", str(tmp_path / "s"), "-o", "json").json()
    assert doc["sources"] == [{"type": "snapshot", "context": "prod", "path": str(tmp_path / "s")}]


@pytest.mark.parametrize("nodesets", [5, ["tenant-slurm", {"x": 1}], {"tenant-slurm": "*"}, True])
def test_a_meta_json_whose_nodesets_is_not_text_is_refused_in_one_line(tmp_path: Path, nodesets: object) -> None:
    """Before: replayed silently. `nodesets` says which NodeSets a recording read (`*`: every one), which decides
    whether its fixes say others were not read: a value sunkcheck never writes is refused like any other field's."""
    shutil.copytree(FIXTURES / "healthy-pool-name", tmp_path / "s")
    path = tmp_path / "s" / "meta.json"
    path.write_text(json.dumps({"nodesets": nodesets}))
    r = run("check", "--snapshot", str(tmp_path / "s"))
    assert (r.code, r.out, r.err) == (3, "", f"sunkcheck: error: {path}: nodesets: not the type sunkcheck writes\n")
