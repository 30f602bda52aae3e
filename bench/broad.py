"""A broad benchmark: sixteen workloads that users run, each from a named source, timed side by
side in one run through gradients written by hand with NumPy, PyTorch eager (CPU,
torch.autograd), HIPS autograd, arraygrad on NumPy and arraygrad on torch, with the peak memory
each adds and the ratios of issue 50's goals.

Every loss is written once against the Array API (``xp``): arraygrad's namespaces
``ag.namespace("numpy")`` and ``ag.namespace("torch")`` on Variables, ``array_api_compat.torch``
on tensors, ``autograd.numpy`` under the standard's names (``HipsNames``). Before anything is
timed, every library's gradients are checked against PyTorch's; a disagreement, or a workload
arraygrad (either backend) or the hand-written NumPy cannot run, is reported as FAILED in the
table and the run exits 1; a workload HIPS autograd cannot run is n/a, with the reason.
BLAS and PyTorch threads are pinned to 1; times are the best over rounds in which each library
runs 3 times in a row, the libraries taking turns (``bench/__main__.py``'s ``best_times``).
Peak memory, the same way for every library: the growth of the resident high-water mark
(``VmHWM``, reset through ``/proc/self/clear_refs`` after ``malloc_trim``), the least of 3; and,
for arraygrad on NumPy and hand-written NumPy, ``tracemalloc``'s peak as well (NumPy reports its
buffers to it; PyTorch's allocator does not).

    python -m bench.broad                      # all workloads, 5 rounds
    python -m bench.broad --rounds 3 --write-results   # bench/README.md's broad results
    python -m bench.broad --quick              # small sizes, 1 round: a smoke run
    python -m bench.broad --only gp,rnn --json out.json
    python -m bench.compare HEAD~3 --module bench.broad   # before/after on two revisions

The workloads (``WORKLOADS`` below; each class's docstring names its source):
logreg, bcast_logistic, ridge, attention, gp, rnn, lbfgs, lbfgs_logreg, hvp, batched_linalg,
mmd, mlp_digits, poisson, springs, tv, scipy.
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
HAND = "hand-written NumPy"
TORCH = "PyTorch"
AG = "arraygrad"
AG_TORCH = "arraygrad (torch)"
HIPS = "HIPS autograd"
COLUMNS = (HAND, TORCH, HIPS, AG, AG_TORCH)  # the order of the tables (timing: the same)


class ArraygradLib:
    """arraygrad on its NumPy backend: NumPy arrays in Variables."""

    name, kind, tensors = AG, "arraygrad", False

    def __init__(self):
        import arraygrad as ag

        self.ag, self.xp = ag, ag.namespace("numpy")

    def array(self, a):
        return a

    def to_numpy(self, a):
        return np.asarray(a)

    def variables(self, arrays):
        return [self.ag.Variable(self.array(a), requires_grad=True) for a in arrays]

    def grads(self, variables):
        return [self.to_numpy(v.grad.data) for v in variables]

    def scipy_fun(self, f):
        """``f(xp, x)``, a scalar, as SciPy's ``minimize(jac=True)`` calls it: NumPy in, the
        value and the gradient out."""
        value_and_grad = self.ag.value_and_grad(lambda x: f(self.xp, x))

        def fun(x):
            value, gradient = value_and_grad(self.array(x))
            return float(value), np.asarray(self.to_numpy(gradient), dtype=np.float64)

        return fun


class ArraygradTorchLib(ArraygradLib):
    """arraygrad on its torch backend (``ag.namespace("torch")``): CPU tensors in Variables,
    the same loss code; the constants are tensors, as PyTorch's."""

    name, kind, tensors = AG_TORCH, "arraygrad", True

    def __init__(self):
        import arraygrad as ag
        import torch

        torch.set_num_threads(1)
        self.ag, self.torch, self.xp = ag, torch, ag.namespace("torch")

    def array(self, a):
        return self.torch.from_numpy(a) if isinstance(a, np.ndarray) else a

    def to_numpy(self, a):
        return a.detach().numpy() if isinstance(a, self.torch.Tensor) else np.asarray(a)


