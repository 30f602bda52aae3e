"""Rules of the searching, sorting and set functions: only ``where``, ``sort`` and
``unique_values`` carry gradients. ``sort`` sends each gradient to the element its (stable)
order put there, as PyTorch does for equal values; ``unique_values`` shares each value's
gradient equally among the elements equal to it, as ``max`` shares it among ties."""

from ._core import LINEAR, defvjp, nondifferentiable
from .indexing import vjp_gather


def vjp_sort(xp, g, x, *, axis=-1, descending=False, stable=True):
    order = xp.argsort(x, axis=axis, descending=descending, stable=True)
    return vjp_gather(xp, g, tuple(x.shape), lambda a: xp.take_along_axis(a, order, axis=axis))


defvjp("where", None,
       lambda xp, g, condition: xp.where(condition, g, xp.zeros_like(g)),
       lambda xp, g, condition: xp.where(condition, xp.zeros_like(g), g),
       arrays="condition x1 x2", jvps=LINEAR)
defvjp("sort", vjp_sort, jvps=(lambda xp, t, x, *, axis=-1, descending=False, stable=True:
                               xp.take_along_axis(t, xp.argsort(
                                   x, axis=axis, descending=descending, stable=True), axis=axis),))

def _members(xp, x, ans):
    """``(E, counts)``: ``E[i, k]`` is 1 where element ``i`` of ``x`` equals value ``k`` of
    ``ans``, ``counts`` how many elements each value stands for (1 where none: NaNs)."""
    equal = xp.astype(xp.reshape(x, (-1, 1)) == xp.reshape(ans, (1, -1)), ans.dtype)
    counts = xp.sum(equal, axis=0)
    return equal, xp.where(counts == 0, xp.ones_like(counts), counts)


def vjp_unique_values(xp, g, x, ans):
    equal, counts = _members(xp, x, ans)
    return xp.reshape(equal @ (g / counts), tuple(x.shape))


defvjp("unique_values", vjp_unique_values, jvps=(
    lambda xp, t, x, ans: (lambda equal, counts: (xp.reshape(t, (-1,)) @ equal) / counts)(
        *_members(xp, x, ans)),))

nondifferentiable("argmax", "argmin", "argsort", "count_nonzero", "isin", "nonzero", "searchsorted",
                  "unique_all", "unique_counts", "unique_inverse")
