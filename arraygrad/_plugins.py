"""The plugin manager: discovers backend plugins and answers questions about backends."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import sys
import threading
import types
from typing import Any

import pluggy

from . import hookspecs, rules
from .errors import BackendError, BackendUnavailable, GradientError
from .hookspecs import BackendSpec, load

hookimpl = pluggy.HookimplMarker("arraygrad")
"""Marker for the hook implementations of a backend plugin (``@arraygrad.hookimpl``)."""

ENTRY_POINT_GROUP = "arraygrad"

DEFAULT_TOLERANCES = hookspecs.TOLERANCES
DEFAULT_CAPABILITIES = hookspecs.CAPABILITIES


@dataclasses.dataclass(frozen=True)
class BackendInfo:
    """What ``arraygrad backends`` prints for one backend."""

    name: str
    available: bool
    reason: str = ""
    version: str = ""
    devices: tuple = ()
    plugin: str = ""


def _default_get_index(array, key):
    return array[key]


class Backend:
    """One registered backend: its spec, its raw and differentiable namespaces (made on first
    use), and the answers derived from its spec."""

    namespace_factory = None
    """Builds the differentiable namespace of a backend; installed by the namespace layer
    (which sits above this one) when it is imported."""

    def __init__(self, spec: BackendSpec, plugin: Any, hook):
        self.spec = spec
        self.name = spec.name
        self.plugin = plugin
        self._hook = hook
        self._raw = None
        self._ns = None
        self._plain_types: set[type] = set()  # types coerce leaves alone, found once each
        self.operators = None  # set with the namespace: the functions behind Variable's operators
        self._inexact: dict = {}  # dtype -> floating or complex, cached
        self._capabilities = None
        self._device_of = None  # spec.device_of, imported where it is "module:function"
        self.get_index = spec.get_index or _default_get_index  # on the per-op path: no lookup
        self.tracked = spec.tracked
        self.dtypes = tuple(spec.dtypes)
        self._lock = threading.Lock()
        self.from_entry_point = False  # else registered at run time (register_backend)

    def __repr__(self):
        return f"<arraygrad backend {self.name!r}>"

    # The raw namespace is imported on first use, so a missing library costs nothing until then.
    @property
    def raw(self):
        if self._raw is None:
            try:
                raw = load(self.spec.namespace)
            except Exception as exc:  # a plugin's import failure becomes "not available"
                raise BackendUnavailable(
                    f"backend {self.name!r} is not available: {type(exc).__name__}: {exc}"
                ) from exc
            if raw is None:
                raise BackendUnavailable(
                    f"backend {self.name!r} is not available: its plugin returned no namespace"
                )
            if not callable(getattr(raw, "asarray", None)):
                raise BackendUnavailable(
                    f"backend {self.name!r} is not available: its plugin's namespace is "
                    f"{raw!r:.60}, which has no asarray: not an Array API namespace")
            self._raw = raw
        return self._raw

    @property
    def ns(self):
        """The differentiable namespace over this backend (built once)."""
        if self._ns is None:
            with self._lock:
                if self._ns is None:
                    if Backend.namespace_factory is None:
                        raise BackendError("import arraygrad (the package) before asking a "
                                           "backend for its differentiable namespace")
                    self._ns = Backend.namespace_factory(self)
        return self._ns

    def coerce(self, array):
        """Return ``array`` as a proper backend array (NumPy scalars become 0-d arrays)."""
        kind = type(array)
        if kind in self._plain_types:
            return array
        fix = self.spec.coerce
        fixed = fix(array) if fix is not None else None
        if fixed is None:
            self._plain_types.add(kind)
            return array
        return fixed

    def untracked(self, array, where: str):
        """``array``, refused where its library's own autograd records it (torch's
        ``requires_grad``): its gradient would go into a graph arraygrad never sees."""
        if self.tracked is not None and self.tracked(array):
            raise GradientError(
                f"{where} got a {self.name} array that {self.name}'s own autograd tracks "
                "(requires_grad=True): arraygrad records the graph itself, and the gradient "
                "meant for it would be lost. Pass array.detach(), wrapped in "
                "arraygrad.Variable(..., requires_grad=True) if you want its gradient.")
        return array

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
        if self.spec.set_index is not None:
            return self.spec.set_index(array, key, value)
        array[key] = value
        return array

    def device(self, array):
        """The device of ``array``: the spec's ``device_of``, else the standard's
        ``array.device``; None (the library's default device) where the array has none."""
        declared = self.spec.device_of
        if declared is None:
            return getattr(array, "device", None)
        if self._device_of is None:  # "module:function" is imported on first use
            self._device_of = declared if callable(declared) else load(declared)
        return self._device_of(array)

    @property
    def raw_special(self):
        """The backend's raw special functions (``scipy.special`` names), or None."""
        if self.spec.special is None:
            return None
        try:
            return load(self.spec.special)
        except ImportError:  # an optional library (SciPy for NumPy): no special functions
            return None

    def kernel(self, name: str):
        """The backend's own function for a kernel capability the standard lacks
        (``solve_triangular``), loaded on first use, or None: not declared, or an ImportError
        (an optional library, SciPy for NumPy)."""
        declared = self.capabilities().get(name)
        if not declared:
            return None
        try:
            return load(declared)
        except ImportError:
            return None

    def to_numpy(self, array):
        """A host NumPy array of ``array``'s values (comparisons only): the spec's ``to_numpy``,
        else NumPy's ``asarray``; an object array is refused, naming the hook to declare."""
        if self.spec.to_numpy is not None:
            host = self.spec.to_numpy(array)
            if getattr(host, "dtype", None) == object:
                raise BackendError(f"backend {self.name!r}: its to_numpy returned an object "
                                   f"array for a {type(array).__name__}: return its values")
            return host
        numpy = registry.backends.get("numpy")  # the core reaches NumPy through its plugin too
        if numpy is None:
            raise BackendError(
                f"backend {self.name!r} declares no to_numpy, and no 'numpy' backend is "
                "registered to convert its arrays: give its BackendSpec a to_numpy")
        host = numpy.raw.asarray(array)
        if host.dtype == object:
            raise BackendError(
                f"backend {self.name!r}: numpy.asarray gave an object array for a "
                f"{type(array).__name__}, not its values: give its BackendSpec a to_numpy "
                "(a function returning a host NumPy array of the array's values)")
        return host

    def tolerances(self, dtype: str) -> tuple[float, float]:
        answer = self.spec.tolerances.get(dtype)
        return tuple(answer) if answer is not None else DEFAULT_TOLERANCES.get(dtype, (1e-6, 1e-8))

    def capabilities(self) -> dict[str, bool]:
        answer = self._capabilities
        if answer is None:
            declared = self.spec.capabilities
            declared = declared() if callable(declared) else declared
            unknown = sorted(set(declared) - set(DEFAULT_CAPABILITIES))
            if unknown:
                raise BackendError(f"backend {self.name!r} declares unknown capabilities "
                                   f"{unknown} (known: {sorted(DEFAULT_CAPABILITIES)})")
            answer = {**DEFAULT_CAPABILITIES, **declared}
            if not callable(self.spec.capabilities):  # a function may answer otherwise later
                self._capabilities = answer
        return answer

    def version(self) -> str:
        name = self.spec.library or getattr(self.raw, "__name__", "")
        module = sys.modules.get(name)
        if module is None and name:
            try:
                module = importlib.import_module(name)
            except ImportError:  # a namespace object named after no module: no version to give
                if self.spec.library:
                    raise
        return str(getattr(module, "__version__", ""))

    def devices(self) -> tuple:
        info = getattr(self.raw, "__array_namespace_info__", None)
        return tuple(info().devices()) if info is not None else ()

    def overrides_rules(self) -> bool:
        """Whether this backend's plugin implements ``arraygrad_rule_override`` (asked for
        every op when the namespace is built)."""
        return any(impl.plugin is self.plugin
                   for impl in self._hook.arraygrad_rule_override.get_hookimpls())

    def rule_override(self, op: str):
        """The rule of ``op`` that this backend's plugin puts in place of the built-in one."""
        rule = self.spec.rules.get(op)
        if rule is None:
            for impl in self._hook.arraygrad_rule_override.get_hookimpls():
                if impl.plugin is self.plugin:
                    try:
                        rule = _call(impl, {"backend": self.name, "op": op})
                    except Exception as exc:  # broken, as a raising arraygrad_backend makes it
                        reason = (f"arraygrad_rule_override(backend={self.name!r}, op={op!r}) "
                                  f"raised {type(exc).__name__}: {exc}")
                        label = registry.pm.get_name(self.plugin) or self.name
                        registry.disable(self.plugin, reason)
                        raise BackendUnavailable(f"backend {self.name!r} is not available: its "
                                                 f"plugin {label!r} is broken: {reason}") from exc
        if rule is not None and not isinstance(rule, rules.Rule):
            raise BackendError(
                f"backend {self.name!r}: its plugin's rule override for {op!r} is a "
                f"{type(rule).__name__}, not an arraygrad.rules.Rule (return None to keep the "
                "built-in rule)")
        return rule


class _Registry:
    """Holds the pluggy manager, the backends by name, and plugins that failed to load."""

    def __init__(self):
        self.pm = pluggy.PluginManager("arraygrad")
        self.pm.add_hookspecs(hookspecs)
        self.backends: dict[str, Backend] = {}
        self.broken: dict[str, str] = {}  # plugin name -> reason
        self.dropped: dict[str, str] = {}  # backend name -> why its plugin was dropped
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
        # arraygrad's own plugins first: a third-party plugin claiming an array type they own
        # (NumPy's ndarray) is then the one reported broken, never the built-in backend.
        for entry_point in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP),
                                  key=lambda e: not getattr(e, "value", "").startswith(
                                      "arraygrad_plugins.")):
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
                if self.pm.is_registered(plugin):
                    mine = sorted(n for n, b in self.backends.items() if b.plugin is plugin)
                    raise BackendError(
                        f"plugin {self.pm.get_name(plugin)!r} is already registered (backends: "
                        f"{', '.join(mine) or 'none'}); register it once, or call "
                        "arraygrad.registry.unregister(plugin) first")
                if name is not None and self.pm.has_plugin(name):
                    raise BackendError(f"a plugin named {name!r} is already registered "
                                       f"({self.pm.get_plugin(name)!r}): pass another name")
            label = name or self._label(plugin)
            try:
                self.pm.register(plugin, name=label)
                self.pm.check_pending()
                impls = [impl for impl in self.pm.hook.arraygrad_backend.get_hookimpls()
                         if impl.plugin is plugin]
                if not impls:
                    raise TypeError(_no_backend_hook(plugin))
                specs = _validated_specs([_call(impl, {}) for impl in impls])
            except Exception as exc:
                if self.pm.is_registered(plugin):
                    self.pm.unregister(plugin)
                self.broken[label] = f"{type(exc).__name__}: {exc}"
                if from_entry_point:
                    return None
                raise BackendError(f"plugin {label!r} is broken: {exc}") from exc
            clashes = [spec.name for spec in specs if spec.name in self.backends]
            taken = {a: b.name for b in self.backends.values() for a in b.spec.arrays}
            owned = [(_type_name(a), taken[a]) for spec in specs for a in spec.arrays
                     if a in taken]
            if clashes or owned:
                self.pm.unregister(plugin)
                reason = (f"backend name(s) {clashes} already registered by another plugin"
                          if clashes else "array type(s) already owned by another backend: " +
                          ", ".join(f"{t} (by {b!r})" for t, b in owned) + "; declare a "
                          "subclass of your own (the more derived class wins)")
                self.broken[label] = reason
                if from_entry_point:
                    return None
                raise BackendError(f"plugin {label!r}: {reason}")
            for spec in specs:
                self.dropped.pop(spec.name, None)
                self.backends[spec.name] = Backend(spec, plugin, self.pm.hook)
                self.backends[spec.name].from_entry_point = from_entry_point
            self._forget_answers()
            return plugin

    def _label(self, plugin: Any) -> str:
        """A name for a plugin registered without one, unique in pluggy's manager: a module's
        name, ``module:Class`` for a class (two plugin classes called ``Plugin`` in two modules
        do not clash), ``module:Class()`` for an instance; ``@0x...`` (its id) where even that
        is taken."""
        if isinstance(plugin, types.ModuleType):
            label = plugin.__name__
        else:
            kind = plugin if isinstance(plugin, type) else type(plugin)
            label = (f"{kind.__module__}:{kind.__qualname__}"
                     f"{'' if isinstance(plugin, type) else '()'}")
        return f"{label}@{id(plugin):#x}" if self.pm.has_plugin(label) else label

    def unregister(self, plugin: Any):
        """Remove ``plugin`` and its backends (a test's temporary backend, say)."""
        with self._lock:
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            for name, backend in list(self.backends.items()):
                if backend.plugin is plugin:
                    del self.backends[name]
            self._forget_answers()

    def disable(self, plugin: Any, reason: str):
        """Report ``plugin`` as broken with ``reason``; drop it and its backends."""
        with self._lock:
            label = self.pm.get_name(plugin)
            if label is None:
                return  # dropped already
            self.dropped.update({name: f"its plugin {label!r} is broken: {reason}" for name, b
                                 in self.backends.items() if b.plugin is plugin})
            self.unregister(plugin)
            self.broken[label] = reason

    def _forget_answers(self):
        """Drop the answers cached from the plugins' specs (owners, coercions): they changed."""
        rules.forget_capabilities()
        self._by_type.clear()
        for backend in self.backends.values():
            backend._plain_types.clear()

    def get(self, name: str) -> Backend:
        self.ensure_loaded()
        try:
            return self.backends[name]
        except KeyError:
            if name in self.dropped:
                raise BackendUnavailable(f"backend {name!r} is not available: "
                                         f"{self.dropped[name]}") from None
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
        owners = [(cls, backend) for cls, backend in self._owner_classes()
                  if isinstance(array, cls)]
        # The most derived class wins: a subclass of another library's array type may be
        # a backend of its own (the example plugin's arrays subclass array-api-strict's).
        best = None
        for cls, backend in owners:
            if best is None or (issubclass(cls, best[0]) and cls is not best[0]):
                best = (cls, backend)
        backend = best[1] if best is not None else None
        self._by_type[kind] = backend
        return backend

    def _owner_classes(self):
        """``(class, backend)`` for every array type a spec names whose module is imported (an
        array of a library never imported cannot exist). A name that does not resolve is a
        broken plugin: it is dropped and reported."""
        found = []
        for backend in list(self.backends.values()):
            for name in backend.spec.arrays:
                if isinstance(name, type):
                    found.append((name, backend))
                    continue
                if name.partition(":")[0] not in sys.modules:
                    continue
                try:
                    cls = load(name)
                    if cls is None:  # made on first use of the namespace (the example plugin)
                        continue
                    if not isinstance(cls, type):
                        raise TypeError(f"{name!r} is {cls!r}, not a class")
                except Exception as exc:
                    self.disable(backend.plugin, f"its array type {name!r} cannot be found: "
                                                 f"{type(exc).__name__}: {exc}")
                    break
                found.append((cls, backend))
        owners = {}
        for cls, backend in list(found):
            first = owners.setdefault(cls, backend)
            if first is not backend:  # two backends name one class: neither may guess
                self.disable(backend.plugin, f"its array type {_type_name(cls)} is already "
                                             f"owned by backend {first.name!r}")
                found = [(c, b) for c, b in found if b is not backend]
        return found


