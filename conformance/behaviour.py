"""Engine-behaviour checks, run on one backend: accumulation, retain_graph, hooks, create_graph,
freeing of saved values, no_grad/detach, unused inputs, non-scalar backward (PyTorch semantics).

``BEHAVIOURS`` maps a name to ``check(backend, rng)``, where ``backend`` is
``arraygrad.get_backend(name)`` and ``rng`` a ``numpy.random.Generator``. A check raises
``AssertionError`` on failure and :class:`Skip` where it does not apply to the backend. Inputs are
float64, drawn from ``rng`` and asymmetric (distinct values, hooks whose order matters), and values
are compared on the host against hand-derived expectations.
"""

from __future__ import annotations

import functools
import gc
import weakref
from typing import Callable

import numpy as np

import arraygrad as ag
from arraygrad.errors import BackwardError

RTOL, ATOL = 1e-10, 1e-12


class Skip(Exception):
    """The check does not apply to this backend (the message says why)."""


# ----------------------------------------------------------------------------------- helpers
def _leaf(backend, rng, shape=(3,), requires_grad=True):
    """A float64 leaf Variable of ``backend`` drawn from ``rng``, and its host values."""
    host = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)  # away from 0, distinct
    return ag.Variable(backend.raw.asarray(host), requires_grad=requires_grad), host


def _host(backend, value):
    assert value is not None, "expected a gradient, got None"
    return np.asarray(backend.to_numpy(value.data if isinstance(value, ag.Variable) else value))


def _close(backend, got, expected, what):
    np.testing.assert_allclose(_host(backend, got), expected, rtol=RTOL, atol=ATOL,
                               err_msg=f"[{backend.name}] {what}")


def _raises(error, match, call, what):
    """``call()`` must raise ``error`` whose message contains ``match``."""
    try:
        call()
    except error as e:
        assert match in str(e), f"{what}: {type(e).__name__} without {match!r}: {e}"
        return
    except Exception as e:  # noqa: BLE001  (report the wrong type, not a crash)
        raise AssertionError(f"{what}: expected {error.__name__}, got {type(e).__name__}: {e}")
    raise AssertionError(f"{what}: expected {error.__name__}, nothing was raised")


def _check(func):
    """Make any unexpected error of a check an AssertionError naming the backend."""
    @functools.wraps(func)
    def check(backend, rng):
        try:
            func(backend, rng)
        except (AssertionError, Skip):
            raise
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"[{backend.name}] {func.__name__}: unexpected "
                                 f"{type(e).__name__}: {e}") from e
    return check


# ------------------------------------------------------------------------------------ checks
@_check
def accumulate(backend, rng):
    """Two backward() calls add into .grad; so do two paths to one leaf and a reused node."""
    xp = backend.ns
    (x, xh), (w, wh) = _leaf(backend, rng), _leaf(backend, rng)
    for _ in range(2):
        xp.sum(x * x * w).backward()
    _close(backend, x.grad, 2 * (2 * xh * wh), "x.grad after two backward() of sum(x*x*w)")
    _close(backend, w.grad, 2 * xh * xh, "w.grad after two backward() of sum(x*x*w)")
    (x, xh), (w, wh) = _leaf(backend, rng), _leaf(backend, rng)
    xp.sum(3.0 * (x * w) + xp.exp(x)).backward()  # x reaches the loss by two paths
    _close(backend, x.grad, 3 * wh + np.exp(xh), "x.grad of sum(3*x*w + exp(x))")
    (x, xh), (w, wh) = _leaf(backend, rng), _leaf(backend, rng)
    h = x * w
    xp.sum(h * h + h).backward()  # h feeds three edges
    _close(backend, x.grad, (2 * xh * wh + 1) * wh, "x.grad of sum(h*h + h), h = x*w")


@_check
def retain_graph(backend, rng):
    """A second backward() needs retain_graph=True on the first; with it, gradients add up."""
    xp = backend.ns
    (x, xh), (w, wh) = _leaf(backend, rng), _leaf(backend, rng)
    y = xp.sum(xp.sin(x) * w)
    y.backward(retain_graph=True)
    y.backward()
    _close(backend, x.grad, 2 * np.cos(xh) * wh, "x.grad after backward(retain_graph=True) twice")
    _raises(BackwardError, "retain_graph", y.backward, "a third backward() of a freed graph")
    _close(backend, x.grad, 2 * np.cos(xh) * wh, "x.grad after the failed third backward()")
    y = xp.sum(xp.sin(x) * w)
    y.backward()
    _raises(BackwardError, "retain_graph", y.backward, "a second backward() without retain_graph")


