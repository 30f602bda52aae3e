"""``Variable``: a backend array plus the autograd metadata PyTorch users know.

A Variable is a thin shell: every operator delegates to the differentiable namespace of its
backend, which records the operation when a gradient is needed.
"""

from __future__ import annotations

import itertools
import operator
import os
import sys
import warnings
import weakref

from . import _engine, _grad_mode, _numpy_protocol, _views
from ._buffers import take
from ._plugins import get_backend, registry
from .errors import BackendError, BackwardError, GradientError, InplaceError
from ._standard import DTYPES, FUNCTIONS
from .rules import is_complex_dtype

_volatile_warned = False  # the constructor's volatile= warning, given once
_volatile_read_warned = False  # reading Variable.volatile, warned once


def _assignable(variable, value):
    """``value`` as ``variable.data``, or an error naming what it is and what to assign."""
    backend = variable._backend
    if isinstance(value, Variable):
        value = value._values  # its array, as Variable(w) takes it
    owner = registry.of(value)
    if owner is not backend:
        kind = type(value)
        name = kind.__qualname__ if kind.__module__ == "builtins" else (
            f"{kind.__module__}.{kind.__qualname__}")
        if owner is None:
            got = f"a {name}"
            what = (f"assign an array of that backend (xp.asarray(value), with xp = "
                    f"arraygrad.namespace({backend.name!r}))")
        else:
            got = f"an array of backend {owner.name!r} ({name})"
            what = (f"a Variable holds arrays of one backend: make a new Variable of it "
                    f"(arraygrad.Variable(array)), or move this one first (v = "
                    f"v.to({owner.name!r}))")
        raise BackendError(f"Variable.data must be an array of backend {backend.name!r} (the "
                           f"Variable's), got {got}: {what}")
    value = backend.coerce(backend.untracked(value, "Variable.data"))
    if variable._requires_grad and not backend.is_inexact(value.dtype):
        undo = ("set v.requires_grad = False first" if variable.grad_fn is None else
                "take v.detach() to hold it")
        raise GradientError(
            f"Variable.data: this Variable requires grad, so its data must be floating-point or "
            f"complex, got dtype {value.dtype}: its gradients would be cast to that dtype "
            f"(truncated). Assign a floating array (xp.astype(a, xp.float64)), or {undo}")
    return value


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = next(self._ids)

    def remove(self):
        self._hooks.pop(self.id, None)


def _check_flag(what, value):
    """Refuse a flag that is not a bool (``requires_grad="no"`` would be truthy)."""
    if not isinstance(value, (bool, int)) and type(value).__name__ not in ("bool", "bool_"):
        raise TypeError(f"{what} must be True or False, got {value!r}")


def _cannot_require_grad(dtype):
    return GradientError(
        f"only floating-point and complex Variables can require grad, but this one has dtype "
        f"{dtype}. Convert it first, e.g. Variable(xp.astype(a, xp.float64), requires_grad=True).")


_NUMBERS_ONLY = object()


def _rebuilt(backend, data, requires_grad, grad):
    """A leaf Variable from what ``Variable.__reduce__`` kept."""
    variable = Variable(get_backend(backend).coerce(data), requires_grad=requires_grad)
    if grad is not None:
        variable.grad = Variable(grad)
    return variable


def _not_a_number(values):
    """The first value of a nested list that is not a number (``asarray(.., dtype=float64)``
    would make a None nan, silently), or ``_NUMBERS_ONLY``."""
    if not isinstance(values, (list, tuple)):
        return values if isinstance(values, (str, bytes, dict, set, type(None))) else _NUMBERS_ONLY
    for value in values:
        bad = _not_a_number(value)
        if bad is not _NUMBERS_ONLY:
            return bad
    return _NUMBERS_ONLY


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


def _exportable(data, backend):
    """``data`` as DLPack may export it: a copy where it has negative strides, on which
    torch's import aborts the interpreter."""
    if any(stride < 0 for stride in getattr(data, "strides", None) or ()):
        return backend.raw.asarray(data, copy=True)
    return data


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