def _type_name(array_type) -> str:
    """``"module:Class"`` of a declared array type (a class or that string)."""
    if isinstance(array_type, type):
        return f"{array_type.__module__}:{array_type.__qualname__}"
    return array_type


def _call(impl, kwargs):
    """One hook implementation's answer, with the arguments it takes (pluggy lets it take fewer
    than its specification)."""
    return impl.function(*[kwargs[name] for name in impl.argnames])


def _no_backend_hook(plugin) -> str:
    """Why ``plugin`` declares no backend, naming the objects inside it that would."""
    what = (f"module {plugin.__name__!r}" if isinstance(plugin, types.ModuleType) else
            f"{plugin!r}")
    message = f"{what} has no @hookimpl arraygrad_backend"
    if isinstance(plugin, types.ModuleType):
        inside = [name for name, value in vars(plugin).items() if not name.startswith("_")
                  and hasattr(getattr(value, "arraygrad_backend", None), "arraygrad_impl")]
        if inside:
            return (f"{message}; {', '.join(inside)} in it has one: name that object, "
                    f"'{plugin.__name__}:{inside[0]}' (--plugin MODULE:OBJECT), or "
                    f"arraygrad.register_backend({plugin.__name__}.{inside[0]})")
    return message + "; a plugin is a module or object with @arraygrad.hookimpl functions"