class TorchLib:
    """PyTorch eager on CPU tensors (``array_api_compat.torch``), torch.autograd."""

    name, kind, tensors = TORCH, "torch", True

    def __init__(self):
        import array_api_compat.torch as txp
        import torch

        torch.set_num_threads(1)
        self.torch, self.xp = torch, txp
        # SciPy's vendored array-api-compat calls torch.asarray on tensors that require grad.
        warnings.filterwarnings("ignore", message="torch.asarray: unspecified requires_grad")

    def scipy_fun(self, f):
        def fun(x):
            t = self.torch.from_numpy(x).requires_grad_()
            value = f(self.xp, t)
            value.backward()
            return value.item(), t.grad.numpy()

        return fun


def as_tensors(torch, data):
    """A workload's constants as tensors (once, before timing): what PyTorch and arraygrad's
    torch backend compute with."""
    return {key: torch.from_numpy(value) if isinstance(value, np.ndarray)
            and value.dtype.kind in "fiub" else value for key, value in data.items()}


class HipsLib:
    """HIPS autograd (``autograd.grad``) on ``autograd.numpy``, under the Array API's names
    (``HipsNames``): the workloads' loss code as written."""

    name, kind, tensors = HIPS, "hips", False

    def __init__(self):
        import autograd
        import autograd.numpy as anp

        self.autograd, self.xp = autograd, HipsNames(anp)

    def scipy_fun(self, f):
        value_and_grad = self.autograd.value_and_grad(lambda x: f(self.xp, x))

        def fun(x):
            value, gradient = value_and_grad(x)
            return float(value), np.asarray(gradient, dtype=np.float64)

        return fun


class HipsNames:
    """``autograd.numpy`` under the names of the Array API standard that the workloads use
    where NumPy's differ (``permute_dims``, ``matrix_transpose``, ``linalg.diagonal``,
    ``slogdet``'s named result) or where autograd has no VJP (``take``: indexing instead);
    every other name is autograd.numpy's own."""

    def __init__(self, anp):
        self._np = anp
        self.linalg = _HipsLinalg(anp)

    def __getattr__(self, name):
        return getattr(self._np, name)

    def permute_dims(self, x, axes):
        return self._np.transpose(x, axes)

    def matrix_transpose(self, x):
        return self._np.swapaxes(x, -1, -2)

    def take(self, x, indices, axis=None):  # (autograd has no VJP of take in x: index it)
        if axis is None:
            return self._np.ravel(x)[indices]
        return x[(slice(None),) * (axis % self._np.ndim(x)) + (indices,)]


class _HipsLinalg:
    def __init__(self, anp):
        self._np = anp

    def __getattr__(self, name):
        return getattr(self._np.linalg, name)

    def diagonal(self, x):  # (autograd's VJP takes these axes only; the same diagonal)
        return self._np.diagonal(x, axis1=-1, axis2=-2)

    def slogdet(self, x):
        sign, logabsdet = self._np.linalg.slogdet(x)
        return SlogdetResult(sign, logabsdet)


class SlogdetResult:
    def __init__(self, sign, logabsdet):
        self.sign, self.logabsdet = sign, logabsdet


LIBRARIES = {AG: ArraygradLib, AG_TORCH: ArraygradTorchLib, TORCH: TorchLib, HIPS: HipsLib}
MODULES = {AG_TORCH: "torch", TORCH: "torch", HIPS: "autograd"}


