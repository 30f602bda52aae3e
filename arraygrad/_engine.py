"""The graph and the backward engine: nodes, accumulation, freeing, hooks.

Backward is iterative (Kahn's algorithm over the nodes reachable from the roots): a node runs once
every consumer has sent its gradient, its buffer is dropped as soon as it ran, and its saved
values are released unless ``retain_graph``. Shapes and dtypes of gradients are fitted and checked
here, once, rather than in every rule.
"""

from __future__ import annotations

import weakref

from . import _grad_mode
from .errors import BackwardError, GradientError, InplaceError, NoRuleError
from .rules import private

_FREED = object()


class Version:
    """A Variable's version counter: bumped by every in-place operation on it."""

    __slots__ = ("value", "last_op")

    def __init__(self):
        self.value = 0
        self.last_op = ""


class Node:
    """The backward function of one recorded operation (a Variable's ``grad_fn``)."""

    __slots__ = ("rule", "backend", "edges", "meta", "saved", "params", "versions",
                 "n_outputs", "pre_hooks", "retained", "__weakref__")

    def __init__(self, rule, backend, edges, meta, saved, params, versions, n_outputs=1):
        self.rule = rule
        self.backend = backend
        self.edges = edges  # per input: (node, output_nr), or None when it needs no gradient
        self.meta = meta  # per input: (shape, dtype) of the value, to fit gradients to
        self.saved = saved
        self.params = params
        self.versions = versions  # ((Version, value at save), ...) of the saved Variables
        self.n_outputs = n_outputs
        self.pre_hooks = None  # {output_nr: [hook, ...]} from Variable.register_hook
        self.retained = None  # {output_nr: weakref to a Variable that called retain_grad()}

    def name(self) -> str:
        return self.rule.display

    def __repr__(self):
        return f"<{self.rule.display}>"

    @property
    def next_functions(self):
        """``((node, output_nr), ...)`` for each input, ``(None, 0)`` where none, as in PyTorch."""
        return tuple(edge if edge is not None else (None, 0) for edge in self.edges)

    def apply(self, grads, create_graph, retain_graph):
        """Run the rule on the output gradients; return the gradients of the inputs."""
        saved = self.saved
        rule = self.rule
        if saved is _FREED:
            raise BackwardError(
                f"Trying to backward through the graph a second time: the values that "
                f"{rule.display} saved for backward were freed after the first backward() call. "
                "Pass retain_graph=True to the first backward() if you need to call it again "
                "(or to read saved values after it).")
        for version, expected in self.versions:
            if version.value != expected:
                raise InplaceError(
                    f"A value that {rule.display} needs for its gradient was modified by an "
                    f"in-place operation ({version.last_op}) after {rule.name} used it: it is at "
                    f"version {version.value}, expected {expected}. Compute on a copy instead "
                    "(for example y = x * 1, or xp.asarray(x, copy=True)), or modify it before "
                    f"calling {rule.name}.")
        if rule.vjps is None:  # a function with no rule: fail only when a gradient flows here
            raise NoRuleError(
                f"{rule.name} has no differentiation rule, so no gradient can flow through it "
                f"(backend {self.backend.name!r}). Detach its inputs if you do not need this "
                f"gradient, or add a rule to the module of its family in arraygrad/rules/ "
                f"(see defvjp there).")
        backend = self.backend
        if create_graph:
            xp = backend.ns
            saved = self.saved_variables()
        else:
            xp = backend.raw
        if self.n_outputs == 1:
            g = grads[0]
        else:
            device = next(getattr(grad, "device", None) for grad in grads if grad is not None)
            g = tuple(self._zeros(xp, i, device) if grad is None else grad
                      for i, grad in enumerate(grads))
        results = run_vjps(rule, xp, g, saved, self.params, self.edges)
        if not retain_graph and saved:
            self.saved = _FREED
        meta = self.meta
        edges = self.edges
        for i, grad in enumerate(results):
            if grad is not None and edges[i] is not None:
                shape, dtype = meta[i]
                if grad.shape != shape or grad.dtype != dtype:
                    results[i] = fit(xp, grad, shape, dtype, rule.display, i)
        return results

    def _zeros(self, xp, output_nr, device):
        shape, dtype = self.meta[len(self.edges) + output_nr]
        return xp.zeros(shape, dtype=dtype, device=device)

    def saved_variables(self):
        """The saved values as Variables connected to the graph, for ``create_graph=True``."""
        from ._variable import Variable

        values = []
        for value, (kind, index) in zip(self.saved, self.rule.sources):
            if kind == "input":
                values.append(_reconnect(value, self.edges[index], self.backend))
            elif kind == "inputs":
                values.append([_reconnect(v, self.edges[i], self.backend)
                               for i, v in enumerate(value)])
            elif kind == "ans":
                if self.n_outputs == 1:
                    values.append(Variable._make(value, self.backend, self, 0))
                else:
                    values.append(tuple(Variable._make(v, self.backend, self, i)
                                        for i, v in enumerate(value)))
            else:
                values.append(value)
        return values


