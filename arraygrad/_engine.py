"""The graph and the backward engine: nodes, accumulation, freeing, hooks.

Backward is iterative (Kahn's algorithm over the nodes reachable from the roots): a node runs once
every consumer has sent its gradient, its buffer is dropped as soon as it ran, and its saved
values are released unless ``retain_graph``. Shapes and dtypes of gradients are fitted and checked
here, once, rather than in every rule.

Gradients are arrays of the node's backend (Variables under ``create_graph``), and ``None`` is
the one symbolic zero: an input that gets no gradient. Which of them a VJP or an accumulation may
overwrite is decided by reference counts, in ``rules.reuse`` and in :func:`_accumulate`.

Threads: backward passes run in parallel, each with its own buffers; what they share is guarded
where it is written. A leaf's AccumulateGrad holds a lock (as PyTorch's holds a mutex) around its
hooks and the read-add-write of ``.grad``, and a node whose output retains its gradient or has
hooks takes one around those; nothing else is locked, so no op pays for it.

``speedups/`` compiles this module, unchanged, with Cython (``arraygrad._speedups`` loads it).
Compiled functions hold a reference to each argument and local as these frames do, so the
reference counts written below hold for both (a call into them from interpreted code holds one
more, the caller's stack slot, which can only make reuse rarer); the tests run on both.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from _thread import RLock as _RLock  # (what threading.RLock() returns, without its Python call)

from . import _anomaly, _grad_mode
from .errors import BackwardError, GradientError, NoRuleError
from .rules import broadcasts, device_of, is_complex, is_complex_dtype, sum_axes
from .rules import reuse as _reuse
from .rules.reuse import _scratch, large, private

_FREED = object()

anomaly = False
"""Anomaly detection (``arraygrad.detect_anomaly``): global, as PyTorch's, so that it also
covers backward passes run in other threads."""

_watching = False
"""Whether anything watches nodes being created: anomaly mode, or a checkpoint collecting its
nodes in some thread. The one flag Node.__init__ reads, so that recording pays nothing else."""


class _Collectors(threading.local):
    lists: tuple = ()  # per thread: the lists that new nodes are appended to (checkpoint)


_collectors = _Collectors()


_collecting = 0  # threads' collectors now open, over all threads
_watch_lock = threading.Lock()


def _watch(node):
    if anomaly:
        node.forward_trace = _anomaly.stack()
    for found in _collectors.lists:
        found.append(node)


def _update_watching():
    global _watching
    _watching = anomaly or _collecting > 0


def set_anomaly(enabled: bool):
    global anomaly
    with _watch_lock:
        anomaly = bool(enabled)
        _update_watching()


@contextlib.contextmanager
def new_nodes():
    """Collect in a list the nodes that this thread creates inside the block (checkpoint)."""
    global _collecting
    found: list = []
    with _watch_lock:
        _collecting += 1
        _update_watching()
    previous = _collectors.lists
    _collectors.lists = previous + (found,)
    try:
        yield found
    finally:
        _collectors.lists = previous
        with _watch_lock:
            _collecting -= 1
            _update_watching()


class Variable:
    """Stands for the Variable class, which the Variable layer (above this one) installs with
    :func:`use_variable_type` when it is imported. The engine makes Variables only for
    ``create_graph=True`` and hooks, through ``Variable._make(value, backend, node,
    output_nr[, requires_grad])``, and tells them apart from raw arrays with ``isinstance``."""


def use_variable_type(cls):
    """Install the class the engine wraps values in (called once, by the Variable layer)."""
    global Variable
    Variable = cls


class Node:
    """The backward function of one recorded operation (a Variable's ``grad_fn``)."""

    __slots__ = ("rule", "backend", "_edges", "_next", "_nr", "_next2", "_nr2", "meta", "saved",
                 "params", "n_outputs", "pre_hooks", "retained", "lock", "forward_trace",
                 "__weakref__")
    # lock: unset until _node_hooks needs it; forward_trace: set only in anomaly mode

    def __init__(self, rule, backend, edges, meta, saved, params, n_outputs=1):
        # _links.linked sets these slots itself, without this call: keep the two in step.
        self.rule = rule
        self.backend = backend
        self._edges = edges  # per input: (node, output_nr), or None when it needs no gradient
        self.meta = meta  # per input: (shape, dtype) of the value, to fit gradients to
        self.saved = saved
        self.params = params
        self.n_outputs = n_outputs
        self.pre_hooks = None  # {output_nr: [hook, ...]} from Variable.register_hook
        self.retained = None  # {output_nr: weakref to a Variable that called retain_grad()}
        if _watching:
            _watch(self)

    @property
    def edges(self):
        """Per input, ``(node, output_nr)``, or None where the input needs no gradient."""
        edges = self._edges
        if edges is not None:
            return edges
        first = self._next
        first = None if first is None else (first, self._nr)
        second = self._next2
        if second is False:
            return (first,)
        return (first, None if second is None else (second, self._nr2))

    def name(self) -> str:
        return self.rule.display

    def __repr__(self):
        return f"<{self.rule.display}>"

    @property
    def saved_tensors(self):
        """What a custom Function's ``forward`` saved (``ctx.save_for_backward``), as
        Variables: PyTorch's ``grad_fn.saved_tensors``. Other nodes have none."""
        saved_of = getattr(self.rule, "saved_tensors_of", None)
        if saved_of is None:
            raise AttributeError(f"{self.rule.display} has no saved_tensors: only the nodes of "
                                 "custom Functions (ag.Function, custom_vjp, custom_jvp) have")
        return saved_of(self)

    @property
    def next_functions(self):
        """``((node, output_nr), ...)`` for each input, ``(None, 0)`` where none, as in PyTorch."""
        return tuple(edge if edge is not None else (None, 0) for edge in self.edges)

    def apply(self, grads, create_graph, retain_graph, edges=None):
        """Run the rule on the output gradients; return the gradients of the inputs. (``edges``:
        :attr:`edges`, when the caller has them already.)"""
        saved = self.saved
        rule = self.rule
        if saved is _FREED or rule.vjps is None:
            raise self._cannot_run()
        backend = self.backend
        if create_graph:
            xp = backend.ns
            saved = self.saved_variables()
        else:  # loaded already where the forward ran (the property loads it)
            xp = backend._raw
            if xp is None:
                xp = backend.raw
        if edges is None:
            edges = self.edges
        if self.n_outputs == 1:
            g = grads[0]
        else:
            keeps_none = getattr(rule, "keeps_none", None)  # ctx.set_materialize_grads(False)
            if keeps_none is not None and keeps_none(self):
                g = tuple(grads)
            else:
                device = next(device_of(grad) for grad in grads if grad is not None)
                g = tuple(self._zeros(xp, i, device) if grad is None else grad
                          for i, grad in enumerate(grads))
        # May the rule overwrite g? When it is large, not recorded, and the engine's alone: its
        # references are the engine's buffer list, this name, private's argument, getrefcount's.
        # (rules.reuse.large(g), inlined: a tuple of several outputs' gradients has no nbytes)
        nbytes = getattr(g, "nbytes", None)
        big = not create_graph and type(nbytes) is int and nbytes >= _reuse.REUSE_MIN_BYTES
        owned = big and private(g, 4)
        spent = saved and not retain_graph
        if spent:  # released first: the last VJP may then overwrite what only it still holds
            self.saved = _FREED
        results = run_vjps(rule, xp, g, saved, self.params, edges, owned, spent and big)
        meta = self.meta
        plain = backend._plain_types
        for i in range(len(results)):  # (indexes, not enumerate: compiled, a C loop)
            grad = results[i]
            if grad is not None and edges[i] is not None:
                if type(grad) not in plain:  # numpy.float64 from 0-d arithmetic, say
                    grad = results[i] = backend.coerce(grad)
                shape, dtype = meta[i]
                if grad.shape != shape or grad.dtype != dtype:
                    results[i] = fit(xp, grad, shape, dtype, rule.display, i)
        return results

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

    def _zeros(self, xp, output_nr, device):
        shape, dtype = self.meta[len(self.edges) + output_nr]
        return xp.zeros(shape, dtype=dtype, device=device)

    def saved_variables(self):
        """The saved values as Variables connected to the graph, for ``create_graph=True``."""
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


def run_vjps(rule, xp, g, saved, params, edges, owned=False, spent=False):
    """Call a rule's VJPs for the inputs that have an edge; ``None`` for the others.

    ``owned``: ``g`` is the engine's own temporary, which the last VJP called may overwrite
    (``rules.times``) unless an earlier one returned it or a view of it.
    ``spent``: ``saved`` is no longer the node's, so each VJP may overwrite those of its saved
    arrays that nothing else refers to and no VJP called after it reads.
    """
    if rule.joint is not None:  # it reads g for several results: it overwrites g only in
        # the one rules.times call it makes last, where its rule says so
        options = _options(params, rule.keywords[0]) if params else _NO_OPTIONS
        if not (owned and rule.joint_times_g):
            return list(rule.joint(xp, g, *rule.pickers[0](saved), **options))
        _scratch.grad = g
        try:
            return list(rule.joint(xp, g, *rule.pickers[0](saved), **options))
        finally:
            _scratch.grad = None
    vjps = rule.vjps
    if owned or spent:
        return _run_reusing(rule, xp, g, saved, params, edges, owned, spent)
    results = []
    pickers = rule.pickers
    for i in range(len(edges)):  # (indexes, not zip: compiled, a C loop over the tuples)
        vjp = vjps[i]
        if edges[i] is None or vjp is None:
            results.append(None)
        elif params:
            results.append(vjp(xp, g, *pickers[i](saved), **_options(params, rule.keywords[i])))
        else:
            results.append(vjp(xp, g, *pickers[i](saved)))
    return results


def _run_reusing(rule, xp, g, saved, params, edges, owned, spent):
    """:func:`run_vjps` where VJPs may overwrite ``g`` or saved arrays. A VJP with a saved array
    of its own to overwrite runs before one without, which then gets ``g``: ``(-x) * (x + 1)``
    makes its two gradients in the memory of ``-x`` and of ``g``, with no new array."""
    vjps = rule.vjps
    active = [i for i in range(len(edges)) if edges[i] is not None and vjps[i] is not None]
    free = _unheld(saved) if spent else ()
    picked = [rule.pickers[i](saved) for i in active]
    if free and len(active) > 1:
        own = [any(_occurrences(free, v) and not _read_by(picked[:n] + picked[n + 1:], v)
                   for v in args) for n, args in enumerate(picked)]
        ranks = sorted(range(len(active)), key=lambda n: not own[n])  # stable: owners first
        active, picked = [active[n] for n in ranks], [picked[n] for n in ranks]
    results = [None] * len(edges)
    last = len(active) - 1
    for n in range(len(active)):  # (indexes, not enumerate: compiled, a C loop)
        i = active[n]
        args = picked[n]
        options = _options(params, rule.keywords[i]) if params else _NO_OPTIONS
        _scratch.grad = g if n == last and owned and not _returned(results, g) else None
        _scratch.saved = _its_own(args, free, results, picked[n + 1:]) if free else ()
        try:
            results[i] = vjps[i](xp, g, *args, **options)
        finally:
            _scratch.grad, _scratch.saved = None, ()
    return results


_NO_OPTIONS: dict = {}


def _unheld(saved) -> tuple:
    """The large arrays of a node's released ``saved`` that nothing else refers to: its VJPs
    may overwrite them."""
    found = ()
    for value in saved:
        # References: the occurrences in saved, this loop's name, private's argument and
        # getrefcount's.
        if large(value) and private(value, _occurrences(saved, value) + 3):
            found += (value,)
    return found


def _its_own(args, free, results, later) -> tuple:
    """The arrays of ``free`` among a VJP's ``args`` that it may overwrite: none that an earlier
    VJP returned (or a view of), nor any that a VJP called ``later`` reads."""
    return tuple(v for v in args if _occurrences(free, v) and not _returned(results, v)
                 and not _read_by(later, v))


def _read_by(arg_tuples, value) -> bool:
    """Whether any of the VJPs' argument tuples ``arg_tuples`` holds ``value``."""
    return any(_occurrences(args, value) for args in arg_tuples)


def _occurrences(values, value) -> int:
    return sum(1 for v in values if v is value)


def _returned(results, g) -> bool:
    """Whether an earlier VJP returned ``g`` (or a saved array) or a view of it: then it must
    stay intact."""
    for result in results:
        if result is not None and (result is g or getattr(result, "base", None) is g):
            return True
    return False


def _reconnect(value, edge, backend):
    if isinstance(value, Variable) or not hasattr(value, "shape"):
        return value
    if edge is None:
        return Variable._make(value, backend, None, 0, False)
    node, output_nr = edge
    if isinstance(node, AccumulateGrad):
        return node.variable
    return Variable._make(value, backend, node, output_nr)


def _options(params, keywords):
    """The node's ``params`` that a VJP taking the options ``keywords`` (a frozenset; None: any)
    reads: the dict itself where it reads them all (``sum``'s axis and keepdims), as the call
    unpacks it into a new one anyway."""
    if keywords is None or params.keys() <= keywords:
        return params
    return {k: v for k, v in params.items() if k in keywords}


class AccumulateGrad:
    """The node that adds an incoming gradient into a leaf Variable's ``.grad``."""

    __slots__ = ("variable", "lock", "__weakref__")
    n_outputs = 1
    edges = _edges = ()
    next_functions = ()

    def __init__(self, variable):
        self.variable = variable
        # Reentrant: a hook may itself call backward() into this leaf.
        self.lock = _RLock()

    def __repr__(self):
        return "<AccumulateGrad>"

    def name(self) -> str:
        return "AccumulateGrad"

    def apply(self, grads, create_graph, retain_graph, edges=None):
        variable = self.variable
        grad = grads[0]
        backend = variable._backend
        make = variable._make
        with self.lock:  # backward passes in other threads may reach this leaf too
            if variable._hooks:
                grad = _run_hooks(variable._hooks, grad, backend, create_graph)
            old = variable._grad
            if create_graph:
                grad = grad if isinstance(grad, Variable) else make(grad, backend, None, 0, False)
                variable._grad = grad if old is None else old + grad
            elif old is None:
                if not _unshared(grad):  # a view, or held elsewhere (another gradient, the seed)
                    grad = backend.raw.asarray(grad, copy=True)
                variable._grad = make(grad, backend, None, 0, False)
            elif old.grad_fn is not None or old._requires_grad:
                variable._grad = make(old.data + grad, backend, None, 0, False)
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
    wrapped = grad if isinstance(grad, Variable) else Variable._make(grad, backend, None, 0, False)
    for hook in list(hooks.values()):
        replaced = hook(wrapped)
        if replaced is not None:
            if not isinstance(replaced, Variable):
                if not (hasattr(replaced, "shape") and hasattr(replaced, "dtype")):
                    raise GradientError(
                        f"a hook returned a {type(replaced).__name__}: return None to keep the "
                        f"gradient, or a Variable or an array of backend {backend.name!r} of "
                        f"its shape {tuple(wrapped.shape)} and dtype {wrapped.dtype}")
                replaced = Variable._make(replaced, backend, None, 0, False)
            _check_same(replaced, wrapped, "a hook's returned gradient")
            wrapped = replaced
    return wrapped if create_graph else wrapped.data


def _check_same(grad, like, what):
    if grad.shape != like.shape or grad.dtype != like.dtype:
        raise GradientError(
            f"{what} has shape {tuple(grad.shape)} and dtype {grad.dtype}, but the value it "
            f"belongs to has shape {tuple(like.shape)} and dtype {like.dtype}")


_SUM, _EXPAND = "sum", "expand"
_fit_plans: dict = {}  # {(gradient shape, input shape): (how, summed axes, reshape after)}


def _fit_plan(gshape, shape, op, index):
    """How to bring a gradient of shape ``gshape`` to ``shape`` (cached: backward meets the
    same pairs of shapes over and over)."""
    key = (gshape, shape)
    plan = _fit_plans.get(key)
    if plan is None:
        if broadcasts(shape, gshape):
            extra = len(gshape) - len(shape)
            axes = tuple(range(extra)) + tuple(
                extra + i for i, n in enumerate(shape) if n == 1 and gshape[extra + i] != 1)
            kept = tuple(n for i, n in enumerate(gshape) if i not in axes)
            plan = (_SUM, axes, kept != shape)
        elif broadcasts(gshape, shape):
            plan = (_EXPAND, (), False)
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
    read-only broadcast, which ``rules.times`` recognises when it is of the number 1), cast
    (taking the real part for a real input). Anything else is a bug in the rule."""
    gshape = tuple(grad.shape)
    if gshape != shape:
        how, axes, reshape = _fit_plan(gshape, shape, op, index)
        if how is _SUM:
            if axes:
                grad = sum_axes(xp, grad, axes)
            if reshape:
                grad = xp.reshape(grad, shape)
        else:
            grad = xp.broadcast_to(grad, shape)
    return _cast(xp, grad, dtype)


def _cast(xp, grad, dtype):
    if grad.dtype != dtype:
        if is_complex(grad) and not is_complex_dtype(dtype):
            grad = xp.real(grad)
        if grad.dtype != dtype:
            grad = xp.astype(grad, dtype)
    return grad


def backward(roots, retain_graph, create_graph, capture=None, cut=False):
    """Propagate gradients from ``roots``, a list of ``(edge, gradient)`` pairs.

    With ``capture`` (a dict ``{edge: None}``), the gradients arriving at those edges are stored
    in it and returned, and no leaf's ``.grad`` is touched (``arraygrad.autograd.grad``). With
    ``cut`` too, backward stops there: the nodes of captured edges are neither run nor passed
    (``checkpoint`` backpropagates through its recomputed segment only).
    """
    stops = {node for node, _ in capture} if cut else ()
    dependencies = _dependencies(roots, stops)
    buffers: dict = {}
    for (node, output_nr), grad in roots:
        _accumulate(buffers, node, output_nr, grad)
    ready = [node for node in buffers if dependencies[node] == 0]
    state = _grad_mode.state
    previous, state.enabled = state.enabled, bool(create_graph)
    try:
        while ready:
            node = ready.pop()
            edges = node.edges
            results = grad = None  # no stray reference may keep a gradient from being reused
            grads = buffers.pop(node, None)
            if stops and node in stops:
                if grads is not None:
                    _captured(capture, node, grads)
                continue
            if grads is not None:  # else no gradient reached it: its inputs get none from it
                if type(node) is Node and (node.pre_hooks or node.retained):
                    grads = _node_hooks(node, grads, create_graph)
                if capture is not None and _captured(capture, node, grads):
                    continue
                try:
                    results = node.apply(grads, create_graph, retain_graph, edges)
                except Exception as error:
                    if anomaly:
                        _anomaly.annotate(error, node)
                    raise
                if anomaly and results:
                    _anomaly.check(node, [r.data if isinstance(r, Variable) else r
                                          for r in results])
                grads = None  # a VJP may return its g: the buffer must not count as a holder
            elif not retain_graph and type(node) is Node:
                # Reached, but no gradient came (a VJP gave none to that input): its saved
                # values go now, as if it had run, as PyTorch's engine frees those of every
                # node it reaches.
                node.saved = _FREED
            for i in range(len(edges)):  # (indexes, not enumerate: compiled, a C loop)
                edge = edges[i]
                if edge is None:
                    continue
                child = edge[0]
                if results is not None and results[i] is not None:
                    grad = results[i]
                    if child.n_outputs == 1 and child not in buffers:
                        buffers[child] = [grad]  # the common case of _accumulate
                    else:
                        _accumulate(buffers, child, edge[1], grad)
                remaining = dependencies[child] - 1
                dependencies[child] = remaining
                if remaining == 0:
                    ready.append(child)
    finally:
        state.enabled = previous
    return capture


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
        edges = node._edges
        # A linked node's inputs are in slots (a falsy one has no edge); else in edges.
        for child in ((node._next, node._next2) if edges is None else
                      [edge[0] for edge in edges if edge is not None]):
            if child:
                count = dependencies.get(child)
                if count is None:
                    dependencies[child] = 1
                    stack.append(child)
                else:
                    dependencies[child] = count + 1
    return dependencies


def _captured(capture, node, grads) -> bool:
    """Store the gradients arriving at captured edges; True at a leaf (whose .grad stays)."""
    for output_nr, grad in enumerate(grads):
        if (node, output_nr) in capture:
            capture[(node, output_nr)] = grad
    return node.__class__ is AccumulateGrad


def _accumulate(buffers, node, output_nr, grad):
    buffer = buffers.get(node)
    if buffer is None:
        buffer = buffers[node] = [None] * node.n_outputs
    old = buffer[output_nr]
    if old is None:
        buffer[output_nr] = grad
        return
    if old.__class__ is grad.__class__ and old.shape == grad.shape and old.dtype == grad.dtype:
        # Either one, if it is the engine's own temporary, takes the sum in place. References:
        # the buffer (old) or the caller's results list and name (grad), this name, the
        # arguments here and in private(), getrefcount's.
        if _unshared(old):
            old += grad
        elif _unshared(grad, 6):
            buffer[output_nr] = grad.__iadd__(old)
        else:
            buffer[output_nr] = old + grad
    else:
        buffer[output_nr] = old + grad


def _node_hooks(node, grads, create_graph):
    """Run a non-leaf's hooks on its gradient, then store it in ``.grad`` if retained."""
    lock = getattr(node, "lock", None)
    if lock is None:
        with _creating:
            lock = getattr(node, "lock", None)
            if lock is None:
                lock = node.lock = _RLock()
    with lock:  # backward passes in other threads may share this node
        return _run_node_hooks(node, list(grads), create_graph)


def _run_node_hooks(node, grads, create_graph):
    for output_nr, hooks in (node.pre_hooks or {}).items():
        if grads[output_nr] is not None and hooks:
            grads[output_nr] = _run_hooks(hooks, grads[output_nr], node.backend, create_graph)
    for output_nr, ref in (node.retained or {}).items():
        variable = ref()
        grad = grads[output_nr]
        if variable is None or grad is None:
            continue
        if not isinstance(grad, Variable):
            grad = Variable._make(node.backend.raw.asarray(grad, copy=True), node.backend, None, 0,
                                  False)
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
