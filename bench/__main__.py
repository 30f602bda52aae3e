"""Benchmarks of arraygrad against hand-written NumPy gradients and other autodiff libraries.

W1: overhead per recorded op (2,000 cheap elementwise ops on 16 float64 values, forward and
backward). W2: one MLP training step (float32, batch 128, 784-512-512-10, tanh, mean
cross-entropy through a stable log-softmax). W3: sum(sin(x)*exp(-x*x) + log1p(x*x)) on 2**22
float64 values; W5: the peak memory it adds. W4: W1's ops in a 100,000-op chain on 4 values.
I1: interop, SciPy's own code run on Variables (``SCIPY_ARRAY_API=1``): logsumexp(x) and
sum(w * zscore(x)) on 10**6 float64 values, arraygrad against the same SciPy forward on NumPy
plus a hand-written gradient. W6 (Dask on a LocalCluster) is ``python -m bench.dask_scale``.
Every library gets the same inputs; each result is checked against hand-written NumPy before it
is timed. Threads are pinned to 1."""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                  "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_variable] = "1"  # before NumPy (and its BLAS) is imported

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib.metadata  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

CHAIN = 500  # four ops each: 2,000 recorded ops
LAYERS = (784, 512, 512, 10)
BATCH = 128
W3_SIZE = 2**22
I1_SIZE = 10**6
LONG_CHAIN = 25_000  # W4: four ops each, 100,000 recorded ops on 4 values
REPEATS = {"W1": 8, "W2": 15, "W3": 3, "W4": 3, "I1": 15}  # rounds of 3 runs in a row; --quick: a quarter


# ------------------------------------------------------------------------------------ inputs
def inputs():
    """The same inputs for every library, from one seed."""
    rng = np.random.default_rng(0)
    params = []
    for n_in, n_out in zip(LAYERS, LAYERS[1:]):
        params.append((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32))
        params.append(np.zeros(n_out, dtype=np.float32))
    X = rng.standard_normal((BATCH, LAYERS[0])).astype(np.float32)
    onehot = np.eye(LAYERS[-1], dtype=np.float32)[rng.integers(0, LAYERS[-1], BATCH)]
    return {"w1": rng.standard_normal(16), "w2": (params, X, onehot),
            "w3": rng.standard_normal(W3_SIZE),
            "w4": rng.standard_normal(4),
            "i1": (rng.standard_normal(I1_SIZE), rng.standard_normal(I1_SIZE))}


# ------------------------------------------------------------------- hand-written NumPy: limit
def numpy_w1(x0, links=CHAIN):
    ys, y = [], x0
    for _ in range(links):
        ys.append(y)
        y = np.sin(y * 1.0001 + 0.01) * 0.9
    g = np.ones_like(y)
    for y in reversed(ys):
        g = g * 0.9 * np.cos(y * 1.0001 + 0.01) * 1.0001
    return g


def numpy_w2(params, X, onehot, np=np):
    """The loss and the gradients, as every library computes both (``np``: or CuPy)."""
    W1, b1, W2, b2, W3, b3 = params
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    z = h2 @ W3 + b3
    shifted = z - z.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    loss = -np.mean(np.sum(onehot * (shifted - np.log(total)), axis=1))  # noqa: F841
    dz = (e / total - onehot) / len(X)
    da2 = (dz @ W3.T) * (1 - h2 * h2)
    da1 = (da2 @ W2.T) * (1 - h1 * h1)
    return [X.T @ da1, da1.sum(0), h1.T @ da2, da2.sum(0), h2.T @ dz, dz.sum(0)]


def numpy_w3(x, np=np):
    """The value and the gradient, as every library computes both (``np``: or CuPy)."""
    a = x * x
    e = np.exp(-a)
    s = np.sin(x)
    value = np.sum(s * e + np.log1p(a))  # noqa: F841 (computed, as the others compute it)
    return np.cos(x) * e - 2 * x * s * e + 2 * x / (1 + a)


def numpy_i1_logsumexp(x, w):
    """logsumexp(x) and its gradient, softmax(x)."""
    m = np.max(x)
    e = np.exp(x - m)
    total = np.sum(e)
    value = m + np.log(total)  # noqa: F841
    return e / total


def numpy_i1_zscore(x, w):
    """sum(w * z) with z = (x - mean(x)) / std(x) (population std) and its gradient,
    (w - mean(w) - z * mean(w * z)) / std(x)."""
    d = x - np.mean(x)
    s = np.sqrt(np.mean(d * d))
    z = d / s
    value = np.sum(w * z)  # noqa: F841
    return (w - np.mean(w) - z * np.mean(w * z)) / s


