"""Imports point one way: every sunkcheck import (lazy and TYPE_CHECKING ones too) goes to its own layer or
to one its layer may use, so an upward import — a cycle waiting to happen — fails here, naming the line."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "sunkcheck"

# Module (or package) -> layer; the longest matching prefix wins.
LAYER_OF = {
    "cli": "cli", "__main__": "cli", "verbose": "cli", "options": "cli", "follow": "cli",
    "render": "render",
    "serve": "serve",
    "runner": "runner", "converge": "runner", "textfile": "runner",
    "source": "source", "plan": "source",
    "pipeline": "pipeline", "values.lint": "pipeline",
    "symptoms": "symptoms",
    "analyze": "analyze",
    "values": "values",
    "collect": "collect",
    "snapshot": "snapshot", "shapes": "snapshot",
    "objects": "base", "model": "base", "slurm": "base", "target": "base", "duration": "base", "": "base",
}
# Layer -> the other layers it may import: cli -> runner -> pipeline -> symptoms -> analyze -> base, with
# collect and snapshot below the runner and beside the analysis, never above it.
ALLOWED = {
    "cli": {"render", "serve", "runner", "source", "pipeline", "symptoms", "values", "collect", "snapshot", "base"},
    # serve is a runner that never ends: it publishes the renderers' output itself (/metrics, /api/v1/check)
    # and `check --wait` on watches: converged as the polling wait judges it (converge, of the runner layer)
    "serve": {"render", "source", "pipeline", "collect", "snapshot", "runner", "base"},
    "render": {"symptoms", "collect", "base"},  # `rules` lists the table, `rbac` the verbs the collector uses
    "runner": {"source", "pipeline", "analyze", "values", "snapshot", "base"},
    "source": {"collect", "snapshot", "symptoms", "analyze", "base"},  # the rows' declared reads plan the collection
    "pipeline": {"symptoms", "analyze", "values", "snapshot", "base"},
    "symptoms": {"analyze", "values", "base"},
    "analyze": {"snapshot", "base"},
    "values": {"snapshot", "base"},
    "collect": {"snapshot", "base"},
    "snapshot": {"base"},
    "base": set(),
}
# Known exceptions, each with why and what ends it; an exception no import needs any more fails too.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def layer(module: str) -> str:
    name = module.removeprefix("sunkcheck").removeprefix(".")
    parts = name.split(".")
    for i in range(len(parts), -1, -1):
        if (prefix := ".".join(parts[:i])) in LAYER_OF:
            return LAYER_OF[prefix]
    raise AssertionError(f"{module}: no layer in LAYER_OF")


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]):
    """(line, module) for every sunkcheck module `path` imports, wherever the import statement sits."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "sunkcheck")
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            if (node.module or "").split(".")[0] != "sunkcheck":
                continue
            for alias in node.names:  # `from sunkcheck.analyze import events` imports a module
                sub = f"{node.module}.{alias.name}"
                yield node.lineno, sub if sub in known else node.module


def violations(files: dict[str, Path]) -> tuple[list[str], set]:
    """The imports against the layering, and the exceptions some import needs."""
    wrong, used = [], set()
    for module, path in files.items():
        for line, target in imports(path, files):
            here, there = layer(module), layer(target)
            if here == there or there in ALLOWED[here]:
                continue
            if (here, there) in EXCEPTIONS:
                used.add((here, there))
                continue
            wrong.append(f"{path.name}:{line}: {module} ({here}) imports {target} ({there})")
    return wrong, used


def test_every_import_points_down():
    wrong, used = violations(modules())
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)
    assert used == set(EXCEPTIONS), f"exceptions no import needs any more: {set(EXCEPTIONS) - used}"


def test_every_module_has_a_layer_and_every_layer_a_rule():
    assert {layer(m) for m in modules()} <= set(ALLOWED)
    assert all(allowed <= set(ALLOWED) for allowed in ALLOWED.values())


def test_an_upward_import_is_caught(tmp_path):
    """The check itself: snapshot importing the analysis (the cycle this layering removed) is refused,
    even from inside a function."""
    bad = tmp_path / "snapshot.py"
    bad.write_text("def load():\n    from sunkcheck.analyze import cluster\n")
    wrong, _ = violations(modules() | {"sunkcheck.snapshot": bad})
    assert wrong == ["snapshot.py:2: sunkcheck.snapshot (snapshot) imports sunkcheck.analyze.cluster (analyze)"]
