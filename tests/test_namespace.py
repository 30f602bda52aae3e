"""The differentiable namespace: operators, the core functions, creation, dtypes; gradients
checked against float64 central differences on every built-in backend."""

import operator
import types

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.testing import check_grads

OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]


@pytest.mark.parametrize("op", OPERATORS, ids=lambda f: f.__name__)
def test_operators_with_variables_scalars_and_reflected(backend, op, rng):
    a = rng.uniform(0.5, 2.0, (3, 2))
    b = rng.uniform(0.5, 2.0, (2,))
    check_grads(lambda x, y: op(x, y), a, b, backend=backend.name, order=2)
    check_grads(lambda x: op(x, 1.5), a, backend=backend.name, order=2)
    check_grads(lambda x: op(1.5, x), a, backend=backend.name, order=2)
    x = backend.variable(a)
    np.testing.assert_allclose(backend.host(op(2.0, x)), op(2.0, a))
    np.testing.assert_allclose(backend.host(op(x, 2)), op(a, 2))


def test_matmul_operator_and_unary_operators(backend, rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    check_grads(lambda x, y: x @ y, a, b, backend=backend.name, order=2)
    check_grads(lambda x: -x + (+x) * abs(x), a, backend=backend.name)


def _logging_backend(name, version, scalars=True):
    """A backend of its own ndarray subclass (``make`` turns a NumPy array into one) whose
    namespace, of standard ``version``, logs each call of an operator's function as (name,
    argument types); with ``scalars=False`` those functions refuse Python numbers, as a
    namespace older than the standard's 2024.12 may."""
    import array_api_compat.numpy as compat

    class Own(np.ndarray):
        pass

    calls = []
    logged = ("add", "subtract", "multiply", "divide", "pow", "matmul", "less")

    class Namespace:
        __array_api_version__ = version

        def __getattr__(self, attr):
            value = getattr(compat, attr)
            if attr not in logged:
                return value

            def function(*args, **kwargs):
                if not scalars and any(type(a) in (bool, int, float, complex) for a in args):
                    raise TypeError(f"{attr}() takes arrays only")
                calls.append((attr, *[type(a) for a in args]))
                return value(*args, **kwargs)
            return function

    def coerce(value):
        return None if type(value) is Own else np.asarray(value).view(Own)

    if name not in ag.registry.backends:
        ag.register_backend(types.SimpleNamespace(arraygrad_backend=ag.hookimpl(
            lambda: ag.BackendSpec(name=name, arrays=(Own,), namespace=Namespace,
                                   coerce=coerce))), name=f"plugin-{name}")
    calls.clear()
    return calls, lambda array: ag.Variable(np.asarray(array).view(Own))


def test_operators_call_the_functions_of_the_plugins_namespace():
    """``x @ m`` calls the namespace's ``matmul`` (where a plugin's fix-up lives), not the
    array type's ``__matmul__``; Python numbers go to a 2024.12 namespace as they are."""
    calls, make = _logging_backend("logging_2024", "2024.12")
    x, m = make(np.array([1.0, 2.0], np.float32)), make(np.eye(2, dtype=np.float32))
    x.requires_grad = True
    y = (2 * x + x ** 2 - 1 / x) @ m
    y += 1
    np.testing.assert_array_equal(np.asarray(x < 1.5), [True, False])
    assert [call[0] for call in calls] == ["multiply", "pow", "add", "divide", "subtract",
                                           "matmul", "add", "less"]
    assert (calls[0][1], calls[1][2], calls[3][1]) == (int, int, int)  # 2 *, ** 2, 1 /
    assert y.dtype == np.float32
    np.testing.assert_allclose(np.asarray(y.detach()), [3.0, 8.5])
    y.sum().backward()  # d/dx (2x + x^2 - 1/x) = 2 + 2x + 1/x^2
    np.testing.assert_allclose(np.asarray(x.grad), [5.0, 6.25])


def test_an_older_namespace_gets_python_numbers_as_arrays_of_the_operands_dtype():
    """Before the standard's 2024.12 its functions took arrays only: ``x + 2`` calls ``add``
    with a 0-d array of x's dtype, as the standard's operators take the number. A mix the
    standard leaves to the library (an integer array and a float) is the library's operator's."""
    calls, make = _logging_backend("logging_2023", "2023.12", scalars=False)
    x = make(np.array([1.0, 2.0], np.float32))
    x.requires_grad = True
    for result in (x + 2, 2 * x, x ** 2, 1 / x, x - 0.5, 2.5 * x):
        assert result.dtype == np.float32 and result.requires_grad
    # (a float32 result proves the number's array float32: a float64 one would promote)
    assert len(calls) == 6 and all(len(call) == 3 and issubclass(call[1], np.ndarray) and
                                   issubclass(call[2], np.ndarray) for call in calls), calls
    (x * 3).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), [3.0, 3.0])
    calls.clear()
    complex64 = make(np.ones(2, np.complex64))
    assert (complex64 * 2.5).dtype == np.complex64 and calls[-1][0] == "multiply"
    calls.clear()
    integers = make(np.arange(3))
    assert (integers * 2.5).dtype == np.float64 and (integers + True).dtype == np.int64
    assert (x * 1j).dtype == np.complex64  # NumPy's own promotion
    assert not calls


