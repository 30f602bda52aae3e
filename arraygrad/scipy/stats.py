"""Distribution functions of ``scipy.stats`` (``norm.pdf``, ``gamma.cdf``...), composed from the
differentiable namespace, so that they record and differentiate on every backend, as
``jax.scipy.stats`` and HIPS ``autograd.scipy.stats`` do. SciPy's signatures, defaults and
values: outside the support a density is 0 (its logarithm ``-inf``), a cumulative function 0 or
1; an invalid parameter (``scale <= 0``, a shape parameter out of range) or a NaN gives NaN.

Arguments are Variables, backend arrays or Python numbers, promoted to one floating dtype (the
backend's default floating dtype where none is floating). Functions that need a special
function (``ndtr``, ``gammaln``, ``gammainc``...) need the backend's ``xp.special``. A gradient
the special functions do not have (``t.cdf``'s ``df``: ``stdtr``'s; ``gamma.cdf``'s ``a``;
``beta.cdf``'s ``a`` and ``b``) is refused at backward with a NoRuleError, never zero.
See docs/scipy-stats.md.
"""

from __future__ import annotations

import math
import types

from .._plugins import get_backend, registry
from .._variable import Variable
from ..errors import BackendError, GradientError

__all__ = ["norm", "t", "chi2", "gamma", "beta", "poisson", "expon", "logistic", "laplace",
           "cauchy", "uniform", "dirichlet", "multivariate_normal"]

_INF = math.inf
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _namespace_of(args):
    """The differentiable namespace of the first Variable, else of the first backend array,
    else NumPy's (Python numbers and lists only, as SciPy takes them)."""
    for arg in args:
        if isinstance(arg, Variable):
            return arg.__array_namespace__()
    for arg in args:
        backend = registry.of(arg)
        if backend is not None:
            return backend.ns
    return get_backend("numpy").ns


def _floats(xp, *args):
    """``args`` as arrays of one floating dtype: the promoted floating dtype of the arrays among
    them, else the backend's default (JAX's ``promote_args_inexact``)."""
    arrays = [xp.asarray(a) if not isinstance(a, (int, float)) else a for a in args]
    floating = [a.dtype for a in arrays if not isinstance(a, (int, float))
                and xp.isdtype(a.dtype, "real floating")]
    dtype = (xp.result_type(*floating) if floating
             else xp.__array_namespace_info__().default_dtypes()["real floating"])
    return [xp.asarray(a, dtype=dtype) for a in arrays]


class _Special:
    """``xp.special``'s functions, or an error naming the stats function that needs one."""

    def __init__(self, xp, where):
        self.xp, self.where = xp, where

    def __getattr__(self, name):
        try:
            return getattr(self.xp.special, name)
        except AttributeError:
            raise BackendError(
                f"stats.{self.where} needs special.{name}, which backend "
                f"{self.xp._backend.name!r} does not provide (its plugin declares no such "
                "special function)") from None

    def betaln(self, a, b):  # torch.special has no betaln: the same from gammaln
        found = getattr(self.xp.special, "betaln", None)
        if found is not None:
            return found(a, b)
        return self.gammaln(a) + self.gammaln(b) - self.gammaln(a + b)


def _nan_unless(xp, ok, value):
    return xp.where(ok, value, xp.asarray(math.nan, dtype=value.dtype))


def _fill(xp, where, value, like):
    return xp.where(where, xp.asarray(value, dtype=like.dtype), like)


# Cumulative functions' values below and above the support (SciPy's), by method.
_OUTSIDE = {"cdf": (0.0, 1.0), "logcdf": (-_INF, 0.0), "sf": (1.0, 0.0), "logsf": (0.0, -_INF)}


