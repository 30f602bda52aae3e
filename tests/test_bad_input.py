"""Record or refuse: wrong arguments to the transforms and to ``autograd.grad`` get an error
naming the argument and what to do, and tuple outputs are supported as in torch.func and JAX,
never a silently wrong result or an internal AttributeError/IndexError."""

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.errors import BackwardError

xp = ag.namespace("numpy")


def _close(a, b):
    return np.allclose(np.asarray(getattr(a, "data", a)), np.asarray(getattr(b, "data", b)))


# ----------------------------------------------------------------------------------- jvp
def test_jvp_refuses_a_missing_tangent_instead_of_taking_zero():
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    with pytest.raises(ValueError, match=r"jvp\(\): 2 primals and 1 tangents"):
        ag.jvp(lambda a, b: a * b, [x, y], [np.ones(2)])


@pytest.mark.parametrize("tangent, problem", [
    (np.ones((2, 3)), "shape (2, 3) and dtype float64"),
    (np.ones(4), "shape (4,) and dtype float64"),
    (np.ones(3, dtype=np.float32), "shape (3,) and dtype float32"),
])
def test_jvp_refuses_a_tangent_unlike_its_primal(tangent, problem):
    with pytest.raises(ValueError) as error:
        ag.jvp(xp.sin, [np.ones(3)], [tangent])
    assert f"tangent 0 has {problem}, but its primal has shape (3,) and dtype float64" in str(
        error.value)


def test_jvp_of_a_tuple_output_gives_a_tangent_per_output():
    x, t = np.array([0.5, 1.5]), np.array([1.0, -2.0])
    (s, c), (ts, tc) = ag.jvp(lambda a: (xp.sin(a), xp.cos(a)), [x], [t])
    assert _close(ts, np.cos(x) * t) and _close(tc, -np.sin(x) * t)


# ----------------------------------------------------------------------------- vjp, jacobian
def test_vjp_of_a_tuple_output_takes_a_cotangent_per_output():
    x = np.array([0.5, 1.5, -1.0])
    (s, c), vjp_fn = ag.vjp(lambda a: (xp.sin(a), xp.sum(a * a)), x)
    u = np.array([1.0, 2.0, 3.0])
    (g,) = vjp_fn((u, np.asarray(2.0)))
    assert _close(g, np.cos(x) * u + 2.0 * 2 * x)
    with pytest.raises(ValueError, match=r"f returned 2 outputs, so it takes a tuple of 2"):
        vjp_fn(u)


def test_jacobian_of_a_tuple_output_gives_one_jacobian_per_output():
    x = np.array([0.5, 1.5])
    js, jq = ag.jacobian(lambda a: (xp.sin(a), a[0] * a[1]))(x)
    assert _close(js, np.diag(np.cos(x))) and js.shape == (2, 2)
    assert _close(jq, np.array([x[1], x[0]])) and jq.shape == (2,)


def test_jacobian_of_a_constant_output_is_zero():
    jac = ag.jacobian(lambda a: xp.ones(3))(np.array([1.0, 2.0]))
    assert jac.shape == (3, 2) and not np.any(jac)


def test_transforms_refuse_what_f_returns_if_it_is_not_an_array():
    with pytest.raises(TypeError, match=r"vjp\(\)"):
        ag.vjp(lambda a: "3.0", np.ones(2))
    # A number or a raw array is a constant, as in JAX: zero derivatives of the right shape.
    _, pullback = ag.vjp(lambda a: 3.0, np.ones(2))
    assert _close(pullback(1.0)[0], np.zeros(2))
    assert _close(ag.jacobian(lambda a: np.ones(2))(np.ones(2)), np.zeros((2, 2)))


# ------------------------------------------------------------------------------------ grad
def test_grad_names_an_argnums_out_of_range():
    with pytest.raises(ValueError, match=r"argnums=5, but the function was called with 1"):
        ag.grad(lambda a: xp.sum(a), argnums=5)(np.ones(2))
    with pytest.raises(TypeError, match="argnums must be an int or a tuple of ints"):
        ag.grad(lambda a: xp.sum(a), argnums="0")(np.ones(2))
    # negative positions count from the end, as in JAX
    assert _close(ag.grad(lambda a, b: xp.sum(a * b), argnums=-1)(np.ones(2), np.full(2, 3.0)),
                  np.ones(2))