def test_comparisons_return_variables_without_grad(backend):
    x = backend.variable(np.array([1.0, 2.0, 3.0]))
    for result in (x < 2, x <= 2, x > 2, x >= 2, x == 2, x != 2, 2 > x):
        assert isinstance(result, ag.Variable) and not result.requires_grad
    np.testing.assert_array_equal(backend.host(x > 1.5), [False, True, True])


POSITIVE = (0.5, 2.0)
UNIT = (-0.9, 0.9)
ELEMENTWISE = {
    "exp": None, "log": POSITIVE, "log1p": POSITIVE, "expm1": None, "sin": None, "cos": None,
    "tanh": None, "sqrt": POSITIVE, "square": None, "abs": (0.2, 2.0),
}


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_gradients(backend, name, rng):
    low, high = ELEMENTWISE[name] or (-2.0, 2.0)
    a = rng.uniform(low, high, (2, 3))
    if name == "abs":
        a = a * np.sign(rng.standard_normal((2, 3)))
    f = getattr(backend.xp, name)
    check_grads(f, a, backend=backend.name, order=2)


@pytest.mark.parametrize("name", ["pow", "maximum", "minimum", "logaddexp"])
def test_binary_gradients_with_broadcasting(backend, name, rng):
    a, b = rng.uniform(0.5, 2.0, (2, 3)), rng.uniform(0.5, 2.0, (3,))
    check_grads(getattr(backend.xp, name), a, b, backend=backend.name, order=2)


def test_where_and_clip(backend, rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3,))
    condition = backend.raw.asarray(np.array([True, False, True]))
    check_grads(lambda x, y: backend.xp.where(condition, x, y), a, b, backend=backend.name)
    check_grads(lambda x: backend.xp.clip(x, -0.5, 0.5), a, backend=backend.name)
    check_grads(lambda x, lo: backend.xp.clip(x, min=lo), a, b, backend=backend.name)