# ------------------------------------------------------------------------------ the workloads
class Workload:
    """A scalar loss of ``params`` (float64 arrays) and constant ``data``; its gradient in every
    parameter. Subclasses set the sizes in ``make`` and write ``loss`` once against ``xp``;
    ``hand`` (the loss's value and its gradients by hand with NumPy) where it is short."""

    key = title = source = ""
    hand = None  # hand(params, data) -> list of gradients (computing the value as well)
    not_for = {}  # library name -> why that library cannot run this workload's code

    def __init__(self, quick):
        self.params, self.data = self.make(np.random.default_rng(0), quick)

    def prepare(self, libs):
        """Once, before checking and timing: the constants as tensors."""
        torch = next((lib.torch for lib in libs.values() if lib.tensors), None)
        self.tdata = as_tensors(torch, self.data) if torch is not None else None

    def data_for(self, lib):
        return self.tdata if lib.tensors else self.data

    def has_hand(self):
        return self.hand is not None

    def runner(self, lib):
        """The step ``lib`` runs (its gradients as NumPy arrays); None for hand-written NumPy
        (``lib`` None) where there is no hand-written gradient."""
        if lib is None:
            return (lambda: self.hand(self.params, self.data)) if self.has_hand() else None
        run = getattr(self, "run_" + lib.kind)
        return lambda: run(lib)

    def run_arraygrad(self, lib):  # either backend
        variables = lib.variables(self.params)
        self.loss(lib.xp, variables, self.data_for(lib)).backward()
        return lib.grads(variables)

    def run_torch(self, lib):
        tensors = [lib.torch.from_numpy(p).requires_grad_() for p in self.params]
        self.loss(lib.xp, tensors, self.tdata).backward()
        return [t.grad.numpy() for t in tensors]

    def run_hips(self, lib):
        data = self.data
        return list(lib.autograd.grad(lambda ps: self.loss(lib.xp, ps, data))(list(self.params)))

    def check(self, runs):
        """Every library's gradients against PyTorch's, before anything is timed: a dict, for
        each library that differs or cannot run, of what went wrong."""
        expected = runs[TORCH]()
        problems = {}
        for name, run in runs.items():
            if name != TORCH:
                try:
                    check_close(f"{self.key}: {name}", run(), expected)
                except Exception as error:  # a wrong gradient, or code a library cannot run
                    problems[name] = error
        return problems


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
        return LogReg.value_and_grads(params, d)[1]

    @staticmethod
    def value_and_grads(params, d):
        W, b = params
        raw = d["X"] @ W.T + b
        m = raw.max(axis=1, keepdims=True)
        e = np.exp(raw - m)
        total = e.sum(axis=1, keepdims=True)
        per_sample = np.log(total[:, 0]) + m[:, 0] - np.sum(d["onehot"] * raw, axis=1)
        value = d["sw"] @ per_sample / d["sw_sum"] + 0.5 * d["l2"] * np.sum(W * W)
        graw = (e / total - d["onehot"]) * (d["sw"] / d["sw_sum"])[:, None]
        return value, [graw.T @ d["X"] + d["l2"] * W, graw.sum(axis=0)]


