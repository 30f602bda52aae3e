"""arraygrad.scipy.stats: values equal SciPy's (edge values included), gradients equal central
differences in every differentiable argument, on NumPy, array-api-strict and torch (values on JAX
too)."""

import subprocess
import sys

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.scipy import stats
from arraygrad.testing import check_grads

scipy_stats = pytest.importorskip("scipy.stats")

INF, NAN = np.inf, np.nan
# x down a column (edge values included), parameters along rows: every call broadcasts.
X = np.array([-INF, -3.0, -0.5, 0.0, 0.3, 0.5, 1.0, 2.5, 40.0, INF, NAN])[:, None]
UNIT = np.array([-0.5, 0.0, 1e-3, 0.25, 0.5, 0.9, 1.0, 1.5, NAN])[:, None]
COUNTS = np.array([-1.0, 0.0, 1.0, 2.5, 3.0, 7.0, 30.0])[:, None]
LOC, SCALE = np.array([-0.4, 0.0, 0.7, 0.1]), np.array([0.6, 1.0, 2.5, -1.0])  # -1: NaN
POSITIVE = np.array([0.5, 1.0, 2.0, 7.5])
SHAPE = np.array([0.7, 1.0, 2.0, 5.5])

# (distribution, methods, values' arguments, gradients' arguments, differentiable positions,
#  the special functions they need)
CASES = [
    ("norm", "pdf logpdf", (X, LOC, SCALE), (0.3, -0.2, 1.7), (0, 1, 2), ""),
    ("norm", "cdf sf", (X, LOC, SCALE), (0.3, -0.2, 1.7), (0, 1, 2), "ndtr"),
    ("norm", "logcdf logsf", (X, LOC, SCALE), (-3.3, -0.2, 1.7), (0, 1, 2), "log_ndtr"),
    ("t", "pdf logpdf", (X, SHAPE, LOC, SCALE), (0.3, 3.5, -0.2, 1.7), (0, 1, 2, 3), "gammaln"),
    ("t", "cdf logcdf", (X, SHAPE, LOC, SCALE), (0.3, 3.5, -0.2, 1.7), (0, 2, 3), "stdtr"),
    ("chi2", "pdf logpdf", (X, SHAPE, LOC, SCALE), (2.3, 3.5, -0.2, 1.7), (0, 1, 2, 3),
     "gammaln xlogy"),
    ("chi2", "cdf", (X, SHAPE, LOC, SCALE), (2.3, 3.5, -0.2, 1.7), (0, 2, 3), "gammainc"),
    ("gamma", "pdf logpdf", (X, SHAPE, LOC, SCALE), (2.3, 3.5, -0.2, 1.7), (0, 1, 2, 3),
     "gammaln xlogy"),
    ("gamma", "cdf", (X, SHAPE, LOC, SCALE), (2.3, 3.5, -0.2, 1.7), (0, 2, 3), "gammainc"),
    ("beta", "pdf logpdf", (UNIT, SHAPE, POSITIVE[::-1].copy(), 0.0, 1.0), (0.3, 2.5, 1.5, -0.1, 1.7),
     (0, 1, 2, 3, 4), "gammaln xlogy xlog1py"),
    ("beta", "cdf", (UNIT, SHAPE, POSITIVE[::-1].copy(), 0.0, 1.0), (0.3, 2.5, 1.5, -0.1, 1.7),
     (0, 3, 4), "betainc"),
    ("expon", "pdf logpdf cdf", (X, LOC, SCALE), (2.3, -0.2, 1.7), (0, 1, 2), ""),
    ("logistic", "pdf logpdf cdf", (X, LOC, SCALE), (0.3, -0.2, 1.7), (0, 1, 2), ""),
    ("laplace", "pdf logpdf cdf", (X, LOC, SCALE), (0.3, -0.2, 1.7), (0, 1, 2), ""),
    ("cauchy", "pdf logpdf cdf", (X, LOC, SCALE), (0.3, -0.2, 1.7), (0, 1, 2), ""),
    ("uniform", "pdf logpdf cdf", (X, LOC, SCALE), (0.8, 0.1, 1.7), (0, 1, 2), ""),
]
BACKENDS = ["numpy", "array_api_strict", "torch"]