class Variable:
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
                 "_view", "_views")  # unset unless a view: see __getitem__
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
            _check_flag("Variable(): requires_grad", requires_grad)
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
        self._requires_grad = False
        self._grad = None
        self._hooks = None
        self._retains_grad = False
        self._accumulator = None
        if requires_grad:  # (the setter's checks that a new leaf needs, without its call)
            if not backend.is_inexact(data.dtype):
                raise _cannot_require_grad(data.dtype)
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
        self._grad = None
        self._hooks = None
        self._retains_grad = False
        self._accumulator = None
        return self

    # ``data`` is a property over the slot ``_values`` so that assigning it is checked: what the
    # Variable cannot hold is refused here, not met later far from the assignment (an integer
    # array's gradients were silently truncated). The per-op paths (the namespace's recorders,
    # the array attributes below) read the slot itself; reading ``.data`` costs a C getter.
    def _set_data(self, value):
        value = _assignable(self, value)
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
        _check_flag("requires_grad", flag)
        flag = bool(flag)
        if self.grad_fn is not None:
            if not flag:
                raise BackwardError(
                    "requires_grad can only be switched off on a leaf Variable; this one was "
                    f"made by {self.grad_fn.name()}. Use y = x.detach() instead.")
            return
        if flag and not self._backend.is_inexact(self.data.dtype):
            raise _cannot_require_grad(self.data.dtype)
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

    def _seed(self, gradient, create_graph, what="backward(): the gradient",
              output="the output"):
        """Check the gradient given to backward() against this Variable; make 1 if none.
        ``what`` and ``output`` name the two in messages (autograd.grad: grad_outputs[k])."""
        backend = self._backend
        raw = backend.raw
        if gradient is None:
            if self.size != 1:
                raise BackwardError(
                    f"backward() needs a gradient for a Variable of shape {tuple(self.shape)}: "
                    "an implicit gradient exists only for single-element outputs. Pass "
                    "gradient=xp.ones_like(y) (or a gradient of that shape), or reduce first, "
                    "e.g. xp.sum(y).backward()." if output == "the output" else
                    f"{what} is None, but {output} has shape {tuple(self.shape)}: an implicit "
                    "gradient exists only for single-element outputs; give one of that shape "
                    "(xp.ones_like(...)).")
            if is_complex_dtype(self.dtype):
                # as torch: which real function of it to differentiate is the user's choice
                raise BackwardError(
                    f"{what} is None, but {output} is complex ({self.dtype}): an implicit "
                    "gradient exists only for real single-element outputs. Differentiate a "
                    "real value of it (xp.real(y), xp.abs(y) ** 2), or pass a gradient "
                    "explicitly (xp.ones_like(y) differentiates its real part).")
            grad = raw.ones_like(self.data)
        elif isinstance(gradient, Variable):
            if gradient._backend is not backend:
                raise BackendError(
                    f"{what} is a Variable of backend {gradient._backend.name!r}, but {output} "
                    f"is of backend {backend.name!r}")
            grad = gradient if create_graph else gradient.data
        else:
            owner = registry.of(gradient)
            if owner is None:
                bad = gradient if not isinstance(gradient, (bool, int, float, complex, list,
                                                            tuple)) else _not_a_number(gradient)
                if bad is not _NUMBERS_ONLY:
                    holding = f"{type(gradient).__name__} holding " if bad is not gradient else ""
                    raise TypeError(
                        f"{what} must be an array of backend {backend.name!r}, a Variable or a "
                        f"number, got a {holding}{type(bad).__name__}")
                try:
                    grad = raw.asarray(gradient, device=self.device)
                    if grad.dtype != self.dtype:
                        if raw.isdtype(grad.dtype, "complex floating") and not raw.isdtype(
                                self.dtype, "complex floating"):  # astype would drop .imag
                            raise TypeError("it holds complex values")
                        grad = raw.astype(grad, self.dtype)
                except (TypeError, ValueError) as exc:
                    raise TypeError(
                        f"{what} {gradient!r:.60} cannot be made an array of shape "
                        f"{tuple(self.shape)} and dtype {self.dtype}: {exc}") from None
            elif owner is not backend:
                raise BackendError(
                    f"{what} is an array of backend {owner.name!r}, but {output} is of backend "
                    f"{backend.name!r}")
            else:
                grad = backend.coerce(gradient)
        if tuple(grad.shape) != tuple(self.shape):
            raise GradientError(
                f"{what} has shape {tuple(grad.shape)} but {output} has shape "
                f"{tuple(self.shape)}; they must be equal (gradients are not broadcast).")
        if grad.dtype != self.dtype:
            raise GradientError(
                f"{what} has dtype {grad.dtype} but {output} has dtype {self.dtype}; cast it, "
                f"e.g. xp.astype(gradient, {self.dtype}).")
        if create_graph and not isinstance(grad, Variable):
            grad = Variable._make(grad, backend, None, 0, False)
        return grad

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

    def item(self):
        """The single value of this Variable as a Python number."""
        if self.size != 1:
            raise ValueError(f"item() needs a single-element Variable, this one has shape "
                             f"{tuple(self.shape)}")
        value = self.data
        if self.ndim:
            value = self._backend.raw.reshape(value, ())
        kind = self.dtype
        raw = self._backend.raw
        if raw.isdtype(kind, "bool"):
            return bool(value)
        if raw.isdtype(kind, "integral"):
            return int(value)
        if raw.isdtype(kind, "complex floating"):
            return complex(value)
        return float(value)

    def to(self, backend) -> "Variable":
        """Move this leaf to another backend (a name such as ``"torch"``), through DLPack where
        both libraries support it, else through NumPy on the host.

        The result is a new leaf with the same ``requires_grad``: gradients do not flow back
        across backends, so moving a non-leaf that requires grad is an error.
        """
        if not isinstance(backend, str) and not hasattr(backend, "raw"):
            raise TypeError(f"to() takes a backend name such as 'torch' (arraygrad.backends() "
                            f"lists them), got {backend!r}")
        target = get_backend(backend) if isinstance(backend, str) else backend
        if target is self._backend:
            return self
        if self.grad_fn is not None:
            raise BackendError(
                f"to({target.name!r}) moves leaves only, and this Variable was made by "
                f"{self.grad_fn.name()}: gradients cannot flow back from {target.name!r} to "
                f"{self._backend.name!r}. Call .detach() first if you do not need them.")
        try:
            data = target.raw.from_dlpack(_exportable(self._values, self._backend))
        except Exception:  # no DLPack path between these two: copy through the host
            data = target.raw.asarray(self._backend.to_numpy(self.data))
        return Variable(data, requires_grad=self._requires_grad)

    def numpy(self):
        """The values as a NumPy array on the host (a copy where the backend needs one).

        Like torch's ``Tensor.numpy()``, it refuses a Variable that requires grad: the result
        would silently leave the graph. Call ``.detach().numpy()`` to mean it."""
        if self._requires_grad:
            raise GradientError(
                "cannot convert a Variable that requires grad to NumPy: the result would leave "
                "the graph, and a gradient computed through it would be silently wrong. Use "
                "v.detach().numpy() (or np.asarray(v.detach()), or v.data) if you mean to drop "
                "the gradient; a library that converts to NumPy internally cannot be "
                "differentiated through that path (see docs/interop.md).")
        return self._backend.to_numpy(self.data)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # NEP 13: np.sin(v), ndarray + v, scipy.special.erf(v) record through the namespace.
        return _numpy_protocol.array_ufunc(self._backend.ns, ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        # NEP 18: np.mean(v), np.concatenate([v, w]), np.linalg.norm(v) record too.
        return _numpy_protocol.array_function(func, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        # np.asarray(v): what .numpy() gives, so a Variable that requires grad refuses.
        if self._requires_grad and _scipy_without_array_api(sys._getframe(1)):
            raise GradientError(
                "SciPy converted a Variable that requires grad to NumPy, which would leave the "
                "graph: SciPy's array API support is off, because SCIPY_ARRAY_API was not set "
                "when SciPy was first imported (it reads it once). Set it before SciPy's first "
                "import (os.environ[\"SCIPY_ARRAY_API\"] = \"1\" before `import scipy`, or "
                "SCIPY_ARRAY_API=1 in the environment): SciPy then computes on Variables "
                "through their namespace, and gradients flow (see docs/interop.md).")
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

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
        """The number of elements, an ``int`` (the standard's attribute: torch's ``y.size()``
        is ``y.shape`` here); None where the backend does not know a length yet (dask)."""
        # From the shape: dask's unknown sizes are nan.
        size = 1
        for n in self._values.shape:
            if n is None or n != n:
                return None
            size *= n
        return size

    @property
    def T(self):
        if self.ndim != 2:
            raise ValueError(f".T needs a 2-D Variable, this one has shape {tuple(self.shape)}; "
                             "use .mT or xp.permute_dims")
        return self._backend.ns.permute_dims(self, (1, 0))

    @property
    def mT(self):
        return self._backend.ns.matrix_transpose(self)

    @property
    def backend(self) -> str:
        """The name of the backend this Variable's data belongs to."""
        return self._backend.name

    def __array_namespace__(self, api_version=None):
        return self._backend.ns

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        # np.from_dlpack(v), torch.from_dlpack(v): the buffer leaves the graph, so a Variable
        # that requires grad refuses, as np.asarray(v) and torch's own tensors do.
        if self._requires_grad:
            raise BufferError(
                "cannot export a Variable that requires grad through DLPack: the array made "
                "from it would leave the graph, and a gradient computed through it would be "
                "silently wrong. Use v.detach() if you mean to drop the gradient; to move a "
                "Variable to another backend with its graph, use v.to(name) on a leaf. A "
                "library that converts its inputs this way cannot be differentiated through "
                "that path (see docs/interop.md).")
        options = {"stream": stream, "max_version": max_version, "dl_device": dl_device,
                   "copy": copy}
        return _exportable(self._values, self._backend).__dlpack__(
            **{k: v for k, v in options.items() if v is not None})

    def __dlpack_device__(self):
        return self.data.__dlpack_device__()

    def to_device(self, device, /, *, stream=None):
        return self._backend.ns._to_device(self, device, stream)

    def __len__(self):
        if not self.ndim:
            raise TypeError("len() of a 0-d Variable")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __bool__(self):
        return bool(self.data)

    def __int__(self):
        return int(self.data)

    def __float__(self):
        return float(self.data)

    def __format__(self, spec):
        # f"{loss:.3f}": a single value formats as its number; a spec on more is refused (torch)
        if not spec:
            return str(self)
        if self.size == 1:
            return format(self.item(), spec)
        raise TypeError(f"format spec {spec!r} on a Variable of shape {tuple(self.shape)}: "
                        "only a single-element Variable formats as a number")

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

    def __complex__(self):
        return complex(self.data)

    def __index__(self):
        return self.data.__index__()

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
        of it, while grad mode is on (PyTorch's rule)."""
        if not _grad_mode.state.enabled:
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
            target, where = link.base(), f"{op} on a view of it"

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
        result = self._backend.operators[name](self, other)
        self._inplace_assign(result, op)
        return self

    def __setitem__(self, key, value):
        link = getattr(value, "_view", None) if value.__class__ is Variable else None
        if link is not None and link.key is key and link.base() is self:
            return  # x[key] op= y: the view x[key] has already written itself back
        self._inplace_check("__setitem__")
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
            ns = self._backend.ns
            _views.link(self, result, lambda base: ns._getitem(base, key),
                        lambda base, view: ns._setitem(base, key, view), key=key)
        return result

    # ------------------------------------------------ the methods NumPy and torch users type
    # Each one is the namespace's function of the same meaning, recorded as that function is
    # (x.mean() is xp.mean(x), with a MeanBackward). Options take the standard's names (axis=,
    # keepdims=, correction=), which NumPy shares; torch's names are refused with their
    # translation rather than half-imitated (torch's x.max(dim) returns indices too, and its
    # x.std() divides by n - 1). docs/coming-from-pytorch.md lists them.
    def sum(self, axis=None, *, dtype=None, keepdims=False, **options):
        """``xp.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)``."""
        _refuse_options("sum", options)
        return self._backend.ns.sum(self, axis=_axis("sum", axis), dtype=dtype,
                                    keepdims=keepdims)

    def prod(self, axis=None, *, dtype=None, keepdims=False, **options):
        """``xp.prod(x, axis=axis, dtype=dtype, keepdims=keepdims)``."""
        _refuse_options("prod", options)
        return self._backend.ns.prod(self, axis=_axis("prod", axis), dtype=dtype,
                                     keepdims=keepdims)

    def mean(self, axis=None, *, keepdims=False, **options):
        """``xp.mean(x, axis=axis, keepdims=keepdims)``."""
        _refuse_options("mean", options)
        return self._backend.ns.mean(self, axis=_axis("mean", axis), keepdims=keepdims)

    def max(self, axis=None, *, keepdims=False, **options):
        """``xp.max(x, axis=axis, keepdims=keepdims)``: the values only (``xp.argmax`` gives
        the indices); the elementwise maximum of two arrays is ``xp.maximum(x, y)``."""
        _refuse_options("max", options)
        return self._backend.ns.max(self, axis=_axis("max", axis), keepdims=keepdims)

    def min(self, axis=None, *, keepdims=False, **options):
        """``xp.min(x, axis=axis, keepdims=keepdims)``: the values only (``xp.argmin`` gives
        the indices); the elementwise minimum of two arrays is ``xp.minimum(x, y)``."""
        _refuse_options("min", options)
        return self._backend.ns.min(self, axis=_axis("min", axis), keepdims=keepdims)

    def std(self, axis=None, *, correction=None, ddof=None, keepdims=False, **options):
        """``xp.std(x, axis=axis, correction=correction, keepdims=keepdims)``; the default
        correction is 0, as in the standard and NumPy (torch's ``x.std()`` uses 1), and NumPy's
        ``ddof=`` is accepted as another name for it."""
        _refuse_options("std", options)
        return self._backend.ns.std(self, axis=_axis("std", axis), keepdims=keepdims,
                                    correction=_correction("std", correction, ddof))

    def var(self, axis=None, *, correction=None, ddof=None, keepdims=False, **options):
        """``xp.var(x, axis=axis, correction=correction, keepdims=keepdims)``; the default
        correction is 0 (torch's ``x.var()`` uses 1); ``ddof=`` is another name for it."""
        _refuse_options("var", options)
        return self._backend.ns.var(self, axis=_axis("var", axis), keepdims=keepdims,
                                    correction=_correction("var", correction, ddof))

    def norm(self, ord=2, axis=None, *, keepdims=False, **options):
        """``xp.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)``: by default the
        2-norm of all the elements, as torch's ``y.norm()``."""
        _refuse_options("norm", options)
        if isinstance(ord, str):
            raise ValueError(
                f"Variable.norm() computes vector norms, and ord={ord!r} names a matrix norm: "
                "use xp.linalg.matrix_norm(x, ord=...) (torch's y.norm('fro') of all the "
                "elements is y.norm())")
        return self._backend.ns.linalg.vector_norm(self, axis=_axis("norm", axis),
                                                   keepdims=keepdims, ord=ord)

    def clip(self, min=None, max=None):
        """``xp.clip(x, min, max)``."""
        return self._backend.ns.clip(self, min, max)

    def clamp(self, min=None, max=None):
        """torch's name for ``clip``: ``xp.clip(x, min, max)``."""
        return self._backend.ns.clip(self, min, max)

    def reshape(self, *shape, copy=None):
        """``xp.reshape(x, shape, copy=copy)``; the shape is given as one tuple or as integers
        (``x.reshape(2, 3)``, ``x.reshape((2, 3))``, ``x.reshape(-1)``)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return self._backend.ns.reshape(self, tuple(shape), copy=copy)

    def flatten(self) -> "Variable":
        """``xp.reshape(x, (-1,))``: a 1-D Variable of all the elements, in row-major order."""
        return self._backend.ns.reshape(self, (-1,))

    def permute(self, *axes):
        """``xp.permute_dims(x, axes)`` (torch's name); ``x.permute(2, 0, 1)`` or
        ``x.permute((2, 0, 1))``, every axis once."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = axes[0]
        return self._backend.ns.permute_dims(self, _permutation("permute", axes, self.shape))

    def swapaxes(self, axis1, axis2):
        """Exchange two axes (NumPy's and torch's ``swapaxes``), as ``xp.permute_dims``."""
        order = list(range(self.ndim))
        first, second = (_normalize_axis("swapaxes", a, self.ndim) for a in (axis1, axis2))
        order[first], order[second] = order[second], order[first]
        return self._backend.ns.permute_dims(self, tuple(order))

    def transpose(self, *axes):
        """Permute the axes, as NumPy does: ``x.transpose()`` reverses them,
        ``x.transpose((1, 0, 2))`` or ``x.transpose(1, 0, 2)`` orders them.

        torch's ``x.transpose(dim0, dim1)``, which swaps two axes, works too where it cannot be
        read as NumPy's: on a Variable that does not have exactly two axes. On a 2-D one,
        ``x.transpose(1, 0)`` swaps (both agree); ``x.transpose(0, 1)`` is NumPy's identity but
        torch's swap, so it is refused: write ``x.T``, ``x.swapaxes(0, 1)`` or
        ``x.transpose((0, 1))``. Recorded as ``xp.permute_dims``.
        """
        ndim = self.ndim
        if not axes or axes == (None,):
            return self._backend.ns.permute_dims(self, tuple(range(ndim))[::-1])
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        elif len(axes) == 2 and ndim != 2:
            return self.swapaxes(*axes)  # torch's transpose(dim0, dim1)
        elif len(axes) == 2:
            if tuple(_normalize_axis("transpose", a, ndim) for a in axes) == (0, 1):
                raise ValueError(
                    f"x.transpose{axes} on a 2-D Variable is ambiguous: NumPy reads it as the "
                    "order of the axes (here unchanged), torch as two axes to swap. Write x.T "
                    "or x.swapaxes(0, 1) to swap them, x.transpose((0, 1)) for NumPy's meaning")
        return self._backend.ns.permute_dims(self, _permutation("transpose", axes, self.shape))

    def squeeze(self, axis=None):
        """``xp.squeeze(x, axis=axis)``; with no axis, every axis of length 1 (NumPy's and
        torch's ``x.squeeze()``). An axis of another length is an error, as in NumPy (torch
        leaves it)."""
        shape = self.shape
        if axis is None:
            axes = tuple(i for i, n in enumerate(shape) if n == 1)
        else:
            axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
            for a in axes:
                n = shape[_normalize_axis("squeeze", a, len(shape))]
                if n is not None and n == n and n != 1:  # dask's unknown lengths are nan
                    raise ValueError(
                        f"Variable.squeeze(): axis {a} has length {n}, not 1 (shape "
                        f"{tuple(shape)}); only axes of length 1 can be removed")
        return self._backend.ns.squeeze(self, axis=axes)

    def ravel(self) -> "Variable":
        """NumPy's name for ``flatten()``: ``xp.reshape(x, (-1,))``."""
        return self._backend.ns.reshape(self, (-1,))

    def flip(self, *axes, axis=None):
        """``xp.flip(x, axis=axis)``: every axis by default, as ``np.flip``; torch's
        ``x.flip(0, 1)`` and ``x.flip((0, 1))`` work too."""
        if axes and axis is not None:
            raise TypeError("Variable.flip() got the axes both by position and as axis=")
        if len(axes) == 1:
            axis = axes[0]
        elif axes:
            axis = axes
        return self._backend.ns.flip(self, axis=_axis("flip", axis))

    def argmax(self, axis=None, *, keepdims=False, **options):
        """``xp.argmax(x, axis=axis, keepdims=keepdims)``: indices (of the flattened Variable
        when axis is None), an integer Variable that carries no gradient."""
        _refuse_options("argmax", options)
        return self._backend.ns.argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis=None, *, keepdims=False, **options):
        """``xp.argmin(x, axis=axis, keepdims=keepdims)``: indices, as ``argmax``."""
        _refuse_options("argmin", options)
        return self._backend.ns.argmin(self, axis=axis, keepdims=keepdims)

    def cumsum(self, axis=None, dtype=None, **options):
        """``xp.cumulative_sum(x, axis=axis, dtype=dtype)``; with no axis, of the flattened
        Variable, as NumPy's (torch's ``x.cumsum(dim)`` names one)."""
        _refuse_options("cumsum", options)
        x = self
        if axis is None:
            x, axis = (x if x.ndim == 1 else self._backend.ns.reshape(x, (-1,))), 0
        return self._backend.ns.cumulative_sum(x, axis=axis, dtype=dtype)

    # ------------------------------------------ complex parts, copies, dtypes, Python lists
    @property
    def real(self):
        """The real part, ``xp.real(x)``. A real Variable is its own real part, as in torch
        (NumPy gives a view of it)."""
        if not is_complex_dtype(self.dtype):
            return self
        return self._backend.ns.real(self)

    @property
    def imag(self):
        """The imaginary part, ``xp.imag(x)``. Of a real Variable: zeros, as in NumPy (torch
        refuses), recorded as the imaginary part of ``x + 0j``, so that they require grad as x
        does and send back an exact zero gradient (a constant would make
        ``x.imag.sum().backward()`` an error, though its gradient, 0, is well defined)."""
        ns = self._backend.ns
        dtype = self.dtype
        if is_complex_dtype(dtype):
            return ns.imag(self)
        if not self._backend.is_inexact(dtype):
            return ns.zeros_like(self)  # integers and booleans: no gradient to keep
        parts = ns.imag(ns.astype(self, ns.result_type(dtype, ns.complex64)))
        return parts if parts.dtype == dtype else ns.astype(parts, dtype)  # float16

    def conj(self) -> "Variable":
        """``xp.conj(x)``, the complex conjugate (of a real Variable, its values)."""
        return self._backend.ns.conj(self)

    def clone(self) -> "Variable":
        """A copy in new memory, recorded (``xp.asarray(x, copy=True)``): gradients flow back
        to x, as from torch's ``x.clone()``."""
        return self._backend.ns.asarray(self, copy=True)

    def copy(self) -> "Variable":
        """NumPy's name for ``clone()``: a recorded copy in new memory."""
        return self.clone()

    def astype(self, dtype, *, copy=True, **options):
        """``xp.astype(x, dtype, copy=copy)``, recorded (a cast to an integer dtype carries no
        gradient). ``dtype`` is the backend's, or NumPy's of the same name (``np.float32``,
        ``"float32"``); Python's ``float``, ``int``, ``complex`` and ``bool`` mean what they
        mean to NumPy (float64, int64, complex128, bool)."""
        _refuse_options("astype", options)
        ns = self._backend.ns
        return ns.astype(self, _dtype_of(ns, dtype), copy=copy)

    def tolist(self):
        """The values as (nested) Python lists of numbers, a number for a 0-d Variable, as
        NumPy's and torch's ``tolist()``. Like ``item()`` and ``float(x)``, it leaves the
        graph: the numbers carry no gradient."""
        return self._backend.to_numpy(self.data).tolist()




def _scipy_without_array_api(frame) -> bool:
    """Whether ``frame``, or the nearest frame above it outside arraygrad and NumPy, runs SciPy
    code while SciPy's array API support is off (read where each SciPy reads it: 1.16 and
    later in ``_array_api_override``, 1.15 in ``_array_api._GLOBAL_CONFIG``)."""
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] in (
            "arraygrad", "numpy"):
        frame = frame.f_back
    if frame is None or frame.f_globals.get("__name__", "").partition(".")[0] != "scipy":
        return False
    override = sys.modules.get("scipy._lib._array_api_override")
    config = getattr(sys.modules.get("scipy._lib._array_api"), "_GLOBAL_CONFIG", None)
    if override is not None and hasattr(override, "SCIPY_ARRAY_API"):
        return not override.SCIPY_ARRAY_API
    if config is not None:
        return not config.get("SCIPY_ARRAY_API")
    return not os.environ.get("SCIPY_ARRAY_API")


_BINARY_OPERATORS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "pow", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift",
}
_COMPARISONS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                "gt": "greater", "ge": "greater_equal"}
_UNARY_OPERATORS = {"neg": "negative", "pos": "positive", "abs": "abs", "invert": "bitwise_invert"}


