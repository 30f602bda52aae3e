"""Function transforms in the style of JAX and ``torch.func``: ``grad``, ``value_and_grad``,
``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``jacobian``, ``hessian``, ``hvp``.

They take raw backend arrays or Variables, alone or in pytrees (nested tuples, lists, dicts and
namedtuples; ``None`` is an empty subtree), and give results of the same structure. Raw arrays
in give raw arrays out; Variables in give Variables out, still connected to the graph, so that
transforms nest (``hessian`` is ``jacfwd(jacrev(f))``, as in JAX and ``torch.func``): an inner
transform's results are Variables recorded as functions of every outer Variable they depend on,
however it enters (argument, keyword, closure, tangent, cotangent). An output that depends on
no input (a number, a raw array) has zero derivatives, as in JAX.
"""

from __future__ import annotations

import contextlib
import functools
import math

from . import _grad_mode, _pytree, autograd
from ._engine import AccumulateGrad
from ._forward import push_tangents
from ._variable import Variable
from .errors import BackwardError, GradientError
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


class _Wrt:
    """One differentiated argument: its leaves as leaf Variables, which were given raw, and its
    structure."""

    __slots__ = ("leaves", "raw", "structure", "since")

    def __init__(self, leaves, raw, structure, since):
        self.leaves, self.raw, self.structure = leaves, raw, structure
        self.since = since  # the serial number before its leaves (see _internal_leaf)

    def tree(self, values, connected=False):
        """The argument's structure holding ``values`` (one per leaf; raw where given raw,
        unless ``connected``)."""
        return _pytree.unflatten(self.structure, [_out(v, r and not connected)
                                                  for v, r in zip(values, self.raw)])


def _internal_leaf(value):
    """A leaf for a raw value. A transform running inside ``f`` (an inner one, done when ``f``
    returns) made its leaves after the current one made its own: a graph reaching them is no
    outer graph to keep. One made before belongs to an outer transform, still running."""
    leaf = Variable(value, requires_grad=True)
    _grad_mode.made_leaf(leaf)
    return leaf


def _standing_for(value, outer):
    """The Variable a transform differentiates with respect to, for the Variable ``value``
    given as its argument: a new node recorded on ``value`` (an identity) where ``value``
    belongs to an outer graph that is recording (``outer``), so that the transform's
    derivatives are taken with respect to its argument alone, not to ``value`` wherever else
    it enters ``f`` (a closure, another argument): ``grad(lambda a: a * x)(x)`` is ``x``, as in
    JAX. Otherwise a new leaf holding its data: no outer graph is to be kept."""
    if value.requires_grad and outer:
        with _grad_mode.enable_grad():
            return value.__array_namespace__().positive(value)
    return _internal_leaf(value.data)


def _leaf(value, path, transform, outer=True):
    """A Variable requiring grad, new to this transform, for the value at ``path()`` (a
    function: the path is spelled out only for an error)."""
    if isinstance(value, Variable):
        return _standing_for(value, outer)
    if isinstance(value, (bool, int)) or type(value).__name__ in ("str", "bytes"):
        raise TypeError(f"{transform}(): {path()} is a Python {type(value).__name__}, which cannot "
                        "be differentiated: pass it in an argument outside argnums (or in a "
                        "closure) to keep it constant, or as a floating-point array")
    try:
        return _internal_leaf(value)
    except Exception as exc:  # say where in the arguments the value is
        try:
            renamed = type(exc)(f"{transform}(): {path()}: {exc}")
        except Exception:  # noqa: BLE001  (an exception type with another signature)
            raise exc from None
        raise renamed from exc