def _validated_specs(answers) -> list[BackendSpec]:
    specs = []
    for answer in answers:
        specs.extend(answer if isinstance(answer, (list, tuple)) else [answer])
    bad = [spec for spec in specs if not isinstance(spec, BackendSpec)]
    if bad or not specs:
        raise TypeError("arraygrad_backend() must return an arraygrad.BackendSpec or a list of "
                        f"them, got {bad[0] if bad else answers!r}")
    return specs


registry = _Registry()


def _backend_of_namespace(xp) -> Backend | None:
    return next((b for b in list(registry.backends.values()) if b._raw is xp), None)


# Rules ask about backends through this interface (they import nothing above them).
rules.backends.of_array = lambda array: registry.of(array)
rules.backends.of_namespace = _backend_of_namespace


def register_backend(plugin: Any, name: str | None = None):
    """Register a backend plugin (a module or object with ``@hookimpl`` functions) at run time,
    under ``name`` or, without one, its module's name (``module:Class`` for a class). Registering
    an object twice, or under a name already taken, is a :class:`BackendError`."""
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
            info = BackendInfo(name, True, "", backend.version(), backend.devices(), label)
            if backend._ns is None and backend.overrides_rules():
                # Its hook is asked op by op when the namespace is built, and a raising one
                # breaks the plugin: build it now (a few ms), so that the listing says so.
                # Backends without the hook keep their namespaces unbuilt.
                backend.ns
            infos.append(info)
        except Exception as exc:
            reason = str(exc).split(": ", 1)[-1] if isinstance(exc, BackendUnavailable) else f"{type(exc).__name__}: {exc}"
            infos.append(BackendInfo(name, False, reason, plugin=label))
    infos = [info for info in infos if info.name in registry.backends]  # dropped meanwhile
    for label, reason in sorted(registry.broken.items()):
        infos.append(BackendInfo(label, False, f"broken plugin: {reason}", plugin=label))
    return infos
