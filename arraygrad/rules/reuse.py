"""Memory reuse in backward. NumPy elides temporaries in ``a * b + c``; a backward pass makes
as many, so rules reuse them explicitly, where reference counts prove nothing else can see them.
The engine marks the gradient a VJP may overwrite (``_scratch``); only arrays of backends with
the capability ``reuse_unshared`` ever qualify.

Gradients are arrays (``None`` the one symbolic zero): no lazy gradient kind. The gradient
``sum`` and ``mean`` send back reaches the VJPs as the engine fits it, a read-only broadcast of
one value; :func:`times` and :func:`divided` keep it one value where it meets a number and
multiply an array by it in place, so that ``sum(0.5 * r ** 2 / n)`` costs one full-size
product."""

from __future__ import annotations

import sys

from ._core import _REAL_NUMBERS, backends, forget_matmul_sums_types, host_reads

_EXACT_REFCOUNTS = sys.implementation.name == "cpython" and sys.version_info < (3, 14)
"""Reference counts tell who can see an array only where every reference is counted: CPython
before 3.14, whose interpreter may borrow references. Elsewhere nothing is reused."""


def private(array, references: int) -> bool:
    """Whether ``array`` owns its memory (NumPy's ``base is None``), is writeable and has at
    most ``references`` references, so that nothing else can see it being overwritten. Only
    arrays of backends with the capability ``reuse_unshared`` qualify."""
    answer = _reusable_types.get(array.__class__)  # (reusable(array), without its call)
    if answer is None:
        answer = reusable(array)
    return (_EXACT_REFCOUNTS and answer and array.base is None
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
    backend = backends.of_array(array)
    return (backend is not None and hasattr(array, "base")
            and backend.capabilities()["reuse_unshared"])


def forget_reusable_types():
    """Drop the cached answers of ``private`` and ``sum_axes``: the registered backends
    changed."""
    _reusable_types.clear()
    forget_matmul_sums_types()


IN_PLACE_FORWARD = frozenset(
    "conj exp expm1 negative positive reciprocal sqrt tan tanh".split())
"""One-array functions whose result keeps a floating or complex argument's dtype:
``xp.exp(a - b)`` computes into the temporary ``a - b`` when nothing else can see it and the
rule in force does not read the argument (NumPy elides temporaries of ``a - b + c`` likewise)."""


def temporary_argument(variable, data) -> bool:
    """Whether the namespace may compute a function's result into the ``data`` of its argument
    ``variable``: a temporary (held only by the calling function's name) whose large array of an
    inexact dtype (so the result keeps it) nothing else refers to."""
    # variable's references: the caller's name, this argument, getrefcount's. data's: the
    # Variable, the caller's name, this argument, private's, getrefcount's.
    return (large(data) and sys.getrefcount(variable) <= 3 and private(data, 5)
            and data.dtype.kind in "fc")


class _Scratch:
    """The gradient that the running VJP may overwrite, set by the engine around the call. One
    for all threads: it names an array only its own backward can reach, so another thread's
    VJP never holds it, and a race only loses a reuse."""

    __slots__ = ("grad", "saved")

    def __init__(self):
        self.grad = None
        self.saved = ()  # the saved arrays that the running VJP may overwrite


_scratch = _Scratch()


REUSE_MIN_BYTES = 256 * 1024
"""Arrays smaller than this many bytes are not worth reusing: the allocator hands back memory
still in cache, and the checks cost more than they save. In bytes, not elements: ``python -m
bench.reuse_threshold`` found reusing 1 to 25% slower at 16 to 128 KiB in float32 and float64
alike, and as fast or faster from 256 KiB (up to 3 times, where a new array faults its pages
in)."""

ONES_MIN_SIZE = 1 << 15
"""Below this size, checking that a gradient is a broadcast 1 costs more than multiplying."""


def large(a) -> bool:
    """Whether ``a`` takes at least ``REUSE_MIN_BYTES`` (False for lazy sizes: a NaN)."""
    nbytes = getattr(a, "nbytes", None)
    return nbytes.__class__ is int and nbytes >= REUSE_MIN_BYTES


def _broadcast_one(g) -> bool:
    """Whether ``g`` is a large broadcast of the number 1 (what ``sum`` sends back from a
    scalar loss): multiplying by it changes nothing, so it can be skipped."""
    return (_EXACT_REFCOUNTS and reusable(g) and g.size >= ONES_MIN_SIZE and g.ndim > 0
            and not any(g.strides) and host_reads(g) and bool(g[(0,) * g.ndim] == 1))


def _one_value(g) -> bool:
    """Whether ``g`` is a broadcast of one value (no stride: what the engine makes of the
    gradient ``sum`` and ``mean`` send back), of a backend with ``reuse_unshared``."""
    return (g.__class__ not in _REAL_NUMBERS and reusable(g) and g.ndim > 0 and g.size > 0
            and not any(g.strides))


def _broadcast_value(g, value):
    """An array of ``g``'s shape that is ``value`` (a scalar of ``g``'s backend) broadcast: a
    read-only view of one element, as ``g`` is."""
    raw = backends.of_array(g).raw
    return raw.broadcast_to(raw.asarray(value), g.shape)


def times(g, d, scale=None):
    """``g * d`` (``g * d * scale`` with a Python number ``scale``: ``x * x``'s ``2``) for a
    VJP, without a new array where none is needed: computed in place in ``g`` (when the engine
    allows it), ``d`` itself when ``g`` is a broadcast 1, or computed in place in ``d`` when
    ``d`` is a fresh temporary passed as an expression (``times(g, xp.cos(x))``) or a saved
    array only the running VJP holds, always keeping the shape and dtype of ``g * d``. A VJP
    calls it at most once, as its last use of ``g`` and of ``d``; joint VJPs never get a ``g``
    they may overwrite."""
    if g is _scratch.grad:  # the engine lets this VJP overwrite g
        if d.__class__ in _REAL_NUMBERS or (
                d.__class__ is g.__class__ and d.dtype == g.dtype and d.shape == g.shape):
            g *= d
            if scale is not None:  # a second pass over g, and still no new array
                g *= scale
            return g
    elif d.__class__ in _REAL_NUMBERS and _one_value(g):  # one value times a number: one
        # value still, broadcast as g was (sum(0.5 * r ** 2)), instead of a full-size product
        value = g[(0,) * g.ndim] * d
        return _broadcast_value(g, value if scale is None else value * scale)
    if scale is not None:
        d = multiplied(d, scale)
    if g is not _scratch.grad and d.__class__ is g.__class__ and large(g) \
            and d.dtype == g.dtype and d.shape == g.shape:
        if _broadcast_one(g):
            return d
        # d's references: this argument (or name), private's, getrefcount's; or d is a saved
        # array that only the running VJP still holds.
        if private(d, 3) or _spent(d):
            d *= g
            return d
    return g * d


def _spent(d) -> bool:
    for value in _scratch.saved:
        if value is d:
            return True
    return False


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


def divided(g, d):
    """``g / d`` for a VJP (``x / n``'s ``g / n``): one value broadcast where ``g`` is one value
    broadcast and ``d`` a Python number, as :func:`times` keeps it."""
    if d.__class__ in _REAL_NUMBERS and d and _one_value(g):
        return _broadcast_value(g, g[(0,) * g.ndim] / d)
    return g / d


def reciprocal(xp, d):
    """``1 / d`` for a derivative, computed in place when ``d`` is a large fresh temporary passed
    as an expression (``reciprocal(xp, 1 + x)``) or a saved array only the running VJP holds
    (``log``'s ``x``): one allocation fewer. By ``divide`` with ``out=`` (the capability
    ``reuse_unshared`` promises it): NumPy's ``divide`` is vectorised, its ``reciprocal``
    (``d **= -1``) takes twice as long."""
    # d's references: this argument, private's, getrefcount's.
    if large(d) and (private(d, 3) or _spent(d)) and d.dtype.kind in "fc":
        return xp.divide(1, d, out=d)
    return 1 / d


def added(d, c):
    """``d + c`` (a Python number) for a derivative (``log1p``'s ``1 + x``), computed in place
    in ``d`` when it is a saved array only the running VJP holds."""
    if _spent_operand(d, c):
        d += c
        return d
    return d + c


def multiplied(d, c):
    """``d * c`` (a Python number) for a derivative (``log2``'s ``x * log(2)``), computed in
    place in ``d`` when it is a saved array only the running VJP holds."""
    if _spent_operand(d, c):
        d *= c
        return d
    return d * c


def applied(function, d):
    """``function(d)`` of a one-argument ufunc for a derivative (``sin``'s ``cos(x)``), computed
    into ``d`` (``out=``, which the capability ``reuse_unshared`` promises) when it is a saved
    array only the running VJP holds."""
    if _scratch.saved and large(d) and _spent(d) and d.dtype.kind in "fc":
        return function(d, out=d)
    return function(d)


def _spent_operand(d, c) -> bool:
    """Whether ``d`` op ``c`` may be computed in ``d``: a large inexact saved array that only
    the running VJP holds, and a real Python number (which keeps ``d``'s dtype)."""
    # (_spent first: only NumPy-like arrays, with dtype.kind, are ever in _scratch.saved.)
    return c.__class__ in _REAL_NUMBERS and large(d) and _spent(d) and d.dtype.kind in "fc"
