"""SciPy functions, run by SciPy itself on Variables (``SCIPY_ARRAY_API=1``), against central
differences and ``torch.autograd``. See ``harness.py`` for what one case checks."""

import os
import subprocess
import sys
import textwrap

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before scipy is imported

import numpy as np
import pytest

import arraygrad as ag

from .harness import Case, Refusal, params, run

scipy = pytest.importorskip("scipy", reason="scipy is not installed (pip install -e '.[interop]')")

from array_api_compat import array_namespace  # noqa: E402
from scipy import (constants, fft, integrate, linalg, ndimage, optimize, signal,  # noqa: E402
                   special, stats)
from scipy.cluster import vq  # noqa: E402
from scipy.signal import windows  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

rng = np.random.default_rng(0)


def normal(*shape):
    return rng.standard_normal(shape)


def positive(*shape, low=0.5, high=2.5):
    return rng.uniform(low, high, shape)


def unit(*shape):
    """Values strictly inside (0, 1)."""
    return rng.uniform(0.1, 0.9, shape)


def re_im(z):
    """A complex result as its real and imaginary parts (the loss is real)."""
    xp = array_namespace(z)
    return xp.real(z), xp.imag(z)


def numpy_only(why):
    """Declared refusal: SciPy itself converts its input to NumPy, on every backend."""
    return {"*": Refusal(ag.GradientError, "cannot convert a Variable that requires grad to NumPy",
                         f"SciPy {why}, so the graph would be left; compute it with the "
                         "namespace's own functions, or detach the input if no gradient is needed.")}


COMPILED = numpy_only("runs it in compiled code on NumPy arrays (CuPy and JAX excepted)")
R2R = numpy_only("runs real-to-real transforms with pocketfft on NumPy arrays (the Array API fft "
                 "extension has no DCT/DST)")
LAPACK = numpy_only("linalg runs LAPACK on NumPy arrays")
NDIMAGE = numpy_only("ndimage delegates to CuPy, otherwise runs compiled code on NumPy arrays")
RV_CONTINUOUS = numpy_only("distributions (rv_continuous) are NumPy-only")

def _statistic_and_pvalue(result):
    return result.statistic, result.pvalue


# torch_reference=False: on raw torch tensors SciPy writes in place into a tensor that
# torch.autograd saved for backward, so torch.autograd cannot differentiate it (arraygrad can).

SPD = (lambda a: a @ a.T + 3 * np.eye(3))(normal(3, 3))
QUAT = (lambda q: q / np.linalg.norm(q))(np.array([0.3, -0.2, 0.5, 0.8]))


