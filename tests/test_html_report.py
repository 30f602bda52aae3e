"""The HTML report: grouped by family, failures first, one badge per dtype, a details panel
next to the clicked cell naming what it shows, the environment, deviations, unavailable
backends and failures of the reference kept apart. Checked on the HTML string and, where
Chromium is installed, by clicking in a headless browser."""

import datetime
import html
import html.parser
import json
import platform
import re
import shutil
import subprocess
import tempfile
import urllib.parse

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.conformance import html_report, known, report, runner
from arraygrad.conformance.cases import Arg, Case

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _wrong_on(backend, dtype):
    """sin, with a gradient off by 0.01 on ``backend``'s differentiable namespace in ``dtype``
    (values stay right: x - detach(x) is zero)."""

    def call(xp, x):
        y = xp.sin(x)
        if getattr(xp, "__name__", "") == f"arraygrad[{backend}]" and x.dtype == getattr(
                xp, dtype):
            y = y + (x - x.detach()) * 0.01
        return y
    return call


# A case wrong on array_api_strict in float64 only; one wrong on the reference (NumPy float64),
# so that the other case runs' cross_backend compares with a wrong reference; one wrong on
# array_api_strict in float32, declared as a known deviation; a name that needs escaping.
BROKEN = Case("sin", "broken<float64>", _wrong_on("array_api_strict", "float64"),
              (Arg((3,)),), "elementwise")
BROKEN_REFERENCE = Case("sin", "broken-reference", _wrong_on("numpy", "float64"),
                        (Arg((3,)),), "elementwise")
DEVIATING = Case("sin", "deviating", _wrong_on("array_api_strict", "float32"),
                 (Arg((3,)),), "elementwise")
DEVIATIONS = known.parse("# array_api_strict's float32 sin is off (a test)\n"
                         "sin[deviating] float32 cross_backend", "the test")


def run_scenario():
    """A small real run: passing cases of two families first, the broken ones after them."""
    reference = runner._reference(None)
    chosen = runner.select("sum[axis=0*")[:2] + runner.select("exp*")[:2] + [
        BROKEN, BROKEN_REFERENCE, DEVIATING]
    results = [runner.run_one(backend, case, dtype, 0, reference,
                              DEVIATIONS if backend == "array_api_strict" else [])
               for case in chosen for backend in ("numpy", "array_api_strict")
               for dtype in case.dtypes]
    unavailable = {"nonesuch": "ModuleNotFoundError: No module named 'nonesuch'"}
    return results, unavailable


@pytest.fixture(scope="module")
def scenario():
    return run_scenario()


def _result(results, case, backend, dtype):
    return next(r for r in results if r.case is case and r.backend == backend
                and r.dtype == dtype)


def test_the_scenario_fails_where_it_should(scenario):
    results, _ = scenario
    assert _result(results, BROKEN, "array_api_strict", "float64").status == "fail"
    assert _result(results, BROKEN, "array_api_strict", "float32").status == "pass"
    assert _result(results, BROKEN_REFERENCE, "numpy", "float64").status == "fail"
    blamed = _result(results, BROKEN_REFERENCE, "array_api_strict", "float64")
    assert {c for c, (s, *_) in blamed.checks.items() if s == "fail"} == {"cross_backend"}
    assert _result(results, DEVIATING, "array_api_strict", "float32").status == "deviation"
    assert all(r.status in ("pass", "skip") for r in results
               if r.case not in (BROKEN, BROKEN_REFERENCE, DEVIATING))


