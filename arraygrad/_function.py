"""Custom differentiation rules written by users: :class:`Function` (PyTorch's
``torch.autograd.Function``), :func:`custom_vjp` and :func:`custom_jvp` (JAX's).

A call of a custom rule is recorded as an ordinary :class:`~arraygrad._engine.Node` whose rule
is a :class:`_FunctionRule`: its joint VJP calls the user's ``backward`` and checks what comes
back (count, backend, shape, dtype), and forward mode calls the user's ``jvp``
(``_forward`` asks a rule for ``node_jvp``). Since the node is a plain ``Node``, hooks,
``retain_grad``, ``retain_graph``, freeing and the transforms treat it like any other.
"""

from __future__ import annotations

import functools
import inspect
import threading
import weakref

from . import _pytree, autograd
from ._engine import _FREED, Node
from ._forward import push_tangents
from ._grad_mode import _GradMode, state as _grad_state
from ._plugins import registry
from ._variable import Variable
from .errors import BackendError, BackwardError, GradientError, NoRuleError
from .rules import RuleInterface, device_of


# --------------------------------------------------------------------------------- the context
class FunctionCtx:
    """The ``ctx`` a :class:`Function`'s ``forward``, ``backward`` and ``jvp`` share: what to
    save for backward, which inputs need a gradient, and any attribute the user sets."""

    def __init__(self, backend, needs_input_grad, what):
        self.needs_input_grad = needs_input_grad
        self._backend = backend
        self._what = what
        self._to_save = None  # what forward saved, until apply() snapshots it
        self._non_differentiable = ()
        self._node = None  # weakref to the node, for saved outputs under create_graph
        self._n_outputs = 1
        self._materialize_grads = True
        self._current = threading.local()  # the saved values as backward/jvp sees them

    def set_materialize_grads(self, value):
        """Whether ``backward`` receives zeros (True, the default) or None (False) for the
        outputs that got no gradient, as PyTorch's; with False, ``backward`` must handle None."""
        self._materialize_grads = bool(value)

    def save_for_backward(self, *values):
        """Keep Variables (inputs, outputs) or arrays for ``backward``; read them there as
        ``ctx.saved_values``. Saved inputs and outputs stay connected to the graph, so a
        backward written with differentiable ops can be differentiated again."""
        for k, value in enumerate(values):
            if not (value is None or isinstance(value, Variable) or hasattr(value, "shape")):
                raise TypeError(
                    f"{self._what}: save_for_backward() takes Variables, arrays or None, got a "
                    f"{type(value).__name__} as value {k}; keep other values as attributes of "
                    "ctx (ctx.scale = 2.0)")
        self._to_save = values

    def mark_non_differentiable(self, *outputs):
        """Mark outputs of ``forward`` (as returned by it) that carry no gradient: they do not
        require grad, and ``backward`` receives zeros for them."""
        self._non_differentiable = outputs

    @property
    def saved_values(self):
        """The values given to ``save_for_backward``, as Variables (in ``backward`` and
        ``jvp``)."""
        current = getattr(self._current, "values", None)
        if current is not None:
            return current
        if self._to_save is not None:  # still in forward
            return tuple(self._to_save)
        raise BackwardError(
            f"{self._what}: ctx.saved_values can be read in forward (after "
            "save_for_backward), backward and jvp only")

    saved_tensors = saved_values  # PyTorch's name


