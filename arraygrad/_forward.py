"""Forward mode: Jacobian-vector products from the rules' JVPs.

``f`` is run once with reverse-mode recording; the recorded graph is then walked from the
inputs to the outputs, pushing tangents through each node's JVP: an explicit tangent rule per
argument, the function itself for linear functions (``LINEAR``), the sum over the arguments of
the function with one of them replaced by its tangent for multilinear ones (``MULTILINEAR``),
or, where a rule has no JVP, the transpose of its VJP (``J t`` is the gradient of
``<VJP(g), t>`` with respect to ``g``).
"""

from __future__ import annotations

from ._engine import AccumulateGrad, Node, _options, fit, run_vjps
from ._variable import Variable
from .errors import NoRuleError
from .rules import LINEAR, MULTILINEAR, TRANSPOSE, Rule, device_of


def _topological(outputs):
    """Nodes reachable from the outputs, inputs before the nodes that use them."""
    order, seen = [], set()
    stack = [(v.grad_fn, False) for v in outputs if v.grad_fn is not None]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        stack.extend((child, False) for child in node.inputs  # (None and leaves: no Node)
                     if child.__class__ is Node and child not in seen)
    return order


def push_tangents(outputs, tangents_of_leaves):
    """Tangents of ``outputs`` (Variables) given ``{leaf Variable: raw tangent}``."""
    store: dict = {}
    leaf_tangent = tangents_of_leaves.get
    stored = store.get
    for node in _topological(outputs):
        inputs = []
        live = False
        for source, output_nr in zip(node.inputs, node.input_nrs):
            if source is None:
                inputs.append(None)
                continue
            if source.__class__ is AccumulateGrad:
                t = leaf_tangent(source.variable)
            else:
                found = stored(source)
                t = None if found is None else found[output_nr]
            inputs.append(t)
            if t is not None:
                live = True
        if not live:
            store[node] = None
            continue
        out = _node_jvp(node, inputs)
        store[node] = tuple(_fit_tangent(node, k, t) for k, t in enumerate(
            out if isinstance(out, (tuple, list)) else (out,)))
    results = []
    for v in outputs:
        if v.grad_fn is None:
            results.append(tangents_of_leaves.get(v))
        else:
            found = store.get(v.grad_fn)
            results.append(None if found is None else found[v._output_nr])
    return results


def _fit_tangent(node, output_nr, t):
    """A JVP's tangent as the output's shape and dtype, as the engine fits gradients to the
    inputs: a tangent that did not meet a broadcast (``x + c`` with ``c`` a constant array, whose
    tangent is left out) is broadcast, one of another dtype (a real ``x`` with a complex or wider
    constant) cast."""
    if t is None or output_nr >= node.n_outputs:
        return t
    backend = node.backend
    shape, dtype = _output_meta(node, output_nr)
    if type(t) not in backend._plain_types:  # a Python or NumPy scalar from 0-d arithmetic
        t = backend.coerce(t)
    if tuple(t.shape) == tuple(shape) and t.dtype == dtype:
        return t
    xp = backend.raw
    if tuple(t.shape) != tuple(shape):
        t = xp.broadcast_to(t, shape)
    return fit(xp, t, tuple(shape), dtype, node.rule.display, output_nr)


_PLANS: dict = {}  # Rule -> how its JVP runs, worked out once per rule (rules live as long)
_NO_OPTIONS: dict = {}


def _plan(rule):
    """``("custom", fn)``, ``("none",)``, ``("linear",)``, ``("multilinear",)``,
    ``("transpose",)`` or
    ``("explicit", ((argument, jvp, picker of saved values, keywords), ...))``."""
    custom = getattr(rule, "node_jvp", None)  # a user's Function (arraygrad._function)
    if custom is not None:
        return ("custom", custom)
    if rule.vjps is None:
        return ("none",)
    if rule.jvps == LINEAR:
        return ("linear",)
    if rule.jvps == MULTILINEAR:
        return ("multilinear",)
    if rule.jvps and rule.jvps != TRANSPOSE:
        return ("explicit", tuple((i, jvp, _picker(rule.jvp_index[i]), rule.jvp_keywords[i])
                                  for i, jvp in enumerate(rule.jvps) if jvp is not None))
    return ("transpose",)


def _picker(index):
    if index is None:
        return lambda saved: saved
    return lambda saved: [saved[j] for j in index]


def _node_jvp(node, tangents):
    rule = node.rule
    plan = _PLANS.get(rule) if rule.__class__ is Rule else None
    if plan is None:
        plan = _plan(rule)
        if rule.__class__ is Rule:  # a user's Function is not kept alive here
            _PLANS[rule] = plan
    kind = plan[0]
    if kind == "explicit":
        xp = node.backend.raw
        saved, params = node.saved, node.params
        total = None
        for i, jvp, pick, keywords in plan[1]:
            t = tangents[i]
            if t is None:
                continue
            options = _options(params, keywords) if params else _NO_OPTIONS
            term = jvp(xp, t, *pick(saved), **options)
            total = term if total is None else total + term
        return total
    if kind == "linear":
        return _apply_linear(node, tangents)
    if kind == "multilinear":
        return _apply_multilinear(node, tangents)
    if kind == "custom":
        return plan[1](node, tangents)
    if kind == "none":
        raise NoRuleError(f"{rule.name} has no differentiation rule, so no tangent can flow "
                          "through it; add a rule in arraygrad/rules/")
    return _transposed_vjp(node, tangents)


