"""Each linear-algebra rule does the work of the best known algorithm, checked by counting
operations, never by timing: matrix products (and their multiply-adds) through an ndarray
subclass that counts ``matmul``, and calls of the namespace's ``linalg`` functions and of the
``solve_triangular`` kernel through counting stand-ins. Each test fails on the slower
algorithm it replaced (a dense product placing a diagonal, an LU solve with a triangular
factor, a factorisation per input, a product per power, a batch of products summed)."""

import math

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import rules
from arraygrad._plugins import registry
from arraygrad.rules import RULES, _core

pytest.importorskip("scipy")


class Counted(np.ndarray):
    """An ndarray whose matrix products are counted (calls, and multiply-adds)."""

    products = []  # [(multiply-adds of one product)]

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [x.view(np.ndarray) if isinstance(x, Counted) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, Counted) else x
                                  for x in kwargs["out"])
        if ufunc is np.matmul:
            a, b = (np.asarray(x) for x in plain)
            a2 = a[None, :] if a.ndim == 1 else a
            b2 = b[:, None] if b.ndim == 1 else b
            batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
            Counted.products.append(math.prod(batch) * a2.shape[-2] * a2.shape[-1]
                                    * b2.shape[-1])
        result = getattr(ufunc, method)(*plain, **kwargs)
        return result.view(Counted) if isinstance(result, np.ndarray) else result


def counted(a):
    return np.asarray(a).view(Counted)


@pytest.fixture
def products():
    Counted.products = []
    yield Counted.products
    Counted.products = []


class Calls:
    """A stand-in for a namespace (or its ``linalg``) counting the calls of ``names``."""

    def __init__(self, inner, names, counts):
        self._inner, self._names, self._counts = inner, names, counts

    def __getattr__(self, name):
        value = getattr(self._inner, name)
        if name not in self._names:
            return value

        def call(*args, **kwargs):
            self._counts[name] = self._counts.get(name, 0) + 1
            return value(*args, **kwargs)
        return call


@pytest.fixture
def raw():
    return registry.get("numpy").raw


@pytest.fixture
def linalg_calls(raw, monkeypatch):
    """Calls of the NumPy backend's ``linalg.solve``/``inv`` made by backward."""
    counts = {}
    monkeypatch.setattr(raw, "linalg", Calls(raw.linalg, {"solve", "inv"}, counts))
    return counts


@pytest.fixture
def triangular(monkeypatch):
    """Calls of the ``solve_triangular`` kernel, on Counted arrays (direct rule calls)."""
    counts = {"solve_triangular": 0}
    scipy_kernel = registry.get("numpy").kernel("solve_triangular")

    def kernel(a, b, *, upper):
        counts["solve_triangular"] += 1
        return scipy_kernel(np.asarray(a), np.asarray(b), upper=upper)
    monkeypatch.setitem(_core._kernels, (Counted, "solve_triangular"), kernel)
    return counts


def _spd(n, rng):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


# ------------------------------------------------------------------ the kernel capability
def test_solve_triangular_is_a_capability_of_numpy_and_torch_not_the_standard():
    assert callable(rules.kernel(np.ones((2, 2)), "solve_triangular"))
    strict = pytest.importorskip("array_api_strict")
    assert rules.kernel(strict.ones((2, 2)), "solve_triangular") is None
    assert registry.get("numpy").kernel("no_such_kernel") is None
    variable = ag.Variable(np.ones((2, 2)))  # create_graph: rules differentiate the standard's
    assert rules.kernel(variable, "solve_triangular") is None


def test_forgetting_the_backends_forgets_the_kernels():
    rules.kernel(np.ones((2, 2)), "solve_triangular")
    assert _core._kernels
    rules.forget_capabilities()
    assert not _core._kernels


def test_a_missing_optional_library_means_no_kernel(monkeypatch):
    backend = registry.get("numpy")

    def missing():
        raise ImportError("No module named 'scipy'")
    monkeypatch.setattr(backend, "capabilities",
                        lambda: {**type(backend).capabilities(backend),
                                 "solve_triangular": missing})
    assert backend.kernel("solve_triangular") is None


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradients_agree_with_and_without_the_kernel(upper):
    strict = pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(0)
    a, w = _spd(5, rng), rng.standard_normal((5, 5))
    grads = []
    for backend, wrap in (("numpy", np.asarray), ("array_api_strict", strict.asarray)):
        xp = ag.namespace(backend)
        x = ag.Variable(wrap(a), requires_grad=True)
        xp.sum(xp.linalg.cholesky(x, upper=upper) * wrap(w)).backward()
        grads.append(np.asarray(x.grad.data))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ placements
@pytest.mark.parametrize("shape, offset", [((6, 6), 0), ((6, 6), 2), ((5, 7), -3),
                                           ((3, 4, 5), 1)])
def test_diagonal_vjp_places_without_products(products, shape, offset):
    x = np.zeros(shape)
    g = counted(np.diagonal(np.arange(x.size, dtype=float).reshape(shape), offset, -2, -1))
    grad = RULES["linalg.diagonal"].vjps[0](np, g, shape, offset=offset)
    assert products == []  # (a product with identities costs n^3)
    expected = np.zeros(shape)
    rows = np.arange(g.shape[-1]) + max(-offset, 0)
    expected[..., rows, rows - max(-offset, 0) + max(offset, 0)] = g
    np.testing.assert_array_equal(grad, expected)