def once_differentiable(backward):
    """Mark a ``backward`` that cannot itself be differentiated (it uses raw arrays, say): it
    runs without recording, and under ``create_graph=True`` differentiating its result raises
    an error instead of giving a silently wrong higher derivative."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with _GradMode(False):
            return backward(ctx, *grads)

    wrapper._once_differentiable = True
    return wrapper


# ----------------------------------------------------------------------------------- Function
class _FunctionRule(RuleInterface):
    """Plays a :class:`~arraygrad.rules.Rule` for the engine: one joint VJP over all inputs
    that calls the user's ``backward``, and ``node_jvp`` for forward mode."""

    vjps = ()  # not None: there is a rule
    jvps = ()
    sources = (("saved", 0),)  # the node's saved value is the tuple of snapshots, kept as is
    keywords = (None,)  # the joint VJP gets the node's params (the ctx) as keywords
    pickers = (lambda saved: saved,)

    def __init__(self, cls):
        self.cls = cls
        self.name = cls.__name__
        self.display = f"{cls.__name__}Backward"

    def what(self, method="backward"):
        describe = self.cls._describe
        return describe(method) if describe is not None else f"{self.name}.{method}"

    def joint(self, xp, g, *saved, ctx):
        """The engine's VJP: call ``backward(ctx, *grads)`` and check what it returns."""
        cls = self.cls
        backend = ctx._backend
        create_graph = xp is not backend.raw
        grads = g if ctx._n_outputs > 1 else (g,)
        once = getattr(cls.backward, "_once_differentiable", False)
        connected = create_graph and not once
        grads = tuple(None if v is None else _as_variable(v, backend, connected)
                      for v in grads)
        node = ctx._node() if ctx._node is not None else None
        values = tuple(_materialize(s, backend, node, connected) for s in
                       (saved[0] if saved else ()))
        ctx._current.values = values
        try:
            results = cls.backward(ctx, *grads)
        finally:
            ctx._current.values = None
        results = _checked(self, "backward", results, node.meta if node else None,
                           len(ctx.needs_input_grad), ctx.needs_input_grad, backend,
                           create_graph, labels=getattr(ctx, "labels", None))
        if create_graph and once:
            sources = [v for v in (*_per_output(g, ctx._n_outputs),
                                   *(_materialize(s, backend, node, True)
                                     for s in (saved[0] if saved else ())))
                       if isinstance(v, Variable) and v.requires_grad]
            results = [r if r is None else _once_result(self, r, backend, sources)
                       for r in results]
        return results

    def keeps_none(self, node):
        """Whether the engine passes None, not zeros, for outputs without a gradient."""
        return not node.params["ctx"]._materialize_grads

    def saved_tensors_of(self, node):
        """The node's saved values as Variables (``grad_fn.saved_tensors``)."""
        if node.saved is _FREED:
            raise node._cannot_run()
        return tuple(_materialize(s, node.backend, node, True)
                     for s in (node.saved[0] if node.saved else ()))

    def saved_items(self, saved):
        """``(name, raw value)`` of each saved value, for ``to_dot(show_saved=True)``."""
        data = {"none": None, "output": -1, "variable": 1, "constant": 1}
        return [(f"saved_tensors[{k}]", None if data[s[0]] is None else s[data[s[0]]])
                for k, s in enumerate(saved[0] if saved else ())]

    def node_jvp(self, node, tangents):
        """Forward mode through the node: the user's ``jvp(ctx, *tangents)``."""
        cls = self.cls
        ctx = node.params["ctx"]
        if cls.jvp is Function.jvp:
            raise NoRuleError(
                f"{cls.__name__} has no forward-mode rule, so jvp() (forward mode) cannot go "
                f"through it: define a staticmethod jvp(ctx, *tangents) on {cls.__name__} "
                "returning the tangent of each output, or use reverse mode only (vjp, grad; "
                "ag.jacobian(ag.grad(f)) for a Hessian, as ag.hessian is forward over reverse)")
        if node.saved is _FREED:
            raise node._cannot_run()
        backend = node.backend
        raw = backend.raw
        filled = []
        device = next((device_of(t) for t in tangents if t is not None), None)
        for t, meta in zip(tangents, node.meta):
            if t is None and meta is not None:
                t = raw.zeros(meta[0], dtype=meta[1], device=device)
            filled.append(None if t is None else Variable._make(t, backend, None, 0, False))
        ctx._current.values = tuple(_materialize(s, backend, node, False)
                                    for s in (node.saved[0] if node.saved else ()))
        try:
            with _GradMode(False):
                out = cls.jvp(ctx, *filled)
        finally:
            ctx._current.values = None
        n = node.n_outputs
        metas = node.meta[len(node.edges):]
        results = _checked(self, "jvp", out, metas, n, (True,) * n, backend, False,
                           outputs=True, labels=getattr(ctx, "out_labels", None))
        results = [r if r is not None else raw.zeros(m[0], dtype=m[1], device=device)
                   for r, m in zip(results, metas)]
        return tuple(results) if n > 1 else results[0]


class _FunctionMeta(type):
    """Gives each Function subclass its own rule (the node's name, ``<MyOpBackward>``)."""

    def __init__(cls, name, bases, namespace):
        super().__init__(name, bases, namespace)
        cls._rule = _FunctionRule(cls)


