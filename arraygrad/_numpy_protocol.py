"""NumPy's protocols on Variables: NEP 13 (``__array_ufunc__``) and NEP 18
(``__array_function__``), as in MyGrad and HIPS autograd.

Plain NumPy code records through the differentiable namespace: ``np.sin(v)``, ``np.mean(v,
axis=0)``, ``np.concatenate([v, w])``, ``np.linalg.norm(v)``; SciPy's special ufuncs reach the
namespace's ``special`` functions. Each entry below maps NumPy's name and signature onto the
standard's. A NumPy function with no entry raises a ``TypeError`` naming it: it never returns
an array that silently left the graph.
"""

from __future__ import annotations

import functools
import inspect
import math
import string
import sys

from .rules.linear_algebra import parse_einsum

# NumPy ufuncs by name -> the standard's function of the same meaning.
UFUNCS = {
    **{name: name for name in (
        "add", "subtract", "multiply", "divide", "negative", "positive", "exp", "expm1", "log",
        "log1p", "log2", "log10", "sqrt", "square", "reciprocal", "sin", "cos", "tan", "sinh",
        "cosh", "tanh", "maximum", "minimum", "logaddexp", "sign", "floor", "ceil", "trunc",
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "isnan",
        "isinf", "isfinite", "signbit", "copysign", "hypot", "matmul", "remainder",
        "floor_divide", "logical_and", "logical_or", "logical_xor", "logical_not",
        "bitwise_and", "bitwise_or", "bitwise_xor", "nextafter", "vecdot")},
    "true_divide": "divide", "power": "pow", "absolute": "abs", "fabs": "abs", "arcsin": "asin",
    "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "arctan2": "atan2", "conjugate": "conj", "rint": "round",
    "invert": "bitwise_invert", "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
}

# NumPy ufuncs outside the standard, composed of its functions.
COMPOSED_UFUNCS = {
    "exp2": lambda xp, x: 2.0 ** x,
    "cbrt": lambda xp, x: xp.sign(x) * xp.abs(x) ** (1 / 3),
    "deg2rad": lambda xp, x: x * (math.pi / 180), "radians": lambda xp, x: x * (math.pi / 180),
    "rad2deg": lambda xp, x: x * (180 / math.pi), "degrees": lambda xp, x: x * (180 / math.pi),
    "logaddexp2": lambda xp, x, y: xp.logaddexp(x * math.log(2), y * math.log(2)) / math.log(2),
    "float_power": lambda xp, x, y: xp.pow(xp.astype(xp.asarray(x), xp.float64), y),
    "fmax": lambda xp, x, y: xp.where(xp.isnan(y), x, xp.where(xp.isnan(x), y, xp.maximum(x, y))),
    "fmin": lambda xp, x, y: xp.where(xp.isnan(y), x, xp.where(xp.isnan(x), y, xp.minimum(x, y))),
    "fmod": lambda xp, x, y: x - xp.trunc(x / y) * y,
    "heaviside": lambda xp, x, y: xp.where(x < 0, xp.zeros_like(x), xp.where(
        x > 0, xp.ones_like(x), y + xp.zeros_like(x))),
    "ldexp": lambda xp, x, y: x * 2.0 ** y,
    "matvec": lambda xp, x, y: xp.sum(x * xp.expand_dims(y, axis=-2), axis=-1),
    "vecmat": lambda xp, x, y: xp.sum(xp.expand_dims(xp.conj(x), axis=-1) * y, axis=-2),
    "divmod": lambda xp, x, y: (xp.floor_divide(x, y), xp.remainder(x, y)),
    "modf": lambda xp, x: (x - xp.trunc(x), xp.trunc(x)),
    "frexp": lambda xp, x: _frexp(xp, x),
}


def _frexp(xp, x):
    """``(x / 2**e, e)``, ``e`` the exponent (piecewise constant, so ``x``'s gradient flows)."""
    exponent = xp.where(x == 0, xp.zeros_like(x), xp.floor(xp.log2(xp.abs(
        xp.where(x == 0, xp.ones_like(x), x)))) + 1)
    return x * 2.0 ** -exponent, xp.astype(exponent, xp.int32)


UFUNCS_ON_VALUES = ("gcd", "lcm", "bitwise_count", "isnat", "spacing")
"""NumPy ufuncs with no derivative that run on the values (integers, datetimes, spacings);
``spacing`` of a Variable that requires grad is refused, as its result is floating."""

# ufunc.reduce and ufunc.accumulate, as the standard's reductions and running totals.
REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
              "logical_and": "all", "logical_or": "any"}
ACCUMULATIONS = {"add": "cumulative_sum", "multiply": "cumulative_prod"}

_IGNORED_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True, "signature": None,
                     "where": True, "out": None, "initial": None}


def unsupported(what, detail=""):
    return TypeError(
        f"{what} is not supported on arraygrad Variables{detail}: its result would not be "
        "recorded. Use the differentiable namespace (xp = v.__array_namespace__()), or pass "
        "v.detach() if you need no gradient. docs/interop.md lists the NumPy functions "
        "Variables support.")


def _check_options(what, kwargs, allowed=()):
    for key, value in kwargs.items():
        if key in allowed:
            continue
        if key not in _IGNORED_DEFAULTS or not _is_default(value, _IGNORED_DEFAULTS[key]):
            raise unsupported(what, f" with {key}={value!r}")


def _is_default(value, default):
    if isinstance(value, tuple) and all(v is None for v in value):
        value = None
    return value is default or (type(value) is type(default) and value == default)


def array_ufunc(xp, ufunc, method, inputs, kwargs):
    """``ufunc.method(*inputs, **kwargs)`` recorded through ``xp``."""
    if method == "__call__" and not kwargs:  # ndarray @ v, np.sin(v): no option to check
        function = _calls.get((xp, ufunc))
        if function is None:
            function = _call_of(xp, ufunc)
        return function(*inputs)
    name = ufunc.__name__
    what = f"numpy ufunc {name!r}" + ("" if method == "__call__" else f".{method}")
    out = kwargs.pop("out", None)
    dtype = kwargs.pop("dtype", None)
    if method == "__call__":
        _check_options(what, kwargs)
        result = _ufunc_function(xp, name)(*inputs)
    elif method == "reduce" and name in REDUCTIONS:
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        _check_options(what, kwargs)
        (x,) = inputs
        result = getattr(xp, REDUCTIONS[name])(x, axis=axis, keepdims=keepdims)
    elif method == "accumulate" and name in ACCUMULATIONS:
        axis = kwargs.pop("axis", 0)
        _check_options(what, kwargs)
        (x,) = inputs
        result = getattr(xp, ACCUMULATIONS[name])(x, axis=axis)
    else:
        raise unsupported(what)
    if dtype is not None:
        result = xp.astype(result, _own_dtype(xp, dtype))
    return _write_out(what, out, result)


def _own_dtype(xp, dtype):
    """The backend's dtype of the name of a NumPy dtype (``np.float64`` is ``torch.float64``
    for a torch Variable); others as given."""
    name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None)
    return getattr(xp, name, dtype) if isinstance(name, str) and xp is not None else dtype


def _any_namespace(args):
    """The namespace of the first Variable among ``args``, in lists too (None if none)."""
    for a in args:
        if hasattr(a, "_inplace_assign"):  # a Variable
            return a.__array_namespace__()
        if isinstance(a, (list, tuple)):
            found = _any_namespace(a)
            if found is not None:
                return found
    return None


_calls: dict = {}
"""{(namespace, ufunc): the namespace's function that calls of the ufunc record through}: a
NumPy ufunc on a Variable (``np.sin(v)``, ``ndarray @ v``) looks it up once, not per call."""


def _call_of(xp, ufunc):
    function = _ufunc_function(xp, ufunc.__name__)
    if len(_calls) >= 1024:
        _calls.clear()
    _calls[(xp, ufunc)] = function
    return function


def _ufunc_function(xp, name):
    """The namespace's function that NumPy's ufunc ``name`` stands for."""
    standard = UFUNCS.get(name)
    if standard is not None and hasattr(xp, standard):
        return getattr(xp, standard)
    composed = COMPOSED_UFUNCS.get(name)
    if composed is not None:
        return lambda *args: composed(xp, *args)
    if name in UFUNCS_ON_VALUES:
        return lambda *args: _on_values(name, getattr(_numpy(), name), args, {})
    special = getattr(xp, "special", None)  # SciPy's ufuncs: erf, gammaln, xlogy...
    if special is not None and hasattr(special, name):
        return getattr(special, name)
    raise unsupported(f"numpy ufunc {name!r}")


