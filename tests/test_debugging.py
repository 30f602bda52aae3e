"""Memory and debugging: ``checkpoint``, anomaly detection, ``to_dot`` (docs/checkpoint.md, docs/anomaly.md, docs/graph-pictures.md)."""

import re
import shutil
import sys
import threading
from collections import Counter

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import _engine, _watch

BACKENDS = ["numpy", "array_api_strict",
            pytest.param("torch", marks=pytest.mark.skipif(
                __import__("importlib.util").util.find_spec("torch") is None,
                reason="torch is not installed"))]


# ------------------------------------------------------------------------------ checkpoint

def _block(xp, W, calls):
    """A segment reading W from its closure, with two Variable inputs, a number, a keyword and
    two outputs; counts its calls."""

    def block(h, u, scale, *, shift):
        calls.append(1)
        a = xp.tanh(h @ W) * scale + u
        b = xp.sin(a) * xp.exp(-u * u) + shift
        return a, b

    return block


@pytest.mark.parametrize("name", BACKENDS)
def test_checkpoint_gives_exactly_the_plain_gradients(name, rng):
    xp = ag.namespace(name)
    raw = ag.get_backend(name).raw

    def variable(shape):
        return ag.Variable(raw.asarray(rng.standard_normal(shape)), requires_grad=True)

    W, h0, u = variable((5, 5)), variable((3, 5)), variable((3, 5))
    leaves = (W, h0, u)

    def run(checkpointed):
        for leaf in leaves:
            leaf.grad = None
        calls = []
        block = _block(xp, W, calls)
        h = h0
        for _ in range(3):
            args = (h, u, 0.5)
            a, b = ag.checkpoint(block, *args, shift=0.25) if checkpointed else block(
                *args, shift=0.25)
            h = a * b
        xp.sum(h * h).backward()
        return [np.asarray(ag.get_backend(name).to_numpy(leaf.grad.data)) for leaf in leaves], \
            len(calls)

    plain, plain_calls = run(False)
    checked, checked_calls = run(True)
    assert plain_calls == 3 and checked_calls == 6  # each block runs again for backward
    for p, c in zip(plain, checked):
        np.testing.assert_allclose(c, p, rtol=1e-15, atol=0)


def test_checkpoint_keeps_one_node_whose_inputs_are_what_the_segment_reads():
    xp = ag.namespace("numpy")
    W = ag.Variable(np.eye(3) * 0.5, requires_grad=True)
    x = ag.Variable(np.ones((2, 3)), requires_grad=True)
    y = ag.checkpoint(lambda h: xp.tanh(xp.tanh(h @ W) @ W), x)
    assert y.grad_fn.name() == "CheckpointBackward"
    children = {child for child, _ in y.grad_fn.next_functions}
    assert children == {_engine.accumulator(W), _engine.accumulator(x)}
    assert y.grad_fn.saved == (True,)  # no intermediate value is kept
    xp.sum(y).backward()
    with pytest.raises(ag.BackwardError, match="retain_graph=True"):
        xp.sum(y).backward()  # as through any node: its graph was freed


def test_checkpoint_with_autograd_grad_and_create_graph():
    xp = ag.namespace("numpy")
    x = ag.Variable(np.linspace(-1, 1, 5), requires_grad=True)

    def f(v):
        return xp.sin(v) * v * v

    def second(checkpointed):
        y = ag.checkpoint(f, x) if checkpointed else f(x)
        (g,) = ag.autograd.grad(xp.sum(y), [x], create_graph=True)
        (h,) = ag.autograd.grad(xp.sum(g * g), [x])
        return g.data, h.data

    for p, c in zip(second(False), second(True)):
        np.testing.assert_allclose(c, p, rtol=1e-15, atol=0)
    assert x.grad is None  # autograd.grad through a checkpoint leaves .grad alone


def test_nested_checkpoints_and_backward_with_create_graph():
    xp = ag.namespace("numpy")
    x = ag.Variable(np.linspace(0.1, 1, 4), requires_grad=True)

    def inner(v):
        return xp.exp(v) * v

    def outer(v, checkpointed):
        w = ag.checkpoint(inner, v) if checkpointed else inner(v)
        return xp.sin(w) + w

    results = []
    for checkpointed in (False, True):
        x.grad = None
        y = ag.checkpoint(outer, x, True) if checkpointed else outer(x, False)
        xp.sum(y).backward(create_graph=True)
        first = x.grad
        x.grad = None
        xp.sum(first * first).backward()
        results.append((first.data.copy(), x.grad.data.copy()))
    for p, c in zip(*results):
        np.testing.assert_allclose(c, p, rtol=1e-15, atol=0)


