"""``python -m bench``: every workload runs and arraygrad's gradients agree with the hand-written
NumPy ones (the bench refuses to time a wrong gradient). ``python -m bench.compare``,
before-and-after figures against another revision: how it runs the benchmark (``bench --json``,
from outside the checkout) and how it summarises rounds; the revision's own environment needs
torch installed anew, so its end-to-end run is by hand. No timing is asserted here."""

import argparse
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench import compare  # noqa: E402  (bench.compare pins no threads: bench/__main__ does)


def test_summarise_gives_median_and_spread_per_side_in_first_seen_order():
    # (medians that are not the means: 7.5 of 9, 7 and 7.5)
    before = [[["W1", "time", "arraygrad", 9.0, "ms", 4.5], ["W1", "per op", "arraygrad", 4.5,
                                                             "µs", None]],
              [["W1", "time", "arraygrad", 7.0, "ms", 3.5], ["W1", "per op", "arraygrad", 3.5,
                                                             "µs", None]],
              [["W1", "time", "arraygrad", 7.5, "ms", 3.75], ["W1", "per op", "arraygrad", 3.75,
                                                             "µs", None]]]
    after = [[["W1", "time", "arraygrad", 6.0, "ms", 3.0], ["W2", "time", "arraygrad", 3.6,
                                                            "ms", 1.04]]]
    rows = compare.summarise({"before": [{"results": run} for run in before],
                              "after": [{"results": run} for run in after]})
    assert [row[:3] for row in rows] == [("W1", "time", "arraygrad"),
                                         ("W1", "per op", "arraygrad"),
                                         ("W2", "time", "arraygrad")]
    lines = compare.table(rows, ["before", "after"]).splitlines()
    assert lines[2] == ("| W1 | time | arraygrad | 7.50 (7.00-9.00) ms | x3.750 (3.500-4.500) "
                        "| 6.00 (6.00-6.00) ms | x3.000 (3.000-3.000) |")
    assert lines[3] == "| W1 | per op | arraygrad | 3.75 (3.50-4.50) µs |  | - |  |"
    assert lines[4] == ("| W2 | time | arraygrad | - |  | 3.60 (3.60-3.60) ms "
                        "| x1.040 (1.040-1.040) |")


def test_the_base_library_shows_no_ratio():
    rows = compare.summarise({"a": [{"results": [["W2", "time", "hand-written NumPy", 3.4, "ms",
                                                  1.0]]}]})
    assert compare.table(rows, ["a"]).splitlines()[2] == (
        "| W2 | time | hand-written NumPy | 3.40 (3.40-3.40) ms |  |")


def test_run_once_runs_the_checkouts_harness_from_outside_with_json():
    args = argparse.Namespace(only="W1", quick=True)
    run = compare.run_once(sys.executable, args)
    assert "arraygrad's backward engine:" in run["machine"]
    results = run["results"]
    by_row = {(workload, measure, library): (figure, unit, ratio)
              for workload, measure, library, figure, unit, ratio in results}
    hand_ms, unit, ratio = by_row["W1", "time", "hand-written NumPy"]
    assert unit == "ms" and ratio == 1.0 and hand_ms > 0
    ag_ms, _, ag_ratio = by_row["W1", "time", "arraygrad"]
    assert ag_ratio == pytest.approx(ag_ms / hand_ms)
    per_op, unit, _ = by_row["W1", "per op", "arraygrad"]
    assert unit == "µs" and per_op == pytest.approx(ag_ms * 1e3 / 2000)  # 2,000 recorded ops
    assert not any(library in ("HIPS autograd", "MyGrad") for _, _, library in by_row)


