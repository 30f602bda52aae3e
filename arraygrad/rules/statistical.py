"""Rules of the standard's statistical functions (reductions and cumulative ones).

A reduction's VJP spreads ``g`` over the reduced axes with per-element weights ``w``, and its
JVP contracts the tangent with the same weights: ``sum(t * w)`` (holomorphic ``prod``, and the
selections ``max``/``min``, whose complex tangents keep their imaginary part), or
``sum(Re(conj(w) * t))`` for real-valued reductions of complex input (``var``, ``std``).
``max``/``min`` share the gradient equally among tied extrema (PyTorch's ``amax``/``amin``);
``std`` gives 0 where the deviation is 0.
"""

import math

from ._core import (LINEAR, capable, conj, defvjp, device_of, expand_reduced, host_reads, is_complex,
                    normalize_axis, recorded, slice_along, sum_axes)


def _count(shape, axis):
    return math.prod(shape[a] for a in normalize_axis(axis, len(shape)))


def _contract(xp, w, t, axis, keepdims):
    """The JVP of a reduction with weights ``w``: ``sum(Re(conj(w) t))`` over the reduced axes
    (just ``sum(w t)`` for real values)."""
    product = conj(xp, w) * t
    return xp.sum(xp.real(product) if is_complex(product) else product, axis=axis,
                  keepdims=keepdims)


def vjp_sum(xp, g, x_shape, *, axis=None, keepdims=False):
    return expand_reduced(xp, g, axis, len(x_shape), keepdims)


def _mean_count(shape, axis):
    """How many entries each mean over ``axis`` takes (at least 1: an empty mean's gradient)."""
    return max(_count(shape, axis), 1)


def vjp_mean(xp, g, x_shape, *, axis=None, keepdims=False):
    return expand_reduced(xp, g, axis, len(x_shape), keepdims) / _mean_count(x_shape, axis)


def _extremum_weights(xp, x, ans, axis, keepdims):
    """1/k on each of the k tied extrema of every reduced slice, 0 elsewhere."""
    mask = xp.astype(x == expand_reduced(xp, ans, axis, x.ndim, keepdims), x.dtype)
    return mask / (xp.sum(mask, axis=axis, keepdims=True) if x.ndim else mask)


def _centred(xp, x, axis):
    return x - xp.mean(x, axis=axis, keepdims=True)


def _var_weights(xp, x, axis, correction):
    return 2 * _centred(xp, x, axis) / (_count(x.shape, axis) - correction)


def _std_scale(xp, x, ans, axis, correction, keepdims):
    """``1 / ((n - correction) std)`` on the reduced shape, and 0 where std is 0 (PyTorch)."""
    ans = expand_reduced(xp, ans, axis, x.ndim, keepdims)
    zero = ans == 0
    scale = 1 / ((_count(x.shape, axis) - correction) * xp.where(zero, xp.ones_like(ans), ans))
    return xp.where(zero, xp.zeros_like(scale), scale)


def _std_weights(xp, x, ans, axis, correction, keepdims):
    return _centred(xp, x, axis) * _std_scale(xp, x, ans, axis, correction, keepdims)


def _move_reduced_last(xp, x, axis):
    """Permute the reduced axes of ``x`` to the end and merge them into one; return the moved
    shape and the inverse permutation."""
    axes = normalize_axis(axis, x.ndim)
    kept = [a for a in range(x.ndim) if a not in axes]
    order = kept + list(axes)
    moved = xp.permute_dims(x, tuple(order))
    # (the size, not -1: an empty kept axis leaves no length to infer)
    merged = xp.reshape(moved, tuple(moved.shape[: len(kept)]) + (_count(x.shape, axes),))
    inverse = tuple(order.index(a) for a in range(x.ndim))
    return merged, moved.shape, inverse


def _exclusive_cumprod(xp, x):
    """Product of the entries before each entry along the last axis (1 for the first)."""
    ones = xp.ones_like(x[..., :1])
    return xp.concat([ones, xp.cumulative_prod(x[..., :-1], axis=-1)], axis=-1)


def _prod_weights(xp, x, axis):
    """The product of all other entries of each reduced slice: exact with zeros, from the
    exclusive products on both sides."""
    if x.ndim == 0:
        return xp.ones_like(x)
    merged, moved_shape, inverse = _move_reduced_last(xp, x, axis)
    flipped = xp.flip(merged, axis=-1)
    others = _exclusive_cumprod(xp, merged) * xp.flip(_exclusive_cumprod(xp, flipped), axis=-1)
    return xp.permute_dims(xp.reshape(others, moved_shape), inverse)


