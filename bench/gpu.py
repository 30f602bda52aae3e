"""GPU benchmark: W2 and W3 with arraygrad on CuPy against PyTorch on CUDA.

The workloads are ``python -m bench``'s (same seed, same inputs, same loss code): W2, one MLP
training step (float32, batch 128, 784-512-512-10, tanh, mean cross-entropy), and W3,
``sum(sin(x)*exp(-x*x) + log1p(x*x))`` on 2**22 float64 values. Three libraries: arraygrad on
the ``cupy`` backend, PyTorch on CUDA, and the gradients written by hand with CuPy (the limit).
Every library's gradients are checked against hand-written NumPy on the host before it is timed;
every timed run ends with a device synchronisation, so that a time covers the work, not its
launch. Each time is the best over rounds of 3 runs in a row, the libraries taking turns.

Without a usable GPU it measures nothing: it says what is missing and exits 0. ``--cpu`` runs the
same harness on NumPy and PyTorch's CPU instead (a check of the harness, labelled as such; it
never writes results). ``--write-results`` writes ``docs/gpu-results.md`` with the date and the
device; ``--with-tests`` first runs the CuPy tests and ``arraygrad conformance --backend cupy``
and records their outcome there too.

Run by hand on a GPU machine: ``python -m bench.gpu --write-results --with-tests``.
"""

import argparse
import os
import subprocess
import sys
import time

# First: it pins BLAS threads to 1 before NumPy is imported (what --cpu compares needs it).
from bench.__main__ import (REPEATS, _TorchNames, best_times, check, inputs, mlp_loss, numpy_w2,
                            numpy_w3, w3_loss)

import numpy as np  # noqa: E402 (after the pinning)

GOAL = 1.1  # issue 15: arraygrad on CuPy at most 1.1x PyTorch CUDA
RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                       "gpu-results.md")


class Device:
    """Where the workloads run: CuPy and CUDA, or (``--cpu``) NumPy and PyTorch's CPU."""

    def __init__(self, cpu: bool):
        self.cpu = cpu
        if cpu:
            self.lib, self.backend, self.torch_device, self.name = np, "numpy", "cpu", "CPU"
            return
        import cupy

        self.lib, self.backend, self.torch_device = cupy, "cupy", "cuda"
        properties = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = properties["name"]
        self.name = name.decode() if isinstance(name, bytes) else str(name)

    def put(self, array):
        return self.lib.asarray(array)

    def host(self, array):
        return array if self.cpu else array.get()

    def synchronize(self):
        if not self.cpu:
            self.lib.cuda.Device().synchronize()


def why_no_gpu():
    """None when CuPy has a usable GPU and arraygrad's ``cupy`` backend is available; else why
    not, in a sentence."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install 'arraygrad[cupy]' on a machine with CUDA)"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # CUDA driver or runtime missing: CuPy raises its own types
        return f"CuPy finds no usable GPU: {type(error).__name__}: {error}"
    if not count:
        return "CuPy finds no GPU"
    import arraygrad as ag

    info = {info.name: info for info in ag.backends()}.get("cupy")
    if info is None or not info.available:
        return f"arraygrad's cupy backend is not available: {info.reason if info else 'missing'}"
    return None


class HandWritten:
    """The gradients written by hand, on the device's array library: the limit."""

    def __init__(self, device):
        self.name = f"hand-written {'NumPy' if device.cpu else 'CuPy'}"
        self.lib = device.lib

    def w2(self, params, X, onehot):
        return numpy_w2(params, X, onehot, np=self.lib)

    def w3(self, x):
        return numpy_w3(x, np=self.lib)


class Arraygrad:
    def __init__(self, device):
        import arraygrad as ag

        self.name = f"arraygrad ({device.backend})"
        self.ag, self.xp = ag, ag.namespace(device.backend)

    def _grads(self, loss_of, arrays):
        variables = [self.ag.Variable(a, requires_grad=True) for a in arrays]
        loss_of(*variables).backward()
        return [v.grad.data for v in variables]

    def w2(self, params, X, onehot):
        # The constants as Variables too: an operator between a raw CuPy array and a Variable
        # would be CuPy's to answer first.
        X, onehot = self.ag.Variable(X), self.ag.Variable(onehot)
        return self._grads(lambda *p: mlp_loss(self.xp, p, X, onehot), params)

    def w3(self, x):
        (g,) = self._grads(lambda v: w3_loss(self.xp, v), [x])
        return g


class Torch:
    def __init__(self, device):
        import torch

        self.torch, self.device = torch, device.torch_device
        self.name = f"PyTorch ({self.device})"
        self.xp = _TorchNames(torch)
        if self.device == "cpu":
            torch.set_num_threads(1)

    def put(self, array):
        return self.torch.as_tensor(array, device=self.device)

    def _grads(self, loss_of, tensors):
        leaves = [t.detach().requires_grad_(True) for t in tensors]
        loss_of(*leaves).backward()
        return [t.grad for t in leaves]

    def w2(self, params, X, onehot):
        return self._grads(lambda *p: mlp_loss(self.xp, p, X, onehot), params)

    def w3(self, x):
        (g,) = self._grads(lambda v: w3_loss(self.torch, v), [x])
        return g

    def synchronize(self):
        if self.device != "cpu":
            self.torch.cuda.synchronize()


def why_no_torch(device):
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not device.cpu and not torch.cuda.is_available():
        return "PyTorch has no CUDA here"
    return None


