"""`check -o html` and serve's `/`: the report as one self-contained page (inline CSS and JS, no external asset:
clusters are often offline, and an incident attachment must open anywhere).

The page carries the `-o json` document (the same data, so the same redaction) and draws it in the browser: a
static file and the live page (`live_url`, polled) run one code path, first paint and every update alike.
Cluster strings reach the DOM only as text nodes and attribute values; the embedded JSON has `<`, `>` and `&`
escaped, so no string can close its script element, and no byte of the page is a control a terminal acts on.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from functools import cache
from importlib import resources

from sunkcheck.model import Report, Status
from sunkcheck.render.json import report_dict
from sunkcheck.render.order import EVIDENCE_SHOWN, NOT_CONVERGED
from sunkcheck.text import _CONTROLS, _ESCAPES, json_escaped

VERDICTS = (
    # key (`feasible`, or the check a Node fails: the JSON schema's check names, in the engine's order, which is
    # also which one colours a Node failing several), legend text, the cell's letter (the cue besides colour),
    # background colour (white text on it: contrast at least 4.5:1, tests/test_html.py)
    ("feasible", "feasible", "\u2713", "#1a7f37"),
    ("state", "NotReady or not production", "N", "#57606a"),
    ("unschedulable", "cordoned", "C", "#6639ba"),
    ("affinity", "affinity or nodeSelector mismatch", "A", "#b35900"),
    ("taint", "untolerated taint", "T", "#cf222e"),
    ("resources", "resources short", "R", "#0550ae"),
    ("claimed", "claimed by another NodeSet", "S", "#99286e"),
)
POLL_MS = 3000  # the live page's poll: a change shows within seconds; a cached answer costs the server little
_SCRIPT_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def page(report: Report, *, live_url: str | None = None) -> str:
    """The HTML document of `report`; with `live_url` (serve's /api/v1/check), it updates itself from there."""
    from sunkcheck.render.plain import render_report as plain

    config = {"live_url": live_url, "poll_ms": POLL_MS, "evidence_shown": EVIDENCE_SHOWN, "not_converged": NOT_CONVERGED,
              "ranks": {s.value: s.rank for s in Status},
              "verdicts": [{"key": k, "label": label, "glyph": glyph} for k, label, glyph, _ in VERDICTS],
              # text.safe's patterns: the page drops terminal escapes and shows controls and Bidi marks as `?`
              "escapes": _ESCAPES.pattern, "controls": _CONTROLS.pattern}
    style, script, text = _style(), _script(), html.escape(plain(report))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{policy()}">
<meta name="referrer" content="no-referrer">
<title>sunkcheck {report.status.name}</title>
<style>{style}</style>
</head>
<body>
<noscript><p>This page draws itself with JavaScript; without it, the report as text:</p><pre>{text}</pre></noscript>
<div id="app"></div>
<script type="application/json" id="sunkcheck-report">{_embedded(report_dict(report))}</script>
<script type="application/json" id="sunkcheck-config">{_embedded(config)}</script>
<script>{script}</script>
</body>
</html>
"""


def policy() -> str:
    """The page's Content-Security-Policy (in the page, and serve's header): only its own style and script, no
    connection but to where it came from."""
    return (f"default-src 'none'; style-src '{_digest(_style())}'; script-src '{_digest(_script())}'; "
            "connect-src 'self'; base-uri 'none'; form-action 'none'")


def _embedded(doc: dict) -> str:
    """JSON that is inert inside a <script> element (no `</script>` or `<!--` can form) and in a terminal that
    shows the page's source (controls and Bidi marks written as \\uXXXX, as `-o json` does): the data is the same."""
    return json_escaped(json.dumps(doc, ensure_ascii=False)).translate(_SCRIPT_ESCAPES)


def _digest(text: str) -> str:
    """The CSP source allowing exactly this inline element: nothing injected could run or restyle the page."""
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


@cache
def _style() -> str:
    cells = "".join(f".v-{key}{{background:{colour}}}" for key, _, _, colour in VERDICTS)
    return resources.files(__package__).joinpath("page.css").read_text() + cells + "\n"


@cache
def _script() -> str:
    return resources.files(__package__).joinpath("page.js").read_text()