class BroadcastLogistic(Workload):
    """A broadcast-heavy logistic loss on 2^20 values: the two-parameter logistic item-response
    model (Birnbaum 1968; as ``mirt`` and ``py-irt`` fit it), ``P(y_ij = 1) =
    sigmoid(a_j (theta_i - b_j))`` for 1,024 persons and 1,024 items, every logit built by
    broadcasting a row against a column, mean binary log loss (``logaddexp(0, z) - y z``) plus a
    standard normal prior on the abilities; gradients in ``theta``, ``b`` and ``a``."""

    key, title, source = "bcast_logistic", "broadcast logistic loss (2PL), 1024x1024 = 2^20", \
        "Birnbaum 1968 2PL / mirt"

    def make(self, rng, quick):
        n, m = (32, 32) if quick else (1024, 1024)
        theta, b, a = rng.standard_normal(n), rng.standard_normal(m), rng.uniform(0.5, 2.0, m)
        p = 1.0 / (1.0 + np.exp(-a * (theta[:, None] - b)))
        y = (rng.uniform(size=(n, m)) < p).astype(np.float64)
        params = [0.1 * rng.standard_normal(n), 0.1 * rng.standard_normal(m), np.ones(m)]
        return params, {"y": y, "count": y.size}

    @staticmethod
    def loss(xp, params, d):
        theta, b, a = params
        z = a[None, :] * (theta[:, None] - b[None, :])
        nll = xp.mean(xp.logaddexp(xp.zeros_like(z), z) - d["y"] * z)
        return nll + 0.5 * xp.sum(theta * theta) / d["count"]

    @staticmethod
    def hand(params, d):
        theta, b, a = params
        y = d["y"]
        diff = theta[:, None] - b
        z = a * diff
        value = np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * (theta @ theta) / y.size  # noqa
        g = (1.0 / (1.0 + np.exp(-z)) - y) / y.size
        ga = g * a
        return [ga.sum(axis=1) + theta / y.size, -ga.sum(axis=0), np.sum(g * diff, axis=0)]


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

    key, title, source = "gp", "GP neg. log marginal likelihood, n=400", \
        "GPML Alg. 2.1 / sklearn GPR"

    def make(self, rng, quick):
        n = 30 if quick else 400
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
    formula of PyTorch's ``torch.nn.RNN`` docs), 200 steps, batch 32, 16 inputs, hidden 64; a
    linear read-out of the last state, mean squared error; backpropagation through time."""

    key, title, source = "rnn", "Elman RNN, 200 steps, batch 32, hidden 64", "torch.nn.RNN docs"

    def make(self, rng, quick):
        T, B, I, H, O = (5, 4, 3, 6, 2) if quick else (200, 32, 16, 64, 4)
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
    Checked: every library's value and gradient at every point any library's minimize visits."""

    key, title, source = "lbfgs", "SciPy L-BFGS-B, Rosenbrock 1000-d, 100 its", \
        "scipy.optimize / examples/scipy_minimize.py"

    def make(self, rng, quick):
        n, iterations = (10, 10) if quick else (1000, 100)
        x0 = np.full(n, -1.2)
        x0[1::2] = 1.0
        return [x0], {"maxiter": iterations}

    options = {"maxfun": 10**6, "gtol": 0.0, "ftol": 0.0}

    @staticmethod
    def objective(xp, x, d):
        return rosenbrock(xp, x)

    @staticmethod
    def hand_fun(x, d):
        import scipy.optimize

        return scipy.optimize.rosen(x), scipy.optimize.rosen_der(x)

    def prepare(self, libs):
        super().prepare(libs)
        self.funs = {HAND: lambda x: self.hand_fun(x, self.data)}
        for name, lib in libs.items():
            data = self.data_for(lib)
            self.funs[name] = lib.scipy_fun(lambda xp, x, data=data: self.objective(xp, x, data))
        self.evaluations = {}

    def runner(self, lib):
        name = HAND if lib is None else lib.name
        return lambda: self._minimize(name)

    def _minimize(self, name, fun=None):
        from scipy.optimize import minimize

        result = minimize(fun or self.funs[name], self.params[0], jac=True, method="L-BFGS-B",
                          options={"maxiter": self.data["maxiter"], **self.options})
        self.evaluations[name] = result.nfev
        return [result.x, np.array(result.fun)]

    def check(self, runs):
        """Each library's value and gradient at every point any library's minimize visits,
        against PyTorch's at the same point: the paths themselves part by rounding (Rosenbrock's
        valley), so that the end points and the counts of evaluations differ a little."""
        points, problems = [], {}
        for name in runs:
            fun = self.funs[name]
            try:
                self._minimize(name, lambda x, fun=fun: points.append(x.copy()) or fun(x))
            except Exception as error:
                problems[name] = error
        for x in points:
            value, gradient = self.funs[TORCH](x.copy())
            for name in runs:
                if name != TORCH and name not in problems:
                    try:
                        got = self.funs[name](x.copy())
                        check_close(f"{self.key}: {name} at a point of the path",
                                    [got[0], got[1]], [value, gradient])
                    except Exception as error:
                        problems[name] = error
        print(f"  {self.key}: evaluations of f and its gradient in {self.data['maxiter']} "
              "iterations: " + ", ".join(f"{name} {count}" for name, count in
                                         self.evaluations.items()))
        return problems