def test_checkpoint_outputs_without_gradient_and_no_grad():
    xp = ag.namespace("numpy")
    x = ag.Variable(np.ones(3), requires_grad=True)
    out = ag.checkpoint(lambda v: {"y": v * 3, "n": 7, "c": ag.Variable(np.zeros(2))}, x)
    assert out["n"] == 7 and out["c"].grad_fn is None
    xp.sum(out["y"]).backward()
    assert np.array_equal(x.grad.data, np.full(3, 3.0))
    with ag.no_grad():
        y = ag.checkpoint(lambda v: v * 2, x)
    assert y.grad_fn is None


def test_checkpoint_refuses_an_input_changed_in_place():
    xp = ag.namespace("numpy")
    x = ag.Variable(np.ones(3), requires_grad=True)
    y = ag.checkpoint(lambda v: xp.sin(v) * v, x)
    with ag.no_grad():
        x += 1
    with pytest.raises(ag.BackwardError, match="changed in place"):
        xp.sum(y).backward()


def _dropout_segment(xp, draw):
    """A segment that multiplies by a random 0/2 mask drawn by ``draw(shape)`` (a host array)."""

    def segment(h):
        return xp.tanh(h) * xp.asarray(draw(h.shape))

    return segment


def _mask(uniform):
    return (uniform > 0.5) * 2.0


def test_checkpoint_draws_np_random_again_as_in_the_forward_pass(rng):
    """np.random's global generator is put back for the second run (torch.utils.checkpoint's
    preserve_rng_state), and left as if that run had not happened."""
    xp = ag.namespace("numpy")
    x0 = rng.standard_normal((7, 5))
    segment = _dropout_segment(xp, lambda shape: _mask(np.random.rand(*shape)))
    grads, after = [], []
    for checkpointed in (False, True):
        np.random.seed(11)
        x = ag.Variable(x0, requires_grad=True)
        y = ag.checkpoint(segment, x) if checkpointed else segment(x)
        np.random.rand(2)  # a draw between the forward and the backward pass
        xp.sum(y * xp.arange(5.0)).backward()
        grads.append(x.grad.data)
        after.append(np.random.rand(3))
    assert np.array_equal(grads[0], grads[1]) and np.count_nonzero(grads[0]) < x0.size
    assert np.array_equal(after[0], after[1])


@pytest.mark.skipif(__import__("importlib.util").util.find_spec("torch") is None,
                    reason="torch is not installed")
def test_checkpoint_draws_torch_random_again_as_in_the_forward_pass(rng):
    import torch

    xp = ag.namespace("torch")
    x0 = torch.tensor(rng.standard_normal((7, 5)))
    segment = _dropout_segment(
        xp, lambda shape: _mask(torch.rand(tuple(shape), dtype=torch.float64)))
    grads = []
    for checkpointed in (False, True):
        torch.manual_seed(5)
        x = ag.Variable(x0, requires_grad=True)
        y = ag.checkpoint(segment, x) if checkpointed else segment(x)
        xp.sum(y * xp.arange(5.0, dtype=xp.float64)).backward()
        grads.append(x.grad.data)
    assert torch.equal(grads[0], grads[1]) and int(torch.count_nonzero(grads[0])) < x0.numel()


def test_checkpoint_refuses_a_second_run_with_other_values(rng):
    """Randomness from a generator arraygrad cannot put back, or an array the segment reads
    changed in place after the forward pass (a raw argument, a constant in its closure): an
    error, never a gradient of other values."""
    xp = ag.namespace("numpy")
    x0 = rng.standard_normal((40, 30))
    fresh = _dropout_segment(xp, lambda shape: _mask(np.random.default_rng().random(shape)))
    scale = rng.standard_normal((40, 30))
    constant = ag.Variable(rng.standard_normal(30))
    changes = {
        "fresh generator": (lambda x: fresh(x), lambda: None),
        "raw argument": (lambda x: ag.checkpoint(lambda v, s: v * s, x, scale),
                         lambda: scale.__imul__(1.0001)),
        "constant in the closure": (lambda x: ag.checkpoint(lambda v: v + constant, x),
                                    lambda: constant.__iadd__(1)),
        # the same sum and absolute sum: the values compared one by one catch it
        "two entries swapped": (lambda x: ag.checkpoint(lambda v, s: v * s, x ** 0, scale),
                                lambda: scale.__setitem__((0, [0, 1]), scale[0, [1, 0]])),
    }
    for what, (make, change) in changes.items():
        x = ag.Variable(x0, requires_grad=True)
        y = make(x) if what != "fresh generator" else ag.checkpoint(make, x)
        change()
        with pytest.raises(ag.BackwardError, match="other values than in the forward pass"):
            xp.sum(y).backward()