I1_PARTS = ("logsumexp", "zscore")  # each library's i1_<part>(x, w) returns the gradient in x


class ScipyHandGradient:
    """I1's limit: SciPy's forward on NumPy arrays, then the gradient written by hand."""
    name = "SciPy + hand grad"

    def __init__(self):
        self.special, self.stats = scipy_for_variables()

    def i1_logsumexp(self, x, w):
        value = self.special.logsumexp(x)
        return np.exp(x - value)

    def i1_zscore(self, x, w):
        z = self.stats.zscore(x)
        value = np.sum(w * z)  # noqa: F841
        return (w - np.mean(w) - z * np.mean(w * z)) / np.std(x)


# ------------------------------------------------------------------ the same through libraries
def chain(xp, y, links=CHAIN):
    for _ in range(links):
        y = y * 1.0001
        y = y + 0.01
        y = xp.sin(y)
        y = y * 0.9
    return y


def mlp_loss(xp, params, X, onehot, matmul=None):
    W1, b1, W2, b2, W3, b3 = params
    h1 = xp.tanh(X @ W1 + b1)
    h2 = xp.tanh(h1 @ W2 + b2)
    z = h2 @ W3 + b3
    shifted = z - xp.max(z, axis=1, keepdims=True)
    logp = shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
    return -xp.mean(xp.sum(onehot * logp, axis=1))


def w3_loss(xp, x):
    return xp.sum(xp.sin(x) * xp.exp(-x * x) + xp.log1p(x * x))


def scipy_for_variables():
    """scipy.special and scipy.stats, with SciPy's Array API support switched on, as I1 needs:
    SciPy reads ``SCIPY_ARRAY_API`` once, when it is first imported."""
    if "scipy" not in sys.modules:
        os.environ["SCIPY_ARRAY_API"] = "1"
    import scipy.special
    import scipy.stats

    if not getattr(sys.modules.get("scipy._lib._array_api"), "SCIPY_ARRAY_API", True):
        raise RuntimeError("scipy was imported before SCIPY_ARRAY_API=1 could be set")
    return scipy.special, scipy.stats


class Arraygrad:
    name = "arraygrad"

    def __init__(self):
        import arraygrad as ag

        self.ag, self.xp = ag, ag.namespace("numpy")

    def _grads(self, loss_of, arrays):
        variables = [self.ag.Variable(a, requires_grad=True) for a in arrays]
        loss_of(*variables).backward()
        return [v.grad.data for v in variables]

    def w1(self, x0, links=CHAIN):
        (g,) = self._grads(lambda x: self.xp.sum(chain(self.xp, x, links)), [x0])
        return g

    def w4(self, x0):
        return self.w1(x0, LONG_CHAIN)

    def w2(self, params, X, onehot):
        return self._grads(lambda *p: mlp_loss(self.xp, p, X, onehot), params)

    def w3(self, x):
        (g,) = self._grads(lambda v: w3_loss(self.xp, v), [x])
        return g

    def i1_logsumexp(self, x, w):
        special, _ = scipy_for_variables()
        (g,) = self._grads(lambda v: special.logsumexp(v), [x])
        return g

    def i1_zscore(self, x, w):
        _, stats = scipy_for_variables()
        (g,) = self._grads(lambda v: self.xp.sum(w * stats.zscore(v)), [x])
        return g


class HipsAutograd:
    name = "HIPS autograd"
    module = "autograd"

    def __init__(self):
        import autograd
        import autograd.numpy as anp

        self.grad, self.np = autograd.grad, anp

    def w1(self, x0, links=CHAIN):
        return self.grad(lambda x: self.np.sum(chain(self.np, x, links)))(x0)

    def w4(self, x0):
        return self.w1(x0, LONG_CHAIN)

    def w2(self, params, X, onehot):
        return self.grad(lambda p: mlp_loss(self.np, p, X, onehot))(list(params))

    def w3(self, x):
        return self.grad(lambda v: w3_loss(self.np, v))(x)