# ------------------------------------------------------------------------------ the page as text
class _Page(html.parser.HTMLParser):
    """Rows (case id, class, cells), cells (class, badges), families, the JSON blob."""

    def __init__(self, page):
        super().__init__()
        self.rows, self.families, self.external, self.blob = [], [], [], None
        self._stack, self._in_blob, self._row_header = [], False, None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("src", "href"):
            if (attrs.get(key) or "").startswith(("http", "//")):
                self.external.append(attrs[key])
        if tag == "details" and "family" in attrs.get("class", ""):
            self.families.append({"id": attrs["id"], "class": attrs["class"],
                                  "open": "open" in attrs, "rows": []})
        elif tag == "tr" and self.families and attrs.get("class") in ("bad", "ok"):
            self.rows.append({"class": attrs["class"], "id": "", "cells": []})
            self.families[-1]["rows"].append(self.rows[-1])
        elif tag == "th" and self.rows and attrs.get("scope") == "row":
            self._row_header = self.rows[-1]
        elif tag == "td" and self.rows:
            self.rows[-1]["cells"].append({"class": attrs.get("class"), "badges": [],
                                           "index": attrs.get("data-c")})
        elif tag == "span" and "b" in attrs.get("class", "").split() and self.rows and \
                self.rows[-1]["cells"]:
            self.rows[-1]["cells"][-1]["badges"].append(
                (attrs["data-d"], attrs["class"].split()[1]))
        elif tag == "script" and attrs.get("type") == "application/json":
            self._in_blob, self.blob = True, ""

    def handle_endtag(self, tag):
        if tag == "th":
            self._row_header = None
        if tag == "script":
            self._in_blob = False

    def handle_data(self, data):
        if self._row_header is not None and not self._row_header["id"]:
            self._row_header["id"] = data
        if self._in_blob:
            self.blob += data


def _row(page, case):
    return next(row for row in page.rows if row["id"] == case.id)


BACKENDS = ["array_api_strict", "numpy"]  # the columns, in order


def test_rows_are_grouped_by_family_with_failures_first(scenario):
    results, unavailable = scenario
    page = _Page(report.as_html(results, unavailable, 0))
    assert [f["id"] for f in page.families] == ["family-elementwise", "family-statistical"]
    assert all(f["open"] for f in page.families)
    elementwise = page.families[0]
    assert elementwise["class"] == "family bad" and page.families[1]["class"] == "family ok"
    ids = [row["id"] for row in elementwise["rows"]]
    assert ids[:2] == [BROKEN.id, BROKEN_REFERENCE.id]  # run after exp's cases, shown first
    assert [row["class"] for row in elementwise["rows"]] == ["bad", "bad"] + ["ok"] * (
        len(ids) - 2)
    assert len(page.rows) == len({r.case.id for r in results})  # one row per case id
    assert all(len(row["cells"]) == len(BACKENDS) for row in page.rows)
    assert not page.external


def test_each_dtype_keeps_its_own_state(scenario):
    results, unavailable = scenario
    page = _Page(report.as_html(results, unavailable, 0))
    strict, numpy = _row(page, BROKEN)["cells"]
    assert strict["class"] == "fail" and sorted(strict["badges"]) == [
        ("float32", "pass"), ("float64", "fail")]
    assert numpy["class"] == "pass" and sorted(numpy["badges"]) == [
        ("float32", "pass"), ("float64", "pass")]
    strict, numpy = _row(page, DEVIATING)["cells"]
    assert sorted(strict["badges"]) == [("float32", "deviation"), ("float64", "pass")]
    assert strict["class"] == "deviation"


def test_failures_of_the_reference_are_not_blamed_on_other_backends(scenario):
    results, unavailable = scenario
    page_text = report.as_html(results, unavailable, 0)
    page = _Page(page_text)
    strict, numpy = _row(page, BROKEN_REFERENCE)["cells"]
    assert sorted(numpy["badges"]) == [("float32", "reference"), ("float64", "fail")]
    assert sorted(strict["badges"]) == [("float32", "reference"), ("float64", "reference")]
    assert strict["class"] == "reference"
    assert "The reference backend (numpy) fails its own case run sin[broken-reference] " \
           "float64" in page_text
    data = json.loads(page.blob)
    cell = data["cells"][int(strict["index"])]
    statuses = {data["text"][c[0]]: data["text"][c[1]] for c in cell["r"][0]["c"]}
    assert statuses["cross_backend"] == "reference" and statuses["numerical"] == "pass"
    # The reference's own failure stays a failure; a backend's real failure is not excused.
    assert html_report.state(_result(results, BROKEN, "array_api_strict", "float64"),
                             html_report.reference_failures(results)) == "fail"


