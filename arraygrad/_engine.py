"""The graph and the backward engine: nodes, accumulation, freeing, hooks.

Backward is iterative (Kahn's algorithm over the nodes reachable from the roots): a node runs once
every consumer has sent its gradient, its buffer is dropped as soon as it ran, and its saved
values are released unless ``retain_graph``. Shapes and dtypes of gradients are fitted and checked
here, once, rather than in every rule.

Gradients are arrays of the node's backend (Variables under ``create_graph``), and ``None`` is
the one symbolic zero: an input that gets no gradient. Rules never write into what they are
given; the one place memory is reused is accumulation (:func:`_accumulate`, and a leaf's
``.grad``), which may take over a buffer nothing else holds (``_buffers.take``).

The engine makes Variables (under ``create_graph``, and for hooks) of the class the caller of
:func:`backward` names: it never imports the Variable layer above it.

Threads: backward passes run in parallel, each with its own buffers; what they share is guarded
where it is written. A leaf's AccumulateGrad holds a lock (as PyTorch's holds a mutex) around its
hooks and the read-add-write of ``.grad``, and a node whose output retains its gradient or has
hooks takes one around those; nothing else is locked, so no op pays for it.
"""

from __future__ import annotations

import threading
import weakref
from _thread import RLock as _RLock  # (what threading.RLock() returns, without its Python call)

from . import _anomaly, _grad_mode, _watch
from ._buffers import take
from .errors import BackwardError, GradientError, NoRuleError
from .rules import backends, broadcasts, device_of, is_complex, is_complex_dtype, sum_axes

_FREED = object()

class Pass:
    """One backward pass's settings, which nodes and hooks read: whether it keeps the saved
    values, whether it records itself, and the Variable class to wrap values in (the caller's:
    ``variables._make(value, backend, node, output_nr[, requires_grad])``)."""

    __slots__ = ("retain_graph", "create_graph", "variables", "capture", "watched")

    def __init__(self, retain_graph, create_graph, variables, capture=None):
        self.retain_graph = retain_graph
        self.create_graph = create_graph
        self.variables = variables
        self.capture = capture  # {edge: gradient} to fill (see backward), or None
        self.watched = () if capture is None else {node for node, _ in capture}  # their nodes

    def wrap(self, value, backend):
        """``value`` as a Variable outside the graph (a gradient for a hook, or ``.grad``)."""
        if isinstance(value, self.variables):
            return value
        return self.variables._make(value, backend, None, 0, False)


