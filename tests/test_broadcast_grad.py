"""Broadcast gradients: what ``sum`` and ``mean`` send back stays small (a ``BroadcastGrad``)
until something needs it full-size, and rules with broadcast VJPs (``add``, ``subtract``,
``negative``, ``positive``, ``multiply``, ``divide``, ``pow``, and the one-argument functions
defined by their derivative: ``exp``, ``tanh``, ``special.erf``...) compute on the small value.
Every gradient must be what the full-size path gives, whatever the broadcasting of the operands,
and everything the user can reach (hooks, retained and leaf gradients, ``autograd.grad``) sees
full-size arrays."""

import tracemalloc

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import rules
from arraygrad.testing import check_grads

xp = ag.namespace("numpy")
rng = np.random.default_rng(7)
COLUMN, ROW = rng.standard_normal((3, 1)), rng.standard_normal((1, 4))
FULL, SCALAR = rng.standard_normal((2, 3, 4)), rng.standard_normal(())
WEIGHTS = np.arange(1.0, 5.0)  # not symmetric: a gradient in the wrong place shows

CASES = {
    # name: (function, arguments); each reduces to a scalar through sum or mean.
    "sum of a broadcast sum": (lambda a, b: xp.sum(a + b), (COLUMN, ROW)),
    "mean of a negated square": (lambda a, b: xp.mean(-(a + b) ** 2), (COLUMN, ROW)),
    "partial sum, then weighted": (
        lambda a, b: xp.sum(xp.sum(a - b, axis=0) * WEIGHTS), (COLUMN, ROW)),
    "mean over kept axes": (
        lambda a, b: xp.sum(xp.mean(+a - b, axis=(0, 2), keepdims=True) ** 3), (FULL, ROW)),
    "rank-3 minus a scalar": (lambda a, s: xp.mean((a - s) ** 3), (FULL, SCALAR)),
    "scalar minus a rank-3": (lambda a, s: xp.sum(s - a), (FULL, SCALAR)),
    "power with a broadcast exponent": (
        lambda a, b: xp.sum(xp.abs(a) ** b), (COLUMN, ROW)),
    "power with a Python exponent": (lambda a, b: xp.mean(xp.abs(a - b) ** 2.5), (COLUMN, ROW)),
    "negative power, plus a broadcast": (
        lambda a, b: xp.sum((a * a + 1.0) ** -1.5 + b), (FULL, ROW)),
    "two sums of one operand": (lambda a, b: xp.sum(a + b) + xp.sum(-a), (COLUMN, ROW)),
    "sum and a dense path": (lambda a, b: xp.sum(a + b) + xp.sum(xp.sin(a) * b), (COLUMN, ROW)),
    "maximum and a sum": (lambda a, b: xp.max(a + b) + xp.sum(a - 1.0), (FULL, ROW)),
    "scaled square": (lambda a, b: xp.sum(0.5 * (a - b) ** 2 / 3.0), (COLUMN, ROW)),
    "broadcast product": (lambda a, b: xp.mean(a * b), (COLUMN, ROW)),
    "broadcast quotient": (lambda a, b: xp.sum(a / (b * b + 1.0)), (FULL, ROW)),
    "quotient by a broadcast": (lambda a, b: xp.sum(b / (a * a + 1.0)), (FULL, ROW)),
    # sum and mean given a small gradient pass it on small, as a broadcast of their input
    "mean of a partial sum": (lambda a, b: xp.mean(xp.sum(a * b, axis=1)), (FULL, ROW)),
    "sum of a mean over a kept negative axis": (
        lambda a, b: xp.sum(xp.mean(xp.exp(a) * b, axis=-1, keepdims=True) * 2.0), (FULL, ROW)),
    "sums over each axis in turn": (
        lambda a, b: xp.sum(xp.sum(xp.sum(a - b, axis=0), axis=-1) ** 2), (FULL, ROW)),
    "mean of a mean over two axes": (
        lambda a, s: xp.mean(xp.mean(xp.sin(a) / s, axis=(0, 2))), (FULL, SCALAR)),
    "sum of a weighted mean": (
        lambda a, b: xp.sum(xp.mean(a * b, axis=(0, 1)) * WEIGHTS), (FULL, ROW)),
}


