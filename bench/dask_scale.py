"""Dask at scale: the least-squares gradient through arraygrad against dask.array by hand.

On a ``distributed.LocalCluster`` (2 worker processes, 1 thread each) with a connected Client,
the gradient of ``mean((X @ w - y)**2)`` in ``w`` for X of 4,000,000 x 50 float64 in 40 row
chunks (``--rows``, ``--chunks``; ``--quick``: 400,000 rows), three ways:

- arraygrad: ``xp = ag.namespace("dask")``, ``w`` a Variable requiring grad around a dask array,
  X and y constant Variables, ``loss.backward()``, then ``w.grad.data.compute()``;
- by hand: ``(2 / n * (X.T @ (X @ w - y))).compute()``;
- the forward alone: ``mean((X @ w - y)**2).compute()``.

Definition: X and y are generated on the cluster (``da.random``, fixed seeds) and persisted there
(``persist()`` + ``wait``) before anything is timed, so every variant reads the same resident
chunks and only the gradient (or the loss) is timed: building the lazy graph on the client
(for arraygrad: recording the forward and running backward) plus ``.compute()``. The variants
take turns in every round, in an order rotating from round to round (whichever gradient runs
right after the other's compute takes 5-10% longer here: a fixed order favoured the one run
first); each figure is the median over the rounds, with min and max.

Graph sizes are ``len(dict(arr.__dask_graph__()))`` of the array computed, as built and after
``dask.optimize`` (fusion, culling); both include the persisted chunks of X and y and the one
chunk of ``w``. Weak scaling: 1x, 2x and 4x the rows, the chunk count growing with them (40, 80,
160 chunks of the same size), arraygrad and by hand, X and y persisted for each size in turn.

Run by hand, not in CI: ``python -m bench.dask_scale [--quick] [--rows N] [--no-scaling]``.
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                  "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_variable] = "1"  # one BLAS thread per worker: the workers are the parallelism

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402

import numpy as np  # noqa: E402

W6_START = "<!-- W6 results: written by `python -m bench.dask_scale --write-results` -->"
W6_END = "<!-- end of W6 results -->"
FEATURES = 50
ROWS = 4_000_000
QUICK_ROWS = 400_000
CHUNKS = 40
GOAL_TIME, GOAL_GRAPH = 1.1, 1.2  # issue 15: arraygrad / by hand


# ------------------------------------------------------------------------------- the variants
def arraygrad_gradient(ag, xp, X, y, w0):
    """The lazy gradient through arraygrad (records the forward, runs backward)."""
    w = ag.Variable(w0, requires_grad=True)
    loss = xp.mean((ag.Variable(X) @ w - ag.Variable(y)) ** 2)
    loss.backward()
    return w.grad.data


def hand_gradient(X, y, w0):
    return 2 / X.shape[0] * (X.T @ (X @ w0 - y))


def forward_only(da, X, y, w0):
    return da.mean((X @ w0 - y) ** 2)


# ------------------------------------------------------------------------------- measuring
def graph_sizes(array):
    """Tasks in the graph of ``array``: as built, and after ``dask.optimize``."""
    import dask

    (optimized,) = dask.optimize(array)
    return len(dict(array.__dask_graph__())), len(dict(optimized.__dask_graph__()))


def graph_layers(array, optimize=True):
    """Tasks per kind (key name without its token), to compare two graphs."""
    import dask

    if optimize:
        (array,) = dask.optimize(array)
    names = (k[0] if isinstance(k, tuple) else k for k in dict(array.__dask_graph__()))
    return Counter(name.rsplit("-", 1)[0] for name in names)


def timed(build):
    """(seconds to build the lazy array, seconds in total with ``.compute()``, the value)."""
    start = time.perf_counter()
    array = build()
    built = time.perf_counter()
    value = array.compute()
    return built - start, time.perf_counter() - start, value


def summary(times):
    return statistics.median(times), min(times), max(times)


def fmt(times):
    median, low, high = summary(times)
    return f"{median:7.3f} s  ({low:.3f}-{high:.3f})"


def make_data(client, da, rows, chunks):
    """X, y generated and persisted on the cluster; w0 a single-chunk dask array."""
    from distributed import wait
    from distributed.client import FuturesCancelledError

    if rows % chunks:
        raise SystemExit(f"--rows {rows} is not a multiple of {chunks} chunks")
    step = rows // chunks
    X = da.random.default_rng(0).standard_normal((rows, FEATURES), chunks=(step, FEATURES))
    y = da.random.default_rng(1).standard_normal((rows,), chunks=(step,))
    for attempt in range(3):
        # The same sizes make the same keys as the last compare's, whose cancellation may still
        # be reaching the scheduler: it can cancel these futures too; persist them again.
        X, y = client.persist([X, y])
        try:
            wait([X, y])
            break
        except FuturesCancelledError:
            if attempt == 2:
                raise
            time.sleep(1)
    w0 = da.from_array(np.random.default_rng(2).standard_normal(FEATURES) / FEATURES,
                       chunks=FEATURES)
    return X, y, w0


def compare(client, ag, xp, da, rows, chunks, repeats, variants=("hand", "arraygrad", "fwd")):
    X, y, w0 = make_data(client, da, rows, chunks)
    builders = {"hand": lambda: hand_gradient(X, y, w0),
                "arraygrad": lambda: arraygrad_gradient(ag, xp, X, y, w0),
                "fwd": lambda: forward_only(da, X, y, w0)}
    builders = {name: builders[name] for name in variants}
    # Check before timing: the gradients must agree (and warm up imports and the workers).
    values = {name: timed(build)[2] for name, build in builders.items()}
    if "arraygrad" in values:
        np.testing.assert_allclose(values["arraygrad"], values["hand"], rtol=1e-10, atol=1e-12,
                                   err_msg="arraygrad's gradient differs from the hand-written")
    sizes = {name: graph_sizes(build()) for name, build in builders.items()}
    build_times = {name: [] for name in builders}
    total_times = {name: [] for name in builders}
    names = list(builders)
    for turn in range(repeats):
        # Taking turns, so that drift touches all alike, in an order rotating every round: on
        # this machine whichever gradient ran right after the other took 5-10% longer.
        for name in names[turn % len(names):] + names[:turn % len(names)]:
            b, t, _ = timed(builders[name])
            build_times[name].append(b)
            total_times[name].append(t)
    layers = ({name: graph_layers(builders[name]()) for name in ("hand", "arraygrad")}
              if "arraygrad" in builders else {})
    client.cancel([X, y])
    del X, y
    return sizes, build_times, total_times, layers


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,} rows, fewer runs")
    parser.add_argument("--rows", type=int, help=f"base rows (default {ROWS:,})")
    parser.add_argument("--chunks", type=int, default=CHUNKS, help="row chunks at the base size")
    parser.add_argument("--repeats", type=int, help="rounds (default 9; --quick 3)")
    parser.add_argument("--no-scaling", action="store_true", help="skip the weak scaling")
    parser.add_argument("--scales", default="1,2,4", help="weak scaling factors (default 1,2,4)")
    parser.add_argument("--layers", action="store_true", help="print tasks per kind")
    parser.add_argument("--write-results", action="store_true",
                        help="rewrite the W6 results table in bench/README.md with this run")
    args = parser.parse_args(argv)
    rows = args.rows or (QUICK_ROWS if args.quick else ROWS)
    repeats = args.repeats or (3 if args.quick else 9)  # a multiple of the 3 variants

    import dask
    import dask.array as da
    import distributed

    import arraygrad as ag

    xp = ag.namespace("dask")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        step = rows // args.chunks
        print(f"dask {dask.__version__}, distributed {distributed.__version__}, numpy "
              f"{np.__version__}; LocalCluster: 2 worker processes x 1 thread, BLAS threads 1")
        print(f"gradient of mean((X @ w - y)**2) in w; X {rows:,} x {FEATURES} float64 in "
              f"{args.chunks} row chunks of {step:,} ({rows * FEATURES * 8 / 1e9:.2f} GB)")
        print("Definition: X and y generated on the cluster and persisted (persist + wait) "
              "before timing;\n  timed: building the lazy graph on the client (arraygrad: "
              "forward recording + backward)\n  plus .compute(); variants take turns, their order "
              "rotating every round; median "
              f"of {repeats} rounds (min-max).\n  Graph: tasks of the computed array as built / "
              "after dask.optimize, including\n  the persisted chunks of X, y and w "
              f"({2 * args.chunks + 1} keys).\n")
        sizes, builds, totals, layers = compare(client, ag, xp, da, rows, args.chunks, repeats)
        names = {"hand": "by hand (dask.array)", "arraygrad": "arraygrad (dask)",
                 "fwd": "forward only (loss)"}
        print(f"{'variant':<22}{'wall time, median (min-max)':>30}{'of which build':>16}"
              f"{'tasks built':>13}{'optimized':>11}")
        results = []
        for name in ("hand", "arraygrad", "fwd"):
            median = statistics.median(totals[name])
            results += [("W6", "time", names[name], median * 1e3, "ms",
                         median / statistics.median(totals["hand"])),
                        ("W6", "tasks optimized", names[name], sizes[name][1], "",
                         sizes[name][1] / sizes["hand"][1])]
            print(f"{names[name]:<22}{fmt(totals[name]):>30}"
                  f"{statistics.median(builds[name]) * 1e3:>13.1f} ms"
                  f"{sizes[name][0]:>13}{sizes[name][1]:>11}")
        t_ratio = statistics.median(totals["arraygrad"]) / statistics.median(totals["hand"])
        g_raw = sizes["arraygrad"][0] / sizes["hand"][0]
        g_opt = sizes["arraygrad"][1] / sizes["hand"][1]
        fwd_ratio = statistics.median(totals["arraygrad"]) / statistics.median(totals["fwd"])
        print(f"\narraygrad / by hand: time {t_ratio:.3f} (goal <= {GOAL_TIME}: "
              f"{'met' if t_ratio <= GOAL_TIME else 'NOT met'}), graph {g_raw:.3f} as built, "
              f"{g_opt:.3f} optimized (goal <= {GOAL_GRAPH}: "
              f"{'met' if g_opt <= GOAL_GRAPH else 'NOT met'}); arraygrad / forward: "
              f"time {fwd_ratio:.2f}")
        # The other definition, for the graph only: X and y generated inside the graph.
        gen_X = da.random.default_rng(0).standard_normal((rows, FEATURES),
                                                         chunks=(step, FEATURES))
        gen_y = da.random.default_rng(1).standard_normal((rows,), chunks=(step,))
        w0 = da.from_array(np.zeros(FEATURES), chunks=FEATURES)
        gen = {"hand": graph_sizes(hand_gradient(gen_X, gen_y, w0)),
               "arraygrad": graph_sizes(arraygrad_gradient(ag, xp, gen_X, gen_y, w0))}
        print(f"with X and y generated inside the graph instead (not timed): tasks optimized "
              f"{gen['arraygrad'][1]} (arraygrad) / {gen['hand'][1]} (by hand) = "
              f"{gen['arraygrad'][1] / gen['hand'][1]:.3f}")
        if args.layers:
            print("\ntasks per kind after dask.optimize (by hand | arraygrad):")
            for kind in sorted(set(layers["hand"]) | set(layers["arraygrad"])):
                print(f"  {kind:<40}{layers['hand'].get(kind, 0):>6}"
                      f"{layers['arraygrad'].get(kind, 0):>8}")

        if args.no_scaling:
            return _write(args, results, rows)
        factors = [int(f) for f in args.scales.split(",")]
        scaling_repeats = 4  # each of the two variants first in two rounds
        print(f"\nWeak scaling (same chunk size {step:,} rows, chunks growing with rows; median "
              f"of {scaling_repeats} rounds (min-max);\n  same 2 workers at every size, so linear = time x factor; "
              f"efficiency = factor x time at 1x / time, 1.00 = linear):")
        print(f"{'rows':>12}{'chunks':>8}{'by hand':>30}{'arraygrad':>30}{'ratio':>8}"
              f"{'eff. hand':>11}{'eff. ag':>9}")
        base = {}
        for factor in factors:
            _, _, totals, _ = compare(client, ag, xp, da, rows * factor, args.chunks * factor,
                                      scaling_repeats, variants=("hand", "arraygrad"))
            hand, grad = (statistics.median(totals[k]) for k in ("hand", "arraygrad"))
            base = base or {"hand": hand, "arraygrad": grad}
            print(f"{rows * factor:>12,}{args.chunks * factor:>8}{fmt(totals['hand']):>30}"
                  f"{fmt(totals['arraygrad']):>30}{grad / hand:>8.3f}"
                  f"{factor * base['hand'] / hand:>11.2f}{factor * base['arraygrad'] / grad:>9.2f}",
                  flush=True)
            for name, value in (("by hand (dask.array)", hand), ("arraygrad (dask)", grad)):
                results.append((f"W6 x{factor}", f"time, {rows * factor:,} rows", name,
                                value * 1e3, "ms", value / hand))
        _write(args, results, rows)


def _write(args, results, rows):
    """With --write-results: W6's table in bench/README.md, beside the other workloads'."""
    if args.write_results:
        from bench.__main__ import write_results

        write_results(results, args.quick, command="python -m bench.dask_scale",
                      start=W6_START, end=W6_END,
                      how=f"{rows:,} rows in 2 worker processes; median times")


if __name__ == "__main__":
    main()
