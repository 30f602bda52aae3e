"""The PyTorch autograd tutorials' Variable behaviour, line by line, on every built-in backend."""

import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import arraygrad as ag


def test_variable_wraps_the_raw_array_without_copying(backend):
    raw = backend.raw.empty((3, 4))
    x = ag.Variable(raw)
    assert x.data is raw
    assert not isinstance(x.data, ag.Variable)
    assert x.grad is None
    assert x.requires_grad is False
    assert ag.Variable(backend.raw.ones(3), requires_grad=True).requires_grad is True


def test_variable_is_imported_from_autograd_as_in_torch():
    from arraygrad.autograd import Variable  # from torch.autograd import Variable

    assert Variable is ag.Variable


def test_import_arraygrad_reaches_its_testing_module():
    """``arraygrad.testing.check_grads`` after ``import arraygrad`` alone (as torch.testing)."""
    code = ("import sys, numpy, arraygrad\n"
            "assert 'arraygrad.testing' in sys.modules\n"
            "arraygrad.testing.check_grads(lambda x: x * x, numpy.array([1.0, 2.0]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_volatile_is_accepted_warns_once_and_names_no_grad(backend, monkeypatch):
    monkeypatch.setattr("arraygrad._variable._volatile_warned", False)
    with pytest.warns(UserWarning, match="arraygrad.no_grad"):
        x = ag.Variable(backend.raw.ones(2), volatile=True)
    assert x.requires_grad is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ag.Variable(backend.raw.ones(2), volatile=True)  # only once


def test_volatile_reads_false_warns_once_and_cannot_be_set(backend, monkeypatch):
    monkeypatch.setattr("arraygrad._variable._volatile_read_warned", False)
    x = ag.Variable(backend.raw.ones(2), requires_grad=True)
    with pytest.warns(UserWarning, match=r"always False.*arraygrad.no_grad"):
        assert x.volatile is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.volatile is False  # only once
    with pytest.raises(AttributeError, match=r"read-only.*no_grad"):
        x.volatile = True
    assert x.requires_grad  # unchanged


def test_grad_data_is_the_raw_array_and_grad_zero_resets(backend):
    # torch's x.grad.data.zero_() is x.grad.zero_() here: .data is the backend's own array.
    x = backend.variable(np.ones(2))
    (3 * x).backward(backend.raw.ones(2))
    assert type(x.grad.data) is type(backend.raw.ones(2))
    with pytest.raises(AttributeError, match="zero_"):
        x.grad.data.zero_()
    x.grad.zero_()
    (3 * x).backward(backend.raw.ones(2))
    np.testing.assert_allclose(backend.host(x.grad), [3.0, 3.0])  # not 6: the reset held


@pytest.mark.parametrize("as_variable", [False, True])
def test_chain_gradient_and_grad_of_non_leaves(backend, as_variable):
    values = np.array([[1.0, -2.0], [0.5, 3.0]])
    x = backend.variable(values)
    y = x**2 + 4 * x
    z = 2 * y + 3
    assert x.requires_grad and y.requires_grad and z.requires_grad
    g = np.array([[1.0, 0.5], [-1.0, 2.0]])
    gradient = backend.variable(g, requires_grad=False) if as_variable else backend.array(g)
    z.backward(gradient)
    np.testing.assert_allclose(backend.host(x.grad), g * (4 * values + 8))
    for non_leaf in (y, z):
        with pytest.warns(UserWarning, match="retain_grad"):
            assert non_leaf.grad is None
    assert x.is_leaf and x.grad_fn is None
    assert not z.is_leaf
    assert "AddBackward" in repr(z.grad_fn)


def test_accumulation_reset_and_explicit_gradients(backend):
    x = backend.variable(np.ones((1, 1)))
    y = 2 * x + 3
    z = y * y * 3
    z.backward(retain_graph=True)
    np.testing.assert_allclose(backend.host(x.grad), [[60.0]])
    z.backward()
    np.testing.assert_allclose(backend.host(x.grad), [[120.0]])
    x.grad = None
    (2 * x).backward()
    np.testing.assert_allclose(backend.host(x.grad), [[2.0]])
    handle = x.grad
    x.grad.zero_()
    np.testing.assert_allclose(backend.host(x.grad), [[0.0]])
    (3 * x).backward()
    assert x.grad is handle  # accumulation keeps the same .grad Variable, as in PyTorch
    np.testing.assert_allclose(backend.host(handle), [[3.0]])

    x = backend.variable(np.ones((2, 2)))
    z = (2 * x + 3) * (2 * x + 3) * 3
    z.backward(backend.raw.ones((2, 2)), retain_graph=True)
    np.testing.assert_allclose(backend.host(x.grad), np.full((2, 2), 60.0))
    x.grad = None
    z.backward([[0, 1], [1, 0]])
    np.testing.assert_allclose(backend.host(x.grad), [[0.0, 60.0], [60.0, 0.0]])


def test_wrong_gradient_shape_names_both_shapes(backend):
    x = backend.variable(np.ones((2, 2)))
    z = x * 3
    with pytest.raises(ag.GradientError, match=r"\(2,\).*\(2, 2\)"):
        z.backward(backend.raw.ones(2))


def test_second_backward_through_freed_graph_says_retain_graph(backend):
    xp = backend.xp
    x = backend.variable(np.ones(2))
    o = 0.5 * xp.sum(5 * (x + 1) ** 2)
    o.backward()
    np.testing.assert_allclose(backend.host(x.grad), [10.0, 10.0])
    with pytest.raises(ag.BackwardError, match="retain_graph=True"):
        o.backward()


def test_backward_on_non_scalar_without_gradient_is_an_error(backend):
    y = backend.variable(np.ones(3)) * 2
    with pytest.raises(ag.BackwardError, match=r"shape \(3,\).*gradient"):
        y.backward()


def test_mean_of_squares(backend):
    xp = backend.xp
    x = backend.variable(np.ones((2, 2)))
    out = xp.mean((x + 2) * (x + 2) * 3)
    assert float(out) == 27.0
    out.backward()
    np.testing.assert_allclose(backend.host(x.grad), np.full((2, 2), 4.5))


def test_blitz_as_written_with_methods(backend):
    # The tutorial's own spelling: z.mean(), and the norm as a method.
    x = ag.Variable(backend.raw.ones((2, 2)), requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    assert out.grad_fn.name() == "MeanBackward" and float(out) == 27.0
    out.backward()
    np.testing.assert_allclose(backend.host(x.grad), np.full((2, 2), 4.5))
    x = backend.variable(np.array([0.3, -0.2, 0.5]))
    y = x * 2
    while y.norm() < 1000:
        y = y * 2
    assert float(y.norm()) == float(backend.xp.linalg.vector_norm(y))


def test_dynamic_control_flow(backend):
    xp = backend.xp
    values = np.array([0.3, -0.2, 0.5])
    x = backend.variable(values)
    y = x * 2
    doublings = 1
    while xp.linalg.vector_norm(y) < 1000:
        y = y * 2
        doublings += 1
    g = np.array([0.1, 1.0, 0.0001])
    y.backward(backend.array(g))
    assert np.linalg.norm(values * 2**doublings) >= 1000 > np.linalg.norm(values * 2 ** (doublings - 1))
    np.testing.assert_allclose(backend.host(x.grad), g * 2**doublings)


def test_repr_and_next_functions(backend):
    x = backend.variable(np.array([1.0, 2.0]))
    y = x * 3
    z = ag.Variable(backend.raw.ones(2))
    assert "requires_grad=True" in repr(x) and "1." in repr(x)
    assert "grad_fn=<MulBackward>" in repr(y)
    assert "requires_grad" not in repr(z) and "grad_fn" not in repr(z)
    w = (y + x).grad_fn
    (mul, _), (accumulate, _) = w.next_functions
    assert mul is y.grad_fn
    assert accumulate.name() == "AccumulateGrad" and accumulate.variable is x
    assert mul.next_functions[0][0] is accumulate  # one accumulator per leaf
    assert mul.next_functions[1] == (None, 0)  # the constant 3


def test_create_graph_gives_second_derivatives(backend):
    xp = backend.xp
    values = np.array([1.0, -2.0, 3.0])
    x = backend.variable(values)
    xp.sum(x**3).backward(create_graph=True)
    first = x.grad
    assert first.requires_grad and first.grad_fn is not None
    np.testing.assert_allclose(backend.host(first), 3 * values**2)
    x.grad = None
    xp.sum(first).backward()
    np.testing.assert_allclose(backend.host(x.grad), 6 * values)


def test_grad_mode_context_managers_and_decorators(backend):
    x = backend.variable(np.ones(2))
    with ag.no_grad():
        assert not (x * 2).requires_grad
        with ag.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad

    @ag.no_grad()
    def frozen(v):
        return v * 2

    @ag.enable_grad()
    def recording(v):
        return v * 2

    assert not frozen(x).requires_grad
    with ag.no_grad():
        assert recording(x).requires_grad
    with ag.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    ag.set_grad_enabled(False)
    assert not ag.is_grad_enabled()
    ag.set_grad_enabled(True)

    @ag.set_grad_enabled(False)
    def decorated(v):
        return v * 2

    assert ag.is_grad_enabled()  # decorating does not switch the mode
    assert not decorated(x).requires_grad and (x * 2).requires_grad


def test_grad_mode_is_thread_local(backend):
    x = backend.variable(np.ones(2))
    seen = {}
    inside, release = threading.Event(), threading.Event()

    def other_thread():
        with ag.no_grad():
            inside.set()
            release.wait(5)
            seen["other"] = (x * 2).requires_grad

    thread = threading.Thread(target=other_thread)
    thread.start()
    inside.wait(5)
    seen["main"] = (x * 2).requires_grad  # while the other thread is inside no_grad
    release.set()
    thread.join()
    assert seen == {"main": True, "other": False}


def test_detach_retain_grad_and_hooks(backend):
    x = backend.variable(np.array([1.0, 2.0]))
    y = x * 3
    d = y.detach()
    assert d.data is y.data and not d.requires_grad and d.grad_fn is None
    y.retain_grad()
    calls = []
    y.register_hook(lambda g: calls.append(backend.host(g)))
    handle = x.register_hook(lambda g: g * 10)  # a hook may replace the gradient
    (y * y).backward(backend.array([1.0, 1.0]))
    np.testing.assert_allclose(backend.host(y.grad), 2 * np.array([3.0, 6.0]))
    np.testing.assert_allclose(calls[0], [6.0, 12.0])
    np.testing.assert_allclose(backend.host(x.grad), 10 * 3 * np.array([6.0, 12.0]))
    handle.remove()
    x.grad = None
    (x * 1).backward(backend.array([1.0, 1.0]))
    np.testing.assert_allclose(backend.host(x.grad), [1.0, 1.0])


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_requires_grad_on_integer_or_boolean_is_an_error(backend, dtype):
    data = backend.raw.asarray(np.zeros(3, dtype=dtype))
    with pytest.raises(ag.GradientError, match=dtype):
        ag.Variable(data, requires_grad=True)


def test_mixing_backends_names_both():
    x = ag.Variable(ag.get_backend("numpy").raw.ones(2), requires_grad=True)
    y = ag.Variable(ag.get_backend("array_api_strict").raw.ones(2))
    for operation in (lambda: x + y, lambda: y * x, lambda: ag.namespace("numpy").maximum(x, y)):
        with pytest.raises(ag.BackendError, match=r"'numpy'.*'array_api_strict'|'array_api_strict'.*'numpy'"):
            operation()


def test_inplace_change_of_a_saved_value_keeps_the_gradient_right(backend):
    # In-place ops are copy-on-write: what an op saved is never changed, so backward through it
    # is right (PyTorch, which writes in place, would raise a version-counter error here).
    values = np.array([1.0, 2.0, 3.0])
    x = backend.variable(values)
    y = x * 1
    z = y * y  # saves y
    y += 1
    v = backend.xp.sin(y)  # saves the new y
    y[0] = 2.0
    backend.xp.sum(z + v).backward()
    np.testing.assert_allclose(backend.host(x.grad), 2 * values + np.cos(values + 1))
    # scikit-learn's normalize: X /= norms after the norms were computed from X.
    x.grad = None
    y = x * 1
    y /= backend.xp.sum(y * y)
    backend.xp.sum(y).backward()
    n = np.sum(values**2)
    np.testing.assert_allclose(backend.host(x.grad), 1 / n - np.sum(values) * 2 * values / n**2)


def test_inplace_ops_give_correct_gradients(backend):
    values = np.array([1.0, 2.0, 3.0])
    x = backend.variable(values)
    y = x * 2
    y *= x  # y = 2x^2
    y += 1
    y[0] = 5.0  # copy-slices: no gradient to x[0] through y[0]
    backend.xp.sum(y).backward()
    np.testing.assert_allclose(backend.host(x.grad), [0.0, 8.0, 12.0])
    with pytest.raises(ag.InplaceError, match="leaf"):
        x += 1
    with ag.no_grad():
        x -= 0.5 * x.grad  # an SGD step on a leaf is fine under no_grad
    np.testing.assert_allclose(backend.host(x), values - 0.5 * np.array([0.0, 8.0, 12.0]))


def test_assignment_into_a_0d_variable_keeps_backward_working(backend):
    # SciPy's stats.variation assigns into a 0-d result: NumPy's 0-d arithmetic gives scalars.
    x = backend.variable(np.array(2.0))
    y = x * 3
    y[()] = 5.0
    (y + x).backward()
    np.testing.assert_allclose(backend.host(x.grad), 1.0)
