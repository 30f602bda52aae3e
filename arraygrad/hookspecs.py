"""The plugin contract: a backend is a :class:`BackendSpec`, a declaration of facts, returned by
the hook ``arraygrad_backend``; pluggy hooks remain for behaviour (rule overrides).

A plugin is a module or object with functions marked ``@arraygrad.hookimpl``, registered through
the ``arraygrad`` entry-point group or with :func:`arraygrad.register_backend`. It speaks only
for the backends it declares: arraygrad never asks a plugin about another plugin's backend.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from typing import Any, Callable, Mapping

import pluggy

hookspec = pluggy.HookspecMarker("arraygrad")

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128")
"""The dtypes of the standard, by name."""

CAPABILITIES = {"inplace": True, "data_dependent_shapes": True, "host_reads": True,
                "reuse_unshared": False, "matmul_sums": False, "solve_triangular": None,
                "scatter_add": None}
"""What a backend can do, and the value assumed where its spec does not say:

- ``inplace``: arrays are mutable (``x[key] = v`` works);
- ``data_dependent_shapes``: boolean masks, ``nonzero``, ``unique_*`` give known shapes;
- ``host_reads``: reading a value on the host (``bool(...)``) is cheap, so a rule may do it to
  pick a formula (not for a lazy graph, dask, or a device, CuPy);
