"""Transforms nested in transforms: grad of grad, grad of jvp, vjp inside grad, jvp of grad,
with outer values entering as differentiated arguments, fixed arguments, closures, tangents
and cotangents.

Each program is written once against a transforms object ``T`` (``T.grad``, ``T.jvp``,
``T.vjp``, as in JAX) and a namespace ``xp``, and runs three ways: arraygrad's transforms on
the backend, ``torch.func`` (where torch is installed) and :class:`Numeric`, whose transforms
are float64 central differences on NumPy (so the oracles share nothing with arraygrad). Its
output is compared, then the gradient of ``sum(out * u)`` with the inputs as Variables that
require grad: outer Variables entering the inner transforms.
"""

from __future__ import annotations

import types

import numpy as np

import arraygrad as ag

from .programs import ProgramFailure

STEP = 1e-2  # five-point differences: error O(STEP**4), each level dividing roundoff by STEP


class Numeric:
    """``grad``, ``jvp`` and ``vjp`` by five-point central differences on NumPy float64."""

    @staticmethod
    def _derivative(f, x, direction):
        at = lambda s: np.asarray(f(x + s * STEP * direction), dtype=float)  # noqa: E731
        return (8 * (at(1) - at(-1)) - (at(2) - at(-2))) / (12 * STEP)

    @classmethod
    def grad(cls, f, argnums=0):
        def gradient(*args):
            x = np.asarray(args[argnums], dtype=float)
            out = np.zeros(x.shape)
            for j in range(x.size):
                unit = np.zeros(x.size)
                unit[j] = 1.0
                moved = lambda xj: f(*args[:argnums], xj, *args[argnums + 1:])  # noqa: E731
                out.reshape(-1)[j] = cls._derivative(moved, x, unit.reshape(x.shape))
            return out
        return gradient

    @classmethod
    def jvp(cls, f, primals, tangents):
        def along(s):
            return f(*[p + s * t for p, t in zip(primals, tangents)])
        return f(*primals), cls._derivative(along, 0.0, 1.0)

    @classmethod
    def vjp(cls, f, *primals):
        def pullback(cotangent):
            return tuple(cls.grad(lambda *p: np.sum(f(*p) * cotangent), argnums=i)(*primals)
                         for i in range(len(primals)))
        return f(*primals), pullback


def _torch():
    try:
        import array_api_compat.torch as tx
        import torch
    except ImportError:
        return None
    return torch, tx, types.SimpleNamespace(grad=torch.func.grad, jvp=torch.func.jvp,
                                            vjp=torch.func.vjp)


ARRAYGRAD = types.SimpleNamespace(grad=ag.grad, jvp=ag.jvp, vjp=ag.vjp)


# Programs f(T, xp, x, y) -> an array; x and y have shape (3,).
def grad_of_grad(T, xp, x, y):
    """grad of (grad of a closure over y) times its argument."""
    inner = T.grad(lambda b: xp.sum(xp.sin(b) * b * y))
    return T.grad(lambda a: xp.sum(inner(a) * a))(x)


def outer_times_inner_grad(T, xp, x, y):
    """An outer value times the grad, at it, of a function of it and a fixed argument."""
    return x * T.grad(lambda a, b: xp.sum(a * b * b), argnums=1)(x, y)


def grad_of_jvp(T, xp, x, y):
    """grad of a jvp whose primal is the differentiated argument and tangent an outer value."""
    return T.grad(lambda a: xp.sum(T.jvp(lambda b: xp.sin(b) * y, (a,), (x,))[1]))(x * 0.5)


def vjp_inside_grad(T, xp, x, y):
    """grad of a vjp's cotangent result, its function closing over the differentiated
    argument and its cotangent an outer value."""
    def f(a):
        _, pullback = T.vjp(lambda b: xp.tanh(b * a), y)
        return xp.sum(pullback(x)[0] * a)
    return T.grad(f)(x)


def jvp_of_grad(T, xp, x, y):
    """Forward over reverse: a jvp of a grad (a Hessian-vector product)."""
    return T.jvp(T.grad(lambda a: xp.sum(xp.sin(a) * a * y)), (x,), (y,))[1]


def grad_of_grad_of_grad(T, xp, x, y):
    """Three levels of grad, the innermost closing over y."""
    second = T.grad(lambda b: xp.sum(T.grad(lambda c: xp.sum(c * c * c * y))(b) * b))
    return T.grad(lambda a: xp.sum(second(a) * xp.cos(a)))(x)


PROGRAMS = {f.__name__: f for f in (grad_of_grad, outer_times_inner_grad, grad_of_jvp,
                                    vjp_inside_grad, jvp_of_grad, grad_of_grad_of_grad)}


def _close(got, expected, scale=1.0, rtol=1e-5):
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    return got.shape == expected.shape and np.allclose(got, expected, rtol=rtol,
                                                       atol=rtol * scale)