def test_grad_with_aux_needs_a_pair():
    with pytest.raises(TypeError, match=r"has_aux=True\) needs f to return a pair \(output, "
                                        r"aux\), got a Variable of shape \(\)"):
        ag.grad(lambda a: xp.sum(a), has_aux=True)(np.ones(2))


# ---------------------------------------------------------------------------- autograd.grad
def test_autograd_grad_refuses_fewer_grad_outputs_than_outputs():
    x = ag.Variable(np.array([1.0, 2.0]), requires_grad=True)
    y1, y2 = xp.sum(x * x), xp.sum(3 * x)
    with pytest.raises(BackwardError, match="got 2 outputs and 1 grad_outputs"):
        ag.autograd.grad([y1, y2], [x], [None])
    assert _close(ag.autograd.grad([y1, y2], [x], [None, None])[0], 2 * x.data + 3)


def test_autograd_grad_names_a_raw_array_among_the_inputs():
    x = ag.Variable(np.array([1.0, 2.0]), requires_grad=True)
    y = xp.sum(x * x)
    with pytest.raises(TypeError, match=r"inputs\[1\] is a ndarray, not a Variable"):
        ag.autograd.grad(y, [x, np.ones(2)])
    with pytest.raises(TypeError, match=r"outputs\[0\] is a float"):
        ag.autograd.grad(1.0, [x])


# -------------------------------------------------------------- the standard's signatures
def test_the_positional_table_is_the_standards():
    """arraygrad's table of positional arguments equals array-api-strict's signatures (the
    standard's), for every function of the standard that array-api-strict has."""
    import inspect

    import array_api_strict

    from arraygrad import _standard

    for name in _standard.FUNCTIONS:
        function = array_api_strict
        for part in name.split("."):
            function = getattr(function, part, None)
        if function is None:
            continue
        parameters = inspect.signature(function).parameters.values()
        if any(p.kind is p.VAR_POSITIONAL for p in parameters):
            assert name not in _standard.POSITIONAL
            continue
        count = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
        assert _standard.POSITIONAL[name] == count, name


def _arguments(name, x):
    """Valid positional arguments of ``name`` (as many as the standard allows)."""
    m = xp.reshape(x[:4], (2, 2))
    return {
        "clip": (x, 0.0, 1.0), "where": (x > 0.5, x, 2 * x), "moveaxis": (m, 0, 1),
        "arange": (0, 5, 1), "linspace": (0.0, 1.0, 5), "eye": (3, 4), "full": ((2,), 1.0),
        "full_like": (x, 2.0), "reshape": (x, (2, 3)), "roll": (x, 1), "expand_dims": (x, 0),
        "squeeze": (xp.reshape(x, (1, 6)), 0), "tile": (x, (2,)), "repeat": (x, 2),
        "broadcast_to": (x, (2, 6)), "permute_dims": (m, (1, 0)), "astype": (x, xp.float32),
        "take": (x, xp.asarray([0, 2])), "take_along_axis": (x, xp.asarray([1, 0])),
        "searchsorted": (xp.sort(x), x), "isin": (x, x), "linalg.matrix_power": (m, 2),
        "linalg.solve": (m + 3 * xp.eye(2), m), "linalg.cross": (x[:3], x[3:]),
        "tensordot": (m, m), "matmul": (m, m), "vecdot": (x, x), "linalg.outer": (x, x),
        "linalg.matmul": (m, m), "linalg.tensordot": (m, m), "linalg.vecdot": (x, x),
        "can_cast": (xp.float32, xp.float64), "isdtype": (xp.float64, "real floating"),
    }.get(name)


def test_every_function_refuses_one_positional_argument_more_than_the_standard_allows():
    """Each function of the namespace takes as many positional arguments as the standard
    says (checked for those with valid arguments at hand), and one more is a TypeError naming
    the function, never an option silently taken for something else."""
    from arraygrad import _standard

    x = ag.Variable(np.linspace(0.1, 0.9, 6), requires_grad=True)
    checked = 0
    for name, count in _standard.POSITIONAL.items():
        function = xp
        for part in name.split("."):
            function = getattr(function, part, None)
        if function is None:
            continue
        arguments = _arguments(name, x) or ((x,) if count == 1 else (x, x) if count == 2 else None)
        if arguments is None or len(arguments) != count:
            continue
        if name not in ("eye", "arange", "linspace", "full", "can_cast", "isdtype"):
            try:
                function(*arguments)  # the positional arguments the standard allows
            except TypeError as exc:
                assert "positional" not in str(exc), (name, exc)
            except Exception:
                pass  # not this input's domain (complex-only, an integer argument...)
        with pytest.raises(TypeError, match=r"positional argument") as error:
            function(*arguments, 1)
        assert name.split(".")[-1] in str(error.value)
        checked += 1
    assert checked > 150


