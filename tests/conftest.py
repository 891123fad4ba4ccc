"""Shared helpers: run the CLI in-process exactly as the console script does, and find fixture cases."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from sunkcheck.cli import main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").exists())


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


def run(*args: str) -> Run:
    """`sunkcheck ARGS` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit) as exited:
        main(list(args))
    return Run(exited.value.code, out.getvalue(), err.getvalue())


def expected(case: str) -> dict:
    return json.loads((FIXTURES / case / "expected.json").read_text())
