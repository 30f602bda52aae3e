"""Rules of the searching, sorting and set functions: only ``where`` and ``sort`` carry
gradients. ``sort`` sends each gradient to the element its (stable) order put there, as
PyTorch does for equal values."""

from . import defvjp, nondifferentiable
from .indexing import vjp_gather


def vjp_sort(xp, g, x, *, axis=-1, descending=False, stable=True):
    order = xp.argsort(x, axis=axis, descending=descending, stable=True)
    return vjp_gather(xp, g, tuple(x.shape), lambda a: xp.take_along_axis(a, order, axis=axis))


defvjp("where", None,
       lambda xp, g, condition: xp.where(condition, g, xp.zeros_like(g)),
       lambda xp, g, condition: xp.where(condition, xp.zeros_like(g), g),
       arrays="condition x1 x2",
       jvps=(None, lambda xp, t, condition: xp.where(condition, t, xp.zeros_like(t)),
             lambda xp, t, condition: xp.where(condition, xp.zeros_like(t), t)))
defvjp("sort", vjp_sort)

nondifferentiable("argmax", "argmin", "argsort", "count_nonzero", "nonzero", "searchsorted",
                  "unique_all", "unique_counts", "unique_inverse", "unique_values")
