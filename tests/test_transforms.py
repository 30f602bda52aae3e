"""Function transforms (grad, value_and_grad, vjp, jvp, jacobian, hessian), forward mode and
``arraygrad.autograd.grad``, checked against central differences and against each other."""

import numpy as np
import pytest

import arraygrad as ag


def _central(f, arrays, directions, eps=1e-6):
    """Central difference of ``f`` (NumPy in, NumPy out) along ``directions``."""
    plus = f(*[a + eps * d for a, d in zip(arrays, directions)])
    minus = f(*[a - eps * d for a, d in zip(arrays, directions)])
    return (np.asarray(plus) - np.asarray(minus)) / (2 * eps)


def _host(backend, f):
    """``f`` on Variables, run from NumPy arrays to NumPy arrays without recording."""
    def run(*arrays):
        with ag.no_grad():
            return backend.host(f(*[backend.variable(a, requires_grad=False, dtype=a.dtype)
                                    for a in arrays]))
    return run


def _complex(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


# (f on the differentiable namespace, input maker) covering every kind of JVP rule: explicit
# per argument, real-valued reductions, LINEAR functions, and VJP-transposed ones.
CASES = {
    "sin*exp": (lambda xp, x: xp.sin(x) * xp.exp(x), lambda r: [r.standard_normal((2, 3))]),
    "sqrt/log": (lambda xp, x: xp.sqrt(x) / xp.log(x), lambda r: [r.uniform(1.5, 3, (4,))]),
    "pow": (lambda xp, x, y: x ** y, lambda r: [r.uniform(0.5, 2, (3,)), r.uniform(-1, 2, (3,))]),
    "maximum_clip": (lambda xp, x, y: xp.clip(xp.maximum(x, y), -0.5, 0.5),
                     lambda r: [r.standard_normal((4,)), r.standard_normal((4,))]),
    "max_var_std": (lambda xp, x: xp.max(x, axis=0) + xp.var(x, axis=1)[0] + xp.std(x),
                    lambda r: [r.standard_normal((3, 3))]),
    "prod": (lambda xp, x: xp.prod(x, axis=-1), lambda r: [r.standard_normal((2, 4))]),
    "linear": (lambda xp, x: xp.concat([xp.reshape(x, (6,)), xp.flip(x[0, :], axis=0),
                                        xp.sum(x, axis=0)]) * 2,
               lambda r: [r.standard_normal((2, 3))]),
    "where_take_diff": (lambda xp, x: xp.diff(xp.where(x > 0, x, x * x), axis=0) ** 2,
                        lambda r: [r.standard_normal((3, 2))]),
    "setitem": (lambda xp, x: _setitem(xp, x), lambda r: [r.standard_normal((3,))]),
    "cumulative_prod": (lambda xp, x: xp.cumulative_prod(x), lambda r: [r.standard_normal((4,))]),
    "sort_matmul": (lambda xp, x, y: xp.sort(x @ y, axis=0),
                    lambda r: [r.standard_normal((3, 2)), r.standard_normal((2, 2))]),
    "complex": (lambda xp, z: xp.exp(z) * z + xp.conj(z) * 2,
                lambda r: [_complex(r, (3,))]),
}


def _setitem(xp, x):
    y = x * 1
    y[1] = x[0] * x[2]
    return y


@pytest.mark.parametrize("name", CASES)
def test_jvp_matches_central_differences_and_the_vjp(backend, name, rng):
    make_f, make_inputs = CASES[name]
    arrays = make_inputs(rng)
    f = lambda *xs: make_f(backend.xp, *xs)  # noqa: E731
    directions = [rng.standard_normal(a.shape) + (1j * rng.standard_normal(a.shape) if
                                                  np.iscomplexobj(a) else 0) for a in arrays]
    raw_inputs = [backend.array(a, dtype=a.dtype) for a in arrays]
    raw_tangents = [backend.array(d, dtype=a.dtype) for a, d in zip(arrays, directions)]
    out, tangent = ag.jvp(f, raw_inputs, raw_tangents)
    expected = _central(_host(backend, f), arrays, directions)
    np.testing.assert_allclose(backend.host(tangent), expected, rtol=1e-6, atol=1e-7)
    # <u, J v> computed forward equals <J^H u, v> computed backward.
    u = rng.standard_normal(expected.shape) + (1j * rng.standard_normal(expected.shape)
                                               if np.iscomplexobj(expected) else 0)
    _, vjp_fn = ag.vjp(f, *raw_inputs)
    cotangents = vjp_fn(backend.array(u, dtype=expected.dtype))
    forward = np.real(np.vdot(u, backend.host(tangent)))
    backward = sum(np.real(np.vdot(backend.host(c), d)) for c, d in zip(cotangents, directions))
    np.testing.assert_allclose(forward, backward, rtol=1e-10, atol=1e-12)


def test_grad_value_and_grad_and_hessian(backend, rng):
    xp = backend.xp
    values = rng.standard_normal(3)
    f = lambda x: xp.sum(xp.sin(x) * x * x)  # noqa: E731
    x = backend.array(values)
    gradient = ag.grad(f)(x)
    assert not isinstance(gradient, ag.Variable)  # raw in, raw out
    expected = np.cos(values) * values**2 + 2 * values * np.sin(values)
    np.testing.assert_allclose(backend.host(gradient), expected)
    value, gradient = ag.value_and_grad(f)(x)
    np.testing.assert_allclose(backend.host(value), np.sum(np.sin(values) * values**2))
    hessian = backend.host(ag.hessian(f)(x))
    diagonal = -np.sin(values) * values**2 + 4 * values * np.cos(values) + 2 * np.sin(values)
    np.testing.assert_allclose(hessian, np.diag(diagonal), atol=1e-12)
    third = ag.grad(ag.grad(lambda s: xp.sum(s**4)))(backend.array(np.array(2.0)))
    np.testing.assert_allclose(backend.host(third), 12 * 2.0**2)


def test_grad_with_several_arguments_and_aux(backend, rng):
    xp = backend.xp
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    (ga, gb), aux = ag.grad(lambda x, y: (xp.sum(x * y * y), "aux"), argnums=(0, 1),
                            has_aux=True)(backend.array(a), backend.array(b))
    assert aux == "aux"
    np.testing.assert_allclose(backend.host(ga), b * b)
    np.testing.assert_allclose(backend.host(gb), 2 * a * b)


def test_jacobian_matches_central_differences(backend, rng):
    xp = backend.xp
    values = rng.standard_normal(4)
    f = lambda x: xp.cumulative_sum(xp.tanh(x)) * x  # noqa: E731
    jac = backend.host(ag.jacobian(f)(backend.array(values)))
    host = _host(backend, f)
    columns = [_central(host, [values], [np.eye(4)[k]]) for k in range(4)]
    np.testing.assert_allclose(jac, np.stack(columns, axis=1), rtol=1e-6, atol=1e-8)


def test_grad_needs_a_single_element_output(backend):
    with pytest.raises(ag.BackwardError, match="jacobian"):
        ag.grad(lambda x: x * 2)(backend.array(np.ones(3)))


def test_autograd_grad_returns_gradients_without_touching_dot_grad(backend):
    xp = backend.xp
    x = backend.variable(np.array([1.0, 2.0]))
    y = backend.variable(np.array([3.0, 4.0]))
    loss = xp.sum(x * y)
    gx, gy = ag.autograd.grad(loss, [x, y], create_graph=True)
    np.testing.assert_allclose(backend.host(gx), [3.0, 4.0])
    assert x.grad is None and y.grad is None
    (ggx,) = ag.autograd.grad(xp.sum(gx * gy), [y])  # d/dy sum(y * x) = x
    np.testing.assert_allclose(backend.host(ggx), [1.0, 2.0])
    unused = backend.variable(np.ones(2))
    with pytest.raises(ag.BackwardError, match="allow_unused"):
        ag.autograd.grad(xp.sum(x * 2), [unused])
    assert ag.autograd.grad(xp.sum(x * 2), [x, unused], allow_unused=True)[1] is None
    # One input given bare: still a tuple of one gradient, as torch's (grad(y, x)[0] is the
    # whole gradient, not its first entry).
    bare = ag.autograd.grad(xp.sum(x * x), x)
    assert isinstance(bare, tuple) and len(bare) == 1
    np.testing.assert_allclose(backend.host(bare[0]), [2.0, 4.0])


@pytest.mark.parametrize("name", CASES)
def test_jvp_under_an_outer_transform_gives_the_same_tangent(backend, name, rng):
    """Primals that require grad (an outer transform's) take the recorded path (the transposed
    VJP, so that the tangent stays on the outer graph): same tangent as forward mode, for every
    kind of rule, complex included."""
    make_f, make_inputs = CASES[name]
    arrays = make_inputs(rng)
    f = lambda *xs: make_f(backend.xp, *xs)  # noqa: E731
    tangents = [backend.array(rng.standard_normal(a.shape) + (
        1j * rng.standard_normal(a.shape) if np.iscomplexobj(a) else 0), dtype=a.dtype)
        for a in arrays]
    _, plain = ag.jvp(f, [backend.array(a, dtype=a.dtype) for a in arrays], tangents)
    leaves = [backend.variable(a, dtype=a.dtype) for a in arrays]
    out, connected = ag.jvp(f, leaves, tangents)
    assert isinstance(connected, ag.Variable) and out.requires_grad
    np.testing.assert_allclose(backend.host(connected), backend.host(plain), rtol=1e-12,
                               atol=1e-13)


XP = ag.namespace("numpy")


# ------------------------------------------- closures: an outer graph is kept, never dropped
_X0 = np.array([1.0, 2.0, 3.0])
_INNER = {  # inner transform of x, closing over w; d/dw of the sum of its result, by hand
    "grad": (lambda w: ag.grad(lambda x: XP.sum(x * x * w))(_X0), np.sum(2 * _X0)),
    "vjp": (lambda w: ag.vjp(lambda x: x * x * w, _X0)[1](np.ones(3))[0], np.sum(2 * _X0)),
    "jvp": (lambda w: ag.jvp(lambda x: x * x * w, (_X0,), (np.ones(3),))[1], np.sum(2 * _X0)),
    "jacrev": (lambda w: ag.jacrev(lambda x: x * x * w)(_X0), np.sum(2 * _X0)),
    "jacfwd": (lambda w: ag.jacfwd(lambda x: x * x * w)(_X0), np.sum(2 * _X0)),
    "hessian": (lambda w: ag.hessian(lambda x: XP.sum(x ** 3 * w))(_X0), np.sum(6 * _X0)),
    "hvp": (lambda w: ag.hvp(lambda x: XP.sum(x ** 3 * w), (_X0,), (np.ones(3),))[1][0],
            np.sum(6 * _X0)),
}


@pytest.mark.parametrize("inner", sorted(_INNER))
def test_a_transform_inside_another_keeps_the_graph_of_what_it_closes_over(inner):
    """JAX's grad(lambda w: grad(lambda x: f(x, w))(x0)): the inner result depends on w through
    the closure; dropping that graph would give 0 silently."""
    f, expected = _INNER[inner]
    outer = ag.grad(lambda w: XP.sum(f(w)))(np.array(0.5))
    assert not isinstance(outer, ag.Variable)  # raw in, raw out: inner leaves are not outer
    np.testing.assert_allclose(outer, expected, rtol=1e-12)
    h = 1e-6  # and central differences of the inner transform itself
    numeric = (np.sum(np.asarray(_raw(f(np.array(0.5 + h))))) -
               np.sum(np.asarray(_raw(f(np.array(0.5 - h)))))) / (2 * h)
    np.testing.assert_allclose(outer, numeric, rtol=1e-6)


def _raw(value):
    return value.data if isinstance(value, ag.Variable) else value


def test_a_closure_over_a_variable_that_requires_grad_returns_a_connected_variable():
    w = ag.Variable(np.array(0.5), requires_grad=True)
    g = ag.grad(lambda x: XP.sum(x * x * w))(_X0)
    assert isinstance(g, ag.Variable) and g.requires_grad
    XP.sum(g).backward()
    np.testing.assert_allclose(w.grad.data, np.sum(2 * _X0))


def test_jvp_never_writes_into_a_tangent_it_was_given():
    """An assignment into a fresh copy (``y = xp.asarray(x, copy=True); y[0] = 5``, SciPy's
    ``xpx.at(x, i).set(v, copy=True)``) may write into the copy's own array; the forward mode
    replays that assignment on the tangent, which is the caller's array (a copy's tangent is
    the input's) and may be used by another node too: it must not be written into."""
    def f(x):
        y = XP.asarray(x, copy=True)
        y[0] = 5.0
        return y * 2 + XP.sum(x)  # x's tangent also reaches the sum
    x, t = np.array([0.5, -0.2, 1.0]), np.array([1.0, 2.0, 3.0])
    _, tangent = ag.jvp(f, (x,), (t.copy(),))
    np.testing.assert_array_equal(t, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(tangent, [6.0, 10.0, 12.0])
    given = t.copy()
    ag.jvp(f, (x,), (given,))
    np.testing.assert_array_equal(given, t)  # the caller's array is as it was
    np.testing.assert_allclose(ag.jvp(f, (x,), (given,))[1], tangent)  # and a rerun agrees


@pytest.mark.parametrize("f", [lambda x: np.allclose(x, x * 3.0 / 3.0), lambda x: XP.sum(x > 1),
                               lambda x: XP.argmax(x)], ids=["allclose", "count", "argmax"])
def test_grad_of_a_boolean_or_integer_value_is_refused(f):
    """Such a value has no derivative: zeros would hide the mistake (JAX and HIPS autograd
    raise TypeError too). A constant floating value still has a gradient of zeros."""
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="floating value"):
        ag.grad(f)(x)
    with pytest.raises(TypeError, match="floating value"):
        ag.hvp(f, (x,), (x,))
    np.testing.assert_array_equal(ag.grad(lambda x: 1.0)(x), np.zeros(3))
