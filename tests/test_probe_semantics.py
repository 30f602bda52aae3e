"""Semantics found by probing arraygrad as a user coming from PyTorch, NumPy or JAX would: each
test pins one behaviour against hand-derived values or central differences (not against what
arraygrad itself computes)."""

import importlib.util

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import Variable

BACKENDS = ["numpy"] + [name for name in ("torch", "jax") if importlib.util.find_spec(name)]


def _raw(backend, values):
    """A float64 array of ``backend`` (its namespace is made first: JAX's turns on float64)."""
    ag.namespace(backend)
    return ag.get_backend(backend).raw.asarray(np.asarray(values, dtype=np.float64))


def _host(backend, value):
    return np.asarray(ag.get_backend(backend).to_numpy(value.data))


# ------------------------------------------------------------------- x[int array] = value
@pytest.mark.parametrize("backend", BACKENDS)
def test_setitem_with_a_repeated_index_passes_back_only_the_value_that_stayed(backend):
    # z[[0, 0, 2]] = v keeps v[1] at z[0] (the last write, as NumPy, torch on CPU and JAX do):
    # v[0] is overwritten and has no effect on the output, so its gradient is 0 (torch's
    # index_put gives it g[0] as well, which central differences contradict).
    xp = ag.namespace(backend)
    w = np.array([0.5, -2.0, 3.0, 7.0])
    x = Variable(_raw(backend, [1.0, 2.0, 3.0, 4.0]), requires_grad=True)
    v = Variable(_raw(backend, [10.0, 20.0, 30.0]), requires_grad=True)
    z = x * 1.0
    z[[0, 0, 2]] = v
    assert _host(backend, z).tolist() == [20.0, 2.0, 30.0, 4.0]
    xp.sum(z * xp.asarray(_raw(backend, w))).backward()
    assert _host(backend, v.grad).tolist() == [0.0, 0.5, 3.0]
    assert _host(backend, x.grad).tolist() == [0.0, -2.0, 0.0, 7.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_setitem_of_a_broadcast_value_at_a_repeated_index_counts_it_once(backend):
    # z[i, [1, 1]] = s writes s twice to one element, which holds it once: ds = w[i, 1].
    xp = ag.namespace(backend)
    w = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    x = Variable(_raw(backend, np.zeros((2, 3))), requires_grad=True)
    s = Variable(_raw(backend, 1.5), requires_grad=True)
    z = x * 1.0
    z[1, [1, 1]] = s
    xp.sum(z * xp.asarray(_raw(backend, w))).backward()
    assert float(s.grad) == 5.0
    assert _host(backend, x.grad).tolist() == [[1.0, 2.0, 3.0], [4.0, 0.0, 6.0]]


def test_setitem_with_repeated_index_arrays_matches_central_differences():
    # Two integer arrays, a repeated pair among them, a value computed from x, then used again.
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 5))
    rows, cols = np.array([0, 3, 0, 1]), np.array([1, 4, 1, 2])

    def f(xp, x):
        z = x * 2
        z[rows, cols] = x[2, :4] ** 2 + x[1, 1]
        return z * x

    x = Variable(a.copy(), requires_grad=True)
    out = f(ag.namespace("numpy"), x)
    g = rng.standard_normal(out.shape)
    out.backward(g)
    numeric, eps = np.zeros_like(a), 1e-6
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = np.sum((f(np, up) - f(np, down)) * g) / (2 * eps)
    np.testing.assert_allclose(x.grad.data, numeric, atol=1e-7)
