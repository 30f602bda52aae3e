"""The methods and operators NumPy and torch users type on a Variable (``x.sum()``,
``x.reshape(2, 3)``, ``x + y``, ``x.T``'s friends), each the differentiable namespace's function
of the same meaning and recorded as it is; and the names a Variable does not have (``x.cuda``,
``x.arange``), each an error saying what to write instead."""

from __future__ import annotations

import os
import sys

from . import _numpy_protocol, _torch_protocol
from ._plugins import get_backend, registry
from ._standard import DTYPES, FUNCTIONS
from .errors import BackendError, GradientError
from .rules import is_complex_dtype


class ArrayMethods:
    """The methods of :class:`~arraygrad.Variable` that are namespace functions by another
    spelling (its base class: they reach the Variable's data only through ``self._backend.ns``)."""

    __slots__ = ()

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

    def flatten(self):
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

    def ravel(self):
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

    def conj(self):
        """``xp.conj(x)``, the complex conjugate (of a real Variable, its values)."""
        return self._backend.ns.conj(self)

    def clone(self):
        """A copy in new memory, recorded (``xp.asarray(x, copy=True)``): gradients flow back
        to x, as from torch's ``x.clone()``."""
        return self._backend.ns.asarray(self, copy=True)

    def copy(self):
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

    # ------------------------------------------- conversions: numbers, NumPy, DLPack, backends
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

    def to(self, backend, *args, **kwargs):
        """Move this leaf to another backend (a name such as ``"torch"``), through DLPack where
        both libraries support it, else through NumPy on the host.

        The result is a new leaf with the same ``requires_grad``: gradients do not flow back
        across backends, so moving a non-leaf that requires grad is an error. On the torch
        backend, anything but a backend is torch's ``x.to(dtype)`` (recorded) or
        ``x.to(device)``.
        """
        if _torch_protocol.is_torch(self._backend) and not hasattr(backend, "raw") and not (
                isinstance(backend, str) and backend in registry.backends):
            return _torch_protocol.call(self._backend.ns, "Tensor.to", (self, backend, *args),
                                        kwargs)
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
        return type(self)(data, requires_grad=self._requires_grad)

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

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        # torch's counterpart: torch.sum(v, dim=0), F.relu(v), tensor + v record too.
        return _torch_protocol.torch_function(func, args, kwargs or {})

    def __array__(self, dtype=None, copy=None):
        # np.asarray(v): what .numpy() gives, so a Variable that requires grad refuses; as
        # integers or booleans (np.int64(v), np.asarray(v, dtype=bool)) it has no derivative to
        # lose, as int(v) and xp.astype(v, xp.int64) have none.
        if getattr(dtype, "kind", None) in ("i", "u", "b"):
            return self._backend.to_numpy(self.data).astype(dtype, copy=False)
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

    def __complex__(self):
        return complex(self.data)

    def __index__(self):
        return self.data.__index__()


class ElementCount(int):
    """``x.size``, the number of elements, an ``int`` that answers torch's ``x.size()`` and
    ``x.size(dim)``: with the shape on the torch backend, elsewhere with an error saying to
    write ``x.shape``."""

    def __new__(cls, size, variable):
        self = super().__new__(cls, size)
        self._shape, self._backend = variable.shape, variable._backend
        return self

    def __call__(self, dim=None):
        if _torch_protocol.is_torch(self._backend):
            return self._shape if dim is None else self._shape[dim]
        raise TypeError(
            f"x.size is the number of elements ({int(self)}), an int as the Array API "
            f"standard has it: torch's x.size() is x.shape ({tuple(self._shape)}) and "
            f"x.size(dim) is x.shape[dim] on backend {self._backend.name!r}")

    def __reduce__(self):
        return int, (int(self),)


def _exportable(data, backend):
    """``data`` as DLPack may export it: a copy where it has negative strides, on which
    torch's import aborts the interpreter."""
    if any(stride < 0 for stride in getattr(data, "strides", None) or ()):
        return backend.raw.asarray(data, copy=True)
    return data


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


def _forward(name, reflected):
    def operator(self, other):
        try:
            return self._backend.operators[name](self, other)
        except TypeError:
            if _defers_to(other, reflected):
                return NotImplemented
            raise
    return operator


def _comparison(name, reflected):
    forward = _forward(name, reflected)

    def operator(self, other):
        if other is None or other.__class__ in (str, bytes):  # Python's answer, as PyTorch's:
            return NotImplemented  # x == None is False, x < "a" a TypeError, on every backend
        return forward(self, other)
    return operator


