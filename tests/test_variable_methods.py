"""The methods NumPy and torch users type on a Variable (x.sum(), x.mean(axis=0), x.reshape(2, 3),
x.transpose(), x.exp(), ...): each records exactly as the namespace function it stands for, on
every built-in backend, and refuses what it does not take with a message that translates it."""

import numpy as np
import pytest

import arraygrad as ag
from arraygrad._methods import NOT_ATTRIBUTES, OTHER_NAMES
from arraygrad.testing import gradient_errors

POSITIVE = "positive"  # log and sqrt: values in [0.5, 2.5)

# (id, the method call, the namespace call it stands for, input shape[, domain])
CASES = [
    ("sum", lambda x: x.sum(), lambda xp, x: xp.sum(x), (2, 3, 4)),
    ("sum-axis", lambda x: x.sum(1), lambda xp, x: xp.sum(x, axis=1), (2, 3, 4)),
    ("sum-axes-keepdims", lambda x: x.sum(axis=(0, 2), keepdims=True),
     lambda xp, x: xp.sum(x, axis=(0, 2), keepdims=True), (2, 3, 4)),
    ("sum-list-axis", lambda x: x.sum([0, -1]), lambda xp, x: xp.sum(x, axis=(0, -1)), (2, 3, 4)),
    ("prod", lambda x: x.prod(axis=0), lambda xp, x: xp.prod(x, axis=0), (2, 3, 4)),
    ("mean", lambda x: x.mean(), lambda xp, x: xp.mean(x), (2, 3, 4)),
    ("mean-axis-keepdims", lambda x: x.mean(-1, keepdims=True),
     lambda xp, x: xp.mean(x, axis=-1, keepdims=True), (2, 3, 4)),
    ("max", lambda x: x.max(), lambda xp, x: xp.max(x), (2, 3, 4)),
    ("max-axis", lambda x: x.max(axis=1), lambda xp, x: xp.max(x, axis=1), (2, 3, 4)),
    ("min", lambda x: x.min(), lambda xp, x: xp.min(x), (2, 3, 4)),
    ("min-axis-keepdims", lambda x: x.min(0, keepdims=True),
     lambda xp, x: xp.min(x, axis=0, keepdims=True), (2, 3, 4)),
    ("std", lambda x: x.std(), lambda xp, x: xp.std(x), (2, 3, 4)),
    ("std-ddof", lambda x: x.std(0, ddof=1), lambda xp, x: xp.std(x, axis=0, correction=1),
     (2, 3, 4)),
    ("std-correction", lambda x: x.std(correction=1, keepdims=True),
     lambda xp, x: xp.std(x, correction=1, keepdims=True), (2, 3, 4)),
    ("var", lambda x: x.var(axis=2), lambda xp, x: xp.var(x, axis=2), (2, 3, 4)),
    ("var-ddof", lambda x: x.var(ddof=1), lambda xp, x: xp.var(x, correction=1), (2, 3, 4)),
    ("norm", lambda x: x.norm(), lambda xp, x: xp.linalg.vector_norm(x), (2, 3, 4)),
    ("norm-ord-axis", lambda x: x.norm(1, axis=0),
     lambda xp, x: xp.linalg.vector_norm(x, axis=0, ord=1), (2, 3, 4)),
    ("reshape-ints", lambda x: x.reshape(4, 6), lambda xp, x: xp.reshape(x, (4, 6)), (2, 3, 4)),
    ("reshape-tuple", lambda x: x.reshape((6, -1)), lambda xp, x: xp.reshape(x, (6, -1)),
     (2, 3, 4)),
    ("reshape-minus-one", lambda x: x.reshape(-1), lambda xp, x: xp.reshape(x, (-1,)),
     (2, 3, 4)),
    ("flatten", lambda x: x.flatten(), lambda xp, x: xp.reshape(x, (-1,)), (2, 3, 4)),
    ("transpose-reverses", lambda x: x.transpose(), lambda xp, x: xp.permute_dims(x, (2, 1, 0)),
     (2, 3, 4)),
    ("transpose-order", lambda x: x.transpose(1, 2, 0),
     lambda xp, x: xp.permute_dims(x, (1, 2, 0)), (2, 3, 4)),
    ("transpose-order-tuple", lambda x: x.transpose((2, 0, 1)),
     lambda xp, x: xp.permute_dims(x, (2, 0, 1)), (2, 3, 4)),
    ("transpose-torch-swap", lambda x: x.transpose(0, 1),
     lambda xp, x: xp.permute_dims(x, (1, 0, 2)), (2, 3, 4)),
    ("transpose-torch-swap-negative", lambda x: x.transpose(-1, -2),
     lambda xp, x: xp.permute_dims(x, (0, 2, 1)), (2, 3, 4)),
    ("transpose-2d", lambda x: x.transpose(), lambda xp, x: xp.permute_dims(x, (1, 0)), (3, 4)),
    ("transpose-2d-swap", lambda x: x.transpose(1, 0), lambda xp, x: xp.permute_dims(x, (1, 0)),
     (3, 4)),
    ("transpose-2d-identity-tuple", lambda x: x.transpose((0, 1)),
     lambda xp, x: xp.permute_dims(x, (0, 1)), (3, 4)),
    ("permute", lambda x: x.permute(2, 0, 1), lambda xp, x: xp.permute_dims(x, (2, 0, 1)),
     (2, 3, 4)),
    ("permute-tuple", lambda x: x.permute((1, 0, 2)),
     lambda xp, x: xp.permute_dims(x, (1, 0, 2)), (2, 3, 4)),
    ("swapaxes", lambda x: x.swapaxes(0, -1), lambda xp, x: xp.permute_dims(x, (2, 1, 0)),
     (2, 3, 4)),
    ("abs", lambda x: x.abs(), lambda xp, x: xp.abs(x), (3, 4)),
    ("exp", lambda x: x.exp(), lambda xp, x: xp.exp(x), (3, 4)),
    ("log", lambda x: x.log(), lambda xp, x: xp.log(x), (3, 4), POSITIVE),
    ("sqrt", lambda x: x.sqrt(), lambda xp, x: xp.sqrt(x), (3, 4), POSITIVE),
    ("square", lambda x: x.square(), lambda xp, x: xp.square(x), (3, 4)),
    ("sin", lambda x: x.sin(), lambda xp, x: xp.sin(x), (3, 4)),
    ("cos", lambda x: x.cos(), lambda xp, x: xp.cos(x), (3, 4)),
    ("tanh", lambda x: x.tanh(), lambda xp, x: xp.tanh(x), (3, 4)),
    ("clip", lambda x: x.clip(-0.5, 0.5), lambda xp, x: xp.clip(x, -0.5, 0.5), (3, 4)),
    ("clip-max", lambda x: x.clip(max=0.3), lambda xp, x: xp.clip(x, max=0.3), (3, 4)),
    ("clamp", lambda x: x.clamp(min=-0.2), lambda xp, x: xp.clip(x, min=-0.2), (3, 4)),
    ("squeeze", lambda x: x.squeeze(), lambda xp, x: xp.squeeze(x, axis=(0, 2)), (1, 3, 1)),
    ("squeeze-axis", lambda x: x.squeeze(-1), lambda xp, x: xp.squeeze(x, axis=2), (1, 3, 1)),
    ("squeeze-nothing", lambda x: x.squeeze(), lambda xp, x: xp.squeeze(x, axis=()), (2, 3)),
    ("ravel", lambda x: x.ravel(), lambda xp, x: xp.reshape(x, (-1,)), (2, 3, 4)),
    ("flip", lambda x: x.flip(), lambda xp, x: xp.flip(x), (2, 3, 4)),
    ("flip-axis", lambda x: x.flip(axis=1), lambda xp, x: xp.flip(x, axis=1), (2, 3, 4)),
    ("flip-torch-axes", lambda x: x.flip(0, -1), lambda xp, x: xp.flip(x, axis=(0, -1)),
     (2, 3, 4)),
    ("cumsum", lambda x: x.cumsum(),
     lambda xp, x: xp.cumulative_sum(xp.reshape(x, (-1,)), axis=0), (2, 3, 4)),
    ("cumsum-axis", lambda x: x.cumsum(1), lambda xp, x: xp.cumulative_sum(x, axis=1),
     (2, 3, 4)),
    ("conj", lambda x: x.conj(), lambda xp, x: xp.conj(x), (3, 4)),
    ("clone", lambda x: x.clone(), lambda xp, x: xp.asarray(x, copy=True), (3, 4)),
    ("copy", lambda x: x.copy(), lambda xp, x: xp.asarray(x, copy=True), (3, 4)),
    ("imag-of-real", lambda x: x.imag,
     lambda xp, x: xp.imag(xp.astype(x, xp.complex128)), (3, 4)),
    ("astype-same", lambda x: x.astype("float64"), lambda xp, x: xp.astype(x, xp.float64),
     (3, 4)),
]
IDS = [case[0] for case in CASES]


