"""Soak tests of arraygrad on NumPy, run by hand (not in CI): long graphs, threads, long loops.

1. chain: a 1,000,000-op chain forward and backward on 4 values (``*2, +1, -1, *0.5`` repeated,
   so the value and the gradient are exact), its time and peak resident memory.
2. own graphs: 8 threads, each backpropagating through graphs of its own; every result must be
   bit-identical to the same work done in one thread.
3. shared leaf: 8 threads backpropagating into one shared leaf and one shared non-leaf that
   retains its gradient, threads switched every microsecond; the sums must be exact.
4. training: 10,000 SGD steps of a small MLP (logistic loss), resident memory sampled every
   1,000 steps; it must stay flat after the first sample and the loss must fall.
5. create_graph: 2,000 second derivatives (``autograd.grad(..., create_graph=True)`` then
   backward through the gradient), checked against the closed form, memory sampled.

Each item runs in a fresh process, so that its peak memory is its own. ``--quick`` runs every
item at a tenth of its size (a fifth for the threads).
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                  "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_variable] = "1"  # before NumPy (and its BLAS) is imported

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

FULL = {"chain": 1_000_000, "own_graphs": 40, "shared_leaf": 400, "training": 10_000,
        "create_graph": 2_000}
QUICK = {"chain": 100_000, "own_graphs": 8, "shared_leaf": 80, "training": 1_000,
         "create_graph": 200}
THREADS = 8
SAMPLES = 10  # memory samples per loop
FLAT_MIB, FLAT_FRACTION = 4.0, 0.05  # "flat": the last sample within this of the first


def _memory_mib(field):
    """``VmRSS`` (resident now) or ``VmHWM`` (peak) of this process, in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _flat(samples):
    """Whether memory stayed flat: the last sample within FLAT_MIB or FLAT_FRACTION (whichever
    is larger) of the first, which is taken after a warm-up of one sampling period."""
    growth = samples[-1] - samples[0]
    return growth <= max(FLAT_MIB, FLAT_FRACTION * samples[0]), growth


