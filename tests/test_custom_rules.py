"""Custom differentiation rules: ``ag.Function`` (PyTorch's form), ``ag.custom_vjp`` and
``ag.custom_jvp`` (JAX's), and ``arraygrad.testing.check_grads`` (JAX's form). Gradients are
checked against float64 central differences and against torch.autograd.Function / jax.custom_vjp
where those are installed; each misuse must raise an error that names what is wrong."""

import importlib.util

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.testing import check_grads

BACKENDS = ["numpy", "array_api_strict", "torch"]
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None


def available(name):
    try:
        ag.get_backend(name).raw
    except Exception as exc:  # noqa: BLE001  (BackendUnavailable, missing library)
        pytest.skip(f"backend {name} unavailable: {exc}")
    return ag.get_backend(name)


def arrays(backend, *values):
    return tuple(backend.raw.asarray(np.asarray(v, dtype=np.float64)) for v in values)


A = np.array([0.7, -1.3, 2.1, 0.4])
B = np.array([1.9, 0.25, -0.6, -1.1])


class Cube(ag.Function):
    """x ** 3 * y, every feature of a rule: saved inputs, a differentiable backward, a jvp."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x ** 3 * y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_values
        return g * 3 * x ** 2 * y, g * x ** 3

    @staticmethod
    def jvp(ctx, tx, ty):
        x, y = ctx.saved_tensors  # PyTorch's name for the same
        return 3 * x ** 2 * y * tx + x ** 3 * ty


class SumDiff(ag.Function):
    """Two outputs of two inputs with different roles: a swapped or misrouted gradient shows."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y, x - 2 * y

    @staticmethod
    def backward(ctx, g_product, g_difference):
        x, y = ctx.saved_values
        return g_product * y + g_difference, g_product * x - 2 * g_difference

    @staticmethod
    def jvp(ctx, tx, ty):
        x, y = ctx.saved_values
        return tx * y + x * ty, tx - 2 * ty


