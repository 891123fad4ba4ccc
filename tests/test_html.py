"""`check -o html` (and serve's `/`): the page itself, and the page in a real browser (Debian's chromium and
chromedriver, driven by selenium: tests/install-deps.sh installs them)."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from sunkcheck import snapshot
from sunkcheck.model import NodeVerdict, Report, Symptom
from sunkcheck.pipeline import diagnose
from sunkcheck.render import html as render_html
from sunkcheck.render.html import VERDICTS, page
from sunkcheck.render.json import report_dict
from sunkcheck.symptoms.fixes import steps
from sunkcheck.target import Target
from tests.conftest import FIXTURES, ROOT, assert_quiet, run, sections, wait_for
from tests.test_fixes import drained_eviction

HOSTILE = "<img src=x onerror=alert(1)>"
CHECK_NAMES = json.loads((ROOT / "sunkcheck" / "schemas" / "check.v1.json").read_text())["$defs"]["check_name"]["enum"]


def report(case: str) -> Report:
    return diagnose(snapshot.load(FIXTURES / case), Target())


def embedded(html: str, element: str = "sunkcheck-report") -> Any:
    found = re.search(rf'<script type="application/json" id="{element}">(.*?)</script>', html, re.S)
    assert found, element
    return json.loads(found[1])


def everywhere(r: Report, payload: str) -> Report:
    """`r` with `payload` in every string a cluster or a snapshot can put there: names, pools, reasons, rows."""
    def node(v: NodeVerdict) -> NodeVerdict:
        return replace(v, name=v.name + payload, pool=(v.pool or "") + payload,
                       reasons=tuple(replace(x, detail=x.detail + payload) for x in v.reasons))

    def symptom(s: Symptom) -> Symptom:
        return replace(s, title=s.title + payload, cause=s.cause + payload, fix=s.fix + "\n" + payload,
                       evidence=tuple(e + payload for e in s.evidence))
    results = tuple(replace(x, name=x.name + payload, namespace=x.namespace + payload, context=payload,
                            pools=tuple(p + payload for p in x.pools), pool_source=x.pool_source + payload,
                            steps=tuple(replace(s, summary=s.summary + payload) for s in x.steps),
                            symptoms=tuple(map(symptom, x.symptoms)), nodes=tuple(map(node, x.nodes)))
                    for x in r.results)
    return replace(r, results=results, errors=(payload,))


# --- the page as text -------------------------------------------------------------------------------

def test_the_page_carries_the_json_document_and_nothing_else_of_the_cluster() -> None:
    """The same data as -o json, so the same redaction; the config holds sunkcheck's own tables only."""
    r = report("two-problems")
    html = page(r, live_url="/api/v1/check")
    assert embedded(html) == report_dict(r)
    config = embedded(html, "sunkcheck-config")
    assert config["live_url"] == "/api/v1/check" and [v["key"] for v in config["verdicts"]] == [v[0] for v in VERDICTS]


def test_no_secret_of_the_snapshot_reaches_the_page(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "two-problems", snap)
    secret = "s3cr3t-t0ken-value"
    for stem in ("pods", "nodesets"):
        doc = json.loads((snap / f"{stem}.json").read_text())
        for item in doc["items"]:
            spec = item["spec"]["template"]["spec"] if stem == "nodesets" else item["spec"]
            for c in spec["containers"]:
                c["env"] = [{"name": "TOKEN", "value": secret}]
                c["args"] = [f"--token={secret}"]
            item["metadata"].setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = secret
        (snap / f"{stem}.json").write_text(json.dumps(doc))
    out = run("check", "--snapshot", str(snap), "-o", "html")
    assert out.code == 1 and out.out.startswith("<!DOCTYPE html>")
    assert secret not in out.out


def test_no_cluster_string_becomes_markup() -> None:
    """Not even one that closes the script element holding the data."""
    payload = "</script><!--" + HOSTILE
    html = page(everywhere(report("several-nodesets"), payload))
    assert "<img" not in html and "<!--" not in html
    assert html.count("</script>") == 3  # the data, the config and the code: none closed early
    assert embedded(html)["errors"] == [payload]  # escaped, not lost


