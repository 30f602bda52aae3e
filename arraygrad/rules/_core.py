"""The machinery of rules: :class:`Rule` and the tables it is registered in (``defvjp``,
``defjoint``), what a rule may ask about a backend (:data:`backends`), and helpers shared by
the families of rules. It imports nothing of arraygrad: rules are mathematics against ``xp``."""

from __future__ import annotations

import inspect
import math
import operator
from typing import Callable

RULES: dict[str, "Rule"] = {}
"""Differentiable functions by name (``linalg.`` and ``fft.`` prefixed): the standard's, and
those outside it named in :data:`OUTSIDE_STANDARD`."""

NONDIFFERENTIABLE: set[str] = set()
"""Functions whose outputs never require grad (comparisons, ``floor``, ``argmax``, ...)."""

REAL_CONSTANT: set[str] = set()
"""Functions constant for real arguments but smooth for complex ones (``sign``, ``z / |z|``):
registered with a rule, which the namespace records only for complex arguments; for real ones
their results carry no gradient, as those of :data:`NONDIFFERENTIABLE` functions."""

OUTSIDE_STANDARD: set[str] = set()
"""Differentiable functions outside the standard (``einsum``, ``logsumexp``), registered with
``standard=False``: the namespace offers each where the backend's own namespace has it, or on
every backend where its rule has a ``forward`` made of the standard's functions."""

_DISPLAY = {"multiply": "Mul", "subtract": "Sub", "divide": "Div", "negative": "Neg",
            "permute_dims": "Permute", "getitem": "Index", "setitem": "CopySlices"}


LINEAR = "linear"
"""``jvps=LINEAR``: the function is linear in its differentiable arguments together, so its
JVP is the function itself applied to the tangents (JAX's ``deflinear``)."""


TRANSPOSE = "transpose"
"""``jvps=TRANSPOSE``: the forward mode computes ``J t`` by transposing the VJP (the gradient of
``<VJP(g), t>`` with respect to ``g``), for functions whose tangent formula would repeat the
VJP's work (factorizations, ``solve``, ``pinv``)."""


MULTILINEAR = "multilinear"
"""``jvps=MULTILINEAR``: the function is linear in each array argument on its own (``einsum``),
so its JVP is the sum, over the arguments with a tangent, of the function with that argument
replaced by its tangent (the others' values are those its VJP saved)."""

_JVP_KINDS = (LINEAR, TRANSPOSE, MULTILINEAR)


class RuleInterface:
    """What the engine asks of every rule, beyond its VJPs: the defaults of an ordinary one.
    Custom Functions' rules (``_function``) answer otherwise."""

    __slots__ = ()

    asks_needed = False
    """Whether the joint VJP takes ``needed=``: per array argument, whether its gradient is
    wanted (the others it may leave as None, skipping their work)."""

    def keeps_none(self, node) -> bool:
        """Whether the VJP takes None, not zeros, for an output that got no gradient."""
        return False

    def saved_tensors_of(self, node):
        """``grad_fn.saved_tensors``: only custom Functions' nodes have them."""
        raise AttributeError(f"{self.display} has no saved_tensors: only the nodes of custom "
                             "Functions (ag.Function, custom_vjp, custom_jvp) have")


