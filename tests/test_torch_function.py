"""``__torch_function__``: PyTorch code, written with ``torch.*`` calls, ``torch.nn.functional``
and Tensor methods, records on Variables of the torch backend; its gradients and Hessians agree
with ``torch.func`` in float64."""

import math

import numpy as np
import pytest

import arraygrad as ag

torch = pytest.importorskip("torch")
F = torch.nn.functional
func = pytest.importorskip("torch.func")

TARGET = torch.tensor([0, 2])
LABELS = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0], dtype=torch.float64)
EYE = torch.eye(3, dtype=torch.float64)

# Functions of a float64 vector of 6 elements, each written as PyTorch users write it: torch.*
# functions, torch.nn.functional, torch.linalg, torch.special and Tensor methods.
BATTERY = {
    "sin_exp": lambda x: torch.sum(torch.sin(x) * torch.exp(x)),
    "add_mul_pow": lambda x: torch.sum(torch.pow(torch.add(x, 2.0, alpha=0.5), 3) *
                                      torch.mul(x, x)),
    "tanh_mean": lambda x: torch.mean(torch.tanh(x) ** 2),
    "logsumexp": lambda x: torch.logsumexp(x * 1.5, dim=0),
    "softplus_gelu_silu": lambda x: (F.softplus(x) + F.gelu(x) * F.silu(x)).sum(),
    "sigmoid_prod": lambda x: torch.sigmoid(x).prod() + torch.special.expit(x).sum(),
    "log_softmax": lambda x: F.log_softmax(x.reshape(2, 3), dim=1)[:, 0].sum(),
    "softmax_view": lambda x: F.softmax(x.view(2, 3), dim=-1).pow(2).sum(),
    "matmul_t": lambda x: torch.sum(torch.matmul(x.view(2, 3), x.view(2, 3).t()) ** 2),
    "mm_bmm": lambda x: torch.bmm(x.view(1, 2, 3), x.view(1, 3, 2)).sum() + torch.mm(
        x.view(3, 2), x.view(2, 3)).trace(),
    "linalg_det_norm": lambda x: torch.linalg.det(torch.outer(x[:3], x[3:]) + 2 * EYE) +
    torch.linalg.vector_norm(x) ** 3,
    "mse_smooth_l1": lambda x: F.mse_loss(x[:3], x[3:]) + F.smooth_l1_loss(
        x[:3] * 0.1, x[3:] * 0.1, reduction="sum"),
    "cross_entropy": lambda x: F.cross_entropy(x.view(2, 3), TARGET),
    "nll_label_smoothing": lambda x: F.nll_loss(F.log_softmax(x.view(2, 3), 1), TARGET) +
    F.cross_entropy(x.view(2, 3), TARGET, label_smoothing=0.2),
    "bce_with_logits": lambda x: F.binary_cross_entropy_with_logits(x, LABELS),
    "bce": lambda x: F.binary_cross_entropy(torch.sigmoid(x), LABELS, reduction="sum"),
    "where_cat_stack": lambda x: torch.where(x > 0, x ** 2, torch.exp(x)).sum() + torch.stack(
        [torch.sin(x), torch.cos(x)], dim=1).prod(dim=1).sum() + torch.cat([x, x ** 3]).mean(),
    "std_var_cumsum": lambda x: x.std() * torch.var(x.view(2, 3), dim=0).sum() + torch.cumsum(
        x, dim=0).sum() ** 2,
    "layer_norm": lambda x: F.layer_norm(x.view(2, 3), (3,)).pow(3).sum(),
    "special_erf_xlogy": lambda x: torch.special.erf(x).sum() + torch.special.xlogy(
        x ** 2, x ** 2 + 1).sum(),
    "indexing_unsqueeze": lambda x: (x[1:4] * x[[0, 2, 4]]).sum() + (
        x.unsqueeze(0) * x.unsqueeze(1)).sum(dim=1, keepdim=True).max(),
    "kl_div_normalize": lambda x: F.kl_div(F.log_softmax(x, 0), F.softmax(x.flip(0), 0),
                                           reduction="batchmean") + F.normalize(
        x.view(2, 3), dim=1).pow(3).sum(),
}


@pytest.fixture
def x():
    return torch.tensor([0.3, -1.2, 0.8, 1.7, -0.4, 0.6], dtype=torch.float64)


@pytest.mark.parametrize("name", BATTERY)
def test_grad_agrees_with_torch_func(name, x):
    f = BATTERY[name]
    expected = func.grad(f)(x)
    got = ag.grad(f)(x)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", BATTERY)
def test_hessian_agrees_with_torch_func(name, x):
    f = BATTERY[name]
    expected = func.hessian(f)(x)
    got = ag.hessian(f)(x)
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-10)


