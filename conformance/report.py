"""Reports of a conformance run: the summary matrix, the failures, JSON and HTML."""

from __future__ import annotations

import collections
import io
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


def loosened(results):
    """``{backend: {dtype: ((rtol, atol), (default rtol, default atol))}}``: every tolerance a
    backend of the run declares looser than arraygrad's default for a dtype the suite runs in,
    so that a certificate shows how closely it compared."""
    from arraygrad.hookspecs import TOLERANCES

    table = {}
    for name in sorted({r.backend for r in results}):
        declared = ag.get_backend(name).spec.tolerances
        looser = {dtype: (tuple(declared[dtype]), default) for dtype, default in
                  TOLERANCES.items() if dtype in declared and any(
                      value > limit for value, limit in zip(declared[dtype], default))}
        if looser:
            table[name] = looser
    return table


def describe_tolerance(dtype, declared, default) -> str:
    """``float32: rtol 0.01, atol 0.001 (default 0.0001, 1e-05)``."""
    return (f"{dtype}: rtol {declared[0]:g}, atol {declared[1]:g} (default {default[0]:g}, "
            f"{default[1]:g})")


def table(results):
    """The summary as a rich Table: a row per family, a column per backend, each cell
    ``passed/failed/skipped`` case runs (``+Nd`` known deviations); rich fits it to the width."""
    from rich.table import Table
    from rich.text import Text

    counts = summary(results)
    backends = sorted(counts)
    grid = Table(title="case runs (one case in one dtype) per family: passed/failed/skipped",
                 title_justify="left")
    grid.add_column("family")
    for backend in backends:
        grid.add_column(Text(backend), justify="right", overflow="fold")  # no markup
    totals = {b: collections.Counter() for b in backends}
    for family in sorted({r.case.family for r in results}):
        cells = []
        for backend in backends:
            cell = counts[backend].get(family, collections.Counter())
            totals[backend].update(cell)
            cells.append(_styled(cell))
        grid.add_row(family, *cells)
    grid.add_row("total", *[_styled(totals[b]) for b in backends], style="bold")
    return grid


def _styled(counts):
    colour = "red" if counts["fail"] else "yellow" if counts["deviation"] else "green" \
        if counts["pass"] else "bright_black"
    return f"[{colour}]{_cell(counts)}[/{colour}]"


def render(console, results, unavailable, stale=(), preflights=(), tracebacks=False):
    """Print the report on a rich ``console``: the preflight's findings, the summary table,
    what the run left out and why, deviations with reasons, stale entries, and each failure with
    its stage, cause and a command and Python snippet reproducing it."""
    say = lambda line="": console.print(line, markup=False, highlight=False)  # noqa: E731
    for report in preflights:
        if not report.ok:
            say(report.text())
    if results:
        console.print(table(results))
    for backend, reasons in sorted(removed(results).items()):
        for reason, count in sorted(reasons.items()):
            say(f"{backend}: {count} case run(s) not run: {reason}")
    for backend, looser in loosened(results).items():
        say(f"{backend}: declares tolerances looser than arraygrad's defaults: " + "; ".join(
            describe_tolerance(dtype, *pair) for dtype, pair in looser.items()))
    for name, reason in sorted(unavailable.items()):
        say(f"{name}: not run: {reason}")
    known = [(r, check, detail) for r in results for check, (status, detail, *_) in
             r.checks.items() if status == "deviation"]
    if known:
        say(f"\n{len(known)} known deviation(s):")
    for r, check, detail in known:
        say(f"  {r.backend} {r.id} {r.dtype} {check}: {detail}")
    if stale:
        say(f"\n{len(stale)} stale deviation entr{'y' if len(stale) == 1 else 'ies'} "
            "(they no longer fail: remove them; --strict-deviations fails on them):")
    for backend, entry in stale:
        say(f"  {backend}: {entry} (in {entry.source}: {entry.reason})")
    failures = [r for r in results if r.status == "fail"]
    if failures:
        say(f"\n{len(failures)} failure(s):")
    for r in failures:
        for check, (status, detail, abs_err, rel_err) in r.checks.items():
            if status == "fail":
                errors = "" if abs_err is None or "max abs error" in detail else \
                    f" [abs {abs_err:.3g}, rel {rel_err:.3g}]"
                say(f"  {r.backend} {r.id} {r.dtype} {check}: {detail}{errors}")
        if r.cause and r.cause not in r.checks.get("run", ("", ""))[1]:
            say(f"    cause: {r.cause}")
        say(f"    reproduce: {r.reproduce()}")
        if tracebacks:
            say("    in Python:\n" + _indent(r.snippet(), 6))
            if r.traceback:
                say(_indent(r.traceback.rstrip(), 6))
    if failures and not tracebacks:
        say("(--traceback prints each failure's traceback and a Python snippet; --json keeps "
            "them)")


