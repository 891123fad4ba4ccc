"""Lists in a list page's text that nothing reads, emptied before the page is parsed: parsing holds the interpreter
and is most of a large list's time, and what it would make of these lists is dropped at once or never read."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from sunkcheck.collect import answers

Span = tuple[int, int]
"""Where a list opens and closes in the text (its `[` and `]`): what lies between is cut."""

_MANAGED = re.compile(rb'"managedFields" ?: ?\[')
_NEXT_KEY = re.compile(rb'\] ?\} ?, ?"[A-Za-z]')


def empty(page: bytearray, spans: Iterable[Span]) -> None:
    """Empty each list of `spans` (in the order of the text) in place. The pieces kept and the text they make are
    charged to the answers' budget while they are joined (none left: nothing is cut)."""
    cuts, end = [], 0
    for opened, closed in spans:
        if opened >= end:  # a list inside one already cut is cut with it
            cuts.append((opened, closed))
            end = closed
    held = 2 * len(page)
    if not cuts or not answers.budget.charge(held):
        return
    try:
        ends = [0, *(end for opened, closed in cuts for end in (opened + 1, closed)), len(page)]
        page[:] = b"".join([page[a:b] for a, b in zip(ends[::2], ends[1::2], strict=True)])
    finally:
        answers.budget.release(held)


def managed_fields(page: bytearray) -> Iterator[Span]:
    """Where each object's managedFields list opens and closes, in order; `unmanaged` drops what is left of it.

    An API server writes managedFields last in an object's metadata: the list is cut when the first `]` after its
    `[` closes the metadata and a key follows (`]},"spec"`), with no `[` between them. In any valid JSON that `]`
    closes this list: no list opens inside it, and it is no string's, since a string's `"` before `spec` would end
    the string in front of a bare word. Any other list (one holding a `[`, or not last) is parsed as it is; text that
    is not JSON, once cut, can only make a document a server could have sent, or be refused."""
    at = 0
    while (i := page.find(b'"managedFields"', at)) >= 0:
        at = i + 1
        key = _MANAGED.match(page, i)
        if not key or page[i - 1:i] == b"\\":  # not a key, or a key that only ends in "managedFields"
            continue
        opened = key.end() - 1
        closed = page.find(b"]", opened)
        if closed < 0:
            return
        at = closed
        if page.find(b"[", opened + 1, closed) < 0 and _NEXT_KEY.match(page, closed):
            yield opened, closed
