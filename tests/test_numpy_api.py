"""NumPy's API on Variables (NEP 13 and NEP 18): every NumPy function classified, NumPy's
arguments taken or refused by name, values equal to NumPy's own and gradients checked against
float64 central differences and torch.autograd."""

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import _numpy_protocol as P
from arraygrad.testing import check_grads

from tests.interop import matrix

rng = np.random.default_rng(11)
M = rng.uniform(0.2, 1.5, (3, 3))
R = rng.uniform(0.2, 1.5, (4, 3))
W = rng.uniform(0.2, 1.5, 4)
SYM = M + M.T + 4 * np.eye(3)
E = rng.standard_normal((6, 6))  # its triangles differ: eigh(E, "U") and eigh(E, "L") too

def _hermitian(lower):
    """The symmetric matrix of a lower triangle: what NumPy's eigh reads (torch's gradient
    assumes both triangles)."""
    return lower + lower.tril(-1).T


# name, NumPy call on one array, its input, torch's same call (or None where torch has none)
CASES = [
    ("cross axisc=0", lambda x: np.cross(x, M, axisc=0), M,
     lambda t, T: T.linalg.cross(t, T.tensor(M), dim=-1).T),
    ("cross axisa=0 axisb=0", lambda x: np.cross(x, M, axisa=0, axisb=0), M,
     lambda t, T: T.linalg.cross(t.T, T.tensor(M).T, dim=-1)),
    ("cross of 2-vectors", lambda x: np.cross(x[:, :2], M[:, 1:]), M, None),
    ("pad (3, 2)", lambda x: np.pad(x, (3, 2)), M, None),
    ("pad ((1, 0), (2, 1)) constant_values", lambda x: np.pad(
        x, ((1, 0), (2, 1)), constant_values=((1.5, 2.0), (3.0, 4.0))), M, None),
    ("pad reflect", lambda x: np.pad(x, ((2, 1), (0, 2)), mode="reflect"), M, None),
    ("pad wrap", lambda x: np.pad(x, 2, mode="wrap"), M, None),
    ("fft.fft", lambda x: np.abs(np.fft.fft(x, axis=0)), R,
     lambda t, T: T.abs(T.fft.fft(t, dim=0))),
    ("fft.rfft2 norm=ortho", lambda x: np.abs(np.fft.rfft2(x, norm="ortho")), R,
     lambda t, T: T.abs(T.fft.rfft2(t, norm="ortho"))),
    ("fft.irfftn of rfftn", lambda x: np.fft.irfftn(np.fft.rfftn(x) * 2, s=x.shape), R, None),
    ("tril k=-1", lambda x: np.tril(x, -1), M, lambda t, T: T.tril(t, -1)),
    ("triu k=1", lambda x: np.triu(x, 1), R, lambda t, T: T.triu(t, 1)),
    ("diag of a vector k=1", lambda x: np.diag(x, 1), W, lambda t, T: T.diag(t, 1)),
    ("diag of a matrix k=-1", lambda x: np.diag(x, -1), R, lambda t, T: T.diag(t, -1)),
    ("diagflat", lambda x: np.diagflat(x, -1), M, lambda t, T: T.diagflat(t, -1)),
    ("split", lambda x: np.split(x, [1, 3])[1] * 2 + np.split(x, 4)[3], R, None),
    ("array_split / hsplit / vsplit", lambda x: np.array_split(x, 2, axis=1)[1][:2]
     + np.hsplit(x, [1])[1][:2] ** 2 + np.vsplit(x, 2)[0][:, 1:], R, None),
    ("column_stack", lambda x: np.column_stack([x[0], x[1:3].T]), R, None),
    ("hstack of 0-d operands", lambda x: np.hstack([x[0, 0], x[1, 1] ** 2, x[2]]), M, None),
    ("dstack", lambda x: np.dstack([x, x ** 2]), M, lambda t, T: T.dstack([t, t ** 2])),
    ("append axis=None", lambda x: np.append(x, x[0] ** 2), M, None),
    ("insert", lambda x: np.insert(x, [1, 2], x[0] ** 2, axis=0), M, None),
    ("delete", lambda x: np.delete(x, 1, axis=1), M, None),
    ("kron", lambda x: np.kron(x, M[:2]), R, lambda t, T: T.kron(t, T.tensor(M[:2]))),
    ("block", lambda x: np.block([[x, x ** 2], [M, x]]), M, None),
    ("flipud / fliplr", lambda x: np.flipud(x) * np.fliplr(x), R,
     lambda t, T: T.flipud(t) * T.fliplr(t)),
    ("rot90 k=3 axes=(1, 0)", lambda x: np.rot90(x, 3, axes=(1, 0)), R,
     lambda t, T: T.rot90(t, 3, (1, 0))),
    ("rollaxis", lambda x: np.rollaxis(x[None] * 2, 2, 1), R, None),
    ("swapaxes(v, 0, 0)", lambda x: np.swapaxes(x, 0, 0), R, None),
    ("select", lambda x: np.select([x > 1.0, x > 0.5], [x, x ** 2], default=x[0, 0]), R, None),
    ("gradient", lambda x: np.gradient(x, 0.5, 2.0)[1], R, None),
    ("gradient edge_order=2 axis=0", lambda x: np.gradient(x, axis=0, edge_order=2), R, None),
    ("linspace between Variables", lambda x: np.linspace(x[0], x[1] * 2, 5, axis=1), R, None),
    ("linspace endpoint=False", lambda x: np.linspace(x[0], 3.0, 4, endpoint=False), R, None),
    ("sinc", np.sinc, R, lambda t, T: T.sinc(t)),
    ("nan_to_num", lambda x: np.nan_to_num(np.log(x - 0.5), nan=1.5, neginf=-3.0), R, None),
    ("real_if_close", lambda x: np.real_if_close(x + 1e-18j), R, None),
    ("einsum sublists", lambda x: np.einsum(x, [0, 1], M, [1, 2], [0, 2]), R,
     lambda t, T: T.einsum("ij,jk->ik", t, T.tensor(M))),
    ("einsum implicit optimize=True", lambda x: np.einsum("ij,jk", x, M, optimize=True), R,
     lambda t, T: T.einsum("ij,jk", t, T.tensor(M))),
    ("einsum trace", lambda x: np.einsum("ii", x), M, lambda t, T: T.einsum("ii", t)),
    ("eigh UPLO=U", lambda x: np.linalg.eigh(x + SYM, UPLO="U")[0], M,
     lambda t, T: T.linalg.eigh(_hermitian(T.triu(t + T.tensor(SYM)).T))[0]),
    # LAPACK fixes each eigenvector's sign differently for each triangle: NumPy's, for "U" too
    ("eigh UPLO=U eigenvectors", lambda x: np.linalg.eigh(x, UPLO="U")[1], E, None),
    ("eigh UPLO=U eigenvectors, batched", lambda x: np.linalg.eigh(x, "U").eigenvectors,
     np.stack([E, E.T + 1]), None),
    # NumPy's mode="r" is R alone (was read as a (Q, R) pair: two rows of R, or a crash)
    ("qr mode=r", lambda x: np.linalg.qr(x, mode="r"), R,
     lambda t, T: T.linalg.qr(t, mode="reduced")[1]),
    ("qr mode=r of a wide matrix", lambda x: np.linalg.qr(x[:2], mode="r"), R, None),
    # hermitian=True: NumPy goes through eigh, which reads the lower triangle only
    ("svd hermitian=True U", lambda x: np.linalg.svd(x, hermitian=True)[0], E, None),
    ("svd hermitian=True Vh", lambda x: np.linalg.svd(x + x.T, hermitian=True).Vh, E, None),
    ("svd hermitian=True compute_uv=False", lambda x: np.linalg.svd(
        x, compute_uv=False, hermitian=True), E, None),
    ("pinv hermitian=True", lambda x: np.linalg.pinv(x, hermitian=True), E, None),
    ("eigvalsh UPLO=L", lambda x: np.linalg.eigvalsh(x + SYM), M,
     lambda t, T: T.linalg.eigvalsh(_hermitian(T.tril(t + T.tensor(SYM))))),
    ("cov", lambda x: np.cov(x), R, lambda t, T: T.cov(t)),
    ("corrcoef rowvar=False", lambda x: np.corrcoef(x, rowvar=False), R,
     lambda t, T: T.corrcoef(t.T)),
    ("vander", lambda x: np.vander(x, 3), W,
     lambda t, T: T.stack([t * t, t, T.ones_like(t)], dim=1)),
    ("trapezoid", lambda x: np.trapezoid(x, dx=0.5, axis=0), R,
     lambda t, T: T.trapezoid(t, dx=0.5, dim=0)),
    ("ptp", lambda x: np.ptp(x, axis=1), R, None),
    ("sum initial=", lambda x: np.sum(x, axis=0, initial=2.0), R, None),
    ("linalg.lstsq", lambda x: np.linalg.lstsq(x, W)[0], R,
     lambda t, T: T.linalg.lstsq(t, T.tensor(W)[:, None]).solution[:, 0]),
    ("linalg.multi_dot", lambda x: np.linalg.multi_dot([x, M, x.T]), R,
     lambda t, T: T.linalg.multi_dot([t, T.tensor(M), t.T])),
    ("linalg.cond", lambda x: np.linalg.cond(x + SYM), M,
     lambda t, T: T.linalg.cond(t + T.tensor(SYM))),
    ("unwrap", lambda x: np.unwrap(x * 6), R, None),
    ("frexp / modf / ldexp", lambda x: np.frexp(x * 3)[0] + np.modf(x * 3)[0]
     + np.ldexp(x, 2), R, None),
]