def _forward(name):
    def operator(self, other):
        return self._backend.operators[name](self, other)
    return operator


def _comparison(name):
    def operator(self, other):
        if other is None or other.__class__ in (str, bytes):  # Python's answer, as PyTorch's:
            return NotImplemented  # x == None is False, x < "a" a TypeError, on every backend
        return self._backend.operators[name](self, other)
    return operator


def _reflected(name):
    def operator(self, other):
        return self._backend.operators["r" + name](self, other)
    return operator


def _in_place(name, symbol):
    def operator(self, other):
        return self._inplace(name, other, symbol)
    return operator


def _unary(name):
    def operator(self):
        return self._backend.operators[name](self)
    return operator


_SYMBOLS = {"add": "+=", "sub": "-=", "mul": "*=", "truediv": "/=", "floordiv": "//=",
            "mod": "%=", "pow": "**=", "matmul": "@=", "and": "&=", "or": "|=", "xor": "^=",
            "lshift": "<<=", "rshift": ">>="}

for _dunder, _function in _BINARY_OPERATORS.items():
    setattr(Variable, f"__{_dunder}__", _forward(_function))
    setattr(Variable, f"__r{_dunder}__", _reflected(_function))
    setattr(Variable, f"__i{_dunder}__", _in_place(_function, _SYMBOLS[_dunder]))