def test_an_unknown_library_or_revision_is_refused_with_the_choices():
    done = subprocess.run([sys.executable, str(compare.HARNESS), "--libraries", "Arraygrad,Jax"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode != 0
    assert "unknown library jax: choose from HandNumpy, Arraygrad" in done.stderr
    with pytest.raises(SystemExit, match="no commit 'no-such-revision'"):
        compare.commit_of("no-such-revision")


def test_every_workload_runs_with_gradients_checked_against_hand_written_numpy(tmp_path):
    out = tmp_path / "results.json"
    done = subprocess.run([sys.executable, str(compare.HARNESS), "--quick", "--libraries",
                           "HandNumpy,Arraygrad", "--json", str(out)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = {(workload, measure, library): ratio
            for workload, measure, library, _, _, ratio in json.loads(out.read_text())["results"]}
    for workload, measure in (("W1", "per op"), ("W2", "time"), ("W3", "time"),
                              ("W4", "per op"), ("W5", "peak")):
        assert (workload, measure, "arraygrad") in rows, workload
    if importlib.util.find_spec("scipy") is not None:  # I1 runs SciPy's own code on Variables
        assert ("I1", "logsumexp", "arraygrad") in rows and ("I1", "zscore", "arraygrad") in rows


def test_a_revisions_environment_is_reused_only_when_its_install_finished_with_these_versions(
        tmp_path, monkeypatch):
    monkeypatch.setattr(compare, "VENVS", tmp_path)
    calls = []

    def run(command, *args, **kwargs):  # what environment() would run to make it
        calls.append(command)
        raise RuntimeError("would install")

    monkeypatch.setattr(compare.subprocess, "run", run)
    made = tmp_path / "abc1234"
    made.mkdir()
    (made / "installed").write_text(" ".join(compare.pins()) + "\n")
    assert compare.environment("abc1234") == str(made / "bin" / "python") and not calls
    (made / "installed").write_text("numpy==1.0.0\n")  # made beside other versions
    with pytest.raises(RuntimeError, match="would install"):
        compare.environment("abc1234")
    (made / "installed").unlink()  # an install that never finished
    with pytest.raises(RuntimeError, match="would install"):
        compare.environment("abc1234")
    assert calls == [["git", "archive", "abc1234"]] * 2


BROAD_WORKLOADS = ("logreg", "bcast_logistic", "ridge", "attention", "gp", "rnn", "lbfgs",
                   "lbfgs_logreg", "hvp", "batched_linalg", "mmd", "mlp_digits", "poisson",
                   "springs", "tv", "scipy")
NO_TORCH = "bench.broad checks every gradient against PyTorch's: torch is not installed"


@pytest.fixture(scope="module")
def broad_quick(tmp_path_factory):
    """One ``python -m bench.broad --quick`` run, all workloads and libraries: its output and
    its JSON report."""
    out = tmp_path_factory.mktemp("broad") / "broad.json"
    done = subprocess.run([sys.executable, "-m", "bench.broad", "--quick", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    return done, (json.loads(out.read_text()) if out.exists() else None)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason=NO_TORCH)
def test_the_broad_benchmark_runs_every_workload_with_gradients_checked_against_pytorch(
        broad_quick):
    # bench.broad exits 1 where arraygrad's (or the hand-written) gradient differs from
    # PyTorch's, or where arraygrad cannot run a workload, on either backend.
    done, report = broad_quick
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert report["failures"] == [] and tuple(report["workloads"]) == BROAD_WORKLOADS
    rows = {(workload, measure, library): (figure, ratio)
            for workload, measure, library, figure, _, ratio in report["results"]}
    for workload in BROAD_WORKLOADS:
        assert workload in done.stdout
        ag_ms, ratio = rows[workload, "time", "arraygrad"]
        torch_ms, torch_ratio = rows[workload, "time", "PyTorch"]
        assert ag_ms > 0 and torch_ratio == 1.0 and ratio == pytest.approx(ag_ms / torch_ms)
        assert (workload, "time", "hand-written NumPy") in rows  # every workload has one
        assert (workload, "peak", "arraygrad") in rows and (workload, "peak", "PyTorch") in rows
        assert (workload, "peak traced", "arraygrad") in rows
        goal, _ = rows[workload, "goal ratio",
                       "arraygrad / max(hand-written NumPy, PyTorch) time"]
        slower = max(rows[workload, "time", "hand-written NumPy"][0], torch_ms)
        assert goal == pytest.approx(ag_ms / slower)
    assert ("lbfgs", "evaluations", "arraygrad") in rows
    # the tables, with the goals' columns
    assert "| workload | hand-written NumPy ms | PyTorch ms | HIPS autograd ms |" in done.stdout
    assert "arraygrad / max(NumPy, PyTorch) (≤ 1.2)" in done.stdout
    assert "arraygrad (torch) / PyTorch (≤ 1.3)" in done.stdout
    assert "arraygrad / PyTorch (≤ 1.0)" in done.stdout


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason=NO_TORCH)
def test_the_broad_benchmark_runs_every_workload_on_arraygrads_torch_backend(broad_quick):
    done, report = broad_quick
    rows = {(workload, measure, library): figure
            for workload, measure, library, figure, _, _ in report["results"]}
    for workload in BROAD_WORKLOADS:  # (a workload it cannot run fails the run: FAILED above)
        assert ("arraygrad (torch)" not in report["problems"][workload]), workload
        assert rows[workload, "time", "arraygrad (torch)"] > 0
        assert (workload, "peak", "arraygrad (torch)") in rows
        assert rows[workload, "goal ratio", "arraygrad (torch) / PyTorch time"] == \
            pytest.approx(rows[workload, "time", "arraygrad (torch)"]
                          / rows[workload, "time", "PyTorch"])


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason=NO_TORCH)
@pytest.mark.skipif(importlib.util.find_spec("autograd") is None,
                    reason="HIPS autograd is not installed (pip install -e .[bench])")
def test_the_broad_benchmark_runs_hips_autograd_where_it_can_and_says_why_not(broad_quick):
    done, report = broad_quick
    rows = {(workload, measure, library) for workload, measure, library, *_ in
            report["results"]}
    cannot = {workload for workload in BROAD_WORKLOADS
              if "HIPS autograd" in report["problems"][workload]}
    assert cannot == {"scipy"}  # SciPy's Array API code takes no ArrayBox
    assert report["problems"]["scipy"]["HIPS autograd"].startswith("n/a: SciPy")
    assert "n/a [1]: `scipy`, HIPS autograd: SciPy" in done.stdout
    for workload in set(BROAD_WORKLOADS) - cannot:  # its gradients checked against PyTorch's
        assert (workload, "time", "HIPS autograd") in rows, workload
        assert (workload, "peak", "HIPS autograd") in rows, workload


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason=NO_TORCH)
def test_the_broad_benchmark_writes_its_tables_between_the_readmes_markers(tmp_path):
    readme = tmp_path / "README.md"
    text = (ROOT / "bench" / "README.md").read_text()
    start, end = ("<!-- broad results: written by `python -m bench.broad --write-results`; "
                  "do not edit by hand -->", "<!-- end of broad results -->")
    assert start in text and end in text  # the section this writes
    readme.write_text(text)
    done = subprocess.run([sys.executable, "-m", "bench.broad", "--quick", "--only", "ridge",
                           "--libraries", "Arraygrad,HandNumpy", "--write-results", "--readme",
                           str(readme)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    written = readme.read_text()
    before, rest = written.split(start)
    section, after = rest.split(end)
    assert before == text.split(start)[0] and after == text.split(end)[1]  # the rest untouched
    assert ("with `python -m bench.broad --quick --only ridge --libraries Arraygrad,HandNumpy "
            "--write-results` (a smoke run, small sizes) at ") in section
    revision = (r"[0-9a-f]{7,}( with uncommitted changes)?" if (ROOT / ".git").exists()
                else "an unknown revision")  # (a copy outside git: the mutation runs')
    assert re.search(rf" at {revision} on .* cores", section)
    assert "| `ridge` |" in section and "| `tv` |" not in section
    assert "Peak memory one step adds" in section


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_compare_runs_the_broad_benchmark_from_outside_the_checkout():
    args = argparse.Namespace(module="bench.broad", only="ridge,tv", quick=True)
    run = compare.run_once(sys.executable, args)
    assert {(workload, library) for workload, measure, library, *_ in run["results"]
            if measure == "time"} == {(w, lib) for w in ("ridge", "tv") for lib in (
                "PyTorch", "arraygrad", "hand-written NumPy")}
