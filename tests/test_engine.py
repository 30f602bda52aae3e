"""The backward engine: deep graphs, freeing, accumulation, the central gradient checks."""

import gc
import sys
import tracemalloc

import numpy as np
import pytest

import arraygrad as ag


def test_a_chain_of_100000_ops_runs_forward_backward_and_is_freed_without_recursion():
    x = ag.Variable(np.ones(2), requires_grad=True)
    y = x
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)  # a recursive engine or recursive deallocation would fail
    try:
        for _ in range(100_000):
            y = y * 1.0
        ag.namespace("numpy").sum(y).backward()
        np.testing.assert_allclose(x.grad.data, [1.0, 1.0])
        del y
        gc.collect()
    finally:
        sys.setrecursionlimit(limit)


def test_a_deep_graph_is_dropped_without_recursion_even_before_backward():
    x = ag.Variable(np.ones(2), requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1.0
    del y  # deallocating 100,000 nested nodes
    gc.collect()


def test_backward_frees_saved_values_and_never_holds_every_gradient():
    """Each node's saved arrays go as soon as it ran, and each gradient buffer as soon as it was
    used: backward's peak stays near the forward's, and afterwards only a few arrays remain."""
    xp = ag.namespace("numpy")
    n = 1 << 17  # 1 MiB per float64 array
    mib = 1 << 20
    x = ag.Variable(np.random.default_rng(0).standard_normal(n), requires_grad=True)
    depth = 40
    tracemalloc.start()
    baseline, _ = tracemalloc.get_traced_memory()
    y = x
    for _ in range(depth):
        y = xp.sin(y)  # each node saves its input: about depth MiB held by the graph
    loss = xp.sum(y)
    forward, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    loss.backward()
    after, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert forward - baseline > (depth - 2) * mib
    assert peak - forward < 6 * mib, "backward held many gradients at once"
    assert after - baseline < 6 * mib, "saved values were not released by backward"


def test_retain_graph_keeps_saved_values_and_accumulates():
    x = ag.Variable(np.array([2.0]), requires_grad=True)
    y = x * x
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.data, [12.0])
    with pytest.raises(ag.BackwardError, match="retain_graph"):
        y.backward()


def test_graphs_that_save_nothing_can_be_run_twice_as_in_pytorch():
    x = ag.Variable(np.array([2.0]), requires_grad=True)
    y = x + 1
    y.backward()
    y.backward()
    np.testing.assert_allclose(x.grad.data, [2.0])


def test_diamond_graph_accumulates_before_running_a_node_once():
    x = ag.Variable(np.array([3.0]), requires_grad=True)
    a = x * 2
    calls = []
    a.register_hook(lambda g: calls.append(g.item()))
    b = a * a + a  # a feeds three edges
    b.backward()
    assert calls == [2 * 6.0 + 1]  # the hook saw the total, once
    np.testing.assert_allclose(x.grad.data, [2 * (2 * 6.0 + 1)])


def test_broadcasting_gradients_are_summed_centrally(backend):
    x = backend.variable(np.ones((3, 1)))
    y = backend.variable(np.arange(4.0))
    s = backend.variable(np.array(2.0))
    backend.xp.sum(x * y * s).backward()
    np.testing.assert_allclose(backend.host(x.grad), np.full((3, 1), 6.0 * 2))
    np.testing.assert_allclose(backend.host(y.grad), np.full(4, 3.0 * 2))
    np.testing.assert_allclose(backend.host(s.grad), 3 * 6.0)


def test_float32_inputs_get_float32_gradients(backend):
    x = backend.variable(np.ones(3), dtype=np.float32)
    y = backend.variable(np.ones(3))  # float64 input mixed in
    backend.xp.sum(x * 2.5 + backend.xp.astype(x, backend.xp.float64) * y).backward()
    assert x.grad.dtype == backend.xp.float32
    assert y.grad.dtype == backend.xp.float64


def test_leaf_gradients_never_alias_each_other_or_the_seed():
    x = ag.Variable(np.ones(3), requires_grad=True)
    y = ag.Variable(np.ones(3), requires_grad=True)
    seed = np.ones(3)
    (x + y).backward(seed)
    assert not np.shares_memory(x.grad.data, y.grad.data)
    assert not np.shares_memory(x.grad.data, seed)
    x.grad.data[0] = 5.0
    np.testing.assert_allclose(seed, 1.0)


def test_backward_does_not_mutate_inputs_or_the_gradient():
    values = np.array([1.0, 2.0])
    x = ag.Variable(values.copy(), requires_grad=True)
    g = np.array([0.5, 0.25])
    y = x * x
    y.backward(g)
    np.testing.assert_array_equal(x.data, values)
    np.testing.assert_array_equal(g, [0.5, 0.25])


