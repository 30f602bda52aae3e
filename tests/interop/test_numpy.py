"""Plain NumPy code on Variables (NEP 13 ``__array_ufunc__``, NEP 18 ``__array_function__``),
and SciPy's special ufuncs reaching the differentiable ``xp.special``."""

import numpy as np
import pytest

import arraygrad as ag

from .harness import Case, Refusal, params, run

rng = np.random.default_rng(7)
A = rng.uniform(0.3, 2.0, (3, 4))
B = rng.uniform(0.3, 2.0, (4, 2))
C = rng.uniform(0.3, 2.0, (3, 2))
V = rng.uniform(0.3, 2.0, 5)
NP = dict(torch_reference=False)  # NumPy's functions do not run torch.autograd


def np_case(name, fn, inputs=(A,), **kwargs):
    return Case("numpy", name, fn, inputs, **{**NP, **kwargs})


CASES = [
    np_case("np.sin", np.sin),
    np_case("np.exp2", np.exp2),
    np_case("np.cbrt", np.cbrt),
    np_case("np.arctan2", lambda x: np.arctan2(x, x[::-1])),
    np_case("np.hypot", lambda x: np.hypot(x, 1.5)),
    np_case("ndarray + Variable", lambda x: C[:, :1] + x),
    np_case("ndarray @ Variable", lambda x: C.T @ x),
    np_case("np.matmul", lambda x: np.matmul(x, B)),
    np_case("np.dot", lambda x: np.dot(x, B)),
    np_case("np.dot of vectors and matrices",
            lambda x: np.dot(x[0], B) * np.dot(x, x[1])[1:] + np.dot(x[2], x[0])),
    np_case("np.dot of a 3-D array", lambda x: np.dot(np.stack([x, x * x]), B)),
    np_case("np.sum(axis=0)", lambda x: np.sum(x, axis=0)),
    np_case("np.mean", np.mean),
    np_case("np.std(ddof=1)", lambda x: np.std(x, axis=1, ddof=1)),
    np_case("np.var", np.var),
    np_case("np.prod(axis=1)", lambda x: np.prod(x, axis=1)),
    np_case("np.max(axis=1)", lambda x: np.max(x, axis=1)),
    np_case("np.add.reduce", lambda x: np.add.reduce(x, axis=1)),
    np_case("np.multiply.accumulate", lambda x: np.multiply.accumulate(x, axis=1)),
    np_case("np.cumsum", np.cumsum),
    np_case("np.maximum", lambda x: np.maximum(x, 1.0)),
    np_case("np.where", lambda x: np.where(x > 1.0, x, x * x)),
    np_case("np.clip", lambda x: np.clip(x, 0.5, 1.5)),
    np_case("np.concatenate", lambda x: np.concatenate([x, x ** 2], axis=1)),
    np_case("np.stack", lambda x: np.stack([x, np.sqrt(x)])),
    np_case("np.vstack / np.hstack", lambda x: np.hstack([np.vstack([x, x]), np.vstack([x, x])])),
    np_case("np.transpose / np.reshape", lambda x: np.reshape(np.transpose(x), (2, 6))),
    np_case("np.linalg.norm", np.linalg.norm),
    np_case("np.linalg.norm(axis=1)", lambda x: np.linalg.norm(x, axis=1)),
    np_case("np.linalg.det", lambda x: np.linalg.det(x @ B @ B.T[:, :3] + np.eye(3)),
            refuse={"dask": Refusal(AttributeError, "has no 'det'",
                                    "dask has no linalg.det; compute the matrix first")}),
    np_case("np.linalg.inv", lambda x: np.linalg.inv(x[:, :3] + 3 * np.eye(3))),
    np_case("np.trace", lambda x: np.trace(x[:, :3])),
    np_case("np.outer", lambda x: np.outer(x[0], x[1])),
    np_case("np.einsum", lambda x: np.einsum("ij,jk->ik", x, B)),
    np_case("np.einsum with an ellipsis", lambda x: np.einsum("...j,jk->...k", x, B)),
    np_case("np.average(weights=)", lambda x: np.average(x, axis=1, weights=[1.0, 2, 3, 4])),
    np_case("np.nanmean", lambda x: np.nanmean(x, axis=0)),
    np_case("np.sort", lambda x: np.sort(x, axis=1)),
    np_case("np.diff", lambda x: np.diff(x, axis=1)),
    np_case("np.diff(prepend=0.0, append=...)",
            lambda x: np.diff(x, axis=1, prepend=0.0, append=x[:, :1])),
    np_case("np.real / np.imag / np.angle of a real array",
            lambda x: np.real(x) * 2 + np.imag(x) + np.angle(-x)),
    np_case("np.roll", lambda x: np.roll(x, 1, axis=1)),
    np_case("np.pad", lambda x: np.pad(x, 1)),
    np_case("np.logaddexp", lambda x: np.logaddexp(x, x[::-1])),
    # NumPy's scalars and dtypes on every backend: the number and the backend's dtype of its name
    np_case("np.float64 base and exponent",
            lambda x: np.float64(1.5) ** x + x ** np.float64(2.5) * np.complex128(2.0).real),
    np_case("dtype=np.float64", lambda x: np.sum(x, axis=0, dtype=np.float64)
            + np.mean(np.sin(x, dtype=np.float64), axis=0)
            + np.sum(np.concatenate([x, x[::-1] ** 2], dtype=np.float64), axis=0)),
    np_case("scipy.special ufuncs (NEP 13)",
            lambda x: _ufuncs().erf(x) + _ufuncs().gammaln(x) * _ufuncs().xlogy(x, x[::-1]),
            requires=("scipy",)),
]