class MyGrad:
    name = "MyGrad"
    module = "mygrad"

    def __init__(self):
        import mygrad

        self.mg = mygrad

    def _grads(self, loss_of, arrays):
        tensors = [self.mg.tensor(a) for a in arrays]
        loss_of(*tensors).backward()
        return [t.grad for t in tensors]

    def w1(self, x0):
        (g,) = self._grads(lambda x: self.mg.sum(chain(self.mg, x)), [x0])
        return g

    def w2(self, params, X, onehot):
        return self._grads(lambda *p: mlp_loss(self.mg, p, X, onehot), params)

    def w3(self, x):
        (g,) = self._grads(lambda v: w3_loss(self.mg, v), [x])
        return g


class Torch:
    name = "PyTorch"
    module = "torch"

    def __init__(self):
        import torch

        torch.set_num_threads(1)
        self.torch = torch
        self.xp = _TorchNames(torch)

    def _grads(self, loss_of, arrays):
        tensors = [self.torch.tensor(a, requires_grad=True) for a in arrays]
        loss_of(*tensors).backward()
        return [t.grad.numpy() for t in tensors]

    def w1(self, x0, links=CHAIN):
        (g,) = self._grads(lambda x: self.torch.sum(chain(self.torch, x, links)), [x0])
        return g

    def w4(self, x0):
        return self.w1(x0, LONG_CHAIN)

    def w2(self, params, X, onehot):
        X, onehot = self.torch.from_numpy(X), self.torch.from_numpy(onehot)
        return self._grads(lambda *p: mlp_loss(self.xp, p, X, onehot), params)

    def w3(self, x):
        (g,) = self._grads(lambda v: w3_loss(self.torch, v), [x])
        return g


class _TorchNames:
    """torch under the standard's names where they differ (max with axis/keepdims)."""

    def __init__(self, torch):
        self._torch = torch

    def __getattr__(self, name):
        return getattr(self._torch, name)

    def max(self, x, axis, keepdims):
        return self._torch.amax(x, dim=axis, keepdim=keepdims)

    def sum(self, x, axis=None, keepdims=False):
        return self._torch.sum(x, dim=axis, keepdim=keepdims) if axis is not None else x.sum()

    def mean(self, x):
        return x.mean()


class HandNumpy:
    name = "hand-written NumPy"
    w1, w2, w3 = staticmethod(numpy_w1), staticmethod(numpy_w2), staticmethod(numpy_w3)

    @staticmethod
    def w4(x0):
        return numpy_w1(x0, LONG_CHAIN)
    i1_logsumexp, i1_zscore = staticmethod(numpy_i1_logsumexp), staticmethod(numpy_i1_zscore)


LIBRARIES = [HandNumpy, Arraygrad, HipsAutograd, MyGrad, Torch]


def available(library):
    module = getattr(library, "module", None)
    if module is None or importlib.util.find_spec(module) is not None:
        return None
    return f"{module} is not installed"


# --------------------------------------------------------------------------------- measuring
def best_times(functions, repeat, in_a_row=3):
    """The best time of each function over ``repeat`` rounds. In every round each function runs
    ``in_a_row`` times in a row (warm caches, as in a training loop) and the functions take
    turns, so that a drift of the machine (frequency, neighbours) touches all of them alike."""
    best = [float("inf")] * len(functions)
    for _ in range(repeat):
        for i, function in enumerate(functions):
            for _ in range(in_a_row):
                start = time.perf_counter()
                function()
                best[i] = min(best[i], time.perf_counter() - start)
    return best


def check(name, got, expected, rtol):
    """Refuse to time a library whose gradients are wrong."""
    got = got if isinstance(got, (list, tuple)) else [got]
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), e, rtol=rtol, atol=rtol * 1e-2,
                                   err_msg=f"{name} computes a wrong gradient")


