"""arraygrad calls its backends only as the standard's signatures allow: no option the standard
makes keyword-only is passed positionally (NumPy tolerates it; ndonnx, say, does not).

The backend ``numpy_strict_signature`` is NumPy through array-api-compat, with every function
of the standard checked against array-api-strict's signature (which declares the standard's
``/`` and ``*``) before it runs; the whole conformance table, forward mode and second order
included, then runs on it.
"""

import functools
import inspect

import array_api_compat.numpy as compat
import array_api_strict
import numpy as np
import pytest

import arraygrad as ag
from conformance.runner import run

NAME = "numpy_strict_signature"

# Earlier revisions of the standard that backends still follow: a call must bind to these
# too. expand_dims's axis was keyword-only up to 2023.12 (ndonnx keeps it so).
EARLIER = {"expand_dims": inspect.signature(lambda x, /, *, axis=0: None)}


class StrictArray(np.ndarray):
    """A NumPy array owned by this backend: the more derived class wins over ``numpy``'s."""


def _ours(value):
    """``value`` with every NumPy array or scalar in it made a StrictArray."""
    if isinstance(value, (np.ndarray, np.generic)) and type(value) is not StrictArray:
        return np.asarray(value).view(StrictArray)
    if isinstance(value, tuple):
        items = [_ours(item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [_ours(item) for item in value]
    return value


def _checked(function, name, signatures):
    """``function``, raising TypeError naming ``name`` for a call its signatures refuse."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        for signature in signatures:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"{name}() called against the standard's signature "
                                f"{name}{_bare(signature)}: {exc}") from None
        return _ours(function(*args, **kwargs))

    return call


def _bare(signature):
    return signature.replace(parameters=[p.replace(annotation=p.empty) for p in
                                         signature.parameters.values()],
                             return_annotation=signature.empty)


class Namespace:
    """``module``'s attributes; functions of ``standard`` check their calls against its
    signatures, and every function returns StrictArrays."""

    def __init__(self, module, standard, prefix=""):
        self._module, self._standard, self._prefix = module, standard, prefix

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if name in ("linalg", "fft") and not callable(value):
            value = Namespace(value, getattr(self._standard, name), f"{name}.")
        elif callable(value) and not isinstance(value, type):
            model = getattr(self._standard, name, None)
            signatures = [inspect.signature(model)] if callable(model) else []
            signatures += [EARLIER[name]] if name in EARLIER and not self._prefix else []
            value = _checked(value, self._prefix + name, signatures)
        setattr(self, name, value)  # built once per name
        return value


class Plugin:
    @ag.hookimpl
    def arraygrad_backend(self):
        import scipy.special

        return ag.BackendSpec(
            name=NAME, library="numpy", arrays=(StrictArray,),
            namespace=lambda: Namespace(compat, array_api_strict),
            special=lambda: Namespace(scipy.special, None), coerce=_coerce)


def _coerce(array):
    return None if type(array) is StrictArray else _ours(array)


@pytest.fixture(scope="module")
def backend():
    """The backend, registered for this module only."""
    plugin = Plugin()
    ag.register_backend(plugin, name=NAME)
    yield NAME
    ag.registry.unregister(plugin)


def test_the_namespace_enforces_the_standards_signatures(backend):
    xp = ag.get_backend(backend).raw
    x = xp.ones((2, 3))
    assert type(x) is StrictArray and type(xp.linalg.matrix_norm(x)) is StrictArray
    assert xp.expand_dims(x, axis=1).shape == (2, 1, 3)
    with pytest.raises(TypeError, match="expand_dims"):
        xp.expand_dims(x, 1)
    with pytest.raises(TypeError, match="sum"):
        xp.sum(x, 0)
    with pytest.raises(TypeError, match="fft.fft"):
        xp.fft.fft(x, 2)
    assert ag.Variable(x).backend == NAME


def test_every_case_calls_the_backend_as_the_standard_allows(backend):
    results, unavailable = run(backends=[backend], dtypes=["float64"], external_library=None,
                               allow_missing=True)
    assert not unavailable, unavailable
    failures = [f"{r.case.id}: {check}: {detail}" for r in results if r.status == "fail"
                for check, (status, detail, *_) in r.checks.items() if status == "fail"]
    assert not failures, "\n".join(failures)
    checked = {check for r in results for check, (status, *_) in r.checks.items()
               if status == "pass"}
    assert {"forward", "numerical", "second_order", "forward_mode"} <= checked
