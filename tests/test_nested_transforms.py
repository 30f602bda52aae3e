"""Transforms inside transforms, forward mode through broadcasting, constant outputs and
checkpoint's check of its recomputation, against JAX (float64) and central differences.

An inner transform's result is a differentiable function of every outer Variable it depends on,
however that Variable enters it: as the differentiated argument, as a fixed argument or a
closure, or as a tangent or cotangent (JAX's semantics of nested transforms)."""

from types import SimpleNamespace

import numpy as np
import pytest

import arraygrad as ag

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

X0 = np.array([0.3, -0.7])
X1 = np.array([0.5, -0.4])
S0 = np.array([0.9, 0.6])  # where the outer derivative is taken


def _hvp_ag(f, primals, tangents):
    return ag.hvp(f, primals, tangents)[1][0]


def _hvp_jax(f, primals, tangents):
    return jax.jvp(jax.grad(f), primals, tangents)[1]


AG = SimpleNamespace(xp=np, grad=ag.grad, value_and_grad=ag.value_and_grad, jacrev=ag.jacrev,
                     jacobian=ag.jacobian, jacfwd=ag.jacfwd, hessian=ag.hessian, jvp=ag.jvp,
                     vjp=ag.vjp, hvp=_hvp_ag, checkpoint=ag.checkpoint)
JAX = SimpleNamespace(xp=jnp, grad=jax.grad, value_and_grad=jax.value_and_grad,
                      jacrev=jax.jacrev, jacobian=jax.jacrev, jacfwd=jax.jacfwd,
                      hessian=jax.hessian, jvp=jax.jvp, vjp=jax.vjp, hvp=_hvp_jax,
                      checkpoint=lambda fn, *args: jax.checkpoint(fn)(*args))


def _scalar(xp, a, b):
    return xp.sum(xp.sin(a) * b + a * a * b * b)


def _vector(xp, a, b):
    return xp.sin(a) * b + a * a * b


def _scalar_kw(xp, a, *, b):
    return _scalar(xp, a, b)


def _value_and_grad(T, f):
    def both(*args, **kwargs):
        value, gradient = T.value_and_grad(f)(*args, **kwargs)
        return value * gradient
    return both