for _dunder, _function in _COMPARISONS.items():
    setattr(Variable, f"__{_dunder}__", _comparison(_function))
for _dunder, _function in _UNARY_OPERATORS.items():
    setattr(Variable, f"__{_dunder}__", _unary(_function))


# Elementwise methods: x.exp() is xp.exp(x). NumPy arrays have few of these (abs via abs(),
# the rest as np.exp(a)), torch tensors all; each records as the namespace's function.
ELEMENTWISE_METHODS = ("abs", "exp", "log", "sqrt", "square", "sin", "cos", "tanh")


def _elementwise(name):
    def method(self):
        return getattr(self._backend.ns, name)(self)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``xp.{name}(x)``."
    return method


for _name in ELEMENTWISE_METHODS:
    setattr(Variable, _name, _elementwise(_name))


# Names a Variable does not have but users of torch and NumPy type: each reads as an
# AttributeError saying what to write instead. They are descriptors on the class rather than a
# __getattr__: a class with __getattr__ loses CPython 3.11's specialised attribute reads, so
# every x.data, x._backend... of the hot paths read twice as slowly (W1, 2,000 recorded ops:
# 2 to 4% slower).
OTHER_NAMES = {
    "unsqueeze": "torch's x.unsqueeze(dim) is xp.expand_dims(x, axis=dim)",
    "view": "torch's x.view(shape) is x.reshape(shape)",
    "expand": "torch's x.expand(*sizes) is xp.broadcast_to(x, shape)",
    "repeat": "torch's x.repeat(*sizes) is xp.tile(x, sizes); NumPy's a.repeat(n, axis) is "
              "xp.repeat(x, n, axis=axis)",
    "numel": "torch's x.numel() is x.size, the standard's number of elements (an int)",
    "dim": "torch's x.dim() is x.ndim",
    "ndimension": "torch's x.ndimension() is x.ndim",
    "t": "torch's x.t() is x.T (x.mT for a stack of matrices)",
    "double": "torch's x.double() is x.astype(xp.float64)",
    "float": "torch's x.float() is x.astype(xp.float32)",
    "long": "torch's x.long() is x.astype(xp.int64)",
    "int": "torch's x.int() is x.astype(xp.int32)",
    "bool": "torch's x.bool() is x.astype(xp.bool)",
    "cumprod": "x.cumprod(axis) is xp.cumulative_prod(x, axis=axis) (of the flattened values, "
               "NumPy's axis=None: xp.cumulative_prod(x.ravel()))",
    "dot": "x.dot(y) is x @ y (xp.matmul); xp.vecdot(x, y) conjugates a complex x",
    "inverse": "torch's x.inverse() is xp.linalg.inv(x)",
    "unique": "x.unique() is xp.unique_values(x)",
    "masked_fill": "torch's x.masked_fill(mask, value) is xp.where(mask, value, x)",
    "conjugate": "x.conjugate() is x.conj()",
    "requires_grad_": "torch's x.requires_grad_() is x.requires_grad = True",
    "contiguous": "arrays of the standard have no contiguous(): leave the call out",
    "cpu": "x.to_device(device) moves a Variable (the backend's device names); "
           "x.detach().numpy() gives its values as a NumPy array",
}


