"""array-api-extra's differentiable functions, called on Variables of every backend."""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before scipy/sklearn import

import numpy as np
import pytest

import arraygrad as ag

from .harness import Case, Refusal, params, run

xpx = pytest.importorskip("array_api_extra",
                          reason="array-api-extra is not installed (pip install -e '.[interop]')")
compat = pytest.importorskip("array_api_compat")

# expand_dims and broadcast_shapes are deprecated in favour of the 2025.12 standard, still in use
pytestmark = pytest.mark.filterwarnings(
    r"ignore:`xpx\.(expand_dims|broadcast_shapes)` is deprecated:DeprecationWarning")

rng = np.random.default_rng(0)


def ns(x):
    """The namespace of ``x``: arraygrad's for a Variable, the library's for a raw array."""
    return compat.array_namespace(x)


def _vec(n):
    """n asymmetric, well separated float64 values (no ties, no zeros)."""
    return rng.permutation(np.linspace(-1.7, 2.3, n)) + 0.01 * rng.standard_normal(n)


def _sorted(n):
    return np.sort(_vec(n))


def _at_set(x, v):
    return xpx.at(x)[1:3].set(v, copy=True)


def _at_add(x, v):
    return xpx.at(x)[::2].add(v, copy=True)


def _at_multiply(x, v):
    return xpx.at(x)[0, 1:].multiply(v, copy=True)


def _at_divide(x, v):
    return xpx.at(x)[-1].divide(v, copy=True)


def _at_power(x):
    return xpx.at(x)[1:].power(3.0, copy=True)


def _at_min(x, v):
    return xpx.at(x)[:3].min(v, copy=True)


def _at_max(x, v):
    return xpx.at(x, (slice(1, None),)).max(v, copy=True)


def _at_mask(x, v):
    return xpx.at(x)[x > 0.5].set(v, copy=True)


def _at_default_copy(x, v):
    # copy=None on a leaf that requires grad: array-api-extra writes in place on a writeable
    # array, which must fail with an error that names the fix.
    return xpx.at(x)[1].set(v)


def _apply_where(x):
    xp = ns(x)
    return xpx.apply_where(x > 0, x, lambda a: xp.sqrt(a) * 2.0, lambda a: xp.exp(a) - 1.0)


def _apply_where_fill(x, y):
    xp = ns(x)
    return xpx.apply_where(x > 0, (x, y), lambda a, b: xp.log(a) * b, fill_value=0.5)


def _isclose_mask(x, y):
    xp = ns(x)
    return xp.where(xpx.isclose(x, y, atol=0.2), x * y, x - y)


def _blocks(y, k):
    # partition fixes which elements lie before, at and after k, not their order within a block
    xp = ns(y)
    return xp.stack([xp.sum(y[:k]), y[k], xp.sum(y[k + 1:] ** 2)])


def _partition(x):
    return _blocks(xpx.partition(x, 2), 2)


def _argpartition_take(x):
    xp = ns(x)
    return _blocks(xp.take(x, xpx.argpartition(x, 2)), 2)


def _searchsorted_take(edges, v, table):
    xp = ns(table)
    return xp.take(table, xpx.searchsorted(edges, v))


def _one_hot_matmul(idx, w):
    return xpx.one_hot(idx, 4, dtype=w.dtype) @ w


def _nunique_scale(x):
    xp = ns(x)
    return x * xp.astype(xpx.nunique(x), x.dtype)


def _lazy_apply(x):
    return xpx.lazy_apply(lambda a: a * a + 1.0, x, shape=x.shape, dtype=x.dtype)


def _broadcast_shapes(x, y):
    xp = ns(x)
    shape = xpx.broadcast_shapes(x.shape, y.shape)
    return xp.broadcast_to(x, shape) * xp.broadcast_to(y, shape)


def _default_dtype(x):
    xp = ns(x)
    return x * xp.ones(x.shape, dtype=xpx.default_dtype(xp))