def test_stack_concat_meshgrid_and_diff_refuse_options_by_position():
    a, b = (ag.Variable(np.arange(3.0) + k, requires_grad=True) for k in (0, 1))
    for call in (lambda: xp.stack([a, b], 1), lambda: xp.concat([a, b], 0),
                 lambda: xp.diff(a, 2), lambda: xp.argsort(a, 0),
                 lambda: xp.tensordot(a, b, 1)):
        with pytest.raises(TypeError, match="keyword-only; pass them by name"):
            call()
    with pytest.raises(TypeError, match=r"meshgrid\(\) takes arrays by position, got 'ij'"):
        xp.meshgrid(a, b, "ij")
    # and by keyword they record the option they were given
    out = xp.stack([a, b], axis=1)
    xp.sum(out * xp.asarray([[1.0, 2.0]])).backward()
    assert _close(a.grad, np.ones(3)) and _close(b.grad, 2 * np.ones(3))


# -------------------------------------------------------------------- inputs we do not own
def test_an_array_like_no_backend_owns_is_refused():
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    x = ag.Variable(np.ones(3), requires_grad=True)
    series = pd.Series([1.0, 2.0, 3.0], index=[2, 1, 0])
    with pytest.raises(TypeError, match=r"add\(\) got a pandas.*Series, an array-like no "
                                        "backend owns"):
        xp.add(x, series)
    # As an operand its own reflected operator answers, as for ndarray + Series: pandas
    # converts its operands, which a Variable that requires grad refuses.
    with pytest.raises(ag.GradientError, match="cannot convert a Variable that requires grad"):
        x + series
    assert isinstance(x.detach() + series, pd.Series)


def test_an_operand_that_wraps_variables_answers_the_operator():
    """``v * DataArray`` is the DataArray's, as ``ndarray * DataArray`` is: xarray computes
    ``DataArray * v`` with the Variable inside, so the product records (it was refused)."""
    xr = pytest.importorskip("xarray", reason="xarray is not installed")
    base = np.array([1.0, 2.0, 3.0])
    x = ag.Variable(np.array(2.0), requires_grad=True)
    out = x * xr.DataArray(base)
    assert isinstance(out, xr.DataArray) and isinstance(out.data, ag.Variable)
    less = x < xr.DataArray(base)
    assert isinstance(less, xr.DataArray) and list(less.data.data) == [False, False, True]
    xp.sum(out.data).backward()
    assert _close(x.grad, np.sum(base))
    with pytest.raises(TypeError, match="not an array"):  # no reflected operator: refused
        x * object()


def test_variable_refuses_a_list_of_variables_and_a_non_bool_flag():
    with pytest.raises(TypeError, match="list holding Variables.*xp.stack"):
        ag.Variable([ag.Variable(np.ones(2)), ag.Variable(np.ones(2))])
    with pytest.raises(TypeError, match="requires_grad must be True or False, got 'no'"):
        ag.Variable(np.ones(2), requires_grad="no")
    x = ag.Variable(np.ones(2))
    with pytest.raises(TypeError, match="requires_grad must be True or False"):
        x.requires_grad = "yes"
    assert ag.Variable(np.ones(2), requires_grad=np.True_).requires_grad


def test_a_none_array_argument_is_refused():
    with pytest.raises(TypeError, match=r"sum\(\): its array argument x is None"):
        xp.sum(None)


def test_asarray_of_variables_keeps_the_graph():
    a = ag.Variable(np.array(2.0), requires_grad=True)
    xp.sum(xp.asarray([a, a]) * 2.5).backward()
    assert float(a.grad.data) == 5.0


