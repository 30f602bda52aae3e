"""array-api-compat's NumPy namespace, with the functions whose NumPy implementation starts in
Python (the reductions' argument handling, array-api-compat's wrappers) calling NumPy's C core
directly on ndarrays: the same values, bit for bit, a microsecond sooner. Small-array code pays
that microsecond on every call, and every backward pass on every rule that reduces. Other
dtypes, array types and NumPy's own options (``initial=``, ``order=``) take array-api-compat's
function, as before. Used by the NumPy plugin's declaration."""

import math

import numpy

from ._over_compat import OverCompat

_ndarray = numpy.ndarray
_add, _maximum, _minimum = numpy.add.reduce, numpy.maximum.reduce, numpy.minimum.reduce
_true_divide, _intp = numpy.true_divide, numpy.intp
_empty_like, _zeros = numpy.empty_like, numpy.zeros
_REAL = frozenset("fd")  # float32, float64: max, min, mean
_INEXACT = frozenset("fdFD")  # and complex64, complex128: sum


class Namespace(OverCompat):
    """``array_api_compat.numpy``, faster where it can be (below) and the same elsewhere."""

    _role = "fast paths"

    matmul = staticmethod(numpy.matmul)  # (array-api-compat's calls it through a wrapper)

    def sum(self, x, /, *, axis=None, dtype=None, keepdims=False, **options):
        # numpy.sum of an ndarray is add.reduce, after its Python argument handling
        if x.__class__ is _ndarray and dtype is None and not options and x.dtype.char in _INEXACT:
            return _add(x, axis, None, None, keepdims=keepdims)
        return self._compat.sum(x, axis=axis, dtype=dtype, keepdims=keepdims, **options)

    def max(self, x, /, *, axis=None, keepdims=False, **options):
        if x.__class__ is _ndarray and not options and x.dtype.char in _REAL:
            return _maximum(x, axis, None, None, keepdims=keepdims)
        return self._compat.max(x, axis=axis, keepdims=keepdims, **options)

    def min(self, x, /, *, axis=None, keepdims=False, **options):
        if x.__class__ is _ndarray and not options and x.dtype.char in _REAL:
            return _minimum(x, axis, None, None, keepdims=keepdims)
        return self._compat.min(x, axis=axis, keepdims=keepdims, **options)

    def mean(self, x, /, *, axis=None, keepdims=False, **options):
        # numpy.mean's own steps for a float array (numpy/_core/_methods.py: _mean): the sum in
        # its dtype, divided by the count as an intp; an empty one warns there
        if x.__class__ is _ndarray and not options and x.dtype.char in _REAL and x.size:
            total = _add(x, axis, None, None, keepdims=keepdims)  # (checks axis first)
            count = _intp(x.size if axis is None else math.prod(
                x.shape[a] for a in (axis if axis.__class__ is tuple else (axis,))))
            if total.__class__ is _ndarray:
                return _true_divide(total, count, out=total, casting="unsafe", subok=False)
            return total.dtype.type(total / count)
        return self._compat.mean(x, axis=axis, keepdims=keepdims, **options)

    def broadcast_to(self, x, /, shape):
        # numpy.broadcast_to finds the view through an nditer (microseconds): for a contiguous
        # ndarray it is a zero stride on each new or length-1 axis, made directly, read-only
        # and on x's memory as NumPy's (every reduction's gradient is broadcast back)
        if x.__class__ is _ndarray and shape.__class__ is tuple and len(shape) >= x.ndim:
            extra = len(shape) - x.ndim
            strides = [0] * extra
            for n, m, stride in zip(shape[extra:], x.shape, x.strides):
                if m == n and n.__class__ is int:
                    strides.append(stride if n != 1 else 0)
                elif m == 1 and n.__class__ is int and n >= 0:
                    strides.append(0)
                else:
                    break
            else:
                try:
                    view = _ndarray(shape, x.dtype, x, 0, tuple(strides))
                except (TypeError, ValueError, BufferError):  # x is not contiguous
                    pass
                else:
                    view.flags.writeable = False
                    return view
        return self._compat.broadcast_to(x, shape)

    # NumPy's methods, which numpy.transpose, swapaxes and take call after their Python dispatch
    # (array-api-compat's wrappers add another layer): matmul's and take's gradients call them
    def permute_dims(self, x, /, axes):
        if x.__class__ is _ndarray:
            return x.transpose(axes)
        return self._compat.permute_dims(x, axes)

    def matrix_transpose(self, x, /):
        if x.__class__ is _ndarray and x.ndim >= 2:
            return x.swapaxes(-1, -2)
        return self._compat.matrix_transpose(x)

    def take(self, x, indices, /, *, axis=None, **options):
        if x.__class__ is _ndarray and not options:
            return x.take(indices, axis=axis)
        return self._compat.take(x, indices, axis=axis, **options)

    def zeros(self, shape, *, dtype=None, device=None, **options):
        if device is None and not options:  # (every indexing gradient starts from zeros)
            return _zeros(shape, dtype=dtype)
        return self._compat.zeros(shape, dtype=dtype, device=device, **options)

    def ones_like(self, x, /, *, dtype=None, device=None, **options):
        return self._filled_like(x, 1, "ones_like", dtype, device, options)

    def zeros_like(self, x, /, *, dtype=None, device=None, **options):
        return self._filled_like(x, 0, "zeros_like", dtype, device, options)

    def _filled_like(self, x, value, name, dtype, device, options):
        # numpy.ones_like's and zeros_like's own steps (empty_like in x's layout, then the value
        # everywhere) without their Python: every backward() of a scalar starts from ones
        if x.__class__ is _ndarray and dtype is None and device is None and not options:
            out = _empty_like(x)
            out.fill(value)
            return out
        return getattr(self._compat, name)(x, dtype=dtype, device=device, **options)

    def reshape(self, x, /, shape, *, copy=None, **options):
        if x.__class__ is _ndarray and copy is None and not options:
            return x.reshape(shape)  # (numpy.reshape calls it, after its Python dispatch)
        return self._compat.reshape(x, shape, copy=copy, **options)

    def astype(self, x, dtype, /, *, copy=True, device=None):
        if x.__class__ is _ndarray and device is None:
            return x.astype(dtype, copy=copy)
        return self._compat.astype(x, dtype, copy=copy, device=device)

    def einsum(self, subscripts, /, *operands, **options):
        # NumPy's einsum runs its own C loop, without BLAS, unless asked to optimize, which then
        # searches a contraction path first (tens of microseconds): asked for where the loop
        # would make at least _EINSUM_BLAS multiply-adds ("bij,jk->bik" on (64, 128, 128) and
        # (128, 128): 36 ms looped, 8 ms through matmul; PyTorch always contracts through BLAS).
        # Contracted, the sums round in another order than the loop's.
        if "optimize" not in options and _einsum_loop(subscripts, operands) >= _EINSUM_BLAS:
            options["optimize"] = True
        return self._compat.einsum(subscripts, *operands, **options)


_EINSUM_BLAS = 2 ** 18


def _einsum_loop(subscripts, operands) -> int:
    """How many multiply-adds NumPy's einsum loop makes: the product of every index's length
    (with an ellipsis, of every operand's size: an overestimate)."""
    inputs = subscripts.split("->")[0].replace(" ", "").split(",")
    if "." in subscripts or len(inputs) != len(operands):
        return math.prod(getattr(o, "size", 1) for o in operands)
    lengths = {}
    for letters, operand in zip(inputs, operands):
        lengths.update(zip(letters, getattr(operand, "shape", ())))
    return math.prod(lengths.values())