def _prepare(args, argnums, transform, outer=True):
    """The arguments to call ``f`` with (the differentiated ones' leaves as new Variables,
    see ``_leaf``), the positions, and one ``_Wrt`` per position. ``outer``: whether grad mode
    was on where the transform was called."""
    positions = _positions(argnums, len(args), transform)
    call, done, since = list(args), {}, _grad_mode.serial()
    for i in positions:
        if i not in done:  # argnums=(0, 0) names one argument twice: one set of leaves
            leaves, structure = _pytree.flatten(args[i])
            variables = [_leaf(v, lambda k=k: _pytree.paths(structure, f"args[{i}]")[k],
                               transform, outer) for k, v in enumerate(leaves)]
            call[i] = _pytree.unflatten(structure, variables)
            done[i] = _Wrt(variables, [not isinstance(v, Variable) for v in leaves], structure,
                           since)
    return call, positions, [done[i] for i in positions]


def _callable(f, transform):
    if not callable(f):
        raise TypeError(f"{transform}(): f must be a function, got {f!r:.40}; the arguments "
                        f"go to the function it returns ({transform}(f)(x))")


def _out(value, raw):
    return value.data if raw and isinstance(value, Variable) else value


def _nested(*trees):
    """Whether a leaf is a Variable that requires grad: it may belong to an outer transform,
    so the results must stay connected to its graph."""
    return any(isinstance(a, Variable) and a.requires_grad
               for tree in trees for a in _pytree.flatten(tree)[0])


def _all_raw(wrts):
    return all(r for w in wrts for r in w.raw)


def _closes_over_graph(outs, wrts):
    """Whether the outputs depend on a leaf that requires grad other than the transform's own
    inputs: a Variable ``f`` closes over, or an outer transform's input (JAX's nested
    ``grad(lambda w: grad(lambda x: f(x, w))(x0))``). Then the results are recorded and kept
    as Variables, connected to it, instead of raw arrays that would silently drop that graph."""
    own = {id(v) for w in wrts for v in w.leaves}
    since = wrts[0].since if wrts else math.inf
    stack = [o.grad_fn for o in outs if isinstance(o, Variable) and o.grad_fn is not None]
    seen = set(stack)
    while stack:
        node = stack.pop()
        if node.__class__ is AccumulateGrad:  # a leaf
            variable = node.variable
            if id(variable) not in own and not _grad_mode.made_since(variable, since):
                return True
            continue
        for child in node.inputs:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return False


def _connect(wrts):
    """Results stay Variables (connected to an outer graph), even for arguments given raw."""
    for w in wrts:
        w.raw = [False] * len(w.leaves)
    return True


def _connected(outer, wrts, outs, *given):
    """Whether the results must stay connected to an outer graph, and so be recorded and given
    as Variables: grad mode was on where the transform was called (``outer``), and a Variable
    that requires grad was given (an argument, differentiated or not, a keyword, a tangent), or
    the outputs depend on one (a closure)."""
    if outer and (_nested(*given) or _closes_over_graph(outs, wrts)):
        return _connect(wrts)
    return False


@contextlib.contextmanager
def _differentiating():
    """Run a transform's body with grad mode on, giving whether it was on outside: a
    transform computes its derivatives even under ``no_grad`` (as ``torch.func`` and JAX), and
    its results are connected to an outer graph only where that mode was on."""
    outer = _grad_mode.state.enabled
    with _grad_mode.enable_grad():
        yield outer


def _describe(value):
    shape = getattr(value, "shape", None)
    return f"a {type(value).__name__}" + (f" of shape {tuple(shape)}" if shape is not None else "")


def _split_aux(result, has_aux, transform):
    if not has_aux:
        return result, None
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise TypeError(f"{transform}(has_aux=True) needs f to return a pair (output, aux), got "
                        f"{_describe(result)}")
    return result[0], result[1]


def _aux_out(aux, connected, raw):
    """``has_aux``'s value as the outputs are given back: raw arrays where the inputs were raw,
    Variables detached unless an outer graph is to be kept (JAX gives plain arrays)."""
    leaves, structure = _pytree.flatten(aux)
    return _pytree.unflatten(structure, [
        _out(a if connected else a.detach(), raw) if isinstance(a, Variable) else a
        for a in leaves])


