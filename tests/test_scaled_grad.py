"""Scaled gradients: in ``mean((X @ w - y) ** 2)`` the square's VJP gets mean's small ``1 / n``
and gives ``r`` times a scale (a ``ScaledGrad``) instead of the full-size product; ``subtract``,
``matmul`` and the other rules declared with ``defscaled`` take ``r`` as their ``g``, and the
engine multiplies their results by the scale where they are smaller: ``2 / n * (X.T @ r)``, as
by hand. Every gradient must be what the dense path gives, and everything the user can reach
(hooks, retained and leaf gradients, ``autograd.grad``, custom Functions) sees full arrays."""

import collections

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import rules
from arraygrad.rules import reuse
from arraygrad.testing import check_grads

xp = ag.namespace("numpy")
rng = np.random.default_rng(11)
N = 40_000  # rows: r, float64, is large enough (reuse.REUSE_MIN_BYTES) for a ScaledGrad
X = rng.standard_normal((N, 4))
Y = rng.standard_normal(N)
W0 = np.array([0.3, -1.2, 0.7, 2.0])
C = rng.standard_normal(N)
B0 = np.array(0.25)


def least_squares_gradient(X, y, w):
    return 2 / X.shape[0] * (X.T @ (X @ w - y))


def _both(r, first, second):
    return first(r) + second(r)


def _count_scaled(monkeypatch):
    made = []
    original = reuse.ScaledGrad.__init__

    def spy(self, scale, value):
        made.append(tuple(value.shape))
        original(self, scale, value)

    monkeypatch.setattr(reuse.ScaledGrad, "__init__", spy)
    return made


def test_least_squares_scales_the_small_result_as_by_hand(monkeypatch):
    assert Y.nbytes >= reuse.REUSE_MIN_BYTES, "N is too small for a ScaledGrad"
    made = _count_scaled(monkeypatch)
    w = ag.Variable(W0, requires_grad=True)
    xp.mean((X @ w - Y) ** 2).backward()
    assert made and set(made) == {(N,)}  # carried at r's size, never made for w's (4,)
    # Bit for bit the hand-written order: 2 / n applied to X.T @ r, not to r first.
    np.testing.assert_array_equal(w.grad.data, least_squares_gradient(X, Y, W0))