def test_an_in_place_operation_that_would_change_the_shape_is_refused():
    x = ag.Variable(np.ones(3), requires_grad=True)
    h = x * 1
    with pytest.raises(ValueError, match=r"change the shape of a Variable of shape \(3,\) to "
                                         r"\(2, 3\)"):
        h += np.ones((2, 3))
    assert h.shape == (3,)


@pytest.mark.parametrize("change", ["h += 1", "h[0] = 0.0", "h *= 3"])
def test_an_in_place_change_of_a_non_leaf_under_no_grad_keeps_its_graph(change):
    """PyTorch: the value changes, the graph stays; the gradient then flows through ``h``'s own
    history (here 4 h + 1 from ``sum(h * h + x)``, with h = 2x changed)."""
    x = ag.Variable(np.array([0.5, 1.5, -2.0]), requires_grad=True)
    h = x * 2
    with ag.no_grad():
        exec(change)
    assert h.grad_fn is not None and h.requires_grad
    xp.sum(h * h + x).backward()
    assert np.allclose(x.grad.data, 4 * h.data + 1)


def test_an_in_place_op_without_derivative_on_a_non_leaf_is_refused():
    x = ag.Variable(np.array([0.5, 1.5, -2.0]), requires_grad=True)
    h = x * 3
    with pytest.raises(ag.InplaceError, match=r"in-place //= has no derivative.*MulBackward"):
        h //= 2.0
    assert h.grad_fn is not None and np.array_equal(h.data, [1.5, 4.5, -6.0])


def test_zero_on_a_non_leaf_makes_a_constant():
    """``h.zero_()`` (and ``x.grad.zero_()`` after ``create_graph``) passes back no gradient:
    the value is a constant, not a leaf that would collect a ``.grad`` of its own."""
    x = ag.Variable(np.array([0.5, 1.5, -2.0]), requires_grad=True)
    h = x * 3
    h.zero_()
    assert h.grad_fn is None and not h.requires_grad and not np.any(h.data)
    xp.sum(x * x).backward(create_graph=True)
    assert x.grad.grad_fn is not None
    x.grad.zero_()
    assert x.grad.grad_fn is None and not x.grad.requires_grad
    xp.sum(x * x * x).backward()
    assert np.allclose(x.grad.data, 3 * x.data ** 2)

def test_zero_on_a_leaf_that_requires_grad_only_under_no_grad():
    """PyTorch's rule for every in-place change of such a leaf: ``w.zero_()`` raises, and
    works inside ``no_grad()``, where parameters are updated."""
    w = ag.Variable(np.array([0.5, 1.5, -2.0]), requires_grad=True)
    with pytest.raises(ag.InplaceError, match=r"zero_\(\).*no_grad"):
        w.zero_()
    assert np.array_equal(w.data, [0.5, 1.5, -2.0])
    with ag.no_grad():
        w.zero_()
    assert w.is_leaf and w.requires_grad and not np.any(w.data)


def test_to_refuses_what_is_not_a_backend():
    with pytest.raises(TypeError, match=r"to\(\) takes a backend name"):
        ag.Variable(np.ones(2)).to(None)


@pytest.mark.parametrize("gradient, message", [
    ("abc", "the gradient must be an array of backend 'numpy', a Variable or a number, got a "
            "str"),
    ({"a": 1}, "got a dict"),
    ([[1.0, 2.0], [3.0]], "cannot be made an array of shape (3,) and dtype float64"),
])
def test_backward_names_the_gradient_it_cannot_use(gradient, message):
    y = ag.Variable(np.ones(3), requires_grad=True) * 2
    with pytest.raises(TypeError) as error:
        y.backward(gradient)
    assert message in str(error.value) and "backward()" in str(error.value)


@pytest.mark.parametrize("returned", [[1.0, 2.0, 3.0], "abc", 3.0])
def test_a_hook_returning_something_else_than_an_array_is_named(returned):
    from arraygrad.errors import GradientError

    for leaf in (True, False):
        x = ag.Variable(np.ones(3), requires_grad=True)
        h = x if leaf else x * 2
        h.register_hook(lambda g: returned)
        with pytest.raises(GradientError, match=rf"a hook returned a {type(returned).__name__}: "
                                                r"return None to keep the gradient"):
            xp.sum(h * 2).backward()