class _NotAnAttribute:
    """A name a Variable does not have: reading it raises an AttributeError saying what to
    write instead; ``hasattr`` is False, as for any missing name, and ``dir()`` omits it."""

    def __init__(self, name, hint):
        self.name = name
        self.hint = hint  # a sentence, or a function of the Variable giving one
        self.__doc__ = f"Not an attribute of Variable: {hint}." if isinstance(hint, str) else \
            f"Not an attribute of Variable: xp.{name} is the standard's function."

    def __get__(self, variable, owner=None):
        if variable is None:
            return self  # the class's own attribute, for help() and inspect
        hint = self.hint if isinstance(self.hint, str) else self.hint(variable)
        if "xp." in hint:
            hint += ", with xp = x.__array_namespace__()"
        raise AttributeError(f"'Variable' object has no attribute {self.name!r}: {hint}",
                             name=self.name)


def _standard_function(name):
    """The hint for a function of the standard: ``xp.NAME``, where the backend has it."""
    family, _, short = name.rpartition(".")
    call = f"xp.{name}([x, ...])" if name in ("concat", "stack") else f"xp.{name}(x, ...)"

    def hint(variable):
        backend = getattr(variable, "_backend", None)  # unset on a Variable being unpickled
        ns = backend.ns if backend is not None else None
        if ns is None or hasattr(getattr(ns, family, None) if family else ns, short):
            return f"use {call}"
        return (f"xp.{name} is a function of the Array API standard, which backend "
                f"{variable.backend!r} does not provide")
    return hint