def test_a_function_without_rule_fails_only_when_a_gradient_flows_through_it(monkeypatch):
    from arraygrad import rules

    monkeypatch.delitem(rules.RULES, "expm1")
    xp = ag.get_backend("numpy")
    monkeypatch.setattr(xp, "_ns", None)
    ns = ag.namespace("numpy")
    try:
        x = ag.Variable(np.ones(2), requires_grad=True)
        unused = ns.expm1(x)  # no rule, but no gradient asked through it: fine
        ns.sum(x * 2).backward()
        with pytest.raises(ag.NoRuleError, match=r"expm1.*'numpy'.*arraygrad/rules"):
            ns.sum(unused).backward()
    finally:
        xp._ns = None  # rebuild with the real rules for the other tests
        ag.namespace("numpy")


@pytest.mark.parametrize("op", [lambda x: -x, lambda x: x * 3.0, lambda x: 2.0 - x],
                         ids=["negative", "multiply", "subtract"])
def test_gradients_of_0d_values_are_arrays_not_numpy_scalars(op):
    """NumPy's 0-d arithmetic returns numpy.float64; .grad must still hold an array."""
    x = ag.Variable(np.asarray(2.0), requires_grad=True)
    y = op(x)
    y.retain_grad()
    y.backward()
    assert type(x.grad.data) is np.ndarray and x.grad.data.shape == ()
    assert type(y.grad.data) is np.ndarray


def test_an_op_saves_only_what_the_gradients_it_will_compute_need():
    """y = h * 3.0 needs only 3.0 for h's gradient: h's values are not kept alive by y's graph
    (PyTorch saves self only when the other operand needs a gradient)."""
    import weakref

    x = ag.Variable(np.ones(1000), requires_grad=True)
    h = x * 2.0
    kept = weakref.ref(h.data)
    y = h * 3.0
    del h
    gc.collect()
    assert kept() is None, "y's graph keeps h's values although no gradient needs them"
    ag.namespace("numpy").sum(y).backward()
    np.testing.assert_allclose(x.grad.data, np.full(1000, 6.0))
    # When the other operand needs a gradient, the values are kept for it.
    w = ag.Variable(np.full(1000, 3.0), requires_grad=True)
    h = x * 2.0
    kept = weakref.ref(h.data)
    y = h * w
    del h
    gc.collect()
    assert kept() is not None
    ag.namespace("numpy").sum(y).backward()
    np.testing.assert_allclose(w.grad.data, np.full(1000, 2.0))


def _long_lived_objects_per_op(build, ops):
    """GC-tracked objects that a graph of ``ops`` recorded ops keeps alive, per op."""
    gc.collect()
    before = len(gc.get_objects())
    kept = build()
    gc.collect()
    gc.collect()  # a tuple is untracked once its items are: nested ones take two passes
    found = len(gc.get_objects()) - before
    del kept
    return found / ops


def test_a_recorded_op_leaves_two_objects_for_the_cyclic_gc_to_scan():
    """Python's cyclic GC scans every tracked object that a long graph holds, again at each full
    collection; three or four per op (the node, its edges tuple, a (node, output_nr) pair per
    input) made the GC half of a long chain's forward time. A node keeps its inputs' nodes in
    one tuple and their output numbers in another, of ints, which the GC untracks: two objects
    per op."""
    xp = ag.namespace("numpy")
    x = ag.Variable(np.ones(4), requires_grad=True)
    c = ag.Variable(np.full(4, 2.0))  # a constant operand: no edge on that side

    def build():
        y = x
        for _ in range(500):
            y = xp.sin(y * 1.0001 + c) * y  # unary, binary with a scalar and with a constant
        return y

    assert _long_lived_objects_per_op(build, 2000) < 2.05


