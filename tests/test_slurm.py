"""Slurm's view end to end: real OpenSSH servers and real Slurm daemons on loopback, the Kubernetes side
from the test API server. Daemons are torn down by the fixtures whatever the tests do."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sunkcheck import snapshot
from tests.conftest import FIXTURES, Serve, run
from tests.kubeapi import Mute
from tests.slurmcluster import Slurm, Sshd, free_ports, keypair

CASE = "healthy-pool-name"
PODS = sorted(p["metadata"]["name"] for p in snapshot.load(FIXTURES / CASE).pods or ()
              if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/instance") == "slurm-cpu-batch")
STALE = "stale-node-001"  # in partition cpu-all only, its slurmd never started
Lab = dict[str, Any]  # the lab fixture: its Slurm, sshd, client key and directory


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One Slurm cluster (partitions cpu-batch = the NodeSet's Pods, cpu-all = those + a stale node) and an
    sshd whose sessions see it; plus the client's key."""
    root = tmp_path_factory.mktemp("slurm")
    key = keypair(root / "id_client")
    with Slurm(root / "cluster", [*PODS, STALE], "cpu-all", started=PODS,
               extra_partitions={"cpu-batch": PODS}) as slurm:
        with Sshd(root / "sshd", [key], env={"SLURM_CONF": str(slurm.conf)}) as sshd:
            yield {"slurm": slurm, "sshd": sshd, "key": key, "root": root}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lab: Lab) -> Path:
    """A HOME whose ~/.ssh/known_hosts trusts the login node; no agent."""
    ssh = tmp_path / "home" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "known_hosts").write_text(lab["sshd"].known_hosts_line())
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return ssh


def login(lab: Lab) -> list[str]:
    return ["--login", f"root@127.0.0.1:{lab['sshd'].port}", "--ssh-key", str(lab["key"])]


def check(*args: str) -> tuple[int | str | None, dict]:
    r = run("check", "-o", "json", *args)
    assert r.out, r.err
    return r.code, r.json()


def result(doc: dict) -> tuple[dict, dict]:
    res = doc["results"][0]
    return {s["name"]: s for s in res["steps"]}, {s["id"]: s for s in res["symptoms"]}


def assert_sinfo_ok(code: int | str | None, doc: dict, lab: Lab, *logs: Path) -> None:
    """Exit 0 with Slurm's view read; else the sinfo step, the run's errors and the daemons' log tails, so
    that a failure that happens only under load says which side was late."""
    step = result(doc)[0]["sinfo"]
    if code == 0 and step["status"] == "ok":
        return
    tails = {str(p): p.read_text(errors="replace")[-1500:] for p in
             (*logs, lab["root"] / "sshd" / "sshd.log", lab["root"] / "cluster" / "log" / "slurmctld.log") if p.exists()}
    raise AssertionError(f"exit {code}, sinfo step {step}, errors {doc['errors']}, logs {tails}")


def test_healthy_match(serve: Serve, home: Path, lab: Lab) -> None:
    serve(CASE)
    code, doc = check(*login(lab))
    steps, symptoms = result(doc)
    assert code == 0 and symptoms == {}
    assert steps["sinfo"]["status"] == "ok"
    assert steps["sinfo"]["summary"].startswith(f"{len(PODS)} Slurm nodes named like the Pods of slurm-cpu-batch: "
                                                f"{len(PODS)} usable")
    code, doc = check(*login(lab), "--partition", "cpu-batch")
    assert code == 0 and result(doc)[0]["sinfo"]["counts"]["slurm_nodes"] == len(PODS)


def test_drained_and_down_nodes_with_reasons(serve: Serve, home: Path, lab: Lab) -> None:
    serve(CASE)
    slurm = lab["slurm"]
    slurm.scontrol("update", f"NodeName={PODS[0]}", "State=DRAIN", "Reason=gpu xid 79")
    slurm.scontrol("update", f"NodeName={PODS[1]}", "State=DOWN", "Reason=bad dimm")
    try:
        code, doc = check(*login(lab))
    finally:
        slurm.scontrol("update", f"NodeName={PODS[0]},{PODS[1]}", "State=RESUME")
    steps, symptoms = result(doc)
    assert code == 1 and set(symptoms) == {"slurmd-not-ready"}
    evidence = "\n".join(symptoms["slurmd-not-ready"]["evidence"])
    assert f"Slurm node {PODS[0]} (Node " in evidence and "drain: gpu xid 79" in evidence
    assert f"Slurm node {PODS[1]} (Node " in evidence and "down: bad dimm" in evidence
    assert steps["pods"]["status"] == "warning"


