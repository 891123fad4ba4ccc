"""Where the NodeSet rows live and how big their parts may grow: one module per row, named after its id, holding its
condition and its Rule; no function in sunkcheck/symptoms/ above radon complexity C or about 60 lines; no module there
over about 600 lines. The rows read a NodeSet's status columns as typed attributes."""

from __future__ import annotations

import ast
import importlib
from operator import attrgetter
from pathlib import Path

import pytest
from radon.complexity import cc_visit  # type: ignore[import-untyped]

from sunkcheck import snapshot
from sunkcheck.analyze.binding import Binding, analyze
from sunkcheck.analyze.cluster import Cluster
from sunkcheck.model import NodeSetColumns
from sunkcheck.symptoms import Rule, nodeset
from tests.conftest import FIXTURES, ROOT

SYMPTOMS = ROOT / "sunkcheck" / "symptoms"
MOST_COMPLEX = 20  # radon's C
MOST_LINES = 60
MOST_MODULE_LINES = 600
# The DaemonSet table's split into one module per row is its own change: until it lands, its one file is not judged.
NOT_SPLIT_YET = {SYMPTOMS / "daemonset.py"}


def sources() -> list[Path]:
    return [p for p in sorted(SYMPTOMS.rglob("*.py")) if p not in NOT_SPLIT_YET]


@pytest.mark.parametrize("rule", nodeset.RULES, ids=lambda r: r.id)
def test_each_nodeset_row_has_its_module(rule: Rule[Binding]) -> None:
    name = rule.id.replace("-", "_")
    module = importlib.import_module(f"sunkcheck.symptoms.nodeset.{name}")
    assert (SYMPTOMS / "nodeset" / f"{name}.py").is_file()
    assert module.RULE is rule and rule.when.__module__ == module.__name__


def test_every_module_of_the_package_is_a_row_or_shared_by_rows() -> None:
    rows = {r.id.replace("-", "_") for r in nodeset.RULES}
    stems = {p.stem for p in (SYMPTOMS / "nodeset").glob("*.py")} - {"__init__"}
    assert {s for s in stems if not s.startswith("_")} == rows


def too_complex(source: str) -> list[tuple[str, int]]:
    return [(f.name, f.complexity) for f in cc_visit(source) if f.complexity > MOST_COMPLEX]


def too_long(source: str) -> list[tuple[str, int]]:
    return [(n.name, size) for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and (size := (n.end_lineno or n.lineno) - n.lineno + 1) > MOST_LINES]


def test_no_function_in_symptoms_is_above_complexity_c() -> None:
    assert [(p.relative_to(ROOT).as_posix(), *found) for p in sources() for found in too_complex(p.read_text())] == []


def test_no_function_in_symptoms_is_longer_than_60_lines() -> None:
    assert [(p.relative_to(ROOT).as_posix(), *found) for p in sources() for found in too_long(p.read_text())] == []


def test_no_module_in_symptoms_is_over_600_lines() -> None:
    assert [p.name for p in sources() if len(p.read_text().splitlines()) > MOST_MODULE_LINES] == []


def test_the_judges_catch_a_complex_and_a_long_function() -> None:
    def branches(n: int) -> str:
        return "def f(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n" for i in range(n))

    assert too_complex(branches(MOST_COMPLEX - 1)) == [] and too_complex(branches(MOST_COMPLEX)) == [("f", MOST_COMPLEX + 1)]
    lines = "".join(f"    x += {i}\n" for i in range(MOST_LINES - 1))
    assert too_long(f"def f(x):\n{lines}") == [] and too_long(f"def f(x):\n{lines}    return x\n") == [("f", MOST_LINES + 1)]


def test_the_rows_read_the_status_columns_as_attributes() -> None:
    """A misspelt count is an AttributeError at once (and a type error), never a KeyError on some cluster."""
    cluster = Cluster.of(snapshot.load(FIXTURES / "two-problems"))
    nodesets = cluster.snapshot.nodesets
    assert nodesets
    b = analyze(cluster, nodesets[0])
    assert isinstance(b.counts, NodeSetColumns) and b.counts.desired == 3
    with pytest.raises(AttributeError):
        attrgetter("desird")(b.counts)
