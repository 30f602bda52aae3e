"""``python -m bench.gpu``, the GPU benchmark (W2 and W3 on CuPy against PyTorch CUDA). Without
a GPU it must say why and measure nothing; ``--cpu`` runs its whole harness on NumPy and PyTorch's
CPU, gradients checked, so that the first GPU session finds it working. No timing is asserted."""

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "gpu-results.md"


def bench_gpu(*args):
    return subprocess.run([sys.executable, "-m", "bench.gpu", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def import_bench_gpu():
    """bench.gpu, imported here without keeping what importing the bench does to this process
    (it pins BLAS threads in os.environ, which later subprocesses would inherit)."""
    environment, path = dict(os.environ), list(sys.path)
    sys.path.insert(0, str(ROOT))
    try:
        import bench.gpu
    finally:
        os.environ.clear()
        os.environ.update(environment)
        sys.path[:] = path
    return bench.gpu


def no_gpu_reason():
    return import_bench_gpu().why_no_gpu()


def test_without_a_gpu_it_says_why_and_measures_nothing():
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here: whether a GPU is usable is the next tests' to say")
    reason = no_gpu_reason()
    assert reason and reason.startswith("CuPy is not installed"), reason
    before = RESULTS.stat().st_mtime_ns if RESULTS.exists() else None
    done = bench_gpu("--write-results")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("no GPU measured: " + reason), done.stdout
    assert "W2" not in done.stdout and "Traceback" not in done.stderr
    assert (RESULTS.stat().st_mtime_ns if RESULTS.exists() else None) == before


def test_the_harness_checks_and_times_every_library_on_the_cpu():
    done = bench_gpu("--cpu", "--quick")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "device: CPU (harness check: not a GPU result)"
    libraries = ["hand-written NumPy", "arraygrad (numpy)"]
    if importlib.util.find_spec("torch") is not None:
        libraries.append("PyTorch (cpu)")
    else:
        assert "skipped PyTorch: PyTorch is not installed" in done.stdout
    for workload in ("W2", "W3"):
        start = next(i for i, line in enumerate(lines) if line.startswith(workload + "  "))
        rows = lines[start + 1:start + 1 + len(libraries)]
        assert [row.strip().split("  ")[0] for row in rows] == libraries, rows
        for row in rows:
            assert float(re.search(r" ([0-9,]+\.[0-9]+) ms", row).group(1).replace(",", "")) > 0


def test_a_wrong_gradient_stops_the_harness_before_timing(monkeypatch):
    """The check before timing is what makes a figure trustworthy: a library whose gradients
    are off is refused, not timed."""
    gpu = import_bench_gpu()
    original = gpu.Arraygrad.w3
    monkeypatch.setattr(gpu.Arraygrad, "w3", lambda self, x: original(self, x) * 1.001)
    monkeypatch.setattr(gpu, "why_no_torch", lambda device: "left out of this test")
    with pytest.raises(AssertionError, match="arraygrad \\(numpy\\) computes a wrong gradient"):
        gpu.run(gpu.Device(cpu=True), quick=True)


def test_the_results_page_has_the_date_device_times_and_test_outcomes(tmp_path):
    """What a GPU session writes, here from the CPU harness's rows (written only to a temporary
    file): a failure at this last step would cost the session its figures."""
    gpu = import_bench_gpu()
    rows = [("W2", "arraygrad (cupy)", 1.25, 1.04), ("W2", "PyTorch (cuda)", 1.2, 1.0),
            ("W3", "hand-written CuPy", 0.5, None)]
    outcomes = [("arraygrad conformance --backend cupy", 0, "all 812 cases passed")]
    path = tmp_path / "gpu-results.md"
    gpu.write_results(gpu.Device(cpu=True), rows, outcomes, quick=False, path=path)
    text = path.read_text()
    assert text.startswith("# GPU results\n\nMeasured ")
    assert time.strftime("%Y-%m-%d") in text and " on CPU with `python -m bench.gpu" in text
    assert "| W2 | arraygrad (cupy) | 1.250 ms | x1.04 |" in text
    assert "| W3 | hand-written CuPy | 0.500 ms |  |" in text
    assert "| `arraygrad conformance --backend cupy` | 0 | all 812 cases passed |" in text


def test_cpu_mode_refuses_to_write_results():
    done = bench_gpu("--cpu", "--write-results")
    assert done.returncode == 2
    assert "--cpu checks the harness only" in done.stderr


@pytest.mark.skipif(os.environ.get("CI") == "true", reason="CI has no GPU")
def test_on_a_gpu_it_times_arraygrad_on_cupy_against_pytorch_cuda():
    reason = no_gpu_reason()
    if reason is not None:
        pytest.skip(f"no GPU: {reason}")
    done = bench_gpu("--quick")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "arraygrad (cupy)" in done.stdout and "hand-written CuPy" in done.stdout
