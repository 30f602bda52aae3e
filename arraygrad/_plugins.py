"""The plugin manager: discovers backend plugins and answers questions about backends."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import sys
import threading
from typing import Any

import pluggy

from . import hookspecs
from .errors import BackendError, BackendUnavailable

hookimpl = pluggy.HookimplMarker("arraygrad")
"""Marker for the hook implementations of a backend plugin (``@arraygrad.hookimpl``)."""

ENTRY_POINT_GROUP = "arraygrad"

DEFAULT_TOLERANCES = {
    "float32": (1e-4, 1e-5),
    "float64": (1e-7, 1e-9),
    "complex64": (1e-4, 1e-5),
    "complex128": (1e-7, 1e-9),
}
"""``(rtol, atol)`` per dtype for backends whose plugin gives none."""

DEFAULT_CAPABILITIES = {"inplace": True, "data_dependent_shapes": True, "float64": True,
                        "host_reads": True, "reuse_unshared": False}
"""Capabilities assumed for backends whose plugin does not mention them."""


@dataclasses.dataclass(frozen=True)
class BackendInfo:
    """What ``arraygrad backends`` prints for one backend."""

    name: str
    available: bool
    reason: str = ""
    version: str = ""
    devices: tuple = ()
    plugin: str = ""


class Backend:
    """One registered backend: its raw namespace, its differentiable namespace, its facts."""

    def __init__(self, name: str, plugin: Any, hook):
        self.name = name
        self.plugin = plugin
        self._hook = hook
        self._raw = None
        self._ns = None
        self._plain_types: set[type] = set()
        self._fixers: dict = {}  # {type: the hook implementation that coerced it}
        self.operators = None  # set with the namespace: the functions behind Variable's operators
        self._inexact: dict = {}  # dtype -> floating or complex, cached
        self._index_helper = None  # its plugin's arraygrad_get_index, False if none: found once
        self._lock = threading.Lock()

    def __repr__(self):
        return f"<arraygrad backend {self.name!r}>"

    def _ask(self, hook_caller, **kwargs):
        return _first_answer(hook_caller, {"backend": self.name, **kwargs}, self.plugin)

    # The raw namespace is imported on first use, so a missing library costs nothing until then.
    @property
    def raw(self):
        if self._raw is None:
            try:
                raw = self._ask(self._hook.arraygrad_namespace)
            except Exception as exc:  # a plugin's import failure becomes "not available"
                raise BackendUnavailable(
                    f"backend {self.name!r} is not available: {type(exc).__name__}: {exc}"
                ) from exc
            if raw is None:
                raise BackendUnavailable(
                    f"backend {self.name!r} is not available: its plugin returned no namespace"
                )
            self._raw = raw
        return self._raw

    @property
    def ns(self):
        """The differentiable namespace over this backend (built once)."""
        if self._ns is None:
            with self._lock:
                if self._ns is None:
                    from ._namespace import build_namespace

                    self._ns = build_namespace(self)
        return self._ns

    def coerce(self, array):
        """Return ``array`` as a proper backend array (NumPy scalars become 0-d arrays)."""
        kind = type(array)
        if kind in self._plain_types:
            return array
        hook = self._hook.arraygrad_coerce
        kwargs = {"backend": self.name, "array": array}
        fixer = self._fixers.get(kind)  # the plugin that fixed this type before, asked first
        if fixer is not None:
            fixed = _ask_one(fixer, hook.name, kwargs, self.plugin)
            if fixed is not None:
                return fixed
        answered = []
        fixed = _first_answer(hook, kwargs, self.plugin, answered)
        if fixed is None:
            self._plain_types.add(kind)
            return array
        self._fixers[kind] = answered[0]
        return fixed

    def is_inexact(self, dtype) -> bool:
        """Whether ``dtype`` is floating or complex: whether values of it can carry gradients."""
        try:
            return self._inexact[dtype]
        except KeyError:
            answer = self._inexact[dtype] = bool(
                self.raw.isdtype(dtype, ("real floating", "complex floating")))
            return answer

    def set_index(self, array, key, value):
        """``array`` (which arraygrad owns) with ``array[key] = value``."""
        array = self.coerce(array)  # 0-d arithmetic gives NumPy scalars, which refuse assignment
        result = self._ask(self._hook.arraygrad_set_index, array=array, key=key, value=value)
        if result is None:
            array[key] = value
            return array
        return result

    @property
    def raw_special(self):
        """The backend's raw special functions (``scipy.special`` names), or None."""
        return self._ask(self._hook.arraygrad_special)

    def get_index(self, array, key):
        """``array[key]``, through the backend's own plugin where it helps its library with
        keys the standard allows (torch's negative steps). Whether it implements the hook is
        found once: indexing is on the per-op path, and most backends need no help."""
        helper = self._index_helper
        if helper is None:
            helpers = [impl for impl in self._hook.arraygrad_get_index.get_hookimpls()
                       if impl.plugin is self.plugin]
            helper = self._index_helper = helpers[0] if helpers else False
        if helper:
            result = _ask_one(helper, "arraygrad_get_index",
                              {"backend": self.name, "array": array, "key": key}, self.plugin)
            if result is not None:
                return result
        return array[key]

    def to_numpy(self, array):
        result = self._ask(self._hook.arraygrad_to_numpy, array=array)
        if result is None:
            raise BackendError(
                f"no plugin converts arrays of backend {self.name!r} to NumPy: implement the hook "
                "arraygrad_to_numpy in its plugin (the NumPy plugin converts any array that "
                "numpy.asarray accepts, when it is installed)")
        return result

    def tolerances(self, dtype: str) -> tuple[float, float]:
        answer = self._ask(self._hook.arraygrad_tolerances, dtype=dtype)
        return tuple(answer) if answer is not None else DEFAULT_TOLERANCES.get(dtype, (1e-6, 1e-8))

    def capabilities(self) -> dict[str, bool]:
        answer = self._ask(self._hook.arraygrad_capabilities) or {}
        return {**DEFAULT_CAPABILITIES, **answer}

    def version(self) -> str:
        answer = self._ask(self._hook.arraygrad_version)
        if answer is None:
            module = sys.modules.get(getattr(self.raw, "__name__", ""), None)
            answer = getattr(module, "__version__", "")
        return str(answer)

    def devices(self) -> tuple:
        info = getattr(self.raw, "__array_namespace_info__", None)
        return tuple(info().devices()) if info is not None else ()

    def rule_override(self, op: str):
        return self._ask(self._hook.arraygrad_rule_override, op=op)


