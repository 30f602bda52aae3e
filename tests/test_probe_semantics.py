"""Semantics found by probing arraygrad as a user coming from PyTorch, NumPy or JAX would: each
test pins one behaviour against hand-derived values or central differences (not against what
arraygrad itself computes)."""

import importlib.util
import warnings

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import Variable

BACKENDS = ["numpy"] + [name for name in ("torch", "jax") if importlib.util.find_spec(name)]


def _raw(backend, values):
    """A float64 array of ``backend`` (its namespace is made first: JAX's turns on float64)."""
    ag.namespace(backend)
    return ag.get_backend(backend).raw.asarray(np.asarray(values, dtype=np.float64))


def _host(backend, value):
    return np.asarray(ag.get_backend(backend).to_numpy(value.data))


# ------------------------------------------------------------------- x[int array] = value
@pytest.mark.parametrize("backend", BACKENDS)
def test_setitem_with_a_repeated_index_passes_back_only_the_value_that_stayed(backend):
    # z[[0, 0, 2]] = v keeps v[1] at z[0] (the last write, as NumPy, torch on CPU and JAX do):
    # v[0] is overwritten and has no effect on the output, so its gradient is 0 (torch's
    # index_put gives it g[0] as well, which central differences contradict).
    xp = ag.namespace(backend)
    w = np.array([0.5, -2.0, 3.0, 7.0])
    x = Variable(_raw(backend, [1.0, 2.0, 3.0, 4.0]), requires_grad=True)
    v = Variable(_raw(backend, [10.0, 20.0, 30.0]), requires_grad=True)
    z = x * 1.0
    z[[0, 0, 2]] = v
    assert _host(backend, z).tolist() == [20.0, 2.0, 30.0, 4.0]
    xp.sum(z * xp.asarray(_raw(backend, w))).backward()
    assert _host(backend, v.grad).tolist() == [0.0, 0.5, 3.0]
    assert _host(backend, x.grad).tolist() == [0.0, -2.0, 0.0, 7.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_setitem_of_a_broadcast_value_at_a_repeated_index_counts_it_once(backend):
    # z[i, [1, 1]] = s writes s twice to one element, which holds it once: ds = w[i, 1].
    xp = ag.namespace(backend)
    w = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    x = Variable(_raw(backend, np.zeros((2, 3))), requires_grad=True)
    s = Variable(_raw(backend, 1.5), requires_grad=True)
    z = x * 1.0
    z[1, [1, 1]] = s
    xp.sum(z * xp.asarray(_raw(backend, w))).backward()
    assert float(s.grad) == 5.0
    assert _host(backend, x.grad).tolist() == [[1.0, 2.0, 3.0], [4.0, 0.0, 6.0]]


def test_setitem_with_repeated_index_arrays_matches_central_differences():
    # Two integer arrays, a repeated pair among them, a value computed from x, then used again.
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 5))
    rows, cols = np.array([0, 3, 0, 1]), np.array([1, 4, 1, 2])

    def f(xp, x):
        z = x * 2
        z[rows, cols] = x[2, :4] ** 2 + x[1, 1]
        return z * x

    x = Variable(a.copy(), requires_grad=True)
    out = f(ag.namespace("numpy"), x)
    g = rng.standard_normal(out.shape)
    out.backward(g)
    numeric, eps = np.zeros_like(a), 1e-6
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = np.sum((f(np, up) - f(np, down)) * g) / (2 * eps)
    np.testing.assert_allclose(x.grad.data, numeric, atol=1e-7)


# --------------------------------------------------------------------- views: x[1], x[:, 2:]
def _central_differences(f, arrays, g, eps=1e-6):
    """The VJP of ``f`` (run on NumPy arrays, NumPy's own view semantics) by central
    differences, one array per argument."""
    grads = []
    for k, a in enumerate(arrays):
        grad = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            up, down = [c.copy() for c in arrays], [c.copy() for c in arrays]
            up[k][i] += eps
            down[k][i] -= eps
            grad[i] = np.sum((f(*up) - f(*down)) * g) / (2 * eps)
        grads.append(grad)
    return grads


def _row_updates(x, y):  # rows of z changed through views, each depending on the previous
    z = x * 1
    for i in range(3):
        row = z[i + 1]
        row += z[i] * y
    z[0][1:3] = y[:2] ** 2  # chained assignment: z[0] is a view
    return z * x