class ExpOut(ag.Function):
    """exp(x), saving its output: its second derivative flows through the saved output."""

    @staticmethod
    def forward(ctx, x):
        xp = x.__array_namespace__()
        out = xp.exp(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_values
        return g * out


# ------------------------------------------------------------------------------ gradients
@pytest.mark.parametrize("name", BACKENDS)
def test_function_matches_central_differences_to_second_order(name):
    backend = available(name)
    check_grads(Cube.apply, arrays(backend, A, B), order=2)
    check_grads(SumDiff.apply, arrays(backend, A, B), order=2)
    check_grads(ExpOut.apply, arrays(backend, A), order=2, modes=("rev",))


@pytest.mark.parametrize("name", BACKENDS)
def test_create_graph_gives_the_numerical_second_derivative(name):
    backend = available(name)
    xp = backend.ns
    x = ag.Variable(arrays(backend, A)[0], requires_grad=True)
    y = ag.Variable(arrays(backend, B)[0], requires_grad=True)
    xp.sum(Cube.apply(x, y) * Cube.apply(y, x)).backward(create_graph=True)
    (hxx, hxy) = ag.autograd.grad(xp.sum(x.grad), [x, y])

    def gx(a):  # d/dx of sum(a^3 b * b^3 a) = sum(a^4 b^4): 4 a^3 b^4
        return 4 * a ** 3 * B ** 4
    eps = 1e-6
    numeric_xx = (gx(A + eps) - gx(A - eps)) / (2 * eps)
    numeric_xy = 16 * A ** 3 * B ** 3
    assert np.allclose(backend.to_numpy(hxx.data), numeric_xx, rtol=1e-6)
    assert np.allclose(backend.to_numpy(hxy.data), numeric_xy, rtol=1e-6)
    # through a saved output too: d2/dx2 sum(exp(x)) = exp(x)
    z = ag.Variable(arrays(backend, A)[0], requires_grad=True)
    (g,) = ag.autograd.grad(xp.sum(ExpOut.apply(z) * 2.0), [z], create_graph=True)
    (h,) = ag.autograd.grad(xp.sum(g), [z])
    assert np.allclose(backend.to_numpy(h.data), 2 * np.exp(A))


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_same_gradients_as_torch_autograd_function():
    import torch

    class TorchCube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x ** 3 * y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * 3 * x ** 2 * y, g * x ** 3

    tx, ty = (torch.tensor(v, requires_grad=True) for v in (A, B))
    out = TorchCube.apply(tx, ty)
    gx, gy = torch.autograd.grad((out * torch.sin(tx)).sum(), (tx, ty), create_graph=True)
    hx, hy = torch.autograd.grad((gx * gy).sum(), (tx, ty))
    for name in ("numpy", "torch"):
        backend = available(name)
        xp = backend.ns
        x = ag.Variable(arrays(backend, A)[0], requires_grad=True)
        y = ag.Variable(arrays(backend, B)[0], requires_grad=True)
        out = Cube.apply(x, y)
        ax, ay = ag.autograd.grad(xp.sum(out * xp.sin(x)), [x, y], create_graph=True)
        bx, by = ag.autograd.grad(xp.sum(ax * ay), [x, y])
        for ours, theirs in ((ax, gx), (ay, gy), (bx, hx), (by, hy)):
            assert np.allclose(backend.to_numpy(ours.data), theirs.detach().numpy(), rtol=1e-12)


@pytest.mark.skipif(not HAS_JAX, reason="jax is not installed")
def test_same_gradients_as_jax_custom_vjp_and_custom_jvp():
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):  # scoped: the process-wide flag stays as it was

        @jax.custom_vjp
        def jf(x, y):
            return jnp.sin(x) * y

        jf.defvjp(lambda x, y: (jf(x, y), (x, y, jnp.cos(x))),
                  lambda r, g: (g * r[2] * r[1], g * jnp.sin(r[0])))

        @jax.custom_jvp
        def jsoft(x):
            return jnp.log1p(jnp.exp(x))

        # 1.5: a rule that differs from the primal's derivative, on purpose
        jsoft.defjvp(lambda p, t: (jsoft(p[0]), t[0] * jax.nn.sigmoid(p[0]) * 1.5))

        xp = ag.namespace("numpy")

        @ag.custom_vjp
        def f(x, y):
            return xp.sin(x) * y

        f.defvjp(lambda x, y: (f(x, y), (x, y, xp.cos(x))),
                 lambda r, g: (g * r[2] * r[1], g * xp.sin(r[0])))

        @ag.custom_jvp
        def soft(x):
            return xp.log1p(xp.exp(x))

        soft.defjvp(lambda p, t: (soft(p[0]), t[0] / (1 + xp.exp(-p[0])) * 1.5))

        def loss(fn, np_):
            return lambda x, y: np_.sum(fn(x, y) * x)

        theirs = jax.grad(loss(jf, jnp), argnums=(0, 1))(A, B)
        ours = ag.grad(loss(f, xp), argnums=(0, 1))(A, B)
        for a, b in zip(ours, theirs):
            assert np.allclose(a, np.asarray(b), rtol=1e-12)
        assert np.allclose(ag.jacobian(ag.grad(lambda x: xp.sum(f(x, B) ** 2)))(A),
                           np.asarray(jax.jacrev(jax.grad(lambda x: jnp.sum(jf(x, B) ** 2)))(A)),
                           rtol=1e-10)
        # custom_jvp: JAX transposes the rule in reverse mode; so does arraygrad (the rule's 1.5
        # factor, which the primal's own derivative lacks, shows in both)
        assert np.allclose(ag.grad(lambda x: xp.sum(soft(x) ** 2))(A),
                           np.asarray(jax.grad(lambda x: jnp.sum(jsoft(x) ** 2))(A)), rtol=1e-12)
        assert np.allclose(ag.hessian(lambda x: xp.sum(soft(x) ** 2))(A),
                           np.asarray(jax.hessian(lambda x: jnp.sum(jsoft(x) ** 2))(A)),
                           rtol=1e-10)
        assert np.allclose(ag.jvp(soft, (A,), (B,))[1],
                           np.asarray(jax.jvp(jsoft, (A,), (B,))[1]), rtol=1e-12)


# ------------------------------------------------------------------------------ the ctx
def test_needs_input_grad_and_attributes_on_ctx():
    seen = []

    class Scale(ag.Function):
        @staticmethod
        def forward(ctx, x, y, factor):
            seen.append(ctx.needs_input_grad)
            ctx.factor = factor
            return x * y * factor

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            return None, g * ctx.factor * 10.0, None  # x's gradient: None although it needs one

    x = ag.Variable(np.array([1.0, 2.0]), requires_grad=True)
    y = ag.Variable(np.array([3.0, -4.0]), requires_grad=True)
    xp = x.__array_namespace__()
    xp.sum(Scale.apply(x.detach(), y, 2.0)).backward()
    assert seen == [(False, True, False), (False, True, False)]
    assert np.allclose(y.grad.data, [20.0, 20.0])
    xp.sum(Scale.apply(x, y.detach(), 2.0)).backward()
    assert x.grad is None  # backward returned None for it: no gradient, as in PyTorch
    with ag.no_grad():
        assert Scale.apply(x, y, 1.0).grad_fn is None
    assert seen[-1] == (False, False, False)


