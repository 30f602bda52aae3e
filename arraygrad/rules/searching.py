"""Rules of the searching, sorting and set functions: only ``where`` and ``sort`` carry
gradients. ``sort`` sends each gradient to the element its (stable) order put there, as
PyTorch does for equal values."""

from . import LINEAR, defvjp, nondifferentiable
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

nondifferentiable("argmax", "argmin", "argsort", "count_nonzero", "isin", "nonzero", "searchsorted",
                  "unique_all", "unique_counts", "unique_inverse", "unique_values")