def _base_then_view(x, y):  # the base changes after the view was taken, then the view is read
    z = x * 2
    v = z[1:3, ::-2]
    z[2] = y * z[0]
    z[1, 0] = 7.0
    return v * x[:2, :3] + z[3, 0]


def _view_of_a_view(x, y):
    z = x * x
    inner = z[1:][None, :, 2:]
    inner[0, 1] *= y[:3]
    middle = z[:, 1]
    return z + middle[2] * x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", [_row_updates, _base_then_view, _view_of_a_view])
def test_in_place_changes_through_views_reach_the_base_and_back(backend, f):
    # NumPy's and PyTorch's semantics: basic indexing gives a view; an in-place change of it
    # changes its base, and a change of the base shows in the view. The reference is the same
    # function on NumPy arrays, differentiated by central differences.
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal(5)
    x = Variable(_raw(backend, a), requires_grad=True)
    y = Variable(_raw(backend, b), requires_grad=True)
    out = f(x, y)
    np.testing.assert_allclose(_host(backend, out), f(a.copy(), b.copy()), rtol=1e-12)
    g = rng.standard_normal(out.shape)
    out.backward(_raw(backend, g))
    grad_x, grad_y = _central_differences(f, (a, b), g)
    np.testing.assert_allclose(_host(backend, x.grad), grad_x, atol=1e-6)
    np.testing.assert_allclose(_host(backend, y.grad), grad_y, atol=1e-6)


def test_chained_assignment_writes_into_a_variable_that_requires_no_grad():
    z, expected = Variable(np.zeros((2, 3))), np.zeros((2, 3))
    z[1][2] = 5.0
    expected[1][2] = 5.0
    column = z[:, 0]
    column -= 1.0
    expected[:, 0] -= 1.0
    assert z.data.tolist() == expected.tolist() == [[-1.0, 0.0, 0.0], [-1.0, 0.0, 5.0]]


def test_a_single_element_is_a_copy_as_in_numpy():
    # z[1, 2] selects one element: NumPy returns a scalar, a copy, so an accumulator started
    # from it must not write back into z (torch would; NumPy code relies on it not doing so).
    z = Variable(np.arange(6.0).reshape(2, 3))
    total = z[1, 2]
    total += 100.0
    assert float(total) == 105.0 and z.data.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_an_in_place_change_of_a_view_of_a_leaf_that_requires_grad_is_refused():
    w = Variable(np.ones((2, 3)), requires_grad=True)
    row = w[0, 1:]
    with pytest.raises(ag.InplaceError, match=r"in-place operation \(\*= on its view \[0, 1:\]\)"):
        row *= 2.0
    assert w.data.tolist() == [[1.0] * 3] * 2 and row.data.tolist() == [1.0, 1.0]
    with ag.no_grad():  # a parameter update: allowed, and it reaches the parameter
        row -= 0.5
    assert w.data.tolist() == [[1.0, 0.5, 0.5], [1.0, 1.0, 1.0]]
    assert w.requires_grad and w.grad_fn is None


def test_an_augmented_assignment_to_a_slice_records_one_copy_slices():
    # z[1:3] += 1 is z.__setitem__(k, z.__getitem__(k).__iadd__(1)): the view z[1:3] writes
    # itself back on +=, so the __setitem__ that follows has nothing left to do (as PyTorch's
    # graph: CopySlices of Mul and Add, not a CopySlices of that one).
    x = Variable(np.ones((3, 2)), requires_grad=True)
    z = x * 2
    z[1:3] += 1
    assert [node.name() for node, _ in z.grad_fn.next_functions] == ["MulBackward", "AddBackward"]
    assert z.grad_fn.name() == "CopySlicesBackward" and z.data.tolist() == [[2, 2], [3, 3], [3, 3]]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("written", [[], [4]])
