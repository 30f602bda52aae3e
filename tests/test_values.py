"""Wrapping never changes what users compute: on hypothesis-drawn inputs, every function of
the namespace gives the backend's own result, in value, dtype, shape and device."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

import arraygrad as ag

BACKENDS = ["numpy", "array_api_strict"]
UNARY = {
    "float": "acos acosh asin asinh atan atanh cos cosh exp expm1 log log1p log2 log10 sin sinh "
             "sqrt tan tanh reciprocal",
    "numeric": "abs negative positive square sign conj real imag",
    "real": "ceil floor round trunc signbit isfinite isinf isnan",
    "integer": "bitwise_invert",
    "boolean": "logical_not",
}
BINARY = {
    "float": "atan2 copysign hypot logaddexp nextafter divide pow",
    "numeric": "add subtract multiply equal not_equal",
    "real": "greater greater_equal less less_equal maximum minimum remainder floor_divide",
    "integer": "bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift",
    "boolean": "logical_and logical_or logical_xor",
}
REDUCTIONS = "sum prod mean max min var std all any cumulative_sum cumulative_prod".split()


def _strategies(name):
    raw = ag.get_backend(name).raw
    xps = make_strategies_namespace(raw)
    dtypes = {"float": xps.floating_dtypes(), "numeric": xps.numeric_dtypes(),
              "real": xps.real_dtypes(), "integer": xps.integer_dtypes(),
              "boolean": st.just(raw.bool)}
    return raw, xps, dtypes


def _same(backend, expected, result):
    """The Variable ``result`` holds exactly the raw ``expected``: value, dtype, shape, device."""
    assert isinstance(result, ag.Variable)
    assert result.dtype == expected.dtype
    assert tuple(result.shape) == tuple(expected.shape)
    assert result.device == expected.device
    impl = ag.get_backend(backend)
    np.testing.assert_array_equal(impl.to_numpy(result.data), impl.to_numpy(expected))


def _both(backend, call_raw, call_ours):
    """Compare the backend's own call with ours; both must fail alike if the backend fails."""
    try:
        expected = call_raw()
    except Exception as exc:
        with pytest.raises(type(exc)):
            call_ours()
        return
    _same(backend, expected, call_ours())


def _cases(table):
    return [(category, name) for category, names in table.items() for name in names.split()]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("category,name", _cases(UNARY))