def run_vjps(rule, xp, g, saved, params, edges):
    """Call a rule's VJPs for the inputs that have an edge; ``None`` for the others."""
    if rule.joint is not None:
        index = rule.index[0]
        args = saved if index is None else [saved[i] for i in index]
        return list(rule.joint(xp, g, *args, **_options(params, rule.keywords[0])))
    results = [None] * len(edges)
    for i, vjp in enumerate(rule.vjps):
        if edges[i] is None or vjp is None:
            continue
        index = rule.index[i]
        args = saved if index is None else [saved[j] for j in index]
        if params:
            results[i] = vjp(xp, g, *args, **_options(params, rule.keywords[i]))
        else:
            results[i] = vjp(xp, g, *args)
    return results


def _reconnect(value, edge, backend):
    from ._variable import Variable

    if isinstance(value, Variable) or not hasattr(value, "shape"):
        return value
    if edge is None:
        return Variable._make(value, backend, None, 0, False)
    node, output_nr = edge
    if isinstance(node, AccumulateGrad):
        return node.variable
    return Variable._make(value, backend, node, output_nr)


def _options(params, keywords):
    if keywords is None:
        return params
    return {k: v for k, v in params.items() if k in keywords}


class AccumulateGrad:
    """The node that adds an incoming gradient into a leaf Variable's ``.grad``."""

    __slots__ = ("variable", "__weakref__")
    n_outputs = 1
    edges = ()
    next_functions = ()

    def __init__(self, variable):
        self.variable = variable

    def __repr__(self):
        return "<AccumulateGrad>"

    def name(self) -> str:
        return "AccumulateGrad"

    def apply(self, grads, create_graph, retain_graph):
        from ._variable import Variable

        variable = self.variable
        grad = grads[0]
        backend = variable._backend
        if variable._hooks:
            grad = _run_hooks(variable._hooks, grad, backend, create_graph)
        old = variable._grad
        if create_graph:
            grad = grad if isinstance(grad, Variable) else Variable._make(grad, backend, None, 0, False)
            variable._grad = grad if old is None else old + grad
        elif old is None:
            if not _unshared(grad):  # a view, or held elsewhere (another gradient, the seed)
                grad = backend.raw.asarray(grad, copy=True)
            variable._grad = Variable._make(grad, backend, None, 0, False)
        elif old.grad_fn is not None or old._requires_grad:
            variable._grad = Variable._make(old.data + grad, backend, None, 0, False)
        else:
            old.data = old.data + grad
        return None


def _unshared(grad, references=5) -> bool:
    """Whether ``grad`` owns its memory and nothing but the engine refers to it, so that a
    leaf's ``.grad`` may take it without a copy (PyTorch's AccumulateGrad steals it likewise).
    Only arrays that say they are not views (NumPy's ``base is None``) qualify."""
    # References: the engine's buffer list, the caller's local name, the argument here and in
    # private(), getrefcount's own.
    return private(grad, references)


def _run_hooks(hooks, grad, backend, create_graph):
    from ._variable import Variable

    wrapped = grad if isinstance(grad, Variable) else Variable._make(grad, backend, None, 0, False)
    for hook in list(hooks.values()):
        replaced = hook(wrapped)
        if replaced is not None:
            if not isinstance(replaced, Variable):
                replaced = Variable._make(replaced, backend, None, 0, False)
            _check_same(replaced, wrapped, "a hook's returned gradient")
            wrapped = replaced
    return wrapped if create_graph else wrapped.data


def _check_same(grad, like, what):
    if grad.shape != like.shape or grad.dtype != like.dtype:
        raise GradientError(
            f"{what} has shape {tuple(grad.shape)} and dtype {grad.dtype}, but the value it "
            f"belongs to has shape {tuple(like.shape)} and dtype {like.dtype}")


def _broadcasts(small, large) -> bool:
    if len(small) > len(large):
        return False
    return all(s in (1, n) for s, n in zip(small[::-1], large[::-1]))