class Rule(RuleInterface):
    """The differentiation rule of one function: its array arguments, their VJPs and JVPs."""

    __slots__ = ("name", "display", "arrays", "sequence", "params", "vjps", "joint", "jvps",
                 "saves", "sources", "index", "keywords", "jvp_index", "jvp_keywords", "outputs",
                 "pickers", "users", "positional", "forward", "symbolic_zeros",
                 "asks_needed")

    def __init__(self, name, arrays, vjps, *, joint=None, jvps=(), params=(), sequence=False,
                 outputs=1, forward=None, symbolic_zeros=False):
        self.name = name
        # symbolic_zeros: the VJP of a function of several outputs takes None (the symbolic
        # zero) for an output that got no gradient, not zeros, where a formula has a simpler
        # and better defined special case (eigenvalues alone: no 1 / (w_i - w_j) terms). The
        # engine asks keeps_none(node).
        self.symbolic_zeros = symbolic_zeros
        # forward(xp, *arrays, **options): the function made of the standard's functions, for
        # one outside the standard that every backend can compute (logsumexp); None: the
        # backend's own.
        self.forward = forward
        self.display = _DISPLAY.get(name) or "".join(
            part.capitalize() for part in name.replace(".", "_").split("_"))
        self.display += "Backward"
        self.arrays = tuple(arrays)
        self.sequence = sequence  # "list" (concat's arrays) or "varargs" (broadcast_arrays)
        # Options a caller may give by position, in order; arraygrad itself passes those after
        # "*" by keyword (keyword-only in an earlier revision of the standard, which backends
        # such as ndonnx still follow).
        params = tuple(params)
        star = params.index("*") if "*" in params else len(params)
        self.params = params[:star] + params[star + 1:]
        self.positional = params[:star]
        self.vjps = tuple(vjps) if vjps is not None else None  # None: no rule (see no_rule)
        self.joint = joint
        # One tangent rule per argument (xp, t, <saved>..., *, <options>), LINEAR, TRANSPOSE
        # or MULTILINEAR.
        self.jvps = jvps if jvps in _JVP_KINDS else tuple(jvps)
        self.outputs = outputs
        backward = (joint,) if joint is not None else (self.vjps or ())
        forward = self.jvps if self.jvps not in _JVP_KINDS else ()
        saves: list[str] = []
        self.index, self.keywords = self._bind(backward, saves)
        self.jvp_index, self.jvp_keywords = self._bind(forward, saves)
        self.saves = tuple(saves)
        # (needed is no option of the function: it is kept out of the options read)
        self.asks_needed = joint is not None and "needed" in (self.keywords[0] or ())
        if self.asks_needed:
            self.keywords[0] = self.keywords[0] - {"needed"}
        # None where a function takes every saved value in order (the common case).
        every = tuple(range(len(saves)))
        self.index = [None if index == every else index for index in self.index]
        self.jvp_index = [None if index == every else index for index in self.jvp_index]
        self.sources = tuple(self._source(item) for item in saves)
        # Per VJP: a function taking the saved values to that VJP's positional arguments.
        self.pickers = tuple(_picker(index) for index in self.index)
        # Per saved value: the arguments whose VJP or JVP reads it (None: any argument). The
        # namespace saves it only if one of them requires grad, as PyTorch does.
        self.users = tuple(self._users(k) for k in range(len(saves)))
        if joint is None and self.vjps is not None and len(self.vjps) != len(self.arrays):
            raise TypeError(f"rule {name!r}: {len(self.vjps)} VJPs for the "
                            f"{len(self.arrays)} array arguments {self.arrays}")

    def _bind(self, functions, saves):
        """Positions in ``saves`` of what each function needs (adding to ``saves``), and the
        options each takes."""
        index, keywords = [], []
        for function in functions:
            if function is None:
                index.append(())
                keywords.append(frozenset())
                continue
            needed, options = _signature(function, self.name)
            for item in needed:
                if item not in saves:
                    saves.append(item)
            index.append(tuple(saves.index(item) for item in needed))
            keywords.append(options)
        return index, keywords

    def _source(self, item):
        """Where a saved name comes from: ``("input"|"shape", argument index)``, ``("ans", 0)``,
        or ``("inputs"|"shapes", 0)`` for a sequence argument."""
        if item == "ans":
            return ("ans", 0)
        base, kind = (item[:-6], "shape") if item.endswith("_shape") else (item, "input")
        if base not in self.arrays:
            raise TypeError(f"rule {self.name!r}: {item!r} is neither 'ans', an argument "
                            f"{self.arrays} nor '<argument>_shape'")
        if self.sequence:
            return (kind + "s", 0)
        return (kind, self.arrays.index(base))

    def _users(self, k):
        if self.joint is not None or self.sequence or self.jvps in _JVP_KINDS:
            return None
        return frozenset(i for indexes in (self.index, self.jvp_index)
                         for i, index in enumerate(indexes) if index is None or k in index)

    def keeps_none(self, node) -> bool:
        return self.symbolic_zeros

    def __repr__(self):
        return f"<Rule {self.name}>"


