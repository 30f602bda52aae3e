"""``einsum``, differentiable outside the standard, beyond the conformance cases: NumPy's sublist
form, errors, gradients against torch.autograd (first and second order, complex), forward mode
with a constant operand, and a plugin's rule override."""

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.rules import RULES, Rule
from arraygrad.testing import check_grads
from test_conformance import _broken_backend

rng = np.random.default_rng(5)

SUBSCRIPTS = [  # subscripts, shapes; each with a repeated index, an ellipsis or an implicit output
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("bii,bi->b", [(2, 3, 3), (2, 3)]),
    ("...ij,...jk", [(2, 3, 4), (4, 2)]),
    ("ij,jk,k", [(2, 3), (3, 4), (4,)]),
]


def _torch_gradients(subscripts, arrays, u):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = torch.einsum(subscripts, *leaves)
    return [g.numpy() for g in torch.autograd.grad(out, leaves, torch.tensor(u))]


@pytest.mark.parametrize("subscripts, shapes", SUBSCRIPTS, ids=[s for s, _ in SUBSCRIPTS])
@pytest.mark.parametrize("name", ["numpy", "torch"])
def test_gradients_are_torch_autograd_s(name, subscripts, shapes):
    pytest.importorskip(name)
    backend = ag.get_backend(name)
    arrays = [rng.standard_normal(shape) for shape in shapes]
    xs = [ag.Variable(backend.raw.asarray(a), requires_grad=True) for a in arrays]
    out = xs[0].__array_namespace__().einsum(subscripts, *xs)
    u = rng.standard_normal(tuple(out.shape))
    out.backward(ag.Variable(backend.raw.asarray(u)))
    expected = _torch_gradients(subscripts, arrays, u)
    for x, e in zip(xs, expected):
        np.testing.assert_allclose(backend.to_numpy(x.grad.data), e, rtol=1e-12, atol=1e-12)