def values(case, seed=0):
    """Host float64 inputs, away from kinks (clip's bounds, abs at 0) and ties (max, min)."""
    shape, domain = case[3], case[4] if len(case) > 4 else None
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.1, 1.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    x = x + np.arange(x.size).reshape(shape) * 1e-3  # no ties
    return np.abs(x) * 2 + 0.5 if domain == POSITIVE else x


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_method_records_as_its_namespace_function(backend, case):
    _, method, function = case[:3]
    host = values(case)
    x, y = backend.variable(host), backend.variable(host)
    by_method, by_function = method(x), function(backend.xp, y)
    assert isinstance(by_method, ag.Variable) and by_method.backend == backend.name
    np.testing.assert_array_equal(backend.host(by_method), backend.host(by_function))
    assert by_method.dtype == by_function.dtype
    assert by_method.grad_fn.name() == by_function.grad_fn.name()
    # The same backward: the same gradient, to the last bit.
    cotangent = backend.array(np.random.default_rng(1).standard_normal(by_method.shape))
    by_method.backward(cotangent)
    by_function.backward(cotangent)
    np.testing.assert_array_equal(backend.host(x.grad), backend.host(y.grad))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_method_gradient_matches_central_differences(backend, case):
    analytic, numeric = gradient_errors(case[1], [values(case)], backend.name)
    assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-8)