@_check
def hooks_leaf_order(backend, rng):
    """Hooks on a leaf run in registration order; a returned value replaces the gradient."""
    xp = backend.ns
    (x, _), (w, wh) = _leaf(backend, rng), _leaf(backend, rng)
    seen = []
    x.register_hook(lambda g: g * 2.0)
    x.register_hook(lambda g: g + 1.0)
    x.register_hook(lambda g: seen.append(_host(backend, g)))  # None: keeps the gradient
    removed = x.register_hook(lambda g: g * 100.0)
    removed.remove()
    y = xp.sum(x * w)
    y.backward(retain_graph=True)
    _close(backend, x.grad, 2 * wh + 1, "leaf hooks g*2 then g+1 on d sum(x*w)/dx = w")
    y.backward()  # hooks see each incoming gradient, before it is added to .grad
    _close(backend, x.grad, 2 * (2 * wh + 1), "x.grad after a second hooked backward()")
    assert len(seen) == 2, f"[{backend.name}] the observing hook ran {len(seen)} times, not twice"
    np.testing.assert_allclose(seen, [2 * wh + 1] * 2, rtol=RTOL, atol=ATOL,
                               err_msg=f"[{backend.name}] gradients seen by the third hook")


@_check
def hooks_nonleaf(backend, rng):
    """Hooks on an intermediate change the gradient sent upstream, in order; retain_grad works."""
    xp = backend.ns
    (x, xh), (w, wh) = _leaf(backend, rng), _leaf(backend, rng)
    h = x * w
    h.retain_grad()  # retained .grad is the gradient after all hooks (PyTorch >= 2.0)
    h.register_hook(lambda g: g * 2.0)
    h.register_hook(lambda g: g + 1.0)
    xp.sum(xp.sin(h)).backward()
    dh = 2 * np.cos(xh * wh) + 1
    _close(backend, h.grad, dh, "h.grad (retain_grad) with hooks g*2, g+1 on h = x*w")
    _close(backend, x.grad, dh * wh, "x.grad through the hooked intermediate h = x*w")
    _close(backend, w.grad, dh * xh, "w.grad through the hooked intermediate h = x*w")


@_check
def create_graph(backend, rng):
    """Gradients made with create_graph=True have a grad_fn and differentiate again."""
    xp = backend.ns
    x, xh = _leaf(backend, rng)
    (g,) = ag.autograd.grad(xp.sum(x ** 3), x, create_graph=True)
    assert g.grad_fn is not None, f"[{backend.name}] grad(create_graph=True) has no grad_fn"
    _close(backend, g, 3 * xh ** 2, "d sum(x**3)/dx")
    _close(backend, ag.autograd.grad(xp.sum(g), x)[0], 6 * xh, "d2 sum(x**3)/dx2")
    x, xh = _leaf(backend, rng)
    xp.sum(xp.sin(x) * x).backward(create_graph=True)
    g = x.grad
    assert g.grad_fn is not None, f"[{backend.name}] .grad after create_graph has no grad_fn"
    _close(backend, g, np.cos(xh) * xh + np.sin(xh), "d sum(sin(x)*x)/dx")
    x.grad = None
    xp.sum(g).backward()
    _close(backend, x.grad, 2 * np.cos(xh) - xh * np.sin(xh), "d2 sum(sin(x)*x)/dx2")
    # create_graph=True keeps the graph (retain_graph defaults to it), and a gradient= that
    # is itself recorded stays in the graph: d/dw sum(d/dx <x*x, 2w>) = 4x.
    (x, xh), (w, wh) = _leaf(backend, rng), _leaf(backend, rng)
    y = x * x
    y.backward(gradient=w * 2, create_graph=True)
    _close(backend, x.grad, 4 * xh * wh, "x.grad of <x*x, 2w>")
    _close(backend, ag.autograd.grad(xp.sum(x.grad), w)[0], 4 * xh,
           "d/dw of x.grad, with gradient=2w recorded")
    y.backward(gradient=w.detach())  # the graph is still there
    _close(backend, x.grad.detach(), 4 * xh * wh + 2 * xh * wh,
           "a second backward after create_graph=True")