CASES = [
    # ---- scipy.special: generic Array API code (logsumexp family, xlogy, rel_entr) ----
    Case("scipy", "special.logsumexp", lambda x: special.logsumexp(x, axis=0), (normal(3, 4),)),
    Case("scipy", "special.logsumexp(b=)", lambda x, b: special.logsumexp(x, axis=1, b=b),
         (normal(3, 4), positive(3, 4)), torch_reference=False),
    Case("scipy", "special.softmax", lambda x: special.softmax(x, axis=1), (normal(3, 4),)),
    Case("scipy", "special.log_softmax", lambda x: special.log_softmax(x, axis=0), (normal(3, 4),),
         torch_reference=False),
    Case("scipy", "special.xlogy", special.xlogy, (normal(2, 3), positive(2, 3))),
    Case("scipy", "special.rel_entr", special.rel_entr, (positive(6), positive(6))),
    # ---- scipy.special: elementwise ufuncs (SciPy uses xp.special when the namespace has it) ----
    Case("scipy", "special.erf", special.erf, (normal(6),)),
    Case("scipy", "special.erfc", special.erfc, (normal(6),)),
    Case("scipy", "special.erfinv", special.erfinv, (rng.uniform(-0.8, 0.8, 6),)),
    Case("scipy", "special.expit", special.expit, (normal(6),)),
    Case("scipy", "special.logit", special.logit, (unit(6),)),
    Case("scipy", "special.gammaln", special.gammaln, (positive(6),)),
    Case("scipy", "special.psi", special.psi, (positive(6),)),
    Case("scipy", "special.entr", special.entr, (positive(6),)),
    Case("scipy", "special.ndtr", special.ndtr, (normal(6),)),
    Case("scipy", "special.ndtri", special.ndtri, (unit(6),)),
    Case("scipy", "special.log_ndtr", special.log_ndtr, (normal(6),)),
    Case("scipy", "special.i0", special.i0, (normal(6),)),
    Case("scipy", "special.i1", special.i1, (normal(6),)),
    Case("scipy", "special.i0e", special.i0e, (normal(6),)),
    Case("scipy", "special.xlog1py", special.xlog1py, (normal(6), positive(6))),
    # torch.special has no kl_div: SciPy converts raw tensors to NumPy, so no torch reference.
    Case("scipy", "special.kl_div", special.kl_div, (positive(6), positive(6)),
         torch_reference=False),
    # ---- scipy.stats ----
    Case("scipy", "stats.zscore", lambda x: stats.zscore(x, axis=0), (normal(4, 3),)),
    Case("scipy", "stats.zmap", lambda s, c: stats.zmap(s, c), (normal(3), normal(5))),
    Case("scipy", "stats.variation", lambda x: stats.variation(x, axis=0), (positive(4, 3),)),
    Case("scipy", "stats.skew", lambda x: stats.skew(x, axis=0), (normal(5, 2),)),
    Case("scipy", "stats.kurtosis", lambda x: stats.kurtosis(x, axis=0), (normal(6, 2),)),
    Case("scipy", "stats.moment", lambda x: stats.moment(x, order=3, axis=0), (normal(5, 2),)),
    Case("scipy", "stats.pmean", lambda x: stats.pmean(x, 2.5, axis=0), (positive(4, 2),)),
    Case("scipy", "stats.gmean", lambda x: stats.gmean(x, axis=0), (positive(4, 2),)),
    Case("scipy", "stats.hmean", lambda x: stats.hmean(x, axis=0), (positive(4, 2),)),
    Case("scipy", "stats.sem", lambda x: stats.sem(x, axis=0), (normal(4, 2),)),
    Case("scipy", "stats.entropy", lambda p: stats.entropy(p), (positive(6),)),
    Case("scipy", "stats.entropy(qk=)", lambda p, q: stats.entropy(p, q), (positive(5), positive(5))),
    Case("scipy", "stats.differential_entropy",
         lambda x: stats.differential_entropy(x, method="vasicek"), (normal(8),)),
    Case("scipy", "stats.tmean", lambda x: stats.tmean(x, (-1.5, 1.5)), (normal(8) * 0.8,)),
    Case("scipy", "stats.tvar", lambda x: stats.tvar(x), (normal(8),)),
    Case("scipy", "stats.tstd", lambda x: stats.tstd(x), (normal(8),)),
    Case("scipy", "stats.trim_mean", lambda x: stats.trim_mean(x, 0.25), (normal(8),)),
    Case("scipy", "stats.gstd", lambda x: stats.gstd(x), (positive(6),)),
    Case("scipy", "stats.kstat", lambda x: stats.kstat(x, 3), (normal(8),)),
    Case("scipy", "stats.circmean", lambda x: stats.circmean(x), (normal(6),)),
    Case("scipy", "stats.circvar", lambda x: stats.circvar(x), (normal(6),)),
    Case("scipy", "stats.boxcox_llf", lambda x: stats.boxcox_llf(0.7, x), (positive(6),),
         torch_reference=False),
    Case("scipy", "stats.power_divergence",
         lambda f, e: stats.power_divergence(
             f, e * (array_namespace(f).sum(f) / array_namespace(e).sum(e)),
             lambda_="cressie-read").statistic,
         (np.array([7.0, 9.5, 5.0, 8.5]), positive(4, low=5, high=9))),
    # The p-values need special.stdtr and special.betainc: xp.special has them on NumPy and
    # dask; torch.special has neither, so SciPy converts to NumPy there.
    Case("scipy", "stats.ttest_1samp", lambda x: _statistic_and_pvalue(stats.ttest_1samp(x, 0.3)), (normal(6),),
         torch_reference=False, refuse={"torch": numpy_only(
             "computes the p-value with special.stdtr, which torch.special lacks")["*"],
             "dask": Refusal(ValueError, "chunk sizes are unknown",
                             "on a dask-backed Variable, SciPy's result packing indexes an "
                             "array whose chunk sizes are unknown; compute the statistic with "
                             "the namespace, or run ttest_1samp on NumPy")}),
    Case("scipy", "stats.pearsonr", lambda x, y: _statistic_and_pvalue(stats.pearsonr(x, y)),
         (normal(6), normal(6)), torch_reference=False, refuse={"torch": numpy_only(
             "computes the p-value with special.betainc, which torch.special lacks")["*"]}),
    Case("scipy", "stats.norm.logpdf", lambda x: stats.norm.logpdf(x, 0.5, 2.0), (normal(5),),
         refuse=RV_CONTINUOUS),
    Case("scipy", "stats.norm.cdf", lambda x: stats.norm.cdf(x), (normal(5),),
         refuse=RV_CONTINUOUS),
    # ---- scipy.signal ----
    Case("scipy", "signal.detrend", lambda x: signal.detrend(x), (normal(8),), refuse=COMPILED),
    Case("scipy", "signal.detrend(type='constant')", lambda x: signal.detrend(x, type="constant"),
         (normal(8),), refuse=COMPILED),
    Case("scipy", "signal.convolve", lambda a, v: signal.convolve(a, v, method="direct"),
         (normal(6), normal(3)), refuse=COMPILED),
    Case("scipy", "signal.correlate", lambda a, v: signal.correlate(a, v, method="direct"),
         (normal(6), normal(3)), refuse=COMPILED),
    Case("scipy", "signal.fftconvolve", signal.fftconvolve, (normal(6), normal(3))),
    Case("scipy", "signal.lfilter", signal.lfilter,
         (normal(3), np.array([1.0, -0.5]), normal(6)), refuse=COMPILED),
    Case("scipy", "signal.hilbert", lambda x: re_im(signal.hilbert(x)), (normal(8),)),
    Case("scipy", "signal.windows.general_cosine", lambda a: windows.general_cosine(7, a),
         (np.array([0.5, 0.3, 0.2]),)),
    # ---- scipy.fft ----
    Case("scipy", "fft.fft", lambda x: re_im(fft.fft(x)), (normal(6),)),
    Case("scipy", "fft.ifft", lambda x: re_im(fft.ifft(x)), (normal(6),)),
    Case("scipy", "fft.rfft", lambda x: re_im(fft.rfft(x)), (normal(8),)),
    Case("scipy", "fft.irfft", lambda x: fft.irfft(x, n=8), (normal(5),)),
    Case("scipy", "fft.fft2", lambda x: re_im(fft.fft2(x)), (normal(3, 4),)),
    Case("scipy", "fft.rfftn", lambda x: re_im(fft.rfftn(x)), (normal(3, 4),)),
    Case("scipy", "fft.dct", lambda x: fft.dct(x, norm="ortho"), (normal(6),),
         refuse=R2R),
    Case("scipy", "fft.dst", lambda x: fft.dst(x), (normal(6),),
         refuse=R2R),
    Case("scipy", "fft.fftshift", fft.fftshift, (normal(3, 4),)),
    Case("scipy", "fft.ifftshift", lambda x: fft.ifftshift(x, axes=1), (normal(3, 4),)),
    # ---- scipy.integrate ----
    Case("scipy", "integrate.trapezoid", lambda y, x: integrate.trapezoid(y, x),
         (normal(6), np.cumsum(positive(6)))),
    Case("scipy", "integrate.trapezoid(dx=)", lambda y: integrate.trapezoid(y, dx=0.5, axis=0),
         (normal(4, 3),)),
    Case("scipy", "integrate.cumulative_trapezoid",
         lambda y: integrate.cumulative_trapezoid(y, dx=0.3, initial=0), (normal(6),)),
    Case("scipy", "integrate.cumulative_simpson", lambda y: integrate.cumulative_simpson(y, dx=0.3),
         (normal(7),)),
    Case("scipy", "integrate.simpson", lambda y: integrate.simpson(y, dx=0.25), (normal(7),),
         refuse=numpy_only("implements simpson for NumPy only")),
    Case("scipy", "integrate.romb", lambda y: integrate.romb(y, dx=0.25), (normal(9),),
         torch_reference=False),
    # ---- scipy.linalg ----
    Case("scipy", "linalg.block_diag", lambda a, b: linalg.block_diag(a, b),
         (normal(2, 2), normal(1, 3))),
    Case("scipy", "linalg.fiedler", linalg.fiedler, (normal(4),)),
    Case("scipy", "linalg.det", linalg.det, (SPD,), refuse=LAPACK),
    Case("scipy", "linalg.inv", linalg.inv, (SPD,), refuse=LAPACK),
    Case("scipy", "linalg.solve", linalg.solve, (SPD, normal(3)), refuse=LAPACK),
    Case("scipy", "linalg.norm", linalg.norm, (normal(3, 3),), refuse=LAPACK),
    Case("scipy", "linalg.expm", linalg.expm, (normal(3, 3) * 0.5,), refuse=LAPACK),
    # ---- scipy.cluster, scipy.optimize, scipy.spatial, scipy.constants ----
    Case("scipy", "cluster.vq.whiten", vq.whiten, (normal(4, 3),), torch_reference=False),
    Case("scipy", "optimize.rosen", optimize.rosen, (normal(5),)),
    Case("scipy", "optimize.rosen_der", optimize.rosen_der, (normal(5),)),
    Case("scipy", "optimize.rosen_hess", optimize.rosen_hess, (normal(3),)),
    Case("scipy", "optimize.rosen_hess_prod", optimize.rosen_hess_prod, (normal(4), normal(4))),
    Case("scipy", "spatial.transform.Rotation.from_rotvec.as_matrix",
         lambda r: Rotation.from_rotvec(r).as_matrix(), (np.array([0.3, -0.4, 0.5]),)),
    Case("scipy", "spatial.transform.Rotation.from_quat.as_rotvec",
         lambda q: Rotation.from_quat(q).as_rotvec(), (QUAT,)),
    Case("scipy", "constants.convert_temperature",
         lambda t: constants.convert_temperature(t, "Celsius", "Fahrenheit"), (normal(4),)),
    # ---- scipy.ndimage (delegates to CuPy, otherwise converts to NumPy) ----
    Case("scipy", "ndimage.gaussian_filter1d", lambda x: ndimage.gaussian_filter1d(x, 1.0),
         (normal(8),), refuse=NDIMAGE),
    Case("scipy", "ndimage.convolve1d", ndimage.convolve1d,
         (normal(8), np.array([1.0, -2.0, 0.5])), refuse=NDIMAGE),
]


