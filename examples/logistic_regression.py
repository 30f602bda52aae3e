"""Logistic regression written once against the Array API standard and trained by gradient
descent with arraygrad, on NumPy and on Dask under a real ``dask.distributed`` cluster (one
worker process): the same code, the same weights.

Set ``ARRAYGRAD_EXAMPLES_SMALL=1`` for a quick run.
"""

import os
import time

import numpy as np

import arraygrad as ag

SMALL = os.environ.get("ARRAYGRAD_EXAMPLES_SMALL") == "1"
N_SAMPLES, N_FEATURES = (2_000, 5) if SMALL else (20_000, 10)
STEPS = 30 if SMALL else 150
LEARNING_RATE = 0.5


# ---------------------------------------------------------- the model, against the standard
def loss(w, b, X, y):
    """Mean binary cross-entropy of ``sigmoid(X @ w + b)`` against labels ``y`` in {0, 1}."""
    xp = w.__array_namespace__()
    z = X @ w + b
    return xp.mean(xp.logaddexp(xp.zeros_like(z), z) - y * z)  # log(1 + e^z) - y z


value_and_grad = ag.value_and_grad(loss, argnums=(0, 1))


def train(w, b, X, y, steps, finish_step=lambda w, b: (w, b)):
    """Plain gradient descent; ``finish_step`` lets a lazy backend materialize each step."""
    for _ in range(steps):
        value, (gw, gb) = value_and_grad(w, b, X, y)
        w, b = finish_step(w - LEARNING_RATE * gw, b - LEARNING_RATE * gb)
    return w, b, value


# ------------------------------------------------------------------------------------ data
def make_data(seed=0):
    """Linearly separable classes with a margin."""
    rng = np.random.default_rng(seed)
    true_w = rng.standard_normal(N_FEATURES)
    X = rng.standard_normal((N_SAMPLES, N_FEATURES))
    margin = X @ true_w + 0.3
    keep = np.abs(margin) > 0.5
    return X[keep], (margin[keep] > 0).astype(np.float64)


def mean_accuracy(w, b, X, y):
    return float(np.mean(((X @ w + b) > 0) == (y > 0.5)))


def run_numpy(X, y):
    start = time.perf_counter()
    w, b, value = train(np.zeros(X.shape[1]), np.zeros(()), X, y, STEPS)
    acc = mean_accuracy(w, b, X, y)
    print(f"numpy: {STEPS} steps in {time.perf_counter() - start:.2f} s, "
          f"loss {float(value):.4f}, accuracy {acc:.3f}")
    return w, b, acc


def run_dask(X, y):
    try:
        import dask.array as da
        from dask.distributed import Client, LocalCluster
    except ImportError as error:
        print(f"dask part skipped: {error} (pip install 'arraygrad[dask]' distributed)")
        return None
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        print(f"dask: {client}")
        Xd = da.from_array(X, chunks=(X.shape[0] // 4, X.shape[1])).persist()
        yd = da.from_array(y, chunks=X.shape[0] // 4).persist()
        w0, b0 = da.zeros(X.shape[1]), da.zeros(())
        start = time.perf_counter()
        # Forward and backward stay lazy; persist() runs each step on the worker, so the task
        # graph does not grow with the number of steps.
        w, b, value = train(w0, b0, Xd, yd, STEPS,
                            finish_step=lambda w, b: client.persist([w, b]))
        w, b, value = client.compute([w, b, value], sync=True)
        acc = mean_accuracy(w, b, X, y)
        print(f"dask:  {STEPS} steps in {time.perf_counter() - start:.2f} s, "
              f"loss {float(value):.4f}, accuracy {acc:.3f}")
    return w, b, acc


def main():
    X, y = make_data()
    print(f"{X.shape[0]} samples, {X.shape[1]} features, {STEPS} gradient-descent steps")
    w_np, b_np, acc_np = run_numpy(X, y)
    assert acc_np > 0.9, f"numpy accuracy {acc_np:.3f} <= 0.9"
    result = run_dask(X, y)
    if result is not None:
        w_dask, b_dask, acc_dask = result
        assert acc_dask > 0.9, f"dask accuracy {acc_dask:.3f} <= 0.9"
        assert np.allclose(w_np, w_dask) and np.allclose(b_np, b_dask), \
            f"numpy and dask disagree: {w_np} vs {w_dask}"
        print(f"numpy and dask weights agree (max difference "
              f"{np.max(np.abs(w_np - w_dask)):.2e})")
    print("OK")


if __name__ == "__main__":
    main()
