"""Forward mode: Jacobian-vector products from the rules' JVPs.

``f`` is run once with reverse-mode recording; the recorded graph is then walked from the
inputs to the outputs, pushing tangents through each node's JVP: an explicit tangent rule per
argument, the function itself for linear functions (``LINEAR``), or, where a rule has no JVP,
the transpose of its VJP (``J t`` is the gradient of ``<VJP(g), t>`` with respect to ``g``).
"""

from __future__ import annotations

from ._engine import AccumulateGrad, Node, _options, fit, run_vjps
from ._variable import Variable
from .errors import NoRuleError
from .rules import LINEAR, TRANSPOSE, device_of


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
        stack.extend((edge[0], False) for edge in node.edges
                     if edge is not None and edge[0].__class__ is Node and edge[0] not in seen)
    return order


def push_tangents(outputs, tangents_of_leaves):
    """Tangents of ``outputs`` (Variables) given ``{leaf Variable: raw tangent}``."""
    store: dict = {}

    def tangent_of(edge):
        if edge is None:
            return None
        node, output_nr = edge
        if node.__class__ is AccumulateGrad:
            return tangents_of_leaves.get(node.variable)
        found = store.get(node)
        return None if found is None else found[output_nr]

    for node in _topological(outputs):
        inputs = [tangent_of(edge) for edge in node.edges]
        if all(t is None for t in inputs):
            store[node] = None
            continue
        out = _node_jvp(node, inputs)
        store[node] = out if isinstance(out, (tuple, list)) else (out,)
    results = []
    for v in outputs:
        if v.grad_fn is None:
            results.append(tangents_of_leaves.get(v))
        else:
            found = store.get(v.grad_fn)
            results.append(None if found is None else found[v._output_nr])
    return results


def _node_jvp(node, tangents):
    rule = node.rule
    if rule.vjps is None:
        raise NoRuleError(f"{rule.name} has no differentiation rule, so no tangent can flow "
                          "through it; add a rule in arraygrad/rules/")
    xp = node.backend.raw
    if rule.jvps == LINEAR:
        return _apply_linear(node, tangents)
    if rule.jvps and rule.jvps != TRANSPOSE:
        total = None
        for i, (jvp, t) in enumerate(zip(rule.jvps, tangents)):
            if jvp is None or t is None:
                continue
            index = rule.jvp_index[i]
            args = node.saved if index is None else [node.saved[j] for j in index]
            term = jvp(xp, t, *args, **_options(node.params or {}, rule.jvp_keywords[i]))
            total = term if total is None else total + term
        return total
    return _transposed_vjp(node, tangents)


def _apply_linear(node, tangents):
    """A linear function's JVP: the function itself on the tangents (zeros for constants)."""
    xp = node.backend.raw
    rule, params = node.rule, dict(node.params or {})
    filled = []
    device = next((device_of(t) for t in tangents if hasattr(t, "shape")), None)
    for i, t in enumerate(tangents):
        if t is None:
            differentiable = rule.joint is not None or (
                i < len(rule.vjps) and rule.vjps[i] is not None)
            if not differentiable:  # a constant argument (indices, condition) keeps its value
                t = node.saved[rule.saves.index(rule.arrays[i])]
            elif node.meta[i] is not None:  # a constant array: its tangent is zero
                shape, dtype = node.meta[i]
                t = xp.zeros(shape, dtype=dtype, device=device)
            elif not (i < len(rule.arrays) and params.get(rule.arrays[i], 0) is None):
                t = 0  # a Python scalar (an argument left out stays None)
        filled.append(t)
    function = node.backend.recorders[rule.name].raw_function
    positional = [params.pop(name) for name in rule.positional if name in params]
    if rule.sequence == "list":
        return function(filled, *positional, **params)
    if rule.sequence == "varargs":
        return function(*filled, **params)
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
    backward([(total._edge, backend.raw.ones_like(total.data))], False, False, capture)
    results = [capture[g._edge] if capture[g._edge] is not None else backend.raw.zeros_like(g.data)
               for g in gs]
    return results[0] if n == 1 else tuple(results)


def _output_meta(node, output_nr):
    return node.meta[len(node.edges) + output_nr]
