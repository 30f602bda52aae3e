"""The core never imports an array library: a pure-Python stub backend runs forward and
backward while numpy, torch, jax, cupy, dask and array_api_strict stay unimported."""

import subprocess
import sys
import textwrap

STUB = textwrap.dedent('''
    import sys, operator
    import arraygrad as ag

    class Array:
        """A 1-D float array of Python lists: just enough of the standard for this test."""
        dtype = "float64"
        device = "cpu"
        def __init__(self, values): self.values = list(values)
        shape = property(lambda self: (len(self.values),))
        ndim = property(lambda self: 1)
        size = property(lambda self: len(self.values))
        def _zip(self, other, f):
            other = other.values if isinstance(other, Array) else [other] * len(self.values)
            return Array(f(a, b) for a, b in zip(self.values, other))
        def __add__(self, other): return self._zip(other, operator.add)
        def __mul__(self, other): return self._zip(other, operator.mul)
        __radd__, __rmul__ = __add__, __mul__

    class Namespace:
        __name__ = "stub"
        __array_api_version__ = "2024.12"
        float64 = "float64"
        def asarray(self, a, dtype=None, device=None, copy=None):
            return Array(a.values if isinstance(a, Array) else a)
        def ones_like(self, a): return Array([1.0] * len(a.values)) if a.values else Array([1.0])
        def multiply(self, a, b): return a * b
        def add(self, a, b): return a + b
        def sum(self, a, axis=None, keepdims=False):
            return Array([sum(a.values)])
        def broadcast_to(self, a, shape): return Array(a.values * shape[0])
        def reshape(self, a, shape): return a
        def isdtype(self, dtype, kind): return True

    class Plugin:
        @ag.hookimpl
        def arraygrad_backend(self):
            return ag.BackendSpec(name="stub", arrays=(Array,), namespace=Namespace)

    ag.register_backend(Plugin())
    x = ag.Variable(Array([1.0, 2.0, 3.0]), requires_grad=True)
    xp = x.__array_namespace__()
    loss = xp.sum(x * x + x)
    loss.backward()
    assert x.grad.data.values == [3.0, 5.0, 7.0], x.grad.data.values
    loaded = [m for m in ("numpy", "torch", "jax", "cupy", "dask", "array_api_strict",
                          "array_api_compat") if m in sys.modules]
    assert not loaded, f"the core imported {loaded}"
    print("ok")
''')


def test_core_runs_a_stub_backend_without_importing_any_array_library():
    done = subprocess.run([sys.executable, "-c", STUB], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
