"""foreign-pod-resources moves another workload's Pod off a pool Node only by an eviction that honours its
PodDisruptionBudgets, only when nothing it holds stays behind, and only when a Node outside the pool is known to take
it: the fix block pasted whole into bash runs the real kubectl, which posts each Eviction to its Pod's subresource."""

from __future__ import annotations

import copy
import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sunkcheck import snapshot
from sunkcheck.render import Output, render
from sunkcheck.symptoms.fixes import evict_drained, evict_pods
from tests.conftest import FIXTURES
from tests.test_fixes import _placed, _squatter_fix, eviction, has, symptom
from tests.test_paste_whole import blocks
from tests.test_terminal_text import report

GUARDED = "vllm-bench-llama3-70b-0"  # a PodDisruptionBudget refuses its eviction
REFUSAL = "Cannot evict pod as it would violate the pod's disruption budget."


class Recorded(BaseHTTPRequestHandler):
    """An API server's eviction subresource: each request recorded (method, path, body); an Eviction of a Pod
    another than GUARDED accepted (201), of GUARDED refused (429, as for a PodDisruptionBudget); anything else 404."""

    seen: list[tuple[str, str, bytes]]

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding") != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b""
        while size := int(self.rfile.readline().strip(), 16):
            body += self.rfile.read(size)
            self.rfile.readline()
        self.rfile.readline()
        return body

    def _answer(self, code: int, reason: str, message: str) -> None:
        out = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Success" if code < 300 else "Failure",
                          "reason": reason, "message": message, "code": code}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def _any(self) -> None:
        self.seen.append((self.command, self.path, self._body()))
        if self.command == "POST" and self.path.endswith("/eviction"):
            refused = f"/pods/{GUARDED}/" in self.path
            self._answer(429 if refused else 201, "TooManyRequests" if refused else "", REFUSAL if refused else "")
        else:
            self._answer(404, "NotFound", "not here")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

    def log_message(self, *args: object) -> None:  # the test reads `seen`, not a log
        pass


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[Path, list[tuple[str, str, bytes]]]]:
    """A kubeconfig pointing at a `Recorded` server, and what it was asked."""
    seen: list[tuple[str, str, bytes]] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (Recorded,), {"seen": seen}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
        "users": [{"name": "u", "user": {}}], "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    yield config, seen
    server.shutdown()
    server.server_close()


def pasted(lines: list[str], config: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    """`lines` pasted into an interactive bash with the real kubectl on its PATH, then a sentinel request: a command
    reading the terminal would swallow the lines after it, the sentinel among them."""
    script = "\n".join([*lines, "kubectl get --raw /sentinel", ""])
    return subprocess.run(["/bin/bash", "--norc", "--noprofile", "-i"], input=script, text=True, capture_output=True,
                          timeout=120, cwd=tmp, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp), "KUBECONFIG": str(config),
                                                     "HISTFILE": "/dev/null"})


def test_the_fix_pasted_whole_evicts_each_pod_by_its_subresource_and_says_what_a_429_means(
        api: tuple[Path, list[tuple[str, str, bytes]]], tmp_path: Path) -> None:
    """Two squatters tolerating the pool's taint: the fix printed for a terminal, pasted whole, posts one Eviction
    each (its body from its own line), deletes nothing, and reads no line after it; a Pod its disruption budget
    guards is refused with 429, which the fix's words explain in a comment."""
    config, seen = api
    [block] = [b for b in blocks(render(report("foreign-pod-tolerates-pool-taint"), Output.PLAIN, width=100),
                                 Output.PLAIN) if any("/eviction" in line for line in b)]
    said = " ".join(line.strip().removeprefix("# ") for line in block if line.lstrip().startswith("#"))
    has(said, "PodDisruptionBudgets a delete bypasses", "429 TooManyRequests", "retry later, never delete")
    ran = pasted(block, config, tmp_path)
    posted = [(path, json.loads(body)) for method, path, body in seen if method == "POST"]
    assert posted == [(f"/api/v1/namespaces/ml-research/pods/{name}/eviction",
                       {"apiVersion": "policy/v1", "kind": "Eviction",
                        "metadata": {"name": name, "namespace": "ml-research"}})
                      for name in ("gpu-burn-5b8c7-t4xzm", GUARDED)]
    assert [m for m, _, _ in seen if m not in ("GET", "POST")] == []  # nothing deleted, patched or replaced
    assert ("GET", "/sentinel") in [(m, path) for m, path, _ in seen]  # the lines after each eviction still ran
    assert f"Error from server (TooManyRequests): {REFUSAL}" in ran.stderr