@_check
def saved_released(backend, rng):
    """backward() frees the arrays saved for it, unless retain_graph=True."""
    xp = backend.ns
    (x, _), (w, _) = _leaf(backend, rng), _leaf(backend, rng)
    h = x * w
    try:
        ref = weakref.ref(h.data)
    except TypeError as e:
        raise Skip(f"{type(h.data).__name__} arrays cannot be weakly referenced: {e}") from None
    y = xp.sum(xp.sin(h))  # sin saves h's array; after `del h` only the graph holds it
    del h
    gc.collect()
    assert ref() is not None, f"[{backend.name}] sin's graph does not hold its saved input"
    y.backward(retain_graph=True)
    gc.collect()
    assert ref() is not None, f"[{backend.name}] backward(retain_graph=True) freed saved arrays"
    y.backward()
    gc.collect()
    assert ref() is None, f"[{backend.name}] backward() kept a saved array alive"


@_check
def no_grad(backend, rng):
    """Nothing computed under no_grad() is recorded; grad mode is restored after."""
    xp = backend.ns
    (x, xh), (w, wh) = _leaf(backend, rng), _leaf(backend, rng)
    with ag.no_grad():
        assert not ag.is_grad_enabled(), f"[{backend.name}] grad enabled inside no_grad()"
        c = xp.sin(x) * w
    assert ag.is_grad_enabled(), f"[{backend.name}] no_grad() did not restore grad mode"
    assert c.grad_fn is None and not c.requires_grad, f"[{backend.name}] no_grad() recorded"
    xp.sum(c * x).backward()  # c is a constant: d/dx = c, and w gets nothing
    _close(backend, x.grad, np.sin(xh) * wh, "x.grad of sum(c*x), c made under no_grad()")
    assert w.grad is None, f"[{backend.name}] a gradient flowed through no_grad() into w"
    with ag.no_grad():
        s = xp.sin(x)  # one array and no options: the shortest path through the namespace
        x -= 0.5 * x.grad  # the update of a training step, in place on a leaf
    assert s.grad_fn is None and not s.requires_grad, f"[{backend.name}] no_grad() recorded sin"
    assert x.is_leaf and x.requires_grad and x.grad_fn is None, (
        f"[{backend.name}] an in-place update under no_grad() changed the leaf")
    _close(backend, x.detach(), xh - 0.5 * np.sin(xh) * wh, "x after x -= 0.5 * x.grad")


@_check
def detach(backend, rng):
    """detach() gives a constant sharing the values: no gradient flows through it."""
    xp = backend.ns
    (x, xh), (w, wh) = _leaf(backend, rng), _leaf(backend, rng)
    d = (x * w).detach()
    assert d.grad_fn is None and not d.requires_grad, f"[{backend.name}] detach() is recorded"
    _close(backend, d, xh * wh, "detached values")
    xp.sum(d * x).backward()  # without detach: 2*x*w
    _close(backend, x.grad, xh * wh, "x.grad of sum(detach(x*w)*x)")
    assert w.grad is None, f"[{backend.name}] a gradient flowed through detach() into w"


@_check
def grad_of_unused_input(backend, rng):
    """autograd.grad gives None for an unused input with allow_unused=True, else an error."""
    xp = backend.ns
    (x, _), (w, wh), (u, _) = _leaf(backend, rng), _leaf(backend, rng), _leaf(backend, rng)
    y = xp.sum(x * w)
    gx, gu = ag.autograd.grad(y, [x, u], retain_graph=True, allow_unused=True)
    _close(backend, gx, wh, "grad(sum(x*w), x)")
    assert gu is None, f"[{backend.name}] the gradient of an unused input is {gu!r}, not None"
    assert x.grad is None and u.grad is None, f"[{backend.name}] autograd.grad touched .grad"
    _raises(BackwardError, "allow_unused", lambda: ag.autograd.grad(y, [x, u]),
            "grad() of an unused input without allow_unused")