class _Registry:
    """Holds the pluggy manager, the backends by name, and plugins that failed to load."""

    def __init__(self):
        self.pm = pluggy.PluginManager("arraygrad")
        self.pm.add_hookspecs(hookspecs)
        self.backends: dict[str, Backend] = {}
        self.broken: dict[str, str] = {}  # plugin name -> reason
        self._by_type: dict[type, Backend | None] = {}
        self._loaded = False
        self._lock = threading.RLock()

    def ensure_loaded(self):
        if not self._loaded:
            with self._lock:
                if not self._loaded:
                    self._loaded = True
                    self._load_entry_points()

    def _load_entry_points(self):
        # pluggy's load_setuptools_entrypoints stops at the first broken plugin; load each alone.
        for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                plugin = entry_point.load()
            except Exception as exc:
                self.broken[entry_point.name] = f"import failed: {type(exc).__name__}: {exc}"
                continue
            self.register(plugin, name=entry_point.name, from_entry_point=True)

    def register(self, plugin: Any, name: str | None = None, from_entry_point: bool = False):
        with self._lock:
            if not from_entry_point:
                self.ensure_loaded()
            label = name or getattr(plugin, "__name__", None) or type(plugin).__name__
            try:
                self.pm.register(plugin, name=label)
                self.pm.check_pending()
                provides = getattr(plugin, "arraygrad_backends", None)
                names = _validated_names(provides()) if provides is not None else []
            except Exception as exc:
                if self.pm.is_registered(plugin):
                    self.pm.unregister(plugin)
                self.broken[label] = f"{type(exc).__name__}: {exc}"
                if from_entry_point:
                    return None
                raise BackendError(f"plugin {label!r} is broken: {exc}") from exc
            clashes = [n for n in names if n in self.backends]
            if clashes:
                self.pm.unregister(plugin)
                reason = f"backend name(s) {clashes} already registered by another plugin"
                self.broken[label] = reason
                if from_entry_point:
                    return None
                raise BackendError(f"plugin {label!r}: {reason}")
            for backend_name in names:
                self.backends[backend_name] = Backend(backend_name, plugin, self.pm.hook)
            self._forget_answers()
            return plugin

    def disable(self, plugin: Any, reason: str):
        """Report ``plugin`` as broken with ``reason``; drop it and its backends."""
        with self._lock:
            label = self.pm.get_name(plugin)
            if label is None:
                return  # dropped already
            self.pm.unregister(plugin)
            self.broken[label] = reason
            for name, backend in list(self.backends.items()):
                if backend.plugin is plugin:
                    del self.backends[name]
            self._forget_answers()

    def _forget_answers(self):
        """Drop the cached answers of plugins (owners, coercions): the plugins changed."""
        from .rules import forget_reusable_types

        forget_reusable_types()
        self._by_type.clear()
        for backend in self.backends.values():
            backend._plain_types.clear()
            backend._fixers.clear()

    def get(self, name: str) -> Backend:
        self.ensure_loaded()
        try:
            return self.backends[name]
        except KeyError:
            known = ", ".join(sorted(self.backends)) or "none"
            raise BackendError(
                f"no backend named {name!r} is registered (registered: {known}); "
                "install its plugin or call arraygrad.register_backend(plugin)"
            ) from None

    def of(self, array: Any) -> Backend | None:
        """Return the backend owning ``array``, or None; cached per type."""
        kind = type(array)
        try:
            return self._by_type[kind]
        except KeyError:
            pass
        self.ensure_loaded()
        name = _first_answer(self.pm.hook.arraygrad_owns, {"array": array})
        backend = self.backends.get(name) if isinstance(name, str) else None
        self._by_type[kind] = backend
        return backend