def _torch_gradient(reference, x, u):
    torch = pytest.importorskip("torch")
    t = torch.tensor(x, requires_grad=True)
    (reference(t, torch) * torch.tensor(u)).sum().backward()
    return t.grad.numpy()


@pytest.mark.parametrize("name, f, x, reference", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients(name, f, x, reference):
    np.testing.assert_allclose(f(ag.Variable(x)).data, f(x), rtol=1e-12, atol=1e-12)
    check_grads(f, (x,), order=1, modes=("rev",))
    if reference is not None:
        v = ag.Variable(x, requires_grad=True)
        out = f(v)
        u = np.random.default_rng(0).standard_normal(out.shape)
        np.sum(out * u).backward()
        np.testing.assert_allclose(v.grad.data, _torch_gradient(reference, x, u), rtol=1e-9,
                                   atol=1e-10)


SPECIALS = [("j0", ()), ("j1", ()), ("y0", ()), ("y1", ()), ("yn", (2,)), ("rgamma", ()),
            ("gammasgn", ())]


@pytest.mark.parametrize("name, constants", SPECIALS)
def test_scipy_special_functions_through_numpy_ufuncs(name, constants):
    ufuncs = pytest.importorskip("scipy.special._ufuncs")
    x = np.array([0.4, 1.3, 2.7, 5.1])
    f = getattr(ufuncs, name)
    check_grads(lambda v: f(*constants, v) * v, (x,), order=2, modes=("rev",))


def test_rgamma_at_the_poles_of_gamma_and_multigammaln():
    pytest.importorskip("scipy")
    from scipy.special._ufuncs import rgamma
    xp = ag.namespace("numpy")
    check_grads(rgamma, (np.array([-3.0, -1.0, 0.0, -0.5]),), order=1, modes=("rev",))
    check_grads(lambda a: xp.special.multigammaln(a, 3), (np.array(2.7),), order=2,
                modes=("rev",))


def test_every_numpy_function_and_ufunc_is_classified():
    functions, ufuncs = matrix.numpy_api()
    lists = [set(P.FUNCTIONS), set(P.ON_VALUES), set(P.REFUSED)]
    assert not set.intersection(*lists[:2]) and not lists[0] & lists[2] and not (
        lists[1] & lists[2])
    assert functions - set.union(*lists) == set(), "new NumPy functions: classify them"
    assert ufuncs - {*P.UFUNCS, *P.COMPOSED_UFUNCS, *P.UFUNCS_ON_VALUES} == set()
    assert P.NO_DERIVATIVE <= set(P.FUNCTIONS)


def test_implementations_use_numpys_argument_names():
    import inspect
    for name, implementation in P.FUNCTIONS.items():
        if getattr(implementation, "accepts", None) == "all":
            continue
        numpy_parameters = inspect.signature(P._numpy_function(name)).parameters
        if any(p.kind is p.VAR_KEYWORD for p in numpy_parameters.values()):
            continue  # NumPy's **kwargs (pad's constant_values, einsum's dtype)
        for parameter in inspect.signature(implementation).parameters.values():
            if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                assert parameter.name in numpy_parameters, (name, parameter.name)


def test_the_committed_docs_list_what_the_tables_say():
    text = matrix.OUTPUT.read_text()
    assert "\n".join(matrix.numpy_api_section()) in text, (
        "docs/interop.md is out of date: run python -m tests.interop.matrix")


@pytest.mark.parametrize("call, argument", [
    (lambda v: np.sum(v, where=v.data > 1), "where="),
    (lambda v: np.reshape(v, (12,), order="F"), "order="),
    (lambda v: np.mean(v, out=np.empty(3)), "out="),
    (lambda v: np.linspace(v[0], v[1], 3, device="cpu"), "device="),
    (lambda v: np.linalg.tensorsolve(v[:3], W[:3], axes=(0,)), "axes="),
    (lambda v: np.cov(v, fweights=[1, 2, 1, 1]), "fweights="),
    (lambda v: np.pad(v, 1, mode="mean"), "mode='mean'"),
    (lambda v: np.hstack([v, v], casting="no"), "casting="),
    (lambda v: np.histogram(v), "histogram.*requires grad"),
    (lambda v: np.convolve(v[0], v[1]), "convolve.*compose"),
    (lambda v: np.linalg.qr(v, mode="raw"), "mode='raw'"),  # was read as a (Q, R) pair
])
def test_unsupported_arguments_are_refused_by_name(call, argument):
    with pytest.raises(TypeError, match=argument):
        call(ag.Variable(R, requires_grad=True))


def test_value_only_functions_unwrap_keyword_variables():
    v, w = ag.Variable(R, requires_grad=True), ag.Variable(R + 0.05)
    np.testing.assert_array_equal(np.isclose(v, w, atol=ag.Variable(np.array(0.1))),
                                  np.isclose(R, R + 0.05, atol=0.1))
    assert np.may_share_memory(v, v) is True and np.shape(v) == (4, 3)
    np.testing.assert_array_equal(np.iscomplex(v), np.zeros((4, 3), bool))
    counts, edges = np.histogram(ag.Variable(R))  # needs no grad: NumPy's own result
    np.testing.assert_array_equal(counts, np.histogram(R)[0])


def test_eigh_upper_gives_numpys_eigenvectors_for_complex_matrices_too():
    z = E + 1j * np.random.default_rng(3).standard_normal((6, 6))
    w, v = np.linalg.eigh(ag.Variable(z, requires_grad=True), "U")
    np.testing.assert_allclose(w.data, np.linalg.eigh(z, "U")[0], rtol=1e-12)
    np.testing.assert_allclose(v.data, np.linalg.eigh(z, "U")[1], rtol=1e-10, atol=1e-12)


def test_a_variable_that_requires_grad_converts_to_integers_but_not_to_floats():
    """``np.int64(v)``, ``np.asarray(v, dtype=bool)``: integers and booleans have no derivative
    to lose (as ``int(v)`` and ``xp.astype(v, xp.int64)``); floating values would leave the
    graph, and are refused."""
    v = ag.Variable(np.array([0.7, 2.2, 1.0]), requires_grad=True)
    indices = np.int64(v)
    assert indices.dtype == np.int64 and list(indices) == [0, 2, 1]
    assert list(np.asarray(v, dtype=bool)) == [True, True, True]
    assert np.array([v, v], dtype=np.uint8).shape == (2, 3)
    for convert in (np.asarray, np.float64, lambda v: np.asarray(v, dtype=np.float32)):
        with pytest.raises(ag.GradientError, match="cannot convert a Variable that requires"):
            convert(v)
    w = ag.Variable(np.ones((5, 2)), requires_grad=True)  # HIPS autograd's test_cast_to_int
    np.sum(w[:, :-1][np.int64(w[:, -1])]).backward()
    np.testing.assert_array_equal(w.grad.data, [[0, 0]] + [[5, 0]] + [[0, 0]] * 3)


def test_eigh_upper_and_hermitian_svd_on_torch_give_numpys_vectors():
    torch = pytest.importorskip("torch")
    v = ag.Variable(torch.tensor(E), requires_grad=True)
    w, vectors = np.linalg.eigh(v, "U")
    np.testing.assert_allclose(vectors.detach().numpy(), np.linalg.eigh(E, "U")[1], atol=1e-12)
    u = np.linalg.svd(v + v.mT, hermitian=True)[0]
    np.testing.assert_allclose(u.detach().numpy(), np.linalg.svd(E + E.T, hermitian=True)[0],
                               atol=1e-12)


def test_matrix_rank_hermitian_reads_the_lower_triangle_as_numpy():
    a = np.array([[1.0, 5.0], [1.0, 1.0]])  # rank 2; the Hermitian matrix of its tril: 1
    assert np.linalg.matrix_rank(a, hermitian=True) == 1 and np.linalg.matrix_rank(a) == 2
    v = ag.Variable(a, requires_grad=True)
    assert np.linalg.matrix_rank(v, hermitian=True) == np.linalg.matrix_rank(a, hermitian=True)
