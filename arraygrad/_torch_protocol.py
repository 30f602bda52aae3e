"""torch's protocol on Variables: ``__torch_function__``, PyTorch's counterpart of NEP 13/18.

``torch.add(v, w)``, ``torch.sum(v, dim=0)``, ``F.cross_entropy(v, target)``,
``torch.linalg.inv(v)``, ``torch.special.expit(v)``, ``tensor + v`` record through the
differentiable namespace of a Variable of the torch backend, with torch's signatures (``dim=``,
``keepdim=``, ``correction=1``...). On that backend a Variable's own methods are torch's too
(``v.sum(dim=1)``, ``v.view(-1)``, ``v.max(0)`` giving values and indices), so PyTorch code runs
as it is written. Each entry below takes torch's arguments under torch's names; an argument it
does not take is refused by name, ``out=`` too (a recorded result is a new Variable). A torch
function with no entry raises a ``TypeError`` naming it: it never returns a tensor that silently
left the graph. ``docs/interop.md`` lists what is covered, generated from these tables.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import math
import sys

from ._grad_mode import no_grad

# ----------------------------------------------------------------------------- the tables
# torch's name -> the namespace's function of the same meaning and arguments (one array, or
# two operands that may be Python numbers).
SAME = {
    **{name: name for name in (
        "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "atan2", "ceil", "cos",
        "cosh", "exp", "expm1", "floor", "log", "log10", "log1p", "log2", "negative",
        "reciprocal", "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh", "trunc",
        "maximum", "minimum", "hypot", "copysign", "logaddexp", "nextafter", "signbit",
        "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_xor",
        "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "remainder", "conj",
        "real", "imag", "multiply", "divide", "subtract", "floor_divide", "matmul",
        "bitwise_left_shift", "bitwise_right_shift", "xlogy", "sinc")},
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
    "arcsinh": "asinh", "arctan": "atan", "arctanh": "atanh", "arctan2": "atan2",
    "neg": "negative", "fix": "trunc", "mul": "multiply", "true_divide": "divide",
    "eq": "equal", "ne": "not_equal", "not_equal": "not_equal",
    "lt": "less", "less": "less", "le": "less_equal", "less_equal": "less_equal",
    "gt": "greater", "greater": "greater", "ge": "greater_equal",
    "greater_equal": "greater_equal", "bitwise_not": "bitwise_invert", "conj_physical": "conj",
    "resolve_conj": "positive", "resolve_neg": "positive", "positive": "positive",
    "fmax": "maximum", "fmin": "minimum",
}
BINARY_SPECIAL = {"gammainc", "gammaincc"}
BINARY = {"atan2", "maximum", "minimum", "hypot", "copysign", "logaddexp", "nextafter",
          "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
          "remainder", "multiply", "divide", "subtract", "floor_divide", "matmul",
          "bitwise_left_shift", "bitwise_right_shift", "xlogy", "equal", "not_equal",
          "less", "less_equal", "greater", "greater_equal"}

# torch's name -> the namespace's special function (torch.special, and torch's aliases).
SPECIAL = {
    **{name: name for name in (
        "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "expit", "gammainc", "gammaincc",
        "gammaln", "i0", "i0e", "i1", "i1e", "log_ndtr", "ndtr", "ndtri", "psi")},
    "sigmoid": "expit", "lgamma": "gammaln", "igamma": "gammainc", "igammac": "gammaincc",
}


def _xp(xp, name):
    """``xp``'s function ``name`` (``special.erf`` in the special namespace)."""
    family, _, short = name.rpartition(".")
    return getattr(getattr(xp, family) if family else xp, short)


def _unary(standard):
    if "." in standard:
        return lambda xp, input: _xp(xp, standard)(input)
    return lambda xp, input: getattr(xp, standard)(input)


def _binary(standard):
    if standard in _STANDARD_BINARY:
        return lambda xp, input, other: getattr(xp, standard)(input, other)
    return lambda xp, input, other: _xp(xp, standard)(*_arrays(xp, input, other))


_STANDARD_BINARY = {"atan2", "maximum", "minimum", "hypot", "copysign", "logaddexp", "nextafter",
                    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
                    "bitwise_xor", "remainder", "multiply", "divide", "subtract",
                    "floor_divide", "matmul", "bitwise_left_shift", "bitwise_right_shift",
                    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                    "add", "pow"}


def _arrays(xp, *operands):
    """Python numbers among ``operands`` as arrays of the others' floating dtype: functions
    outside the standard (xlogy, the special functions) need arrays."""
    like = next(o for o in operands if _is_array(o))
    dtype = like.dtype if xp.isdtype(like.dtype, "real floating") else xp.float64
    return [o if _is_array(o) else xp.asarray(o, dtype=dtype, device=like.device)
            for o in operands]


def _dims(dim):
    """torch's ``dim``: None, an int, or a tuple (a list, or ``()`` for every axis)."""
    if isinstance(dim, list):
        dim = tuple(dim)
    return None if dim == () else dim


def _reduce(standard):
    def reduce(xp, input, dim=None, keepdim=False, *, dtype=None):
        result = _xp(xp, standard)(input, axis=_dims(dim), keepdims=keepdim)
        return result if dtype is None else xp.astype(result, dtype)
    return reduce


def _torch():
    return sys.modules["torch"]  # a __torch_function__ call comes from torch: it is imported


def _with_indices(standard, arg):
    """``max``/``min``: of all elements; with ``dim``, torch's (values, indices); with
    another tensor, elementwise."""
    def extreme(xp, input, dim=None, keepdim=False, *, other=None):
        if other is not None or _is_array(dim):
            return _xp(xp, "maximum" if standard == "max" else "minimum")(
                input, dim if other is None else other)
        if dim is None:
            return _xp(xp, standard)(input)
        values = _xp(xp, standard)(input, axis=dim, keepdims=keepdim)
        indices = _xp(xp, arg)(input, axis=dim, keepdims=keepdim)
        return getattr(_torch().return_types, standard)((values, indices))
    return extreme


