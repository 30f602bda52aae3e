"""``arraygrad conformance``: certify backends' gradients, op by op (the main job)."""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time

from rich.console import Console

import arraygrad as ag
from arraygrad.hookspecs import load

from . import known, preflight, report, runner
from .html_report import environment


def _seed(text):
    """A seed NumPy's generators take: an integer from 0 to 2**32 - 1."""
    value = int(text)
    if not 0 <= value < 2 ** 32:
        raise argparse.ArgumentTypeError(f"{value} is not a seed from 0 to 2**32 - 1")
    return value


def _seconds(text):
    """A time limit in seconds: a number, 0 for none."""
    value = float(text)
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds (0: no limit)")
    return value


def _writable(parser, option, path):
    """Refuse a report path that cannot be written, before a run of minutes; leave no empty
    file behind (the report is written after the run)."""
    existed = os.path.exists(path)
    try:
        with open(path, "a"):
            pass
    except OSError as exc:
        parser.exit(2, f"arraygrad conformance: error: {option} {path}: cannot write there "
                       f"({exc.strerror})\n")
    if not existed and os.path.isfile(path):
        os.remove(path)


def _write(option, path, write) -> bool:
    """``write()`` the report for ``option``; a failure (a full disk) is one line on stderr."""
    try:
        write()
        return True
    except OSError as exc:
        print(f"arraygrad conformance: error: {option} {path}: cannot write there "
              f"({exc.strerror or exc})", file=sys.stderr)
        return False