- ``reuse_unshared``: arrays have NumPy's ``base`` (``None`` exactly when an array owns its
  memory) and ``flags.writeable``, so backward may overwrite one that nothing else refers to,
  and ``xp.exp(a - b)`` may compute into the temporary ``a - b`` (its ufunc's ``out=``);
- ``matmul_sums``: arrays have NumPy's ``flags.c_contiguous`` and ``dtype.char``, and a product
  with a vector of ones is faster than the library's sum, so backward sums a gradient over
  a block of adjacent axes that way (a bias' gradient, ``x - max(x, axis=1)``'s, and a batch of
  products for a middle block: ``x[:, None, :] - y[None]``'s);
- ``solve_triangular``: a kernel the standard lacks, declared as a function returning it or a
  ``"module:function"`` to import on first use (an ImportError means none, as for
  ``special``): ``solve_triangular(a, b, *, upper)`` is ``a^-1 b`` for ``a`` upper (or lower)
  triangular, of shape ``(..., n, n)``, and ``b`` of shape ``(..., n, k)``, batch axes
  broadcast; it may raise a ``LinAlgError`` for a singular ``a``. Rules with triangular
  factors (``cholesky``'s, ``qr``'s) use it; without it they call the standard's
  ``linalg.solve`` (the same values, an LU factorisation more);
- ``scatter_add``: a kernel the standard lacks, declared as ``solve_triangular`` is:
  ``scatter_add(size, positions, values)`` is a new 1-D array of ``size`` zeros of
  ``values``' dtype and device, with each of ``values`` (1-D) added at its position (1-D
  integers, repeats adding up). The gradients of gathers (``take``, integer-array indexing)
  use it; without it they sort, take running totals and search (the standard alone: 16 to 80
  times slower on NumPy).
"""

TOLERANCES = {
    "float32": (1e-4, 1e-5),
    "float64": (1e-7, 1e-9),
    "complex64": (1e-4, 1e-5),
    "complex128": (1e-7, 1e-9),
}
"""``(rtol, atol)`` per dtype for comparing gradients, where a spec gives none."""


@dataclasses.dataclass(frozen=True)
class BackendSpec:
    """What arraygrad needs to know about one array library. Strings name things to import on
    first use, so that declaring a backend never imports its library; where a fact depends on
    run time, a function may stand in for it (``namespace``, ``capabilities``, ``special``)."""

    name: str
    """The backend's name (``"numpy"``), unique across plugins."""
    arrays: tuple[str | type, ...]
    """The array types it owns, as ``"module:Class"`` (``"torch:Tensor"``), or classes where
    they are at hand. A name is looked up only once its module is imported; where two backends
    match an array, the more derived class wins (a subclass of another library's array may
    have a backend of its own)."""
    namespace: str | Callable[[], Any]
    """Its Array API namespace: a module to import, or a function returning it. Raise (an
    ``ImportError``...) with a readable reason when the library is unusable: the backend is
    then listed as "not available: <reason>"."""
    library: str = ""
    """The top-level module whose ``__version__`` is reported (default: the namespace's)."""
    to_numpy: Callable[[Any], Any] | None = None
    """A host NumPy array with an array's values (for comparisons only). Default: the NumPy
    backend's ``asarray`` (buffer protocol, ``__array__``, DLPack), through its plugin."""
    capabilities: Mapping[str, Any] | Callable[[], Mapping[str, Any]] = \
        dataclasses.field(default_factory=dict)
    """Flags of :data:`CAPABILITIES` that differ from the defaults (kernels such as
    ``solve_triangular``: how to load them), or a function giving them."""
    dtypes: tuple[str, ...] = DTYPES
    """The dtypes of the standard it has (float64, complex...): the others are not tested, nor
    the cases whose inputs are of them (``conj[2d]`` in float64 takes complex128)."""
    tolerances: Mapping[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    """``(rtol, atol)`` per dtype name where :data:`TOLERANCES` is too tight."""
    special: str | Callable[[], Any] | None = None
    """Its special functions under ``scipy.special``'s names (``erf``, ``gammaln``...), on raw
    arrays: a module to import or a function returning an object with them. An ImportError
    means none; arraygrad builds the differentiable ``xp.special`` from what is there."""
    coerce: Callable[[Any], Any] | None = None
    """A proper array from what the library returned instead of one (NumPy's scalars), or
    ``None`` where the value needs nothing (the answer is remembered per type)."""
    get_index: Callable[[Any, Any], Any] | None = None
    """``array[key]`` for keys the standard allows and the library refuses (torch: negative
    steps). Default: ``array[key]``."""
    set_index: Callable[[Any, Any, Any], Any] | None = None
    """``array`` with ``array[key] = value``, for an array arraygrad owns: a new array where
    arrays are immutable (JAX: ``array.at[key].set(value)``). Default: in place."""
    device_of: str | Callable[[Any], Any] | None = None
    """An array's device, for libraries whose arrays lack the standard's ``array.device``: a
    function, or ``"module:function"`` imported on first use. Its answer is what arraygrad
    passes back as ``device=`` (new arrays beside an input) and what ``Variable.device`` says;
    ``None`` means the library's default device. Default: ``array.device``."""
    rules: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Faster kernels with the same maths: :class:`arraygrad.rules.Rule` by function name. The
    conformance suite checks them exactly like the built-in rules. How to write one:
    docs/plugins.md, "Rule overrides"."""
    deviations: str | Callable[[], str] | None = None
    """Known failures of the conformance suite on this backend, shipped with the plugin:
    ``"package:file.txt"`` (a file in its package) or a function returning the text. Format:
    docs/conformance.md."""
    tracked: Callable[[Any], bool] | None = None
    """Whether an array is recorded by its library's own autograd (torch: ``requires_grad``):
    arraygrad refuses it, since gradients would flow into that graph unseen."""
    random_state: Callable[[], Any] | None = None
    """The state of the library's global random generators (NumPy's ``np.random``, torch's on
    every device), taken before a checkpointed segment runs; with :attr:`set_random_state`, so
    that running the segment again for backward draws the same values, as
    ``torch.utils.checkpoint`` does. Taken only once the library is imported."""
    set_random_state: Callable[[Any], None] | None = None
    """Puts back a state :attr:`random_state` gave."""
    semantic_inputs: Mapping[str, Callable[[Any], Any]] = dataclasses.field(default_factory=dict)
    """Inputs with the library's own semantics, by name (``{"masked": ...}``): a function taking
    a host NumPy array (float or complex) to an array of this backend holding those values where
    they count, with masks, fill values or explicit zeros of its own. It must depend only on the
    shape and values it is given (central differences call it on perturbed values). The
    conformance suite runs every case on them too, as ``case-id@name``."""

    def __post_init__(self):
        problems = []
        if not isinstance(self.name, str) or not self.name:
            problems.append(f"name must be a non-empty string, got {self.name!r}")
        arrays = (self.arrays,) if isinstance(self.arrays, str) else tuple(self.arrays)
        object.__setattr__(self, "arrays", arrays)
        bad = [a for a in arrays if not isinstance(a, type) and (
            not isinstance(a, str) or a.count(":") != 1)]
        if not arrays or bad:
            problems.append(f"arrays must name array types as 'module:Class', got {bad or arrays}")
        if not callable(self.capabilities):
            unknown = sorted(set(self.capabilities) - set(CAPABILITIES))
            if unknown:
                problems.append(f"unknown capabilities {unknown} (known: {sorted(CAPABILITIES)})")
        unknown = sorted(set(self.dtypes) - set(DTYPES)) + sorted(
            set(self.tolerances) - set(DTYPES) - {"float16", "bfloat16"})
        if unknown:
            problems.append(f"unknown dtype names {unknown} (the standard's: {', '.join(DTYPES)})")
        if (self.random_state is None) != (self.set_random_state is None):
            problems.append("random_state and set_random_state go together: give both or "
                            "neither")
        bad = {dtype: pair for dtype, pair in self.tolerances.items() if not _tolerance(pair)}
        if bad:
            problems.append("tolerances must be (rtol, atol) pairs of finite numbers >= 0, got "
                            + ", ".join(f"{dtype}: {pair!r}" for dtype, pair in bad.items()))
        if self.device_of is not None and not callable(self.device_of) and not (
                isinstance(self.device_of, str) and self.device_of.count(":") == 1):
            problems.append(f"device_of must be a function or 'module:function', got "
                            f"{self.device_of!r}")
        if "plain" in self.semantic_inputs:
            problems.append("semantic_inputs cannot be named 'plain' (--op 'id@plain' selects "
                            "the plain inputs)")
        if problems:
            raise TypeError(f"BackendSpec {self.name!r}: " + "; ".join(problems))


def _tolerance(pair) -> bool:
    """Whether ``pair`` is an ``(rtol, atol)`` of finite numbers >= 0 (a NaN or an infinity
    would make every comparison pass or fail, whatever the values)."""
    try:
        rtol, atol = pair
        return all(not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in (rtol, atol))
    except (TypeError, ValueError):
        return False


def load(target: str | Callable[[], Any]):
    """The object a spec names: ``"package.module"`` imported, ``"module:attr"`` looked up in
    it, or a function called."""
    if callable(target):
        return target()
    module, _, attribute = target.partition(":")
    value = importlib.import_module(module)
    for part in filter(None, attribute.split(".")):
        value = getattr(value, part)
    return value


# -------------------------------------------------------------------------
# Hooks
# -------------------------------------------------------------------------


@hookspec
def arraygrad_backend() -> BackendSpec | list[BackendSpec]:
    """Return the backend(s) this plugin provides, as :class:`BackendSpec` declarations.

    Called once, when the plugin is registered. Names must be unique across plugins; a clash, or
    an answer that is not a spec, is reported as a broken plugin.
    """


@hookspec(firstresult=True)
def arraygrad_rule_override(backend: str, op: str) -> Any:
    """Return a :class:`arraygrad.rules.Rule` replacing the built-in rule of ``op`` on
    ``backend``, where a table (``BackendSpec.rules``) is not enough: a kernel chosen at run
    time, say. Only the plugin that declares ``backend`` is asked. ``None`` keeps the rule.
    """