@_check
def non_scalar_backward(backend, rng):
    """backward() of a non-scalar needs gradient=; with it, .grad is J^T g."""
    xp = backend.ns
    x, xh = _leaf(backend, rng, (4,))
    m, mh = _leaf(backend, rng, (3, 4), requires_grad=False)
    g, gh = _leaf(backend, rng, (3,), requires_grad=False)
    y = xp.sin(xp.matmul(m, x))  # J = diag(cos(m x)) m
    _raises(BackwardError, "gradient", y.backward, "backward() of a (3,) output without gradient=")
    y.backward(gradient=g.data)
    _close(backend, x.grad, mh.T @ (np.cos(mh @ xh) * gh), "x.grad = J^T g of sin(m @ x)")


@_check
def retained_grad_is_kept(backend, rng):
    """A retained .grad of a non-leaf is its own array: later backward passes that add into
    the leaves' .grad do not change it."""
    xp = backend.ns
    (x, xh), (c, ch) = _leaf(backend, rng), _leaf(backend, rng, requires_grad=False)
    h = x + 0  # its gradient passes to x unchanged: the same buffer, unless copied
    h.retain_grad()
    xp.sum(h * c).backward()
    xp.sum(x * x).backward()  # adds 2x into x.grad
    _close(backend, h.grad, ch, "h.grad after a later backward into x")
    _close(backend, x.grad, ch + 2 * xh, "x.grad after two backward passes")
    # Retained gradients accumulate over backward passes, and belong to their own output.
    (x, xh), (c, ch) = _leaf(backend, rng), _leaf(backend, rng, requires_grad=False)
    h = x * c
    h.retain_grad()
    y = xp.sum(h * h)
    y.backward(retain_graph=True)
    y.backward()
    _close(backend, h.grad, 4 * xh * ch, "h.grad after two backward passes through h")
    m, _ = _leaf(backend, rng, (2, 3))
    first, second = xp.unstack(m)
    second.retain_grad()
    xp.sum(first + 3 * second).backward()
    _close(backend, second.grad, np.full(3, 3.0), "the retained .grad of unstack's 2nd output")


@_check
def wraps_own_results(backend, rng):
    """Whatever the backend's own functions return (NumPy's reductions give scalars, not
    arrays) belongs to the backend: its namespace, and Variables whose gradients flow."""
    x, xh = _leaf(backend, rng, (4,), requires_grad=False)
    for what, value, expected in (("sum", backend.raw.sum(x.data), np.sum(xh)),
                                  ("max", backend.raw.max(x.data), np.max(xh))):
        assert ag.namespace(value) is backend.ns, (
            f"[{backend.name}] ag.namespace(raw.{what}(x)) is not this backend's namespace")
        v = ag.Variable(value, requires_grad=True)
        assert v.backend == backend.name, (
            f"[{backend.name}] Variable(raw.{what}(x)) belongs to backend {v.backend!r}")
        (v * v).backward()
        _close(backend, v.grad, 2 * expected, f"the gradient of raw.{what}(x) squared")


@_check
def devices(backend, rng):
    """On every device the backend lists, gradients are right and stay on that device."""
    xp = backend.ns
    listed = backend.raw.__array_namespace_info__().devices()
    for device in listed:
        if "meta" in str(device):
            continue  # torch's meta device holds shapes, not values
        host = rng.uniform(0.5, 2.0, (3,))
        try:
            data = backend.raw.asarray(host, device=device)
        except ValueError:  # a device without float64 (array-api-strict's no_float64)
            continue
        x = ag.Variable(data, requires_grad=True)
        xp.sum(x * x * x).backward()
        assert x.grad.device == x.device, (
            f"[{backend.name}] the gradient is on {x.grad.device}, its input on {x.device}")
        _close(backend, x.grad, 3 * host ** 2, f"the gradient on device {device}")


