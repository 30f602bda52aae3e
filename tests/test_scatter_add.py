"""The ``scatter_add`` kernel capability: the gradient of a gather (``take``, integer-array
indexing) adds into its input's slots with the backend's own kernel where it declares one
(NumPy's ``add.at``, torch's ``index_add_``, JAX's ``.at[].add``), and with the standard alone
(sort, running totals, binary search) elsewhere; both give the same sums, repeats included."""

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import rules
from arraygrad.rules import indexing


def _raw(name):
    return ag.namespace(name)._backend.raw


def _available(name):
    try:
        _raw(name)
    except Exception as error:  # noqa: BLE001  (not installed: skipped with the reason)
        pytest.skip(f"backend {name!r} is not available: {error}")
    return _raw(name)


POSITIONS = np.array([3, 0, 3, 5, 3, 0, 1])  # repeats: 3 three times, 0 twice; 2 and 4 none
VALUES = np.array([1.5, -2.0, 0.25, 4.0, 8.0, 0.5, -1.0])


def _expected(values, size=6):
    total = np.zeros(size, dtype=values.dtype)
    for position, value in zip(POSITIONS, values):
        total[position] += value
    return total


@pytest.mark.parametrize("name", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_the_kernel_adds_repeats_and_keeps_the_dtype(name, dtype):
    xp = _available(name)
    values = VALUES.astype(dtype) * (1 + 1j if "complex" in dtype else 1)
    raw_values = xp.asarray(values)
    fast = rules.kernel(raw_values, "scatter_add")
    assert callable(fast), f"{name} declares scatter_add"
    got = fast(6, xp.asarray(POSITIONS), raw_values)
    assert got.dtype == raw_values.dtype and tuple(got.shape) == (6,)
    np.testing.assert_allclose(np.asarray(got), _expected(values), rtol=1e-6)


def test_the_standard_alone_gives_the_same_sums():
    strict = pytest.importorskip("array_api_strict")
    values = strict.asarray(VALUES)
    assert rules.kernel(values, "scatter_add") is None
    got = indexing.scatter_add(strict, 6, strict.asarray(POSITIONS), values)
    np.testing.assert_allclose(np.asarray(got), _expected(VALUES))


class _NoSort:
    """The raw NumPy namespace without ``argsort``: a call proves the standard's path ran."""

    def __getattr__(self, name):
        if name == "argsort":
            raise AssertionError("the standard's scatter-add ran, not the kernel")
        return getattr(_raw("numpy"), name)


def test_numpy_takes_the_kernel_not_the_sort():
    got = indexing.scatter_add(_NoSort(), 6, POSITIONS, VALUES)
    np.testing.assert_array_equal(got, _expected(VALUES))


@pytest.mark.parametrize("name", ["numpy", "array_api_strict", "torch"])
def test_take_gradient_adds_repeated_indices(name):
    _available(name)
    xp = ag.namespace(name)
    x = ag.Variable(xp.asarray(np.linspace(0.5, 3.0, 6))._values, requires_grad=True)
    index = xp.asarray(POSITIONS)
    weights = xp.asarray(VALUES)
    xp.sum(xp.take(x, index) ** 2 * weights).backward()
    want = np.zeros(6)
    for position, w in zip(POSITIONS, VALUES):
        want[position] += 2 * np.linspace(0.5, 3.0, 6)[position] * w
    np.testing.assert_allclose(np.asarray(x.grad._values), want, rtol=1e-12)


def test_second_derivatives_go_through_the_standard():
    """Under ``create_graph`` the rule gets Variables: no kernel (it records nothing), the
    standard's functions, which record."""
    xp = ag.namespace("numpy")
    x = ag.Variable(np.linspace(0.5, 3.0, 6), requires_grad=True)
    assert rules.kernel(x, "scatter_add") is None
    (g,) = ag.autograd.grad(xp.sum(xp.take(x, xp.asarray(POSITIONS)) ** 3), [x],
                            create_graph=True)
    (h,) = ag.autograd.grad(xp.sum(g), [x])
    counts = np.bincount(POSITIONS, minlength=6)
    np.testing.assert_allclose(h._values, 6 * np.linspace(0.5, 3.0, 6) * counts, rtol=1e-12)