def _with_nans(shape, where):
    a = rng.standard_normal(shape)
    a[where] = np.nan
    return a


_NAN_VEC = _with_nans((2, 4), (np.array([0, 1]), np.array([1, 3])))

# Without boolean indexing (dask), apply_where evaluates both branches everywhere and selects
# with xp.where: a branch that is NaN where it is not selected (sqrt, log of a negative) gives
# a NaN gradient there, as jax.grad through jnp.where does.
WHERE_NAN = Refusal(None, "nan", "on dask, apply_where computes both branches everywhere and "
                    "selects with where(); a branch that is NaN where unselected makes the "
                    "gradient NaN there (as jax.grad through jnp.where). Make each branch finite "
                    "everywhere, e.g. sqrt(where(x > 0, x, 1))")

UNKNOWN_SHAPE = Refusal(ValueError, r"\(nan,\)",
                        "unique_values on dask has a data-dependent, unknown size, which no "
                        "gradient can be fitted to; call .compute_chunk_sizes() on the dask "
                        "array first, or compute the set on NumPy")

CASES = [
    Case("array-api-extra", "atleast_nd", lambda x: xpx.atleast_nd(x, ndim=3), (_vec(4),)),
    Case("array-api-extra", "cov", lambda x: xpx.cov(x), (rng.standard_normal((3, 4)),)),
    Case("array-api-extra", "cov(axis=0)", lambda x: xpx.cov(x, axis=0, correction=0),
         (rng.standard_normal((4, 3)),)),
    Case("array-api-extra", "cov(aweights)", lambda x, w: xpx.cov(x, aweights=w),
         (rng.standard_normal((2, 4)), rng.uniform(0.5, 2.0, 4))),
    Case("array-api-extra", "create_diagonal", lambda x: xpx.create_diagonal(x, offset=1),
         (_vec(3),)),
    Case("array-api-extra", "create_diagonal(batched)", lambda x: xpx.create_diagonal(x),
         (rng.standard_normal((2, 3)),)),
    Case("array-api-extra", "expand_dims", lambda x: xpx.expand_dims(x, axis=(0, -1)),
         (rng.standard_normal((2, 3)),)),
    Case("array-api-extra", "kron", lambda a, b: xpx.kron(a, b),
         (rng.standard_normal((2, 2)), rng.standard_normal((3, 2)))),
    Case("array-api-extra", "pad", lambda x: xpx.pad(x, ((1, 0), (0, 2)), constant_values=0.5),
         (rng.standard_normal((2, 3)),)),
    Case("array-api-extra", "pad(int)", lambda x: xpx.pad(x, 2), (_vec(4),)),
    Case("array-api-extra", "sinc", lambda x: xpx.sinc(x), (_vec(6),)),
    Case("array-api-extra", "deg2rad", lambda x: xpx.deg2rad(x), (_vec(4) * 90,)),
    Case("array-api-extra", "rad2deg", lambda x: xpx.rad2deg(x), (_vec(4),)),
    Case("array-api-extra", "nan_to_num", lambda x: xpx.nan_to_num(x, fill_value=3.0),
         (_NAN_VEC,)),
    Case("array-api-extra", "nansum", lambda x: xpx.nansum(x, axis=1), (_NAN_VEC,)),
    Case("array-api-extra", "nanmean", lambda x: xpx.nanmean(x, axis=1), (_NAN_VEC,)),
    Case("array-api-extra", "nanmax", lambda x: xpx.nanmax(x, axis=1), (_NAN_VEC,)),
    Case("array-api-extra", "nanmin", lambda x: xpx.nanmin(x), (_NAN_VEC,)),
    # torch.autograd itself fails on array-api-extra's torch path (a mask it saved is written)
    Case("array-api-extra", "partition", _partition, (_vec(6),), torch_reference=False),
    Case("array-api-extra", "argpartition (as index)", _argpartition_take, (_vec(6),)),
    Case("array-api-extra", "searchsorted (as index)", _searchsorted_take,
         (_sorted(4), np.array([-1.0, 0.3, 2.0]), _vec(5))),
    Case("array-api-extra", "isclose (as mask)", _isclose_mask,
         (np.array([0.1, 0.5, -0.7, 1.3]), np.array([0.15, -0.5, -0.65, 2.0]))),
    Case("array-api-extra", "one_hot (matmul)", _one_hot_matmul,
         (np.array([2, 0, 3]), rng.standard_normal((4, 2)))),
    Case("array-api-extra", "nunique (as scale)", _nunique_scale, (_vec(5),)),
    Case("array-api-extra", "broadcast_shapes", _broadcast_shapes,
         (rng.standard_normal((2, 1)), rng.standard_normal((1, 3)))),
    Case("array-api-extra", "default_dtype", _default_dtype, (_vec(3),)),
    # The set functions compare floats for equality, so central differences cannot cross them:
    # integer sets used as indices, and one float union of disjoint values.
    Case("array-api-extra", "setdiff1d (ints, as index)",
         lambda i, j, w: ns(w).take(w, xpx.setdiff1d(i, j)),
         (np.array([4, 1, 3, 1, 0]), np.array([3, 2]), _vec(5)),
         refuse={"dask": Refusal(TypeError, "Unsupported lazy shape",
                                 "array-api-extra's setdiff1d needs the eager shape of "
                                 "unique_values, which dask does not know; compute the "
                                 "indices first")}),
    Case("array-api-extra", "union1d (ints, as index)",
         lambda i, j, w: ns(w).take(w, xpx.union1d(i, j)),
         (np.array([4, 1, 1]), np.array([3, 1]), _vec(5)), refuse={"dask": UNKNOWN_SHAPE}),
    # torch.unique has no derivative: no torch reference.
    Case("array-api-extra", "union1d (disjoint floats)", lambda a, b: xpx.union1d(a, b),
         (np.array([0.5, -1.25, 2.0]), np.array([3.5, 0.75])), torch_reference=False,
         refuse={"dask": UNKNOWN_SHAPE}),
    Case("array-api-extra", "apply_where", _apply_where, (_vec(6),),
         refuse={"dask": WHERE_NAN}),
    Case("array-api-extra", "apply_where(fill_value)", _apply_where_fill,
         (_vec(5), _vec(5)), refuse={"dask": WHERE_NAN}),
    Case("array-api-extra", "lazy_apply", _lazy_apply, (_vec(4),)),
    Case("array-api-extra", "at[].set(copy=True)", _at_set, (_vec(5), _vec(2))),
    Case("array-api-extra", "at[].add(copy=True)", _at_add, (_vec(5), _vec(3))),
    Case("array-api-extra", "at[].multiply(copy=True)", _at_multiply,
         (rng.standard_normal((2, 3)), rng.standard_normal(2))),
    Case("array-api-extra", "at[].divide(copy=True)", _at_divide, (_vec(4), np.array(1.7))),
    Case("array-api-extra", "at[].power(copy=True)", _at_power, (_vec(4),)),
    # torch.autograd fails on array-api-extra's own torch path for min/max (in place on a view)
    Case("array-api-extra", "at[].min(copy=True)", _at_min, (_vec(5), _vec(3)),
         torch_reference=False),
    Case("array-api-extra", "at[].max(copy=True)", _at_max, (_vec(5), _vec(4)),
         torch_reference=False),
    Case("array-api-extra", "at[mask].set(copy=True)", _at_mask, (_vec(6), np.array(0.25))),
    Case("array-api-extra", "at[].set (copy=None, leaf)", _at_default_copy,
         (_vec(4), np.array(0.3)),
         refuse={"*": Refusal(ag.InplaceError, r"copy=True",
                              "array-api-extra's at() writes in place on a writeable array by "
                              "default, and a leaf that requires grad cannot be written in "
                              "place: pass copy=True")}),
]


@pytest.mark.parametrize("case, backend", params(CASES))
def test_array_api_extra(case, backend):
    run(case, backend)