def _continuous(name, logpdf, shapes="", support=(-_INF, _INF), valid=None, **cumulative):
    """The namespace of a location-scale family: ``pdf``, ``logpdf`` and ``cumulative``'s methods
    (``cdf=f``...), each ``(x, *shapes, loc=0, scale=1)``. ``logpdf(xp, sp, z, *shapes)`` and
    each ``f`` are the standardised functions on the support, ``sp`` the special functions;
    ``valid(*shapes)`` says where the shape parameters are in range."""
    shapes = shapes.split()
    lower, upper = support
    inner = 1.0 if upper == _INF else 0.5 * (lower + upper)  # inside: the formula's point outside

    def standardised(method, args, kwargs):
        where = f"{name}.{method}"
        xp = _namespace_of(args := _positional(where, args, kwargs, shapes))
        x, *params, loc, scale = _floats(xp, *args)
        positive = scale > 0
        scale = xp.where(positive, scale, xp.ones_like(scale))  # NaN there (ok), no log warning
        z = (x - loc) / scale
        ok = positive & ~xp.isnan(z)
        if valid is not None:
            ok = ok & valid(*params)
        return xp, _Special(xp, where), z, params, scale, ok

    def density(log):
        def function(x, *args, **kwargs):
            xp, sp, z, params, scale, ok = standardised(
                "logpdf" if log else "pdf", (x, *args), kwargs)
            bounded = lower != -_INF or upper != _INF
            inside = (z >= lower) & (z <= upper) if bounded else None
            safe = xp.where(inside, z, xp.asarray(inner, dtype=z.dtype)) if bounded else z
            value = logpdf(xp, sp, safe, *params) - xp.log(scale)
            value = value if log else xp.exp(value)
            if bounded:
                value = _fill(xp, ~inside, -_INF if log else 0.0, value)
            return _nan_unless(xp, ok, value)
        return function

    def cumulative_function(method, f):
        below, above = _OUTSIDE[method]

        def function(x, *args, **kwargs):
            xp, sp, z, params, scale, ok = standardised(method, (x, *args), kwargs)
            if lower == -_INF and upper == _INF:
                return _nan_unless(xp, ok, f(xp, sp, z, *params))
            inside = (z > lower) & (z < upper)
            safe = xp.where(inside, z, xp.asarray(inner, dtype=z.dtype))
            value = _fill(xp, z >= upper, above, _fill(
                xp, ~inside, below, f(xp, sp, safe, *params)))
            return _nan_unless(xp, ok, value)
        return function

    methods = {"pdf": density(False), "logpdf": density(True)}
    methods.update((method, cumulative_function(method, f)) for method, f in cumulative.items())
    signature = ", ".join(["x", *shapes, "loc=0", "scale=1"])
    for method, function in methods.items():
        function.__name__, function.__qualname__ = method, f"{name}.{method}"
        function.__doc__ = f"scipy.stats.{name}.{method}({signature}), differentiable."
    return types.SimpleNamespace(**methods)


def _positional(where, args, kwargs, shapes):
    """``(x, *shapes, loc, scale)`` from SciPy's arguments, positional or by keyword."""
    names = ["x", *shapes, "loc", "scale"]
    unknown = set(kwargs) - set(names[len(args):])
    if len(args) > len(names) or unknown:
        raise TypeError(f"stats.{where} takes ({', '.join(names)}), got {len(args)} "
                        f"positional argument(s) and {sorted(kwargs)} by keyword")
    values = {"loc": 0, "scale": 1, **dict(zip(names, args)), **kwargs}
    missing = [n for n in names if n not in values]
    if missing:
        raise TypeError(f"stats.{where}: missing argument(s) {', '.join(missing)}")
    return tuple(values[n] for n in names)


def _laplace_cdf(xp, sp, z):
    half_tail = 0.5 * xp.exp(-xp.abs(z))  # never overflows, in either branch
    return xp.where(z > 0, 1 - half_tail, half_tail)


def _expit(xp, z):  # from the standard alone (array-api-strict has no special functions)
    e = xp.exp(-xp.abs(z))
    return xp.where(z >= 0, 1 / (1 + e), e / (1 + e))


def _t_logpdf(xp, sp, z, df):
    return (sp.gammaln(0.5 * (df + 1)) - sp.gammaln(0.5 * df) - 0.5 * (xp.log(df) + math.log(
        math.pi)) - (df + 1) / 2 * xp.log1p(z * z / df))


def _positive(*params):
    ok = params[0] > 0
    for p in params[1:]:
        ok = ok & (p > 0)
    return ok


