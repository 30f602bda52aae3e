"""Rules that are right at the edges, against ``torch.autograd`` (PyTorch 2.13) and float64 central
differences: complex selections and ``sign``, repeated eigenvalues and singular values, the
values of every ``unique_*`` function, multi-output functions with one output, empty operands,
and singular matrices (``det``'s adjugate; a clear error where a gradient needs an inverse)."""

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.errors import BackwardError

torch = pytest.importorskip("torch")

xp = ag.namespace("numpy")


def _weights(rng, shape, complex_):
    w = rng.standard_normal(shape)
    return w + 1j * rng.standard_normal(shape) if complex_ else w


def _loss_ours(out, rng):
    """``sum Re(conj(w) out)`` over the outputs, with random weights ``w``."""
    total = None
    for o in out if isinstance(out, (tuple, list)) else (out,):
        w = _weights(rng, o.shape, np.iscomplexobj(o.data))
        term = xp.sum(xp.real(o * xp.asarray(np.conj(w))) if np.iscomplexobj(o.data)
                      else o * xp.asarray(w))
        total = term if total is None else total + term
    return total


def ours(f, *values, seed=0):
    """Gradients of ``sum Re(conj(w) f(*values))`` through arraygrad."""
    xs = [ag.Variable(np.array(v), requires_grad=True) for v in values]
    _loss_ours(f(xp, *xs), np.random.default_rng(seed)).backward()
    return [x.grad.data for x in xs]


def theirs(f, *values, seed=0):
    """The same through torch.autograd (PyTorch's conjugate convention for complex inputs)."""
    rng = np.random.default_rng(seed)
    ts = [torch.tensor(np.array(v), requires_grad=True) for v in values]
    out = f(*ts)
    total = 0
    for o in out if isinstance(out, (tuple, list)) else (out,):
        w = torch.tensor(_weights(rng, tuple(o.shape), o.is_complex()))
        total = total + ((o * w.conj()).real.sum() if o.is_complex() else (o * w).sum())
    total.backward()
    return [t.grad.resolve_conj().numpy() for t in ts]


def central(f, *values, seed=0, eps=1e-6):
    """The same by central differences (``d/dRe + i d/dIm`` for complex inputs)."""
    def loss(*vs):
        with ag.no_grad():
            return float(_loss_ours(f(xp, *(ag.Variable(v) for v in vs)),
                                    np.random.default_rng(seed)).data)
    grads = []
    for k, v in enumerate(values):
        v = np.array(v)
        grad = np.zeros_like(v)
        for index in np.ndindex(v.shape):
            for step in ((1.0, 1j) if np.iscomplexobj(v) else (1.0,)):
                up, down = v.copy(), v.copy()
                up[index] += eps * step
                down[index] -= eps * step
                others = list(values)
                grad[index] += step * (loss(*others[:k], up, *others[k + 1:])
                                       - loss(*others[:k], down, *others[k + 1:])) / (2 * eps)
        grads.append(grad)
    return grads


def assert_all_close(actual, desired, rtol=1e-7, atol=1e-9):
    assert len(actual) == len(desired)
    for a, d in zip(actual, desired):
        assert np.shape(a) == np.shape(d)
        np.testing.assert_allclose(a, d, rtol=rtol, atol=atol)


@pytest.fixture
def rng():
    return np.random.default_rng(20)


# ------------------------------------------------------------------------ complex numbers
@pytest.mark.parametrize("name", ["max", "min"])
def test_complex_max_and_min_keep_the_imaginary_part_of_the_tangent(name, rng):
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    t = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    f = getattr(np, name)
    _, tangent = ag.jvp(lambda v: getattr(xp, name)(v, axis=1), (z,), (t,))
    eps = 1e-6
    want = (f(z + eps * t, axis=1) - f(z - eps * t, axis=1)) / (2 * eps)
    np.testing.assert_allclose(tangent, want, rtol=1e-7)
    assert np.abs(np.imag(want)).min() > 1e-3  # the imaginary part matters here


def test_complex_sign_has_torch_s_sgn_gradient(rng):
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    z[0, 0] = 0  # 0 there, as torch's
    assert_all_close(ours(lambda xp, v: xp.sign(v) * (v + 1), z),
                     theirs(lambda v: torch.sgn(v) * (v + 1), z))
    t = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    _, tangent = ag.jvp(xp.sign, (z,), (t,))
    _, want = torch.func.jvp(torch.sgn, (torch.tensor(z),), (torch.tensor(t),))
    np.testing.assert_allclose(tangent, want.numpy(), rtol=1e-10, atol=1e-12)
    z[0, 0] = 1 + 1j  # central differences away from 0
    assert_all_close(ours(lambda xp, v: xp.sign(v), z), central(lambda xp, v: xp.sign(v), z),
                     rtol=1e-6, atol=1e-8)