defvjp("sum", vjp_sum, jvps=LINEAR)
defvjp("mean", vjp_mean, jvps=LINEAR)


def vjp_extremum(xp, g, x, ans, *, axis=None, keepdims=False):
    """``g / k`` on each of the k tied extrema of every reduced slice, 0 elsewhere: the mask as
    0/1 weights counts the ties (one reduction) and takes the share, computed on the reduced
    shape, in place (one full-size array). Elsewhere ``0 * share``, as torch.amax's
    ``mask * share``: NaN everywhere in a slice whose maximum is NaN (no entry equals it, so the
    share is ``g / 0``)."""
    if not x.ndim:
        return g
    mask = x == expand_reduced(xp, ans, axis, x.ndim, keepdims)
    if g.size == 1 and x.size > 1 and capable(x, "reuse_unshared") and host_reads(x):
        # One slice of a NumPy-like array (reuse_unshared): the share is placed at the extrema
        # of a zero array, instead of a cast, a sum and a product over the whole mask. A NaN or
        # inf share takes the weights, for its NaNs everywhere.
        where = xp.nonzero(mask)
        if where[0].shape[0]:
            share = xp.reshape(g, ()) / where[0].shape[0]
            if bool(xp.isfinite(share)):
                grad = xp.zeros(x.shape, dtype=share.dtype, device=device_of(x))
                grad[where] = share
                return grad
    weights = xp.astype(mask, g.dtype)
    count = sum_axes(xp, weights, normalize_axis(axis, x.ndim), keepdims=True)
    return weights * (expand_reduced(xp, g, axis, x.ndim, keepdims) / count)


for _name in ("max", "min"):  # a selection: the tangent of the extremum, complex ones too
    defvjp(_name, vjp_extremum,
           jvps=(lambda xp, t, x, ans, *, axis=None, keepdims=False: xp.sum(
               _extremum_weights(xp, x, ans, axis, keepdims) * t, axis=axis,
               keepdims=keepdims),))


def vjp_var(xp, g, x, *, axis=None, correction=0.0, keepdims=False):
    """``g 2 (x - mean) / (n - correction)``, its factors taken on the reduced shape first: one
    full-size product, computed in place."""
    g = expand_reduced(xp, g, axis, x.ndim, keepdims)
    centred = _centred(xp, x, axis)
    return centred * (g * 2 / (_count(x.shape, axis) - correction))


def vjp_std(xp, g, x, ans, *, axis=None, correction=0.0, keepdims=False):
    """``g (x - mean) / ((n - correction) std)``, and 0 where std is 0 (PyTorch), its factors
    taken on the reduced shape first: one full-size product, computed in place."""
    g = expand_reduced(xp, g, axis, x.ndim, keepdims)
    centred = _centred(xp, x, axis)
    return centred * (g * _std_scale(xp, x, ans, axis, correction, keepdims))


defvjp("var", vjp_var,
       jvps=(lambda xp, t, x, *, axis=None, correction=0.0, keepdims=False: _contract(
           xp, _var_weights(xp, x, axis, correction), t, axis, keepdims),))
defvjp("std", vjp_std,
       jvps=(lambda xp, t, x, ans, *, axis=None, correction=0.0, keepdims=False: _contract(
           xp, _std_weights(xp, x, ans, axis, correction, keepdims), t, axis, keepdims),))
def _prod_others(xp, x, ans, axis, keepdims):
    """The product of all other entries of each reduced slice: ``ans / x`` (one division,
    PyTorch's) where every product is finite and nonzero, so that no entry is 0, inf or NaN
    and none underflowed; else :func:`_prod_weights` (two running products, exact with zeros)."""
    if ans.dtype == x.dtype and host_reads(x) and bool(xp.all(xp.isfinite(ans) & (ans != 0))):
        return expand_reduced(xp, ans, axis, x.ndim, keepdims) / x
    return _prod_weights(xp, x, axis)


defvjp("prod",
       lambda xp, g, x, ans, *, axis=None, dtype=None, keepdims=False: expand_reduced(
           xp, g, axis, x.ndim, keepdims) * conj(xp, _prod_others(xp, x, ans, axis, keepdims)),
       jvps=(lambda xp, t, x, ans, *, axis=None, dtype=None, keepdims=False: xp.sum(
           _prod_others(xp, x, ans, axis, keepdims) * t, axis=axis, keepdims=keepdims),))