def _write_out(what, out, result):
    """NumPy's ``out=``: only Variables can receive a recorded result (copy-on-write)."""
    if out is None:
        return result
    targets = out if isinstance(out, tuple) else (out,)
    if len(targets) != 1 or not hasattr(targets[0], "_inplace_assign"):
        raise unsupported(what, " with out= a NumPy array (it cannot hold a recorded result)")
    (target,) = targets
    target._inplace_check(what)
    target._inplace_assign(result, what)
    return target


# ---------------------------------------------------------------------------- NEP 18 functions
# Each entry of FUNCTIONS takes NumPy's arguments under NumPy's names. array_function binds a
# call with the NumPy function's own signature, passes the arguments that the entry's signature
# names (or its ``accepts``), and refuses any other one that is not at NumPy's default, naming
# it: no argument is silently ignored.

def _is_variable(a):
    return hasattr(a, "_inplace_assign")


def _flat(xp, a):
    return xp.reshape(a, (-1,))


def _namespace_of(arrays):
    xp = _any_namespace(arrays)
    if xp is None:
        raise unsupported("this call", " without a Variable among its arrays")
    return xp


def _numpy():
    return sys.modules["numpy"]  # a NEP 18 call comes from NumPy, so it is imported


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


_WITH_INITIAL = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum"}
"""How a reduction takes NumPy's ``initial``: one more operand of its binary function."""


def _reduction(standard):
    def reduce(a, axis=None, dtype=None, keepdims=False, initial=None):
        xp = _namespace_of([a])
        result = getattr(xp, standard)(xp.asarray(a), axis=_axis(axis), keepdims=keepdims)
        if initial is not None:
            result = getattr(xp, _WITH_INITIAL[standard])(result, initial)
        return result if dtype is None else xp.astype(result, dtype)
    if standard not in _WITH_INITIAL:
        return lambda a, axis=None, dtype=None, keepdims=False: reduce(a, axis, dtype, keepdims)
    return reduce


def _extreme(standard):
    """``max``, ``min``, ``all``, ``any``: NumPy's signature has no dtype."""
    reduction = _reduction(standard)
    if standard in _WITH_INITIAL:
        return lambda a, axis=None, keepdims=False, initial=None: reduction(
            a, axis, None, keepdims, initial)
    return lambda a, axis=None, keepdims=False: reduction(a, axis, None, keepdims)


def _spread(standard):
    def spread(a, axis=None, dtype=None, ddof=0, keepdims=False, correction=None):
        xp = _namespace_of([a])
        result = getattr(xp, standard)(a, axis=_axis(axis), keepdims=keepdims,
                                       correction=ddof if correction is None else correction)
        return result if dtype is None else xp.astype(result, dtype)
    return spread


def _nan_as(a, value):
    xp = a.__array_namespace__()
    return xp.where(xp.isnan(a), xp.full_like(a, value), a)


_SUM = _reduction("sum")


def _nan_sum(a, axis=None, dtype=None, keepdims=False):
    return _SUM(_nan_as(a, 0), axis, dtype, keepdims)


def _nan_count(xp, a, axis, keepdims):
    return xp.sum(xp.astype(~xp.isnan(a), a.dtype), axis=_axis(axis), keepdims=keepdims)


def _nan_mean(a, axis=None, dtype=None, keepdims=False):
    xp = a.__array_namespace__()
    return _nan_sum(a, axis, dtype, keepdims) / _nan_count(xp, a, axis, keepdims)


def _nan_var(a, axis=None, dtype=None, ddof=0, keepdims=False):
    xp = a.__array_namespace__()
    # 0 at the NaNs before squaring: a NaN squared and only then dropped would send NaN back
    # through the mean into every entry
    deviation = _nan_as(a - _nan_mean(a, axis, None, True), 0)
    return (_nan_sum(deviation * xp.conj(deviation) if "complex" in str(a.dtype) else
                     deviation * deviation, axis, dtype, keepdims)
            / (_nan_count(xp, a, axis, keepdims) - ddof))


def _nan_extreme(standard, fill):
    reduction = _extreme(standard)
    return lambda a, axis=None, keepdims=False: reduction(_nan_as(a, fill), axis, keepdims)


def _cumulative(standard, fill=None):
    def cumulative(a, axis=None, dtype=None):
        xp = _namespace_of([a])
        if fill is not None:
            a = _nan_as(a, fill)
        if axis is None:
            a, axis = _flat(xp, a), 0
        result = getattr(xp, standard)(a, axis=axis)
        return result if dtype is None else xp.astype(result, dtype)
    return cumulative


def _running(standard):
    """NumPy's ``cumulative_sum``/``cumulative_prod``: the standard's, with a 1-D default."""
    def running(x, axis=None, dtype=None, include_initial=False):
        xp = _namespace_of([x])
        return getattr(xp, standard)(x, axis=axis, dtype=dtype, include_initial=include_initial)
    return running


def _concatenate(arrays, axis=0, dtype=None):
    xp = _namespace_of(arrays)
    arrays = [xp.asarray(a) for a in arrays]
    if axis is None:
        arrays, axis = [_flat(xp, a) for a in arrays], 0
    result = xp.concat(arrays, axis=axis)
    return result if dtype is None else xp.astype(result, dtype)


def _stack(arrays, axis=0, dtype=None):
    xp = _namespace_of(arrays)
    result = xp.stack([xp.asarray(a) for a in arrays], axis=axis)
    return result if dtype is None else xp.astype(result, dtype)


def _at_least(ndim):
    def at_least(*arys):
        results = []
        for a in arys:
            xp = _namespace_of([a])
            a = xp.asarray(a)
            if a.ndim < ndim:
                shape = tuple(a.shape)
                if ndim == 3 and a.ndim == 2:
                    shape = shape + (1,)
                elif ndim == 3 and a.ndim == 1:
                    shape = (1,) + shape + (1,)
                else:
                    shape = (1,) * (ndim - a.ndim) + shape
                a = xp.reshape(a, shape)
            results.append(a)
        return results[0] if len(results) == 1 else tuple(results)
    return at_least


def _stacked(ndim, axis):
    """``vstack``, ``hstack``, ``dstack``: each array made ``ndim``-D first, as NumPy does (so
    0-d operands join too)."""
    def stacked(tup, dtype=None):
        arrays = [_at_least(ndim)(a) for a in tup]
        join = 0 if axis == 1 and arrays and arrays[0].ndim == 1 else axis
        return _concatenate(arrays, axis=join, dtype=dtype)
    return stacked if ndim < 3 else lambda tup: stacked(tup)  # NumPy's dstack has no dtype


def _column_stack(tup):
    xp = _namespace_of(tup)
    arrays = [xp.asarray(a) for a in tup]
    return xp.concat([xp.reshape(a, (-1, 1)) if a.ndim < 2 else a for a in arrays], axis=1)


def _where(condition, x=None, y=None):
    xp = _namespace_of([condition, x, y])
    if x is None and y is None:
        return xp.nonzero(condition)
    return xp.where(condition, x, y)


def _dot(a, b):
    xp = _namespace_of([a, b])
    a, b = xp.asarray(a), xp.asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.ndim <= 2 and b.ndim <= 2:  # matmul's case, and its fast path
        return xp.matmul(a, b)
    return xp.tensordot(a, b, axes=((a.ndim - 1,), (max(b.ndim - 2, 0),)))


def _inner(a, b):
    xp = _namespace_of([a, b])
    a, b = xp.asarray(a), xp.asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return xp.tensordot(a, b, axes=((a.ndim - 1,), (b.ndim - 1,)))


def _outer(a, b):
    xp = _namespace_of([a, b])
    return xp.reshape(xp.asarray(a), (-1, 1)) * xp.reshape(xp.asarray(b), (1, -1))


def _vdot(a, b):
    xp = _namespace_of([a, b])
    return xp.sum(xp.conj(_flat(xp, xp.asarray(a))) * _flat(xp, xp.asarray(b)))


def _kron(a, b):
    """``a``'s and ``b``'s axes interleaved, multiplied with broadcasting, then merged."""
    xp = _namespace_of([a, b])
    a, b = xp.asarray(a), xp.asarray(b)
    ndim = max(a.ndim, b.ndim)
    sa = (1,) * (ndim - a.ndim) + tuple(a.shape)
    sb = (1,) * (ndim - b.ndim) + tuple(b.shape)
    product = (xp.reshape(a, tuple(n for m in sa for n in (m, 1)))
               * xp.reshape(b, tuple(n for m in sb for n in (1, m))))
    return xp.reshape(product, tuple(m * n for m, n in zip(sa, sb)))


