"""Peak memory of a deep chain with and without ``arraygrad.checkpoint``, run by hand.

A chain of ``--layers`` layers ``h = tanh(h @ W_i)`` (NumPy, float64, ``h`` of ``--batch`` x
``--width``, one ``W_i`` per layer), then ``sum(h * h)`` and backward. Each way of running it
goes in a fresh process, which reports

- the peak of the memory NumPy allocates during forward and backward (``tracemalloc``: NumPy
  reports its array buffers to it), above what was allocated before (inputs and weights);
- the peak resident memory (``VmHWM``) minus the resident size before the forward;
- the time of forward and backward, and a hash of every gradient, which must be bit-identical
  across the ways: checkpointing changes memory and time, never the gradients.

Ways: ``plain`` (no checkpoint), ``per-layer`` (each layer checkpointed; a ``tanh(h @ W)``
layer saves only its output, so this keeps as much as plain does), ``per-segment`` (the chain
cut into about sqrt(layers) segments, each checkpointed: the classic O(sqrt n) memory).
``--residual`` makes each layer ``h + tanh(h @ W_i)``, which saves two arrays per layer (its
input and the tanh), so that checkpointing each layer halves what the chain keeps.

    python -m bench.checkpoint_memory            # 50 layers, batch 2048, width 256
    python -m bench.checkpoint_memory --residual
    python -m bench.checkpoint_memory --layers 20 --batch 256 --width 64
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # before NumPy: deterministic, comparable runs

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

WAYS = ("plain", "per-layer", "per-segment")


def _vm(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def measure(way, layers, batch, width, segment=None, residual=False):
    """Run the chain one way in this process; return its figures (MiB, seconds, hash)."""
    import numpy as np

    import arraygrad as ag

    xp = ag.namespace("numpy")
    rng = np.random.default_rng(0)
    x = ag.Variable(rng.standard_normal((batch, width)), requires_grad=True)
    weights = [ag.Variable(rng.standard_normal((width, width)) / math.sqrt(width),
                           requires_grad=True) for _ in range(layers)]
    segment = segment or max(1, round(math.sqrt(layers)))

    def run(h, first, last):
        for W in weights[first:last]:
            h = h + xp.tanh(h @ W) if residual else xp.tanh(h @ W)
        return h

    resident = _vm("VmRSS")
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    h = x
    if way == "plain":
        h = run(h, 0, layers)
    elif way == "per-layer":
        for i in range(layers):
            h = ag.checkpoint(run, h, i, i + 1)
    elif way == "per-segment":
        for i in range(0, layers, segment):
            h = ag.checkpoint(run, h, i, min(i + segment, layers))
    else:
        raise ValueError(way)
    loss = xp.sum(h * h)
    forward_peak = tracemalloc.get_traced_memory()[1] - base
    loss.backward()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    digest = hashlib.sha256()
    for v in (x, *weights):
        digest.update(np.ascontiguousarray(v.grad.data).tobytes())
    return {"way": way, "peak_mib": peak / 2**20, "forward_peak_mib": forward_peak / 2**20,
            "rss_mib": _vm("VmHWM") - resident, "seconds": seconds,
            "grad_hash": digest.hexdigest()[:16], "segment": segment,
            "array_mib": batch * width * 8 / 2**20}


def measure_in_subprocess(way, layers, batch, width, segment=None, residual=False):
    command = [sys.executable, "-m", "bench.checkpoint_memory", "--child", way,
               "--layers", str(layers), "--batch", str(batch), "--width", str(width)]
    if segment:
        command += ["--segment", str(segment)]
    if residual:
        command += ["--residual"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run(command, capture_output=True, text=True, cwd=root, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=50)
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--segment", type=int, default=None,
                        help="layers per checkpointed segment (default: sqrt(layers))")
    parser.add_argument("--residual", action="store_true", help="layers h + tanh(h @ W)")
    parser.add_argument("--child", choices=WAYS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child, args.layers, args.batch, args.width, args.segment,
                                 args.residual)))
        return 0
    results = [measure_in_subprocess(way, args.layers, args.batch, args.width, args.segment,
                                     args.residual) for way in WAYS]
    layer = "h + tanh(h @ W)" if args.residual else "tanh(h @ W)"
    print(f"{args.layers} layers {layer}, h: {args.batch} x {args.width} float64 "
          f"({results[0]['array_mib']:.1f} MiB per activation), segments of "
          f"{results[0]['segment']} layers")
    print(f"{'way':<12} {'peak (tracemalloc)':>19} {'forward peak':>13} {'peak RSS added':>15} "
          f"{'time':>8}  gradients")
    plain = results[0]
    for r in results:
        same = "identical" if r["grad_hash"] == plain["grad_hash"] else "DIFFERENT"
        print(f"{r['way']:<12} {r['peak_mib']:>15.1f} MiB {r['forward_peak_mib']:>9.1f} MiB "
              f"{r['rss_mib']:>11.1f} MiB {r['seconds']:>7.2f}s  {same} ({r['grad_hash']})")
    return 0 if all(r["grad_hash"] == plain["grad_hash"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
