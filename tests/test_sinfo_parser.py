"""Parsing what `sinfo` prints: the three JSON shapes and the text form, with the traps of real output."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sunkcheck.slurm import SlurmNode, expand_hostlist, nodeset_nodes, parse_json, parse_text, validate_partition
from sunkcheck.collect.sinfo import commands
from sunkcheck.collect.sshconfig import parse_login
from sunkcheck.model import InputError

DATA = Path(__file__).parent / "data"


def brief(nodes: dict[str, SlurmNode]) -> dict[str, tuple[Any, ...]]:
    return {n: (sorted(v.partitions), v.state, sorted(v.flags), v.reason, v.healthy) for n, v in nodes.items()}


def test_22_05_state_string_and_flags() -> None:
    nodes = parse_json((DATA / "sinfo-22.05.json").read_text())
    assert brief(nodes) == {
        "slurm-cpu-batch-012-006": (["cpu-batch"], "idle", ["DRAIN"], "gpu xid 79", False),
        "slurm-cpu-batch-012-007": (["cpu-batch"], "idle", [], "", True),
        "slurm-cpu-batch-012-008": (["cpu-batch"], "unknown", [], "", False),
    }


def test_22_05_controller_down_is_an_error_not_an_empty_cluster() -> None:
    with pytest.raises(InputError, match="sinfo reported: Unspecified error"):
        parse_json((DATA / "sinfo-22.05-controller-down.json").read_text())


def test_23_02_state_list() -> None:
    nodes = parse_json((DATA / "sinfo-23.02.json").read_text())
    assert brief(nodes)["slurm-gpu-h100-012-006"] == (["all", "h100"], "idle", ["DRAIN"], "sunk:verify-undrain", False)
    assert brief(nodes)["slurm-gpu-h100-012-008"] == (["h100"], "down", ["NOT_RESPONDING"], "Not responding", False)
    assert nodes["slurm-gpu-h100-012-009"].healthy and nodes["slurm-gpu-h100-012-009"].state == "allocated"


def test_24_11_sinfo_groups_with_hostlists() -> None:
    nodes = parse_json((DATA / "sinfo-24.11.json").read_text())
    assert brief(nodes) == {
        "slurm-cpu-batch-012-006": (["cpu-batch"], "idle", [], "", True),
        "slurm-cpu-batch-012-007": (["cpu-batch"], "idle", [], "", True),
        "slurm-cpu-batch-012-008": (["cpu-batch"], "idle", ["DRAIN"], "gpu xid 79", False),
    }


def test_text_form_traps() -> None:
    text = "\n".join([
        "NODELIST|PARTITION|STATE|REASON",        # a header, if someone forgot -h
        "a-001|gpu*|idle|none",                    # default partition marked with *
        "a-001|all|idle|none",                     # the same node again, another partition
        "a-002|gpu*|drain|gpu xid 79",             # drain = idle + DRAIN
        "a-003|gpu*|down*|Not responding",         # * on a state = not responding
        "a-004|gpu*|idle~|none",                   # powered down
        "a-005|gpu*|drng@|reboot requested",       # draining + pending reboot
        "a-006|gpu*|mix|none",
    ])
    nodes = parse_text(text)
    assert brief(nodes) == {
        "a-001": (["all", "gpu"], "idle", [], "", True),
        "a-002": (["gpu"], "idle", ["DRAIN"], "gpu xid 79", False),
        "a-003": (["gpu"], "down", ["NOT_RESPONDING"], "Not responding", False),
        "a-004": (["gpu"], "idle", ["POWERED_DOWN"], "", False),
        "a-005": (["gpu"], "mixed", ["DRAIN", "REBOOT_REQUESTED"], "reboot requested", False),
        "a-006": (["gpu"], "mixed", [], "", True),
    }


def test_text_with_pipes_in_the_reason_and_bad_lines() -> None:
    assert parse_text("a|p|drain|disk|smart failed\n")["a"].reason == "disk|smart failed"
    with pytest.raises(InputError, match="unexpected line"):
        parse_text("garbage without separators\n")


def test_a_reason_holding_unicode_line_separators_stays_one_line_of_sinfo() -> None:
    text = "a|p|drain|rack\u2028 b|p|idle|none\nb|p|drain|disk\x85 c|p|idle|none\r\n"
    nodes = parse_text(text)
    assert brief(nodes) == {"a": (["p"], "idle", ["DRAIN"], "rack\u2028 b|p|idle|none", False),
                            "b": (["p"], "idle", ["DRAIN"], "disk\x85 c|p|idle|none", False)}


def test_empty_partition_output_is_no_nodes() -> None:
    assert parse_text("") == {}


@pytest.mark.parametrize("text, names", [
    ("a-[001-003]", ["a-001", "a-002", "a-003"]),
    ("n[8-10,12]", ["n8", "n9", "n10", "n12"]),
    ("gpu[01-02]-ib[1-2]", ["gpu01-ib1", "gpu01-ib2", "gpu02-ib1", "gpu02-ib2"]),
    ("plain", ["plain"]),
])
def test_hostlists(text: str, names: list[str]) -> None:
    assert expand_hostlist(text) == names


# Valid and invalid hostlists; the names (or the refusal) must be what the real `scontrol show hostnames` says.
HOSTLISTS = ["a-[001-003]", "n[8-10,12]", "plain", "gpu[01-02]-ib[1-2]", "a,b[1-2]", "n[009-011]", "n[01-2]", "n[1-02]",
             "a[1-2]b[3-4]c[5-6]", "w[1-2]x[3-4]y[5-6]z[7-8]", "n[1-2],m[03-4]", "n[1-2]-[1-2]", "n[3,1-2]", "n[1,1]",
             "a[1-2,5]b[3-4,7]", "a b[1-2]", "x[1-3,5]y", "n[1-3]x,n2x", "n[2-1]", "n[]", "n[a-b]", "n[[1-2]]",
             "n[1-2]]", "n[0-99999999]"]


@pytest.fixture(scope="module")
def scontrol_hostnames(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], list[str] | None]:
    conf = tmp_path_factory.mktemp("slurm") / "slurm.conf"
    conf.write_text("ClusterName=t\nSlurmctldHost=localhost\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n")

    def names(hostlist: str) -> list[str] | None:
        """The names scontrol prints, or None where it calls the hostlist invalid."""
        p = subprocess.run(["scontrol", "show", "hostnames", hostlist], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, SLURM_CONF=str(conf)))
        return None if "Invalid hostlist" in p.stdout + p.stderr else p.stdout.split()
    return names


@pytest.mark.parametrize("hostlist", HOSTLISTS)
def test_hostlists_expand_as_scontrol_does(hostlist: str, scontrol_hostnames: Callable[[str], list[str] | None]) -> None:
    want = scontrol_hostnames(hostlist)
    if want is None:
        with pytest.raises(InputError, match=r"^sinfo: hostlist "):
            expand_hostlist(hostlist)
    else:
        assert expand_hostlist(hostlist) == want


def test_hostlist_cap_counts_every_bracket_before_expanding() -> None:
    with pytest.raises(InputError, match="names more than 262144 nodes"):
        expand_hostlist("a[0-999]b[0-999]")  # a million names from two small ranges
    assert len(expand_hostlist("a[1-4]b[1-4],c", limit=17)) == 17
    with pytest.raises(InputError):
        expand_hostlist("a[1-4]b[1-4],c", limit=16)


def _places(doc: object, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every place in a JSON document: the path to each value, containers included."""
    yield path
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield from _places(value, (*path, key))