def test_a_gradient_for_an_input_that_needs_none_is_ignored():
    class Both(ag.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g * 2.0, "not even an array"  # y needs no gradient: never looked at

    x = ag.Variable(np.array([1.0, 2.0]), requires_grad=True)
    ag.namespace("numpy").sum(Both.apply(x, np.array([5.0, 6.0]))).backward()
    assert np.allclose(x.grad.data, [2.0, 2.0])


def test_mark_non_differentiable_and_integer_outputs():
    received = []

    class SortWithIndex(ag.Function):
        @staticmethod
        def forward(ctx, x):
            xp = x.__array_namespace__()
            values = xp.sort(x)
            order = xp.argsort(x)
            scaled = values * 3.0
            ctx.mark_non_differentiable(scaled)
            ctx.order = order
            return values, order, scaled

        @staticmethod
        def backward(ctx, g_values, g_order, g_scaled):
            received.append(g_scaled.data.copy())
            xp = g_values.__array_namespace__()
            inverse = xp.argsort(ctx.order)
            return xp.take(g_values, inverse)

    x = ag.Variable(np.array([0.3, -2.0, 1.5]), requires_grad=True)
    values, order, scaled = SortWithIndex.apply(x)
    assert values.requires_grad and values.grad_fn is not None
    assert not order.requires_grad and not scaled.requires_grad
    xp = x.__array_namespace__()
    xp.sum(values * np.array([1.0, 10.0, 100.0])).backward()
    assert np.allclose(x.grad.data, [10.0, 1.0, 100.0])
    assert np.array_equal(received[0], np.zeros(3))  # zeros for the non-differentiable output


def test_grad_fn_name_hooks_retain_grad_and_freeing():
    x = ag.Variable(np.array([0.5, -1.5]), requires_grad=True)
    y = ag.Variable(np.array([2.0, 3.0]), requires_grad=True)
    out = Cube.apply(x, y)
    assert repr(out.grad_fn) == "<CubeBackward>" and out.grad_fn.name() == "CubeBackward"
    assert out.grad_fn.next_functions[0][0] is x._edge[0]
    out.retain_grad()
    out.register_hook(lambda g: g * 2.0)
    out.backward(np.array([1.0, 4.0]), retain_graph=True)
    assert np.allclose(out.grad.data, [2.0, 8.0])
    assert np.allclose(x.grad.data, np.array([2.0, 8.0]) * 3 * x.data ** 2 * y.data)
    out.backward(np.array([1.0, 4.0]))
    with pytest.raises(ag.BackwardError, match="CubeBackward.*retain_graph=True"):
        out.backward(np.array([1.0, 4.0]))


def test_saved_values_are_not_changed_by_a_later_in_place_update():
    x = ag.Variable(np.array([1.0, 2.0]), requires_grad=True)
    y = ag.Variable(np.array([3.0, -1.0]), requires_grad=True)
    x2 = x * 1.0
    out = Cube.apply(x2, y)
    x2 += 100.0  # copy-on-write: the value Cube saved stays
    ag.namespace("numpy").sum(out).backward()
    assert np.allclose(x.grad.data, 3 * x.data ** 2 * y.data)


# ------------------------------------------------------------------------------ errors
def _run(function, *values):
    xs = [ag.Variable(np.asarray(v, dtype=np.float64), requires_grad=True) for v in values]
    ag.namespace("numpy").sum(function.apply(*xs)).backward()


def _returning(result):
    class Returns(ag.Function):
        @staticmethod
        def forward(ctx, first, second):
            return first * second

        @staticmethod
        def backward(ctx, g):
            return result(g)

    return Returns


def test_wrong_number_of_gradients():
    with pytest.raises(ag.GradientError, match=r"Returns\.backward returned 1 gradient\(s\), "
                                               r"but Returns has 2 inputs"):
        _run(_returning(lambda g: (g,)), A, B)
    with pytest.raises(ag.GradientError, match="returned 3 gradient"):
        _run(_returning(lambda g: (g, g, g)), A, B)


def test_wrong_shape_dtype_backend_or_type_of_a_gradient():
    xp = ag.namespace("numpy")
    with pytest.raises(ag.GradientError, match=r"Returns\.backward returned a gradient of shape "
                                               r"\(1, 4\) for argument 1 \(second\) of shape "
                                               r"\(4,\)"):
        _run(_returning(lambda g: (g, xp.reshape(g, (1, 4)))), A, B)
    with pytest.raises(ag.GradientError, match=r"dtype float32 for argument 0 \(first\) of "
                                               r"dtype float64"):
        _run(_returning(lambda g: (xp.astype(g, xp.float32), g)), A, B)
    with pytest.raises(ag.GradientError, match="returned a float as the gradient of argument 0"):
        _run(_returning(lambda g: (1.0, g)), A, B)
    strict = available("array_api_strict")
    with pytest.raises(ag.BackendError, match="gradient of backend 'array_api_strict' for "
                                              "argument 1 .second., which is of backend 'numpy'"):
        _run(_returning(lambda g: (g, strict.raw.asarray(g.data))), A, B)


def test_missing_jvp_names_the_function():
    class NoJvp(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(ag.NoRuleError, match="NoJvp has no forward-mode rule.*define a "
                                             "staticmethod jvp"):
        ag.jvp(NoJvp.apply, (A,), (B,))
    xp = ag.namespace("numpy")
    assert np.allclose(ag.grad(lambda x: xp.sum(NoJvp.apply(x)))(A), 2.0)
    with pytest.raises(ag.NoRuleError, match="NoJvp has no forward-mode rule"):
        ag.hessian(lambda x: xp.sum(NoJvp.apply(x) ** 2))(A)
    assert np.allclose(ag.jacobian(ag.grad(lambda x: xp.sum(NoJvp.apply(x) ** 2)))(A),
                       8 * np.eye(4))


@pytest.mark.parametrize("name", BACKENDS)
def test_hessian_with_jvp_rules(name):
    backend = available(name)
    xp = backend.ns
    a, b = arrays(backend, A, B)
    hess = ag.hessian(lambda x: xp.sum(Cube.apply(x, b) * x))(a)  # forward over reverse
    assert np.allclose(backend.to_numpy(hess), np.diag(12 * A ** 2 * B))


def test_once_differentiable_refuses_differentiation_of_its_result():
    class Square(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @ag.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_values
            assert not ag.is_grad_enabled()
            return ag.Variable(2 * x.data * g.data)

    xp = ag.namespace("numpy")
    x = ag.Variable(A, requires_grad=True)
    xp.sum(Square.apply(x)).backward()
    assert np.allclose(x.grad.data, 2 * A)  # first order works
    (g,) = ag.autograd.grad(xp.sum(Square.apply(x)), [x], create_graph=True)
    assert np.allclose(g.data, 2 * A) and g.requires_grad
    with pytest.raises(ag.BackwardError, match=r"Square\.backward is decorated with "
                                               r"@once_differentiable"):
        ag.autograd.grad(xp.sum(g), [x])
    with pytest.raises(ag.BackwardError, match="once_differentiable"):
        ag.hessian(lambda v: xp.sum(Square.apply(v)))(A)


def test_custom_vjp_refuses_forward_mode_and_checks_its_bwd():
    xp = ag.namespace("numpy")

    @ag.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (f(x, y), (x, y)), lambda r, g: (g * r[1],))
    with pytest.raises(ag.GradientError, match="custom_vjp function f's bwd returned 1 "
                                               "gradient.*f has 2 inputs"):
        ag.grad(lambda x: xp.sum(f(x, B)))(A)
    f.defvjp(lambda x, y: (f(x, y), (x, y)), lambda r, g: (g * r[1], g * r[0]))
    with pytest.raises(ag.NoRuleError, match="custom_vjp function f has no forward-mode"):
        ag.jvp(lambda x: f(x, B), (A,), (B,))

    @ag.custom_vjp
    def undefined(x):
        return x

    with pytest.raises(TypeError, match="no VJP defined for custom_vjp function undefined"):
        undefined(A)


# ------------------------------------------------------------------------------ JAX's forms
@pytest.mark.parametrize("name", BACKENDS)
def test_custom_vjp_on_every_backend_with_the_transforms(name):
    backend = available(name)
    xp = backend.ns

    @ag.custom_vjp
    def f(x, y):
        return xp.sin(x) * y ** 2

    def f_fwd(x, y):
        return f(x, y), {"x": x, "y": y, "cos": xp.cos(x)}  # a dict of residuals

    def f_bwd(res, g):
        return g * res["cos"] * res["y"] ** 2, g * 2 * xp.sin(res["x"]) * res["y"]

    f.defvjp(f_fwd, f_bwd)
    a, b = arrays(backend, A, B)
    plain = f(a, b)  # nothing requires grad: the plain function runs (xp gives a Variable)
    assert plain.grad_fn is None and np.allclose(backend.to_numpy(plain.data), np.sin(A) * B ** 2)
    check_grads(f, (a, b), order=2, modes=("rev",))
    out, vjp_fn = ag.vjp(f, a, b)
    gx, gy = vjp_fn(backend.raw.asarray(np.array([1.0, 2.0, 3.0, 4.0])))
    assert np.allclose(backend.to_numpy(gx), np.cos(A) * B ** 2 * [1, 2, 3, 4])
    assert np.allclose(backend.to_numpy(gy), 2 * np.sin(A) * B * [1, 2, 3, 4])
    hess = ag.jacobian(ag.grad(lambda x: xp.sum(f(x, b))))(a)  # reverse over reverse
    assert np.allclose(backend.to_numpy(hess), np.diag(-np.sin(A) * B ** 2))
    with pytest.raises(ag.NoRuleError, match=r"custom_vjp function f has no forward-mode.*"
                                             r"ag\.jacobian\(ag\.grad\(f\)\)"):
        ag.hessian(lambda x: xp.sum(f(x, b) ** 2))(a)  # forward over reverse: as in JAX


@pytest.mark.parametrize("name", BACKENDS)
def test_custom_jvp_on_every_backend_with_the_transforms(name):
    backend = available(name)
    xp = backend.ns

    @ag.custom_jvp
    def softplus(x, y):
        return xp.log(1 + xp.exp(x)) * y

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        sig = 1 / (1 + xp.exp(-x))
        return softplus(x, y), sig * y * tx + xp.log(1 + xp.exp(x)) * ty

    a, b = arrays(backend, A, B)
    check_grads(softplus, (a, b), order=2)
    _, tangent = ag.jvp(softplus, (a, b), arrays(backend, B, A))
    sig = 1 / (1 + np.exp(-A))
    assert np.allclose(backend.to_numpy(tangent), sig * B * B + np.log1p(np.exp(A)) * A)
    # reverse mode uses the rule (transposed): finite where the primal's derivative is nan
    big = backend.raw.asarray(np.array([1000.0, -3.0]))
    with np.errstate(over="ignore", invalid="ignore"):
        grad = ag.grad(lambda x: xp.sum(softplus(x, backend.raw.ones_like(big))))(big)
    assert np.allclose(backend.to_numpy(grad), [1.0, 1 / (1 + np.exp(3.0))])


# ------------------------------------------------------------------------------ check_grads
def test_check_grads_catches_a_wrong_rule_in_each_mode_and_order():
    class WrongJvp(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_values
            return g * 3 * x ** 2

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_values
            return 3 * x ** 2 * t * 1.01

    class DetachedBackward(ag.Function):  # right gradient, wrong second derivative
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_values
            return g * 3 * x.detach() ** 2

    check_grads(WrongJvp.apply, (A,), order=1, modes=("rev",))
    with pytest.raises(AssertionError, match=r"fwd mode, first derivative, argument 0 "
                                             r"\(shape \(4,\).*max error"):
        check_grads(WrongJvp.apply, (A,), order=1)
    check_grads(DetachedBackward.apply, (A,), order=1, modes=("rev",))
    with pytest.raises(AssertionError, match="rev mode, order 2 derivative, argument 0"):
        check_grads(DetachedBackward.apply, (A,), order=2, modes=("rev",))
    with pytest.raises(AssertionError, match="argument 1"):  # only the second argument is off
        check_grads(lambda x, y: Cube.apply(x, y) + DetachedBackward.apply(y), (A, B), order=2,
                    modes=("rev",))


def test_check_grads_float32_and_functions_of_variables():
    torch_backend = available("torch")
    a32 = torch_backend.raw.asarray(A.astype(np.float32))
    check_grads(Cube.apply, (a32, a32 * 2), order=2)
    xp = ag.namespace("numpy")
    check_grads(lambda x: xp.sum(xp.tanh(x) * x), (A,), 2)  # JAX's positional order


# ---------------------------------------------------------------- pytrees in custom rules
@pytest.mark.skipif(not HAS_JAX, reason="jax is not installed")
def test_custom_vjp_and_custom_jvp_take_pytree_arguments_and_outputs_as_jax():
    import jax
    import jax.numpy as jnp

    xp = ag.namespace("numpy")
    C = np.array([0.5, -0.8, 1.7, 0.9])

    def define(custom, np_, clip):
        @custom
        def f(p, pair):  # a dict and a (tuple, list) argument; a dict out
            return {"u": np_.sin(p["w"]) * pair[0], "v": (p["b"] * pair[1][0],)}

        if custom in (ag.custom_vjp, jax.custom_vjp):
            def f_fwd(p, pair):
                return f(p, pair), (p, pair[0], pair[1][0])

            def f_bwd(res, g):
                p, y, z = res
                gw = clip(g["u"] * np_.cos(p["w"]) * y)  # the rule differs from f's own
                # None for a leaf (b's gradient), a dict in any key order
                return ({"b": None, "w": gw},
                        (g["u"] * np_.sin(p["w"]), [g["v"][0] * p["b"]]))

            f.defvjp(f_fwd, f_bwd)
        else:
            @f.defjvp
            def f_jvp(primals, tangents):
                (p, pair), (tp, tpair) = primals, tangents
                return f(p, pair), {
                    "u": 1.5 * np_.cos(p["w"]) * pair[0] * tp["w"] + np_.sin(p["w"]) * tpair[0],
                    "v": (tp["b"] * pair[1][0] + p["b"] * tpair[1][0],)}
        return f

    def loss(f, np_):
        return lambda p, pair: np_.sum(f(p, pair)["u"] * pair[0]) + np_.sum(
            f(p, pair)["v"][0] ** 2)

    with jax.enable_x64(True):
        for kind, ag_custom, jax_custom in (("vjp", ag.custom_vjp, jax.custom_vjp),
                                            ("jvp", ag.custom_jvp, jax.custom_jvp)):
            f = define(ag_custom, xp, lambda v: xp.clip(v, -1.0, 1.0))
            jf = define(jax_custom, jnp, lambda v: jnp.clip(v, -1.0, 1.0))
            p, pair = {"w": A, "b": B}, (C, [A * B])
            grads = ag.grad(loss(f, xp), argnums=(0, 1))(p, pair)
            want = jax.grad(loss(jf, jnp), argnums=(0, 1))(
                {"w": jnp.asarray(A), "b": jnp.asarray(B)}, (jnp.asarray(C), [jnp.asarray(A * B)]))
            assert set(grads[0]) == {"w", "b"} and isinstance(grads[1][1], list)
            for got, exp in zip(jax.tree_util.tree_leaves(grads), jax.tree_util.tree_leaves(want)):
                assert np.allclose(got, exp), kind
            out = f({"w": ag.Variable(A, requires_grad=True), "b": B}, (C, [B]))
            assert set(out) == {"u", "v"} and out["u"].grad_fn is not None
            if kind == "jvp":  # forward mode calls the rule with the trees
                tangents = ({"w": B, "b": A}, (A, [C]))
                _, t_out = ag.jvp(f, (p, pair), tangents)
                _, jt_out = jax.jvp(jf, (p, pair), tangents)
                assert np.allclose(t_out["u"], jt_out["u"])
                assert np.allclose(t_out["v"][0], jt_out["v"][0])


def test_custom_vjp_pytree_bwd_of_the_wrong_structure_names_the_path():
    xp = ag.namespace("numpy")

    @ag.custom_vjp
    def f(p):
        return p["w"] * 2.0

    f.defvjp(lambda p: (f(p), None), lambda _, g: ({"v": g},))
    with pytest.raises(ag.GradientError, match=r"custom_vjp function f's bwd returned a "
                                               r"gradient of the wrong structure: its "
                                               r"gradient\[0\] is a dict with keys \['v'\]"):
        ag.grad(lambda p: xp.sum(f(p)))({"w": A})
    f.defvjp(lambda p: (f(p), None), lambda _, g: ({"w": xp.sum(g)},))
    with pytest.raises(ag.GradientError, match=r"gradient of shape \(\) for argument 0 "
                                               r"\(p\)\['w'\] of shape \(4,\)"):
        ag.grad(lambda p: xp.sum(f(p)))({"w": A})


def test_custom_vjp_closing_over_a_variable_that_requires_grad_raises_as_jax():
    xp = ag.namespace("numpy")
    w = ag.Variable(B, requires_grad=True)
    hidden = w * 2.0  # a non-leaf closure: its leaf w is what would lose its gradient

    for closure in (w, hidden):
        @ag.custom_vjp
        def e(x):
            return x * closure

        e.defvjp(lambda x: (e(x), None), lambda r, g: (g * closure,))
        x = ag.Variable(A, requires_grad=True)
        with pytest.raises(ag.BackwardError, match=r"custom_vjp function e closes over a "
                                                   r"Variable that requires grad \(shape \(4,\)"
                                                   r".*Pass it to e as an argument"):
            e(x)
        assert w.grad is None

    @ag.custom_vjp
    def ok(x, w):  # passed as an argument, on a non-leaf input, with a detached constant
        return x * w * w.detach()

    ok.defvjp(lambda x, w: (ok(x, w), (x, w)),
              lambda r, g: (g * r[1] * r[1].detach(), 2 * g * r[0] * r[1].detach()))
    x = ag.Variable(A, requires_grad=True)
    xp.sum(ok(x * 3.0, w)).backward()
    assert np.allclose(x.grad.data, 3 * B * B) and np.allclose(w.grad.data, 2 * 3 * A * B)


def test_custom_functions_bind_keyword_arguments_by_the_signature_as_jax():
    xp = ag.namespace("numpy")

    @ag.custom_vjp
    def f(x, scale=2.0):
        return x * scale

    f.defvjp(lambda x, scale=2.0: (f(x, scale), scale), lambda s, g: (g * s * 0.5, None))
    # the rule (half the true gradient, on purpose) runs for keywords and defaults alike
    assert np.allclose(ag.grad(lambda x: xp.sum(f(x, scale=3.0)))(A), 1.5)
    assert np.allclose(ag.grad(lambda x: xp.sum(f(x=x)))(A), 1.0)  # the default, positional
    assert np.allclose(ag.grad(lambda s: f(A[0], scale=s))(0.5), 0.0)

    @ag.custom_jvp
    def g(x, *, power):
        return x ** power

    g.defjvp(lambda p, t: (g(*p), p[0] * t[0]))
    with pytest.raises(TypeError, match=r"custom_jvp function g: keyword argument\(s\) "
                                        r"\['power'\] cannot be bound to positions"):
        ag.grad(lambda x: xp.sum(g(x, power=2)))(A)
    with pytest.raises(TypeError, match=r"custom_vjp function f: .*unexpected keyword.*'sc'"):
        f(A, sc=2.0)

    @ag.custom_jvp
    def h(x, scale):
        return x * scale

    h.defjvp(lambda p, t: (h(*p), 2 * t[0] * p[1]))  # twice the true tangent, on purpose
    assert np.allclose(ag.grad(lambda x: xp.sum(h(scale=B, x=x)))(A), 2 * B)
    _, tangent = ag.jvp(lambda x: h(x, scale=B), (A,), (np.ones(4),))
    assert np.allclose(tangent, 2 * B)


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_function_ctx_and_node_features_of_torch():
    import torch

    xp = ag.namespace("numpy")
    seen = {}

    def define(base, materialize):
        class Two(base):
            @staticmethod
            def forward(ctx, a):
                ctx.set_materialize_grads(materialize)
                ctx.save_for_backward(a)
                return a * 2, a * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen[base, materialize] = g2 is None
                return g1 * 2 if g2 is None else g1 * 2 + g2 * 3
        return Two

    for materialize in (True, False):
        for base in (ag.Function, torch.autograd.Function):
            x = (ag.Variable(A, requires_grad=True) if base is ag.Function
                 else torch.tensor(A, requires_grad=True))
            first, _ = define(base, materialize).apply(x)
            (saved,) = first.grad_fn.saved_tensors  # readable until backward frees them
            assert np.allclose(np.asarray(saved.data if base is ag.Function
                                          else saved.detach().numpy()), A)
            (xp.sum(first) if base is ag.Function else first.sum()).backward()
            assert np.allclose(np.asarray(x.grad.data if base is ag.Function
                                          else x.grad.numpy()), 2.0)
            with pytest.raises(RuntimeError, match="backward through the graph a second time"):
                first.grad_fn.saved_tensors
        assert seen[ag.Function, materialize] is seen[torch.autograd.Function, materialize]
        assert seen[ag.Function, materialize] is (not materialize)
    with pytest.raises(TypeError, match=r"Cube is run by its classmethod apply: write "
                                        r"Cube\.apply\(\.\.\.\)"):
        Cube()(ag.Variable(A, requires_grad=True), B)
    with pytest.raises(AttributeError, match="MulBackward has no saved_tensors"):
        (ag.Variable(A, requires_grad=True) * 2).grad_fn.saved_tensors


def test_wrong_tangent_and_cotangent_shapes_name_the_rule_and_vjp_fn():
    xp = ag.namespace("numpy")

    @ag.custom_jvp
    def bad(x):
        return {"y": x * 2}

    bad.defjvp(lambda p, t: (bad(p[0]), {"y": xp.sum(t[0])}))  # a scalar tangent
    for run in (lambda: ag.grad(lambda x: xp.sum(bad(x)["y"]))(A),
                lambda: ag.jvp(bad, (A,), (B,))):
        with pytest.raises(ag.GradientError, match=r"custom_jvp function bad's jvp rule "
                                                   r"returned a tangent of shape \(\) for "
                                                   r"output\['y'\] of shape \(4,\)"):
            run()
    _, vjp_fn = ag.vjp(lambda a: {"o": a * 2}, np.ones((2, 5)))
    with pytest.raises(ag.GradientError, match=r"vjp_fn\(\): cotangent\['o'\] has shape "
                                               r"\(1, 5\), but f's output\['o'\] has shape "
                                               r"\(2, 5\)"):
        vjp_fn({"o": np.ones((1, 5))})


def test_custom_jvp_closing_over_a_variable_that_requires_grad_raises_as_jax():
    xp = ag.namespace("numpy")
    w = ag.Variable(B, requires_grad=True)
    hidden = w * 2.0  # a non-leaf closure: its leaf w is what would lose its gradient

    for closure in (w, hidden):  # the function closes over it (so, here, does the rule)
        @ag.custom_jvp
        def f(x):
            return x * closure

        f.defjvp(lambda p, t: (f(p[0]), t[0] * closure))
        for run in (lambda: f(ag.Variable(A, requires_grad=True)),
                    lambda: ag.grad(lambda x: xp.sum(f(x)))(A),
                    lambda: ag.jvp(f, (A,), (B,))):
            with pytest.raises(ag.BackwardError, match=r"custom_jvp function f closes over a "
                                                       r"Variable that requires grad \(shape "
                                                       r"\(4,\), dtype float64\).*Pass it to f "
                                                       r"as an argument"):
                run()
        assert w.grad is None

    @ag.custom_jvp
    def g(x):  # only the rule closes over w: the transposed rule (reverse mode) refuses it
        return x * w.detach()

    g.defjvp(lambda p, t: (g(p[0]), t[0] * w))
    with pytest.raises(ag.BackwardError, match=r"custom_jvp function g's jvp rule closes over "
                                               r"a Variable that requires grad"):
        ag.grad(lambda x: xp.sum(g(x)))(A)
    assert w.grad is None

    constant, raw = ag.Variable(B), B  # constants in the closure are fine, in every mode
    for c in (constant, raw, w.detach()):
        @ag.custom_jvp
        def h(x):
            return x * x * c

        h.defjvp(lambda p, t: (h(p[0]), 2 * p[0] * t[0] * c))
        assert np.allclose(ag.grad(lambda x: xp.sum(h(x)))(A), 2 * A * B)
        assert np.allclose(ag.jvp(h, (A,), (np.ones(4),))[1], 2 * A * B)
        assert np.allclose(np.diag(ag.hessian(lambda x: xp.sum(h(x)))(A)), 2 * B)

    @ag.custom_jvp
    def k(x, w):  # w passed as an argument; the rule differentiates it
        return x * w

    k.defjvp(lambda p, t: (k(*p), t[0] * p[1] + p[0] * t[1]))
    x = ag.Variable(A, requires_grad=True)
    xp.sum(k(x * 3.0, w)).backward()
    assert np.allclose(x.grad.data, 3 * B) and np.allclose(w.grad.data, 3 * A)
    w.grad = None
    xp.sum(f(ag.Variable(A))).backward()  # no argument requires grad: f just runs, recorded
    assert np.allclose(w.grad.data, 2 * A)