def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's ``cross``: vectors along ``axisa``/``axisb`` (or ``axis``), of 2 or 3 entries
    (a 2-vector has a zero third one), the result's along ``axisc``."""
    xp = _namespace_of([a, b])
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = xp.moveaxis(xp.asarray(a), axisa, -1), xp.moveaxis(xp.asarray(b), axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if a.shape[-1] == b.shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    a, b = (xp.concat([v, xp.zeros_like(v[..., :1])], axis=-1) if v.shape[-1] == 2 else v
            for v in (a, b))
    return xp.moveaxis(xp.linalg.cross(a, b, axis=-1), -1, axisc)


def _last_two(xp, a, axis1, axis2):
    """``a`` with ``axis1`` and ``axis2`` moved last, for the standard's matrix functions."""
    return xp.moveaxis(a, (axis1, axis2), (-2, -1))


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    xp = a.__array_namespace__()
    return xp.linalg.trace(_last_two(xp, a, axis1, axis2), offset=offset, dtype=dtype)


def _diagonal(a, offset=0, axis1=0, axis2=1):
    xp = a.__array_namespace__()
    return xp.linalg.diagonal(_last_two(xp, a, axis1, axis2), offset=offset)


def _transpose(a, axes=None):
    xp = a.__array_namespace__()
    return xp.permute_dims(a, tuple(axes) if axes is not None else tuple(range(a.ndim))[::-1])


def _swapaxes(a, axis1, axis2):
    xp = _namespace_of([a])
    axes = list(range(a.ndim))
    axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
    return xp.permute_dims(a, tuple(axes))


def _squeeze(a, axis=None):
    xp = a.__array_namespace__()
    if axis is None:
        axis = tuple(i for i, n in enumerate(a.shape) if n == 1)
    return xp.squeeze(a, axis=axis)


def _expand_dims(a, axis):
    xp = _namespace_of([a])
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = a.ndim + len(axes)
    for position in sorted(i % ndim for i in axes):
        a = xp.expand_dims(a, axis=position)
    return a


def _with_flat_default(standard, a, axis, **options):
    """A function whose ``axis=None`` means "of the flattened array" in NumPy."""
    xp = _namespace_of([a])
    a = xp.asarray(a)
    if axis is None:
        a, axis = _flat(xp, a), 0
    return getattr(xp, standard)(a, axis=axis, **options)


def _take(a, indices, axis=None, mode="raise"):
    xp = a.__array_namespace__()
    if axis is None:
        a, axis = _flat(xp, a), 0
    indices = xp.asarray(indices)
    n = a.shape[axis]
    if mode == "wrap":
        indices = indices % n
    elif mode == "clip":
        indices = xp.clip(indices, 0, n - 1)
    elif mode != "raise":
        raise ValueError(f"numpy.take: mode={mode!r} is not 'raise', 'wrap' or 'clip'")
    if indices.ndim == 1:
        return xp.take(a, indices, axis=axis)
    taken = xp.take(a, _flat(xp, indices), axis=axis)
    shape = tuple(a.shape[:axis]) + tuple(indices.shape) + tuple(a.shape[axis + 1:])
    return xp.reshape(taken, shape)


def _take_along_axis(arr, indices, axis=-1):
    xp = _namespace_of([arr])
    if axis is None:
        arr, axis = _flat(xp, arr), 0
    return xp.take_along_axis(arr, xp.asarray(indices), axis=axis)


def _repeat(a, repeats, axis=None):
    xp = a.__array_namespace__()
    if axis is None:
        a, axis = _flat(xp, a), 0
    return xp.repeat(a, repeats, axis=axis)


def _clip(a, a_min=None, a_max=None, min=None, max=None):
    xp = _namespace_of([a])
    low = a_min if a_min is not None else min
    high = a_max if a_max is not None else max
    return xp.clip(a, min=low, max=high)


def _round(a, decimals=0):
    xp = a.__array_namespace__()
    if decimals == 0:
        return xp.round(a)
    return xp.round(a * 10.0 ** decimals) / 10.0 ** decimals


def _average(a, axis=None, weights=None, returned=False, keepdims=False):
    xp = _namespace_of([a, weights])
    a = xp.asarray(a)
    axis = tuple(axis) if isinstance(axis, list) else axis  # NumPy takes any sequence of axes
    if weights is None:
        total = xp.mean(a, axis=axis, keepdims=keepdims)
        count = xp.asarray(a.size / total.size if total.size else 0.0, dtype=a.dtype)
    else:
        weights = xp.asarray(weights)
        if weights.ndim == 1 and a.ndim > 1 and axis is not None:
            shape = [1] * a.ndim
            shape[axis] = weights.shape[0]
            weights = xp.reshape(weights, tuple(shape))
        count = xp.sum(weights * xp.ones_like(a), axis=axis, keepdims=keepdims)
        total = xp.sum(a * weights, axis=axis, keepdims=keepdims) / count
    return (total, count) if returned else total


def _filled(a, value, dtype, shape):
    """``zeros_like`` and the others: constants (no gradient). ``order`` is only a layout."""
    xp = _namespace_of([a])
    a = xp.asarray(a)
    shape = tuple(a.shape) if shape is None else (shape,) if isinstance(shape, int) else tuple(
        shape)
    return xp.full(shape, value, dtype=a.dtype if dtype is None else dtype, device=a.device)


def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """``copy`` changes nothing a Variable shows (copy-on-write)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    xp = _namespace_of(xi)
    grids = []
    for i, x in enumerate(xi):
        shape = [1] * len(xi)
        shape[i] = -1
        if indexing == "xy" and len(xi) > 1:
            shape[0], shape[1] = shape[1], shape[0]
        grids.append(xp.reshape(xp.asarray(x), tuple(shape)))
    return tuple(grids if sparse else xp.broadcast_arrays(*grids))


def _unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
            equal_nan=True, sorted=True):
    """NumPy's ``unique``: ``unique_values`` (differentiable); with an option, on the values
    of a Variable that requires no grad."""
    options = dict(return_index=return_index, return_inverse=return_inverse,
                   return_counts=return_counts, axis=axis, equal_nan=equal_nan, sorted=sorted)
    if options == dict(return_index=False, return_inverse=False, return_counts=False, axis=None,
                       equal_nan=True, sorted=True):
        return _namespace_of([ar]).unique_values(ar)
    if _requires_grad([ar]):
        raise unsupported("numpy.unique", f" with {', '.join(options)} on a Variable that "
                          "requires grad (xp.unique_values is differentiable)")
    return _numpy().unique(_values(ar), **options)


def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """NumPy's ``linspace`` with array (and Variable) endpoints: ``start + i * step``, the last
    point ``stop`` itself when ``endpoint``."""
    xp = _namespace_of([start, stop])
    start, stop = xp.asarray(start), xp.asarray(stop)
    if "int" in str(start.dtype) or "bool" in str(start.dtype):
        start = xp.astype(start, xp.float64)
    start, stop = xp.broadcast_arrays(start, xp.astype(stop, start.dtype))
    divisions = num - 1 if endpoint else num
    steps = xp.reshape(xp.arange(num, dtype=start.dtype, device=start.device),
                       (num,) + (1,) * start.ndim)
    if divisions > 0:
        step = (stop - start) / divisions
        result = start + steps * step
        if endpoint and num > 1:
            last = steps == num - 1
            result = xp.where(last, stop, result)
    else:
        step = xp.full_like(start, math.nan)
        result = start + steps * (stop - start)
    if axis != 0:
        result = xp.moveaxis(result, 0, axis)
    if dtype is not None:
        result = xp.astype(result, dtype)
    return (result, step) if retstep else result


def _logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    xp = _namespace_of([start, stop, base])
    exponents = _linspace(start, stop, num, endpoint, False, None, axis)
    if _is_variable(base) or hasattr(base, "shape"):
        base = xp.expand_dims(xp.asarray(base), axis=axis % exponents.ndim)
    result = xp.pow(base, exponents)
    return result if dtype is None else xp.astype(result, dtype)


def _gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's ``gradient`` with uniform spacings (one number, or one per axis): central
    differences inside, one-sided ones of ``edge_order`` at the ends."""
    xp = _namespace_of([f])
    f = xp.asarray(f)
    axes = tuple(range(f.ndim)) if axis is None else (axis,) if isinstance(axis, int) else tuple(
        axis)
    axes = tuple(a % f.ndim for a in axes)
    if len(varargs) == 1 and not hasattr(varargs[0], "shape"):
        varargs = varargs * len(axes)
    spacings = varargs or (1.0,) * len(axes)
    if len(spacings) != len(axes) or any(hasattr(d, "shape") and getattr(d, "ndim", 0)
                                         for d in spacings):
        raise unsupported("numpy.gradient", " with coordinate arrays (spacings must be numbers)")
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    results = []
    for a, h in zip(axes, spacings):
        n = f.shape[a]
        if n < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")

        def part(start, stop):
            index = [slice(None)] * f.ndim
            index[a] = slice(start, stop)
            return f[tuple(index)]
        inner = (part(2, None) - part(None, -2)) / (2.0 * h)
        if edge_order == 1:
            first = (part(1, 2) - part(0, 1)) / h
            last = (part(n - 1, n) - part(n - 2, n - 1)) / h
        else:
            first = (-1.5 * part(0, 1) + 2.0 * part(1, 2) - 0.5 * part(2, 3)) / h
            last = (0.5 * part(n - 3, n - 2) - 2.0 * part(n - 2, n - 1)
                    + 1.5 * part(n - 1, n)) / h
        results.append(xp.concat([first, inner, last], axis=a))
    return results[0] if len(results) == 1 else tuple(results)


def _select(condlist, choicelist, default=0):
    """The first choice whose condition holds, else ``default``."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    xp = _namespace_of([condlist, choicelist, default])
    result = default
    for condition, choice in reversed(list(zip(condlist, choicelist))):
        result = xp.where(xp.asarray(condition), choice, result)
    return xp.asarray(result) if not _is_variable(result) else result


def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """``copy`` changes nothing a Variable shows (copy-on-write)."""
    xp = _namespace_of([x])
    x = xp.asarray(x)
    if not xp.isdtype(x.dtype, ("real floating", "complex floating")):
        return x
    if xp.isdtype(x.dtype, "complex floating"):
        parts = [_nan_to_num(part, copy, nan, posinf, neginf) for part in (xp.real(x), xp.imag(x))]
        return parts[0] + 1j * parts[1]
    largest = xp.finfo(x.dtype).max
    x = xp.where(xp.isnan(x), xp.asarray(nan, dtype=x.dtype), x)
    x = xp.where(x == math.inf, xp.asarray(largest if posinf is None else posinf, dtype=x.dtype), x)
    return xp.where(x == -math.inf, xp.asarray(-largest if neginf is None else neginf,
                                                dtype=x.dtype), x)


def _real_if_close(a, tol=100):
    """``a``'s real part where its imaginary parts are all within ``tol`` (in machine epsilons,
    or absolute if below 1) of zero, as NumPy decides on the values."""
    xp = _namespace_of([a])
    a = xp.asarray(a)
    if not xp.isdtype(a.dtype, "complex floating"):
        return a
    if tol > 1:
        tol = tol * xp.finfo(a.dtype).eps
    close = bool(xp.all(xp.abs(xp.imag(a.detach() if _is_variable(a) else a)) < tol))
    return xp.real(a) if close else a


def _ptp(a, axis=None, keepdims=False):
    xp = _namespace_of([a])
    return (xp.max(a, axis=_axis(axis), keepdims=keepdims)
            - xp.min(a, axis=_axis(axis), keepdims=keepdims))


def _ediff1d(ary, to_end=None, to_begin=None):
    xp = _namespace_of([ary, to_end, to_begin])
    flat = _flat(xp, xp.asarray(ary))
    parts = [flat[1:] - flat[:-1]]
    if to_begin is not None:
        parts.insert(0, xp.astype(_flat(xp, xp.asarray(to_begin)), flat.dtype))
    if to_end is not None:
        parts.append(xp.astype(_flat(xp, xp.asarray(to_end)), flat.dtype))
    return xp.concat(parts) if len(parts) > 1 else parts[0]


def _trapezoid(y, x=None, dx=1.0, axis=-1):
    xp = _namespace_of([y, x])
    y = xp.asarray(y)
    index = [slice(None)] * y.ndim
    upper, lower = list(index), list(index)
    upper[axis], lower[axis] = slice(1, None), slice(None, -1)
    mean = (y[tuple(upper)] + y[tuple(lower)]) / 2.0
    if x is None:
        return xp.sum(mean, axis=axis) * dx
    d = xp.diff(xp.asarray(x), axis=-1 if xp.asarray(x).ndim == 1 else axis)
    if d.ndim == 1:
        shape = [1] * y.ndim
        shape[axis] = d.shape[0]
        d = xp.reshape(d, tuple(shape))
    return xp.sum(d * mean, axis=axis)


def _vander(x, N=None, increasing=False):
    """Columns ``1, x, x*x, ...`` made by products (``x ** 0`` would have no derivative at 0)."""
    xp = _namespace_of([x])
    x = xp.asarray(x)
    columns = [xp.ones_like(x)]
    for _ in range(1, x.shape[0] if N is None else N):
        columns.append(columns[-1] * x)
    columns = columns[:x.shape[0] if N is None else N]
    return xp.stack(columns if increasing else columns[::-1], axis=1)


def _cov(m, y=None, rowvar=True, bias=False, ddof=None, dtype=None):
    xp = _namespace_of([m, y])
    arrays = [_at_least(2)(xp.asarray(a)) for a in (m, y) if a is not None]
    if not rowvar:
        arrays = [a.mT if a.shape[0] != 1 else a for a in arrays]
    X = xp.concat(arrays, axis=0) if len(arrays) > 1 else arrays[0]
    if dtype is not None:
        X = xp.astype(X, dtype)
    ddof = (0 if bias else 1) if ddof is None else ddof
    centred = X - xp.mean(X, axis=1, keepdims=True)
    return _squeeze(centred @ xp.conj(centred).mT / (X.shape[1] - ddof))


def _corrcoef(x, y=None, rowvar=True, dtype=None):
    """NumPy's ``corrcoef``, without its clipping to [-1, 1] (a rounding-size difference)."""
    xp = _namespace_of([x, y])
    c = _cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = xp.sqrt(xp.real(xp.linalg.diagonal(c)))
    return c / d[:, None] / d[None, :]