def test_ties_and_kinks_follow_pytorch(backend):
    xp = backend.xp
    x = backend.variable(np.array([1.0, 2.0, 2.0, 0.0]))
    y = backend.variable(np.array([1.0, 3.0, 1.0, 0.0]))
    xp.sum(xp.maximum(x, y)).backward()
    np.testing.assert_allclose(backend.host(x.grad), [0.5, 0.0, 1.0, 0.5])  # ties split
    np.testing.assert_allclose(backend.host(y.grad), [0.5, 1.0, 0.0, 0.5])
    x.grad = None
    xp.max(x).backward()
    np.testing.assert_allclose(backend.host(x.grad), [0.0, 0.5, 0.5, 0.0])  # like torch.amax
    x.grad = None
    xp.sum(xp.abs(x) + xp.clip(x, 1.0, 2.0)).backward()
    np.testing.assert_allclose(backend.host(x.grad), [2.0, 2.0, 2.0, 0.0])  # abs'(0) = 0
    z = backend.variable(np.array([0.0, 4.0]))
    xp.sum(xp.sqrt(z)).backward()
    assert np.isinf(backend.host(z.grad)[0])  # sqrt'(0) = inf, as in PyTorch


AXES = [None, 0, -1, (0, 2), (-1, 0)]


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "var", "std"])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(backend, name, axis, keepdims, rng):
    a = rng.uniform(0.5, 1.5, (2, 3, 4)) * rng.choice([-1, 1], (2, 3, 4))
    function = getattr(backend.xp, name)
    check_grads(lambda x: function(x, axis=axis, keepdims=keepdims), a, backend=backend.name,
                order=2 if name in ("sum", "prod", "var") else 1)
    expected = getattr(np, {"max": "amax", "min": "amin"}.get(name, name))(a, axis=axis, keepdims=keepdims)
    result = function(backend.variable(a), axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(backend.host(result), expected)


@pytest.mark.parametrize("name", ["sum", "max", "var"])
def test_positional_options_are_refused_not_misread(backend, rng, name):
    """The standard makes a reduction's axis keyword-only: a positional one would reach the
    backend but not the rule, so it is refused with a message naming the keyword."""
    x = backend.variable(rng.standard_normal((3, 3)), requires_grad=True)
    with pytest.raises(TypeError, match=rf"{name}\(\) takes 1 positional argument.* axis=\.\.\."):
        getattr(backend.xp, name)(x, 0)
    check_grads(lambda v: getattr(backend.xp, name)(v, axis=0), backend.host(x),
                backend=backend.name)


@pytest.mark.parametrize("call, option", [
    (lambda xp, x: xp.reshape(x, (4, 3), order="F"), "order='F'"),
    (lambda xp, x: xp.sum(x, axis=1, initial=0.5), "initial=0.5"),
    (lambda xp, x: xp.max(x, axis=0, keepdims=True, initial=100.0), "initial=100.0"),
])
def test_plain_options_no_rule_reads_are_refused(call, option, rng):
    """A plain-valued option (a string, a number) that the rule does not read would change the
    value but not the gradient: the one-array fast path hands it to the checks, which refuse."""
    xp = ag.namespace("numpy")
    x = ag.Variable(rng.standard_normal((3, 4)), requires_grad=True)
    with pytest.raises(TypeError, match=rf"the option {option}.*does not read it"):
        call(xp, x)


def test_unread_options_are_refused_before_the_backend_runs(backend, rng):
    """With a gradient to record, an option the rule does not read is refused before the
    backend's function sees it: its own error (torch's, array-api-compat's) is not what the
    user needs to read."""
    x = backend.variable(rng.standard_normal((2, 2)), requires_grad=True)
    with pytest.raises(TypeError, match=r"linalg\.svd\(\): the option hermitian=False .*"
                                        r"does not read it"):
        backend.xp.linalg.svd(x, hermitian=False)


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("n", [2, 3])
def test_svd_compute_uv_is_refused_with_or_without_a_gradient(backend, rng, requires_grad, n):
    """compute_uv=False makes array-api-compat's NumPy svd put the singular values of a 3x3
    matrix in U, S and Vh (and fail on a 2x2): refused on every backend, pointing to svdvals."""
    x = backend.variable(rng.standard_normal((n, n)), requires_grad=requires_grad)
    with pytest.raises(TypeError, match=r"linalg\.svd\(\): the option compute_uv=False is not "
                                        r"an option .*changes what the function returns.*"
                                        r"call linalg\.svdvals\(x\), which has a gradient"):
        backend.xp.linalg.svd(x, compute_uv=False)
    if not requires_grad and backend.name == "numpy":  # the default passes on where no
        # gradient is recorded (NumPy's svd takes the option; the standard's does not)
        u, s, vh = backend.xp.linalg.svd(x, compute_uv=True)
        np.testing.assert_allclose(backend.host(s), np.linalg.svd(backend.host(x),
                                                                   compute_uv=False))


@pytest.mark.parametrize("axis", [np.int64(1), (np.int64(1),)])
def test_backend_integers_as_options_are_read_as_python_ints(axis, rng):
    """``axis=np.int64(1)``, alone or in a tuple, is not a plain option: the general path
    converts it, and the gradient is the one of ``axis=1``."""
    xp = ag.namespace("numpy")
    a = rng.standard_normal((3, 4))
    x = ag.Variable(a, requires_grad=True)
    y = xp.max(x, axis=axis, keepdims=True)
    recorded = y.grad_fn.params["axis"]
    assert [type(item) for item in (recorded if type(recorded) is tuple else (recorded,))] == [int]
    assert recorded in (1, (1,))
    xp.sum(y * xp.asarray(np.arange(1.0, 4.0)[:, None])).backward()
    expected = (a == a.max(axis=1, keepdims=True)) * np.arange(1.0, 4.0)[:, None]
    np.testing.assert_array_equal(x.grad.data, expected)


PLAIN_KEYS = [slice(1, None), (slice(None, -1), 2), (None, Ellipsis, 0), (slice(None, None, 2),),
              (1, slice(0, 3), None)]
CHECKED_KEYS = [slice(np.int64(1), None), (np.int64(1), slice(0, 3)), [0, 2, 0], (True, 1)]


@pytest.fixture
def checked(monkeypatch):
    """The names of the functions called through the recorder's checks, in order."""
    from arraygrad._namespace import _Recorder

    names, original = [], _Recorder.checked_call
    monkeypatch.setattr(_Recorder, "checked_call", lambda self, args, kwargs: names.append(
        self.name) or original(self, args, kwargs))
    return names


@pytest.mark.parametrize("key", PLAIN_KEYS + CHECKED_KEYS, ids=repr)
def test_index_keys_of_python_integers_take_the_fast_path_others_are_checked(key, rng, checked):
    """A key made of Python integers, slices of them, None and ``...`` is passed on unchecked
    (slicing is on every loop's path); one holding NumPy integers, lists or booleans goes
    through the checks that convert it. Both give NumPy's value and gradient."""
    a = rng.standard_normal((3, 4))
    x = ag.Variable(a, requires_grad=True)
    y = x[key]
    assert checked == ([] if any(key is k for k in PLAIN_KEYS) else ["__getitem__"])
    np.testing.assert_array_equal(y.data, a[key])
    ag.namespace("numpy").sum(y * y).backward()
    expected = np.zeros_like(a)
    np.add.at(expected, key if not isinstance(key, list) else (np.array(key),), 2 * a[key])
    np.testing.assert_allclose(x.grad.data, expected)


def test_arrays_of_the_backend_are_constants_without_the_checks(rng, checked):
    """``X @ w`` and ``y * raw`` with a NumPy array: taken as a constant on the fast path, with
    NumPy's value and the gradient in ``w`` alone; a masked array is refused there by the
    backend's ``coerce``, and what no backend owns (a list) goes through the checks, which
    convert it."""
    xp = ag.namespace("numpy")
    X, a = rng.standard_normal((5, 3)), rng.standard_normal(3)
    w = ag.Variable(a, requires_grad=True)
    y = xp.matmul(X, w)
    z = xp.multiply(y, X[:, 0])
    assert checked == [] and z.grad_fn is not None
    xp.sum(z).backward()
    np.testing.assert_allclose(w.grad.data, X.T @ X[:, 0])
    with pytest.raises(TypeError, match="MaskedArray"):
        xp.multiply(np.ma.masked_array(a, [0, 1, 0]), w)
    checked.clear()  # (checked or not, as the type was met before: refused either way)
    np.testing.assert_allclose(xp.add(w, [1.0, 2.0, 3.0]).data, a + [1.0, 2.0, 3.0])
    assert checked == ["add"]


@pytest.mark.parametrize("scalar", [np.float64(2.5), np.float32(2.5), np.int64(3)],
                         ids=["float64", "float32", "int64"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_scalars_are_constants_without_the_checks(rng, checked, scalar, dtype):
    """``x * np.float64(2.5)``, as SciPy's and NumPy users' code makes them (a reduction's
    result, ``dtype.type(2)``): a 0-d array on the fast path, so the result's dtype is NumPy's
    for a 0-d array (float64 from float32 times a float64 scalar) and the gradient is right."""
    xp = ag.namespace("numpy")
    a = rng.standard_normal(3).astype(dtype)
    w = ag.Variable(a, requires_grad=True)
    w * scalar  # (the first value of a type is checked, which finds its backend)
    checked.clear()
    y, z = w * scalar, xp.subtract(scalar, w)
    assert checked == [] and y.grad_fn is not None and type(y.data) is np.ndarray
    expected = a * np.asarray(scalar)
    assert y.dtype == expected.dtype and z.dtype == (np.asarray(scalar) - a).dtype
    np.testing.assert_array_equal(y.data, expected)
    xp.sum(y * y + z).backward()
    np.testing.assert_allclose(w.grad.data, 2 * a * float(scalar) ** 2 - 1, rtol=1e-6)
    assert w.grad.dtype == a.dtype


def test_arrays_of_the_backend_beside_options_skip_the_checks_too(rng, checked):
    """``take(x, indices, axis=0)``, a gather in every step of a simulation: a NumPy index
    array beside an option is taken as it is; a list of indices still goes through the
    checks, which convert it."""
    xp = ag.namespace("numpy")
    a, index = rng.standard_normal((4, 2)), np.array([3, 0, 3, 1])
    x = ag.Variable(a, requires_grad=True)
    y = xp.take(x, index, axis=0)
    assert checked == [] and y.grad_fn is not None
    np.testing.assert_array_equal(y.data, a[index])
    xp.sum(y * y).backward()
    expected = np.zeros_like(a)
    np.add.at(expected, index, 2 * a[index])
    np.testing.assert_allclose(x.grad.data, expected)
    np.testing.assert_array_equal(xp.take(x, [3, 0], axis=0).data, a[[3, 0]])
    assert checked == ["take"]


def test_transforms_forget_the_leaves_they_made():
    """The leaves ``grad`` makes for raw arguments are noted (to tell its own graph from an
    outer one) only while they live."""
    import gc

    from arraygrad import _grad_mode

    xp = ag.namespace("numpy")
    g = ag.grad(lambda x: xp.sum(x * x))
    gc.collect()
    before = len(_grad_mode._made)
    for _ in range(50):
        g(np.ones(3))
    gc.collect()
    assert len(_grad_mode._made) <= before


def test_var_and_std_with_correction(backend, rng):
    a = rng.standard_normal((3, 4))
    check_grads(lambda x: backend.xp.var(x, axis=1, correction=1), a, backend=backend.name)
    check_grads(lambda x: backend.xp.std(x, correction=1), a, backend=backend.name)


def test_prod_with_zeros(backend, rng):
    a = rng.standard_normal((3, 4))
    a[0, 1] = 0.0
    a[2, 0] = a[2, 3] = 0.0
    check_grads(lambda x: backend.xp.prod(x, axis=1), a, backend=backend.name)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 2)), ((2, 3, 4), (4, 5)), ((4,), (4, 2)),
                                    ((3, 4), (4,)), ((4,), (4,)), ((2, 1, 3, 4), (5, 4, 2))],
                         ids=str)