def test_no_byte_of_the_page_is_a_control_a_terminal_acts_on(tmp_path: Path) -> None:
    """`cat report.html` in a terminal: C1 controls (CSI is U+009B), Bidi overrides and line separators in
    cluster strings are escaped in the embedded JSON, as in `-o json`, and the data is unchanged."""
    payload = "a\x9b31mb\x85\u202ec\u2066\u2028\x1b[2J\x7f"
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "two-problems", snap)
    pools = json.loads((snap / "nodepools.json").read_text())
    for pool in pools["items"]:
        for condition in pool["status"]["conditions"]:
            condition["reason"] += payload  # the pool's wait shows in a step and the evidence
    (snap / "nodepools.json").write_text(json.dumps(pools))
    html = run("check", "--snapshot", str(snap), "-o", "html").out
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]", html)
    assert repr(payload)[1:-1] in repr(embedded(html))  # the data the page draws: the cluster's text, whole


def test_the_page_is_self_contained() -> None:
    html = page(report("several-nodesets"))
    assert not re.search(r"<(link|img|iframe|object|embed)\b|\bsrc=|@import|url\(|https?:", html)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert policy and "default-src 'none'" in policy[1] and "unsafe" not in policy[1]


@pytest.mark.parametrize("case", ["healthy-dedicated", "two-problems", "several-nodesets"])
def test_check_o_html_exits_as_every_other_output(case: str) -> None:
    html, plain = (run("check", "--snapshot", str(FIXTURES / case), "-o", o) for o in ("html", "plain"))
    assert html.code == plain.code and html.out.startswith("<!DOCTYPE html>") and html.out.endswith("</html>\n")


def test_a_run_that_cannot_check_still_prints_its_page(tmp_path: Path) -> None:
    out = run("check", "--snapshot", str(tmp_path / "nowhere"), "-o", "html")
    assert out.code == 3
    doc = embedded(out.out)
    assert doc["status"] == "unknown" and "nowhere" in doc["errors"][0]


def _luminance(colour: str) -> float:
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_the_legend_has_a_verdict_for_every_check_readable_and_told_apart_without_colour() -> None:
    keys = [v[0] for v in VERDICTS]
    assert keys[0] == "feasible" and sorted(keys[1:]) == sorted(CHECK_NAMES)
    assert len({v[2] for v in VERDICTS}) == len({v[3] for v in VERDICTS}) == len(VERDICTS)  # letters, colours
    for key, _, _, colour in VERDICTS:  # white letters: WCAG AA for normal text
        assert 1.05 / (_luminance(colour) + 0.05) >= 4.5, key


# --- in a browser -----------------------------------------------------------------------------------

