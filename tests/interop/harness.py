"""One interop case = a third-party function, its inputs, and what each backend does with it.

A case runs the library's own function on Variables of a backend, takes a fixed random
projection of its outputs as the loss, and compares arraygrad's gradient with float64 central
differences of that same function (forward evaluations only, so it shares nothing with
arraygrad's rules) and, where torch runs the function on its own tensors, with
``torch.autograd``. A backend where the case cannot work is declared with the error a user gets
(``refuse``): the test then checks that exactly that error is raised, so nothing is ever
silently wrong. ``docs/interop.md`` is generated from these declarations
(``python -m tests.interop.matrix``).
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import Callable

import numpy as np
import pytest

import arraygrad as ag

BACKENDS = ("numpy", "torch", "dask")


@dataclasses.dataclass
class Refusal:
    """The error a user gets on a backend where a case cannot work, and why. ``error=None``
    declares a NaN gradient (loud, never silently wrong) where the library computes a NaN that
    it then overwrites, which reverse mode cannot undo (torch.autograd gives the same NaN)."""

    error: type | None
    match: str  # a regular expression the error message must match
    reason: str  # one sentence for docs/interop.md: why it cannot work, and the workaround


@dataclasses.dataclass
class Case:
    library: str  # "scipy", "array-api-extra", "scikit-learn", "numpy", ...
    name: str  # the function as a user calls it: "special.logsumexp", "np.mean"
    fn: Callable  # fn(*variables) -> Variable or tuple of Variables
    inputs: tuple  # NumPy arrays: inexact ones require grad, the rest are constants
    refuse: dict = dataclasses.field(default_factory=dict)  # backend -> Refusal
    torch_reference: bool = True  # fn also runs on raw torch tensors: compare with torch.autograd
    rtol: float = 1e-5
    atol: float = 1e-7
    eps: float = 1e-6
    backends: tuple = BACKENDS
    requires: tuple = ()  # modules the case needs besides its library

    @property
    def id(self):
        return f"{self.library}:{self.name}"


def params(cases, backends=BACKENDS):
    """pytest parameters (case, backend) for every case and backend."""
    return [pytest.param(case, name, id=f"{case.name}-{name}")
            for case in cases for name in backends if name in case.backends]


def require(*modules):
    for module in modules:
        pytest.importorskip(module, reason=f"{module} is not installed (pip install -e '.[interop]')")


def to_backend(name, array):
    """A raw array of backend ``name`` holding NumPy ``array``'s values."""
    raw = ag.get_backend(name).raw
    if name == "dask":
        import dask.array

        return dask.array.from_array(np.asarray(array), chunks=-1)
    return raw.asarray(np.asarray(array))


def _outputs(result):
    if isinstance(result, (tuple, list)):
        return [r for r in result]
    return [result]


def _weights(case, outs_host):
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    return [rng.standard_normal(np.shape(o)) for o in outs_host]


def _projection(weights, outs):
    """Sum of <w, out> over the outputs, as a Variable (outs are Variables)."""
    total = None
    for w, out in zip(weights, outs):
        xp = out.__array_namespace__()
        term = xp.sum(out * xp.asarray(w, dtype=out.dtype))
        total = term if total is None else total + term
    return total


def _is_inexact(a):
    return np.issubdtype(np.asarray(a).dtype, np.inexact)


def evaluate(case, backend, arrays, requires_grad):
    variables = [ag.Variable(to_backend(backend, a), requires_grad=requires_grad and _is_inexact(a))
                 for a in arrays]
    return variables, _outputs(case.fn(*variables))


def loss_value(case, backend, arrays, weights):
    """The projected loss at ``arrays``, computed by the library on Variables without grad."""
    with ag.no_grad():
        _, outs = evaluate(case, backend, arrays, False)
    return sum(float(np.real(np.vdot(w, host_of(o)))) for w, o in zip(weights, outs))


def host_of(out):
    if isinstance(out, ag.Variable):
        return np.asarray(out.detach().numpy())
    return np.asarray(out)


