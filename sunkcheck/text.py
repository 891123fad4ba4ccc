"""Untrusted text stays text: strip terminal escapes and control characters from cluster strings, show invisible
characters, and parse JSON from outside without an error of an unexpected kind. Counts read as English: `1 Node`,
`0 Nodes`."""

from __future__ import annotations

import codecs
import dataclasses
import io
import re
import sys
import unicodedata
from typing import Any, NoReturn, TypeVar, cast

# CSI / OSC / other ESC sequences, then any remaining C0/C1 control except newline and tab
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
# ... and Unicode's Bidi_Control characters (the marks, embeddings, overrides and isolates), which can make a
# terminal show text in another order
_BIDI = r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROLS = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
# what of them json.dumps(ensure_ascii=False) writes raw (it escapes only C0), and the line and paragraph
# separators (line breaks to JavaScript and some viewers)
_RAW_IN_JSON = re.compile(rf"[\x7f-\x9f\u2028\u2029{_BIDI}]")


_USERINFO = re.compile(r"(?<=://)[^/?#]*@")  # up to the authority's last `@`, as urlsplit reads it


def without_userinfo(url: str) -> str:
    """`https://user:pass@host:6443/x` -> `https://host:6443/x`, for every URL a message shows; by pattern, so
    that a URL no parser accepts (`http://u:p@[x`, a port past 65535) loses its password too."""
    return _USERINFO.sub("", url)


def shown_server(url: str) -> str:
    """A server's or a proxy's URL as messages, snapshots, JSON and serve's page show it: without its userinfo, query
    or fragment (`https://u:p@host:6443/?access_token=T` -> `https://host:6443/`), where a credential may ride.
    kubectl sends neither query nor fragment of a server to it."""
    return without_userinfo(url).partition("?")[0].partition("#")[0]


# Unicode's format characters (zero-width spaces and joiners, the byte order mark, tags) draw nothing, and the line
# and paragraph separators break a line where only sunkcheck may: shown as their escapes
_INVISIBLE = frozenset({"Cf", "Zl", "Zp"})


def safe(text: object, *, one_line: bool = False) -> str:
    """`text` (str() of it) with escape sequences removed, control characters (a tab too, but one line's) shown as `?`
    and invisible ones as their escapes (`\\u200b`); `one_line`: every run of whitespace, line breaks included, one
    space. Text that needs none of it is returned as it is (the same object)."""
    if not one_line and isinstance(text, str) and text.isascii() and text.isprintable():  # most text: no regex
        return text
    cleaned = _CONTROLS.sub("?", _ESCAPES.sub("", str(text)))
    cleaned = " ".join(cleaned.split()) if one_line else cleaned.replace("\t", "?")
    return cleaned if cleaned.isascii() else "".join(map(_shown, cleaned))


def _shown(char: str) -> str:
    if unicodedata.category(char) not in _INVISIBLE:
        return char
    return f"\\u{ord(char):04x}" if ord(char) < 0x10000 else f"\\U{ord(char):08x}"


T = TypeVar("T")


def inert(value: T) -> T:
    """`value` (a string, or a dataclass or tuple of them, at any depth) with every string in it made `safe`: what a
    terminal output is given, so no field a row, a step or a note fills can carry an escape there. What needs no
    change is returned as it is."""
    if isinstance(value, str):
        return cast(T, safe(value))
    if isinstance(value, tuple):
        items = [inert(item) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return cast(T, type(value)(*items) if hasattr(value, "_fields") else tuple(items))  # a NamedTuple's fields
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {f.name: new for f in dataclasses.fields(value)
                   if f.init and (new := inert(old := getattr(value, f.name))) is not old}
        return dataclasses.replace(value, **changed) if changed else value
    return value


def json_escaped(encoded: str) -> str:
    """JSON text with the controls a terminal (or `jq -r` into one) would act on written as \\uXXXX: the
    decoded data stays the cluster's text. They are not ASCII but DEL, so they occur only inside strings."""
    if encoded.isascii() and "\x7f" not in encoded:  # the common case, scanned ten times faster than by the regex
        return encoded
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)


