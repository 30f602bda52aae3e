"""Views: a Variable made from another by basic indexing, ``reshape``, a permutation of axes
(``.T``, ``permute_dims``, ``matrix_transpose``), ``expand_dims``, ``squeeze``, or ``detach``
shares its values with that base, as NumPy's views and PyTorch's do.

Values stay copy-on-write: a :class:`Link` records how to read the view from its base and how to
write it back, so that an in-place change of either reaches the other, recorded as operations
(``base = write(base, view)``, ``view = read(base)``). Changes travel up a chain of views and
down to every live view with explicit stacks, never recursion: a chain of any length works.
"""

from __future__ import annotations

import weakref

from . import _grad_mode


class Link:
    """How a view relates to its base: ``read(base)`` gives the view's new value after the
    base changed, ``write(base, view)`` the base's after the view changed. ``values_only``: the
    link carries values, not history (``detach``). ``key``: the index of ``base[key]``, whose
    reading and writing are the namespace's indexing (no functions given)."""

    __slots__ = ("_base", "_read", "_write", "key", "values_only")

    def __init__(self, base, read, write, key=None, values_only=False):
        # A view holds its base weakly (nothing else sees a dead base), but a view of a view
        # holds that one: z[1:][0] must reach z through the temporary z[1:].
        self._base = base if getattr(base, "_view", None) is not None else weakref.ref(base)
        self._read = read
        self._write = write
        self.key = key
        self.values_only = values_only

    def base(self):
        """The base Variable, or None once it is gone."""
        base = self._base
        return base() if base.__class__ is weakref.ref else base

    def read(self, base):
        if self._read is None:
            return base._backend.ns._getitem(base, self.key)
        return self._read(base)

    def write(self, base, view):
        if self._write is None:
            return base._backend.ns._setitem(base, self.key, view)
        return self._write(base, view)


def link(base, view, read=None, write=None, key=None, values_only=False):
    """Make ``view`` a view of ``base``: ``base[key]`` where ``key`` is given, else ``read``
    and ``write`` say how (see :class:`Link`)."""
    view._view = Link(base, read, write, key, values_only)
    views = getattr(base, "_views", None)
    if views is None:
        base._views = [weakref.ref(view)]
        return
    n = len(views)
    if n >= 8 and not n & (n - 1):  # drop dead ones at powers of two: amortized O(1)
        views[:] = [ref for ref in views if ref() is not None]
    views.append(weakref.ref(view))


def bases(variable):
    """``variable``'s base, that one's base, and so on, nearest first."""
    link_ = getattr(variable, "_view", None)
    while link_ is not None:
        base = link_.base()
        if base is None:
            return
        yield base
        link_ = getattr(base, "_view", None)


def written(variable, op):
    """After ``variable`` took a new value in place (``op``): give it to every live view below
    it, and carry it up through its bases, each of which refreshes its other views."""
    _refresh(variable, skip=None)
    child = variable
    link_ = getattr(child, "_view", None)
    while link_ is not None:
        base = link_.base()
        if base is None:
            return
        if link_.values_only:
            base._values = link_.write(base, child)
        else:
            base._take(link_.write(base, child), op)
        _refresh(base, skip=child)
        child, link_ = base, getattr(base, "_view", None)


def _refresh(owner, skip):
    """Give every live view of ``owner`` (but ``skip``, which made the change) and their views
    the new values: ``view = read(base)``, recorded while grad mode is on."""
    stack = [(owner, skip)]
    while stack:
        base, skip = stack.pop()
        for ref in list(getattr(base, "_views", None) or ()):
            view = ref()
            if view is None or view is skip:
                continue
            link_ = view._view
            fresh = link_.read(base)
            if link_.values_only:
                view._values = fresh
            else:
                _take_read(view, fresh)
            if getattr(view, "_views", None):
                stack.append((view, None))


def _take_read(view, fresh):
    """``view`` takes the value of ``fresh`` (read from its base), and its history too unless
    it is a leaf or grad mode is off (then only its value changes, as in PyTorch)."""
    view._values = fresh._values
    leaf = view.grad_fn is None and view._requires_grad
    if _grad_mode.state.enabled and not leaf:
        old_node, old_nr = view.grad_fn, view._output_nr
        view.grad_fn, view._output_nr = fresh.grad_fn, fresh._output_nr
        view._requires_grad = fresh._requires_grad
        if view._retains_grad:
            view._retain_moves(old_node, old_nr)


def is_view(raw_result, raw_input) -> bool:
    """Whether a backend's function returned a view of its input: both see the memory of one
    array, where the backend tells (NumPy's and CuPy's ``base``, torch's ``_base``). Elsewhere a
    view function's result is taken as a view, as NumPy's is for the contiguous arrays
    Variables hold."""
    for attribute in ("base", "_base"):
        if hasattr(raw_result, attribute):
            return (getattr(raw_result, attribute) is raw_input  # (a view of an owning array)
                    or _owner(raw_result, attribute) is _owner(raw_input, attribute))
    return True


def _owner(array, attribute):
    """The array that owns ``array``'s memory: the end of its chain of bases."""
    while getattr(array, attribute, None) is not None:
        array = getattr(array, attribute)
    return array
