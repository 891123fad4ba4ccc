"""The tests that start real daemons (Slurm, sshd) need root: as another user they are skipped with one line
saying why, except in CI (CI=true), where every test must run and a missing daemon fails."""

from __future__ import annotations

import os

import pytest

from tests import slurmcluster
from tests.slurmcluster import Slurm, Sshd


def starts(tmp_path):
    return [lambda: Slurm(tmp_path / "slurm", ["n1"], "p"), lambda: Sshd(tmp_path / "sshd", [])]


def test_as_another_user_they_are_skipped_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for start, daemon in zip(starts(tmp_path), ("Slurm", "sshd"), strict=True):
        with pytest.raises(pytest.skip.Exception) as skipped:
            start()
        reason = str(skipped.value)
        assert reason.startswith(f"{daemon} needs root (") and reason.endswith("run the tests as root")
        assert "\n" not in reason


@pytest.mark.parametrize("ci", ["true", "TRUE"])
def test_in_ci_another_user_fails_instead(tmp_path, monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for start in starts(tmp_path):
        with pytest.raises(pytest.fail.Exception, match=r"needs root .*CI=true runs every test"):
            start()


@pytest.mark.parametrize("ci, outcome", [("", pytest.skip.Exception), ("true", pytest.fail.Exception)])
def test_a_missing_daemon_is_skipped_but_fails_in_ci(tmp_path, monkeypatch, ci, outcome):
    monkeypatch.setenv("CI", ci)
    monkeypatch.setattr(slurmcluster, "SLURM_BIN", tmp_path / "nowhere")
    monkeypatch.setattr(slurmcluster, "SSHD", tmp_path / "nowhere" / "sshd")
    for start, program in zip(starts(tmp_path), ("slurmctld", "sshd"), strict=True):
        with pytest.raises(outcome, match=f"nowhere/{program}.* not installed"):
            start()
