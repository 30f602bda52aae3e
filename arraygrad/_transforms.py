"""Function transforms in the style of JAX and ``torch.func``: ``grad``, ``value_and_grad``,
``vjp``, ``jvp``, ``jacobian``, ``hessian``.

They take raw backend arrays or Variables. Raw arrays in give raw arrays out; Variables in give
Variables out, still connected to the graph, so that transforms nest (``hessian`` is
``jacobian(grad(f))``).
"""

from __future__ import annotations

import functools

from . import autograd
from ._forward import push_tangents
from ._variable import Variable
from .errors import BackwardError
from .rules import device_of


def _positions(argnums, count, transform):
    """``argnums`` as a tuple of positions, each checked against the ``count`` arguments given."""
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple, list)) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in (
                argnums if isinstance(argnums, (tuple, list)) else (argnums,))):
        raise TypeError(f"{transform}(): argnums must be an int or a tuple of ints, got "
                        f"{argnums!r}")
    positions = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    bad = [i for i in positions if not -count <= i < count]
    if bad:
        raise ValueError(f"{transform}(): argnums={argnums!r}, but the function was called "
                         f"with {count} positional argument(s)")
    return tuple(i % count for i in positions)


def _as_inputs(args, argnums, transform="grad"):
    """Leaf Variables for the differentiated arguments; returns (args, positions, raw flags)."""
    positions = _positions(argnums, len(args), transform)
    given, args = args, list(args)
    raw = []
    for i in positions:
        value = given[i]  # as given: argnums=(0, 0) names one argument twice
        raw.append(not isinstance(value, Variable))
        if args[i] is not value:
            continue
        if not isinstance(value, Variable):
            args[i] = Variable(value, requires_grad=True)
        elif not value.requires_grad:
            args[i] = Variable(value.data, requires_grad=True)
    return args, positions, raw


def _callable(f, transform):
    if not callable(f):
        raise TypeError(f"{transform}(): f must be a function, got {f!r:.40}; the arguments "
                        f"go to the function it returns ({transform}(f)(x))")


def _out(value, raw):
    return value.data if raw and isinstance(value, Variable) else value


def _nested(args, positions):
    # Variables that already require grad may belong to an outer transform: keep the graph.
    return any(isinstance(a, Variable) and a.grad_fn is not None or
               isinstance(a, Variable) and a.requires_grad for a in args)


def value_and_grad(f, argnums=0, has_aux=False):
    """Return a function computing ``(f(*args), gradient of f w.r.t. args[argnums])``; ``f`` must
    return a single-element value (and an auxiliary value with ``has_aux``)."""
    _callable(f, "value_and_grad")

    @functools.wraps(f)
    def value_and_gradient(*args, **kwargs):
        create_graph = _nested(args, argnums)
        inputs, positions, raw = _as_inputs(args, argnums)
        result = f(*inputs, **kwargs)
        if has_aux and not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise TypeError(
                "grad(has_aux=True) needs f to return a pair (output, aux), got "
                f"{_describe(result)}")
        value, aux = result if has_aux else (result, None)
        if not isinstance(value, Variable) or value.size != 1:
            raise BackwardError(
                f"grad() needs f to return a single-element Variable, got "
                f"{getattr(value, 'shape', type(value).__name__)}; use jacobian() or vjp() "
                "for other outputs")
        wrt = [inputs[i] for i in positions]
        if value.requires_grad:
            grads = autograd.grad(value, wrt, create_graph=create_graph, allow_unused=True)
        else:
            grads = (None,) * len(wrt)
        xp = value.__array_namespace__()
        grads = [g if g is not None else xp.zeros_like(w) for g, w in zip(grads, wrt)]
        grads = [_out(g, r) for g, r in zip(grads, raw)]
        gradient = grads[0] if isinstance(argnums, int) else tuple(grads)
        value = _out(value, all(raw)) if create_graph else _out(value.detach(), all(raw))
        return ((value, aux), gradient) if has_aux else (value, gradient)

    return value_and_gradient


def grad(f, argnums=0, has_aux=False):
    """Return a function computing the gradient of the single-element ``f`` w.r.t.
    ``args[argnums]`` (a tuple of gradients when ``argnums`` is a tuple)."""
    _callable(f, "grad")
    compute = value_and_grad(f, argnums, has_aux)

    @functools.wraps(f)
    def gradient(*args, **kwargs):
        (value, gradients) = compute(*args, **kwargs)
        return (gradients, value[1]) if has_aux else gradients

    return gradient


def _describe(value):
    shape = getattr(value, "shape", None)
    return f"a {type(value).__name__}" + (f" of shape {tuple(shape)}" if shape is not None else "")


def _variables(out, transform):
    """The outputs of ``f`` as a list of Variables (a tuple or list of them, or one)."""
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    for k, o in enumerate(outs):
        if not isinstance(o, Variable):
            raise TypeError(f"{transform}(): f returned {_describe(o)}"
                            f"{f' as output {k}' if len(outs) > 1 else ''}, not an array "
                            "computed from its inputs through the differentiable namespace")
    return outs