def escape_unencodable(err: UnicodeError) -> tuple[str, int]:
    """The codec error handler of standard output and error (ESCAPED): a character their encoding cannot
    write (ASCII, Latin-1) is written as \\uXXXX (a UTF-16 pair past U+FFFF), so a diagnosis still prints,
    and stays valid JSON: outside strings JSON is ASCII."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    escaped: list[str] = []
    for char in err.object[err.start:err.end]:
        code = ord(char)
        units = (code,) if code < 0x10000 else (0xD800 + ((code - 0x10000) >> 10), 0xDC00 + (code & 0x3FF))
        escaped.extend(f"\\u{unit:04x}" for unit in units)
    return "".join(escaped), err.end


ESCAPED = "sunkcheck.escape"


def escaping_output() -> None:
    """A standard output or error that cannot encode every character (PYTHONIOENCODING=ascii, LC_ALL=C
    without UTF-8 mode) escapes what it cannot write, instead of failing the run with UnicodeEncodeError."""
    codecs.register_error(ESCAPED, escape_unencodable)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors=ESCAPED)


# A `\uD800`-`\uDFFF` escape: how a lone surrogate reaches a str that came from text (which cannot hold one)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


DENSEST = 8
"""Bytes of JSON text per object or list, at least: Kubernetes objects (managedFields' `"f:x":{}` included)
have several times more. Denser text (`[{},{},...]`) takes 40 times its size to parse; refused unparsed."""


class TooDense(ValueError):
    """JSON text with more objects and lists than its size allows (DENSEST)."""


def _check_density(data: str | bytes | bytearray) -> None:
    # braces inside strings are counted too: only ever more
    containers = (data.count(b"{") + data.count(b"[") if isinstance(data, (bytes, bytearray))
                  else data.count("{") + data.count("["))
    if containers > 1 << 17 and containers * DENSEST > len(data):  # small documents: a few MB at most
        raise TooDense(f"{containers:,} JSON objects and lists in {len(data):,} bytes, more than one in "
                       f"{DENSEST} bytes: no Kubernetes object is written so densely")


def json_doc(data: str | bytes | bytearray) -> Any:
    """`json.loads` of untrusted data: a document nested too deeply for the parser is a ValueError like any
    other malformed one (as an integer past Python's digit limit is already), never a RecursionError; so are
    a string holding a lone UTF-16 surrogate, which is no character: no output could write it, and NaN,
    Infinity and -Infinity, which are not JSON."""
    import json

    _check_density(data)
    if isinstance(data, (bytes, bytearray)):  # json.loads would decode the UTF-8 of a surrogate too ('surrogatepass')
        data = data.decode(json.detect_encoding(data))
    try:
        doc = json.loads(data, parse_constant=_not_json)  # called for NaN and ±Infinity alone: no cost otherwise
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as e:
        if type(e) is ValueError:  # an integer past the digit limit: the advice after ';' is for programmers
            raise ValueError(str(e).partition(";")[0]) from None
        raise
    if _SURROGATE_ESCAPE.search(data):  # rare (a pair escapes a character past U+FFFF): only then look closer
        lone = _SURROGATE.search(json.dumps(doc, ensure_ascii=False))
        if lone:
            raise ValueError(f"a string holds a lone UTF-16 surrogate \\u{ord(lone.group()):04x}, not a character")
    return doc


def _not_json(name: str) -> NoReturn:
    """NaN, Infinity and -Infinity, which Python's json reads by default: they are not JSON (RFC 8259)."""
    raise ValueError(f"{name} is not JSON")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 Node`, `0 Nodes`, `2,000 Nodes`: a count with its noun in agreement (`plural` where adding s is wrong)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
