"""Where reusing memory in backward starts to pay: ``rules.reuse.REUSE_MIN_BYTES``.

Three losses (W3's; ``tanh(x * 1.3 + 0.2) * exp(-x)``; ``z * z * z`` of a z-score), forward and backward,
on float32 and float64 arrays of 16 KiB to 1 MiB, with reuse on at every size and off at every
size, in turns. Printed: the best times and their ratio (below 1: reuse is faster). Gradients
are the same either way (``tests/test_reuse.py``). Run by hand, never as a timed test::

    python -m bench.reuse_threshold            # --rounds 5 by default
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"  # before NumPy is imported

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import arraygrad as ag  # noqa: E402
from arraygrad.rules import reuse  # noqa: E402

xp = ag.namespace("numpy")
LOSSES = {
    "W3": lambda x: xp.sum(xp.sin(x) * xp.exp(-x * x) + xp.log1p(x * x)),
    "tanh * exp": lambda x: xp.sum(xp.tanh(x * 1.3 + 0.2) * xp.exp(-x)),
    "z-score cubed": lambda x: _cubed((x - xp.mean(x)) / xp.std(x)),
}


def _cubed(z):
    return xp.sum(z * z * z)
KIB = (16, 32, 64, 128, 256, 512, 1024)
WORK = 1 << 23  # bytes passed through per timing: more calls on smaller arrays


def best_time(loss, x, calls):
    best = float("inf")
    for _ in range(calls):
        variable = ag.Variable(x, requires_grad=True)
        start = time.perf_counter()
        loss(variable).backward()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args(argv)
    threshold = reuse.REUSE_MIN_BYTES
    rng = np.random.default_rng(0)
    print(f"REUSE_MIN_BYTES = {threshold // 1024} KiB; best of {options.rounds} rounds, "
          "reuse on and off in turns; on/off below 1: reusing is faster")
    try:
        for name, loss in LOSSES.items():
            print(f"\n{name}")
            for dtype in (np.float32, np.float64):
                for kib in KIB:
                    x = rng.standard_normal(kib * 1024 // np.dtype(dtype).itemsize).astype(dtype)
                    calls = max(5, WORK // x.nbytes)
                    best = {"on": float("inf"), "off": float("inf")}
                    for _ in range(options.rounds):
                        for mode, bound in (("on", 1), ("off", 1 << 62)):
                            reuse.REUSE_MIN_BYTES = bound
                            best[mode] = min(best[mode], best_time(loss, x, calls))
                    print(f"    {np.dtype(dtype).name:8s} {kib:5d} KiB   on {best['on'] * 1e6:9.1f} us"
                          f"   off {best['off'] * 1e6:9.1f} us   on/off {best['on'] / best['off']:.2f}")
    finally:
        reuse.REUSE_MIN_BYTES = threshold


if __name__ == "__main__":
    main()