def _replaced(doc: Any, path: tuple[str | int, ...], value: object) -> Any:
    doc = json.loads(json.dumps(doc))
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return doc


@pytest.mark.parametrize("sample", ["sinfo-22.05.json", "sinfo-23.02.json", "sinfo-24.11.json"])
def test_a_wrong_type_anywhere_in_sinfo_json_is_malformed_input_not_a_crash(sample: str) -> None:
    """A hostile login node: every value of every shape, in turn, replaced by a value of each other JSON type
    (`"name": 5` or `true` made the report an internal error later). Either it is refused as input, or
    every node the parser returns is made of strings, as what reads them (nodeset_nodes, describe) needs."""
    doc = json.loads((DATA / sample).read_text())
    for path in _places(doc):
        for wrong in (5, True, 1.5, None, "x", [], {}, [5], {"a": 5}):
            try:
                nodes = parse_json(json.dumps(_replaced(doc, path, wrong)))
            except InputError:
                continue
            for name, node in nodes.items():
                assert isinstance(name, str) and node.name == name, (path, wrong)
                assert all(isinstance(x, str) for x in (node.state, node.reason, *node.partitions, *node.flags)), \
                    (path, wrong, node)
                node.describe()
            nodeset_nodes(nodes, "slurm-cpu-batch", set(), None)


@pytest.mark.parametrize("name, said", [(5, "a number"), (True, "a boolean"), (["a"], "a list")])
def test_a_node_name_that_is_not_a_string_names_the_field(name: object, said: str) -> None:
    doc = json.loads((DATA / "sinfo-22.05.json").read_text())
    doc["nodes"][1]["name"] = name
    with pytest.raises(InputError, match=rf"^sinfo --json: nodes\[1\]\.name is {said}, not a string$"):
        parse_json(json.dumps(doc))


def test_nodeset_nodes_by_partition_or_by_pod_names() -> None:
    nodes = parse_text("ns-012-006|p1|idle|none\nns-012-007|p2|idle|none\nother-1|p1|idle|none\nns-extra|p1|idle|none\n")
    assert set(nodeset_nodes(nodes, "ns", {"ns-012-006"}, None)) == {"ns-012-006", "ns-012-007"}
    assert set(nodeset_nodes(nodes, "ns", set(), "p1")) == {"ns-012-006", "other-1", "ns-extra"}


@pytest.mark.parametrize("name", ["x; rm -rf /", "$(id)", "a b", "`id`", "p'q", "", "-p"])
def test_partition_names_are_validated(name: str) -> None:
    with pytest.raises(InputError):
        validate_partition(name)


def test_remote_commands_quote_everything() -> None:
    assert commands("gpu-h100") == ("sinfo --json -p gpu-h100", "sinfo -N -h -o '%N|%P|%t|%E' -p gpu-h100")
    assert commands(None) == ("sinfo --json", "sinfo -N -h -o '%N|%P|%t|%E'")


@pytest.mark.parametrize("spec, parsed", [
    ("login", (None, "login", None)),
    ("alice@login.example.com", ("alice", "login.example.com", None)),
    ("alice@10.0.0.5:2222", ("alice", "10.0.0.5", 2222)),
    ("[::1]:2200", (None, "::1", 2200)),
    ("bob@[fe80::1]", ("bob", "fe80::1", None)),
])
def test_login_specs(spec: str, parsed: tuple[str | None, str, int | None]) -> None:
    assert parse_login(spec) == parsed


@pytest.mark.parametrize("spec", ["", "host:port", "a@", "[::1", "h:1:2"])
def test_bad_login_specs(spec: str) -> None:
    with pytest.raises(InputError):
        parse_login(spec)
