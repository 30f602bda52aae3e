"""Gradients agree with torch.autograd on the same inputs (real and complex), where torch is
installed: arraygrad's conventions are PyTorch's, including at kinks and for complex values."""

import numpy as np
import pytest

import arraygrad as ag

torch = pytest.importorskip("torch")

# name: (arraygrad function on xp, the same in torch, input makers)
CASES = {
    "exp_log1p": (lambda xp, x: xp.exp(x) * xp.log1p(x * x), lambda x: torch.exp(x) * torch.log1p(x * x)),
    "trig": (lambda xp, x: xp.sin(x) + xp.cos(x) * xp.tan(x) + xp.tanh(x) * xp.atan(x),
             lambda x: torch.sin(x) + torch.cos(x) * torch.tan(x) + torch.tanh(x) * torch.atan(x)),
    "kinks": (lambda xp, x: xp.abs(x) + xp.maximum(x, 0.0 * x) + xp.clip(x, -0.5, 0.5),
              lambda x: torch.abs(x) + torch.maximum(x, 0.0 * x) + torch.clamp(x, -0.5, 0.5)),
    "reductions": (lambda xp, x: xp.max(x, axis=0) + xp.prod(x, axis=0) + xp.std(x, axis=0, correction=1),
                   lambda x: torch.amax(x, dim=0) + torch.prod(x, dim=0) + torch.std(x, dim=0)),
    "matmul_softmax": (lambda xp, x: xp.exp(x @ x.mT - xp.max(x @ x.mT, axis=-1, keepdims=True)),
                       lambda x: torch.exp(x @ x.mT - torch.amax(x @ x.mT, dim=-1, keepdim=True))),
    "cumulative": (lambda xp, x: xp.cumulative_prod(x, axis=1) + xp.cumulative_sum(x, axis=0),
                   lambda x: torch.cumprod(x, dim=1) + torch.cumsum(x, dim=0)),
    "sort_where": (lambda xp, x: xp.sort(xp.where(x > 0, x, x * x), axis=0),
                   lambda x: torch.sort(torch.where(x > 0, x, x * x), dim=0).values),
}
COMPLEX_CASES = {
    "holomorphic": (lambda xp, z: xp.exp(z) * z / (z + 2), lambda z: torch.exp(z) * z / (z + 2)),
    "abs_conj_real": (lambda xp, z: xp.abs(z) + xp.real(z * xp.conj(z)) + xp.imag(z) ** 2,
                      lambda z: torch.abs(z) + torch.real(z * torch.conj(z)) + torch.imag(z) ** 2),
    "sqrt_log": (lambda xp, z: xp.sqrt(z) * xp.log(z), lambda z: torch.sqrt(z) * torch.log(z)),
    "matmul": (lambda xp, z: z @ z, lambda z: z @ z),
}