def test_complex_gradients_follow_torch_s_convention():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    subscripts = "ij,jk,kk->i"
    shapes = [(2, 3), (3, 4), (4, 4)]
    arrays = [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes]
    xp = ag.namespace("numpy")
    xs = [ag.Variable(a, requires_grad=True) for a in arrays]
    loss = xp.sum(xp.abs(xp.einsum(subscripts, *xs)) ** 2)
    loss.backward()
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    (torch.einsum(subscripts, *leaves).abs() ** 2).sum().backward()
    for x, leaf in zip(xs, leaves):
        np.testing.assert_allclose(x.grad.data, leaf.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("subscripts, shapes", SUBSCRIPTS[1:5], ids=[s for s, _ in SUBSCRIPTS[1:5]])
def test_second_order_is_torch_s(subscripts, shapes):
    """The rule, written against ``xp``, runs on the differentiable namespace under
    ``create_graph``: the gradient of a gradient matches torch's double backward."""
    torch = pytest.importorskip("torch", reason="torch is not installed")
    arrays = [rng.standard_normal(shape) for shape in shapes]
    xp = ag.namespace("numpy")
    xs = [ag.Variable(a, requires_grad=True) for a in arrays]
    (g0,) = ag.autograd.grad(xp.sum(xp.sin(xp.einsum(subscripts, *xs))), xs[:1],
                             create_graph=True)
    second = ag.autograd.grad(xp.sum(g0 * g0), xs)
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    (t0,) = torch.autograd.grad(torch.einsum(subscripts, *leaves).sin().sum(), leaves[:1],
                                create_graph=True)
    expected = torch.autograd.grad((t0 * t0).sum(), leaves, allow_unused=True)
    for got, e in zip(second, expected):
        e = np.zeros_like(arrays[0]) if e is None else e.numpy()
        np.testing.assert_allclose(got.data, e, rtol=1e-10, atol=1e-12)


def test_forward_mode_with_a_constant_operand():
    """Multilinear forward mode: only the operand with a tangent contributes."""
    a, b = rng.standard_normal((3, 3, 2)), rng.standard_normal((2, 4))
    t = rng.standard_normal((3, 3, 2))
    xp = ag.namespace("numpy")
    out, tangent = ag.jvp(lambda x: xp.einsum("iij,jk->k", x, ag.Variable(b)), (a,), (t,))
    np.testing.assert_allclose(tangent, np.einsum("iij,jk->k", t, b), rtol=1e-12)
    check_grads(lambda x, y: xp.einsum("iij,jk->k", x, y), (a, b), order=2)


def test_numpy_s_sublist_form_is_the_string_form():
    a, b = rng.standard_normal((2, 3, 3)), rng.standard_normal((3, 4))
    for sublists, subscripts in [(([0, 1, 1], [1, 2], [0, 2]), "ABB,BC->AC"),
                                 (([Ellipsis, 1, 1], [1, 2]), "...BB,BC"),
                                 (([0, 1, 2], [2, 3]), "ABC,CD")]:
        expected = np.einsum(subscripts, a, b)  # NumPy's letters for the labels
        np.testing.assert_array_equal(np.einsum(a, sublists[0], b, *sublists[1:]), expected)
        x, y = ag.Variable(a, requires_grad=True), ag.Variable(b, requires_grad=True)
        out = np.einsum(x, sublists[0], y, *sublists[1:], optimize=True)  # (changes no value)
        np.testing.assert_allclose(out.data, expected, rtol=1e-12)
        assert repr(out.grad_fn) == "<EinsumBackward>"
        u = ag.Variable(rng.standard_normal(expected.shape))
        out.backward(u)
        x2, y2 = ag.Variable(a, requires_grad=True), ag.Variable(b, requires_grad=True)
        np.einsum(subscripts, x2, y2).backward(u)
        np.testing.assert_array_equal(x.grad.data, x2.grad.data)
        np.testing.assert_array_equal(y.grad.data, y2.grad.data)


def test_errors_name_einsum_the_operands_and_what_to_do():
    xp = ag.namespace("numpy")
    a, b = ag.Variable(np.ones((2, 3))), ag.Variable(np.ones((4, 5)))
    with pytest.raises(TypeError, match=r"einsum\('ij,jk->ik'\) on operands of shape \(2, 3\): "
                                        r"its subscripts name 2 operands but got 1"):
        np.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match=r"einsum\('ij,jk->ik'\) on operands of shape \(2, 3\), "
                                         r"\(4, 5\): 'j' is 3 long in operand 0 but 4 in "
                                         r"operand 1"):
        np.einsum("ij,jk->ik", a, b)
    # The namespace's einsum is the backend's: its error, with a note naming einsum and shapes.
    with pytest.raises(ValueError, match=r"in einsum\(\), given arrays of shape \(2, 3\), "
                                         r"\(4, 5\)"):
        xp.einsum("ij,jk->ik", a, b)
    with pytest.raises(TypeError, match=r"einsum\(\) takes its option subscripts first, then "
                                        r"its arrays"):
        xp.einsum(a, [0, 1])  # the sublist form: np.einsum takes it
    with pytest.raises(TypeError, match=r"numpy\.einsum is not supported .* with out="):
        np.einsum("ij->ji", a, out=np.empty((3, 2)))
    with pytest.raises(ValueError, match=r"the sublist \[0, 60\] holds 60"):
        np.einsum(a, [0, 60])


def test_a_plugin_s_rule_override_applies():
    calls = []
    builtin = RULES["einsum"]

    def counted(xp, g, operands, *, subscripts):
        calls.append(subscripts)
        return builtin.joint(xp, g, operands, subscripts=subscripts)

    rule = Rule("einsum", ["operands"], (), joint=counted, params=["subscripts"],
                sequence="varargs", jvps=builtin.jvps)
    name = _broken_backend("einsum_override", rules={"einsum": rule})
    backend = ag.get_backend(name)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 3))
    x, y = (ag.Variable(backend.raw.asarray(v), requires_grad=True) for v in (a, b))
    backend.ns.sum(backend.ns.einsum("ij,jj->i", x, y)).backward()
    assert calls == ["ij,jj->i"]
    np.testing.assert_allclose(backend.to_numpy(y.grad.data), np.diag(a.sum(axis=0)), rtol=1e-12)