def test_methods_record_nothing_without_grad(backend):
    x = backend.variable(values(CASES[0]))
    with ag.no_grad():
        assert not x.mean().requires_grad and x.transpose().grad_fn is None
    constant = backend.variable(values(CASES[0]), requires_grad=False)
    assert constant.sum(0).grad_fn is None and not constant.exp().requires_grad


def test_methods_differentiate_twice(backend):
    host = np.array([0.5, -1.0, 2.0])
    x = backend.variable(host)
    x.exp().sum().backward(create_graph=True)
    first = x.grad
    x.grad = None
    first.sum().backward()
    np.testing.assert_allclose(backend.host(x.grad), np.exp(host))


def test_chained_methods_as_torch_users_write_them(backend):
    host = values(CASES[0])
    x = backend.variable(host)
    loss = ((x.reshape(6, 4).transpose() - 1).square().mean(axis=0) + x.abs().max()).sum()
    loss.backward()
    expected = 2 * (host - 1) / 4  # d/dx of mean over the 4 columns, summed over the 6 rows
    largest = np.argmax(np.abs(host))  # where abs().max() sends its gradient, 6 times
    expected.reshape(-1)[largest] += 6 * np.sign(host.reshape(-1)[largest])
    np.testing.assert_allclose(backend.host(x.grad), expected, rtol=1e-12)


def test_size_stays_the_standards_integer(backend):
    # .size is the number of elements, as in the standard; called as torch's y.size(), it says
    # to write y.shape (on the torch backend it is torch's: tests/test_torch_function.py).
    x = backend.variable(np.ones((2, 3)))
    assert x.size == 6 and isinstance(x.size, int) and int(x.size) + 1 == 7
    assert x.shape == (2, 3)
    with pytest.raises(TypeError, match=r"torch's x.size\(\) is x.shape \(\(2, 3\)\)"):
        x.size()