def test_shared_meta_tuples_stay_within_their_backend():
    """The same shapes on two backends do not share a meta tuple: each keeps its library's
    dtypes, which backward compares gradients with, and dtypes of different libraries are never
    compared (array-api-strict warns when they are)."""
    import warnings

    import array_api_strict

    grads = {}
    for name in ("numpy", "array_api_strict", "numpy"):
        xp = ag.namespace(name)
        x = ag.Variable(xp.asarray([1.0, 2.0, 3.0], dtype=xp.float32).data, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = xp.sin(x) * 2.0
        assert all(type(dtype).__module__.split(".")[0] == name
                   for dtype in (m[1] for m in y.grad_fn.meta if m is not None))
        xp.sum(y).backward()
        grads[name] = x.grad.data
    assert grads["array_api_strict"].dtype == array_api_strict.float32
    np.testing.assert_allclose(np.asarray(grads["array_api_strict"]), grads["numpy"])


def test_matmul_by_any_spelling_records_the_same_node():
    """``xp.matmul(X, W)``, ``X @ W`` with a NumPy ``X`` (through ``__array_ufunc__``) and
    ``xp.linalg.matmul`` record the node ``W.__rmatmul__(X)`` does: two objects per op for the
    GC, the same edges, the same gradients."""
    xp = ag.namespace("numpy")
    X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    W = ag.Variable(np.array([[1.0, -2.0, 0.5], [0.3, 0.8, -1.1], [2.0, 0.1, 0.4]]),
                    requires_grad=True)

    def build():
        y = W
        for _ in range(200):
            y = xp.linalg.matmul(X.T, xp.matmul(X @ y, W) * 0.1)  # 4 ops
        return y

    xp.linalg.matmul(X.T, X @ W)  # first calls make their caches outside the count
    # A node and its inputs' tuple per op (3.5 when the pairs of edges were kept).
    assert _long_lived_objects_per_op(build, 800) < 2.1
    for y in (xp.matmul(X, W), X @ W, np.matmul(X, W), xp.linalg.matmul(X, W)):
        leaf = y.grad_fn.edges[1][0]
        assert y.grad_fn.edges == (None, (leaf, 0)) and leaf.variable is W
    W.grad = None
    xp.sum(xp.sin(np.matmul(X, W)) * (X @ W)).backward()
    XW = X @ W.data
    np.testing.assert_allclose(W.grad.data, X.T @ (np.cos(XW) * XW + np.sin(XW)), rtol=1e-12)


def test_gradients_through_fast_path_nodes_match_central_differences():
    """Every kind of input the recorder's fast path meets: a leaf, a constant, a scalar, one Variable on
    both sides, an input that is output 1 of its node (eigh's vectors), a reflected operator."""
    from arraygrad.testing import check_grads

    xp = ag.namespace("numpy")
    c = np.array([[0.5, -1.5], [2.0, 0.25]])

    def f(x):
        m = xp.reshape(x, (2, 2))
        _, vectors = xp.linalg.eigh(m + m.mT + 4.0 * xp.eye(2))
        v = xp.sin(vectors * vectors[0:1, :])  # output 1 of eigh's node, on both sides
        return xp.exp(0.5 - v) * x[0] + c / (1.5 + m * m)

    check_grads(f, (np.array([0.3, -0.7, 1.1, 0.4]),), order=2, modes=("rev",))


def test_fast_path_nodes_show_the_edges_pytorch_shows():
    """``edges`` and ``next_functions`` of the fast path's nodes are what PyTorch shows: the
    producing node and output number per input, None where an input needs no gradient."""
    xp = ag.namespace("numpy")
    x = ag.Variable(np.arange(1.0, 5.0), requires_grad=True)
    _, vectors = xp.linalg.eigh(xp.reshape(x, (2, 2)) + xp.reshape(x, (2, 2)).mT)
    s = xp.sin(vectors)  # an input that is output 1 of its node
    assert s.grad_fn.edges == ((vectors.grad_fn, 1),)
    y = 3.0 * s
    assert y.grad_fn.edges == (None, (s.grad_fn, 0))
    z = x * x
    leaf = z.grad_fn.edges[0][0]
    assert type(leaf).__name__ == "AccumulateGrad" and leaf.variable is x
    assert z.grad_fn.edges == ((leaf, 0), (leaf, 0))
    w = ag.Variable(np.ones((2, 2))) - s
    assert w.grad_fn.next_functions == ((None, 0), (s.grad_fn, 0))


def test_complex_gradients_keep_their_conjugate_when_dtypes_repeat():
    """Rules remember the last real dtype they met (``rules._core.is_complex``): a complex dtype
    met again and again, right after a real one or twice in a row, must still be conjugated
    (PyTorch's convention: the gradient of ``real(f(z))`` is ``conj(f'(z))``)."""
    from arraygrad.rules._core import is_complex, is_complex_dtype

    xp = ag.namespace("numpy")
    z0 = np.array([1 + 2j, -0.5 + 0.25j])
    expected = np.conj((np.cos(z0) + np.sin(z0)) * np.exp(z0))
    for _ in range(3):
        r = ag.Variable(np.array([0.3, 1.2]), requires_grad=True)
        xp.sum(xp.sin(r)).backward()  # a real dtype, remembered
        z = ag.Variable(z0, requires_grad=True)
        xp.sum(xp.real(xp.sin(z) * xp.exp(z))).backward()
        np.testing.assert_allclose(z.grad.data, expected, rtol=1e-12)
    for dtype in (np.dtype("float64"), np.dtype("complex128"), np.dtype("complex128"),
                  np.dtype("float32"), np.dtype("float32"), np.dtype("complex64")):
        assert is_complex_dtype(dtype) is (dtype.kind == "c")
        assert is_complex(np.zeros(2, dtype)) is (dtype.kind == "c")


def test_gradients_of_zero_d_values_stay_arrays():
    """NumPy's arithmetic on 0-d arrays gives scalars (numpy.float64): where two gradients meet,
    their sum is made an array again, as every gradient a rule returns is."""
    x = ag.Variable(np.array(3.0), requires_grad=True)
    (x * x).backward()
    assert type(x.grad.data) is np.ndarray and x.grad.data == 6.0
    g = ag.grad(lambda v: v * v)(ag.Variable(np.array(3.0)))
    assert type(g.data) is np.ndarray and g.data == 6.0
