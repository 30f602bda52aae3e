"""``(-x) * x`` and ``x * (-x)``, a Gaussian's exponent: the product keeps ``x`` alone, not the
values of ``-x``, which are then freed with their Variable; once nothing can see the gradient of
``-x``, the product sends its whole gradient ``-2 g conj(x)`` to ``x`` in one product. Every
gradient must be the one the two operands give, whoever still holds ``-x``."""

import gc
import tracemalloc

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.rules import RULES
from arraygrad.rules.elementwise import NEGATED_OPERAND
from arraygrad.testing import check_grads

xp = ag.namespace("numpy")
N = 1 << 13  # large enough for the namespace to recognise the product (rules.reuse.large)

FORMS = {
    "(-x) * x": lambda v: -v * v,
    "x * (-x)": lambda v: v * -v,
    "negative(x) * x": lambda v: xp.multiply(xp.negative(v), v),
    "(-y) * y of a non-leaf y": lambda v: (lambda y: -y * y)(v * 1.5 - 0.25),
}


def _values(rng, dtype=np.float64):
    values = rng.standard_normal(N)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(N)
    return values.astype(dtype)


def _product_rule(y):
    """The rule recorded for the product ``y`` (under ``exp``, ``sum``... : the first node
    whose function is ``multiply``)."""
    node = y.grad_fn
    while node.rule.name != "multiply":
        node = node.next_functions[0][0]
    return node.rule