@pytest.mark.parametrize("name", CASES)
def test_gradients_match_differences(name):
    f, args = CASES[name]
    check_grads(f, args, order=2)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_other_dtypes(dtype):
    a, b = COLUMN.astype(dtype), ROW.astype(dtype)
    if dtype.startswith("complex"):
        a, b = a * (1 + 0.5j), b * (0.3 - 1j)
    check_grads(lambda a, b: xp.real(xp.sum((a - b) ** 2 + a * b + a / (b + 3.0))), (a, b),
                order=1)


def test_the_broadcast_vjps_get_the_small_value(monkeypatch):
    seen = []
    pow_rule = rules.RULES["pow"]
    base, exponent = pow_rule.broadcast_vjps

    def spy(xp, g, x1, x2):
        seen.append(tuple(g.shape))
        return base(xp, g, x1, x2)

    monkeypatch.setattr(pow_rule, "broadcast_vjps", (spy, exponent))
    a = ag.Variable(FULL, requires_grad=True)
    xp.mean((a - 1.0) ** 2).backward()
    assert seen == [(1, 1, 1)]  # mean's gradient, never expanded to (2, 3, 4)
    np.testing.assert_allclose(a.grad.data, 2 * (FULL - 1.0) / FULL.size, rtol=1e-14)


@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("axis, keepdims", [(1, False), (0, False), ((0, 2), False),
                                            (1, True), (None, False)])
def test_reductions_pass_a_small_gradient_on_as_a_broadcast_of_their_input(name, axis, keepdims):
    """A reduction's broadcast VJP takes a value that broadcasts to its output, of a lower rank
    too, and returns the broadcast of the input's shape that its dense VJP would give."""
    raw = ag.get_backend("numpy").raw
    x_shape, out = (3, 5, 4), np.sum(np.zeros((3, 5, 4)), axis=axis, keepdims=keepdims).shape
    value = np.arange(1.0, 1.0 + (out[-1] if out else 1)).reshape(out[-1:])  # rank 1 or 0
    broadcast_vjp = rules.RULES[name].broadcast_vjps[0]
    got = broadcast_vjp(raw, value, x_shape, axis=axis, keepdims=keepdims)
    dense = rules.RULES[name].vjps[0](raw, np.broadcast_to(value, out), x_shape, axis=axis,
                                      keepdims=keepdims)
    assert isinstance(got, rules.BroadcastGrad) and got.shape == x_shape
    np.testing.assert_array_equal(got.dense(), np.broadcast_to(dense, x_shape))


def test_hooks_retained_and_captured_gradients_are_full_size():
    a = ag.Variable(COLUMN, requires_grad=True)
    b = ag.Variable(ROW, requires_grad=True)
    y = a + b
    y.retain_grad()
    hooked = []
    y.register_hook(lambda g: hooked.append(g.shape))
    z = -y
    xp.sum(z).backward()
    assert hooked == [(3, 4)]
    np.testing.assert_array_equal(y.grad.data, -np.ones((3, 4)))
    np.testing.assert_array_equal(a.grad.data, np.full((3, 1), -4.0))
    np.testing.assert_array_equal(b.grad.data, np.full((1, 4), -3.0))
    for leaf in (a, b):  # a leaf's .grad is its own writable array, not a broadcast view
        assert leaf.grad.data.base is None and leaf.grad.data.flags.writeable
    c = ag.Variable(COLUMN, requires_grad=True)
    w = c + 0.0
    (grad_w,) = ag.autograd.grad(xp.mean(w - 1.0), [w])
    assert grad_w.shape == (3, 1)
    np.testing.assert_array_equal(grad_w.data, np.full((3, 1), 1 / 3))


def test_accumulated_broadcast_gradients_add_up():
    a = ag.Variable(COLUMN, requires_grad=True)
    (xp.sum(a + 1.0) + xp.sum(-a) * 2.0 + xp.mean(a - ROW)).backward()
    np.testing.assert_allclose(a.grad.data, np.full((3, 1), 1.0 - 2.0 + 4 / 12), rtol=1e-14)


