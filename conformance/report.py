"""Reports of a conformance run: the summary matrix, the failures, JSON and HTML."""

from __future__ import annotations

import collections
import html
import json

import arraygrad as ag


SCHEMA_VERSION = 1
COLOURS = {"pass": "#3c9a5f", "fail": "#d64541", "skip": "#b5b5b5", "deviation": "#e0a030"}


def summary(results):
    """``{backend: {family: Counter(status)}}`` over (case, dtype) results."""
    table = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    for r in results:
        table[r.backend][r.case.family][r.status] += 1
    return table


def removed(results):
    """``{backend: {reason: count}}``: the case runs a declaration of the backend removed (a
    capability set to False, a dtype not declared, a function missing with --allow-missing), so
    that a certificate shows what it does not cover."""
    table = collections.defaultdict(collections.Counter)
    for r in results:
        if r.status == "skip":
            reason = next(iter(r.checks.values()))[1]
            if reason.startswith(("capability", "the backend declares no", "not provided")):
                table[r.backend][reason] += 1
    return table


def text(results, unavailable, stale=()) -> str:
    """The summary matrix and each failure with its errors and a command reproducing it."""
    table = summary(results)
    families = sorted({r.case.family for r in results})
    lines = ["", f"{'backend':<18}" + "".join(f"{f[:14]:>16}" for f in families) + f"{'total':>16}"]
    for backend, row in sorted(table.items()):
        cells, total = [], collections.Counter()
        for family in families:
            counts = row.get(family, collections.Counter())
            total.update(counts)
            cells.append(_cell(counts))
        lines.append(f"{backend:<18}" + "".join(f"{c:>16}" for c in cells) + f"{_cell(total):>16}")
    lines.append("(passed/failed/skipped; deviations are known failures listed per backend)")
    for backend, reasons in sorted(removed(results).items()):
        for reason, count in sorted(reasons.items()):
            lines.append(f"{backend}: {count} case run(s) not run: {reason}")
    for name, reason in sorted(unavailable.items()):
        lines.append(f"{name}: {reason}")
    known = [(r, check, detail) for r in results for check, (status, detail, *_) in
             r.checks.items() if status == "deviation"]
    if known:
        lines.append(f"\n{len(known)} known deviation(s):")
    for r, check, detail in known:
        lines.append(f"  {r.backend} {r.case.id} {r.dtype} {check}: {detail}")
    if stale:
        lines.append(f"\n{len(stale)} stale deviation entr{'y' if len(stale) == 1 else 'ies'} "
                     "(they no longer fail: remove them; --strict-deviations fails on them):")
    for backend, entry in stale:
        lines.append(f"  {backend}: {entry} (in {entry.source}: {entry.reason})")
    failures = [r for r in results if r.status == "fail"]
    if failures:
        lines.append(f"\n{len(failures)} failure(s):")
    for r in failures:
        for check, (status, detail, abs_err, rel_err) in r.checks.items():
            if status == "fail":
                errors = "" if abs_err is None else f" [abs {abs_err:.3g}, rel {rel_err:.3g}]"
                lines.append(f"  {r.backend} {r.case.id} {r.dtype} {check}: {detail}{errors}")
        lines.append(f"    reproduce: {r.reproduce()}")
    return "\n".join(lines)


def _cell(counts):
    cell = f"{counts['pass']}/{counts['fail']}/{counts['skip']}"
    return cell + (f"+{counts['deviation']}d" if counts["deviation"] else "")


def as_json(results, unavailable, seed) -> dict:
    """The versioned JSON document described in docs/conformance.md."""
    return {
        "schema": "arraygrad-conformance",
        "version": SCHEMA_VERSION,
        "arraygrad": ag.__version__,
        "seed": seed,
        "unavailable": unavailable,
        "summary": {b: {f: dict(c) for f, c in row.items()} for b, row in summary(results).items()},
        "removed": {b: dict(reasons) for b, reasons in removed(results).items()},
        "results": [{
            "backend": r.backend, "case": r.case.id, "op": r.case.op, "variant": r.case.variant,
            "family": r.case.family, "dtype": r.dtype, "status": r.status,
            "reproduce": r.reproduce(),
            "checks": {check: {"status": s, "detail": d, "max_abs_error": a, "max_rel_error": e}
                       for check, (s, d, a, e) in r.checks.items()},
        } for r in results],
    }


def write_json(path, results, unavailable, seed):
    with open(path, "w") as stream:
        json.dump(as_json(results, unavailable, seed), stream, indent=1)


def as_html(results, unavailable, seed) -> str:
    """One self-contained page: a colour-coded case x backend matrix; hover a cell for its
    checks, click it to show them below the matrix. No network."""
    backends = sorted({r.backend for r in results})
    rows = collections.OrderedDict()
    for r in results:
        rows.setdefault(r.case.id, {}).setdefault(r.backend, []).append(r)
    head = "".join(f"<th>{html.escape(b)}</th>" for b in backends)
    body = []
    for case_id, cells in rows.items():
        tds = []
        for backend in backends:
            entries = cells.get(backend, [])
            status = _worst([e.status for e in entries]) if entries else "skip"
            details = "\n".join(
                f"{e.dtype}: {e.status}; " + "; ".join(
                    f"{c}={s}{(' (' + d + ')') if d else ''}" for c, (s, d, *_)
                    in e.checks.items()) for e in entries)
            tds.append(f'<td class="{status}" title="{html.escape(details)}" '
                       f'data-details="{html.escape(details)}">{status}</td>')
        body.append(f"<tr><th>{html.escape(case_id)}</th>{''.join(tds)}</tr>")
    counts = summary(results)
    legend = "".join(f'<span class="{s}">{s}</span> ' for s in COLOURS)
    totals = " | ".join(
        f"{html.escape(b)}: " + ", ".join(f"{k} {v}" for k, v in sorted(
            sum((c for c in row.values()), start=__import__('collections').Counter()).items()))
        for b, row in sorted(counts.items()))
    style = "".join(f".{s}{{background:{c};color:#fff}}" for s, c in COLOURS.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>arraygrad conformance</title>
<style>body{{font-family:sans-serif;margin:1em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ddd;padding:2px 8px;font-size:12px;text-align:left}}
td{{cursor:pointer}}{style}#details{{white-space:pre-wrap;font-family:monospace;margin-top:1em}}
</style></head><body>
<h1>arraygrad conformance</h1>
<p>arraygrad {html.escape(ag.__version__)}, seed {seed}. {legend}</p>
<p id="totals">{html.escape(totals)}</p>
<p>{html.escape('; '.join(f'{k}: {v}' for k, v in unavailable.items()))}</p>
<table id="matrix"><thead><tr><th>case</th>{head}</tr></thead><tbody>
{''.join(body)}
</tbody></table>
<div id="details">Click a cell for the checks of that case.</div>
<script>
document.getElementById("matrix").addEventListener("click", function (event) {{
  var cell = event.target.closest("td");
  if (cell) {{ document.getElementById("details").textContent = cell.dataset.details; }}
}});
document.body.dataset.ready = "yes";
</script>
</body></html>
"""


def _worst(statuses):
    for status in ("fail", "deviation", "pass"):
        if status in statuses:
            return status
    return "skip"


def write_html(path, results, unavailable, seed):
    with open(path, "w") as stream:
        stream.write(as_html(results, unavailable, seed))
