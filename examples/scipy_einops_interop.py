"""SciPy and einops running unmodified on arraygrad Variables: a small attention-style pipeline
(``einops`` rearrange/reduce, ``scipy.stats.zscore``, ``scipy.special.erf`` and ``logsumexp``
with ``SCIPY_ARRAY_API=1``) stays differentiable, and its gradient matches central differences.

Set ``ARRAYGRAD_EXAMPLES_SMALL=1`` for a quick run.
"""

import os

os.environ["SCIPY_ARRAY_API"] = "1"  # before scipy is imported: SciPy then follows its inputs

import einops  # noqa: E402  (arraygrad registers its einops backend when imported)
import numpy as np  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402

import arraygrad as ag  # noqa: E402
from arraygrad.testing import check_grads  # noqa: E402

SMALL = os.environ.get("ARRAYGRAD_EXAMPLES_SMALL") == "1"
BATCH, TOKENS, HEADS, DIM = (2, 4, 2, 3) if SMALL else (4, 16, 4, 8)
CHECKS = 3 if SMALL else 10


def pipeline(x, w):
    """x: (batch, tokens, heads * dim) features; w: (dim,) a query. Returns a scalar."""
    xp = x.__array_namespace__()
    heads = einops.rearrange(x, "b t (h d) -> b h t d", h=HEADS)
    normalized = scipy.stats.zscore(heads, axis=-1)            # per-token standardization
    gated = normalized * (1 + scipy.special.erf(normalized)) / 2  # GELU, through erf
    scores = xp.sum(gated * w, axis=-1)                        # (b, h, t)
    pooled = scipy.special.logsumexp(scores, axis=-1)          # soft max over tokens: (b, h)
    per_batch = einops.reduce(pooled, "b h -> b", "mean")
    return xp.sum(per_batch ** 2)


def central_difference_gradient(f, x, w, eps=1e-6):
    g = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[index] = eps
        g[index] = (float(f(x + e, w)) - float(f(x - e, w))) / (2 * eps)
    return g


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, TOKENS, HEADS * DIM))
    w = rng.standard_normal(DIM)

    xv = ag.Variable(x, requires_grad=True)
    wv = ag.Variable(w, requires_grad=True)
    out = pipeline(xv, wv)
    out.backward()
    print(f"pipeline value {float(out.data):.6f}, graph ends in {out.grad_fn}; "
          f"grad x {xv.grad.shape}, grad w {wv.grad.shape}")

    # Against central differences, element by element (the pipeline runs on NumPy arrays too).
    numeric = central_difference_gradient(pipeline, x, w)
    error = np.max(np.abs(numeric - xv.grad.data))
    print(f"max |arraygrad - central differences| over all of grad x: {error:.1e}")
    assert np.allclose(xv.grad.data, numeric, rtol=1e-5, atol=1e-7)

    # And through random projections, first and second order, at several points.
    for seed in range(CHECKS):
        xs = np.random.default_rng(seed).standard_normal(x.shape)
        check_grads(pipeline, xs, w, order=2, seed=seed)
    print(f"check_grads (order 2) passed at {CHECKS} random points")
    print("OK")


if __name__ == "__main__":
    main()
