"""Rules of the searching, sorting and set functions: only ``where``, ``sort`` and the values
the ``unique_*`` functions return carry gradients. ``sort`` sends each gradient to the element its (stable)
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


def jvp_unique_values(xp, t, x, ans):
    equal, counts = _members(xp, x, ans)
    return (xp.reshape(t, (-1,)) @ equal) / counts


defvjp("unique_values", vjp_unique_values, jvps=(jvp_unique_values,))
# The other unique functions return the same values first (their indices and counts are
# integers, with no gradient): the values' gradient is unique_values'.
for _name in ("unique_all", "unique_counts", "unique_inverse"):
    defvjp(_name, lambda xp, g, x, ans: None if g[0] is None else vjp_unique_values(
        xp, g[0], x, ans[0]), outputs=None, symbolic_zeros=True,
        jvps=(lambda xp, t, x, ans: (jvp_unique_values(xp, t, x, ans[0]),) + (None,) * (
            len(ans) - 1),))

nondifferentiable("argmax", "argmin", "argsort", "count_nonzero", "isin", "nonzero", "searchsorted")
