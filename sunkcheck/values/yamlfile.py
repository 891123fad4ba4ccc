"""YAML read safely (no tags executed) with the line of every key and item, for `file:line` findings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sunkcheck.model import InputError

Path_ = tuple  # a location inside a document: keys and list indexes


@dataclass(frozen=True)
class Document:
    """One YAML document: its data, where it came from, and the line of each path inside it."""

    file: str
    index: int
    data: object
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
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    docs = []
    try:
        loader = yaml.SafeLoader(text)
        try:
            index = 0
            while loader.check_node():
                node = loader.get_node()
                lines: dict = {}
                _lines(node, (), lines)
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


def _lines(node, path: Path_, lines: dict) -> None:
    import yaml

    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = path + (key.value,)
            lines[child] = key.start_mark.line + 1
            _lines(value, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _lines(item, path + (i,), lines)