def _apply_linear(node, tangents):
    """A linear function's JVP: the function itself on the tangents (zeros for constants)."""
    xp = node.backend.raw
    rule, params = node.rule, dict(node.params or {})
    filled = []
    for i, t in enumerate(tangents):
        if t is None:
            differentiable = rule.joint is not None or (
                i < len(rule.vjps) and rule.vjps[i] is not None)
            if not differentiable:  # a constant argument (indices, condition) keeps its value
                t = node.saved[rule.saves.index(rule.arrays[i])]
            elif node.meta[i] is not None:  # a constant array: its tangent is zero
                shape, dtype = node.meta[i]
                device = next((device_of(u) for u in tangents if hasattr(u, "shape")), None)
                t = xp.zeros(shape, dtype=dtype, device=device)
            elif not (i < len(rule.arrays) and params.get(rule.arrays[i], 0) is None):
                t = 0  # a Python scalar (an argument left out stays None)
        filled.append(t)
    return _call(node, filled)


def _apply_multilinear(node, tangents):
    """A multilinear function's JVP: the sum, over the arguments with a tangent, of the
    function with that argument replaced by its tangent, the others' values saved for the VJP."""
    rule, saved = node.rule, dict(zip(node.rule.sources, node.saved))
    values = saved[("inputs", 0)] if rule.sequence else [
        saved[("input", i)] for i in range(len(tangents))]
    total = None
    for k, t in enumerate(tangents):
        if t is not None:
            term = _call(node, [t if j == k else value for j, value in enumerate(values)])
            total = term if total is None else total + term
    return total


def _call(node, filled):
    """The node's function (the backend's own) on ``filled`` in place of its array arguments,
    with its options."""
    rule, params = node.rule, dict(node.params or {})
    function = node.backend.recorders[rule.name].raw_function
    positional = [params.pop(name) for name in rule.positional if name in params]
    if rule.sequence == "list":
        return function(filled, *positional, **params)
    if rule.sequence == "varargs":
        return function(*positional, *filled, **params)
    # Array arguments given by keyword (diff's prepend) are in params: pass them so again.
    by_keyword = {name: t for name, t in zip(rule.arrays, filled) if name in params}
    for name, t in by_keyword.items():
        if t is None:  # left out by the caller: leave it out again
            del params[name]
        else:
            params[name] = t
    leading = [t for name, t in zip(rule.arrays, filled) if name not in by_keyword]
    return function(*leading, *positional, **params)


def _transposed_vjp(node, tangents):
    """``J t`` as the gradient, with respect to ``g``, of ``sum Re<VJP(g)_i, t_i>``."""
    backend = node.backend
    xp = backend.ns
    n = node.n_outputs
    gs = []
    for k in range(n):
        shape, dtype = _output_meta(node, k)
        gs.append(Variable._make(backend.raw.zeros(shape, dtype=dtype), backend, None, 0, True))
    def constant(value):
        if isinstance(value, (tuple, list)):  # the outputs of a multi-output function
            return type(value)(constant(v) for v in value)
        return Variable._make(value, backend, None, 0, False) if hasattr(value, "shape") else value

    saved = [constant(v) for v in node.saved]
    edges = tuple(e if t is not None else None for e, t in zip(node.edges, tangents))
    from . import _grad_mode

    with _grad_mode._GradMode(True):
        grads = run_vjps(node.rule, xp, gs[0] if n == 1 else tuple(gs), saved, node.params, edges)
        total = None
        for i, (grad, t) in enumerate(zip(grads, tangents)):
            if grad is None or t is None:
                continue
            shape, dtype = node.meta[i]
            grad = fit(xp, grad, shape, dtype, node.rule.display, i)
            term = xp.sum(xp.real(xp.conj(grad) * t) if "complex" in str(dtype) else grad * t)
            total = term if total is None else total + term
    if total is None or not total.requires_grad:
        return tuple(backend.raw.zeros_like(g.data) for g in gs) if n > 1 else backend.raw.zeros_like(gs[0].data)
    from ._engine import backward

    capture = {(g._edge): None for g in gs}
    backward([(total._edge, backend.raw.ones_like(total.data))], False, False, Variable,
             capture)
    results = [capture[g._edge] if capture[g._edge] is not None else backend.raw.zeros_like(g.data)
               for g in gs]
    return results[0] if n == 1 else tuple(results)


def _output_meta(node, output_nr):
    return node.meta[len(node.inputs) + output_nr]