norm = _continuous(
    "norm", lambda xp, sp, z: -(z * z) / 2 - _LOG_SQRT_2PI,
    cdf=lambda xp, sp, z: sp.ndtr(z), logcdf=lambda xp, sp, z: sp.log_ndtr(z),
    sf=lambda xp, sp, z: sp.ndtr(-z), logsf=lambda xp, sp, z: sp.log_ndtr(-z))
t = _continuous(
    "t", _t_logpdf, "df", valid=_positive,
    cdf=lambda xp, sp, z, df: sp.stdtr(df, z),
    logcdf=lambda xp, sp, z, df: xp.log(sp.stdtr(df, z)))
chi2 = _continuous(
    "chi2", lambda xp, sp, z, df: (sp.xlogy(df / 2 - 1, z) - z / 2 - sp.gammaln(df / 2)
                                   - math.log(2) * df / 2),
    "df", support=(0, _INF), valid=_positive,
    cdf=lambda xp, sp, z, df: sp.gammainc(df / 2, z / 2))
gamma = _continuous(
    "gamma", lambda xp, sp, z, a: sp.xlogy(a - 1, z) - z - sp.gammaln(a),
    "a", support=(0, _INF), valid=_positive, cdf=lambda xp, sp, z, a: sp.gammainc(a, z))
beta = _continuous(
    "beta", lambda xp, sp, z, a, b: (sp.xlog1py(b - 1, -z) + sp.xlogy(a - 1, z)
                                     - sp.betaln(a, b)),
    "a b", support=(0, 1), valid=_positive,
    cdf=lambda xp, sp, z, a, b: sp.betainc(a, b, z))
expon = _continuous("expon", lambda xp, sp, z: -z, support=(0, _INF),
                    cdf=lambda xp, sp, z: -xp.expm1(-z))
logistic = _continuous(
    "logistic", lambda xp, sp, z: -xp.abs(z) - 2 * xp.log1p(xp.exp(-xp.abs(z))),
    cdf=lambda xp, sp, z: _expit(xp, z))
laplace = _continuous("laplace", lambda xp, sp, z: math.log(0.5) - xp.abs(z), cdf=_laplace_cdf)
cauchy = _continuous("cauchy", lambda xp, sp, z: -math.log(math.pi) - xp.log1p(z * z),
                     cdf=lambda xp, sp, z: 0.5 + xp.atan(z) / math.pi)
uniform = _continuous("uniform", lambda xp, sp, z: xp.zeros_like(z), support=(0, 1),
                      cdf=lambda xp, sp, z: z)


def _norm_ppf(q, loc=0, scale=1):
    """scipy.stats.norm.ppf(q, loc=0, scale=1), differentiable."""
    xp = _namespace_of((q, loc, scale))
    q, loc, scale = _floats(xp, q, loc, scale)
    return _nan_unless(xp, scale > 0, _Special(xp, "norm.ppf").ndtri(q) * scale + loc)


norm.ppf = _norm_ppf


# -- poisson: k is a count, never differentiated -------------------------------------------------

def _poisson(method, k, mu, loc):
    xp = _namespace_of((k, mu, loc))
    if isinstance(k, Variable) and k.requires_grad:
        raise GradientError(f"stats.poisson.{method}: k is a count, with no gradient; pass it "
                            "as a constant (a detached array or a number)")
    k, mu, loc = _floats(xp, k, mu, loc)
    k = k - loc
    return xp, _Special(xp, f"poisson.{method}"), k, mu, mu >= 0


def _poisson_log(method, k, mu, loc):
    xp, sp, k, mu, ok = _poisson(method, k, mu, loc)
    count = (k >= 0) & (k == xp.floor(k))
    safe = xp.where(count, k, xp.zeros_like(k))
    value = _fill(xp, ~count, -_INF, sp.xlogy(safe, mu) - sp.gammaln(safe + 1) - mu)
    return xp, _nan_unless(xp, ok & ~xp.isnan(k), value)