def _polyval(p, x):
    xp = _namespace_of([p, x])
    p = xp.asarray(p)
    result = xp.zeros_like(xp.asarray(x) * p[0])
    for i in range(p.shape[0]):
        result = result * x + p[i]
    return result


def _unwrap(p, discont=None, axis=-1, period=2 * math.pi):
    """``p`` plus NumPy's correction, computed on the values: multiples of ``period``, constant
    where it is differentiable."""
    values = _values(p)
    correction = _numpy().unwrap(values, discont=discont, axis=axis, period=period) - values
    xp = _namespace_of([p])
    return p + xp.asarray(correction)


def _multi_dot(arrays):
    xp = _namespace_of(arrays)
    result = xp.asarray(arrays[0])
    for a in arrays[1:]:
        result = xp.matmul(result, xp.asarray(a))
    return result


def _from_triangle(xp, a, UPLO):
    """The Hermitian matrix that ``a``'s lower (``"L"``) or upper (``"U"``) triangle stands for,
    which is all that LAPACK's ``eigh`` reads, so the other triangle gets no gradient."""
    if UPLO not in ("L", "U", "l", "u"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    lower = xp.tril(a) if UPLO in ("L", "l") else xp.conj(xp.triu(a)).mT
    return lower + xp.conj(xp.tril(lower, k=-1)).mT


def _eigh(a, UPLO="L"):
    xp = _namespace_of([a])
    a = xp.asarray(a)
    result = xp.linalg.eigh(_from_triangle(xp, a, UPLO))
    if UPLO not in ("U", "u"):
        return result
    # The backend's eigh read the lower triangle, NumPy's reads the upper: its eigenvectors.
    w, v = result
    return _like(result, w, v * _numpy_phases(xp, v, _numpy().linalg.eigh(_values(a), UPLO)[1]))


def _like(result, *parts):
    """``parts`` as the backend's result type: a named tuple, or a struct sequence (torch's)."""
    try:
        return type(result)(*parts)
    except TypeError:
        return type(result)(parts)


def _numpy_phases(xp, v, reference):
    """The constant phase (a sign, for real matrices) of each of ``v``'s eigenvectors that
    makes them NumPy's ``reference``: an eigenvector is unique only up to one, and LAPACK
    fixes it differently for each triangle, so ``eigh(a, "U")`` must take NumPy's choice, as
    its value and as the function whose derivative is taken (a sign is locally constant)."""
    numpy = _numpy()
    overlap = numpy.sum(numpy.conj(_values(v)) * reference, axis=-2, keepdims=True)
    size = numpy.abs(overlap)
    phases = numpy.where(size > 0, overlap / numpy.where(size > 0, size, 1), 1)
    return xp.asarray(phases.real if not numpy.iscomplexobj(reference) else phases,
                      dtype=v.dtype)


def _eigvalsh(a, UPLO="L"):
    xp = _namespace_of([a])
    return xp.linalg.eigvalsh(_from_triangle(xp, xp.asarray(a), UPLO))


def _cond(x, p=None):
    xp = _namespace_of([x])
    if p in (None, 2, -2):
        s = xp.linalg.svdvals(x)
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    return xp.linalg.matrix_norm(x, ord=p) * xp.linalg.matrix_norm(xp.linalg.inv(x), ord=p)


def _lstsq(a, b, rcond=None):
    """``x = pinv(a) @ b``, its residuals, ``a``'s rank and singular values."""
    xp = _namespace_of([a, b])
    a, b = xp.asarray(a), xp.asarray(b)
    x = xp.linalg.pinv(a, rtol=rcond) @ b if b.ndim == 2 else xp.linalg.pinv(a, rtol=rcond) @ b
    rank = int(xp.linalg.matrix_rank(a.detach() if _is_variable(a) else a, rtol=rcond))
    m, n = a.shape
    if rank == n and m > n:
        r = b - a @ x
        residuals = xp.sum(xp.real(xp.conj(r) * r), axis=0)
        residuals = xp.reshape(residuals, (1,)) if b.ndim == 1 else residuals
    else:
        residuals = xp.zeros((0,), dtype=xp.real(a).dtype)
    return x, residuals, rank, xp.linalg.svdvals(a)


def _tensorinv(a, ind=2):
    xp = _namespace_of([a])
    shape = tuple(a.shape)
    rows, columns = math.prod(shape[:ind]), math.prod(shape[ind:])
    inverse = xp.linalg.inv(xp.reshape(a, (rows, columns)))
    return xp.reshape(inverse, shape[ind:] + shape[:ind])


def _tensorsolve(a, b):
    xp = _namespace_of([a, b])
    a, b = xp.asarray(a), xp.asarray(b)
    rest = tuple(a.shape[b.ndim:])
    solution = xp.linalg.solve(xp.reshape(a, (b.size, math.prod(rest))), _flat(xp, b)[:, None])
    return xp.reshape(solution, rest)


def _norm(x, ord=None, axis=None, keepdims=False):
    xp = x.__array_namespace__()
    if isinstance(axis, int):
        axis = (axis,)
    matrix = (axis is None and x.ndim == 2 and ord is not None) or (
        axis is not None and len(axis) == 2)
    if not matrix:
        if ord is None:
            ord = 2
        return xp.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
    axis = (-2, -1) if axis is None else axis
    result = xp.linalg.matrix_norm(_last_two(xp, x, *axis), ord="fro" if ord is None else ord)
    if keepdims:
        for a in sorted(i % x.ndim for i in axis):
            result = xp.expand_dims(result, axis=a)
    return result


def _qr(a, mode="reduced"):
    """NumPy's ``mode="r"`` is the R of the reduced factorisation alone; ``"raw"`` (LAPACK's
    Householder reflectors) has no derivative rule and is refused. Passed on as it is, either
    would come back as a (Q, R) pair that it is not."""
    xp = _namespace_of([a])
    if mode == "r":
        return xp.linalg.qr(a, mode="reduced")[1]
    if mode == "raw":
        raise unsupported("numpy.linalg.qr", " with mode='raw' (Householder reflectors); use "
                          "mode='reduced' or 'complete'")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    return xp.linalg.qr(a, mode=mode)


def _pinv(a, rcond=None, hermitian=False, rtol=None):
    """``hermitian``: NumPy takes the SVD through ``eigh``, which reads the lower triangle."""
    xp = _namespace_of([a])
    a = xp.asarray(a)
    return xp.linalg.pinv(_from_triangle(xp, a, "L") if hermitian else a,
                          rtol=rtol if rtol is not None else rcond)


def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """``hermitian``: NumPy computes it through ``eigh``, which reads the lower triangle, and
    fixes the singular vectors' phases (signs) its own way, which each pair is given (a
    constant)."""
    xp = a.__array_namespace__()
    if hermitian:
        a = _from_triangle(xp, a, "L")
    if not compute_uv:
        return xp.linalg.svdvals(a)
    result = xp.linalg.svd(a, full_matrices=full_matrices)
    if not hermitian:
        return result
    u, s, vh = result
    phases = _numpy_phases(xp, u, _numpy().linalg.svd(_values(a), hermitian=True)[0])
    return _like(result, u * phases, s, xp.conj(phases).mT * vh)


def _diff(a, n=1, axis=-1, prepend=None, append=None):
    """NumPy's ``diff``: a scalar ``prepend``/``append`` stands for a slice of that value, one
    long along ``axis`` (the standard's ``diff`` takes arrays only). A Python number takes
    ``a``'s dtype, as in the standard's operators (NumPy's own makes float32 float64 here)."""
    xp = a.__array_namespace__()
    edges = {}
    for key, value in (("prepend", prepend), ("append", append)):
        if value is None:
            continue
        if isinstance(value, (bool, int, float, complex)):  # a Python number takes a's dtype
            value = xp.asarray(value, dtype=xp.result_type(a, value))
        else:
            value = xp.asarray(value)
        if value.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            value = xp.broadcast_to(value, tuple(shape))
        edges[key] = value
    return xp.diff(a, n=n, axis=axis, **edges)


PAD_BY_POSITION = ("edge", "reflect", "symmetric", "wrap")
"""``pad`` modes that copy entries of the array: NumPy pads the positions, which are taken."""


def pad(array, pad_width, mode="constant", constant_values=0, **options):
    """NumPy's ``pad``: ``pad_width`` and ``constant_values`` broadcast to one (before, after)
    pair per axis as in NumPy; ``constant`` mode joins constant blocks, the modes of
    ``PAD_BY_POSITION`` take the entries NumPy's own ``pad`` puts at each place."""
    xp = array.__array_namespace__()
    ndim = array.ndim
    if mode in PAD_BY_POSITION:
        return _gathered("pad", ("array",))(array, pad_width, mode=mode, **options)
    if mode != "constant" or options:
        raise unsupported("numpy.pad", f" with mode={mode!r}" + "".join(
            f", {k}=" for k in options) + f" (modes: 'constant', {', '.join(PAD_BY_POSITION)})")
    widths, values = _pairs(pad_width, ndim), _pairs(constant_values, ndim, int_only=False)
    for axis, ((before, after), fills) in enumerate(zip(widths, values)):
        parts = []
        for width, fill in zip((before, after), fills):
            shape = list(array.shape)
            shape[axis] = width
            parts.append(xp.full(tuple(shape), fill, dtype=array.dtype))
        array = xp.concat([parts[0], array, parts[1]], axis=axis)
    return array


def _pairs(value, ndim, int_only=True):
    """``value`` broadcast to ``ndim`` (before, after) pairs, as NumPy's ``pad`` reads it: a
    number, one pair, or one pair per axis."""
    rows = value if isinstance(value, (list, tuple)) else (
        value.tolist() if hasattr(value, "tolist") else value)
    if not isinstance(rows, (list, tuple)):
        rows = [[rows, rows]]
    elif not any(isinstance(r, (list, tuple)) for r in rows):
        rows = [list(rows)] if len(rows) == 2 else [[rows[0]] * 2] if len(rows) == 1 else [rows]
    rows = [list(r) * (2 // len(r)) if isinstance(r, (list, tuple)) else [r, r] for r in rows]
    if len(rows) == 1:
        rows = rows * ndim
    if len(rows) != ndim or any(len(r) != 2 for r in rows) or (
            int_only and any(not isinstance(w, int) or w < 0 for r in rows for w in r)):
        raise ValueError(f"pad: {value!r} does not broadcast to ({ndim}, 2) non-negative "
                         "widths")
    return rows


def _gathered(name, arrays, values=(), nested=False):
    """A NumPy function that only places entries of its array arguments (``arrays``): NumPy's
    own function runs on their positions (1, 2, ...; 0 where it fills a zero), so that every
    option means exactly what it means in NumPy, and the entries are taken from those places.
    Arguments in ``values`` (conditions, indices) are read on their values."""
    def gathered(*args, **kwargs):
        np = _numpy()
        function = _numpy_function(name)
        bound = _signature(function).bind(*args, **kwargs)
        xp = _namespace_of([bound.arguments.get(n) for n in arrays])
        dtype = bound.arguments.pop("dtype", None)
        if bound.arguments.pop("out", None) is not None or bound.arguments.pop(
                "casting", "same_kind") != "same_kind":
            raise unsupported(f"numpy.{name}", " with out= or casting=")
        leaves = []

        def positions(obj, deep):
            if deep and isinstance(obj, (list, tuple)):
                return [positions(o, nested) for o in obj]
            leaf = xp.asarray(obj)
            start = 1 + sum(int(a.size) for a in leaves)
            leaves.append(leaf)
            return np.arange(start, start + leaf.size).reshape(tuple(leaf.shape))
        for key in bound.arguments:
            if key in arrays:
                deep = isinstance(bound.arguments[key], (list, tuple)) and (
                    nested or name in _SEQUENCES)
                bound.arguments[key] = positions(bound.arguments[key], deep)
            elif key in values:
                bound.arguments[key] = _values(bound.arguments[key])
        placed = function(*bound.args, **bound.kwargs)
        common = xp.result_type(*leaves) if len(leaves) > 1 else leaves[0].dtype
        table = xp.concat([xp.zeros((1,), dtype=common, device=leaves[0].device)]
                          + [_flat(xp, xp.astype(a, common)) for a in leaves])
        if dtype is not None:
            table = xp.astype(table, _own_dtype(xp, dtype))

        def take(p):
            return xp.reshape(xp.take(table, xp.asarray(np.ravel(p)), axis=0), p.shape)
        return [take(p) for p in placed] if isinstance(placed, (list, tuple)) else take(placed)
    gathered.accepts = "all"
    return gathered


_SEQUENCES = ("hstack", "vstack", "dstack", "column_stack", "select", "choose")
"""Functions of ``_gathered`` whose array argument is a sequence of arrays."""


def _i0(x):
    xp = _namespace_of([x])
    special = getattr(xp, "special", None)
    if special is None or not hasattr(special, "i0"):
        raise unsupported("numpy.i0", f" on {xp.__name__} (its backend has no special.i0)")
    return special.i0(x)


def _values(value):
    """``value`` with every Variable in it (in lists, tuples and dicts too) as a NumPy array."""
    if _is_variable(value):
        return value.detach().numpy()
    if isinstance(value, (list, tuple)):
        return type(value)(_values(v) for v in value) if type(value) in (list, tuple) else value
    if isinstance(value, dict):
        return {k: _values(v) for k, v in value.items()}
    return value


def _requires_grad(objects):
    return any(getattr(o, "requires_grad", False) or (
        isinstance(o, (list, tuple)) and _requires_grad(o)) for o in objects)


def _method(name):
    """A function of the standard with NumPy's signature as is."""
    def call(x, *args, **kwargs):
        return getattr(_namespace_of([x]), name)(x, *args, **kwargs)
    call.accepts = "all"
    return call


def _in(module, name):
    """The function ``name`` of the namespace's ``module`` (``linalg``, ``fft``), whose
    signature NumPy's shares: its arguments are passed as they came."""
    def call(*args, **kwargs):
        xp = _namespace_of(args)
        return getattr(getattr(xp, module) if module else xp, name)(*args, **kwargs)
    call.accepts = "all"
    return call


def _complex_input(xp, a):
    """A real ``a`` as complex, for the complex-to-complex transforms (its gradient comes
    back real through ``astype``)."""
    a = xp.asarray(a)
    if xp.isdtype(a.dtype, "real floating"):
        return xp.astype(a, xp.complex64 if a.dtype == xp.float32 else xp.complex128)
    return a


def _fft_one(name, complex_input):
    """``numpy.fft.<name>`` along one axis: the namespace's; NumPy's ``norm=None`` is
    ``"backward"``."""
    def transform(a, n=None, axis=-1, norm=None):
        xp = _namespace_of([a])
        a = _complex_input(xp, a) if complex_input else xp.asarray(a)
        return getattr(xp.fft, name)(a, n=n, axis=axis, norm=norm or "backward")
    return transform


def _fft_many(name, complex_input, last_two=False):
    """``numpy.fft.<name>n`` (or ``<name>2``, over the last two axes by default)."""
    def transform(a, s=None, axes=None, norm=None):
        xp = _namespace_of([a])
        a = _complex_input(xp, a) if complex_input else xp.asarray(a)
        axes = (-2, -1) if axes is None and last_two else axes
        return getattr(xp.fft, name)(a, s=s, axes=axes, norm=norm or "backward")
    return transform


def _einsum(*operands, optimize=False, dtype=None):
    """``np.einsum`` on Variables: the namespace's ``einsum`` where the backend has one, else
    composed of the standard's functions; NumPy's sublist form is written as subscripts first.
    ``optimize`` (the order of NumPy's contractions) changes no value."""
    subscripts, operands = from_sublists(operands)
    xp = _namespace_of(operands)
    operands = [xp.asarray(operand) for operand in operands]
    parse_einsum(subscripts, tuple(tuple(o.shape) for o in operands))  # errors alike everywhere
    result = einsum(xp, subscripts, *operands)
    return result if dtype is None else xp.astype(result, dtype)


SUBLIST_LETTERS = string.ascii_uppercase + string.ascii_lowercase
"""The letters of NumPy's einsum sublist labels 0 to 51, in its order (so implicit outputs
agree)."""


def from_sublists(args) -> tuple[str, tuple]:
    """``(subscripts, operands)`` of ``einsum``'s arguments: the string form as it is, NumPy's
    sublist form (``a, [0, 1], b, [1, 2], [0, 2]``) with its labels as letters and
    ``Ellipsis`` as ``...``."""
    if not args or isinstance(args[0], str):
        return (args[0] if args else ""), tuple(args[1:])
    output = args[-1] if len(args) % 2 else None
    pairs = args[:-1] if output is not None else args
    specs = [_letters(sublist) for sublist in pairs[1::2]]
    subscripts = ",".join(specs) + ("" if output is None else "->" + _letters(output))
    return subscripts, tuple(pairs[0::2])


def _letters(sublist):
    letters = []
    for label in sublist:
        if label is Ellipsis:
            letters.append("...")
        elif isinstance(label, int) and 0 <= label < len(SUBLIST_LETTERS):
            letters.append(SUBLIST_LETTERS[label])
        else:
            raise ValueError(f"einsum: the sublist {list(sublist)!r} holds {label!r}; its labels "
                             f"are integers from 0 to {len(SUBLIST_LETTERS) - 1} or Ellipsis")
    return "".join(letters)


def einsum(xp, subscripts, *operands):
    """``einsum`` on the namespace ``xp``: its own where it has one (differentiable, with its
    rule, on arraygrad's namespaces), else :func:`composed`."""
    own = getattr(xp, "einsum", None)
    return own(subscripts, *operands) if own else composed(xp, subscripts, *operands)


def composed(xp, subscripts, *operands):
    """``einsum`` with the standard's functions: each operand's diagonals taken, its axes laid
    out in one order of all letters, the operands multiplied with broadcasting, then summed over
    the letters not kept."""
    operands = [xp.asarray(operand) for operand in operands]
    specs, output = parse_einsum(subscripts, tuple(tuple(o.shape) for o in operands))
    order = list(output) + sorted({c for spec in specs for c in spec} - set(output))
    result = None
    for spec, operand in zip(specs, operands):
        operand, spec = _diagonals(xp, operand, spec)
        present = sorted(range(len(spec)), key=lambda i: order.index(spec[i]))
        operand = xp.permute_dims(operand, tuple(present))
        kept = [spec[i] for i in present]
        shape = [operand.shape[kept.index(c)] if c in kept else 1 for c in order]
        operand = xp.reshape(operand, tuple(shape))
        result = operand if result is None else result * operand
    summed = tuple(range(len(output), len(order)))
    return xp.sum(result, axis=summed) if summed else result


def _diagonals(xp, operand, spec):
    """``operand``'s diagonal along each letter ``spec`` repeats, and its letters, each once:
    ``x * I`` summed over the second axis of each pair."""
    for second, c in enumerate(spec):
        first = spec.index(c)
        if first != second:
            n = operand.shape[second]
            shape = [1] * operand.ndim
            shape[first] = shape[second] = n
            eye = xp.eye(n, dtype=operand.dtype, device=getattr(operand, "device", None))
            operand = xp.sum(operand * xp.reshape(eye, tuple(shape)), axis=second)
            return _diagonals(xp, operand, spec[:second] + spec[second + 1:])
    return operand, spec




def _linalg(name):
    return _in("linalg", name)


_LIKE = dict(dtype=None, order="K", shape=None)  # order: a memory layout, nothing to record
FUNCTIONS = {
    "sum": _reduction("sum"), "prod": _reduction("prod"), "mean": _reduction("mean"),
    "max": _extreme("max"), "amax": _extreme("max"), "min": _extreme("min"),
    "amin": _extreme("min"), "all": _extreme("all"), "any": _extreme("any"),
    "std": _spread("std"), "var": _spread("var"), "ptp": _ptp,
    "nansum": _nan_sum, "nanmean": _nan_mean, "nanvar": _nan_var,
    "nanstd": lambda a, axis=None, dtype=None, ddof=0, keepdims=False: _nan_var(
        a, axis, dtype, ddof, keepdims) ** 0.5,
    "nanprod": lambda a, axis=None, dtype=None, keepdims=False: _reduction("prod")(
        _nan_as(a, 1), axis, dtype, keepdims),
    "nanmax": _nan_extreme("max", -math.inf), "nanmin": _nan_extreme("min", math.inf),
    "cumsum": _cumulative("cumulative_sum"), "cumprod": _cumulative("cumulative_prod"),
    "nancumsum": _cumulative("cumulative_sum", 0.0),
    "nancumprod": _cumulative("cumulative_prod", 1.0),
    "cumulative_sum": _running("cumulative_sum"), "cumulative_prod": _running("cumulative_prod"),
    "concatenate": _concatenate, "stack": _stack,
    "vstack": _stacked(2, 0), "hstack": _stacked(1, 1), "dstack": _stacked(3, 2),
    "column_stack": _column_stack,
    "atleast_1d": _at_least(1), "atleast_2d": _at_least(2), "atleast_3d": _at_least(3),
    "where": _where, "dot": _dot, "inner": _inner, "outer": _outer, "vdot": _vdot,
    "kron": _kron, "cross": _cross,
    "tensordot": lambda a, b, axes=2: _namespace_of([a, b]).tensordot(a, b, axes=axes),
    "trace": _trace, "diagonal": _diagonal, "transpose": _transpose, "squeeze": _squeeze,
    "matrix_transpose": lambda x: _namespace_of([x]).matrix_transpose(x),
    # copy=: any copy behaves as one (copy-on-write)
    "reshape": lambda a, shape, copy=None: a.__array_namespace__().reshape(a, shape),
    "ravel": lambda a: _flat(a.__array_namespace__(), a),
    "swapaxes": _swapaxes, "moveaxis": _method("moveaxis"), "expand_dims": _expand_dims,
    "broadcast_to": lambda array, shape: array.__array_namespace__().broadcast_to(
        array, tuple(shape) if not isinstance(shape, int) else (shape,)),
    "broadcast_arrays": lambda *args: tuple(_namespace_of(args).broadcast_arrays(*args)),
    # kind= and stable=: any sort gives the same values; argsort is stable (valid for any kind)
    "sort": lambda a, axis=-1, kind=None, stable=None: _with_flat_default("sort", a, axis),
    "argsort": lambda a, axis=-1, kind=None, stable=None: _with_flat_default("argsort", a, axis),
    # a sorted array is a partition for every kth
    "partition": lambda a, kth, axis=-1: _with_flat_default("sort", a, axis),
    "argmax": lambda a, axis=None, keepdims=False: _with_flat_default(
        "argmax", a, axis, keepdims=keepdims),
    "argmin": lambda a, axis=None, keepdims=False: _with_flat_default(
        "argmin", a, axis, keepdims=keepdims),
    "diff": _diff, "ediff1d": _ediff1d, "gradient": _gradient, "trapezoid": _trapezoid,
    "take": _take, "take_along_axis": _take_along_axis,
    "repeat": _repeat, "roll": lambda a, shift, axis=None: a.__array_namespace__().roll(
        a, shift, axis=_axis(axis)),
    "flip": lambda m, axis=None: m.__array_namespace__().flip(m, axis=_axis(axis)),
    "tile": lambda A, reps: A.__array_namespace__().tile(A, tuple(reps) if not isinstance(
        reps, int) else (reps,)),
    "tril": lambda m, k=0: _namespace_of([m]).tril(m, k=k),
    "triu": lambda m, k=0: _namespace_of([m]).triu(m, k=k),
    "unstack": lambda x, axis=0: _namespace_of([x]).unstack(x, axis=axis),
    **{name: _gathered(name, ("arr",), ("obj",)) for name in ("delete",)},
    "insert": _gathered("insert", ("arr", "values"), ("obj",)),
    "append": _gathered("append", ("arr", "values")),
    "block": _gathered("block", ("arrays",), nested=True),
    "compress": _gathered("compress", ("a",), ("condition",)),
    "extract": _gathered("extract", ("arr",), ("condition",)),
    "choose": _gathered("choose", ("choices",), ("a",)),
    "select": _select,
    **{name: _gathered(name, ("ary",)) for name in ("split", "array_split", "hsplit", "vsplit",
                                                    "dsplit")},
    **{name: _gathered(name, ("m",)) for name in ("fliplr", "flipud", "rot90")},
    "rollaxis": _gathered("rollaxis", ("a",)), "resize": _gathered("resize", ("a",)),
    "diag": _gathered("diag", ("v",)), "diagflat": _gathered("diagflat", ("v",)),
    "clip": _clip, "round": _round, "around": _round, "fix": lambda x: _namespace_of(
        [x]).trunc(x), "average": _average,
    "real": lambda val: val.real, "imag": lambda val: val.imag,  # a real one's: zeros
    "angle": lambda z, deg=False: z.__array_namespace__().atan2(z.imag, z.real) * (
        180 / math.pi if deg else 1),
    "real_if_close": _real_if_close, "nan_to_num": _nan_to_num, "unwrap": _unwrap,
    "sinc": lambda x: _namespace_of([x]).sinc(x), "i0": _i0,
    "copy": lambda a, order="K": a.__array_namespace__().asarray(a, copy=True),
    "astype": lambda x, dtype, copy=True: _namespace_of([x]).astype(x, dtype),
    "zeros_like": lambda a, dtype=None, order="K", shape=None: _filled(a, 0, dtype, shape),
    "ones_like": lambda a, dtype=None, order="K", shape=None: _filled(a, 1, dtype, shape),
    "empty_like": lambda prototype, dtype=None, order="K", shape=None: _filled(
        prototype, 0, dtype, shape),
    "full_like": lambda a, fill_value, dtype=None, order="K", shape=None: _filled(
        a, fill_value, dtype, shape),
    "linspace": _linspace, "logspace": _logspace, "meshgrid": _meshgrid,
    "vander": _vander, "cov": _cov, "corrcoef": _corrcoef, "polyval": _polyval,
    "shape": lambda a: tuple(a.shape), "ndim": lambda a: a.ndim,
    "size": lambda a, axis=None: a.size if axis is None else a.shape[axis],
    "result_type": lambda *arrays_and_dtypes: _namespace_of(arrays_and_dtypes).result_type(
        *arrays_and_dtypes),
    "iscomplexobj": lambda x: "complex" in str(x.dtype),
    "isrealobj": lambda x: "complex" not in str(x.dtype),
    "searchsorted": lambda a, v, side="left", sorter=None: _namespace_of([a, v]).searchsorted(
        a, v, side=side, sorter=sorter),
    "nonzero": lambda a: a.__array_namespace__().nonzero(a),
    "count_nonzero": lambda a, axis=None, keepdims=False: a.__array_namespace__(
        ).count_nonzero(a, axis=_axis(axis), keepdims=keepdims),
    "unique": _unique,
    **{name: _method(name) for name in ("unique_values", "unique_counts", "unique_inverse",
                                        "unique_all")},
    "pad": pad, "einsum": _einsum,
    "linalg.norm": _norm, "linalg.svd": _svd, "linalg.eigh": _eigh, "linalg.qr": _qr,
    "linalg.eigvalsh": _eigvalsh, "linalg.cond": _cond, "linalg.lstsq": _lstsq,
    "linalg.multi_dot": _multi_dot, "linalg.tensorinv": _tensorinv,
    "linalg.tensorsolve": _tensorsolve,
    "linalg.pinv": _pinv,
    "linalg.matrix_rank": lambda A, hermitian=False, rtol=None: _namespace_of(
        [A]).linalg.matrix_rank(_from_triangle(_namespace_of([A]), A, "L") if hermitian else A,
                                rtol=rtol),  # hermitian: NumPy's eigvalsh reads one triangle
    **{f"linalg.{name}": _linalg(name) for name in (
        "det", "inv", "solve", "slogdet", "cholesky", "matrix_power", "svdvals", "eig",
        "eigvals", "cross", "diagonal", "matmul", "matrix_norm", "matrix_transpose", "outer",
        "tensordot", "trace", "vecdot", "vector_norm")},
    **{f"fft.{name}": _fft_one(name, complex_input) for name, complex_input in (
        ("fft", True), ("ifft", True), ("rfft", False), ("irfft", True), ("hfft", True),
        ("ihfft", False))},
    **{f"fft.{name}n": _fft_many(f"{name}n", complex_input) for name, complex_input in (
        ("fft", True), ("ifft", True), ("rfft", False), ("irfft", True))},
    **{f"fft.{name}2": _fft_many(f"{name}n", complex_input, True) for name, complex_input in (
        ("fft", True), ("ifft", True), ("rfft", False), ("irfft", True))},
    "fft.fftshift": lambda x, axes=None: _namespace_of([x]).fft.fftshift(x, axes=axes),
    "fft.ifftshift": lambda x, axes=None: _namespace_of([x]).fft.ifftshift(x, axes=axes),
}
"""NumPy functions (``linalg.`` and ``fft.`` ones so prefixed) on Variables, recorded through
the differentiable namespace, each with the NumPy arguments it takes."""

NO_DERIVATIVE = frozenset((
    "argmax", "argmin", "argsort", "searchsorted", "nonzero", "count_nonzero", "shape", "ndim",
    "size", "result_type", "iscomplexobj", "isrealobj", "zeros_like", "ones_like",
    "empty_like", "full_like", "fix", "linalg.matrix_rank", "all", "any"))
"""Functions of ``FUNCTIONS`` whose results carry no gradient (integers, booleans, constants,
piecewise constants)."""

ON_VALUES = frozenset((
    "allclose", "isclose", "array_equal", "array_equiv", "argpartition", "argwhere",
    "array2string", "array_repr", "array_str", "bincount", "busday_count", "busday_offset",
    "is_busday", "datetime_as_string", "can_cast", "common_type", "min_scalar_type",
    "digitize", "flatnonzero", "histogram", "histogram2d", "histogramdd",
    "histogram_bin_edges", "iscomplex", "isreal", "isneginf", "isposinf", "isin", "lexsort",
    "may_share_memory", "shares_memory", "nanargmax", "nanargmin", "packbits", "unpackbits",
    "ravel_multi_index", "unravel_index", "tril_indices_from", "triu_indices_from",
    "diag_indices_from", "ix_", "intersect1d", "setdiff1d", "setxor1d", "union1d",
    "einsum_path", "save", "savetxt", "savez", "savez_compressed"))
"""NumPy functions with no derivative (booleans, indices, counts, text, files): they run on
the values and return NumPy's own results. A floating result of a Variable that requires grad
(``histogram``'s edges, ``union1d``) is refused instead: it would leave the graph."""

_IN_PLACE = ("writes into its argument in place; build a new array with np.where, or use "
             "array_api_extra.at(x)[...].set(...)")
_CALLBACK = "calls a Python function on NumPy slices; loop over the slices with the namespace"
_NOT_YET = "not implemented for Variables yet; compose it from the namespace's functions"
REFUSED = {
    **dict.fromkeys(("copyto", "place", "put", "put_along_axis", "putmask", "fill_diagonal"),
                    _IN_PLACE),
    **dict.fromkeys(("apply_along_axis", "apply_over_axes", "piecewise"), _CALLBACK),
    **dict.fromkeys(("convolve", "correlate", "interp", "median", "percentile", "quantile",
                     "nanmedian", "nanpercentile", "nanquantile", "geomspace", "sort_complex",
                     "trim_zeros"), _NOT_YET),
    **dict.fromkeys(("poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul",
                     "polysub", "roots"),
                    "polynomial arithmetic is not implemented for Variables (np.polyval is)"),
}
"""NumPy functions that Variables refuse, with the reason the ``TypeError`` gives."""


def _name(func):
    """NumPy's function's name in the tables: ``linalg.`` or ``fft.`` and its ``__name__``."""
    module = getattr(func, "__module__", None) or ""
    prefix = next((p + "." for p in ("linalg", "fft") if module.startswith("numpy." + p)), "")
    return prefix + func.__name__


def _numpy_function(name):
    np = _numpy()
    module, _, short = name.rpartition(".")
    return getattr(getattr(np, module) if module else np, short)


_signature = functools.cache(inspect.signature)  # (looked up on every call through the table)


_NEUTRAL = {"where": True}
"""Values of NumPy options that mean what their absent default means."""


def _at_default(key, value, default):
    if type(value).__name__ == "_NoValueType" or _NEUTRAL.get(key, ...) is value:
        return True
    if value is default:
        return True
    try:
        return type(value) is type(default) and bool(value == default)
    except Exception:  # an array: not a default
        return False


def _bind(name, func, implementation, args, kwargs):
    """``(args, kwargs)`` for ``implementation``: the call bound with NumPy's signature, each
    argument that the implementation names passed on, any other one at NumPy's default dropped,
    any other one refused, named."""
    signature = _signature(func)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"numpy.{name}{signature}: {exc}") from None
    accepts = getattr(implementation, "accepts", None)
    if accepts == "all":
        return args, kwargs
    accepted = _signature(implementation).parameters
    positional, keywords = [], {}
    kinds = [p.kind for p in signature.parameters.values()]
    before_varargs = set(list(signature.parameters)[:kinds.index(
        inspect.Parameter.VAR_POSITIONAL)] if inspect.Parameter.VAR_POSITIONAL in kinds else ())
    for key, value in bound.arguments.items():
        parameter = signature.parameters[key]
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            positional.extend(value)
            continue
        if key in before_varargs:  # before NumPy's *args: positional
            positional.append(value)
            continue
        items = value.items() if parameter.kind is inspect.Parameter.VAR_KEYWORD else (
            (key, value),)
        for option, given in items:
            if option in accepted and type(given).__name__ != "_NoValueType":
                keywords[option] = given
            elif not _at_default(option, given, parameter.default):
                raise unsupported(f"numpy.{name}", f" with {option}={_brief(given)}: arraygrad "
                                  "takes this argument only at NumPy's default "
                                  f"({parameter.default!r})")
    return positional, keywords


def _brief(value):
    text = repr(value) if not hasattr(value, "shape") else (
        f"<array of shape {tuple(value.shape)}, dtype {value.dtype}>")
    return text if len(text) <= 60 else text[:57] + "..."


def _has_floats(result):
    if isinstance(result, (list, tuple)):
        return any(_has_floats(r) for r in result)
    kind = getattr(getattr(result, "dtype", None), "kind", None)
    return kind in ("f", "c") or isinstance(result, (float, complex))


def _on_values(name, func, args, kwargs):
    """NumPy's ``func`` on the values: no gradient to keep, unless its result is floating and a
    Variable requires grad (then refused)."""
    result = func(*_values(args), **_values(kwargs))
    if _has_floats(result) and _requires_grad([*args, *kwargs.values()]):
        raise unsupported(f"numpy.{name}", " on a Variable that requires grad (its floating "
                          "result has no recorded derivative)")
    return result


def array_function(func, args, kwargs):
    """``func(*args, **kwargs)`` for a NumPy function given a Variable (NEP 18)."""
    name = _name(func)
    if name in ON_VALUES:
        return _on_values(name, func, args, kwargs)
    implementation = FUNCTIONS.get(name)
    if implementation is None:
        raise unsupported(f"numpy.{name}", f" ({REFUSED[name]})" if name in REFUSED else "")
    args, kwargs = _bind(name, func, implementation, args, kwargs)
    if kwargs.get("dtype") is not None:
        kwargs["dtype"] = _own_dtype(_any_namespace([*args, *kwargs.values()]), kwargs["dtype"])
    return implementation(*args, **kwargs)
