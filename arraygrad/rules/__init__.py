"""Differentiation rules, one module per family of the Array API standard.

A rule is written once against ``xp``: the engine calls it with the backend's raw namespace for an
ordinary backward, and with the differentiable namespace when ``create_graph=True``, so the same
rule yields higher derivatives. Each array argument gets a vector-Jacobian product
``vjp(xp, g, <saved>..., *, <params>)``: the parameters after ``g`` name what the rule needs
(an array argument, ``ans`` for the output, ``<arg>_shape`` for an argument's shape), and only
those are kept alive for backward. Keyword-only parameters receive the op's options (``axis``...).

A rule may return a gradient whose shape broadcasts to or from its argument's shape, and of a
related dtype: the engine fits shape and dtype once, centrally.
"""

from __future__ import annotations

import inspect
import operator
import sys
from typing import Callable

RULES: dict[str, "Rule"] = {}
"""Differentiable functions of the standard, by name (``linalg.`` and ``fft.`` prefixed)."""

NONDIFFERENTIABLE: set[str] = set()
"""Functions whose outputs never require grad (comparisons, ``floor``, ``argmax``, ...)."""

_DISPLAY = {"multiply": "Mul", "subtract": "Sub", "divide": "Div", "negative": "Neg",
            "permute_dims": "Permute", "getitem": "Index", "setitem": "CopySlices"}


LINEAR = "linear"
"""``jvps=LINEAR``: the function is linear in its differentiable arguments together, so its
JVP is the function itself applied to the tangents (JAX's ``deflinear``)."""


TRANSPOSE = "transpose"
"""``jvps=TRANSPOSE``: the forward mode computes ``J t`` by transposing the VJP (the gradient of
``<VJP(g), t>`` with respect to ``g``), for functions whose tangent formula would repeat the
VJP's work (factorizations, ``solve``, ``pinv``)."""


class Rule:
    """The differentiation rule of one function: its array arguments, their VJPs and JVPs."""

    __slots__ = ("name", "display", "arrays", "sequence", "params", "vjps", "joint", "jvps",
                 "saves", "sources", "index", "keywords", "jvp_index", "jvp_keywords", "outputs",
                 "pickers", "users")

    def __init__(self, name, arrays, vjps, *, joint=None, jvps=(), params=(), sequence=False,
                 outputs=1):
        self.name = name
        self.display = _DISPLAY.get(name) or "".join(
            part.capitalize() for part in name.replace(".", "_").split("_"))
        self.display += "Backward"
        self.arrays = tuple(arrays)
        self.sequence = sequence  # "list" (concat's arrays) or "varargs" (broadcast_arrays)
        self.params = tuple(params)
        self.vjps = tuple(vjps) if vjps is not None else None  # None: no rule (see no_rule)
        self.joint = joint
        # One tangent rule per argument (xp, t, <saved>..., *, <options>), LINEAR or TRANSPOSE.
        self.jvps = jvps if jvps in (LINEAR, TRANSPOSE) else tuple(jvps)
        self.outputs = outputs
        backward = (joint,) if joint is not None else (self.vjps or ())
        forward = self.jvps if self.jvps not in (LINEAR, TRANSPOSE) else ()
        saves: list[str] = []
        self.index, self.keywords = self._bind(backward, saves)
        self.jvp_index, self.jvp_keywords = self._bind(forward, saves)
        self.saves = tuple(saves)
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
                keywords.append(())
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
        if self.joint is not None or self.sequence or self.jvps in (LINEAR, TRANSPOSE):
            return None
        return frozenset(i for indexes in (self.index, self.jvp_index)
                         for i, index in enumerate(indexes) if index is None or k in index)

    def __repr__(self):
        return f"<Rule {self.name}>"


def _picker(index):
    """``saved -> args`` for a VJP taking the saved values at ``index`` (None: all of them)."""
    if index is None:
        return lambda saved: saved
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
    keywords = tuple(p.name for p in parameters if p.kind == p.KEYWORD_ONLY)
    if any(p.kind == p.VAR_KEYWORD for p in parameters):
        keywords = None  # takes every option
    return needed, keywords


def defvjp(name: str, *vjps, arrays: str = "x", params: str = "", jvps=(), outputs: int = 1):
    """Register per-argument VJPs of ``name`` (``None`` where an argument gets no gradient)."""
    RULES[name] = Rule(name, arrays.split(), vjps, jvps=jvps, params=params.split(),
                       outputs=outputs)


def defjoint(name: str, vjp, *, arrays: str = "x", params: str = "", sequence: bool = False,
             jvps=(), outputs: int = 1):
    """Register one VJP returning the gradients of all array arguments of ``name`` at once."""
    RULES[name] = Rule(name, arrays.split(), (), joint=vjp, jvps=jvps, params=params.split(),
                       sequence=sequence, outputs=outputs)


