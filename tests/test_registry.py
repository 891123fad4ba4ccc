"""The symptom registry checks itself: every id named anywhere is registered, and matching ignores table order."""

from __future__ import annotations

import difflib
import random
import re

import pytest

from sunkcheck.model import Status
from sunkcheck.symptoms import Match, Rule, daemonset, match, nodeset
from sunkcheck.symptoms.notes import NOTES
from sunkcheck.symptoms.table import LINT_RULES, RULES
from tests.conftest import CASES, FIXTURES, ROOT, expected, run

IDS = [r.id for r in RULES + LINT_RULES]
NOTE_IDS = {k.id for k in NOTES}  # a note's id is never a symptom's: scripts tell them apart by the field alone
ID = r"[a-z0-9]+(?:-[a-z0-9]+)+"
TABLES = {"nodeset": nodeset.RULES, "daemonset": daemonset.RULES}


def test_ids_are_unique_and_explained_by_names_rows_of_the_same_table():
    assert len(IDS) == len(set(IDS))
    for name, table in TABLES.items():
        ids = {r.id for r in table}
        for rule in table:
            assert set(rule.explained_by) <= ids - {rule.id}, f"{name}: {rule.id} explained_by {rule.explained_by}"


@pytest.mark.parametrize("table", TABLES.values(), ids=TABLES)
def test_explained_by_has_no_cycle(table):
    edges = {r.id: r.explained_by for r in table}

    def chain(rule_id, seen=()):
        assert rule_id not in seen, f"explained_by cycle: {' -> '.join((*seen, rule_id))}"
        for e in edges[rule_id]:
            chain(e, (*seen, rule_id))

    for rule_id in edges:
        chain(rule_id)


def _named_ids(text: str) -> set[str]:
    """Ids a text tells the user to type: `--ignore ID`, the ignore annotation, a JSON symptom id."""
    found = set(re.findall(rf"--ignore[ =]({ID})", text))
    found |= {i.strip() for v in re.findall(r'sunkcheck\.io/ignore:? *"([a-z0-9, -]*)"', text) for i in v.split(",")}
    return found | set(re.findall(rf'"id": "({ID})"', text))


def test_every_id_in_the_code_and_fix_texts_is_registered():
    sources = {p: p.read_text() for p in (ROOT / "sunkcheck").rglob("*.py")}
    named = {(str(p), i) for p, text in sources.items() for i in _named_ids(text)}
    named |= {("generic fix of " + r.id, i) for r in RULES + LINT_RULES for i in _named_ids(r.fix)}
    assert ("sunkcheck/symptoms/nodeset/replicas_cap.py", "replicas-cap") in {(p.removeprefix(f"{ROOT}/"), i) for p, i in named}
    assert {(p, i) for p, i in named if i not in IDS} == set()


def test_note_ids_are_unique_and_never_a_symptoms():
    assert len(NOTE_IDS) == len(NOTES) and not NOTE_IDS & set(IDS)


def _id_like(words: set[str]) -> set[str]:
    """Quoted words that are an id misspelt or renamed (close to a registered one, not it); `apt-get` is none."""
    return {w for w in words if w not in IDS and difflib.get_close_matches(w, IDS, 1, 0.8)}


def test_every_id_in_the_readme_and_docs_is_registered():
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for doc in docs:
        text = doc.read_text()
        tables = set(re.findall(rf"^\| `({ID})` \|", text, re.M))  # a symptom table's first column
        assert tables - set(IDS) == set() and _named_ids(text) - set(IDS) - NOTE_IDS == set(), doc
        assert _id_like(set(re.findall(rf"`({ID})`", text))) == set(), doc
    table = re.findall(r"^\| `([a-z0-9-]+)` \|", (ROOT / "README.md").read_text(), re.M)
    assert sorted(table) == sorted(IDS), "README's symptom table lists exactly the registered rows"


def _rule(rule_id: str, fires: bool = True, explained_by: tuple[str, ...] = ()) -> Rule:
    return Rule(rule_id, Status.WARNING, "nodeset", rule_id, "cause", "fix",
                lambda facts: Match((rule_id,), "fix") if fires else None, explained_by=explained_by)


CHAIN = (_rule("a"), _rule("b", explained_by=("a",)), _rule("c", explained_by=("b",)), _rule("d", explained_by=("a", "c")))


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (3, 2, 1, 0), (2, 0, 3, 1), (1, 3, 0, 2)])
def test_a_chain_is_resolved_the_same_in_any_order(order):
    """a explains b explains c; d names a and c. b is explained; an explained row explains nothing, so c stays."""
    rules = tuple(CHAIN[i] for i in order)
    assert sorted(s.id for s in match(rules, None, set())) == ["a", "c"]
    ignored = match(rules, None, set(), frozenset({"a"}))  # an ignored row is kept and explains nothing
    assert sorted((s.id, s.suppressed) for s in ignored) == [("a", True), ("b", False), ("d", False)]
    quiet = (_rule("a", fires=False), *(r for r in rules if r.id != "a"))
    assert sorted(s.id for s in match(quiet, None, set())) == ["b", "d"]


def _symptoms(case: str) -> tuple[str, list]:
    report = run("check", "--snapshot", str(FIXTURES / case), "-o", "json", *expected(case)["args"]).json()
    return report["status"], sorted((r["name"], s["id"], repr(s)) for r in report["results"] for s in r["symptoms"])


@pytest.mark.parametrize("case", CASES)
def test_shuffled_tables_give_the_same_symptoms(case, monkeypatch):
    want = _symptoms(case)
    shuffles = [tuple(reversed(t)) for t in (nodeset.RULES, daemonset.RULES)]
    shuffles += [tuple(random.Random(seed).sample(t, len(t))) for seed in (1, 2) for t in (nodeset.RULES, daemonset.RULES)]
    for ns_rules, ds_rules in zip(shuffles[::2], shuffles[1::2], strict=True):
        monkeypatch.setattr(nodeset, "RULES", ns_rules)
        monkeypatch.setattr(daemonset, "RULES", ds_rules)
        assert _symptoms(case) == want
