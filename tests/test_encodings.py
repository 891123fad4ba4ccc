"""Any terminal, any encoding (issue 27 section 6): with a standard output that cannot encode every character
(PYTHONIOENCODING=ascii or latin-1, LC_ALL=C without UTF-8 mode) every format still prints the diagnosis,
what the encoding lacks escaped; files sunkcheck writes stay UTF-8 whatever the locale."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES, ROOT, TOKEN
from tests.kubeapi import kubeconfig

# `≠` in the nodepool step's summary (CURRENT 5 ≠ TARGET 8), in every format
CASE = FIXTURES / "pool-below-target"
# `≈` in a quantity sunkcheck cannot write exactly
QUANTITY_CASE = FIXTURES / "no-feasible-requests-too-large"
ENCODINGS = {"ascii": {"PYTHONIOENCODING": "ascii"}, "latin-1": {"PYTHONIOENCODING": "latin-1"},
             "C locale": {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}}


def sunkcheck(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """The real executable writing to pipes in the given encoding (bytes: what the terminal would get)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("LANG", "LC_ALL", "LC_CTYPE", "PYTHONUTF8")}
    return subprocess.run([sys.executable, "-m", "sunkcheck", *args], capture_output=True, timeout=60, cwd=ROOT,
                          env=environ | {"PYTHONPATH": str(ROOT)} | env)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("args", [("check", "--snapshot", str(CASE), "-o", fmt) for fmt in ("table", "plain", "json", "nagios")]
                         + [("explain", "--snapshot", str(QUANTITY_CASE), "-o", fmt) for fmt in ("table", "plain", "json")]
                         + [("rules", "-o", fmt) for fmt in ("table", "plain", "json")], ids=" ".join)
def test_every_format_prints_in_a_narrow_encoding(encoding, args):
    p = sunkcheck(ENCODINGS[encoding], *args)
    assert b"Error" not in p.stderr, p.stderr
    assert p.returncode in (0, 1), p.stderr
    out = p.stdout.decode("ascii")  # whatever the encoding lacks is escaped, not written in another one
    if args[0] == "check":
        assert "CURRENT 5 \\u2260 TARGET 8" in out
    if args[0] == "explain":
        assert "\\u2248" in out
    if "table" in args:  # rich draws its rules and boxes in ASCII rather than escaping each line character
        assert "\\u25" not in out


def test_escaped_json_reads_back_as_the_same_document():
    utf8 = sunkcheck({"PYTHONIOENCODING": "utf-8"}, "check", "--snapshot", str(CASE), "-o", "json")
    ascii_ = sunkcheck({"PYTHONIOENCODING": "ascii"}, "check", "--snapshot", str(CASE), "-o", "json")
    docs = [json.loads(p.stdout) for p in (utf8, ascii_)]
    for doc in docs:
        doc.pop("checked_at")  # the time of the run differs
    assert "\u2260" in json.dumps(docs[0], ensure_ascii=False)
    assert docs[0] == docs[1]


def test_characters_past_the_basic_plane_escape_as_a_json_pair():
    from sunkcheck.text import ESCAPED, escaping_output

    escaping_output()  # registers the error handler
    text = "pool-\u00e9-\U0001f600"
    escaped = text.encode("ascii", errors=ESCAPED)
    assert escaped == b"pool-\\u00e9-\\ud83d\\ude00"
    assert json.loads(b'"' + escaped + b'"') == text


def test_textfile_is_utf8_in_the_c_locale(serve, cert, tmp_path):
    """The context's name is a label of every sample: a name the locale cannot encode still writes."""
    api = serve("healthy-pool-name")
    config = kubeconfig(tmp_path / "kubeconfig", api.url, token=TOKEN, ca=cert[0], context="staging-\u00e9")
    doc = json.loads(config.read_text())  # a second context: with one, no sample names its context
    doc["contexts"].append({"name": "prod", "context": doc["contexts"][0]["context"]})
    config.write_text(json.dumps(doc))
    textfile = tmp_path / "sunkcheck.prom"
    p = sunkcheck(ENCODINGS["C locale"] | {"KUBECONFIG": str(config)}, "check", "--all-contexts",
                  "--nodeset", "slurm-cpu-batch", "--textfile", str(textfile), "-o", "nagios")
    assert p.returncode == 0, p.stderr
    assert 'context="staging-\u00e9"' in textfile.read_text(encoding="utf-8")