def _poisson_logpmf(k, mu, loc=0):
    """scipy.stats.poisson.logpmf(k, mu, loc=0), differentiable in ``mu``."""
    return _poisson_log("logpmf", k, mu, loc)[1]


def _poisson_pmf(k, mu, loc=0):
    """scipy.stats.poisson.pmf(k, mu, loc=0), differentiable in ``mu``."""
    xp, log_pmf = _poisson_log("pmf", k, mu, loc)
    return xp.exp(log_pmf)


def _poisson_cdf(k, mu, loc=0):
    """scipy.stats.poisson.cdf(k, mu, loc=0), differentiable in ``mu``: gammaincc(floor(k) + 1,
    mu)."""
    xp, sp, k, mu, ok = _poisson("cdf", k, mu, loc)
    safe = xp.where(k >= 0, xp.floor(k), xp.zeros_like(k))
    value = _fill(xp, k < 0, 0.0, sp.gammaincc(safe + 1, mu))
    return _nan_unless(xp, ok & ~xp.isnan(k), value)


poisson = types.SimpleNamespace(pmf=_poisson_pmf, logpmf=_poisson_logpmf, cdf=_poisson_cdf)


# -- multivariate: components along the first axis (dirichlet), the last (multivariate_normal) ---

def _dirichlet_logpdf(x, alpha):
    """scipy.stats.dirichlet.logpdf(x, alpha), differentiable: ``x``'s first axis holds the
    K components (or K - 1: the last is 1 - their sum), ``alpha`` has shape (K,). Off the
    simplex (to 1e-9, SciPy's tolerance) it is ``-inf``, where SciPy raises."""
    xp = _namespace_of((x, alpha))
    x, alpha = _floats(xp, x, alpha)
    if alpha.ndim != 1 or x.ndim == 0 or x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError(f"stats.dirichlet.logpdf: alpha must have shape (K,) and x's first axis "
                         f"K or K - 1 components; got x {tuple(x.shape)}, alpha "
                         f"{tuple(alpha.shape)}")
    if x.shape[0] != alpha.shape[0]:
        x = xp.concat([x, 1 - xp.sum(x, axis=0, keepdims=True)], axis=0)
    alpha = xp.reshape(alpha, (alpha.shape[0],) + (1,) * (x.ndim - 1))
    sp = _Special(xp, "dirichlet.logpdf")
    simplex = xp.all(x >= 0, axis=0) & (xp.abs(xp.sum(x, axis=0) - 1) <= 1e-9)
    safe = xp.where(simplex, x, xp.ones_like(x) / x.shape[0])
    log_beta = xp.sum(sp.gammaln(alpha), axis=0) - sp.gammaln(xp.sum(alpha, axis=0))
    value = xp.sum(sp.xlogy(alpha - 1, safe), axis=0) - log_beta
    return _nan_unless(xp, xp.all(alpha > 0), _fill(xp, ~simplex, -_INF, value))


dirichlet = types.SimpleNamespace(
    logpdf=_dirichlet_logpdf,
    pdf=lambda x, alpha: _namespace_of((x, alpha)).exp(_dirichlet_logpdf(x, alpha)))
dirichlet.pdf.__doc__ = "scipy.stats.dirichlet.pdf(x, alpha), differentiable."


def _gaussian(method, x, mean, cov):
    """xp, the deviations (n, d) of the points from the mean, ``cov`` as a (d, d) matrix and
    the shape of the batch of points."""
    xp = _namespace_of((x, mean, cov))
    x, mean, cov = _floats(xp, x, 0 if mean is None else mean, cov)
    d = cov.shape[-1] if cov.ndim == 2 else (mean.shape[-1] if mean.ndim else 1)
    if cov.ndim < 2:  # SciPy's scalar cov (a multiple of the identity) and 1-D (its diagonal)
        cov = xp.eye(d, dtype=cov.dtype) * cov
    if cov.ndim != 2 or cov.shape != (d, d):
        raise ValueError(f"stats.multivariate_normal.{method}: cov must be a (d, d) matrix, "
                         f"a vector of its diagonal or a number; got shape {tuple(cov.shape)}")
    if d == 1 and (x.ndim == 0 or x.shape[-1] != 1):  # SciPy: 1-D x in one dimension: points
        x = x[..., None]
    deviations = x - mean
    batch = tuple(deviations.shape[:-1])
    return xp, xp.reshape(deviations, (-1, d)), cov, batch


