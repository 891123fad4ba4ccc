"""Each Node's and Pod's managedFields are emptied in a list page's text before it is parsed (collect.cuts): half a
real Pod's JSON and most of a real Node's once its images are cut, parsed only to be dropped. What is cut must be
exactly those lists; anything else parses as it would whole."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.large_cluster import real_size
from sunkcheck import cli, snapshot
from sunkcheck.collect import answers, cuts
from tests.conftest import FIXTURES
from tests.pages import COMPACT, SPACED, page, same_but


def _cut(text: bytes | bytearray) -> Any:
    page = bytearray(text)
    cuts.empty(page, cuts.managed_fields(page))
    return json.loads(page)


def _real(kind: str) -> list[dict]:
    """A fixture's Nodes or Pods as big as real ones: managedFields (the benchmark's), a Node's images."""
    served = snapshot.load(FIXTURES / "healthy-pool-name")
    objects = [copy.deepcopy(o) for o in (served.nodes if kind == "Node" else served.pods) or ()]
    for o in objects:
        real_size(o)
    return objects


@pytest.mark.parametrize("kind", ["Node", "Pod"])
@pytest.mark.parametrize("separators", [COMPACT, SPACED])
def test_a_page_of_real_objects_parses_as_it_would_whole_less_their_managed_fields(kind: str,
                                                                                 separators: tuple[str, str]) -> None:
    objects = _real(kind)
    items = _cut(page(kind, objects, separators))["items"]
    assert [o["metadata"]["managedFields"] for o in items] == [[]] * len(objects)
    assert [answers.unmanaged(o) for o in items] == [answers.unmanaged(copy.deepcopy(o)) for o in objects]


def test_a_managed_fields_list_that_is_not_last_or_holds_a_bracket_is_parsed_as_it_is() -> None:
    """A `[` inside (a key naming a list's item), the list not last in the metadata, a key that only ends in
    managedFields, the words in a string: each parsed whole."""
    entry = {"manager": "m", "fieldsV1": {"f:metadata": {}}}
    odd = [
        {"metadata": {"name": "a", "managedFields": [{"manager": "m", "fieldsV1": {'k:{"a":["x"]}': {}}}]}, "spec": {}},
        {"metadata": {"managedFields": [entry], "name": "b"}, "spec": {}},
        {"metadata": {'x"managedFields': [entry]}, "spec": {}},
        {"metadata": {"name": 'c", "managedFields": [{}]}, "spec": {}'}, "spec": {}},
        {"metadata": {"name": "d", "managedFields": [entry]}},  # last in the object too: no key follows
    ]
    for separators in (COMPACT, SPACED):
        assert _cut(json.dumps(odd, separators=separators).encode()) == odd


def test_malformed_text_around_a_managed_fields_list_is_still_refused() -> None:
    text = bytearray(json.dumps({"items": _real("Pod")}, separators=COMPACT).encode())
    text[text.index(b'"spec":{') + len(b'"spec":')] = ord("(")  # the value of the key after the list
    with pytest.raises(ValueError):
        _cut(bytes(text))


_TRICKY = st.sampled_from(['"', "\\", "[", "]", "{", "}", ",", ":", " ", "]}", '},"spec":', ']}, "spec": ', "managedFields",
                           '"managedFields":[', "x"])
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.lists(_TRICKY, max_size=6).map("".join))
_KEYS = st.sampled_from(["managedFields", "metadata", "spec", "a", 'b"managedFields', ']},"spec":'])
_JSON = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=16)


def _same_but_managed(whole: Any, cut: Any) -> bool:
    """`cut` is `whole` with some managedFields values emptied: lists only."""
    return same_but("managedFields", lambda v: isinstance(v, list), whole, cut)


@settings(max_examples=500, deadline=None)
@given(_JSON, st.sampled_from([COMPACT, SPACED]), st.booleans())
def test_any_document_parses_as_it_would_whole_less_some_managed_fields(doc: Any, separators: tuple[str, str],
                                                                       ascii_only: bool) -> None:
    text = json.dumps(doc, separators=separators, ensure_ascii=ascii_only).encode()
    assert _same_but_managed(doc, _cut(text))


def _parsed(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The text of every answer a run parses, as it is parsed."""
    seen: list[bytes] = []
    parse = answers.json_doc

    def keep(data: Any) -> Any:
        seen.append(bytes(data))
        return parse(data)

    monkeypatch.setattr(answers, "json_doc", keep)
    return seen


def test_a_check_parses_no_managed_fields_of_its_nodes_and_pods(serve: Any, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture) -> None:
    """Through the real client against the test API server: the Node and Pod lists a check reads are parsed without
    their managedFields, and the check says what it said with them."""
    from dataclasses import replace

    served = snapshot.load(FIXTURES / "healthy-pool-name")
    serve(replace(served, nodes=tuple(_real("Node")), pods=tuple(_real("Pod"))))
    texts = _parsed(monkeypatch)
    with pytest.raises(SystemExit) as exit:
        cli.main(["check", "-o", "json"])
    assert exit.value.code == 0
    pages = {kind: [t for t in texts if f'"kind": "{kind}List"'.encode() in t] for kind in ("Node", "Pod")}
    assert all(pages.values()), pages.keys()
    assert all(t.count(b'"managedFields": [') == t.count(b'"managedFields": []') > 0 for p in pages.values() for t in p)
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "ok" and doc["errors"] == []
