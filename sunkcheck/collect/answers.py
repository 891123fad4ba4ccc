"""API answers held within bounds: each read into one buffer, every byte held at once (read, decoded, parsed)
charged to one budget, and the next page of a list asked for while this one is parsed."""

from __future__ import annotations

import gc
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sunkcheck.collect.errors import CallError
from sunkcheck.text import TooDense, json_doc

MAX_RESPONSE = 64 << 20
"""Bytes of one answer (a page of PAGE objects, or one object): a page of 500 real-size Nodes (a kubelet's
50-image list, managedFields: benchmarks/large_cluster.py) is 7 MB and of Pods 3 MB; 64 MiB holds 500 objects
of 128 KiB each. An answer past it is refused while it is read: a server streaming a body that never ends no
longer fills memory until the deadline."""
MAX_OBJECT = 8 << 20
"""Bytes of one object's JSON: etcd stores an object of at most 1.5 MiB (its --max-request-bytes) and the API server
takes a request body of at most 3 MiB, so no server sends one past about 3 MiB of JSON, twice that for text it
escapes (`<` as `\\u003c`); 8 MiB leaves room. serve refuses a watch event past it before it is parsed, and an
object of a list's page past it before it is kept."""
MAX_IN_FLIGHT = 128 << 20
"""Bytes of all answers held at once, by every read in flight (up to WORKERS steps, each with a page read
ahead, for each cluster checked at once): charged as the bytes arrive, given back when the answer is parsed
or dropped. An answer that would pass it fails its call. With one copy of a body while it is read, and one
decoded while it is parsed, and MAX_PARSED for what is parsed from them, a run stays inside the 512Mi of
deploy/cronjob.yaml however the API server answers (docs/limits.md); a real 5,000-Node cluster holds about
30 MB of answers at its busiest."""
MAX_PARSED = 192 << 20
"""Bytes the objects parsed from answers take at once, estimated from above before each is parsed
(parsed_size): a page of 500 real-size Nodes is estimated at 63 MB, of Pods at 43 MB, so a page of 500 Nodes
of up to about 35 KB each is parsed (a list asks for larger ones in smaller pages). JSON written to take the
most memory for its size (`[{"a":0},...]`, one object in every 8 bytes, as dense as text.DENSEST lets through)
takes 24 times its size: a page refused unparsed past 7 MiB of it, instead of taking 1.6 GB at 64 MiB."""
_CHUNK = 1 << 20  # read at a time: the budget is charged as each arrives


class Oversized(CallError):
    """An answer refused for its size alone (past MAX_RESPONSE, or estimated past MAX_PARSED): a list asks for
    the same page again with a smaller limit before it gives up."""


class Ahead:
    """A call run in a daemon thread while the caller works on: waited for only when its result is used, so
    an unused one (a guess that was wrong, a list that failed) never holds the run up."""

    def __init__(self, call: Callable, *args: object) -> None:
        self._outcome: tuple = (None, None)
        self._thread = threading.Thread(target=self._run, args=(call, *args), daemon=True)
        self._thread.start()

    def _run(self, call: Callable, *args: object) -> None:
        try:
            self._outcome = (call(*args), None)
        except Exception as e:  # raised in the caller's thread by result()
            self._outcome = (None, e)

    def result(self) -> Any:
        self._thread.join()
        value, error = self._outcome
        if error is not None:
            raise error
        return value


# The head of a list as API servers write it (kind, apiVersion, then metadata, then items): enough to read the
# continue token before the page is parsed. Anything else is simply not read ahead.
_LIST_HEAD = re.compile(rb'\A\s*\{\s*(?:"(?:kind|apiVersion)"\s*:\s*"[^"\\]*"\s*,\s*)*"metadata"\s*:\s*(\{[^{}]*\})')


class Budget:
    """Bytes held at once, up to `cap()` (read when charged: a test may lower it), shared by every thread."""

    def __init__(self, cap: Callable[[], int]) -> None:
        self.used = 0
        self._cap = cap
        self._room = threading.Condition()

    def charge(self, n: int, wait: bool = False) -> bool:
        """Whether `n` more bytes fit, charged if they do; `wait` (for `n` up to the cap) until they fit."""
        with self._room:
            if wait:
                self._room.wait_for(lambda: self.used + n <= self._cap())
            if self.used + n > self._cap():
                return False
            self.used += n
            return True

    def release(self, n: int) -> None:
        with self._room:
            self.used -= n
            self._room.notify_all()