for _name, _hint in OTHER_NAMES.items():
    setattr(Variable, _name, _NotAnAttribute(_name, _hint))
# Functions of the standard that do not take an array first (xp.zeros(shape)) say nothing.
_NOT_OF_AN_ARRAY = {"arange", "empty", "eye", "full", "linspace", "ones", "zeros", "isdtype",
                    "broadcast_shapes", "fft.fftfreq", "fft.rfftfreq"}
# The rest, xp.argsort, xp.cumulative_sum, xp.linalg.det...: x.argsort says to use it. Top-level
# names come first (x.matmul names xp.matmul, not xp.linalg.matmul); methods stay.
for _name in FUNCTIONS:
    _short = _name.rpartition(".")[2]
    if _name not in _NOT_OF_AN_ARRAY and not hasattr(Variable, _short):
        setattr(Variable, _short, _NotAnAttribute(_short, _standard_function(_name)))
NOT_ATTRIBUTES = frozenset(name for name, value in vars(Variable).items()
                           if isinstance(value, _NotAnAttribute))

# torch's option names -> the standard's (and NumPy's), which the methods take instead.
_TORCH_OPTIONS = {"dim": ("axis", ""), "keepdim": ("keepdims", ""), "p": ("ord", ""),
                  "unbiased": ("correction", "; unbiased=True is correction=1")}
