"""``Variable``: a backend array plus the autograd metadata PyTorch users know.

A Variable is a thin shell: every operator delegates to the differentiable namespace of its
backend, which records the operation when a gradient is needed.
"""

from __future__ import annotations

import itertools
import operator
import sys
import warnings
import weakref

from . import _checks, _engine, _grad_mode, _torch_protocol, _views
from ._buffers import take
from ._plugins import get_backend, registry
from .errors import BackendError, BackwardError, InplaceError
from ._methods import NOT_ATTRIBUTES, ArrayMethods, ElementCount

_volatile_warned = False  # the constructor's volatile= warning, given once
_volatile_read_warned = False  # reading Variable.volatile, warned once


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = next(self._ids)

    def remove(self):
        self._hooks.pop(self.id, None)


def _rebuilt(backend, data, requires_grad, grad):
    """A leaf Variable from what ``Variable.__reduce__`` kept."""
    variable = Variable(get_backend(backend).coerce(data), requires_grad=requires_grad)
    if grad is not None:
        variable.grad = Variable(grad)
    return variable


def _holds_variable(values) -> bool:
    return any(isinstance(v, Variable) or isinstance(v, (list, tuple)) and _holds_variable(v)
               for v in values)


def _selects_a_view(key) -> bool:
    """Whether ``x[key]`` is basic indexing, a view in NumPy and PyTorch: integers, slices,
    ``None`` and ``...``, with no index array, list or boolean."""
    for part in key if key.__class__ is tuple else (key,):
        if part is None or part is Ellipsis or part.__class__ is int or part.__class__ is slice:
            continue
        if getattr(part, "ndim", None) == 0 and "int" in str(getattr(part, "dtype", "")):
            continue  # a NumPy integer, a 0-d integer array: an integer
        return False
    return True


def _data_of(base, view=None):
    """A detached view's link, both ways: the values of the other side (``view``'s when given)."""
    return (base if view is None else view)._values


def _describe_key(key) -> str:
    parts = key if key.__class__ is tuple else (key,)
    return ", ".join("..." if part is Ellipsis else "None" if part is None else
                     ":".join("" if n is None else str(n) for n in (
                         (part.start, part.stop) if part.step is None else
                         (part.start, part.stop, part.step)))
                     if part.__class__ is slice else str(part) for part in parts)


_new_object = object.__new__


