"""Cases shared by the tests of the backend plugins: the same functions, checked on each real
library against central differences and against NumPy."""

import numpy as np

import arraygrad as ag
from arraygrad.testing import check_grads

# name: (f(xp, *inputs), shapes of the float64 inputs). Elementwise, reductions with axis and
# keepdims, matmul, broadcasting, indexing, reshaping, joining, sorting, copy-on-write setitem.
CASES = {
    "elementwise": (lambda xp, x: xp.exp(x) * xp.sin(x) + x ** 2 / (1 + x * x) - xp.tanh(x), [(3, 4)]),
    "sum_keepdims": (lambda xp, x: xp.sum(x * x, axis=1, keepdims=True), [(3, 4)]),
    "mean_axis": (lambda xp, x: xp.mean(x, axis=0), [(3, 4)]),
    "max_axis": (lambda xp, x: xp.max(x, axis=-1), [(3, 4)]),
    "std_var": (lambda xp, x: xp.std(x, axis=0, correction=1) + xp.var(x, axis=1, keepdims=True), [(3, 4)]),
    "prod_cumsum": (lambda xp, x: xp.prod(x, axis=1, keepdims=True) * xp.cumulative_sum(x, axis=1), [(3, 4)]),
    "cumulative_prod": (lambda xp, x: xp.cumulative_prod(x, axis=0), [(3, 4)]),
    "matmul": (lambda xp, x, y: x @ y, [(3, 4), (4, 2)]),
    "matmul_vector": (lambda xp, x, w: x @ w, [(5, 3), (3,)]),
    "broadcast": (lambda xp, x, y: x * y + y, [(3, 4), (4,)]),
    "getitem": (lambda xp, x: x[1:, ::2] * x[0, 1], [(3, 4)]),
    "take": (lambda xp, x: xp.take(x, xp.asarray([2, 0, 2]), axis=0), [(3, 4)]),
    "reshape_permute": (lambda xp, x: xp.permute_dims(xp.reshape(x, (2, 6)), (1, 0)), [(3, 4)]),
    "concat_stack": (lambda xp, x: xp.concat([x, 2 * x], axis=1) + xp.stack([x, x * x])[1][:, :1], [(3, 4)]),
    "where": (lambda xp, x: xp.where(x > 0, x, x * x), [(3, 4)]),
    "sort": (lambda xp, x: xp.sort(x, axis=1), [(3, 4)]),
    "vector_norm": (lambda xp, x: xp.linalg.vector_norm(x, axis=1), [(3, 4)]),
    "setitem": (lambda xp, x, y: _setitem(x, y), [(3, 4), (4,)]),
}


def _setitem(x, y):
    z = x * 1
    z[0] = y  # copy-on-write: the history of z and y both reach the output
    return z * x


def _inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


def _value_and_grads(backend, f, arrays, seed=1):
    """Output and input gradients of ``f`` on ``backend``, as NumPy arrays."""
    be = ag.get_backend(backend)
    inputs = [ag.Variable(be.raw.asarray(a), requires_grad=True) for a in arrays]
    out = f(be.ns, *inputs)
    g = np.random.default_rng(seed).standard_normal(tuple(out.shape))
    out.backward(be.raw.asarray(g, dtype=out.dtype))
    return be.to_numpy(out.data), [be.to_numpy(x.grad.data) for x in inputs]


def check_against_central_differences(backend, case):
    """Gradients of ``CASES[case]`` on ``backend`` match central differences, to second order."""
    f, shapes = CASES[case]
    xp = ag.namespace(backend)
    check_grads(lambda *v: f(xp, *v), *_inputs(shapes), backend=backend, order=2)


def check_against_numpy(backend, case):
    """Values and gradients of ``CASES[case]`` on ``backend`` equal NumPy's on the same inputs."""
    f, shapes = CASES[case]
    arrays = _inputs(shapes)
    ours, our_grads = _value_and_grads(backend, f, arrays)
    reference, reference_grads = _value_and_grads("numpy", f, arrays)
    rtol, atol = ag.get_backend(backend).tolerances("float64")
    np.testing.assert_allclose(ours, reference, rtol=rtol, atol=atol)
    for grad, expected in zip(our_grads, reference_grads):
        np.testing.assert_allclose(grad, expected, rtol=rtol, atol=atol)