_ARRAY_PROTOCOLS = ("__array_ufunc__", "__array_function__", "__array_namespace__", "__array__")


def _defers_to(other, reflected) -> bool:
    """Whether ``v op other``, refused, is ``other``'s to answer (Python's binary protocol):
    an array-like that no backend owns (an xarray ``DataArray``) with its own reflected
    operator, as ``ndarray * DataArray`` is the DataArray's. It computes with the Variable
    inside (``DataArray * v`` records), or raises; nothing leaves the graph unseen."""
    kind = type(other)
    return (not isinstance(other, ArrayMethods) and getattr(kind, reflected, None) is not None
            and any(hasattr(kind, name) for name in _ARRAY_PROTOCOLS)
            and registry.of(other) is None)


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
    setattr(ArrayMethods, f"__{_dunder}__", _forward(_function, f"__r{_dunder}__"))
    setattr(ArrayMethods, f"__r{_dunder}__", _reflected(_function))
    setattr(ArrayMethods, f"__i{_dunder}__", _in_place(_function, _SYMBOLS[_dunder]))
_REFLECTED_COMPARISONS = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
for _dunder, _function in _COMPARISONS.items():
    setattr(ArrayMethods, f"__{_dunder}__",
            _comparison(_function, f"__{_REFLECTED_COMPARISONS[_dunder]}__"))
for _dunder, _function in _UNARY_OPERATORS.items():
    setattr(ArrayMethods, f"__{_dunder}__", _unary(_function))


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
    setattr(ArrayMethods, _name, _elementwise(_name))


def _torch_or_own(own):
    """A method that on the torch backend is torch's Tensor method of the name (x.sum(dim=1),
    x.std() with correction 1, x.max(0) giving values and indices), elsewhere ``own``."""
    name = own.__name__

    def method(self, *args, **kwargs):
        if _torch_protocol.is_torch(self._backend):
            return _torch_protocol.call(self._backend.ns, "Tensor." + name, (self, *args),
                                        kwargs)
        return own(self, *args, **kwargs)
    method.__name__, method.__qualname__, method.__doc__ = name, own.__qualname__, (
        (own.__doc__ or "") + "\n\nOn the torch backend, torch's ``Tensor." + name + "``.")
    return method


for _name in _torch_protocol.TORCH_METHODS:
    setattr(ArrayMethods, _name, _torch_or_own(getattr(ArrayMethods, _name)))


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
        backend = getattr(variable, "_backend", None)  # unset on a Variable being unpickled
        if backend is not None and _torch_protocol.is_torch(backend):
            bound = _torch_protocol.method(variable, self.name)  # torch's Tensor method
            if bound is not None:
                return bound
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


def _torch_only(name):
    def hint(variable):
        backend = getattr(getattr(variable, "_backend", None), "name", "this")
        return (f"x.{name}() is a method of torch tensors, which Variables of the torch "
                f"backend have; on backend {backend!r} use the namespace's functions "
                "(docs/coming-from-pytorch.md translates them)")
    return hint


for _name, _hint in OTHER_NAMES.items():
    setattr(ArrayMethods, _name, _NotAnAttribute(_name, _hint))
# Functions of the standard that do not take an array first (xp.zeros(shape)) say nothing.
_NOT_OF_AN_ARRAY = {"arange", "empty", "eye", "full", "linspace", "ones", "zeros", "isdtype",
                    "broadcast_shapes", "fft.fftfreq", "fft.rfftfreq"}
# The rest, xp.argsort, xp.cumulative_sum, xp.linalg.det...: x.argsort says to use it. Top-level
# names come first (x.matmul names xp.matmul, not xp.linalg.matmul); methods stay.
for _name in FUNCTIONS:
    _short = _name.rpartition(".")[2]
    if _name not in _NOT_OF_AN_ARRAY and not hasattr(ArrayMethods, _short):
        setattr(ArrayMethods, _short, _NotAnAttribute(_short, _standard_function(_name)))
# torch's Tensor methods: a Variable of the torch backend has them (x.view(-1), x.relu());
# on another backend each says what to write.
_VARIABLE_OWN = ("detach", "size")  # Variable's own, defined in _variable
for _name in _torch_protocol.method_names():
    if not hasattr(ArrayMethods, _name) and _name not in _VARIABLE_OWN:
        setattr(ArrayMethods, _name, _NotAnAttribute(_name, _torch_only(_name)))


NOT_ATTRIBUTES = frozenset(name for name, value in vars(ArrayMethods).items()
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
            or hasattr(axis, "__array_namespace__"):
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
