"""Edges found by a differential fuzzer (against torch and JAX) and by HIPS autograd's own test
suite: an outer Variable given to an inner transform, transforms under ``no_grad``, second
derivatives at the special points of where-masked rules, NumPy calls on valid but unusual
arguments, forward over forward through shape functions, and checkpoint's recomputation."""

import numpy as np
import pytest

import arraygrad as ag

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
torch = pytest.importorskip("torch")
jax.config.update("jax_enable_x64", True)

X0 = np.array([0.3, -0.7])
T0 = np.array([0.5, -0.4])
S0 = np.array([0.9, 0.6])


def _host(value):
    return np.asarray(value.data if isinstance(value, ag.Variable) else value)


def _f(xp, a, s):
    """A scalar function of the inner argument ``a`` and the outer ``s``, non-linear in both."""
    return xp.sum(xp.sin(a) * s + a * a * s * s)


def _g(xp, a, s):
    return xp.sin(a) * s + a * a * s


# The inner transform gets the outer value s as its differentiated argument *and* closes over
# it: its derivative is with respect to the argument alone (JAX), s being held in the closure.
SAME = {
    "grad": lambda T, xp, s: T.grad(lambda a: _f(xp, a, s))(s),
    "value_and_grad": lambda T, xp, s: T.value_and_grad(lambda a: _f(xp, a, s))(s)[1],
    "jacrev": lambda T, xp, s: T.jacrev(lambda a: _g(xp, a, s))(s),
    "jacfwd": lambda T, xp, s: T.jacfwd(lambda a: _g(xp, a, s))(s),
    "hessian": lambda T, xp, s: T.hessian(lambda a: _f(xp, a, s))(s),
    "jvp": lambda T, xp, s: T.jvp(lambda a: _g(xp, a, s), (s,), (T0,))[1],
    "vjp": lambda T, xp, s: T.vjp(lambda a: _g(xp, a, s), s)[1](T0)[0],
    "argnums-twice": lambda T, xp, s: xp.stack(
        T.grad(lambda a, b: _f(xp, a, b), argnums=(0, 1))(s, s)),
}


@pytest.mark.parametrize("name", sorted(SAME))
def test_an_outer_variable_given_as_the_inner_argument_is_a_new_variable(name):
    """``grad(lambda x: grad(lambda a: a * x)(x))`` is 1, not 2: the values and the outer
    gradient are JAX's."""
    inner, xp = SAME[name], ag.namespace("numpy")
    outer_ag = lambda s: xp.sum(xp.sin(inner(ag, xp, s)))  # noqa: E731
    outer_jax = lambda s: jnp.sum(jnp.sin(inner(jax, jnp, s)))  # noqa: E731
    np.testing.assert_allclose(_host(inner(ag, xp, ag.Variable(S0))),
                               np.asarray(inner(jax, jnp, jnp.asarray(S0))), rtol=1e-12)
    np.testing.assert_allclose(_host(ag.grad(outer_ag)(S0)),
                               np.asarray(jax.grad(outer_jax)(jnp.asarray(S0))), rtol=1e-10)


def test_the_scalar_cases_of_the_report():
    assert float(ag.grad(lambda x: ag.grad(lambda a: a * x)(x))(3.0)) == 1.0
    assert float(ag.grad(lambda x: ag.jvp(lambda a: a * x, (x,), (1.0,))[1])(3.0)) == 1.0
    x = ag.Variable(np.array(3.0), requires_grad=True)
    assert [float(_host(g)) for g in ag.grad(lambda a, b: a * b, argnums=(0, 1))(x, x)] == [3, 3]


NO_GRAD = {
    "grad": lambda T, xp, x: T.grad(lambda a: _f(xp, a, S0))(x),
    "value_and_grad": lambda T, xp, x: T.value_and_grad(lambda a: _f(xp, a, S0))(x)[1],
    "jacrev": lambda T, xp, x: T.jacrev(lambda a: _g(xp, a, S0))(x),
    "jacfwd": lambda T, xp, x: T.jacfwd(lambda a: _g(xp, a, S0))(x),
    "hessian": lambda T, xp, x: T.hessian(lambda a: _f(xp, a, S0))(x),
    "jvp": lambda T, xp, x: T.jvp(lambda a: _g(xp, a, S0), (x,), (T0,))[1],
    "vjp": lambda T, xp, x: T.vjp(lambda a: _g(xp, a, S0), x)[1](T0)[0],
}