# Each inner computation takes the transforms T and the outer value s; the name says the
# transform and how s enters it.
INNER = {
    "grad/argument": lambda T, s: T.grad(lambda a: _scalar(T.xp, a, X0))(s),
    "grad/fixed": lambda T, s: T.grad(lambda a, b: _scalar(T.xp, a, b))(X0, s),
    "grad/fixed-first": lambda T, s: T.grad(lambda b, a: _scalar(T.xp, a, b), argnums=1)(s, X0),
    "grad/keyword": lambda T, s: T.grad(lambda a, b: _scalar_kw(T.xp, a, b=b))(X0, b=s),
    "grad/closure": lambda T, s: T.grad(lambda a: _scalar(T.xp, a, s))(X0),
    "value_and_grad/argument": lambda T, s: _value_and_grad(
        T, lambda a: _scalar(T.xp, a, X0))(s),
    "value_and_grad/fixed": lambda T, s: _value_and_grad(
        T, lambda a, b: _scalar(T.xp, a, b))(X0, s),
    "value_and_grad/closure": lambda T, s: _value_and_grad(
        T, lambda a: _scalar(T.xp, a, s))(X0),
    "jacrev/argument": lambda T, s: T.jacrev(lambda a: _vector(T.xp, a, X0))(s),
    "jacrev/fixed": lambda T, s: T.jacrev(lambda a, b: _vector(T.xp, a, b))(X0, s),
    "jacobian/fixed": lambda T, s: T.jacobian(lambda a, b: _vector(T.xp, a, b))(X0, s),
    "jacobian/closure": lambda T, s: T.jacobian(lambda a: _vector(T.xp, a, s))(X0),
    "jacfwd/argument": lambda T, s: T.jacfwd(lambda a: _vector(T.xp, a, X0))(s),
    "jacfwd/fixed": lambda T, s: T.jacfwd(lambda a, b: _vector(T.xp, a, b))(X0, s),
    "jacfwd/closure": lambda T, s: T.jacfwd(lambda a: _vector(T.xp, a, s))(X0),
    "hessian/argument": lambda T, s: T.hessian(lambda a: _scalar(T.xp, a, X0))(s),
    "hessian/fixed": lambda T, s: T.hessian(lambda a, b: _scalar(T.xp, a, b))(X0, s),
    "hessian/closure": lambda T, s: T.hessian(lambda a: _scalar(T.xp, a, s))(X0),
    "jvp/argument": lambda T, s: T.jvp(lambda a: _vector(T.xp, a, X0), (s,), (X1,))[1],
    "jvp/argument-value": lambda T, s: T.jvp(lambda a: _vector(T.xp, a, X0), (s,), (X1,))[0],
    "jvp/closure": lambda T, s: T.jvp(lambda a: _vector(T.xp, a, s), (X0,), (X1,))[1],
    "jvp/tangent": lambda T, s: T.jvp(lambda a: _vector(T.xp, a, X1), (X0,), (s,))[1],
    "vjp/argument": lambda T, s: T.vjp(lambda a: _vector(T.xp, a, X0), s)[1](X1)[0],
    "vjp/argument-value": lambda T, s: T.vjp(lambda a: _vector(T.xp, a, X0), s)[0],
    "vjp/closure": lambda T, s: T.vjp(lambda a: _vector(T.xp, a, s), X0)[1](X1)[0],
    "vjp/cotangent": lambda T, s: T.vjp(lambda a: _vector(T.xp, a, X1), X0)[1](s)[0],
    "hvp/argument": lambda T, s: T.hvp(lambda a: _scalar(T.xp, a, X0), (s,), (X1,)),
    "hvp/closure": lambda T, s: T.hvp(lambda a: _scalar(T.xp, a, s), (X0,), (X1,)),
    "hvp/tangent": lambda T, s: T.hvp(lambda a: _scalar(T.xp, a, X1), (X0,), (s,)),
    "checkpoint/argument": lambda T, s: T.checkpoint(lambda a: _vector(T.xp, a, X0), s),
    "checkpoint/closure": lambda T, s: T.checkpoint(lambda a: _vector(T.xp, a, s), X0),
    "checkpoint/grad-inside": lambda T, s: T.checkpoint(
        lambda a: T.grad(lambda b: _scalar(T.xp, b, a))(X0), s),
}


def _custom_sin_times(lib, xp):
    """sin(a) * b with its JVP given (custom_jvp, in arraygrad and in JAX)."""
    function = lib.custom_jvp(lambda a, b: xp.sin(a) * b)
    function.defjvp(lambda p, t: (function(*p), xp.cos(p[0]) * p[1] * t[0] + xp.sin(p[0]) * t[1]))
    return function


INNER["custom_jvp/tangent"] = lambda T, s: T.jvp(
    lambda a: _custom_sin_times(T.lib, T.xp)(a, X1), (X0,), (s,))[1]
AG.lib, JAX.lib = ag, jax


def _outer(T, inner):
    """A scalar function of s through ``inner``, non-linear in its result."""
    return lambda s: T.xp.sum(T.xp.sin(inner(T, s)))


def _jax(f, *args):
    return np.asarray(f(*[jnp.asarray(a) for a in args]))


def _host(value):
    return np.asarray(value.data if isinstance(value, ag.Variable) else value)


@pytest.mark.parametrize("transform", sorted({name.split("/")[0] for name in INNER}))
def test_an_inner_transform_is_differentiable_in_every_outer_variable(transform):
    """Every way in for the transform: the values are JAX's, and so is the outer gradient."""
    wrong = []
    for name in (name for name in INNER if name.split("/")[0] == transform):
        inner = INNER[name]
        try:
            np.testing.assert_allclose(_host(inner(AG, S0)), _jax(lambda s: inner(JAX, s), S0),
                                       rtol=1e-12, atol=1e-12)
            expected = _jax(JAX.grad(_outer(JAX, inner)), S0)
            got = ag.grad(_outer(AG, inner))(S0)
            assert not isinstance(got, ag.Variable), "a raw argument gives a raw gradient"
            np.testing.assert_allclose(_host(got), expected, rtol=1e-10, atol=1e-12)
        except Exception as error:  # noqa: BLE001  (each way in is reported)
            wrong.append(f"{name}: {type(error).__name__}: {str(error).strip()[:300]}")
    assert not wrong, "\n".join(wrong)