# ------------------------------------------------------------------ triangular factors
def test_cholesky_vjp_and_jvp_solve_triangular_systems(linalg_calls, triangular):
    rng = np.random.default_rng(1)
    L = counted(np.linalg.cholesky(_spd(6, rng)))
    g = counted(rng.standard_normal((6, 6)))
    rule = RULES["linalg.cholesky"]
    rule.vjps[0](np, g, L)
    rule.jvps[0](np, g, L)
    assert triangular["solve_triangular"] == 4 and linalg_calls == {}


def test_without_the_kernel_cholesky_solves_through_the_standard(monkeypatch):
    counts = {}
    rng = np.random.default_rng(1)
    L = np.linalg.cholesky(_spd(6, rng))
    g = rng.standard_normal((6, 6))
    expected = RULES["linalg.cholesky"].vjps[0](np, g, L)
    monkeypatch.setitem(_core._kernels, (np.ndarray, "solve_triangular"), None)
    xp = Calls(np, {"linalg"}, counts)  # (the rule calls xp.linalg.solve)
    monkeypatch.setattr(xp, "linalg", Calls(np.linalg, {"solve"}, counts), raising=False)
    np.testing.assert_allclose(RULES["linalg.cholesky"].vjps[0](xp, g, L), expected,
                               rtol=1e-12, atol=1e-12)
    assert counts == {"solve": 2}


def test_qr_vjp_solves_a_triangular_system(linalg_calls, triangular):
    rng = np.random.default_rng(2)
    Q, R = (counted(a) for a in np.linalg.qr(rng.standard_normal((7, 5))))
    g = (counted(rng.standard_normal((7, 5))), counted(rng.standard_normal((5, 5))))
    RULES["linalg.qr"].vjps[0](np, g, (Q, R))
    assert triangular["solve_triangular"] == 1 and linalg_calls == {}


# ------------------------------------------------------------------ one factorisation
@pytest.mark.parametrize("vector", [False, True])
def test_solve_factorises_once_for_both_gradients(linalg_calls, vector):
    rng = np.random.default_rng(3)
    xp = ag.namespace("numpy")
    a = ag.Variable(_spd(5, rng), requires_grad=True)
    b = ag.Variable(rng.standard_normal(5 if vector else (5, 3)), requires_grad=True)
    loss = xp.sum(xp.linalg.solve(a, b) ** 2)
    linalg_calls.clear()
    loss.backward()
    assert linalg_calls == {"solve": 1}
    x = np.linalg.solve(a.data, b.data[:, None] if vector else b.data)
    gb = np.linalg.solve(a.data.T, 2 * x)
    np.testing.assert_allclose(a.grad.data, -gb @ x.T, rtol=1e-10)
    np.testing.assert_allclose(b.grad.data, gb[:, 0] if vector else gb, rtol=1e-10)


@pytest.mark.parametrize("wanted", [0, 1])
def test_a_joint_vjp_computes_only_the_gradients_wanted(raw, monkeypatch, wanted):
    counts = {}
    monkeypatch.setattr(raw, "einsum", Calls(raw, {"einsum"}, counts).einsum)
    xp = ag.namespace("numpy")
    rng = np.random.default_rng(4)
    x = [ag.Variable(rng.standard_normal((3, 4)), requires_grad=k == wanted) for k in (0, 1)]
    loss = xp.sum(xp.einsum("ij,jk->ik", x[0], xp.matrix_transpose(x[1])))
    counts.clear()
    loss.backward()
    assert counts == {"einsum": 1}
    assert x[1 - wanted].grad is None and x[wanted].grad is not None


def test_solve_with_a_constant_matrix_forms_no_matrix_gradient(products):
    rng = np.random.default_rng(5)
    a, b = counted(_spd(6, rng)), counted(rng.standard_normal((6, 2)))
    ans = counted(np.linalg.solve(a, b))
    grads = RULES["linalg.solve"].joint(np, counted(np.ones((6, 2))), a, b, ans,
                                        needed=(False, True))
    assert grads[0] is None and products == []


# ------------------------------------------------------------------ products
@pytest.mark.parametrize("n", [5, 64, -64, 100])
def test_matrix_power_vjp_takes_log_n_products(products, n):
    rng = np.random.default_rng(6)
    x = counted(rng.standard_normal((4, 4)) / 4 + np.eye(4))
    g = counted(rng.standard_normal((4, 4)))
    grad = RULES["linalg.matrix_power"].vjps[0](np, g, x, n=n)
    steps = abs(n).bit_length()
    assert len(products) <= 3 * 2 * steps + 2  # (a product per power: 3 |n|)
    B = np.linalg.inv(x) if n < 0 else np.asarray(x)
    expected = sum(np.linalg.matrix_power(B.T, k) @ g @ np.linalg.matrix_power(B.T, abs(n) - 1 - k)
                   for k in range(abs(n)))
    if n < 0:
        expected = -(B.T @ expected @ B.T)
    np.testing.assert_allclose(grad, expected, rtol=1e-8)