def test_methods_do_not_replace_existing_attributes():
    existing = {"T", "mT", "to_device", "item", "size", "shape", "ndim", "dtype", "device",
                "data", "grad", "grad_fn", "requires_grad", "is_leaf", "backward", "detach",
                "zero_", "numpy", "to", "backend", "volatile"}
    methods = {"sum", "prod", "mean", "max", "min", "std", "var", "norm", "reshape", "flatten",
               "transpose", "permute", "swapaxes", "clip", "clamp", "abs", "exp", "log",
               "sqrt", "square", "sin", "cos", "tanh", "squeeze", "ravel", "flip", "argmax",
               "argmin", "cumsum", "conj", "clone", "copy", "astype", "tolist"}
    assert not existing & methods
    for name in methods:
        assert callable(getattr(ag.Variable, name)), name
        assert getattr(ag.Variable, name).__doc__, f"Variable.{name} has no docstring"
    assert isinstance(ag.Variable.size, property) and isinstance(ag.Variable.T, property)
    for name in ("real", "imag"):
        assert isinstance(getattr(ag.Variable, name), property), name
    assert not NOT_ATTRIBUTES & (existing | methods | {"real", "imag"})


@pytest.mark.parametrize("call, error, match", [
    (lambda x: x.sum(dim=0), TypeError, r"axis= instead of torch's dim="),
    (lambda x: x.mean(keepdim=True), TypeError, r"keepdims= instead of torch's keepdim="),
    (lambda x: x.std(unbiased=True), TypeError, r"correction=.*unbiased=True is correction=1"),
    (lambda x: x.norm(p=2), TypeError, r"ord= instead of torch's p="),
    (lambda x: x.max(out=None), TypeError, r"no out=.*assign"),
    (lambda x: x.sum(order="C"), TypeError, r"unexpected keyword argument 'order'"),
    (lambda x: x.max(x), TypeError, r"axis must be.*xp.maximum"),
    (lambda x: x.min(x.data), TypeError, r"axis must be.*xp.minimum"),
    (lambda x: x.sum(axis=0.5), TypeError, r"axis must be.*float"),
    (lambda x: x.std(ddof=1, correction=0), TypeError, r"two names of one option"),
    (lambda x: x.norm("fro"), ValueError, r"matrix_norm"),
    (lambda x: x.swapaxes(0, 3), ValueError, r"axis 3 is out of range.*3 dimensions"),
    (lambda x: x.swapaxes(0, 1.0), TypeError, r"an axis must be an integer"),
    (lambda x: x.reshape(6, 4).transpose(0, 1), ValueError, r"ambiguous.*x\.T.*swapaxes"),
    (lambda x: x.reshape(6, 4).transpose(-2, -1), ValueError, r"ambiguous"),
    (lambda x: x.reshape(6, 4).transpose(1, 1), ValueError, r"name each axis once"),
    (lambda x: x.transpose(0, 1, 2, 3), ValueError, r"not an order of the 3 axes.*\(2, 3, 4\)"),
    (lambda x: x.transpose((0, 2)), ValueError, r"not an order of the 3 axes"),
    (lambda x: x.permute(0, 1), ValueError,
     r"permute\(0, 1\) is not an order.*x\.permute\(2, 1, 0\)"),
    (lambda x: x.permute(0, 0, 1), ValueError, r"name each axis once"),
    (lambda x: x.permute(0, 1, 5), ValueError, r"name each axis once"),
    (lambda x: x.permute(0, 1, "2"), TypeError, r"an axis must be an integer"),
    (lambda x: x.reshape(6, 4).transpose(1, 0, 2), ValueError, r"not an order of the 2 axes"),
])
def test_bad_method_arguments_are_refused(backend, call, error, match):
    x = backend.variable(values(CASES[0]))
    with pytest.raises(error, match=match):
        call(x)