def _outputs(out, wrts, transform):
    """The leaves of ``f``'s output, each a Variable (a constant where ``f`` returned a raw
    array or a number), and its structure."""
    leaves, structure = _pytree.flatten(out)
    paths = _pytree.paths(structure, "output")
    return [_output(leaf, wrts, transform, "" if structure is _pytree.LEAF else f" at {path}")
            for leaf, path in zip(leaves, paths)], structure


def _output(value, wrts, transform, where=""):
    """``value``, which ``f`` returned, as a Variable: a raw array or a Python number depends
    on no input, so it is a constant (its derivatives are zeros, as in JAX and HIPS autograd),
    on the inputs' backend for a number."""
    if isinstance(value, Variable):
        return value
    like = next((v for w in wrts for v in w.leaves), None)
    try:
        if isinstance(value, (bool, int, float, complex)) and like is not None:
            return Variable(like._backend.raw.asarray(value))
        return Variable(value)
    except Exception:  # noqa: BLE001  (not an array of a registered backend)
        raise TypeError(f"{transform}(): f returned {_describe(value)}{where}, not an array "
                        "(a Variable computed from its inputs, a constant array or a "
                        "number)") from None


def _inexact(value, transform):
    """Refuse a boolean or integer ``value`` (``np.allclose(...)``, ``xp.sum(x > 0)``): it has
    no derivative, and a gradient of zeros would hide the mistake (JAX and HIPS autograd raise
    ``TypeError`` too; a constant floating value still has zeros)."""
    if not value._backend.is_inexact(value.dtype):
        raise TypeError(f"{transform}() needs f to return a floating value, got one of dtype "
                        f"{value.dtype}, which has no derivative (a comparison, a count, an "
                        "index?); differentiate the floating value it was computed from")


def _zeros(like):
    return like.__array_namespace__().zeros_like(like)


def _trees(wrts, values, connected=False):
    """``values`` (one per leaf of every ``_Wrt``, in order) as one tree per ``_Wrt``."""
    trees, start = [], 0
    for w in wrts:
        trees.append(w.tree(values[start:start + len(w.leaves)], connected))
        start += len(w.leaves)
    return trees


# ---------------------------------------------------------------------------------- reverse
def value_and_grad(f, argnums=0, has_aux=False):
    """Return a function computing ``(f(*args), gradient of f w.r.t. args[argnums])``; ``f`` must
    return a single-element value (and an auxiliary value with ``has_aux``). The gradient has
    the structure of ``args[argnums]`` (a tuple of them when ``argnums`` is a tuple)."""
    _callable(f, "value_and_grad")

    @functools.wraps(f)
    def value_and_gradient(*args, **kwargs):
        with _differentiating() as outer:
            return _value_and_grad(f, argnums, has_aux, outer, args, kwargs)

    return value_and_gradient


def _value_and_grad(f, argnums, has_aux, outer, args, kwargs):
    """``value_and_grad(f, argnums, has_aux)(*args, **kwargs)``, grad mode on."""
    call, positions, wrts = _prepare(args, argnums, "grad", outer)
    result = f(*call, **kwargs)
    if has_aux and not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise TypeError(
            "grad(has_aux=True) needs f to return a pair (output, aux), got "
            f"{_describe(result)}")
    value, aux = result if has_aux else (result, None)
    value = _output(value, wrts, "grad")
    if value.size != 1:
        raise BackwardError(
            f"grad() needs f to return a single-element Variable, got "
            f"{getattr(value, 'shape', type(value).__name__)}; use jacobian() or vjp() "
            "for other outputs")
    _inexact(value, "grad")
    create_graph = _connected(outer, wrts, [value], args, kwargs)
    grads = _gradients(value, wrts, create_graph)
    gradient = grads[0] if isinstance(argnums, int) else tuple(grads)
    raw = _all_raw(wrts)
    value = _out(value, raw) if create_graph else _out(value.detach(), raw)
    if has_aux:
        return (value, _aux_out(aux, create_graph, raw)), gradient
    return value, gradient


