"""scikit-learn's Array API support (array_api_dispatch=True), called on Variables."""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before scipy/sklearn import

import numpy as np
import pytest

from .harness import Case, Refusal, params, run

sklearn = pytest.importorskip("sklearn",
                              reason="scikit-learn is not installed (pip install -e '.[interop]')")

from sklearn import decomposition, discriminant_analysis, linear_model, metrics  # noqa: E402
from sklearn import preprocessing  # noqa: E402
from sklearn.metrics import pairwise  # noqa: E402
from sklearn.utils import extmath  # noqa: E402

rng = np.random.default_rng(0)


def dispatched(f):
    """``f`` run with scikit-learn's array API dispatch on (for Variables and torch tensors)."""
    def call(*args):
        with sklearn.config_context(array_api_dispatch=True):
            return f(*args)
    return call


def _x(shape, shift=0.0):
    """Asymmetric float64 values: no ties, no zeros, no symmetric rows."""
    return rng.standard_normal(shape) + shift + 0.1 * np.arange(np.prod(shape)).reshape(shape)


X = _x((4, 3))
Y = _x((3, 3), 0.3)
POS_X = np.abs(_x((4, 3))) + 0.2
POS_Y = np.abs(_x((3, 3))) + 0.2
Y_TRUE = _x((4, 2))
Y_PRED = _x((4, 2), 0.5)
LDA_X = np.array([[0.3, 1.2], [1.9, -0.4], [-0.2, 0.9], [2.4, 0.3], [0.7, 1.6], [1.5, -1.1]])
LDA_Y = np.array([0, 1, 0, 1, 0, 1])

SK = "scikit-learn"

# scikit-learn writes in place into arrays (X /= norms, svd_flip, ...): torch.autograd then refuses
# to differentiate its torch path, so those cases are checked against central differences only.
NO_TORCH = dict(torch_reference=False)

# scikit-learn's own code fails on dask arrays here, with or without arraygrad: masked assignment
# and boolean indexing give dask arrays of unknown shape that it then broadcasts or allocates.
ON_DASK = Refusal(ValueError, r"unknown (shape|\(nan\) chunk sizes)",
                  "scikit-learn indexes with boolean masks here, which gives dask arrays of "
                  "unknown shape that it cannot use (it fails on raw dask arrays too); compute "
                  "the inputs into NumPy or torch arrays first")

# preprocessing.scale has no Array API support: it converts its input with np.asarray.
SCALE = {
    "numpy": Refusal(ValueError, "cannot convert a Variable that requires grad to NumPy",
                     "scikit-learn's scale() converts its input with np.asarray, which would "
                     "leave the graph; use StandardScaler().fit_transform"),
    "dask": Refusal(ValueError, "cannot convert a Variable that requires grad to NumPy",
                    "scikit-learn's scale() converts its input with np.asarray, which would "
                    "leave the graph; use StandardScaler().fit_transform"),
    "torch": Refusal(TypeError, "dtype",
                     "scikit-learn's scale() passes NumPy dtypes to torch (it fails on raw "
                     "tensors too); use StandardScaler().fit_transform"),
}

# StandardScaler's incremental variance computes 0/0 for the (empty) previous batch, then
# overwrites it: the forward value is right, but reverse mode multiplies a zero gradient by that
# NaN. torch.autograd and jax.grad give the same NaN.
NAN_VARIANCE = Refusal(None, "nan", "scikit-learn's incremental variance computes 0/0 and then "
                       "overwrites it; the gradient through the overwritten NaN is NaN (as in "
                       "torch.autograd). Standardize with xp.mean and xp.std instead")