def _picker(index):
    """``saved -> args`` for a VJP taking the saved values at ``index``; None where it takes
    all of them in order (the common case: no call)."""
    if index is None:
        return None
    if not index:
        return lambda saved: ()
    if len(index) == 1:
        (position,) = index
        return lambda saved: (saved[position],)
    return operator.itemgetter(*index)


def _signature(function: Callable, name: str):
    """Split a VJP's parameters after ``(xp, g)`` into saved names and keyword options."""
    parameters = list(inspect.signature(function).parameters.values())[2:]
    needed = tuple(p.name for p in parameters if p.kind == p.POSITIONAL_OR_KEYWORD)
    keywords = frozenset(p.name for p in parameters if p.kind == p.KEYWORD_ONLY)
    if any(p.kind == p.VAR_KEYWORD for p in parameters):
        keywords = None  # takes every option
    return needed, keywords


def defvjp(name: str, *vjps, arrays: str = "x", params: str = "", jvps=(), outputs: int = 1,
           standard: bool = True, forward=None, symbolic_zeros: bool = False):
    """Register per-argument VJPs of ``name`` (``None`` where an argument gets no gradient);
    ``standard=False`` for a function outside the standard (:data:`OUTSIDE_STANDARD`), offered
    where the backend has it, or everywhere with ``forward(xp, ...)`` made of the standard's
    functions; ``symbolic_zeros``: a VJP of several outputs gets None, not zeros, for those
    without a gradient."""
    RULES[name] = Rule(name, arrays.split(), vjps, jvps=jvps, params=params.split(),
                       outputs=outputs, forward=forward, symbolic_zeros=symbolic_zeros)
    if not standard:
        OUTSIDE_STANDARD.add(name)


def defjoint(name: str, vjp, *, arrays: str = "x", params: str = "", sequence: bool = False,
             jvps=(), outputs: int = 1, standard: bool = True):
    """Register one VJP returning the gradients of all array arguments of ``name`` at once,
    for gradients that share work (``solve``'s two, from one solve); a keyword-only
    ``needed`` parameter gets, per array argument, whether its gradient is wanted (return
    None for the others); ``standard=False`` for a function outside the standard
    (:data:`OUTSIDE_STANDARD`)."""
    RULES[name] = Rule(name, arrays.split(), (), joint=vjp, jvps=jvps, params=params.split(),
                       sequence=sequence, outputs=outputs)
    if not standard:
        OUTSIDE_STANDARD.add(name)


def no_rule(name: str) -> Rule:
    """A placeholder rule for a function nobody wrote a rule for: backward through it raises."""
    return Rule(name, (), None)


def nondifferentiable(*names: str, unless_complex: bool = False):
    """Declare functions whose results never carry gradients; with ``unless_complex``, only
    for real arguments (:data:`REAL_CONSTANT`: each has a rule for complex ones)."""
    (REAL_CONSTANT if unless_complex else NONDIFFERENTIABLE).update(names)


class BackendQueries:
    """What a rule may ask about the backend of an array or namespace. Rules import nothing
    above them: the plugin layer installs its answers here when it is imported. The answer is
    an object with ``set_index``, ``get_index``, ``device``, ``capabilities()``,
    ``kernel(name)`` and ``raw_special``; ``None``
    (the default) means a backend that needs no help, as NumPy."""

    @staticmethod
    def of_array(array):
        return None

    @staticmethod
    def of_namespace(xp):
        return None