def _gradients(value, wrts, create_graph):
    """One gradient tree per ``_Wrt``: zeros where ``value`` does not depend on a leaf."""
    inputs = [v for w in wrts for v in w.leaves]
    if value.requires_grad and inputs:
        grads = autograd.grad(value, inputs, create_graph=create_graph, allow_unused=True)
    else:
        grads = (None,) * len(inputs)
    return _trees(wrts, [g if g is not None else _zeros(x) for g, x in zip(grads, inputs)])


def grad(f, argnums=0, has_aux=False):
    """Return a function computing the gradient of the single-element ``f`` w.r.t.
    ``args[argnums]`` (a tuple of gradients when ``argnums`` is a tuple), of the same
    structure as that argument."""
    _callable(f, "grad")
    compute = value_and_grad(f, argnums, has_aux)

    @functools.wraps(f)
    def gradient(*args, **kwargs):
        (value, gradients) = compute(*args, **kwargs)
        return (gradients, value[1]) if has_aux else gradients

    return gradient


def vjp(f, *primals, has_aux=False):
    """Return ``(f(*primals), vjp_fn)`` (and ``aux`` with ``has_aux``); ``vjp_fn(cotangent)``,
    with ``cotangent`` of the structure of ``f``'s output, gives a tuple with one gradient per
    primal, each of that primal's structure."""
    _callable(f, "vjp")
    with _differentiating() as outer:
        call, _, wrts = _prepare(primals, tuple(range(len(primals))), "vjp", outer)
        out, aux = _split_aux(f(*call), has_aux, "vjp")
        outs, structure = _outputs(out, wrts, "vjp")
    inputs = [v for w in wrts for v in w.leaves]
    create_graph = _connected(outer, wrts, outs, primals)

    def vjp_fn(cotangent):
        with _differentiating() as now:
            return _pull(cotangent, now)

    def _pull(cotangent, now):
        """``vjp_fn(cotangent)``, grad mode on; ``now``: whether it was on outside."""
        if isinstance(out, (tuple, list)) and not (
                isinstance(cotangent, (tuple, list)) and len(cotangent) == len(out)):
            raise ValueError(f"vjp_fn(): f returned {len(out)} outputs, so it takes a tuple of "
                             f"{len(out)} cotangents, got {_describe(cotangent)}")
        cotangents = _pytree.match(structure, cotangent, "cotangent", "f's output")
        for o, c, path in zip(outs, cotangents, _pytree.paths(structure, "")):
            shape = getattr(c, "shape", None)
            if shape is not None and tuple(shape) != tuple(o.shape):
                raise GradientError(f"vjp_fn(): cotangent{path} has shape {tuple(shape)}, but "
                                    f"f's output{path} has shape {tuple(o.shape)}: they must "
                                    "match")
        # a cotangent that requires grad (an outer transform's) is recorded into the result
        connected = now and (create_graph or _nested(cotangents))
        live = [(o, c) for o, c in zip(outs, cotangents) if o.requires_grad]
        grads = autograd.grad([o for o, _ in live], inputs, [c for _, c in live],
                              retain_graph=True, create_graph=connected,
                              allow_unused=True) if live and inputs else [None] * len(inputs)
        return tuple(_trees(wrts, [g if g is not None else _zeros(x)
                                   for g, x in zip(grads, inputs)], connected))

    raw = _all_raw(wrts)
    values = _pytree.unflatten(structure, [_out(o if create_graph else o.detach(), raw)
                                           for o in outs])
    if has_aux:
        return values, vjp_fn, _aux_out(aux, create_graph, raw)
    return values, vjp_fn