@pytest.mark.parametrize("shape", [(200, 5), (5, 200)])
def test_pinv_vjp_costs_m_n_min_m_n(products, shape):
    rng = np.random.default_rng(7)
    x = counted(rng.standard_normal(shape))
    P = counted(np.linalg.pinv(x))
    g = counted(rng.standard_normal(P.shape))
    RULES["linalg.pinv"].vjps[0](np, g, x, P)
    m, n = shape
    assert sum(products) <= 12 * m * n * min(m, n)  # (identities of max(m, n): max^2 min)


@pytest.mark.parametrize("vector", [False, True])
def test_matmul_of_a_batch_with_one_matrix_sums_in_its_product(products, vector):
    rng = np.random.default_rng(8)
    x1 = counted(rng.standard_normal((10, 6, 4)))
    x2 = counted(rng.standard_normal(4 if vector else (4, 3)))
    g = counted(rng.standard_normal((10, 6) if vector else (10, 6, 3)))
    grad = RULES["matmul"].vjps[1](np, g, x1, x2)
    assert grad.shape == x2.shape and len(products) == 1  # (no (10, 4, 3) batch to sum)
    expected = np.einsum("bnk,bn...->k...", x1, g)
    np.testing.assert_allclose(grad, expected, rtol=1e-12)


def test_eigvalsh_jvp_takes_one_product(products):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((6, 6))
    x, t = counted(a + a.T), counted(rng.standard_normal((6, 6)))
    tangent = RULES["linalg.eigvalsh"].jvps[0](np, t, x)
    assert len(products) == 1  # (diag(V^H t V) as two products: n^3 more)
    _, V = np.linalg.eigh(np.asarray(x))
    np.testing.assert_allclose(tangent, np.diagonal(V.T @ t @ V), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ det: LU, not an SVD
def _det_backward(a, counts, raw, monkeypatch, create_graph=False):
    monkeypatch.setattr(raw, "linalg", Calls(raw.linalg, {"svd", "inv"}, counts))
    xp = ag.namespace("numpy")
    x = ag.Variable(a, requires_grad=True)
    (grad,) = ag.autograd.grad(xp.sum(xp.linalg.det(x) * 1.5), [x], create_graph=create_graph)
    return np.asarray(grad.data)


@pytest.mark.parametrize("shape", [(5, 5), (3, 4, 4)])
def test_det_vjp_of_invertible_matrices_inverts_once_and_takes_no_svd(raw, monkeypatch, shape):
    a = np.random.default_rng(10).standard_normal(shape)
    counts = {}
    grad = _det_backward(a, counts, raw, monkeypatch)
    assert counts == {"inv": 1}  # (the SVD's adjugate costs several factorisations)
    expected = 1.5 * np.linalg.det(a)[..., None, None] * np.linalg.inv(a).swapaxes(-1, -2)
    np.testing.assert_allclose(grad, expected, rtol=1e-10, atol=1e-12)


def _adjugate(a):
    """The adjugate by cofactors, as the definition writes it."""
    n = a.shape[0]
    cof = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=0), j, axis=1)
            cof[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return cof.T


@pytest.mark.parametrize("a", [np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]]),  # det exactly 0
                               np.zeros((3, 3)), np.array([[1.0, 1], [1, 1]])])
def test_det_vjp_of_exactly_singular_matrices_takes_the_svd(raw, monkeypatch, a):
    assert np.linalg.det(a) == 0
    counts = {}
    grad = _det_backward(a, counts, raw, monkeypatch)
    assert counts == {"svd": 1}
    np.testing.assert_allclose(grad, 1.5 * _adjugate(a).T, atol=1e-12)


def test_det_vjp_near_a_singular_matrix_is_the_adjugate(raw, monkeypatch):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 3)) @ rng.standard_normal((3, 4))  # rank 3: det ~1e-16, not 0
    grad = _det_backward(a, {}, raw, monkeypatch)
    np.testing.assert_allclose(grad, 1.5 * _adjugate(a).T, atol=1e-12)


def test_det_second_order_on_either_path(raw, monkeypatch):
    a = np.random.default_rng(12).standard_normal((3, 3))
    for matrix in (a, np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]])):
        xp = ag.namespace("numpy")
        x = ag.Variable(matrix, requires_grad=True)
        (g,) = ag.autograd.grad(xp.linalg.det(x), [x], create_graph=True)
        (h,) = ag.autograd.grad(xp.sum(g * g), [x])
        eps, numeric = 1e-6, np.empty_like(matrix)
        adj_sq = lambda m: np.sum(_adjugate(m) ** 2)  # noqa: E731
        for index in np.ndindex(matrix.shape):
            step = np.zeros_like(matrix)
            step[index] = eps
            numeric[index] = (adj_sq(matrix + step) - adj_sq(matrix - step)) / (2 * eps)
        np.testing.assert_allclose(h.data, numeric, rtol=1e-6, atol=1e-6)
