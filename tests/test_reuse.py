"""Memory reuse (``arraygrad._buffers``): accumulation adds in place into a gradient buffer that
nothing else refers to, a leaf's ``.grad`` takes such a buffer without a copy, and assignment
writes into a Variable's array when only that Variable holds it. Nothing the user can reach may
change, and every gradient must stay exact."""

import sys
import tracemalloc

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import _buffers
from arraygrad.testing import check_grads

xp = ag.namespace("numpy")
LARGE = 1 << 16  # float64: above _buffers.MIN_BYTES
exact_refcounts = pytest.mark.skipif(
    not _buffers.EXACT_REFCOUNTS, reason="reuse is off where reference counts are not exact "
    f"({sys.implementation.name} {sys.version_info[:2]})")


def w3_gradient(x):
    """The hand-written gradient of sum(sin(x) * exp(-x*x) + log1p(x*x))."""
    return np.cos(x) * np.exp(-x * x) - 2 * x * np.sin(x) * np.exp(-x * x) + 2 * x / (1 + x * x)


@pytest.fixture
def reuse_everywhere(monkeypatch):
    """Reuse on arrays of every size, so that small test arrays take the same paths."""
    monkeypatch.setattr(_buffers, "MIN_BYTES", 1)


FUNCTIONS = {
    "w3": lambda x, w: xp.sin(x) * xp.exp(-x * x) + xp.log1p(x * x),
    "square_and_negate": lambda x, w: -(x * x) - x,
    "product_with_itself_and_constant": lambda x, w: (x * w) * (x * w),
    "chain_of_scalars": lambda x, w: ((x * 2.0 - 1.0) * 3.0) / 4.0,
    "quotient": lambda x, w: xp.sin(x) / (2.0 + xp.cos(w)),
    "broadcast_row": lambda x, w: xp.reshape(x, (4, -1)) * w[:4, None],
    "tanh_mlp_like": lambda x, w: xp.tanh(x * w) * xp.tanh(x),
    "mean_not_sum": lambda x, w: xp.exp(x) * xp.mean(x),
    "reciprocal_derivatives": lambda x, w: (xp.atan(x) + xp.asinh(x) + xp.log2(x + 1.0)
                                            + xp.acos(x * 0.5) + xp.atanh(x * 0.5)),
    "derivatives_into_saved_inputs": lambda x, w: (
        xp.log1p(x * w) + xp.log(x * w) + xp.log10(x * w) + xp.expm1(x * 0.5) + xp.sin(x * w)
        + xp.sinh(x * 0.5) + xp.cosh(x * w)
        + xp.square(x * w) + (x * w) ** 2 + (-x) * x + (x * 2.0) * (x + 1.0)),
    "whole_array_extrema": lambda x, w: xp.sin(x) * xp.max(x * w) - xp.min(x) + xp.max(x),
    "spent_saved_output": lambda x, w: xp.sum(xp.exp(x * w)) * 3.0 + x,
    "forward_into_temporaries": lambda x, w: (
        xp.tanh(x * w) + xp.sqrt(xp.exp(x * 0.5)) + xp.expm1(-x) * xp.reciprocal(2.0 + x * x)
        + xp.tan(x * 0.3) - xp.negative(xp.positive(x * w)) + xp.conj(x - w)),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_gradients_are_exact_with_reuse_on_every_size(reuse_everywhere, monkeypatch, name, rng):
    """sum(f(x)) starts backward with a broadcast 1 and fresh temporaries all along: every path
    of accumulation is taken, and the gradients must match central differences."""
    function = FUNCTIONS[name]
    x, w = rng.uniform(0.1, 1.0, 64), rng.uniform(0.1, 1.0, 64)
    check_grads(lambda v: xp.sum(function(v, w)), x)
    variable = ag.Variable(x, requires_grad=True)
    xp.sum(function(variable, w)).backward()
    with_reuse = variable.grad.data
    monkeypatch.setattr(_buffers, "MIN_BYTES", 1 << 62)  # the same backward, reusing nothing
    variable = ag.Variable(x, requires_grad=True)
    xp.sum(function(variable, w)).backward()
    np.testing.assert_array_equal(with_reuse, variable.grad.data)


def test_the_conformance_suite_passes_with_reuse_on_every_size(reuse_everywhere):
    """Every differentiable function of the standard, every variant, with reuse on arrays of
    any size: the suite's small arrays take the in-place paths too."""
    from arraygrad.conformance import runner

    results, unavailable = runner.run(["numpy"])
    assert not unavailable and len(results) > 600
    assert not [(r.case.id, r.dtype) for r in results if r.status == "fail"]


def test_values_the_user_holds_never_change(rng):
    x = rng.standard_normal(LARGE)
    w = rng.standard_normal(LARGE)
    w_before = w.copy()
    variable = ag.Variable(x, requires_grad=True)
    s = xp.sin(variable)
    e = xp.exp(-variable * variable)
    product = s * e
    held = {name: value.data.copy() for name, value in
            {"s": s, "e": e, "product": product}.items()}
    loss = xp.sum(product + xp.log1p(variable * variable) + variable * w)
    loss.backward()
    for name, value in {"s": s, "e": e, "product": product}.items():
        np.testing.assert_array_equal(value.data, held[name], err_msg=name)
    np.testing.assert_array_equal(w, w_before)
    np.testing.assert_array_equal(x, variable.data)
    np.testing.assert_allclose(variable.grad.data, w3_gradient(x) + w, rtol=1e-10, atol=1e-14)


def test_a_leaf_gradient_never_shares_memory_with_a_users_array(rng):
    """d sum(x * w) / dx is w itself; .grad must be a copy the user can keep."""
    w = rng.standard_normal(LARGE)
    x = ag.Variable(np.zeros(LARGE), requires_grad=True)
    xp.sum(x * w).backward()
    assert not np.shares_memory(x.grad.data, w)
    w[:] = 0.0
    assert np.all(x.grad.data != 0.0)


def test_hooks_retained_and_captured_gradients_keep_their_values(rng):
    x = rng.uniform(0.1, 1.0, LARGE)
    variable = ag.Variable(x, requires_grad=True)
    inner = variable * variable
    seen = []
    inner.register_hook(lambda g: seen.append(g))
    outer = xp.exp(inner)
    outer.retain_grad()
    loss = xp.sum(outer * 3.0)
    loss.backward(retain_graph=True)
    np.testing.assert_allclose(outer.grad.data, np.full(LARGE, 3.0))
    np.testing.assert_allclose(seen[0].data, 3.0 * np.exp(x * x))
    np.testing.assert_allclose(variable.grad.data, 6.0 * x * np.exp(x * x))
    (captured,) = ag.autograd.grad(loss, [inner])
    np.testing.assert_allclose(captured.data, 3.0 * np.exp(x * x))
    np.testing.assert_allclose(seen[0].data, 3.0 * np.exp(x * x))


def test_backward_twice_through_a_retained_graph_gives_the_same_gradient(rng):
    x = rng.standard_normal(LARGE)
    variable = ag.Variable(x, requires_grad=True)
    loss = xp.sum(xp.sin(variable) * xp.exp(-variable * variable) + xp.log1p(variable * variable))
    loss.backward(retain_graph=True)
    first = variable.grad.data.copy()
    loss.backward()
    np.testing.assert_allclose(first, w3_gradient(x), rtol=1e-10, atol=1e-14)
    np.testing.assert_array_equal(variable.grad.data, 2 * first)


def test_second_order_gradients_are_unaffected(rng):
    x = rng.uniform(0.1, 1.0, LARGE)
    variable = ag.Variable(x, requires_grad=True)
    loss = xp.sum(xp.exp(-variable * variable))
    (first,) = ag.autograd.grad(loss, [variable], create_graph=True)
    xp.sum(first).backward()
    np.testing.assert_allclose(first.data, -2 * x * np.exp(-x * x), rtol=1e-12)
    np.testing.assert_allclose(variable.grad.data, (4 * x * x - 2) * np.exp(-x * x), rtol=1e-9,
                               atol=1e-15)


def _backward_peak(loss):
    """The most memory (bytes) that ``loss.backward()`` has allocated at any one time."""
    tracemalloc.start()
    try:
        loss.backward()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@exact_refcounts
def test_a_held_output_is_copied_not_reused(rng):
    x = rng.standard_normal(1 << 20)
    variable = ag.Variable(x, requires_grad=True)
    e = xp.exp(-variable)
    before = e.data.copy()
    xp.sum(e).backward()
    np.testing.assert_array_equal(e.data, before)
    assert not np.shares_memory(variable.grad.data, e.data)
    np.testing.assert_allclose(variable.grad.data, -before, rtol=1e-15)


def test_read_only_constants_are_never_written_to(rng):
    """d sum(x * c) / dx is c itself: two read-only constants become gradients that meet in
    x's buffer, which must add them into a new array, not into a read-only one."""
    def read_only(value):
        array = np.full(LARGE, value)
        array.flags.writeable = False
        return array

    x = ag.Variable(rng.standard_normal(LARGE), requires_grad=True)
    (xp.sum(x * read_only(2.0)) + xp.sum(x * read_only(3.0))).backward()
    np.testing.assert_array_equal(x.grad.data, np.full(LARGE, 5.0))


def _address(array):
    return array.__array_interface__["data"][0]


@exact_refcounts
def test_assignment_writes_in_place_only_into_an_array_nobody_else_sees():
    xp = ag.namespace("numpy")
    x = ag.Variable(np.arange(5.0), requires_grad=True)
    y = x * 3  # fresh, held by y alone: written in place, as NumPy code expects
    address = _address(y.data)
    y[0] = 1.0
    assert _address(y.data) == address
    held = y.data  # a user's name for it: copy-on-write again
    y[1] = 9.0
    assert held[1] == 3.0
    del held
    old = y.data  # a user's name for it: copy-on-write again
    shared = y.detach()  # shares y's values, as PyTorch's detach: it sees the change
    y[2] = 0.0
    assert shared.data[2] == 0.0 and old[2] == 6.0
    del old
    e = xp.exp(x)  # saved by exp's backward: copy-on-write
    before = e.data
    e[0] = 0.0
    assert before[0] == 1.0
    xp.sum(e + y).backward()
    np.testing.assert_allclose(x.grad.data, np.exp(np.arange(5.0)) * [0, 1, 1, 1, 1]
                               + [0, 0, 0, 3, 3])


@exact_refcounts
@pytest.mark.parametrize("holder", ["variable", "view", "array", "other_node", "retain_graph"])
def test_a_saved_array_someone_else_holds_is_never_overwritten(rng, holder):
    x = rng.standard_normal(LARGE)
    variable = ag.Variable(x, requires_grad=True)
    e = xp.exp(-variable)
    before = e.data.copy()
    kept = {"variable": e, "view": e[10:], "array": e.data, "other_node": xp.sin(e),
            "retain_graph": None}[holder]
    loss = xp.sum(e) * 3.0 + (xp.sum(kept) if holder == "other_node" else 0.0)
    del e
    loss.backward(retain_graph=holder == "retain_graph")
    seen = kept.data if holder in ("variable", "view") else kept
    if holder == "view":
        np.testing.assert_array_equal(seen, before[10:])
    elif holder in ("variable", "array"):
        np.testing.assert_array_equal(seen, before)
    expected = -3.0 * before - (np.cos(before) * before if holder == "other_node" else 0.0)
    np.testing.assert_allclose(variable.grad.data, expected, rtol=1e-13)
    if holder == "retain_graph":  # the saved output is intact for a second pass
        loss.backward()
        np.testing.assert_allclose(variable.grad.data, 2 * expected, rtol=1e-13)


def _max_grad(x):
    """d max(x) / dx: 1 / k on each of the k tied maxima."""
    mask = x == x.max()
    return mask / mask.sum()


@pytest.mark.parametrize("order", ["max_first", "max_last"])
@pytest.mark.parametrize("layout", ["C", "F"])
def test_a_whole_array_maximum_adds_its_gradient_into_the_others(rng, order, layout):
    """max's gradient stays sparse and is added at the maxima into x's other gradient, in
    place or into a copy, whichever order the two arrive in, whatever x's memory layout; ties
    share it."""
    x = np.asarray(rng.standard_normal((64, 48)), order=layout)
    x[3, 5] = x[40, 2] = x.max() + 1.0  # a tie
    variable = ag.Variable(x, requires_grad=True)
    dense = xp.sum(variable * variable) + xp.sum(xp.exp(variable))
    loss = (xp.max(variable) + dense) if order == "max_first" else (dense + xp.max(variable))
    loss.backward()
    np.testing.assert_allclose(variable.grad.data, 2 * x + np.exp(x) + _max_grad(x),
                               rtol=1e-14)
    assert variable.grad.data[3, 5] == variable.grad.data[3, 5]  # not NaN
    assert variable.grad.data.shape == x.shape


def test_a_whole_array_extremum_alone_reaches_every_reader_as_an_array(rng):
    """A leaf, a hook, a retained gradient, autograd.grad and a second backward all see max's
    gradient as an ordinary array, zero off the maxima."""
    x = rng.standard_normal(LARGE)
    variable = ag.Variable(x, requires_grad=True)
    doubled = variable * 2.0
    doubled.retain_grad()
    seen = []
    doubled.register_hook(lambda g: seen.append(g.data.copy()))
    loss = xp.max(doubled) - xp.min(doubled)
    loss.backward(retain_graph=True)
    expected = _max_grad(x) - _max_grad(-x)
    np.testing.assert_array_equal(doubled.grad.data, expected)
    np.testing.assert_array_equal(seen[0], expected)
    np.testing.assert_array_equal(variable.grad.data, 2 * expected)
    (captured,) = ag.autograd.grad(loss, [doubled])
    assert isinstance(captured.data, np.ndarray)
    np.testing.assert_array_equal(captured.data, expected)
    leaf = ag.Variable(x, requires_grad=True)
    xp.max(leaf).backward()
    assert isinstance(leaf.grad.data, np.ndarray)
    np.testing.assert_array_equal(leaf.grad.data, _max_grad(x))


def test_a_whole_array_maximum_of_another_dtype_is_cast_to_its_input(rng):
    x = rng.standard_normal(LARGE).astype(np.float32)
    variable = ag.Variable(x, requires_grad=True)
    (xp.max(variable) * 2.0 + xp.sum(variable)).backward()
    assert variable.grad.dtype == xp.float32
    np.testing.assert_allclose(variable.grad.data, 1.0 + 2.0 * _max_grad(x), rtol=1e-6)


def test_a_nan_maximum_gives_nan_everywhere_as_torch(rng):
    x = rng.standard_normal(100)
    x[7] = np.nan
    variable = ag.Variable(x, requires_grad=True)
    (xp.max(variable) + xp.sum(variable)).backward()
    assert np.isnan(variable.grad.data).all()


def test_second_order_through_a_whole_array_maximum(rng):
    x = rng.standard_normal(200)
    variable = ag.Variable(x, requires_grad=True)
    (first,) = ag.autograd.grad(xp.max(variable) ** 2 + xp.sum(variable), [variable],
                                create_graph=True)
    np.testing.assert_allclose(first.data, 1.0 + 2 * x.max() * _max_grad(x))
    xp.sum(first).backward()
    np.testing.assert_allclose(variable.grad.data, 2 * _max_grad(x))


@pytest.mark.parametrize("order", ["max_first", "max_last"])
def test_a_users_array_that_became_a_gradient_takes_no_extremum_in_place(rng, order):
    """d sum(x * w) / dx is w itself: max's share goes into a copy, never into w."""
    w = rng.standard_normal(LARGE)
    before = w.copy()
    x = rng.standard_normal(LARGE)
    variable = ag.Variable(x, requires_grad=True)
    terms = [xp.max(variable), xp.sum(variable * w)]
    (terms[0] + terms[1] if order == "max_first" else terms[1] + terms[0]).backward()
    np.testing.assert_array_equal(w, before)
    np.testing.assert_array_equal(variable.grad.data, before + _max_grad(x))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_a_variable_times_itself_gives_the_gradient_of_two_operands_in_one(rng, dtype):
    """``x * x`` records one VJP for both edges (2 g conj(x)); the gradient is that of ``x * y``
    with y a copy of x, summed (bit-identical for reals), and torch's; the graph keeps both edges,
    second order and forward mode are unchanged."""
    data = rng.standard_normal(LARGE).astype(dtype)
    if dtype is np.complex128:
        data = data + 1j * rng.standard_normal(LARGE)
    x, y = (ag.Variable(data, requires_grad=True) for _ in range(2))
    x2 = ag.Variable(data.copy(), requires_grad=True)
    xp.sum(xp.real(xp.sin(x * x))).backward()
    xp.sum(xp.real(xp.sin(x2 * y))).backward()
    # Doubling is exact; a complex product may round differently with its operands swapped.
    np.testing.assert_allclose(x.grad.data, x2.grad.data + y.grad.data,
                               rtol=0 if dtype is np.float64 else 1e-15)
    square = x * x
    (first, _), (second, _) = square.grad_fn.next_functions
    assert first is second and first.variable is x
    torch = pytest.importorskip("torch")
    t = torch.tensor(data, requires_grad=True)
    torch.sum(torch.real(torch.sin(t * t))).backward()
    np.testing.assert_allclose(x.grad.data, t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_a_variable_times_itself_to_second_order_and_forward():
    data = np.array([0.3, -1.7, 2.2])
    x = ag.Variable(data, requires_grad=True)
    (first,) = ag.autograd.grad(xp.sum(x * x * x), [x], create_graph=True)
    np.testing.assert_allclose(first.data, 3 * data**2)
    xp.sum(first).backward()
    np.testing.assert_allclose(x.grad.data, 6 * data)
    _, tangent = ag.jvp(lambda v: v * v, (data,), (np.array([1.0, 2.0, -1.0]),))
    np.testing.assert_allclose(tangent, 2 * data * [1.0, 2.0, -1.0])


def _forward_peak(f):
    """The most memory (bytes) that ``f()`` has allocated at any one time."""
    tracemalloc.start()
    try:
        result = f()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@exact_refcounts
@exact_refcounts
def test_a_function_never_writes_into_an_argument_someone_holds(rng):
    x = rng.standard_normal(1 << 16)
    variable = ag.Variable(x, requires_grad=True)
    held = variable * 2.0  # a name holds the Variable
    before = held.data.copy()
    xp.exp(held)
    np.testing.assert_array_equal(held.data, before)
    raw = x * 3.0  # a name holds the array: a constant Variable made around it
    xp.exp(ag.Variable(raw))
    np.testing.assert_array_equal(raw, x * 3.0)
    base = variable * 1.0  # a view of a temporary: its base is seen by others
    base_before = base.data.copy()
    xp.exp(xp.reshape(base, (-1, 2)))
    np.testing.assert_array_equal(base.data, base_before)
    u = xp.exp(xp.tanh(variable))  # tanh saved its output for backward: not a temporary's
    xp.sum(u).backward()
    np.testing.assert_allclose(variable.grad.data, np.exp(np.tanh(x)) * (1 - np.tanh(x) ** 2),
                               rtol=1e-13)
    leaf = ag.Variable(x.copy(), requires_grad=True)
    (xp.exp(leaf) * 1.0).backward(xp.ones_like(leaf))  # a leaf keeps its value for its .grad
    np.testing.assert_array_equal(leaf.data, x)


@exact_refcounts
def test_a_plugins_rule_that_reads_the_argument_keeps_it_intact(rng, monkeypatch):
    """A backend may override exp's rule with one that reads x, not exp's output: then exp must
    not compute into its temporary argument, or the rule would read exp(x) for x."""
    from arraygrad._namespace import build_namespace
    from arraygrad.rules import Rule

    backend = ag.get_backend("numpy")
    monkeypatch.setattr(backend, "operators", backend.operators)  # restored after the test
    reading_x = Rule("exp", ["x"], [lambda xp, g, x: g * xp.exp(x)])
    monkeypatch.setattr(backend, "rule_override",
                        lambda op: reading_x if op == "exp" else None)
    ns = build_namespace(backend)
    x = rng.standard_normal(1 << 16) * 0.1
    variable = ag.Variable(x, requires_grad=True)
    ns.sum(ns.exp(variable * 2.0)).backward()
    np.testing.assert_allclose(variable.grad.data, 2 * np.exp(2 * x), rtol=1e-14)


class _ReturnsHeld(ag.Function):
    """d/dx of sum(f(x)) is an array the caller still holds (``HELD``): the engine must treat
    it as seen elsewhere wherever it accumulates it."""

    HELD = None

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return _ReturnsHeld.HELD


class _ReturnsHeldToo(_ReturnsHeld):
    HELD = None

    @staticmethod
    def backward(ctx, g):
        return _ReturnsHeldToo.HELD


@pytest.mark.parametrize("other", ["fresh first", "fresh last", "held too", "broadcast first",
                                   "broadcast last"])
def test_a_gradient_someone_else_holds_is_never_summed_into(rng, other):
    """A Function's backward returns an array that its caller still holds; another path sends
    the same node a fresh gradient (first or last), sum's small one through add, or another held
    array, then the sum reaches a leaf. Neither the sum into the buffer nor the leaf's ``.grad``
    may write into, or share, a held array (one reference miscounted would allow it: a compiled
    engine whose functions borrowed their arguments' references, as Cython's did before 3.1,
    fails this)."""
    # Each held array's one holder, as a user's own array would have.
    _ReturnsHeld.HELD = rng.standard_normal(LARGE)  # not rows of one array: views are never reused
    _ReturnsHeldToo.HELD = rng.standard_normal(LARGE)
    before, before_too = _ReturnsHeld.HELD.copy(), _ReturnsHeldToo.HELD.copy()
    try:
        x = rng.standard_normal(LARGE)
        variable = ag.Variable(x, requires_grad=True)
        middle = variable * 1.5
        held = xp.sum(_ReturnsHeld.apply(middle))
        if other == "held too":
            (held + xp.sum(_ReturnsHeldToo.apply(middle))).backward()
            expected = before + before_too
        elif other.startswith("broadcast"):  # sum's small gradient, through add
            broadcast = xp.sum(middle + 2.0)
            (held + broadcast if other == "broadcast last" else broadcast + held).backward()
            expected = before + 1.0
        else:
            fresh = xp.sum(middle * 2.0)
            (held + fresh if other == "fresh last" else fresh + held).backward()
            expected = before + 2.0
        np.testing.assert_array_equal(_ReturnsHeld.HELD, before)
        np.testing.assert_array_equal(_ReturnsHeldToo.HELD, before_too)
        np.testing.assert_allclose(variable.grad.data, 1.5 * expected, rtol=1e-12)
        # A leaf whose only gradient is the held array gets a copy of it.
        leaf = ag.Variable(x, requires_grad=True)
        xp.sum(_ReturnsHeld.apply(leaf)).backward()
        assert not np.shares_memory(leaf.grad.data, _ReturnsHeld.HELD)
        np.testing.assert_array_equal(_ReturnsHeld.HELD, before)
    finally:
        _ReturnsHeld.HELD = _ReturnsHeldToo.HELD = None


def test_reference_counts_are_trusted_only_where_they_are_exact():
    """CPython before 3.14 with the GIL counts every reference; 3.14 may borrow them on the
    stack and a free-threaded build may hand an array to another thread: there take() declines."""
    import sysconfig

    exact = (sys.implementation.name == "cpython" and sys.version_info < (3, 14)
             and not sysconfig.get_config_var("Py_GIL_DISABLED"))
    assert _buffers.EXACT_REFCOUNTS is bool(exact)


@exact_refcounts
def test_take_returns_only_an_array_that_nothing_else_holds():
    holder = [np.ones(LARGE)]
    owned = _buffers.take(holder, 0)
    assert owned is not None and holder == [None]
    held = np.ones(LARGE)
    holder = [held]  # a name holds it too
    assert _buffers.take(holder, 0) is None and holder[0] is held
    holder = [np.ones(2 * LARGE)[::2]]  # a view of part of its base: the rest is not its own
    assert _buffers.take(holder, 0) is None
    base = np.ones((2, LARGE))
    holder = [base.reshape(-1)]  # a view of all of a base that a name holds too
    assert _buffers.take(holder, 0) is None
    del base  # the view alone holds its base now (a gradient reshaped at the end of its VJP)
    view = _buffers.take(holder, 0)
    assert view is not None and view.shape == (2 * LARGE,) and holder == [None]
    holder = [np.ones((2, LARGE)).reshape(-1)]
    other_view = holder[0].base[:1]  # another view of the same base
    assert _buffers.take(holder, 0) is None
    del other_view
    small = [np.ones(8)]  # below MIN_BYTES: not worth it
    assert _buffers.take(small, 0) is None
    read_only = np.ones(LARGE)
    read_only.flags.writeable = False
    holder = [read_only]
    del read_only
    assert _buffers.take(holder, 0) is None


def test_take_declines_everything_where_reference_counts_are_not_exact(monkeypatch):
    monkeypatch.setattr(_buffers, "EXACT_REFCOUNTS", False)
    holder = [np.ones(LARGE)]
    assert _buffers.take(holder, 0) is None and holder[0] is not None
    x = ag.Variable(np.full(LARGE, 0.5), requires_grad=True)
    (xp.sum(x * 2.0) + xp.sum(x * 3.0)).backward()
    np.testing.assert_array_equal(x.grad.data, np.full(LARGE, 5.0))


@exact_refcounts
def test_take_declines_arrays_of_backends_without_reuse_unshared(monkeypatch):
    """An array type with NumPy's ``base`` is taken only if its backend says that ``base`` means
    what NumPy's does (capability ``reuse_unshared``)."""
    from arraygrad import rules

    monkeypatch.setattr(rules, "capable", lambda x, name: False)
    monkeypatch.setattr(_buffers, "capable", lambda x, name: False)
    assert _buffers.take([np.ones(LARGE)], 0) is None


@exact_refcounts
def test_gradients_meeting_at_a_node_are_added_in_place(rng, monkeypatch):
    """``sum(x * 2) + sum(x * 3)``: the two VJPs make one array each; their sum goes into the
    first, which the leaf then takes as its ``.grad``: two arrays of x's size at the peak, where
    adding into a new array and copying it for the leaf would make three."""
    x = rng.standard_normal(1 << 20)

    def peak():
        variable = ag.Variable(x, requires_grad=True)
        result = _backward_peak(xp.sum(variable * 2.0) + xp.sum(variable * 3.0))
        np.testing.assert_allclose(variable.grad.data, np.full(x.size, 5.0))
        return result / x.nbytes

    assert peak() < 2.5
    monkeypatch.setattr(_buffers, "MIN_BYTES", 1 << 62)
    assert peak() >= 2.9