def test_checkpoint_accepts_a_deterministic_second_run_with_nan_and_inf(rng):
    xp = ag.namespace("numpy")
    x = ag.Variable(np.array([-1.0, 0.0, 2.0, np.inf]), requires_grad=True)
    with np.errstate(all="ignore"):
        y = ag.checkpoint(lambda v: xp.log(v) * 2, x)
        xp.sum(y).backward()
    assert np.array_equal(x.grad.data, [2.0 / -1.0, np.inf, 1.0, 0.0])


def test_a_spec_gives_both_random_state_functions_or_neither():
    with pytest.raises(TypeError, match="random_state and set_random_state go together"):
        ag.BackendSpec(name="half", arrays=("numpy:ndarray",), namespace="numpy",
                       random_state=lambda: None)

def test_checkpoint_lowers_the_peak_memory_of_a_deep_chain():
    from bench.checkpoint_memory import measure

    # 128 KiB activations; the weights' gradients (36 x 32 KiB) are part of every peak.
    sizes = dict(layers=36, batch=256, width=64, segment=6)
    plain = measure("plain", **sizes)
    segments = measure("per-segment", **sizes)
    assert segments["grad_hash"] == plain["grad_hash"]  # bit-identical gradients
    # The plain chain keeps 36 activations; checkpointed, 6 boundaries + one segment's 6.
    assert segments["forward_peak_mib"] < 0.5 * plain["forward_peak_mib"]  # measured: 0.32
    assert segments["peak_mib"] < 0.75 * plain["peak_mib"]  # measured: 0.60
    residual = dict(sizes, residual=True)  # two arrays saved per layer: per layer halves it
    plain = measure("plain", **residual)
    layers = measure("per-layer", **residual)
    assert layers["grad_hash"] == plain["grad_hash"]
    assert layers["peak_mib"] < 0.8 * plain["peak_mib"]  # measured: 0.67


# ------------------------------------------------------------------------------ anomaly mode

def test_anomaly_error_names_the_op_the_input_and_the_forward_line():
    xp = ag.namespace("numpy")
    x = ag.Variable(np.array([0.0, 1.0]), requires_grad=True)
    with ag.detect_anomaly(), np.errstate(divide="ignore"):
        line = sys._getframe().f_lineno + 1
        y = xp.log(x) * 2.0
        with pytest.raises(ag.AnomalyError) as caught:
            xp.sum(y).backward()
    message = str(caught.value)
    assert "<LogBackward>" in message and "inf" in message and "input 0" in message
    assert f'File "{__file__}", line {line}' in message
    assert "y = xp.log(x) * 2.0" in message
    assert isinstance(caught.value, ag.BackwardError)


def test_anomaly_reports_nan_and_is_off_afterwards():
    xp = ag.namespace("numpy")
    x = ag.Variable(np.array([-1.0, 4.0]), requires_grad=True)
    with np.errstate(invalid="ignore"):
        with ag.detect_anomaly():
            assert ag.is_anomaly_enabled()
            y = xp.sqrt(x)
            with pytest.raises(ag.AnomalyError, match=r"<SqrtBackward> returned nan"):
                xp.sum(y).backward()
        assert not ag.is_anomaly_enabled()
        xp.sum(xp.sqrt(x)).backward()  # off: NaNs pass, as in PyTorch
    assert np.isnan(x.grad.data[0])


def test_nodes_hold_no_traceback_when_anomaly_is_off():
    xp = ag.namespace("numpy")
    x = ag.Variable(np.ones(3), requires_grad=True)
    y = xp.sin(x * 2.0) + x
    nodes = [y.grad_fn, y.grad_fn.next_functions[0][0]]
    assert not ag.is_anomaly_enabled() and not _watch.watching
    assert all(getattr(node, "forward_trace", None) is None for node in nodes)
    with ag.detect_anomaly():
        z = xp.sin(x)
    assert z.grad_fn.forward_trace is not None


def test_set_detect_anomaly_decorator_and_threads():
    xp = ag.namespace("numpy")

    @ag.detect_anomaly()
    def inside():
        return ag.is_anomaly_enabled()

    assert inside() and not ag.is_anomaly_enabled()
    with ag.set_detect_anomaly(True):
        seen = []  # global, as PyTorch's: a thread sees it too
        thread = threading.Thread(target=lambda: seen.append(ag.is_anomaly_enabled()))
        thread.start()
        thread.join()
        assert seen == [True]
    assert not ag.is_anomaly_enabled()
    ag.set_detect_anomaly(True)
    try:
        assert ag.is_anomaly_enabled()
    finally:
        ag.set_detect_anomaly(False)
    assert not ag.is_anomaly_enabled()
    x = ag.Variable(np.ones(2), requires_grad=True)
    xp.sum(x * x).backward()