def test_leaves_pickle_and_deep_copy_with_their_grad_and_a_graph_does_not():
    import copy
    import pickle

    x = ag.Variable(np.array([1.0, -2.0, 0.5]), requires_grad=True)
    ag.namespace("numpy").sum(x * x).backward()
    for duplicate in (copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        assert duplicate.requires_grad and duplicate.is_leaf and duplicate.data is not x.data
        np.testing.assert_array_equal(duplicate.data, x.data)
        np.testing.assert_array_equal(duplicate.grad.data, 2 * x.data)
    with pytest.raises(TypeError, match="computed by MulBackward.*v.detach"):
        copy.deepcopy(x * 2)


def test_a_single_value_formats_as_its_number():
    xp = ag.namespace("numpy")
    loss = xp.sum(ag.Variable(np.array([1.25, 2.0]), requires_grad=True))
    assert f"{loss:.3f}" == "3.250" and f"{loss}" == str(loss)
    with pytest.raises(TypeError, match=r"shape \(2,\)"):
        f"{ag.Variable(np.ones(2)):.2f}"


def test_grad_mode_decorators_cover_a_generator_body_and_set_grad_enabled_reenters():
    x = ag.Variable(np.ones(2), requires_grad=True)

    @ag.no_grad()
    def steps():
        for k in range(2):
            received = yield x * k
            assert received == "sent"

    gen = steps()
    first = next(gen)
    second = gen.send("sent")
    assert not first.requires_grad and not second.requires_grad
    assert (x * 1).requires_grad  # outside the generator's body: recorded
    mode = ag.set_grad_enabled(False)
    for _ in range(2):  # the same object in two blocks
        with mode:
            assert not (x * 1).requires_grad
        assert (x * 1).requires_grad


# ------------------------------------------ complex parts, copies, dtypes, indices, Python lists
COMPLEX = [  # (id, the method call on a complex Variable, torch's on a complex tensor)
    ("real", lambda z: z.real, lambda t: t.real),
    ("imag", lambda z: z.imag, lambda t: t.imag),
    ("conj", lambda z: z.conj(), lambda t: t.conj()),
    ("clone", lambda z: z.clone(), lambda t: t.clone()),
    ("flip-cumsum", lambda z: z.flip(0).cumsum(1), lambda t: t.flip(0).cumsum(1)),
    ("squeeze-ravel", lambda z: z.reshape(1, 3, 4).squeeze().ravel(),
     lambda t: t.reshape(1, 3, 4).squeeze().ravel()),
    ("mixed", lambda z: z.real * z.imag + (z.conj() * z).real,
     lambda t: t.real * t.imag + (t.conj() * t).real),
]


def complex_values(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))


@pytest.mark.parametrize("case", COMPLEX, ids=[c[0] for c in COMPLEX])
def test_complex_methods_match_central_differences(backend, case):
    analytic, numeric = gradient_errors(case[1], [complex_values()], backend.name)
    assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("case", COMPLEX, ids=[c[0] for c in COMPLEX])
def test_complex_methods_match_torch(case):
    torch = pytest.importorskip("torch")
    host = complex_values()
    z = ag.Variable(host, requires_grad=True)
    out = case[1](z)
    rng = np.random.default_rng(1)
    g = rng.standard_normal(out.shape) + (1j * rng.standard_normal(out.shape)
                                          if np.iscomplexobj(out.data) else 0)
    out.backward(g.astype(out.dtype))
    t = torch.tensor(host, requires_grad=True)
    out_torch = case[2](t)
    out_torch.backward(torch.tensor(g.astype(out.dtype)))
    np.testing.assert_allclose(out.data, out_torch.detach().resolve_conj().numpy(), rtol=1e-12)
    np.testing.assert_allclose(z.grad.data, t.grad.resolve_conj().numpy(), rtol=1e-12)


def test_imag_of_a_real_variable_is_recorded_zeros(backend):
    # NumPy's zeros (torch refuses): they require grad as x does and send back exactly 0,
    # even where x is inf or nan, so backward through them runs and adds nothing.
    x = backend.variable([1.5, -np.inf, np.nan])
    zeros = x.imag
    assert zeros.requires_grad and zeros.dtype == x.dtype
    np.testing.assert_array_equal(backend.host(zeros), np.zeros(3))
    (zeros.sum() + (x * 2.0).sum()).backward()
    np.testing.assert_array_equal(backend.host(x.grad), np.full(3, 2.0))
    x.grad = None
    zeros.sum().backward()
    np.testing.assert_array_equal(backend.host(x.grad), np.zeros(3))
    whole = backend.variable([1, 2], requires_grad=False, dtype=np.int64)
    assert whole.imag.dtype == whole.dtype and backend.host(whole.imag).tolist() == [0, 0]


def test_real_of_a_real_variable_is_itself_and_of_a_complex_one_records(backend):
    x = backend.variable([1.0, 2.0])
    assert x.real is x
    z = backend.variable([1 + 2j, 3 - 1j], dtype=np.complex128)
    assert z.real.grad_fn.name() == "RealBackward" and z.imag.grad_fn.name() == "ImagBackward"
    np.testing.assert_array_equal(backend.host(z.imag), [2.0, -1.0])
    np.testing.assert_array_equal(backend.host(z.conj()), [1 - 2j, 3 + 1j])