def test_clip_takes_none_for_a_bound():
    x = ag.Variable(np.array([-2.0, 0.5, 3.0]), requires_grad=True)
    xp.sum(xp.clip(x, None, 1.0)).backward()
    assert _close(x.grad, [1.0, 1.0, 0.0])


def test_dlpack_refuses_a_variable_that_requires_grad_and_from_dlpack_keeps_the_graph():
    """np.from_dlpack(v) (scikit-learn converts its inputs so) would hand out v's buffer
    outside the graph: refused, as torch refuses a tensor that requires grad."""
    v = ag.Variable(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    with pytest.raises(BufferError, match="requires grad through DLPack.*v.detach"):
        np.from_dlpack(v)
    assert np.array_equal(np.from_dlpack(v.detach()), v.data)
    same = xp.from_dlpack(v)  # this backend's own namespace: asarray's, the graph kept
    xp.sum(same * same).backward()
    assert np.array_equal(v.grad.data, 2 * v.data)


def test_backward_of_a_complex_scalar_needs_an_explicit_gradient():
    """torch: "grad can be implicitly created only for real scalar outputs"; which real value
    of z to differentiate (its real part, |z|^2) is the user's to say."""
    z = ag.Variable(np.array([1 + 2j, 3 - 1j]), requires_grad=True)
    with pytest.raises(ag.BackwardError, match=r"is complex \(complex128\).*xp.abs\(y\) \*\* 2"):
        xp.sum(z * z).backward()
    with pytest.raises(ag.BackwardError, match="complex"):
        ag.grad(lambda v: xp.sum(v * 1j))(np.array([1.0, 2.0]))
    xp.sum(z * z).backward(gradient=np.array(1 + 0j))  # explicit: d Re(sum z^2)
    assert np.allclose(z.grad.data, 2 * np.conj(z.data))


def test_numpy_ddof_is_the_standards_correction_and_torch_names_are_refused_with_it():
    """xarray and NumPy code pass ddof= to the namespace's std/var: the same option as the
    standard's correction= (NumPy's std would otherwise get both); torch's dim= gets a hint."""
    a = np.array([[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]])
    grads = []
    for options in ({"ddof": 1}, {"correction": 1}):
        v = ag.Variable(a, requires_grad=True)
        s = xp.std(v, axis=1, **options)
        np.testing.assert_allclose(s.data, np.std(a, axis=1, ddof=1))
        xp.sum(s * xp.asarray([1.0, -2.0])).backward()
        grads.append(v.grad.data)
    np.testing.assert_array_equal(grads[0], grads[1])
    with pytest.raises(TypeError, match="write axis= instead of dim="):
        xp.sum(ag.Variable(a), dim=1)


def test_assigning_data_that_the_variable_cannot_hold_is_refused_at_the_assignment():
    """``v.data = ...`` was unchecked: a list or another backend's array failed later far from
    the assignment (or ran, mixing libraries), and an integer array on a Variable that requires
    grad truncated its gradients (0 for sum(v * 0.5)). Each is refused where it is assigned."""
    torch = pytest.importorskip("torch")
    v = ag.Variable(np.ones(2), requires_grad=True)
    with pytest.raises(ag.BackendError, match=r"Variable\.data must be an array of backend "
                                              r"'numpy' \(the Variable's\), got a list.*"
                                              r"xp\.asarray"):
        v.data = [1.0, 2.0]
    with pytest.raises(ag.BackendError, match=r"Variable\.data must be an array of backend "
                                              r"'numpy' \(the Variable's\), got an array of "
                                              r"backend 'torch' \(torch\.Tensor\).*"
                                              r"\.to\('torch'\)"):
        v.data = torch.ones(2, dtype=torch.float64)
    with pytest.raises(ag.GradientError, match=r"Variable\.data: this Variable requires grad, "
                                               r"so its data must be floating-point or complex, "
                                               r"got dtype int64.*requires_grad = False"):
        v.data = np.array([1, 2])
    non_leaf = v * 2.0
    with pytest.raises(ag.GradientError, match=r"got dtype bool.*\.detach\(\)"):
        non_leaf.data = np.array([True, False])
    with pytest.raises(ag.GradientError, match="own autograd tracks"):
        ag.Variable(torch.ones(2)).data = torch.ones(2, requires_grad=True)
    assert np.array_equal(v.data, [1.0, 1.0]) and v.data.dtype == np.float64  # kept

    # What PyTorch allows stays allowed: another shape or float dtype (p.data = p.data.half()),
    # a Variable's array (as Variable(w) takes it), and anything on a constant.
    v.data = np.array([0.5, 1.5, 2.5], dtype=np.float32)
    xp.sum(v * 0.5).backward()
    assert v.grad.data.dtype == np.float32 and np.allclose(v.grad.data, 0.5)
    v.data = ag.Variable(np.zeros(3), requires_grad=True)
    assert type(v.data) is np.ndarray and np.array_equal(v.data, np.zeros(3))
    v.data = np.float64(3.0)  # a NumPy scalar is the numpy backend's, as a 0-d array
    assert isinstance(v.data, np.ndarray) and v.data.shape == ()
    constant = ag.Variable(np.ones(2))
    constant.data = np.array([1, 2])
    assert xp.sum(constant * 3).item() == 9


@pytest.mark.parametrize("data", [np.arange(3), np.array([True, False]), np.int32(4)],
                         ids=["int64", "bool", "int32-scalar"])
def test_a_variable_of_integers_or_booleans_cannot_require_grad(data):
    """As torch.tensor([1, 2], requires_grad=True): refused when built and when set later, with
    the conversion to make; a constant of the same data is fine."""
    dtype = np.asarray(data).dtype
    with pytest.raises(ag.GradientError, match=rf"can require grad, but this one has dtype "
                                               rf"{dtype}\. .*xp\.astype\(a, xp\.float64\)"):
        ag.Variable(data, requires_grad=True)
    constant = ag.Variable(data)
    with pytest.raises(ag.GradientError, match=rf"has dtype {dtype}\."):
        constant.requires_grad = True
    assert constant.requires_grad is False and constant.grad_fn is None


def test_numpy_scalars_become_0d_arrays_every_time():
    """NumPy scalars (np.float64(2.5), what a reduction returns) are coerced to 0-d arrays,
    the first time a scalar type is met and every time after it."""
    for _ in range(3):
        for scalar in (np.float64(2.5), np.float32(2.5), np.complex128(2.5 + 1j)):
            v = ag.Variable(scalar, requires_grad=True)
            assert type(v.data) is np.ndarray and v.data.shape == () and v.data.dtype == scalar.dtype
            xp.real(v * v).backward()  # (real: complex128 needs it; torch gives 2 conj(z))
            assert type(v.grad.data) is np.ndarray and v.grad.data == 2 * np.conj(scalar)


def test_a_dtype_outside_the_standard_is_named_a_dtype():
    with pytest.raises(AttributeError, match="float16 is a dtype of the backend, not of the "
                                             "Array API standard"):
        ag.namespace("numpy").float16
    with pytest.raises(AttributeError, match="not a function of the Array API standard"):
        ag.namespace("numpy").polyfit


@pytest.mark.parametrize("mode", ["r", "raw"])
def test_a_backends_own_value_of_an_option_the_rule_reads_is_refused(mode):
    """NumPy's qr takes mode="r" (R alone) and "raw" (LAPACK's reflectors): passed on, either
    came back read as the standard's (Q, R) pair, two rows of R with a gradient, silently."""
    x = ag.Variable(np.ones((3, 2)) + np.eye(3, 2), requires_grad=True)
    with pytest.raises(ValueError, match=f"mode='{mode}' is not one of the standard's values"):
        xp.linalg.qr(x, mode=mode)
    with ag.no_grad(), pytest.raises(ValueError, match="standard's values"):
        xp.linalg.qr(x.detach(), mode=mode)
    assert xp.linalg.qr(x, mode="complete").Q.shape == (3, 3)


def test_pinv_hermitian_of_the_backend_is_refused():
    """NumPy's pinv(hermitian=True) reads one triangle; the rule's gradient is of the whole
    matrix: the value was NumPy's and the gradient another function's, silently
    (np.linalg.pinv(v, hermitian=True) models the triangle, tests/test_numpy_api.py)."""
    x = ag.Variable(np.eye(3) + np.triu(np.ones((3, 3))), requires_grad=True)
    with pytest.raises(ValueError, match="hermitian=True is not one of the standard's values"):
        xp.linalg.pinv(x, hermitian=True)
    assert xp.linalg.pinv(x, hermitian=False).shape == (3, 3)
