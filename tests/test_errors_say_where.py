"""Errors that say where and what (issue 27 section 9): what could not be read and why, what could not be
judged, each error once, and the next step to take."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import FIXTURES, run


@pytest.mark.parametrize("nodesets", [None, {"apiVersion": "v1", "kind": "List", "items": []}],
                         ids=["missing", "empty list"])
def test_a_cluster_without_nodesets_suggests_its_daemonsets(tmp_path, nodesets):
    """ds-healthy's cluster runs the DaemonSet dcgm-exporter and no NodeSet."""
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "ds-healthy", snap)
    (snap / "nodesets.json").unlink(missing_ok=True)
    if nodesets is not None:
        (snap / "nodesets.json").write_text(json.dumps(nodesets))
    r = run("check", "--snapshot", str(snap))
    assert r.code == 3
    assert r.err.count("\n") == 1 and "pass --daemonset dcgm-exporter" in r.err, r.err