backends = BackendQueries()


# ----------------------------------------------------------------------------------------------
# Helpers shared by rules
# ----------------------------------------------------------------------------------------------

_COMPLEX_DTYPES: dict = {}  # {dtype class: {dtype: is complex}}: libraries' dtypes never meet


_last_real = None
"""The dtype last found real: rules ask about one dtype over and over, and an identity check
answers before a lookup (a race only costs a lookup: every dtype stored here is real)."""


def is_complex(a) -> bool:
    dtype = getattr(a, "dtype", None)
    if dtype is _last_real:
        return False
    if dtype is None:
        return isinstance(a, complex)
    return is_complex_dtype(dtype)


def is_complex_dtype(dtype) -> bool:
    global _last_real
    if dtype is _last_real:
        return False
    cache = _COMPLEX_DTYPES.get(dtype.__class__)
    if cache is None:
        cache = _COMPLEX_DTYPES.setdefault(dtype.__class__, {})
    answer = cache.get(dtype)
    if answer is None:
        answer = cache[dtype] = "complex" in str(dtype)
    if not answer:
        _last_real = dtype
    return answer


_REAL_NUMBERS = (float, int)


def conj(xp, a):
    """Complex conjugate, free for real values (the VJP of a holomorphic op is ``g * conj(d)``)."""
    if a.__class__ in _REAL_NUMBERS:  # a Python scalar operand (x * 2.0): the common case
        return a
    if getattr(a, "dtype", None) is _last_real:  # (is_complex's first answer, without its call)
        return a
    if is_complex(a):
        return a.conjugate() if isinstance(a, complex) else xp.conj(a)
    return a


def H(xp, a):
    """The conjugate transpose of ``a``'s last two axes. The transpose is the attribute ``mT``
    (standard since 2022.12), one attribute read where ``xp.matrix_transpose`` through
    array-api-compat is a call ten times longer; that function where an array has no such
    attribute (Dask)."""
    swapped = getattr(a, "mT", None)
    return conj(xp, xp.matrix_transpose(a) if swapped is None else swapped)


def recorded(a) -> bool:
    """Whether ``a`` is a Variable: the rule runs under ``create_graph``, and what it computes
    is itself recorded, to be differentiated (told by ``_edge``: torch tensors have a
    ``grad_fn`` too)."""
    return hasattr(a, "_edge")


def set_index(xp, array, key, value):
    """``array`` with ``array[key] = value``, for an array the rule just made: in place where the
    backend allows it, as a new array where arrays are immutable (JAX)."""
    if recorded(array):  # copy-on-write, recorded
        array[key] = value
        return array
    backend = backends.of_array(array)
    if backend is None:
        array[key] = value
        return array
    return backend.set_index(array, key, value)


def get_index(array, key):
    """``array[key]`` for a rule: through the backend, whose library may need help with keys
    the standard allows (torch's negative-step slices); a Variable indexes itself."""
    if recorded(array):
        return array[key]
    backend = backends.of_array(array)
    return array[key] if backend is None else backend.get_index(array, key)


def slice_along(a, axis: int, start, stop):
    """``a[start:stop]`` along ``axis``, every other axis whole."""
    index = [slice(None)] * a.ndim
    index[axis] = slice(start, stop)
    return a[tuple(index)]


def device_of(a):
    """The device of ``a``, to make new arrays beside it: its backend's answer
    (``BackendSpec.device_of``, else ``a.device``); ``None`` (the default device) for
    libraries whose arrays have no ``device`` attribute (dask)."""
    backend = backends.of_array(a)
    return getattr(a, "device", None) if backend is None else backend.device(a)


def host_reads(x) -> bool:
    """Whether a rule may read values of ``x`` on the host (``bool(...)``) to pick a formula:
    False where that would compute a lazy graph (dask) or copy from a device (capability
    ``host_reads``)."""
    backend = getattr(x, "_backend", None) or backends.of_array(x)  # a Variable knows its own
    return backend is None or backend.capabilities()["host_reads"]