def test_matmul_shapes(backend, shapes, rng):
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    check_grads(backend.xp.matmul, a, b, backend=backend.name, order=2)


MANIPULATIONS = {
    "reshape": lambda xp, x: xp.reshape(x, (4, 3)),
    "permute_dims": lambda xp, x: xp.permute_dims(x, (1, 0)),
    "matrix_transpose": lambda xp, x: xp.matrix_transpose(x),
    "T": lambda xp, x: x.T * x.mT,
    "expand_dims": lambda xp, x: xp.expand_dims(x, axis=1),
    "squeeze": lambda xp, x: xp.squeeze(xp.reshape(x, (3, 1, 4)), axis=1),
    "broadcast_to": lambda xp, x: xp.broadcast_to(x, (2, 3, 4)),
    "concat": lambda xp, x: xp.concat([x, 2 * x, x[:1, :]], axis=0),
    "concat_none": lambda xp, x: xp.concat([x, x[:, :2]], axis=None),
    "stack": lambda xp, x: xp.stack([x, 3 * x], axis=-1),
    "flip": lambda xp, x: xp.flip(x, axis=0),
    "roll": lambda xp, x: xp.roll(x, 2, axis=1),
    "moveaxis": lambda xp, x: xp.moveaxis(xp.reshape(x, (3, 2, 2)), 0, -1),
    "tile": lambda xp, x: xp.tile(x, (2, 1)),
    "repeat": lambda xp, x: xp.repeat(x, 2, axis=1),
}