def fit(xp, grad, shape, dtype, op, index):
    """Fit a rule's gradient to its input: sum over broadcast axes, expand reduced ones, cast
    (taking the real part for a real input). Anything else is a bug in the rule."""
    gshape = tuple(grad.shape)
    if gshape != shape:
        if _broadcasts(shape, gshape):
            extra = len(gshape) - len(shape)
            axes = tuple(range(extra)) + tuple(
                extra + i for i, n in enumerate(shape) if n == 1 and gshape[extra + i] != 1)
            if axes:
                grad = xp.sum(grad, axis=axes)
            grad = xp.reshape(grad, shape)
        elif _broadcasts(gshape, shape):
            grad = xp.broadcast_to(grad, shape)
        else:
            raise GradientError(
                f"internal error: the rule {op} returned a gradient of shape {gshape} for its "
                f"argument {index} of shape {shape}. Please report this bug.")
    if grad.dtype != dtype:
        if "complex" in str(grad.dtype) and "complex" not in str(dtype):
            grad = xp.real(grad)
        if grad.dtype != dtype:
            grad = xp.astype(grad, dtype)
    return grad


def backward(roots, retain_graph, create_graph, capture=None):
    """Propagate gradients from ``roots``, a list of ``(edge, gradient)`` pairs.

    With ``capture`` (a dict ``{edge: None}``), the gradients arriving at those edges are stored
    in it and returned, and no leaf's ``.grad`` is touched (``arraygrad.autograd.grad``).
    """
    dependencies: dict = {}
    stack = []
    for (node, _), _ in roots:
        if node not in dependencies:
            dependencies[node] = 0
            stack.append(node)
    seen = set(stack)
    while stack:
        for edge in stack.pop().edges:
            if edge is not None:
                child = edge[0]
                dependencies[child] = dependencies.get(child, 0) + 1
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    buffers: dict = {}
    for (node, output_nr), grad in roots:
        _accumulate(buffers, node, output_nr, grad)
    ready = [node for node in buffers if dependencies[node] == 0]
    with _grad_mode._GradMode(create_graph):
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            results = None
            if grads is not None:
                if node.__class__ is Node and (node.pre_hooks or node.retained):
                    grads = _node_hooks(node, grads, create_graph)
                if capture is not None:
                    for output_nr, grad in enumerate(grads):
                        if (node, output_nr) in capture:
                            capture[(node, output_nr)] = grad
                    if node.__class__ is AccumulateGrad:
                        continue
                results = node.apply(grads, create_graph, retain_graph)
            for i, edge in enumerate(node.edges):
                if edge is None:
                    continue
                child = edge[0]
                if results is not None and results[i] is not None:
                    _accumulate(buffers, child, edge[1], results[i])
                remaining = dependencies[child] - 1
                dependencies[child] = remaining
                if remaining == 0:
                    ready.append(child)
    return capture


def _accumulate(buffers, node, output_nr, grad):
    buffer = buffers.get(node)
    if buffer is None:
        buffer = buffers[node] = [None] * node.n_outputs
    old = buffer[output_nr]
    if old is None:
        buffer[output_nr] = grad
    elif (old.__class__ is grad.__class__ and old.shape == grad.shape and old.dtype == grad.dtype
          and _unshared(old)):  # the buffer, this name, the arguments, getrefcount's
        old += grad  # the engine's own temporary: add in place
    else:
        buffer[output_nr] = old + grad


def _node_hooks(node, grads, create_graph):
    """Run a non-leaf's hooks on its gradient, then store it in ``.grad`` if retained."""
    from ._variable import Variable

    grads = list(grads)
    for output_nr, hooks in (node.pre_hooks or {}).items():
        if grads[output_nr] is not None and hooks:
            grads[output_nr] = _run_hooks(hooks, grads[output_nr], node.backend, create_graph)
    for output_nr, ref in (node.retained or {}).items():
        variable = ref()
        grad = grads[output_nr]
        if variable is None or grad is None:
            continue
        if not isinstance(grad, Variable):
            grad = Variable._make(node.backend.raw.asarray(grad, copy=True), node.backend, None, 0, False)
        variable._grad = grad if variable._grad is None else variable._grad + grad
    return grads


def accumulator(variable):
    """The AccumulateGrad node of a leaf, shared by every op that uses it."""
    ref = variable._accumulator
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(variable)
        variable._accumulator = weakref.ref(node)
    return node
