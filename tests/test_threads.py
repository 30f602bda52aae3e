"""backward() from several threads: accumulation into shared Variables is atomic (PyTorch's
AccumulateGrad holds a mutex likewise), and separate graphs neither wait for nor disturb each
other.

The shared values are small integers, so every gradient and every sum of them is exact in
float64 whatever the order of the additions: a lost or doubled update shows as an inequality.
"""

import sys
import threading

import numpy as np
import pytest

import arraygrad as ag

xp = ag.namespace("numpy")
THREADS = 8
SHAPE = (64, 64)  # 4,096 values: NumPy releases the GIL inside the additions
ROUNDS, PASSES = 40, 6  # without the locks, one of the first few rounds fails


@pytest.fixture(autouse=True)
def switch_often():
    """Switch threads every microsecond so that an unguarded read-add-write is interleaved."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def run_threads(work):
    """Run ``work(k)`` for k in 0..THREADS-1 in threads started together; re-raise errors."""
    barrier = threading.Barrier(THREADS)
    errors = []

    def target(k):
        try:
            barrier.wait()
            work(k)
        except BaseException as error:  # noqa: BLE001 (re-raised below, in the test's thread)
            errors.append(error)

    threads = [threading.Thread(target=target, args=(k,)) for k in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def loss(k, x, h, w, c):
    """Thread k's own function of the shared leaves x, w and the shared non-leaf h = 3 x: each
    reaches them by a different path (broadcast, matmul, product, reduction)."""
    return [
        lambda: xp.sum(h * 2.0),
        lambda: xp.sum(h * h),
        lambda: xp.sum(x * c) + xp.sum(h),
        lambda: xp.sum(xp.sum(h, axis=0) * 5.0),
        lambda: xp.sum(h @ c) + xp.sum(x * w),
        lambda: xp.sum((x + h) * 4.0),
        lambda: xp.sum(xp.abs(h - 1.0)),
        lambda: xp.sum(x * w * c) + xp.sum(h * float(k)),
    ][k]()


class Shared:
    """Leaves x, w and the non-leaf h = 3 x, all filled by THREADS kinds of backward pass; the
    leaves log what their hooks saw, to check that hooks and accumulation are atomic together."""

    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        self.x = ag.Variable(rng.integers(-3, 4, SHAPE).astype(np.float64), requires_grad=True)
        # Each pass also backpropagates a small graph of its own into w, so that w's
        # AccumulateGrad node is dropped and made anew, by several threads at once.
        self.w = ag.Variable(rng.integers(-3, 4, SHAPE).astype(np.float64), requires_grad=True)
        self.c = ag.Variable(rng.integers(-2, 3, SHAPE).astype(np.float64))
        self.h = self.x * 3.0
        self.h.retain_grad()
        # Per leaf: (sum of .grad before a gradient is added, sum of that gradient), in order.
        self.logs = {}
        for leaf in (self.x, self.w):
            self.logs[id(leaf)] = log = []
            leaf.register_hook(lambda grad, leaf=leaf, log=log: log.append(
                (0.0 if leaf.grad is None else float(np.sum(leaf.grad.data)),
                 float(np.sum(grad.data)))))

    def passes(self, k, n):
        for _ in range(n):
            loss(k, self.x, self.h, self.w, self.c).backward(retain_graph=True)
            xp.sum(self.w * float(k + 1)).backward()

    def grads(self):
        return [v.grad.data for v in (self.x, self.w, self.h)]


def test_threads_accumulating_into_shared_variables_lose_no_update():
    for round_ in range(ROUNDS):
        expected = Shared(round_)
        for k in range(THREADS):
            expected.passes(k, PASSES)
        shared = Shared(round_)
        run_threads(lambda k: shared.passes(k, PASSES))
        for name, got, want in zip("xwh", shared.grads(), expected.grads()):
            np.testing.assert_array_equal(
                got, want, err_msg=f"round {round_}: {name}.grad lost or doubled an update")
        # Each hook call saw .grad exactly as the previous call's gradient left it.
        for name, leaf in (("x", shared.x), ("w", shared.w)):
            log = shared.logs[id(leaf)]
            for (before, added), (after, _) in zip(log, log[1:]):
                assert after == before + added, (
                    f"round {round_}: a hook of {name} ran between another's and its addition")


def test_create_graph_accumulation_from_threads_is_exact():
    x = ag.Variable(np.arange(-8.0, 8.0).reshape(4, 4), requires_grad=True)

    def work(k):
        for _ in range(5):
            xp.sum(x * x * float(k + 1)).backward(create_graph=True)

    for _ in range(5):
        x.grad = None
        run_threads(work)
        # 5 passes of d/dx sum((k+1) x^2) = 2 (k+1) x for k < 8: 5 * 2 * 36 x.
        np.testing.assert_array_equal(x.grad.data, 360.0 * x.data)
        assert x.grad.requires_grad  # the recorded sum of all the gradients
        x.grad.backward(xp.ones_like(x.grad.data))  # and it differentiates: 360 per value
        np.testing.assert_array_equal(x.grad.data, 360.0 * x.data + 360.0)


def own_graph(seed):
    """A graph of its own: float64 values that rounding would tell apart from any other order
    of operations, large enough for the engine's in-place reuse of temporaries."""
    rng = np.random.default_rng(seed)
    x = ag.Variable(rng.standard_normal(SHAPE), requires_grad=True)
    W = ag.Variable(rng.standard_normal(SHAPE) / 8, requires_grad=True)
    for _ in range(3):  # three passes accumulate into x.grad and W.grad
        y = xp.tanh(x @ W) * xp.exp(-x * x) + xp.sin(x) / (1.0 + W * W)
        xp.mean(y * y + xp.sum(y, axis=1, keepdims=True)).backward()
    return x.grad.data, W.grad.data


def test_threads_on_separate_graphs_match_a_single_thread_bit_for_bit():
    expected = [own_graph(k) for k in range(THREADS)]
    for _ in range(3):
        results = [None] * THREADS

        def work(k):
            results[k] = own_graph(k)

        run_threads(work)
        for k in range(THREADS):
            for got, want in zip(results[k], expected[k]):
                np.testing.assert_array_equal(got, want, err_msg=f"thread {k}")


def test_threads_using_a_leaf_at_once_share_its_one_accumulate_grad_node():
    """The node that holds a leaf's lock is made once even when threads first use the leaf
    together: two nodes would mean two locks, and lost updates."""
    w = ag.Variable(np.ones(3), requires_grad=True)
    for _ in range(200):
        outputs = [None] * THREADS  # the previous ones, and with them the node, are dropped

        def work(k):
            outputs[k] = w * 2.0  # each output keeps the node alive until the check

        run_threads(work)
        nodes = {id(y.grad_fn.next_functions[0][0]) for y in outputs}
        assert len(nodes) == 1, f"{len(nodes)} AccumulateGrad nodes for one leaf"


def test_backward_passes_in_two_threads_run_at_the_same_time():
    """No lock is held across a whole backward: each pass's hook waits, inside backward, for the
    other pass to reach its own hook."""
    reached = [threading.Event(), threading.Event()]
    met = [False, False]

    def work(k):
        x = ag.Variable(np.ones(3), requires_grad=True)

        def hook(grad):
            reached[k].set()
            met[k] = reached[1 - k].wait(timeout=10)

        x.register_hook(hook)
        xp.sum(x * 2.0).backward()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert met == [True, True]
