"""Rules of the utility functions: ``diff`` is linear; ``all`` and ``any`` are boolean."""

from ._core import LINEAR, defjoint, device_of, nondifferentiable, slice_along


def vjp_diff(xp, g, x_shape, prepend_shape, append_shape, *, axis=-1, n=1, prepend=None,
             append=None):
    # out_k = y_{k+1} - y_k, so dy_j = g_{j-1} - g_j (zero outside); applied n times.
    axis = axis % len(x_shape)
    for _ in range(n):
        edge = [*g.shape]
        edge[axis] = 1
        zero = xp.zeros(tuple(edge), dtype=g.dtype, device=device_of(g))
        g = xp.concat([zero, g], axis=axis) - xp.concat([g, zero], axis=axis)
    sizes = [shape[axis] if len(shape) else 1 if value is not None else 0
             for shape, value in ((prepend_shape, prepend), (x_shape, True), (append_shape, append))]
    grads, start = [], 0
    for size in sizes:
        grads.append(slice_along(g, axis, start, start + size))
        start += size
    prepend_grad, x_grad, append_grad = grads
    return [x_grad, prepend_grad, append_grad]


defjoint("diff", vjp_diff, arrays="x prepend append", jvps=LINEAR)

nondifferentiable("all", "any")
