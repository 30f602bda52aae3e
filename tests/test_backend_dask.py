"""The ``dask`` backend against the real dask: forward and backward stay lazy until the user
computes, a least-squares gradient computes on a real ``LocalCluster``'s workers, float64
gradient checks, agreement with NumPy, data-dependent shapes declared unsupported."""

import logging

import numpy as np
import pytest

import arraygrad as ag

dask = pytest.importorskip("dask", reason="dask is not installed (pip install 'arraygrad[dask]')")
da = pytest.importorskip("dask.array")
from dask.callbacks import Callback  # noqa: E402

NAME = "dask"

from backend_cases import (CASES, _inputs,  # noqa: E402
                           check_against_central_differences, check_against_numpy)


class ComputeCounter(Callback):
    """Counts the graphs dask computes (local schedulers) while active."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def _start(self, dsk):
        self.count += 1


def _chunked(array):
    return da.from_array(array, chunks=tuple(max(1, n // 2) for n in array.shape))


@pytest.mark.parametrize("case", CASES)
def test_gradients_match_central_differences_in_float64(case):
    check_against_central_differences(NAME, case)


@pytest.mark.parametrize("case", CASES)
def test_values_and_gradients_agree_with_numpy(case):
    check_against_numpy(NAME, case)


@pytest.mark.parametrize("case", CASES)
def test_forward_and_backward_stay_lazy(case):
    # cumulative_prod's rule picks its formula by reading the values (are there zeros?):
    # it stays lazy only where the backend declares host_reads False (a core patch).
    f, shapes = CASES[case]
    xp = ag.namespace(NAME)
    arrays = _inputs(shapes)
    with ComputeCounter() as counter:
        inputs = [ag.Variable(_chunked(a), requires_grad=True) for a in arrays]
        out = f(xp, *inputs)
        xp.sum(out * out).backward()
        grads = [x.grad.data for x in inputs]
        assert counter.count == 0, f"{case}: forward or backward computed {counter.count} graph(s)"
        assert all(isinstance(g, da.Array) for g in grads)
        computed = dask.compute(*grads)
        assert counter.count == 1
    reference = [ag.Variable(a, requires_grad=True) for a in arrays]
    numpy_out = f(ag.namespace("numpy"), *reference)
    ag.namespace("numpy").sum(numpy_out * numpy_out).backward()
    for grad, x in zip(computed, reference):
        np.testing.assert_allclose(grad, x.grad.data, rtol=1e-10, atol=1e-12)


def test_gradient_is_a_lazy_dask_array_until_compute():
    xp = ag.namespace(NAME)
    with ComputeCounter() as counter:
        x = ag.Variable(da.ones((6, 4), chunks=(2, 4)), requires_grad=True)
        out = xp.mean((x + 2) * x * 3)
        out.backward()
        assert counter.count == 0
        assert isinstance(x.grad.data, da.Array) and x.grad.data.chunks == x.data.chunks
        np.testing.assert_allclose(x.grad.data.compute(), np.full((6, 4), 12 / 24))
        assert counter.count == 1


def test_backward_with_a_gradient_given_as_a_list_stays_lazy():
    # backward() makes the gradient with asarray(..., device=output.device): dask arrays have no
    # .device attribute, so Variable.device must cope (a core patch).
    with ComputeCounter() as counter:
        x = ag.Variable(da.ones(3, chunks=2), requires_grad=True)
        (x * x).backward([1.0, 2.0, 3.0])
        assert counter.count == 0 and isinstance(x.grad.data, da.Array)
    np.testing.assert_array_equal(x.grad.data.compute(), [2.0, 4.0, 6.0])


def test_least_squares_gradient_computes_on_a_local_cluster():
    distributed = pytest.importorskip("distributed")
    xp = ag.namespace(NAME)
    rows, columns, chunk = 200_000, 50, 25_000
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as client:
        workers = set(client.scheduler_info()["workers"])
        assert len(workers) == 2
        rng = da.random.default_rng(42)
        X = rng.standard_normal((rows, columns), chunks=(chunk, columns))
        y = rng.standard_normal((rows,), chunks=(chunk,))
        assert X.numblocks[0] >= 8
        w0 = np.linspace(-1.0, 1.0, columns)
        w = ag.Variable(da.from_array(w0), requires_grad=True)
        loss = xp.mean((ag.Variable(X) @ w - ag.Variable(y)) ** 2)
        loss.backward()
        assert isinstance(w.grad.data, da.Array)
        with distributed.get_task_stream(client) as stream:
            grad, X_host, y_host, loss_value = dask.compute(w.grad.data, X, y, loss.data)
        ran_on = {task["worker"] for task in stream.data}
        assert ran_on == workers, f"tasks ran on {ran_on}, the cluster has {workers}"
        assert len(stream.data) >= 2 * X.numblocks[0]
    residual = X_host @ w0 - y_host
    np.testing.assert_allclose(loss_value, np.mean(residual ** 2), rtol=1e-12)
    np.testing.assert_allclose(grad, 2 / rows * (X_host.T @ residual), rtol=1e-9, atol=1e-12)


def test_least_squares_gradient_graph_has_no_rechunk_and_the_size_of_the_hand_written_one():
    # The reduced gradient of mean/sum is spread over the input's own chunks: before, it was
    # one chunk of the whole length, which every consumer rechunked (40 more tasks here).
    xp = ag.namespace(NAME)
    rng = da.random.default_rng(1)
    X = rng.standard_normal((4_000, 5), chunks=(100, 5))
    y = rng.standard_normal((4_000,), chunks=(100,))
    w0 = da.from_array(np.linspace(-1.0, 1.0, 5))
    w = ag.Variable(w0, requires_grad=True)
    xp.mean((ag.Variable(X) @ w - ag.Variable(y)) ** 2).backward()
    (ours,) = dask.optimize(w.grad.data)
    (hand,) = dask.optimize(2 / X.shape[0] * (X.T @ (X @ w0 - y)))
    ours_graph, hand_graph = dict(ours.__dask_graph__()), dict(hand.__dask_graph__())
    assert not [key for key in ours_graph if "rechunk" in str(key)]
    assert len(ours_graph) <= 1.2 * len(hand_graph), (len(ours_graph), len(hand_graph))
    residual = X.compute() @ w0.compute() - y.compute()
    np.testing.assert_allclose(ours.compute(), 2 / 4_000 * X.compute().T @ residual, rtol=1e-10)


@pytest.mark.parametrize("loss", ["mean of squares", "scaled sum of squares"])
def test_the_gradient_of_a_mean_of_squares_keeps_the_chunks(loss):
    # mean's and sum's gradient is spread over the chunks of their input (the plugin's rule), so
    # no consumer rechunks a single chunk of the whole length.
    xp = ag.namespace(NAME)
    rng = da.random.default_rng(2)
    X = rng.standard_normal((2_000, 3), chunks=(100, 3))
    y = rng.standard_normal((2_000,), chunks=(100,))
    w0 = da.from_array(np.array([0.5, -1.0, 2.0]))
    w = ag.Variable(w0, requires_grad=True)
    r = ag.Variable(X) @ w - ag.Variable(y)
    (xp.mean(r ** 2) if loss == "mean of squares" else xp.sum(0.5 * r ** 2 / 1_000)).backward()
    assert not [key for key in dict(w.grad.data.__dask_graph__()) if "rechunk" in str(key)]
    residual = X.compute() @ w0.compute() - y.compute()
    np.testing.assert_allclose(w.grad.data.compute(), 2 / 2_000 * X.compute().T @ residual,
                               rtol=1e-10)
    # A consumer after another (sin after negative) gets it spread over the chunks of its input.
    v = ag.Variable(y, requires_grad=True)
    xp.sum(-xp.sin(v)).backward()
    assert v.grad.data.chunks == y.chunks
    assert not [key for key in dict(v.grad.data.__dask_graph__()) if "rechunk" in str(key)]
    np.testing.assert_allclose(v.grad.data.compute(), -np.cos(y.compute()), rtol=1e-14)


def test_data_dependent_shapes_are_declared_unsupported():
    caps = ag.get_backend(NAME).capabilities()
    assert caps["data_dependent_shapes"] is False and caps["inplace"]
    assert "float64" in ag.get_backend(NAME).dtypes
    assert caps.get("host_reads") is False


def test_differentiating_through_an_unknown_shape_is_a_clear_error():
    xp = ag.namespace(NAME)
    x = ag.Variable(da.from_array(np.arange(-3.0, 3.0), chunks=2), requires_grad=True)
    with pytest.raises(ag.GradientError, match="data-dependent"):
        y = x[x > 0]
        xp.sum(y * y).backward()
    with ag.no_grad():  # without gradients the lazy mask still works
        assert float(xp.sum(x[x > 0]).data.compute()) == 3.0


def test_take_along_axis_fix_up_matches_numpy():
    raw = ag.get_backend(NAME).raw
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 4))
    for indices, axis in [(rng.integers(0, 4, (1, 6)), 1), (rng.integers(0, 5, (3, 4)), 0),
                          (rng.integers(0, 4, (5, 2)), -1)]:
        got = raw.take_along_axis(_chunked(a), da.from_array(indices, chunks=1), axis=axis)
        assert isinstance(got, da.Array)
        np.testing.assert_array_equal(got.compute(), np.take_along_axis(a, indices, axis=axis))
    assert raw.broadcast_shapes((3, 1), (4,)) == (3, 4)
    assert ag.namespace(raw) is ag.namespace(NAME)


def test_mixing_backends_in_one_op_names_both():
    d = ag.Variable(da.ones(3))
    n = ag.Variable(np.ones(3))
    with pytest.raises(ag.BackendError, match="'dask'.*'numpy'"):
        d + n
    with pytest.raises(ag.BackendError, match="'numpy'.*'dask'"):
        n * d


def test_to_moves_a_leaf_between_numpy_and_dask():
    x = ag.Variable(np.arange(3.0), requires_grad=True)
    d = x.to(NAME)
    assert d.backend == NAME and d.is_leaf and d.requires_grad and isinstance(d.data, da.Array)
    ag.namespace(NAME).sum(d * d).backward()
    np.testing.assert_array_equal(d.grad.data.compute(), [0.0, 2.0, 4.0])
    back = d.detach().to("numpy")
    assert isinstance(back.data, np.ndarray)
    np.testing.assert_array_equal(back.data, [0.0, 1.0, 2.0])


def test_to_device_and_device_on_dask():
    # dask arrays have no device attribute: array-api-compat's answer, "cpu".
    v = ag.Variable(da.arange(3.0, chunks=2), requires_grad=True)
    assert v.device == "cpu"
    moved = v.to_device("cpu")
    ag.namespace(NAME).sum(moved * moved).backward()
    np.testing.assert_allclose(np.asarray(v.grad.data.compute()), [0.0, 2.0, 4.0])


def test_namespace_info_says_no_boolean_indexing_on_dask():
    # array-api-extra and SciPy choose their mask-free paths from it.
    capabilities = ag.namespace(NAME).__array_namespace_info__().capabilities()
    assert capabilities["boolean indexing"] is False
    assert capabilities["data-dependent shapes"] is False
    assert ag.namespace("numpy").__array_namespace_info__().capabilities()["boolean indexing"]


def test_cholesky_is_the_lower_factor_and_its_gradient_matches_central_differences():
    """array-api-compat's dask cholesky returned dask's default, the upper factor: values and
    gradients were silently those of another function."""
    from arraygrad.testing import check_grads

    a = np.array([[4.0, 2.0, 0.4], [2.0, 3.0, 0.5], [0.4, 0.5, 2.0]])
    xp = ag.namespace(NAME)
    lower = xp.linalg.cholesky(ag.Variable(da.from_array(a)))
    np.testing.assert_allclose(lower.data.compute(), np.linalg.cholesky(a), rtol=1e-12)
    weights = np.random.default_rng(0).standard_normal((3, 3))
    for upper in (False, True):
        check_grads(lambda m: xp.sum(xp.linalg.cholesky((m + xp.matrix_transpose(m)) / 2,
                                                        upper=upper) * xp.asarray(weights)),
                    a, backend=NAME)


def test_the_linear_algebra_cases_of_the_conformance_suite_pass_on_dask():
    from arraygrad.conformance import runner

    results, unavailable = runner.run([NAME], pattern="linalg.*")
    assert not unavailable
    failures = [(r.case.id, r.dtype) for r in results if r.status == "fail"]
    assert not failures
    ran = {r.case.id for r in results if r.status == "pass"}
    assert {"linalg.cholesky[3x3]", "linalg.cholesky[upper]", "linalg.svd[2x3]"} <= ran


SVD_CHUNKINGS = {  # dask's own SVD takes a 2-D array chunked along one axis only
    "tall-and-skinny": ((8, 3), (4, 3)),
    "short-and-fat": ((3, 8), (3, 4)),
    "square, both axes chunked": ((6, 6), (3, 3)),
    "tall, both axes chunked": ((8, 3), (4, 2)),
    "one chunk": ((5, 4), (5, 4)),
    "stack of matrices": ((2, 5, 3), (1, 2, 3)),
}


@pytest.mark.parametrize("chunking", SVD_CHUNKINGS)
def test_svd_svdvals_and_svd_norms_on_dask_in_any_chunks_agree_with_numpy(chunking):
    """array-api-compat's dask svdvals always raised (it asks dask for full_matrices=True), and
    dask's SVD refused matrices chunked along both axes and stacks; all now give NumPy's values
    and gradients, lazily."""
    shape, chunks = SVD_CHUNKINGS[chunking]
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape)
    weights, mixing = rng.standard_normal(min(shape[-2:])), rng.standard_normal(shape)
    square = shape[-1] == shape[-2]

    def losses(xp, x):
        U, S, Vh = xp.linalg.svd(x, full_matrices=square)  # the default, where dask can
        yield "svdvals", xp.sum(xp.linalg.svdvals(x) * weights)
        yield "svd", xp.sum(S * weights) + xp.sum(((U * S[..., None, :]) @ Vh) * mixing)
        for ord in (2, -2, "nuc"):
            yield f"matrix_norm {ord}", xp.sum(xp.linalg.matrix_norm(x, ord=ord, keepdims=True))

    ours = ag.Variable(da.from_array(a, chunks=chunks), requires_grad=True)
    reference = ag.Variable(a, requires_grad=True)
    with ComputeCounter() as counter:
        found = list(losses(ag.namespace(NAME), ours))
        for _, loss in found:
            loss.backward()
        assert counter.count == 0, f"{chunking}: forward or backward computed"
    expected = list(losses(ag.namespace("numpy"), reference))
    for (what, loss), (_, value) in zip(found, expected):
        value.backward()
        np.testing.assert_allclose(loss.data.compute(), value.data, rtol=1e-10, err_msg=what)
    np.testing.assert_allclose(ours.grad.data.compute(), reference.grad.data, rtol=1e-8,
                               atol=1e-12)
    singular = ag.namespace(NAME).linalg.svdvals(ag.Variable(ours.data))
    np.testing.assert_allclose(singular.data.compute(), np.linalg.svd(a, compute_uv=False))
    low_rank = a.copy()
    low_rank[..., 0] = low_rank[..., 1]
    rank = ag.namespace(NAME).linalg.matrix_rank(ag.Variable(da.from_array(low_rank, chunks)))
    np.testing.assert_array_equal(rank.data.compute(), np.linalg.matrix_rank(low_rank))


def test_what_dask_svd_cannot_do_is_refused_naming_the_option_and_what_to_call_instead():
    xp = ag.namespace(NAME)
    tall = ag.Variable(da.from_array(np.ones((8, 3)), chunks=(4, 3)), requires_grad=True)
    with pytest.raises(ValueError, match=r"linalg.svd on dask: full_matrices=True \(the "
                                         r"standard's default\) of a 8x3 matrix is not supported"
                                         r".*Pass full_matrices=False, or call "
                                         r"linalg.svdvals\(x\)"):
        xp.linalg.svd(tall)
    for name, x in (("numpy", np.ones((8, 3))), (NAME, tall.data)):
        with pytest.raises(TypeError, match=r"linalg.svd\(\): the option compute_uv=False is "
                                            r"not an option of the Array API standard.*call "
                                            r"linalg.svdvals\(x\), which has a gradient"):
            ag.namespace(name).linalg.svd(ag.Variable(x, requires_grad=True), compute_uv=False)
