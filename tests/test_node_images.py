"""A Node list's image lists are emptied in the page's text before it is parsed (collect.nodes.image_lists):
two thirds of a real Node's JSON that nothing reads. What is cut must be exactly those lists; anything else parses as
it would whole."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.large_cluster import real_size
from sunkcheck import snapshot
from sunkcheck.collect import answers, cuts
from sunkcheck.collect.kube import Kube
from sunkcheck.collect.nodes import fetch, image_lists
from tests.conftest import FIXTURES
from tests.pages import COMPACT, SPACED, page, same_but


def _real_nodes(count: int = 20) -> list[dict]:
    """Nodes as big as real ones: the kubelet's 50 images and managedFields (the benchmark's)."""
    template = (snapshot.load(FIXTURES / "healthy-pool-name").nodes or ())[0]
    nodes = []
    for i in range(count):
        node = copy.deepcopy(template)
        node["metadata"]["name"] = f"node-{i}"
        real_size(node)
        nodes.append(node)
    return nodes


def _page(nodes: list[dict], separators: tuple[str, str] = COMPACT) -> bytearray:
    return page("Node", nodes, separators)


def without_images(page: bytearray) -> None:
    cuts.empty(page, image_lists(page))


def _cut(page: bytearray) -> Any:
    without_images(page)
    return json.loads(page)


def _emptied(nodes: list[dict]) -> list[dict]:
    return [n | {"status": n["status"] | {"images": []}} for n in nodes]


def test_a_page_of_real_nodes_parses_as_it_would_whole_less_their_image_lists() -> None:
    nodes = _real_nodes()
    for separators in (COMPACT, SPACED):
        page = _page(nodes, separators)
        size = len(page)
        assert _cut(page)["items"] == _emptied(nodes)
        assert len(page) < size * 0.4, (len(page), size)  # two thirds of a real Node's JSON


def test_an_image_list_that_is_not_plain_is_parsed_as_it_is() -> None:
    """Names with an escape, a bracket, a brace or a comma, another shape, a key that only ends in "images", a list
    past the size a kubelet writes: each parsed whole, and the plain lists beside them still emptied."""
    odd = [
        [{"names": ['quay.io/a"b'], "sizeBytes": 1}],  # an escaped quote
        [{"names": ["caf\u00e9:1"], "sizeBytes": 1}],  # not ASCII
        [{"names": ["a}]"], "sizeBytes": 1}, {"names": ["b"], "sizeBytes": 2}],  # the end of a list, in a name
        [{"names": ["a,b"], "sizeBytes": 1}],
        [{"names": ["a"], "sizeBytes": 1, "extra": {"x": 1}}],
        [{"sizeBytes": 1, "names": ["a"]}],  # another order
        [[{"names": ["a"]}]],
        [{"names": ["a" * 2000, "b"], "sizeBytes": 1}] * 600,  # past a MiB
    ]
    nodes = _real_nodes(len(odd) + 1)
    for node, images in zip(nodes, odd, strict=False):
        node["status"]["images"] = images
    nodes[0]["metadata"]["annotations"] = {"note": '"images":[{"names":["x"],"sizeBytes":1}]'}  # text, not a key
    nodes[1]["status"]['x"images'] = [{"names": ["x"], "sizeBytes": 1}]  # a key ending in "images"
    for separators in (COMPACT, SPACED):
        assert _cut(_page(nodes, separators))["items"] == nodes[:-1] + _emptied(nodes[-1:])


def test_malformed_text_around_an_image_list_is_still_refused() -> None:
    page = _page(_real_nodes(2))
    page[page.index(b'"nodeInfo"')] = ord("'")
    try:
        _cut(page)
    except ValueError:
        return
    raise AssertionError("parsed")


def test_nothing_is_cut_when_the_answers_budget_cannot_hold_the_pieces(monkeypatch: Any) -> None:
    page = _page(_real_nodes(2))
    monkeypatch.setattr(answers, "MAX_IN_FLIGHT", len(page))
    whole = bytes(page)
    without_images(page)
    assert page == whole and answers.budget.used == 0


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=8))
_IMAGE = st.fixed_dictionaries({"names": st.lists(st.text(max_size=12), min_size=1, max_size=3)},
                               optional={"sizeBytes": st.integers(0, 10**12)})
_JSON = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["images", "a", 'b"images', "names"]), st.one_of(inner, st.lists(_IMAGE, max_size=3)),
                    max_size=3)), max_leaves=12)


def _image_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(i, dict) and set(i) <= {"names", "sizeBytes"} for i in value)


def _same_but_images(whole: Any, cut: Any) -> bool:
    """`cut` is `whole` with some "images" values emptied: only lists of objects of names and sizes."""
    return same_but("images", _image_list, whole, cut)


@settings(max_examples=300, deadline=None)
@given(_JSON, st.sampled_from([COMPACT, SPACED]), st.booleans())
def test_any_document_parses_as_it_would_whole_less_some_plain_image_lists(doc: Any, separators: tuple[str, str],
                                                                             ascii_only: bool) -> None:
    text = bytearray(json.dumps(doc, separators=separators, ensure_ascii=ascii_only).encode())
    assert _same_but_images(doc, _cut(text))


def test_a_check_parses_no_image_list_and_a_snapshot_keeps_them(serve: Any, tmp_path: Path) -> None:
    """Through the real client against the test API server: the Nodes a check reads come without their images, and
    those `snapshot` saves whole."""
    served = snapshot.load(FIXTURES / "healthy-pool-name")
    nodes = [copy.deepcopy(n) for n in served.nodes or ()]
    for node in nodes:
        real_size(node)
    from dataclasses import replace

    serve(replace(served, nodes=tuple(nodes)))
    kube = Kube()
    assert all(n["status"]["images"] == [] for n in fetch(kube)), "images parsed"
    assert [n["status"]["images"] for n in fetch(kube, whole=True)] == [n["status"]["images"] for n in nodes]
    from tests.conftest import run

    saved = tmp_path / "saved"
    r = run("snapshot", str(saved), "-A")
    assert r.code == 0, r.err
    assert [n["status"]["images"] for n in json.loads((saved / "nodes.json").read_text())["items"]] == [
        n["status"]["images"] for n in nodes]