class LBFGSLogReg(LBFGS):
    """scikit-learn's ``LogisticRegression(solver="lbfgs")`` fit: ``scipy.optimize.minimize``
    with ``method="L-BFGS-B", jac=True`` and sklearn's options (``maxiter`` 100, ``gtol`` 1e-4,
    ``ftol`` 64 eps, ``maxls`` 50; sklearn/linear_model/_logistic.py) on the multinomial loss
    of ``logreg`` (5,000 x 64, 10 classes, L2, sample weights) in the flattened coefficients
    and intercepts, from zero; the whole ``minimize`` is timed. Hand-written: ``logreg``'s."""

    key, title, source = "lbfgs_logreg", "L-BFGS-B logistic regression, 5000x64, 10 classes", \
        "sklearn LogisticRegression(solver='lbfgs')"
    options = {"maxls": 50, "gtol": 1e-4, "ftol": 64 * np.finfo(float).eps}

    def make(self, rng, quick):
        (W, b), data = LogReg.make(self, rng, quick)
        # Labels that the features predict (a multinomial model, Gumbel-max sampling), so that
        # the fit takes the iterations a real one does (on random labels it stops after four).
        raw = data["X"] @ rng.standard_normal(W.shape).T
        labels = np.argmax(raw + rng.gumbel(size=raw.shape), axis=1)
        data.update(onehot=np.eye(W.shape[0])[labels], maxiter=100, shape=W.shape)
        return [np.zeros(W.size + b.size)], data

    @staticmethod
    def objective(xp, x, d):
        k, p = d["shape"]
        return LogReg.loss(xp, [xp.reshape(x[:k * p], (k, p)), x[k * p:]], d)

    @staticmethod
    def hand_fun(x, d):
        k, p = d["shape"]
        value, (gW, gb) = LogReg.value_and_grads([x[:k * p].reshape(k, p), x[k * p:]], d)
        return value, np.concatenate([gW.ravel(), gb])


class HVP(Workload):
    """Hessian-vector products for Newton-CG: scikit-learn's binary LogisticRegression objective
    (``LinearModelLoss(HalfBinomialLoss)``, ``mean(log(1 + exp(Xw)) - y Xw) + l2/2 ||w||^2``),
    whose ``gradient_hessian_product`` feeds ``solver="newton-cg"``. arraygrad: ``ag.hvp``
    (forward over reverse, docs/transforms.md); HIPS autograd: its ``hessian_vector_product``
    (reverse over reverse); PyTorch: double backward (``autograd.grad`` with
    ``create_graph=True``, then of ``g`` against ``v``); hand-written: ``X^T (p (1 - p) X v) / n
    + l2 v``, sklearn's product."""

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
        data = self.data_for(lib)
        f = lambda w: self.loss(lib.xp, [w], data)  # noqa: E731
        _, (hv,) = lib.ag.hvp(f, (lib.array(self.params[0]),), (lib.array(self.data["v"]),))
        return [lib.to_numpy(hv)]

    def run_hips(self, lib):  # reverse over reverse: autograd's own hessian_vector_product
        f = lambda w: self.loss(lib.xp, [w], self.data)  # noqa: E731
        return [lib.autograd.hessian_vector_product(f)(self.params[0], self.data["v"])]

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
    not_for = {HIPS: "SciPy's Array API code does not take autograd's ArrayBox (no "
                     "__array_namespace__)"}

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


WORKLOADS = [LogReg, BroadcastLogistic, Ridge, Attention, GaussianProcess, RNN, LBFGS,
             LBFGSLogReg, HVP, BatchedLinalg, MMD, MLPDigits, Poisson, Springs, TotalVariation,
             ScipyCode]


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
# --libraries (as python -m bench's, and what bench.compare passes): PyTorch always runs, every
# gradient being checked against its.
LIBRARY_OPTIONS = {"HandNumpy": HAND, "Arraygrad": AG, "ArraygradTorch": AG_TORCH,
                   "HipsAutograd": HIPS, "Torch": TORCH}
GOAL_AG, GOAL_AG_TORCH, GOAL_PEAK = 1.2, 1.3, 1.0
RESULTS_START = ("<!-- broad results: written by `python -m bench.broad --write-results`; "
                 "do not edit by hand -->")
RESULTS_END = "<!-- end of broad results -->"