def test_against_torch():
    torch = pytest.importorskip("torch")
    a, b = ag.Variable(FULL, requires_grad=True), ag.Variable(ROW, requires_grad=True)
    xp.mean(-(a - b) ** 3 + (+b * b + 1.0) ** 2.5).backward()
    ta = torch.tensor(FULL, requires_grad=True)
    tb = torch.tensor(ROW, requires_grad=True)
    torch.mean(-(ta - tb) ** 3 + (+tb * tb + 1.0) ** 2.5).backward()
    np.testing.assert_allclose(a.grad.data, ta.grad.numpy(), rtol=1e-13)
    np.testing.assert_allclose(b.grad.data, tb.grad.numpy(), rtol=1e-13)


UNARY_NAMES = [*rules.elementwise.UNARY, *("special." + name for name in rules.special.UNARY)]


@pytest.mark.parametrize("size", [7, 5000])  # 5000: large enough for the in-place paths
@pytest.mark.parametrize("name", UNARY_NAMES)
def test_unary_broadcast_vjps_match_the_dense_path(name, size):
    """``sum(f(x))`` and ``mean(f(x))`` give ``f`` a small gradient (its broadcast VJP): the
    result must be the dense path's, ``f(x).backward(full-size v)``; for complex ``x`` too (the
    conjugate of the derivative, where ``f`` takes complex values)."""
    f = xp.special if name.startswith("special.") else xp
    f = getattr(f, name.removeprefix("special."))
    x = rng.uniform(0.15, 0.85, size) + (name == "acosh")  # inside every function's domain
    values = [(x, 1.0), (x, 0.7)]
    if not name.startswith("special."):
        values += [(x * (1 + 0.4j), 1.0 + 0j), (x * (1 - 0.3j), 0.3 - 0.7j)]
    for x, v in values:
        dense = ag.Variable(x, requires_grad=True)
        f(dense).backward(gradient=np.full(x.shape, v))
        for reduce, scale in ((xp.sum, 1), (xp.mean, 1 / size)):
            small = ag.Variable(x, requires_grad=True)
            reduce(f(small)).backward(gradient=np.asarray(v / scale))
            np.testing.assert_allclose(small.grad.data, dense.grad.data, rtol=1e-13,
                                       err_msg=f"{name}, {reduce.__name__}, v={v}")


def test_broadcast_vjps_must_take_the_rules_parameters():
    with pytest.raises(TypeError, match="parameters of its VJPs"):
        rules.defbroadcast("pow", lambda xp, g: g, rules.RULES["pow"].vjps[1])


# Steps of the random chains: the functions with broadcast VJPs, b an operand that broadcasts.
STEPS = {"add": lambda y, b: y + b, "sub": lambda y, b: y - b, "rsub": lambda y, b: b - y,
         "neg": lambda y, b: -y, "pos": lambda y, b: +y, "square": lambda y, b: y ** 2,
         "cube": lambda y, b: y ** 3, "mul": lambda y, b: y * b,
         "div": lambda y, b: y / (b * b + 1), "rdiv": lambda y, b: b / (y * y + 1),
         "scale": lambda y, b: 0.5 * y, "halve": lambda y, b: y / 2}


def _random_case(rng):
    """Two operands of broadcast-compatible random shapes (size-1 axes, missing leading ones),
    a random chain of the rules with broadcast VJPs starting with a binary one, and a sum or
    mean over random axes of its result."""
    out = tuple(int(n) for n in rng.integers(1, 4, size=rng.integers(1, 4)))
    shapes = []
    for _ in range(2):
        shape = tuple(n if rng.random() < 0.6 else 1 for n in out)
        shapes.append(shape[int(rng.integers(0, len(shape) + 1)):])
    steps = [str(rng.choice(["add", "sub", "rsub", "mul"]))] + [
        str(s) for s in rng.choice(sorted(STEPS), 3)]
    ndim = max(len(shape) for shape in shapes)
    axis = tuple(sorted({int(a) for a in rng.integers(0, ndim, size=2)})) if ndim else None
    return shapes, steps, str(rng.choice(["sum", "mean"])), axis, bool(rng.random() < 0.5)


def _chain(a, b, steps):
    for step in steps:
        a = STEPS[step](a, b)
    return a