# ---------------------------------------------------------------------------------- forward
def _check_pairs(primals, tangents, transform):
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"{transform}(): primals and tangents must be tuples (or lists) with one "
                        f"entry per argument of f, got {_describe(primals)} and "
                        f"{_describe(tangents)}; write {transform}(f, (x,), (t,)) for one "
                        "argument")
    if len(primals) != len(tangents):
        raise ValueError(f"{transform}(): {len(primals)} primals and {len(tangents)} tangents; "
                         "give one tangent per primal (zeros for a primal not to differentiate)")
    return tuple(primals), tuple(tangents)


def _tangent_leaves(wrts, tangents, transform):
    """The tangents as a list aligned with the primals' leaves: raw arrays, or Variables where
    given as Variables (kept, so that results stay connected to them)."""
    found = []
    for i, (w, tree) in enumerate(zip(wrts, tangents)):
        given = _pytree.match(w.structure, tree, f"tangents[{i}]", f"primals[{i}]")
        for x, t, path in zip(w.leaves, given, _pytree.paths(w.structure, f"[{i}]")):
            if not isinstance(t, Variable):
                t = x._backend.raw.asarray(t)
            if tuple(t.shape) != tuple(x.shape) or t.dtype != x.dtype:
                name = f"tangent {i}" if path == f"[{i}]" else f"tangents{path}"
                raise ValueError(f"{transform}(): {name} has shape {tuple(t.shape)} and dtype "
                                 f"{t.dtype}, but its primal has shape {tuple(x.shape)} and "
                                 f"dtype {x.dtype}: they must match")
            found.append(t)
    return found


def _push(outs, inputs, tangents, connected):
    """``J t`` for each output: by pushing raw tangents through the recorded graph, or, where
    the results must stay connected to an outer graph, by transposing a recorded VJP."""
    if connected:
        return _jvp_by_transposed_vjp(outs, inputs, tangents)
    pushed = push_tangents(outs, {x: (t.data if isinstance(t, Variable) else t)
                                  for x, t in zip(inputs, tangents)})
    return [Variable(t) if t is not None else _zeros(o.detach()) for o, t in zip(outs, pushed)]


def _jvp_by_transposed_vjp(outs, inputs, tangents):
    """``J t`` as the gradient, w.r.t. ``u``, of ``sum Re<J^T u, t>``, both recorded
    (``create_graph=True``), so that the result is connected to everything it depends on."""
    live = [k for k, o in enumerate(outs) if o.requires_grad]
    us = [_internal_leaf(outs[k]._backend.raw.zeros_like(outs[k].data)) for k in live]
    grads = autograd.grad([outs[k] for k in live], inputs, us, create_graph=True,
                          allow_unused=True) if live else []
    total = None
    for g, t, x in zip(grads, tangents, inputs):
        if g is None:
            continue
        xp = g.__array_namespace__()
        t = t if isinstance(t, Variable) else Variable(t)
        term = xp.sum(xp.real(xp.conj(g) * t) if "complex" in str(x.dtype) else g * t)
        total = term if total is None else total + term
    results = [None] * len(outs)
    if total is not None and total.requires_grad:
        found = autograd.grad(total, us, create_graph=True, allow_unused=True)
        for k, r in zip(live, found):
            results[k] = r
    return [r if r is not None else _zeros(o.detach()) for r, o in zip(results, outs)]


def _primals_and_tangents(primals, tangents, transform, outer):
    """For ``jvp`` and ``hvp``: the call's arguments, the differentiated trees, their leaves,
    and the tangent of each leaf."""
    primals, tangents = _check_pairs(primals, tangents, transform)
    call, _, wrts = _prepare(primals, tuple(range(len(primals))), transform, outer)
    inputs = [v for w in wrts for v in w.leaves]
    return call, wrts, inputs, _tangent_leaves(wrts, tangents, transform)