@pytest.mark.parametrize("name", MANIPULATIONS)
def test_manipulation(backend, name, rng):
    a = rng.standard_normal((3, 4))
    check_grads(lambda x: MANIPULATIONS[name](backend.xp, x), a, backend=backend.name)


INDEXING = {
    "basic": lambda b, x: x[1:, ::2],
    "int": lambda b, x: x[1, ...],
    "none_ellipsis": lambda b, x: x[None, ..., 0],
    "int_array_repeats": lambda b, x: x[b.raw.asarray(np.array([0, 2, 0])), 1],
    "two_int_arrays": lambda b, x: x[b.raw.asarray(np.array([0, 0, 1])), b.raw.asarray(np.array([3, 3, 1]))],
    "boolean_mask": lambda b, x: x[b.raw.asarray(np.array([True, False, True]))],
    "take": lambda b, x: b.xp.take(x, b.raw.asarray(np.array([1, 1, 3])), axis=1),
}


@pytest.mark.parametrize("name", INDEXING)
def test_getitem(backend, name, rng):
    a = rng.standard_normal((3, 4))
    check_grads(lambda x: INDEXING[name](backend, x), a, backend=backend.name, order=2)


def test_linalg_vector_norm(backend, rng):
    a = rng.standard_normal((3, 4))
    for kwargs in ({}, {"axis": 1}, {"axis": (0, 1), "keepdims": True}, {"ord": 1},
                   {"ord": 3, "axis": 0}, {"ord": float("inf")}):
        check_grads(lambda x: backend.xp.linalg.vector_norm(x, **kwargs), a, backend=backend.name)