@pytest.mark.parametrize("case, backend", params(CASES))
def test_scipy(case, backend):
    run(case, backend)


# ---- dask under a real distributed scheduler ----

DISTRIBUTED_CASES = [case for case in CASES if case.name in ("special.logsumexp", "stats.zscore")]


@pytest.fixture(scope="module")
def dask_client():
    pytest.importorskip("dask.array", reason="dask is not installed (pip install -e '.[dask]')")
    distributed = pytest.importorskip(
        "distributed", reason="distributed is not installed (pip install -e '.[dask]')")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


@pytest.mark.parametrize("case", DISTRIBUTED_CASES, ids=[c.name for c in DISTRIBUTED_CASES])
def test_scipy_dask_distributed(case, dask_client):
    assert len(DISTRIBUTED_CASES) == 2
    run(case, "dask")


# ---- SciPy imported without its array API mode ----

def test_scipy_without_its_array_api_mode_says_to_set_scipy_array_api():
    """SciPy imported before SCIPY_ARRAY_API=1 was set converts a Variable to NumPy: the error
    says so and how to set it, where SciPy converts it and only there."""
    code = textwrap.dedent("""
        import numpy as np, scipy.special, scipy.stats
        import arraygrad as ag

        v = ag.Variable(np.linspace(0.5, 2.0, 5), requires_grad=True)
        for function in (scipy.special.logsumexp, scipy.stats.zscore, np.asarray):
            try:
                function(v)
            except ag.GradientError as exc:
                print(function.__name__, 'os.environ["SCIPY_ARRAY_API"] = "1"' in str(exc),
                      "detach" in str(exc))
        print(scipy.special.logsumexp(v.detach()) > 0)
    """)
    environment = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"}
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["logsumexp True False", "zscore True False",
                                        "asarray False True", "True"]
