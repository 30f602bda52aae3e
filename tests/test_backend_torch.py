"""The ``torch`` backend against the real PyTorch: tensors in Variables, gradients on the input's
device, float64 gradient checks on a representative set of ops, agreement with NumPy, moving
leaves between backends, errors when backends are mixed."""


import numpy as np
import pytest

import arraygrad as ag
from arraygrad.testing import check_grads

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (pip install 'arraygrad[torch]')")

NAME = "torch"

from backend_cases import (CASES, _inputs, _value_and_grads,  # noqa: E402
                           check_against_central_differences, check_against_numpy)


@pytest.mark.parametrize("case", CASES)
def test_gradients_match_central_differences_in_float64(case):
    check_against_central_differences(NAME, case)


@pytest.mark.parametrize("case", CASES)
def test_values_and_gradients_agree_with_numpy(case):
    check_against_numpy(NAME, case)


def test_complex_gradients_match_central_differences():
    xp = ag.namespace(NAME)
    rng = np.random.default_rng(3)
    z = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    check_grads(lambda z: xp.exp(z) * z / (z + 2) + xp.abs(z) ** 2, z, backend=NAME)


def test_a_torch_tensor_is_a_variable_and_its_gradient_a_torch_tensor():
    x = ag.Variable(torch.ones(3), requires_grad=True)
    assert x.backend == NAME and x.dtype == torch.float32
    xp = x.__array_namespace__()
    assert xp is ag.namespace(NAME)
    out = xp.mean((x + 2) * x * 3)
    out.backward()
    assert type(x.grad.data) is torch.Tensor
    assert x.grad.dtype == torch.float32
    assert torch.equal(x.grad.data, torch.full((3,), 4.0))
    assert out.item() == 9.0


@pytest.mark.parametrize("device", ["cpu", "meta", "cuda"])
def test_gradients_stay_on_the_input_device(device):
    # "meta" tensors have shapes and dtypes but no values: any hidden copy to the CPU, or an
    # array made on the default device by a rule, shows up as a device mismatch.
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    xp = ag.namespace(NAME)
    x = ag.Variable(torch.empty((3, 4), dtype=torch.float64, device=device), requires_grad=True)
    w = ag.Variable(torch.empty((4,), dtype=torch.float64, device=device), requires_grad=True)
    loss = (xp.sum(xp.exp(x @ w)) + xp.sum(xp.max(x, axis=0) * w)
            + xp.sum(xp.reshape(x, (12,))[::3] ** 2) + xp.sum(xp.cumulative_sum(x, axis=1)))
    loss.backward()
    for v in (x, w):
        assert type(v.grad.data) is torch.Tensor
        assert v.grad.data.device == torch.device(device) == v.device
        assert v.grad.shape == v.shape and v.grad.dtype == v.dtype


def test_tolerances_per_dtype_cover_float32_against_float64():
    be = ag.get_backend(NAME)
    assert be.tolerances("float64") == (1e-7, 1e-9)
    assert be.tolerances("float16")[0] > be.tolerances("float32")[0] > be.tolerances("float64")[0]
    f, shapes = CASES["elementwise"]
    arrays = _inputs(shapes)
    _, (grad64,) = _value_and_grads(NAME, f, arrays)
    _, (grad32,) = _value_and_grads(NAME, f, [a.astype(np.float32) for a in arrays])
    assert grad32.dtype == np.float32
    rtol, atol = be.tolerances("float32")
    np.testing.assert_allclose(grad32, grad64, rtol=rtol, atol=atol)


def test_capabilities_and_version():
    be = ag.get_backend(NAME)
    caps = be.capabilities()
    assert caps["inplace"] and caps["data_dependent_shapes"] and "float64" in be.dtypes
    assert be.version() == torch.__version__


def test_in_place_operators_modify_the_tensor_variable():
    xp = ag.namespace(NAME)
    x = ag.Variable(torch.arange(4.0, dtype=torch.float64), requires_grad=True)
    y = x * 2
    y += 1
    y[0] = 10.0
    xp.sum(y * y).backward()
    assert torch.equal(y.data, torch.tensor([10.0, 3.0, 5.0, 7.0], dtype=torch.float64))
    assert torch.equal(x.grad.data, torch.tensor([0.0, 12.0, 20.0, 28.0], dtype=torch.float64))
    x.grad.zero_()
    assert torch.count_nonzero(x.grad.data) == 0


def test_mixing_backends_in_one_op_names_both():
    t = ag.Variable(torch.ones(3, dtype=torch.float64))
    n = ag.Variable(np.ones(3))
    with pytest.raises(ag.BackendError, match="'torch'.*'numpy'"):
        t + n
    with pytest.raises(ag.BackendError, match="'numpy'.*'torch'"):
        n * t
    with pytest.raises(ag.BackendError, match="torch.*numpy"):
        ag.namespace(NAME).matmul(t, n)



def test_raw_arrays_and_scalars_of_another_library_are_constants():
    # As in torch itself: torch.ones(3) * np.ones(3), t.reshape((np.int64(3),)), t[np.int64(1)].
    t = ag.Variable(torch.arange(3.0, dtype=torch.float64) + 1, requires_grad=True)
    xp = ag.namespace(NAME)
    out = xp.sum(xp.reshape(t * np.arange(3.0), (np.int64(1), np.int64(3))) + t[np.int64(1)])
    assert out.backend == NAME and isinstance(out.data, torch.Tensor)
    out.backward()
    np.testing.assert_allclose(t.grad.data.numpy(), [0.0, 4.0, 2.0])
    assert isinstance(xp.asarray(np.ones(2)).data, torch.Tensor)
    n = ag.Variable(np.ones(3), requires_grad=True)
    mixed = ag.namespace("numpy").add(n, torch.ones(3, dtype=torch.float64))
    assert mixed.backend == "numpy" and mixed.requires_grad


