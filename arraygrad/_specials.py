"""The namespace's functions that are more than one recorded call: ``asarray`` (which keeps a
Variable's graph, and stacks a list of Variables), ``from_dlpack``, indexing and assignment (a
list in a key read as NumPy reads it; assignment in place only into an array nothing else holds)
and ``to_device``; the namespace's ``__array_namespace_info__`` and ``special``."""

from __future__ import annotations

from ._arguments import _EXACT_INT, _describe, _holds_variables, mixed_backends
from ._variable import Variable
from .rules import RULES
from .rules.creation import to_device as raw_to_device
from .rules.indexing import selects_nothing
from .rules.special import SPECIAL

_make = Variable._make


def install(ns, backend, recorders, Recorder):
    """Install in ``ns`` what is more than a recorded call: ``asarray`` keeps Variables in the
    graph; indexing and ``to_device`` are recorded by ``Recorder``s (the namespace's class)."""
    raw = backend.raw
    raw_asarray = raw.asarray
    astype = getattr(ns, "astype", None)
    unwrap = Recorder(backend, "asarray", raw_asarray, None).unwrap
    copy_of = Recorder(backend, "asarray", lambda x: raw_asarray(x, copy=True), RULES["copy"])

    def asarray(obj, /, *, dtype=None, device=None, copy=None):
        # Code written against the standard often starts with x = xp.asarray(x): keep x's graph.
        if isinstance(obj, Variable):
            if obj._backend is not backend:
                raise mixed_backends(backend, obj._backend, "asarray")
            result = obj
            if dtype is not None and dtype != obj.dtype:
                result = astype(result, dtype)
            elif copy:
                result = copy_of(result)
            if device is not None:
                result = result.to_device(device)
            return result
        if isinstance(obj, (list, tuple)) and _holds_variables(obj):
            return _stack_nested(obj, dtype, device)
        return _make(backend.coerce(raw_asarray(unwrap(obj), dtype=dtype, device=device, copy=copy)),
                     backend, None, 0, False)

    def _stack_nested(obj, dtype, device):
        # xp.asarray([a, b]) of Variables: stacked, so the graph is kept (never an object array).
        parts = [asarray(part, device=device) for part in obj]
        if dtype is None:
            dtype = raw.result_type(*[part.data for part in parts])
        return ns.stack([asarray(part, dtype=dtype) for part in parts])

    ns.asarray = asarray
    raw_from_dlpack = getattr(ns, "from_dlpack", None)

    def from_dlpack(x, /, **options):
        # A Variable of this backend: asarray's (its graph kept); of another, its data would
        # leave the graph, so only a constant may go (as Variable.__dlpack__ says).
        if isinstance(x, Variable) and x._backend is backend and not options:
            return asarray(x)
        if isinstance(x, Variable):
            x.__dlpack__()  # refuses where x requires grad
            x = x.data
        return raw_from_dlpack(x, **options)

    if raw_from_dlpack is not None:
        ns.from_dlpack = from_dlpack
    getitem = Recorder(backend, "__getitem__", backend.get_index, RULES["getitem"])

    def _getitem(x, key):
        if key.__class__ is list or key.__class__ is tuple and list in map(type, key):
            key = _list_key(key)
        return getitem(x, key)

    def _list_key(key):
        # NumPy reads a list in a key as an integer (or boolean) array: make it one, so that
        # the rule sees an array and adds the gradients of a repeated index (x[[0, 0, 1]]).
        if isinstance(key, tuple):
            return tuple(_list_key(part) if part.__class__ is list else part for part in key)
        index = raw_asarray(unwrap(key))
        if index.size == 0:  # [] selects nothing, as NumPy's integer []
            index = raw_asarray(unwrap(key), dtype=raw.int64)
        return index

    def raw_setitem(x, value, key, owned=False):
        if _writes_nothing(x, value, key):  # x as it is, shared: nothing ever writes into an
            return x  # array that two Variables hold (below)
        if not owned:  # copy-on-write: whatever holds x keeps its value
            x = raw_asarray(x, copy=True)
        try:
            return backend.set_index(x, key, value)
        except (TypeError, ValueError) as exc:  # NumPy's "setting an array element with a..."
            kind = TypeError if isinstance(exc, TypeError) else ValueError
            raise kind(
                f"__setitem__: cannot assign {_describe(value)} to x[{key!r:.40}] of a Variable "
                f"of shape {tuple(x.shape)} and dtype {x.dtype} ({type(exc).__name__}: "
                f"{exc})") from exc

    def _writes_nothing(x, value, key):
        # A mask with no True, and a number NumPy would take into x (it refuses NaN into
        # integers, a complex into reals, an int beyond float64 even where nothing is written)
        kind = value.__class__
        if not (kind is float or kind in (int, bool) and -_EXACT_INT <= value <= _EXACT_INT
                or kind is complex and raw.isdtype(x.dtype, "complex floating")):
            return False
        return backend.is_inexact(x.dtype) and selects_nothing(raw, key, x.shape)

    # Two recorders, one rule: whether the write may go into x's own array is not an option of
    # the function, so it is not recorded with the node. The forward mode replays the node's
    # function on tangents (a caller's array, or one shared by several nodes), so the function
    # it finds under "setitem" must be the one that copies.
    setitem = Recorder(backend, "__setitem__", raw_setitem, RULES["setitem"])
    setitem_owned = Recorder(backend, "__setitem__",
                             lambda x, value, key: raw_setitem(x, value, key, owned=True),
                             RULES["setitem"])
    keeps_x = any(kind == "inputs" or kind == "input" and index == 0
                  for kind, index in setitem.rule.sources)

    def _setitem(x, key, value, owned=False):
        """``x[key] = value``, recorded; into ``x``'s own array where the caller ``owned`` it
        (nothing else holds it) and the setitem rule does not save it."""
        if key.__class__ is list or key.__class__ is tuple and list in map(type, key):
            key = _list_key(key)  # as in _getitem: the rule sees repeated positions
        return (setitem_owned if owned and not keeps_x else setitem)(x, value, key=key)

    to_device = Recorder(backend, "to_device", raw_to_device, RULES["to_device"])

    def _to_device(x, device, stream):
        return to_device(x, device=device, stream=stream)

    ns._getitem = _getitem
    ns._setitem = _setitem
    ns._to_device = _to_device
    for recorder in (getitem, setitem, setitem_owned, to_device):
        recorder.reads = None  # called here with the options their rules read, nothing else
    recorders.update(getitem=getitem, setitem=setitem, to_device=to_device)
    backend.recorders = recorders  # the forward mode applies linear functions to tangents