def test_a_mask_assignment_records_copy_slices_and_copies_only_what_it_writes(backend, written):
    # SciPy's zscore ends in at(z, std == 0).set(nan), whose mask has no True unless a slice is
    # constant. z = exp(x) is saved by its node, so a write needs a copy; a mask with no True
    # writes nothing: z keeps its array, and the gradient passes whole. Recorded either way,
    # as PyTorch's CopySlices.
    xp = ag.namespace(backend)
    values = np.linspace(-1.0, 1.2, 6)
    w = np.array([0.5, -1.0, 2.0, 0.25, 3.0, -0.75])
    x = Variable(_raw(backend, values), requires_grad=True)
    z = xp.exp(x)
    before = z.data
    mask = np.zeros(6, dtype=bool)
    mask[written] = True
    z[xp.asarray(mask)] = 2.5
    assert z.grad_fn.name() == "CopySlicesBackward"
    assert (z.data is before) == (not written)
    np.testing.assert_allclose(_host(backend, z), np.where(mask, 2.5, np.exp(values)), rtol=1e-12)
    xp.sum(z * xp.asarray(w)).backward()
    expected = w * np.exp(values)
    expected[written] = 0.0  # overwritten: z no longer depends on x there
    np.testing.assert_allclose(_host(backend, x.grad), expected, rtol=1e-12)


@pytest.mark.parametrize("value, dtype, error", [
    (float("nan"), "int64", ValueError), (1j, "float64", TypeError),
    (10**400, "float64", OverflowError)])
def test_a_mask_with_no_true_still_refuses_a_value_numpy_refuses(value, dtype, error):
    # NumPy converts the value even where it writes nothing: NaN into integers, a complex
    # number into reals, an int beyond float64.
    xp = ag.namespace("numpy")
    target = Variable(np.arange(3, dtype=dtype))
    with pytest.raises(error):
        target[xp.zeros(3, dtype=xp.bool)] = value
    with pytest.raises(IndexError):  # a mask of another shape, also with no True
        Variable(np.arange(3.0))[xp.zeros(2, dtype=xp.bool)] = 1.0


# ------------------------------------------------------------- retain_grad() and in place
def test_retain_grad_gives_the_gradient_of_the_value_after_an_in_place_change():
    # PyTorch: .grad of a retained non-leaf is the gradient of its current value, while hooks
    # registered before the change see the gradient of the value they were registered on.
    xp = ag.namespace("numpy")
    v = Variable(np.arange(4.0), requires_grad=True)
    h = v * 2
    h.retain_grad()
    seen = []
    h.register_hook(lambda g: seen.append(g.data.tolist()))
    h *= 3  # h = 6 v
    xp.sum(h * h).backward()
    assert h.grad.data.tolist() == [0.0, 12.0, 24.0, 36.0]  # 2 h = 12 v
    assert seen == [[0.0, 36.0, 72.0, 108.0]]  # d/d(2 v) of sum((3 * 2 v) ** 2) = 36 v
    w = Variable(np.arange(4.0), requires_grad=True)
    k = w * 2
    k.retain_grad()
    k[1] = 7.0
    xp.sum(k * k).backward()
    assert k.grad.data.tolist() == [0.0, 14.0, 8.0, 12.0]


# ------------------------------------------------------------------ norms at a zero entry
def test_vector_norm_below_one_at_a_zero_entry_differentiates_without_a_warning():
    # d||x||_p/dx_i = sign(x_i) |x_i| ** (p - 1) / ||x|| ** (p - 1), 0 at x_i = 0 (PyTorch);
    # for x = (4, 0, -1), p = 1/2: ||x|| = (2 + 1) ** 2 = 9, so (3 / 2, 0, -3). The zero
    # entry's 0 ** (p - 1) is never computed: no RuntimeWarning, and no NaN at second order.
    xp = ag.namespace("numpy")
    x = Variable(np.array([4.0, 0.0, -1.0]), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (grad,) = ag.autograd.grad(xp.linalg.vector_norm(x, ord=0.5), x, create_graph=True)
        np.testing.assert_allclose(grad.data, [1.5, 0.0, -3.0], rtol=1e-14)
        (second,) = ag.autograd.grad(grad[0], x)
    # grad[0] = |x_0| ** -1/2 N ** 1/2 with N = ||x||: d/dx_0 = -1/2 |x_0| ** -3/2 N ** 1/2 +
    # |x_0| ** -1/2 N ** -1/2 / 2 * dN/dx_0 = -3/16 + 1/8; d/dx_2 = (1/2) (1/6) (-3); and 0
    # at the zero entry, whose first derivative is the constant 0.
    np.testing.assert_allclose(second.data, [-1 / 16, 0.0, -1 / 4], rtol=1e-14)