def test_count_mismatch_and_stale_node(serve: Serve, home: Path, lab: Lab) -> None:
    serve(CASE)
    code, doc = check(*login(lab), "--partition", "cpu-all")
    symptoms = result(doc)[1]
    assert code == 1 and set(symptoms) == {"slurm-node-count-mismatch", "slurmd-not-ready"}
    evidence = "\n".join(symptoms["slurm-node-count-mismatch"]["evidence"])
    assert f"Slurm shows {len(PODS) + 1} node(s) in partition cpu-all; the NodeSet has READY {len(PODS)}" in evidence
    assert f"Slurm nodes with no slurmd Pod: {STALE}" in evidence


def test_partition_not_found(serve: Serve, home: Path, lab: Lab) -> None:
    serve(CASE)
    _code, doc = check(*login(lab), "--partition", "nosuch")
    evidence = "\n".join(result(doc)[1]["slurm-node-count-mismatch"]["evidence"])
    assert "partition nosuch lists no nodes: does it exist? (partitions seen: cpu-all, cpu-batch)" in evidence


def test_injection_in_the_partition_is_refused_before_any_connection(serve: Serve, home: Path, lab: Lab, tmp_path: Path) -> None:
    serve(CASE)
    marker = tmp_path / "pwned"
    r = run("check", *login(lab), "--partition", f"x; touch {marker}")
    assert r.code == 3 and "not a Slurm partition name" in r.err and not marker.exists()


def test_unknown_host_key_is_refused_with_its_fingerprint(serve: Serve, home: Path, lab: Lab) -> None:
    serve(CASE)
    (home / "known_hosts").write_text("")
    code, doc = check(*login(lab))
    steps = result(doc)[0]
    assert code == 3 and steps["sinfo"]["status"] == "unknown"
    assert "is not known (ssh-ed25519 SHA256:" in steps["sinfo"]["summary"]
    assert "--accept-new-host-key" in steps["sinfo"]["summary"]
    assert steps["nodeset"]["status"] == "ok"  # the Kubernetes steps still report
    assert (home / "known_hosts").read_text() == ""


def test_accept_new_records_the_key(serve: Serve, home: Path, lab: Lab) -> None:
    serve(CASE)
    (home / "known_hosts").unlink()
    code, _ = check(*login(lab), "--accept-new-host-key")
    assert code == 0
    recorded = (home / "known_hosts").read_text().split()
    assert recorded[:2] == [f"[127.0.0.1]:{lab['sshd'].port}", "ssh-ed25519"]
    assert check(*login(lab))[0] == 0  # and it is trusted from now on, without the flag


def _old_key(tmp_path: Path) -> str:
    """Another host's public key: what known_hosts held before the login node's key changed."""
    other = keypair(tmp_path / "other_host")
    return " ".join(Path(f"{other}.pub").read_text().split()[:2])


def _removes_the_old_key(summary: str, known: Path, name: str) -> None:
    """The command the refusal prints, pasted into a shell, removes `name`'s key from `known` (real OpenSSH)."""
    command = summary.partition("remove the old key with `")[2].partition("`")[0]
    assert command == f"ssh-keygen -R {shlex.quote(name)} -f {shlex.quote(str(known))}"
    assert subprocess.run(["ssh-keygen", "-F", name, "-f", str(known)], capture_output=True).returncode == 0
    subprocess.run(["sh", "-c", command], check=True, capture_output=True, timeout=30)
    assert subprocess.run(["ssh-keygen", "-F", name, "-f", str(known)], capture_output=True).returncode == 1


def test_changed_host_key_is_always_refused_and_the_printed_removal_works(serve: Serve, home: Path, lab: Lab,
        tmp_path: Path) -> None:
    serve(CASE)
    name = f"[127.0.0.1]:{lab['sshd'].port}"
    (home / "known_hosts").write_text(f"{name} {_old_key(tmp_path)}\n")
    code, doc = check(*login(lab), "--accept-new-host-key")
    summary = result(doc)[0]["sinfo"]["summary"]
    assert code == 3 and "has CHANGED" in summary
    _removes_the_old_key(summary, home / "known_hosts", name)
    assert check(*login(lab), "--accept-new-host-key")[0] == 0  # the new key is recorded and trusted