def test_the_recorded_graph_names_the_namespace_functions():
    x = ag.Variable(torch.ones(2, 2), requires_grad=True)
    z = torch.mul(torch.add(x, 2), torch.add(x, 2)) * 3
    out = torch.mean(z)
    assert out.grad_fn.name() == "MeanBackward" and float(out) == 27.0
    out.backward()
    assert torch.equal(x.grad.data, torch.full((2, 2), 4.5))


# --------------------------------------------------------- torch's signatures and Tensor methods
def test_reductions_take_torchs_arguments_and_give_torchs_values():
    t = torch.tensor([[1.0, 5.0, 2.0], [7.0, 0.5, 3.0]], dtype=torch.float64)
    v = ag.Variable(t, requires_grad=True)
    for call in (lambda a: a.sum(dim=1, keepdim=True), lambda a: torch.sum(a, (0, 1)),
                 lambda a: a.mean(0), lambda a: a.std(), lambda a: torch.var(a, 1, unbiased=False),
                 lambda a: a.std(dim=0, correction=0), lambda a: torch.amax(a, dim=1),
                 lambda a: a.norm(), lambda a: torch.norm(a, p=1, dim=0),
                 lambda a: torch.cumsum(a, dim=1), lambda a: a.flatten(), lambda a: a.size(1),
                 lambda a: a.transpose(0, 1), lambda a: a.view(3, 2).squeeze(),
                 lambda a: torch.linalg.matrix_norm(a[:, :2])):
        got, expected = call(v), call(t)
        got = got.data if isinstance(got, ag.Variable) else got
        if isinstance(expected, torch.Tensor):
            torch.testing.assert_close(got, expected)
        else:
            assert got == expected
    values, indices = v.max(dim=1)  # torch's (values, indices)
    assert torch.equal(values.data, t.max(dim=1).values) and torch.equal(indices.data,
                                                                         t.max(dim=1).indices)
    values.sum().backward()
    assert torch.equal(v.grad.data, torch.tensor([[0, 1, 0], [1, 0, 0]], dtype=torch.float64))


def test_tensor_operators_with_a_variable_operand_record():
    t = torch.tensor([1.0, 2.0], dtype=torch.float64)
    v = ag.Variable(torch.tensor([3.0, 4.0], dtype=torch.float64), requires_grad=True)
    for result in (t + v, t * v, t - v, t / v, t ** v, t @ v, t == v, t < v):
        assert isinstance(result, ag.Variable)
    (t * v + t @ v).sum().backward()
    assert torch.equal(v.grad.data, torch.tensor([3.0, 6.0], dtype=torch.float64))


def test_in_place_methods_and_inplace_flags_take_the_result():
    v = ag.Variable(torch.tensor([-1.0, 2.0], dtype=torch.float64), requires_grad=True)
    y = v * 1
    assert y.add_(1.0) is y and F.relu(y, inplace=True) is y
    y.sum().backward()
    assert torch.equal(v.grad.data, torch.tensor([0.0, 1.0], dtype=torch.float64))
    with pytest.raises(TypeError, match=r"in place on a torch tensor.*t = t \+ v"):
        torch.ones(2, dtype=torch.float64).add_(v)


def test_a_torch_function_with_no_entry_names_itself_and_what_to_do():
    v = ag.Variable(torch.ones(1, 1, 3, 3), requires_grad=True)
    with pytest.raises(TypeError, match=r"torch.nn.functional.interpolate is not supported on "
                                        r"arraygrad Variables.*__array_namespace__"):
        F.interpolate(v, scale_factor=2.0)
    with pytest.raises(TypeError, match=r"torch.sum\(out=...\).*assign it"):
        torch.sum(v, dim=0, out=torch.empty(1, 3, 3))
    with pytest.raises(TypeError, match=r"F.pad\(mode='reflect'\) is not supported"):
        F.pad(v, (1, 1), mode="reflect")
    with pytest.raises(TypeError, match=r"torch.autograd.grad does not take arraygrad "
                                        r"Variables: arraygrad.autograd.grad\(outputs"):
        torch.autograd.grad(v.sum(), v)


def test_a_variable_of_another_backend_is_refused_naming_it():
    v = ag.Variable(np.ones(3), requires_grad=True)
    with pytest.raises(TypeError, match=r"torch.sin was called with a Variable of backend "
                                        r"'numpy'.*__array_namespace__"):
        torch.sin(v)
    with pytest.raises(TypeError, match=r"torch.nn.functional.relu was called with a "
                                        r"Variable of backend 'numpy'"):
        F.relu(v)