def test_clone_is_new_memory_that_gradients_flow_through(backend):
    x = backend.variable([1.0, 2.0, 3.0])
    for copy in (x.clone(), x.copy()):
        assert copy.data is not x.data and not copy.is_leaf
        copy[0] = 10.0  # copy-on-write on the copy: x keeps its values
        np.testing.assert_array_equal(backend.host(x), [1.0, 2.0, 3.0])
        (copy * copy).sum().backward()
    # the first element was overwritten in both copies: no gradient reaches x[0]
    np.testing.assert_array_equal(backend.host(x.grad), [0.0, 8.0, 12.0])
    constant = backend.variable([1.0], requires_grad=False)
    assert not constant.clone().requires_grad


@pytest.mark.parametrize("dtype, expected", [
    ("float32", "float32"), (np.float32, "float32"), (np.dtype("float32"), "float32"),
    (float, "float64"), (complex, "complex128"), (int, "int64"), (bool, "bool"),
    ("int32", "int32"), ("complex64", "complex64")])
def test_astype_takes_numpys_names_of_dtypes(backend, dtype, expected):
    x = backend.variable([0.5, 1.5])
    y = x.astype(dtype)
    assert y.dtype == getattr(backend.xp, expected)
    assert y.requires_grad == (expected not in ("int32", "int64", "bool"))


def test_astype_gradient_and_copy(backend):
    x = backend.variable([0.5, 1.5])
    assert x.astype(backend.xp.float64, copy=False) is not None  # the standard's copy=
    y = x.astype(backend.xp.float32)
    assert y.grad_fn.name() == "AstypeBackward"
    (y * y).sum().backward()
    assert x.grad.dtype == x.dtype
    np.testing.assert_allclose(backend.host(x.grad), [1.0, 3.0], rtol=1e-6)
    analytic, numeric = gradient_errors(lambda x: x.astype("complex128") * (1 + 2j),
                                        [np.array([0.5, -1.5])], backend.name)
    assert analytic == pytest.approx(numeric, rel=1e-8)


@pytest.mark.parametrize("call, expected", [
    (lambda x: x.argmax(), 4), (lambda x: x.argmin(), 1),
    (lambda x: x.argmax(axis=1), [2, 1]), (lambda x: x.argmin(0), [1, 0, 1]),
    (lambda x: x.argmax(axis=0, keepdims=True), [[0, 1, 0]]),
])
def test_argmax_and_argmin_are_integer_indices_with_no_grad(backend, call, expected):
    x = backend.variable([[3.0, -2.0, 5.0], [0.5, 9.0, 1.0]])
    index = call(x)
    assert not index.requires_grad and index.grad_fn is None
    assert backend.raw.isdtype(index.dtype, "integral")
    assert backend.host(index).tolist() == expected


def test_tolist_leaves_the_graph_as_item_does(backend):
    x = backend.variable([[1.5, -2.0], [0.25, 3.0]])
    assert x.tolist() == [[1.5, -2.0], [0.25, 3.0]]
    assert all(type(v) is float for row in x.tolist() for v in row)
    assert x.sum().tolist() == 2.75 and type(x.sum().tolist()) is float
    assert backend.variable([1, 2], requires_grad=False, dtype=np.int64).tolist() == [1, 2]


@pytest.mark.parametrize("call, error, match", [
    (lambda x: x.squeeze(0), ValueError, r"axis 0 has length 2, not 1 \(shape \(2, 3, 4\)\)"),
    (lambda x: x.squeeze(5), ValueError, r"squeeze\(\): axis 5 is out of range"),
    (lambda x: x.flip(0, axis=1), TypeError, r"both by position and as axis="),
    (lambda x: x.flip(0.5), TypeError, r"flip\(\): axis must be"),
    (lambda x: x.argmax(dim=1), TypeError, r"axis= instead of torch's dim="),
    (lambda x: x.argmin(keepdim=True), TypeError, r"keepdims= instead of torch's keepdim="),
    (lambda x: x.cumsum(dim=0), TypeError, r"axis= instead of torch's dim="),
    (lambda x: x.astype("float"), TypeError, r"'float' is not a dtype name of the standard"),
    (lambda x: x.astype("float64", casting="safe"), TypeError,
     r"astype\(\) got an unexpected keyword argument 'casting'"),
])
def test_bad_arguments_to_the_new_methods_are_refused(backend, call, error, match):
    x = backend.variable(values(CASES[0]))
    with pytest.raises(error, match=match):
        call(x)


