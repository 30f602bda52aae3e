"""Rules of indexing: ``__getitem__``, ``__setitem__`` (copy-slices), ``take``,
``take_along_axis``.

Gathers with integer arrays may repeat an index, so their VJP must add, not assign. The same
gather applied to an array of flat positions says where each output element came from; a
scatter-add of ``g`` over those positions is the gradient, for any key.
"""

from ._core import LINEAR, defvjp, device_of, get_index, host_reads, kernel, set_index


def _has_arrays(key) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return any(hasattr(part, "shape") for part in parts)


def scatter_add(xp, size, positions, values):
    """Sum ``values`` into ``size`` slots by flat ``positions``: the backend's kernel
    (capability ``scatter_add``) where it has one, else with the standard alone (sort, running
    totals, and each slot's range found by binary search)."""
    fast = kernel(values, "scatter_add")
    if fast is not None:
        return fast(size, positions, values)
    order = xp.argsort(positions, stable=True)
    sorted_positions = xp.take(positions, order)
    totals = xp.cumulative_sum(xp.take(values, order), include_initial=True)
    slots = xp.arange(size, dtype=positions.dtype, device=device_of(positions))
    start = xp.searchsorted(sorted_positions, slots, side="left")
    stop = xp.searchsorted(sorted_positions, slots, side="right")
    return xp.take(totals, stop) - xp.take(totals, start)


def _positions(xp, shape, device):
    """Each element's flat position, in an array of ``shape``; and how many there are."""
    size = 1
    for n in shape:
        size *= n
    return xp.reshape(xp.arange(size, device=device), tuple(shape)), size


def vjp_gather(xp, g, x_shape, gather):
    """The VJP of ``ans = gather(x)`` for any gather: scatter-add ``g`` back by position."""
    numbers, size = _positions(xp, x_shape, device_of(g))
    positions = gather(numbers)
    flat = scatter_add(xp, size, xp.reshape(positions, (-1,)), xp.reshape(g, (-1,)))
    return xp.reshape(flat, x_shape)


def vjp_getitem(xp, g, x_shape, *, key):
    if _has_arrays(key):
        return vjp_gather(xp, g, x_shape, lambda a: get_index(a, key))
    # Basic indexing never repeats an element: assignment suffices. New axes (None) are
    # dropped from the key and from g, since assignment through them is not standard.
    grad = xp.zeros(x_shape, dtype=g.dtype, device=device_of(g))
    if None in (key if isinstance(key, tuple) else (key,)):
        key = tuple(part for part in key if part is not None) if isinstance(key, tuple) else ...
        g = xp.reshape(g, tuple(get_index(grad, key).shape))
    return set_index(xp, grad, key, g)


def selects_nothing(xp, key, shape) -> bool:
    """Whether ``key`` is a boolean mask of ``shape`` itself with no True in it: ``x[key] = v``
    then writes nothing, as SciPy's ``at(z, degenerate).set(nan)`` where no slice is degenerate.
    Read on the host only where the backend allows it."""
    dtype = getattr(key, "dtype", None)
    return (dtype is not None and "bool" in str(dtype) and tuple(key.shape) == tuple(shape)
            and host_reads(key) and not bool(xp.any(key)))


def vjp_setitem_x(xp, g, *, key):
    if selects_nothing(xp, key, g.shape):  # nothing was overwritten: g passes whole
        return g
    return set_index(xp, g * 1, key, 0)  # a copy: g may be shared


def _has_integer_arrays(key) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return any(hasattr(part, "shape") and "bool" not in str(part.dtype) for part in parts)


def vjp_setitem_value(xp, g, *, key):
    grad = get_index(g, key)
    if not _has_integer_arrays(key):  # slices and masks write each element once
        return grad
    # An integer array may repeat a position (x[[0, 0]] = v): one of the writes stays there
    # (NumPy: the last), and only the value written by it reaches the output. Which one, the
    # backend says: write each value's own number with the same key, and read it back.
    numbers, _ = _positions(xp, grad.shape, device_of(grad))
    written = set_index(xp, xp.full(tuple(g.shape), -1, dtype=numbers.dtype,
                                    device=device_of(grad)), key, numbers)
    return xp.where(get_index(written, key) == numbers, grad, xp.zeros_like(grad))


# Gathers and copy-slices are linear: their JVP is themselves, applied to the tangents.
defvjp("getitem", vjp_getitem, params="key", jvps=LINEAR)
defvjp("setitem", vjp_setitem_x, vjp_setitem_value, arrays="x value",
       params="key",
       jvps=LINEAR)
defvjp("take", lambda xp, g, x_shape, indices, *, axis=None: vjp_gather(
    xp, g, x_shape, lambda a: xp.take(a, indices, axis=0 if axis is None else axis)), None,
    arrays="x indices",
    jvps=LINEAR)
defvjp("take_along_axis", lambda xp, g, x_shape, indices, *, axis=-1: vjp_gather(
    xp, g, x_shape, lambda a: xp.take_along_axis(a, indices, axis=axis)), None,
    arrays="x indices", jvps=LINEAR)