def _reverse_cumsum(xp, a, axis=-1):
    """``[..., j] = sum_{k >= j} a[..., k]`` along ``axis``."""
    return xp.flip(xp.cumulative_sum(xp.flip(a, axis=axis), axis=axis), axis=axis)


def vjp_cumulative_sum(xp, g, x_shape, *, axis=None, dtype=None, include_initial=False):
    axis = 0 if axis is None else axis
    if include_initial:  # the initial zero does not depend on x
        g = slice_along(g, axis, 1, None)
    return _reverse_cumsum(xp, g, axis)


def _cumulative_layout(xp, axis, x, *others):
    """Move ``axis`` last in ``x`` and the other arrays (the layout of the rules below)."""
    axis = 0 if axis is None else axis % x.ndim
    return axis, [xp.moveaxis(a, axis, -1) for a in (x, *others)]




def _first_zero(xp, x):
    """Along the last axis: where no zero has come yet (``before``: ``ans_k = 0`` from the
    first zero on), where the first zero is (``first``), and the running products with that
    zero taken as 1 (``without``): ``d ans_k / d x_z`` for ``k >= z``. Every other derivative
    has a zero factor, so the gradient takes O(n) per slice, exact with zeros (PyTorch's)."""
    zero = x == 0
    seen = xp.cumulative_sum(xp.astype(zero, xp.int64), axis=-1)
    first = zero & (seen == 1)
    return seen == 0, first, xp.cumulative_prod(xp.where(first, xp.ones_like(x), x), axis=-1)


def _partial_products(xp, x):
    """``[..., j, k] = prod_{j < i <= k} x_i`` for ``k >= j``, else 0: d ans_k / d x_j divided
    by the exclusive product before ``j``. O(n^2), and a polynomial in ``x``: under
    ``create_graph`` its derivatives are right at zeros too, where :func:`_first_zero`'s
    masks are constants (PyTorch's choice for double backward)."""
    n = x.shape[-1]
    positions = xp.arange(n, device=device_of(x))
    after = positions[None, :] > positions[:, None]  # [j, i]: i > j
    rows = xp.where(after, x[..., None, :], xp.ones_like(x[..., None, :]))
    return xp.triu(xp.cumulative_prod(rows, axis=-1))


def _cumprod_formula(xp, x) -> str:
    """Which formula ``cumulative_prod``'s derivatives take: ``"divide"`` (``ans_k / x_j``)
    without zeros; the ``"exact"`` partial products where the rule is itself differentiated,
    or where an entry is infinite or NaN (``inf * 0`` in ``ans`` would spoil the others);
    else ``"first zero"``, O(n) per slice (:func:`_first_zero`)."""
    reads = host_reads(x)
    if reads and not bool(xp.any(x == 0)):
        return "divide"
    if recorded(x) or reads and not bool(xp.all(xp.isfinite(x))):
        return "exact"
    return "first zero"


def vjp_cumulative_prod(xp, g, x, ans, *, axis=None, dtype=None, include_initial=False):
    axis, (x, g, ans) = _cumulative_layout(xp, axis, x, g, ans)
    if include_initial:  # the initial one does not depend on x
        g, ans = g[..., 1:], ans[..., 1:]
    formula = _cumprod_formula(xp, x)
    # d ans_k / d x_j = ans_k / x_j for k >= j before the first zero: a reversed running sum
    if formula == "divide":
        return xp.moveaxis(_reverse_cumsum(xp, g * conj(xp, ans)) / conj(xp, x), -1, axis)
    if formula == "exact":
        summed = xp.sum(conj(xp, _partial_products(xp, x)) * g[..., None, :], axis=-1)
        return xp.moveaxis(conj(xp, _exclusive_cumprod(xp, x)) * summed, -1, axis)
    before, first, without = _first_zero(xp, x)
    zeros = xp.zeros_like(g)
    before_zero = _reverse_cumsum(xp, xp.where(before, g * conj(xp, ans), zeros)) / conj(
        xp, xp.where(before, x, xp.ones_like(x)))
    at_zero = xp.where(first, _reverse_cumsum(xp, g * conj(xp, without)), zeros)
    return xp.moveaxis(xp.where(before, before_zero, at_zero), -1, axis)