def _ufuncs():
    import scipy.special._ufuncs  # the raw ufuncs, whatever SCIPY_ARRAY_API says

    return scipy.special._ufuncs


@pytest.mark.parametrize("case, backend", params(CASES))
def test_numpy(case, backend):
    run(case, backend)


def test_a_variable_that_requires_grad_refuses_conversion_to_numpy():
    v = ag.Variable(A, requires_grad=True)
    for convert in (np.asarray, np.array, lambda x: x.numpy(), lambda x: np.asarray(x * 2)):
        with pytest.raises(ag.GradientError, match=r"detach\(\)"):
            convert(v)
    np.testing.assert_array_equal(np.asarray(v.detach()), A)  # said explicitly: allowed
    np.testing.assert_array_equal(np.asarray(ag.Variable(A)), A)  # needs no grad: its data


def test_unsupported_numpy_functions_and_options_raise_naming_them():
    v = ag.Variable(A, requires_grad=True)
    for call, name in ((lambda: np.convolve(v[0], v[1]), "convolve"), (lambda: np.sin(v, out=np.empty_like(A)),
                                                          "out="),
                       (lambda: np.add.outer(v, v), "outer"), (lambda: np.polyfit(v[0], v[1], 1),
                                                               "polyfit"),
                       (lambda: np.unique(v, return_counts=True), "unique.*return_counts")):
        with pytest.raises(TypeError, match=name):
            call()


def test_ufunc_out_a_variable_is_copy_on_write():
    v = ag.Variable(A, requires_grad=True)
    y = v * 1
    np.multiply(y, 3.0, out=(y,))
    ag.namespace("numpy").sum(y).backward()
    np.testing.assert_allclose(v.grad.data, np.full_like(A, 3.0))


def test_asarray_of_a_list_of_variables_stacks_them():
    xp = ag.namespace("numpy")
    x = ag.Variable(V, requires_grad=True)
    stacked = xp.asarray([[x[0], x[1] * 2], [x[2], 1.0]])
    assert stacked.shape == (2, 2) and stacked.grad_fn is not None
    xp.sum(stacked).backward()
    np.testing.assert_allclose(x.grad.data, [1.0, 2.0, 1.0, 0.0, 0.0])


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict", "torch", "dask"])
def test_the_namespace_behaves_like_a_module(backend):
    try:
        xp = ag.namespace(backend)
    except ag.BackendUnavailable as exc:
        pytest.skip(str(exc))
    assert hash(xp) == hash(ag.namespace(backend)) and xp is ag.namespace(backend)
    assert {xp: 1}[ag.Variable(xp.asarray([1.0]).data).__array_namespace__()] == 1
    assert xp.__name__ == f"arraygrad[{backend}]"
    import array_api_compat

    assert array_api_compat.array_namespace(xp.asarray([1.0])) is xp


def test_unique_values_shares_each_gradient_among_equal_elements():
    # As max shares its gradient among ties: three 3s share 3, two 1s share 1 (weights 1, 2, 3).
    xp = ag.namespace("numpy")
    x = ag.Variable(np.array([3.0, 1.0, 3.0, 2.0, 1.0, 3.0]), requires_grad=True)
    xp.sum(xp.unique_values(x) * xp.asarray([1.0, 2.0, 3.0])).backward()
    np.testing.assert_allclose(x.grad.data, [1.0, 0.5, 1.0, 2.0, 0.5, 1.0])


def test_boolean_numpy_functions_run_on_the_values():
    v = ag.Variable(A, requires_grad=True)
    np.testing.assert_array_equal(np.isclose(v, A[0, 0]), np.isclose(A, A[0, 0]))
    assert np.allclose(v, A) and np.array_equal(v, A)


@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
def test_nan_spreads_give_no_gradient_to_the_nans_and_none_of_them_to_the_others(name):
    """The NaNs are left out before the deviations are squared: their 0 * NaN must not reach
    the other entries through the mean (jax.grad(jnp.nanvar) gives the same)."""
    a = np.array([np.nan, 1.0, 3.0, np.nan, 2.5, -1.0])
    kept = ~np.isnan(a)
    deviation = np.where(kept, a - np.nanmean(a), 0.0)
    want = 2 * deviation / kept.sum()  # d nanvar / da
    if name == "nanstd":
        want = want / (2 * np.nanstd(a))
    v = ag.Variable(a, requires_grad=True)
    getattr(np, name)(v).backward()
    assert np.allclose(v.grad.data, want) and not np.isnan(v.grad.data).any()


@pytest.mark.parametrize("name, pick", [("nanmax", np.argmax), ("nanmin", np.argmin),
                                        ("nansum", None)])
def test_nan_reductions_leave_the_nans_out_of_value_and_gradient(name, pick):
    """np.nanmax, np.nanmin and np.nansum of a Variable with NaNs: NumPy's value, and the
    gradient 1 at the extremum (at every kept entry for nansum), 0 at the NaNs."""
    a = np.array([np.nan, 1.0, 3.0, np.nan, -2.5, 0.5])
    v = ag.Variable(a, requires_grad=True)
    y = getattr(np, name)(v)
    assert float(y.data) == getattr(np, name)(a)
    y.backward()
    if pick is None:
        want = np.where(np.isnan(a), 0.0, 1.0)
    else:
        want = np.zeros_like(a)
        want[pick(np.where(np.isnan(a), -np.inf if name == "nanmax" else np.inf, a))] = 1.0
    np.testing.assert_array_equal(v.grad.data, want)