class Node:
    """The backward function of one recorded operation (a Variable's ``grad_fn``)."""

    __slots__ = ("rule", "backend", "inputs", "input_nrs", "meta", "saved", "params",
                 "n_outputs", "pre_hooks", "retained", "lock", "forward_trace", "__weakref__")
    # lock: unset until _node_hooks needs it; forward_trace: set only in anomaly mode

    def __init__(self, rule, backend, inputs, input_nrs, meta, saved, params, n_outputs=1):
        self.rule = rule
        self.backend = backend
        # Per input, the node its gradient goes to (None: it needs none) and that node's
        # output it is: two tuples, so that a long graph holds two objects per op for Python's
        # cyclic GC to scan (the tuple of ints is untracked), not one more per input.
        self.inputs = inputs
        self.input_nrs = input_nrs
        self.meta = meta  # (shape, dtype) per input, then per output: to fit gradients to
        self.saved = saved
        self.params = params
        self.n_outputs = n_outputs
        self.pre_hooks = None  # {output_nr: {id: hook}} from Variable.register_hook
        self.retained = None  # {output_nr: weakref to a Variable that called retain_grad()}
        if _watch.watching:
            _watch.watch(self)

    @classmethod
    def of_edges(cls, rule, backend, edges, meta, saved, params, n_outputs=1):
        """A Node from its edges: per input, ``(node, output_nr)`` or None."""
        return cls(rule, backend, tuple(None if e is None else e[0] for e in edges),
                   tuple(0 if e is None else e[1] for e in edges), meta, saved, params,
                   n_outputs)

    @property
    def edges(self):
        """Per input, ``(node, output_nr)``, or None where the input needs no gradient."""
        return tuple(None if node is None else (node, nr)
                     for node, nr in zip(self.inputs, self.input_nrs))

    def name(self) -> str:
        return self.rule.display

    def __repr__(self):
        return f"<{self.rule.display}>"

    @property
    def saved_tensors(self):
        """What a custom Function's ``forward`` saved (``ctx.save_for_backward``), as
        Variables: PyTorch's ``grad_fn.saved_tensors``. Other nodes have none."""
        return self.rule.saved_tensors_of(self)

    @property
    def next_functions(self):
        """``((node, output_nr), ...)`` for each input, ``(None, 0)`` where none, as in PyTorch."""
        return tuple(edge if edge is not None else (None, 0) for edge in self.edges)

    def apply(self, grads, run: Pass):
        """Run the rule on the output gradients; return the gradients of the inputs, fitted to
        the inputs' shapes and dtypes."""
        saved, rule, backend = self.saved, self.rule, self.backend
        if saved is _FREED or rule.vjps is None:
            raise self._cannot_run()
        if run.create_graph:
            xp, saved = backend.ns, self.saved_variables(run.variables)
        else:
            xp = backend._raw  # (loaded: the forward pass ran through it; not the property)
        if self.saved and not run.retain_graph:
            self.saved = _FREED
        g = grads[0] if self.n_outputs == 1 else self._output_grads(grads, xp)
        results = run_vjps(rule, xp, g, saved, self.params, self.inputs)
        plain, meta = backend._plain_types, self.meta
        for i, grad in enumerate(results):  # fitted to the inputs' shapes and dtypes
            if grad is not None and self.inputs[i] is not None:
                if grad.__class__ not in plain:  # numpy.float64 from 0-d arithmetic
                    grad = backend.coerce(grad)
                shape, dtype = meta[i]
                if grad.shape != shape or grad.dtype != dtype:
                    grad = fit(xp, grad, shape, dtype, rule.display, i)
                results[i] = grad
        return results

    def _output_grads(self, grads, xp):
        """The gradients of a node of several outputs, zeros for those that got none (unless its
        rule takes None: ``ctx.set_materialize_grads(False)``)."""
        if self.rule.keeps_none(self):
            return tuple(grads)
        device = next(device_of(grad) for grad in grads if grad is not None)
        inputs = len(self.inputs)
        return tuple(xp.zeros(self.meta[inputs + i][0], dtype=self.meta[inputs + i][1],
                              device=device) if grad is None else grad
                     for i, grad in enumerate(grads))

    def _cannot_run(self):
        rule = self.rule
        if self.saved is _FREED:
            return BackwardError(
                f"Trying to backward through the graph a second time: the values that "
                f"{rule.display} saved for backward were freed after the first backward() call. "
                "Pass retain_graph=True to the first backward() if you need to call it again "
                "(or to read saved values after it).")
        # A function with no rule: it fails only when a gradient flows through it.
        return NoRuleError(
            f"{rule.name} has no differentiation rule, so no gradient can flow through it "
            f"(backend {self.backend.name!r}). Detach its inputs if you do not need this "
            f"gradient, or add a rule to the module of its family in arraygrad/rules/ "
            f"(see defvjp there).")

    def saved_variables(self, variables):
        """The saved values as Variables (of the class ``variables``) connected to the graph,
        for ``create_graph=True``."""
        values, edges = [], self.edges
        for value, (kind, index) in zip(self.saved, self.rule.sources):
            if kind == "input":
                values.append(_reconnect(value, edges[index], self.backend, variables))
            elif kind == "inputs":
                values.append([_reconnect(v, edges[i], self.backend, variables)
                               for i, v in enumerate(value)])
            elif kind == "ans" and self.n_outputs == 1:
                values.append(variables._make(value, self.backend, self, 0))
            elif kind == "ans":
                values.append(tuple(variables._make(v, self.backend, self, i)
                                    for i, v in enumerate(value)))
            else:
                values.append(value)
        return values