# -------------------------------------------------- what a Variable does not have says so
@pytest.mark.parametrize("name, match", [
    ("unsqueeze", r"'unsqueeze': torch's x\.unsqueeze\(dim\) is xp\.expand_dims\(x, axis=dim\), "
                  r"with xp = x\.__array_namespace__\(\)$"),
    ("view", r"x\.reshape\(shape\)"),
    ("numel", r"x\.size"),
    ("dim", r"x\.ndim"),
    ("double", r"x\.astype\(xp\.float64\)"),
    ("float", r"x\.astype\(xp\.float32\)"),
    ("cumprod", r"xp\.cumulative_prod\(x, axis=axis\)"),
    ("repeat", r"xp\.tile\(x, sizes\).*xp\.repeat\(x, n, axis=axis\)"),
    ("argsort", r"'argsort': use xp\.argsort\(x, \.\.\.\), with xp = x\.__array_namespace__\(\)$"),
    ("cumulative_sum", r"use xp\.cumulative_sum\(x, \.\.\.\)"),
    ("where", r"use xp\.where\(x, \.\.\.\)"),
    ("det", r"use xp\.linalg\.det\(x, \.\.\.\)"),
    ("matmul", r"use xp\.matmul\(x, \.\.\.\)"),
    ("concat", r"use xp\.concat\(\[x, \.\.\.\]\)"),
])
def test_names_torch_and_numpy_users_type_say_what_to_write(backend, name, match):
    x = backend.variable([1.0, 2.0])
    with pytest.raises(AttributeError, match=match) as info:
        getattr(x, name)
    assert info.value.name == name
    assert not hasattr(x, name) and name not in dir(x)


def test_every_name_the_hints_suggest_exists(backend):
    """A hint that points at something that does not exist is worse than none."""
    import re

    x = backend.variable([[1.0, 2.0], [3.0, 4.0]])
    for name in sorted(NOT_ATTRIBUTES):
        with pytest.raises(AttributeError) as info:
            getattr(x, name)
        hint = str(info.value).partition(": ")[2]
        assert hint, name
        for path in re.findall(r"\bxp\.([\w.]+)", hint):
            target = backend.xp
            for part in path.split("."):
                assert hasattr(target, part), f"x.{name} suggests xp.{path}, which is not there"
                target = getattr(target, part)
        for attribute in set(re.findall(r"\bx\.(\w+)", hint)) - {name}:  # torch's x.NAME()
            assert attribute not in NOT_ATTRIBUTES and hasattr(x, attribute), (name, attribute)


def test_a_function_the_backend_lacks_says_so():
    # the 2025.12 additions are offered only where the backend has them
    class Backend:
        name, ns = "stub", type("Namespace", (), {"linalg": None})()

    x = ag.Variable._make(None, Backend, None, 0, False)
    with pytest.raises(AttributeError, match=r"xp\.linalg\.eig is a function of the Array API "
                                             r"standard, which backend 'stub' does not provide"):
        x.eig


@pytest.mark.parametrize("name", [
    "__array_interface__", "__array_struct__", "__cuda_array_interface__", "__jax_array__", "__dask_graph__", "_repr_html_", "_ipython_display_", "__array_wrap__",
    "no_such_method", "zeros", "arange", "isdtype"])  # the last: xp.zeros(x, ...) is no call
def test_probed_and_unknown_names_raise_pythons_plain_attribute_error(name):
    x = ag.Variable(np.ones(2), requires_grad=True)
    with pytest.raises(AttributeError) as info:
        getattr(x, name)
    assert type(info.value) is AttributeError
    assert str(info.value) == f"'Variable' object has no attribute {name!r}"
    assert not hasattr(x, name)


