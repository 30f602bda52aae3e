"""The cost of one op recorded through ``__torch_function__`` (``torch.sin(v)``) against the same
op through the namespace (``xp.sin(v)``), on the torch backend.

The W1 chain of ``python -m bench`` (``* 1.0001``, ``+ 0.01``, ``sin``, ``* 0.9``), 250 times:
1,000 recorded ops on 16 float64 values, forward and backward. Timed: the chain through the
namespace (``xp.multiply(y, 1.0001)``...); the same ops through torch's functions
(``torch.mul(y, 1.0001)``, ``torch.add``, ``torch.sin``), each reaching arraygrad through
``__torch_function__``; the same through the Tensor methods a Variable of the torch backend has
(``y.mul(1.0001)``, ``y.sin()``); and plain PyTorch autograd for scale. Both gradients are
checked equal before anything is timed. Run by hand, never as a timed test::

    python -m bench.torch_function_cost            # --rounds 15 --runs 3 by default
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"  # before NumPy and torch are imported

import argparse  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

import arraygrad as ag  # noqa: E402

LINKS = 250  # four ops each: 1,000 recorded ops


def through_namespace(xp, y):
    for _ in range(LINKS):
        y = xp.multiply(xp.sin(xp.add(xp.multiply(y, 1.0001), 0.01)), 0.9)
    return y


def through_torch_function(xp, y):
    for _ in range(LINKS):
        y = torch.mul(torch.sin(torch.add(torch.mul(y, 1.0001), 0.01)), 0.9)
    return y


def through_methods(xp, y):
    for _ in range(LINKS):
        y = y.mul(1.0001).add(0.01).sin().mul(0.9)
    return y


def run_arraygrad(chain, xp, values):
    x = ag.Variable(values, requires_grad=True)
    chain(xp, x).sum().backward()
    return x.grad.data


def run_torch(values):
    x = values.clone().requires_grad_(True)
    through_torch_function(None, x).sum().backward()
    return x.grad


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=3, help="calls in a row in each round")
    options = parser.parse_args(argv)
    torch.set_num_threads(1)
    xp = ag.namespace("torch")
    values = torch.linspace(-1.0, 1.0, 16, dtype=torch.float64)
    cases = {
        "namespace (xp.sin(v))": lambda: run_arraygrad(through_namespace, xp, values),
        "__torch_function__ (torch.sin(v))": lambda: run_arraygrad(through_torch_function, xp,
                                                                   values),
        "Tensor methods (v.sin())": lambda: run_arraygrad(through_methods, xp, values),
        "PyTorch autograd, for scale": lambda: run_torch(values),
    }
    reference = run_torch(values)
    for name, case in cases.items():
        assert torch.allclose(case(), reference, rtol=1e-12, atol=0), name
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(options.rounds):
        for name, case in cases.items():  # in turns, so that a drift touches each alike
            for _ in range(options.runs):
                start = time.perf_counter()
                case()
                best[name] = min(best[name], time.perf_counter() - start)
    ops = 4 * LINKS
    base = best["namespace (xp.sin(v))"]
    print(f"{ops} recorded ops on 16 float64 values, forward and backward, best of "
          f"{options.rounds} rounds x {options.runs} runs (torch {torch.__version__}):")
    for name, seconds in best.items():
        print(f"  {name:36} {seconds / ops * 1e6:6.2f} us per op  ({seconds / base:.2f}x the "
              "namespace)")


if __name__ == "__main__":
    main()
