"""The HTML report of a conformance run: one self-contained page a backend author can act on.

Cases are grouped by family, failing rows first; each cell shows one badge per dtype, and a
click opens a side panel with that cell's checks, errors, reproduce command, snippet and
traceback. The page needs no network: its style and script are inline, and the details come
from one JSON blob rendered on demand.
"""

from __future__ import annotations

import collections
import datetime
import html
import json
import math
import platform

import arraygrad as ag

from . import report
from .runner import REFERENCE

# The state of one case run in one dtype, worst first. "reference" is a failure of
# cross_backend alone, on a case whose reference run (NumPy, float64) fails by itself.
STATES = ("fail", "reference", "deviation", "pass", "skip")
COLOURS = {**report.COLOURS, "reference": "#7d5ba6"}
GLYPHS = {"pass": "\u2713", "fail": "\u2717", "skip": "\u2013", "deviation": "!",
          "reference": "?"}
LABELS = {"pass": "pass", "fail": "fail", "skip": "skip", "deviation": "known deviation",
          "reference": "reference failed"}
SHORT = {"float32": "f32", "float64": "f64", "complex64": "c64", "complex128": "c128"}
WIDE = {"float32": "float64", "complex64": "complex128"}  # the reference's dtype


def worst(statuses):
    """The worst of ``statuses`` (``skip`` when there are none)."""
    return next((s for s in STATES if s in statuses), "skip")