def _pseudo_log_density(xp, method, deviations, cov):
    """SciPy's ``allow_singular=True`` (its ``_PSD``): from ``eigh(cov)``, eigenvalues up to
    1e6 eps of the largest count as zero; the density lives on the span of the others (rank,
    pseudo-determinant, pseudo-inverse), ``-inf`` off it."""
    eigenvalues, vectors = xp.linalg.eigh(cov)
    eps = 1e6 * xp.finfo(cov.dtype).eps * xp.max(xp.abs(eigenvalues))
    if bool(xp.min(eigenvalues) < -eps):
        raise ValueError(f"stats.multivariate_normal.{method}: cov must be symmetric positive "
                         "semidefinite")
    kept = eigenvalues > eps
    safe = xp.where(kept, eigenvalues, xp.ones_like(eigenvalues))
    rank = xp.sum(xp.astype(kept, cov.dtype))
    log_pdet = xp.sum(xp.where(kept, xp.log(safe), xp.zeros_like(safe)))
    whitened = deviations @ (vectors * xp.where(kept, 1 / xp.sqrt(safe), xp.zeros_like(safe)))
    off = xp.linalg.vector_norm(deviations @ (vectors * xp.astype(~kept, cov.dtype)), axis=-1)
    value = -0.5 * (rank * math.log(2 * math.pi) + log_pdet + xp.sum(whitened * whitened,
                                                                       axis=-1))
    return _fill(xp, off >= 1e3 * eps, -_INF, value)


def _squeezed(xp, value, batch):
    """SciPy's ``_squeeze_output``: axes of length 1 removed, a scalar for one point."""
    return xp.reshape(value, tuple(n for n in batch if n != 1))


def _mvn_log(method, x, mean, cov, allow_singular):
    xp, deviations, cov, batch = _gaussian(method, x, mean, cov)
    if allow_singular:
        return xp, _squeezed(xp, _pseudo_log_density(xp, method, deviations, cov), batch)
    factor = xp.linalg.cholesky(cov)  # one factorisation and one triangular solve for all points
    whitened = xp.linalg.solve(factor, xp.matrix_transpose(deviations))  # (d, n)
    log_det = 2 * xp.sum(xp.log(xp.linalg.diagonal(factor)))
    value = -0.5 * (cov.shape[0] * math.log(2 * math.pi) + log_det
                    + xp.sum(whitened * whitened, axis=0))
    return xp, _squeezed(xp, value, batch)


def _mvn_logpdf(x, mean=None, cov=1, allow_singular=False):
    """scipy.stats.multivariate_normal.logpdf(x, mean=None, cov=1, allow_singular=False),
    differentiable in ``x``, ``mean`` and ``cov``; points along ``x``'s last axis."""
    return _mvn_log("logpdf", x, mean, cov, allow_singular)[1]


def _mvn_pdf(x, mean=None, cov=1, allow_singular=False):
    """scipy.stats.multivariate_normal.pdf(x, mean=None, cov=1, allow_singular=False),
    differentiable in ``x``, ``mean`` and ``cov``; points along ``x``'s last axis."""
    xp, log_pdf = _mvn_log("pdf", x, mean, cov, allow_singular)
    return xp.exp(log_pdf)


def _mvn_entropy(mean=None, cov=1):
    """scipy.stats.multivariate_normal.entropy(mean=None, cov=1), differentiable in ``cov``."""
    xp, _, cov, _ = _gaussian("entropy", 0.0 if mean is None else mean, mean, cov)
    log_diagonal = xp.log(xp.linalg.diagonal(xp.linalg.cholesky(cov)))
    return 0.5 * cov.shape[0] * (1 + math.log(2 * math.pi)) + xp.sum(log_diagonal)


multivariate_normal = types.SimpleNamespace(pdf=_mvn_pdf, logpdf=_mvn_logpdf,
                                            entropy=_mvn_entropy)
