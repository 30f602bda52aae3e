"""Rules of the standard's statistical functions (reductions and cumulative ones).

``max``/``min`` share the gradient equally among tied extrema (PyTorch's ``amax``/``amin``);
``std`` gives 0 where the deviation is 0.
"""

import math

from . import conj, defvjp, expand_reduced, normalize_axis


def _count(shape, axis):
    return math.prod(shape[a] for a in normalize_axis(axis, len(shape)))


def vjp_sum(xp, g, x_shape, *, axis=None, keepdims=False):
    return expand_reduced(xp, g, axis, len(x_shape), keepdims)


def vjp_mean(xp, g, x_shape, *, axis=None, keepdims=False):
    return expand_reduced(xp, g, axis, len(x_shape), keepdims) / max(_count(x_shape, axis), 1)


def vjp_extremum(xp, g, x, ans, *, axis=None, keepdims=False):
    ans = expand_reduced(xp, ans, axis, x.ndim, keepdims)
    mask = xp.astype(x == ans, g.dtype)
    count = xp.sum(mask, axis=axis, keepdims=True) if x.ndim else mask
    return expand_reduced(xp, g, axis, x.ndim, keepdims) * mask / count


def _centered(xp, x, axis):
    return x - xp.mean(x, axis=axis, keepdims=True)


def vjp_var(xp, g, x, *, axis=None, correction=0.0, keepdims=False):
    scale = 2 / (_count(x.shape, axis) - correction)
    return expand_reduced(xp, g, axis, x.ndim, keepdims) * scale * _centered(xp, x, axis)


def vjp_std(xp, g, x, ans, *, axis=None, correction=0.0, keepdims=False):
    ans = expand_reduced(xp, ans, axis, x.ndim, keepdims)
    safe = xp.where(ans == 0, xp.ones_like(ans), ans)
    scale = 1 / (_count(x.shape, axis) - correction)
    grad = expand_reduced(xp, g, axis, x.ndim, keepdims) * scale * _centered(xp, x, axis) / safe
    return xp.where(ans == 0, xp.zeros_like(grad), grad)


def _move_reduced_last(xp, x, axis):
    """Permute the reduced axes of ``x`` to the end and merge them into one; return the inverse."""
    axes = normalize_axis(axis, x.ndim)
    kept = [a for a in range(x.ndim) if a not in axes]
    order = kept + list(axes)
    moved = xp.permute_dims(x, tuple(order))
    merged = xp.reshape(moved, tuple(moved.shape[: len(kept)]) + (-1,))
    inverse = tuple(order.index(a) for a in range(x.ndim))
    return merged, moved.shape, inverse


def _exclusive_cumprod(xp, x):
    """Product of the entries before each entry along the last axis (1 for the first)."""
    ones = xp.ones_like(x[..., :1])
    return xp.concat([ones, xp.cumulative_prod(x[..., :-1], axis=-1)], axis=-1)


def vjp_prod(xp, g, x, *, axis=None, dtype=None, keepdims=False):
    # The product of all other entries, from both-side exclusive products: exact with zeros.
    if x.ndim == 0:
        return g
    merged, moved_shape, inverse = _move_reduced_last(xp, x, axis)
    flipped = xp.flip(merged, axis=-1)
    others = _exclusive_cumprod(xp, merged) * xp.flip(_exclusive_cumprod(xp, flipped), axis=-1)
    g = xp.reshape(g, tuple(merged.shape[:-1]) + (1,))
    grad = xp.reshape(g * conj(xp, others), moved_shape)
    return xp.permute_dims(grad, inverse)


def vjp_cumulative_sum(xp, g, x_shape, *, axis=None, dtype=None, include_initial=False):
    axis = 0 if axis is None else axis
    if include_initial:  # the initial zero does not depend on x
        index = [slice(None)] * g.ndim
        index[axis] = slice(1, None)
        g = g[tuple(index)]
    return xp.flip(xp.cumulative_sum(xp.flip(g, axis=axis), axis=axis), axis=axis)


defvjp("sum", vjp_sum)
defvjp("mean", vjp_mean)
defvjp("max", vjp_extremum)
defvjp("min", vjp_extremum)
defvjp("var", vjp_var)
defvjp("std", vjp_std)
defvjp("prod", vjp_prod)
defvjp("cumulative_sum", vjp_cumulative_sum)


def vjp_cumulative_prod(xp, g, x, ans, *, axis=None, dtype=None, include_initial=False):
    axis = 0 if axis is None else axis % x.ndim
    x = xp.moveaxis(x, axis, -1)
    g = xp.moveaxis(g, axis, -1)
    if include_initial:  # the initial one does not depend on x
        g, ans = g[..., 1:], xp.moveaxis(ans, axis, -1)[..., 1:]
    else:
        ans = xp.moveaxis(ans, axis, -1)
    if not bool(xp.any(x == 0)):
        # d ans_k / d x_j = ans_k / x_j for k >= j: a reversed running sum.
        totals = xp.flip(xp.cumulative_sum(xp.flip(g * conj(xp, ans), axis=-1), axis=-1), axis=-1)
        return xp.moveaxis(totals / conj(xp, x), -1, axis)
    # With zeros, products of the other entries, one row per j: O(n^2), exact.
    n = x.shape[-1]
    after = xp.arange(n)[None, :] > xp.arange(n)[:, None]  # [j, i]: i > j
    rows = xp.where(after, x[..., None, :], xp.ones_like(x[..., None, :]))
    partial = xp.triu(xp.cumulative_prod(rows, axis=-1))  # [j, k]: prod_{j<i<=k} x_i, k >= j
    summed = xp.sum(conj(xp, partial) * g[..., None, :], axis=-1)
    grad = conj(xp, _exclusive_cumprod(xp, x)) * summed
    return xp.moveaxis(grad, -1, axis)


defvjp("cumulative_prod", vjp_cumulative_prod)
