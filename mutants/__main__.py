"""Mutation testing: ``python -m mutants [--suite conformance|tests|both] [--only ID,ID]
[--jobs N] [--seeds 0,1,3] [--json FILE]``, from the repository root. See README.md."""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .table import MUTANTS

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = [sys.executable, "-m", "arraygrad.cli", "conformance",
               "--backend", "numpy", "--backend", "array_api_strict", "-q", "--exitfirst"]
TESTS = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]


def check_table(mutants, root: Path) -> list[str]:
    """Problems of the table against the files under ``root`` (empty: all entries apply)."""
    problems, seen = [], set()
    for m in mutants:
        if m.id in seen:
            problems.append(f"{m.id}: duplicate id")
        seen.add(m.id)
        path = root / m.path
        if not path.is_file():
            problems.append(f"{m.id}: no file {m.path}")
            continue
        count = path.read_text().count(m.original)
        if count != 1:
            problems.append(f"{m.id}: original occurs {count} times in {m.path} "
                            f"({'stale' if count == 0 else 'ambiguous'}): {m.original!r}")
        if m.original == m.replacement:
            problems.append(f"{m.id}: replacement equals original")
    return problems


def make_copy(target: Path) -> Path:
    """Tracked and untracked-not-ignored files (no __pycache__), plus the symlinks that the
    editable install's package-dir mapping stands for."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file() and "__pycache__" not in source.parts:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / "arraygrad" / "conformance").symlink_to(Path("..") / "conformance")
    (target / "arraygrad_plugins").symlink_to("plugins")
    return target


def run(command, copy: Path, timeout: float) -> tuple[bool, float, str]:
    """Run ``command`` in the copy; return (passed, seconds, output tail). A timeout fails."""
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.perf_counter()
    with subprocess.Popen(command, cwd=copy, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, start_new_session=True) as process:
        try:
            output, _ = process.communicate(timeout=timeout)
            passed = process.returncode == 0
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            output, passed = output + b"\n[timeout]", False
    tail = "\n".join(output.decode(errors="replace").strip().splitlines()[-6:])
    return passed, time.perf_counter() - started, tail


def run_suites(suites, copy, args) -> dict:
    """{suite: {"killed", "seconds", "tail"}} for the code currently in ``copy``."""
    results = {}
    for suite in suites:
        if suite == "conformance":
            passed, seconds, tail = True, 0.0, ""
            for seed in args.seeds:  # killed as soon as one seed fails
                passed, s, tail = run(CONFORMANCE + ["--seed", str(seed)], copy, args.timeout)
                seconds += s
                if not passed:
                    break
        else:
            passed, seconds, tail = run(TESTS + args.pytest_args.split(), copy,
                                        args.tests_timeout)
        results[suite] = {"killed": not passed, "seconds": round(seconds, 1), "tail": tail}
    return results


def run_mutant(mutant, suites, copies: queue.Queue, args) -> dict:
    copy = copies.get()
    path = copy / mutant.path
    original = path.read_text()
    try:
        path.write_text(original.replace(mutant.original, mutant.replacement, 1))
        return run_suites(suites, copy, args)
    finally:
        path.write_text(original)
        copies.put(copy)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mutants", description=__doc__)
    parser.add_argument("--suite", choices=["conformance", "tests", "both"], default="conformance")
    parser.add_argument("--only", help="comma-separated mutant ids")
    parser.add_argument("--jobs", type=int, default=2, help="mutants run in parallel")
    parser.add_argument("--seeds", default="0", help="conformance seeds, e.g. 0,1,3")
    parser.add_argument("--timeout", type=float, default=300, help="per conformance run, s")
    parser.add_argument("--tests-timeout", type=float, default=600, help="per test run, s")
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments, e.g. "
                        "'--deselect tests/x.py::test_y' (a test that fails unmutated)")
    parser.add_argument("--json", help="write the results here (outside the repository)")
    parser.add_argument("--check", action="store_true", help="only validate the table")
    args = parser.parse_args(argv)
    args.seeds = [int(s) for s in args.seeds.split(",")]
    suites = ["conformance", "tests"] if args.suite == "both" else [args.suite]
    if args.json and Path(args.json).resolve().is_relative_to(ROOT):
        parser.error("--json: write reports outside the repository")

    mutants = MUTANTS
    if args.only:
        wanted = args.only.split(",")
        unknown = sorted(set(wanted) - {m.id for m in MUTANTS})
        if unknown:
            parser.error(f"unknown mutant ids: {', '.join(unknown)}")
        mutants = [m for w in dict.fromkeys(wanted) for m in MUTANTS if m.id == w]  # as given

    with tempfile.TemporaryDirectory(prefix="arraygrad-mutants-") as tmp:
        first = make_copy(Path(tmp) / "copy0")
        problems = check_table(mutants, first)
        if problems:
            print("The mutant table does not apply to the code:", *problems, sep="\n  ",
                  file=sys.stderr)
            return 2
        if args.check:
            print(f"{len(mutants)} mutants apply")
            return 0
        print(f"baseline ({', '.join(suites)}) ...", file=sys.stderr, flush=True)
        baseline = run_suites(suites, first, args)
        failed = [s for s, r in baseline.items() if r["killed"]]
        if failed:
            print(f"error: the unmutated code fails {', '.join(failed)}:", file=sys.stderr)
            for s in failed:
                print(baseline[s]["tail"], file=sys.stderr)
            return 2
        copies: queue.Queue = queue.Queue()
        copies.put(first)
        for k in range(1, max(1, args.jobs)):
            copies.put(shutil.copytree(first, Path(tmp) / f"copy{k}", symlinks=True))
        results = {}
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            futures = {pool.submit(run_mutant, m, suites, copies, args): m for m in mutants}
            for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
                m = futures[future]
                results[m.id] = future.result()
                marks = " ".join(f"{s}={'killed' if r['killed'] else 'SURVIVED'}"
                                 for s, r in results[m.id].items())
                print(f"[{done}/{len(mutants)}] {m.id}: {marks}", file=sys.stderr, flush=True)

    report(mutants, suites, results, baseline)
    if args.json:
        Path(args.json).write_text(json.dumps({
            "suites": suites, "seeds": args.seeds, "baseline": baseline,
            "mutants": [{"id": m.id, "path": m.path, "what": m.what, "equivalent": m.equivalent,
                         "original": m.original, "replacement": m.replacement,
                         "results": results[m.id]} for m in mutants]}, indent=1))
    return 0


def report(mutants, suites, results, baseline):
    width = max(len(m.id) for m in mutants)
    print(f"{'mutant':<{width}}  {'file':<32}" + "".join(f"  {s:>19}" for s in suites))
    for m in mutants:
        cells = "".join(f"  {('killed' if r['killed'] else 'SURVIVED'):>10} {r['seconds']:>7.1f}s"
                        for r in (results[m.id][s] for s in suites))
        print(f"{m.id:<{width}}  {m.path:<32}{cells}" + ("  (equivalent)" * m.equivalent))
    print("baseline: " + ", ".join(f"{s} {r['seconds']:.1f}s" for s, r in baseline.items()))
    scored = [m for m in mutants if not m.equivalent]
    for s in suites:
        killed = sum(results[m.id][s]["killed"] for m in scored)
        print(f"score {s}: {killed}/{len(scored)} = {100 * killed / max(len(scored), 1):.0f}% "
              f"killed ({len(mutants) - len(scored)} equivalent left out)")
    for s in suites:
        survivors = [m for m in scored if not results[m.id][s]["killed"]]
        print(f"\nsurvivors of {s} ({len(survivors)}):")
        for m in survivors:
            print(f"  {m.id:<{width}}  {m.path}: {m.what}")


if __name__ == "__main__":
    sys.exit(main())