CREATORS = {
    "asarray": lambda xp: xp.asarray([1.0, 2.0]), "zeros": lambda xp: xp.zeros((2,)),
    "ones": lambda xp: xp.ones((2,)), "full": lambda xp: xp.full((2,), 3.0),
    "arange": lambda xp: xp.arange(3), "linspace": lambda xp: xp.linspace(0, 1, 5),
    "eye": lambda xp: xp.eye(3), "empty": lambda xp: xp.empty((2,)),
}


@pytest.mark.parametrize("name", CREATORS)
def test_creation_functions_return_constant_variables(backend, name):
    made = CREATORS[name](backend.xp)
    assert isinstance(made, ag.Variable) and not made.requires_grad and made.grad_fn is None
    x = backend.variable(np.ones((2, 3)))
    for like in ("zeros_like", "ones_like", "empty_like"):
        result = getattr(backend.xp, like)(x)
        assert isinstance(result, ag.Variable) and not result.requires_grad
    full = backend.xp.full_like(x, 2.0)
    assert not full.requires_grad and backend.host(full).tolist() == [[2.0] * 3] * 2


def test_asarray_keeps_variables_in_the_graph(backend):
    xp = backend.xp
    x = backend.variable(np.array([1.0, 2.0]))
    assert xp.asarray(x) is x  # code that starts with x = xp.asarray(x) stays differentiable
    y = xp.asarray(x, dtype=xp.float32)
    assert y.dtype == xp.float32 and y.requires_grad
    xp.sum(y * y + xp.asarray(x, copy=True)).backward()
    np.testing.assert_allclose(backend.host(x.grad), [3.0, 5.0])