def _on(backend, value):
    if backend in ("torch", "jax"):
        pytest.importorskip(backend)
    return ag.get_backend(backend).raw.asarray(np.asarray(value, dtype=np.float64))


def _host(backend, result):
    return np.asarray(ag.get_backend(backend).to_numpy(result.detach().data))


def _lacks(backend, needs):
    special = getattr(ag.namespace(backend), "special", None)
    return [name for name in needs.split() if not hasattr(special, name)]


def _methods():
    return [pytest.param(name, method, values, point, wrt, needs, id=f"{name}.{method}")
            for name, methods, values, point, wrt, needs in CASES for method in methods.split()]


@pytest.mark.parametrize("backend", [*BACKENDS, "jax"])
@pytest.mark.parametrize("name, method, values, point, wrt, needs", _methods())
def test_values_equal_scipys(backend, name, method, values, point, wrt, needs):
    arrays = [_on(backend, v) for v in values]
    if _lacks(backend, needs):
        pytest.skip(f"{backend} lacks special.{_lacks(backend, needs)}")
    ours = _host(backend, getattr(getattr(stats, name), method)(*arrays))
    with np.errstate(all="ignore"):
        expected = getattr(getattr(scipy_stats, name), method)(*values)
    assert ours.shape == expected.shape
    # torch.special.ndtr underflows to 0 earlier than SciPy's (5e-56 at -15.7); JAX's betaln(1, 1)
    # is 1e-15, not 0
    np.testing.assert_allclose(ours, expected, rtol=1e-10,
                               atol={"torch": 1e-40, "jax": 1e-14}.get(backend, 1e-300))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, method, values, point, wrt, needs", _methods())
def test_gradients_equal_central_differences(backend, name, method, values, point, wrt, needs):
    if _lacks(backend, needs):
        pytest.skip(f"{backend} lacks special.{_lacks(backend, needs)}")
    function = getattr(getattr(stats, name), method)
    rng = np.random.default_rng(0)
    for i in wrt:  # each differentiable argument, on a small array beside constants
        args = [_on(backend, p + (0.05 * rng.random(3) if j == i else 0.0))
                for j, p in enumerate(point)]

        def f(v, i=i, args=args):
            return function(*args[:i], v, *args[i + 1:])

        check_grads(f, (args[i],), order=2 if backend == "numpy" else 1)


def test_poisson_values_and_gradient_in_mu():
    mu = np.array([0.0, 0.5, 3.0, 12.0])
    for method in ("pmf", "logpmf", "cdf"):
        ours = getattr(stats.poisson, method)(COUNTS, mu)
        with np.errstate(all="ignore"):
            expected = getattr(scipy_stats.poisson, method)(COUNTS, mu)
        np.testing.assert_allclose(ours.data, expected, rtol=1e-10, atol=1e-300)
        np.testing.assert_allclose(getattr(stats.poisson, method)(COUNTS, mu, loc=1).data,
                                   getattr(scipy_stats.poisson, method)(COUNTS, mu, loc=1),
                                   rtol=1e-10, atol=1e-300)
        check_grads(lambda m, method=method: getattr(stats.poisson, method)(
            np.array([0.0, 2.0, 5.0]), m), (np.array([0.7, 2.5, 4.0]),), order=2)