def _still_running(text):
    print(f"arraygrad conformance: {text}", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="arraygrad conformance",
        description="Certify backends' gradients: every differentiable function of the "
                    "standard, with every option, against central differences, the NumPy "
                    "backend and torch.autograd (when installed), to second order and in forward "
                    "mode. A preflight first lists what the backend lacks. Exits 1 on any "
                    "failure, 2 on a usage error.",
        epilog="examples: arraygrad conformance --backend numpy --op 'sum*' --dtype float64; "
               "arraygrad conformance --backend mylib --preflight; arraygrad conformance "
               "--plugin mylib_plugin --backend mylib --op 'prod[axis=None*' --traceback")
    parser.add_argument("--backend", action="append", help="a backend (repeatable; default: "
                        "every available one)")
    parser.add_argument("--op", action="append",
                        help="only cases whose op or id matches this glob (repeatable: any of "
                        "them): 'sum*', 'prod[axis=None*' (brackets are literal), "
                        "'mean*@masked' (a plugin's semantic inputs)")
    parser.add_argument("--dtype", action="append", choices=["float32", "float64"],
                        help="only this dtype (complex cases follow their real precision)")
    parser.add_argument("--json", help="write the results as JSON to this file")
    parser.add_argument("--html", help="write a self-contained HTML report to this file")
    parser.add_argument("--seed", type=_seed, default=0,
                        help="seed of the random inputs (0 to 2**32 - 1)")
    parser.add_argument("--timeout", type=_seconds, default=60.0, metavar="SECONDS",
                        help="stop a case run after this long, as a failure, and go on "
                             "(default 60; 0: no limit; Unix: Python code and sleeps, not a C "
                             "call that never returns)")
    parser.add_argument("--allow-missing", action="store_true",
                        help="a function the standard requires but the backend lacks is a skip "
                             "(work in progress), not a failure")
    parser.add_argument("--external", choices=["auto", "torch", "jax", "none"], default="auto",
                        help="the independent reference compared with every case: torch.autograd "
                             "(auto: when torch is installed) or jax.vjp")
    parser.add_argument("--deviations", action="append", default=[], metavar="FILE",
                        help="more known deviations (work in progress; a plugin ships its own "
                             "through BackendSpec.deviations): see docs/conformance.md")
    parser.add_argument("--strict-deviations", action="store_true",
                        help="fail when a deviation entry no longer fails (a stale entry)")
    parser.add_argument("--list", action="store_true",
                        help="list the case ids (those --op selects) and exit")
    parser.add_argument("-x", "--exitfirst", action="store_true",
                        help="stop at the first failing case run")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--traceback", action="store_true",
                        help="print each failure's traceback and a Python snippet running it")
    parser.add_argument("--preflight", action="store_true",
                        help="only check what arraygrad needs of the backend (functions its "
                             "rules call, item assignment, to_numpy, dtypes) and exit")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE[:OBJECT]",
                        help="register a plugin first (a backend made with "
                             "arraygrad.register_backend, to reproduce its failures)")
    args = parser.parse_args(argv)
    for option, path in (("--json", args.json), ("--html", args.html)):
        if path:  # checked before a run of minutes, not after it
            _writable(parser, option, path)
    for path in args.deviations:
        try:
            with open(path, encoding="utf-8") as stream:
                stream.read()
        except (OSError, UnicodeDecodeError) as exc:
            why = (f"not UTF-8 text ({exc.reason} at byte {exc.start})"
                   if isinstance(exc, UnicodeDecodeError) else exc.strerror or str(exc))
            parser.exit(2, f"arraygrad conformance: error: --deviations {path}: cannot be "
                           f"read: {why}\n")
    for target in args.plugin:
        try:
            plugin = load(target)
            if not ag.registry.pm.is_registered(plugin):
                ag.register_backend(plugin)
        except Exception as exc:
            parser.exit(2, f"arraygrad conformance: error: --plugin {target}: "
                           f"{type(exc).__name__}: {exc}\n")
    for pattern in args.op or ():
        if not runner.select(pattern):
            parser.exit(2, f"arraygrad conformance: error: --op {pattern!r} matches no case id "
                           "or op (`arraygrad conformance --list` lists them)\n")
    if args.list:
        print("\n".join(case.id for case in runner.select(args.op)))
        return 0
    ag.registry.ensure_loaded()
    for name in args.backend or ():  # (ag.backends() would import every library: not here)
        if name not in ag.registry.backends and name not in ag.registry.broken:
            parser.exit(2, f"arraygrad conformance: error: no backend named {name!r} (`arraygrad "
                           "backends` lists them; --plugin MODULE:OBJECT registers one)\n")
    console = Console(highlight=False, soft_wrap=True)
    started = time.perf_counter()
    started_at = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    available, unavailable, failing = runner.ready(args.backend)
    if args.backend and not available:  # nothing to run: say why, not "0 case runs"
        for name, reason in unavailable.items():
            console.print(f"{name}: not run: {reason}", markup=False)
        return 1
    if args.timeout and not runner.can_time_out():
        print("arraygrad conformance: warning: --timeout is not enforced here (it needs "
              "SIGALRM: Unix, the main thread)", file=sys.stderr)
    preflights = [preflight.check(backend, runner.select(args.op)) for backend in available]
    if args.preflight:
        for found in preflights:
            console.print(found.text(cases_shown=8), markup=False)
        for name, reason in sorted(unavailable.items()):
            console.print(f"{name}: not run: {reason}", markup=False)
        return 0 if all(found.ok for found in preflights) and not unavailable else 1
    try:
        results, unavailable = runner.run(
            args.backend, args.op, args.dtype, args.seed,
            None if args.quiet else runner.progress_bar(), allow_missing=args.allow_missing,
            external_library=None if args.external == "none" else args.external,
            exitfirst=args.exitfirst, deviation_files=args.deviations, timeout=args.timeout,
            notice=_still_running)
    except ValueError as exc:  # a deviations file that does not parse or names no case
        parser.exit(2, f"arraygrad conformance: error: {exc}\n")
    env = environment(sorted({r.backend for r in results}))
    env["date"] = started_at  # the run's start, not the report's
    entries = {name: known.for_backend(ag.get_backend(name), args.deviations)
               for name in {r.backend for r in results}}
    stale = known.stale(results, entries)
    # The reports first: rendering on the terminal cannot lose them.
    written = True
    if args.json:
        written &= _write("--json", args.json, lambda: report.write_json(
            args.json, results, unavailable, args.seed, preflights, env))
    if args.html:
        written &= _write("--html", args.html, lambda: report.write_html(
            args.html, results, unavailable, args.seed, env=env))
    report.render(console, results, unavailable, stale, preflights, args.traceback)
    console.print(f"\n{len(results)} case runs in {time.perf_counter() - started:.1f} s",
                  markup=False)
    if not written:
        return 2
    failed = any(r.status == "fail" for r in results) or (args.strict_deviations and stale)
    return 1 if failed or failing or not results else 0