def test_random_chains_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    for _ in range(60):
        (sa, sb), steps, reduce, axis, keepdims = _random_case(rng)
        a0, b0 = rng.standard_normal(sa) * 0.5, rng.standard_normal(sb) * 0.5
        # Weights on the reduced result: the gradient reaching the reduction is not uniform.
        expected = getattr(np, reduce)(_chain(a0, b0, steps), axis=axis, keepdims=keepdims)
        weights = rng.standard_normal(np.shape(expected))
        a, b = ag.Variable(a0, requires_grad=True), ag.Variable(b0, requires_grad=True)
        reduced = getattr(xp, reduce)(_chain(a, b, steps), axis=axis, keepdims=keepdims)
        xp.sum(reduced * weights).backward()
        ta, tb = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
        y = _chain(ta, tb, steps)
        y = getattr(torch, reduce)(y, dim=axis if axis is not None else tuple(range(y.ndim)),
                                   keepdim=keepdims)
        torch.sum(y * torch.tensor(weights)).backward()
        where = f"{sa} {sb} {steps} {reduce} axis={axis} keepdims={keepdims}"
        np.testing.assert_allclose(reduced.data, expected, rtol=1e-12, err_msg=where)
        np.testing.assert_allclose(a.grad.data, ta.grad.numpy(), rtol=1e-12, atol=1e-14,
                                   err_msg=where)
        np.testing.assert_allclose(b.grad.data, tb.grad.numpy(), rtol=1e-12, atol=1e-14,
                                   err_msg=where)


@pytest.mark.skipif(not rules.reuse._EXACT_REFCOUNTS,
                    reason="reuse is off where reference counts are not exact")
@pytest.mark.parametrize("order", ["broadcast first", "broadcast last"])
def test_a_broadcast_gradient_is_added_in_place_into_a_fresh_one(order):
    # x gets cos(x), a fresh array of the engine's, and sum's small 1 through subtract: the sum
    # takes no second full-size array.
    x0 = np.linspace(-1.0, 1.0, 1 << 16)
    x = ag.Variable(x0, requires_grad=True)
    dense, broadcast = xp.sum(xp.sin(x)), xp.sum(x - 1.0)
    loss = broadcast + dense if order == "broadcast first" else dense + broadcast
    tracemalloc.start()
    loss.backward()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    np.testing.assert_allclose(x.grad.data, np.cos(x0) + 1.0, rtol=1e-15)
    assert peak < 1.5 * x0.nbytes, peak / x0.nbytes


@pytest.mark.skipif(not rules.reuse._EXACT_REFCOUNTS,
                    reason="reuse is off where reference counts are not exact")
def test_a_product_with_sums_one_is_skipped():
    # sum's 1 reaches multiply small: sin's gradient is w itself, and sin's VJP computes cos(x)
    # * w in place in the fresh cos(x), which the leaf takes: one array of x's size in all.
    x0 = np.linspace(-1.0, 1.0, 1 << 16)
    w = np.cos(np.arange(x0.size) * 0.37)  # the user's: never written to
    before = w.copy()
    x = ag.Variable(x0, requires_grad=True)
    loss = xp.sum(xp.sin(x) * w)
    tracemalloc.start()
    loss.backward()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    np.testing.assert_array_equal(w, before)
    np.testing.assert_allclose(x.grad.data, np.cos(x0) * w, rtol=1e-15)
    assert peak < 1.5 * x0.nbytes, peak / x0.nbytes


@pytest.mark.skipif(not rules.reuse._EXACT_REFCOUNTS,
                    reason="reuse is off where reference counts are not exact")
def test_a_quotients_gradient_takes_mean_in_place():
    # mean's 1/n reaches divide small: x's gradient -ans / x is computed, then scaled in place.
    x0 = np.linspace(1.0, 2.0, 1 << 16)
    x = ag.Variable(x0, requires_grad=True)
    loss = xp.mean(3.0 / x)
    tracemalloc.start()
    loss.backward()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    np.testing.assert_allclose(x.grad.data, -3.0 / x0 ** 2 / x0.size, rtol=1e-14)
    assert peak < 1.5 * x0.nbytes, peak / x0.nbytes
