"""The house rules, measured on the real files: modules a reader can hold in mind, row logic in small functions,
and one module per troubleshooting row, so that adding a row is one new file (plus its fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class, Function

from sunkcheck.symptoms import daemonset, nodeset

PACKAGE = Path(__file__).resolve().parent.parent / "sunkcheck"
MAX_MODULE_LINES = 600
MAX_COMPLEXITY = 20  # radon's rank C ends here; D and worse are what the split removes
MAX_FUNCTION_LINES = 60
ROW_LOGIC = ("symptoms", "analyze")  # the packages whose functions decide what is reported


def functions(blocks: list) -> Iterator[Function]:
    """Every function radon measured, methods and closures included."""
    for block in blocks:
        if isinstance(block, Class):
            yield from functions([*block.methods, *block.inner_classes])
        else:
            yield block
            yield from functions(block.closures)


def test_no_module_is_over_600_lines() -> None:
    long = {str(p.relative_to(PACKAGE.parent)): n for p in sorted(PACKAGE.rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_row_logic_is_in_small_simple_functions() -> None:
    too_big = []
    for package in ROW_LOGIC:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            for f in functions(cc_visit(path.read_text())):
                lines = f.endline - f.lineno + 1
                if f.complexity > MAX_COMPLEXITY or lines > MAX_FUNCTION_LINES:
                    too_big.append(f"{path.relative_to(PACKAGE.parent)}:{f.lineno} {f.fullname}: "
                                   f"complexity {f.complexity}, {lines} lines")
    assert too_big == [], (f"over complexity {MAX_COMPLEXITY} or {MAX_FUNCTION_LINES} lines:\n" + "\n".join(too_big))


def row_modules(kind: str, row_id: str) -> list[Path]:
    """Where a row may live: its table's package, the module named after its id, or after the id less the kind
    the package already names (`daemonset-pod-pending` as daemonset/pod_pending.py)."""
    names = dict.fromkeys((row_id, row_id.removeprefix(f"{kind}-")))
    return [PACKAGE / "symptoms" / kind / f"{name.replace('-', '_')}.py" for name in names]


def test_every_row_has_its_own_module() -> None:
    missing = []
    for kind, rules in (("nodeset", nodeset.RULES), ("daemonset", daemonset.RULES)):
        for rule in rules:
            paths = row_modules(kind, rule.id)
            if not any(p.is_file() for p in paths):
                missing.append(f"{rule.id}: none of " + ", ".join(str(p.relative_to(PACKAGE.parent)) for p in paths))
    assert missing == [], "rows without a module of their own:\n" + "\n".join(missing)


def test_the_measures_see_what_they_measure() -> None:
    """The walk reaches methods and the closures inside them, and radon counts as the limit assumes: a function
    with 20 branches has complexity 21, over it."""
    code = ("class A:\n    def m(self):\n        def inner(x):\n"
            + "".join(f"            if x == {i}:\n                return {i}\n" for i in range(20))
            + "        return inner\n")
    found = {f.name: f.complexity for f in functions(cc_visit(code))}
    assert found == {"m": 1, "inner": 21}
