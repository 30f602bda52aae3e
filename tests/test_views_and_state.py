"""Views where NumPy makes views, state that never goes stale, inputs refused rather than
silently mishandled (issue 48). Gradients against central differences and torch.autograd."""

import subprocess
import sys

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.testing import check_grads

xp = ag.namespace("numpy")
torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")

# name: (make a view of a (2, 3, 4) array, torch's view, a key into the view, the base's
# positions that key reaches, as a NumPy view of the base)
VIEWS = {
    "reshape": (lambda v: xp.reshape(v, (6, 4)), lambda t: t.reshape(6, 4),
                (slice(1, 3), 0), lambda b: b.reshape(6, 4)),
    "permute_dims": (lambda v: xp.permute_dims(v, (2, 0, 1)), lambda t: t.permute(2, 0, 1),
                     (1, 0), lambda b: b.transpose(2, 0, 1)),
    "matrix_transpose": (lambda v: v.mT, lambda t: t.mT, (0, 1), lambda b: b.swapaxes(-1, -2)),
    "expand_dims": (lambda v: xp.expand_dims(v, axis=0), lambda t: t.unsqueeze(0),
                    (0, 1, 2), lambda b: b[None]),
    "squeeze": (lambda v: xp.squeeze(xp.reshape(v, (1, 2, 12)), axis=0),
                lambda t: t.reshape(1, 2, 12).squeeze(0), (1, slice(0, 5)),
                lambda b: b.reshape(2, 12)),
    "moveaxis": (lambda v: xp.moveaxis(v, 0, 2), lambda t: t.movedim(0, 2), (1, 2),
                 lambda b: np.moveaxis(b, 0, 2)),
    "flip": (lambda v: xp.flip(v, axis=1), None, (0, 0), lambda b: b[:, ::-1]),  # torch copies
    "T": (lambda v: xp.reshape(v, (6, 4)).T, lambda t: t.reshape(6, 4).T, (2, slice(1, 4)),
          lambda b: b.reshape(6, 4).T),
}


@pytest.mark.parametrize("name", VIEWS)
def test_a_write_through_a_view_reaches_its_base_and_back(name):
    make, _, key, numpy_view = VIEWS[name]
    base = ag.Variable(np.arange(24.0).reshape(2, 3, 4))
    view = make(base)
    view[key] = -1.0
    expected = np.arange(24.0).reshape(2, 3, 4)
    numpy_view(expected)[key] = -1.0  # NumPy's own view, written the same way
    np.testing.assert_array_equal(base.data, expected)
    base += 1.0  # and the base's change reaches the view
    np.testing.assert_array_equal(view.data, numpy_view(expected + 1.0))


@pytest.mark.parametrize("name", VIEWS)
def test_gradients_through_a_write_into_a_view_match_torch(name):
    make, make_torch, key, _ = VIEWS[name]
    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal((2, 3, 4)), rng.standard_normal(())

    def f(x, w):
        y = xp.sin(x) * 1.0
        view = make(y)
        view[key] = w * 3.0
        return xp.sum(y * y * xp.cos(x))

    check_grads(f, (x0, w0), modes=("rev",))
    if make_torch is None:
        return
    x, w = ag.Variable(x0, requires_grad=True), ag.Variable(w0, requires_grad=True)
    f(x, w).backward()
    tx, tw = (torch.tensor(a, requires_grad=True) for a in (x0, w0))
    ty = torch.sin(tx) * 1.0
    make_torch(ty)[key] = tw * 3.0
    torch.sum(ty * ty * torch.cos(tx)).backward()
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.data, tw.grad.numpy(), rtol=1e-12)


def test_a_reshape_numpy_copies_is_no_view():
    base = ag.Variable(np.arange(12.0).reshape(3, 4))
    strided = base[:, ::3]  # columns 0 and 3: no one stride walks them, NumPy copies
    flat = xp.reshape(strided, (6,))
    flat[0] = 100.0
    assert base.data[0, 0] == 0.0 and strided.data[0, 0] == 0.0


def test_writes_through_a_thousand_views_need_no_recursion():
    z = ag.Variable(np.zeros(2000))
    view = z
    for _ in range(1000):
        view = view[1:]
    view[0] = 7.0
    assert z.data[1000] == 7.0
    w = ag.Variable(np.zeros(10))
    views = [w[1:] for _ in range(1000)]
    chain = w
    for _ in range(1000):
        chain = xp.reshape(chain, (10,))
    w += 1.0
    assert all(v.data[0] == 1.0 for v in views) and chain.data[0] == 1.0


