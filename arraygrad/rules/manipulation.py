"""Rules of the standard's manipulation functions: each VJP undoes the rearrangement."""

from ._core import LINEAR, defjoint, defvjp, slice_along


def _negate(shift):
    return tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -shift


def _inverse_permutation(axes, ndim):
    if axes is None:  # NumPy's transpose reverses the axes (the standard requires them)
        return tuple(reversed(range(ndim)))
    return tuple(sorted(range(len(axes)), key=lambda i: axes[i] % len(axes)))


def vjp_concat(xp, g, arrays_shape, *, axis=0):
    if axis is None:  # inputs were flattened first
        g = xp.reshape(g, (-1,))
        axis, shapes = 0, [(_size(s),) for s in arrays_shape]
    else:
        shapes = arrays_shape
    axis = axis % g.ndim
    grads, start = [], 0
    for shape in shapes:
        grads.append(slice_along(g, axis, start, start + shape[axis]))
        start += shape[axis]
    return [xp.reshape(grad, shape) for grad, shape in zip(grads, arrays_shape)]


def _size(shape):
    size = 1
    for n in shape:
        size *= n
    return size


def vjp_stack(xp, g, arrays_shape, *, axis=0):
    return list(xp.unstack(g, axis=axis)) if arrays_shape else []


def vjp_tile(xp, g, x_shape, *, reps):
    ndim = max(len(reps), len(x_shape))
    shape = (1,) * (ndim - len(x_shape)) + tuple(x_shape)
    reps = (1,) * (ndim - len(reps)) + tuple(reps)
    interleaved = [n for pair in zip(reps, shape) for n in pair]
    return xp.sum(xp.reshape(g, tuple(interleaved)), axis=tuple(range(0, 2 * ndim, 2)))


def vjp_repeat(xp, g, x_shape, repeats, *, axis=None):
    shape = x_shape
    if axis is None:  # the input was flattened first
        g, axis, shape = xp.reshape(g, (-1,)), 0, (_size(x_shape),)
    axis %= g.ndim
    if isinstance(repeats, int):
        split = tuple(g.shape[:axis]) + (shape[axis], repeats) + tuple(g.shape[axis + 1:])
        return xp.reshape(xp.sum(xp.reshape(g, split), axis=axis + 1), x_shape)
    # Segment sums: differences of the running total at each segment's boundaries.
    counts = xp.broadcast_to(repeats, (shape[axis],))
    bounds = xp.cumulative_sum(counts, include_initial=True)
    totals = xp.cumulative_sum(g, axis=axis, include_initial=True)
    grad = xp.take(totals, bounds[1:], axis=axis) - xp.take(totals, bounds[:-1], axis=axis)
    return xp.reshape(grad, x_shape)


# Every manipulation is linear: its JVP is itself, applied to the tangents.
defvjp("reshape", lambda xp, g, x_shape: xp.reshape(g, x_shape), params="shape", jvps=LINEAR)
defvjp("permute_dims", lambda xp, g, *, axes: xp.permute_dims(g, _inverse_permutation(axes,
                                                                                    g.ndim)),
       params="axes", jvps=LINEAR)
defvjp("expand_dims", lambda xp, g, x_shape: xp.reshape(g, x_shape), params="* axis",
       jvps=LINEAR)
defvjp("squeeze", lambda xp, g, x_shape: xp.reshape(g, x_shape), params="axis", jvps=LINEAR)
defvjp("broadcast_to", lambda xp, g: g, params="shape", jvps=LINEAR)  # the engine sums
defvjp("flip", lambda xp, g, *, axis=None: xp.flip(g, axis=axis), jvps=LINEAR)
defvjp("roll", lambda xp, g, *, shift, axis=None: xp.roll(g, _negate(shift), axis=axis),
       params="shift", jvps=LINEAR)
defvjp("moveaxis", lambda xp, g, *, source, destination: xp.moveaxis(g, destination, source),
       params="source destination", jvps=LINEAR)
defvjp("tile", vjp_tile, params="reps", jvps=LINEAR)
defvjp("repeat", vjp_repeat, None, arrays="x repeats", jvps=LINEAR)
defjoint("concat", vjp_concat, arrays="arrays", sequence="list", jvps=LINEAR)
defjoint("stack", vjp_stack, arrays="arrays", sequence="list", jvps=LINEAR)


def per_output(g):
    """The gradients of a function with any number of outputs, as a tuple: the engine hands a
    node with a single output its gradient alone (``unstack`` along an axis of length 1,
    ``broadcast_arrays`` or ``meshgrid`` of one array)."""
    return tuple(g) if isinstance(g, (tuple, list)) else (g,)


defjoint("unstack", lambda xp, g, *, axis=0: (xp.stack(per_output(g), axis=axis),),
         outputs=None, jvps=LINEAR)
defjoint("broadcast_arrays", lambda xp, g: list(per_output(g)), arrays="arrays",
         sequence="varargs", outputs=None, jvps=LINEAR)


def vjp_meshgrid(xp, g, *, indexing="xy"):
    # Output k repeats input k along every axis but its own (axes 0 and 1 swap for "xy").
    g = per_output(g)
    grads = []
    for k, grad in enumerate(g):
        own = {0: 1, 1: 0}.get(k, k) if indexing == "xy" and len(g) > 1 else k
        grads.append(xp.sum(grad, axis=tuple(a for a in range(grad.ndim) if a != own)))
    return grads


defjoint("meshgrid", vjp_meshgrid, arrays="arrays", sequence="varargs", outputs=None,
         jvps=LINEAR)
