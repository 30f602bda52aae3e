"""Gradient checks shared by the tests, the conformance suite and backend authors.

``check_grads`` compares the reverse-mode (and forward-mode) derivatives of a function with
float64 central differences through random projections (HIPS autograd's ``check_grads`` and
Chainer's ``check_backward`` do the same): with a random cotangent ``u`` and direction ``d``,
the number ``Re<grad, d>`` must equal ``(L(x + eps d) - L(x - eps d)) / (2 eps)`` for
``L = Re<u, f(x)>``.
Complex values follow PyTorch's convention: ``grad = dL/dRe(x) + i dL/dIm(x)``.
"""

from __future__ import annotations

from . import _engine, autograd
from ._forward import push_tangents
from ._plugins import get_backend, registry
from ._variable import Variable


def _numpy():
    """NumPy, the host format every check compares in, reached through its plugin as the rest
    of the core reaches it (``Backend.to_numpy``): its namespace re-exports NumPy's names."""
    return get_backend("numpy").raw


def _is_inexact(array) -> bool:
    np = _numpy()
    return np.issubdtype(array.dtype, np.inexact)


def random_like(rng, array):
    """Standard normal values of ``array``'s shape and dtype (complex gets both parts)."""
    values = rng.standard_normal(array.shape)
    if _numpy().iscomplexobj(array):
        values = values + 1j * rng.standard_normal(array.shape)
    return values.astype(array.dtype)


def _outputs(result):
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def host_inner(backend, us_host, outs):
    """``sum Re<u, out>`` over the outputs, computed on the host (the loss central
    differences evaluate)."""
    np, total = _numpy(), 0.0
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
    ((_, analytic, numeric),) = directional_derivatives(f, arrays, backend, eps=eps, seed=seed,
                                                        to_backend=to_backend)
    return analytic, numeric


def directional_derivatives(f, arrays, backend="numpy", *, mode="rev", eps=1e-6, seed=0,
                            to_backend=None, separate=False, numeric_dtype=None):
    """``[(argument, analytic, numeric), ...]``: the derivative of ``Re<u, f(x)>`` along a
    random direction ``d``, by reverse mode (``Re<grad, d>``, one backward with cotangent
    ``u``) or forward mode (``Re<u, J d>``) and by central differences. With ``separate``,
    each floating argument is checked on its own (argument ``i``), else all together
    (argument None). ``numeric_dtype`` (float64, say) evaluates the differences at that
    precision."""
    be = get_backend(backend) if isinstance(backend, str) else backend
    raw, np = be.raw, _numpy()
    to_backend = to_backend or raw.asarray
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(a) for a in arrays]
    inputs = [Variable(to_backend(a), requires_grad=_is_inexact(a)) for a in arrays]
    outs = _outputs(f(*inputs))
    us_host = [random_like(rng, be.to_numpy(o.data)) for o in outs]
    if to_backend is not None:  # inputs with semantics of their own: count what counts
        us_host = [u * counted(be, o.data) for u, o in zip(us_host, outs)]
    directions = [random_like(rng, a) if _is_inexact(a) else None for a in arrays]
    groups = ([[i] for i, d in enumerate(directions) if d is not None] if separate else
              [[i for i, d in enumerate(directions) if d is not None]])
    analytic = [0.0] * len(groups)
    if mode == "rev":
        us = [raw.asarray(np.array(u, copy=True)) for u in us_host]  # never shared with us_host
        # backward with u as the outputs' gradient: the VJP, with nothing else recorded.
        roots = [(o, u) for o, u in zip(outs, us) if o.requires_grad]
        if roots:  # else f is constant in its inputs (the gradient of a linear map)
            _engine.backward([(o._edge, o._seed(u, False)) for o, u in roots], False, False,
                             Variable)
        for k, group in enumerate(groups):
            for i in group:
                if inputs[i].grad is not None:
                    analytic[k] += float(np.real(np.vdot(be.to_numpy(inputs[i].grad.data),
                                                          directions[i])))
    elif mode == "fwd":
        for k, group in enumerate(groups):
            tangents = {inputs[i]: to_backend(directions[i]) for i in group}
            for u, t in zip(us_host, push_tangents(list(outs), tangents)):
                if t is not None:
                    analytic[k] += float(np.real(np.vdot(u, be.to_numpy(t))))
    else:
        raise ValueError(f"mode must be 'fwd' or 'rev', got {mode!r}")

    def loss_at(t, group):
        moved = []
        for i, (a, d) in enumerate(zip(arrays, directions)):
            if d is not None and numeric_dtype is not None:
                a = a.astype(np.result_type(a.dtype, numeric_dtype))
            moved.append(Variable(to_backend(a + t * d if i in group else a),
                                  requires_grad=d is not None))
        return host_inner(be, us_host, _outputs(f(*moved)))

    return [(group[0] if separate else None, analytic[k],
             (loss_at(eps, group) - loss_at(-eps, group)) / (2 * eps))
            for k, group in enumerate(groups)]


