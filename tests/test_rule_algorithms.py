"""Rules outside linear algebra that pick the cheaper of two exact algorithms by what the
values allow, checked by counting the backend calls each makes (never by timing), and each
fallback checked against the definition where the cheap one would be wrong.

- ``prod``: ``ans / x`` (PyTorch's), where every product is finite and nonzero; two running
  products where an entry is 0, inf or NaN, or a product underflowed or overflowed.
- ``sort``: without ties, every sort order is the same permutation, so the VJP takes the
  backend's unstable argsort (NumPy's stable one costs 3.6 times as much on 10**6 values); with
  ties or NaNs, the stable one, which sends each gradient where PyTorch's stable sort does."""

import numpy as np
import pytest

import arraygrad as ag
from arraygrad._plugins import registry


@pytest.fixture
def calls(monkeypatch):
    """Per name, the NumPy backend's calls of ``cumulative_prod`` and ``argsort`` (and their
    ``stable`` argument)."""
    raw, made = registry.get("numpy").raw, []
    for name in ("cumulative_prod", "argsort"):
        function = getattr(raw, name)

        def counted(*args, _name=name, _function=function, **kwargs):
            made.append((_name, kwargs.get("stable")))
            return _function(*args, **kwargs)
        monkeypatch.setattr(raw, name, counted)
    return made


def _grad(f, a):
    """The gradient of ``sum(f(x) * [1, 2, 3, ...])``: each output position weighs its own."""
    xp = ag.namespace("numpy")
    x = ag.Variable(np.asarray(a, dtype=float), requires_grad=True)
    y = f(xp, x)
    xp.sum(y * ag.Variable(np.arange(1.0, 1 + y.size).reshape(y.shape))).backward()
    return x.grad.data


def _prod_others(a, axis):
    """Per entry, the product of the other entries of its slice, one by one."""
    a = np.moveaxis(np.asarray(a, dtype=float), axis, -1)
    out = np.empty_like(a)
    for index in np.ndindex(a.shape):
        out[index] = np.prod(np.delete(a[index[:-1]], index[-1]))
    return np.moveaxis(out, -1, axis)


def _prod_grad_expected(a, axis):
    weights = np.arange(1.0, 1 + np.prod(np.delete(np.shape(a), axis))).reshape(
        np.delete(np.shape(a), axis))
    return np.expand_dims(weights, axis) * _prod_others(a, axis)


def test_prod_divides_where_every_product_is_finite_and_nonzero(calls):
    a = 1 + 0.1 * np.random.default_rng(0).standard_normal((4, 5))
    grad = _grad(lambda xp, x: xp.prod(x, axis=1), a)
    assert calls == []  # (no running products)
    np.testing.assert_allclose(grad, _prod_grad_expected(a, 1), rtol=1e-13)


@pytest.mark.parametrize("a", [
    [[2.0, 0.0, 3.0], [1.0, 2.0, 4.0]],  # a zero: its slice's others are not ans / x
    [[2.0, 0.0, 0.0], [1.0, 2.0, 4.0]],  # two zeros: every other is 0
    [[1e-200, 1e-200, 5.0], [1.0, 2.0, 4.0]],  # the product underflows to 0
    [[1e200, 1e200, 1e-300], [1.0, 2.0, 4.0]],  # overflows: inf / inf would be NaN
    [[np.inf, 2.0, 3.0], [1.0, 2.0, 4.0]],  # an infinite entry: its others are finite
])
@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
def test_prod_takes_running_products_where_division_would_be_wrong(calls, a):
    grad = _grad(lambda xp, x: xp.prod(x, axis=1), a)
    assert ("cumulative_prod", None) in calls
    with np.errstate(over="ignore", invalid="ignore"):
        np.testing.assert_array_equal(np.isfinite(grad), np.isfinite(_prod_grad_expected(a, 1)))
        finite = np.isfinite(grad)
        np.testing.assert_allclose(grad[finite], _prod_grad_expected(a, 1)[finite], rtol=1e-12)