def from_derivative(derivative):
    """Return ``(vjp, jvp)`` of a holomorphic elementwise op from its derivative
    ``d(xp, <saved>...)``: the VJP is ``g * conj(d)`` (PyTorch's convention), the JVP ``t * d``."""
    needed = list(inspect.signature(derivative).parameters.values())[1:]

    def vjp(xp, g, *saved):
        return times(g, conj(xp, derivative(xp, *saved)))

    def jvp(xp, t, *saved):
        return t * derivative(xp, *saved)

    for function in (vjp, jvp):
        function.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in ("xp", "g")]
            + needed)
    return vjp, jvp


# ----------------------------------------------------------------------------------------------
# Memory reuse in backward. NumPy elides temporaries in ``a * b + c``; a backward pass makes as
# many, so rules reuse them explicitly, where reference counts prove nothing else can see them.
# ----------------------------------------------------------------------------------------------

_EXACT_REFCOUNTS = sys.implementation.name == "cpython" and sys.version_info < (3, 14)
"""Reference counts tell who can see an array only where every reference is counted: CPython
before 3.14, whose interpreter may borrow references. Elsewhere nothing is reused."""


def private(array, references: int) -> bool:
    """Whether ``array`` owns its memory (NumPy's ``base is None``), is writeable and has at
    most ``references`` references, so that nothing else can see it being overwritten. Only
    arrays of backends with the capability ``reuse_unshared`` qualify."""
    return (_EXACT_REFCOUNTS and reusable(array) and array.base is None
            and sys.getrefcount(array) <= references
            and getattr(array.flags, "writeable", True))  # no such flag: always writeable


def reusable(array) -> bool:
    """Whether ``array``'s backend has the capability ``reuse_unshared`` (cached per type)."""
    answer = _reusable_types.get(array.__class__)
    if answer is None:
        answer = _reusable_types[array.__class__] = _reusable(array)
    return answer


_reusable_types: dict = {}  # {array type: whether its backend has reuse_unshared}


def _reusable(array) -> bool:
    from .._plugins import registry

    backend = registry.of(array)
    return (backend is not None and hasattr(array, "base")
            and backend.capabilities()["reuse_unshared"])


def forget_reusable_types():
    """Drop the cached answers of ``private``: the registered backends changed."""
    _reusable_types.clear()


class _Scratch:
    """The gradient that the running VJP may overwrite, set by the engine around the call. One
    for all threads: it names an array only its own backward can reach, so another thread's
    VJP never holds it, and a race only loses a reuse."""

    __slots__ = ("grad",)

    def __init__(self):
        self.grad = None


_scratch = _Scratch()


REUSE_MIN_SIZE = 4096
"""Arrays smaller than this are not worth reusing: small allocations are cheap."""

ONES_MIN_SIZE = 1 << 15
"""Below this size, checking that a gradient is a broadcast 1 costs more than multiplying."""


def large(a) -> bool:
    """Whether ``a`` has at least ``REUSE_MIN_SIZE`` elements (False for lazy sizes)."""
    size = getattr(a, "size", None)
    return size.__class__ is int and size >= REUSE_MIN_SIZE


def _broadcast_one(g) -> bool:
    """Whether ``g`` is a large broadcast of the number 1 (what ``sum`` sends back from a
    scalar loss): multiplying by it changes nothing, so it can be skipped."""
    return (_EXACT_REFCOUNTS and reusable(g) and g.size >= ONES_MIN_SIZE and g.ndim > 0
            and not any(g.strides) and host_reads(g) and bool(g[(0,) * g.ndim] == 1))


_REAL_SCALARS = (int, float)


def times(g, d):
    """``g * d`` for a VJP, without a new array where none is needed: computed in place in
    ``g`` (when the engine allows it), ``d`` itself when ``g`` is a broadcast 1, or computed in
    place in ``d`` when ``d`` is a fresh temporary passed as an expression (``times(g,
    xp.cos(x))``), always keeping the shape and dtype of ``g * d``. A VJP calls it at most once,
    as its last use of ``g`` and of ``d``; joint VJPs never get a ``g`` they may overwrite."""
    if g is _scratch.grad:  # the engine lets this VJP overwrite g
        if d.__class__ in _REAL_SCALARS or (
                d.__class__ is g.__class__ and d.dtype == g.dtype and d.shape == g.shape):
            g *= d
            return g
    elif (d.__class__ is g.__class__ and large(g) and d.dtype == g.dtype
          and d.shape == g.shape):
        if _broadcast_one(g):
            return d
        if private(d, 3):  # d's references: this argument, private's, getrefcount's
            d *= g
            return d
    return g * d


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
    return xp.reshape(xp.sum(g, axis=axes, keepdims=True), shape)