@given(data=st.data())
def test_unary_elementwise(backend, category, name, data):
    raw, xps, dtypes = _strategies(backend)
    a = data.draw(xps.arrays(dtypes[category], xps.array_shapes(max_dims=3, max_side=3)))
    ours = getattr(ag.namespace(backend), name)
    _both(backend, lambda: getattr(raw, name)(a), lambda: ours(ag.Variable(a)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("category,name", _cases(BINARY))
@given(data=st.data())
def test_binary_elementwise_with_broadcasting(backend, category, name, data):
    raw, xps, dtypes = _strategies(backend)
    dtype = data.draw(dtypes[category])
    shapes = data.draw(xps.mutually_broadcastable_shapes(2, max_dims=3, max_side=3))
    a = data.draw(xps.arrays(dtype, shapes.input_shapes[0]))
    b = data.draw(xps.arrays(dtype, shapes.input_shapes[1]))
    ours = getattr(ag.namespace(backend), name)
    _both(backend, lambda: getattr(raw, name)(a, b), lambda: ours(ag.Variable(a), b))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", REDUCTIONS)
@given(data=st.data())
def test_reductions_with_axis_and_keepdims(backend, name, data):
    raw, xps, dtypes = _strategies(backend)
    dtype = data.draw(dtypes["boolean"] if name in ("all", "any") else xps.floating_dtypes())
    a = data.draw(xps.arrays(dtype, xps.array_shapes(min_dims=1, max_dims=3, max_side=3)))
    options = {}
    if name.startswith("cumulative"):
        options["axis"] = data.draw(st.integers(-a.ndim, a.ndim - 1))
        options["include_initial"] = data.draw(st.booleans())
    else:
        axes = data.draw(st.none() | st.lists(st.integers(0, a.ndim - 1), unique=True,
                                              min_size=1).map(tuple))
        options["axis"] = axes
        options["keepdims"] = data.draw(st.booleans())
        if name in ("var", "std"):
            options["correction"] = data.draw(st.sampled_from([0, 1]))
    ours = getattr(ag.namespace(backend), name)
    with np.errstate(all="ignore"):
        _both(backend, lambda: getattr(raw, name)(a, **options),
              lambda: ours(ag.Variable(a), **options))


MANIPULATIONS = {
    "reshape": lambda xp, a: xp.reshape(a, (-1,)),
    "permute_dims": lambda xp, a: xp.permute_dims(a, tuple(reversed(range(a.ndim)))),
    "flip": lambda xp, a: xp.flip(a, axis=0),
    "roll": lambda xp, a: xp.roll(a, 1, axis=0),
    "expand_dims": lambda xp, a: xp.expand_dims(a, axis=-1),
    "squeeze": lambda xp, a: xp.squeeze(xp.expand_dims(a, axis=0), axis=0),
    "moveaxis": lambda xp, a: xp.moveaxis(a, 0, -1),
    "tile": lambda xp, a: xp.tile(a, (2,) * a.ndim),
    "repeat": lambda xp, a: xp.repeat(a, 2, axis=0),
    "concat": lambda xp, a: xp.concat([a, a], axis=-1),
    "stack": lambda xp, a: xp.stack([a, a], axis=0),
    "broadcast_to": lambda xp, a: xp.broadcast_to(a, (2,) + tuple(a.shape)),
    "tril": lambda xp, a: xp.tril(xp.reshape(a, (a.shape[0], -1)), k=1),
    "triu": lambda xp, a: xp.triu(xp.reshape(a, (a.shape[0], -1)), k=-1),
    "sort": lambda xp, a: xp.sort(a, axis=-1, descending=True),
    "argsort": lambda xp, a: xp.argsort(a, axis=0),
    "argmax": lambda xp, a: xp.argmax(a, axis=-1, keepdims=True),
    "diff": lambda xp, a: xp.diff(a, axis=0, n=1),
    "where": lambda xp, a: xp.where(a > 0, a, -a),
    "clip": lambda xp, a: xp.clip(a, -0.5, 0.5),
    "astype": lambda xp, a: xp.astype(a, xp.float32),
    "take": lambda xp, a: xp.take(a, xp.asarray([0, 0]), axis=0),
    "matrix_transpose": lambda xp, a: xp.matrix_transpose(xp.reshape(a, (a.shape[0], -1))),
    "vector_norm": lambda xp, a: xp.linalg.vector_norm(a, axis=0, ord=3),
    "unstack": lambda xp, a: xp.unstack(a, axis=0)[0],
    "meshgrid": lambda xp, a: xp.meshgrid(xp.reshape(a, (-1,)), xp.reshape(a, (-1,)))[1],
    "getitem": lambda xp, a: a[::-1, ...],
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", MANIPULATIONS)
@given(data=st.data())
def test_manipulation_and_friends(backend, name, data):
    raw, xps, _ = _strategies(backend)
    a = data.draw(xps.arrays(xps.floating_dtypes(),
                             xps.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3)))
    call = MANIPULATIONS[name]
    _both(backend, lambda: call(raw, a), lambda: call(ag.namespace(backend), ag.Variable(a)))


def test_every_elementwise_function_has_a_value_test():
    from arraygrad import _standard

    tested = {n for table in (UNARY, BINARY) for names in table.values() for n in names.split()}
    assert set(_standard.ELEMENTWISE) - tested == {"clip"}  # clip is with the manipulations


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_share_the_gradient_equally_among_ties(backend, name):
    # torch.amax's convention; the ties lie along the reduced axis (and not across it).
    values = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 0.0, 2.0, 2.0]])
    sign = 1 if name == "max" else -1
    x = backend.variable(sign * values)
    getattr(backend.xp, name)(x, axis=1).backward(backend.array([1.0, 3.0]))
    np.testing.assert_allclose(backend.host(x.grad), [[0, 0.5, 0.5, 0], [1, 0, 1, 1]])
    x.grad = None
    getattr(backend.xp, name)(x).backward()
    np.testing.assert_allclose(backend.host(x.grad), [[0, 0.5, 0.5, 0], [0, 0, 0, 0]])


@pytest.mark.parametrize("spelling", ["x * c", "c * x", "x / c"])
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_a_python_complex_scalar_is_conjugated_in_the_vjp(spelling, kind):
    """PyTorch's convention, ``g * conj(dy/dx)``, holds for a Python complex scalar operand
    too, which the VJPs' ``conj`` passes by no faster path than an array's: for ``x * c`` the
    gradient is ``g * conj(c)`` (its real part for a real ``x``), for ``x / c`` it is
    ``g / conj(c)``."""
    c = 0.5 - 1.5j
    g = np.array([1.0 + 2.0j, -0.5 + 0.25j, 3.0 - 1.0j])
    data = np.array([0.3, -1.2, 2.0])
    if kind == "complex":
        data = data + np.array([1.0, 0.0, -0.5]) * 1j
    x = ag.Variable(data, requires_grad=True)
    y = {"x * c": lambda: x * c, "c * x": lambda: c * x, "x / c": lambda: x / c}[spelling]()
    y.backward(g)
    want = g / np.conj(c) if spelling == "x / c" else g * np.conj(c)
    np.testing.assert_allclose(x.grad.data, want.real if kind == "real" else want, rtol=1e-14)