def jvp(f, primals, tangents, has_aux=False):
    """Return ``(f(*primals), J @ tangents)`` (and ``aux`` with ``has_aux``) by forward mode
    through the rules' JVPs. ``primals`` and ``tangents`` are tuples with one pytree per
    argument of ``f``; the tangent out has the structure of ``f``'s output."""
    _callable(f, "jvp")
    with _differentiating() as outer:
        call, wrts, inputs, given = _primals_and_tangents(primals, tangents, "jvp", outer)
        out, aux = _split_aux(f(*call), has_aux, "jvp")
        outs, structure = _outputs(out, wrts, "jvp")
        connected = _connected(outer, wrts, outs, primals, tangents)
        pushed = _push(outs, inputs, given, connected)
    raw = _all_raw(wrts)
    values = _pytree.unflatten(structure, [_out(o if connected else o.detach(), raw)
                                           for o in outs])
    results = _pytree.unflatten(structure, [_out(t, raw) for t in pushed])
    if has_aux:
        return values, results, _aux_out(aux, connected, raw)
    return values, results


def hvp(f, primals, tangents):
    """Return ``(f(*primals), H @ tangents)`` for the single-element ``f``: the Hessian-vector
    product, forward over reverse (the gradient is recorded, ``create_graph=True``, then the
    tangents are pushed through that graph), as ``jvp(grad(f), primals, tangents)`` in JAX and
    ``torch.func``; the product is a tuple with one tree per primal (as
    ``torch.autograd.functional.hvp``)."""
    _callable(f, "hvp")
    with _differentiating() as outer:
        call, wrts, inputs, given = _primals_and_tangents(primals, tangents, "hvp", outer)
        value = _output(f(*call), wrts, "hvp")
        if value.size != 1:
            raise BackwardError(f"hvp() needs f to return a single-element Variable, got "
                                f"{getattr(value, 'shape', type(value).__name__)}")
        _inexact(value, "hvp")
        connected = _connected(outer, wrts, [value], primals, tangents)
        grads = autograd.grad(value, inputs, create_graph=True, allow_unused=True) if (
            value.requires_grad and inputs) else [None] * len(inputs)
        grads = [g if g is not None else _zeros(x.detach()) for g, x in zip(grads, inputs)]
        products = _push(grads, inputs, given, connected)
    value = _out(value if connected else value.detach(), _all_raw(wrts))
    return value, tuple(_trees(wrts, products))


# -------------------------------------------------------------------------------- Jacobians
def jacobian(f, argnums=0, has_aux=False, mode="rev"):
    """Return a function computing the Jacobian of ``f`` w.r.t. ``args[argnums]``: for each
    output leaf, a tree of the argument's structure (a tuple of them when ``argnums`` is a
    tuple) whose leaves have shape ``output shape + input shape``, as JAX's ``jacrev``.
    ``mode="rev"`` takes one reverse pass per output element, ``mode="fwd"`` one forward pass
    per input element."""
    _callable(f, "jacobian")
    if mode not in ("rev", "fwd"):
        raise ValueError(f"jacobian(): mode must be 'rev' or 'fwd', got {mode!r}")
    return _jacobian(f, argnums, has_aux, mode, "jacobian")


def _jacobian(f, argnums, has_aux, mode, transform):
    """``jacobian``, its errors naming ``transform``, the function the user called."""
    _positions(argnums, 1 << 30, transform)  # its type now, its range when called

    @functools.wraps(f)
    def jacobian_of(*args, **kwargs):
        with _differentiating() as outer:
            return _jacobian_of(outer, args, kwargs)

    def _jacobian_of(outer, args, kwargs):
        """``jacobian_of(*args, **kwargs)``, grad mode on."""
        call, _, wrts = _prepare(args, argnums, transform, outer)
        out, aux = _split_aux(f(*call, **kwargs), has_aux, transform)
        outs, structure = _outputs(out, wrts, transform)
        inputs = [v for w in wrts for v in w.leaves]
        nested = _connected(outer, wrts, outs, args, kwargs)
        # Forward mode gives results that no outer graph sees: nested, go reverse (same values).
        blocks = (_forward_blocks if mode == "fwd" and not nested else _reverse_blocks)(
            outs, inputs, nested)
        per_output = [_trees(wrts, block) for block in blocks]
        result = _pytree.unflatten(structure, [trees[0] if isinstance(argnums, int) else
                                               tuple(trees) for trees in per_output])
        return (result, _aux_out(aux, nested, _all_raw(wrts))) if has_aux else result

    return jacobian_of