def test_the_removal_names_a_port_22_host_plainly_in_the_file_ssh_config_names(serve: Serve, home: Path, lab: Lab,
        tmp_path: Path) -> None:
    """On port 22 OpenSSH stores the bare host name (`[host]:22` finds nothing), and the key sits in the
    UserKnownHostsFile the ssh_config names, not ~/.ssh/known_hosts. The ProxyCommand reaches the real sshd."""
    serve(CASE)
    fleet = tmp_path / "fleet_known_hosts"
    fleet.write_text(f"login.example {_old_key(tmp_path)}\n")
    port = lab["sshd"].port
    proxy = (f"ssh -q -i {lab['key']} -o BatchMode=yes -o UserKnownHostsFile={home / 'known_hosts'} -p {port} "
             f"-W 127.0.0.1:{port} root@127.0.0.1")
    (home / "config").write_text(f"""Host login
    HostName login.example
    User root
    IdentityFile {lab['key']}
    UserKnownHostsFile {fleet}
    ProxyCommand {proxy}
""")
    code, doc = check("--login", "login")
    summary = result(doc)[0]["sinfo"]["summary"]
    assert code == 3 and "has CHANGED" in summary
    _removes_the_old_key(summary, fleet, "login.example")


def test_wrong_key_is_refused(serve: Serve, home: Path, lab: Lab, tmp_path: Path) -> None:
    serve(CASE)
    wrong = keypair(tmp_path / "id_wrong")
    code, doc = check("--login", f"root@127.0.0.1:{lab['sshd'].port}", "--ssh-key", str(wrong))
    assert code == 3 and "authentication failed for root@127.0.0.1" in result(doc)[0]["sinfo"]["summary"]


def test_nothing_listening(serve: Serve, home: Path, lab: Lab) -> None:
    serve(CASE)
    port = free_ports(1)[0]
    code, doc = check("--login", f"127.0.0.1:{port}", "--ssh-key", str(lab["key"]))
    assert code == 3 and f"nothing is listening on 127.0.0.1:{port}" in result(doc)[0]["sinfo"]["summary"]


def test_unresolvable_host(serve: Serve, home: Path, lab: Lab) -> None:
    serve(CASE)
    code, doc = check("--login", "login.does-not-exist.invalid", "--ssh-timeout", "3s")
    assert code == 3 and "cannot resolve host login.does-not-exist.invalid" in result(doc)[0]["sinfo"]["summary"]


def test_command_timeout(serve: Serve, home: Path, lab: Lab, tmp_path: Path) -> None:
    serve(CASE)
    with Sshd(tmp_path / "slow", [lab["key"]], extra="ForceCommand sleep 30") as slow:
        (home / "known_hosts").write_text(slow.known_hosts_line())
        started = time.monotonic()
        code, doc = check("--login", f"127.0.0.1:{slow.port}", "--ssh-key", str(lab["key"]), "--ssh-timeout", "1s")
    assert code == 3 and "did not finish within 1s (--ssh-timeout)" in result(doc)[0]["sinfo"]["summary"]
    assert time.monotonic() - started < 15


def test_proxyjump_through_a_bastion_with_ssh_config(serve: Serve, home: Path, lab: Lab, tmp_path: Path) -> None:
    serve(CASE)
    with Sshd(tmp_path / "bastion", [lab["key"]]) as bastion:
        (home / "known_hosts").write_text(lab["sshd"].known_hosts_line() + bastion.known_hosts_line())
        config = home / "config"
        config.write_text(f"""Host slurm-login
    HostName 127.0.0.1
    Port {lab['sshd'].port}
    User root
    IdentityFile {lab['key']}
    ProxyJump bastion

Host bastion
    HostName 127.0.0.1
    Port {bastion.port}
    User root
    IdentityFile {lab['key']}
""")
        code, doc = check("--login", "slurm-login")
        log = (tmp_path / "bastion" / "sshd.log").read_text()
    assert_sinfo_ok(code, doc, lab, tmp_path / "bastion" / "sshd.log")
    assert "Accepted publickey for root" in log  # the session really went through the bastion


