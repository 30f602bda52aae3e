"""Hand-run: backward of linalg.diagonal, cholesky and solve beside torch.autograd, in one
process (``python -m bench.linalg_rules``). Median of a few runs, milliseconds."""

import statistics
import time

import numpy as np
import torch

import arraygrad as ag

xp = ag.namespace("numpy")


def _ms(fn, repeat=5):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def _spd(n, rng):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def diagonal(n, rng):
    a = rng.standard_normal((n, n))
    w = rng.standard_normal(n)

    def ours():
        x = ag.Variable(a, requires_grad=True)
        xp.sum(xp.linalg.diagonal(x) * w).backward()

    t = torch.tensor(a, requires_grad=True)
    tw = torch.tensor(w)

    def theirs():
        t.grad = None
        (torch.linalg.diagonal(t) * tw).sum().backward()
    return ours, theirs


def cholesky(n, rng):
    a, w = _spd(n, rng), rng.standard_normal((n, n))

    def ours():
        x = ag.Variable(a, requires_grad=True)
        xp.sum(xp.linalg.cholesky(x) * w).backward()

    t, tw = torch.tensor(a, requires_grad=True), torch.tensor(w)

    def theirs():
        t.grad = None
        (torch.linalg.cholesky(t) * tw).sum().backward()
    return ours, theirs


def solve(n, rng):
    a, b, w = _spd(n, rng), rng.standard_normal((n, 8)), rng.standard_normal((n, 8))

    def ours():
        x, y = ag.Variable(a, requires_grad=True), ag.Variable(b, requires_grad=True)
        xp.sum(xp.linalg.solve(x, y) * w).backward()

    t, u = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tw = torch.tensor(w)

    def theirs():
        t.grad = u.grad = None
        (torch.linalg.solve(t, u) * tw).sum().backward()
    return ours, theirs


def main():
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    for name, sizes in ((diagonal, (400, 1000, 2000)), (cholesky, (400, 1000)),
                        (solve, (400, 1000))):
        for n in sizes:
            ours, theirs = name(n, rng)
            print(f"{name.__name__:9} n={n:5}  arraygrad {_ms(ours):8.2f} ms   "
                  f"torch {_ms(theirs):8.2f} ms")


if __name__ == "__main__":
    main()
