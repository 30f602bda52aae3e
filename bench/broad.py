"""A broad benchmark: fourteen workloads that users run, each from a named source, timed through
arraygrad (NumPy backend), PyTorch (CPU, torch.autograd) and, where short, gradients written by
hand with NumPy, in one run, with the peak memory each adds.

Every loss is written once against the Array API (``xp``): arraygrad's namespace
``ag.namespace("numpy")`` on Variables, ``array_api_compat.torch`` on tensors. Before anything
is timed, arraygrad's gradients (and the hand-written ones) are checked against PyTorch's;
a disagreement, or a workload arraygrad cannot run, is reported and the run exits 1.
BLAS and PyTorch threads are pinned to 1; times are the best over rounds in which each library
runs 3 times in a row, the libraries taking turns (``bench/__main__.py``'s ``best_times``).
Peak memory: arraygrad and hand-written NumPy by ``tracemalloc`` (NumPy reports its buffers to
it: exact, and the graph's Python objects count too); PyTorch by the growth of the resident
high-water mark (``VmHWM``, reset through ``/proc/self/clear_refs`` after ``malloc_trim``).

    python -m bench.broad                      # all workloads, 5 rounds
    python -m bench.broad --quick              # small sizes, 1 round: a smoke run
    python -m bench.broad --only gp,rnn --json out.json
    python -m bench.compare HEAD~3 --module bench.broad   # before/after on two revisions

The workloads (``WORKLOADS`` below; each class's docstring names its source):
logreg, ridge, attention, gp, rnn, lbfgs, hvp, batched_linalg, mmd, mlp_digits, poisson,
springs, tv, scipy.
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                  "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_variable] = "1"  # before NumPy (and its BLAS) is imported
os.environ["SCIPY_ARRAY_API"] = "1"  # before SciPy is imported (by anyone): the scipy workload

import argparse  # noqa: E402
import ctypes  # noqa: E402
import gc  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import tracemalloc  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402


def _harness():
    """bench/__main__.py, loaded by its path, for ``best_times``, ``machine`` and
    ``_memory_kib``: this file also
    runs as a script from outside the checkout (``bench.compare``), where ``bench`` is not a
    package on the path, and must not put the checkout's arraygrad on it."""
    spec = importlib.util.spec_from_file_location("_bench_harness",
                                                  Path(__file__).with_name("__main__.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HARNESS = _harness()
best_times = HARNESS.best_times


# ------------------------------------------------------------------------------ the libraries
class ArraygradLib:
    name = "arraygrad"

    def __init__(self):
        import arraygrad as ag

        self.ag, self.xp = ag, ag.namespace("numpy")

    def variables(self, arrays):
        return [self.ag.Variable(a, requires_grad=True) for a in arrays]


class TorchLib:
    name = "PyTorch"

    def __init__(self):
        import array_api_compat.torch as txp
        import torch

        torch.set_num_threads(1)
        self.torch, self.xp = torch, txp
        # SciPy's vendored array-api-compat calls torch.asarray on tensors that require grad.
        warnings.filterwarnings("ignore", message="torch.asarray: unspecified requires_grad")

    def data(self, data):
        """The workload's constants as tensors (once, before timing)."""
        return {key: self.torch.from_numpy(value) if isinstance(value, np.ndarray)
                and value.dtype.kind in "fiub" else value for key, value in data.items()}


HAND = "hand-written NumPy"


# ------------------------------------------------------------------------------ the workloads
class Workload:
    """A scalar loss of ``params`` (float64 arrays) and constant ``data``; its gradient in every
    parameter. Subclasses set the sizes in ``make`` and write ``loss`` once against ``xp``;
    ``hand`` (the loss's value and its gradients by hand with NumPy) where it is short."""

    key = title = source = ""
    hand = None  # hand(params, data) -> list of gradients (computing the value as well)

    def __init__(self, quick):
        self.params, self.data = self.make(np.random.default_rng(0), quick)

    def prepare(self, ag_lib, torch_lib):
        self.tdata = torch_lib.data(self.data)

    def run_arraygrad(self, lib):
        variables = lib.variables(self.params)
        self.loss(lib.xp, variables, self.data).backward()
        return [v.grad.data for v in variables]

    def run_torch(self, lib):
        tensors = [lib.torch.from_numpy(p).requires_grad_() for p in self.params]
        self.loss(lib.xp, tensors, self.tdata).backward()
        return [t.grad.numpy() for t in tensors]

    def run_hand(self):
        return self.hand(self.params, self.data)

    def check(self, runs):
        """Every library's gradients against PyTorch's, before anything is timed."""
        expected = runs["PyTorch"]()
        for name, run in runs.items():
            if name == "PyTorch":
                continue
            try:
                got = run()
            except Exception as error:
                raise RuntimeError(f"{name} cannot run {self.key}: "
                                   f"{type(error).__name__}: {error}") from error
            check_close(f"{self.key}: {name}", got, expected)


def log_sum_exp_rows(xp, raw):
    """log(sum(exp(raw), axis=1)), shifted by the row's maximum (as sklearn's Cython loss)."""
    m = xp.max(raw, axis=1)
    return m + xp.log(xp.sum(xp.exp(raw - m[:, None]), axis=1))


class LogReg(Workload):
    """scikit-learn's LogisticRegression objective (multinomial, L2, sample weights):
    ``LinearModelLoss(HalfMultinomialLoss)`` in sklearn/linear_model/_linear_loss.py, per sample
    ``logsumexp(raw_i) - raw_i[y_i]`` (sklearn/_loss/_loss.pyx), weighted mean, plus
    ``l2 / 2 * ||W||^2`` with sklearn's ``l2_reg_strength = 1 / (C * sum(sw))``."""

    key, title, source = "logreg", "LogisticRegression loss, multinomial + L2", \
        "sklearn LinearModelLoss"

    def make(self, rng, quick):
        n, p, k = (200, 8, 3) if quick else (5000, 64, 10)
        X = rng.standard_normal((n, p))
        onehot = np.eye(k)[rng.integers(0, k, n)]
        sw = rng.uniform(0.5, 1.5, n)
        data = {"X": X, "onehot": onehot, "sw": sw, "sw_sum": float(sw.sum()),
                "l2": 1.0 / float(sw.sum())}
        return [0.1 * rng.standard_normal((k, p)), 0.1 * rng.standard_normal(k)], data

    @staticmethod
    def loss(xp, params, d):
        W, b = params
        raw = d["X"] @ W.T + b
        per_sample = log_sum_exp_rows(xp, raw) - xp.sum(d["onehot"] * raw, axis=1)
        return xp.sum(d["sw"] * per_sample) / d["sw_sum"] + 0.5 * d["l2"] * xp.sum(W * W)

    @staticmethod
    def hand(params, d):
        W, b = params
        raw = d["X"] @ W.T + b
        m = raw.max(axis=1, keepdims=True)
        e = np.exp(raw - m)
        total = e.sum(axis=1, keepdims=True)
        per_sample = np.log(total[:, 0]) + m[:, 0] - np.sum(d["onehot"] * raw, axis=1)
        value = d["sw"] @ per_sample / d["sw_sum"] + 0.5 * d["l2"] * np.sum(W * W)  # noqa: F841
        graw = (e / total - d["onehot"]) * (d["sw"] / d["sw_sum"])[:, None]
        return [graw.T @ d["X"] + d["l2"] * W, graw.sum(axis=0)]


class Ridge(Workload):
    """scikit-learn's Ridge objective, ``||y - Xw - b||^2 + alpha * ||w||^2``
    (sklearn/linear_model/_ridge.py, the intercept not penalised)."""

    key, title, source = "ridge", "Ridge least squares + L2", "sklearn Ridge"

    def make(self, rng, quick):
        n, p = (300, 10) if quick else (10000, 200)
        X = rng.standard_normal((n, p))
        y = X @ rng.standard_normal(p) + 0.1 * rng.standard_normal(n)
        return [0.1 * rng.standard_normal(p), np.array(0.5)], {"X": X, "y": y, "alpha": 1.0}

    @staticmethod
    def loss(xp, params, d):
        w, b = params
        r = d["X"] @ w + b - d["y"]
        return xp.sum(r * r) + d["alpha"] * xp.sum(w * w)

    @staticmethod
    def hand(params, d):
        w, b = params
        r = d["X"] @ w + b - d["y"]
        value = r @ r + d["alpha"] * (w @ w)  # noqa: F841
        return [2 * (d["X"].T @ r) + 2 * d["alpha"] * w, np.asarray(2 * r.sum())]


class Attention(Workload):
    """Multi-head scaled dot-product attention, ``softmax(Q K^T / sqrt(d)) V`` with the softmax
    written out (max shift), input and output projections: "Attention is all you need"
    (Vaswani et al. 2017), eq. 1, and the reference code in PyTorch's
    ``scaled_dot_product_attention`` docs; loss: mean squared error to a target."""

    key, title, source = "attention", "attention block, 8x4 heads x64 seq x32", \
        "Vaswani et al. 2017 / torch SDPA docs"

    def make(self, rng, quick):
        B, H, S, D = (2, 2, 8, 4) if quick else (8, 4, 64, 32)
        E = H * D
        params = [rng.standard_normal((E, E)) / math.sqrt(E) for _ in range(4)]
        data = {"x": rng.standard_normal((B, S, E)), "y": rng.standard_normal((B, S, E)),
                "shape": (B, H, S, D)}
        return params, data

    @staticmethod
    def loss(xp, params, d):
        Wq, Wk, Wv, Wo = params
        B, H, S, D = d["shape"]
        x = d["x"]

        def heads(t):
            return xp.permute_dims(xp.reshape(t, (B, S, H, D)), (0, 2, 1, 3))

        q, k, v = heads(x @ Wq), heads(x @ Wk), heads(x @ Wv)
        s = (q @ xp.matrix_transpose(k)) / math.sqrt(D)
        s = s - xp.max(s, axis=-1, keepdims=True)
        e = xp.exp(s)
        p = e / xp.sum(e, axis=-1, keepdims=True)
        o = xp.reshape(xp.permute_dims(p @ v, (0, 2, 1, 3)), (B, S, H * D))
        r = o @ Wo - d["y"]
        return xp.mean(r * r)

    @staticmethod
    def hand(params, d):
        Wq, Wk, Wv, Wo = params
        B, H, S, D = d["shape"]
        E, x, c = H * D, d["x"], 1 / math.sqrt(D)

        def heads(t):
            return t.reshape(B, S, H, D).transpose(0, 2, 1, 3)

        def merge(t):
            return t.transpose(0, 2, 1, 3).reshape(B, S, E)

        q, k, v = heads(x @ Wq), heads(x @ Wk), heads(x @ Wv)
        s = (q @ k.swapaxes(-1, -2)) * c
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        p = e / e.sum(axis=-1, keepdims=True)
        o = merge(p @ v)
        r = o @ Wo - d["y"]
        value = np.mean(r * r)  # noqa: F841
        gr = (2 / r.size) * r
        x2 = x.reshape(-1, E)
        gWo = o.reshape(-1, E).T @ gr.reshape(-1, E)
        go = heads(gr @ Wo.T)
        gp = go @ v.swapaxes(-1, -2)
        gv = p.swapaxes(-1, -2) @ go
        gs = p * (gp - np.sum(gp * p, axis=-1, keepdims=True)) * c
        gq, gk = gs @ k, gs.swapaxes(-1, -2) @ q
        return [x2.T @ merge(gq).reshape(-1, E), x2.T @ merge(gk).reshape(-1, E),
                x2.T @ merge(gv).reshape(-1, E), gWo]


class GaussianProcess(Workload):
    """Gaussian-process negative log marginal likelihood in the log hyperparameters (RBF length
    scale, signal and noise variances): GPML (Rasmussen & Williams) Algorithm 2.1, as
    scikit-learn's ``GaussianProcessRegressor.log_marginal_likelihood``; cholesky for the log
    determinant, ``linalg.solve`` for ``K^-1 y`` (the standard has no triangular solve). The
    hand-written gradient is sklearn's ``0.5 * trace((a a^T - K^-1) dK/dtheta)``."""

    key, title, source = "gp", "GP neg. log marginal likelihood, n=200", \
        "GPML Alg. 2.1 / sklearn GPR"

    def make(self, rng, quick):
        n = 30 if quick else 200
        X = rng.uniform(-3, 3, (n, 3))
        y = np.sin(X.sum(axis=1)) + 0.1 * rng.standard_normal(n)
        d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
        return [np.log(np.array([1.0, 1.0, 0.1]))], {"d2": d2, "y": y[:, None], "eye": np.eye(n)}

    @staticmethod
    def loss(xp, params, d):
        (theta,) = params
        length2, signal, noise = xp.exp(2 * theta[0]), xp.exp(theta[1]), xp.exp(theta[2])
        K = signal * xp.exp(-0.5 * d["d2"] / length2) + noise * d["eye"]
        L = xp.linalg.cholesky(K)
        alpha = xp.linalg.solve(K, d["y"])
        n = d["y"].shape[0]
        return (0.5 * xp.sum(d["y"] * alpha) + xp.sum(xp.log(xp.linalg.diagonal(L)))
                + 0.5 * n * math.log(2 * math.pi))

    @staticmethod
    def hand(params, d):
        import scipy.linalg

        (theta,) = params
        length2, signal, noise = np.exp(2 * theta[0]), np.exp(theta[1]), np.exp(theta[2])
        E = np.exp(-0.5 * d["d2"] / length2)
        K = signal * E + noise * d["eye"]
        factor = scipy.linalg.cho_factor(K, lower=True)
        alpha = scipy.linalg.cho_solve(factor, d["y"])
        value = (0.5 * np.sum(d["y"] * alpha) + np.sum(np.log(np.diag(factor[0])))  # noqa: F841
                 + 0.5 * len(K) * math.log(2 * math.pi))
        inner = alpha @ alpha.T - scipy.linalg.cho_solve(factor, d["eye"])
        dK = (signal * E * d["d2"] / length2, signal * E, noise * d["eye"])
        return [np.array([-0.5 * np.sum(inner * g) for g in dK])]


class RNN(Workload):
    """An Elman (tanh) RNN, ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (the
    formula of PyTorch's ``torch.nn.RNN`` docs), 50 steps, batch 32, 16 inputs, hidden 64; a
    linear read-out of the last state, mean squared error; backpropagation through time."""

    key, title, source = "rnn", "Elman RNN, 50 steps, batch 32, hidden 64", "torch.nn.RNN docs"

    def make(self, rng, quick):
        T, B, I, H, O = (5, 4, 3, 6, 2) if quick else (50, 32, 16, 64, 4)
        s = 1 / math.sqrt(H)
        params = [rng.uniform(-s, s, (H, I)), rng.uniform(-s, s, (H, H)), rng.uniform(-s, s, H),
                  rng.uniform(-s, s, H), rng.uniform(-s, s, (H, O))]
        data = {"x": rng.standard_normal((T, B, I)), "h0": np.zeros((B, H)),
                "y": rng.standard_normal((B, O))}
        return params, data

    @staticmethod
    def loss(xp, params, d):
        W_ih, W_hh, b_ih, b_hh, W_out = params
        h = d["h0"]
        for t in range(d["x"].shape[0]):
            h = xp.tanh(d["x"][t] @ W_ih.T + b_ih + h @ W_hh.T + b_hh)
        r = h @ W_out - d["y"]
        return xp.mean(r * r)

    @staticmethod
    def hand(params, d):
        W_ih, W_hh, b_ih, b_hh, W_out = params
        x, hs = d["x"], [d["h0"]]
        for t in range(len(x)):
            hs.append(np.tanh(x[t] @ W_ih.T + b_ih + hs[-1] @ W_hh.T + b_hh))
        r = hs[-1] @ W_out - d["y"]
        value = np.mean(r * r)  # noqa: F841
        gr = (2 / r.size) * r
        g_out, gh = hs[-1].T @ gr, gr @ W_out.T
        g_ih, g_hh, g_b = np.zeros_like(W_ih), np.zeros_like(W_hh), np.zeros_like(b_ih)
        for t in reversed(range(len(x))):
            ga = gh * (1 - hs[t + 1] * hs[t + 1])
            g_ih += ga.T @ x[t]
            g_hh += ga.T @ hs[t]
            g_b += ga.sum(axis=0)
            gh = ga @ W_hh
        return [g_ih, g_hh, g_b, g_b.copy(), g_out]


def rosenbrock(xp, x):
    """``scipy.optimize.rosen``: sum(100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2)."""
    a = x[1:] - x[:-1] * x[:-1]
    b = 1.0 - x[:-1]
    return xp.sum(100.0 * (a * a) + b * b)


class LBFGS(Workload):
    """``scipy.optimize.minimize(method="L-BFGS-B", jac=True)`` on the Rosenbrock function
    (``scipy.optimize.rosen``) in 1,000 dimensions, 100 iterations (``maxiter``, no other
    stopping), the gradient from ``ag.value_and_grad`` as in examples/scipy_minimize.py; the
    whole ``minimize`` is timed. Hand-written: ``scipy.optimize.rosen`` and ``rosen_der``.
    Checked: the gradient at the start, then the end point and the number of evaluations."""

    key, title, source = "lbfgs", "SciPy L-BFGS-B, Rosenbrock 1000-d, 100 its", \
        "scipy.optimize / examples/scipy_minimize.py"

    def make(self, rng, quick):
        n, iterations = (10, 10) if quick else (1000, 100)
        x0 = np.full(n, -1.2)
        x0[1::2] = 1.0
        return [x0], {"maxiter": iterations}

    def prepare(self, ag_lib, torch_lib):
        xp, torch, txp = ag_lib.xp, torch_lib.torch, torch_lib.xp
        value_and_grad = ag_lib.ag.value_and_grad(lambda x: rosenbrock(xp, x))

        def ag_fun(x):
            value, gradient = value_and_grad(x)
            return float(value), np.asarray(gradient, dtype=np.float64)

        def torch_fun(x):
            t = torch.from_numpy(x).requires_grad_()
            value = rosenbrock(txp, t)
            value.backward()
            return value.item(), t.grad.numpy()

        def hand_fun(x):
            import scipy.optimize

            return scipy.optimize.rosen(x), scipy.optimize.rosen_der(x)

        self.funs = {"arraygrad": ag_fun, "PyTorch": torch_fun, HAND: hand_fun}
        self.evaluations = {}

    def _minimize(self, name, fun=None):
        from scipy.optimize import minimize

        result = minimize(fun or self.funs[name], self.params[0], jac=True, method="L-BFGS-B",
                          options={"maxiter": self.data["maxiter"], "maxfun": 10**6,
                                   "gtol": 0.0, "ftol": 0.0})
        self.evaluations[name] = result.nfev
        return [result.x, np.array(result.fun)]

    def check(self, runs):
        """Each library's value and gradient at every point any library's minimize visits,
        against PyTorch's at the same point: the paths themselves part by rounding (Rosenbrock's
        valley), so that the end points and the counts of evaluations differ a little."""
        points = []
        for name in runs:
            fun = self.funs[name]
            self._minimize(name, lambda x, fun=fun: points.append(x.copy()) or fun(x))
        for x in points:
            value, gradient = self.funs["PyTorch"](x.copy())
            for name in runs:
                if name != "PyTorch":
                    got = self.funs[name](x.copy())
                    check_close(f"{self.key}: {name} at a point of the path", [got[0], got[1]],
                                [value, gradient])
        print(f"  {self.key}: evaluations of f and its gradient in {self.data['maxiter']} "
              "iterations: " + ", ".join(f"{name} {count}" for name, count in
                                         self.evaluations.items()))

    def run_arraygrad(self, lib):
        return self._minimize("arraygrad")

    def run_torch(self, lib):
        return self._minimize("PyTorch")

    def run_hand(self):
        return self._minimize(HAND)


class HVP(Workload):
    """Hessian-vector products for Newton-CG: scikit-learn's binary LogisticRegression objective
    (``LinearModelLoss(HalfBinomialLoss)``, ``mean(log(1 + exp(Xw)) - y Xw) + l2/2 ||w||^2``),
    whose ``gradient_hessian_product`` feeds ``solver="newton-cg"``. arraygrad: ``ag.hvp``
    (forward over reverse, docs/transforms.md); PyTorch: double backward
    (``autograd.grad`` with ``create_graph=True``, then of ``g`` against ``v``); hand-written:
    ``X^T (p (1 - p) X v) / n + l2 v``, sklearn's product."""

    key, title, source = "hvp", "Hessian-vector product, logistic loss", \
        "sklearn LinearModelLoss.gradient_hessian_product"

    def make(self, rng, quick):
        n, p = (200, 10) if quick else (5000, 100)
        X = rng.standard_normal((n, p))
        y = (rng.uniform(size=n) < 0.5).astype(np.float64)
        return [0.1 * rng.standard_normal(p)], {"X": X, "y": y, "l2": 1.0 / n,
                                               "v": rng.standard_normal(p)}

    @staticmethod
    def loss(xp, params, d):
        (w,) = params
        raw = d["X"] @ w
        return (xp.mean(xp.logaddexp(xp.zeros_like(raw), raw) - d["y"] * raw)
                + 0.5 * d["l2"] * xp.sum(w * w))

    def run_arraygrad(self, lib):
        f = lambda w: self.loss(lib.xp, [w], self.data)  # noqa: E731
        _, (hv,) = lib.ag.hvp(f, (self.params[0],), (self.data["v"],))
        return [np.asarray(hv)]

    def run_torch(self, lib):
        torch = lib.torch
        w = torch.from_numpy(self.params[0]).requires_grad_()
        (g,) = torch.autograd.grad(self.loss(lib.xp, [w], self.tdata), w, create_graph=True)
        (hv,) = torch.autograd.grad(g, w, grad_outputs=self.tdata["v"])
        return [hv.numpy()]

    @staticmethod
    def hand(params, d):
        (w,) = params
        X, v = d["X"], d["v"]
        raw = X @ w
        value = np.mean(np.logaddexp(0, raw) - d["y"] * raw)  # noqa: F841
        p = 1 / (1 + np.exp(-raw))
        return [X.T @ (p * (1 - p) * (X @ v)) / len(X) + d["l2"] * v]


class BatchedLinalg(Workload):
    """Batched small linear algebra, as in Kalman filters: for 1,000 innovations r with
    covariance ``S = M M^T + I`` (4x4), the Gaussian negative log-likelihood
    ``0.5 r^T S^-1 r + 0.5 log det S`` (``solve``, ``slogdet``) plus a gain-like term
    ``sum(C * inv(S))``; the filter's update (e.g. filterpy's ``KalmanFilter.update``)."""

    key, title, source = "batched_linalg", "1000 x 4x4: solve, slogdet, inv", \
        "Kalman filter likelihood"

    def make(self, rng, quick):
        N = 10 if quick else 1000
        params = [0.5 * rng.standard_normal((N, 4, 4)), rng.standard_normal((N, 4, 1))]
        return params, {"eye": np.eye(4), "C": rng.standard_normal((N, 4, 4))}

    @staticmethod
    def loss(xp, params, d):
        M, r = params
        S = M @ xp.matrix_transpose(M) + d["eye"]
        nll = 0.5 * xp.sum(r * xp.linalg.solve(S, r)) + 0.5 * xp.sum(
            xp.linalg.slogdet(S).logabsdet)
        return nll + xp.sum(d["C"] * xp.linalg.inv(S))

    @staticmethod
    def hand(params, d):
        M, r = params
        S = M @ M.swapaxes(-1, -2) + d["eye"]
        Si = np.linalg.inv(S)
        z = Si @ r
        value = (0.5 * np.sum(r * z) + 0.5 * np.sum(np.linalg.slogdet(S)[1])  # noqa: F841
                 + np.sum(d["C"] * Si))
        gS = 0.5 * Si - 0.5 * z @ z.swapaxes(-1, -2) - Si @ d["C"] @ Si
        return [(gS + gS.swapaxes(-1, -2)) @ M, z]


class MMD(Workload):
    """Squared maximum mean discrepancy with a Gaussian kernel (biased estimator, Gretton et al.
    2012), as generative moment-matching networks train (Li, Swersky & Zemel 2015): pairwise
    differences by broadcasting, ``x[:, None, :] - y[None, :, :]``, 500x3 generated points
    against 400x3 data; the gradient in the generated points."""

    key, title, source = "mmd", "MMD^2, Gaussian kernel, 500x3 vs 400x3", "Gretton et al. 2012"

    def make(self, rng, quick):
        n, m = (20, 15) if quick else (500, 400)
        return [rng.standard_normal((n, 3))], {"y": 0.5 + rng.standard_normal((m, 3)),
                                               "h2": 2.0}

    @staticmethod
    def loss(xp, params, d):
        (x,) = params
        y, h2 = d["y"], d["h2"]

        def kernel_mean(a, b):
            diff = a[:, None, :] - b[None, :, :]
            return xp.mean(xp.exp(-xp.sum(diff * diff, axis=-1) / h2))

        return kernel_mean(x, x) + kernel_mean(y, y) - 2 * kernel_mean(x, y)

    @staticmethod
    def hand(params, d):
        (x,) = params
        y, h2 = d["y"], d["h2"]

        def kernel(a, b):
            diff = a[:, None, :] - b[None, :, :]
            return np.exp(-np.sum(diff * diff, axis=-1) / h2)

        Kxx, Kyy, Kxy = kernel(x, x), kernel(y, y), kernel(x, y)
        value = Kxx.mean() + Kyy.mean() - 2 * Kxy.mean()  # noqa: F841
        n, m = len(x), len(y)
        # d/dx_i of K(x_i, b_j) = -2 K_ij (x_i - b_j) / h2; Kxx has x on both sides.
        gxx = -4 / (h2 * n * n) * (x * Kxx.sum(axis=1)[:, None] - Kxx @ x)
        gxy = 4 / (h2 * n * m) * (x * Kxy.sum(axis=1)[:, None] - Kxy @ y)
        return [gxx + gxy]


class MLPDigits(Workload):
    """One training step's loss and gradients of scikit-learn's ``MLPClassifier`` defaults on
    its digits (sklearn/neural_network/_multilayer_perceptron.py: one hidden layer of 100 ReLU
    units, softmax and log loss, ``alpha=1e-4`` L2 penalty ``alpha / 2 * sum(W^2) / n``, batch
    200); as examples/mlp_digits.py trains with arraygrad (there with tanh). Without
    scikit-learn's data file (``digits_file``), random pixels of the digits' shape."""

    key, title, source = "mlp_digits", "MLP 64-100-10 ReLU step on digits, batch 200", \
        "sklearn MLPClassifier / examples/mlp_digits.py"

    def make(self, rng, quick):
        n, hidden = (40, 16) if quick else (200, 100)
        path = digits_file()
        if path is not None:
            table = np.loadtxt(path, delimiter=",")  # what sklearn's load_digits reads
            X, labels = table[:, :-1] / 16.0, table[:, -1].astype(np.int64)
        else:
            X, labels = rng.integers(0, 17, (1797, 64)) / 16.0, rng.integers(0, 10, 1797)
        batch = rng.permutation(len(X))[:n]
        params = []
        for n_in, n_out in ((64, hidden), (hidden, 10)):
            bound = math.sqrt(6 / (n_in + n_out))  # sklearn's Glorot initialisation
            params += [rng.uniform(-bound, bound, (n_in, n_out)), rng.uniform(-bound, bound, n_out)]
        return params, {"X": X[batch], "onehot": np.eye(10)[labels[batch]], "alpha": 1e-4}

    @staticmethod
    def loss(xp, params, d):
        W1, b1, W2, b2 = params
        h = xp.maximum(d["X"] @ W1 + b1, 0.0)
        z = h @ W2 + b2
        shifted = z - xp.max(z, axis=1, keepdims=True)
        log_p = shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
        n = d["X"].shape[0]
        penalty = 0.5 * d["alpha"] * (xp.sum(W1 * W1) + xp.sum(W2 * W2)) / n
        return -xp.sum(d["onehot"] * log_p) / n + penalty

    @staticmethod
    def hand(params, d):
        W1, b1, W2, b2 = params
        X, onehot, alpha, n = d["X"], d["onehot"], d["alpha"], len(d["X"])
        h = np.maximum(X @ W1 + b1, 0.0)
        z = h @ W2 + b2
        e = np.exp(z - z.max(axis=1, keepdims=True))
        total = e.sum(axis=1, keepdims=True)
        value = (-np.sum(onehot * (z - z.max(axis=1, keepdims=True) - np.log(total))) / n  # noqa
                 + 0.5 * alpha * (np.sum(W1 * W1) + np.sum(W2 * W2)) / n)
        dz = (e / total - onehot) / n
        dh = (dz @ W2.T) * (h > 0)
        return [X.T @ dh + alpha * W1 / n, dh.sum(axis=0), h.T @ dz + alpha * W2 / n,
                dz.sum(axis=0)]


def digits_file():
    """scikit-learn's digits (``sklearn/datasets/data/digits.csv.gz``: 1,797 rows of 64 pixels
    and the label), from ``BENCH_BROAD_DIGITS`` (set by ``bench.compare``, whose environment
    for the other revision has no scikit-learn) or this environment's scikit-learn; None
    without either."""
    if os.environ.get("BENCH_BROAD_DIGITS"):
        return Path(os.environ["BENCH_BROAD_DIGITS"])
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data" / "digits.csv.gz"
    return path if path.exists() else None


class Poisson(Workload):
    """scikit-learn's PoissonRegressor objective: ``LinearModelLoss(HalfPoissonLoss)``, per
    sample ``exp(raw) - y raw`` (log link), mean, plus ``alpha / 2 ||w||^2``
    (sklearn/linear_model/_glm/glm.py, sklearn/_loss/loss.py)."""

    key, title, source = "poisson", "Poisson GLM half deviance + L2", "sklearn HalfPoissonLoss"

    def make(self, rng, quick):
        n, p = (300, 5) if quick else (20000, 20)
        X = rng.standard_normal((n, p)) / math.sqrt(p)
        y = rng.poisson(np.exp(X @ rng.standard_normal(p))).astype(np.float64)
        return [0.1 * rng.standard_normal(p), np.array(0.1)], {"X": X, "y": y, "alpha": 1.0}

    @staticmethod
    def loss(xp, params, d):
        w, b = params
        raw = d["X"] @ w + b
        return xp.mean(xp.exp(raw) - d["y"] * raw) + 0.5 * d["alpha"] * xp.sum(w * w)

    @staticmethod
    def hand(params, d):
        w, b = params
        raw = d["X"] @ w + b
        mu = np.exp(raw)
        value = np.mean(mu - d["y"] * raw) + 0.5 * d["alpha"] * (w @ w)  # noqa: F841
        g = (mu - d["y"]) / len(raw)
        return [d["X"].T @ g + d["alpha"] * w, np.asarray(g.sum())]


class Springs(Workload):
    """Differentiable simulation: a mass-spring lattice (DiffTaichi's ``mass_spring.py``, Hu et
    al. 2020) integrated by symplectic Euler for 100 steps (Hooke springs, gravity, damping),
    loss: the squared distance of the final centre of mass to a target; gradients in every
    spring's stiffness and the initial velocities. Springs gather their ends with ``take``
    and scatter forces back through a constant incidence matrix (the standard has no
    scatter-add)."""

    key, title, source = "springs", "mass-spring simulation, 100 steps unrolled", \
        "DiffTaichi mass_spring"

    def make(self, rng, quick):
        rows, cols, steps = (3, 3, 10) if quick else (6, 5, 100)
        grid = np.array([(i, j) for i in range(rows) for j in range(cols)], dtype=np.float64)
        index = {(i, j): i * cols + j for i in range(rows) for j in range(cols)}
        pairs = [(index[i, j], index[i + di, j + dj]) for i in range(rows) for j in range(cols)
                 for di, dj in ((0, 1), (1, 0), (1, 1), (1, -1)) if (i + di, j + dj) in index]
        a, b = (np.array(side, dtype=np.int64) for side in zip(*pairs))
        x0 = 0.1 * grid + np.array([0.0, 1.0])
        G = np.zeros((len(x0), len(pairs)))
        G[a, np.arange(len(pairs))], G[b, np.arange(len(pairs))] = -1.0, 1.0
        data = {"x0": x0, "a": a, "b": b, "G": G, "rest": np.linalg.norm(x0[a] - x0[b], axis=1),
                "mass": 1.0, "dt": 0.01, "damping": 0.99, "gravity": np.array([0.0, -9.8]),
                "target": np.array([0.5, 0.8]), "steps": steps}
        return [rng.uniform(100.0, 200.0, len(pairs)), 0.5 * rng.standard_normal(x0.shape)], data

    @staticmethod
    def loss(xp, params, d):
        k, v = params
        x, dt = d["x0"], d["dt"]
        for _ in range(d["steps"]):
            diff = xp.take(x, d["a"], axis=0) - xp.take(x, d["b"], axis=0)
            length = xp.sqrt(xp.sum(diff * diff, axis=1))
            tension = k * (1.0 - d["rest"] / length)
            force = d["G"] @ (tension[:, None] * diff)
            v = d["damping"] * v + dt * (force / d["mass"] + d["gravity"])
            x = x + dt * v
        r = xp.mean(x, axis=0) - d["target"]
        return xp.sum(r * r)

    @staticmethod
    def hand(params, d):
        k, v = params
        x, dt, G, rest = d["x0"], d["dt"], d["G"], d["rest"]
        saved = []
        for _ in range(d["steps"]):
            diff = x[d["a"]] - x[d["b"]]
            length = np.sqrt(np.sum(diff * diff, axis=1))
            tension = k * (1.0 - rest / length)
            saved.append((diff, length, tension))
            v = d["damping"] * v + dt * (G @ (tension[:, None] * diff) / d["mass"] + d["gravity"])
            x = x + dt * v
        r = x.mean(axis=0) - d["target"]
        value = r @ r  # noqa: F841
        gx = np.broadcast_to(2 * r / len(x), x.shape).copy()
        gv, gk = np.zeros_like(v), np.zeros_like(k)
        for diff, length, tension in reversed(saved):
            gv_new = gv + dt * gx
            gv = d["damping"] * gv_new
            g_td = G.T @ (dt / d["mass"] * gv_new)
            g_tension = np.sum(g_td * diff, axis=1)
            gk += g_tension * (1.0 - rest / length)
            g_diff = tension[:, None] * g_td + (g_tension * k * rest / length**3)[:, None] * diff
            gx = gx - G @ g_diff
        return [gk, gv]


class TotalVariation(Workload):
    """Total-variation image denoising, the Rudin-Osher-Fatemi objective
    ``0.5 ||u - f||^2 + lambda sum sqrt(dx^2 + dy^2 + eps)`` (isotropic, smoothed) on a 256x256
    image, the differences by slicing (``u[1:, :-1] - u[:-1, :-1]``), as
    ``skimage.restoration.denoise_tv_chambolle`` minimises."""

    key, title, source = "tv", "TV denoising (ROF), 256x256, slicing", "Rudin-Osher-Fatemi 1992"

    def make(self, rng, quick):
        n = 16 if quick else 256
        clean = (np.add.outer(np.arange(n), np.arange(n)) % 64 < 32).astype(np.float64)
        f = clean + 0.3 * rng.standard_normal((n, n))
        return [f + 0.1 * rng.standard_normal((n, n))], {"f": f, "lam": 0.2, "eps": 1e-3}

    @staticmethod
    def loss(xp, params, d):
        (u,) = params
        dx = u[1:, :-1] - u[:-1, :-1]
        dy = u[:-1, 1:] - u[:-1, :-1]
        r = u - d["f"]
        return 0.5 * xp.sum(r * r) + d["lam"] * xp.sum(xp.sqrt(dx * dx + dy * dy + d["eps"]))

    @staticmethod
    def hand(params, d):
        (u,) = params
        dx = u[1:, :-1] - u[:-1, :-1]
        dy = u[:-1, 1:] - u[:-1, :-1]
        magnitude = np.sqrt(dx * dx + dy * dy + d["eps"])
        value = 0.5 * np.sum((u - d["f"]) ** 2) + d["lam"] * magnitude.sum()  # noqa: F841
        gx, gy = d["lam"] * dx / magnitude, d["lam"] * dy / magnitude
        g = u - d["f"]
        g[1:, :-1] += gx
        g[:-1, 1:] += gy
        g[:-1, :-1] -= gx + gy
        return [g]


class ScipyCode(Workload):
    """SciPy's own Array API code on Variables and tensors (``SCIPY_ARRAY_API=1``): a softmax
    classifier on batch-standardised scores, ``Z = scipy.stats.zscore(X @ W, axis=0)`` (batch
    normalisation without its affine part, Ioffe & Szegedy 2015), loss
    ``mean(scipy.special.logsumexp(Z, axis=1) - Z[y])``. Hand-written: SciPy's forward on NumPy
    and the gradient by hand (as bench/__main__.py's I1)."""

    key, title, source = "scipy", "scipy.stats.zscore + scipy.special.logsumexp", \
        "SciPy (SCIPY_ARRAY_API=1)"

    def make(self, rng, quick):
        n, p, k = (100, 6, 3) if quick else (2000, 32, 10)
        X = rng.standard_normal((n, p))
        return [rng.standard_normal((p, k))], {"X": X,
                                               "onehot": np.eye(k)[rng.integers(0, k, n)]}

    @staticmethod
    def loss(xp, params, d):
        import scipy.special
        import scipy.stats

        (W,) = params
        Z = scipy.stats.zscore(d["X"] @ W, axis=0)
        n = d["X"].shape[0]
        return xp.sum(scipy.special.logsumexp(Z, axis=1) - xp.sum(d["onehot"] * Z, axis=1)) / n

    @staticmethod
    def hand(params, d):
        import scipy.special
        import scipy.stats

        (W,) = params
        X, onehot, n = d["X"], d["onehot"], len(d["X"])
        raw = X @ W
        Z = scipy.stats.zscore(raw, axis=0)
        lse = scipy.special.logsumexp(Z, axis=1)
        value = np.sum(lse - np.sum(onehot * Z, axis=1)) / n  # noqa: F841
        gZ = (np.exp(Z - lse[:, None]) - onehot) / n
        graw = (gZ - gZ.mean(axis=0) - Z * np.mean(gZ * Z, axis=0)) / raw.std(axis=0)
        return [X.T @ graw]


WORKLOADS = [LogReg, Ridge, Attention, GaussianProcess, RNN, LBFGS, HVP, BatchedLinalg, MMD,
             MLPDigits, Poisson, Springs, TotalVariation, ScipyCode]


# ------------------------------------------------------------------------------ checking
def check_close(what, got, expected, rtol=1e-6):
    """Fail loudly where two libraries' results differ."""
    if len(got) != len(expected):
        raise GradientMismatch(f"{what}: {len(got)} results, expected {len(expected)}")
    for i, (g, e) in enumerate(zip(got, expected)):
        g, e = np.asarray(g, dtype=np.float64), np.asarray(e, dtype=np.float64)
        scale = max(1.0, float(np.max(np.abs(e)))) if e.size else 1.0
        if g.shape != e.shape or not np.allclose(g, e, rtol=rtol, atol=rtol * 1e-3 * scale):
            worst = float(np.max(np.abs(g - e))) if g.shape == e.shape else float("nan")
            raise GradientMismatch(f"{what}: result {i} differs from PyTorch's (shapes "
                                   f"{g.shape} and {e.shape}, largest difference {worst:.3g})")


class GradientMismatch(AssertionError):
    pass


# ------------------------------------------------------------------------------ memory
def traced_peak_mib(function):
    """The peak of memory traced (NumPy buffers and Python objects) while ``function`` runs."""
    gc.collect()
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def resident_peak_mib(function):
    """The growth of the resident high-water mark while ``function`` runs (Linux: freed memory
    handed back with malloc_trim, then the mark reset through /proc/self/clear_refs), or None
    where that cannot be done."""
    try:
        gc.collect()
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
        before = HARNESS._memory_kib("VmRSS")
    except (OSError, RuntimeError, AttributeError):
        return None
    function()
    return max(0.0, (HARNESS._memory_kib("VmHWM") - before) / 1024)


# ------------------------------------------------------------------------------ running
def run(args):
    keys = [w.key for w in WORKLOADS]
    wanted = keys if not args.only else [k.strip().lower() for k in args.only.split(",")]
    unknown = set(wanted) - set(keys)
    if unknown:
        raise SystemExit(f"unknown workload {', '.join(sorted(unknown))}: choose from "
                         f"{', '.join(keys)}")
    if importlib.util.find_spec("torch") is None:
        raise SystemExit("bench.broad checks every gradient against PyTorch's: pip install torch")
    ag_lib, torch_lib = ArraygradLib(), TorchLib()
    import scipy.optimize  # noqa: F401  (imported before the collector's freeze, as torch)

    gc.collect()
    gc.freeze()  # as bench/__main__.py: a full collection does not scan torch's modules
    rounds = args.rounds if args.rounds is not None else 1 if args.quick else 5
    in_a_row = 1 if args.quick and args.rounds is None else 3
    print(f"threads pinned to 1; best of {in_a_row} runs in a row, libraries taking turns, "
          f"{rounds} round(s){' (--quick: small sizes)' if args.quick else ''}; "
          f"gradients checked against PyTorch's first\n{HARNESS.machine()}\n", flush=True)
    rows, results, failures = [], [], []
    for workload_class in WORKLOADS:
        if workload_class.key not in wanted:
            continue
        key = workload_class.key
        try:
            workload = workload_class(args.quick)
            workload.prepare(ag_lib, torch_lib)
            runs = {"PyTorch": lambda: workload.run_torch(torch_lib),
                    "arraygrad": lambda: workload.run_arraygrad(ag_lib)}
            if workload.hand is not None or type(workload).run_hand is not Workload.run_hand:
                runs[HAND] = workload.run_hand
            workload.check(runs)
        except Exception as error:  # a wrong gradient, or a workload a library cannot run
            failures.append(key)
            print(f"FAILED {key}: {error}", flush=True)
            if not isinstance(error, GradientMismatch):
                traceback.print_exc()
            continue
        names = list(runs)
        times = dict(zip(names, best_times([runs[n] for n in names], rounds, in_a_row)))
        peaks = {"arraygrad": traced_peak_mib(runs["arraygrad"]),
                 HAND: traced_peak_mib(runs[HAND]) if HAND in runs else None,
                 "PyTorch": resident_peak_mib(runs["PyTorch"])}
        for name in names:
            results.append((key, "time", name, times[name] * 1e3, "ms",
                            times[name] / times["PyTorch"]))
        for name, count in getattr(workload, "evaluations", {}).items():
            results.append((key, "evaluations", name, float(count), "", None))
        for name in ("PyTorch", "arraygrad", HAND):
            if peaks[name] is not None:
                results.append((key, "peak", name, peaks[name], "MiB", None))
        rows.append((workload, times, peaks))
        print(f"  {key:<15} arraygrad {times['arraygrad'] * 1e3:9.3f} ms   PyTorch "
              f"{times['PyTorch'] * 1e3:9.3f} ms   ratio "
              f"{times['arraygrad'] / times['PyTorch']:5.2f}", flush=True)
    print()
    print_table(rows)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"machine": HARNESS.machine(), "workloads": [r[0].key for r in rows],
                       "failures": failures, "results": results}, out)
    if failures:
        print(f"\nFAILED: {', '.join(failures)}")
        return 1
    return 0