def run_vjps(rule, xp, g, saved, params, inputs):
    """Call a rule's VJPs for the inputs that need a gradient (``inputs``: per input, what
    takes its gradient, or None); ``None`` for the others. A VJP takes the saved values its
    picker picks (all of them, in order, where it has none)."""
    if rule.joint is not None:
        options = _options(params, rule.keywords[0]) if params else {}
        if rule.asks_needed:  # it skips the gradients no input takes
            options = {**options, "needed": tuple(needs is not None for needs in inputs)}
        pick = rule.pickers[0]
        return list(rule.joint(xp, g, *(saved if pick is None else pick(saved)), **options))
    results = []
    for i, needs in enumerate(inputs):
        vjp, pick = rule.vjps[i], rule.pickers[i]
        if needs is None or vjp is None:
            results.append(None)
            continue
        args = saved if pick is None else pick(saved)
        results.append(vjp(xp, g, *args, **_options(params, rule.keywords[i])) if params
                       else vjp(xp, g, *args))
    return results


def _reconnect(value, edge, backend, variables):
    if isinstance(value, variables) or not hasattr(value, "shape"):
        return value
    if edge is None:
        return variables._make(value, backend, None, 0, False)
    node, output_nr = edge
    if isinstance(node, AccumulateGrad):
        return node.variable
    return variables._make(value, backend, node, output_nr)


def _options(params, keywords):
    """The node's ``params`` that a VJP taking the options ``keywords`` (a frozenset; None: any)
    reads."""
    if keywords is None or params.keys() <= keywords:
        return params
    return {k: v for k, v in params.items() if k in keywords}


class AccumulateGrad:
    """The node that adds an incoming gradient into a leaf Variable's ``.grad``."""

    __slots__ = ("variable", "lock", "__weakref__")
    n_outputs = 1
    inputs = input_nrs = edges = next_functions = ()

    def __init__(self, variable):
        self.variable = variable
        self.lock = _RLock()  # reentrant: a hook may itself call backward() into this leaf

    def __repr__(self):
        return "<AccumulateGrad>"

    def name(self) -> str:
        return "AccumulateGrad"

    def apply(self, grads, run: Pass):
        variable = self.variable
        backend = variable._backend
        with self.lock:  # backward passes in other threads may reach this leaf too
            if not variable._requires_grad:  # switched off after recording: as PyTorch's
                return None
            if variable._hooks:
                grads = [_run_hooks(variable._hooks, grads[0], backend, run)]
            old = variable._grad
            if run.create_graph:
                grad = run.wrap(grads[0], backend)
                variable._grad = grad if old is None else old + grad
            elif old is None:  # the buffer itself where nothing else holds it (as PyTorch's)
                owned = take(grads, 0)
                variable._grad = run.wrap(backend.raw.asarray(grads[0], copy=True)
                                          if owned is None else owned, backend)
            elif old.grad_fn is not None or old._requires_grad:
                variable._grad = run.wrap(old.data + grads[0], backend)
            else:
                old.data = old.data + grads[0]
        return None


def _run_hooks(hooks, grad, backend, run: Pass):
    wrapped = run.wrap(grad, backend)
    for hook in list(hooks.values()):
        replaced = hook(wrapped)
        if replaced is not None:
            if not isinstance(replaced, run.variables):
                if not (hasattr(replaced, "shape") and hasattr(replaced, "dtype")):
                    raise GradientError(
                        f"a hook returned a {type(replaced).__name__}: return None to keep the "
                        f"gradient, or a Variable or an array of backend {backend.name!r} of "
                        f"its shape {tuple(wrapped.shape)} and dtype {wrapped.dtype}")
                replaced = run.wrap(replaced, backend)
            check_same(replaced, wrapped, "a hook's returned gradient")
            wrapped = replaced
    return wrapped if run.create_graph else wrapped.data


def check_same(grad, like, what):
    """Refuse a gradient ``grad`` whose shape or dtype is not those of ``like``."""
    if grad.shape != like.shape or grad.dtype != like.dtype:
        raise GradientError(
            f"{what} has shape {tuple(grad.shape)} and dtype {grad.dtype}, but the value it "
            f"belongs to has shape {tuple(like.shape)} and dtype {like.dtype}")


