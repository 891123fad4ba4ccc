"""How the NodeSet table is laid out beyond the house rules (tests/test_house.py measures sizes and finds each row's
file): the module named after a row holds that row's condition and its Rule, the package holds nothing but rows and
what several rows share, and the rows read a NodeSet's status columns as typed attributes."""

from __future__ import annotations

import importlib
from operator import attrgetter

import pytest

from sunkcheck import snapshot
from sunkcheck.analyze.binding import Binding, analyze
from sunkcheck.analyze.cluster import Cluster
from sunkcheck.model import NodeSetColumns
from sunkcheck.symptoms import Rule, nodeset
from tests.conftest import FIXTURES, ROOT

PACKAGE = ROOT / "sunkcheck" / "symptoms" / "nodeset"


@pytest.mark.parametrize("rule", nodeset.RULES, ids=lambda r: r.id)
def test_a_rows_module_holds_its_condition_and_its_rule(rule: Rule[Binding]) -> None:
    module = importlib.import_module(f"{nodeset.__name__}.{rule.id.replace('-', '_')}")
    assert module.RULE is rule and rule.when.__module__ == module.__name__


def test_the_package_holds_rows_and_what_rows_share() -> None:
    rows = {r.id.replace("-", "_") for r in nodeset.RULES}
    stems = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert {s for s in stems if not s.startswith("_")} == rows


def test_the_rows_read_the_status_columns_as_attributes() -> None:
    """A misspelt count is an AttributeError at once (and a type error), never a KeyError on some cluster."""
    cluster = Cluster.of(snapshot.load(FIXTURES / "two-problems"))
    nodesets = cluster.snapshot.nodesets
    assert nodesets
    b = analyze(cluster, nodesets[0])
    assert isinstance(b.counts, NodeSetColumns) and b.counts.desired == 3
    with pytest.raises(AttributeError):
        attrgetter("desird")(b.counts)