def _run_threads(work):
    """Run ``work(k)`` in THREADS threads started together; re-raise the first error."""
    barrier = threading.Barrier(THREADS)
    errors = []

    def target(k):
        try:
            barrier.wait()
            work(k)
        except BaseException as error:  # noqa: BLE001 (re-raised in the calling thread)
            errors.append(error)

    threads = [threading.Thread(target=target, args=(k,)) for k in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


# ------------------------------------------------------------------------------------- items
def chain(n):
    import arraygrad as ag

    xp = ag.namespace("numpy")
    x0 = np.arange(4.0)
    x = ag.Variable(x0, requires_grad=True)
    before = _memory_mib("VmRSS")
    start = time.perf_counter()
    y = x
    for _ in range(n // 4):
        y = y * 2.0
        y = y + 1.0
        y = y - 1.0
        y = y * 0.5
    forward = time.perf_counter() - start
    graph = _memory_mib("VmRSS") - before
    start = time.perf_counter()
    xp.sum(y).backward()
    backward = time.perf_counter() - start
    exact = np.array_equal(y.data, x0) and np.array_equal(x.grad.data, np.ones(4))
    peak = _memory_mib("VmHWM") - before
    del y
    left = _memory_mib("VmRSS") - before
    return {"ok": exact,
            "figures": f"fwd {forward:.1f} s, bwd {backward:.1f} s "
                       f"({(forward + backward) / n * 1e6:.1f} us/op); value and grad exact: "
                       f"{exact}",
            "memory": f"graph +{graph:.0f} MiB, peak +{peak:.0f} MiB, "
                      f"after del +{left:.0f} MiB"}


def _own_graph(seed, passes):
    """A graph of its own, three passes accumulating into its leaves; float64 values whose
    rounding would show any change in the order of operations."""
    import arraygrad as ag

    xp = ag.namespace("numpy")
    rng = np.random.default_rng(seed)
    x = ag.Variable(rng.standard_normal((64, 64)), requires_grad=True)
    W = ag.Variable(rng.standard_normal((64, 64)) / 8, requires_grad=True)
    for _ in range(passes):
        y = xp.tanh(x @ W) * xp.exp(-x * x) + xp.sin(x) / (1.0 + W * W)
        xp.mean(y * y + xp.sum(y, axis=1, keepdims=True)).backward()
    return x.grad.data, W.grad.data


def own_graphs(passes):
    _own_graph(THREADS, 1)  # warm up: imports, caches
    start = time.perf_counter()
    expected = [_own_graph(k, passes) for k in range(THREADS)]
    alone = time.perf_counter() - start
    results = [None] * THREADS

    def work(k):
        results[k] = _own_graph(k, passes)

    start = time.perf_counter()
    _run_threads(work)
    threaded = time.perf_counter() - start
    same = all(np.array_equal(got, want) for k in range(THREADS)
               for got, want in zip(results[k], expected[k]))
    return {"ok": same,
            "figures": f"all in one thread {alone:.2f} s, in {THREADS} threads {threaded:.2f} s; "
                       f"bit-identical: {same}",
            "memory": f"peak {_memory_mib('VmHWM'):.0f} MiB"}


def shared_leaf(passes):
    import arraygrad as ag

    xp = ag.namespace("numpy")
    sys.setswitchinterval(1e-6)  # interleave the threads as much as possible
    rng = np.random.default_rng(0)
    x = ag.Variable(rng.integers(-3, 4, (64, 64)).astype(np.float64), requires_grad=True)
    h = x * 3.0  # a shared non-leaf
    h.retain_grad()

    def work(k):
        for _ in range(passes):
            xp.sum(h * h * float(k + 1) + x).backward(retain_graph=True)

    start = time.perf_counter()
    _run_threads(work)
    seconds = time.perf_counter() - start
    # d/dh sum((k+1) h^2) = 2 (k+1) h; summed over k < 8: 72 h. Integers: every sum is exact.
    h_expected = passes * 72.0 * h.data
    x_expected = passes * (3.0 * 72.0 * h.data + THREADS)
    x_error = float(np.max(np.abs(x.grad.data - x_expected)))
    h_error = float(np.max(np.abs(h.grad.data - h_expected)))
    ok = x_error == 0 and h_error == 0
    return {"ok": ok,
            "figures": f"{seconds:.2f} s; max error: leaf {x_error:g}, non-leaf {h_error:g} "
                       f"(of values up to {float(np.max(np.abs(x_expected))):g})",
            "memory": f"peak {_memory_mib('VmHWM'):.0f} MiB"}


def _sample_every(steps):
    return max(1, steps // SAMPLES)


def training(steps):
    import arraygrad as ag

    xp = ag.namespace("numpy")
    rng = np.random.default_rng(0)
    n, d, hidden, batch, lr = 4096, 20, 32, 128, 0.1
    X = rng.standard_normal((n, d))
    labels = np.sign(X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n))
    params = [ag.Variable(rng.standard_normal((d, hidden)) / np.sqrt(d), requires_grad=True),
              ag.Variable(np.zeros(hidden), requires_grad=True),
              ag.Variable(rng.standard_normal((hidden, 1)) / np.sqrt(hidden), requires_grad=True),
              ag.Variable(np.zeros(1), requires_grad=True)]
    every = _sample_every(steps)
    samples, losses = [], []
    start = time.perf_counter()
    for step in range(steps):
        rows = slice((step * batch) % n, (step * batch) % n + batch)
        W1, b1, W2, b2 = params
        z = xp.tanh(ag.Variable(X[rows]) @ W1 + b1) @ W2 + b2
        margin = z * ag.Variable(labels[rows, None])
        loss = xp.mean(xp.logaddexp(xp.zeros_like(margin), -margin))  # logistic loss
        loss.backward()
        for p in params:
            p.data = p.data - lr * p.grad.data
            p.grad = None
        if step < every or step >= steps - every:
            losses.append(float(loss.item()))
        if (step + 1) % every == 0:
            samples.append(_memory_mib("VmRSS"))
    seconds = time.perf_counter() - start
    flat, growth = _flat(samples)
    first, last = np.mean(losses[:every]), np.mean(losses[-every:])
    return {"ok": flat and last < first,
            "figures": f"{steps:,} steps, {seconds / steps * 1e6:.0f} us/step; mean loss "
                       f"{first:.3f} (first {every:,}) -> {last:.3f} (last {every:,})",
            "memory": f"RSS every {every:,} steps: {_samples_text(samples)} MiB; "
                      f"growth {growth:+.2f} MiB, flat: {flat}"}


def create_graph(loops):
    import arraygrad as ag

    xp = ag.namespace("numpy")
    x0 = np.linspace(-3.0, 3.0, 256)
    first = np.cos(x0) * x0 * x0 + 2 * x0 * np.sin(x0)  # f = sum(sin(x) x^2): f'
    second = (2 - x0 * x0) * np.sin(x0) + 4 * x0 * np.cos(x0)  # and f''
    every = _sample_every(loops)
    samples, error = [], 0.0
    start = time.perf_counter()
    for loop in range(loops):
        x = ag.Variable(x0, requires_grad=True)
        (g,) = ag.autograd.grad(xp.sum(xp.sin(x) * x * x), [x], create_graph=True)
        xp.sum(g).backward()  # x.grad: the diagonal of the Hessian, f''
        error = max(error,
                    float(np.max(np.abs(g.data - first) / (1 + np.abs(first)))),
                    float(np.max(np.abs(x.grad.data - second) / (1 + np.abs(second)))))
        if (loop + 1) % every == 0:
            samples.append(_memory_mib("VmRSS"))
    seconds = time.perf_counter() - start
    flat, growth = _flat(samples)
    return {"ok": flat and error <= 1e-12,
            "figures": f"{loops:,} loops, {seconds / loops * 1e3:.2f} ms/loop; max relative "
                       f"error of f' and f'': {error:.1e}",
            "memory": f"RSS every {every:,} loops: {_samples_text(samples)} MiB; "
                      f"growth {growth:+.2f} MiB, flat: {flat}"}


def _samples_text(samples):
    return " ".join(f"{s:.1f}" for s in samples)


ITEMS = {"chain": chain, "own_graphs": own_graphs, "shared_leaf": shared_leaf,
         "training": training, "create_graph": create_graph}
SIZE_TEXT = {"chain": "{:,} ops", "own_graphs": "8 thr x {} passes",
             "shared_leaf": "8 thr x {} passes", "training": "{:,} steps",
             "create_graph": "{:,} loops"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a smoke run")
    parser.add_argument("--only", default=",".join(ITEMS), help="comma-separated items")
    parser.add_argument("--item", help=argparse.SUPPRESS)  # run one item here, print JSON
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.item:
        result = ITEMS[args.item](args.size)
        print(json.dumps(dict(result, ok=bool(result["ok"]))))
        return 0
    sizes = QUICK if args.quick else FULL
    print(f"arraygrad soak ({'quick' if args.quick else 'full'}); numpy {np.__version__}, "
          f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, each item in a fresh "
          "process\n")
    print(f"{'item':<13} {'size':<18} {'result':<6} figures")
    failed = 0
    for name in args.only.split(","):
        size = sizes[name]
        start = time.perf_counter()
        done = subprocess.run([sys.executable, __file__, "--item", name, "--size", str(size)],
                              capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode == 0:
            result = json.loads(done.stdout.strip().splitlines()[-1])
        else:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            result = {"ok": False, "figures": f"crashed: {last}", "memory": ""}
        failed += not result["ok"]
        print(f"{name:<13} {SIZE_TEXT[name].format(size):<18} "
              f"{'pass' if result['ok'] else 'FAIL':<6} {result['figures']}")
        print(f"{'':<13} {f'({seconds:.0f} s wall)':<18} {'':<6} {result['memory']}")
    print(f"\n{'all passed' if not failed else f'{failed} FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
