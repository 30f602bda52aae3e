"""Shared fixtures: the built-in backends, and a guard that no test leaks grad mode."""

import os

# SciPy and scikit-learn read SCIPY_ARRAY_API once, at their first import: set it before any
# test module (Dask's, say) can import them, so that the interop tests pass in any order.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

import arraygrad as ag  # noqa: E402

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=10, deadline=None)
settings.register_profile("intense", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

BUILTIN_BACKENDS = ["numpy", "array_api_strict"]


class Backend:
    """A backend under test: its name, raw namespace, differentiable namespace, host helpers."""

    def __init__(self, name):
        self.name = name
        self.impl = ag.get_backend(name)
        self.raw = self.impl.raw
        self.xp = self.impl.ns

    def array(self, values, dtype=None):
        """A raw backend array from Python or NumPy values (float64 unless told)."""
        values = np.asarray(values, dtype=dtype or np.float64)
        return self.raw.asarray(values)

    def variable(self, values, requires_grad=True, dtype=None):
        return ag.Variable(self.array(values, dtype), requires_grad=requires_grad)

    def host(self, value):
        """NumPy values of a Variable or raw array, for assertions."""
        data = value.data if isinstance(value, ag.Variable) else value
        return np.asarray(self.impl.to_numpy(data))

    def __repr__(self):
        return self.name


@pytest.fixture(params=BUILTIN_BACKENDS)
def backend(request):
    return Backend(request.param)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def grad_mode_is_restored():
    """Fail any test that leaves grad recording switched off (MyGrad does the same)."""
    yield
    assert ag.is_grad_enabled(), "the test left grad mode disabled"