# Options of NumPy or torch the namespace's functions meet under another name in the standard.
OTHER_SPELLINGS = {**_TORCH_OPTIONS, "ddof": ("correction", "; ddof=1 is correction=1")}


_PYTHON_DTYPES = {float: "float64", int: "int64", complex: "complex128", bool: "bool"}


def _dtype_of(ns, dtype):
    """The backend's dtype for what ``astype`` is given: the backend's own, a NumPy dtype or
    scalar type (by its name), a name of the standard, or a Python type (as NumPy reads it)."""
    if isinstance(dtype, str):
        if dtype not in DTYPES:
            raise TypeError(f"Variable.astype(): {dtype!r} is not a dtype name of the standard "
                            f"({', '.join(DTYPES)}); or pass a dtype, such as xp.float64")
        return getattr(ns, dtype)
    if isinstance(dtype, type) and dtype in _PYTHON_DTYPES:
        return getattr(ns, _PYTHON_DTYPES[dtype])
    name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None)
    return getattr(ns, name, dtype) if isinstance(name, str) and name in DTYPES else dtype


def _refuse_options(method, options):
    """An option a method does not take: name torch's translation where there is one."""
    if not options:
        return
    name = next(iter(options))
    if name in _TORCH_OPTIONS:
        standard, note = _TORCH_OPTIONS[name]
        raise TypeError(f"Variable.{method}() takes the standard's option names, as NumPy "
                        f"does: write {standard}= instead of torch's {name}={note} "
                        "(docs/coming-from-pytorch.md translates the others)")
    if name == "out":
        raise TypeError(f"Variable.{method}() has no out=: a Variable's result is a new "
                        f"Variable, so assign it (y = x.{method}(...))")
    raise TypeError(f"Variable.{method}() got an unexpected keyword argument {name!r}")