def test_dtypes_constants_and_inspection(backend):
    xp, raw = backend.xp, backend.raw
    for name in ("float32", "float64", "int64", "bool", "complex128"):
        assert getattr(xp, name) == getattr(raw, name)
    assert xp.pi == raw.pi and xp.newaxis is None
    x = backend.variable(np.ones(2))
    assert xp.result_type(x, xp.float32) == raw.float64
    assert xp.finfo(x).eps == raw.finfo(raw.float64).eps
    assert xp.isdtype(x.dtype, "real floating")
    assert xp.__array_api_version__ == raw.__array_api_version__
    assert xp.__array_namespace_info__().default_dtypes()["real floating"] == raw.float64
    assert x.__array_namespace__() is xp
    assert ag.namespace(backend.raw) is xp and ag.namespace(x.data) is xp


def test_variable_array_attributes(backend):
    x = backend.variable(np.arange(6.0).reshape(2, 3))
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.dtype == backend.xp.float64
    assert x.device == x.data.device
    assert x.T.shape == (3, 2) and x.mT.shape == (3, 2)
    assert x[1, 2].item() == 5.0 and len(x) == 2
    assert bool(x[0, 1]) and int(x[1, 0]) == 3 and float(x[1, 1]) == 4.0


@pytest.mark.parametrize("module, name", [
    ("numpy", "numpy"), ("torch", "torch"), ("dask.array", "dask"), ("jax.numpy", "jax"),
    ("array_api_strict", "array_api_strict"), ("array_api_compat.numpy", "numpy"),
])
def test_a_librarys_own_module_names_its_backend(module, name):
    """``ag.namespace(np)``, as a NumPy user writes it, is the NumPy backend's namespace (the
    backend registers array-api-compat's wrapper of NumPy, not ``numpy`` itself)."""
    library = pytest.importorskip(module)
    xp = ag.namespace(library)
    assert xp is ag.namespace(name)
    x = ag.Variable(xp.asarray([1.0, 2.0, 3.0]), requires_grad=True)
    xp.sum(x * x).backward()
    np.testing.assert_allclose(np.asarray(ag.get_backend(name).to_numpy(x.grad.data)),
                               [2.0, 4.0, 6.0])


def test_a_module_that_is_no_array_library_is_refused_with_the_names_to_pass():
    import math

    with pytest.raises(ag.BackendError, match="no registered backend matches.*math.*numpy"):
        ag.namespace(math)


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
def test_comparison_with_none_or_text_is_pythons_answer(backend):
    """``x == None`` and ``x != "a"`` give Python's answer, as a torch tensor's do, on every
    backend (the backend's function would refuse or broadcast them); ``x < "a"`` refuses."""
    x = ag.Variable(ag.namespace(backend).ones(2))
    assert (x == None) is False and (x != "a") is True  # noqa: E711
    with pytest.raises(TypeError, match="'<' not supported"):
        x < "a"  # noqa: B015