CASES = {
    # name: (function of the leaves, leaves); each has a scalar factor reaching a full-size r.
    "least squares": (lambda w: xp.mean((X @ w - Y) ** 2), (W0,)),
    "with a bias": (lambda w, b: xp.mean((X @ w + b - Y) ** 2), (W0, B0)),
    # one r, two consumers: its buffer sums a ScaledGrad with a BroadcastGrad or an array
    "residual used twice": (lambda w: _both(X @ w - Y, lambda r: xp.mean(r ** 2), xp.mean),
                            (W0,)),
    "residual used twice, square last": (
        lambda w: _both(X @ w - Y, xp.mean, lambda r: xp.mean(r ** 2)), (W0,)),
    "a square and a sine of one residual": (
        lambda w: _both(X @ w - Y, lambda r: xp.mean(xp.sin(r)), lambda r: xp.mean(r ** 2)),
        (W0,)),
    "a complex factor, a real leaf": (
        lambda a: xp.real((1 + 2j) * xp.mean((a - Y * (1 - 0.5j)) ** 2)), (C,)),
    "X needs a gradient too": (lambda x, w: xp.mean((x @ w - Y) ** 2), (X, W0)),
    "both sides of a difference": (lambda a, b: xp.mean((a - b) ** 3), (C, Y)),
    "negated, reshaped": (
        lambda a: xp.mean(xp.reshape(-(a - Y), (N // 4, 4)) ** 2), (C,)),
    "transposed matmul": (
        lambda w: xp.mean((xp.matrix_transpose(xp.reshape(X, (4, N))) @ w - Y) ** 2), (W0,)),
    "product with a constant": (lambda a: xp.mean((a - Y) * C), (C,)),
    "sum of a square, scaled": (lambda w: xp.sum(0.5 * (X @ w - Y) ** 2 / 3.0), (W0,)),
    "a mean of means": (lambda w: xp.mean(xp.mean(xp.reshape((X @ w) ** 2, (2, N // 2)),
                                                   axis=1)), (W0,)),
}


@pytest.mark.parametrize("name", CASES)
def test_gradients_match_differences(name):
    f, args = CASES[name]
    check_grads(f, args, order=2)


@pytest.mark.parametrize("name", CASES)
def test_gradients_match_the_dense_path(name, monkeypatch):
    f, args = CASES[name]
    leaves = [ag.Variable(a, requires_grad=True) for a in args]
    f(*leaves).backward()
    monkeypatch.setattr(rules.RULES["pow"], "broadcast_vjps", None)  # no broadcast, no scale
    monkeypatch.setattr(rules.RULES["multiply"], "broadcast_vjps", None)
    dense = [ag.Variable(a, requires_grad=True) for a in args]
    f(*dense).backward()
    for leaf, other in zip(leaves, dense):
        np.testing.assert_allclose(leaf.grad.data, other.grad.data, rtol=1e-12, atol=1e-15)


def test_the_users_arrays_are_never_scaled_in_place():
    # mean((a - y) * c): multiply's VJP gives c itself with the scale; c is the user's.
    before_c, before_y = C.copy(), Y.copy()
    a = ag.Variable(C.copy(), requires_grad=True)
    b = ag.Variable(Y, requires_grad=True)
    xp.mean((a - b) * C).backward()
    np.testing.assert_array_equal(C, before_c)
    np.testing.assert_array_equal(Y, before_y)
    np.testing.assert_allclose(a.grad.data, C / N, rtol=1e-15)
    np.testing.assert_allclose(b.grad.data, -C / N, rtol=1e-15)
    assert not np.shares_memory(a.grad.data, C) and not np.shares_memory(b.grad.data, C)


def test_a_retained_graph_keeps_its_saved_values():
    # r is saved by the square's node, which retain_graph keeps: the scale must not be applied
    # in r's memory, which a second backward reads.
    a = ag.Variable(C.copy(), requires_grad=True)
    loss = xp.mean((a - Y) ** 2)
    loss.backward(retain_graph=True)
    first = a.grad.data.copy()
    loss.backward()
    np.testing.assert_allclose(first, 2 / N * (C - Y), rtol=1e-14)
    np.testing.assert_allclose(a.grad.data, 2 * first, rtol=1e-14)


def test_float32_keeps_its_dtype():
    X32, Y32, W32 = X.astype(np.float32), Y.astype(np.float32), W0.astype(np.float32)
    w = ag.Variable(W32, requires_grad=True)
    xp.mean((X32 @ w - Y32) ** 2).backward()
    assert w.grad.dtype == np.float32
    np.testing.assert_allclose(w.grad.data, least_squares_gradient(X, Y, W0), rtol=1e-4)


def test_hooks_retained_and_captured_gradients_are_scaled():
    w = ag.Variable(W0, requires_grad=True)
    r = X @ w - Y
    r.retain_grad()
    hooked = []
    r.register_hook(lambda g: hooked.append(g.data.copy()))
    xp.mean(r ** 2).backward()
    expected = 2 / N * (X @ W0 - Y)
    np.testing.assert_allclose(hooked[0], expected, rtol=1e-14)
    np.testing.assert_allclose(r.grad.data, expected, rtol=1e-14)
    np.testing.assert_allclose(w.grad.data, least_squares_gradient(X, Y, W0), rtol=1e-13)
    s = X @ w - Y
    (captured,) = ag.autograd.grad(xp.mean(s ** 2), [s])
    np.testing.assert_allclose(captured.data, expected, rtol=1e-14)


def test_a_hook_that_replaces_the_gradient_is_obeyed():
    w = ag.Variable(W0, requires_grad=True)
    r = X @ w - Y
    r.register_hook(lambda g: g * 0 + 1.0)  # the gradient of sum(r) instead
    xp.mean(r ** 2).backward()
    np.testing.assert_allclose(w.grad.data, X.sum(axis=0), rtol=1e-12)


class Doubled(ag.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        assert isinstance(g, ag.Variable) and g.shape == (N,)  # full size, scaled
        return g * 2


def test_custom_functions_get_the_scaled_gradient():
    w = ag.Variable(W0, requires_grad=True)
    xp.mean(Doubled.apply(X @ w - Y) ** 2).backward()
    np.testing.assert_allclose(w.grad.data, 4 * least_squares_gradient(X, Y, W0), rtol=1e-12)


def test_second_derivatives_see_no_scaled_gradient():
    w = ag.Variable(W0, requires_grad=True)
    (g,) = ag.autograd.grad(xp.mean((X @ w - Y) ** 2), [w], create_graph=True)
    np.testing.assert_allclose(g.data, least_squares_gradient(X, Y, W0), rtol=1e-12)
    rows = [ag.autograd.grad(g[i], [w], retain_graph=True)[0].data for i in range(4)]
    np.testing.assert_allclose(np.stack(rows), 2 / N * X.T @ X, rtol=1e-12)


def test_any_consumer_copes_with_a_scaled_gradient():
    # The flag that lets broadcast VJPs return a ScaledGrad is shared by all threads: a race
    # may hand one to a consumer that never asked (a sine, a custom Function, a leaf, two
    # consumers of one value). Each must still get the right gradient.
    def f(a, w):
        r = X @ w - Y
        return (xp.mean(xp.sin(a * C) ** 2) + xp.mean(Doubled.apply(r) ** 2)
                + xp.mean(r ** 2) + xp.mean(a ** 2))

    def run():
        a, w = ag.Variable(C.copy(), requires_grad=True), ag.Variable(W0, requires_grad=True)
        f(a, w).backward()
        return a.grad.data, w.grad.data

    expected = run()
    reuse._scratch.scales = True
    try:
        got = run()
    finally:
        reuse._scratch.scales = False
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_complex_gradients_take_the_dense_path(monkeypatch):
    made = _count_scaled(monkeypatch)
    Z = X * (1 + 0.5j)
    w = ag.Variable(W0 * (1 - 0.25j), requires_grad=True)
    xp.mean(xp.abs(Z @ w - Y) ** 2).backward()
    assert made == []
    r = Z @ (W0 * (1 - 0.25j)) - Y
    np.testing.assert_allclose(w.grad.data, 2 / N * (Z.conj().T @ r), rtol=1e-12)


def test_torch_backend_matches_torch_autograd():
    torch = pytest.importorskip("torch")
    txp = ag.namespace("torch")
    Xt, Yt = torch.tensor(X), torch.tensor(Y)
    w = ag.Variable(torch.tensor(W0), requires_grad=True)
    txp.mean((Xt @ w - Yt) ** 2).backward()
    reference = torch.tensor(W0, requires_grad=True)
    torch.mean((Xt @ reference - Yt) ** 2).backward()
    torch.testing.assert_close(w.grad.data, reference.grad, rtol=1e-12, atol=1e-15)


def test_dask_least_squares_has_no_full_size_product():
    da = pytest.importorskip("dask.array")
    dxp = ag.namespace("dask")
    Xd = da.from_array(X, chunks=(2_500, 4))
    yd = da.from_array(Y, chunks=2_500)
    w0 = da.from_array(W0)
    w = ag.Variable(w0, requires_grad=True)
    dxp.mean((ag.Variable(Xd) @ w - ag.Variable(yd)) ** 2).backward()
    kinds = collections.Counter(
        (key[0] if isinstance(key, tuple) else key).rsplit("-", 1)[0]
        for key in dict(w.grad.data.__dask_graph__()))
    # 1 / n and 2 (on g's one small chunk), then the scale on the (4,) result, as
    # 2 / n * (X.T @ r) by hand: no product per chunk of r.
    assert kinds["mul"] + kinds["truediv"] <= 3 < Xd.numblocks[0], kinds
    np.testing.assert_allclose(w.grad.data.compute(), least_squares_gradient(X, Y, W0),
                               rtol=1e-12)