class Row:
    """One workload's figures: best times (s), peak memory by the resident high-water mark and
    by tracemalloc (MiB), and, for each library that did not run, why (``status``: name ->
    (kind, text), kind "n/a" or "FAILED")."""

    def __init__(self, workload, times, rss, traced, status):
        self.workload, self.times, self.rss, self.traced = workload, times, rss, traced
        self.status = status

    def ratio(self, top, bottom, figures):
        if figures.get(top) is None or not figures.get(bottom):
            return None
        return figures[top] / figures[bottom]

    def ag_time_ratio(self):  # arraygrad on NumPy against the slower of NumPy and PyTorch
        limits = [self.times[n] for n in (HAND, TORCH) if self.times.get(n) is not None]
        if self.times.get(AG) is None or not limits:
            return None
        return self.times[AG] / max(limits)


def describe(error):
    """One line for a library that could not run a workload or computed something else."""
    if isinstance(error, GradientMismatch):
        return str(error).split(": ", 1)[-1]
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    text = f"{type(error).__name__}: {text}"
    return text if len(text) <= 160 else text[:157] + "..."


def chosen(option):
    if not option:
        return list(COLUMNS)
    names = [n.strip() for n in option.split(",") if n.strip()]
    unknown = [n for n in names if n not in LIBRARY_OPTIONS]
    if unknown:
        raise SystemExit(f"unknown library {', '.join(unknown)}: choose from "
                         f"{', '.join(LIBRARY_OPTIONS)}")
    wanted = {LIBRARY_OPTIONS[n] for n in names} | {TORCH}
    return [name for name in COLUMNS if name in wanted]


def run(args):
    keys = [w.key for w in WORKLOADS]
    wanted = keys if not args.only else [k.strip().lower() for k in args.only.split(",")]
    unknown = set(wanted) - set(keys)
    if unknown:
        raise SystemExit(f"unknown workload {', '.join(sorted(unknown))}: choose from "
                         f"{', '.join(keys)}")
    if importlib.util.find_spec("torch") is None:
        raise SystemExit("bench.broad checks every gradient against PyTorch's: pip install torch")
    columns = chosen(args.libraries)
    args.load = [os.getloadavg()[0]] if hasattr(os, "getloadavg") else []
    libs, missing = {}, {}
    for name in columns:
        if name == HAND:
            continue
        module = MODULES.get(name)
        if module is not None and importlib.util.find_spec(module) is None:
            missing[name] = f"{module} is not installed"
            continue
        try:
            libs[name] = LIBRARIES[name]()
        except Exception as error:  # e.g. arraygrad's torch backend not registered
            missing[name] = describe(error)
    import scipy.optimize  # noqa: F401  (imported before the collector's freeze, as torch)

    gc.collect()
    gc.freeze()  # as bench/__main__.py: a full collection does not scan torch's modules
    rounds = args.rounds if args.rounds is not None else 1 if args.quick else 5
    in_a_row = 1 if args.quick and args.rounds is None else 3
    memory_repeats = 1 if args.quick else 3
    print(f"threads pinned to 1; best of {in_a_row} runs in a row, libraries taking turns, "
          f"{rounds} round(s){' (--quick: small sizes)' if args.quick else ''}; "
          f"gradients checked against PyTorch's first\n{HARNESS.machine()}\n", flush=True)
    rows, results, failures, problems_out = [], [], [], {}
    for workload_class in WORKLOADS:
        if workload_class.key not in wanted:
            continue
        key = workload_class.key
        status = {name: ("n/a", reason) for name, reason in missing.items()}
        try:
            workload = workload_class(args.quick)
            workload.prepare(libs)
            runs = {}
            for name in columns:
                if name in workload.not_for:
                    status[name] = ("n/a", workload.not_for[name])
                elif name == HAND:
                    if workload.runner(None) is not None:
                        runs[HAND] = workload.runner(None)
                elif name in libs:
                    runs[name] = workload.runner(libs[name])
            for name, error in workload.check(runs).items():
                if name == HIPS and not isinstance(error, GradientMismatch):
                    status[name] = ("n/a", describe(error))  # another library's limits
                else:
                    status[name] = ("FAILED", describe(error))
                    if not isinstance(error, GradientMismatch):
                        traceback.print_exception(error)
                del runs[name]
        except Exception as error:  # PyTorch itself cannot run it: a fault of the benchmark
            failures.append(key)
            print(f"FAILED {key}: {describe(error)}", flush=True)
            traceback.print_exc()
            continue
        for name, (kind, text) in status.items():
            print(f"  {key}: {name}: {kind}: {text}", flush=True)
            if kind == "FAILED" and key not in failures:
                failures.append(key)
        problems_out[key] = {name: f"{kind}: {text}" for name, (kind, text) in status.items()}
        names = list(runs)
        times = dict(zip(names, best_times([runs[n] for n in names], rounds, in_a_row)))
        rss = {name: min(resident_peak_mib(runs[name]) or 0.0 for _ in range(memory_repeats))
               if resident_peak_mib(lambda: None) is not None else None for name in names}
        traced = {name: traced_peak_mib(runs[name]) for name in names if name in (AG, HAND, HIPS)}
        row = Row(workload, times, rss, traced, status)
        rows.append(row)
        for name in names:
            results.append((key, "time", name, times[name] * 1e3, "ms",
                            times[name] / times[TORCH]))
        for name, count in getattr(workload, "evaluations", {}).items():
            if name in runs:
                results.append((key, "evaluations", name, float(count), "", None))
        for name in names:
            if rss[name] is not None:
                results.append((key, "peak", name, rss[name], "MiB", None))
        for name, figure in traced.items():
            results.append((key, "peak traced", name, figure, "MiB", None))
        for label, value in ratios(row):
            if value is not None:
                results.append((key, "goal ratio", label, value, "", None))
        print(f"  {key:<15} " + "   ".join(f"{name} {times[name] * 1e3:.3f} ms"
                                            for name in names), flush=True)
    print()
    if args.load:
        args.load.append(os.getloadavg()[0])
        print(f"load average (1 minute) {args.load[0]:.2f} at the start, {args.load[1]:.2f} at "
              f"the end, on {os.cpu_count()} cores\n")
    lines = tables(rows)
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"machine": HARNESS.machine(), "workloads": [r.workload.key for r in rows],
                       "failures": failures, "problems": problems_out, "results": results}, out)
    if args.write_results:
        write_results(lines, args)
    if failures:
        print(f"\nFAILED: {', '.join(failures)}")
        return 1
    return 0