def check(backend, name, x, y, u):
    """None when arraygrad's value and gradients of program ``name`` at ``x``, ``y`` agree with
    the oracles', else what differs. The gradients of ``sum(out * u)`` are taken three ways:
    both inputs Variables that require grad, then each alone (the other a constant array)."""
    program, raw, xp = PROGRAMS[name], backend.raw, backend.ns
    expected = program(Numeric, np, x, y)
    try:
        value = np.asarray(backend.to_numpy(program(ARRAYGRAD, xp, raw.asarray(x),
                                                    raw.asarray(y))))
    except Exception as exc:  # noqa: BLE001  (a crash is a finding)
        return f"crashed on raw arrays: {type(exc).__name__}: {exc}"
    if not _close(value, expected, 1 + float(np.max(np.abs(expected)))):
        return f"value {value}, expected {expected} (central differences)"
    for wrt in ((True, True), (True, False), (False, True)):
        problem = _gradients(backend, program, (x, y), u, wrt)
        if problem:
            return problem
    return None


def _gradients(backend, program, inputs, u, wrt):
    """The gradients of ``sum(program(x, y) * u)`` with the inputs ``wrt`` flags as Variables
    that require grad (the others constant arrays) against central differences and torch."""
    raw, xp = backend.raw, backend.ns
    which = " and ".join(n for n, w in zip("xy", wrt) if w) + " as Variables"
    args = [ag.Variable(raw.asarray(v), requires_grad=True) if w else raw.asarray(v)
            for v, w in zip(inputs, wrt)]
    try:
        xp.sum(program(ARRAYGRAD, xp, *args) * raw.asarray(u)).backward()
    except Exception as exc:  # noqa: BLE001  (a crash is a finding)
        return f"{which}: backward crashed: {type(exc).__name__}: {exc}"
    grads = [np.zeros(3) if not w or a.grad is None else np.asarray(backend.to_numpy(a.grad.data))
             for a, w in zip(args, wrt)]
    rng = np.random.default_rng(len(which))
    direction = [rng.standard_normal(3) * w for w in wrt]
    loss = lambda s: float(np.sum(program(Numeric, np, *[  # noqa: E731
        v + s * d for v, d in zip(inputs, direction)]) * u))
    numeric = Numeric._derivative(loss, 0.0, 1.0)
    analytic = float(sum(np.sum(g * d) for g, d in zip(grads, direction)))
    scale = 1 + sum(float(np.sum(np.abs(g))) for g in grads)
    if abs(numeric - analytic) > 1e-5 * (scale + abs(numeric)):
        return (f"{which}: gradients {', '.join(map(str, grads))}: <grad, v> = "
                f"{analytic:.8g}, central differences {numeric:.8g}")
    reference = _torch()
    if reference is None:
        return None
    torch, tx, transforms = reference
    tensors = [torch.tensor(v, requires_grad=w) for v, w in zip(inputs, wrt)]
    out = program(transforms, tx, *tensors)
    wanted = [t for t, w in zip(tensors, wrt) if w]
    expected = iter(torch.autograd.grad(torch.sum(out * torch.tensor(u)), wanted,
                                        allow_unused=True))
    for name, g, w in zip("xy", grads, wrt):
        t = next(expected) if w else None
        t = np.zeros(3) if t is None else t.numpy()
        if not _close(g, t, scale, rtol=1e-9):
            return f"{which}: gradient of {name} {g}, expected {t} (torch.func in torch.autograd)"
    return None


def reproduction(backend_name, name, x, y, u, problem) -> str:
    """Python reproducing a failure of program ``name``: its source, the inputs and the call."""
    import inspect

    variables = "Variables" in problem.split(":")[0]
    wrt = problem.split(" as Variables")[0] if variables else "x and y"
    make = {n: (f"ag.Variable(raw.asarray({v.tolist()}), requires_grad=True)" if n in wrt
                else f"raw.asarray({v.tolist()})") for n, v in zip("xy", (x, y))}
    return "\n".join([
        "import numpy as np", "import types", "import arraygrad as ag", "",
        f"xp = ag.namespace({backend_name!r})",
        f"raw = ag.get_backend({backend_name!r}).raw",
        "T = types.SimpleNamespace(grad=ag.grad, jvp=ag.jvp, vjp=ag.vjp)", "",
        inspect.getsource(PROGRAMS[name]).rstrip(), "",
        f"x = {make['x']}", f"y = {make['y']}",
        f"out = {name}(T, xp, x, y)",
        f"xp.sum(out * raw.asarray({u.tolist()})).backward()",
        "print(out, getattr(x, 'grad', None), getattr(y, 'grad', None))", f"# {problem}"])


def family(name):
    """The check of nested program ``name``, seeded by the run."""
    def nested(backend, rng):
        x, y = (rng.uniform(0.5, 1.5, 3) * rng.choice([-1.0, 1.0], 3) for _ in range(2))
        u = rng.uniform(-1.0, 1.0, 3)
        problem = check(backend, name, x, y, u)
        if problem:
            code = reproduction(backend.name, name, x, y, u, problem)
            raise ProgramFailure(f"{name}: {problem}\nreproduction:\n{code}", code)
    nested.__doc__ = PROGRAMS[name].__doc__
    return nested


FAMILIES = {f"programs.nested[{name}]": family(name) for name in PROGRAMS}
"""Every nested-transform program by case id."""