def test_an_unknown_key_behind_a_jump_is_recorded_the_way_the_jump_goes(serve: Serve, home: Path, lab: Lab,
        tmp_path: Path) -> None:
    """ssh-keyscan would ask 127.0.0.1 directly: behind a ProxyJump the advice is ssh through that jump, which
    shows the same fingerprint before it records the key where sunkcheck then finds it."""
    serve(CASE)
    with Sshd(tmp_path / "bastion", [lab["key"]]) as bastion:
        known = tmp_path / "known_hosts"
        known.write_text(bastion.known_hosts_line())  # the bastion is known, the login node behind it is not
        config = tmp_path / "ssh_config"
        config.write_text(f"""Host slurm-login
    HostName 127.0.0.1
    Port {lab['sshd'].port}
    ProxyJump bastion

Host *
    HostName 127.0.0.1
    Port {bastion.port}
    User root
    IdentityFile {lab['key']}
    UserKnownHostsFile {known}
""")
        code, doc = check("--login", "slurm-login", "--ssh-config", str(config))
        summary = result(doc)[0]["sinfo"]["summary"]
        assert code == 3 and "ssh-keyscan" not in summary, summary
        offered = summary.split("(ssh-ed25519 ")[1].split(")")[0]
        command = summary.split("connect once through its ProxyJump with `")[1].split("`")[0]
        # OpenSSH asks whether to record the key; this askpass answers yes and keeps the question
        askpass = tmp_path / "askpass"
        askpass.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> {shlex.quote(str(tmp_path / "asked"))}\necho yes\n')
        askpass.chmod(0o755)
        env = os.environ | {"SSH_ASKPASS": str(askpass), "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"}
        ssh = subprocess.run(shlex.split(command), env=env, capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
        assert ssh.returncode == 0, ssh.stderr
        assert f"ED25519 key fingerprint is {offered}." in (tmp_path / "asked").read_text()
        code, doc = check("--login", "slurm-login", "--ssh-config", str(config))
    assert_sinfo_ok(code, doc, lab)


def test_recorded_slurm_view_replays(serve: Serve, home: Path, lab: Lab, tmp_path: Path) -> None:
    serve(CASE)
    lab["slurm"].scontrol("update", f"NodeName={PODS[2]}", "State=DRAIN", "Reason=replay me")
    try:
        live = run("check", "-o", "json", *login(lab), "--save", str(tmp_path / "snap"))
    finally:
        lab["slurm"].scontrol("update", f"NodeName={PODS[2]}", "State=RESUME")
    assert (tmp_path / "snap" / "sinfo.json").exists()
    assert json.loads((tmp_path / "snap" / "meta.json").read_text())["login"].startswith("root@127.0.0.1:")
    replay = run("check", "-o", "json", "--snapshot", str(tmp_path / "snap"))
    assert replay.verdict() == live.verdict() and replay.code == live.code == 1


def test_not_responding_node(serve: Serve, home: Path, lab: Lab) -> None:
    serve(CASE)
    slurm = lab["slurm"]
    victim = PODS[-1]
    slurm.stop_slurmd(victim)
    try:
        deadline = time.monotonic() + 90
        while "*" not in slurm.sinfo("-N", "-h", "-n", victim, "-o", "%t").stdout and time.monotonic() < deadline:
            time.sleep(1)
        _code, doc = check(*login(lab))
    finally:
        slurm.start_slurmd(victim)
    evidence = "\n".join(result(doc)[1]["slurmd-not-ready"]["evidence"])
    assert f"Slurm node {victim} (Node " in evidence and "not_responding" in evidence


def test_controller_down(serve: Serve, home: Path, lab: Lab) -> None:
    serve(CASE)
    slurm = lab["slurm"]
    slurm.stop_controller()
    try:
        code, doc = check(*login(lab))
    finally:
        slurm.start_controller(restart=True)
    steps = result(doc)[0]
    assert code == 3 and steps["sinfo"]["status"] == "unknown"
    assert "sinfo failed on root@127.0.0.1" in steps["sinfo"]["summary"]
    assert "Unable to contact slurm controller" in steps["sinfo"]["summary"]
    assert steps["nodeset"]["status"] == "ok"


def test_sinfo_missing_on_the_login_node(serve: Serve, home: Path, lab: Lab, tmp_path: Path) -> None:
    serve(CASE)
    with Sshd(tmp_path / "bare", [lab["key"]], env={"PATH": "/nonexistent"}) as bare:
        (home / "known_hosts").write_text(bare.known_hosts_line())
        code, doc = check("--login", f"127.0.0.1:{bare.port}", "--ssh-key", str(lab["key"]))
    assert code == 3 and "sinfo is not installed on 127.0.0.1" in result(doc)[0]["sinfo"]["summary"]


def test_sshd_really_ran_sinfo(lab: Lab) -> None:
    """The harness itself: sinfo through the real ssh client reaches the real controller."""
    sshd = lab["sshd"]
    known = lab["root"] / "kh"
    known.write_text(sshd.known_hosts_line())
    out = subprocess.run(["ssh", "-p", str(sshd.port), "-i", str(lab["key"]), "-o", f"UserKnownHostsFile={known}",
                          "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "root@127.0.0.1",
                          "sinfo -h -o %P"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and set(out.stdout.split()) == {"cpu-all*", "cpu-batch"}


def test_ssh_agent_is_used(serve: Serve, home: Path, lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    serve(CASE)
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        env = dict(os.environ, SSH_AUTH_SOCK=str(sock))
        subprocess.run(["ssh-add", "-q", str(lab["key"])], env=env, check=True, capture_output=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        code, doc = check("--login", f"root@127.0.0.1:{lab['sshd'].port}")  # no --ssh-key: the agent has it
    finally:
        agent.terminate()
        agent.wait()
    assert_sinfo_ok(code, doc, lab)


def test_proxycommand_from_ssh_config(serve: Serve, home: Path, lab: Lab, tmp_path: Path) -> None:
    serve(CASE)
    with Sshd(tmp_path / "bastion", [lab["key"]]) as bastion:
        known = home / "known_hosts"
        known.write_text(lab["sshd"].known_hosts_line() + bastion.known_hosts_line())
        (home / "config").write_text(f"""Host slurm-login
    HostName 127.0.0.1
    Port {lab['sshd'].port}
    User root
    IdentityFile {lab['key']}
    ProxyCommand ssh -q -i {lab['key']} -o BatchMode=yes -o UserKnownHostsFile={known} -p {bastion.port} -W %h:%p root@127.0.0.1
""")
        code, doc = check("--login", "slurm-login")
        log = (tmp_path / "bastion" / "sshd.log").read_text()
    assert_sinfo_ok(code, doc, lab, tmp_path / "bastion" / "sshd.log")
    assert "Accepted publickey for root" in log


def test_known_hosts_from_the_ssh_config(serve: Serve, home: Path, lab: Lab, tmp_path: Path) -> None:
    serve(CASE)
    (home / "known_hosts").write_text("")
    elsewhere = tmp_path / "fleet_known_hosts"
    elsewhere.write_text(lab["sshd"].known_hosts_line())
    (home / "config").write_text(f"Host login\n    HostName 127.0.0.1\n    Port {lab['sshd'].port}\n"
                                 f"    UserKnownHostsFile {elsewhere}\n    IdentityFile {lab['key']}\n")
    code, doc = check("--login", "root@login")
    assert_sinfo_ok(code, doc, lab)


def test_text_form_when_sinfo_has_no_json(serve: Serve, home: Path, lab: Lab, tmp_path: Path) -> None:
    """An older sinfo without --json: the documented text form is used, with the real Slurm behind it."""
    serve(CASE)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "sinfo"
    wrapper.write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = "--json" ] && { echo "sinfo: unrecognized option '
                       "'--json'\" >&2; exit 1; }; done\nexec /usr/bin/sinfo \"$@\"\n")
    wrapper.chmod(0o755)
    lab["slurm"].scontrol("update", f"NodeName={PODS[0]}", "State=DRAIN", "Reason=old slurm")
    try:
        with Sshd(tmp_path / "old", [lab["key"]], env={"SLURM_CONF": str(lab["slurm"].conf),
                                                        "PATH": f"{bin_dir}:/usr/bin:/bin"}) as old:
            (home / "known_hosts").write_text(old.known_hosts_line())
            r = run("check", "-o", "json", "--login", f"127.0.0.1:{old.port}", "--ssh-key", str(lab["key"]),
                    "--save", str(tmp_path / "snap"))
    finally:
        lab["slurm"].scontrol("update", f"NodeName={PODS[0]}", "State=RESUME")
    evidence = "\n".join(result(r.json())[1]["slurmd-not-ready"]["evidence"])
    assert f"Slurm node {PODS[0]} (Node " in evidence and "drain: old slurm" in evidence
    assert (tmp_path / "snap" / "sinfo.txt").exists() and not (tmp_path / "snap" / "sinfo.json").exists()


@pytest.mark.parametrize("banner", [b"", b"SSH-\x1b]0;PWNED\x07\x1b[2J\x1b[31mevil\r\n"])
def test_a_hostile_login_port_leaves_only_the_one_line_reason_on_stderr(serve: Serve, home: Path, banner: bytes,
        tmp_path: Path) -> None:
    """paramiko's transport thread logs tracebacks and the server's raw banner; neither may reach the
    terminal, and the reason itself carries no escape."""
    serve(CASE)
    with Mute(greeting=banner) as login_port:  # then silence, never a real SSH server
        reason = only_the_reason("--login", f"127.0.0.1:{login_port.port}", "--ssh-timeout", "2s")
    assert "127.0.0.1" in reason


def test_a_failing_proxycommand_leaves_only_the_one_line_reason_on_stderr(serve: Serve, home: Path) -> None:
    serve(CASE)
    (home / "config").write_text("Host slurm-login\n    HostName 127.0.0.1\n"
                                 "    ProxyCommand sh -c 'printf \"\\033]0;PWNED\\007 no route\\n\" >&2; exit 1'\n")
    assert "SSH to root@127.0.0.1:22 failed" in only_the_reason("--login", "root@slurm-login", "--ssh-timeout", "2s")


def only_the_reason(*args: str) -> str:
    """Run sunkcheck in a subprocess (paramiko's threads write to the real stderr) and return the sinfo
    step's reason, checking that it and stderr carry no traceback, escape or raw server text."""
    import sys

    r = subprocess.run([sys.executable, "-m", "sunkcheck", "check", "-o", "json", *args],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent)))
    reason = result(json.loads(r.stdout))[0]["sinfo"]["summary"]
    assert "\x1b" not in reason and "\x07" not in reason, reason
    assert "Traceback" not in r.stderr and "\x1b" not in r.stderr and "\x07" not in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) <= 1, r.stderr
    return reason


# --- ssh_config file names are words as OpenSSH splits them ------------------------------------------------

@pytest.mark.parametrize("text, words", [
    ('"/a dir/known hosts"', ["/a dir/known hosts"]),
    ("/a\\ dir/known\\ hosts /b", ["/a dir/known hosts", "/b"]),
    ("'/a dir/x' \"/b c\"\t/d", ["/a dir/x", "/b c", "/d"]),
    ('/a"b c"d', ["/ab cd"]),
    ('"/a \\" b"', ['/a " b']),
    ("/a # a comment", ["/a"]),
])
def test_ssh_config_words_are_split_as_openssh_does(text: str, words: list[str]) -> None:
    from sunkcheck.collect.sshconfig import split_words

    assert split_words(text) == words


def test_an_unclosed_quote_in_ssh_config_is_one_line(serve: Serve, home: Path, lab: Lab) -> None:
    serve(CASE)
    (home / "config").write_text('Host login\n    HostName 127.0.0.1\n    UserKnownHostsFile "/a b\n')
    r = run("check", "--login", "root@login")
    assert r.code == 3 and r.err == f"sunkcheck: error: --ssh-config {home / 'config'} line 3: invalid quotes\n"


def _spaced_config(home: Path, lab: Lab, files: str, extra: str = "") -> None:
    (home / "config").write_text(f"Host login\n    HostName 127.0.0.1\n    Port {lab['sshd'].port}\n"
                                 f"    UserKnownHostsFile {files}\n    IdentityFile \"{lab['key']}\"\n{extra}")


@pytest.mark.parametrize("quoting", ["quoted", "escaped"])
def test_a_known_hosts_file_with_spaces_is_read_as_that_file(serve: Serve, home: Path, lab: Lab, tmp_path: Path,
        quoting: str) -> None:
    serve(CASE)
    (home / "known_hosts").write_text("")
    spaced = tmp_path / "dir with space" / "known hosts"
    spaced.parent.mkdir()
    spaced.write_text(lab["sshd"].known_hosts_line())
    written = f'"{spaced}"' if quoting == "quoted" else str(spaced).replace(" ", "\\ ")
    _spaced_config(home, lab, f"{tmp_path / 'other'} {written}")
    code, doc = check("--login", "root@login")
    assert_sinfo_ok(code, doc, lab)


def test_an_unknown_key_is_recorded_in_the_first_file_exactly_as_named(serve: Serve, home: Path, lab: Lab,
        tmp_path: Path) -> None:
    serve(CASE)
    (home / "known_hosts").write_text("")
    first, second = tmp_path / "new dir" / "known hosts", tmp_path / "second file"
    _spaced_config(home, lab, f'"{first}" "{second}"')
    code, doc = check("--login", "root@login")
    summary = result(doc)[0]["sinfo"]["summary"]
    assert code == 3 and f">> '{first}'`" in summary  # the advice names that file, quoted for the shell
    before = set(tmp_path.rglob("*"))
    code, doc = check("--login", "root@login", "--accept-new-host-key")
    assert code == 0, result(doc)[0]["sinfo"]
    assert set(tmp_path.rglob("*")) - before == {first.parent, first}
    assert first.read_text().split()[:2] == [f"[127.0.0.1]:{lab['sshd'].port}", "ssh-ed25519"]


def test_host_key_alias_is_refused_not_ignored(serve: Serve, home: Path, lab: Lab) -> None:
    serve(CASE)
    _spaced_config(home, lab, str(home / "known_hosts"), "    HostKeyAlias lognode\n")
    code, doc = check("--login", "root@login", "--accept-new-host-key")
    sinfo = result(doc)[0]["sinfo"]
    assert code == 3 and sinfo["status"] == "unknown" and "HostKeyAlias is set for login" in sinfo["summary"]
    assert (home / "known_hosts").read_text() == lab["sshd"].known_hosts_line()


@pytest.mark.parametrize("line, reason", [
    ("Port abc", "ssh_config Port 'abc' for login: not a port between 1 and 65535 (ssh refuses it too)"),
    ("Port 99999", "ssh_config Port '99999' for login: not a port between 1 and 65535 (ssh refuses it too)"),
    ("Port -1", "ssh_config Port '-1' for login: not a port between 1 and 65535 (ssh refuses it too)"),
    ("Port 0", "ssh_config Port '0' for login: not a port between 1 and 65535 (ssh refuses it too)"),
    ("IdentityFile ~nosuchuser-sunkcheck/key",
     "ssh_config IdentityFile '~nosuchuser-sunkcheck/key': no home directory for '~nosuchuser-sunkcheck' (ssh refuses "
     "it too)"),
    ("HostKeyAlias #x", "ssh_config HostKeyAlias for login has no argument (a word starting with `#` starts a comment; "
                        "ssh refuses it too)"),
    ("UserKnownHostsFile # none", "ssh_config UserKnownHostsFile for login has no argument (a word starting with `#` starts "
                           "a comment; ssh refuses it too)"),
])
def test_an_ssh_config_value_ssh_refuses_is_one_line_for_the_sinfo_step_alone(serve: Serve, home: Path, lab: Lab, line: str,
        reason: str) -> None:
    """`Port abc` and `~nosuchuser` were internal errors, `Port 99999` and `Port -1` misleading connection errors,
    `HostKeyAlias #x` silently no alias: each is now the sinfo step's one line, the cluster's steps still checked."""
    serve(CASE)
    (home / "config").write_text(f"Host login\n    HostName 127.0.0.1\n    {line}\n")
    code, doc = check("--login", "root@login")
    steps = result(doc)[0]
    assert code == 3 and steps["sinfo"] == {**steps["sinfo"], "status": "unknown", "summary": reason}, steps["sinfo"]
    assert all(s["status"] != "unknown" for name, s in steps.items() if name != "sinfo"), steps
    assert doc["errors"] == [f"sinfo: {reason}"]