def test_a_drained_slurmd_pod_is_evicted_only_on_a_typed_y(api: tuple[Path, list[tuple[str, str, bytes]]],
                                                            tmp_path: Path) -> None:
    """The eviction of slurmd Pods whose Slurm nodes are drained, pasted into bash with the real kubectl: pasted
    whole, the first line's question takes the second line as its answer and nothing is posted; answered y, the Pod's
    Eviction is posted (its PodDisruptionBudgets honoured), and a 429 from one is kubectl's error, the next line run."""
    config, seen = api
    pods = [{"metadata": {"name": name, "namespace": "ml-research"}} for name in ("slurm-gpu-012-005", GUARDED)]
    first, second = evict_drained(pods).split("\n")
    pasted([first, second], config, tmp_path)
    assert [m for m, _, _ in seen if m != "GET"] == [] and ("GET", "/sentinel") in [(m, p) for m, p, _ in seen]
    ran = pasted([first, "y", second, "y"], config, tmp_path)
    assert [(path, json.loads(body)) for method, path, body in seen if method == "POST"] == [
        (f"/api/v1/namespaces/ml-research/pods/{name}/eviction",
         {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "ml-research"}})
        for name in ("slurm-gpu-012-005", GUARDED)]
    assert f"Error from server (TooManyRequests): {REFUSAL}" in ran.stderr
    assert [m for m, _, _ in seen if m not in ("GET", "POST")] == []  # nothing deleted


DRAINED = {f"slurm-cpu-batch-012-00{i}": f"g{i}a7e" for i in (5, 6, 7)}
"""Three drained slurmd Pods (their Slurm nodes named like them), each with its Node."""


def _drained() -> list[str]:
    """`evict_drained`'s lines for DRAINED: one question and eviction a Pod."""
    return evict_drained([{"metadata": {"name": name, "namespace": "tenant-slurm"}, "spec": {"nodeName": node}}
                          for name, node in DRAINED.items()]).split("\n")


def _evicted(seen: list[tuple[str, str, bytes]]) -> list[str]:
    return [path.split("/pods/")[1].split("/")[0] for method, path, _ in seen if method == "POST"]


def test_pasted_without_bracketed_paste_a_question_eaten_by_the_next_line_says_so_and_the_one_waiting_names_its_pod(
        api: tuple[Path, list[tuple[str, str, bytes]]], tmp_path: Path) -> None:
    """Pasted whole where the terminal sends a paste as typed lines (bash before 5.1, tmux paste-buffer without -p,
    screen), each question's `read` takes the next pasted line: the first Pod is skipped, saying so and what it read
    (the second Pod's whole line, which thus never runs), and the question left waiting is the third Pod's, naming it,
    its Slurm node and its Node: the y typed there evicts the Pod it names, never the first."""
    config, seen = api
    five, six, seven = DRAINED
    ran = pasted([*_drained(), "y"], config, tmp_path)
    assert _evicted(seen) == [seven] and ("GET", "/sentinel") in [(m, p) for m, p, _ in seen]
    assert (f"no Slurm job left on Slurm node {five}? y evicts Pod tenant-slurm/{five} on Node g5a7e: "
            f"skipped tenant-slurm/{five}: the answer read was \"printf 'no Slurm job left on Slurm node {six}? ") \
        in ran.stdout, ran.stdout
    assert f"\nno Slurm job left on Slurm node {seven}? y evicts Pod tenant-slurm/{seven} on Node g7a7e: {{" in ran.stdout
    assert ran.stdout.count(": skipped tenant-slurm/") == 1 and f"skipped tenant-slurm/{seven}" not in ran.stdout


def test_each_question_answered_in_turn_evicts_on_y_alone_and_says_which_pod_another_answer_skipped(
        api: tuple[Path, list[tuple[str, str, bytes]]], tmp_path: Path) -> None:
    """Each line pasted alone and answered: y evicts its Pod; n (or anything else) posts nothing, says the Pod it
    skipped and the answer read, and the lines after it still run."""
    config, seen = api
    five, six, seven = DRAINED
    first, second, third = _drained()
    ran = pasted([first, "y", second, "n", third, "yes"], config, tmp_path)
    assert _evicted(seen) == [five] and ("GET", "/sentinel") in [(m, p) for m, p, _ in seen]
    assert f'skipped tenant-slurm/{six}: the answer read was "n"\n' in ran.stdout
    assert f'skipped tenant-slurm/{seven}: the answer read was "yes"\n' in ran.stdout
    assert [m for m, _, _ in seen if m not in ("GET", "POST")] == []