def test_the_header_holds_environment_totals_deviations_and_unavailable(scenario):
    results, unavailable = scenario
    env = html_report.environment(BACKENDS)
    page = report.as_html(results, unavailable, 7, env=env)
    for value in (ag.__version__, env["python"], env["platform"], env["date"],
                  np.__version__, env["backends"]["array_api_strict"]):
        assert f"{html.escape(value)}" in page
    assert re.search(r"<dt>seed</dt><dd>7</dd>", page)
    assert "case runs: one case in one dtype on one backend" in page
    per_backend = {b: sum(r.backend == b for r in results) for b in BACKENDS}
    for backend, count in per_backend.items():
        card = re.search(rf'<h3>{backend} <small>[^<]*</small></h3><p>(\d+) case runs: '
                         r'(.*?)</p>', page)
        assert card and int(card[1]) == count
        fails = sum(html_report.state(r, html_report.reference_failures(results)) == "fail"
                    for r in results if r.backend == backend)
        assert f"{fails} fail</span>" in card[2]
    assert "1 known deviation" in page and "array_api_strict&#x27;s float32 sin is off " \
                                           "(a test)" in page
    assert "nonesuch</h3><p>not available: ModuleNotFoundError: No module named " \
           "&#x27;nonesuch&#x27;" in page


def test_everything_is_escaped_and_the_blob_cannot_close_its_script(scenario):
    results, unavailable = scenario
    page = report.as_html(results, {"<img src=x>": "a <b>reason</b>"}, 0)
    assert "broken<float64>" not in page.replace('"', "")  # not raw in the HTML ...
    assert "sin[broken&lt;float64&gt;]" in page  # ... escaped in a row header
    assert "<img src=x>" not in page and "a <b>reason</b>" not in page
    blob = _Page(page).blob
    assert "</" not in blob and "<" not in blob
    data = json.loads(blob)
    assert BROKEN.id in [c[0] for c in data["cases"]]


def test_the_details_of_a_failure_carry_reproduce_snippet_and_traceback(scenario):
    results, unavailable = scenario
    failing = _result(results, BROKEN, "array_api_strict", "float64")
    page = _Page(report.as_html(results, unavailable, 0))
    data = json.loads(page.blob)
    cell = data["cells"][int(_row(page, BROKEN)["cells"][0]["index"])]
    run = next(r for r in cell["r"] if r["d"] == "float64")
    assert run["x"] == failing.reproduce()
    if callable(getattr(failing, "snippet", None)):
        assert run["p"] == failing.snippet()
    checks = {data["text"][c[0]]: c for c in run["c"]}
    numerical = checks["numerical"]
    assert data["text"][numerical[1]] == "fail" and "max abs error" in data["text"][numerical[2]]
    assert numerical[3] == pytest.approx(failing.checks["numerical"][2], rel=1e-2)
    passing = next(r for r in cell["r"] if r["d"] == "float32")
    assert "x" not in passing and "t" not in passing  # only failures carry them
    assert data["backends"][cell["b"]] == "array_api_strict"


def test_environment_names_versions_platform_and_time():
    env = html_report.environment(["numpy", "array_api_strict", "no-such-backend"])
    assert env["arraygrad"] == ag.__version__
    assert env["backends"]["numpy"] == np.__version__
    assert env["backends"]["array_api_strict"] == ag.get_backend("array_api_strict").version()
    assert env["backends"]["no-such-backend"] is None
    assert env["python"].startswith(platform.python_version())
    assert env["platform"] == platform.platform()
    when = datetime.datetime.fromisoformat(env["date"])
    assert when.tzinfo is not None
    assert abs(datetime.datetime.now(datetime.timezone.utc) - when) < datetime.timedelta(
        minutes=5)
    json.dumps(env)  # the JSON report reuses it


def test_worst_orders_states():
    assert html_report.worst(["pass", "skip"]) == "pass"
    assert html_report.worst(["pass", "reference", "deviation"]) == "reference"
    assert html_report.worst(["reference", "fail"]) == "fail"
    assert html_report.worst([]) == "skip"
    assert report._worst(["deviation", "pass"]) == "deviation"