def test_anomaly_adds_the_forward_traceback_to_other_backward_errors():
    xp = ag.namespace("numpy")
    x = ag.Variable(np.ones(2), requires_grad=True)
    with ag.detect_anomaly():
        line = sys._getframe().f_lineno + 1
        y = xp.sum(xp.exp(x))
        y.backward()
        with pytest.raises(ag.BackwardError) as caught:
            y.backward()
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "<SumBackward>" in notes and f"line {line}" in notes


# ------------------------------------------------------------------------------ to_dot

def _edges(dot):
    return Counter(re.findall(r"^\s*(\w+) -> (\w+)", dot.source, flags=re.M))


def test_to_dot_has_exactly_the_edges_of_next_functions():
    xp = ag.namespace("numpy")
    x = ag.Variable(np.ones(3), requires_grad=True)
    a = x * 2.0  # x is shared: a diamond, and a also feeds the last product twice
    b = xp.sin(x)
    z = (a + b) * a
    dot = ag.to_dot(z, params={"x": x})
    expected, stack, seen = Counter({(f"n{id(z.grad_fn)}", "out0"): 1}), [z.grad_fn], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for child, _ in node.next_functions:
            if child is not None:
                expected[(f"n{id(child)}", f"n{id(node)}")] += 1
                stack.append(child)
    assert _edges(dot) == expected
    assert len(seen) == 5  # Mul, Add, Mul, Sin, AccumulateGrad: x's node once
    leaf = f'n{id(_engine.accumulator(x))} [label="AccumulateGrad\\nx\\n(3,) float64\\nnumpy"'
    assert leaf in dot.source and str(dot) == dot.source
    assert 'label="output\\n(3,) float64"' in dot.source


def test_to_dot_shows_saved_values_on_request():
    xp = ag.namespace("numpy")
    x = ag.Variable(np.ones((2, 3)), requires_grad=True)
    y = xp.sum(xp.exp(x))
    assert "saved" not in ag.to_dot(y).source and "ans:" not in ag.to_dot(y).source
    assert 'ans: (2, 3) float64' in ag.to_dot(y, show_saved=True).source
    y.backward()
    assert "saved: freed" in ag.to_dot(y, show_saved=True).source


def _tutorial_graph():
    x = ag.Variable(np.ones((2, 2)), requires_grad=True)
    y = x ** 2 + 4 * x
    z = 2 * y + 3
    return x, z


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_render_the_tutorial_graph_to_svg(tmp_path):
    pytest.importorskip("graphviz", reason="the graphviz package is not installed")
    x, z = _tutorial_graph()
    path = ag.to_dot(z, params={"x": x}).render(tmp_path / "graph.svg", format="svg")
    svg = open(path).read()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    texts = Counter(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    assert texts["AddBackward"] == 2 and texts["MulBackward"] == 2
    assert texts["PowBackward"] == 1 and texts["AccumulateGrad"] == 1
    assert texts["(2, 2) float64"] == 2 and texts["x"] == 1 and texts["output"] == 1
    assert ag.to_dot(z).pipe("png").startswith(b"\x89PNG")


def test_render_says_what_to_install(monkeypatch):
    _, z = _tutorial_graph()
    dot = ag.to_dot(z)
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz fails
    with pytest.raises(ag.GraphvizUnavailable, match=r'pip install "arraygrad\[graph\]"'):
        dot.render("never.svg")
    monkeypatch.setitem(sys.modules, "graphviz", type(sys)("graphviz"))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ag.GraphvizUnavailable, match="apt-get install graphviz"):
        dot.pipe("svg")


def test_to_dot_on_custom_rules_and_params_given_as_a_list():
    xp = ag.namespace("numpy")

    class Square(ag.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    @ag.custom_vjp
    def cube(x):
        return x ** 3

    cube.defvjp(lambda x: (cube(x), (x, None)), lambda r, g: (3 * g * r[0] ** 2,))

    @ag.custom_jvp
    def double(x):
        return x * 2

    double.defjvp(lambda p, t: (double(p[0]), 2 * t[0]))
    w = ag.Variable(np.array([1.0, 2.0]), requires_grad=True)
    out = double(cube(Square.apply(w)))
    dot = ag.to_dot(xp.sum(out), params=[w], show_saved=True).source
    assert "SquareBackward" in dot and "cubeBackward" in dot and "doubleBackward" in dot
    assert "saved_tensors[0]: (2,) float64" in dot  # what Square and double saved
    assert "AccumulateGrad\\nparams[0]" in dot
    assert dot == ag.to_dot(xp.sum(out), params=(w,), show_saved=True).source
    with pytest.raises(TypeError, match=r"to_dot\(\): params must be a dict name -> Variable"):
        ag.to_dot(out, params=w)