def jvp_cumulative_prod(xp, t, x, ans, *, axis=None, dtype=None, include_initial=False):
    axis, (x, t, full) = _cumulative_layout(xp, axis, x, t, ans)
    ans = full[..., 1:] if include_initial else full
    formula = _cumprod_formula(xp, x)
    if formula == "divide":
        tangent = ans * xp.cumulative_sum(t / x, axis=-1)
    elif formula == "exact":
        weighted = t * _exclusive_cumprod(xp, x)
        tangent = xp.sum(weighted[..., :, None] * _partial_products(xp, x), axis=-2)
    else:
        before, first, without = _first_zero(xp, x)
        zeros = xp.zeros_like(t)
        scaled = xp.where(before, t / xp.where(before, x, xp.ones_like(x)), zeros)
        at_zero = xp.sum(xp.where(first, t, zeros), axis=-1, keepdims=True)
        tangent = xp.where(before, ans * xp.cumulative_sum(scaled, axis=-1), at_zero * without)
    if include_initial:  # (ans's first entry: the tangent has none along an empty axis)
        tangent = xp.concat([xp.zeros_like(full[..., :1]), tangent], axis=-1)
    return xp.moveaxis(tangent, -1, axis)


defvjp("cumulative_sum", vjp_cumulative_sum, jvps=LINEAR)
defvjp("cumulative_prod", vjp_cumulative_prod, jvps=(jvp_cumulative_prod,))


# Functions outside the standard that a loss head needs, offered on every backend (their
# forward is made of the standard's functions) with one rule each, as torch.nn.functional's
# and jax.nn's: the shift by the maximum keeps exp from overflowing.
def _shift(xp, x, axis):
    """The maximum along ``axis`` (kept), 0 where it is not finite: logsumexp is -inf along a
    slice of -inf, inf along one with inf (SciPy's)."""
    m = xp.max(x, axis=axis, keepdims=True)
    return xp.where(xp.isfinite(m), m, xp.zeros_like(m))


def logsumexp(xp, x, /, *, axis=None, keepdims=False):
    """``log(sum(exp(x), axis))``, without overflow (SciPy's and JAX's ``logsumexp``)."""
    m = _shift(xp, x, axis)
    out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims or x.ndim == 0 else xp.squeeze(out, axis=tuple(
        normalize_axis(axis, x.ndim)))


def softmax(xp, x, /, *, axis=-1):
    """``exp(x) / sum(exp(x), axis)``, without overflow (``torch.softmax``, ``jax.nn``): NaN
    along a slice with an infinite maximum, as theirs and SciPy's."""
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def log_softmax(xp, x, /, *, axis=-1):
    """``x - logsumexp(x, axis)``, without overflow (``torch.log_softmax``, ``jax.nn``): NaN
    along a slice with an infinite maximum, as theirs and SciPy's."""
    shifted = x - xp.max(x, axis=axis, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


def _lse_weights(xp, x, ans, axis, keepdims):
    """The softmax of ``x`` along ``axis``: the gradient of its ``logsumexp``."""
    return xp.exp(x - expand_reduced(xp, ans, axis, x.ndim, keepdims))


def vjp_logsumexp(xp, g, x, ans, *, axis=None, keepdims=False):
    return expand_reduced(xp, g, axis, x.ndim, keepdims) * conj(
        xp, _lse_weights(xp, x, ans, axis, keepdims))


def _softmax_vjp(xp, g, s, axis):
    """``s (g - sum(g s))``: the VJP of a softmax ``s``."""
    gs = g * conj(xp, s)
    return gs - conj(xp, s) * xp.sum(gs, axis=axis, keepdims=True)


defvjp("logsumexp", vjp_logsumexp, params="* axis keepdims", standard=False, forward=logsumexp,
       jvps=(lambda xp, t, x, ans, *, axis=None, keepdims=False: xp.sum(
           t * _lse_weights(xp, x, ans, axis, keepdims), axis=axis, keepdims=keepdims),))
defvjp("softmax", lambda xp, g, ans, *, axis=-1: _softmax_vjp(xp, g, ans, axis),
       params="* axis", standard=False, forward=softmax,
       jvps=(lambda xp, t, ans, *, axis=-1: ans * (t - xp.sum(t * ans, axis=axis,
                                                                keepdims=True)),))
defvjp("log_softmax", lambda xp, g, ans, *, axis=-1: g - conj(xp, xp.exp(ans)) * xp.sum(
           g, axis=axis, keepdims=True),
       params="* axis", standard=False, forward=log_softmax,
       jvps=(lambda xp, t, ans, *, axis=-1: t - xp.sum(t * xp.exp(ans), axis=axis,
                                                       keepdims=True),))