def capable(x, capability: str) -> bool:
    """Whether the backend of ``x`` declares ``capability`` (cached per array type)."""
    key = (x.__class__, capability)
    answer = _capabilities.get(key)
    if answer is None:
        backend = backends.of_array(x)
        answer = _capabilities[key] = (
            backend is not None and bool(backend.capabilities().get(capability)))
    return answer


_capabilities: dict = {}  # {(array type, capability): the backend's answer}


def kernel(x, name: str):
    """The backend's own ``name`` (a kernel capability, ``solve_triangular``) for raw arrays of
    ``x``'s type, or None: the backend has none, or ``x`` is a Variable (``create_graph``: the
    rule then differentiates through the standard's functions). Cached per array type."""
    key = (x.__class__, name)
    try:
        return _kernels[key]
    except KeyError:
        pass
    backend = None if recorded(x) else backends.of_array(x)
    answer = _kernels[key] = None if backend is None else backend.kernel(name)
    return answer


_kernels: dict = {}  # {(array type, kernel name): the backend's function or None}


def normalize_axis(axis, ndim: int) -> tuple[int, ...]:
    """``axis`` as a sorted tuple of non-negative ints (None means every axis); remembered, as
    every reduction's VJP asks it on every backward."""
    try:
        return _normalized[axis, ndim]
    except (KeyError, TypeError):  # (TypeError: a list, which is no key)
        pass
    if axis is None:
        normalized = tuple(range(ndim))
    elif isinstance(axis, int):
        normalized = (axis % ndim if ndim else axis,)
    else:
        normalized = tuple(sorted(a % ndim if ndim else a for a in axis))
    if len(_normalized) < 1024 and (axis is None or axis.__class__ is int or (
            axis.__class__ is tuple and all(a.__class__ is int for a in axis))):
        _normalized[axis, ndim] = normalized  # (not numpy's ints: the answer would hold them)
    return normalized


_normalized: dict = {}  # {(axis, ndim): normalize_axis's answer}


def broadcasts(small, large) -> bool:
    """Whether a shape ``small`` broadcasts to the shape ``large``."""
    if len(small) > len(large):
        return False
    return all(s in (1, n) for s, n in zip(small[::-1], large[::-1]))


def expand_reduced(xp, g, axis, ndim: int, keepdims: bool):
    """Reinsert the axes a reduction removed, so that ``g`` broadcasts to the input's shape."""
    if keepdims or ndim == 0:
        return g
    shape = list(g.shape)
    for a in normalize_axis(axis, ndim):
        shape.insert(a, 1)
    return xp.reshape(g, tuple(shape))


_matmul_sums_types: dict = {}  # {array type: whether its backend has matmul_sums}
_sum_plans: dict = {}  # {(shape, axes, keepdims): _sum_plan's answer}
_ones: dict = {}  # {(array type, shape, dtype): read-only ones, a vector, a row or a column}
MATMUL_SUM_MAX = 1024
"""The longest sum :func:`sum_axes` makes a product: BLAS adds in fewer partial sums than
NumPy's pairwise summation, which over 10**6 float32 values errs 10**5 times less (2.7e-9
against 2.3e-4, relative)."""


