"""Backend discovery through pluggy: entry points, run-time registration, the CLI."""

import re
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


def _stub_plugin(name, **facts):
    """A plugin declaring backend ``name``, whose library cannot be imported."""
    def missing_library():
        raise ImportError(f"No module named '{name}_library'")

    spec = ag.BackendSpec(**{"name": name, "arrays": (f"{name}_library:Array",),
                             "namespace": missing_library, **facts})
    return types.SimpleNamespace(arraygrad_backend=ag.hookimpl(lambda: spec))


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


def test_two_plugin_classes_of_one_name_register_and_a_plugin_registers_once(monkeypatch):
    registry = _fake_entry_points(monkeypatch, {})

    def plugin_class(module, backend):
        plugin = _stub_plugin(backend)
        return type("Plugin", (), {"__module__": module,
                                   "arraygrad_backend": staticmethod(plugin.arraygrad_backend)})

    first, second = plugin_class("lib_one", "one"), plugin_class("lib_two", "two")
    registry.register(first)
    registry.register(second)  # pluggy's name was "Plugin" for both: a clash
    assert {"one", "two"} <= set(registry.backends) and not registry.broken
    assert registry.pm.get_name(second) == "lib_two:Plugin"
    with pytest.raises(ag.BackendError, match=re.escape(
            "plugin 'lib_one:Plugin' is already registered (backends: one); register it once")):
        registry.register(first)
    with pytest.raises(ag.BackendError, match="a plugin named 'lib_one:Plugin' is already "
                                              "registered .*: pass another name"):
        registry.register(_stub_plugin("three"), name="lib_one:Plugin")
    assert not registry.broken and "three" not in registry.backends


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


def test_to_numpy_is_numpy_asarray_unless_the_spec_says_otherwise(monkeypatch):
    registry = _fake_entry_points(monkeypatch, {
        "plain": lambda: _stub_plugin("plain"),
        "own": lambda: _stub_plugin("own", to_numpy=lambda a: np.asarray(a) * 2)})
    assert registry.get("own").to_numpy([1.0, 2.0]).tolist() == [2.0, 4.0]
    with pytest.raises(ag.BackendError, match="declares no to_numpy"):
        registry.get("plain").to_numpy([1.0, 2.0])
    registry.register(__import__("arraygrad_plugins.numpy", fromlist=["x"]))
    converted = registry.get("plain").to_numpy([1.0, 2.0])
    assert isinstance(converted, np.ndarray) and converted.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("facts, message", [
    ({"capabilities": {"complex": False}}, "unknown capabilities ['complex']"),
    ({"dtypes": ("float64", "complex256")}, "unknown dtype names ['complex256']"),
    ({"tolerances": {"float46": (1e-3, 1e-3)}}, "unknown dtype names ['float46']"),
    ({"tolerances": {"float32": (float("inf"), 1e-5)}}, "float32: (inf, 1e-05)"),
    ({"tolerances": {"float64": (1e-7, float("nan"))}}, "finite numbers >= 0"),
    ({"tolerances": {"float64": (-1e-7, 1e-9)}}, "float64: (-1e-07, 1e-09)"),
    ({"tolerances": {"float64": 1e-7}}, "(rtol, atol) pairs"),
    ({"arrays": ("numpy.ndarray",)}, "'module:Class'"),
    ({"name": ""}, "non-empty string"),
])
def test_a_spec_with_a_wrong_fact_is_refused_with_the_fact_named(facts, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        ag.BackendSpec(**{"name": "x", "arrays": ("x:Array",), "namespace": "x", **facts})


def test_a_plugin_answering_something_else_than_a_spec_is_broken(monkeypatch):
    registry = _fake_entry_points(monkeypatch, {})
    plugin = types.SimpleNamespace(arraygrad_backend=ag.hookimpl(lambda: ["numpy"]))
    with pytest.raises(ag.BackendError, match="must return an arraygrad.BackendSpec"):
        registry.register(plugin, name="old-style")
    assert "BackendSpec" in registry.broken["old-style"]


def test_the_most_derived_array_type_decides_the_owner(monkeypatch):
    """A subclass of another library's array belongs to the backend that names the subclass,
    whichever plugin registered first."""
    class Sub(np.ndarray):
        pass

    registry = _fake_entry_points(monkeypatch, {})
    registry.register(types.SimpleNamespace(arraygrad_backend=ag.hookimpl(
        lambda: ag.BackendSpec(name="sub", arrays=(Sub,), namespace="array_api_compat.numpy"))))
    registry.register(__import__("arraygrad_plugins.numpy", fromlist=["x"]))
    assert registry.of(np.zeros(2).view(Sub)).name == "sub"
    assert registry.of(np.zeros(2)).name == "numpy" and registry.of(np.float64(1)).name == "numpy"
    assert registry.of([1.0]) is None


def test_an_array_type_that_cannot_be_found_drops_only_its_plugin(monkeypatch):
    registry = _fake_entry_points(monkeypatch, {})
    registry.register(__import__("arraygrad_plugins.numpy", fromlist=["x"]))
    registry.register(_stub_plugin("typo", arrays=("numpy:ndarary",)), name="typo-plugin")
    assert registry.of(np.zeros(2)).name == "numpy"
    assert "typo" not in registry.backends
    assert "'numpy:ndarary' cannot be found" in registry.broken["typo-plugin"]


def test_a_spec_declares_facts_without_importing_its_library():
    spec = __import__("arraygrad_plugins.torch", fromlist=["x"]).arraygrad_backend()
    assert spec.name == "torch" and spec.arrays == ("torch:Tensor",)
    assert spec.tolerances["float16"] == (1e-2, 1e-3)


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


def test_python_dash_m_arraygrad_is_the_command():
    """``python -m arraygrad`` runs the ``arraygrad`` command, for environments whose scripts
    directory is not on the PATH."""
    done = subprocess.run([sys.executable, "-m", "arraygrad", "backends"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "numpy" in done.stdout and "array_api_strict" in done.stdout
    done = subprocess.run([sys.executable, "-m", "arraygrad", "nonsense"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_every_capability_is_documented_for_plugin_authors():
    """docs/plugins.md's table of capabilities names each flag a backend may declare, with its
    default: a flag added to the code without a line there is a flag no plugin author can know."""
    from pathlib import Path

    table = (Path(__file__).resolve().parents[1] / "docs" / "plugins.md").read_text()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)`[^\n]*", table, re.M)}
    for flag, default in ag.DEFAULT_CAPABILITIES.items():
        assert flag in rows, f"docs/plugins.md does not document the capability {flag!r}"
        if default is False:
            assert "(default `False`)" in rows[flag], rows[flag][:80]