def ratios(row):
    """The goals' ratios: arraygrad on NumPy / the slower of hand-written NumPy and PyTorch;
    arraygrad on torch / PyTorch; peak memory of each arraygrad / PyTorch's."""
    return [(f"{AG} / max({HAND}, {TORCH}) time", row.ag_time_ratio()),
            (f"{AG_TORCH} / {TORCH} time", row.ratio(AG_TORCH, TORCH, row.times)),
            (f"{AG} / {TORCH} peak", row.ratio(AG, TORCH, row.rss)),
            (f"{AG_TORCH} / {TORCH} peak", row.ratio(AG_TORCH, TORCH, row.rss))]


def tables(rows):
    """The results as Markdown lines: times and their goals, peak memory and its goals, then a
    note for every library that did not run a workload."""
    notes = {}  # (workload, library) -> its note

    def missing(row, name):
        kind, text = row.status[name]
        number = notes.setdefault((row.workload.key, name), (
            len(notes) + 1, f"{kind} [{len(notes) + 1}]: `{row.workload.key}`, {name}: {text}"))[0]
        return f"{kind} [{number}]"

    def figure(row, figures, name, digits):
        if name in row.status:
            return missing(row, name)
        value = figures.get(name)
        return "—" if value is None else f"{value:,.{digits}f}"

    def goal(value, bound, excess=None):
        if value is None:
            return "—"
        if not over(value, bound):
            return f"{value:.2f}"
        return f"**{value:.2f} ✗**" + ("" if excess is None else f" (+{excess:.2f} MiB)")

    def peak_goal(row, name):
        value = row.ratio(name, TORCH, row.rss)
        return goal(value, GOAL_PEAK, None if value is None else row.rss[name] - row.rss[TORCH])

    def ms(row, name):
        value = row.times.get(name)
        return figure(row, {name: None if value is None else value * 1e3}, name, 3)

    def table(header, body):
        return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
            "| " + " | ".join(cells) + " |" for cells in body]

    times = table(["workload", f"{HAND} ms", f"{TORCH} ms", f"{HIPS} ms", f"{AG} ms",
                   f"{AG_TORCH} ms", f"{AG} / max(NumPy, {TORCH}) (≤ {GOAL_AG})",
                   f"{AG_TORCH} / {TORCH} (≤ {GOAL_AG_TORCH})"],
                  [[f"`{row.workload.key}`", ms(row, HAND), ms(row, TORCH), ms(row, HIPS),
                    ms(row, AG), ms(row, AG_TORCH), goal(row.ag_time_ratio(), GOAL_AG),
                    goal(row.ratio(AG_TORCH, TORCH, row.times), GOAL_AG_TORCH)]
                   for row in rows])
    peaks = table(["workload", f"{TORCH} MiB", f"{AG} MiB", f"{AG} / {TORCH} (≤ {GOAL_PEAK})",
                   f"{AG_TORCH} MiB", f"{AG_TORCH} / {TORCH} (≤ {GOAL_PEAK})", f"{HAND} MiB",
                   f"{HIPS} MiB", f"{AG} traced MiB", f"{HAND} traced MiB"],
                  [[f"`{row.workload.key}`", figure(row, row.rss, TORCH, 2),
                    figure(row, row.rss, AG, 2), peak_goal(row, AG),
                    figure(row, row.rss, AG_TORCH, 2), peak_goal(row, AG_TORCH),
                    figure(row, row.rss, HAND, 2), figure(row, row.rss, HIPS, 2),
                    figure(row, row.traced, AG, 2), figure(row, row.traced, HAND, 2)]
                   for row in rows])
    missed = [f"`{row.workload.key}` {label} {value:.2f}" for row in rows
              for label, value in ratios(row) if value is not None and over(value, (
                  GOAL_AG if "max(" in label else GOAL_AG_TORCH if "time" in label
                  else GOAL_PEAK))]
    notes = [note for _, note in notes.values()]
    return (["Times: best over the rounds, ms.", ""] + times + ["", "Peak memory one step adds, "
            "MiB (the resident high-water mark for every library; tracemalloc's peak for "
            "arraygrad on NumPy and hand-written NumPy).", ""] + peaks + [""]
            + (["Over a goal (**✗**): " + "; ".join(missed) + "."] if missed else
               ["Every figure within its goal."])
            + ([""] + [f"- {note}" for note in notes] if notes else []))


