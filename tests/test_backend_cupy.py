"""The ``cupy`` backend. Without CuPy or a usable GPU the backend is listed as "not available:
<reason>" and the GPU tests skip, saying why. On a GPU machine the GPU tests check gradients
against central differences and NumPy, and that forward and backward make no host round trips:
they run under CUDA stream capture, where any synchronous device-to-host copy is an error."""

import subprocess
import sys
import types

import numpy as np
import pytest

import arraygrad as ag

NAME = "cupy"

from backend_cases import CASES as _ALL_CASES, _inputs  # noqa: E402
from backend_cases import check_against_central_differences  # noqa: E402

CASES = {name: case for name, case in _ALL_CASES.items() if name != "setitem"}


def _info():
    return {info.name: info for info in ag.backends()}[NAME]


@pytest.fixture(scope="module")
def cupy():
    """CuPy with a usable GPU, or a skip that says what is missing."""
    module = pytest.importorskip(
        "cupy", reason="CuPy is not installed (pip install 'arraygrad[cupy]')")
    info = _info()
    if not info.available:
        pytest.skip(f"the cupy backend is not available: {info.reason}")
    return module


# ------------------------------------------------------------------------- without a GPU


def test_listed_as_not_available_with_a_reason_when_unusable():
    info = _info()
    if info.available:
        pytest.skip("CuPy has a usable GPU here: the GPU tests below apply")
    assert info.reason, "a backend that is not available must say why"
    assert "cupy" in info.reason.lower() or "cuda" in info.reason.lower(), info.reason
    with pytest.raises(ag.BackendUnavailable, match="backend 'cupy' is not available"):
        ag.namespace(NAME)
    done = subprocess.run([sys.executable, "-m", "arraygrad.cli", "backends"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.split()[0] == NAME)
    assert "not available: " in line and line.split("not available: ", 1)[1].strip()
    # the other backends keep working
    x = ag.Variable(np.ones(3), requires_grad=True)
    ag.namespace("numpy").sum(x * x).backward()
    np.testing.assert_array_equal(x.grad.data, [2.0, 2.0, 2.0])


@pytest.mark.parametrize("count, error, expected", [
    (None, "cudaErrorNoDevice: no CUDA-capable device is detected",
     "no usable CUDA device (CUDARuntimeError: cudaErrorNoDevice"),
    (0, None, "no CUDA device found"),
])
def test_the_reason_names_the_missing_device(monkeypatch, count, error, expected):
    # The plugin's own check, with a stand-in for the cupy module: CuPy imports without a GPU
    # and fails only at its first array, so the plugin asks for the device count up front.
    from arraygrad_plugins import cupy as plugin

    class CUDARuntimeError(RuntimeError):
        pass

    def device_count():
        if error is not None:
            raise CUDARuntimeError(error)
        return count

    stand_in = types.SimpleNamespace(cuda=types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=device_count)))
    monkeypatch.setitem(sys.modules, "cupy", stand_in)
    with pytest.raises(RuntimeError) as caught:
        ag.hookspecs.load(plugin.arraygrad_backend().namespace)
    assert expected in str(caught.value)


# ------------------------------------------------------------------------------ on a GPU


@pytest.mark.parametrize("case", CASES)
def test_gradients_match_central_differences_in_float64(cupy, case):
    check_against_central_differences(NAME, case)


@pytest.mark.parametrize("case", CASES)
def test_values_and_gradients_agree_with_numpy(cupy, case):
    f, shapes = CASES[case]
    arrays = _inputs(shapes)
    results = {}
    for backend in (NAME, "numpy"):
        be = ag.get_backend(backend)
        inputs = [ag.Variable(be.raw.asarray(a), requires_grad=True) for a in arrays]
        out = f(be.ns, *inputs)
        g = np.random.default_rng(1).standard_normal(tuple(out.shape))
        out.backward(be.raw.asarray(g))
        results[backend] = [be.to_numpy(out.data)] + [be.to_numpy(x.grad.data) for x in inputs]
    rtol, atol = ag.get_backend(NAME).tolerances("float64")
    for ours, expected in zip(results[NAME], results["numpy"]):
        np.testing.assert_allclose(ours, expected, rtol=rtol, atol=atol)


def _loss(xp, x, w, indices):
    return (xp.mean((x @ w - 1.0) ** 2) + xp.sum(xp.sort(x, axis=1)[:, 1:] * xp.max(x, axis=0)[1:])
            + xp.sum(xp.cumulative_prod(x, axis=1)) + xp.sum(xp.take(x, indices, axis=0)))


def test_gradients_stay_on_the_gpu_without_host_transfers(cupy):
    xp = ag.namespace(NAME)
    rng = np.random.default_rng(0)
    x_host, w_host = rng.standard_normal((4, 3)), rng.standard_normal((3,))
    x = ag.Variable(cupy.asarray(x_host), requires_grad=True)
    w = ag.Variable(cupy.asarray(w_host), requires_grad=True)
    indices = cupy.asarray([0, 0, 2])  # made before the capture: a host-to-device copy
    _loss(xp, x, w, indices).backward()  # warm-up: compiles kernels and fills the memory pool
    expected = [v.grad.data.get() for v in (x, w)]
    x.grad = w.grad = None
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            _loss(xp, x, w, indices).backward()  # a device-to-host copy here raises
        finally:
            graph = stream.end_capture()
    graph.launch(stream)
    stream.synchronize()
    for v, grad in zip((x, w), expected):
        assert isinstance(v.grad.data, cupy.ndarray)
        assert v.grad.data.device == v.data.device
        np.testing.assert_allclose(v.grad.data.get(), grad, rtol=1e-12)


def test_stream_capture_does_catch_a_host_transfer(cupy):
    # The control for the test above: the same capture fails on a single host read.
    x = cupy.ones(3)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream, pytest.raises(Exception):
        stream.begin_capture()
        try:
            float(cupy.sum(x))
        finally:
            stream.end_capture()


def test_gradients_stay_on_a_second_gpu(cupy):
    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    xp = ag.namespace(NAME)
    with cupy.cuda.Device(1):
        values = np.random.default_rng(0).standard_normal((4, 3))
        x = ag.Variable(cupy.asarray(values), requires_grad=True)
        w = ag.Variable(cupy.ones(3), requires_grad=True)
        indices = cupy.asarray([0, 0, 2])
    _loss(xp, x, w, indices).backward()
    assert x.grad.data.device.id == 1 and w.grad.data.device.id == 1


def test_mixing_and_moving_between_cupy_and_numpy(cupy):
    c = ag.Variable(cupy.ones(3))
    n = ag.Variable(np.ones(3))
    with pytest.raises(ag.BackendError, match="'cupy'.*'numpy'"):
        c + n
    moved = ag.Variable(np.arange(3.0), requires_grad=True).to(NAME)
    assert moved.backend == NAME and moved.is_leaf and moved.requires_grad
    assert isinstance(moved.data, cupy.ndarray)
    back = moved.detach().to("numpy")
    np.testing.assert_array_equal(back.data, [0.0, 1.0, 2.0])