def test_real_of_complex_sign_requires_grad_and_real_sign_has_none(rng):
    z = ag.Variable(rng.standard_normal(3) + 1j * rng.standard_normal(3), requires_grad=True)
    assert xp.real(xp.sign(z)).requires_grad
    x = ag.Variable(rng.standard_normal(3), requires_grad=True)
    assert not xp.sign(x).requires_grad
    assert not np.sign(x).requires_grad


# ------------------------------------------------------------------------ degenerate spectra
def _degenerate():
    """A symmetric matrix whose eigenvalue 2 is exactly repeated (three times, with 4 and -2;
    singular values 2, 2, 2, 4): a permutation of diag(2, 2) and [[1, 3], [3, 1]]."""
    block = np.array([[2.0, 0, 0, 0], [0, 2.0, 0, 0], [0, 0, 1.0, 3.0], [0, 0, 3.0, 1.0]])
    order = [2, 0, 3, 1]
    return block[order][:, order]


# Only symmetric functions of a repeated spectrum have a gradient (the vectors of a repeated
# value are any basis of its space): sums over all the values.
SPECTRA = {
    "eigvalsh": (lambda xp, a: xp.sum(xp.linalg.eigvalsh(a) ** 2),
                 lambda a: torch.sum(torch.linalg.eigvalsh(a) ** 2)),
    "eigh[0]": (lambda xp, a: xp.sum(xp.linalg.eigh(a)[0] ** 2),
                lambda a: torch.sum(torch.linalg.eigh(a)[0] ** 2)),
    "svd[1]": (lambda xp, a: xp.sum(xp.linalg.svd(a)[1] ** 3),
               lambda a: torch.sum(torch.linalg.svd(a)[1] ** 3)),
    "svd[1],reduced": (lambda xp, a: xp.sum(xp.linalg.svd(a, full_matrices=False)[1] ** 3),
                       lambda a: torch.sum(torch.linalg.svd(a, full_matrices=False)[1] ** 3)),
    "eigvals": (lambda xp, a: xp.sum(xp.real(xp.linalg.eigvals(a)) ** 2),
                lambda a: torch.sum(torch.linalg.eigvals(a).real ** 2)),
}


@pytest.mark.parametrize("name", SPECTRA)
def test_values_alone_of_a_repeated_spectrum_have_a_finite_gradient(name, rng):
    a = _degenerate()
    f_ours, f_torch = SPECTRA[name]
    got = ours(f_ours, a)
    assert np.isfinite(got[0]).all()
    assert_all_close(got, theirs(f_torch, a), rtol=1e-8, atol=1e-10)
    if name in ("eigvalsh", "eigh[0]", "eigvals"):  # sum(w ** 2) = trace(A A): 2 A^T, times
        weight = np.random.default_rng(0).standard_normal()  # the random weight of ours()
        np.testing.assert_allclose(got[0], 2 * weight * a.T, atol=1e-10)
    # (eigvalsh reads one triangle: differences along symmetric directions only)
    symmetric = lambda xp, m: f_ours(xp, (m + m.mT) / 2)  # noqa: E731
    assert_all_close(ours(symmetric, a), central(symmetric, a), rtol=1e-6, atol=1e-7)