_fit_plans: dict = {}  # {(gradient shape, input shape): (summed axes or None, reshape after)}


def _fit_plan(gshape, shape, op, index):
    """How to bring a gradient of shape ``gshape`` to ``shape``: the axes to sum over and
    whether to reshape after, or None to broadcast (cached: backward meets the same pairs of
    shapes over and over)."""
    key = (gshape, shape)
    plan = _fit_plans.get(key)
    if plan is None:
        if broadcasts(shape, gshape):
            extra = len(gshape) - len(shape)
            axes = tuple(range(extra)) + tuple(
                extra + i for i, n in enumerate(shape) if n == 1 and gshape[extra + i] != 1)
            kept = tuple(n for i, n in enumerate(gshape) if i not in axes)
            plan = (axes, kept != shape)
        elif broadcasts(gshape, shape):
            plan = (None, False)
        else:
            raise GradientError(
                f"internal error: the rule {op} returned a gradient of shape {gshape} for its "
                f"argument {index} of shape {shape}. Please report this bug.")
        if len(_fit_plans) > 4096:
            _fit_plans.clear()
        _fit_plans[key] = plan
    return plan


def fit(xp, grad, shape, dtype, op, index):
    """Fit a rule's gradient to its input: sum over broadcast axes, expand reduced ones (a
    read-only broadcast), cast (taking the real part for a real input). Anything else is a bug
    in the rule."""
    gshape = tuple(grad.shape)
    if gshape != shape:
        axes, reshape = _fit_plan(gshape, shape, op, index)
        if axes is None:
            grad = xp.broadcast_to(grad, shape)
        else:
            if axes:
                grad = sum_axes(xp, grad, axes)
            if reshape:
                grad = xp.reshape(grad, shape)
    if grad.dtype != dtype:
        if is_complex(grad) and not is_complex_dtype(dtype):
            grad = xp.real(grad)
        if grad.dtype != dtype:
            grad = xp.astype(grad, dtype)
    return grad


def backward(roots, retain_graph, create_graph, variables, capture=None, cut=False):
    """Propagate gradients from ``roots``, a list of ``(edge, gradient)`` pairs; ``variables``
    is the Variable class to wrap values in.

    With ``capture`` (a dict ``{edge: None}``), the gradients arriving at those edges are stored
    in it and returned, and no leaf's ``.grad`` is touched (``arraygrad.autograd.grad``). With
    ``cut`` too, backward stops there: the nodes of captured edges are neither run nor passed
    (``checkpoint`` backpropagates through its recomputed segment only).
    """
    run = Pass(retain_graph, create_graph, variables, capture)
    stops = {node for node, _ in capture} if cut else ()
    dependencies = _dependencies(roots, stops)
    buffers: dict = {}
    for (node, output_nr), grad in roots:
        _accumulate(buffers, node, output_nr, [grad], 0)
    ready = [node for node in buffers if dependencies[node] == 0]
    with _grad_mode.set_grad_enabled(bool(create_graph)):
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            if stops and node in stops:  # captured, and neither run nor passed
                if grads is not None:
                    _captured(run, node, grads)
                continue
            results = _run(node, grads, run)
            for i, child in enumerate(node.inputs):
                if child is None:
                    continue
                if results is not None and results[i] is not None:
                    _accumulate(buffers, child, node.input_nrs[i], results, i)
                dependencies[child] -= 1
                if dependencies[child] == 0:
                    ready.append(child)
    return capture


def _run(node, grads, run):
    """Run one node on its gradients ``grads`` (None where none reached it); return its inputs'
    gradients, or None where nothing is to be passed on."""
    if grads is None:  # reached, but no gradient came: its saved values go now, as if it had
        if not run.retain_graph and type(node) is Node:  # run (as PyTorch's engine frees
            node.saved = _FREED  # those of every node it reaches)
        return None
    if type(node) is Node and (node.pre_hooks or node.retained):
        grads = _node_hooks(node, grads, run)
    if run.capture is not None and _captured(run, node, grads):
        return None
    try:
        results = node.apply(grads, run)
    except Exception as error:
        if _watch.anomaly:
            _anomaly.annotate(error, node)
        raise
    if _watch.anomaly and results:
        _anomaly.check(node, [getattr(r, "_values", r) for r in results])
    return results


