"""A log-softmax written out, ``x - log(sum(exp(x), axis, keepdims=True))`` (the Array API has
no ``log_softmax``): the subtraction is recorded with ``LOG_SUM_EXP_OPERAND``, and once nothing
can see the gradients of its log, sum and exp, it sends ``x`` the whole gradient they would have
sent, so that backward skips those three nodes. Every gradient must be the one the unfolded
graph gives, whoever still holds the intermediate values, and their saved values must go when
backward is done, as if they had run."""

import copy
import gc
import threading
import tracemalloc

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.errors import BackwardError
from arraygrad.rules import RULES
from arraygrad.rules.elementwise import EXTREMUM_SHIFT, LOG_SUM_EXP_OPERAND
from arraygrad.testing import check_grads

xp = ag.namespace("numpy")


def log_softmax(x, axis=-1):
    """The stable form users write: shift by the maximum, then subtract the log-sum-exp."""
    shifted = x - xp.max(x, axis=axis, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


def plain_log_softmax(x, axis=-1):
    return x - xp.log(xp.sum(xp.exp(x), axis=axis, keepdims=True))


def numpy_log_softmax(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def expected_grad(x, w, axis):
    """d sum(w * log_softmax(x)) / dx = w - softmax(x) * sum(w)."""
    softmax = np.exp(numpy_log_softmax(x, axis))
    return w - softmax * np.sum(w, axis=axis, keepdims=True)


def refuse_to_run_the_folded_nodes(fold):
    """Give the log, sum and exp under ``fold`` (a folded log-softmax's node), and the max it
    is shifted by, rules whose VJPs fail, so that backward fails if it runs any of them."""
    def refuse(*args, **kwargs):
        raise AssertionError("a folded node ran")

    def refuse_at(node):
        rule = node.rule = copy.copy(node.rule)
        rule.vjps = rule.broadcast_vjps = (refuse,)

    node = fold.next_functions[1][0]
    for name in ("log", "sum", "exp"):
        assert node.rule is RULES[name]
        refuse_at(node)
        node = node.next_functions[0][0]
    shift = fold.next_functions[0][0]  # x - max(x): the max's node does not run either
    if getattr(shift, "rule", None) is EXTREMUM_SHIFT:
        refuse_at(shift.next_functions[1][0])


AXES = [-1, 0, (0, 2), None]
FORMS = {"shifted by the maximum": log_softmax, "unshifted": plain_log_softmax}


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("form", FORMS)
def test_the_fold_is_recorded_and_its_gradient_is_the_log_softmax_s(rng, form, axis):
    x0 = rng.standard_normal((3, 4, 5)) * 3
    w = rng.standard_normal((3, 4, 5))
    x = ag.Variable(x0, requires_grad=True)
    y = FORMS[form](x, axis)
    assert y.grad_fn.rule is LOG_SUM_EXP_OPERAND
    refuse_to_run_the_folded_nodes(y.grad_fn)
    np.testing.assert_allclose(y.data, numpy_log_softmax(x0, axis), rtol=1e-13, atol=1e-13)
    xp.sum(y * w).backward()
    np.testing.assert_allclose(x.grad.data, expected_grad(x0, w, axis), rtol=1e-12,
                               atol=1e-14)


@pytest.mark.parametrize("form", FORMS)
def test_derivatives_of_every_order_and_mode_against_differences(rng, form):
    """create_graph (order 2) and forward mode take the unfolded graph; all agree."""
    x0 = rng.standard_normal((4, 6))
    w = rng.standard_normal((4, 6))
    check_grads(lambda v: xp.sum(w * FORMS[form](v, 1) ** 2), (x0,), order=2,
                modes=("fwd", "rev"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_same_values_as_the_unfolded_graph_and_torch(rng, dtype):
    """Held, the log's Variable gets its own gradient, so nothing is folded: both graphs give
    the same gradient to the last rounding, and torch's log_softmax where it is installed."""
    x0 = (rng.standard_normal((16, 10)) * 4).astype(dtype)
    w = rng.standard_normal((16, 10)).astype(dtype)
    folded = ag.Variable(x0, requires_grad=True)
    xp.sum(w * log_softmax(folded, 1)).backward()

    unfolded = ag.Variable(x0, requires_grad=True)
    shifted = unfolded - xp.max(unfolded, axis=1, keepdims=True)
    log_total = xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
    xp.sum(w * (shifted - log_total)).backward()  # log_total still held: the graph as recorded
    assert folded.grad.dtype == dtype
    tight = 1e-6 if dtype is np.float32 else 1e-14
    np.testing.assert_allclose(folded.grad.data, unfolded.grad.data, rtol=tight, atol=tight)

    torch = pytest.importorskip("torch")
    t = torch.tensor(x0, requires_grad=True)
    torch.sum(torch.tensor(w) * torch.log_softmax(t, 1)).backward()
    np.testing.assert_allclose(folded.grad.data, t.grad.numpy(), rtol=10 * tight,
                               atol=10 * tight)


def test_the_log_held_gets_its_own_gradient(rng):
    """While the user holds the log-sum-exp, its gradient is its own (``-sum(g)``), by
    ``autograd.grad``, by ``retain_grad`` and by a hook registered before it was dropped."""
    x0 = rng.standard_normal((5, 7))
    w = rng.standard_normal((5, 7))
    expected_log = -np.sum(w, axis=1, keepdims=True)

    def pieces():
        x = ag.Variable(x0, requires_grad=True)
        log_total = xp.log(xp.sum(xp.exp(x), axis=1, keepdims=True))
        return x, log_total, x - log_total

    x, log_total, y = pieces()
    assert y.grad_fn.rule is LOG_SUM_EXP_OPERAND
    grad_x, grad_log = ag.autograd.grad(xp.sum(w * y), [x, log_total])
    np.testing.assert_allclose(grad_log.data, expected_log, rtol=1e-13)
    np.testing.assert_allclose(grad_x.data, expected_grad(x0, w, 1), rtol=1e-12, atol=1e-14)

    x, log_total, y = pieces()
    log_total.retain_grad()
    xp.sum(w * y).backward()
    np.testing.assert_allclose(log_total.grad.data, expected_log, rtol=1e-13)
    np.testing.assert_allclose(x.grad.data, expected_grad(x0, w, 1), rtol=1e-12, atol=1e-14)

    x, log_total, y = pieces()
    seen = []
    log_total.register_hook(lambda g: seen.append(g.data.copy()))
    loss = xp.sum(w * y)
    del log_total
    gc.collect()
    loss.backward()
    (hooked,) = seen
    np.testing.assert_allclose(hooked, expected_log, rtol=1e-13)
    np.testing.assert_allclose(x.grad.data, expected_grad(x0, w, 1), rtol=1e-12, atol=1e-14)


def _exp_named(x):
    e = xp.exp(x)
    return x - xp.log(xp.sum(e, axis=1, keepdims=True)), e


def _sum_named(x):
    total = xp.sum(xp.exp(x), axis=1, keepdims=True)
    return x - xp.log(total), total


@pytest.mark.parametrize("named", [_exp_named, _sum_named])
def test_an_exp_or_sum_still_held_when_recorded_is_not_folded(rng, named):
    """A named exp or sum can still get a hook or be asked for its gradient: the subtraction
    is the general one, and each gets its own gradient."""
    x0 = rng.standard_normal((5, 7))
    x = ag.Variable(x0, requires_grad=True)
    y, middle = named(x)
    assert y.grad_fn.rule is RULES["subtract"]
    w = rng.standard_normal((5, 7))
    grad_x, grad_middle = ag.autograd.grad(xp.sum(w * y), [x, middle])
    total = np.sum(np.exp(x0), axis=1, keepdims=True)
    own = -np.sum(w, axis=1, keepdims=True) / total  # what the log passes back
    if named is _exp_named:
        own = np.broadcast_to(own, x0.shape)
    np.testing.assert_allclose(grad_middle.data, own, rtol=1e-13)
    np.testing.assert_allclose(grad_x.data, expected_grad(x0, w, 1), rtol=1e-12, atol=1e-14)


def test_a_hook_on_the_exp_registered_before_it_was_dropped_is_not_skipped(rng):
    x0 = rng.standard_normal((5, 7))
    x = ag.Variable(x0, requires_grad=True)
    seen = []
    e = xp.exp(x)
    e.register_hook(lambda g: seen.append(g.data.copy()))
    log_total = xp.log(xp.sum(e, axis=1, keepdims=True))
    del e  # the exp and sum are unseen now, but for the hook
    y = x - log_total
    del log_total
    assert y.grad_fn.rule is RULES["subtract"]
    w = rng.standard_normal((5, 7))
    xp.sum(w * y).backward()
    (hooked,) = seen
    np.testing.assert_allclose(
        hooked, np.broadcast_to(-np.sum(w, axis=1, keepdims=True) / np.sum(np.exp(x0), axis=1,
                                                                           keepdims=True),
                                x0.shape), rtol=1e-13)
    np.testing.assert_allclose(x.grad.data, expected_grad(x0, w, 1), rtol=1e-12, atol=1e-14)


NOT_THE_PATTERN = {
    "keepdims=False": lambda x: x - xp.log(xp.sum(xp.exp(x), axis=1))[:, None],
    "the exp of another value": lambda x: x - xp.log(xp.sum(xp.exp(x * 1.0), axis=1,
                                                             keepdims=True)),
    "a max, not a sum": lambda x: x - xp.log(xp.max(xp.exp(x), axis=1, keepdims=True)),
    "log1p, not log": lambda x: x - xp.log1p(xp.sum(xp.exp(x), axis=1, keepdims=True)),
}


@pytest.mark.parametrize("case", NOT_THE_PATTERN)
def test_other_expressions_are_the_general_subtraction(rng, case):
    x0 = rng.standard_normal((4, 5))
    x = ag.Variable(x0, requires_grad=True)
    y = NOT_THE_PATTERN[case](x)
    assert y.grad_fn.rule is RULES["subtract"]
    check_grads(lambda v: xp.sum(NOT_THE_PATTERN[case](v) ** 2), (x0,), order=1, modes=("rev",))


def test_the_log_used_again_passes_both_gradients(rng):
    """The log-sum-exp also used by another term, then dropped: the fold sends the
    log-softmax's share, the log node runs for the other term's alone."""
    x0 = rng.standard_normal((5, 7))
    w = rng.standard_normal((5, 7))
    x = ag.Variable(x0, requires_grad=True)
    log_total = xp.log(xp.sum(xp.exp(x), axis=1, keepdims=True))
    loss = xp.sum(w * (x - log_total)) + 2.5 * xp.sum(log_total)
    del log_total
    loss.backward()
    softmax = np.exp(numpy_log_softmax(x0, 1))
    np.testing.assert_allclose(x.grad.data, expected_grad(x0, w, 1) + 2.5 * softmax,
                               rtol=1e-12, atol=1e-14)


def test_a_retained_graph_gives_the_same_gradient_twice(rng):
    x0 = rng.standard_normal((5, 7))
    x = ag.Variable(x0, requires_grad=True)
    loss = xp.sum(log_softmax(x, 1) ** 2)
    loss.backward(retain_graph=True)
    first = x.grad.data.copy()
    x.grad = None
    loss.backward()
    np.testing.assert_array_equal(x.grad.data, first)


def test_the_skipped_nodes_values_are_freed_as_if_they_had_run(rng):
    """After backward (no retain_graph), the graph keeps none of the exp's values, and a second
    backward through the skipped log (from another root) fails as it would had it run."""
    x = ag.Variable(rng.standard_normal(1 << 20), requires_grad=True)
    tracemalloc.start()
    try:
        log_total = xp.log(xp.sum(xp.exp(x), axis=0, keepdims=True))
        other = 2.0 * log_total
        loss = xp.sum(xp.sin(x - log_total))
        del log_total
        loss.backward()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # x.grad and what sin saved: two arrays of x's size; exp's output would be a third.
    assert held < 2.5 * x.data.nbytes, f"{held / x.data.nbytes:.2f} arrays held"
    with pytest.raises(BackwardError, match="second time"):
        xp.sum(other).backward()


def test_complex_values_take_the_unfolded_gradient(rng):
    x0 = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    check_grads(lambda v: xp.sum(xp.real(plain_log_softmax(v, 1)) ** 2), (x0,), order=1,
                modes=("rev",))


def test_the_maximum_held_gets_its_own_gradient(rng):
    """``m = max(x)`` held: its gradient, zero but for rounding, is computed, by
    ``autograd.grad`` and ``retain_grad``; x's is the log-softmax's either way."""
    x0 = rng.standard_normal((5, 7))
    w = rng.standard_normal((5, 7))
    x = ag.Variable(x0, requires_grad=True)
    m = xp.max(x, axis=1, keepdims=True)
    y = plain_log_softmax(x - m, 1)
    assert y.grad_fn.next_functions[0][0].rule is EXTREMUM_SHIFT
    grad_x, grad_m = ag.autograd.grad(xp.sum(w * y), [x, m])
    assert grad_m.shape == (5, 1)
    np.testing.assert_allclose(grad_m.data, 0, atol=1e-14)
    np.testing.assert_allclose(grad_x.data, expected_grad(x0, w, 1), rtol=1e-12, atol=1e-14)

    x = ag.Variable(x0, requires_grad=True)
    m = xp.max(x, axis=1, keepdims=True)
    m.retain_grad()
    xp.sum(w * plain_log_softmax(x - m, 1)).backward()
    assert m.grad is not None and m.grad.shape == (5, 1)
    np.testing.assert_allclose(x.grad.data, expected_grad(x0, w, 1), rtol=1e-12, atol=1e-14)


SHIFTS_WITH_OTHER_GRADIENTS = {
    # the shifted values also in another term: the max passes that term's gradient back
    "the difference used again": lambda x, w: (lambda s: xp.sum(w * plain_log_softmax(s, 1))
                                               + 2.5 * xp.sum(s * s))(
        x - xp.max(x, axis=1, keepdims=True)),
    # ... by a node that backward runs after the log-softmax's (the product's second operand
    # is the log-softmax, which the engine's last-in-first-out order runs first)
    "the difference used again, later": lambda x, w: (lambda s: xp.sum(
        xp.cos(s) * plain_log_softmax(s, 1)))(x - xp.max(x, axis=1, keepdims=True)),
    # the log-sum-exp also in another term: the exp passes its gradient to the difference
    "the log used again": lambda x, w: (lambda s: (lambda lse: xp.sum(w * (s - lse))
                                                   + 2.5 * xp.sum(lse))(
        xp.log(xp.sum(xp.exp(s), axis=1, keepdims=True))))(x - xp.max(x, axis=1, keepdims=True)),
    # a maximum over the other axis is not constant along the softmax's
    "a maximum over another axis": lambda x, w: xp.sum(
        w * plain_log_softmax(x - xp.max(x, axis=0, keepdims=True), 1)),
}


@pytest.mark.parametrize("case", SHIFTS_WITH_OTHER_GRADIENTS)
def test_a_maximum_whose_gradient_does_not_vanish_passes_it(rng, case):
    x0 = rng.standard_normal((4, 6))
    w = rng.standard_normal((4, 6))
    check_grads(lambda v: SHIFTS_WITH_OTHER_GRADIENTS[case](v, w), (x0,), order=1,
                modes=("rev",))


@pytest.mark.parametrize("name", ["numpy", "array_api_strict", "torch", "jax", "dask"])
def test_every_backend_folds_to_the_same_gradient(rng, name):
    """The fold and the max's vanishing gradient on each installed backend (each library's own
    reductions and broadcasting in the fold's sum and product); only the standard rules of
    exp, sum and log are folded."""
    info = {i.name: i for i in ag.backends()}.get(name)
    if info is None or not info.available:
        pytest.skip(f"backend {name!r} is not available: {info.reason if info else 'unknown'}")
    backend = ag.get_backend(name)
    bxp = backend.ns
    x0 = rng.standard_normal((6, 5)) * 3
    w = rng.standard_normal((6, 5))
    x = ag.Variable(backend.raw.asarray(x0), requires_grad=True)
    shifted = x - bxp.max(x, axis=1, keepdims=True)
    y = bxp.multiply(shifted - bxp.log(bxp.sum(bxp.exp(shifted), axis=1, keepdims=True)),
                     backend.raw.asarray(w))
    del shifted
    fold = y.grad_fn.next_functions[0][0]
    if name == "dask":  # its plugin has a rule of its own for sum: no fold, the same gradient
        assert fold.rule is RULES["subtract"]
    else:
        assert fold.rule is LOG_SUM_EXP_OPERAND
        refuse_to_run_the_folded_nodes(fold)
    bxp.sum(y).backward()
    np.testing.assert_allclose(np.asarray(backend.to_numpy(x.grad.data)),
                               expected_grad(x0, w, 1), rtol=1e-12, atol=1e-13)


def test_numpy_s_own_functions_on_variables_fold_too(rng):
    """``np.exp``, ``np.sum``, ``np.log`` and ``np.max`` on Variables record the same nodes
    (NEP 13 and 18), so a log-softmax written with NumPy's names folds as well."""
    x0 = rng.standard_normal((6, 4)) * 2
    w = rng.standard_normal((6, 4))
    x = ag.Variable(x0, requires_grad=True)
    shifted = x - np.max(x, axis=1, keepdims=True)
    y = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    del shifted
    assert y.grad_fn.rule is LOG_SUM_EXP_OPERAND
    refuse_to_run_the_folded_nodes(y.grad_fn)
    np.sum(y * w).backward()
    np.testing.assert_allclose(x.grad.data, expected_grad(x0, w, 1), rtol=1e-12, atol=1e-14)


def test_threads_fold_their_own_graphs(rng):
    """Backward passes in 8 threads at once, half of them holding the log-sum-exp (no fold):
    each marks and reads only its own pass's state, and gets its own exact gradient."""
    inputs = [(rng.standard_normal((16, 9)) * 3, rng.standard_normal((16, 9)))
              for _ in range(8)]
    errors, barrier = [], threading.Barrier(8)

    def work(k):
        x0, w = inputs[k]
        barrier.wait()
        for _ in range(40):
            x = ag.Variable(x0, requires_grad=True)
            shifted = x - xp.max(x, axis=1, keepdims=True)
            log_total = xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
            loss = xp.sum(w * (shifted - log_total))
            del shifted
            if k % 2:
                del log_total
            loss.backward()
            if not np.allclose(x.grad.data, expected_grad(x0, w, 1), rtol=1e-12, atol=1e-14):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
