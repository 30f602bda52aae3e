"""Before and after: the benchmark on another revision of arraygrad and on this one, in turns.

Several rounds of each; the median and the spread (lowest-highest) of every figure.

    python -m bench.compare 668f74c                      # W1-W5 and I1, 5 rounds
    python -m bench.compare HEAD~3 --only W1,W2 --rounds 3
    python -m bench.compare HEAD~3 --module bench.broad  # the broad benchmark's 16 workloads

The other revision is exported with ``git archive`` and installed, with its compiled engine where
it has one, in its own virtual environment (``.bench-venvs/<commit>``, kept for later runs)
beside the very versions of NumPy, array-api-compat, pluggy, SciPy and torch that this
environment has, so that arraygrad alone differs (other versions here: it is made again).
Both sides run this checkout's ``bench/__main__.py`` (``--module bench.broad``:
``bench/broad.py``), as a script from outside the checkout (so that each imports its own
arraygrad), on hand-written NumPy, arraygrad and PyTorch (where installed): ratios are to
hand-written NumPy in the same process (bench.broad's: to PyTorch), which drifts with the machine
as arraygrad does."""

import argparse
import importlib.metadata
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "bench" / "__main__.py"
HARNESSES = {"bench": HARNESS, "bench.broad": ROOT / "bench" / "broad.py"}
VENVS = ROOT / ".bench-venvs"
SAME_VERSIONS = ("numpy", "array-api-compat", "pluggy", "scipy", "torch")
LIBRARIES = "HandNumpy,Arraygrad,Torch"
THIS_CHECKOUT = "after (this checkout)"


def commit_of(revision):
    done = subprocess.run(["git", "rev-parse", "--short", f"{revision}^{{commit}}"], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"no commit {revision!r} in {ROOT}: {done.stderr.strip()}")
    return done.stdout.strip()


def pins():
    """``name==version`` of every library in SAME_VERSIONS installed here."""
    found = []
    for name in SAME_VERSIONS:
        try:
            found.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def environment(commit):
    """The Python of a virtual environment with arraygrad at ``commit`` installed (made once)."""
    venv = VENVS / commit
    python = venv / "bin" / "python"
    # Written last, with the versions installed beside arraygrad: an interrupted install, or
    # one beside other versions than this environment's, is made again.
    installed, pinned = venv / "installed", pins()
    if installed.exists() and installed.read_text() == " ".join(pinned) + "\n":
        return str(python)
    with tempfile.TemporaryDirectory() as tree:
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
        print(f"installing arraygrad {commit} in {venv} ({', '.join(pinned)})", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        packages = [tree, *pinned]
        if (Path(tree) / "speedups" / "setup.py").exists():
            packages.append(str(Path(tree) / "speedups"))
        done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *packages])
        if done.returncode:
            shutil.rmtree(venv, ignore_errors=True)
            raise SystemExit(f"installing arraygrad {commit} failed (see pip's output above)")
    installed.write_text(" ".join(pinned) + "\n")
    return str(python)


def run_once(python, args):
    """One run of the benchmark in ``python``'s environment: ``{"machine": ..., "results":
    [...]}``, as bench --json writes it."""
    with tempfile.TemporaryDirectory() as outside:  # not the checkout: its arraygrad would win
        out = Path(outside) / "results.json"
        module = getattr(args, "module", "bench")
        command = [python, str(HARNESSES[module]), "--libraries", LIBRARIES, "--json",
                   str(out)] + (["--only", args.only] if args.only else []) + (
                       ["--quick"] if args.quick else [])
        environment = dict(os.environ)
        if module == "bench.broad" and sklearn_digits():  # the same data on both sides
            environment["BENCH_BROAD_DIGITS"] = str(sklearn_digits())
        done = subprocess.run(command, cwd=outside, capture_output=True, text=True,
                              env=environment)
        if done.returncode:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}"
                             f"{done.stderr[-2000:]}")
        return json.loads(out.read_text())


