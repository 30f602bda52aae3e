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

X0 = np.array([0.3, -0.7, 1.1])
X1 = np.array([0.5, 0.2, -0.4])
S0 = np.array([0.9, -0.2, 0.6])  # where the outer derivative is taken


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


def _outer(T, inner):
    """A scalar function of s through ``inner``, non-linear in its result."""
    return lambda s: T.xp.sum(T.xp.sin(inner(T, s)))


def _jax(f, *args):
    return np.asarray(f(*[jnp.asarray(a) for a in args]))


def _host(value):
    return np.asarray(value.data if isinstance(value, ag.Variable) else value)


@pytest.mark.parametrize("name", INNER)
def test_an_inner_transform_is_differentiable_in_every_outer_variable(name):
    inner = INNER[name]
    # the values first: nesting must not change them
    np.testing.assert_allclose(_host(inner(AG, S0)), _jax(lambda s: inner(JAX, s), S0),
                               rtol=1e-12, atol=1e-12)
    expected = _jax(JAX.grad(_outer(JAX, inner)), S0)
    got = ag.grad(_outer(AG, inner))(S0)
    np.testing.assert_allclose(_host(got), expected, rtol=1e-10, atol=1e-12)