def scaled(d, s):
    """``d * s`` for a fresh full-size ``d`` held in one local name by the calling rule and an
    ``s`` that broadcasts to it (a reduced gradient): computed in place in ``d`` where
    reference counts prove nothing else sees it."""
    # d's references: the caller's name, this argument, private's, getrefcount's.
    if (d.__class__ is s.__class__ and d.dtype == s.dtype and large(d)
            and d.ndim >= s.ndim and private(d, 4)):
        d *= s
        return d
    return d * s


def reciprocal(d):
    """``1 / d`` for a derivative, computed in place when ``d`` is a large fresh temporary passed
    as an expression (``reciprocal(1 + x)``): one allocation and one pass fewer."""
    # d's references: this argument, private's, getrefcount's. private() admits NumPy-like
    # arrays only, whose power with exponent -1 is the reciprocal 1 / d.
    if large(d) and private(d, 3) and d.dtype.kind in "fc":
        d **= -1
        return d
    return 1 / d


def no_rule(name: str) -> Rule:
    """A placeholder rule for a function nobody wrote a rule for: backward through it raises."""
    return Rule(name, (), None)


def nondifferentiable(*names: str):
    """Declare functions whose results never carry gradients."""
    NONDIFFERENTIABLE.update(names)


# ----------------------------------------------------------------------------------------------
# Helpers shared by rules
# ----------------------------------------------------------------------------------------------

_COMPLEX_DTYPES: dict = {}  # {dtype class: {dtype: is complex}}: libraries' dtypes never meet


def is_complex(a) -> bool:
    dtype = getattr(a, "dtype", None)
    if dtype is None:
        return isinstance(a, complex)
    return is_complex_dtype(dtype)


def is_complex_dtype(dtype) -> bool:
    cache = _COMPLEX_DTYPES.setdefault(dtype.__class__, {})
    try:
        return cache[dtype]
    except KeyError:
        answer = cache[dtype] = "complex" in str(dtype)
        return answer


def conj(xp, a):
    """Complex conjugate, free for real values (the VJP of a holomorphic op is ``g * conj(d)``)."""
    if is_complex(a):
        return a.conjugate() if isinstance(a, complex) else xp.conj(a)
    return a


def set_index(xp, array, key, value):
    """``array`` with ``array[key] = value``, for an array the rule just made: in place where the
    backend allows it, as a new array where arrays are immutable (JAX)."""
    if hasattr(array, "_edge"):  # a Variable, under create_graph: recorded copy-on-write
        # (checked by _edge: torch tensors have a grad_fn too)
        array[key] = value
        return array
    from .._plugins import registry

    return registry.of(array).set_index(array, key, value)


def get_index(array, key):
    """``array[key]`` for a rule: through the backend, whose library may need help with keys
    the standard allows (torch's negative-step slices); a Variable indexes itself."""
    if hasattr(array, "_edge"):  # a Variable (torch tensors have a grad_fn too)
        return array[key]
    from .._plugins import registry

    return registry.of(array).get_index(array, key)


def device_of(a):
    """The device of ``a``, to make new arrays beside it; ``None`` (the default device) for
    libraries whose arrays have no ``device`` attribute (dask)."""
    return getattr(a, "device", None)


def host_reads(x) -> bool:
    """Whether a rule may read values of ``x`` on the host (``bool(...)``) to pick a formula:
    False where that would compute a lazy graph (dask) or copy from a device (capability
    ``host_reads``)."""
    from .._plugins import registry
    from .._variable import Variable

    backend = x._backend if isinstance(x, Variable) else registry.of(x)
    return backend is None or backend.capabilities()["host_reads"]


def normalize_axis(axis, ndim: int) -> tuple[int, ...]:
    """``axis`` as a sorted tuple of non-negative ints (None means every axis)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(sorted(a % ndim if ndim else a for a in axis))


def expand_reduced(xp, g, axis, ndim: int, keepdims: bool):
    """Reinsert the axes a reduction removed, so that ``g`` broadcasts to the input's shape."""
    if keepdims or ndim == 0:
        return g
    shape = list(g.shape)
    for a in normalize_axis(axis, ndim):
        shape.insert(a, 1)
    return xp.reshape(g, tuple(shape))


from . import (creation, elementwise, fft, indexing, linalg, linalg_eig,  # noqa: E402,F401
               linear_algebra, manipulation, searching, statistical, utility)
