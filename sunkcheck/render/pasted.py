"""A fix or a hint as a terminal's report prints it, safe to paste whole into a shell: each command and line of YAML
as written (pasted, a command runs and a snippet reads as is), and its words as shell comments (`# `, `#   ` where they
wrap), so that only its commands run, whatever a cluster string put at the start of a line. A string quoted in the
words (`prose` quotes a cluster string holding a space) is never broken across lines."""

from __future__ import annotations

import re

from sunkcheck.render.explain import wrapped
from sunkcheck.bounds import Kind, line_kind

COMMENT, HANG = "# ", "  "
# a single-quoted string starting a word, as shlex.quote writes one (a quote inside it as '"'"')
_QUOTED = re.compile(r"""(?:(?<=[\s(\[])|^)'[^']*'(?:"'"'[^']*')*""")
_HELD = "\0"  # a space inside a quoted string while the words wrap: `safe` leaves no NUL in text


def fix_lines(text: str, width: int | None) -> list[tuple[Kind, str]]:
    """`text` (inert: its only line break "\\n") line for line within `width` (None: a line each), its words
    wrapped as comments, its commands and YAML whole, each line with its kind."""
    out: list[tuple[Kind, str]] = []
    for line in text.split("\n"):
        kind = line_kind(line)
        out += [(kind, line)] if kind != "prose" else [("prose", x) for x in commented(line, width)]
    return out


def commented(words: str, width: int | None) -> list[str]:
    """A line of words as shell comments within `width`, broken at spaces but never inside a quoted string."""
    held = _QUOTED.sub(lambda m: m.group().replace(" ", _HELD), words)
    return [x.replace(_HELD, " ").rstrip() for x in wrapped(held, width, COMMENT, HANG, whole=True)]
