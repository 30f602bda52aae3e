"""Backward's sums as products with ones (capability ``matmul_sums``, NumPy's): the same sums
as ``xp.sum`` (to rounding), taken only where they apply, and the gradients they give."""

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import rules
from arraygrad._plugins import registry
from arraygrad.rules import _core, sum_axes, sum_to


def _raw():
    import array_api_compat.numpy

    return array_api_compat.numpy


class _NoSum:
    """The raw NumPy namespace without ``sum``: a call proves the product was not taken."""

    def __getattr__(self, name):
        if name == "sum":
            raise AssertionError("xp.sum was called")
        return getattr(_raw(), name)


CASES = [  # shape, axes, keepdims: a block of adjacent axes, which the product sums
    ((128, 10), (1,), True), ((128, 10), (1,), False), ((128, 10), (0,), False),
    ((128, 10), (0,), True), ((7, 5, 3), (0, 1), False), ((7, 5, 3), (1, 2), True),
    ((7, 5, 3), (0,), True), ((7, 5, 3), (2,), False), ((6,), (0,), False), ((6,), (0,), True),
    ((4, 3), (0, 1), True), ((3, 1, 4), (0,), False), ((1, 9), (1,), True),
    # a middle block: a batch of products (pairwise differences' x[:, None, :])
    ((7, 5, 3), (1,), False), ((7, 5, 3), (1,), True), ((2, 3, 4, 5), (1, 2), False),
    ((2, 3, 4, 5), (1, 2), True), ((2, 3, 4, 5), (2,), True), ((4, 1, 6), (1,), False),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, axes, keepdims", CASES)
def test_product_gives_the_sum(shape, axes, keepdims, dtype):
    rng = np.random.default_rng(len(shape) + sum(axes))
    g = (rng.standard_normal(shape) + np.arange(np.prod(shape)).reshape(shape) / 7).astype(dtype)
    got = sum_axes(_NoSum(), g, axes, keepdims)
    want = np.sum(g.astype(np.float64), axis=axes, keepdims=keepdims)
    assert got.shape == want.shape and got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("shape, axes, keepdims", [((7, 5), (0,), True),
                                                    ((128, 10), (1,), True),
                                                    ((128, 10), (0,), False),
                                                    ((7, 5, 3), (1,), False)])
def test_product_owns_its_memory_where_its_shape_allows(shape, axes, keepdims):
    """Backward copies a gradient that is a view before it keeps it in ``.grad``: the product
    is made in its final shape where a row or a column of ones gives it."""
    got = sum_axes(_NoSum(), np.ones(shape), axes, keepdims)
    assert got.base is None and got.flags.owndata


def test_special_values_sum_as_numpy_sums_them():
    g = np.array([[1.0, np.inf, 2.0], [np.nan, 1.0, 0.0], [np.inf, -np.inf, 1.0],
                  [-0.0, -0.0, -0.0]])
    for axes in ((0,), (1,)):
        np.testing.assert_array_equal(sum_axes(_NoSum(), g, axes), np.sum(g, axis=axes))
    assert np.signbit(sum_axes(_NoSum(), g, (1,))[3]) == np.signbit(np.sum(g, axis=1)[3])


@pytest.mark.parametrize("g, axes", [
    (np.ones((4, 5, 6)), (0, 2)),  # not one block
    (np.ones((4, 5, 6)), (2, 1)),  # not in order
    (np.ones((6, 4)).T, (0,)),  # not C-contiguous
    (np.arange(12).reshape(3, 4), (0,)),  # integers
    (np.ones((3, 4), dtype=np.complex128), (1,)),  # complex
    (np.ones((3, 4), dtype=np.float16), (1,)),  # no BLAS for float16
    (np.ones((0, 4)), (0,)),  # empty
    (np.ma.masked_array(np.ones((3, 4)), mask=np.eye(3, 4, dtype=bool)), (1,)),  # a subclass
])
def test_other_sums_are_the_librarys(g, axes):
    calls = []

    class Counting:
        def __getattr__(self, name):
            if name == "sum":
                return lambda *args, **kwargs: calls.append(1) or np.sum(*args, **kwargs)
            return getattr(_raw(), name)

    got = sum_axes(Counting(), g, axes)
    assert calls == [1]
    np.testing.assert_array_equal(got, np.sum(g, axis=axes))
    if isinstance(g, np.ma.MaskedArray):  # masked entries left out, as NumPy's masked sum does
        assert list(got) == [3, 3, 3]


@pytest.mark.parametrize("shape, axes", [((10**6,), (0,)), ((3, 4096), (1,)), ((2048, 3), (0,))])
def test_long_sums_keep_numpys_pairwise_summation(shape, axes):
    """Past ``MATMUL_SUM_MAX`` values into each result the sum is NumPy's, to the bit: a BLAS
    product over 10**6 float32 values errs by about 2e-4 where NumPy's errs by 3e-9."""
    g = (np.random.default_rng(1).random(shape) + 1000).astype(np.float32)
    got = sum_axes(_raw(), g, axes)
    np.testing.assert_array_equal(got, np.sum(g, axis=axes))
    exact = np.sum(g.astype(np.float64), axis=axes)
    assert np.max(np.abs(got - exact) / exact) < 1e-6


def test_backends_without_the_capability_keep_their_sum():
    strict = pytest.importorskip("array_api_strict")
    x = strict.reshape(strict.arange(12, dtype=strict.float64), (3, 4))
    got = sum_axes(strict, x, (0,))
    assert type(got) is type(x)
    np.testing.assert_array_equal(np.asarray(got), np.arange(12.0).reshape(3, 4).sum(0))


def test_the_capability_is_the_numpy_plugins():
    assert registry.get("numpy").capabilities()["matmul_sums"] is True
    pytest.importorskip("array_api_strict")
    assert registry.get("array_api_strict").capabilities()["matmul_sums"] is False


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_through_backward_sums(dtype):
    """A bias (summed over the batch by the engine), ``x - max(x, axis=1)`` (its subtraction
    and the ties of its maximum sum rows) and a trailing sum_to: against central differences in
    float64 and against the same loss on float64 for float32."""
    xp = ag.namespace("numpy")
    rng = np.random.default_rng(3)
    z0 = rng.standard_normal((6, 5))
    z0[2, 1] = z0[2, 3] = z0[2].max() + 1  # a tie
    b0, w = rng.standard_normal(5), rng.standard_normal((6, 5))
    c0 = rng.standard_normal((6, 1))

    def loss(z, b, c):
        y = z + b
        shifted = y - xp.max(y, axis=1, keepdims=True)
        return xp.sum(shifted * shifted * w) + xp.sum((y - c) * w[:, ::-1])

    def value(z, b, c):
        with ag.no_grad():
            return float(loss(*(ag.Variable(a) for a in (z, b, c))).data)

    variables = [ag.Variable(a.astype(dtype), requires_grad=True) for a in (z0, b0, c0)]
    loss(*variables).backward()
    h = 1e-6
    for k, (v, a) in enumerate(zip(variables, (z0, b0, c0))):
        numeric = np.zeros_like(a)
        for index in np.ndindex(a.shape):
            if k == 0 and index[0] == 2 and index[1] in (1, 3):
                continue  # a tie has no derivative
            args = [z0, b0, c0]
            up, down = a.copy(), a.copy()
            up[index] += h
            down[index] -= h
            numeric[index] = (value(*args[:k], up, *args[k + 1:])
                              - value(*args[:k], down, *args[k + 1:])) / (2 * h)
        got = v.grad.data.astype(np.float64)
        if k == 0:
            got[2, [1, 3]] = numeric[2, [1, 3]] = 0
        assert v.grad.data.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, numeric, rtol=1e-4 if dtype == "float32" else 1e-6,
                                   atol=1e-4 if dtype == "float32" else 1e-7)


def test_tied_maxima_share_the_gradient():
    xp = ag.namespace("numpy")
    x = ag.Variable(np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 1.0]]), requires_grad=True)
    xp.sum(xp.max(x, axis=1) * np.array([1.0, 6.0])).backward()
    np.testing.assert_array_equal(x.grad.data, [[0, 0.5, 0.5, 0], [2, 2, 2, 0]])


def test_sum_to_uses_it():
    g = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(sum_to(_NoSum(), g, (3, 4)), g.sum(0))
    np.testing.assert_array_equal(sum_to(_NoSum(), g, (2, 3, 1)), g.sum(2, keepdims=True))


def test_forgetting_the_backends_forgets_the_answers():
    sum_axes(_NoSum(), np.ones((3, 4)), (0,))
    assert _core._matmul_sums_types
    rules.forget_capabilities()
    assert not _core._matmul_sums_types and not _core._sum_plans and not _core._ones