def run(device, quick):
    """Time W2 and W3; return ``(workload, library, milliseconds, ratio to PyTorch)`` rows."""
    data = inputs()
    params, X, onehot = data["w2"]
    host_args = {"W2": (params, X, onehot), "W3": (data["w3"],)}
    expected = {"W2": numpy_w2(params, X, onehot), "W3": numpy_w3(data["w3"])}
    libraries = [HandWritten(device), Arraygrad(device)]
    reason = why_no_torch(device)
    if reason:
        print(f"skipped PyTorch: {reason}")
    else:
        libraries.append(Torch(device))
    rows = []
    for workload in ("W2", "W3"):
        runs, names = [], []
        for library in libraries:
            torch_side = isinstance(library, Torch)
            put = library.put if torch_side else device.put
            args = host_args[workload]
            args = ([put(p) for p in args[0]], put(args[1]), put(args[2])) \
                if workload == "W2" else (put(args[0]),)
            method = getattr(library, workload.lower())
            got = method(*args)
            got = got if isinstance(got, list) else [got]
            host = [g.detach().cpu().numpy() if torch_side else device.host(g) for g in got]
            check(library.name, host, expected[workload], rtol=1e-3 if workload == "W2" else 1e-9)
            synchronize = library.synchronize if torch_side else device.synchronize

            def timed(method=method, args=args, synchronize=synchronize):
                method(*args)
                synchronize()
            runs.append(timed)
            names.append(library.name)
        times = best_times(runs, max(1, REPEATS[workload] // (4 if quick else 1)))
        reference = times[-1] if isinstance(libraries[-1], Torch) else None
        print(f"{workload}  {'MLP step, float32' if workload == 'W2' else '2**22 float64 values'}")
        for name, seconds in zip(names, times):
            ratio = None if reference is None else seconds / reference
            rows.append((workload, name, seconds * 1e3, ratio))
            print(f"    {name:<26} {seconds * 1e3:9.3f} ms"
                  + ("" if ratio is None else f"   x{ratio:5.2f} PyTorch"))
    return rows


def run_tests():
    """The CuPy tests and the conformance suite on the cupy backend: ``(what, exit code, last
    line of output)`` each."""
    commands = [
        ("pytest tests/test_backend_cupy.py",
         [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
          "tests/test_backend_cupy.py"]),
        ("arraygrad conformance --backend cupy",
         [sys.executable, "-m", "arraygrad.cli", "conformance", "--backend", "cupy"]),
    ]
    outcomes = []
    for what, command in commands:
        done = subprocess.run(command, capture_output=True, text=True)
        lines = (done.stdout + done.stderr).strip().splitlines()
        outcomes.append((what, done.returncode, lines[-1] if lines else ""))
        print(f"{what}: exit {done.returncode}: {outcomes[-1][2]}")
    return outcomes


def write_results(device, rows, outcomes, quick, path=RESULTS):
    """Write the results page (``docs/gpu-results.md``): date, device, versions, the times and
    the outcome of the tests, if run."""
    import platform

    import arraygrad

    versions = [f"Python {platform.python_version()}", f"NumPy {np.__version__}",
                f"arraygrad {arraygrad.__version__}"]
    if not device.cpu:
        versions.append(f"CuPy {device.lib.__version__}")
    try:
        import torch

        versions.append(f"PyTorch {torch.__version__} (CUDA {torch.version.cuda})")
    except ImportError:
        pass
    lines = ["# GPU results", "",
             f"Measured {time.strftime('%Y-%m-%d')} on {device.name} with `python -m bench.gpu "
             f"--write-results{' --quick' if quick else ''}`; {', '.join(versions)}. "
             f"Best times, each run ending with a device "
             f"synchronisation; ratios to PyTorch on CUDA (goal: at most {GOAL}).", "",
             "| workload | library | time | ratio to PyTorch |", "|---|---|---|---|"]
    for workload, name, milliseconds, ratio in rows:
        lines.append(f"| {workload} | {name} | {milliseconds:,.3f} ms | "
                     f"{'' if ratio is None else f'x{ratio:.2f}'} |")
    if outcomes:
        lines += ["", "| check | exit code | summary |", "|---|---|---|"]
        lines += [f"| `{what}` | {code} | {summary} |" for what, code, summary in outcomes]
    with open(path, "w") as results:
        results.write("\n".join(lines) + "\n")
    print(f"wrote {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds: a smoke run")
    parser.add_argument("--cpu", action="store_true",
                        help="the same harness on NumPy and PyTorch's CPU (never written)")
    parser.add_argument("--with-tests", action="store_true",
                        help="run the CuPy tests and the cupy conformance suite first")
    parser.add_argument("--write-results", action="store_true",
                        help=f"write {os.path.relpath(RESULTS)} with this run")
    args = parser.parse_args(argv)
    if args.cpu and (args.write_results or args.with_tests):
        parser.error("--cpu checks the harness only: it writes no results and runs no GPU tests")
    if not args.cpu:
        reason = why_no_gpu()
        if reason:
            print(f"no GPU measured: {reason}. Nothing was timed or written; on a GPU machine "
                  "run python -m bench.gpu --write-results --with-tests (or --cpu to check the "
                  "harness here).")
            return 0
    device = Device(args.cpu)
    print(f"device: {device.name}{' (harness check: not a GPU result)' if args.cpu else ''}")
    outcomes = run_tests() if args.with_tests else []
    rows = run(device, args.quick)
    if args.write_results:
        write_results(device, rows, outcomes, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