def test_detach_shares_values_both_ways_but_not_history():
    x = ag.Variable(np.arange(3.0), requires_grad=True)
    y = x * 2.0
    d = y.detach()
    d += 1.0  # reaches y's values; y keeps its graph
    np.testing.assert_array_equal(y.data, [1.0, 3.0, 5.0])
    assert y.grad_fn is not None and d.grad_fn is None
    y += 10.0
    np.testing.assert_array_equal(d.data, [11.0, 13.0, 15.0])
    leaf = ag.Variable(np.ones(2), requires_grad=True)
    leaf.detach()[0] = 5.0  # as PyTorch's optimizers may: no error, the leaf sees it
    assert leaf.data[0] == 5.0


def test_new_data_of_another_shape_drops_the_old_gradient():
    x = ag.Variable(np.arange(6.0).reshape(2, 3), requires_grad=True)
    xp.sum(x * 2.0).backward()
    x.data = np.ones(3)
    assert x.grad is None
    xp.sum(x * 3.0).backward()
    np.testing.assert_array_equal(x.grad.data, [3.0, 3.0, 3.0])
    x.data = np.zeros(3)  # the same shape and dtype: the gradient stays, as in PyTorch
    np.testing.assert_array_equal(x.grad.data, [3.0, 3.0, 3.0])


def test_a_leaf_that_stopped_requiring_grad_gets_none():
    x = ag.Variable(np.ones(2), requires_grad=True)
    loss = xp.sum(x * 3.0)
    x.requires_grad = False
    loss.backward()
    assert x.grad is None


@pytest.mark.parametrize("call", [
    lambda x, m: x * m, lambda x, m: m * x, lambda x, m: np.add(x, m), lambda x, m: xp.sum(m),
    lambda x, m: ag.Variable(m), lambda x, m: setattr(x, "data", m),
])
@pytest.mark.parametrize("other", ["masked", "matrix"])
def test_masked_arrays_and_matrices_are_refused(call, other):
    m = (np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0]) if other == "masked" else
         np.matrix([[1.0, 2.0, 3.0]]))
    x = ag.Variable(np.ones(3), requires_grad=True)
    with pytest.raises((TypeError, ag.GradientError)):
        call(x, m)


def test_moving_a_reversed_array_to_torch_does_not_abort():
    code = ("import numpy as np, arraygrad as ag, torch\n"
            "v = ag.Variable(np.arange(6.)[::-1]).to('torch')\n"
            "assert v.data.tolist() == [5, 4, 3, 2, 1, 0]\n"
            "assert torch.from_dlpack(ag.Variable(np.arange(4.)[::-2])).tolist() == [3, 1]\n")
    _runs_alone(code, timeout=120)


def test_scipy_tanhsinh_integrates_variables():
    """SciPy's tanhsinh writes through reshaped views of its work arrays."""
    pytest.importorskip("scipy")
    code = ("import os; os.environ['SCIPY_ARRAY_API'] = '1'\n"
            "import numpy as np, arraygrad as ag\n"
            "from scipy.integrate import tanhsinh, quad\n"
            "xp = ag.namespace()\n"
            "a = ag.Variable(np.array([1.0, 2.0]), requires_grad=True)\n"
            "res = tanhsinh(lambda x, a: xp.exp(-a * x * x), xp.asarray(0.0), xp.asarray(1.0),"
            " args=(a,))\n"
            "xp.sum(res.integral).backward()\n"
            "want = [-quad(lambda x: x * x * np.exp(-s * x * x), 0, 1)[0] for s in (1., 2.)]\n"
            "np.testing.assert_allclose(a.grad.data, want, rtol=1e-10)\n")
    _runs_alone(code, timeout=300)


def _runs_alone(code, timeout):
    """Run ``code`` in a fresh interpreter (an abort, or SciPy's environment read at import,
    stays there); fail with its error output."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
def test_a_reshape_asked_to_copy_is_no_view(backend):
    """``copy=True`` is never a view, also on a backend that cannot say whether its result
    shares memory (array-api-strict's arrays have no ``base``)."""
    ns = ag.namespace(backend)
    base = ns.asarray([[1.0, 2.0], [3.0, 4.0]])
    flat = ns.reshape(base, (4,), copy=True)
    flat[0] = 100.0
    assert float(base[0, 0].data) == 1.0
