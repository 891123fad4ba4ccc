"""What one row derives and another row asks for is made once a diagnosis (`Binding.once`): misscheduled asks which
Nodes pool-nodes-unusable finds drifted, and both the row's fix and misscheduled read the labels each Node lost."""

from __future__ import annotations

from collections import Counter

import pytest

from sunkcheck import objects as o
from sunkcheck.analyze.binding import Binding
from sunkcheck.model import Reason
from sunkcheck.symptoms.nodeset import pool_nodes_unusable as unusable
from tests.conftest import FIXTURES, expected, run

# the fixtures where both rows are reported, and what is asked of their Nodes: each Node's drift, and the
# expressions the labels of a Node that lost one fail
BOTH = {"hand-taint-beside-repair": {"drift"}, "misscheduled-label-changed": {"drift", "failed"},
        "misscheduled-lock-taint": {"drift"}, "pool-taint-value-edited": {"drift"}}


@pytest.mark.parametrize("case", sorted(BOTH))
def test_each_nodes_drift_and_lost_labels_are_judged_once_though_two_rows_ask(case: str,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, Binding, str]] = []  # the Bindings held, so that no two share an id
    drift, failed = unusable._drift, unusable._failed

    def counted_drift(b: Binding, node: dict) -> list[Reason]:
        asked.append(("drift", b, o.name(node)))
        return drift(b, node)

    def counted_failed(b: Binding, labels: dict) -> list[dict]:
        asked.append(("failed", b, repr(sorted(labels.items()))))
        return failed(b, labels)

    monkeypatch.setattr(unusable, "_drift", counted_drift)
    monkeypatch.setattr(unusable, "_failed", counted_failed)
    report = run("check", "--snapshot", str(FIXTURES / case), "-o", "json", *expected(case)["args"]).json()
    assert {"pool-nodes-unusable", "misscheduled"} <= {s["id"] for r in report["results"] for s in r["symptoms"]}
    counts = Counter((what, id(b), node) for what, b, node in asked)
    assert {what for what, _, _ in counts} == BOTH[case]
    assert max(counts.values()) == 1, [k for k, n in counts.items() if n > 1]