def test_torch_idioms_on_numpy_say_what_to_write():
    v = ag.Variable(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(TypeError, match=r"torch's x.size\(\) is x.shape \(\(2, 3\)\)"):
        v.size()
    assert v.size == 6
    with pytest.raises(AttributeError, match=r"xp.expand_dims\(x, axis=dim\)"):
        v.unsqueeze(0)
    with pytest.raises(AttributeError, match=r"x.relu\(\) is a method of torch tensors.*"
                                             r"backend 'numpy'"):
        v.relu()
    with pytest.raises(TypeError, match=r"write axis= instead of torch's dim="):
        v.sum(dim=0)


# ------------------------------------------------------------------- backward(gradient) dtypes
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_backward_casts_a_gradient_of_another_floating_dtype(backend):
    xp = ag.namespace(backend)
    x = ag.Variable(xp.asarray([1.0, 2.0], dtype=xp.float64).data, requires_grad=True)
    y = x * x
    y.backward(xp.ones(2, dtype=xp.float32).data, retain_graph=True)
    assert x.grad.dtype == xp.float64
    np.testing.assert_array_equal(np.asarray(x.grad.detach()), [2.0, 4.0])
    x.grad = None
    y.backward(ag.Variable(xp.ones(2, dtype=xp.float32).data), create_graph=True)
    assert x.grad.dtype == xp.float64
    z = xp.astype(x, xp.float32) ** 2
    z.backward(xp.ones(2, dtype=xp.float64).data)  # float64 for a float32 output
    np.testing.assert_array_equal(np.asarray(x.grad.detach()), [4.0, 8.0])


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_backward_still_refuses_other_kinds_and_shapes(backend):
    xp = ag.namespace(backend)
    x = ag.Variable(xp.asarray([1.0, 2.0], dtype=xp.float64).data, requires_grad=True)
    y = x * x
    with pytest.raises(ag.GradientError, match=r"dtype (torch.)?complex128 but the output has "
                                               r"dtype (torch.)?float64.*xp.real"):
        y.backward(xp.ones(2, dtype=xp.complex128).data)
    with pytest.raises(ag.GradientError, match=r"has shape \(3,\) but the output has shape "
                                               r"\(2,\)"):
        y.backward(xp.ones(3, dtype=xp.float32).data)
    with pytest.raises(ag.GradientError, match=r"dtype (torch.)?int64 but the output has "
                                               r"dtype (torch.)?float64"):
        y.backward(xp.ones(2, dtype=xp.int64).data)
    c = ag.Variable(xp.asarray([1j, 2.0], dtype=xp.complex128).data, requires_grad=True) * 2
    with pytest.raises(ag.GradientError, match=r"dtype (torch.)?float64 but the output has "
                                               r"dtype (torch.)?complex128"):
        c.backward(xp.ones(2, dtype=xp.float64).data)


# ------------------------------------------------------- every entry gives torch's values
RANDOM = {"rand_like", "randn_like", "empty_like", "dropout"}


def _calls(a, b):
    """The argument lists tried on each function: those that torch itself accepts are kept."""
    return [(a,), (a, b), (a, 1), (a, 0), (a, b, b), ([a, b],), (a, (3,)), (a > 0.5, a, b)]


def _agree(got, expected):
    if isinstance(expected, (tuple, list)):
        return len(got) == len(expected) and all(map(_agree, got, expected))
    if isinstance(expected, torch.Tensor):
        got = got.data if isinstance(got, ag.Variable) else got
        return isinstance(got, torch.Tensor) and got.shape == expected.shape and bool(
            torch.allclose(got.to(expected.dtype), expected, rtol=1e-7, atol=1e-9,
                           equal_nan=True))
    return got == expected


def _covered_functions():
    from tests.interop import torch_matrix

    api = torch_matrix.torch_api()
    return [(module, name) for module in ("torch", "torch.special", "torch.linalg",
                                          "torch.nn.functional")
            for name in api[module][0] if name not in RANDOM]


@pytest.mark.parametrize("module,name", _covered_functions())
def test_each_covered_function_gives_torchs_values(module, name):
    import importlib

    function = getattr(importlib.import_module(module), name)
    a = torch.tensor([[0.9, 0.2, 0.1], [0.3, 0.8, 0.25], [0.15, 0.35, 0.7]], dtype=torch.float64)
    b = torch.tensor([[0.5, 0.6, 0.4], [0.45, 0.65, 0.3], [0.2, 0.55, 0.75]], dtype=torch.float64)
    tried = 0
    for args in _calls(a, b):
        try:  # (on copies: a second argument 1 is inplace=True for F's activations)
            expected = function(*[[t.clone() for t in x] if isinstance(x, list) else
                                  x.clone() if isinstance(x, torch.Tensor) else x for x in args])
        except Exception:
            continue  # torch takes other arguments
        wrapped = [[ag.Variable(t.clone()) for t in x] if isinstance(x, list) else
                   ag.Variable(x.clone()) if isinstance(x, torch.Tensor) else x for x in args]
        got = function(*wrapped)
        assert _agree(got, expected), f"{module}.{name}{tuple(type(x).__name__ for x in args)}"
        tried += 1
    if not tried:
        pytest.skip(f"{module}.{name} takes arguments this test does not try")


def test_a_small_convolutional_network_agrees_with_torch_func():
    generator = torch.Generator().manual_seed(0)
    images = torch.randn(4, 2, 8, 8, dtype=torch.float64, generator=generator)
    labels = torch.tensor([0, 2, 1, 2])
    params = (torch.randn(6, 1, 3, 3, dtype=torch.float64, generator=generator) * 0.3,
              torch.randn(6, dtype=torch.float64, generator=generator) * 0.1,
              torch.randn(3, 24, dtype=torch.float64, generator=generator) * 0.3)

    def loss(conv_weight, conv_bias, linear_weight):
        h = F.relu(F.conv2d(images, conv_weight, conv_bias, padding=1, groups=2))
        h = F.max_pool2d(h, 2) + F.avg_pool2d(h, 2, stride=2) + F.adaptive_avg_pool2d(h, 4)
        h = F.adaptive_max_pool2d(h, (2, 2)).flatten(1)
        return F.cross_entropy(F.linear(torch.tanh(h), linear_weight), labels)

    expected = func.grad(loss, argnums=(0, 1, 2))(*params)
    got = ag.grad(loss, argnums=(0, 1, 2))(*params)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------ torch.no_grad() parameter updates
def _polynomial_fit(make, steps=300):
    """PyTorch's current "Tensors and autograd" tutorial: a cubic fitted to sin, its parameters
    updated under torch.no_grad() (``make(t)`` makes a parameter of ``t``)."""
    x = torch.linspace(-math.pi, math.pi, 200, dtype=torch.float64)
    y = torch.sin(x)
    generator = torch.Generator().manual_seed(0)
    a, b, c, d = (make(torch.randn((), dtype=torch.float64, generator=generator))
                  for _ in range(4))
    for _ in range(steps):
        loss = (a + b * x + c * x ** 2 + d * x ** 3 - y).pow(2).sum()
        loss.backward()
        with torch.no_grad():
            for p in (a, b, c, d):
                p -= 1e-5 * p.grad
                p.grad = None
    return [float(p.item()) for p in (a, b, c, d)], [p.is_leaf for p in (a, b, c, d)]


def test_parameters_updated_under_torch_no_grad_stay_leaves_as_in_pytorch():
    got, leaves = _polynomial_fit(lambda t: ag.Variable(t, requires_grad=True))
    expected, _ = _polynomial_fit(lambda t: t.requires_grad_(True))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert all(leaves)
    w = ag.Variable(torch.ones(2, dtype=torch.float64), requires_grad=True)
    with pytest.raises(ag.InplaceError, match=r"arraygrad.no_grad\(\)"):
        w -= 1.0  # outside torch.no_grad(), as in PyTorch
    with torch.no_grad():
        w[0] = 5.0
    assert w.is_leaf and w.grad_fn is None and w.data.tolist() == [5.0, 1.0]


def test_an_attention_block_written_for_pytorch_agrees_with_torch_autograd():
    generator = torch.Generator().manual_seed(0)
    B, T, D, H = 2, 5, 8, 2
    x = torch.randn(B, T, D, dtype=torch.float64, generator=generator)
    params = [torch.randn(D, 3 * D, dtype=torch.float64, generator=generator) * 0.2,
              torch.randn(D, D, dtype=torch.float64, generator=generator) * 0.2,
              torch.ones(D, dtype=torch.float64), torch.zeros(D, dtype=torch.float64)]

    def block(Wqkv, Wo, g, b):  # as PyTorch code writes it: split, view, masked_fill, size(-1)
        q, k, v = (x @ Wqkv).split(D, dim=-1)
        q, k, v = (t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
        att = F.softmax(att.masked_fill(mask == 0, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, D)
        h = F.gelu(F.layer_norm(x + y @ Wo, (D,), g, b), approximate="tanh")
        state = torch.zeros(B, D, dtype=torch.float64)
        for t in range(T):
            state = torch.tanh(state @ Wo + h[:, t])
        return h.pow(2).mean() + state.abs().sum() / 10 + torch.logsumexp(h, dim=-1).var()

    expected = [p.clone().requires_grad_() for p in params]
    block(*expected).backward()
    got = [ag.Variable(p, requires_grad=True) for p in params]
    block(*got).backward()
    for v, t in zip(got, expected):
        torch.testing.assert_close(v.grad.data, t.grad, rtol=1e-10, atol=1e-12)