def over(value, bound):
    """Over its goal as printed (two decimals): 1.004 is not over 1.0."""
    return round(value, 2) > bound


def revision():
    """The checkout's commit, and whether its tracked files differ from it."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, check=True,
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "an unknown revision"
    return commit + (" with uncommitted changes" if dirty.strip() else "")


def write_results(lines, args):
    """Rewrite the broad results section of bench/README.md (between its markers)."""
    import time

    command = " ".join(["python -m bench.broad"] + [
        option for option, given in (("--quick", args.quick), (f"--only {args.only}", args.only),
                                     (f"--rounds {args.rounds}", args.rounds is not None),
                                     (f"--libraries {args.libraries}", args.libraries)) if given]
        + ["--write-results"])
    head = [RESULTS_START, "",
            f"Measured {time.strftime('%Y-%m-%d')} with `{command}`"
            f"{' (a smoke run, small sizes)' if args.quick else ''} at {revision()} on "
            f"{HARNESS.machine()}. Threads pinned to 1"
            + (f"; load average (1 minute) {args.load[0]:.2f} at the start, {args.load[1]:.2f} "
               f"at the end (other work on the machine slows every library, not alike)"
               if len(args.load) == 2 else "") + ".", ""]
    HARNESS.write_section(head + lines + ["", RESULTS_END], "Results: the broad benchmark",
                          args.readme)


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
    parser.add_argument("--write-results", action="store_true",
                        help="rewrite the broad results section of bench/README.md with this "
                             "run's tables, the date, the machine and the revision")
    parser.add_argument("--readme", help="the file whose broad results section "
                        "--write-results rewrites (default: bench/README.md)")
    parser.add_argument("--libraries", help="comma-separated libraries (default: all): " +
                        ", ".join(LIBRARY_OPTIONS) + "; PyTorch always runs, the reference "
                        "of every check")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
