"""``linalg.eig`` and ``linalg.eigvals`` (2025.12): gradients of phase-invariant functions of
their outputs against central differences, torch.autograd, and the forward mode."""

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.testing import check_grads


def _invariant(xp):
    def f(x):
        L, V = xp.linalg.eig(x)
        return L, xp.abs(V) ** 2 * xp.reshape(L, (1, -1))  # |v|^2 does not depend on the phase
    return f


@pytest.mark.parametrize("complex_input", [False, True])
def test_eig_and_eigvals_gradients(backend, rng, complex_input):
    a = rng.standard_normal((4, 4)) + (1j * rng.standard_normal((4, 4)) if complex_input else 0)
    check_grads(_invariant(backend.xp), a, backend=backend.name)
    check_grads(backend.xp.linalg.eigvals, a, backend=backend.name)
    batch = rng.standard_normal((2, 3, 3))
    check_grads(backend.xp.linalg.eigvals, batch, backend=backend.name)


def test_eigvals_jvp_matches_central_differences(rng):
    a, t = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    xp = ag.namespace("numpy")
    _, tangent = ag.jvp(xp.linalg.eigvals, (a,), (t,))
    _, (dL, dV) = ag.jvp(xp.linalg.eig, (a,), (t,))
    eps = 1e-6
    expected = (np.linalg.eigvals(a + eps * t) - np.linalg.eigvals(a - eps * t)) / (2 * eps)
    order = np.lexsort((np.imag(expected), np.real(expected)))
    mine = np.lexsort((np.imag(tangent), np.real(tangent)))
    np.testing.assert_allclose(tangent[mine], expected[order], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dL, tangent, atol=1e-12)


def test_eig_matches_torch(rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((4, 4))
    xp = ag.namespace("numpy")
    x = ag.Variable(a, requires_grad=True)
    L, V = xp.linalg.eig(x)
    loss = xp.sum(xp.real(L) ** 2) + xp.sum(xp.real(xp.abs(V) ** 2 * xp.reshape(L, (1, 4))))
    loss.backward()
    t = torch.tensor(a, requires_grad=True)
    Lt, Vt = torch.linalg.eig(t)
    ((Lt.real ** 2).sum() + (Vt.abs() ** 2 * Lt.reshape(1, 4)).real.sum()).backward()
    np.testing.assert_allclose(x.grad.data, t.grad.numpy(), rtol=1e-9, atol=1e-12)