def namespace_info(backend, raw_info):
    """The backend's ``__array_namespace_info__``, whose ``capabilities()`` also say what the
    plugin declared: libraries (array-api-extra's ``apply_where``) choose a path without
    boolean masks from it, on dask, where shapes that depend on data are unknown."""

    class Info:
        def __init__(self):
            self._raw = raw_info()

        def __getattr__(self, name):
            return getattr(self._raw, name)

        def capabilities(self):
            answer = dict(self._raw.capabilities())
            if not backend.capabilities()["data_dependent_shapes"]:
                answer.update({"boolean indexing": False, "data-dependent shapes": False})
            return answer

    Info.__name__ = Info.__qualname__ = "__array_namespace_info__"
    return Info


def special_namespace(backend, Namespace, Recorder):
    """The differentiable ``special`` namespace of ``backend`` (a ``Namespace`` of
    ``Recorder``s: the namespace's classes), from its plugin's raw special functions (SciPy's
    names), or None where it has none."""
    raw_special = backend.raw_special
    if raw_special is None:
        return None
    special = Namespace(f"arraygrad[{backend.name}].special", backend)
    for name, rule in SPECIAL.items():
        raw_function = getattr(raw_special, name, None)
        if raw_function is not None:
            function = Recorder(backend, rule.name, raw_function, rule)
            function.__name__ = function.__qualname__ = name
            function.__doc__ = getattr(raw_function, "__doc__", None)
            setattr(special, name, function)
    return special