def jacrev(f, argnums=0, has_aux=False):
    """The Jacobian by reverse mode, one reverse pass per output element (JAX's ``jacrev``)."""
    _callable(f, "jacrev")
    return _jacobian(f, argnums, has_aux, "rev", "jacrev")


def jacfwd(f, argnums=0, has_aux=False):
    """The Jacobian by forward mode, one forward pass per input element (JAX's ``jacfwd``);
    under an outer transform, whose graph must see the result, it is computed in reverse."""
    _callable(f, "jacfwd")
    return _jacobian(f, argnums, has_aux, "fwd", "jacfwd")


def _reverse_blocks(outs, inputs, create_graph):
    """``blocks[k][j]``: the Jacobian of output ``k`` w.r.t. input ``j``, a row per output
    element, each row one reverse pass."""
    blocks = []
    for out in outs:
        xp = out.__array_namespace__()
        flat = xp.reshape(out, (-1,))
        rows = []
        for e in range(flat.shape[0]):
            found = autograd.grad(flat[e], inputs, retain_graph=True, create_graph=create_graph,
                                  allow_unused=True) if flat.requires_grad and inputs else (
                None,) * len(inputs)
            rows.append([g if g is not None else xp.zeros_like(x) for g, x in zip(found, inputs)])
        block = []
        for j, x in enumerate(inputs):
            stacked = xp.stack([row[j] for row in rows], axis=0) if rows else xp.zeros(
                (0,) + tuple(x.shape), dtype=x.dtype, device=device_of(x))
            block.append(xp.reshape(stacked, tuple(out.shape) + tuple(x.shape)))
        blocks.append(block)
    return blocks


def _forward_blocks(outs, inputs, create_graph):
    """``blocks[k][j]`` as ``_reverse_blocks``, a column per input element, each column one
    forward pass of a unit tangent through the recorded graph (never with ``create_graph``:
    the tangents are not recorded)."""
    assert not create_graph
    blocks = [[None] * len(inputs) for _ in outs]
    for j, x in enumerate(inputs):
        raw = x._backend.raw
        n = x.size
        units = raw.eye(n, dtype=x.dtype, device=device_of(x.data)) if n else None
        columns = [[] for _ in outs]
        for e in range(n):
            unit = raw.reshape(units[e, :], tuple(x.shape))
            for k, t in enumerate(push_tangents(outs, {x: unit})):
                columns[k].append(raw.reshape(t, (-1,)) if t is not None else None)
        for k, out in enumerate(outs):
            size = out.size
            cols = [c if c is not None else raw.zeros((size,), dtype=out.dtype,
                                                      device=device_of(out.data))
                    for c in columns[k]]
            stacked = raw.stack(cols, axis=1) if cols else raw.zeros(
                (size, 0), dtype=out.dtype, device=device_of(out.data))
            blocks[k][j] = Variable(raw.reshape(stacked, tuple(out.shape) + tuple(x.shape)))
    return blocks


def hessian(f, argnums=0):
    """Return a function computing the Hessian of ``f``: ``jacfwd(jacrev(f))``, as JAX and
    ``torch.func`` (forward over reverse); for tree arguments a tree of trees."""
    _callable(f, "hessian")
    return _jacobian(_jacobian(f, argnums, False, "rev", "hessian"), argnums, False, "fwd",
                     "hessian")
