"""einops backend for Variables: ``einops.rearrange(v, ...)``, ``reduce``, ``repeat``,
``einsum`` record through the differentiable namespace, on every backend (``einsum``
composed of the standard's functions where the backend has none of its own).

einops finds backends among the subclasses of its ``AbstractBackend`` whose
``framework_name`` is an imported module; arraygrad defines this one on import when einops is
installed.
"""

from __future__ import annotations

from einops._backends import AbstractBackend

from ._numpy_protocol import einsum
from ._plugins import get_backend
from ._variable import Variable


class ArraygradBackend(AbstractBackend):
    framework_name = "arraygrad"

    def is_appropriate_type(self, tensor):
        return isinstance(tensor, Variable)

    def from_numpy(self, x):
        return Variable(x)

    def to_numpy(self, x):
        return x.numpy()

    def arange(self, start, stop):  # einops uses it in its own tests: the default backend's
        return Variable(get_backend("numpy").raw.arange(start, stop))

    def shape(self, x):
        return tuple(x.shape)

    def reshape(self, x, shape):
        return x.__array_namespace__().reshape(x, tuple(shape))

    def transpose(self, x, axes):
        return x.__array_namespace__().permute_dims(x, tuple(axes))

    def reduce(self, x, operation, axes):
        xp = x.__array_namespace__()
        axes = tuple(axes)
        if operation == "min":
            return xp.min(x, axis=axes)
        if operation == "max":
            return xp.max(x, axis=axes)
        if operation in ("sum", "mean", "prod", "any", "all"):
            return getattr(xp, operation)(x, axis=axes)
        raise NotImplementedError(f"einops reduction {operation!r} on arraygrad Variables")

    def stack_on_zeroth_dimension(self, tensors: list):
        return tensors[0].__array_namespace__().stack(list(tensors))

    def add_axis(self, x, new_position):
        return x.__array_namespace__().expand_dims(x, axis=new_position)

    def tile(self, x, repeats):
        return x.__array_namespace__().tile(x, tuple(repeats))

    def concat(self, tensors, axis: int):
        return tensors[0].__array_namespace__().concat(list(tensors), axis=axis)

    def is_float_type(self, x):
        return x._backend.is_inexact(x.dtype)

    def einsum(self, pattern, *x):
        return einsum(x[0].__array_namespace__(), pattern, *x)
