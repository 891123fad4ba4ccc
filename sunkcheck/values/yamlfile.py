"""YAML read safely (no tags executed) with the line of every key and item, for `file:line` findings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from pathlib import Path

from sunkcheck.model import InputError
from sunkcheck.snapshot import read_regular

Path_ = tuple  # a location inside a document: keys and list indexes

MAX_BYTES = 16 << 20
"""A values file past this is refused while reading (a SUNK values file is kilobytes)."""
MAX_DEPTH = 100
"""Nesting deeper than this is refused: PyYAML composes recursively, and no values file comes close."""
ALIAS_GROWTH, ALIAS_FLOOR = 10, 10_000
"""Aliases may expand a document to 10 times the nodes written (and always to 10,000): more is a YAML bomb
("billion laughs"), whose few hundred bytes become billions of nodes to every consumer that walks the data."""


@dataclass(frozen=True)
class Document:
    """One YAML document: its data, where it came from, and the line of each path inside it."""

    file: str
    index: int
    data: Any  # whatever the YAML holds
    lines: dict

    def line(self, path: Path_) -> int:
        """The line of `path`, or of its nearest ancestor that has one."""
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)

    def where(self, path: Path_) -> str:
        return f"{self.file}:{self.line(path)}"


def load(file: str | Path) -> list[Document]:
    """Every document of a YAML file; unreadable or invalid YAML is one InputError naming file:line."""
    import yaml

    path = Path(file)
    try:
        text = read_regular(path, fifo=True, limit=MAX_BYTES).decode()  # `lint <(helm get values ...)`
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: cannot read: {e}") from None
    docs = []
    try:
        loader = _Loader(text)
        try:
            index = 0
            while loader.check_node():
                node = loader.get_node()
                _refuse_alias_bombs(node, path)
                lines = _lines(node, loader, path)
                docs.append(Document(str(path), index, loader.construct_document(node), lines))
                index += 1
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise InputError(f"{where}: invalid YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise InputError(f"{path}: invalid YAML: {e}") from None
    return [d for d in docs if d.data is not None]


def _Loader(text: str) -> Any:  # PyYAML has no type information
    """PyYAML's safe loader, refusing a document nested deeper than MAX_DEPTH as invalid YAML at that line."""
    import yaml

    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels",
                                                  self.peek_event().start_mark)
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_yaml_int(self, node: Any) -> int:
            try:
                return super().construct_yaml_int(node)
            except ValueError as e:  # past Python's digit limit: the advice after ';' is for programmers
                raise yaml.constructor.ConstructorError(None, None, str(e).partition(";")[0], node.start_mark) from None

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)

    return Loader(text)


def _children(node: Any) -> list:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _refuse_alias_bombs(root: Any, path: Path) -> None:
    """Count the nodes the document expands to, each written node once (memoised, iteratively: aliases
    can chain far deeper than MAX_DEPTH), and refuse an alias to itself or an expansion past the bound."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()  # nodes whose children are being counted: meeting one again is a cycle
    stack = [(root, False)]
    while stack:
        node, counted = stack.pop()
        key = id(node)
        if counted:
            open_.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
        elif key in open_:
            raise InputError(f"{path}:{node.start_mark.line + 1}: invalid YAML: an alias refers to itself")
        elif key not in sizes:
            open_.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in _children(node))
    bound = max(ALIAS_FLOOR, ALIAS_GROWTH * len(sizes))
    if sizes[id(root)] > bound:
        raise InputError(f"{path}:{root.start_mark.line + 1}: aliases expand {len(sizes)} written YAML nodes to "
                         f"{sizes[id(root)]:,}, over {bound:,}: refusing what looks like a YAML bomb")


_STR = "tag:yaml.org,2002:str"
_SURROGATE = re.compile("[\ud800-\udfff]")


def _lines(root: Any, loader: Any, file: Path) -> dict:
    """The line of every key and item, walking each written node once: a path through an alias gets the
    line of the alias (Document.line falls back to the nearest ancestor). A key is recorded as the data
    holds it (`1:` as the integer 1, `null:` as None), so a check can name the line of a key of the wrong
    type. A scalar holding a lone UTF-16 surrogate (the escape `"\\uD800"`, which is no character and no
    output can write) is refused here, at its line, for every consumer of the file."""
    import yaml

    lines: dict = {}
    seen: set[int] = set()
    lone = []  # scalars holding a lone surrogate: the first in the file is named
    stack: list[tuple[Any, tuple]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        lines.setdefault(path, node.start_mark.line + 1)
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            lone += [(node, c) for c in _SURROGATE.findall(node.value)[:1]]
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    lone += [(key, c) for c in _SURROGATE.findall(key.value)[:1]]
                    name = key.value if key.tag == _STR else loader.construct_object(key)
                else:  # a list or mapping as a key: the constructor refuses it as unhashable
                    name = key.value
                child = (*path, name)
                lines[child] = key.start_mark.line + 1
                stack.append((value, child))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in enumerate(node.value))
    if lone:
        first, char = min(lone, key=lambda found: found[0].start_mark.index)
        raise InputError(f"{file}:{first.start_mark.line + 1}: invalid YAML: a string holds a lone UTF-16 surrogate "
                         f"\\u{ord(char):04x}, not a character")
    return lines