def _spread(standard):
    """``std``/``var``: torch divides by n - 1 by default (``correction=1``)."""
    def spread(xp, input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        if isinstance(dim, bool):  # torch.std(x, False): unbiased given by position
            dim, unbiased = None, dim
        if correction is None:
            correction = 1 if unbiased is None else int(unbiased)
        return _xp(xp, standard)(input, axis=_dims(dim), keepdims=keepdim,
                                 correction=correction)
    return spread


def _spread_mean(standard):
    spread = _spread(standard)

    def spread_mean(xp, input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        return (spread(xp, input, dim, unbiased, keepdim, correction=correction),
                xp.mean(input, axis=_dims(dim), keepdims=keepdim))
    return spread_mean


def _cumulative(standard):
    def cumulative(xp, input, dim, *, dtype=None):
        if input.ndim == 0:  # torch takes dim 0 of a 0-d tensor
            return xp.reshape(_xp(xp, standard)(xp.reshape(input, (1,)), axis=0, dtype=dtype),
                              ())
        return _xp(xp, standard)(input, axis=dim, dtype=dtype)
    return cumulative


def _is_array(value):
    return hasattr(value, "__array_namespace__") or hasattr(value, "__torch_function__")


def _norm(xp, input, p="fro", dim=None, keepdim=False, dtype=None):
    x = input if dtype is None else xp.astype(input, dtype)
    if p == "nuc":
        return _matrix_norm(xp, x, "nuc", (-2, -1) if dim is None else dim, keepdim)
    return xp.linalg.vector_norm(x, ord=2 if p == "fro" else p, axis=_dims(dim),
                                 keepdims=keepdim)


def _vector_norm(xp, x, ord=2, dim=None, keepdim=False, *, dtype=None):
    x = x if dtype is None else xp.astype(x, dtype)
    return xp.linalg.vector_norm(x, ord=ord, axis=_dims(dim), keepdims=keepdim)


def _matrix_norm(xp, A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    A = A if dtype is None else xp.astype(A, dtype)
    if tuple(dim) != (-2, -1):
        A = xp.moveaxis(A, tuple(dim), (-2, -1))
    return xp.linalg.matrix_norm(A, ord=ord, keepdims=keepdim)


def _linalg_norm(xp, A, ord=None, dim=None, keepdim=False, *, dtype=None):
    if isinstance(dim, int) or (dim is None and A.ndim == 1) or (dim is None and ord is None):
        return _vector_norm(xp, A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    return _matrix_norm(xp, A, "fro" if ord is None else ord, dim or (-2, -1), keepdim,
                        dtype=dtype)


def _matrices(name, *ndims):
    """``mm``, ``bmm``, ``mv``, ``dot``: ``matmul`` of operands of the dimensions torch asks."""
    def product(xp, input, mat2):
        for operand, ndim in zip((input, mat2), ndims):
            if operand.ndim != ndim:
                raise ValueError(
                    f"torch.{name}() takes {'-D, '.join(map(str, ndims))}-D operands, got "
                    f"shapes {tuple(input.shape)} and {tuple(mat2.shape)}; torch.matmul "
                    "broadcasts")
        return xp.matmul(input, mat2)
    return product


def _add(xp, input, other, *, alpha=1):
    return xp.add(input, other if alpha == 1 else other * alpha)


def _sub(xp, input, other, *, alpha=1):
    return xp.subtract(input, other if alpha == 1 else other * alpha)


def _div(xp, input, other, *, rounding_mode=None):
    if rounding_mode is None:
        return xp.divide(input, other)
    if rounding_mode == "floor":
        return xp.floor_divide(input, other)
    if rounding_mode == "trunc":
        return xp.trunc(xp.divide(input, other))
    raise ValueError(f"torch.div(): rounding_mode must be None, 'trunc' or 'floor', got "
                     f"{rounding_mode!r}")


def _clamp(xp, input, min=None, max=None):
    return xp.clip(input, min, max)


def _addmm(xp, input, mat1, mat2, *, beta=1, alpha=1):
    product = xp.matmul(mat1, mat2)
    return (input if beta == 1 else beta * input) + (product if alpha == 1 else alpha * product)


def _addmv(xp, input, mat, vec, *, beta=1, alpha=1):
    return _addmm(xp, input, mat, vec, beta=beta, alpha=alpha)


def _baddbmm(xp, input, batch1, batch2, *, beta=1, alpha=1):
    return _addmm(xp, input, batch1, batch2, beta=beta, alpha=alpha)


def _addcmul(xp, input, tensor1, tensor2, *, value=1):
    return input + value * tensor1 * tensor2


def _addcdiv(xp, input, tensor1, tensor2, *, value=1):
    return input + value * tensor1 / tensor2


def _pow(xp, input, exponent):
    return xp.pow(input, exponent)


def _float_power(xp, input, exponent):
    return xp.pow(xp.astype(xp.asarray(input), xp.float64), exponent)


def _at_least(ndim):
    """``atleast_1d``/``2d``/``3d``: torch's shapes, (N,) -> (1, N) -> (1, N, 1), (M, N) ->
    (M, N, 1)."""
    def shape(t):
        shape = tuple(t.shape)
        return {0: (1,) * ndim, 1: (1,) * (ndim > 1) + shape + (1,) * (ndim > 2),
                2: shape + (1,) * (ndim > 2)}.get(len(shape), shape)

    def at_least(xp, *tensors):
        arrays = [xp.reshape(t, shape(t)) for t in _sizes(tensors)]
        return arrays[0] if len(arrays) == 1 else tuple(arrays)
    return at_least


def _heaviside(xp, input, values):
    return xp.where(input > 0, 1.0, xp.where(input < 0, 0.0, values + xp.zeros_like(input)))


def _nan_to_num(xp, input, nan=0.0, posinf=None, neginf=None):
    info = xp.finfo(input.dtype)
    result = xp.where(xp.isnan(input), nan, input)
    result = xp.where(result == math.inf, info.max if posinf is None else posinf, result)
    return xp.where(result == -math.inf, info.min if neginf is None else neginf, result)


def _rot90(xp, input, k=1, dims=(0, 1)):
    k %= 4
    first, second = dims
    if k == 0:
        return input
    if k == 2:
        return xp.flip(input, axis=(first, second))
    return _transpose(xp, xp.flip(input, axis=second if k == 1 else first), first, second)


def _logdet(xp, input):
    sign, logabsdet = xp.linalg.slogdet(input)
    return xp.where(sign > 0, logabsdet, math.nan)


def _aminmax(xp, input, *, dim=None, keepdim=False):
    return _torch().return_types.aminmax((xp.min(input, axis=dim, keepdims=keepdim),
                                          xp.max(input, axis=dim, keepdims=keepdim)))


def _logcumsumexp(xp, input, dim):
    top = xp.max(input, axis=dim, keepdims=True)
    top = xp.where(xp.isfinite(top), top, 0.0)
    return xp.log(xp.cumulative_sum(xp.exp(input - top), axis=dim)) + top


def _cdist(xp, x1, x2, p=2.0, compute_mode=None):
    return xp.linalg.vector_norm(x1[..., :, None, :] - x2[..., None, :, :], ord=p, axis=-1)


def _block_diag(xp, *tensors):
    matrices = [xp.reshape(t, (1, -1)) if t.ndim < 2 else t for t in tensors]
    columns = sum(m.shape[1] for m in matrices)
    rows, start = [], 0
    for m in matrices:
        rows.append(xp.pad(m, ((0, 0), (start, columns - start - m.shape[1]))))
        start += m.shape[1]
    return xp.concat(rows, axis=0)


def _angle(xp, input):
    if xp.isdtype(input.dtype, "complex floating"):
        return xp.atan2(xp.imag(input), xp.real(input))
    return xp.where(input < 0, math.pi, xp.where(xp.isnan(input), input, 0.0))


def _lerp(xp, input, end, weight):
    return input + weight * (end - input)


def _rsqrt(xp, input):
    return 1.0 / xp.sqrt(input)


def _round(xp, input, *, decimals=0):
    if decimals == 0:
        return xp.round(input)
    scale = 10.0 ** decimals
    return xp.round(input * scale) / scale


def _logit(xp, input, eps=None):
    if eps is not None:  # as torch's kernel: x < eps gives eps, then x > 1 - eps gives 1 - eps
        input = xp.where(input < eps, eps, xp.where(input > 1 - eps, 1 - eps, input))
    return xp.log(input) - xp.log1p(-input)


def _frac(xp, input):
    return input - xp.trunc(input)


def _exp2(xp, input):
    return 2.0 ** input


def _polygamma(xp, n, input):
    return xp.special.polygamma(n, input)


def _mvlgamma(xp, input, p):
    return xp.special.multigammaln(input, p)


def _logsumexp(xp, input, dim, keepdim=False):
    return xp.logsumexp(input, axis=_dims(dim), keepdims=keepdim)


def _softmax(standard, negate=False):
    def softmax(xp, input, dim=None, _stacklevel=3, dtype=None):
        if dim is None:  # torch's implicit choice (deprecated there, with a warning)
            dim = 0 if input.ndim in (0, 1, 3) else 1
        x = input if dtype is None else xp.astype(input, dtype)
        return _xp(xp, standard)(-x if negate else x, axis=dim)
    return softmax


# ---------------------------------------------------------------- shapes, joins, indexing
def _sizes(sizes):
    """``f(2, 3)`` or ``f((2, 3))`` or ``f(torch.Size([2, 3]))``: a tuple."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        return tuple(sizes[0])
    return tuple(sizes)


def _reshape(xp, input, *shape):
    return xp.reshape(input, _sizes(shape))


def _view(xp, input, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
        raise TypeError(f"Tensor.view({shape[0]!r}) reinterprets the bytes as another dtype, "
                        "which has no gradient: use x.to(dtype) to convert the values")
    return xp.reshape(input, _sizes(shape))


def _flatten(xp, input, start_dim=0, end_dim=-1):
    shape = tuple(input.shape)
    if not shape:
        return xp.reshape(input, (1,))
    start, end = start_dim % len(shape), end_dim % len(shape)
    return xp.reshape(input, shape[:start] + (-1,) + shape[end + 1:])


def _unflatten(xp, input, dim, sizes):
    shape = tuple(input.shape)
    dim %= len(shape)
    return xp.reshape(input, shape[:dim] + tuple(sizes) + shape[dim + 1:])


def _squeeze(xp, input, dim=None):
    dims = range(input.ndim) if dim is None else (dim,) if isinstance(dim, int) else dim
    axes = tuple(d for d in dims if input.shape[d] == 1)  # torch leaves other lengths
    return xp.squeeze(input, axis=axes) if axes else input


def _permute(xp, input, *dims):
    return xp.permute_dims(input, _sizes(dims))


def _transpose(xp, input, dim0, dim1):
    order = list(range(input.ndim))
    order[dim0], order[dim1] = order[dim1], order[dim0]
    return xp.permute_dims(input, tuple(order))


def _t(xp, input):
    if input.ndim > 2:
        raise ValueError(f"t() expects a tensor with <= 2 dimensions, got shape "
                         f"{tuple(input.shape)}: use x.mT or x.transpose(-2, -1)")
    return input if input.ndim < 2 else xp.permute_dims(input, (1, 0))


def _cat(xp, tensors, dim=0):
    tensors = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or list(tensors)
    return xp.concat(tensors, axis=dim)


def _stack(xp, tensors, dim=0):
    return xp.stack(list(tensors), axis=dim)


def _hstack(xp, tensors):
    return xp.concat(list(tensors), axis=0 if tensors[0].ndim == 1 else 1)


def _vstack(xp, tensors):
    return xp.concat([t if t.ndim >= 2 else xp.reshape(t, (1, -1)) for t in tensors], axis=0)


def _split(xp, tensor, split_size_or_sections, dim=0):
    length = tensor.shape[dim]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        sizes = [min(step, length - start) for start in range(0, length, step)]
    else:
        sizes = list(split_size_or_sections)
    pieces, start = [], 0
    for size in sizes:
        pieces.append(_narrow(xp, tensor, dim, start, size))
        start += size
    return tuple(pieces)


def _chunk(xp, input, chunks, dim=0):
    return _split(xp, input, -(-input.shape[dim] // chunks), dim)


def _unbind(xp, input, dim=0):
    return xp.unstack(input, axis=dim)


def _narrow(xp, input, dim, start, length):
    key = (slice(None),) * (dim % input.ndim) + (slice(start, start + length),)
    return input[key]


def _select(xp, input, dim, index):
    return input[(slice(None),) * (dim % input.ndim) + (index,)]


def _index_select(xp, input, dim, index):
    return xp.take(input, index, axis=dim)


def _gather(xp, input, dim, index):
    return xp.take_along_axis(input, index, axis=dim)


def _take(xp, input, index):
    return xp.reshape(xp.take(xp.reshape(input, (-1,)), xp.reshape(index, (-1,)), axis=0),
                      tuple(index.shape))


def _take_along_dim(xp, input, indices, dim=None):
    if dim is None:
        return xp.take_along_axis(xp.reshape(input, (-1,)), xp.reshape(indices, (-1,)), axis=0)
    return xp.take_along_axis(input, indices, axis=dim)


def _where(xp, condition, input=None, other=None):
    if input is None and other is None:
        return xp.nonzero(condition)
    return xp.where(condition, input, other)


def _masked_fill(xp, input, mask, value):
    return xp.where(mask, value, input)


def _flip(xp, input, *dims):
    return xp.flip(input, axis=_sizes(dims))


def _roll(xp, input, shifts, dims=None):
    return xp.roll(input, shifts, axis=dims)


def _expand(xp, input, *sizes):
    sizes = _sizes(sizes)
    shape = (1,) * (len(sizes) - input.ndim) + tuple(input.shape)
    return xp.broadcast_to(input, tuple(n if s == -1 else s for s, n in zip(sizes, shape)))


def _broadcast_to(xp, input, size):
    return xp.broadcast_to(input, tuple(size))


def _repeat(xp, input, *repeats):
    return xp.tile(input, _sizes(repeats))


def _tile(xp, input, dims):
    return xp.tile(input, tuple(dims))


def _repeat_interleave(xp, input, repeats, dim=None, *, output_size=None):
    return xp.repeat(input, repeats, axis=dim)


def _diag(xp, input, diagonal=0):
    if input.ndim == 2:
        return xp.linalg.diagonal(input, offset=diagonal)
    return _diag_embed(xp, input, diagonal)


def _diag_embed(xp, input, offset=0, dim1=-2, dim2=-1):
    """The last axis of ``input`` placed on diagonal ``offset`` of new axes dim1, dim2."""
    k = abs(offset)
    placed = xp.eye(input.shape[-1] + k, k=offset, dtype=input.dtype, device=input.device)
    padded = xp.pad(input, ((0, 0),) * (input.ndim - 1) + ((0, k),))
    result = placed * (padded[..., :, None] if offset >= 0 else padded[..., None, :])
    return xp.moveaxis(result, (-2, -1), (dim1, dim2))


def _diagonal(xp, input, offset=0, dim1=0, dim2=1):
    return xp.linalg.diagonal(xp.moveaxis(input, (dim1, dim2), (-2, -1)), offset=offset)


def _trace(xp, input):
    return xp.linalg.trace(input)


def _tril(xp, input, diagonal=0):
    return xp.tril(input, k=diagonal)


def _triu(xp, input, diagonal=0):
    return xp.triu(input, k=diagonal)


def _movedim(xp, input, source, destination):
    return xp.moveaxis(input, source, destination)


def _unsqueeze(xp, input, dim):
    return xp.expand_dims(input, axis=dim)


def _diff(xp, input, n=1, dim=-1, prepend=None, append=None):
    return xp.diff(input, n=n, axis=dim, prepend=prepend, append=append)


def _sort(xp, input, dim=-1, descending=False, stable=False):
    values = xp.sort(input, axis=dim, descending=descending, stable=stable)
    indices = xp.argsort(input, axis=dim, descending=descending, stable=stable)
    return _torch().return_types.sort((values, indices))


def _argsort(xp, input, dim=-1, descending=False, stable=False):
    return xp.argsort(input, axis=dim, descending=descending, stable=stable)


def _topk(xp, input, k, dim=-1, largest=True, sorted=True):
    order = xp.argsort(input, axis=dim, descending=largest, stable=True)
    indices = _narrow(xp, order, dim, 0, k)
    return _torch().return_types.topk((xp.take_along_axis(input, indices, axis=dim), indices))


def _argextreme(standard):
    def arg(xp, input, dim=None, keepdim=False):
        return _xp(xp, standard)(input, axis=dim, keepdims=keepdim)
    return arg


def _meshgrid(xp, *tensors, indexing="ij"):
    return xp.meshgrid(*_sizes(tensors), indexing=indexing)


def _einsum(xp, equation, *operands):
    return xp.einsum(equation, *_sizes(operands))


def _tensordot(xp, a, b, dims=2, out=None):
    return xp.tensordot(a, b, axes=dims)


def _cross(xp, input, other, dim=None):
    if dim is None:  # torch's default: the first axis of length 3
        dim = next((i for i, n in enumerate(input.shape) if n == 3), -1)
    return xp.linalg.cross(input, other, axis=dim)


def _inner(xp, input, other):
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    return xp.tensordot(input, other, axes=((input.ndim - 1,), (other.ndim - 1,)))


def _outer(xp, input, vec2):
    return input[:, None] * vec2[None, :]


def _vdot(xp, input, other):
    return xp.vecdot(input, other)


def _like(standard):
    def like(xp, input, *, dtype=None, layout=None, device=None, requires_grad=False,
             memory_format=None):
        return getattr(xp, standard)(input, dtype=dtype)
    return like


def _full_like(xp, input, fill_value, *, dtype=None, layout=None, device=None,
               requires_grad=False, memory_format=None):
    return xp.full_like(input, fill_value, dtype=dtype)


def _random_like(name):
    """``rand_like``, ``randn_like``: torch's random values (constants), as a Variable."""
    def random_like(xp, input, *, dtype=None, layout=None, device=None, requires_grad=False,
                    memory_format=None):
        return xp.asarray(getattr(_torch(), name)(_raw(input), dtype=dtype))
    return random_like


def _raw(value):
    return value.data if hasattr(value, "_inplace_assign") else value


# ------------------------------------------------------------------------ Tensor's methods
def _size(xp, input, dim=None):
    shape = _torch().Size(input.shape)
    return shape if dim is None else shape[dim]


def _to(xp, input, *args, **kwargs):
    """``x.to(dtype)``, ``x.to(other)``, ``x.to(device)``: a dtype converts (recorded); a
    device other than the Variable's is refused (arraygrad keeps a graph on one device)."""
    kwargs.pop("non_blocking", None)
    kwargs.pop("copy", None)
    dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
    torch = _torch()
    for arg in args:
        if isinstance(arg, torch.dtype):
            dtype = arg
        elif _is_array(arg):
            dtype, device = arg.dtype, arg.device
        elif isinstance(arg, (str, torch.device)):
            device = arg
    if kwargs:
        raise TypeError(f"Tensor.to() got an unexpected keyword argument {next(iter(kwargs))!r}")
    if device is not None and torch.device(device) != input.device:
        raise ValueError(
            f"x.to({device!r}): this Variable is on {input.device}; arraygrad records a graph "
            "on one device, so make the Variable from a tensor on that device "
            "(Variable(t.to(device)))")
    return input if dtype is None or dtype == input.dtype else xp.astype(input, dtype)


def _tensor_type(dtype):
    """``x.type(torch.float64)`` or ``x.type("torch.DoubleTensor")``: a dtype."""
    if isinstance(dtype, str):
        return getattr(_torch(), dtype.rpartition(".")[2]).dtype
    return getattr(dtype, "dtype", dtype)  # torch.DoubleTensor has a dtype


def _astype_to(name):
    return lambda xp, input, memory_format=None: xp.astype(input, getattr(_torch(), name))


def _type_as(xp, input, other):
    return xp.astype(input, other.dtype)


def _detach(xp, input):
    return input.detach() if hasattr(input, "_inplace_assign") else input


def _clone(xp, input, *, memory_format=None):
    return xp.asarray(input, copy=True)


def _contiguous(xp, input, memory_format=None):
    return input


def _identity(xp, input):
    return input


def _item(xp, input):
    return input.item()


def _tolist(xp, input):
    return input.tolist()


def _numel(xp, input):
    return math.prod(input.shape)


def _ndim(xp, input):
    return input.ndim


def _getitem(xp, input, index):
    return xp.asarray(input)[_raw_index(index)]


def _raw_index(index):
    """An index holding integer or boolean Variables: their values (they carry no gradient)."""
    if isinstance(index, tuple):
        return tuple(_raw(i) for i in index)
    return _raw(index)


def _reflected(standard):
    return lambda xp, input, other: _xp(xp, standard)(other, input)


# --------------------------------------------------------- torch.nn.functional: activations
def _relu(xp, input):
    return xp.where(input > 0, input, 0.0)


def _relu6(xp, input):
    return _hardtanh(xp, input, 0.0, 6.0)


def _leaky_relu(xp, input, negative_slope=0.01):
    return xp.where(input > 0, input, input * negative_slope)


def _elu(xp, input, alpha=1.0):
    return xp.where(input > 0, input, alpha * xp.expm1(input))


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _selu(xp, input):
    return _SELU_SCALE * _elu(xp, input, _SELU_ALPHA)


def _celu(xp, input, alpha=1.0):
    return xp.where(input > 0, input, alpha * xp.expm1(input / alpha))


def _gelu(xp, input, approximate="none"):
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (input + 0.044715 * input ** 3)
        return 0.5 * input * (1 + xp.tanh(inner))
    return 0.5 * input * (1 + xp.special.erf(input / math.sqrt(2)))


def _sigmoid(xp, input):
    return xp.special.expit(input)


def _silu(xp, input):
    return input * xp.special.expit(input)


def _softplus(xp, input, beta=1.0, threshold=20.0):
    scaled = input * beta
    smooth = xp.logaddexp(xp.zeros_like(scaled), scaled) / beta
    return xp.where(scaled > threshold, input, smooth)


def _mish(xp, input):
    return input * xp.tanh(_softplus(xp, input))


def _softsign(xp, input):
    return input / (1 + xp.abs(input))


def _hardtanh(xp, input, min_val=-1.0, max_val=1.0):
    return xp.where(input < min_val, min_val, xp.where(input > max_val, max_val, input))


def _hardsigmoid(xp, input):
    return _hardtanh(xp, input / 6 + 0.5, 0.0, 1.0)


def _hardswish(xp, input):
    return input * _hardsigmoid(xp, input)


def _logsigmoid(xp, input):
    return -_softplus(xp, -input)


def _tanhshrink(xp, input):
    return input - xp.tanh(input)


def _softshrink(xp, input, lambd=0.5):
    return xp.where(input > lambd, input - lambd, xp.where(input < -lambd, input + lambd, 0.0))


def _hardshrink(xp, input, lambd=0.5):
    return xp.where(xp.abs(input) > lambd, input, 0.0)


def _threshold(xp, input, threshold, value):
    return xp.where(input > threshold, input, value)


def _glu(xp, input, dim=-1):
    a, b = _chunk(xp, input, 2, dim)
    return a * xp.special.expit(b)


def _normalize(xp, input, p=2.0, dim=1, eps=1e-12):
    norm = xp.linalg.vector_norm(input, ord=p, axis=dim, keepdims=True)
    return input / xp.maximum(norm, eps)


def _linear(xp, input, weight, bias=None):
    result = xp.matmul(input, xp.matrix_transpose(weight) if weight.ndim > 1 else weight)
    return result if bias is None else result + bias


def _bilinear(xp, input1, input2, weight, bias=None):
    result = xp.einsum("...i,oij,...j->...o", input1, weight, input2)
    return result if bias is None else result + bias


def _dropout(xp, input, p=0.5, training=True):
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0.0
    raw = _raw(input)
    keep = _torch().rand(raw.shape, dtype=raw.dtype, device=raw.device) >= p
    return xp.where(keep, input / (1 - p), 0.0)


def _embedding(xp, input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
               scale_grad_by_freq=False, sparse=False):
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise TypeError("F.embedding() with max_norm, scale_grad_by_freq or sparse is not "
                        "supported on Variables: index the weight (weight[indices])")
    indices = _raw(input)
    rows = xp.take(weight, xp.reshape(xp.asarray(indices), (-1,)), axis=0)
    rows = xp.reshape(rows, tuple(indices.shape) + tuple(weight.shape[1:]))
    if padding_idx is not None:  # the padding row gets no gradient
        rows = xp.where((xp.asarray(indices) == padding_idx)[..., None], xp.zeros_like(rows),
                        rows)
    return rows


def _one_hot(xp, tensor, num_classes=-1):
    return xp.asarray(_torch().nn.functional.one_hot(_raw(tensor), num_classes))


def _layer_norm(xp, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    axes = tuple(range(-len(tuple(normalized_shape)), 0))
    mean = xp.mean(input, axis=axes, keepdims=True)
    var = xp.var(input, axis=axes, keepdims=True)
    result = (input - mean) / xp.sqrt(var + eps)
    result = result if weight is None else result * weight
    return result if bias is None else result + bias


def _batch_norm(xp, input, running_mean, running_var, weight=None, bias=None, training=False,
                momentum=0.1, eps=1e-5):
    axes = (0,) + tuple(range(2, input.ndim))
    shape = (1, -1) + (1,) * (input.ndim - 2)
    if training:
        mean = xp.mean(input, axis=axes)
        var = xp.var(input, axis=axes)
        if running_mean is not None:  # torch's running statistics: updated in place, unbiased
            n = math.prod(input.shape) / input.shape[1]
            _raw(running_mean).mul_(1 - momentum).add_(momentum * _raw(mean))
            _raw(running_var).mul_(1 - momentum).add_(momentum * _raw(var) * n / max(n - 1, 1))
    else:
        mean, var = running_mean, running_var
    result = (input - xp.reshape(mean, shape)) / xp.sqrt(xp.reshape(var, shape) + eps)
    result = result if weight is None else result * xp.reshape(weight, shape)
    return result if bias is None else result + xp.reshape(bias, shape)


def _cosine_similarity(xp, x1, x2, dim=1, eps=1e-8):
    n1 = xp.linalg.vector_norm(x1, axis=dim)
    n2 = xp.linalg.vector_norm(x2, axis=dim)
    return xp.sum(x1 * x2, axis=dim) / xp.maximum(n1 * n2, eps)


def _pairwise_distance(xp, x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return xp.linalg.vector_norm(x1 - x2 + eps, ord=p, axis=-1, keepdims=keepdim)


def _pad(xp, input, pad, mode="constant", value=None):
    if mode != "constant":
        raise TypeError(f"F.pad(mode={mode!r}) is not supported on Variables: only "
                        "mode='constant' is; compose the others with cat and flip")
    pad = list(pad)
    widths = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        widths[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return xp.pad(input, tuple(widths), constant_values=0.0 if value is None else value)


# ------------------------------------------- torch.nn.functional: convolutions and pooling
# Sliding windows taken by strided slices (one per kernel offset) and stacked: each window is
# a recorded slice, so convolutions and pools need no rule of their own.
def _tuple(value, d):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * d


def _windows(xp, input, kernel, stride, padding, dilation, fill=0.0):
    """``input`` (N, C, *spatial) as (N, C, *out, prod(kernel)): its windows, padded with
    ``fill`` by ``padding``, a (before, after) pair per spatial axis."""
    d = len(kernel)
    if any(p for pair in padding for p in pair):
        input = xp.pad(input, ((0, 0),) * (input.ndim - d) + tuple(padding),
                       constant_values=fill)
    out = [(n - dil * (k - 1) - 1) // st + 1
           for n, k, st, dil in zip(input.shape[-d:], kernel, stride, dilation)]
    if any(n <= 0 for n in out):
        raise ValueError(f"the kernel {tuple(kernel)} (dilation {tuple(dilation)}) is larger "
                         f"than the padded input, of spatial shape {tuple(input.shape[-d:])}")
    windows = []
    for offsets in itertools.product(*(range(k) for k in kernel)):
        key = (Ellipsis,) + tuple(slice(o * dil, o * dil + st * (m - 1) + 1, st)
                                  for o, dil, st, m in zip(offsets, dilation, stride, out))
        windows.append(input[key])
    return xp.stack(windows, axis=-1)


def _pads(padding, kernel, dilation):
    """torch's ``padding`` (an int, a tuple, 'valid' or 'same') as (before, after) pairs."""
    if padding == "valid":
        return ((0, 0),) * len(kernel)
    if padding == "same":  # torch puts the odd one after
        totals = [dil * (k - 1) for k, dil in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    return tuple((p, p) for p in _tuple(padding, len(kernel)))


def _conv(d):
    def conv(xp, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        unbatched = input.ndim == d + 1
        x = input[None] if unbatched else input
        kernel = tuple(weight.shape[2:])
        dilation = _tuple(dilation, d)
        windows = _windows(xp, x, kernel, _tuple(stride, d), _pads(padding, kernel, dilation),
                           dilation)  # (N, C, *out, K)
        channels, out_channels = x.shape[1], weight.shape[0]
        per_group, out_per_group = channels // groups, out_channels // groups
        results = []
        for g in range(groups):
            part = windows[:, g * per_group:(g + 1) * per_group]
            part = xp.moveaxis(part, 1, -2)  # (N, *out, C, K)
            part = xp.reshape(part, tuple(part.shape[:-2]) + (-1,))
            w = xp.reshape(weight[g * out_per_group:(g + 1) * out_per_group],
                           (out_per_group, -1))
            results.append(xp.matmul(part, xp.matrix_transpose(w)))  # (N, *out, O/g)
        result = results[0] if groups == 1 else xp.concat(results, axis=-1)
        result = xp.moveaxis(result, -1, 1)
        if bias is not None:
            result = result + xp.reshape(bias, (-1,) + (1,) * d)
        return result[0] if unbatched else result
    return conv


def _pool(d, reduce):
    def pool(xp, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
             return_indices=False):
        if ceil_mode or return_indices:
            raise TypeError(f"max_pool{d}d() with ceil_mode=True or return_indices=True is "
                            "not supported on Variables: pad the input, or use argmax on the "
                            "windows for the indices")
        kernel = _tuple(kernel_size, d)
        stride = kernel if stride is None or stride == [] else _tuple(stride, d)
        unbatched = input.ndim == d + 1
        x = input[None] if unbatched else input
        windows = _windows(xp, x, kernel, stride, _pads(padding, kernel, (1,) * d),
                           _tuple(dilation, d), fill=-math.inf)
        result = xp.max(windows, axis=-1)
        return result[0] if unbatched else result
    return pool


def _avg_pool(d):
    def pool(xp, input, kernel_size, stride=None, padding=0, ceil_mode=False,
             count_include_pad=True, divisor_override=None):
        if ceil_mode:
            raise TypeError(f"avg_pool{d}d(ceil_mode=True) is not supported on Variables: "
                            "pad the input")
        kernel = _tuple(kernel_size, d)
        stride = kernel if stride is None or stride == [] else _tuple(stride, d)
        pads = _pads(padding, kernel, (1,) * d)
        unbatched = input.ndim == d + 1
        x = input[None] if unbatched else input
        total = xp.sum(_windows(xp, x, kernel, stride, pads, (1,) * d), axis=-1)
        if divisor_override:
            result = total / divisor_override
        elif count_include_pad or not any(p for pair in pads for p in pair):
            result = total / math.prod(kernel)
        else:
            ones = xp.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype, device=x.device)
            result = total / xp.sum(_windows(xp, ones, kernel, stride, pads, (1,) * d), axis=-1)
        return result[0] if unbatched else result
    return pool


def _adaptive(d, reduce):
    """Adaptive pooling, one spatial axis at a time (a window is a product of intervals, so
    the mean and the max of one are those of its rows' means and maxima)."""
    def pool(xp, input, output_size, return_indices=False):
        if return_indices:
            raise TypeError("adaptive max pooling with return_indices=True is not supported on "
                            "Variables")
        result = input
        for axis, size in zip(range(-d, 0), _tuple(output_size, d)):
            n = result.shape[axis]
            size = n if size is None else size
            if size == 0:  # an empty output, as torch gives
                result = result[(Ellipsis, slice(0, 0)) + (slice(None),) * (-axis - 1)]
                continue
            parts = []
            for i in range(size):
                start, end = (i * n) // size, -((-(i + 1) * n) // size)
                key = (Ellipsis, slice(start, end)) + (slice(None),) * (-axis - 1)
                parts.append(getattr(xp, reduce)(result[key], axis=axis, keepdims=True))
            result = xp.concat(parts, axis=axis)
        return result
    return pool


# ------------------------------------------------------------- torch.nn.functional: losses
def _reduction(xp, name, loss, reduction, size_average=None, reduce=None, weight_sum=None):
    if size_average is not None or reduce is not None:
        raise TypeError(f"F.{name}(): size_average= and reduce= are deprecated in torch; use "
                        "reduction='mean', 'sum' or 'none'")
    if reduction == "none":
        return loss
    if reduction == "sum":
        return xp.sum(loss)
    if reduction == "mean":
        return xp.mean(loss) if weight_sum is None else xp.sum(loss) / weight_sum
    if reduction == "batchmean":
        return xp.sum(loss) / loss.shape[0]
    raise ValueError(f"F.{name}(): reduction must be 'none', 'mean' or 'sum', got "
                     f"{reduction!r}")


def _pointwise_loss(name, pointwise):
    def loss(xp, input, target, size_average=None, reduce=None, reduction="mean",
             weight=None, **options):
        value = pointwise(xp, input, target, **options)
        value = value if weight is None else value * weight
        return _reduction(xp, name, value, reduction, size_average, reduce)
    loss.__signature__ = _loss_signature(pointwise)
    return loss


def _loss_signature(pointwise):
    P = inspect.Parameter
    extra = list(inspect.signature(pointwise).parameters.values())[3:]
    names = ("xp", "input", "target", "size_average", "reduce", "reduction", "weight")
    defaults = (P.empty, P.empty, P.empty, None, None, "mean", None)
    return inspect.Signature([P(n, P.POSITIONAL_OR_KEYWORD, default=d)
                              for n, d in zip(names, defaults)] +
                             [p.replace(kind=P.KEYWORD_ONLY) for p in extra])


def _smooth_l1(xp, input, target, beta=1.0):
    diff = xp.abs(input - target)
    if beta == 0:
        return diff
    return xp.where(diff < beta, 0.5 * diff * diff / beta, diff - 0.5 * beta)


def _huber(xp, input, target, delta=1.0):
    diff = xp.abs(input - target)
    return xp.where(diff < delta, 0.5 * diff * diff, delta * (diff - 0.5 * delta))


def _bce(xp, input, target):
    # torch clamps each log at -100, so that a prediction of exactly 0 or 1 costs 100
    return -(target * xp.maximum(xp.log(input), -100.0)
             + (1 - target) * xp.maximum(xp.log1p(-input), -100.0))


def _bce_with_logits(xp, input, target, pos_weight=None):
    log_weight = 1 if pos_weight is None else 1 + (pos_weight - 1) * target
    return (1 - target) * input + log_weight * _softplus(xp, -input, 1.0, math.inf)


def _kl_div_pointwise(xp, input, target, log_target=False):
    if log_target:
        return xp.exp(target) * (target - input)
    return xp.xlogy(target, target) - target * input


def _kl_div(xp, input, target, size_average=None, reduce=None, reduction="mean",
            log_target=False):
    return _reduction(xp, "kl_div", _kl_div_pointwise(xp, input, target, log_target),
                      reduction, size_average, reduce)


def _soft_margin(xp, input, target):
    return _softplus(xp, -target * input, 1.0, math.inf)


def _poisson_nll_loss(xp, input, target, log_input=True, full=False, size_average=None,
                      eps=1e-8, reduce=None, reduction="mean"):
    loss = xp.exp(input) - target * input if log_input else input - target * xp.log(input + eps)
    if full:
        stirling = target * xp.log(target) - target + 0.5 * xp.log(2 * math.pi * target)
        loss = loss + xp.where(target > 1, stirling, 0.0)
    return _reduction(xp, "poisson_nll_loss", loss, reduction, size_average, reduce)


def _margin_ranking_loss(xp, input1, input2, target, margin=0.0, size_average=None,
                         reduce=None, reduction="mean"):
    loss = xp.maximum(-target * (input1 - input2) + margin, 0.0)
    return _reduction(xp, "margin_ranking_loss", loss, reduction, size_average, reduce)


def _nll_loss(xp, input, target, weight=None, size_average=None, ignore_index=-100,
              reduce=None, reduction="mean"):
    target = xp.asarray(_raw(target))
    if input.ndim == 1:  # one sample: (C,) and a 0-d target
        input, target = input[None, :], xp.reshape(target, (1,))
    kept = target != ignore_index
    safe = xp.where(kept, target, xp.zeros_like(target))
    picked = xp.squeeze(xp.take_along_axis(input, xp.expand_dims(safe, axis=1), axis=1),
                        axis=1)
    weights = xp.astype(kept, input.dtype)
    if weight is not None:
        weights = weights * xp.reshape(xp.take(weight, xp.reshape(safe, (-1,)), axis=0),
                                       tuple(safe.shape))
    return _reduction(xp, "nll_loss", -picked * weights, reduction, size_average, reduce,
                      weight_sum=xp.sum(weights) if reduction == "mean" else None)


def _cross_entropy(xp, input, target, weight=None, size_average=None, ignore_index=-100,
                   reduce=None, reduction="mean", label_smoothing=0.0):
    dim = 0 if input.ndim == 1 else 1
    log_p = xp.log_softmax(input, axis=dim)
    classes = input.shape[dim]
    if _raw(target).dtype == _raw(input).dtype:  # class probabilities
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        w = 1 if weight is None else xp.reshape(weight, (-1,) + (1,) * (input.ndim - 2))
        loss = -xp.sum(log_p * target * w, axis=dim)
        return _reduction(xp, "cross_entropy", loss, reduction, size_average, reduce)
    nll = _nll_loss(xp, log_p, target, weight, size_average, ignore_index, reduce, reduction)
    if not label_smoothing:
        return nll
    target = xp.asarray(_raw(target))
    kept = xp.astype(target != ignore_index, input.dtype)
    w = 1 if weight is None else xp.reshape(weight, (-1,) + (1,) * (input.ndim - 2))
    smooth = -xp.sum(log_p * w, axis=dim) * kept
    if reduction == "mean":
        if weight is None:
            smooth = xp.sum(smooth) / xp.sum(kept)
        else:
            safe = xp.where(target != ignore_index, target, xp.zeros_like(target))
            picked_w = xp.reshape(xp.take(weight, xp.reshape(safe, (-1,)), axis=0),
                                  tuple(safe.shape))
            smooth = xp.sum(smooth) / xp.sum(picked_w * kept)
    else:
        smooth = _reduction(xp, "cross_entropy", smooth, reduction)
    return (1 - label_smoothing) * nll + label_smoothing / classes * smooth


# ------------------------------------------------------------------------- the full table
FUNCTIONS = {
    **{name: (_binary if standard in BINARY else _unary)(standard)
       for name, standard in SAME.items()},
    **{name: (_binary if standard in BINARY_SPECIAL else _unary)("special." + standard)
       for name, standard in SPECIAL.items()},
    "xlog1py": _binary("special.xlog1py"), "xlogy": _binary("xlogy"),
    "add": _add, "sub": _sub, "subtract": _sub, "div": _div, "divide": _div,
    "fmod": lambda xp, input, other: input - xp.trunc(input / other) * other,
    "clamp": _clamp, "clip": _clamp,
    "clamp_min": lambda xp, input, min: xp.clip(input, min, None),
    "clamp_max": lambda xp, input, max: xp.clip(input, None, max),
    "pow": _pow, "float_power": _float_power, "addcmul": _addcmul, "addcdiv": _addcdiv,
    "atleast_1d": _at_least(1), "atleast_2d": _at_least(2), "atleast_3d": _at_least(3),
    "heaviside": _heaviside, "nan_to_num": _nan_to_num, "rot90": _rot90, "logdet": _logdet,
    "aminmax": _aminmax, "logcumsumexp": _logcumsumexp, "cdist": _cdist,
    "block_diag": _block_diag, "sgn": _unary("sign"), "negative": _unary("negative"),
    "square": _unary("square"), "column_stack": lambda xp, tensors: xp.concat(
        [t if t.ndim == 2 else xp.reshape(t, (-1, 1)) for t in tensors], axis=1),
    "dstack": lambda xp, tensors: xp.concat([_at_least(3)(xp, t) for t in tensors], axis=2),
    "matrix_power": lambda xp, input, n: xp.linalg.matrix_power(input, n),
    "det": _unary("linalg.det"), "inverse": _unary("linalg.inv"),
    "slogdet": lambda xp, input: _torch().return_types.slogdet(xp.linalg.slogdet(input)),
    "pinverse": lambda xp, input, rcond=1e-15: xp.linalg.pinv(input, rtol=rcond),
    "cholesky": lambda xp, input, upper=False: xp.linalg.cholesky(input, upper=upper),
    "logaddexp": _binary("logaddexp"), "softplus": _softplus, "relu6": _relu6,
    "lerp": _lerp, "rsqrt": _rsqrt, "round": _round, "logit": _logit, "frac": _frac,
    "exp2": _exp2, "polygamma": _polygamma, "mvlgamma": _mvlgamma, "multigammaln": _mvlgamma,
    "deg2rad": lambda xp, input: input * (math.pi / 180),
    "rad2deg": lambda xp, input: input * (180 / math.pi),
    "logaddexp2": lambda xp, input, other: xp.logaddexp(
        input * math.log(2), other * math.log(2)) / math.log(2),
    "angle": _angle,
    # reductions
    "sum": _reduce("sum"), "mean": _reduce("mean"), "prod": _reduce("prod"),
    "nansum": lambda xp, input, dim=None, keepdim=False, *, dtype=None: _reduce("sum")(
        xp, xp.where(xp.isnan(input), 0.0, input), dim, keepdim, dtype=dtype),
    "amax": _reduce("max"), "amin": _reduce("min"),
    "max": _with_indices("max", "argmax"), "min": _with_indices("min", "argmin"),
    "std": _spread("std"), "var": _spread("var"),
    "std_mean": _spread_mean("std"), "var_mean": _spread_mean("var"),
    "all": _argextreme("all"), "any": _argextreme("any"),
    "argmax": _argextreme("argmax"), "argmin": _argextreme("argmin"),
    "count_nonzero": lambda xp, input, dim=None: xp.count_nonzero(input, axis=_dims(dim)),
    "cumsum": _cumulative("cumulative_sum"), "cumprod": _cumulative("cumulative_prod"),
    "logsumexp": _logsumexp, "norm": _norm,
    "softmax": _softmax("softmax"), "log_softmax": _softmax("log_softmax"),
    "softmin": _softmax("softmax", negate=True),
    # products
    "mm": _matrices("mm", 2, 2), "bmm": _matrices("bmm", 3, 3),
    "mv": lambda xp, input, vec: _matrices("mv", 2, 1)(xp, input, vec),
    "dot": _matrices("dot", 1, 1), "vdot": _vdot, "inner": _inner, "outer": _outer,
    "ger": _outer, "einsum": _einsum, "tensordot": _tensordot, "addmm": _addmm,
    "addmv": _addmv, "baddbmm": _baddbmm, "cross": _cross, "trace": _trace, "diag": _diag,
    "diagonal": _diagonal, "diag_embed": _diag_embed, "tril": _tril, "triu": _triu,
    "kron": lambda xp, input, other: xp.reshape(
        input[:, None, :, None] * other[None, :, None, :],
        (input.shape[0] * other.shape[0], input.shape[1] * other.shape[1]))
    if input.ndim == other.ndim == 2 else xp.reshape(input[:, None] * other[None, :], (-1,)),
    # shapes, joins, indexing
    "reshape": _reshape, "flatten": _flatten, "unflatten": _unflatten, "squeeze": _squeeze,
    "unsqueeze": _unsqueeze, "permute": _permute, "transpose": _transpose,
    "swapaxes": _transpose, "swapdims": _transpose, "t": _t, "movedim": _movedim,
    "moveaxis": _movedim, "cat": _cat, "concat": _cat, "concatenate": _cat, "stack": _stack,
    "hstack": _hstack, "vstack": _vstack, "split": _split, "chunk": _chunk, "unbind": _unbind,
    "narrow": _narrow, "select": _select, "index_select": _index_select, "gather": _gather,
    "take": _take, "take_along_dim": _take_along_dim, "where": _where,
    "masked_fill": _masked_fill, "flip": _flip,
    "fliplr": lambda xp, input: xp.flip(input, axis=1),
    "flipud": lambda xp, input: xp.flip(input, axis=0),
    "roll": _roll, "broadcast_to": _broadcast_to,
    "broadcast_tensors": lambda xp, *tensors: tuple(xp.broadcast_arrays(*tensors)),
    "tile": _tile, "repeat_interleave": _repeat_interleave, "diff": _diff,
    "sort": _sort, "argsort": _argsort, "topk": _topk, "meshgrid": _meshgrid,
    "nonzero": lambda xp, input, *, as_tuple=False: xp.nonzero(input) if as_tuple else
    xp.stack(xp.nonzero(input), axis=-1),
    "zeros_like": _like("zeros_like"), "ones_like": _like("ones_like"),
    "empty_like": _like("empty_like"), "full_like": _full_like,
    "rand_like": _random_like("rand_like"), "randn_like": _random_like("randn_like"),
    "clone": _clone, "detach": _detach, "numel": _numel,
    "is_floating_point": lambda xp, input: xp.isdtype(input.dtype, "real floating"),
    "is_complex": lambda xp, input: xp.isdtype(input.dtype, "complex floating"),
    "isclose": lambda xp, input, other, rtol=1e-5, atol=1e-8, equal_nan=False:
    xp.abs(input - other) <= atol + rtol * xp.abs(other),
    "allclose": lambda xp, input, other, rtol=1e-5, atol=1e-8, equal_nan=False:
    bool(xp.all(xp.abs(input - other) <= atol + rtol * xp.abs(other))),
    "equal": lambda xp, input, other: tuple(input.shape) == tuple(other.shape) and bool(
        xp.all(input == other)),
    "relu": _relu, "selu": _selu, "celu": _celu, "threshold": _threshold,
    "hardshrink": _hardshrink,
}

# torch.nn.functional: its activations and losses (where not the function of the same name
# above; F.relu is torch.relu's entry).
NN_FUNCTIONAL = {
    "relu6": _relu6, "leaky_relu": _leaky_relu, "elu": _elu, "gelu": _gelu,
    "sigmoid": _sigmoid, "silu": _silu, "softplus": _softplus, "mish": _mish,
    "softsign": _softsign, "hardtanh": _hardtanh, "hardsigmoid": _hardsigmoid,
    "hardswish": _hardswish, "logsigmoid": _logsigmoid, "tanhshrink": _tanhshrink,
    "softshrink": _softshrink, "glu": _glu, "normalize": _normalize, "linear": _linear,
    "bilinear": _bilinear, "dropout": _dropout, "embedding": _embedding, "one_hot": _one_hot,
    "layer_norm": _layer_norm, "batch_norm": _batch_norm,
    "cosine_similarity": _cosine_similarity, "pairwise_distance": _pairwise_distance,
    "pad": _pad, **{f"conv{d}d": _conv(d) for d in (1, 2, 3)},
    **{f"max_pool{d}d": _pool(d, "max") for d in (1, 2, 3)},
    **{f"avg_pool{d}d": _avg_pool(d) for d in (1, 2, 3)},
    **{f"adaptive_avg_pool{d}d": _adaptive(d, "mean") for d in (1, 2, 3)},
    **{f"adaptive_max_pool{d}d": _adaptive(d, "max") for d in (1, 2, 3)},
    "mse_loss": _pointwise_loss("mse_loss", lambda xp, input, target: (input - target) ** 2),
    "l1_loss": _pointwise_loss("l1_loss", lambda xp, input, target: xp.abs(input - target)),
    "smooth_l1_loss": _pointwise_loss("smooth_l1_loss", _smooth_l1),
    "huber_loss": _pointwise_loss("huber_loss", _huber),
    "binary_cross_entropy": _pointwise_loss("binary_cross_entropy", _bce),
    "binary_cross_entropy_with_logits": _pointwise_loss("binary_cross_entropy_with_logits",
                                                        _bce_with_logits),
    "soft_margin_loss": _pointwise_loss("soft_margin_loss", _soft_margin),
    "kl_div": _kl_div, "nll_loss": _nll_loss, "cross_entropy": _cross_entropy,
    "poisson_nll_loss": _poisson_nll_loss, "margin_ranking_loss": _margin_ranking_loss,
}
# (torch.layer_norm, torch.batch_norm, torch.embedding, torch.kl_div... take other arguments
# than F's functions of the same name, in another order: they have no entry.)
FUNCTIONS.update({name: NN_FUNCTIONAL[name] for name in (
    "conv1d", "conv2d", "conv3d", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
    "adaptive_avg_pool1d")})
FUNCTIONS.update(sigmoid=_sigmoid, dropout=_dropout, cosine_similarity=_cosine_similarity,
                 pairwise_distance=_pairwise_distance, bilinear=_bilinear)

def _pinv(xp, A, rcond=None, hermitian=False, *, atol=None, rtol=None):
    if atol is not None:
        raise TypeError("torch.linalg.pinv(atol=...) is not supported on Variables: give "
                        "rtol= (relative to the largest singular value)")
    rtol = rtol if rtol is not None else rcond
    return xp.linalg.pinv(A) if rtol is None else xp.linalg.pinv(A, rtol=rtol)


# torch.linalg (where not the function of the same name above).
LINALG = {
    **{name: _unary("linalg." + name) for name in (
        "inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", "svdvals", "eigvals",
        "eig")},
    "pinv": _pinv,
    "solve": lambda xp, A, B, *, left=True: xp.linalg.solve(A, B) if left else
    xp.matrix_transpose(xp.linalg.solve(xp.matrix_transpose(A), xp.matrix_transpose(B))),
    "cholesky": lambda xp, A, *, upper=False: xp.linalg.cholesky(A, upper=upper),
    "qr": lambda xp, A, mode="reduced": xp.linalg.qr(A, mode=mode),
    "eigh": lambda xp, A, UPLO="L": xp.linalg.eigh(A if UPLO == "L" else xp.matrix_transpose(A)),
    "svd": lambda xp, A, full_matrices=True, *, driver=None: xp.linalg.svd(
        A, full_matrices=full_matrices),
    "matrix_power": lambda xp, A, n: xp.linalg.matrix_power(A, n),
    "norm": _linalg_norm, "vector_norm": _vector_norm, "matrix_norm": _matrix_norm,
    "vecdot": lambda xp, x, y, *, dim=-1: xp.vecdot(x, y, axis=dim),
    "diagonal": lambda xp, A, *, offset=0, dim1=-2, dim2=-1: _diagonal(xp, A, offset, dim1,
                                                                        dim2),
    "multi_dot": lambda xp, tensors: _multi_dot(xp, tensors),
    "cross": lambda xp, input, other, *, dim=-1: xp.linalg.cross(input, other, axis=dim),
}


def _multi_dot(xp, tensors):
    result = tensors[0]
    for t in tensors[1:]:
        result = xp.matmul(result, t)
    return result


# Tensor's methods that no function of torch's namespace spells the same way.
METHODS = {
    "view": _view, "view_as": lambda xp, input, other: xp.reshape(input, tuple(other.shape)),
    "reshape": _reshape, "reshape_as": lambda xp, input, other: xp.reshape(
        input, tuple(other.shape)),
    "expand": _expand, "expand_as": lambda xp, input, other: xp.broadcast_to(
        input, tuple(other.shape)),
    "repeat": _repeat, "permute": _permute, "flip": _flip, "size": _size, "dim": _ndim,
    "ndimension": _ndim, "nelement": _numel, "to": _to, "type_as": _type_as,
    "contiguous": _contiguous, "item": _item, "tolist": _tolist,
    "float": _astype_to("float32"), "double": _astype_to("float64"),
    "half": _astype_to("float16"), "bfloat16": _astype_to("bfloat16"),
    "long": _astype_to("int64"), "int": _astype_to("int32"), "bool": _astype_to("bool"),
    "cpu": _identity, "__getitem__": _getitem, "__len__": lambda xp, input: input.shape[0],
    "softmax": _softmax("softmax"), "log_softmax": _softmax("log_softmax"),
    # zero_() and fill_(value), in place as every name ending in "_"
    "type": lambda xp, input, dtype=None, non_blocking=False: str(
        _torch().empty(0, dtype=input.dtype).type()) if dtype is None else xp.astype(
        input, _tensor_type(dtype)),
    "new_zeros": lambda xp, input, *size, dtype=None, device=None, requires_grad=False:
    xp.zeros(_sizes(size), dtype=dtype or input.dtype, device=input.device),
    "new_ones": lambda xp, input, *size, dtype=None, device=None, requires_grad=False:
    xp.ones(_sizes(size), dtype=dtype or input.dtype, device=input.device),
    "new_full": lambda xp, input, size, fill_value, *, dtype=None, device=None,
    requires_grad=False: xp.full(tuple(size), fill_value, dtype=dtype or input.dtype,
                                 device=input.device),
    "new_tensor": lambda xp, input, data, *, dtype=None, device=None, requires_grad=False:
    xp.asarray(_raw(data) if _is_array(data) else data, dtype=dtype or input.dtype,
               device=input.device),
    "zero": lambda xp, input: xp.zeros_like(input),
    "fill": lambda xp, input, value: xp.zeros_like(input) + value,
    "copy": lambda xp, input, src, non_blocking=False: xp.astype(
        xp.broadcast_to(src, tuple(input.shape)), input.dtype),
}
# The methods that change a tensor in place (x.add_(y)), each the result of its entry without
# the "_" taken by the Variable (copy-on-write, recorded); on another backend, a hint.
IN_PLACE = ("add", "sub", "mul", "div", "pow", "clamp", "clamp_min", "clamp_max", "fill",
            "copy", "exp", "log", "sqrt", "abs", "neg", "sigmoid", "tanh", "relu", "sin", "cos",
            "masked_fill", "lerp", "addmm", "unsqueeze", "squeeze", "t", "transpose", "floor",
            "ceil", "round", "reciprocal", "square", "addcmul", "addcdiv", "leaky_relu",
            "hardtanh", "elu", "clip", "atan2", "remainder", "fmod", "float", "sign", "trunc",
            "frac", "rsqrt", "log1p", "expm1", "logit", "erf", "lerp", "index_fill",
            "masked_scatter", "where")
# Tensor's operators: x + v with x a tensor comes here as Tensor.__add__.
_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
              "div": "divide", "floordiv": "floor_divide", "mod": "remainder", "pow": "pow",
              "matmul": "matmul", "and": "bitwise_and", "or": "bitwise_or",
              "xor": "bitwise_xor", "lshift": "bitwise_left_shift",
              "rshift": "bitwise_right_shift"}
for _op, _standard in _OPERATORS.items():
    METHODS[f"__{_op}__"] = _binary(_standard)
    METHODS[f"__r{_op}__"] = _reflected(_standard)
for _op, _standard in {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                       "gt": "greater", "ge": "greater_equal"}.items():
    METHODS[f"__{_op}__"] = _binary(_standard)
for _op, _standard in {"neg": "negative", "pos": "positive", "abs": "abs",
                       "invert": "bitwise_invert"}.items():
    METHODS[f"__{_op}__"] = _unary(_standard)

# torch.special's names (those not found above under the same name).
SPECIAL_FUNCTIONS = {"expit": _sigmoid, "logit": _logit, "exp2": _exp2,
                     "multigammaln": _mvlgamma, "log1p": _unary("log1p"),
                     "expm1": _unary("expm1"), "round": _round, "sinc": _unary("sinc"),
                     "softmax": _softmax("softmax"), "log_softmax": _softmax("log_softmax"),
                     "logsumexp": _logsumexp, "xlogy": _binary("xlogy"),
                     "xlog1py": _binary("special.xlog1py"), "polygamma": _polygamma}

# The modules a function comes from, each with its prefix in the tables' names, and the
# tables it is looked up in, in order.
MODULES = {"torch": ("", (FUNCTIONS,)),
           "torch.nn.functional": ("nn.functional.", (NN_FUNCTIONAL, FUNCTIONS)),
           "torch.linalg": ("linalg.", (LINALG, FUNCTIONS)),
           "torch.special": ("special.", (SPECIAL_FUNCTIONS, FUNCTIONS)),
           "torch.Tensor": ("Tensor.", (METHODS, FUNCTIONS))}

# Tensor methods whose meaning differs from the Variable method of the same name (the
# standard's, NumPy's): on the torch backend a Variable's method is torch's.
TORCH_METHODS = ("sum", "prod", "mean", "max", "min", "std", "var", "norm", "flatten",
                 "transpose", "squeeze", "argmax", "argmin", "cumsum", "flip", "reshape",
                 "permute", "clamp", "clip")


# ------------------------------------------------------------------------------ dispatch
_names: dict = {}
"""{torch function or method: its names in the tables (``"nn.functional.relu"``,
``"Tensor.view"``)}, read from torch's modules the first time a torch function meets a
Variable (one function may have several: ``torch.mm`` is ``torch.dsmm`` too)."""


def _name(func):
    if not _names:
        torch = _torch()
        for module_name, (prefix, _) in MODULES.items():
            if module_name == "torch.Tensor":
                module = {name: getattr(torch.Tensor, name, None) for name in dir(torch.Tensor)}
            else:
                module = vars(sys.modules[module_name])
            for name, value in module.items():
                try:
                    _names.setdefault(value, []).append(prefix + name)
                except TypeError:  # unhashable
                    continue
    names = _names.get(func)
    if names:
        own = getattr(func, "__name__", None)
        return next((n for n in names if entry(n) is not None),
                    next((n for n in names if n.rpartition(".")[2] == own), names[0]))
    module = getattr(func, "__module__", None) or ""
    qualname = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    if qualname.startswith("_VariableFunctionsClass."):  # torch.atleast_1d's own kernel
        return qualname.partition(".")[2]
    return (qualname if not module or module == "torch" or module.startswith("torch._C")
            else f"{module.removeprefix('torch.')}.{qualname}")


def entry(name):
    """The table entry for a torch function or method named as the tables name it (None if
    none)."""
    prefix, _, short = name.rpartition(".")
    for module_prefix, tables in MODULES.values():
        if module_prefix.rstrip(".") == prefix:
            for table in tables:
                if short in table:
                    return table[short]
            return None
    return None


def _spelled(name):
    return name if name.startswith("Tensor.") else f"torch.{name}"


# torch functions that arraygrad has under another name: what to write instead.
COUNTERPARTS = {
    "autograd.grad": "arraygrad.autograd.grad(outputs, inputs, grad_outputs, retain_graph, "
                     "create_graph) takes the same arguments",
    "autograd.backward": "call y.backward(gradient) on the output Variable",
    "autograd.functional.jacobian": "use arraygrad.jacobian(f)(x)",
    "autograd.functional.hessian": "use arraygrad.hessian(f)(x)",
}


def unsupported(name, detail=""):
    if name in COUNTERPARTS:
        return TypeError(f"{_spelled(name)} does not take arraygrad Variables: "
                         f"{COUNTERPARTS[name]}")
    return TypeError(
        f"{_spelled(name)} is not supported on arraygrad Variables{detail}: its result would "
        "not be recorded. Use the differentiable namespace (xp = v.__array_namespace__()), "
        "compose it from the torch functions that are supported, or pass v.detach() if you "
        "need no gradient. docs/interop.md lists the torch functions Variables support.")


def _variables(values):
    for value in values:
        if hasattr(value, "_inplace_assign"):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from _variables(value)


_torch_backends: dict = {}


def is_torch(backend) -> bool:
    """Whether ``backend``'s arrays are torch tensors (the torch plugin, or another of
    torch)."""
    answer = _torch_backends.get(backend)
    if answer is None:
        arrays = getattr(getattr(backend, "spec", None), "arrays", ())  # "module:Class", or types
        answer = _torch_backends[backend] = any(
            (a if isinstance(a, str) else getattr(a, "__module__", "")).partition(":")[0]
            .partition(".")[0] == "torch" for a in arrays)
    return answer


_names_seen: dict = {}
"""{torch function: its name in the tables}, for the functions met so far (``_name`` reads
torch's modules; a call looks its function up once)."""


def grad_paused(backend) -> bool:
    """Whether ``backend`` is torch's and torch's grad mode is off (``with torch.no_grad():``),
    under which PyTorch code changes leaves in place (``w -= lr * w.grad``)."""
    return is_torch(backend) and not sys.modules["torch"].is_grad_enabled()


def unrecorded(backend):
    """A context in which an in-place change is not recorded where torch's grad mode is off
    (PyTorch records nothing under ``torch.no_grad()``), else one that changes nothing."""
    return no_grad() if grad_paused(backend) else contextlib.nullcontext()


def torch_function(func, args, kwargs):
    """``func(*args, **kwargs)``, a torch function or Tensor method that met a Variable,
    recorded through the namespace of its Variables."""
    name = _names_seen.get(func)
    if name is None:
        name = _names_seen[func] = _name(func)
    first = args[0] if args else None
    backend = getattr(first, "_backend", None) if hasattr(first, "_inplace_assign") else None
    if backend is None:  # the Variable is further on (tensor + v, torch.cat([t, v]))
        backend = next(_variables(list(args) + list(kwargs.values())))._backend
    if not is_torch(backend):
        raise TypeError(
            f"{_spelled(name)} was called with a Variable of backend {backend.name!r}: torch "
            "functions record Variables of the torch backend only. Use the namespace "
            f"(xp = v.__array_namespace__()), or make the Variable from a torch tensor "
            "(Variable(torch.tensor(...))).")
    return call(backend.ns, name, args, kwargs)


_resolved: dict = {}
"""{name: (entry, whether in place)}, for the names called so far."""


def _resolve(name):
    in_place = name.endswith("_") and not name.endswith("__")
    implementation = entry(name[:-1] if in_place else name)
    if implementation is None:
        raise unsupported(name)
    _resolved[name] = (implementation, in_place)
    return implementation, in_place


def call(xp, name, args, kwargs):
    """The table's entry for torch's ``name`` applied to torch's ``args`` and ``kwargs``."""
    implementation, in_place = _resolved.get(name) or _resolve(name)
    target = args[0] if args else kwargs.get("input")  # what an in-place call changes
    tensor = _torch().Tensor
    if any(isinstance(a, (tensor, list, tuple)) for a in args):
        args = tuple(_constants(xp, a, tensor) for a in args)
    if kwargs:
        kwargs = dict(kwargs)
        if kwargs.get("out") is not None:
            raise TypeError(f"{_spelled(name)}(out=...) is not supported on Variables: a "
                            "recorded result is a new Variable, so assign it "
                            "(y = torch.f(x))")
        kwargs.pop("out", None)
        in_place = kwargs.pop("inplace", False) or in_place
        parameters = _signature(implementation).parameters
        for alias, torch_name in (("axis", "dim"), ("keepdims", "keepdim"), ("x", "input")):
            if alias in kwargs and alias not in parameters and torch_name in parameters:
                kwargs[torch_name] = kwargs.pop(alias)
    try:
        result = implementation(xp, *args, **kwargs)
    except TypeError:
        try:  # arguments the entry does not take: say so with torch's names
            _signature(implementation).bind(xp, *args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{_spelled(name)}(): {exc} (arraygrad takes torch's arguments: "
                            f"{_described(implementation)})") from None
        raise
    if in_place:
        if not hasattr(target, "_inplace_assign"):
            raise TypeError(f"{_spelled(name)} in place on a torch tensor with a Variable "
                            "operand: the tensor cannot hold a recorded result; compute out "
                            "of place (t = t + v)")
        target._inplace_check(name)
        target._inplace_assign(result, name)
        return target
    return result


def _constants(xp, value, tensor):
    """torch tensors among a call's arguments (``F.conv2d(images, w)``, ``torch.cat([t, v])``)
    as Variables that require no grad, so that every entry computes on Variables alone."""
    if isinstance(value, tensor):
        return xp.asarray(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, tensor) for v in value):
        return type(value)(_constants(xp, v, tensor) for v in value) if type(value) in (
            list, tuple) else value
    return value


_signature = functools.cache(inspect.signature)  # (looked up on every call through the table)


def _described(implementation):
    parameters = list(_signature(implementation).parameters.values())[1:]
    return "(" + ", ".join(str(p) for p in parameters) + ")"


def method(variable, name):
    """``variable.name`` as torch's Tensor method of that name, for a Variable of the torch
    backend (None where the tables have no such method)."""
    qualified = "Tensor." + name
    if qualified not in _resolved:
        try:
            _resolve(qualified)
        except TypeError:
            return None
    xp = variable._backend.ns

    def bound(*args, **kwargs):
        return call(xp, qualified, (variable, *args), kwargs)
    bound.__name__ = name
    return bound


def method_names():
    """The Tensor methods the tables cover, by name (for the methods a Variable lacks)."""
    names = set(METHODS) | set(FUNCTIONS) | {name + "_" for name in IN_PLACE}
    return sorted(n for n in names if not n.startswith("__"))