def test_values_of_repeated_spectra_by_central_differences(rng):
    # a I + b b^T keeps the eigenvalue a twice under any perturbation of a and b.
    def f(xp, a, b):
        m = a * xp.eye(3, dtype=b.dtype) + b[:, None] * b[None, :]
        return xp.concat([xp.linalg.eigvalsh(m), xp.linalg.svdvals(m),
                          xp.linalg.svd(m)[1], xp.linalg.eigh(m)[0]])
    a, b = np.array(1.5), rng.standard_normal(3)
    assert_all_close(ours(f, a, b), central(f, a, b), rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------------ unique values
@pytest.mark.parametrize("name", ["unique_all", "unique_counts", "unique_inverse"])
def test_every_unique_function_records_its_values(name, rng):
    def f(xp, x):
        values = getattr(xp, name)(x)[0]
        return values * xp.arange(1.0, values.shape[0] + 1)
    x = rng.standard_normal((3, 4))
    assert_all_close(ours(f, x), central(f, x), rtol=1e-6, atol=1e-8)
    ties = np.array([[1.0, 2.0, 2.0], [3.0, 1.0, 5.0]])
    assert_all_close(ours(f, ties), ours(lambda xp, v: xp.unique_values(v) * xp.arange(1.0, 5.0),
                                         ties))
    t = rng.standard_normal((3, 4))
    _, tangent = ag.jvp(lambda v: f(xp, v), (x,), (t,))
    np.testing.assert_allclose(tangent, np.sort(x.ravel()) * 0 + t.ravel()[np.argsort(
        x.ravel())] * np.arange(1.0, 13.0))
    v = ag.Variable(x, requires_grad=True)
    outputs = getattr(xp, name)(v)
    assert [o.requires_grad for o in outputs] == [True] + [False] * (len(outputs) - 1)


# ------------------------------------------------------------------------ edge shapes
EDGE_SHAPES = {
    "unstack,length_1,axis=1": (lambda xp, x: xp.unstack(x, axis=1)[0] * 2,
                                lambda x: torch.unbind(x, 1)[0] * 2, [(2, 1)]),
    "unstack,(1,)": (lambda xp, x: xp.unstack(x)[0] * 2, lambda x: torch.unbind(x)[0] * 2,
                     [(1,)]),
    "broadcast_arrays,one": (lambda xp, x: xp.broadcast_arrays(x)[0] * 2,
                             lambda x: torch.broadcast_tensors(x)[0] * 2, [(3,)]),
    "meshgrid,one,xy": (lambda xp, x: xp.meshgrid(x)[0] * 2,
                        lambda x: torch.meshgrid(x, indexing="xy")[0] * 2, [(3,)]),
    "meshgrid,one,ij": (lambda xp, x: xp.meshgrid(x, indexing="ij")[0] * 2,
                        lambda x: torch.meshgrid(x, indexing="ij")[0] * 2, [(3,)]),
    "prod,empty_other_axis": (lambda xp, x: xp.prod(x, axis=1), lambda x: torch.prod(x, 1),
                              [(0, 3)]),
    "prod,empty_other_axes": (lambda xp, x: xp.prod(x, axis=(0, 2)),
                              lambda x: torch.prod(torch.prod(x, 2), 0), [(2, 0, 3)]),
    "tensordot,empty_free_axis": (lambda xp, a, b: xp.tensordot(a, b, axes=1),
                                  lambda a, b: torch.tensordot(a, b, dims=1), [(0, 2), (2, 3)]),
    "tensordot,empty_second": (lambda xp, a, b: xp.tensordot(a, b, axes=1),
                               lambda a, b: torch.tensordot(a, b, dims=1), [(2, 3), (3, 0)]),
}


@pytest.mark.parametrize("name", EDGE_SHAPES)
def test_edge_shapes_match_torch(name, rng):
    f_ours, f_torch, shapes = EDGE_SHAPES[name]
    values = [rng.standard_normal(s) for s in shapes]
    assert_all_close(ours(f_ours, *values), theirs(f_torch, *values))


@pytest.mark.parametrize("shape", [(0,), (2, 0)])
def test_include_initial_in_forward_mode_along_an_empty_axis(shape, rng):
    x, t = rng.standard_normal(shape), rng.standard_normal(shape)
    _, tangent = ag.jvp(lambda v: xp.cumulative_prod(v, axis=-1, include_initial=True), (x,),
                        (t,))

    def reference(v):
        return torch.cat([torch.ones(shape[:-1] + (1,), dtype=v.dtype), torch.cumprod(v, -1)], -1)
    _, want = torch.func.jvp(reference, (torch.tensor(x),), (torch.tensor(t),))
    np.testing.assert_allclose(tangent, want.numpy(), rtol=1e-12)
    assert np.shape(tangent) == shape[:-1] + (1,)


# ------------------------------------------------------------------------ singular matrices
SINGULAR = {  # exactly singular: NumPy's inv refuses each
    "rank_2": [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]],
    "rank_2,zero_column": [[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 5.0, 6.0]],
    "rank_1": [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]],
    "rank_0": np.zeros((3, 3)),
}


@pytest.mark.parametrize("name", SINGULAR)
@pytest.mark.parametrize("complex_", [False, True])
def test_det_of_a_singular_matrix_has_the_adjugate_as_gradient(name, complex_, rng):
    a = np.array(SINGULAR[name]) * ((1 + 2j) if complex_ else 1)
    got = ours(lambda xp, m: xp.linalg.det(m), a)
    # torch 2.13 gives 0 at exactly singular matrices of rank 2 (its adjugate is not 0), and
    # the adjugate a step away: compared there.
    near = theirs(lambda m: torch.linalg.det(m), a + 1e-9 * np.eye(3))
    assert_all_close(got, near, rtol=1e-6, atol=1e-7)
    assert_all_close(got, central(lambda xp, m: xp.linalg.det(m), a), rtol=1e-6, atol=1e-8)
    t = _weights(rng, a.shape, complex_)
    _, tangent = ag.jvp(xp.linalg.det, (a,), (t,))
    eps = 1e-6
    want = (np.linalg.det(a + eps * t) - np.linalg.det(a - eps * t)) / (2 * eps)
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-8)


def test_a_gradient_that_needs_a_singular_inverse_is_refused_by_name():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    a = ag.Variable(singular, requires_grad=True)
    sign, logabs = xp.linalg.slogdet(a)
    with pytest.raises(BackwardError, match=r"linalg\.slogdet.*singular \(2, 2\) float64"):
        logabs.backward()
    b = ag.Variable(singular, requires_grad=True)
    xp.linalg.det(b).backward()  # the adjugate, finite
    np.testing.assert_allclose(b.grad.data, [[4.0, -2.0], [-2.0, 1.0]])
