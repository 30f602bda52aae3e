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
    np.testing.assert_allclose(out.data, out_torch.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.grad.data, t.grad.numpy(), rtol=1e-10, atol=1e-12)


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