def vjp(f, *primals):
    """Return ``(f(*primals), vjp_fn)``; ``vjp_fn(cotangent)`` gives one gradient per primal.
    Where ``f`` returns a tuple, ``vjp_fn`` takes a tuple of cotangents, one per output."""
    _callable(f, "vjp")
    create_graph = _nested(primals, ())
    inputs, positions, raw = _as_inputs(primals, tuple(range(len(primals))), "vjp")
    out = f(*inputs)
    outs = _variables(out, "vjp")
    several = isinstance(out, (tuple, list))

    def vjp_fn(cotangent):
        cotangents = list(cotangent) if several and isinstance(cotangent, (tuple, list)) \
            else [cotangent]
        if len(cotangents) != len(outs):
            raise ValueError(f"vjp_fn(): f returned {len(outs)} outputs, so it takes a tuple of "
                             f"{len(outs)} cotangents, got {_describe(cotangent)}")
        live = [(o, c) for o, c in zip(outs, cotangents) if o.requires_grad]
        grads = autograd.grad([o for o, _ in live], inputs, [c for _, c in live],
                              retain_graph=True, create_graph=create_graph,
                              allow_unused=True) if live else [None] * len(inputs)
        return tuple(_out(g if g is not None else x.__array_namespace__().zeros_like(x), r)
                     for g, x, r in zip(grads, inputs, raw))

    values = [_out(o if create_graph else o.detach(), all(raw)) for o in outs]
    return (type(out)(values) if several else values[0]), vjp_fn


def jvp(f, primals, tangents):
    """Return ``(f(*primals), J @ tangents)`` by forward mode through the rules' JVPs; a
    function returning a tuple gets a tuple of tangents."""
    _callable(f, "jvp")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"jvp(): primals and tangents must be tuples (or lists) with one entry "
                        f"per argument of f, got {_describe(primals)} and {_describe(tangents)}"
                        "; write jvp(f, (x,), (t,)) for one argument")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"jvp(): {len(primals)} primals and {len(tangents)} tangents; give one "
                         "tangent per primal (zeros for a primal not to differentiate)")
    inputs, positions, raw = _as_inputs(primals, tuple(range(len(primals))), "jvp")
    leaves = {}
    for i, (x, t) in enumerate(zip(inputs, tangents)):
        t = x._backend.raw.asarray(t.data if isinstance(t, Variable) else t)
        if tuple(t.shape) != tuple(x.shape) or t.dtype != x.dtype:
            raise ValueError(f"jvp(): tangent {i} has shape {tuple(t.shape)} and dtype {t.dtype}"
                             f", but its primal has shape {tuple(x.shape)} and dtype {x.dtype}: "
                             "they must match")
        leaves[x] = t
    out = f(*inputs)
    outs = _variables(out, "jvp")
    pushed = push_tangents(outs, leaves)
    as_raw = all(raw)
    results = []
    for o, tangent in zip(outs, pushed):
        if tangent is None:
            tangent = o.__array_namespace__().zeros_like(o).data
        results.append((_out(o.detach(), as_raw), tangent if as_raw else Variable(tangent)))
    if len(results) == 1 and not isinstance(out, (tuple, list)):
        return results[0]
    return tuple(r[0] for r in results), tuple(r[1] for r in results)


def jacobian(f, argnums=0):
    """Return a function computing the Jacobian of ``f`` w.r.t. ``args[argnums]``, of shape
    ``output shape + input shape``, one reverse pass per output element."""

    _callable(f, "jacobian")
    if not isinstance(argnums, int) or isinstance(argnums, bool):
        raise TypeError(f"jacobian(): argnums must be an int, got {argnums!r}")

    @functools.wraps(f)
    def jacobian_of(*args, **kwargs):
        create_graph = _nested(args, argnums)
        inputs, (position,), raw = _as_inputs(args, argnums, "jacobian")
        x = inputs[position]
        out = f(*inputs, **kwargs)
        outs = _variables(out, "jacobian")
        if isinstance(out, (tuple, list)):  # one Jacobian per output, as torch.func and JAX
            return type(out)(_jacobian(o, x, create_graph, raw[0]) for o in outs)
        return _jacobian(out, x, create_graph, raw[0])

    return jacobian_of


def _jacobian(out, x, create_graph, raw):
    """The Jacobian of one output, one reverse pass per output element."""
    xp = out.__array_namespace__()
    rows = []
    flat = xp.reshape(out, (-1,))
    for k in range(flat.shape[0]):
        row = autograd.grad(flat[k], x, retain_graph=True, create_graph=create_graph,
                            allow_unused=True) if flat.requires_grad else None
        rows.append(row if row is not None else xp.zeros_like(x))
    jac = xp.reshape(xp.stack(rows, axis=0) if rows else xp.zeros(
        (0,) + tuple(x.shape), dtype=x.dtype, device=device_of(x)),
                     tuple(out.shape) + tuple(x.shape))
    return _out(jac, raw)


def hessian(f, argnums=0):
    """Return a function computing the Hessian of the single-element ``f``:
    ``jacobian(grad(f))``."""
    _callable(f, "hessian")
    return jacobian(grad(f, argnums), argnums)