class Site:
    """A tiny web server: path -> (status, content type, body), changed by the test while the page runs. Like
    serve, it tags a 200 with an ETag and answers 304 to a request that has it (`answered`: the statuses sent)."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, str, str]] = {}
        self.answered: list[int] = []
        routes, answered = self.routes, self.answered

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                status, kind, body = routes.get(self.path, (404, "text/plain", "no such page"))
                data = body.encode()
                etag = f'"{hashlib.sha256(data).hexdigest()}"'
                if status == 200 and self.headers.get("If-None-Match") == etag:
                    status, data = 304, b""
                answered.append(status)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("ETag", etag)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def page(self, html: str) -> None:
        self.routes["/"] = (200, "text/html; charset=utf-8", html)

    def api(self, doc: dict[str, Any] | None, status: int = 200) -> None:
        self.routes["/api/v1/check"] = (status, "application/json", json.dumps(doc) if doc else "broken")


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    yield s
    s.server.shutdown()
    s.server.server_close()


def show(driver: Any, tmp_path: Path, html: str, width: int = 1280) -> Any:
    path = tmp_path / "page.html"
    path.write_text(html)
    driver.set_window_size(width, 900)
    driver.get(path.as_uri())
    driver.get_log("browser")  # what an earlier page logged
    return wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "section.target"))


def test_the_critical_target_comes_first_and_its_nodes_are_coloured_by_verdict(browser: Any, tmp_path: Path) -> None:
    show(browser, tmp_path, page(report("several-nodesets")))
    headings = [s.find_element(By.TAG_NAME, "h2").text for s in sections(browser)]
    assert [h.split()[0] for h in headings] == ["CRITICAL", "WARNING", "OK"]
    assert "tenant-slurm/slurm-gpu-spare" in headings[0]
    tainted = sections(browser)[0].find_elements(By.CSS_SELECTOR, "button.node")
    assert [(b.text, b.get_attribute("class")) for b in tainted] == [("T", "node v-taint")] * 2
    legend = browser.find_element(By.CSS_SELECTOR, ".legend").text
    assert all(label in legend for _, label, _, _ in VERDICTS)
    colour = next(c for k, _, _, c in VERDICTS if k == "taint")
    assert tainted[0].value_of_css_property("background-color") == "rgba({}, {}, {}, 1)".format(
        *(int(colour[i:i + 2], 16) for i in (1, 3, 5)))
    placed = sections(browser)[1].find_elements(By.CSS_SELECTOR, "button.node.v-feasible.placed")
    assert len(placed) == 2  # slurm-gpu-h100: 4 feasible Nodes, 2 of them running its Pods (replicas 2)
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert_quiet(browser)


def test_a_note_shows_after_the_symptoms_and_changes_no_status(browser: Any, tmp_path: Path) -> None:
    """healthy-idle-pool: 9 idle Nodes of slurm-gpu-2 beside the NodeSet, which selects slurm-gpu only: an OK target
    with its note, the pool named and the command that declares it, as text."""
    show(browser, tmp_path, page(report("healthy-idle-pool")))
    target = sections(browser)[0]
    assert target.find_element(By.TAG_NAME, "h2").text.split()[0] == "OK"
    note = target.find_element(By.CSS_SELECTOR, "aside.note").text
    assert "idle-pool" in note and "slurm-gpu-2" in note and "9 idle Node" in note
    assert "kubectl annotate nodepool slurm-gpu-2 sunkcheck.io/nodesets=tenant-slurm/slurm-gpu-h100" in note
    assert target.find_elements(By.CSS_SELECTOR, "article.symptom") == []
    assert_quiet(browser)


def test_clicking_a_node_shows_its_reasons(browser: Any, tmp_path: Path) -> None:
    show(browser, tmp_path, page(report("two-problems")))
    blocked = browser.find_element(By.CSS_SELECTOR, "button.node.v-resources")
    name = blocked.get_attribute("aria-label").split()[1].rstrip(":")
    blocked.click()
    detail = sections(browser)[0].find_element(By.CSS_SELECTOR, ".detail").text
    assert f"Node {name}" in detail and "not feasible" in detail
    assert "Insufficient cpu" in detail and "jupyter-alice-0" in detail  # the notebook Pod holding the Node
    assert blocked.get_attribute("aria-pressed") == "true"


def test_the_grid_works_from_the_keyboard(browser: Any, tmp_path: Path) -> None:
    show(browser, tmp_path, page(report("two-problems")))
    body = browser.find_element(By.TAG_NAME, "body")
    for _ in range(20):  # Tab reaches the grid: one stop for all its Nodes
        body.send_keys(Keys.TAB) if browser.switch_to.active_element == body else \
            browser.switch_to.active_element.send_keys(Keys.TAB)
        if "node" in (browser.switch_to.active_element.get_attribute("class") or ""):
            break
    first = browser.switch_to.active_element
    nodes = browser.find_elements(By.CSS_SELECTOR, "section.target button.node")
    assert first == nodes[0]
    first.send_keys(Keys.ARROW_RIGHT)
    assert browser.switch_to.active_element == nodes[1]
    assert [n.get_attribute("tabindex") for n in nodes] == ["-1", "0", "-1", "-1"]
    nodes[1].send_keys(Keys.ENTER)
    name = nodes[1].get_attribute("aria-label").split()[1].rstrip(":")
    assert f"Node {name}" in browser.find_element(By.CSS_SELECTOR, ".detail").text
    nodes[1].send_keys(Keys.END)
    assert browser.switch_to.active_element == nodes[3]


def test_one_copy_button_copies_exactly_one_command(browser: Any, site: Site) -> None:
    """misscheduled's fix holds two alternatives, and in the second a drain, a wait and the slurmd Pods' evictions:
    the page shows each command and snippet as its own block with its own button, words as text with none, and a
    click copies that one command, never the fix (pasted whole, it runs both ways and reaches the evictions before
    the drain ends)."""
    r = report("misscheduled")
    site.page(page(r))
    browser.get(site.url + "/")
    browser.execute_cdp_cmd("Browser.grantPermissions", {"origin": site.url,
                                                         "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    fix = next(s.fix for s in r.results[0].symptoms if s.id == "misscheduled")
    article = wait_for(browser, lambda d: d.find_element(By.XPATH, "//article[.//code[text()='misscheduled']]"))
    blocks = article.find_elements(By.CSS_SELECTOR, ".step.command, .step.yaml")
    assert [(b.get_attribute("class").split()[1], b.find_element(By.TAG_NAME, "pre").text) for b in blocks] == \
        [(kind, text) for kind, text in steps(fix) if kind != "prose"]
    assert all(len(b.find_elements(By.CSS_SELECTOR, "button.copy")) == 1 for b in blocks)
    assert article.find_elements(By.CSS_SELECTOR, ".step.prose button") == []
    assert len(article.find_elements(By.CSS_SELECTOR, "button.copy")) == len(blocks)
    evict = next(b for b in blocks if "/eviction " in b.text)
    evict.find_element(By.CSS_SELECTOR, "button.copy").click()
    wait_for(browser, lambda d: article.find_element(By.CSS_SELECTOR, ".copied").text == "Copied")
    copied = browser.execute_async_script("navigator.clipboard.readText().then(arguments[0])")
    assert copied == drained_eviction("tenant-slurm", "slurm-cpu-batch-012-005", "g369e7b")
    assert copied in fix.split("\n") and "\n" not in copied
    # without the Clipboard API (a page opened from a file, an old browser): the selection fallback, one snippet
    browser.execute_script("Object.defineProperty(navigator, 'clipboard', {value: undefined})")
    snippet = next(b for b in blocks if "yaml" in b.get_attribute("class"))
    snippet.find_element(By.CSS_SELECTOR, "button.copy").click()
    assert article.find_element(By.CSS_SELECTOR, ".copied").text == "Copied"
    area = browser.execute_script("const t = document.createElement('textarea'); document.body.append(t); t.focus(); return t")
    area.send_keys(Keys.CONTROL, "v")
    assert area.get_attribute("value") == next(t for kind, t in steps(fix) if kind == "yaml")


def test_a_hostile_label_renders_as_text(browser: Any, tmp_path: Path) -> None:
    show(browser, tmp_path, page(report("hostile-strings")))
    text = browser.find_element(By.TAG_NAME, "body").text
    assert f"label is '[red]pwned[/red]{HOSTILE}'" in text
    assert "NoFeasible" in text and "\x1b" not in text and "[2J" not in text  # terminal escapes dropped, as text.safe
    assert browser.find_elements(By.TAG_NAME, "img") == []
    assert_quiet(browser)


def test_hostile_strings_everywhere_render_as_text(browser: Any, tmp_path: Path) -> None:
    payload = "</script>" + HOSTILE + "\u202e"
    show(browser, tmp_path, page(everywhere(report("several-nodesets"), payload)))
    browser.find_element(By.CSS_SELECTOR, "button.node.v-taint").click()
    text = browser.find_element(By.TAG_NAME, "body").text
    assert "</script>" + HOSTILE + "?" in text  # a Bidi override is shown as `?`, as text.safe does
    assert text.count(HOSTILE) > 20
    assert "\u202e" not in text and browser.find_elements(By.TAG_NAME, "img") == []
    assert_quiet(browser)


def assert_utc_clock(live: str, said: str) -> None:
    """The live line's time is UTC and says so (a browser-local time without its zone misleads a reader elsewhere),
    and it is the time of the answer, a moment ago."""
    m = re.search(rf"{said} (\d\d):(\d\d):(\d\d) UTC\b", live)
    assert m, live
    now = datetime.now(UTC)
    ago = (now.hour * 3600 + now.minute * 60 + now.second - (int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3]))) % 86400
    assert ago < 60, (live, now)


def test_the_live_page_follows_its_url_without_a_reload(browser: Any, site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    # a poll each second rather than three: the same polls and answers, a third of the wait (with room for a
    # loaded machine to see each change before the next poll)
    monkeypatch.setattr(render_html, "POLL_MS", 1000)
    before = report_dict(report("several-nodesets"))
    site.page(page(report("several-nodesets"), live_url="/api/v1/check"))
    site.api(before)
    browser.get(site.url + "/")
    wait_for(browser, lambda d: sections(d))
    browser.execute_script("window.sunkcheckMarker = 'still here'")
    cell = "button.node[aria-label^='Node g89b7b9']"
    browser.find_element(By.CSS_SELECTOR, cell).click()
    # a taint lands on one of slurm-gpu-h100's Nodes
    after = copy.deepcopy(before)
    h100 = next(r for r in after["results"] if r["name"] == "slurm-gpu-h100")
    node = next(n for n in h100["nodes"] if n["name"] == "g89b7b9")
    node.update(feasible=False, reasons=[{"check": "taint", "detail": "untolerated taint example.com/repair=true:NoSchedule"}])
    site.api(after)
    wait_for(browser, lambda d: "v-taint" in d.find_element(By.CSS_SELECTOR, cell).get_attribute("class"))
    assert_utc_clock(browser.find_element(By.CSS_SELECTOR, ".live").text, "updated")
    assert browser.execute_script("return window.sunkcheckMarker") == "still here"  # the same document
    assert browser.find_element(By.CSS_SELECTOR, cell).get_attribute("aria-pressed") == "true"  # still selected
    assert browser.switch_to.active_element == browser.find_element(By.CSS_SELECTOR, cell)  # and focused
    assert "example.com/repair" in sections(browser)[1].find_element(By.CSS_SELECTOR, ".detail").text
    for status, doc in ((500, None), (200, {"schema": "sunkcheck/check/v1", "results": [{"kind": "NodeSet"}]})):
        site.api(doc, status)  # the server fails, or answers what the page cannot draw: the last answer stays
        wait_for(browser, lambda d: "STALE" in d.find_element(By.CSS_SELECTOR, ".live").text)
        assert_utc_clock(browser.find_element(By.CSS_SELECTOR, ".live").text, "STALE since")
        time.sleep(render_html.POLL_MS / 1000 * 1.5)  # the same answer again is no better
        assert "STALE" in browser.find_element(By.CSS_SELECTOR, ".live").text
        assert "v-taint" in browser.find_element(By.CSS_SELECTOR, cell).get_attribute("class")
        drawn = browser.find_element(By.CSS_SELECTOR, cell)
        site.api(after)
        del site.answered[:]
        wait_for(browser, lambda d: "STALE" not in d.find_element(By.CSS_SELECTOR, ".live").text)
        assert site.answered == [304]  # what it drew last: the page sent its ETag back...
        assert "v-taint" in drawn.get_attribute("class")  # ...and was not redrawn (this element would be stale)
    site.api(before)
    wait_for(browser, lambda d: "v-feasible" in d.find_element(By.CSS_SELECTOR, cell).get_attribute("class"))
    assert browser.execute_script("return window.sunkcheckMarker") == "still here"


@pytest.mark.parametrize("case", ["several-nodesets", "misscheduled", "foreign-pod-resources"])
def test_a_phone_needs_no_sideways_scroll(browser: Any, tmp_path: Path, case: str) -> None:
    show(browser, tmp_path, page(report(case)), width=390)
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