def test_nested_in_a_second_outer_variable_checked_by_central_differences():
    """grad of grad, the inner one's fixed argument an outer Variable: d/ds (s * d(a s)/da)
    = 2 s, and the symptom's scalar example."""
    assert float(ag.grad(lambda x: x * ag.grad(lambda a, b: a * b, argnums=1)(x, 2.0))(3.0)) \
        == 6.0
    f = lambda t: t * ag.jvp(np.sin, (0.3,), (t,))[1]  # noqa: E731
    got = float(_host(ag.grad(f)(2.0)))
    eps = 1e-6
    central = (float(_host(f(2.0 + eps))) - float(_host(f(2.0 - eps)))) / (2 * eps)
    np.testing.assert_allclose(got, 4 * np.cos(0.3), rtol=1e-12)
    np.testing.assert_allclose(got, central, rtol=1e-8)


# ------------------------------------------------------------ forward mode through broadcasts
C = np.arange(4.0)
C_COMPLEX = np.array([1 + 2j, 3 - 1j, 0.5j, 2.0])
C_MATRIX = np.arange(6.0).reshape(2, 3)

# f(xp, x) with a constant that broadcasts x, widens its dtype or makes it complex
BROADCASTS = {
    "x + c": (lambda xp, x: x + C, np.float64(0.7)),
    "c - x": (lambda xp, x: C - x, np.float64(0.7)),
    "x + complex c": (lambda xp, x: x + C_COMPLEX, np.float64(0.7)),
    "x + matrix": (lambda xp, x: x + C_MATRIX, np.array([0.1, 0.2, 0.3])),
    "float32 x + float64 c": (lambda xp, x: x + C, np.float32(0.7)),
    "remainder(x, c)": (lambda xp, x: xp.remainder(x, C + 1), np.float64(0.7)),
    "sum(x + c)": (lambda xp, x: xp.sum(x + C), np.float64(0.7)),
}


@pytest.mark.parametrize("name", BROADCASTS)
def test_forward_mode_tangents_have_the_outputs_shape_and_dtype(name):
    make, x0 = BROADCASTS[name]
    t0 = np.asarray(0.6, dtype=x0.dtype) * np.ones_like(x0)
    ns = ag.namespace("numpy")
    value, tangent = ag.jvp(lambda x: make(ns, x), (x0,), (t0,))
    _, expected = jax.jvp(lambda x: make(jnp, x), (jnp.asarray(x0),), (jnp.asarray(t0),))
    expected = np.asarray(expected)
    assert (tangent.shape, tangent.dtype) == (value.shape, value.dtype) == (
        expected.shape, expected.dtype)
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)
    jacobian = ag.jacfwd(lambda x: make(ns, x))(x0)
    expected = np.asarray(jax.jacfwd(lambda x: make(jnp, x))(jnp.asarray(x0)))
    assert (jacobian.shape, jacobian.dtype) == (expected.shape, expected.dtype)
    np.testing.assert_allclose(jacobian, expected, rtol=1e-6)


# ------------------------------------------------------------------------- constant outputs
CONSTANTS = {
    "a Python float": lambda x: 1.0,
    "a raw array": lambda x: np.full((), 2.0),
}


