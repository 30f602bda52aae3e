"""Gradient checks shared by the tests, the conformance suite and backend authors.

``check_grads`` compares the reverse-mode gradient of a function with float64 central
differences through random projections (HIPS autograd's ``check_grads`` and Chainer's
``check_backward`` do the same): with a random cotangent ``u`` and direction ``d``, the number
``Re<grad, d>`` must equal ``(L(x + eps d) - L(x - eps d)) / (2 eps)`` for ``L = Re<u, f(x)>``.
Complex values follow PyTorch's convention: ``grad = dL/dRe(x) + i dL/dIm(x)``.
"""

from __future__ import annotations

import numpy as np

from . import _engine, autograd
from ._plugins import get_backend
from ._variable import Variable


def _is_inexact(array) -> bool:
    return np.issubdtype(array.dtype, np.inexact)


def random_like(rng, array):
    """Standard normal values of ``array``'s shape and dtype (complex gets both parts)."""
    values = rng.standard_normal(array.shape)
    if np.iscomplexobj(array):
        values = values + 1j * rng.standard_normal(array.shape)
    return values.astype(array.dtype)


def _outputs(result):
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def host_inner(backend, us_host, outs):
    """``sum Re<u, out>`` over the outputs, computed on the host (the loss central
    differences evaluate)."""
    total = 0.0
    for u, out in zip(us_host, outs):
        value = backend.to_numpy(out.data if isinstance(out, Variable) else out)
        total += float(np.real(np.vdot(u, value)))
    return total


def counted(backend, out):
    """Where an output's values count for ``to_numpy`` (0 elsewhere: masked entries, which it
    fills with 0): a cotangent is zeroed there, so that backward differentiates the loss
    central differences evaluate."""
    return backend.to_numpy(backend.raw.ones_like(out)) != 0


def gradient_errors(f, arrays, backend="numpy", *, eps=1e-6, seed=0, to_backend=None):
    """Return ``(analytic, numeric)`` directional derivatives of ``Re<u, f(x)>``.

    ``arrays`` are NumPy arrays on the host; floating ones become Variables that require grad,
    the others (integer indices, masks) are passed as constants of the backend. ``to_backend``
    makes the backend's arrays from host values (default: its ``asarray``).
    """
    be = get_backend(backend) if isinstance(backend, str) else backend
    raw = be.raw
    to_backend = to_backend or raw.asarray
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(a) for a in arrays]
    inputs = [Variable(to_backend(a), requires_grad=_is_inexact(a)) for a in arrays]
    outs = _outputs(f(*inputs))
    us_host = [random_like(rng, be.to_numpy(o.data)) for o in outs]
    if to_backend is not None:  # inputs with semantics of their own: count what counts
        us_host = [u * counted(be, o.data) for u, o in zip(us_host, outs)]
    us = [raw.asarray(np.array(u, copy=True)) for u in us_host]  # never shared with us_host
    # backward with u as the outputs' gradient: the VJP, with nothing else recorded.
    roots = [(o, u) for o, u in zip(outs, us) if o.requires_grad]
    if roots:  # else f is constant in its inputs (the gradient of a linear map)
        _engine.backward([(o._edge, o._seed(u, False)) for o, u in roots], False, False)
    directions = [random_like(rng, a) if _is_inexact(a) else None for a in arrays]
    analytic = 0.0
    for x, d in zip(inputs, directions):
        if d is not None and x.grad is not None:
            analytic += float(np.real(np.vdot(be.to_numpy(x.grad.data), d)))

    def loss_at(t):
        moved = [Variable(to_backend(a + t * d if d is not None else a),
                          requires_grad=d is not None) for a, d in zip(arrays, directions)]
        return host_inner(be, us_host, _outputs(f(*moved)))

    numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps)
    return analytic, numeric


def grad_function(f, backend="numpy", seed=1, semantic=False):
    """Return ``x -> grad Re<u, f(x)>`` (with a fixed random ``u``), built with
    ``create_graph=True`` so that it can be differentiated again."""
    be = get_backend(backend) if isinstance(backend, str) else backend

    def gradients(*inputs):
        rng = np.random.default_rng(seed)
        outs = _outputs(f(*inputs))
        us = [random_like(rng, be.to_numpy(o.data)) for o in outs]
        us = [be.raw.asarray(u * counted(be, o.data) if semantic else u)
              for u, o in zip(us, outs)]
        wrt = [x for x in inputs if x.requires_grad]
        pairs = [(o, u) for o, u in zip(outs, us) if o.requires_grad]
        grads = autograd.grad([o for o, _ in pairs], wrt, [u for _, u in pairs],
                              create_graph=True, allow_unused=True) if pairs else [None] * len(wrt)
        return tuple(g if g is not None else be.ns.zeros_like(x) for g, x in zip(grads, wrt))

    return gradients


def check_grads(f, *arrays, backend="numpy", order=1, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0):
    """Assert that the gradients of ``f`` at ``arrays`` (NumPy, float64) match central
    differences, up to ``order`` (2 checks Hessian-vector products via ``create_graph``)."""
    analytic, numeric = gradient_errors(f, arrays, backend, eps=eps, seed=seed)
    error = abs(analytic - numeric)
    if not error <= atol + rtol * abs(numeric):
        raise AssertionError(
            f"gradient check failed on backend {backend!r}: reverse mode gives "
            f"{analytic!r}, central differences {numeric!r} (error {error:.3g}, rtol {rtol}, "
            f"atol {atol}); inputs of shapes {[np.shape(a) for a in arrays]}")
    if order > 1:
        check_grads(grad_function(f, backend, seed), *arrays, backend=backend, order=order - 1,
                    eps=eps, rtol=rtol, atol=atol, seed=seed + 7)