# ------------------------------------------------------------------------------ in a browser
_PROBE = """<script>
(function () {
  var out = {}, panel = document.getElementById("details");
  function visible(e) { return e.getClientRects().length > 0; }
  var rows = document.querySelectorAll("main tbody tr");
  function texts(list, f) { return Array.prototype.map.call(list, f); }
  out.rows = texts(rows, function (r) { return r.querySelector("th").textContent; });
  out.hiddenAtFirst = panel.hidden;
  var cell = document.querySelector("td.fail[data-c]");
  out.clickedRow = cell.parentNode.querySelector("th").textContent;
  cell.click();
  out.heading = document.getElementById("details-title").textContent;
  out.panel = panel.textContent;
  out.pres = texts(panel.querySelectorAll("pre"), function (p) { return p.textContent; });
  out.panelShown = visible(panel) && !panel.hidden;
  var c = cell.getBoundingClientRect(), p = panel.getBoundingClientRect();
  out.beside = c.right <= p.left + 1 && p.width > 200 && c.width > 0;
  out.selected = cell.classList.contains("selected");
  out.hash = location.hash;
  cell.querySelector('.b[data-d="float32"]').click();
  out.badgeHeading = document.getElementById("details-title").textContent;
  var ok = document.querySelector("tr.ok"), bad = document.querySelector("tr.bad");
  out.okShown = visible(ok);
  document.getElementById("failures-only").click();
  out.okShownWhenFailuresOnly = visible(ok);
  out.badShownWhenFailuresOnly = visible(bad);
  out.passingFamilyShown = visible(document.getElementById("family-statistical"));
  var probe = document.createElement("pre");
  probe.id = "probe";
  probe.textContent = JSON.stringify(out);
  document.body.appendChild(probe);
})();
</script></body>"""


def _chromium(url, *options):
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tempfile.mkdtemp()}", "--enable-logging=stderr", "--v=0",
             "--window-size=1400,900", *options]
    return subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian package chromium)")
def test_clicking_a_failing_cell_opens_its_details_beside_it(scenario, tmp_path):
    results, unavailable = scenario
    path = tmp_path / "report.html"
    report.write_html(path, results, unavailable, 0)
    page = path.read_text(encoding="utf-8")
    assert page.count("</body>") == 1
    path.write_text(page.replace("</body>", _PROBE), encoding="utf-8")
    dom = _chromium(path.as_uri())
    assert 'data-ready="yes"' in dom.stdout, dom.stderr[-2000:]  # the page's script ran
    assert "Uncaught" not in dom.stderr
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stderr[-2000:]
    out = json.loads(html.unescape(found[1]))
    failing = _result(results, BROKEN, "array_api_strict", "float64")
    assert out["rows"][0] == BROKEN.id  # the failing row comes first
    assert out["hiddenAtFirst"] and out["clickedRow"] == BROKEN.id
    assert out["heading"] == f"{BROKEN.id} \u00b7 array_api_strict \u00b7 float64, float32"
    assert out["panelShown"] and out["beside"] and out["selected"]
    assert failing.reproduce() in out["pres"]
    assert "max abs error" in out["panel"] and "numerical" in out["panel"]
    assert urllib.parse.unquote(out["hash"]) == f"#{BROKEN.id}|array_api_strict"
    assert out["badgeHeading"] == f"{BROKEN.id} \u00b7 array_api_strict \u00b7 float32"
    assert out["okShown"] and not out["okShownWhenFailuresOnly"]
    assert out["badShownWhenFailuresOnly"] and not out["passingFamilyShown"]


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian package chromium)")
def test_a_link_to_a_cell_opens_its_details(scenario, tmp_path):
    results, unavailable = scenario
    path = tmp_path / "report.html"
    report.write_html(path, results, unavailable, 0)
    target = urllib.parse.quote(f"{BROKEN_REFERENCE.id}|array_api_strict|float64")
    dom = _chromium(f"{path.as_uri()}#{target}").stdout
    title = re.search(r'<h2 id="details-title">(.*?)</h2>', dom)
    assert title and html.unescape(title[1]) == (
        f"{BROKEN_REFERENCE.id} \u00b7 array_api_strict \u00b7 float64")
    assert "reference failed" in dom and "is not blamed on array_api_strict" in dom
