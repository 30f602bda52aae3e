"""NumPy's protocols on Variables: NEP 13 (``__array_ufunc__``) and NEP 18
(``__array_function__``), as in MyGrad and HIPS autograd.

Plain NumPy code records through the differentiable namespace: ``np.sin(v)``, ``np.mean(v,
axis=0)``, ``np.concatenate([v, w])``, ``np.linalg.norm(v)``; SciPy's special ufuncs reach the
namespace's ``special`` functions. Each entry below maps NumPy's name and signature onto the
standard's. A NumPy function with no entry raises a ``TypeError`` naming it: it never returns
an array that silently left the graph.
"""

from __future__ import annotations

import math
import string

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
        "bitwise_and", "bitwise_or", "bitwise_xor", "nextafter")},
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
}

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

def _flat(xp, a):
    return xp.reshape(a, (-1,))


def _no_out(what, out):
    if out is not None:
        raise unsupported(what, " with out=")


def _reduction(standard):
    def reduce(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        xp = _namespace_of([a])  # (a is the Variable that NumPy dispatched on, else it raises)
        _no_out(standard, out)
        if kwargs:
            _check_options(f"numpy.{standard}", kwargs)
        result = getattr(xp, standard)(a, axis=_axis(axis), keepdims=keepdims)
        return result if dtype is None else xp.astype(result, dtype)
    return reduce


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _extreme(standard):
    """``max``, ``min``, ``all``, ``any``: NumPy's signature has no dtype."""
    reduction = _reduction(standard)

    def reduce(a, axis=None, out=None, keepdims=False, **kwargs):
        return reduction(a, axis, None, out, keepdims, **kwargs)
    return reduce


def _spread(standard):
    def spread(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
        xp = a.__array_namespace__()
        _no_out(standard, out)
        _check_options(f"numpy.{standard}", kwargs, ("mean",))
        result = getattr(xp, standard)(a, axis=_axis(axis), correction=ddof, keepdims=keepdims)
        return result if dtype is None else xp.astype(result, dtype)
    return spread


def _nan_sum(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    return _SUM(_nan_as(a, 0), axis, dtype, out, keepdims, **kwargs)


_SUM = _reduction("sum")


def _nan_as(a, value):
    xp = a.__array_namespace__()
    return xp.where(xp.isnan(a), xp.full_like(a, value), a)


def _nan_count(xp, a, axis, keepdims):
    return xp.sum(xp.astype(~xp.isnan(a), a.dtype), axis=_axis(axis), keepdims=keepdims)


def _nan_mean(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    xp = a.__array_namespace__()
    return _nan_sum(a, axis, dtype, out, keepdims, **kwargs) / _nan_count(xp, a, axis, keepdims)


def _nan_var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
    xp = a.__array_namespace__()
    # 0 at the NaNs before squaring: a NaN squared and only then dropped would send NaN back
    # through the mean into every entry
    deviation = _nan_as(a - _nan_mean(a, axis, None, out, True), 0)
    return (_nan_sum(deviation * xp.conj(deviation) if "complex" in str(a.dtype) else
                     deviation * deviation, axis, dtype, out, keepdims, **kwargs)
            / (_nan_count(xp, a, axis, keepdims) - ddof))


def _nan_extreme(standard, fill):
    reduction = _extreme(standard)

    def extreme(a, axis=None, out=None, keepdims=False, **kwargs):
        return reduction(_nan_as(a, fill), axis, out, keepdims, **kwargs)
    return extreme


def _cumulative(standard):
    def cumulative(a, axis=None, dtype=None, out=None):
        xp = a.__array_namespace__()
        _no_out(standard, out)
        if axis is None:
            a, axis = _flat(xp, a), 0
        result = getattr(xp, standard)(a, axis=axis)
        return result if dtype is None else xp.astype(result, dtype)
    return cumulative


def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    xp = _namespace_of(arrays)
    _no_out("concatenate", out)
    arrays = [xp.asarray(a) for a in arrays]
    if axis is None:
        arrays, axis = [_flat(xp, a) for a in arrays], 0
    result = xp.concat(arrays, axis=axis)
    return result if dtype is None else xp.astype(result, dtype)


def _stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    xp = _namespace_of(arrays)
    _no_out("stack", out)
    result = xp.stack([xp.asarray(a) for a in arrays], axis=axis)
    return result if dtype is None else xp.astype(result, dtype)


def _at_least(ndim):
    def at_least(*arrays):
        results = []
        for a in arrays:
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


def _namespace_of(arrays):
    for a in arrays:
        if hasattr(a, "_inplace_assign"):
            return a.__array_namespace__()
    raise unsupported("this call", " without a Variable among its arrays")


def _where(condition, x=None, y=None):
    xp = _namespace_of([condition, x, y])
    if x is None and y is None:
        return xp.nonzero(condition)
    return xp.where(condition, x, y)


def _dot(a, b, out=None):
    xp = _namespace_of([a, b])
    _no_out("dot", out)
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


def _outer(a, b, out=None):
    xp = _namespace_of([a, b])
    _no_out("outer", out)
    return xp.reshape(xp.asarray(a), (-1, 1)) * xp.reshape(xp.asarray(b), (1, -1))


def _vdot(a, b):
    xp = _namespace_of([a, b])
    return xp.sum(xp.conj(_flat(xp, xp.asarray(a))) * _flat(xp, xp.asarray(b)))


def _last_two(xp, a, axis1, axis2):
    """``a`` with ``axis1`` and ``axis2`` moved last, for the standard's matrix functions."""
    return xp.moveaxis(a, (axis1, axis2), (-2, -1))


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    xp = a.__array_namespace__()
    _no_out("trace", out)
    return xp.linalg.trace(_last_two(xp, a, axis1, axis2), offset=offset, dtype=dtype)


def _diagonal(a, offset=0, axis1=0, axis2=1):
    xp = a.__array_namespace__()
    return xp.linalg.diagonal(_last_two(xp, a, axis1, axis2), offset=offset)


def _transpose(a, axes=None):
    xp = a.__array_namespace__()
    return xp.permute_dims(a, tuple(axes) if axes is not None else tuple(range(a.ndim))[::-1])


def _squeeze(a, axis=None):
    xp = a.__array_namespace__()
    if axis is None:
        axis = tuple(i for i, n in enumerate(a.shape) if n == 1)
    return xp.squeeze(a, axis=axis)


def _with_flat_default(standard, keyword="axis"):
    """A function whose ``axis=None`` means "of the flattened array" in NumPy."""
    def function(a, *args, **kwargs):
        xp = _namespace_of([a])
        a = xp.asarray(a)
        axis = kwargs.pop(keyword, None)
        if axis is None:
            a, axis = _flat(xp, a), 0
        return getattr(xp, standard)(a, *args, axis=axis, **kwargs)
    return function


def _take(a, indices, axis=None, out=None, mode="raise"):
    xp = a.__array_namespace__()
    _no_out("take", out)
    if axis is None:
        a, axis = _flat(xp, a), 0
    return xp.take(a, xp.asarray(indices), axis=axis)


def _repeat(a, repeats, axis=None):
    xp = a.__array_namespace__()
    if axis is None:
        a, axis = _flat(xp, a), 0
    return xp.repeat(a, repeats, axis=axis)


def _roll(a, shift, axis=None):
    return a.__array_namespace__().roll(a, shift, axis=_axis(axis))


def _flip(m, axis=None):
    return m.__array_namespace__().flip(m, axis=_axis(axis))


def _clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    xp = a.__array_namespace__()
    _no_out("clip", out)
    low = a_min if a_min is not None else min
    high = a_max if a_max is not None else max
    return xp.clip(a, min=low, max=high)


def _round(a, decimals=0, out=None):
    xp = a.__array_namespace__()
    _no_out("round", out)
    if decimals == 0:
        return xp.round(a)
    return xp.round(a * 10.0 ** decimals) / 10.0 ** decimals


def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    xp = _namespace_of([a, weights])
    a = xp.asarray(a)
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


def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    xp = a.__array_namespace__()
    if not compute_uv:
        return xp.linalg.svdvals(a)
    return xp.linalg.svd(a, full_matrices=full_matrices)


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


def pad(array, pad_width, mode="constant", constant_values=0):
    xp = array.__array_namespace__()
    if mode != "constant":
        raise unsupported("numpy.pad", f" with mode={mode!r} (only 'constant' is)")
    ndim = array.ndim
    widths = _pairs(pad_width, ndim)
    for axis, (before, after) in enumerate(widths):
        parts = []
        for width in (before, after):
            shape = list(array.shape)
            shape[axis] = width
            parts.append(xp.full(tuple(shape), constant_values, dtype=array.dtype))
        array = xp.concat([parts[0], array, parts[1]], axis=axis)
    return array


def _pairs(pad_width, ndim):
    if isinstance(pad_width, int):
        return [(pad_width, pad_width)] * ndim
    pad_width = [tuple(p) if isinstance(p, (list, tuple)) else (p, p) for p in pad_width]
    return pad_width * ndim if len(pad_width) == 1 else pad_width


def _einsum(*operands, out=None, optimize=False, **options):
    """``np.einsum`` on Variables: the namespace's ``einsum`` where the backend has one, else
    composed of the standard's functions; NumPy's sublist form is written as subscripts first.
    ``optimize`` (the order of NumPy's contractions) changes no value: it is ignored."""
    refused = ["out"] * (out is not None) + list(options)
    if refused:
        raise unsupported("numpy.einsum", f" with {', '.join(k + '=' for k in refused)}")
    subscripts, operands = from_sublists(operands)
    xp = _namespace_of(operands)
    operands = [xp.asarray(operand) for operand in operands]
    parse_einsum(subscripts, tuple(tuple(o.shape) for o in operands))  # errors alike everywhere
    return einsum(xp, subscripts, *operands)


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


def _values(value):
    return value.detach().numpy() if hasattr(value, "_inplace_assign") else value


def _method(name):
    """A function of the standard with NumPy's signature as is."""
    def call(x, *args, **kwargs):
        return getattr(_namespace_of([x]), name)(x, *args, **kwargs)
    return call


def _linalg(name):
    def call(*args, **kwargs):
        return getattr(_namespace_of(args).linalg, name)(*args, **kwargs)
    return call


FUNCTIONS = {
    "sum": _reduction("sum"), "prod": _reduction("prod"), "mean": _reduction("mean"),
    "max": _extreme("max"), "amax": _extreme("max"), "min": _extreme("min"),
    "amin": _extreme("min"), "all": _extreme("all"), "any": _extreme("any"),
    "std": _spread("std"), "var": _spread("var"),
    "nansum": _nan_sum, "nanmean": _nan_mean, "nanvar": _nan_var,
    "nanstd": lambda *a, **k: _nan_var(*a, **k) ** 0.5,
    "nanmax": _nan_extreme("max", -math.inf), "nanmin": _nan_extreme("min", math.inf),
    "cumsum": _cumulative("cumulative_sum"), "cumprod": _cumulative("cumulative_prod"),
    "nancumsum": lambda a, axis=None, dtype=None, out=None: _cumulative("cumulative_sum")(
        _nan_as(a, 0.0), axis, dtype, out),
    "nancumprod": lambda a, axis=None, dtype=None, out=None: _cumulative("cumulative_prod")(
        _nan_as(a, 1.0), axis, dtype, out),
    "concatenate": _concatenate, "stack": _stack,
    "vstack": lambda tup, **k: _concatenate(_at_least(2)(*tup) if len(tup) > 1 else
                                            [_at_least(2)(*tup)], axis=0, **k),
    "hstack": lambda tup, **k: _concatenate(tup, axis=0 if _namespace_of(tup).asarray(
        tup[0]).ndim == 1 else 1, **k),
    "atleast_1d": _at_least(1), "atleast_2d": _at_least(2), "atleast_3d": _at_least(3),
    "where": _where, "dot": _dot, "inner": _inner, "outer": _outer, "vdot": _vdot,
    "tensordot": lambda a, b, axes=2: _namespace_of([a, b]).tensordot(a, b, axes=axes),
    "trace": _trace, "diagonal": _diagonal, "transpose": _transpose, "squeeze": _squeeze,
    "reshape": lambda a, shape=None, order="C", *, newshape=None, copy=None:
        a.__array_namespace__().reshape(a, shape if shape is not None else newshape),
    "ravel": lambda a, order="C": _flat(a.__array_namespace__(), a),
    "swapaxes": lambda a, axis1, axis2: a.__array_namespace__().moveaxis(
        a, (axis1, axis2), (axis2, axis1)),
    "moveaxis": _method("moveaxis"), "expand_dims": _method("expand_dims"),
    "broadcast_to": lambda array, shape, subok=False: array.__array_namespace__().broadcast_to(
        array, tuple(shape) if not isinstance(shape, int) else (shape,)),
    "broadcast_arrays": lambda *args, subok=False: tuple(
        _namespace_of(args).broadcast_arrays(*args)),
    "sort": lambda a, axis=-1, kind=None, order=None, *, stable=None:
        _with_flat_default("sort")(a, axis=axis),
    "argsort": lambda a, axis=-1, kind=None, order=None, *, stable=None:
        _with_flat_default("argsort")(a, axis=axis),
    "argmax": lambda a, axis=None, out=None, *, keepdims=False:
        _with_flat_default("argmax")(a, axis=axis, keepdims=keepdims),
    "argmin": lambda a, axis=None, out=None, *, keepdims=False:
        _with_flat_default("argmin")(a, axis=axis, keepdims=keepdims),
    "diff": _diff,
    "take": _take, "take_along_axis": lambda arr, indices, axis: arr.__array_namespace__(
        ).take_along_axis(arr, indices, axis=axis),
    "repeat": _repeat, "roll": _roll, "flip": _flip,
    "tile": lambda A, reps: A.__array_namespace__().tile(A, tuple(reps) if not isinstance(
        reps, int) else (reps,)),
    "clip": _clip, "round": _round, "around": _round, "average": _average,
    "real": lambda val: val.real, "imag": lambda val: val.imag,  # a real one's: zeros
    "conj": lambda x, *a, **k: x.__array_namespace__().conj(x),
    "angle": lambda z, deg=False: z.__array_namespace__().atan2(z.imag, z.real) * (
        180 / math.pi if deg else 1),
    "copy": lambda a, order="K", subok=False: a.__array_namespace__().asarray(a, copy=True),
    "zeros_like": _method("zeros_like"), "ones_like": _method("ones_like"),
    "empty_like": _method("empty_like"),
    "full_like": lambda a, fill_value, dtype=None, **k: a.__array_namespace__().full_like(
        a, fill_value, dtype=dtype),
    "shape": lambda a: tuple(a.shape), "ndim": lambda a: a.ndim,
    "size": lambda a, axis=None: a.size if axis is None else a.shape[axis],
    "result_type": lambda *args: _namespace_of(args).result_type(*args),
    "iscomplexobj": lambda x: "complex" in str(x.dtype),
    "isrealobj": lambda x: "complex" not in str(x.dtype),
    "meshgrid": lambda *xi, indexing="xy", **k: list(_namespace_of(xi).meshgrid(
        *xi, indexing=indexing)),
    "searchsorted": lambda a, v, side="left", sorter=None: _namespace_of([a, v]).searchsorted(
        a, v, side=side, sorter=sorter),
    "nonzero": lambda a: a.__array_namespace__().nonzero(a),
    "count_nonzero": lambda a, axis=None, *, keepdims=False: a.__array_namespace__(
        ).count_nonzero(a, axis=_axis(axis), keepdims=keepdims),
    "unique": lambda ar: ar.__array_namespace__().unique_values(ar),
    "cross": lambda a, b, axisa=-1, axisb=-1, axisc=-1, axis=None: _namespace_of(
        [a, b]).linalg.cross(a, b, axis=-1 if axis is None else axis),
    "pad": pad, "sinc": _method("sinc"),
    "einsum": _einsum,
    "linalg.norm": _norm, "linalg.svd": _svd,
    **{f"linalg.{name}": _linalg(name) for name in (
        "det", "inv", "solve", "slogdet", "eigh", "eigvalsh", "cholesky", "qr", "pinv",
        "matrix_power", "matrix_rank", "svdvals")},
}


DETACHED = frozenset(("isclose", "allclose", "array_equal"))
"""NumPy functions whose results carry no gradient (booleans): they run on the values."""


def array_function(func, args, kwargs):
    """``func(*args, **kwargs)`` for a NumPy function given a Variable (NEP 18)."""
    module = func.__module__ or ""
    name = func.__name__
    if module.startswith("numpy.linalg"):
        name = "linalg." + name
    if name == "unique" and kwargs:  # return_counts=...: its values would come back detached
        if getattr(args[0], "requires_grad", False):
            raise unsupported("numpy.unique", f" with {', '.join(kwargs)} on a Variable that "
                              "requires grad (xp.unique_values is differentiable)")
    elif name not in DETACHED:
        implementation = FUNCTIONS.get(name)
        if implementation is None:
            raise unsupported(f"numpy.{name}")
        if kwargs.get("dtype") is not None:
            kwargs["dtype"] = _own_dtype(_any_namespace(args), kwargs["dtype"])
        return implementation(*args, **kwargs)
    return func(*[_values(a) for a in args], **kwargs)  # on the values: no gradient to keep
