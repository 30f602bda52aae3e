"""Random programs, the same gradients with and without memory reuse. Each program composes a few
of the functions below (elementwise, reductions with keepdims, broadcasting, views, sorting, a
value used by several later ops, a Variable times itself), sometimes with retained gradients,
hooks that keep what they see, and a second backward through a retained graph. Reuse is forced on
every array size, then switched off; every gradient, retained gradient and hook's view must agree,
no ``.grad`` may share memory with anything else the user holds, and the leaves' values must be
untouched: whatever reuse overwrites, nobody may see it."""

import random

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import _buffers

xp = ag.namespace("numpy")

ONE_INPUT = [
    lambda v: xp.sin(v), lambda v: xp.cos(v), lambda v: xp.exp(v * 0.3),
    lambda v: xp.log1p(v * v), lambda v: xp.log(v * v + 1.0), lambda v: xp.expm1(v * 0.2),
    lambda v: xp.tanh(v), lambda v: xp.square(v), lambda v: -v, lambda v: v ** 2,
    lambda v: xp.sqrt(v * v + 1.0), lambda v: xp.sinh(v * 0.5), lambda v: xp.cosh(v * 0.5),
    lambda v: xp.reciprocal(v * v + 2.0), lambda v: v * v, lambda v: (-v) * v,
    lambda v: xp.log2(v * v + 1.0), lambda v: xp.log10(xp.abs(v) + 1.0), lambda v: xp.abs(v),
    lambda v: v * 1.7, lambda v: v + 0.3, lambda v: 2.0 - v, lambda v: v / 3.0,
    lambda v: 1.0 / (v * v + 1.5), lambda v: xp.tan(v * 0.3), lambda v: xp.atan(v),
    lambda v: xp.asinh(v), lambda v: 1.0 / (1.0 + xp.exp(-v)), lambda v: xp.flip(v, axis=0),
    lambda v: xp.matrix_transpose(v) if v.ndim == 2 else v[::-1],
    lambda v: xp.reshape(xp.reshape(v, (-1,)), v.shape),
    lambda v: v - xp.mean(v, axis=0, keepdims=True),
    lambda v: v - xp.max(v, axis=-1, keepdims=True),
    lambda v: v / (xp.sum(v * v, axis=-1, keepdims=True) + 1.0),
    lambda v: xp.exp(v - xp.max(v)) / xp.sum(xp.exp(v - xp.max(v))),
    lambda v: xp.clip(v, -0.5, 0.7), lambda v: xp.where(v > 0, v * 2.0, v * v),
    lambda v: xp.roll(v, 3, axis=0), lambda v: xp.cumulative_sum(v, axis=0),
    lambda v: xp.concat([v[1:], v[:1]], axis=0), lambda v: xp.sort(v, axis=-1),
]
TWO_INPUTS = [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / (b * b + 1.0),
    lambda a, b: xp.maximum(a, b), lambda a, b: xp.hypot(a, b + 2.0),
    lambda a, b: xp.atan2(a, b * b + 1.0), lambda a, b: xp.abs(a) ** (b * 0.1 + 1.0),
    lambda a, b: (a @ b) * 0.1 if a.ndim == 2 else a * b,
    lambda a, b: a * xp.mean(b, axis=0), lambda a, b: a + xp.sum(b, axis=-1, keepdims=True),
    lambda a, b: a * xp.sum(b) * 0.01, lambda a, b: xp.mean(xp.stack([a, b]), axis=0),
    lambda a, b: (a + b) * (a - b),
]


def gradients(seed, reuse, monkeypatch):
    """Run program ``seed``; return every gradient it makes visible, as copies."""
    size = 1 if reuse else 1 << 62
    monkeypatch.setattr(_buffers, "MIN_BYTES", size)
    choose = random.Random(seed)
    shape = choose.choice([(64,), (8, 8)])
    numbers = np.random.default_rng(seed)
    x0, w0 = numbers.uniform(-1, 1, shape), numbers.uniform(-1, 1, shape)
    x = ag.Variable(x0.copy(), requires_grad=True)
    w = ag.Variable(w0.copy(), requires_grad=choose.random() < 0.7)
    retain, hook, twice = (choose.random() < 0.25 for _ in range(3))
    values, seen = [x, w], []
    for step in range(choose.randint(2, 9)):
        if choose.random() < 0.55:
            value = choose.choice(ONE_INPUT)(choose.choice(values))
        else:
            value = choose.choice(TWO_INPUTS)(choose.choice(values), choose.choice(values))
        if value.requires_grad and retain and step % 2 == 0:
            value.retain_grad()
        if value.requires_grad and hook and step % 3 == 1:
            value.register_hook(seen.append)
        values.append(value)
    loss = 0.0
    for value in choose.sample(values[2:], min(choose.randint(1, 3), len(values) - 2)):
        weights = numbers.uniform(0.5, 1.5, tuple(value.shape))  # or a broadcast 1, from sum
        loss = loss + xp.sum(value * weights if choose.random() < 0.5 else value)
    if not loss.requires_grad:
        return []
    loss.backward(retain_graph=twice)
    if twice:
        loss.backward()
    assert np.array_equal(x.data, x0) and np.array_equal(w.data, w0), "a leaf's values changed"
    grads = [v.grad.data for v in values if (v.is_leaf or v.retains_grad) and v.grad is not None]
    others = [g.data for g in seen] + [x.data, w.data]  # (hooks may see views of one gradient)
    for i, grad in enumerate(grads):  # a .grad is its own: no view of another's, nor of these
        for other in grads[i + 1:] + others:
            assert not np.shares_memory(grad, other), f"program {seed}: a .grad is aliased"
    return [np.array(g, copy=True) for g in grads + others[:-2]]


@pytest.mark.parametrize("first", range(0, 1200, 150))
def test_random_programs_have_the_same_gradients_with_and_without_reuse(first, monkeypatch):
    for seed in range(first, first + 150):
        with np.errstate(all="ignore"):
            reused, plain = (gradients(seed, reuse, monkeypatch) for reuse in (True, False))
        assert len(reused) == len(plain), f"program {seed}"
        for got, expected in zip(reused, plain):
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14, equal_nan=True,
                                       err_msg=f"program {seed}")
