"""The one place where memory is reused: a gradient buffer that nothing else refers to is
taken over (added into in place, or kept as a leaf's ``.grad`` without a copy), as PyTorch's
``InputBuffer`` and ``AccumulateGrad`` steal a gradient no one else holds.

Whether anything else refers to an array is read from its reference count, which tells the
truth only where every reference is counted: CPython before 3.14, with the GIL. Elsewhere
:func:`take` declines and every accumulation allocates, which is always correct."""

from __future__ import annotations

import sys
import sysconfig

from .rules import capable

EXACT_REFCOUNTS = (sys.implementation.name == "cpython" and sys.version_info < (3, 14)
                   and not sysconfig.get_config_var("Py_GIL_DISABLED"))
"""Whether reference counts are exact here. CPython 3.14 may borrow references on the stack,
and a free-threaded build may hand an array to another thread between two reads."""

MIN_BYTES = 256 * 1024
"""Smaller arrays are not worth taking over: the allocator hands back memory still in cache,
and the check costs more than it saves (``python -m bench.reuse_threshold``)."""


def take(holder: list, i: int, min_bytes=None):
    """Remove ``holder[i]`` and return it when nothing else refers to it, so that the caller
    may write into it; else leave it in place and return None. Arrays smaller than
    ``min_bytes`` (default :data:`MIN_BYTES`) are declined.

    The caller must hold the array only through ``holder``: any other reference (a local name,
    a Variable, a view's base, a saved value) makes this decline, which is always safe."""
    array = holder[i]
    if not (EXACT_REFCOUNTS and _worth_taking(array, MIN_BYTES if min_bytes is None else min_bytes)):
        return None
    holder[i] = None
    # References now: the name ``array`` and getrefcount's argument.
    if sys.getrefcount(array) == 2:
        return array
    holder[i] = array
    return None


def _worth_taking(array, min_bytes) -> bool:
    """A large, writeable array of a backend whose plugin declares ``reuse_unshared`` (NumPy's
    ``base``, in-place operators that keep the array) that owns its memory, or is a view of
    all of an array that only it refers to (a gradient reshaped at the end of its VJP)."""
    nbytes = getattr(array, "nbytes", None)
    if nbytes.__class__ is not int or nbytes < min_bytes:
        return False
    if not (capable(array, "reuse_unshared") and getattr(array.flags, "writeable", True)):
        return False
    base = getattr(array, "base", 0)
    # References to a base only the view holds: the view's, the name ``base`` and the argument.
    return base is None or (base.__class__ is array.__class__ and base.nbytes == nbytes
                            and sys.getrefcount(base) == 3)