def test_names_with_hints_do_not_break_copies_pickles_or_half_built_variables():
    import copy
    import pickle

    bare = ag.Variable.__new__(ag.Variable)  # as pickle makes it, before any slot is set
    assert not hasattr(bare, "argsort") and not hasattr(bare, "unsqueeze")
    with pytest.raises(AttributeError, match=r"use xp\.argsort"):
        bare.argsort
    x = ag.Variable(np.array([1.0, 2.0]), requires_grad=True)
    for duplicate in (copy.copy(x), copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        np.testing.assert_array_equal(duplicate.data, x.data)
        assert duplicate.requires_grad
    assert set(OTHER_NAMES) <= NOT_ATTRIBUTES and "unsqueeze" in NOT_ATTRIBUTES


# ------------------------------------------------ NumPy's functions on Variables: fixed cases
@pytest.mark.parametrize("call", [
    lambda x: np.diff(x, prepend=0.0),
    lambda x: np.diff(x, axis=0, append=1),
    lambda x: np.diff(x, n=2, prepend=np.float64(-1.0), append=[[2.0], [3.0]]),
    lambda x: np.imag(x) + np.real(x),
    lambda x: np.angle(-x),
], ids=["diff-prepend", "diff-append-axis", "diff-n-both", "imag-real", "angle"])
@pytest.mark.parametrize("name", ["numpy", "array_api_strict", "torch"])
def test_numpy_functions_with_numpys_meaning_on_real_variables(name, call):
    if name == "torch":
        pytest.importorskip("torch")
    host = np.array([[1.0, 3.0, 7.5], [2.0, -1.0, 0.5]])
    expected = call(host)
    result = call(ag.Variable(ag.get_backend(name).raw.asarray(host), requires_grad=True))
    np.testing.assert_allclose(np.asarray(ag.get_backend(name).to_numpy(result.data)), expected)
    analytic, numeric = gradient_errors(call, [host], name)
    assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("name", ["numpy", "array_api_strict", "torch"])
def test_a_number_given_to_diff_takes_the_variables_dtype(name):
    # as Python numbers do in the standard's operators (NumPy's diff would make float64 here)
    if name == "torch":
        pytest.importorskip("torch")
    raw = ag.get_backend(name).raw
    x = ag.Variable(raw.asarray([1.0, 4.0], dtype=raw.float32), requires_grad=True)
    result = np.diff(x, prepend=0.5, append=2)
    assert result.dtype == raw.float32
    assert ag.get_backend(name).to_numpy(result.data).tolist() == [0.5, 3.0, -2.0]


EINSUM = [  # subscripts and the operands' shapes
    ("...i,...i->...", [(4, 2, 3), (2, 3)]),
    ("i...,i...", [(2, 3), (2, 1)]),
    ("...ij,...jk", [(4, 2, 3), (3, 2)]),
    ("...ij->...ji", [(2, 3, 4)]),
    ("Ba...,a", [(2, 3, 5), (3,)]),
    ("b...j,bj->b...", [(2, 5, 3), (2, 3)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),  # repeated letters: a diagonal, a trace, on every backend
    ("...ii", [(2, 3, 3)]),
    ("iij,j", [(3, 3, 2), (2,)]),
]


@pytest.mark.parametrize("subscripts, shapes", EINSUM, ids=[c[0] for c in EINSUM])
def test_einsum_with_an_ellipsis_is_numpys(backend, subscripts, shapes):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(shape) for shape in shapes]
    result = np.einsum(subscripts, *[backend.variable(a) for a in arrays])
    np.testing.assert_allclose(backend.host(result), np.einsum(subscripts, *arrays), rtol=1e-12)
    analytic, numeric = gradient_errors(lambda *v: np.einsum(subscripts, *v), arrays,
                                        backend.name)
    assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("subscripts, shapes, error, match", [
    ("ij,jk", [(2, 3)], TypeError, r"name 2 operands but got 1"),
    ("...ij->ij", [(2, 3, 4)], ValueError, r"output must have one too"),
    ("i.j", [(2, 3)], ValueError, r"not part of an ellipsis"),
    ("ij", [(2, 3, 4)], ValueError, r"operand 0 has 3 axes, but its subscripts name 2"),
])
def test_einsum_refusals_say_what_is_wrong(backend, subscripts, shapes, error, match):
    operands = [backend.variable(np.ones(shape)) for shape in shapes]
    with pytest.raises(error, match=match):
        np.einsum(subscripts, *operands)