def test_to_moves_a_leaf_between_numpy_and_torch():
    x = ag.Variable(np.arange(3.0), requires_grad=True)
    t = x.to(NAME)
    assert t.backend == NAME and t.is_leaf and t.requires_grad
    assert type(t.data) is torch.Tensor and t.dtype == torch.float64
    ag.namespace(NAME).sum(t * t).backward()
    np.testing.assert_array_equal(t.grad.data.numpy(), [0.0, 2.0, 4.0])
    assert x.grad is None  # gradients do not flow back across backends
    back = t.detach().to("numpy")
    assert back.backend == "numpy" and isinstance(back.data, np.ndarray)
    np.testing.assert_array_equal(back.data, [0.0, 1.0, 2.0])
    with pytest.raises(ag.BackendError, match="moves leaves only"):
        (t * 2).to("numpy")


@pytest.mark.parametrize("key", [
    (slice(None, None, -1),), (Ellipsis, slice(3, 0, -2)), (0, slice(None, None, -1), slice(1, None, -3)),
    (None, slice(None, None, -2), 1), (slice(5, None, -1),), (slice(0, 1, -1),),
    (slice(None, None, -1), [2, 0]), (Ellipsis, slice(2, 0, -1))])
def test_negative_step_slices_index_and_assign_as_in_numpy(key):
    # torch refuses negative steps; the standard allows them (flipped through the plugin).
    values = np.arange(24.0).reshape(2, 3, 4)
    torch_key = tuple(torch.tensor(k) if isinstance(k, list) else k for k in key)
    t = ag.Variable(torch.tensor(values), requires_grad=True)
    out = t[torch_key]
    np.testing.assert_array_equal(out.detach().numpy(), values[key])
    weights = np.random.default_rng(1).standard_normal(out.shape)
    xp = ag.namespace(NAME)
    xp.sum(out * xp.asarray(weights)).backward()
    expected = np.zeros_like(values)
    np.add.at(expected, key, weights)
    np.testing.assert_allclose(t.grad.data.numpy(), expected)
    y = t * 1
    y[torch_key] = 0.0
    assigned = values.copy()
    assigned[key] = 0.0
    np.testing.assert_array_equal(y.detach().numpy(), assigned)


def test_to_device_is_recorded_on_torch():
    t = ag.Variable(torch.arange(3.0, dtype=torch.float64), requires_grad=True)
    moved = t.to_device("cpu")
    ag.namespace(NAME).sum(moved * moved).backward()
    np.testing.assert_allclose(t.grad.data.numpy(), [0.0, 2.0, 4.0])


def test_a_tensor_that_torch_itself_tracks_is_refused():
    """Its gradient would go into torch's graph, which arraygrad never sees: refused as a
    Variable's data and as an operand, with the way out (detach, then a Variable)."""
    tracked = torch.ones(3, dtype=torch.float64, requires_grad=True)
    x = ag.Variable(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), requires_grad=True)
    xp = ag.namespace("torch")
    attempts = {"operator": lambda: x * tracked, "namespace": lambda: xp.add(x, tracked),
                "Variable()": lambda: ag.Variable(tracked, requires_grad=True),
                "non-elementwise": lambda: xp.matmul(x, tracked)}
    for what, attempt in attempts.items():
        with pytest.raises(ag.GradientError, match=r"own autograd tracks.*detach\(\)"):
            attempt()
    y = x * tracked.detach()
    xp.sum(y).backward()
    assert torch.equal(x.grad.data, torch.ones(3, dtype=torch.float64))


def test_two_argument_functions_call_torch_directly_only_where_the_compat_wrapper_changes_nothing():
    """plugins/_torch_fast: torch's own function for two tensors of one dtype or a tensor and a
    Python number it takes; array-api-compat's wrapper (its promotion fixes) otherwise."""
    import array_api_compat.torch as compat

    raw = ag.namespace(NAME)._backend.raw
    assert raw.multiply.__wrapped__ is torch.multiply
    calls = []
    real = raw.multiply.__closure__  # the direct path calls the cell holding torch.multiply
    spy = lambda a, b: calls.append(1) or torch.multiply(a, b)  # noqa: E731
    for cell in real:
        if cell.cell_contents is torch.multiply:
            cell.cell_contents = spy
    try:
        a = torch.arange(3, dtype=torch.float64)
        assert torch.equal(raw.multiply(a, a), a * a) and calls == [1]
        assert torch.equal(raw.multiply(a, 2.5), a * 2.5) and calls == [1, 1]
        # a 0-d float64 times float32: the standard's float64, which torch alone would downcast
        mixed = raw.multiply(torch.asarray(2.0, dtype=torch.float64), a.to(torch.float32))
        assert mixed.dtype == torch.float64 == compat.multiply(
            torch.asarray(2.0, dtype=torch.float64), a.to(torch.float32)).dtype
        assert calls == [1, 1]  # not through the direct path
    finally:
        for cell in real:
            if cell.cell_contents is spy:
                cell.cell_contents = torch.multiply
    # maximum takes no Python number in torch: the wrapper makes a tensor of it
    assert torch.equal(raw.maximum(torch.tensor([1.0, 3.0]), 2.0), torch.tensor([2.0, 3.0]))
