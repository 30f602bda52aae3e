"""``arraygrad conformance``: certify backends' gradients, op by op (the main job)."""

from __future__ import annotations

import argparse
import time

import arraygrad as ag

from . import known, report, runner


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="arraygrad conformance",
        description="Check every backend's gradients against finite differences, the NumPy "
                    "reference and themselves. Exits non-zero on any failure.")
    parser.add_argument("--backend", action="append", help="a backend (repeatable; default: "
                        "every available one)")
    parser.add_argument("--op", help="only cases whose op or id matches this glob ('sum*')")
    parser.add_argument("--dtype", action="append", choices=["float32", "float64"],
                        help="only this dtype (complex cases follow their real precision)")
    parser.add_argument("--json", help="write the results as JSON to this file")
    parser.add_argument("--html", help="write a self-contained HTML report to this file")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
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
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(case.id for case in runner.select(args.op)))
        return 0
    started = time.perf_counter()
    try:
        results, unavailable = runner.run(
            args.backend, args.op, args.dtype, args.seed,
            None if args.quiet else runner.progress_bar(), allow_missing=args.allow_missing,
            external_library=None if args.external == "none" else args.external,
            exitfirst=args.exitfirst, deviation_files=args.deviations)
    except ValueError as exc:  # a deviations file that does not parse or names no case
        parser.exit(2, f"arraygrad conformance: error: {exc}\n")
    entries = {name: known.for_backend(ag.get_backend(name), args.deviations)
               for name in {r.backend for r in results}}
    stale = known.stale(results, entries)
    print(report.text(results, unavailable, stale))
    print(f"\n{len(results)} case runs in {time.perf_counter() - started:.1f} s")
    if args.json:
        report.write_json(args.json, results, unavailable, args.seed)
    if args.html:
        report.write_html(args.html, results, unavailable, args.seed)
    failed = any(r.status == "fail" for r in results) or (args.strict_deviations and stale)
    missing = args.backend and any(name in unavailable for name in args.backend)
    return 1 if failed or missing or not results else 0