@pytest.mark.parametrize("name", CONSTANTS)
def test_a_constant_output_has_zero_derivatives_of_the_right_shapes(name):
    """JAX and HIPS autograd give zeros where the output does not depend on the input."""
    f, x = CONSTANTS[name], np.array([0.3, 0.5])
    value = float(np.asarray(_host(f(x))))
    zeros = np.zeros_like(x)
    assert np.array_equal(ag.grad(f)(x), zeros) and ag.grad(f)(x).dtype == x.dtype
    v, g = ag.value_and_grad(f)(x)
    assert float(v) == value and np.array_equal(g, zeros)
    assert np.array_equal(ag.jacobian(f)(x), zeros)
    assert np.array_equal(ag.jacfwd(f)(x), zeros)
    assert np.array_equal(ag.hessian(f)(x), np.zeros((2, 2)))
    v, vjp_fn = ag.vjp(f, x)
    assert float(v) == value and np.array_equal(vjp_fn(np.ones(()))[0], zeros)
    v, t = ag.jvp(f, (x,), (np.ones(2),))
    assert float(v) == value and np.array_equal(t, np.zeros(()))
    assert np.array_equal(ag.hvp(f, (x,), (np.ones(2),))[1][0], zeros)
    # inside an outer transform, the constant's zeros join the outer derivative
    assert float(ag.grad(lambda s: s * s + ag.grad(f)(x)[0])(3.0)) == 6.0


def test_an_output_that_is_no_array_is_refused():
    with pytest.raises(TypeError, match=r"grad\(\): f returned a str"):
        ag.grad(lambda x: "one")(np.ones(2))
    with pytest.raises(TypeError, match=r"jacobian\(\): f returned a str at output\[1\]"):
        ag.jacobian(lambda x: (x, "text"))(np.ones(2))


# ------------------------------------------------------------ checkpoint's second run, exactly
def _permute_two(values):
    """Swap two entries (not among 64 evenly spaced ones): the sum and absolute sum stay."""
    values[0, [1, 2]] = values[0, [2, 1]]


def _second_runs(rng):
    """(checkpointed computation of x, change made before backward) pairs whose second run
    gives other gradients."""
    xp = ag.namespace("numpy")
    scale = rng.standard_normal((40, 30))
    mask = rng.random((40, 30)) > 0.5
    mask[0, 1], mask[0, 2] = True, False
    state = {"branch": True}

    def branch(v):  # the same values on both branches, not the same gradient
        return xp.where(xp.asarray(mask), v, v.detach()) if state["branch"] else v * 1.0

    return {
        "a permuted argument": (lambda x: ag.checkpoint(lambda v, s: v * s, x, scale),
                                lambda: _permute_two(scale)),
        "a changed mask": (lambda x: ag.checkpoint(lambda v: v * xp.asarray(mask), x),
                           lambda: _permute_two(mask)),
        "one part in 1e12": (lambda x: ag.checkpoint(lambda v: v * scale, x),
                             lambda: scale.__imul__(1 + 1e-12)),
        "another branch": (lambda x: ag.checkpoint(branch, x), lambda: state.update(branch=False)),
        "a changed mask, the same outputs": (
            lambda x: ag.checkpoint(lambda v: xp.where(xp.asarray(mask), v, v.detach()), x),
            lambda: mask.__setitem__(Ellipsis, ~mask)),
    }


@pytest.mark.parametrize("case", ["a permuted argument", "a changed mask", "one part in 1e12",
                                  "another branch", "a changed mask, the same outputs"])
def test_checkpoint_refuses_any_second_run_that_changes_the_gradient(case, rng):
    xp = ag.namespace("numpy")
    x0 = rng.standard_normal((40, 30))
    x0[0, 2] = x0[0, 1]  # so that the swap only permutes the outputs' values
    make, change = _second_runs(rng)[case]
    loss = lambda v: xp.sum(make(v) ** 2)  # noqa: E731
    before = ag.grad(loss)(x0)
    x = ag.Variable(x0, requires_grad=True)
    y = make(x)
    change()
    assert not np.array_equal(ag.grad(loss)(x0), before)  # the change gives another gradient...
    with pytest.raises(ag.BackwardError, match="other (values|graph) than in the forward pass"):
        xp.sum(y ** 2).backward()  # ... so backward through the first run refuses
