"""The cost of one forward-mode ``jvp`` against one plain forward pass.

The W1 chain of ``python -m bench`` (``* 1.0001``, ``+ 0.01``, ``sin``, ``* 0.9``), 250 times:
1,000 recorded ops on 16 float64 values. Timed: the chain in raw NumPy; the chain through
arraygrad on a Variable with ``requires_grad=True`` (records the graph); ``ag.jvp`` of the chain
on a raw array (records the graph, then pushes one tangent through it). The tangent is checked
against central differences before anything is timed. Run by hand, never as a timed test::

    python -m bench.jvp_cost            # --rounds 15 --runs 5 by default
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"  # before NumPy is imported

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import arraygrad as ag  # noqa: E402

LINKS = 250  # four ops each: 1,000 recorded ops


def chain(xp, y):
    for _ in range(LINKS):
        y = xp.sin(y * 1.0001 + 0.01) * 0.9
    return y


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=5, help="calls in a row in each round")
    options = parser.parse_args(argv)
    xp = ag.namespace("numpy")
    rng = np.random.default_rng(0)
    x0, t0 = rng.standard_normal(16), rng.standard_normal(16)

    value, tangent = ag.jvp(lambda x: chain(xp, x), (x0,), (t0,))
    eps = 1e-6
    central = (chain(np, x0 + eps * t0) - chain(np, x0 - eps * t0)) / (2 * eps)
    np.testing.assert_allclose(value, chain(np, x0), rtol=1e-12)
    np.testing.assert_allclose(tangent, central, rtol=1e-6, atol=1e-9)

    work = {
        "numpy forward": lambda: chain(np, x0),
        "arraygrad forward (requires_grad)": lambda: chain(
            xp, ag.Variable(x0, requires_grad=True)),
        "ag.jvp": lambda: ag.jvp(lambda x: chain(xp, x), (x0,), (t0,)),
    }
    times = {name: [] for name in work}
    for _ in range(options.rounds):  # the workloads take turns, so that drift touches them alike
        for name, run in work.items():
            for _ in range(options.runs):
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
    print(f"{LINKS * 4} ops on 16 float64 values, {options.rounds} rounds x {options.runs} runs "
          "(median, [25th, 75th percentile], min), ms:")
    medians = {}
    for name, values in times.items():
        q1, median, q3 = statistics.quantiles(values, n=4)
        medians[name] = median
        print(f"  {name:36s} {median * 1e3:8.3f}  [{q1 * 1e3:.3f}, {q3 * 1e3:.3f}]  "
              f"min {min(values) * 1e3:.3f}")
    base = medians["arraygrad forward (requires_grad)"]
    print(f"jvp / arraygrad forward: {medians['ag.jvp'] / base:.2f}x (limit 3x)")
    print(f"jvp / numpy forward:     {medians['ag.jvp'] / medians['numpy forward']:.1f}x")
    print(f"arraygrad forward / numpy forward: {base / medians['numpy forward']:.1f}x")


if __name__ == "__main__":
    main()