def _first_answer(hook_caller, kwargs, own_plugin=None, answered=None):
    """The first non-``None`` answer of the plugins to a hook, asked one by one in pluggy's
    order. A plugin that raises is reported broken and dropped, so that its bug never breaks
    another plugin's backends; only ``own_plugin``'s exceptions (the backend's own plugin, such
    as its namespace's ImportError) propagate. ``answered``, a list, receives the hook
    implementation that answered."""
    for impl in reversed(hook_caller.get_hookimpls()):
        answer = _ask_one(impl, hook_caller.name, kwargs, own_plugin)
        if answer is not None:
            if answered is not None:
                answered.append(impl)
            return answer
    return None


def _ask_one(impl, hook_name, kwargs, own_plugin):
    """One plugin's answer to a hook; ``None`` (and the plugin disabled) if it raises."""
    try:
        return impl.function(*[kwargs[name] for name in impl.argnames])
    except Exception as exc:
        if impl.plugin is own_plugin:
            raise
        registry.disable(impl.plugin, f"{hook_name} raised {type(exc).__name__}: {exc}")
        return None


def _validated_names(answer) -> list[str]:
    if not isinstance(answer, (list, tuple)) or not all(isinstance(n, str) and n for n in answer):
        raise TypeError(f"arraygrad_backends() must return a list of names, got {answer!r}")
    return list(answer)


registry = _Registry()


def register_backend(plugin: Any, name: str | None = None):
    """Register a backend plugin (a module or object with ``@hookimpl`` functions) at run time."""
    return registry.register(plugin, name=name)


def get_backend(name: str) -> Backend:
    """Return the registered backend called ``name``."""
    return registry.get(name)


def backends() -> list[BackendInfo]:
    """Return every registered backend with its availability, version and devices, and every
    plugin that failed to load with its reason."""
    registry.ensure_loaded()
    infos = []
    for name, backend in sorted(registry.backends.items()):
        label = registry.pm.get_name(backend.plugin) or ""
        try:
            infos.append(BackendInfo(name, True, "", backend.version(), backend.devices(), label))
        except Exception as exc:
            reason = str(exc).split(": ", 1)[-1] if isinstance(exc, BackendUnavailable) else f"{type(exc).__name__}: {exc}"
            infos.append(BackendInfo(name, False, reason, plugin=label))
    infos = [info for info in infos if info.name in registry.backends]  # dropped meanwhile
    for label, reason in sorted(registry.broken.items()):
        infos.append(BackendInfo(label, False, f"broken plugin: {reason}", plugin=label))
    return infos