def test_a_drained_pod_on_a_node_named_as_no_api_server_names_one_gets_words_not_a_question() -> None:
    """The question quotes the Node's name as is, in single quotes: a name the API server would refuse (a quote, a
    substitution) gets words instead of the Pod's eviction."""
    [line] = evict_drained([{"metadata": {"name": "slurm-cpu-batch-012-005", "namespace": "tenant-slurm"},
                             "spec": {"nodeName": "g5'$(touch PWNED)"}}]).split("\n")
    assert line == ("(no command for Pod tenant-slurm/slurm-cpu-batch-012-005: its Node 'g5'\"'\"'$(touch PWNED)' is not "
                    "a name the API server accepts)"), line


@pytest.mark.parametrize(("volume", "said"), [
    ({"name": "scratch", "emptyDir": {}}, "emptyDir scratch (deleted with the Pod)"),
    ({"name": "shm", "emptyDir": {"medium": "Memory"}}, "emptyDir shm (deleted with the Pod)"),
    ({"name": "work", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}, "ephemeral volume work (deleted with the Pod)"),
    ({"name": "models", "hostPath": {"path": "/mnt/models"}}, "hostPath models (left on its Node)"),
    ({"name": "data", "persistentVolumeClaim": {"claimName": "nb-data"}},
     "PersistentVolumeClaim nb-data (its volume may be local to the Node: the check reads no PersistentVolume)")])
def test_a_pod_holding_data_that_may_not_follow_it_is_its_owners_to_move(volume: dict, said: str) -> None:
    """An emptyDir or ephemeral volume goes with the Pod, a hostPath stays on its Node, and a claim's volume may be a
    local one of the Node (the check reads no PersistentVolume): no command removes such a Pod, the fix says what it
    holds, and the other squatters are still evicted."""
    fix = _squatter_fix(_placed({"volumes": [{"name": "config", "configMap": {"name": "nb"}}, volume]}))
    has(fix, f"Pod ml/notebook-6f8d9-k2x7p holds data that may not follow it to another Node: {said}; ask its owner",
        never=("/pods/notebook-6f8d9-k2x7p/", "kubectl delete", "configMap", "config "))


@pytest.mark.parametrize("volume", [
    {"name": "config", "configMap": {"name": "nb"}}, {"name": "token", "secret": {"secretName": "nb"}},
    {"name": "all", "projected": {"sources": []}}, {"name": "info", "downwardAPI": {"items": []}}])
def test_a_pod_whose_volumes_the_cluster_holds_is_still_evicted(volume: dict) -> None:
    """A ConfigMap, a Secret, a projected or downward API volume is written again wherever the Pod goes."""
    assert f"\n{eviction('ml', 'notebook-6f8d9-k2x7p')}\n" in _squatter_fix(_placed({"volumes": [volume]}))


def _renamed_pod(name: str, namespace: str) -> Callable[[dict], dict]:
    def change(pod: dict) -> dict:
        pod["metadata"] |= {"name": name, "namespace": namespace}
        return pod
    return change


@pytest.mark.parametrize(("name", "namespace"), [("x;touch PWNED", "data-eng"), ("--all", "data-eng"),
                                                 ("spark-exec-7d9f4-x2k8q", "Data Eng"), ("a" * 254, "data-eng")])
def test_a_pod_named_as_no_api_server_names_one_gets_words_not_an_eviction(name: str, namespace: str) -> None:
    """A hand-made snapshot may name a Pod as the API server never would: in a command it could be a flag or reach a
    shell, in the body a quote; its line says so instead."""
    snap = snapshot.load(FIXTURES / "foreign-pod-resources")
    pods = tuple(_renamed_pod(name, namespace)(copy.deepcopy(p)) if p["metadata"]["name"] == "spark-exec-7d9f4-x2k8q"
                 else p for p in snap.pods or ())
    fix = symptom(replace(snap, pods=pods), "foreign-pod-resources").fix
    assert "kubectl create" not in fix and "(no command for Pod " in fix
    assert evict_pods([{"metadata": {"name": name, "namespace": namespace}}]).startswith("(no command for Pod ")