def test_poisson_refuses_a_gradient_in_k():
    k = ag.Variable(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.raises(ag.GradientError, match=r"poisson\.pmf: k is a count"):
        stats.poisson.pmf(k, 2.0)


def test_norm_ppf():
    q = np.array([-0.1, 0.0, 1e-300, 0.025, 0.5, 0.9, 1.0, 1.1])[:, None]
    np.testing.assert_allclose(stats.norm.ppf(q, LOC, SCALE).data,
                               scipy_stats.norm.ppf(q, LOC, SCALE), rtol=1e-10)
    check_grads(lambda q: stats.norm.ppf(q, 0.5, 2.0), (np.array([0.1, 0.5, 0.8]),), order=2)
    check_grads(lambda s: stats.norm.ppf(0.3, -1.0, s), (np.array([0.5, 2.0]),), order=2)


def test_keyword_arguments_and_python_numbers():
    assert stats.norm.pdf(1.0).data == pytest.approx(scipy_stats.norm.pdf(1.0), rel=1e-14)
    assert stats.gamma.cdf(2.0, a=3.0, scale=0.5).data == pytest.approx(
        scipy_stats.gamma.cdf(2.0, a=3.0, scale=0.5), rel=1e-12)
    assert stats.t.logpdf(0.4, df=3, loc=1).dtype == ag.namespace("numpy").float64
    with pytest.raises(TypeError, match=r"stats\.gamma\.pdf: missing argument\(s\) a"):
        stats.gamma.pdf(1.0)
    with pytest.raises(TypeError, match=r"stats\.norm\.cdf takes \(x, loc, scale\)"):
        stats.norm.cdf(1.0, shape=2.0)


def test_float32_stays_float32():
    x = ag.Variable(np.array([0.5, 1.5], dtype=np.float32), requires_grad=True)
    assert stats.gamma.logpdf(x, 2.0).dtype == np.float32


@pytest.mark.parametrize("method, argument", [("t.cdf", "df"), ("gamma.cdf", "a"),
                                              ("beta.cdf", "b")])
def test_a_missing_derivative_is_an_error_never_zero(method, argument):
    name, method = method.split(".")
    args = {"t": (0.3, 3.0), "gamma": (0.3, 3.0), "beta": (0.3, 2.0, 3.0)}[name]
    position = {"df": 1, "a": 1, "b": 2}[argument]
    with pytest.raises(ag.NoRuleError, match=rf"no gradient with respect to {argument}"):
        ag.grad(lambda p: getattr(getattr(stats, name), method)(
            *args[:position], p, *args[position + 1:]))(np.float64(args[position]))


def test_a_backend_without_special_functions_names_what_is_missing():
    xp = ag.namespace("array_api_strict")
    with pytest.raises(ag.BackendError, match=r"stats\.norm\.cdf needs special\.ndtr.*"
                                              r"array_api_strict"):
        stats.norm.cdf(xp.asarray([0.5]))


# -- dirichlet and multivariate_normal ------------------------------------------------------------

ALPHA = np.array([0.8, 1.5, 3.0])


def test_dirichlet_values():
    x = np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]).T  # components along the first axis
    for method in ("pdf", "logpdf"):
        np.testing.assert_allclose(getattr(stats.dirichlet, method)(x, ALPHA).data,
                                   getattr(scipy_stats.dirichlet, method)(x, ALPHA), rtol=1e-10)
        np.testing.assert_allclose(getattr(stats.dirichlet, method)(x[:2], ALPHA).data,
                                   getattr(scipy_stats.dirichlet, method)(x[:2], ALPHA),
                                   rtol=1e-10)
    # off the simplex: -inf, where SciPy raises
    assert stats.dirichlet.logpdf(np.array([0.5, 0.6, -0.1]), ALPHA).data == -INF
    assert stats.dirichlet.pdf(np.array([0.5, 0.6, 0.2]), ALPHA).data == 0
    with pytest.raises(ValueError, match=r"stats\.dirichlet\.logpdf: alpha must have shape"):
        stats.dirichlet.logpdf(np.ones(4) / 4, ALPHA)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_dirichlet_gradients(backend):
    x, alpha = _on(backend, [0.2, 0.5, 0.3]), _on(backend, ALPHA)
    for method in ("pdf", "logpdf"):
        function = getattr(stats.dirichlet, method)
        check_grads(lambda a: function(x, a), (alpha,), order=1)
        check_grads(lambda v: function(v / ag.namespace(backend).sum(v), alpha), (x,), order=1)


COV = np.array([[2.0, 0.3, -0.2], [0.3, 1.0, 0.1], [-0.2, 0.1, 0.5]])
MEAN = np.array([0.1, -0.4, 0.3])


@pytest.mark.parametrize("x", [np.array([0.5, 0.2, -1.0]), np.arange(12.0).reshape(4, 3) / 7,
                               np.ones((1, 3)), np.ones((2, 1, 3))], ids=["one", "4", "1", "2x1"])
