"""xarray DataArrays wrapping Variables: xarray's own labelled operations run on the Variable
(through ``__array_namespace__`` and NEP 13/18) and the result's ``.data`` is a Variable,
checked against central differences. ``torch_reference=False``: xarray does not keep raw torch
tensors (it converts them to NumPy). See ``harness.py`` for what one case checks."""

import numpy as np
import pytest

from .harness import Case, Refusal, params, run

xr = pytest.importorskip("xarray", reason="xarray is not installed (pip install -e '.[interop]')")

rng = np.random.default_rng(11)


def normal(*shape):
    return rng.standard_normal(shape)


def positive(*shape, low=0.5, high=2.5):
    return rng.uniform(low, high, shape)


def da(v, dims=("x", "y"), **kwargs):
    return xr.DataArray(v, dims=dims, **kwargs)


def without_opt_einsum(f):
    """``f`` with xarray calling ``xp.einsum`` itself: with opt_einsum installed (JAX brings it),
    xarray's einsum goes through opt_einsum's contractions instead."""
    def call(*args):
        with xr.set_options(use_opt_einsum=False):
            return f(*args)
    return call


def case(name, fn, inputs, refuse=None, **kwargs):
    return Case("xarray", name, fn, inputs, refuse=refuse or {}, torch_reference=False, **kwargs)


def torch_refuses(error, match, why):
    return {"torch": Refusal(error, match, why)}


# xarray's NaN-aware reductions (skipna, the default for floats) read NumPy's ``dtype.kind``,
# which torch dtypes do not have.
TORCH_NAN_REDUCTION = torch_refuses(
    AttributeError, r"'torch\.dtype' object has no attribute 'kind'",
    "xarray's NaN-aware (skipna) reductions read NumPy's dtype.kind, which a torch dtype lacks; "
    "pass skipna=False (mean, max, min), or use the numpy or dask backend.")
TORCH_FILL = torch_refuses(
    TypeError, r"dtype torch\.float64 must be one of an extension array dtype or numpy dtype",
    "xarray promotes the dtype for its NaN fill value with NumPy/pandas dtypes only; use the "
    "numpy or dask backend.")

X = normal(3, 4)

CASES = [
    case("Variable * DataArray (the DataArray's reflected operator, as for an ndarray)",
         lambda a: ((a * da(np.full((3, 4), 1.5))) + (a < da(np.zeros((3, 4))))).data,
         (X,)),
    case("DataArray * DataArray (broadcast by dims)",
         lambda a, b: (da(a) * da(b, dims=("y",)) + da(b, dims=("y",))).data,
         (X, normal(4))),
    case("DataArray.mean()", lambda a: da(a).mean().data, (X,), TORCH_NAN_REDUCTION),
    case("DataArray.mean('x')", lambda a: da(a).mean("x").data, (X,), TORCH_NAN_REDUCTION),
    case("DataArray.mean('x', skipna=False)", lambda a: da(a).mean("x", skipna=False).data, (X,)),
    case("DataArray.sum(dim='y')", lambda a: da(a).sum(dim="y").data, (X,)),
    case("DataArray.std(ddof=1)", lambda a: da(a).std(ddof=1).data, (X,)),
    case("DataArray.var('x')", lambda a: da(a).var("x").data, (X,), TORCH_NAN_REDUCTION),
    case("DataArray.max('y')", lambda a: da(a).max("y").data, (X,), TORCH_NAN_REDUCTION),
    case("DataArray.max('y', skipna=False)", lambda a: da(a).max("y", skipna=False).data, (X,)),
    case("DataArray.min()", lambda a: da(a).min().data, (X,), TORCH_NAN_REDUCTION),
    case("DataArray.cumsum('y')", lambda a: da(a).cumsum("y").data, (X,)),
    case("DataArray.transpose", lambda a: (da(a).transpose("y", "x") * da(a).isel(x=0)).data,
         (X,)),
    case("DataArray.isel", lambda a: da(a).isel(x=[2, 0], y=slice(1, 3)).data, (X,)),
    case("DataArray.sel (coords)",
         lambda a: da(a, coords={"x": [1.0, 2.5, 4.0], "y": [10, 20, 30, 40]})
         .sel(y=slice(15, 35), x=[4.0, 1.0]).data, (X,)),
    case("DataArray.where(cond).sum('y')",
         lambda a: (lambda d: d.where(d > 0).sum("y"))(da(a)).data, (X,), TORCH_FILL),
    case("DataArray.where(cond).mean('y')",
         lambda a: (lambda d: d.where(d > 0.1).mean("y"))(da(a)).data, (X,), TORCH_FILL),
    case("xr.dot", lambda a, b: xr.dot(da(a), da(b, dims=("y", "z")), dim="y").data,
         (X, normal(4, 2))),
    case("xr.dot (xp.einsum, use_opt_einsum=False)", without_opt_einsum(
        lambda a, b: xr.dot(da(a), da(b, dims=("y", "z")), dim="y").data), (X, normal(4, 2))),
    case("DataArray.rolling(y=2).mean()", lambda a: da(a).rolling(y=2, min_periods=1).mean().data,
         (X,), {**torch_refuses(
             AttributeError, r"'str' object has no attribute 'dtype'",
             "xarray's rolling fills with a NaN whose dtype it passes to result_type as a string, "
             "which array-api-compat's torch result_type rejects."), **{b: Refusal(
                 AttributeError, "has no 'lib'",
                 "xarray builds rolling windows with xp.lib.stride_tricks.sliding_window_view, "
                 "NumPy's strided view, which is outside the standard; use "
                 "DataArray.coarsen or shifted slices") for b in ("numpy", "dask")}}),
    case("DataArray.weighted(w).mean('y')",
         lambda a, w: da(a).weighted(da(w, dims=("y",))).mean("y").data,
         (X, positive(4)), TORCH_NAN_REDUCTION),
    case("DataArray.weighted(w).mean('y') (xp.einsum, use_opt_einsum=False)", without_opt_einsum(
        lambda a, w: da(a).weighted(da(w, dims=("y",))).mean("y").data),
         (X, positive(4)), TORCH_NAN_REDUCTION),
]


@pytest.mark.parametrize("case, backend", params(CASES))
def test_xarray(case, backend):
    run(case, backend)
