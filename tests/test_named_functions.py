"""Functions outside the standard that arraygrad offers by name on every backend (``logsumexp``,
``softmax``, ``log_softmax``, ``sinc``, ``xlogy``): values against SciPy and NumPy at ordinary
and extreme inputs, gradients against torch.autograd, second order, forward mode, and a loss
head written with them. (Their conformance cases check them against central differences on
every backend.)"""

from __future__ import annotations

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.testing import check_grads

special = pytest.importorskip("scipy.special")
xp = ag.namespace("numpy")
rng = np.random.default_rng(0)
X = rng.normal(size=(4, 5))

NAMED = {  # name: (arraygrad's call, SciPy's or NumPy's)
    "logsumexp": (lambda x: xp.logsumexp(x, axis=1), lambda x: special.logsumexp(x, axis=1)),
    "logsumexp_all": (lambda x: xp.logsumexp(x), lambda x: special.logsumexp(x)),
    "logsumexp_keepdims": (lambda x: xp.logsumexp(x, axis=0, keepdims=True),
                           lambda x: special.logsumexp(x, axis=0, keepdims=True)),
    "softmax": (lambda x: xp.softmax(x), lambda x: special.softmax(x, axis=-1)),
    "softmax_axis0": (lambda x: xp.softmax(x, axis=0), lambda x: special.softmax(x, axis=0)),
    "log_softmax": (lambda x: xp.log_softmax(x), lambda x: special.log_softmax(x, axis=-1)),
    "sinc": (xp.sinc, np.sinc),
}


@pytest.mark.parametrize("name", NAMED)
@pytest.mark.parametrize("scale", [1.0, 800.0])  # 800: exp overflows without the shift
def test_values_match_scipy(name, scale):
    ours, theirs = NAMED[name]
    np.testing.assert_allclose(ours(ag.Variable(X * scale)).data, theirs(X * scale),
                               rtol=1e-12, atol=1e-300)


def test_values_at_infinities_match_torch():
    """PyTorch's and JAX's values (SciPy's log_softmax shifts [inf, 0] by 0, not inf, and
    gives [nan, -inf] where they give NaN along the slice)."""
    torch = pytest.importorskip("torch")
    x = np.array([[-np.inf, -np.inf], [np.inf, 0.0], [-np.inf, 1.0], [np.nan, 0.0]])
    theirs = {"logsumexp": lambda t: torch.logsumexp(t, 1), "softmax": lambda t: torch.softmax(
        t, 1), "log_softmax": lambda t: torch.log_softmax(t, 1)}
    with np.errstate(all="ignore"):
        for name, reference in theirs.items():
            ours = getattr(xp, name)(ag.Variable(x), axis=1).data
            np.testing.assert_array_equal(ours, reference(torch.tensor(x)).numpy(), name)


def test_xlogy_and_sinc_at_zero():
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(xp.xlogy(ag.Variable(np.array([0.0, 0.0, 2.0])),
                                               np.array([0.0, 3.0, 3.0])).data,
                                      special.xlogy([0.0, 0.0, 2.0], [0.0, 3.0, 3.0]))
    a = ag.Variable(np.array([0.0, 2.0]), requires_grad=True)
    b = ag.Variable(np.array([3.0, 3.0]), requires_grad=True)
    xp.sum(xp.xlogy(a, b)).backward()  # at x1 = 0 the derivative in x1 is log(x2) (PyTorch's,
    np.testing.assert_allclose(a.grad.data, [np.log(3.0), np.log(3.0)])  # JAX's), 0 at x2 <= 0
    np.testing.assert_allclose(b.grad.data, [0.0, 2.0 / 3.0])
    z = ag.Variable(np.array([0.0, 0.5]), requires_grad=True)
    xp.sum(xp.sinc(z)).backward()
    assert z.grad.data[0] == 0.0 and np.isclose(z.grad.data[1], -4 / np.pi)  # (cos - sinc)/x


CALLS = {
    "logsumexp": lambda ns, x: ns.logsumexp(x, axis=1),
    "softmax": lambda ns, x: ns.softmax(x, axis=0),
    "log_softmax": lambda ns, x: ns.log_softmax(x),
    "sinc": lambda ns, x: ns.sinc(x),
    "xlogy": lambda ns, x: ns.xlogy(x, x * x + 0.5),
}


@pytest.mark.parametrize("name", CALLS)
def test_gradients_numerically_to_second_order(name):
    check_grads(lambda x: CALLS[name](xp, x), X, order=2)


@pytest.mark.parametrize("name", CALLS)
def test_gradients_and_tangents_match_torch(name):
    torch = pytest.importorskip("torch")
    torch_calls = {
        "logsumexp": lambda x: torch.logsumexp(x, dim=1),
        "softmax": lambda x: torch.softmax(x, dim=0),
        "log_softmax": lambda x: torch.log_softmax(x, dim=-1),
        "sinc": torch.sinc,
        "xlogy": lambda x: torch.xlogy(x, x * x + 0.5),
    }
    u = rng.normal(size=CALLS[name](xp, ag.Variable(X)).shape)
    t = torch.tensor(X, requires_grad=True)
    torch.autograd.backward(torch_calls[name](t), torch.tensor(u))
    grad = ag.vjp(lambda x: CALLS[name](xp, x), X)[1](u)[0]
    np.testing.assert_allclose(np.asarray(grad), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    tangent = rng.normal(size=X.shape)
    _, ours = ag.jvp(lambda x: CALLS[name](xp, x), (X,), (tangent,))
    _, theirs = torch.func.jvp(torch_calls[name], (torch.tensor(X),), (torch.tensor(tangent),))
    np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", ["array_api_strict", "torch", "jax", "dask"])
def test_offered_on_every_backend(backend):
    """Made of the standard's functions, they exist wherever the backend does, with the same
    signature (torch's own logsumexp takes dim=, JAX's is in jax.nn)."""
    info = {i.name: i for i in ag.backends()}
    if not info[backend].available:
        pytest.skip(f"{backend} is not installed")
    ns = ag.namespace(backend)
    x = ag.Variable(ns.asarray(X).data, requires_grad=True)
    loss = ns.sum(ns.log_softmax(x) * ns.softmax(x, axis=0)) + ns.sum(ns.logsumexp(x, axis=1))
    loss.backward()
    ref = ag.Variable(X, requires_grad=True)
    (xp.sum(xp.log_softmax(ref) * xp.softmax(ref, axis=0)) + xp.sum(xp.logsumexp(ref, axis=1))
     ).backward()
    got = np.asarray(x.grad.detach().to("numpy").data)
    np.testing.assert_allclose(got, ref.grad.data, rtol=1e-10)


def test_a_loss_head_written_with_them_equals_the_written_out_one():
    """The documented loss head: mean cross-entropy through xp.log_softmax, against the same
    written out with the standard's functions (both gradients, and torch's)."""
    logits, onehot = rng.normal(size=(8, 3)), np.eye(3)[rng.integers(0, 3, 8)]
    named = ag.Variable(logits, requires_grad=True)
    (-xp.mean(xp.sum(onehot * xp.log_softmax(named, axis=1), axis=1))).backward()
    written = ag.Variable(logits, requires_grad=True)
    shifted = written - xp.max(written, axis=1, keepdims=True)
    log_p = shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
    (-xp.mean(xp.sum(onehot * log_p, axis=1))).backward()
    np.testing.assert_allclose(named.grad.data, written.grad.data, rtol=1e-12)
    np.testing.assert_allclose(named.grad.data, (special.softmax(logits, axis=1) - onehot) / 8,
                               rtol=1e-12)