def test_prod_of_an_axis_and_of_all_divides_too(calls):
    a = 1 + 0.1 * np.random.default_rng(1).standard_normal((3, 4, 2))
    np.testing.assert_allclose(_grad(lambda xp, x: xp.prod(x, axis=0), a),
                               _prod_grad_expected(a, 0), rtol=1e-13)
    x = ag.Variable(a, requires_grad=True)
    ag.namespace("numpy").prod(x).backward()
    np.testing.assert_allclose(x.grad.data, np.prod(a) / a, rtol=1e-13)
    assert calls == []


def _sort_grad_expected(a, axis, descending=False):
    """Where each output position's weight goes: the stable order, by hand."""
    a = np.asarray(a, dtype=float)
    order = np.argsort(-a if descending else a, axis=axis, kind="stable")
    weights = np.arange(1.0, 1 + a.size).reshape(a.shape)
    grad = np.zeros_like(a)
    np.put_along_axis(grad, order, weights, axis=axis)
    return grad


@pytest.mark.parametrize("descending", [False, True])
def test_sort_without_ties_takes_the_unstable_argsort(calls, descending):
    a = np.random.default_rng(2).standard_normal((3, 6))
    grad = _grad(lambda xp, x: xp.sort(x, axis=1, descending=descending), a)
    assert calls == [("argsort", False)]
    np.testing.assert_array_equal(grad, _sort_grad_expected(a, 1, descending))


@pytest.mark.parametrize("a", [[[3.0, 1.0, 3.0, 2.0, 1.0]],  # ties
                               [[3.0, np.nan, 1.0, np.nan, 2.0]]])  # NaNs, sorted last
def test_sort_with_ties_or_nans_takes_the_stable_argsort(calls, a):
    grad = _grad(lambda xp, x: xp.sort(x, axis=-1), a)
    assert calls == [("argsort", True)]
    np.testing.assert_array_equal(grad, _sort_grad_expected(a, -1))


def test_sort_along_the_first_axis_compares_neighbours_along_it(calls):
    a = np.array([[1.0, 1.0], [2.0, 2.0], [0.0, 0.0]])  # ties along axis 1 only
    grad = _grad(lambda xp, x: xp.sort(x, axis=0), a)
    assert calls == [("argsort", False)]
    np.testing.assert_array_equal(grad, _sort_grad_expected(a, 0))


# --------------------------------------------------------------- unique_values: searched
def _unique_grad_expected(x, weights):
    """Each element gets its value's weight shared among the elements equal to it; NaNs none."""
    values, inverse, counts = np.unique(x.reshape(-1), return_inverse=True, return_counts=True)
    share = weights / counts
    grad = share[inverse]
    grad[np.isnan(x.reshape(-1))] = 0
    return grad.reshape(x.shape)


@pytest.mark.parametrize("x", [np.array([[3.0, 1.0, 3.0], [2.0, 1.0, 3.0]]),
                               np.array([2.0, np.nan, 1.0, 2.0, np.nan]),
                               np.array([[5.0]]), np.zeros((0, 3))])
def test_unique_values_shares_each_gradient_among_equal_elements(x):
    grad = _grad(lambda xp, v: xp.unique_values(v), x)
    values = np.unique(x.reshape(-1))
    np.testing.assert_allclose(grad, _unique_grad_expected(x, np.arange(1.0, 1 + values.size)),
                               rtol=1e-14)


def test_unique_values_of_complex_values_shares_among_equal_elements():
    x = np.array([1 + 1j, 2.0, 1 + 1j, 3j])
    xp = ag.namespace("numpy")
    v = ag.Variable(x, requires_grad=True)
    u = xp.unique_values(v)
    xp.sum(xp.real(u) * ag.Variable(np.arange(1.0, 1 + u.shape[0]))).backward()
    order = {value: i for i, value in enumerate(np.unique(x))}
    expected = np.array([(order[value] + 1) / np.sum(x == value) for value in x])
    np.testing.assert_allclose(v.grad.data, expected, rtol=1e-14)