def environment(backend_names) -> dict:
    """Where the run happened: arraygrad's version, each backend's library version (None when
    the backend cannot be loaded), Python, the platform and the date and time (local, with its
    UTC offset)."""
    versions = {}
    for name in backend_names:
        try:
            versions[name] = ag.get_backend(name).version() or None
        except (ag.BackendError, ag.BackendUnavailable, ImportError):
            versions[name] = None
    return {
        "arraygrad": ag.__version__,
        "backends": versions,
        "python": f"{platform.python_version()} ({platform.python_implementation()})",
        "platform": platform.platform(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def _id(r) -> str:
    """The row of ``r``: its case id (with ``@inputs`` for a backend's semantic inputs)."""
    return getattr(r, "id", r.case.id)


def reference_failures(results) -> set:
    """``{(case id, dtype)}`` where the reference run itself fails: the reference backend's
    run of a case in a dtype that the reference computes in (float64, complex128)."""
    return {(r.case.id, r.dtype) for r in results
            if r.backend == REFERENCE and r.dtype not in WIDE and r.status == "fail"
            and not getattr(r, "inputs", None)}


def _blames_reference(r, failed) -> bool:
    """Whether ``r``'s cross_backend check compared with a reference run that failed."""
    wide = WIDE.get(r.dtype, r.dtype)
    return ((r.case.id, wide) in failed and not (r.backend == REFERENCE and r.dtype == wide)
            and r.checks.get("cross_backend", ("",))[0] == "fail")


def state(r, failed=frozenset()) -> str:
    """``r``'s status, or ``reference`` when its only failing check is a cross_backend
    comparison with a reference that fails (``failed``: from :func:`reference_failures`)."""
    failing = {check for check, (status, *_) in r.checks.items() if status == "fail"}
    if failing == {"cross_backend"} and _blames_reference(r, failed):
        return "reference"
    return r.status


def as_html(results, unavailable, seed, *, env=None) -> str:
    """The page of ``results`` (a list of ``runner.Result``); ``unavailable`` maps backends
    that could not run to the reason; ``env`` is :func:`environment`'s answer, gathered now
    when None."""
    backends = sorted({r.backend for r in results})
    env = env or environment(backends + sorted(set(unavailable) - set(backends)))
    failed = reference_failures(results)
    text = _Interned()
    cases, cells = {}, {}  # case id -> (case, index); (case id, backend) -> [Result]
    for r in results:
        cases.setdefault(_id(r), (r.case, len(cases)))
        cells.setdefault((_id(r), r.backend), []).append(r)
    states = {id(r): state(r, failed) for r in results}

    families = collections.defaultdict(list)  # family -> [case id], first appearance order
    for case_id, (case, _) in cases.items():
        families[case.family].append(case_id)
    bad = {case_id for case_id in cases if any(
        states[id(r)] in ("fail", "reference") for b in backends
        for r in cells.get((case_id, b), []))}
    order = sorted(families, key=lambda f: not any(c in bad for c in families[f]))

    data = {"backends": backends, "cases": [], "cells": [], "text": text.strings,
            "reference": REFERENCE}
    for case_id, (case, _) in cases.items():
        data["cases"].append([case_id, case.op, case.family, case.variant,
                              int(any((case_id, d) in failed for d in case.dtypes))])
    sections = []
    for family in order:
        rows = sorted(families[family], key=lambda c: c not in bad)
        body = [_row(case_id, cases[case_id][1], case_id in bad, backends, cells, states,
                     failed, data, text) for case_id in rows]
        runs = collections.Counter(states[id(r)] for c in rows for b in backends
                                   for r in cells.get((c, b), []))
        failing = sum(c in bad for c in rows)
        sections.append(
            f'<details open class="family {"bad" if failing else "ok"}" '
            f'id="family-{html.escape(family)}"><summary><h2>{html.escape(family)}</h2> '
            f'<span class="counts">{len(rows)} case{"s" * (len(rows) != 1)}, {failing} with a '
            f'failure; case runs: {_counts(runs)}</span></summary>\n'
            f'<table class="matrix">{_columns(backends)}<tbody>\n{"".join(body)}</tbody>'
            '</table></details>')

    blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c").replace(
        ">", "\\u003e").replace("&", "\\u0026")
    head = "".join(f'<th scope="col">{html.escape(b)}</th>' for b in backends)
    legend = " ".join(f'<span class="b {s}">{GLYPHS[s]} {LABELS[s]}</span>' for s in STATES)
    no_failures = "" if bad else '<p id="no-failures">No case run fails.</p>'
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>arraygrad conformance: {html.escape(", ".join(backends) or "no backend")}</title>
<style>{_STYLE}</style></head>
<body>
<div id="page">
<header>
<h1>arraygrad conformance</h1>
{_environment(env, seed)}
<h2>Totals per backend <small>(case runs: one case in one dtype on one backend)</small></h2>
<div id="totals">{_totals(results, backends, states, env, unavailable)}</div>
{_reference_note(failed, results)}
{_deviations(results)}
<p class="legend">Each cell shows one badge per dtype (f32 = float32, f64 = float64, c64 =
complex64, c128 = complex128): {legend}. Click a cell, or one of its badges, for its checks.</p>
<p class="controls"><label><input type="checkbox" id="failures-only"> failures only</label>
<span>{len(cases)} case{"s" * (len(cases) != 1)}, {len(bad)} with a failure</span></p>
</header>
<main>
<table class="matrix" id="columns">{_columns(backends)}
<thead><tr><th scope="col">case</th>{head}</tr></thead></table>
{no_failures}
{"".join(sections)}
</main>
</div>
<aside id="details" hidden aria-live="polite"></aside>
<script type="application/json" id="data">{blob}</script>
<script>{_SCRIPT}</script>
</body></html>
"""


class _Interned:
    """Strings stored once in the JSON blob (check names, statuses, repeated details)."""

    def __init__(self):
        self.strings, self._index = [], {}

    def __call__(self, value: str) -> int:
        if value not in self._index:
            self._index[value] = len(self.strings)
            self.strings.append(value)
        return self._index[value]


def _number(x):
    """An error rounded to three digits; a string where JSON has no number (nan, inf)."""
    if x is None:
        return None
    x = float(x)
    return float(f"{x:.3g}") if math.isfinite(x) else str(x)


def _result(r, state_, failed, text) -> dict:
    marked = _blames_reference(r, failed)
    checks = []
    for check, (status, detail, abs_err, rel_err) in r.checks.items():
        status = "reference" if marked and check == "cross_backend" else status
        entry = [text(check), text(status), text(detail or "")]
        if abs_err is not None or rel_err is not None:
            entry += [_number(abs_err), _number(rel_err)]
        checks.append(entry)
    answer = {"d": r.dtype, "s": state_, "c": checks}
    if state_ in ("fail", "reference", "deviation"):
        answer["x"] = r.reproduce()
        cause = getattr(r, "cause", None)
        if cause:
            answer["w"] = str(cause)
        snippet = getattr(r, "snippet", None)
        snippet = snippet() if callable(snippet) else snippet
        if snippet:
            answer["p"] = str(snippet)
        traceback = getattr(r, "traceback", None)
        if traceback:
            answer["t"] = str(traceback)
    return answer


def _row(case_id, case_index, bad, backends, cells, states, failed, data, text) -> str:
    tds = []
    for backend in backends:
        runs = cells.get((case_id, backend), [])
        if not runs:
            tds.append('<td class="none" title="not run">\u2014</td>')
            continue
        index = len(data["cells"])
        data["cells"].append({"k": case_index, "b": backends.index(backend),
                              "r": [_result(r, states[id(r)], failed, text) for r in runs]})
        badges = "".join(
            f'<span class="b {states[id(r)]}" data-d="{html.escape(r.dtype)}">'
            f'{html.escape(SHORT.get(r.dtype, r.dtype))} {GLYPHS[states[id(r)]]}</span>'
            for r in runs)
        title = "; ".join(f"{r.dtype}: {LABELS[states[id(r)]]}" for r in runs)
        tds.append(f'<td class="{worst([states[id(r)] for r in runs])}" data-c="{index}" '
                   f'tabindex="0" title="{html.escape(title)}; click for the checks">'
                   f'{badges}</td>')
    reference = ('<span class="tag">reference fails</span>'
                 if data["cases"][case_index][4] else "")
    return (f'<tr class="{"bad" if bad else "ok"}"><th scope="row">{html.escape(case_id)}'
            f'{reference}</th>{"".join(tds)}</tr>\n')


def _columns(backends) -> str:
    return f'<colgroup><col class="case">{"<col>" * len(backends)}</colgroup>'


def _counts(counter) -> str:
    return ", ".join(f'<span class="n {s}">{counter[s]} {LABELS[s]}</span>'
                     for s in STATES if counter[s] or s in ("pass", "fail"))


def _environment(env, seed) -> str:
    items = [("arraygrad", env.get("arraygrad")), ("Python", env.get("python")),
             ("platform", env.get("platform")), ("run", env.get("date")), ("seed", seed)]
    return '<dl id="environment">' + "".join(
        f"<div><dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd></div>"
        for k, v in items) + "</dl>"


def _totals(results, backends, states, env, unavailable) -> str:
    versions = env.get("backends", {})
    removed = report.removed(results)
    looser = report.loosened(results)
    cards = []
    for backend in backends:
        runs = collections.Counter(states[id(r)] for r in results if r.backend == backend)
        version = versions.get(backend) or "version unknown"
        reasons = sorted(removed.get(backend, {}).items())
        notes = "".join(f"<li>{count} not run: {html.escape(reason)}</li>"
                        for reason, count in reasons)
        if len(reasons) > 2:  # a long list folds away under its count
            notes = (f"<li><details><summary>{sum(c for _, c in reasons)} not run by the "
                     f"backend's declarations ({len(reasons)} reasons)</summary><ul>{notes}"
                     "</ul></details></li>")
        notes += "".join("<li>looser tolerance: " + html.escape(
            report.describe_tolerance(dtype, *pair)) + "</li>"
            for dtype, pair in looser.get(backend, {}).items())
        cards.append(
            f'<div class="card {"bad" if runs["fail"] + runs["reference"] else "ok"}">'
            f"<h3>{html.escape(backend)} <small>{html.escape(version)}</small></h3>"
            f"<p>{sum(runs.values())} case runs: {_counts(runs)}</p>"
            f'{f"<ul>{notes}</ul>" if notes else ""}</div>')
    for name, reason in sorted(unavailable.items()):
        cards.append(f'<div class="card unavailable"><h3>{html.escape(name)}</h3>'
                     f"<p>not available: {html.escape(str(reason))}</p></div>")
    return "".join(cards)


def _reference_note(failed, results) -> str:
    if not failed:
        return ""
    blamed = sum(_blames_reference(r, failed) for r in results)
    runs = ", ".join(f"{html.escape(c)} {html.escape(d)}" for c, d in sorted(failed))
    return (f'<p class="reference-note"><span class="b reference">{GLYPHS["reference"]} '
            f'{LABELS["reference"]}</span> The reference backend ({html.escape(REFERENCE)}) '
            f"fails its own case run{'s' * (len(failed) != 1)} {runs}: the {blamed} "
            "cross_backend failure(s) of other case runs on those cases compare with a wrong "
            "reference and are not blamed on their backend.</p>")


def _deviations(results) -> str:
    known = [(r, check, detail) for r in results for check, (status, detail, *_)
             in r.checks.items() if status == "deviation"]
    if not known:
        return ""
    items = "".join(f"<li><b>{html.escape(r.backend)}</b> {html.escape(r.case.id)} "
                    f"{html.escape(r.dtype)} <i>{html.escape(check)}</i>: "
                    f"{html.escape(detail)}</li>" for r, check, detail in known)
    return (f'<details id="deviations"{" open" * (len(known) <= 12)}><summary>'
            f"{len(known)} known deviation{'s' * (len(known) != 1)} (failures a backend "
            f"declares, with the reason)</summary><ul>{items}</ul></details>")


_STYLE = """
:root{--panel:min(46vw,680px)}
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222}
#page{padding:0 16px 40px}
body.panel-open #page{margin-right:var(--panel)}
h1{font-size:20px;margin:12px 0 4px}
h2{font-size:15px;margin:12px 0 6px}
h2 small,h3 small{font-weight:normal;color:#666}
#environment{display:flex;flex-wrap:wrap;gap:4px 18px;margin:0}
#environment div{display:flex;gap:6px}
#environment dt{color:#666}
#environment dd{margin:0;font-family:monospace}
#totals{display:flex;flex-wrap:wrap;gap:8px}
.card{border:1px solid #ccc;border-left:5px solid #3c9a5f;border-radius:4px;padding:4px 10px;
  min-width:220px}
.card.bad{border-left-color:#d64541}
.card.unavailable{border-left-color:#b5b5b5;color:#666}
.card h3{margin:2px 0;font-size:14px}
.card p,.card ul{margin:2px 0}
.card ul{padding-left:18px;color:#555}
.n{white-space:nowrap}
.n.fail,.n.reference{font-weight:bold}
.b{display:inline-block;padding:0 4px;margin:1px 2px 1px 0;border-radius:3px;color:#fff;
  font:11px/16px monospace;white-space:nowrap}
.b.skip{color:#333}
.legend,.controls{margin:6px 0}
.controls span{margin-left:16px;color:#555}
.reference-note{border-left:5px solid #7d5ba6;padding:2px 8px;background:#f4f0fa}
#deviations ul{margin:4px 0;padding-left:20px;max-height:240px;overflow:auto}
table.matrix{table-layout:fixed;width:100%;border-collapse:collapse}
table.matrix col.case{width:28%}
#columns{position:sticky;top:0;z-index:2;background:#fff;box-shadow:0 1px 0 #999}
#columns th{padding:4px 6px;text-align:left;overflow-wrap:anywhere}
details.family{margin:4px 0}
details.family>summary{cursor:pointer;padding:4px;background:#f3f3f3;border-radius:3px}
details.family.bad>summary{background:#fbe9e8}
details.family>summary h2{display:inline;font-size:14px;margin:0}
.counts{color:#444;margin-left:8px}
.matrix td,.matrix tbody th{border:1px solid #e2e2e2;padding:2px 6px;text-align:left;
  vertical-align:top;overflow-wrap:anywhere}
.matrix tbody th{font:12px monospace;font-weight:normal}
.matrix tr.bad th{border-left:4px solid #d64541}
.matrix td{cursor:pointer}
.matrix td.fail{background:#fdecea}
.matrix td.reference{background:#f4f0fa}
.matrix td.none{color:#999;cursor:default}
.matrix td:hover{background:#eef4fd}
.matrix td.selected{outline:3px solid #1a73e8;outline-offset:-3px}
.tag{margin-left:6px;padding:0 4px;border-radius:3px;background:#7d5ba6;color:#fff;
  font:10px sans-serif}
body.failures-only tr.ok,body.failures-only details.family.ok{display:none}
#no-failures{display:none;font-size:15px;color:#3c9a5f}
body.failures-only #no-failures{display:block}
#details{position:fixed;top:0;right:0;bottom:0;width:var(--panel);box-sizing:border-box;
  overflow:auto;background:#fafafa;border-left:2px solid #888;padding:8px 16px 24px;
  box-shadow:-4px 0 12px rgba(0,0,0,.15);z-index:3}
#details h2{font-size:16px;margin:4px 40px 2px 0;overflow-wrap:anywhere}
#details h3{font-size:14px;margin:14px 0 4px}
#details h4{font-size:12px;margin:8px 0 2px;color:#444}
#details .meta{color:#555;margin:0}
#details .close{position:absolute;top:6px;right:10px;font-size:16px;cursor:pointer}
#details table{border-collapse:collapse;width:100%}
#details th,#details td{border:1px solid #ddd;padding:2px 5px;text-align:left;vertical-align:top;
  font-size:12px}
#details td.num{font-family:monospace;white-space:nowrap}
#details tr.fail{background:#fdecea}
#details tr.reference{background:#f4f0fa}
#details tr.deviation{background:#fdf3e1}
#details tr.skip{color:#777}
#details pre{background:#fff;border:1px solid #ccc;padding:6px;white-space:pre-wrap;
  overflow-wrap:anywhere;font-size:12px;margin:0}
#details .note{border-left:4px solid #7d5ba6;padding-left:6px}
""" + "".join(f".b.{s}{{background:{c}}}\n" for s, c in COLOURS.items())

_SCRIPT = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  var T = data.text, panel = document.getElementById("details"), selected = null;
  var GLYPHS = %(glyphs)s, LABELS = %(labels)s;
  var byKey = {};
  data.cells.forEach(function (cell, i) {
    byKey[data.cases[cell.k][0] + "|" + data.backends[cell.b]] = i;
  });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function badge(state, text) { return el("span", "b " + state, text + " " + GLYPHS[state]); }
  function block(title, text) {
    panel.appendChild(el("h4", null, title));
    panel.appendChild(el("pre", null, text));
  }

  function show(index, dtype) {
    var cell = data.cells[index], c = data.cases[cell.k], backend = data.backends[cell.b];
    var runs = cell.r.filter(function (r) { return !dtype || r.d === dtype; });
    if (!runs.length) { runs = cell.r; dtype = null; }
    panel.textContent = "";
    var close = el("button", "close", "\\u00d7");
    close.title = "close (Esc)";
    close.addEventListener("click", hide);
    panel.appendChild(close);
    var heading = el("h2", null, c[0] + " \\u00b7 " + backend + " \\u00b7 " +
                     runs.map(function (r) { return r.d; }).join(", "));
    heading.id = "details-title";
    panel.appendChild(heading);
    panel.appendChild(el("p", "meta", "op " + c[1] + ", family " + c[2] + ", backend " +
                         backend + (dtype ? " (click the cell for every dtype)" : "")));
    runs.forEach(function (r) {
      var h = el("h3");
      h.appendChild(badge(r.s, r.d));
      h.appendChild(document.createTextNode(" " + r.d + ": " + LABELS[r.s]));
      panel.appendChild(h);
      if (r.c.some(function (check) { return T[check[1]] === "reference"; })) {
        panel.appendChild(el("p", "note", "The reference backend (" + data.reference +
          ") fails this case by itself: cross_backend compared with a wrong reference, " +
          "so its failure is not blamed on " + backend + "."));
      }
      var table = el("table"), head = el("tr");
      ["check", "status", "detail", "max abs error", "max rel error"].forEach(function (t) {
        head.appendChild(el("th", null, t));
      });
      table.appendChild(head);
      // Failing checks first, the others in the runner's order.
      var rank = {fail: 0, reference: 1, deviation: 2};
      r.c.map(function (check, i) { return [check, i]; }).sort(function (a, b) {
        var x = rank[T[a[0][1]]], y = rank[T[b[0][1]]];
        return (x === undefined ? 3 : x) - (y === undefined ? 3 : y) || a[1] - b[1];
      }).forEach(function (pair) {
        var check = pair[0], status = T[check[1]], row = el("tr", status);
        row.appendChild(el("td", null, T[check[0]]));
        row.appendChild(el("td", null, LABELS[status] || status));
        row.appendChild(el("td", null, T[check[2]]));
        row.appendChild(el("td", "num", check.length > 3 ? check[3] : ""));
        row.appendChild(el("td", "num", check.length > 4 ? check[4] : ""));
        table.appendChild(row);
      });
      panel.appendChild(table);
      if (r.w) { block("Cause", r.w); }
      if (r.x) { block("Reproduce", r.x); }
      if (r.p) { block("Python snippet", r.p); }
      if (r.t) { block("Traceback", r.t); }
    });
    panel.hidden = false;
    document.body.classList.add("panel-open");
    if (selected) { selected.classList.remove("selected"); }
    selected = document.querySelector('td[data-c="' + index + '"]');
    if (selected) { selected.classList.add("selected"); }
    panel.scrollTop = 0;
    history.replaceState(null, "", "#" + encodeURIComponent(
      c[0] + "|" + backend + (dtype ? "|" + dtype : "")));
  }

  function hide() {
    panel.hidden = true;
    document.body.classList.remove("panel-open");
    if (selected) { selected.classList.remove("selected"); selected = null; }
    history.replaceState(null, "", location.pathname + location.search);
  }

  document.addEventListener("click", function (event) {
    var cell = event.target.closest("td[data-c]");
    if (!cell) { return; }
    var one = event.target.closest(".b");
    show(Number(cell.dataset.c), one ? one.dataset.d : null);
  });
  document.addEventListener("keydown", function (event) {
    var cell = event.target.closest && event.target.closest("td[data-c]");
    if (cell && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      show(Number(cell.dataset.c), null);
    } else if (event.key === "Escape" && !panel.hidden) {
      hide();
    }
  });
  var only = document.getElementById("failures-only");
  function filter() { document.body.classList.toggle("failures-only", only.checked); }
  only.addEventListener("change", filter);
  filter();
  if (location.hash.length > 1) {
    var parts = decodeURIComponent(location.hash.slice(1)).split("|");
    var index = byKey[parts[0] + "|" + parts[1]];
    if (index !== undefined) {
      show(index, parts[2] || null);
      if (selected) { selected.scrollIntoView({block: "center"}); }
    }
  }
  document.body.dataset.ready = "yes";
})();
""" % {"glyphs": json.dumps(GLYPHS), "labels": json.dumps(LABELS)}