class Variable(ArrayMethods):
    """A differentiable wrapper of an Array API array.

    Parameters
    ----------
    data : array
        An array of any registered backend (NumPy, array-api-strict, ...); kept as is, not copied.
        Python scalars and nested lists become arrays of the default backend, ``"numpy"``.
    requires_grad : bool
        Record operations on this Variable so that ``backward()`` fills its ``.grad``.
        Only floating-point and complex arrays can require grad.
    """

    __slots__ = ("_values", "grad_fn", "_backend", "_output_nr", "_requires_grad", "_grad",
                 "_hooks", "_retains_grad", "_accumulator", "__weakref__",
                 "_view", "_views")  # a view's link to its base, a base's views (_views.py)
    __array_priority__ = 1000
    __hash__ = object.__hash__

    def __init__(self, data, requires_grad: bool = False, volatile=None):
        global _volatile_warned
        if volatile is not None and not _volatile_warned:
            _volatile_warned = True
            warnings.warn("volatile has no effect: use `with arraygrad.no_grad():` instead",
                          UserWarning, stacklevel=2)
        if isinstance(data, Variable):
            data = data.data
        if requires_grad.__class__ is not bool:
            _checks.check_flag("Variable(): requires_grad", requires_grad)
        backend = registry.of(data)
        if backend is None:
            if isinstance(data, (list, tuple)) and _holds_variable(data):
                raise TypeError(
                    "Variable() got a list holding Variables, which would make an object array "
                    "and drop their graphs: use xp.stack([...]) (or xp.asarray([...])) on "
                    "the namespace, which records them")
            if isinstance(data, (bool, int, float, complex, list, tuple)):
                backend = registry.get("numpy")
                data = backend.raw.asarray(data)
            else:
                names = ", ".join(sorted(registry.backends)) or "none"
                raise BackendError(
                    f"Variable() got a {type(data).__module__}.{type(data).__qualname__}, which "
                    f"no registered backend owns (registered: {names}). Pass an array of one of "
                    "them, or register a plugin for its library with arraygrad.register_backend().")
        else:
            if backend.tracked is not None:
                data = backend.untracked(data, "Variable()")
            if data.__class__ not in backend._plain_types:
                data = backend.coerce(data)
        if backend.operators is None:
            backend.ns  # build the namespace, which Variable's operators use
        self._values = data
        self.grad_fn = None
        self._backend = backend
        self._output_nr = 0
        self._requires_grad = self._retains_grad = False
        self._grad = self._hooks = self._accumulator = self._view = self._views = None
        if requires_grad:  # (the setter's checks that a new leaf needs, without its call)
            if not backend.is_inexact(data.dtype):
                raise _checks.cannot_require_grad(data.dtype)
            self._requires_grad = True

    @classmethod
    def _make(cls, data, backend, grad_fn, output_nr, requires_grad=True):
        """Wrap a raw result without checks (the namespace's fast path)."""
        self = _new_object(cls)  # (object.__new__ looked up once: Variable has no __new__)
        self._values = data
        self.grad_fn = grad_fn
        self._backend = backend
        self._output_nr = output_nr
        self._requires_grad = requires_grad
        self._retains_grad = False
        self._grad = self._hooks = self._accumulator = self._view = self._views = None
        return self

    # ``data`` is a property over the slot ``_values`` so that assigning it is checked: what the
    # Variable cannot hold is refused here, not met later far from the assignment (an integer
    # array's gradients were silently truncated). The per-op paths (the namespace's recorders,
    # the array attributes below) read the slot itself; reading ``.data`` costs a C getter.
    def _set_data(self, value):
        value = _checks.assignable(self, value)
        if value.shape != self._values.shape or value.dtype != self._values.dtype:
            self._grad = None  # the gradient of another value: it must not be added to
        self._values = value
        self._view = self._views = None  # the new array is no view, and has none

    data = property(operator.attrgetter("_values"), _set_data, doc=(
        "The raw backend array. Assignable, as in PyTorch (another shape or floating dtype, "
        "outside the graph), with an array of the Variable's backend, floating-point or "
        "complex where it requires grad. Another shape or dtype clears ``.grad``, which "
        "belonged to the old value; views of the old value stay with it."))

    # ---------------------------------------------------------------- autograd attributes
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool):
        _checks.check_flag("requires_grad", flag)
        flag = bool(flag)
        if self.grad_fn is not None:
            if not flag:
                raise BackwardError(
                    "requires_grad can only be switched off on a leaf Variable; this one was "
                    f"made by {self.grad_fn.name()}. Use y = x.detach() instead.")
            return
        if flag and not self._backend.is_inexact(self.data.dtype):
            raise _checks.cannot_require_grad(self.data.dtype)
        self._requires_grad = flag

    @property
    def volatile(self) -> bool:
        """Always False, as in PyTorch since 0.4: ``volatile`` has no effect; recording is
        switched off with ``with arraygrad.no_grad():``. Warns once."""
        global _volatile_read_warned
        if not _volatile_read_warned:
            _volatile_read_warned = True
            warnings.warn("Variable.volatile is always False: volatile has no effect, use "
                          "`with arraygrad.no_grad():` instead", UserWarning, stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, flag):
        raise AttributeError(
            "Variable.volatile is read-only and has no effect: instead of setting it, compute "
            "inside `with arraygrad.no_grad():` (or use y = x.detach())")

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def grad(self):
        if self.grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(
                "The .grad attribute of a Variable that is not a leaf is being read. backward() "
                "does not fill it; call .retain_grad() on the Variable before backward() if you "
                "want its gradient.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Variable):
                value = Variable(value)
            if value._backend is not self._backend:
                raise BackendError(
                    f"cannot assign a .grad of backend {value._backend.name!r} to a Variable of "
                    f"backend {self._backend.name!r}")
            _engine.check_same(value, self, "the assigned .grad")
        self._grad = value

    @property
    def _edge(self):
        if self.grad_fn is not None:
            return (self.grad_fn, self._output_nr)
        if self._requires_grad:
            return (_engine.accumulator(self), 0)
        return None

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        """Compute the gradient of this Variable with respect to the leaves of its graph and add
        it to their ``.grad``.

        Parameters
        ----------
        gradient : array, Variable or nested list, optional
            The gradient of some scalar with respect to this Variable, of its shape and dtype.
            May be omitted only for a single-element Variable (then 1).
        retain_graph : bool, optional
            Keep the saved values so that backward can run through this graph again.
            Defaults to ``create_graph``.
        create_graph : bool
            Record the backward pass itself, so the gradients can be differentiated again.
        """
        edge = self._edge
        if edge is None:
            raise BackwardError(
                "backward() was called on a Variable that does not require grad and has no "
                "grad_fn: nothing in its computation requires grad. Create the inputs with "
                "requires_grad=True (and outside no_grad()).")
        if retain_graph is None:
            retain_graph = create_graph
        grad = self._seed(gradient, create_graph)
        _engine.backward([(edge, grad)], retain_graph, create_graph, Variable)


    _seed = _checks.seed  # the gradient given to backward() (autograd.grad's, too), checked

    def detach(self) -> "Variable":
        """Return a Variable sharing this one's data, cut off from the graph: an in-place
        change of either reaches the other's values (not its history), as in PyTorch."""
        detached = Variable._make(self._values, self._backend, None, 0, False)
        _views.link(self, detached, _data_of, _data_of, values_only=True)
        return detached

    def detach_(self) -> "Variable":
        """Cut this Variable off from the graph, making it a leaf that does not require grad."""
        self.grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        return self

    def retain_grad(self):
        """Ask backward() to fill ``.grad`` of this non-leaf Variable too."""
        if self.grad_fn is None:
            if not self._requires_grad:
                raise BackwardError("retain_grad() on a Variable that does not require grad")
            return  # leaves always keep their gradient
        if self._retains_grad:
            return
        node = self.grad_fn
        if node.retained is None:
            node.retained = {}
        node.retained[self._output_nr] = weakref.ref(self)
        self._retains_grad = True

    def _retain_moves(self, node, output_nr):
        """After an in-place change gave this Variable a new history: ``.grad`` is to be the
        gradient of its new value, as in PyTorch (hooks keep seeing the old one's)."""
        if node is not None and node.retained:
            ref = node.retained.get(output_nr)
            if ref is not None and ref() is self:
                del node.retained[output_nr]
        if self.grad_fn is not None:
            if self.grad_fn.retained is None:
                self.grad_fn.retained = {}
            self.grad_fn.retained[self._output_nr] = weakref.ref(self)

    def register_hook(self, hook) -> RemovableHandle:
        """Call ``hook(grad)`` whenever the gradient of this Variable is computed; a hook may
        return a replacement gradient. Returns a handle whose ``remove()`` unregisters it."""
        if not self._requires_grad:
            raise BackwardError("cannot register a hook on a Variable that does not require grad")
        if self.grad_fn is None:
            if self._hooks is None:
                self._hooks = {}
            hooks = self._hooks
        else:
            node = self.grad_fn
            if node.pre_hooks is None:
                node.pre_hooks = {}
            hooks = node.pre_hooks.setdefault(self._output_nr, {})
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def zero_(self) -> "Variable":
        """Fill with zeros in place (typically ``x.grad.zero_()``). On a leaf that requires
        grad, only under ``no_grad()``, as any in-place change of one (PyTorch's rule)."""
        self._inplace_check("zero_()")
        self._inplace_assign(self._backend.raw.zeros_like(self.data), "zero_()")
        return self


    # ------------------------------------------------------------------ array attributes
    @property
    def shape(self):
        return self._values.shape

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def device(self):
        backend = self._backend
        if backend.spec.device_of is not None:  # the plugin says, for arrays without .device
            return backend.device(self._values)
        device = getattr(self._values, "device", None)
        if device is None and "array_api_compat" in sys.modules:
            # dask arrays have no .device: array-api-compat's answer ("cpu"), which libraries
            # built on it expect; None (every function's default device) when it is not in use.
            try:
                device = sys.modules["array_api_compat"].device(self.data)
            except AttributeError:
                raise AttributeError(
                    f"a {type(self._values).__name__} of backend {backend.name!r} has no `device` "
                    "attribute (the standard's): give the backend's BackendSpec a device_of, "
                    "a function returning an array's device") from None
        return device

    @property
    def ndim(self) -> int:
        return self._values.ndim

    @property
    def size(self):
        """The number of elements, an ``int`` (the standard's attribute); None where the
        backend does not know a length yet (dask). Called as torch's ``y.size()``, it gives
        the shape on the torch backend, and elsewhere says to write ``y.shape``."""
        # From the shape: dask's unknown sizes are nan.
        size = 1
        for n in self._values.shape:
            if n is None or n != n:
                return None
            size *= n
        return ElementCount(size, self)

    @property
    def T(self):
        if self._values.ndim != 2:
            raise ValueError(f".T needs a 2-D Variable, this one has shape {tuple(self.shape)}; "
                             "use .mT or xp.permute_dims")
        return self._backend.ns.matrix_transpose(self)  # (of a matrix: permute_dims(x, (1, 0)))

    @property
    def mT(self):
        return self._backend.ns.matrix_transpose(self)

    @property
    def backend(self) -> str:
        """The name of the backend this Variable's data belongs to."""
        return self._backend.name

    def __array_namespace__(self, api_version=None):
        return self._backend.ns


    def to_device(self, device, /, *, stream=None):
        return self._backend.ns._to_device(self, device, stream)


    def __reduce__(self):
        # pickle, copy.deepcopy: a leaf's data, requires_grad and .grad, by backend name (the
        # backend itself holds modules). A graph cannot be copied, as in PyTorch.
        if self.grad_fn is not None:
            raise TypeError(
                f"cannot pickle or deep-copy a Variable computed by {self.grad_fn.name()} "
                "(not a leaf): its graph cannot be copied. Copy v.detach() (a leaf), or the "
                "leaves it was computed from.")
        grad = self._grad.data if self._grad is not None else None
        return _rebuilt, (self._backend.name, self.data, self._requires_grad, grad)

    def __dir__(self):
        # the names that only say what to write instead (Variable.unsqueeze) are not attributes
        return [name for name in object.__dir__(self) if name not in NOT_ATTRIBUTES]


    def __repr__(self):
        values = repr(self.data)
        if self.grad_fn is not None:
            extra = f", grad_fn=<{self.grad_fn.name()}>"
        elif self._requires_grad:
            extra = ", requires_grad=True"
        else:
            extra = ""
        return f"Variable({values}{extra})"

    # --------------------------------------------------------------------------- in place
    def _inplace_check(self, op):
        """Refuse an in-place change of a leaf that requires grad, directly or through views
        of it, while grad mode is on (PyTorch's rule; on the torch backend, torch's
        ``torch.no_grad()`` allows it too, as PyTorch code updates parameters under it)."""
        if not _grad_mode.state.enabled or _torch_protocol.grad_paused(self._backend):
            return
        target, where = self, op
        while True:
            if target.grad_fn is None and target._requires_grad:
                raise InplaceError(
                    f"a leaf Variable that requires grad is used in an in-place operation "
                    f"({where}). Update parameters inside `with arraygrad.no_grad():`, or compute "
                    "out of place (y = x + 1; with array-api-extra, at(x)[i].set(v, copy=True)).")
            link = getattr(target, "_view", None)
            if link is None or link.values_only or link.base() is None:
                return  # (a detached view's change reaches its base's values only)
            target, where = link.base(), (f"{op} on a view of it" if link.key is None else
                                          f"{op} on its view [{_describe_key(link.key)}]")

    def _inplace_assign(self, result, op):
        """Make ``self`` take ``result``'s value and history, then carry the change to its
        views and bases."""
        self._take(result, op)
        _views.written(self, op)

    def _take(self, result, op):
        """Take ``result``'s value and history (copy-on-write: the old array is never written,
        so whatever saved it for backward still holds the value it used)."""
        if isinstance(result, Variable):
            data, node, output_nr = result.data, result.grad_fn, result._output_nr
            requires_grad = result._requires_grad
        else:
            data, node, output_nr, requires_grad = result, None, 0, self._requires_grad
        if data.dtype != self.data.dtype:
            raise TypeError(f"in-place {op} would change the dtype of a {self.data.dtype} "
                            f"Variable to {data.dtype}; compute out of place instead")
        if tuple(data.shape) != tuple(self.data.shape):  # NumPy and torch refuse it too
            raise ValueError(f"in-place {op} would change the shape of a Variable of shape "
                             f"{tuple(self.data.shape)} to {tuple(data.shape)} (the other "
                             "operand broadcasts to a larger shape); compute out of place")
        # A non-leaf while recording takes the result's history (under no_grad it keeps its
        # own, as in PyTorch: only its value changes)
        takes_history = self.grad_fn is not None and _grad_mode.state.enabled
        if node is None and takes_history:
            if op != "zero_()":  # //=, %=...: no derivative, and the graph would be cut
                raise InplaceError(
                    f"in-place {op} has no derivative, so this Variable (computed by "
                    f"{self.grad_fn.name()}) would no longer pass gradients back. Compute it "
                    "out of place on a detached value (y = x.detach() // 2), or inside "
                    "`with arraygrad.no_grad():` if its graph should stay as it is.")
            requires_grad = False  # zeros: a constant, which passes back no gradient
        self._values = data  # (a result of this backend, of this dtype and shape: no check)
        if node is not None or takes_history:
            old_node, old_nr = self.grad_fn, self._output_nr
            self.grad_fn = node
            self._output_nr = output_nr
            self._requires_grad = requires_grad or (node is not None and self._requires_grad)
            if self._retains_grad:
                self._retain_moves(old_node, old_nr)

    def _inplace(self, name, other, op):
        self._inplace_check(op)
        with _torch_protocol.unrecorded(self._backend):  # torch.no_grad()'s parameter update
            result = self._backend.operators[name](self, other)
        self._inplace_assign(result, op)
        return self

    def __setitem__(self, key, value):
        link = getattr(value, "_view", None) if value.__class__ is Variable else None
        if link is not None and link.key is key and link.base() is self:
            return  # x[key] op= y: the view x[key] has already written itself back
        self._inplace_check("__setitem__")
        with _torch_protocol.unrecorded(self._backend):
            result = self._backend.ns._setitem(self, key, value, self._owns_data())
        self._inplace_assign(result, "__setitem__")

    def _owns_data(self) -> bool:
        """Whether nothing but this Variable holds its array (no view, no saved value, no
        user's name), so that a write into it is seen by no one else."""
        holder, owned = [self._values], None
        self._values = None
        try:
            owned = take(holder, 0, min_bytes=0)  # a copy costs as much as the write saves
        finally:
            self._values = holder[0] if owned is None else owned
        return owned is not None

    def __getitem__(self, key):
        result = self._backend.ns._getitem(self, key)
        if (key.__class__ is slice or key.__class__ is int or _selects_a_view(key)) \
                and result._values.ndim:
            _views.link(self, result, key=key)
        return result