budget = Budget(lambda: MAX_IN_FLIGHT)
parsing = Budget(lambda: MAX_PARSED)


class Body(bytearray):
    """An answer's bytes in one buffer (never a list of chunks joined into a second copy), charged to the budget
    until the buffer is dropped."""

    charged = 0

    def charge(self, n: int) -> bool:
        if not budget.charge(n):
            return False
        self.charged += n
        return True

    def drop(self) -> None:
        """Empties the buffer and gives its bytes back now: an exception's traceback may keep it alive."""
        self.clear()
        budget.release(self.charged)
        self.charged = 0

    def __del__(self) -> None:
        if self.charged:
            budget.release(self.charged)


def drop(body: bytearray) -> None:
    if isinstance(body, Body):
        body.drop()


def read(resp: Any, shown: str) -> bytearray:
    """The body in one buffer charged to MAX_IN_FLIGHT: with a Content-Length, charged first and read in one go
    (http.client stops at it); without one, a MiB at a time, each charged as it arrives. A body past
    MAX_RESPONSE (or one the budget cannot hold) fails the call, unread when its Content-Length says so, and
    closes the connection with the rest of it."""
    import urllib3

    length = resp.headers.get("Content-Length", "")
    body, refused = Body(), ""
    if length.isdigit():
        if int(length) > MAX_RESPONSE:
            refused = "size"
        elif not body.charge(int(length)):
            refused = "budget"
        else:
            try:
                body += resp.read(int(length))
                if len(body) < int(length):  # urllib3 hands over what came before the connection closed
                    raise urllib3.exceptions.ProtocolError("Connection broken", ConnectionError(
                        f"closed after {len(body):,} of {int(length):,} bytes"))
            except BaseException:
                body.drop()  # now: the traceback keeps this frame, and the body with it
                raise
            return body
    # urllib3's own reading of chunks tells a chunk length that is no number from a connection that closed
    chunks = resp.read_chunked(_CHUNK) if resp.chunked else iter(lambda: resp.read(_CHUNK), b"")
    for chunk in chunks:
        if len(body) + len(chunk) > MAX_RESPONSE:
            refused = "size"
        elif not body.charge(len(chunk)):
            refused = "budget"
        else:
            body += chunk
            continue
        break
    else:
        return body
    body.drop()
    resp.close()
    if refused == "budget":
        raise CallError(shown, resp.status, f"GET {shown}: the answers being read at once would pass "
                                            f"{size(MAX_IN_FLIGHT)}, the most sunkcheck holds; this one was stopped")
    raise Oversized(shown, resp.status, f"GET {shown}: the API server's answer is larger than "
                                        f"{size(MAX_RESPONSE)}, the most sunkcheck reads of one answer")


def size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n:,} bytes"


def continue_ahead(body: bytearray) -> str | None:
    """A list page's continue token, from its head alone: the next page can be asked for while this one
    is parsed (the token the parsed page holds decides; a guess that differs is not used)."""
    head = _LIST_HEAD.match(body)
    try:
        token = json_doc(head.group(1)).get("continue") if head else None
    except ValueError:
        return None
    return token if isinstance(token, str) and token else None


@contextmanager
def parsed(body: bytearray, shown: str, objects: int | None = None) -> Iterator[dict]:
    """The answer parsed, its bytes dropped: its decoded text is charged to MAX_IN_FLIGHT while it is parsed,
    and its objects, at parsed_size (`objects`: estimated already), to MAX_PARSED until the block ends (a list's
    page while its items are checked and kept). An answer estimated past MAX_PARSED is refused unparsed; one that
    fits waits until the answers being parsed leave it room (json holds the interpreter while it parses: no time
    is lost)."""
    objects = estimated(body, shown) if objects is None else objects
    text = len(body) * width(body)
    if not budget.charge(text):
        drop(body)
        raise CallError(shown, 200, f"GET {shown}: the API server's answer, decoded to be parsed, would pass with the "
                                    f"other answers held {size(MAX_IN_FLIGHT)}, the most sunkcheck holds at once")
    parsing.charge(objects, wait=True)
    try:
        yield _parse(body, shown, text)
    finally:
        parsing.release(objects)


