"""Rules of the searching, sorting and set functions: only ``where``, ``sort`` and the values
the ``unique_*`` functions return carry gradients. ``sort`` sends each gradient to the element its (stable)
order put there, as PyTorch does for equal values; ``unique_values`` shares each value's
gradient equally among the elements equal to it, as ``max`` shares it among ties."""

from ._core import (LINEAR, defvjp, device_of, host_reads, is_complex, nondifferentiable,
                    slice_along)
from .indexing import scatter_add, vjp_gather


def _sort_order(xp, x, ans, axis, descending):
    """The permutation that sorted ``x`` into ``ans``: the stable one (ties keep their order, as
    PyTorch's), or where ``ans`` has no ties and no NaNs, any sort's, all the same permutation:
    the backend's fastest (NumPy's stable argsort takes 3.6 times its unstable one)."""
    ties = True
    if host_reads(x) and x.shape[axis] > 1:
        n = x.shape[axis]
        before, after = (slice_along(ans, axis, 0, n - 1), slice_along(ans, axis, 1, n))
        ties = bool(xp.any(before == after)) or bool(xp.any(xp.isnan(ans)))
    return xp.argsort(x, axis=axis, descending=descending, stable=ties)


def vjp_sort(xp, g, x, ans, *, axis=-1, descending=False, stable=True):
    order = _sort_order(xp, x, ans, axis, descending)
    return vjp_gather(xp, g, tuple(x.shape), lambda a: xp.take_along_axis(a, order, axis=axis))


defvjp("where", None,
       lambda xp, g, condition: xp.where(condition, g, xp.zeros_like(g)),
       lambda xp, g, condition: xp.where(condition, xp.zeros_like(g), g),
       arrays="condition x1 x2", jvps=LINEAR)
defvjp("sort", vjp_sort, jvps=(lambda xp, t, x, ans, *, axis=-1, descending=False, stable=True:
                               xp.take_along_axis(t, _sort_order(xp, x, ans, axis, descending),
                                                  axis=axis),))

def _members(xp, x, ans):
    """``(where, found, counts)``: per element of ``x`` (flattened), the position in ``ans`` of
    the value equal to it, and whether there is one (none for a NaN); per value of ``ans``, how
    many elements it stands for (1 where none: NaNs). A binary search per element among the
    values sorted (the standard leaves their order open): O(n log k), where comparing every
    element with every value takes n k memory (80 GB for 10**5 elements of 10**5 values).
    Complex values, which the standard does not sort, are compared with every value."""
    flat, k = xp.reshape(x, (-1,)), ans.shape[0]
    if is_complex(ans):
        equal = xp.reshape(x, (-1, 1)) == xp.reshape(ans, (1, -1))
        where, found = xp.argmax(xp.astype(equal, xp.int8), axis=1), xp.any(equal, axis=1)
        dtype = xp.real(ans).dtype
    else:
        order = xp.argsort(ans)
        positions = xp.searchsorted(xp.take(ans, order), flat)  # (NaNs: k, past the end)
        where = xp.take(order, xp.clip(positions, 0, k - 1))
        found, dtype = xp.take(ans, where) == flat, ans.dtype
    counts = scatter_add(xp, k, where, xp.astype(found, dtype))
    return where, found, xp.where(counts == 0, xp.ones_like(counts), counts)


def vjp_unique_values(xp, g, x, ans):
    if not x.size:
        return xp.zeros(tuple(x.shape), dtype=g.dtype, device=device_of(g))
    where, found, counts = _members(xp, x, ans)
    share = xp.take(g / xp.astype(counts, g.dtype), where)
    return xp.reshape(xp.where(found, share, xp.zeros_like(share)), tuple(x.shape))


def jvp_unique_values(xp, t, x, ans):
    if not x.size:
        return xp.zeros(tuple(ans.shape), dtype=t.dtype, device=device_of(t))
    where, found, counts = _members(xp, x, ans)
    flat = xp.reshape(t, (-1,))
    return scatter_add(xp, ans.shape[0], where, xp.where(found, flat, xp.zeros_like(flat))) / (
        xp.astype(counts, t.dtype))


defvjp("unique_values", vjp_unique_values, jvps=(jvp_unique_values,))
# The other unique functions return the same values first (their indices and counts are
# integers, with no gradient): the values' gradient is unique_values'.
for _name in ("unique_all", "unique_counts", "unique_inverse"):
    defvjp(_name, lambda xp, g, x, ans: None if g[0] is None else vjp_unique_values(
        xp, g[0], x, ans[0]), outputs=None, symbolic_zeros=True,
        jvps=(lambda xp, t, x, ans: (jvp_unique_values(xp, t, x, ans[0]),) + (None,) * (
            len(ans) - 1),))

nondifferentiable("argmax", "argmin", "argsort", "count_nonzero", "isin", "nonzero", "searchsorted")