@pytest.mark.parametrize("given", ["raw", "leaf"])
@pytest.mark.parametrize("name", sorted(NO_GRAD))
def test_transforms_compute_their_derivatives_under_no_grad(name, given):
    """As ``torch.func`` and JAX: the derivatives are computed whatever the outer grad mode; a
    Variable result is then connected to no graph."""
    x = X0 if given == "raw" else ag.Variable(X0, requires_grad=True)
    with ag.no_grad():
        found = NO_GRAD[name](ag, ag.namespace("numpy"), x)
    assert not (isinstance(found, ag.Variable) and found.requires_grad)
    np.testing.assert_allclose(_host(found), np.asarray(NO_GRAD[name](jax, jnp, jnp.asarray(X0))),
                               rtol=1e-12)
    assert ag.is_grad_enabled()


# --------------------------------------------------- second derivatives at special points
XP = ag.namespace("numpy")


def _hessian_ag(f, point):
    """The Hessian of the scalar ``f`` of scalars, by grad of grad (reverse over reverse)."""
    n = len(point)
    args = [np.array(p) for p in point]
    with np.errstate(all="ignore"):
        return np.array([[float(_host(ag.grad(lambda *a, i=i: ag.grad(f, argnums=i)(*a),
                                              argnums=j)(*args))) for j in range(n)]
                         for i in range(n)])


def _hessian_torch(f, point):
    ts = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in point]
    first = torch.autograd.grad(f(*ts), ts, create_graph=True)
    return np.array([[0.0 if h is None else h.item() for h in torch.autograd.grad(
        g, ts, retain_graph=True, allow_unused=True)] for g in first])


def _hessian_jax(f, point):
    return np.array(jax.hessian(f, argnums=tuple(range(len(point))))(*point))


# name: (arraygrad's f, the reference's f, where, the reference: torch or JAX). Each formula
# masks a branch that is not finite at the point; differentiating that branch gave NaN.
SECOND = {
    "pow/exponent, base 0": (lambda y: XP.pow(0.0, y), lambda y: jnp.power(0.0, y), (0.5,),
                             _hessian_jax),
    "np.power/exponent, base 0": (lambda y: np.power(0.0, y), lambda y: jnp.power(0.0, y),
                                  (2.0,), _hessian_jax),
    "pow/base at exponent 0": (lambda x: XP.pow(x, XP.asarray(0.0)),
                               lambda x: 1.0 + 0.0 * x, (0.0,), _hessian_jax),  # x ** 0
    "pow/exponent, array base 0": (lambda y: XP.pow(XP.zeros_like(y), y),
                                   lambda y: jnp.power(jnp.zeros_like(y), y), (0.5,),
                                   _hessian_jax),
    "xlogy/at x1 = 0": (lambda a, b: XP.xlogy(a, b), torch.xlogy, (0.0, 2.0), _hessian_torch),
    "sinc/at 0": (lambda x: XP.sinc(x), jnp.sinc, (0.0,), _hessian_jax),
}


@pytest.mark.parametrize("name", sorted(SECOND))
def test_second_derivatives_at_special_points_are_the_references(name):
    f, reference, point, hessian = SECOND[name]
    np.testing.assert_allclose(_hessian_ag(f, point), hessian(reference, point), rtol=1e-12,
                               atol=1e-15)


def test_xlogy_first_derivative_in_x1_at_zero_is_log_x2_as_in_torch_and_jax():
    found = ag.grad(lambda a, b: XP.sum(XP.xlogy(a, b)), argnums=(0, 1))(np.zeros(3),
                                                                 np.array([2.0, 0.0, -1.0]))
    a, b = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in ([0.0] * 3, [2.0, 0.0, -1.0]))
    expected = torch.autograd.grad(torch.xlogy(a, b).sum(), (a, b))
    for g, e in zip(found, expected):
        np.testing.assert_array_equal(g, e.numpy())


@pytest.mark.parametrize("name", ["rel_entr", "kl_div"])
def test_the_masked_logarithm_of_rel_entr_has_no_nan_second_derivative(name):
    """At ``x = 0`` the derivative in ``x`` is 0 (PyTorch's convention), so is its derivative
    in ``y``; in ``y`` it is ``-x / y`` (``1 - x / y``), whose derivative in ``x`` is ``-1/y``."""
    found = _hessian_ag(lambda a, b: getattr(XP.special, name)(a, b), (0.0, 2.0))
    np.testing.assert_array_equal(found, [[0.0, 0.0], [-0.5, 0.0]])


def test_the_frobenius_norm_at_zero_has_the_second_derivative_of_the_vector_norm():
    """No second derivative exists at 0 (PyTorch: NaN); both norms give 0, not the identity."""
    fro = _hessian_ag(lambda a, b: XP.linalg.matrix_norm(XP.reshape(XP.stack([a, b]), (1, 2))),
                      (0.0, 0.0))
    vec = _hessian_ag(lambda a, b: XP.linalg.vector_norm(XP.stack([a, b])), (0.0, 0.0))
    np.testing.assert_array_equal(fro, vec)