def _indent(text, spaces):
    return "\n".join(" " * spaces + line for line in text.splitlines())


def text(results, unavailable, stale=(), preflights=(), tracebacks=False, width=100) -> str:
    """The report of :func:`render` as plain text."""
    from rich.console import Console

    console = Console(record=True, width=width, file=io.StringIO(), color_system=None,
                      soft_wrap=True)
    render(console, results, unavailable, stale, preflights, tracebacks)
    return console.export_text()


def _cell(counts):
    cell = f"{counts['pass']}/{counts['fail']}/{counts['skip']}"
    return cell + (f"+{counts['deviation']}d" if counts["deviation"] else "")


def as_json(results, unavailable, seed, preflights=(), env=None) -> dict:
    """The versioned JSON document described in docs/conformance.md."""
    from .html_report import environment

    return {
        "schema": "arraygrad-conformance",
        "version": SCHEMA_VERSION,
        "arraygrad": ag.__version__,
        "environment": env or environment(sorted({r.backend for r in results})),
        "seed": seed,
        "unavailable": unavailable,
        "preflight": {p.backend: p.as_json() for p in preflights},
        "summary": {b: {f: dict(c) for f, c in row.items()} for b, row in summary(results).items()},
        "removed": {b: dict(reasons) for b, reasons in removed(results).items()},
        "tolerances": {b: {dtype: {"rtol": declared[0], "atol": declared[1],
                                   "default": list(default)}
                           for dtype, (declared, default) in looser.items()}
                       for b, looser in loosened(results).items()},
        "results": [{
            "backend": r.backend, "case": r.case.id, "id": r.id, "inputs": r.inputs,
            "op": r.case.op, "variant": r.case.variant, "family": r.case.family,
            "dtype": r.dtype, "status": r.status, "reproduce": r.reproduce(),
            **({"python": r.snippet(), "cause": r.cause, "traceback": r.traceback}
               if r.status == "fail" else {}),
            "checks": {check: {"status": s, "detail": d, "max_abs_error": a, "max_rel_error": e}
                       for check, (s, d, a, e) in r.checks.items()},
        } for r in results],
    }


def write_json(path, results, unavailable, seed, preflights=(), env=None):
    text = json.dumps(as_json(results, unavailable, seed, preflights, env), indent=1)
    with open(path, "w", encoding="utf-8") as stream:  # whole: no half-written file on a bug
        stream.write(text)


def as_html(results, unavailable, seed, **options) -> str:
    """One self-contained page (no network): cases grouped by family, failing rows first, a
    badge per dtype in each case x backend cell, a side panel with a cell's checks, reproduce
    command and traceback. See ``html_report.as_html`` for the options."""
    from . import html_report

    return html_report.as_html(results, unavailable, seed, **options)


def _worst(statuses):
    from . import html_report

    return html_report.worst(statuses)


def write_html(path, results, unavailable, seed, **options):
    text = as_html(results, unavailable, seed, **options)
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(text)