def arraygrad_gradients(case, backend):
    arrays = [np.asarray(a) for a in case.inputs]
    variables, outs = evaluate(case, backend, arrays, True)
    for i, out in enumerate(outs):
        assert isinstance(out, ag.Variable), (
            f"{case.name} returned a {type(out).__module__}.{type(out).__qualname__} as output "
            f"{i}, not a Variable: the graph was dropped")
    inexact = [o for o in outs if _is_inexact(o.detach().numpy())]
    assert inexact and all(o.requires_grad for o in inexact), (
        f"{case.name}: an inexact output does not require grad: the graph was dropped")
    weights = _weights(case, [o.detach().numpy() for o in inexact])
    _projection(weights, inexact).backward()
    grads = []
    for v, a in zip(variables, arrays):
        if not _is_inexact(a):
            grads.append(None)
        else:
            grads.append(np.zeros_like(a) if v.grad is None else np.asarray(v.grad.numpy()))
    return arrays, weights, grads, [o.detach().numpy() for o in inexact]


def central_differences(case, backend, arrays, weights):
    """d loss / d input, element by element (float64 central differences)."""
    grads = []
    for k, a in enumerate(arrays):
        if not _is_inexact(a):
            grads.append(None)
            continue
        grad = np.zeros(a.shape)
        for index in np.ndindex(a.shape):
            shifted = []
            for sign in (1, -1):
                moved = [b.copy() for b in arrays]
                moved[k][index] += sign * case.eps
                shifted.append(loss_value(case, backend, moved, weights))
            grad[index] = (shifted[0] - shifted[1]) / (2 * case.eps)
        grads.append(grad)
    return grads


def torch_gradients(case, arrays, weights):
    import torch

    tensors = [torch.tensor(a, requires_grad=_is_inexact(a)) for a in arrays]
    outs = [o for o in _outputs(case.fn(*tensors)) if torch.is_tensor(o) and o.is_floating_point()]
    loss = sum((o * torch.as_tensor(w, dtype=o.dtype)).sum() for o, w in zip(outs, weights))
    grads = torch.autograd.grad(loss, [t for t in tensors if t.requires_grad], allow_unused=True)
    it = iter(grads)
    result = []
    for t in tensors:
        if not t.requires_grad:
            result.append(None)
            continue
        g = next(it)
        result.append(np.zeros(tuple(t.shape)) if g is None else g.detach().numpy())
    return result


def run(case, backend):
    """Check ``case`` on ``backend``: its declared refusal, or its gradients."""
    require(*case.requires)
    try:
        ag.get_backend(backend).raw
    except ag.BackendUnavailable as exc:
        pytest.skip(str(exc))
    refusal = case.refuse.get(backend) or case.refuse.get("*")
    if refusal is not None and refusal.error is None:
        grads = arraygrad_gradients(case, backend)[2]
        assert any(np.isnan(g).any() for g in grads if g is not None), (
            f"{case.name} on {backend} was declared to give a NaN gradient, and gives none: "
            "update its declaration")
        return
    if refusal is not None:
        with pytest.raises(refusal.error, match=refusal.match):
            arraygrad_gradients(case, backend)
        return
    arrays, weights, grads, outs = arraygrad_gradients(case, backend)
    for out in outs:
        assert np.all(np.isfinite(out)), f"{case.name}: non-finite output {out}"
    if case.library == "numpy" and backend == "numpy":  # NumPy's own result on the arrays
        plain = [o for o in _outputs(case.fn(*arrays)) if _is_inexact(np.asarray(o))]
        for k, (got, want) in enumerate(zip(outs, plain)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14,
                                       err_msg=f"{case.name}: output {k} against NumPy's")
    numeric = central_differences(case, backend, arrays, weights)
    for k, (got, want) in enumerate(zip(grads, numeric)):
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6,
                                       err_msg=f"{case.name} on {backend}: gradient of input {k} "
                                               "against central differences")
    if backend == "torch" and case.torch_reference:
        reference = torch_gradients(case, arrays, weights)
        for k, (got, want) in enumerate(zip(grads, reference)):
            if want is not None:
                np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol,
                                           err_msg=f"{case.name}: gradient of input {k} against "
                                                   "torch.autograd")