@pytest.mark.parametrize("form", FORMS)
def test_the_gaussian_exponent_is_recognised_and_its_gradient_exact(rng, form):
    f = FORMS[form]
    x = rng.uniform(-1.5, 1.5, N)
    check_grads(lambda v: xp.sum(xp.exp(f(v))), x, order=2, modes=("fwd", "rev"))
    variable = ag.Variable(x, requires_grad=True)
    y = xp.exp(f(variable))
    assert _product_rule(y) in NEGATED_OPERAND["multiply"]
    xp.sum(y).backward()
    scale = 1.5 if "non-leaf" in form else 1.0
    inner = x * scale - 0.25 if "non-leaf" in form else x
    np.testing.assert_allclose(variable.grad.data,
                               -2 * inner * scale * np.exp(-inner * inner), rtol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_the_same_values_as_two_separate_operands(rng, dtype):
    """``(-x) * x`` against ``(-x) * y`` with ``y`` a copy of ``x`` (the general product),
    gradients of ``x`` and ``y`` summed: the same values, and torch's where it is installed."""
    data = _values(rng, dtype)
    x, x2, y = (ag.Variable(data.copy(), requires_grad=True) for _ in range(3))
    loss = xp.sum(xp.real(xp.sin(-x * x)))
    assert _product_rule(loss) in NEGATED_OPERAND["multiply"]
    loss.backward()
    xp.sum(xp.real(xp.sin(-x2 * y))).backward()
    # Doubling is exact; a complex product may round differently with an operand negated.
    np.testing.assert_allclose(x.grad.data, x2.grad.data + y.grad.data,
                               rtol=0 if dtype is np.float32 else 1e-15)
    torch = pytest.importorskip("torch")
    t = torch.tensor(data, requires_grad=True)
    torch.sum(torch.real(torch.sin(-t * t))).backward()
    np.testing.assert_allclose(x.grad.data, t.grad.numpy(), rtol=1e-5 if dtype is np.float32
                               else 1e-12, atol=1e-5 if dtype is np.float32 else 1e-12)


def test_the_values_of_minus_x_are_not_kept(rng):
    """After ``exp(-x * x)`` the graph holds exp's output alone: ``-x`` is freed with its
    Variable (the product used to keep it, one array of x's size more until backward)."""
    variable = ag.Variable(rng.standard_normal(1 << 20), requires_grad=True)
    tracemalloc.start()
    try:
        y = xp.exp(-variable * variable)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < 1.5 * variable.data.nbytes, f"{held / variable.data.nbytes:.2f} arrays held"
    xp.sum(y).backward()
    x = variable.data
    np.testing.assert_allclose(variable.grad.data, -2 * x * np.exp(-x * x), rtol=1e-13)


def test_minus_x_still_held_gets_its_own_gradient(rng):
    """While the user holds ``-x``, its gradient is its own (``g x``), by ``autograd.grad``, by
    ``retain_grad`` and by a hook, even after the Variable is dropped."""
    x0 = rng.standard_normal(N)
    expected_n = x0 * np.exp(-x0 * x0)  # d sum(exp(n * x)) / dn at n = -x
    expected_x = -2 * x0 * np.exp(-x0 * x0)

    x = ag.Variable(x0, requires_grad=True)
    n = -x
    loss = xp.sum(xp.exp(n * x))
    assert _product_rule(loss) in NEGATED_OPERAND["multiply"]
    grad_x, grad_n = ag.autograd.grad(loss, [x, n])
    np.testing.assert_allclose(grad_n.data, expected_n, rtol=1e-13)
    np.testing.assert_allclose(grad_x.data, expected_x, rtol=1e-13)

    x = ag.Variable(x0, requires_grad=True)
    n = -x
    n.retain_grad()
    xp.sum(xp.exp(n * x)).backward()
    np.testing.assert_allclose(n.grad.data, expected_n, rtol=1e-13)
    np.testing.assert_allclose(x.grad.data, expected_x, rtol=1e-13)

    x = ag.Variable(x0, requires_grad=True)
    seen = []
    n = -x
    n.register_hook(lambda g: seen.append(g.data.copy()))
    loss = xp.sum(xp.exp(n * x))
    del n
    gc.collect()
    loss.backward()
    (hooked,) = seen
    np.testing.assert_allclose(hooked, expected_n, rtol=1e-13)
    np.testing.assert_allclose(x.grad.data, expected_x, rtol=1e-13)


def test_minus_x_used_again_passes_both_gradients(rng):
    """``n = -x`` used by the product and by a sum, then dropped: ``x`` gets both gradients."""
    x0 = rng.standard_normal(N)
    x = ag.Variable(x0, requires_grad=True)
    n = -x
    loss = xp.sum(n * x) + 3.0 * xp.sum(n)
    del n
    loss.backward()
    np.testing.assert_allclose(x.grad.data, -2 * x0 - 3.0, rtol=1e-14)


def test_a_retained_graph_gives_the_same_gradient_before_and_after_minus_x_is_dropped(rng):
    x0 = rng.standard_normal(N)
    x = ag.Variable(x0, requires_grad=True)
    n = -x
    loss = xp.sum(xp.sin(n * x))
    loss.backward(retain_graph=True)
    held = x.grad.data.copy()
    x.grad = None
    del n
    loss.backward()
    np.testing.assert_array_equal(x.grad.data, held)
    np.testing.assert_allclose(held, np.cos(-x0 * x0) * (-2 * x0), rtol=1e-13)


def _changed_under_no_grad_n(x):
    n = -x
    with ag.no_grad():
        n += 1.0
    return n, x


def _changed_under_no_grad_x(x):
    n = -x
    with ag.no_grad():
        x += 1.0
    return n, x


def _data_replaced(x):
    n = -x
    n.data = n.data + 1.0
    return n, x


def _another_leaf_of_the_same_array(x):
    other = ag.Variable(x.data, requires_grad=True)  # the very array, another leaf
    return -other, x


CHANGED = {
    "-x changed in place under no_grad": _changed_under_no_grad_n,
    "x changed in place under no_grad": _changed_under_no_grad_x,
    "-x given new data": _data_replaced,
    "-x of another leaf of the same array": _another_leaf_of_the_same_array,
}


@pytest.mark.parametrize("case", CHANGED)
def test_a_product_whose_operand_is_not_minus_the_other_is_the_general_product(rng, case):
    """The values of ``n`` are no longer ``-x``'s (or they are another Variable's): the general
    product is recorded, and each operand gets the other's values as they were used (and ``x``
    also minus ``n``'s gradient, where ``n`` is still ``negative`` of it in the graph)."""
    x = ag.Variable(rng.standard_normal(N), requires_grad=True)
    n, x = CHANGED[case](x)
    n_used, x_used = n.data.copy(), x.data.copy()
    product = n * x
    assert product.grad_fn.rule is RULES["multiply"]
    grad_n, grad_x = ag.autograd.grad(xp.sum(product), [n, x])
    np.testing.assert_array_equal(grad_n.data, x_used)
    through_negative = case != "-x of another leaf of the same array"
    np.testing.assert_array_equal(grad_x.data, n_used - x_used if through_negative else n_used)


def test_a_small_product_is_the_general_product():
    """Below rules.reuse.REUSE_MIN_SIZE, the namespace does not look: no memory to win."""
    x = ag.Variable(np.linspace(-1.0, 1.0, 7), requires_grad=True)
    assert (-x * x).grad_fn.rule is RULES["multiply"]


def test_second_order_and_forward_mode_of_the_gaussian(rng):
    """d/dx of exp(-x^2) is -2x exp(-x^2); the second derivative (4x^2 - 2) exp(-x^2), by
    create_graph, by hessian-vector products, and the tangent of the forward mode."""
    x0 = rng.uniform(-1.5, 1.5, N)
    x = ag.Variable(x0, requires_grad=True)
    (first,) = ag.autograd.grad(xp.sum(xp.exp(-x * x)), [x], create_graph=True)
    np.testing.assert_allclose(first.data, -2 * x0 * np.exp(-x0 * x0), rtol=1e-13)
    xp.sum(first).backward()
    np.testing.assert_allclose(x.grad.data, (4 * x0 * x0 - 2) * np.exp(-x0 * x0), rtol=1e-12,
                               atol=1e-15)
    direction = rng.standard_normal(N)
    _, tangent = ag.jvp(lambda v: xp.exp(v * -v), (x0,), (direction,))
    np.testing.assert_allclose(tangent, -2 * x0 * np.exp(-x0 * x0) * direction, rtol=1e-13)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    expected = jax.grad(lambda v: jnp.sum(jax.grad(lambda w: jnp.sum(jnp.exp(-w * w)))(v)))(x0)
    np.testing.assert_allclose(x.grad.data, np.asarray(expected), rtol=1e-12, atol=1e-15)