def _axis(method, axis):
    """``axis`` as the standard takes it: None, an integer or a tuple (a list becomes one)."""
    if isinstance(axis, list):
        axis = tuple(axis)
    if axis is not None and not isinstance(axis, tuple) and not hasattr(axis, "__index__") \
            or isinstance(axis, Variable) or hasattr(axis, "__array_namespace__"):
        other = " (for the elementwise max/min of two arrays use xp.maximum/xp.minimum)" \
            if method in ("max", "min") else ""
        raise TypeError(f"Variable.{method}(): axis must be None, an integer or a tuple of "
                        f"integers, got a {type(axis).__name__}{other}")
    return axis


def _correction(method, correction, ddof):
    """The standard's ``correction``, given as such or as NumPy's ``ddof``; 0 by default."""
    if ddof is not None and correction is not None and ddof != correction:
        raise TypeError(f"Variable.{method}() got correction={correction!r} and "
                        f"ddof={ddof!r}: they are two names of one option, give one")
    value = correction if correction is not None else ddof
    return 0 if value is None else value


def _normalize_axis(method, axis, ndim):
    if not hasattr(axis, "__index__") or isinstance(axis, bool):
        raise TypeError(f"Variable.{method}(): an axis must be an integer, got "
                        f"{type(axis).__name__}")
    axis = axis.__index__()
    if not -ndim <= axis < ndim:
        raise ValueError(f"Variable.{method}(): axis {axis} is out of range for a Variable "
                         f"with {ndim} dimension{'s' if ndim != 1 else ''}")
    return axis % ndim


def _permutation(method, axes, shape):
    """``axes`` as a tuple, checked to name every axis of ``shape`` once."""
    axes = tuple(axes)
    ndim = len(shape)
    try:
        order = sorted(_normalize_axis(method, a, ndim) for a in axes)
    except ValueError:
        order = None
    if order != list(range(ndim)):
        example = ", ".join(str(a) for a in reversed(range(ndim)))
        raise ValueError(
            f"Variable.{method}{axes} is not an order of the {ndim} axes of a Variable of shape "
            f"{tuple(shape)}: name each axis once (e.g. x.{method}({example})); to swap two "
            "axes use x.swapaxes(a, b)")
    return axes