def print_table(rows):
    def ms(seconds):
        return "—" if seconds is None else f"{seconds * 1e3:.3f}"

    def mib(value):
        return "—" if value is None else f"{value:.1f}"

    header = ("workload", "source", "arraygrad ms", "PyTorch ms", "ag/torch", "hand ms",
              "ag/hand", "ag MiB", "torch MiB", "hand MiB")
    lines = [header]
    for workload, times, peaks in rows:
        hand = times.get(HAND)
        lines.append((workload.key, workload.source, ms(times["arraygrad"]),
                      ms(times["PyTorch"]), f"{times['arraygrad'] / times['PyTorch']:.2f}",
                      ms(hand), "—" if hand is None else f"{times['arraygrad'] / hand:.2f}",
                      mib(peaks["arraygrad"]), mib(peaks["PyTorch"]), mib(peaks[HAND])))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for number, line in enumerate(lines):
        print("  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                        for i, (cell, w) in enumerate(zip(line, widths))))
        if number == 0:
            print("  ".join("-" * w for w in widths))
    print("\nMiB: peak added while one step runs; arraygrad and hand-written NumPy by "
          "tracemalloc, PyTorch by the resident high-water mark (coarser).")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.broad",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 round: a smoke run")
    parser.add_argument("--only", help="comma-separated workloads: " +
                        ",".join(w.key for w in WORKLOADS))
    parser.add_argument("--rounds", type=int, help="rounds of timing (default 5; --quick: 1, "
                                                   "each library once)")
    parser.add_argument("--json", help="also write the results to this file (as python -m "
                                       "bench --json, which python -m bench.compare reads)")
    parser.add_argument("--libraries", help=argparse.SUPPRESS)  # (bench.compare passes it:
    # all three always run, PyTorch being the reference of every check)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