def _compare(f_ours, f_torch, values, rng):
    xp = ag.namespace("numpy")
    x = ag.Variable(values.copy(), requires_grad=True)
    out = f_ours(xp, x)
    g = rng.standard_normal(out.shape)
    if np.iscomplexobj(out.data):
        g = g + 1j * rng.standard_normal(out.shape)
    out.backward(g.astype(out.dtype))
    t = torch.tensor(values, requires_grad=True)
    out_torch = f_torch(t)
    out_torch.backward(torch.tensor(g.astype(out.dtype)))
    np.testing.assert_allclose(out.data, out_torch.detach().resolve_conj().numpy(), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(x.grad.data, t.grad.resolve_conj().numpy(), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("name", CASES)
def test_real_gradients_match_torch(name, rng):
    values = rng.standard_normal((3, 3))
    values[0, 0] = 0.0  # a kink for abs and maximum
    values[1, 1] = values[1, 2]  # a tie for max and sort
    _compare(*CASES[name], values, rng)


@pytest.mark.parametrize("name", COMPLEX_CASES)
def test_complex_gradients_match_torch(name, rng):
    values = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    _compare(*COMPLEX_CASES[name], values, rng)


def test_second_derivatives_match_torch(rng):
    values = rng.standard_normal(4)
    xp = ag.namespace("numpy")
    hessian = ag.hessian(lambda x: xp.sum(xp.sin(x) * x * x) * xp.prod(x))(values)
    expected = torch.autograd.functional.hessian(
        lambda x: torch.sum(torch.sin(x) * x * x) * torch.prod(x), torch.tensor(values))
    np.testing.assert_allclose(hessian, expected.numpy(), rtol=1e-10, atol=1e-12)


def _spd(rng, n=3):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


LINALG_CASES = {
    "inv": (lambda xp, a: xp.linalg.inv(a), lambda a: torch.linalg.inv(a)),
    "det": (lambda xp, a: xp.linalg.det(a), lambda a: torch.linalg.det(a)),
    "slogdet": (lambda xp, a: xp.linalg.slogdet(a)[1], lambda a: torch.linalg.slogdet(a)[1]),
    "solve": (lambda xp, a: xp.linalg.solve(a, a[..., :1] * 2 + 1),
              lambda a: torch.linalg.solve(a, a[..., :1] * 2 + 1)),
    "cholesky": (lambda xp, a: xp.linalg.cholesky(a @ a.mT + 3 * xp.eye(3, dtype=a.dtype)),
                 lambda a: torch.linalg.cholesky(a @ a.mT + 3 * torch.eye(3, dtype=a.dtype))),
    "eigh": (lambda xp, a: _eigh(xp.linalg.eigh(a + a.mT)),
             lambda a: _eigh(torch.linalg.eigh(a + a.mT))),
    "svd": (lambda xp, a: _svd(xp.linalg.svd(a, full_matrices=False)),
            lambda a: _svd(torch.linalg.svd(a, full_matrices=False))),  # real: |v|^2 = v * v
    "qr": (lambda xp, a: _qr(xp.linalg.qr(a)), lambda a: _qr(torch.linalg.qr(a))),
    "pinv": (lambda xp, a: xp.linalg.pinv(a[..., :2]), lambda a: torch.linalg.pinv(a[..., :2])),
    "matrix_norms": (lambda xp, a: xp.linalg.matrix_norm(a) + xp.linalg.matrix_norm(a, ord="nuc")
                     + xp.linalg.matrix_norm(a, ord=2),
                     lambda a: torch.linalg.matrix_norm(a) + torch.linalg.matrix_norm(a, ord="nuc")
                     + torch.linalg.matrix_norm(a, ord=2)),
    "matrix_power": (lambda xp, a: xp.linalg.matrix_power(a, -2),
                     lambda a: torch.linalg.matrix_power(a, -2)),
}


def _eigh(result):
    values, vectors = result
    return values[..., None] * vectors * vectors  # real eigenvectors: v * v ignores the sign


def _svd(result):
    U, S, Vh = result
    return (U * S[..., None, :]) @ Vh + S[..., None, :] * U * U


def _qr(result):
    Q, R = result
    return Q @ R + Q * 2


@pytest.mark.parametrize("name", LINALG_CASES)
def test_linalg_gradients_match_torch(name, rng):
    values = _spd(rng) + rng.standard_normal((3, 3))
    _compare(*LINALG_CASES[name], values, rng)


@pytest.mark.parametrize("name", ["inv", "det", "solve", "slogdet"])
def test_complex_linalg_gradients_match_torch(name, rng):
    values = _spd(rng) + 1j * rng.standard_normal((3, 3))
    _compare(*LINALG_CASES[name], values, rng)


FFT_CASES = {
    "fft": (lambda xp, z: xp.fft.fft(z, n=7, norm="ortho"), lambda z: torch.fft.fft(z, n=7, norm="ortho")),
    "ifftn": (lambda xp, z: xp.fft.ifftn(z, s=(3, 5), axes=(0, 1)),
              lambda z: torch.fft.ifftn(z, s=(3, 5), dim=(0, 1))),
    "irfft": (lambda xp, z: xp.fft.irfft(z, n=8), lambda z: torch.fft.irfft(z, n=8)),
    "hfft": (lambda xp, z: xp.fft.hfft(z, norm="forward"), lambda z: torch.fft.hfft(z, norm="forward")),
    "irfftn": (lambda xp, z: xp.fft.irfftn(z), lambda z: torch.fft.irfftn(z)),
}
REAL_FFT_CASES = {
    "rfft": (lambda xp, x: xp.fft.rfft(x, n=5), lambda x: torch.fft.rfft(x, n=5)),
    "rfftn": (lambda xp, x: xp.fft.rfftn(x, norm="ortho"), lambda x: torch.fft.rfftn(x, norm="ortho")),
    "ihfft": (lambda xp, x: xp.fft.ihfft(x), lambda x: torch.fft.ihfft(x)),
    "fftshift": (lambda xp, x: xp.fft.fftshift(x * x), lambda x: torch.fft.fftshift(x * x)),
}


@pytest.mark.parametrize("name", FFT_CASES)
def test_complex_fft_gradients_match_torch(name, rng):
    _compare(*FFT_CASES[name], rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)), rng)


@pytest.mark.parametrize("name", REAL_FFT_CASES)
def test_real_fft_gradients_match_torch(name, rng):
    _compare(*REAL_FFT_CASES[name], rng.standard_normal((3, 6)), rng)