def estimated(body: bytearray, shown: str) -> int:
    """The answer's parsed_size; Oversized, its bytes dropped, past MAX_PARSED."""
    objects = parsed_size(body)
    if objects > MAX_PARSED:
        read = len(body)
        drop(body)  # now: a traceback keeps the frames that hold it
        raise Oversized(shown, 200, f"GET {shown}: the API server's answer would take up to {objects >> 20:,} MiB "
                                    f"once parsed ({read:,} bytes), more than {size(MAX_PARSED)}, the most "
                                    "sunkcheck parses at once")
    return objects


def _parse(body: bytearray, shown: str, text: int) -> dict:
    # Pausing the cyclic GC makes parsing a large list several times faster (no collections of the
    # millions of young containers json creates).
    enabled = gc.isenabled()
    gc.disable()
    try:
        doc = json_doc(body)
    except TooDense as e:
        raise CallError(shown, 200, f"GET {shown}: the API server's answer holds {e}") from None
    except ValueError as e:
        raise CallError(shown, 200, f"GET {shown}: the API server answered with something that is not JSON ({e})") from None
    finally:
        drop(body)
        budget.release(text)
        if enabled:
            gc.enable()
    if not isinstance(doc, dict):
        raise CallError(shown, 200, f"GET {shown}: the API server answered with a JSON {type(doc).__name__}")
    return doc


VALUE = 80
"""Bytes json takes at most for each value, key or item, besides its text: the slot in its list or dict (a
dict's table grows by doubling), a str's header or a number (a float is 24 bytes, an int under 2**60 32)."""
CONTAINER = 128
"""Bytes json takes at most for each object or list, besides its items: a dict of one key is 184 bytes."""
_ASTRAL = re.compile(rb"[\xf0-\xff]")  # UTF-8 lead bytes of U+10000 and past (or bytes that are not UTF-8)
_WIDE = re.compile(rb"[\xc4-\xef]")  # of U+0100..U+FFFF
_ESCAPED_ASTRAL = re.compile(rb"\\u[dD][89abAB]")  # the first of a surrogate pair
_ESCAPED_WIDE = re.compile(rb"\\u(?!00)")
_NOT_MARKS = bytes(c for c in range(256) if c not in b"{[,:")  # deleted, the rest counts objects, lists and values


def width(body: bytes | bytearray) -> int:
    """Bytes a character of the text in `body` takes at most once decoded (no more characters than bytes, in
    any encoding), in the document or in any string json makes of it: one character past U+FFFF makes every
    character of its string four bytes."""
    ascii_only = body.isascii()  # then only an escape can make a character past U+00FF (fast to rule out)
    if _ESCAPED_ASTRAL.search(body) or (not ascii_only and _ASTRAL.search(body)):
        return 4
    return 2 if _ESCAPED_WIDE.search(body) or (not ascii_only and _WIDE.search(body)) else 1


def parsed_size(body: bytes | bytearray) -> int:
    """At most the bytes of the objects json makes of `body`, from what its text can hold: each `{` or `[` at
    most one object or list, each `,` and `:` (and each object or list, for its first) at most one more
    value, key or item, and each byte at most one character (all counted in strings too: only ever more).
    About 2.5 times what real objects take: a page of 500 Nodes (7 MB) takes 24 MB, of Pods (2.3 MB) 14 MB."""
    containers = values = 0
    for start in range(0, len(body), _CHUNK):  # a MiB at a time: the marks of dense text are nearly all of it
        marks = body[start:start + _CHUNK].translate(None, _NOT_MARKS)
        containers += marks.count(b"{") + marks.count(b"[")
        values += len(marks)
    return VALUE * (values + 1) + CONTAINER * containers + width(body) * len(body)


def unmanaged(obj: dict) -> dict:
    """Drop the server's field-manager bookkeeping as it arrives, as `kubectl get -o json` does: never read,
    and a large share of a real object's size (so of peak memory on a big list)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj
