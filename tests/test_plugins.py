"""Backend discovery through pluggy: entry points, run-time registration, the CLI."""

import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import _plugins


def test_builtin_backends_are_discovered_from_entry_points():
    infos = {info.name: info for info in ag.backends()}
    for name in ("numpy", "array_api_strict"):
        assert infos[name].available, infos[name].reason
        assert infos[name].version and infos[name].devices
    assert infos["numpy"].version == np.__version__


def _fake_entry_points(monkeypatch, entries):
    """Make importlib.metadata report ``entries`` in group ``arraygrad`` (no install needed)."""
    import importlib.metadata

    class EntryPoint:
        def __init__(self, name, loader):
            self.name, self._loader = name, loader

        def load(self):
            return self._loader()

    def entry_points(group=None, **_):
        assert group == "arraygrad"
        return [EntryPoint(name, loader) for name, loader in entries.items()]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    registry = _plugins._Registry()
    monkeypatch.setattr(_plugins, "registry", registry)
    return registry


def _stub_plugin(name):
    plugin = types.SimpleNamespace()

    @ag.hookimpl
    def arraygrad_backends():
        return [name]

    @ag.hookimpl
    def arraygrad_namespace(backend):
        if backend == name:
            raise ImportError(f"No module named '{name}_library'")

    plugin.arraygrad_backends = arraygrad_backends
    plugin.arraygrad_namespace = arraygrad_namespace
    return plugin


def test_one_broken_entry_point_never_stops_the_others(monkeypatch):
    def broken():
        raise RuntimeError("this plugin is broken on purpose")

    registry = _fake_entry_points(monkeypatch, {
        "good": lambda: _stub_plugin("good"), "bad": broken,
        "numpy": lambda: __import__("arraygrad_plugins.numpy", fromlist=["x"])})
    infos = {info.name: info for info in _plugins.backends()}
    assert infos["numpy"].available
    assert not infos["bad"].available and "broken on purpose" in infos["bad"].reason
    assert not infos["good"].available
    assert "No module named 'good_library'" in infos["good"].reason
    with pytest.raises(ag.BackendUnavailable, match="good_library"):
        registry.get("good").raw


def test_register_backend_at_run_time_and_name_clashes(monkeypatch):
    registry = _fake_entry_points(monkeypatch, {})
    registry.register(_stub_plugin("extra"))
    assert "extra" in registry.backends
    with pytest.raises(ag.BackendError, match="already registered"):
        registry.register(_stub_plugin("extra"))
    with pytest.raises(ag.BackendError, match="no backend named 'missing'"):
        registry.get("missing")


@pytest.mark.parametrize("library", ["torch", "jax", "dask", "cupy"])
def test_loading_a_plugin_does_not_import_its_library(library):
    """Plugins import their library on first use, so an installed but slow (or broken) library
    costs nothing to a user of another backend."""
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        import arraygrad as ag
        ag.registry.ensure_loaded()
        assert {library!r} in ag.registry.backends, sorted(ag.registry.backends)
        x = ag.Variable(np.ones(3), requires_grad=True)
        ag.namespace("numpy").sum(x * x).backward()
        assert {library!r} not in sys.modules, "the {library} plugin imported {library} eagerly"
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_to_numpy_falls_back_to_the_numpy_plugin_and_else_says_which_hook_is_missing(
        monkeypatch):
    registry = _fake_entry_points(monkeypatch, {"plain": lambda: _stub_plugin("plain")})
    with pytest.raises(ag.BackendError, match="arraygrad_to_numpy"):
        registry.get("plain").to_numpy([1.0, 2.0])
    registry.register(__import__("arraygrad_plugins.numpy", fromlist=["x"]))
    converted = registry.get("plain").to_numpy([1.0, 2.0])
    assert isinstance(converted, np.ndarray) and converted.tolist() == [1.0, 2.0]


def test_unowned_objects_give_a_clear_error():
    with pytest.raises(ag.BackendError, match="no registered backend owns"):
        ag.Variable(object())


def test_cli_lists_backends_with_versions_and_devices():
    done = subprocess.run([sys.executable, "-m", "arraygrad.cli", "backends"],
                          capture_output=True, text=True, check=True)
    lines = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert "available" in lines["numpy"] and np.__version__ in lines["numpy"]
    assert "cpu" in lines["numpy"]
    assert "available" in lines["array_api_strict"]