CASES = [
    # preprocessing
    Case(SK, "preprocessing.normalize", dispatched(lambda x: preprocessing.normalize(x)),
         (X,), **NO_TORCH),
    Case(SK, "preprocessing.normalize(norm='l1')",
         dispatched(lambda x: preprocessing.normalize(x, norm="l1")), (X,), **NO_TORCH),
    Case(SK, "preprocessing.normalize(norm='max')",
         dispatched(lambda x: preprocessing.normalize(x, norm="max")), (X,), **NO_TORCH),
    Case(SK, "preprocessing.scale", dispatched(lambda x: preprocessing.scale(x)), (X,),
         refuse=SCALE),
    Case(SK, "StandardScaler().fit_transform",
         dispatched(lambda x: preprocessing.StandardScaler().fit_transform(x)), (X,),
         refuse={"dask": ON_DASK, "numpy": NAN_VARIANCE, "torch": NAN_VARIANCE}, **NO_TORCH),
    Case(SK, "StandardScaler().fit(X).transform(Z)",
         dispatched(lambda x, z: preprocessing.StandardScaler().fit(x).transform(z)), (X, Y),
         refuse={"dask": ON_DASK, "numpy": NAN_VARIANCE, "torch": NAN_VARIANCE}, **NO_TORCH),
    Case(SK, "MinMaxScaler().fit_transform",
         dispatched(lambda x: preprocessing.MinMaxScaler().fit_transform(x)), (X,)),
    Case(SK, "MaxAbsScaler().fit_transform",
         dispatched(lambda x: preprocessing.MaxAbsScaler().fit_transform(x)), (X,)),
    Case(SK, "Normalizer().fit_transform",
         dispatched(lambda x: preprocessing.Normalizer().fit_transform(x)), (X,), **NO_TORCH),
    Case(SK, "KernelCenterer().fit_transform",
         dispatched(lambda k: preprocessing.KernelCenterer().fit_transform(k)),
         (_x((3, 3)),)),
    # metrics (multioutput='raw_values': a scalar score comes back as a Python float)
    Case(SK, "metrics.mean_squared_error(raw_values)",
         dispatched(lambda t, p: metrics.mean_squared_error(t, p, multioutput="raw_values")),
         (Y_TRUE, Y_PRED)),
    Case(SK, "metrics.mean_absolute_error(raw_values)",
         dispatched(lambda t, p: metrics.mean_absolute_error(t, p, multioutput="raw_values")),
         (Y_TRUE, Y_PRED)),
    Case(SK, "metrics.r2_score(raw_values)",
         dispatched(lambda t, p: metrics.r2_score(t, p, multioutput="raw_values")),
         (Y_TRUE, Y_PRED), refuse={"dask": ON_DASK}),
    Case(SK, "metrics.explained_variance_score(raw_values)",
         dispatched(lambda t, p: metrics.explained_variance_score(t, p,
                                                                  multioutput="raw_values")),
         (Y_TRUE, Y_PRED), refuse={"dask": ON_DASK}),
    # pairwise
    Case(SK, "pairwise.euclidean_distances",
         dispatched(lambda x, y: pairwise.euclidean_distances(x, y)), (X, Y)),
    Case(SK, "pairwise.rbf_kernel", dispatched(lambda x, y: pairwise.rbf_kernel(x, y, gamma=0.3)),
         (X, Y)),
    Case(SK, "pairwise.polynomial_kernel",
         dispatched(lambda x, y: pairwise.polynomial_kernel(x, y, degree=2, coef0=0.5)), (X, Y)),
    Case(SK, "pairwise.cosine_similarity",
         dispatched(lambda x, y: pairwise.cosine_similarity(x, y)), (X, Y), **NO_TORCH),
    Case(SK, "pairwise.linear_kernel", dispatched(lambda x, y: pairwise.linear_kernel(x, y)),
         (X, Y)),
    Case(SK, "pairwise.sigmoid_kernel",
         dispatched(lambda x, y: pairwise.sigmoid_kernel(x, y, gamma=0.2)), (X, Y)),
    Case(SK, "pairwise.laplacian_kernel",
         dispatched(lambda x, y: pairwise.laplacian_kernel(x, y, gamma=0.4)), (X, Y)),
    Case(SK, "pairwise.manhattan_distances",
         dispatched(lambda x, y: pairwise.manhattan_distances(x, y)), (X, Y)),
    Case(SK, "pairwise.additive_chi2_kernel",
         dispatched(lambda x, y: pairwise.additive_chi2_kernel(x, y)), (POS_X, POS_Y)),
    Case(SK, "pairwise.chi2_kernel",
         dispatched(lambda x, y: pairwise.chi2_kernel(x, y, gamma=0.5)), (POS_X, POS_Y)),
    Case(SK, "pairwise_distances(metric='euclidean')",
         dispatched(lambda x, y: metrics.pairwise_distances(x, y, metric="euclidean")), (X, Y)),
    # utils
    Case(SK, "utils.extmath.softmax", dispatched(lambda x: extmath.softmax(x)), (X,),
         **NO_TORCH),
    Case(SK, "utils.extmath.row_norms", dispatched(lambda x: extmath.row_norms(x)), (X,)),
    # estimators
    Case(SK, "PCA(n_components=2).fit_transform",
         dispatched(lambda x: decomposition.PCA(n_components=2, svd_solver="full")
                    .fit_transform(x)), (X,), **NO_TORCH),
    Case(SK, "Ridge(solver='svd').fit(X, y).predict(X)",
         dispatched(lambda x, y: linear_model.Ridge(alpha=0.5, solver="svd").fit(x, y)
                    .predict(x)), (X, _x(4)), rtol=1e-4, atol=1e-6, refuse={"dask": ON_DASK}),
    Case(SK, "LinearDiscriminantAnalysis().fit(X, y).predict_proba(X)",
         dispatched(lambda x, y: discriminant_analysis.LinearDiscriminantAnalysis(solver="svd")
                    .fit(x, y).predict_proba(x)), (LDA_X, LDA_Y),
         refuse={"dask": ON_DASK}, **NO_TORCH),
]


@pytest.mark.parametrize("case, backend", params(CASES))
def test_sklearn(case, backend):
    run(case, backend)


# ------------------------------------------------------------------ dask.distributed
# StandardScaler cannot run on dask (see ON_DASK): a scaler and a kernel that can.
DISTRIBUTED = [c for c in CASES if c.name in ("MinMaxScaler().fit_transform",
                                              "pairwise.euclidean_distances")]


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip(
        "distributed", reason="distributed is not installed (pip install -e '.[dask]')")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


@pytest.mark.parametrize("case", DISTRIBUTED, ids=[c.name for c in DISTRIBUTED])
def test_sklearn_dask_distributed(case, dask_client):
    import dask.base
    import distributed

    assert dask.base.get_scheduler() == dask_client.get
    with distributed.get_task_stream(dask_client) as tasks:
        run(case, "dask")
    assert tasks.data, "no task ran on the cluster's worker process"