def test_multivariate_normal_values(x):
    for method in ("pdf", "logpdf"):
        ours = getattr(stats.multivariate_normal, method)(x, MEAN, COV).data
        expected = getattr(scipy_stats.multivariate_normal, method)(x, MEAN, COV)
        assert np.shape(ours) == np.shape(expected)
        np.testing.assert_allclose(ours, expected, rtol=1e-10)
    for cov in (2.5, np.diag(COV)):  # SciPy's shorthands: a multiple of the identity, a diagonal
        np.testing.assert_allclose(stats.multivariate_normal.logpdf(x, MEAN, cov).data,
                                   scipy_stats.multivariate_normal.logpdf(x, MEAN, cov),
                                   rtol=1e-10)
    np.testing.assert_allclose(stats.multivariate_normal.entropy(MEAN, COV).data,
                               scipy_stats.multivariate_normal.entropy(MEAN, COV), rtol=1e-12)


def test_multivariate_normal_in_one_dimension_reads_a_vector_as_points():
    x = np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(stats.multivariate_normal.logpdf(x, 0.5, 2.0).data,
                               scipy_stats.multivariate_normal.logpdf(x, 0.5, 2.0), rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_multivariate_normal_gradients(backend):
    x, mean, cov = (_on(backend, a) for a in (np.arange(6.0).reshape(2, 3) / 5, MEAN, COV))

    def symmetric(c):  # perturbations of cov stay symmetric
        return (c + ag.namespace(backend).matrix_transpose(c)) / 2

    for method in ("pdf", "logpdf"):
        function = getattr(stats.multivariate_normal, method)
        check_grads(lambda x, m, c: function(x, m, symmetric(c)), (x, mean, cov), order=1)
    check_grads(lambda c: stats.multivariate_normal.entropy(mean, symmetric(c)), (cov,), order=1)


SINGULAR = np.diag([1.0, 2.0, 0.0])  # rank 2: the density lives on the plane x[2] = mean[2]


@pytest.mark.parametrize("cov", [COV, SINGULAR], ids=["definite", "singular"])
def test_multivariate_normal_allow_singular(cov):
    x = np.array([[0.5, 0.2, 0.3], [0.1, -0.3, 0.3], [0.1, -0.3, 0.9]])  # the last: off plane
    mean = np.array([0.0, 0.1, 0.3])
    for method in ("pdf", "logpdf"):
        ours = getattr(stats.multivariate_normal, method)(x, mean, cov, allow_singular=True)
        np.testing.assert_allclose(ours.data, getattr(scipy_stats.multivariate_normal, method)(
            x, mean, cov, allow_singular=True), rtol=1e-10)
        xp = ag.namespace("numpy")

        def on_plane(x, m, method=method):  # moved within the support, as HIPS's test does
            third = xp.ones((2, 1), dtype=xp.float64) * 0.3
            return getattr(stats.multivariate_normal, method)(
                xp.concat([x, third], axis=1), xp.concat([m, third[0]]), cov,
                allow_singular=True)

        check_grads(on_plane, (x[:2, :2], mean[:2]), order=1)


def test_multivariate_normal_without_allow_singular_refuses_a_singular_cov():
    with pytest.raises(Exception):
        stats.multivariate_normal.logpdf(np.zeros(3), cov=SINGULAR)
    with pytest.raises(ValueError, match=r"multivariate_normal\.pdf: cov must be symmetric "
                                         "positive semidefinite"):
        stats.multivariate_normal.pdf(np.zeros(2), cov=np.diag([1.0, -1.0]), allow_singular=True)


def test_importing_it_imports_no_scipy():
    code = ("import sys, arraygrad.scipy.stats as s; s.norm.logpdf(0.5); "
            "assert 'scipy' not in sys.modules, sorted(m for m in sys.modules if 'scipy' in m)")
    subprocess.run([sys.executable, "-c", code], check=True, env=None)


@pytest.mark.parametrize("name, method, values, point, wrt, needs", [
    case for case in _methods() if case.values[0] in ("chi2", "gamma", "beta", "expon", "uniform")])
def test_gradients_outside_the_support_are_zero_not_nan(name, method, values, point, wrt, needs):
    """The value outside the support is a constant: its gradient is 0 in every argument (the
    formula is evaluated at a point inside, so no NaN or inf leaks into the gradient)."""
    args = [np.asarray(p, dtype=np.float64) for p in point]
    args[0] = np.asarray(-5.0)  # below the support
    grads = ag.grad(lambda *a: getattr(getattr(stats, name), method)(*a),
                    argnums=tuple(i for i in wrt))(*args)
    assert all(float(g) == 0 for g in grads), grads