@_check
def transforms(backend, rng):
    """grad (with has_aux), vjp called twice, jvp, a non-square jacobian and hessian, on raw
    arrays of the backend, as JAX's transforms."""
    xp, raw = backend.ns, backend.raw
    xh = rng.uniform(0.5, 2.0, (2,))
    x = raw.asarray(xh)
    cube = lambda v: xp.sum(v ** 3)  # noqa: E731
    g, aux = ag.grad(lambda v: (cube(v), "aux"), has_aux=True)(x)
    assert aux == "aux", f"[{backend.name}] grad(has_aux=True) returned {aux!r} as aux"
    _close(backend, g, 3 * xh ** 2, "grad of sum(x**3)")
    _close(backend, ag.hessian(cube)(x), np.diag(6 * xh), "hessian of sum(x**3)")
    stacked = lambda v: xp.stack([v[0] * v[1], v[1] ** 2, v[0]])  # noqa: E731
    expected = np.array([[xh[1], xh[0]], [0, 2 * xh[1]], [1, 0]])
    _close(backend, ag.jacobian(stacked)(x), expected, "the (3, 2) jacobian")
    _, pullback = ag.vjp(stacked, x)
    u = raw.asarray(np.array([1.0, -2.0, 0.5]))
    for call in ("first", "second"):
        cotangent = pullback(u)
        cotangent = cotangent[0] if isinstance(cotangent, tuple) else cotangent
        _close(backend, cotangent, np.array([1.0, -2.0, 0.5]) @ expected, f"vjp, {call} call")
    _, tangent = ag.jvp(stacked, (x,), (raw.asarray(np.array([0.25, -1.0])),))
    _close(backend, tangent, expected @ np.array([0.25, -1.0]), "jvp")


@_check
def broadcast_gradients(backend, rng):
    """The gradient that sum and mean send back stays small through add, subtract, multiply,
    divide and powers of operands that broadcast: each operand gets it summed to its shape (a
    product by the length where it is constant), and a hook on the way sees it full-size."""
    xp = backend.ns
    (a, ah), (b, bh) = _leaf(backend, rng, (3, 1)), _leaf(backend, rng, (4,))
    d = a - b
    seen = []
    d.register_hook(lambda g: seen.append(tuple(g.shape)))
    loss = xp.sum(0.5 * d ** 2 / 3.0) + xp.mean(-(a * b)) + xp.sum(a + b)
    loss.backward()
    dh = ah - bh
    assert seen == [(3, 4)], f"[{backend.name}] a hook on a - b saw shapes {seen}, not [(3, 4)]"
    _close(backend, a.grad, dh.sum(1, keepdims=True) / 3 - bh.sum() / 12 + 4,
           "a.grad of sum(0.5 * (a - b)**2 / 3) + mean(-(a * b)) + sum(a + b), a (3, 1)")
    _close(backend, b.grad, -dh.sum(0) / 3 - ah.sum() / 12 + 3,
           "b.grad of sum(0.5 * (a - b)**2 / 3) + mean(-(a * b)) + sum(a + b), b (4,)")


BEHAVIOURS: dict[str, Callable] = {
    "broadcast_gradients": broadcast_gradients,
    "transforms": transforms,
    "retained_grad_is_kept": retained_grad_is_kept,
    "wraps_own_results": wraps_own_results,
    "devices": devices,
    "accumulate": accumulate,
    "retain_graph": retain_graph,
    "hooks_leaf_order": hooks_leaf_order,
    "hooks_nonleaf": hooks_nonleaf,
    "create_graph": create_graph,
    "saved_released": saved_released,
    "no_grad": no_grad,
    "detach": detach,
    "grad_of_unused_input": grad_of_unused_input,
    "non_scalar_backward": non_scalar_backward,
}


def run_behaviours(backend, seed: int = 0, names=None) -> dict[str, tuple[str, str]]:
    """Run the checks (all, or ``names``) on ``backend`` (a name or a backend): ``{name: (status,
    detail)}`` with status ``"pass"``, ``"fail"`` or ``"skip"``."""
    backend = ag.get_backend(backend) if isinstance(backend, str) else backend
    results = {}
    for name in names or BEHAVIOURS:
        try:
            BEHAVIOURS[name](backend, np.random.default_rng(seed))
        except Skip as e:
            results[name] = ("skip", str(e))
        except Exception as e:  # noqa: BLE001  (an unexpected error is a failure too)
            results[name] = ("fail", f"{type(e).__name__}: {e}")
        else:
            results[name] = ("pass", "")
    return results