def _dependencies(roots, stops=()) -> dict:
    """For every node reachable from the roots (not passing ``stops``), how many of its
    consumers will send it a gradient (Kahn's in-degrees), found without recursion."""
    dependencies: dict = {}
    stack = []
    for (node, _), _ in roots:
        if node not in dependencies:
            dependencies[node] = 0
            stack.append(node)
    while stack:
        node = stack.pop()
        if stops and node in stops:
            continue
        for child in node.inputs:
            if child is not None:
                if child in dependencies:
                    dependencies[child] += 1
                else:
                    dependencies[child] = 1
                    stack.append(child)
    return dependencies


def _captured(run, node, grads) -> bool:
    """Store the gradients arriving at captured edges; True at a leaf (whose .grad stays)."""
    if node not in run.watched and node.__class__ is not AccumulateGrad:
        return False
    for output_nr, grad in enumerate(grads):
        if (node, output_nr) in run.capture:
            run.capture[(node, output_nr)] = grad
    return node.__class__ is AccumulateGrad


def _accumulate(buffers, node, output_nr, results, i):
    """Add ``results[i]`` into the buffer of ``node``'s output ``output_nr``: in place into
    whichever of the two nothing else holds (``take``), else into a new array."""
    buffer = buffers.get(node)
    if buffer is None:
        buffer = buffers[node] = [None] * node.n_outputs
    if buffer[output_nr] is None:
        buffer[output_nr] = results[i]
        return
    if _same_layout(buffer[output_nr], results[i]):
        owned = take(buffer, output_nr)
        if owned is not None:
            owned += results[i]
            buffer[output_nr] = owned
            return
        owned = take(results, i)
        if owned is not None:
            owned += buffer[output_nr]
            buffer[output_nr] = owned
            return
    total = buffer[output_nr] + results[i]
    if total.__class__ is not results[i].__class__:  # NumPy's 0-d arithmetic gives scalars
        total = backends.of_array(results[i]).coerce(total)
    buffer[output_nr] = total


def _same_layout(a, b) -> bool:
    """Whether ``a + b`` has the class, shape and dtype of each: then either may hold it."""
    return a.__class__ is b.__class__ and a.shape == b.shape and a.dtype == b.dtype


def _node_hooks(node, grads, run):
    """Run a non-leaf's hooks on its gradient, then store it in ``.grad`` if retained."""
    lock = getattr(node, "lock", None)
    if lock is None:
        with _creating:
            lock = getattr(node, "lock", None)
            if lock is None:
                lock = node.lock = _RLock()
    with lock:  # backward passes in other threads may share this node
        grads = list(grads)
        for output_nr, hooks in (node.pre_hooks or {}).items():
            if grads[output_nr] is not None and hooks:
                grads[output_nr] = _run_hooks(hooks, grads[output_nr], node.backend, run)
        for output_nr, ref in (node.retained or {}).items():
            variable = ref()
            if variable is not None and grads[output_nr] is not None:
                grad = grads[output_nr]
                if not run.create_graph:  # a copy: backward may take the buffer over
                    grad = node.backend.raw.asarray(grad, copy=True)
                grad = run.wrap(grad, node.backend)
                variable._grad = grad if variable._grad is None else variable._grad + grad
        return grads


def accumulator(variable):
    """The AccumulateGrad node of a leaf, shared by every op that uses it."""
    ref = variable._accumulator
    node = ref() if ref is not None else None
    if node is None:
        with _creating:  # one node (and lock) per leaf, even when threads ask at once
            ref = variable._accumulator
            node = ref() if ref is not None else None
            if node is None:
                node = AccumulateGrad(variable)
                variable._accumulator = weakref.ref(node)
    return node


_creating = threading.Lock()
"""Taken only to create a leaf's AccumulateGrad or a node's lock."""