class Function(metaclass=_FunctionMeta):
    """A differentiable operation with hand-written derivatives, in PyTorch's form.

    Subclass it with ``@staticmethod forward(ctx, *args)``, ``@staticmethod backward(ctx,
    *grads)`` (one gradient per input, None where there is none) and optionally
    ``@staticmethod jvp(ctx, *tangents)`` for forward mode; call it as ``MyOp.apply(*args)``.
    ``forward`` runs without recording; ``backward`` receives Variables, so one written with
    the differentiable namespace gives higher derivatives under ``create_graph=True``.
    """

    _record_forward = False  # custom_vjp records its fwd (residuals stay connected)
    _describe = None  # how messages name the user's code (default "MyOp.backward")

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("define forward(ctx, *args) as a staticmethod of your "
                                  "Function subclass")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("define backward(ctx, *grads) as a staticmethod of your "
                                  "Function subclass")

    @staticmethod
    def jvp(ctx, *tangents):
        raise NotImplementedError  # replaced by the subclass; see _FunctionRule.node_jvp

    def __call__(self, *args, **kwargs):
        name = type(self).__name__
        raise TypeError(f"{name} is run by its classmethod apply: write {name}.apply(...) (as "
                        f"in PyTorch), not {name}()(...)")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` on ``args`` and record the call when an input requires grad."""
        if kwargs:
            raise TypeError(f"{cls.__name__}.apply() takes positional arguments only (as "
                            f"PyTorch's), got keyword(s) {sorted(kwargs)}")
        backend = _backend_of(cls, args)
        record = _grad_state.enabled and any(
            isinstance(a, Variable) and a.requires_grad for a in args)
        needs = tuple(record and isinstance(a, Variable) and a.requires_grad for a in args)
        ctx = FunctionCtx(backend, needs, cls._rule.what("forward"))
        with _GradMode(record and cls._record_forward):
            out = cls.forward(ctx, *args)
        several = isinstance(out, tuple)
        outs = list(out) if several else [out]
        raws = [_raw_output(cls, backend, o, k) for k, o in enumerate(outs)]
        to_save, ctx._to_save = ctx._to_save, None
        if not record:
            results = [Variable._make(r, backend, None, 0, False) for r in raws]
            return tuple(results) if several else results[0]
        edges = tuple(a._edge if need else None for a, need in zip(args, needs))
        meta = [(tuple(a.shape), a.dtype) if isinstance(a, Variable) or _is_array(a) else None
                for a in args]
        meta.extend((tuple(r.shape), r.dtype) for r in raws)
        snapshots = tuple(_snapshot(cls, backend, v, outs) for v in (to_save or ()))
        ctx._n_outputs = len(raws)
        node = Node.of_edges(cls._rule, backend, edges, meta, (snapshots,) if snapshots else (),
                    {"ctx": ctx}, len(raws))
        ctx._node = weakref.ref(node)
        constant = {id(o) for o in ctx._non_differentiable}
        results = []
        for k, (o, r) in enumerate(zip(outs, raws)):
            if id(o) in constant or not backend.is_inexact(r.dtype):
                results.append(Variable._make(r, backend, None, 0, False))
            else:
                results.append(Variable._make(r, backend, node, k))
        return tuple(results) if several else results[0]


def _per_output(g, n_outputs):
    return g if n_outputs > 1 else (g,)


class _OnceRule(RuleInterface):
    """The rule of a node standing for a ``@once_differentiable`` backward's result: reaching
    it (in either mode) is an error naming the Function."""

    vjps = ()
    jvps = ()
    sources = ()
    keywords = (None,)
    pickers = (lambda saved: saved,)

    def __init__(self, owner):
        self.owner = owner
        self.name = owner.name
        self.display = f"{owner.name}BackwardBackward"

    def _error(self):
        return BackwardError(
            f"{self.owner.what()} is decorated with @once_differentiable, so its result cannot "
            "be differentiated again (create_graph=True, hessian, grad of grad): write backward "
            "with differentiable operations on the Variables it receives and drop "
            "@once_differentiable")

    def joint(self, *args, **kwargs):
        raise self._error()

    def node_jvp(self, node, tangents):
        raise self._error()


def _once_result(owner, value, backend, sources):
    """``value`` (raw) as a Variable that depends on ``sources`` through a node that refuses
    to be differentiated."""
    if not sources:
        return _as_variable(value, backend, False)
    edges = tuple(v._edge for v in sources)
    meta = [(tuple(v.shape), v.dtype) for v in sources] + [(tuple(value.shape), value.dtype)]
    node = Node.of_edges(_OnceRule(owner), backend, edges, meta, (), None, 1)
    data = value.data if isinstance(value, Variable) else value
    return Variable._make(data, backend, node, 0)


# --------------------------------------------------------------------------------- helpers
def _is_array(value) -> bool:
    return not isinstance(value, Variable) and registry.of(value) is not None


def _backend_of(cls, args):
    """The one backend of the Variables (else raw arrays) among ``args``."""
    backends = {}
    for a in args:
        backend = a._backend if isinstance(a, Variable) else (
            registry.of(a) if hasattr(a, "shape") else None)
        if backend is not None:
            backends.setdefault(backend.name, backend)
    if len(backends) > 1:
        raise BackendError(f"{cls._rule.what('apply')}: got arrays of backends "
                           f"{' and '.join(map(repr, backends))}; all arguments must belong to "
                           "one backend")
    if not backends:
        return registry.get("numpy")
    return next(iter(backends.values()))


def _raw_output(cls, backend, value, k):
    """An output of ``forward`` as a raw array of ``backend``."""
    what = cls._rule.what("forward")
    if isinstance(value, Variable):
        if value._backend is not backend:
            raise BackendError(f"{what} returned a Variable of backend "
                               f"{value._backend.name!r} as output {k}, but its inputs are of "
                               f"backend {backend.name!r}")
        return value.data
    owner = registry.of(value) if hasattr(value, "shape") else None
    if owner is None:
        raise TypeError(f"{what} returned a {type(value).__name__} as output {k}: return "
                        f"Variables or arrays of backend {backend.name!r} (a tuple of them for "
                        "several outputs)")
    if owner is not backend:
        raise BackendError(f"{what} returned an array of backend {owner.name!r} as output "
                           f"{k}, but its inputs are of backend {backend.name!r}")
    return backend.coerce(value)


def _snapshot(cls, backend, value, outs):
    """What to keep of a saved value: its data now (a later in-place change replaces a
    Variable's data, never this) and where it hangs in the graph."""
    if value is None:
        return ("none",)
    for k, o in enumerate(outs):
        if value is o:
            return ("output", k, value.data if isinstance(value, Variable) else value)
    if isinstance(value, Variable):
        if value._backend is not backend:
            raise BackendError(f"{cls._rule.what('forward')}: save_for_backward() got a "
                               f"Variable of backend {value._backend.name!r}, but the inputs "
                               f"are of backend {backend.name!r}")
        leaf = value if value.grad_fn is None and value.requires_grad else None
        return ("variable", value.data, value.grad_fn, value._output_nr, leaf)
    return ("constant", value)


def _materialize(snapshot, backend, node, connected):
    """A saved value as a Variable: connected to the graph for ``create_graph=True``, a
    constant otherwise."""
    kind = snapshot[0]
    if kind == "none":
        return None
    if kind == "output":
        _, k, data = snapshot
        if connected and node is not None:
            return Variable._make(data, backend, node, k)
        return Variable._make(data, backend, None, 0, False)
    if kind == "variable":
        _, data, grad_fn, output_nr, leaf = snapshot
        if connected:
            if grad_fn is not None:
                return Variable._make(data, backend, grad_fn, output_nr)
            if leaf is not None:
                return leaf
        return Variable._make(data, backend, None, 0, False)
    return Variable._make(snapshot[1], backend, None, 0, False)


def _as_variable(value, backend, connected):
    if isinstance(value, Variable):
        return value if connected else Variable._make(value.data, backend, None, 0, False)
    return Variable._make(value, backend, None, 0, False)


def _argument_names(cls):
    function = cls._signature_of() if hasattr(cls, "_signature_of") else cls.forward
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return ()
    if not hasattr(cls, "_signature_of"):
        parameters = parameters[1:]  # ctx
    return tuple(p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD))


def _label(rule, i, outputs, labels=None):
    if labels is not None:
        return labels[i]
    if outputs:
        return f"output {i}"
    names = _argument_names(rule.cls)
    return f"argument {i} ({names[i]})" if i < len(names) else f"argument {i}"


def _checked(rule, method, results, metas, count, wanted, backend, create_graph,
             outputs=False, labels=None):
    """The user's gradients (or tangents) as a list of ``count``, each checked against the
    value it belongs to; entries nobody wants are dropped (None). ``labels`` names each entry
    where the default (the argument's position and name, or the output's) does not."""
    what = rule.what(method)
    kind = "tangent" if outputs else "gradient"
    if not isinstance(results, (tuple, list)):
        results = (results,)
    if len(results) != count:
        per = "output" if outputs else "input of forward"
        raise GradientError(
            f"{what} returned {len(results)} {kind}(s), but {rule.name} has {count} "
            f"{'outputs' if outputs else 'inputs'}: return one {kind} per {per} (None for "
            f"{'an output without one' if outputs else 'an input that needs none'})")
    checked = []
    for i, (value, want) in enumerate(zip(results, wanted)):
        if value is None or not want:
            checked.append(None)  # a gradient for an input that needs none: ignored (as torch)
            continue
        label = _label(rule, i, outputs, labels)
        if isinstance(value, Variable):
            owner = value._backend
        else:
            owner = registry.of(value) if hasattr(value, "shape") else None
            if owner is None:
                raise GradientError(
                    f"{what} returned a {type(value).__name__} as the {kind} of {label}: return "
                    f"a Variable or an array of backend {backend.name!r}, or None")
        if owner is not backend:
            raise BackendError(
                f"{what} returned a {kind} of backend {owner.name!r} for {label}, which is of "
                f"backend {backend.name!r}")
        shape, dtype = metas[i]
        if tuple(value.shape) != shape:
            raise GradientError(
                f"{what} returned a {kind} of shape {tuple(value.shape)} for {label} of shape "
                f"{shape}: they must be equal")
        if value.dtype != dtype:
            raise GradientError(
                f"{what} returned a {kind} of dtype {value.dtype} for {label} of dtype {dtype}: "
                "they must be equal (cast it with xp.astype)")
        if create_graph:
            checked.append(value if isinstance(value, Variable) else
                           Variable._make(backend.coerce(value), backend, None, 0, False))
        else:
            checked.append(value.data if isinstance(value, Variable) else backend.coerce(value))
    return checked


# --------------------------------------------------------------- differentiating a sub-graph
class _Inner(Function):
    """``compute(*args)`` recorded on fresh leaves, so that its backward differentiates that
    inner graph only and never walks the caller's graph; under ``create_graph=True`` its
    backward is again an ``_Inner`` (so any order works), and forward mode pushes tangents
    through the inner graph."""

    @staticmethod
    def forward(ctx, compute, *args):
        leaves = [Variable._make(a.data, a._backend, None, 0, True) if need else a
                  for a, need in zip(args, ctx.needs_input_grad[1:])]
        with _GradMode(True):
            out = compute(*leaves)
        several = isinstance(out, tuple)
        ctx.compute, ctx.leaves, ctx.several = compute, leaves, several
        ctx.outs = list(out) if several else [out]
        ctx.save_for_backward(*[a if isinstance(a, Variable) else None for a in args])
        return tuple(o.data for o in ctx.outs) if several else out.data

    @staticmethod
    def backward(ctx, *grads):
        needs = ctx.needs_input_grad[1:]
        if not _grad_state.enabled:  # an ordinary backward: differentiate the inner graph
            wrt = [leaf for leaf, need in zip(ctx.leaves, needs) if need]
            pairs = [(o, g) for o, g in zip(ctx.outs, grads) if o.requires_grad]
            found = iter(autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs],
                                       retain_graph=True, allow_unused=True)
                         if pairs and wrt else [None] * len(wrt))
            return (None, *(next(found) if need else None for need in needs))
        saved = ctx.saved_values
        xs = [s if s is not None else a for s, a in zip(saved, ctx.leaves)]
        compute, several, count = ctx.compute, ctx.several, len(xs)

        def gradients(*values):
            inputs, gs = values[:count], values[count:]
            out = compute(*inputs)
            outs = list(out) if several else [out]
            wrt = [x for x, need in zip(inputs, needs) if need]
            pairs = [(o, g) for o, g in zip(outs, gs) if o.requires_grad]
            found = autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs],
                                  create_graph=True, allow_unused=True) if pairs else (
                [None] * len(wrt))
            return tuple(f if f is not None else x.__array_namespace__().zeros_like(x)
                         for f, x in zip(found, wrt))

        result = _Inner.apply(gradients, *xs, *grads)
        result = iter(result if isinstance(result, tuple) else (result,))
        return (None, *(next(result) if need else None for need in needs))

    @staticmethod
    def jvp(ctx, _, *tangents):
        leaves = {leaf: t.data for leaf, t, need in
                  zip(ctx.leaves, tangents, ctx.needs_input_grad[1:]) if need}
        pushed = push_tangents(ctx.outs, leaves)
        pushed = [p if p is not None else o.__array_namespace__().zeros_like(o).data
                  for p, o in zip(pushed, ctx.outs)]
        return tuple(pushed) if ctx.several else pushed[0]


_Inner._describe = staticmethod(lambda method: f"(internal) differentiated sub-graph {method}")


# ------------------------------------------------------------------------------- JAX's forms
def _name_of(fun):
    return getattr(fun, "__name__", type(fun).__name__)


def _flatten(tree, leaves):
    """Replace each array or Variable of a residual tree (nested tuples, lists, dicts) by its
    position in ``leaves``; returns a function rebuilding the tree from new leaves."""
    if isinstance(tree, Variable) or hasattr(tree, "shape") and registry.of(tree) is not None:
        leaves.append(tree)
        k = len(leaves) - 1
        return lambda values: values[k]
    if isinstance(tree, (tuple, list)):
        parts = [_flatten(t, leaves) for t in tree]
        kind = type(tree)
        return lambda values: kind(p(values) for p in parts)
    if isinstance(tree, dict):
        parts = {key: _flatten(t, leaves) for key, t in tree.items()}
        return lambda values: {key: p(values) for key, p in parts.items()}
    return lambda values: tree


def _recording(leaves) -> bool:
    return _grad_state.enabled and any(isinstance(a, Variable) and a.requires_grad
                                       for a in leaves)


class _Active(threading.local):
    """The custom functions whose fwd or rule is running in this thread: called again there
    (JAX's ``fwd`` calls ``f`` itself), they run the plain function."""

    def __init__(self):
        self.functions = set()


_active = _Active()


class _Call:
    """One recorded call of a custom function, its Function's first argument: the structure of
    the arguments (pytrees, as in JAX: the Function gets their leaves) and, once ``forward``
    has run, of the output."""

    __slots__ = ("structure", "out_structure", "out_shapes")

    def __init__(self, structure):
        self.structure = structure
        self.out_structure = self.out_shapes = None


def _call(custom, args):
    leaves, structure = _pytree.flatten(args)
    if not _recording(leaves) or id(custom) in _active.functions:
        return custom.fun(*args)
    call = _Call(structure)
    _active.functions.add(id(custom))
    try:
        results = custom._op.apply(call, *leaves)
    finally:
        _active.functions.discard(id(custom))
    return _pytree.unflatten(call.out_structure, results)


def _run_forward(ctx, call, leaves, names):
    """The arguments of one call rebuilt from their leaves; sets what backward and jvp need to
    name each leaf in messages."""
    ctx.call = call
    ctx.labels = [None]  # the _Call
    for k, child in enumerate(call.structure.children):
        name = f"argument {k} ({names[k]})" if k < len(names) else f"argument {k}"
        ctx.labels.extend(_pytree.paths(child, name))
    return _pytree.unflatten(call.structure, leaves)


def _output_leaves(ctx, call, out):
    """The leaves of ``f``'s output, which the Function returns; keeps its structure."""
    outs, call.out_structure = _pytree.flatten(out)
    call.out_shapes = [tuple(o.shape) if hasattr(o, "shape") else None for o in outs]
    paths = _pytree.paths(call.out_structure, "output")
    ctx.out_labels = ["output 0"] if call.out_structure is _pytree.LEAF else paths
    return tuple(outs)


def _per_argument(what, name, call, result, kind="gradient"):
    """``bwd``'s result, one tree per argument (``None`` for a whole argument or subtree), as
    one entry per leaf of the arguments."""
    count = len(call.structure.children)
    if not isinstance(result, (tuple, list)):
        raise TypeError(f"{what} must return a tuple with one {kind} per argument of {name} "
                        f"(None for one without), got a {type(result).__name__}")
    if len(result) != count:
        raise GradientError(
            f"{what} returned {len(result)} {kind}(s), but {name} has {count} inputs: return "
            f"a tuple with one {kind} per argument of {name}, each of that argument's "
            "structure (None for an argument that needs none)")
    found = []
    for k, (child, tree) in enumerate(zip(call.structure.children, result)):
        try:
            found.extend(_pytree.match(child, tree, f"its {kind}[{k}]", f"argument {k}",
                                       none_is_zero=True))
        except ValueError as error:
            raise GradientError(f"{what} returned a {kind} of the wrong structure: "
                                f"{error}") from None
    return found


def _closed_over(roots, arguments):
    """A leaf Variable requiring grad that ``roots`` (what a custom_vjp's fwd returned) depend
    on other than through ``arguments``, or None: the gradient a closure would lose."""
    stop = {(id(edge[0]), edge[1]) for edge in (
        a._edge for a in arguments if isinstance(a, Variable)) if edge is not None}
    stack = [v._edge for v in roots if isinstance(v, Variable) and v._edge is not None]
    seen = set()
    while stack:
        node, output_nr = stack.pop()
        if (id(node), output_nr) in stop or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)  # an AccumulateGrad: a leaf
        if variable is not None:
            return variable
        stack.extend(edge for edge in node.edges if edge is not None)
    return None


def _refuse_closure(roots, arguments, what, name, rule):
    """Raise if ``roots`` (what ``what``, a custom_vjp's fwd or a custom_jvp's function or jvp
    rule, returned) depend on a Variable requiring grad other than through ``arguments``:
    ``rule`` (its bwd, its jvp rule) gives derivatives for the arguments only, so the gradient
    of that closed-over Variable would be silently lost."""
    closed = _closed_over(roots, arguments)
    if closed is not None:
        raise BackwardError(
            f"{what} closes over a Variable that requires grad (shape {tuple(closed.shape)}, "
            f"dtype {closed.dtype}) and is not one of its arguments: {rule} gives derivatives "
            f"for the arguments only, so its gradient would be silently lost (JAX raises here "
            f"too). Pass it to {name} as an argument (and give its derivative in {rule}), or "
            "use .detach() on it if it is a constant")


class _Custom:
    """What ``custom_vjp`` and ``custom_jvp`` share: the wrapped function, and a call that runs
    the rule's Function once its ``def...`` has been given."""

    _missing = ""  # the error when called before the rule is defined

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self._op = None
        self._signature = False  # not looked up yet

    def __call__(self, *args, **kwargs):
        if self._op is None:
            raise TypeError(self._missing.format(name=_name_of(self.fun)))
        return _call(self, self._positional(args, kwargs))

    def _positional(self, args, kwargs):
        """The arguments by position, keywords bound by ``fun``'s signature and defaults
        filled in, as JAX's ``resolve_kwargs``: the rules get one argument per parameter."""
        if self._signature is False:
            try:
                self._signature = None if isinstance(self.fun, functools.partial) else (
                    inspect.signature(self.fun))
            except (TypeError, ValueError):
                self._signature = None
        what = f"{type(self).__name__} function {_name_of(self.fun)}"
        if self._signature is None:
            if kwargs:
                raise TypeError(f"{what} was called with keyword argument(s) {sorted(kwargs)}, "
                                "but its signature cannot be read to bind them to positions: "
                                "pass them by position")
            return args
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{what}: {error}") from None
        bound.apply_defaults()
        keywords = sorted(k for k in bound.kwargs if k in kwargs)
        if keywords:
            raise TypeError(f"{what}: keyword argument(s) {keywords} cannot be bound to "
                            "positions (keyword-only or **kwargs parameters): the rules take "
                            "arguments by position, so make them positional parameters")
        return bound.args


class custom_vjp(_Custom):
    """JAX's ``custom_vjp``: decorate ``f``, then ``f.defvjp(fwd, bwd)`` with ``fwd(*args) ->
    (out, residuals)`` and ``bwd(residuals, g) -> (one gradient per argument)``.

    Arguments and the output may be pytrees (tuples, lists, dicts of arrays), as in JAX: ``g``
    has the output's structure, and ``bwd`` returns one tree per argument, of its structure
    (``None`` for a whole argument, subtree or leaf without a gradient). ``fwd`` runs with
    recording on, so residuals computed from the inputs stay connected and a ``bwd`` written
    with differentiable ops gives correct higher derivatives. Forward mode is refused, as in
    JAX.
    """

    _missing = ("no VJP defined for custom_vjp function {name}: call its defvjp(fwd, bwd) "
                "first")

    def __init__(self, fun):
        super().__init__(fun)
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd):
        """Define the function's VJP by ``fwd`` and ``bwd`` (see the class)."""
        if not callable(fwd) or not callable(bwd):
            raise TypeError(f"custom_vjp function {_name_of(self.fun)}: defvjp(fwd, bwd) "
                            "takes two functions")
        self.fwd, self.bwd = fwd, bwd
        self._op = _vjp_function(self)


def _vjp_function(custom):
    name = _name_of(custom.fun)
    fwd, bwd, fun = custom.fwd, custom.bwd, custom.fun
    names = []

    def forward(ctx, call, *leaves):
        names[:] = names or _argument_names(op)
        result = fwd(*_run_forward(ctx, call, leaves, names))
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise TypeError(f"custom_vjp function {name}: fwd must return a pair (output, "
                            f"residuals), got a {type(result).__name__}")
        out, residuals = result
        kept = []
        ctx.rebuild = _flatten(residuals, kept)
        outs = _output_leaves(ctx, call, out)
        _refuse_closure((*outs, *kept), leaves, f"custom_vjp function {name}", name, "bwd")
        ctx.save_for_backward(*kept)
        return outs

    def backward(ctx, *grads):
        call = ctx.call
        residuals = ctx.rebuild(ctx.saved_values)
        result = bwd(residuals, _pytree.unflatten(call.out_structure, grads))
        return (None, *_per_argument(f"custom_vjp function {name}'s bwd", name, call, result))

    def jvp(ctx, *tangents):
        raise NoRuleError(f"custom_vjp function {name} has no forward-mode rule, so jvp() "
                          "(forward mode) cannot go through it, as in JAX: use reverse mode "
                          "only (grad, vjp; ag.jacobian(ag.grad(f)) for a Hessian, as "
                          "ag.hessian is forward over reverse), or define it with custom_jvp")

    op = type(name, (Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(backward),
        "jvp": staticmethod(jvp), "_record_forward": True,
        "_describe": staticmethod(lambda method: f"custom_vjp function {name}'s "
                                                 f"{'bwd' if method == 'backward' else method}"),
        "_signature_of": staticmethod(lambda: fun)})
    return op


class custom_jvp(_Custom):
    """JAX's ``custom_jvp``: decorate ``f``, then ``f.defjvp(rule)`` with ``rule(primals,
    tangents) -> (primal_out, tangent_out)``, ``tangent_out`` linear in ``tangents``.

    Arguments and the output may be pytrees, as in JAX: ``primals`` and ``tangents`` are tuples
    with one tree per argument, and ``tangent_out`` has the output's structure. Forward mode
    calls the rule. Reverse mode transposes it, as JAX does: the gradient is
    ``d<g, tangent_out>/d tangents``, so the rule's numerics (a stable formula) hold in both
    modes; the rule must therefore use differentiable operations on the tangents it receives.
    """

    _missing = "no JVP defined for custom_jvp function {name}: call its defjvp(rule) first"

    def __init__(self, fun):
        super().__init__(fun)
        self.rule = None

    def defjvp(self, rule):
        """Define the function's JVP by ``rule``; returns it, so it also works as a decorator
        (``@f.defjvp``)."""
        if not callable(rule):
            raise TypeError(f"custom_jvp function {_name_of(self.fun)}: defjvp(rule) takes a "
                            "function")
        self.rule = rule
        self._op = _jvp_function(self)
        return rule


def _jvp_function(custom):
    name = _name_of(custom.fun)
    fun, rule = custom.fun, custom.rule
    names = []

    def forward(ctx, call, *leaves):
        names[:] = names or _argument_names(op)
        args = _run_forward(ctx, call, leaves, names)
        ctx.arrays = [isinstance(a, Variable) or _is_array(a) for a in leaves]
        ctx.static = [None if array else a for a, array in zip(leaves, ctx.arrays)]
        ctx.save_for_backward(*[a for a, array in zip(leaves, ctx.arrays) if array])
        outs = _output_leaves(ctx, call, fun(*args))  # recorded, to see what it closes over
        _refuse_closure(outs, leaves, f"custom_jvp function {name}", name, "the jvp rule")
        return outs

    def primals(ctx):
        saved = iter(ctx.saved_values)
        return [next(saved) if array else s for array, s in zip(ctx.arrays, ctx.static)]

    def tangent_out(call, xs, ts):
        """The rule's tangent out at the leaves ``xs`` along ``ts``, one per output leaf."""
        result = rule(_pytree.unflatten(call.structure, xs),
                      _pytree.unflatten(call.structure, ts))
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise TypeError(f"custom_jvp function {name}: the jvp rule must return a pair "
                            f"(primal_out, tangent_out), got a {type(result).__name__}")
        try:
            found = _pytree.match(call.out_structure, result[1], "its tangent_out",
                                  f"{name}'s output", none_is_zero=True)
        except ValueError as error:
            raise GradientError(f"custom_jvp function {name}'s jvp rule returned a tangent of "
                                f"the wrong structure: {error}") from None
        paths = _pytree.paths(call.out_structure, "output")
        for t, shape, path in zip(found, call.out_shapes, paths):
            if t is not None and shape is not None and hasattr(t, "shape") and tuple(
                    t.shape) != shape:
                raise GradientError(
                    f"custom_jvp function {name}'s jvp rule returned a tangent of shape "
                    f"{tuple(t.shape)} for {path} of shape {shape}: they must be equal")
        return found

    def jvp(ctx, _, *tangents):
        return tuple(tangent_out(ctx.call, primals(ctx), tangents))

    def transposed(call, count, needs):
        """``(*xs, *gs) -> gradients``: the rule's tangent map at ``xs``, transposed."""
        def gradients(*values):
            xs, gs = values[:count], values[count:]
            ts = [Variable._make(x.__array_namespace__().zeros_like(x).data, x._backend,
                                 None, 0, need) if isinstance(x, Variable) else None
                  for x, need in zip(xs, needs)]
            with _GradMode(True):
                outs = tangent_out(call, xs, ts)
            _refuse_closure(outs, (*xs, *ts), f"custom_jvp function {name}'s jvp rule", name,
                            "the jvp rule")
            wrt = [t for t, need in zip(ts, needs) if need]
            pairs = [(o, g) for o, g in zip(outs, gs)
                     if isinstance(o, Variable) and o.requires_grad]
            found = autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs],
                                  create_graph=_grad_state.enabled, allow_unused=True) \
                if pairs else [None] * len(wrt)
            return tuple(f if f is not None else t.__array_namespace__().zeros_like(t)
                         for f, t in zip(found, wrt))
        return gradients

    def backward(ctx, *grads):
        xs = primals(ctx)
        needs = ctx.needs_input_grad[1:]
        gradients = transposed(ctx.call, len(xs), needs)
        if _grad_state.enabled:  # create_graph: record the transposition, differentiably
            found = _Inner.apply(gradients, *xs, *grads)
            found = found if isinstance(found, tuple) else (found,)
        else:
            found = gradients(*xs, *grads)
        found = iter(found)
        return (None, *(next(found) if need else None for need in needs))

    op = type(name, (Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(backward),
        "jvp": staticmethod(jvp), "_record_forward": True,
        "_describe": staticmethod(lambda method: f"custom_jvp function {name}'s " + (
            "transposed jvp rule" if method == "backward" else f"{method} rule")),
        "_signature_of": staticmethod(lambda: fun)})
    return op