def sklearn_digits():
    """This environment's scikit-learn digits file, which bench.broad's mlp_digits reads (the
    other revision's environment has no scikit-learn), or None."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data" / "digits.csv.gz"
    return path if path.exists() else None


def summarise(runs_by_side):
    """``{side: [each run, as run_once gives it]}`` -> rows ``(workload, measure, library,
    unit, {side: (figures, ratios)})`` in the order the first run gave them."""
    rows, order = {}, []
    for side, runs in runs_by_side.items():
        for run in runs:
            for workload, measure, library, figure, unit, ratio in run["results"]:
                key = (workload, measure, library, unit)
                if key not in rows:
                    rows[key] = {}
                    order.append(key)
                figures, ratios = rows[key].setdefault(side, ([], []))
                figures.append(figure)
                if ratio is not None:
                    ratios.append(ratio)
    return [(*key, rows[key]) for key in order]


def spread(values, digits):
    """``median (lowest-highest)``, or ``-`` for no values."""
    if not values:
        return "-"
    return (f"{statistics.median(values):,.{digits}f} "
            f"({min(values):,.{digits}f}-{max(values):,.{digits}f})")


def table(rows, sides):
    """A Markdown table of the rows: per side, the figure and the ratio to the first library."""
    header = "| workload | measure | library | " + " | ".join(
        f"{side}: figure | {side}: ratio" for side in sides) + " |"
    lines = [header, "|" + "---|" * (3 + 2 * len(sides))]
    for workload, measure, library, unit, by_side in rows:
        cells = []
        for side in sides:
            figures, ratios = by_side.get(side, ([], []))
            cells += [f"{spread(figures, 2)} {unit}" if figures else "-",
                      "x" + spread(ratios, 3) if ratios and set(ratios) != {1.0} else ""]
        lines.append(f"| {workload} | {measure} | {library} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.compare",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("revision", help="the revision to compare with (a commit, tag, HEAD~3)")
    parser.add_argument("--rounds", type=int, default=5, help="runs of each side (default 5)")
    parser.add_argument("--module", choices=sorted(HARNESSES), default="bench",
                        help="the benchmark to run on both sides: python -m bench (W1-W5, I1; "
                             "the default) or python -m bench.broad")
    parser.add_argument("--only", help="as the benchmark's own --only (default: its own)")
    parser.add_argument("--quick", action="store_true",
                        help="python -m bench --quick: a smoke run")
    parser.add_argument("--write-results", action="store_true",
                        help="also put the table in bench/README.md (Results: before and after)")
    args = parser.parse_args(argv)
    commit = commit_of(args.revision)
    sides = {f"before ({commit})": environment(commit), THIS_CHECKOUT: sys.executable}
    runs = {side: [] for side in sides}
    for number in range(1, args.rounds + 1):
        # In turns, so that a drift of the machine touches both, which goes first alternating.
        order = list(sides.items())
        for side, python in order if number % 2 else order[::-1]:
            print(f"round {number}/{args.rounds}: {side}", flush=True)
            runs[side].append(run_once(python, args))
    summary = table(summarise(runs), list(sides))
    print(f"\nMedians (lowest-highest) of {args.rounds} runs per side, the sides in turns:\n")
    print(summary)
    if args.write_results:
        write_results(summary, args, commit, machine_of(runs))


RESULTS_START = ("<!-- before and after: written by `python -m bench.compare REVISION "
                 "--write-results`; do not edit by hand -->")
RESULTS_END = "<!-- end of before and after -->"
BROAD_START = ("<!-- broad before and after: written by `python -m bench.compare REVISION "
               "--module bench.broad --write-results`; do not edit by hand -->")
BROAD_END = "<!-- end of broad before and after -->"


def machine_of(runs):
    """The machine and versions of this checkout's side (bench --json's ``machine``)."""
    return runs[THIS_CHECKOUT][-1]["machine"]


def write_results(summary, args, commit, machine):
    # (imported here, not with this module: importing it pins BLAS threads in os.environ)
    import bench.__main__ as bench

    broad = getattr(args, "module", "bench") == "bench.broad"
    command = (f"python -m bench.compare {args.revision} --rounds {args.rounds}"
               f"{' --module bench.broad' if broad else ''}"
               f"{f' --only {args.only}' if args.only else ''}"
               f"{' --quick' if args.quick else ''} --write-results")
    start, end = (BROAD_START, BROAD_END) if broad else (RESULTS_START, RESULTS_END)
    bench.write_section([start, "", f"Measured {time.strftime('%Y-%m-%d')} with "
                         f"`{command}` ({commit}) on {machine}. Medians (lowest-highest) of "
                         f"{args.rounds} runs per side, the sides in turns; ratios to "
                         f"{'PyTorch' if broad else 'hand-written NumPy'} in the same run.", "",
                         summary, "", end],
                        "Results: broad, before and after" if broad else
                        "Results: before and after")


if __name__ == "__main__":
    sys.exit(main())
