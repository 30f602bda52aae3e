"""arraygrad: PyTorch-style reverse-mode autograd for every Array API library.

Wrap an array of any registered backend in a :class:`Variable`, compute with the differentiable
namespace (``x.__array_namespace__()`` or :func:`namespace`), call ``backward()``, read ``.grad``.
"""

from ._grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._plugins import (DEFAULT_CAPABILITIES, DEFAULT_TOLERANCES, BackendInfo, backends,
                       get_backend, hookimpl, register_backend, registry)
from ._transforms import (grad, hessian, hvp, jacfwd, jacobian, jacrev, jvp, value_and_grad,
                          vjp)
from ._variable import Variable
from ._function import Function, FunctionCtx, custom_jvp, custom_vjp, once_differentiable
from . import _namespace  # noqa: F401  (installs the factory of differentiable namespaces)
from . import autograd, testing  # noqa: F401  (ag.testing.check_grads, as torch.testing)
from ._checkpoint import checkpoint
from ._debug import detect_anomaly, is_anomaly_enabled, set_detect_anomaly, to_dot
from .hookspecs import BackendSpec
from .errors import (ArraygradError, BackendError, BackendUnavailable, BackwardError,
                     GradientError, InplaceError, NoRuleError)
from .errors import AnomalyError, GraphvizUnavailable

__version__ = "0.1.0"

if __import__("importlib.util").util.find_spec("einops") is not None:
    from . import _einops  # noqa: F401  (einops finds Variables' backend among its subclasses)

__all__ = [
    "Variable", "namespace", "grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian",
    "jacfwd", "jacrev", "hvp",
    "Function", "FunctionCtx", "once_differentiable", "custom_vjp", "custom_jvp",
    "checkpoint", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "to_dot",
    "autograd", "testing", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "backends", "register_backend", "hookimpl", "BackendSpec", "BackendInfo", "DEFAULT_TOLERANCES",
    "DEFAULT_CAPABILITIES", "ArraygradError", "BackendError", "BackendUnavailable",
    "BackwardError", "GradientError", "InplaceError", "NoRuleError",
    "AnomalyError", "GraphvizUnavailable",
]


def namespace(backend="numpy"):
    """Return the differentiable Array API namespace of ``backend``.

    ``backend`` is a registered name (``"numpy"``, ``"array_api_strict"``...), a backend's raw
    namespace (``array_api_strict``), the library's own module (``numpy``, ``torch``,
    ``dask.array``), or an array or Variable of that backend.
    """
    if isinstance(backend, str):
        return get_backend(backend).ns
    if isinstance(backend, Variable):
        return backend._backend.ns
    owner = registry.of(backend)
    if owner is None and callable(getattr(backend, "asarray", None)):
        owner = _owner_of_arrays_made_by(backend)
    if owner is not None:
        return owner.ns
    registry.ensure_loaded()
    for candidate in registry.backends.values():
        try:
            if candidate.raw is backend or getattr(candidate.raw, "__name__", None) == getattr(
                    backend, "__name__", ""):
                return candidate.ns
        except BackendUnavailable:
            continue
    raise BackendError(f"no registered backend matches {backend!r}; pass a backend name "
                       f"({', '.join(sorted(registry.backends))}), its namespace or an array")


def _owner_of_arrays_made_by(module):
    """The backend owning the arrays that ``module.asarray`` makes: ``numpy`` and ``torch`` are
    not the namespaces their backends register (array-api-compat's wrappers of them)."""
    try:
        return registry.of(module.asarray(0.0))
    except Exception:  # noqa: BLE001 (not an array library: the caller says what to pass)
        return None
