"""The ``jax`` backend against the real JAX: ``jax.numpy`` as the namespace, float64 enabled by
the plugin, immutable arrays (the ``arraygrad_set_index`` hook, in-place operators by rebinding
``.data``), float64 gradient checks, agreement with NumPy, moving leaves, mixing errors."""


import numpy as np
import pytest

import arraygrad as ag

jax = pytest.importorskip("jax", reason="JAX is not installed (pip install 'arraygrad[jax]')")
jnp = pytest.importorskip("jax.numpy")

NAME = "jax"

from backend_cases import (CASES, check_against_central_differences,  # noqa: E402
                           check_against_numpy)


@pytest.fixture(autouse=True, scope="module")
def namespace():
    return ag.namespace(NAME)  # enables float64 before any test makes an array


@pytest.mark.parametrize("case", CASES)
def test_gradients_match_central_differences_in_float64(case):
    check_against_central_differences(NAME, case)


@pytest.mark.parametrize("case", CASES)
def test_values_and_gradients_agree_with_numpy(case):
    check_against_numpy(NAME, case)


def test_the_namespace_is_jax_numpy_with_float64_enabled():
    be = ag.get_backend(NAME)
    assert be.raw is jnp
    assert ag.namespace(NAME).__array_api_version__ == jnp.__array_api_version__
    assert jax.config.jax_enable_x64
    x = ag.Variable(jnp.ones(3), requires_grad=True)
    assert x.backend == NAME and x.dtype == jnp.float64
    xp = x.__array_namespace__()
    out = xp.mean((x + 2) * x * 3)
    out.backward()
    assert isinstance(x.grad.data, jax.Array)
    np.testing.assert_array_equal(np.asarray(x.grad.data), [4.0, 4.0, 4.0])
    assert out.item() == 9.0
    assert be.version() == jax.__version__


def test_immutability_is_declared_and_set_index_makes_a_new_array():
    be = ag.get_backend(NAME)
    caps = be.capabilities()
    assert caps["inplace"] is False and "float64" in be.dtypes
    a = jnp.zeros(4)
    with pytest.raises(TypeError):
        a[1] = 5.0  # why the hook exists: JAX arrays cannot be assigned to
    b = be.set_index(a, 1, 5.0)
    np.testing.assert_array_equal(np.asarray(b), [0.0, 5.0, 0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(a), [0.0, 0.0, 0.0, 0.0])


def test_in_place_operators_rebind_the_data_of_a_jax_variable():
    xp = ag.namespace(NAME)
    v = ag.Variable(jnp.arange(4.0))
    original = v.data
    v += 1
    v[0] = 10.0
    np.testing.assert_array_equal(np.asarray(v.data), [10.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(original), [0.0, 1.0, 2.0, 3.0])
    x = ag.Variable(jnp.arange(4.0), requires_grad=True)
    y = x * 2
    y[1] = 0.0
    y += x
    xp.sum(y * y).backward()
    np.testing.assert_array_equal(np.asarray(y.data), [0.0, 1.0, 6.0, 9.0])
    np.testing.assert_array_equal(np.asarray(x.grad.data), [0.0, 2.0, 36.0, 54.0])
    x.grad.zero_()
    np.testing.assert_array_equal(np.asarray(x.grad.data), [0.0, 0.0, 0.0, 0.0])


def test_gradients_through_indexing_use_the_set_index_hook():
    # getitem's and setitem's VJPs write into fresh arrays: with JAX through .at[].set().
    xp = ag.namespace(NAME)
    x = ag.Variable(jnp.arange(12.0).reshape(3, 4), requires_grad=True)
    xp.sum(x[1:, ::2] * 3).backward()
    expected = np.zeros((3, 4))
    expected[1:, ::2] = 3
    np.testing.assert_array_equal(np.asarray(x.grad.data), expected)


def test_gradients_stay_on_the_input_device():
    xp = ag.namespace(NAME)
    device = jax.devices()[-1]
    x = ag.Variable(jax.device_put(jnp.ones((3, 4)), device), requires_grad=True)
    xp.sum(xp.sort(x, axis=1) * x[0]).backward()
    assert x.grad.data.devices() == {device}


def test_mixing_backends_in_one_op_names_both():
    j = ag.Variable(jnp.ones(3))
    n = ag.Variable(np.ones(3))
    with pytest.raises(ag.BackendError, match="'jax'.*'numpy'"):
        j + n
    with pytest.raises(ag.BackendError, match="'numpy'.*'jax'"):
        n - j
    with pytest.raises(ag.BackendError, match="jax.*numpy"):
        ag.namespace(NAME).matmul(j, n)


def test_raw_arrays_of_another_library_are_constants_as_in_jax():
    # jnp.ones(3) * np.arange(3.) works in JAX: a raw NumPy array is a constant here too.
    j = ag.Variable(jnp.arange(3.0) + 1, requires_grad=True)
    out = ag.namespace(NAME).matmul(j, np.arange(3.0))
    assert out.backend == NAME and float(out.data) == 8.0
    out.backward()
    np.testing.assert_allclose(np.asarray(j.grad.data), [0.0, 1.0, 2.0])


def test_to_moves_a_leaf_between_numpy_jax_and_torch():
    x = ag.Variable(np.arange(3.0), requires_grad=True)
    j = x.to(NAME)
    assert j.backend == NAME and j.is_leaf and j.requires_grad and isinstance(j.data, jax.Array)
    ag.namespace(NAME).sum(j * j).backward()
    np.testing.assert_array_equal(np.asarray(j.grad.data), [0.0, 2.0, 4.0])
    back = j.detach().to("numpy")
    assert isinstance(back.data, np.ndarray)
    np.testing.assert_array_equal(back.data, [0.0, 1.0, 2.0])
    with pytest.raises(ag.BackendError, match="moves leaves only"):
        (j + 1).to("numpy")
    torch = pytest.importorskip("torch")
    t = j.detach().to("torch")  # DLPack between the two libraries
    assert isinstance(t.data, torch.Tensor) and t.dtype == torch.float64
    assert t.to(NAME).backend == NAME