# ------------------------------------------------------- NumPy calls on unusual valid input
def _central_gradient(f, x, eps=1e-6):
    """The gradient of the scalar ``f`` at ``x`` by float64 central differences."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


V = np.arange(6.0).reshape(2, 3) + 1.0
NUMPY_CALLS = {  # each as NumPy takes it; the Variable's value and gradient must be NumPy's
    "tensordot/axes=[-1, 0]": lambda v: np.tensordot(v, np.ones((3, 2)) * 2, axes=[-1, 0]),
    "hstack/one 2-d array": lambda v: np.hstack(v),
    "hstack/one 1-d array": lambda v: np.hstack(v[0]),
    "vstack/one 1-d array": lambda v: np.vstack(v[1]),
    "swapaxes/same axis": lambda v: np.swapaxes(v, 1, 1),
    "average/axis list": lambda v: np.average(v, axis=[0, 1]),
    "average/axis list, weights": lambda v: np.average(v, axis=[1], weights=np.ones((2, 3))),
}


@pytest.mark.parametrize("name", sorted(NUMPY_CALLS))
def test_numpy_calls_on_unusual_valid_arguments(name):
    f = NUMPY_CALLS[name]
    weights = np.linspace(0.5, 1.5, np.size(f(V))).reshape(np.shape(f(V)))
    found = f(ag.Variable(V))
    np.testing.assert_array_equal(_host(found), f(V))
    gradient = ag.grad(lambda v: (f(v) * weights).sum())(V)
    np.testing.assert_allclose(gradient, _central_gradient(lambda v: np.sum(f(v) * weights), V),
                               rtol=1e-7)


# ----------------------------------------- forward over forward through shape functions
SHAPES = {  # (arraygrad's, JAX's) function of a 4-vector
    "stack/one array, axis 1": (lambda t: XP.stack((t,), axis=1), lambda t: jnp.stack((t,), axis=1)),
    "concat": (lambda t: XP.concat((t, XP.sin(t))), lambda t: jnp.concatenate((t, jnp.sin(t)))),
    "unstack": (lambda t: XP.unstack(XP.reshape(t, (2, 2)))[1], lambda t: jnp.reshape(t, (2, 2))[1]),
    "np.split": (lambda t: np.split(t, 2)[1], lambda t: jnp.split(t, 2)[1]),
    "meshgrid": (lambda t: XP.meshgrid(t, t)[1], lambda t: jnp.meshgrid(t, t)[1]),
    "eigh": (lambda t: XP.linalg.eigh(XP.reshape(t, (2, 2)) + XP.reshape(t, (2, 2)).mT)[0],
             lambda t: jnp.linalg.eigh(jnp.reshape(t, (2, 2)) + jnp.reshape(t, (2, 2)).T)[0]),
}
X4, T4 = np.array([0.3, -0.7, 1.1, 0.4]), np.array([1.0, 0.5, -0.2, 0.3])


@pytest.mark.parametrize("mode", ["forward-over-forward", "forward-over-reverse",
                                  "reverse-over-forward"])
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_second_order_through_shape_and_multi_output_functions(name, mode):
    """A guard (this passed already): each nesting of modes through functions whose tangents
    or cotangents are built per output, against JAX."""
    f_ag, f_jax = SHAPES[name]
    g_ag = lambda t: XP.sin(f_ag(t)) * f_ag(t)  # noqa: E731
    g_jax = lambda t: jnp.sin(f_jax(t)) * f_jax(t)  # noqa: E731
    if mode == "forward-over-forward":
        found = ag.jvp(lambda x: ag.jvp(g_ag, (x,), (T4,))[1], (X4,), (T4,))[1]
        expected = jax.jvp(lambda x: jax.jvp(g_jax, (x,), (T4,))[1], (X4,), (T4,))[1]
    elif mode == "forward-over-reverse":
        found = ag.jvp(lambda x: ag.grad(lambda y: XP.sum(g_ag(y)))(x), (X4,), (T4,))[1]
        expected = jax.jvp(lambda x: jax.grad(lambda y: jnp.sum(g_jax(y)))(x), (X4,), (T4,))[1]
    else:
        found = ag.grad(lambda x: XP.sum(ag.jvp(g_ag, (x,), (T4,))[1]))(X4)
        expected = jax.grad(lambda x: jnp.sum(jax.jvp(g_jax, (x,), (T4,))[1]))(X4)
    np.testing.assert_allclose(_host(found), np.asarray(expected), rtol=1e-10, atol=1e-12)