def test_unique_values_gradient_takes_memory_linear_in_the_elements():
    """10**5 elements of 5 * 10**4 values: comparing each with each would take 5 GB (as 0/1
    float64) or 40 GB; the search takes a few arrays of the elements' size."""
    import tracemalloc

    x = np.random.default_rng(3).integers(0, 50_000, 100_000).astype(float)
    xp = ag.namespace("numpy")
    v = ag.Variable(x, requires_grad=True)
    tracemalloc.start()
    try:
        xp.sum(xp.unique_values(v) ** 2).backward()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 30 * x.nbytes  # (a dense comparison: 5 * 10**4 times x.nbytes)
    np.testing.assert_allclose(v.grad.data, _unique_grad_expected(x, 2 * np.unique(x)),
                               rtol=1e-14)


# ------------------------------------------------- cumulative_prod with zeros: O(n) per slice
def _cumprod_jacobian(x):
    """``[k, j] = d ans_k / d x_j`` along the last axis of a 1-D ``x``, by its definition."""
    n = x.shape[0]
    jac = np.zeros((n, n))
    for k in range(n):
        for j in range(k + 1):
            jac[k, j] = np.prod(np.delete(x[: k + 1], j))
    return jac


@pytest.mark.parametrize("x", [[2.0, 0.0, 3.0, 4.0], [0.0, 2.0, 0.0, 5.0], [1.5, 2.0, 3.0, 0.0],
                               [0.0, 0.0, 0.0, 1.0], [3.0, 0.5, 2.0, 4.0]])
@pytest.mark.parametrize("host_reads", [True, False])
def test_cumulative_prod_gradients_with_zeros_are_the_jacobians(monkeypatch, x, host_reads):
    from arraygrad.rules import statistical

    monkeypatch.setattr(statistical, "host_reads", lambda a: host_reads)  # (dask's path)
    x = np.array(x)
    jac = _cumprod_jacobian(x)
    weights = np.arange(1.0, 1 + x.size)
    grad = _grad(lambda xp, v: xp.cumulative_prod(v), x)
    np.testing.assert_allclose(grad, weights @ jac, rtol=1e-14)
    tangent = np.array([0.5, -1.0, 2.0, 0.25])
    _, jvp = ag.jvp(lambda v: ag.namespace("numpy").cumulative_prod(v), (ag.Variable(x),),
                    (ag.Variable(tangent),))
    np.testing.assert_allclose(np.asarray(jvp.data), jac @ tangent, rtol=1e-14)


def test_cumulative_prod_gradient_with_zeros_takes_memory_linear_in_the_length():
    """A slice of 10**5 with a zero: the partial products of every pair would take 80 GB."""
    import tracemalloc

    x = 1 + 1e-6 * np.random.default_rng(4).standard_normal((2, 100_000))
    x[0, 50_000] = 0.0
    xp = ag.namespace("numpy")
    v = ag.Variable(x, requires_grad=True)
    tracemalloc.start()
    try:
        xp.sum(xp.cumulative_prod(v, axis=1)).backward()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 30 * x.nbytes
    ans = np.cumprod(x, axis=1)
    expected_row1 = np.cumsum((ans[1])[::-1])[::-1] / x[1]  # no zero: sum_k ans_k / x_j
    np.testing.assert_allclose(v.grad.data[1], expected_row1, rtol=1e-10)
    assert np.all(v.grad.data[0, 50_001:] == 0)  # after the zero every product has it
    without = np.cumprod(np.where(np.arange(100_000) == 50_000, 1.0, x[0]))
    np.testing.assert_allclose(v.grad.data[0, 50_000], np.sum(without[50_000:]), rtol=1e-10)