def grad_function(f, backend="numpy", seed=1, semantic=False):
    """Return ``x -> grad Re<u, f(x)>`` (with a fixed random ``u``), built with
    ``create_graph=True`` so that it can be differentiated again."""
    be = get_backend(backend) if isinstance(backend, str) else backend

    def gradients(*inputs):
        rng = _numpy().random.default_rng(seed)
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


def check_grads(f, *args, order=None, modes=None, backend="numpy", eps=None, rtol=None,
                atol=None, seed=0):
    """Assert that the derivatives of ``f`` match float64 central differences, up to ``order``.

    Two forms:

    - JAX's, ``check_grads(f, args, order=2, modes=("fwd", "rev"))``: ``args`` is a tuple of
      arrays of any backend or Variables; ``f`` gets Variables. Each floating argument is checked
      on its own, in each mode: reverse (``Re<vjp(u), d>`` with a random cotangent ``u``) and
      forward (``Re<u, jvp(d)>`` with a random tangent ``d``). Order 2 differentiates the
      reverse-mode gradient again in each mode (arraygrad's forward mode gives raw tangents,
      so forward-over-forward is not checked). float32 arguments are differentiated at their
      own precision and compared with differences taken in float64.
    - The original, ``check_grads(f, *numpy_arrays, backend="numpy", order=1)``: reverse mode,
      all arguments along one random direction (``modes`` may be given here too).

    Raises AssertionError naming the mode, the order, the argument and the error.
    """
    np = _numpy()
    if args and isinstance(args[0], (tuple, list)) and all(
            hasattr(a, "shape") for a in args[0]) and (
            len(args) == 1 or len(args) == 2 and isinstance(args[1], int)):
        primals = tuple(args[0])
        order = (args[1] if len(args) == 2 else 2) if order is None else order
        be, hosts, to_backend = _host_arrays(primals)
        single = any(np.dtype(a.dtype) in (np.float32, np.complex64) for a in hosts)
        tolerances = (1e-3, 1e-3, 1e-4) if single else (1e-6, 1e-5, 1e-7)
        _check(f, hosts, be, order, tuple(modes or ("fwd", "rev")),
               eps if eps is not None else tolerances[0],
               rtol if rtol is not None else tolerances[1],
               atol if atol is not None else tolerances[2], seed, to_backend,
               numeric_dtype=np.float64, separate=True, level=1)
        return
    order = 1 if order is None else order
    eps = 1e-6 if eps is None else eps
    rtol = 1e-5 if rtol is None else rtol
    atol = 1e-7 if atol is None else atol
    if modes is not None:
        be = get_backend(backend) if isinstance(backend, str) else backend
        _check(f, args, be, order, tuple(modes), eps, rtol, atol, seed, None, None, False, 1)
        return
    analytic, numeric = gradient_errors(f, args, backend, eps=eps, seed=seed)
    error = abs(analytic - numeric)
    if not error <= atol + rtol * abs(numeric):
        raise AssertionError(
            f"gradient check failed on backend {backend!r}: reverse mode gives "
            f"{analytic!r}, central differences {numeric!r} (error {error:.3g}, rtol {rtol}, "
            f"atol {atol}); inputs of shapes {[np.shape(a) for a in args]}")
    if order > 1:
        check_grads(grad_function(f, backend, seed), *args, backend=backend, order=order - 1,
                    eps=eps, rtol=rtol, atol=atol, seed=seed + 7)


def _host_arrays(primals):
    """The backend of ``primals`` (arrays or Variables), their values on the host, and how to
    bring host values back to that backend."""
    backends = {(p._backend if isinstance(p, Variable) else registry.of(p)) for p in primals}
    if None in backends or len(backends) != 1:
        raise TypeError("check_grads(f, args): args must be arrays (or Variables) of one "
                        "registered backend")
    (be,) = backends
    hosts = [be.to_numpy(p.data if isinstance(p, Variable) else p) for p in primals]
    return be, hosts, be.raw.asarray


def _check(f, arrays, be, order, modes, eps, rtol, atol, seed, to_backend, numeric_dtype,
           separate, level):
    np = _numpy()
    for mode in modes:
        found = directional_derivatives(f, arrays, be, mode=mode, eps=eps, seed=seed,
                                        to_backend=to_backend, separate=separate,
                                        numeric_dtype=numeric_dtype)
        failures = [(abs(a - n), i, a, n) for i, a, n in found
                    if not abs(a - n) <= atol + rtol * abs(n)]
        if failures:
            error, i, analytic, numeric = max(failures, key=lambda item: item[0])
            which = (f"argument {i} (shape {np.shape(arrays[i])}, dtype {arrays[i].dtype})"
                     if i is not None else f"the arguments of shapes "
                     f"{[np.shape(a) for a in arrays]}")
            derivative = "first" if level == 1 else f"order {level}"
            raise AssertionError(
                f"check_grads failed on backend {be.name!r}: {mode} mode, {derivative} "
                f"derivative, {which}: {mode} mode gives {analytic!r}, central differences "
                f"{numeric!r}; max error {error:.3g} (rtol {rtol}, atol {atol})")
    if order > 1:
        _check(grad_function(f, be, seed), arrays, be, order - 1, modes, eps, rtol, atol,
               seed + 7, to_backend, numeric_dtype, separate, level + 1)