def sum_axes(xp, g, axes, keepdims=False):
    """``xp.sum(g, axis=axes, keepdims=keepdims)`` for a rule or the engine (``axes``: a tuple).
    On a backend with the capability ``matmul_sums``, a sum over one block of adjacent axes
    (leading, trailing or in the middle) of a C-contiguous float32 or float64 array, adding at
    most ``MATMUL_SUM_MAX`` values into each result, is a product with a vector of ones (BLAS;
    a batch of them for a middle block): NumPy's reductions over a short axis, a middle axis or
    the batch axis of a bias' gradient take 1.5 to 18 times longer."""
    kind = g.__class__
    capable = _matmul_sums_types.get(kind)
    if capable is None:  # (not a subclass, such as NumPy's masked arrays: they sum their way)
        backend = backends.of_array(g)
        capable = _matmul_sums_types[kind] = (
            backend is not None and bool(backend.capabilities().get("matmul_sums"))
            and xp.ones(1).__class__ is kind)
    if capable and g.dtype.char in "fd" and g.flags.c_contiguous:  # float32, float64
        key = (g.shape, axes, keepdims)
        plan = _sum_plans.get(key)
        if plan is None:
            if len(_sum_plans) >= 4096:
                _sum_plans.clear()
            plan = _sum_plans[key] = _sum_plan(*key)
        if plan:
            ones_first, matrix, ones_shape, kept = plan
            ones = _ones.get((kind, ones_shape, g.dtype))
            if ones is None:
                ones = _ones_of(xp, kind, ones_shape, g.dtype)
            g = g.reshape(matrix)
            total = ones @ g if ones_first else g @ ones
            return total if kept is None else total.reshape(kept)
    return xp.sum(g, axis=axes, keepdims=keepdims)


def _sum_plan(shape, axes, keepdims):
    """How :func:`sum_axes` sums ``axes`` of ``shape`` as a product with ones, or False where
    it cannot (axes not one block, an empty array, more than ``MATMUL_SUM_MAX`` values into
    each result): ``(ones first?, the shape g is viewed in, shape of the ones, shape to give
    the product or None)``. Leading axes: ones times a matrix; trailing: a matrix times ones;
    a middle block: ones times a stack of matrices. The ones are a row or a column where that
    gives the product its shape already: a reshaped product would be a view, which backward
    copies before keeping it or adding into it."""
    count = len(axes)
    start = axes[0] if count else 0
    if not count or axes != tuple(range(start, start + count)):
        return False
    end = start + count
    before, reduced, after = (math.prod(shape[:start]), math.prod(shape[start:end]),
                              math.prod(shape[end:]))
    if not reduced or not before * after or reduced > MATMUL_SUM_MAX:
        return False
    kept = shape[:start] + (1,) * count + shape[end:] if keepdims else shape[:start] + shape[end:]
    if start == 0:  # (a sum of every axis too)
        ones_first, matrix, ones_shape = True, (reduced, after), (
            (1, reduced) if kept == (1, after) else (reduced,))
        made = (1, after) if ones_shape == (1, reduced) else (after,)
    elif end == len(shape):
        ones_first, matrix, ones_shape = False, (before, reduced), (
            (reduced, 1) if kept == (before, 1) else (reduced,))
        made = (before, 1) if ones_shape == (reduced, 1) else (before,)
    else:
        ones_first, matrix, ones_shape, made = True, (before, reduced, after), (reduced,), (
            before, after)
    return ones_first, matrix, ones_shape, None if kept == made else kept


def _ones_of(xp, kind, shape, dtype):
    """Ones of ``shape`` and ``dtype``, cached read-only."""
    ones = xp.ones(shape, dtype=dtype)
    ones.flags.writeable = False
    if len(_ones) >= 256:
        _ones.clear()
    _ones[(kind, shape, dtype)] = ones
    return ones


def forget_capabilities():
    """Drop the cached answers of :func:`capable` and :func:`sum_axes`: the registered backends
    changed."""
    _capabilities.clear()
    _kernels.clear()
    _matmul_sums_types.clear()
    _sum_plans.clear()
    _ones.clear()


def sum_to(xp, g, shape):
    """``g`` summed over the axes along which an argument of ``shape`` was broadcast. The engine
    does this too; a rule that does it first (``x - m``, ``x / s`` with a scalar-like ``m`` or
    ``s``) then works on the small result instead of a full-size temporary."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and g.shape[lead + i] != 1)
    summed = sum_axes(xp, g, axes, keepdims=True)
    return xp.reshape(summed, shape) if lead else summed  # (keepdims gave shape already)