def peak_growth_mib(library_name):
    """Peak resident memory growth of W3 for one library, in a fresh process."""
    done = subprocess.run([sys.executable, __file__, "--memory", library_name],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["growth_mib"]


def _memory_kib(field):
    """``VmRSS`` (resident now) or ``VmHWM`` (peak) of this process, in KiB. (Not getrusage's
    ru_maxrss: Linux carries it over from the parent across exec.)"""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def measure_memory(library_name):
    """Print the peak resident memory that W3 adds above what its input already holds."""
    library = next(lib for lib in LIBRARIES if lib.__name__ == library_name)()
    x = np.random.default_rng(0).standard_normal(W3_SIZE)
    library.w3(x[:16])  # warm up imports and caches
    # The peak of setup is at most x plus one temporary: W3's own peak is higher.
    before = _memory_kib("VmRSS")
    library.w3(x)
    after = _memory_kib("VmHWM")
    print(json.dumps({"growth_mib": (after - before) / 1024}))


WORKLOADS = {
    "W1": "W1  2,000 recorded elementwise ops on 16 float64 values, fwd + bwd",
    "W2": "W2  MLP step, float32, batch 128, 784-512-512-10, tanh, cross-entropy",
    "W3": "W3  sum(sin(x)*exp(-x*x) + log1p(x*x)), 2**22 float64 values",
    "W4": "W4  100,000 recorded elementwise ops on 4 float64 values, fwd + bwd",
}
RESULTS_START = "<!-- results: written by `python -m bench --write-results`; do not edit by hand -->"
RESULTS_END = "<!-- end of results -->"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats: a smoke run")
    parser.add_argument("--only", default="W1,W2,W3,W4,W5,I1",
                        help="comma-separated workloads (W5 is W3's memory; W6: python -m "
                             "bench.dask_scale)")
    parser.add_argument("--write-results", action="store_true",
                        help="rewrite the results table in bench/README.md with this run")
    parser.add_argument("--libraries",
                        help="comma-separated libraries to run, by class name (HandNumpy, "
                             "Arraygrad, HipsAutograd, MyGrad, Torch); default: all installed")
    parser.add_argument("--json", help="also write the results to this file, as JSON (what "
                                       "python -m bench.compare reads)")
    parser.add_argument("--memory", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory:
        return measure_memory(args.memory)
    data = inputs()
    workloads = [w.strip() for w in args.only.upper().split(",")]
    if "I1" in workloads:
        try:
            scipy_for_variables()  # before any library could import scipy without the flag
        except ImportError as error:
            print(f"skipped I1: {error} (pip install scipy)")
            workloads.remove("I1")
    libraries = []
    for library in chosen_libraries(args.libraries):
        reason = available(library)
        if reason:
            print(f"skipped {library.name}: {reason}")
        else:
            libraries.append(library())
    # Every library is imported: their modules' objects (a million with torch and JAX) go to
    # the collector's permanent generation, so that a full collection during one library's run
    # does not scan the others' modules, which a user of that library alone does not have.
    gc.collect()
    gc.freeze()
    scale = 4 if args.quick else 1
    rounds = ", ".join(f"{w} {max(1, n // scale)}" for w, n in REPEATS.items())
    print(f"threads pinned to 1; best of 3 runs in a row, libraries taking turns for rounds "
          f"({rounds}); numpy {np.__version__}\n")
    results = []  # (workload, what, library, figure, unit, ratio)
    expected = {"W1": lambda: numpy_w1(data["w1"]), "W2": lambda: numpy_w2(*data["w2"]),
                "W3": lambda: numpy_w3(data["w3"]),
                "W4": lambda: numpy_w1(data["w4"], LONG_CHAIN)}
    for workload in WORKLOADS:
        if workload not in workloads and not (workload == "W3" and "W5" in workloads):
            continue
        key = workload.lower()
        args_of = data[key] if key == "w2" else (data[key],)
        print(WORKLOADS[workload])
        chosen = [library for library in libraries if hasattr(library, key)]
        reference = expected[workload]()
        runs = []
        for library in chosen:
            run = getattr(library, key)
            check(library.name, run(*args_of), reference,
                  rtol=1e-3 if workload == "W2" else 1e-9)
            runs.append(lambda run=run: run(*args_of))
        times = best_times(runs, max(1, REPEATS[workload] // scale))
        for library, seconds in zip(chosen, times):
            line = f"    {library.name:<20} {seconds * 1e3:9.2f} ms   x{seconds / times[0]:5.2f}"
            results.append((workload, "time", library.name, seconds * 1e3, "ms",
                            seconds / times[0]))
            if workload in ("W1", "W4") and not isinstance(library, HandNumpy):
                per_op = seconds / (4 * (CHAIN if workload == "W1" else LONG_CHAIN)) * 1e6
                line += f"   {per_op:6.2f} us/op"
                results.append((workload, "per op", library.name, per_op, "µs", None))
            print(line)
        if workload == "W3" and "W5" in workloads:
            print("W5  peak memory W3 adds, each library in a fresh process")
            growths = [peak_growth_mib(type(library).__name__) for library in chosen]
            for library, growth in zip(chosen, growths):
                print(f"    {library.name:<20} {growth:9.1f} MiB  x{growth / growths[0]:5.2f}")
                results.append(("W5", "peak", library.name, growth, "MiB", growth / growths[0]))
        print()
    if "I1" in workloads:
        results += run_i1(libraries, data["i1"], max(1, REPEATS["I1"] // scale))
    if args.write_results:
        write_results(results, args.quick)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"machine": machine(), "results": results}, out)


def chosen_libraries(names):
    """The library classes named in ``names`` (comma-separated class names; None: all), in the
    order of ``LIBRARIES``, so that ratios stay to hand-written NumPy where it is chosen."""
    if not names:
        return LIBRARIES
    wanted = {name.strip().lower() for name in names.split(",")}
    unknown = wanted - {library.__name__.lower() for library in LIBRARIES}
    if unknown:
        raise SystemExit(f"unknown library {', '.join(sorted(unknown))}: choose from "
                         f"{', '.join(library.__name__ for library in LIBRARIES)}")
    return [library for library in LIBRARIES if library.__name__.lower() in wanted]


def run_i1(libraries, arrays, repeat):
    """I1: each part for the libraries that can run SciPy on their arrays (arraygrad), against
    SciPy's forward on NumPy plus the gradient by hand (the base) and all by hand (fused)."""
    print(f"I1  interop: SciPy on Variables (SCIPY_ARRAY_API=1), {I1_SIZE:,} float64 values, "
          "fwd + bwd")
    libraries = [ScipyHandGradient()] + [
        library for library in libraries if hasattr(library, "i1_logsumexp")]
    results = []
    for part in I1_PARTS:
        expected = globals()[f"numpy_i1_{part}"](*arrays)
        runs = []
        for library in libraries:
            run = getattr(library, f"i1_{part}")
            check(library.name, run(*arrays), expected, rtol=1e-9)
            runs.append(lambda run=run: run(*arrays))
        times = best_times(runs, repeat)
        print({"logsumexp": "    scipy.special.logsumexp(x)",
               "zscore": "    sum(w * scipy.stats.zscore(x))"}[part])
        for library, seconds in zip(libraries, times):
            print(f"        {library.name:<20} {seconds * 1e3:9.2f} ms   "
                  f"x{seconds / times[0]:5.2f}")
            results.append(("I1", part, library.name, seconds * 1e3, "ms", seconds / times[0]))
    print()
    return results


def machine():
    """The machine and versions a results table was measured with."""
    import platform

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor()) if os.path.exists(
        "/proc/cpuinfo") else platform.processor()
    versions = [f"Python {platform.python_version()}", f"NumPy {np.__version__}"]
    for module, name in (("arraygrad", "arraygrad"), ("torch", "PyTorch"),
                         ("autograd", "HIPS autograd"), ("mygrad", "MyGrad"), ("scipy", "SciPy")):
        try:
            versions.append(f"{name} {importlib.metadata.version(module)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    try:
        from arraygrad._speedups import ENGINE  # a revision with the compiled engine (compare)
    except ImportError:
        ENGINE = "pure Python"
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; " + \
        ", ".join(versions) + f"; arraygrad's backward engine: {ENGINE}"


def write_results(results, quick, command="python -m bench", start=RESULTS_START,
                  end=RESULTS_END, how="Threads pinned to 1; best times"):
    """Rewrite the table between the markers of bench/README.md with this run's figures."""
    lines = [start, "",
             f"Measured {time.strftime('%Y-%m-%d')} with `{command} --write-results`"
             f"{' --quick (a smoke run)' if quick else ''} on {machine()}. {how}; "
             "ratios to the first line of each workload.", "",
             "| workload | measure | library | figure | ratio |", "|---|---|---|---|---|"]
    for workload, what, library, figure, unit, ratio in results:
        ratio_text = "" if ratio is None else f"x{ratio:.2f}"
        lines.append(f"| {workload} | {what} | {library} | {figure:,.2f} {unit} | {ratio_text} |")
    lines += ["", end]
    write_section(lines, "Results")


def write_section(lines, heading, path=None):
    """Put ``lines`` (its first and last: the markers) in bench/README.md (or ``path``) in place
    of the text between those markers, or at the end under ``heading`` where they are not there
    yet."""
    start, end = lines[0], lines[-1]
    path = path or os.path.join(os.path.dirname(os.path.abspath(__file__)), "README.md")
    text = open(path).read()
    if start in text:
        before, rest = text.split(start, 1)
        text = before + "\n".join(lines) + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + f"\n\n## {heading}\n\n" + "\n".join(lines) + "\n"
    with open(path, "w") as readme:
        readme.write(text)
    print(f"wrote the {heading.lower()} table in {path}")


if __name__ == "__main__":
    sys.exit(main())
