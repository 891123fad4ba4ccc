"""The reference in docs/ (its architecture page too) says what the code does."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from sunkcheck.render.rules import markdown
from tests.conftest import ROOT

PACKAGE = ROOT / "sunkcheck"
FOLDER_BULLET = re.compile(r"^- `sunkcheck/([\w/]+)/`")
NAMED = re.compile(r"`(?:sunkcheck/)?(\w+)(\.py)?`")


def architecture() -> str:
    """docs/architecture.md, one section: its module bullets."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert "\n## " not in page, "docs/architecture.md grew a section: name its modules in the one bullet list"
    return page


def bullets(section: str) -> list[str]:
    return ["- " + b for b in re.split(r"\n- ", "\n" + section)[1:]]


def modules() -> dict[str, set[str]]:
    """Module stems by folder ("" for the package itself); an __init__.py only when it holds code."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        body = ast.parse(path.read_text()).body
        if path.name == "__init__.py" and len(body) <= 1:  # a docstring alone says nothing worth naming
            continue
        folder = path.parent.relative_to(PACKAGE).as_posix()
        found.setdefault("" if folder == "." else folder, set()).add(path.stem)
    return found


def named(section: str) -> dict[str, set[str]]:
    """The modules each folder's bullet names (stem or stem.py), and the .py files the other bullets name."""
    out: dict[str, set[str]] = {}
    for bullet in bullets(section):
        folder = FOLDER_BULLET.match(bullet)
        key = folder.group(1) if folder else ""
        out.setdefault(key, set()).update(m[0] for m in NAMED.findall(bullet) if folder or m[1])
    return out


def test_architecture_page_names_every_module_and_only_modules_that_exist() -> None:
    have, said = modules(), named(architecture())
    for folder, stems in have.items():
        assert stems <= said.get(folder, set()), f"docs/architecture.md does not name {folder or 'sunkcheck'}/: " \
            f"{sorted(stems - said.get(folder, set()))}"
    for folder, stems in said.items():
        assert stems <= have.get(folder, set()) | {"sunkcheck"}, f"docs/architecture.md names what does not exist in " \
            f"{folder or 'sunkcheck'}/: {sorted(stems - have.get(folder, set()))}"


def test_the_architecture_check_catches_a_missing_and_an_invented_module() -> None:
    section = architecture()
    assert "`converge.py`" in section and "`feasibility.py`" in section
    assert "converge" not in named(section.replace("`converge.py`", "converge"))[""]
    assert "oracle" in named(section.replace("`feasibility.py`", "`feasibility.py`, `oracle.py`"))["analyze"]


def test_docs_symptom_table_is_the_registry() -> None:
    assert markdown() in (ROOT / "docs" / "symptoms.md").read_text(), \
        "docs/symptoms.md is stale: paste `sunkcheck rules -o markdown`"


def test_docs_stand_alone() -> None:
    """A reader of the repository can follow every link in docs/, and no page points outside it."""
    for page in (ROOT / "docs").glob("*.md"):
        text = page.read_text()
        assert not re.search(r"\.\./|contract \d|shared/", text), page.name
        for target in re.findall(r"\]\(([^)#]+)\)", text):
            assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_readme_links_to_docs_resolve() -> None:
    for target in re.findall(r"\]\((docs/[^)#]+)\)", (ROOT / "README.md").read_text()):
        assert (ROOT / target).exists(), target


def test_every_docs_page_is_in_the_index() -> None:
    """docs/README.md is the way in: a page it does not list is a page nobody finds."""
    index = (ROOT / "docs" / "README.md").read_text()
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert pages - set(re.findall(r"\]\(([\w-]+\.md)\)", index)) == set()


def test_readme_is_a_five_minute_read() -> None:
    """The reference lives in docs/; the README stays what a newcomer reads first."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


# What a reader of the repository cannot follow: notes kept outside it, and labels from reviews of the code.
OUTSIDE = re.compile(r"kubernetes-semantics|cks-sunk-facts|test-infra\.md|/work/shared|\bissue \d+|found by review|"
                     r"\breviewer\b|\bhelper-[a-z]\b|\bs\d+[a-z]?(?:-[a-z]+)+\b", re.I)


def test_no_comment_cites_what_is_outside_the_repository() -> None:
    """A comment says the fact itself, not where someone once read it."""
    files = [p for folder in ("sunkcheck", "tests", "benchmarks", "deploy", "fixtures", ".ci")
             for p in sorted((ROOT / folder).rglob("*")) if p.is_file() and p.suffix in {"", ".py", ".sh", ".yaml", ".cron"}]
    assert len(files) > 50
    cited = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in files if p != Path(__file__)
             for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if OUTSIDE.search(line)]
    assert cited == [], "\n".join(cited)


def test_the_citation_check_catches_each_kind() -> None:
    for line in ("# see kubernetes-semantics.md section 2", "(cks-sunk-facts: legacy)", '"""The reviewer\'s s7-labels-hand:',
                 "(found by review)", "# issue 16.1", "helper-b found it"):
        assert OUTSIDE.search(line), line
    assert not OUTSIDE.search("nodes s1 and s2 of pool hpc-a; gpu-operator controllers/state_manager.go")


def test_the_changelog_opens_with_unreleased_then_a_dated_section_for_this_version() -> None:
    from sunkcheck import __version__

    versions = re.findall(r"^## \[([^]]+)\](.*)$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert versions[0] == ("Unreleased", "")
    assert re.fullmatch(r" - \d{4}-\d{2}-\d{2}", dict(versions).get(__version__, "")), \
        f"CHANGELOG.md has no dated section for {__version__}, the version the program reports"
