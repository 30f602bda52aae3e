"""Hook specifications for arraygrad backend plugins.

A backend plugin is a module or object with functions marked ``@arraygrad.hookimpl``, registered
through the ``arraygrad`` entry-point group or with :func:`arraygrad.register_backend`. Every
question about one backend takes its name as ``backend``; a plugin answers ``None`` for backends
it does not provide. A hookimpl may take fewer arguments than its spec.
"""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("arraygrad")

# -------------------------------------------------------------------------
# Discovery
# -------------------------------------------------------------------------


@hookspec
def arraygrad_backends() -> list[str]:
    """Return the names of the backends this plugin provides (for example ``["numpy"]``).

    Names must be unique across plugins; a clash is reported as a broken plugin.
    """


@hookspec(firstresult=True)
def arraygrad_owns(array: Any) -> str | None:
    """Return the name of the backend that owns ``array``, or ``None`` if it is not yours.

    Must not import the array library: look its module up in ``sys.modules`` first, since an
    array of a library that was never imported cannot exist.

    :param array: any object passed to :class:`arraygrad.Variable` or to a namespace function.

    Calling stops at the first non-``None`` result.
    """


@hookspec(firstresult=True)
def arraygrad_namespace(backend: str) -> Any:
    """Return the raw Array API namespace of ``backend``, importing the library lazily.

    Raise ``ImportError`` (or any exception) with a readable message when the library is
    missing or unusable: the backend is then listed as "not available: <reason>".

    Calling stops at the first non-``None`` result.
    """


# -------------------------------------------------------------------------
# Arrays
# -------------------------------------------------------------------------


@hookspec(firstresult=True)
def arraygrad_coerce(backend: str, array: Any) -> Any:
    """Return ``array`` as a proper array of ``backend`` if the library returned something else.

    NumPy returns ``numpy.float64`` scalars from reductions; its plugin turns them into 0-d
    arrays here. Return ``None`` when ``array`` needs nothing (the answer is cached per type).

    Calling stops at the first non-``None`` result.
    """


@hookspec(firstresult=True)
def arraygrad_set_index(backend: str, array: Any, key: Any, value: Any) -> Any:
    """Return ``array`` with ``array[key] = value``; ``array`` is owned by arraygrad and may be
    modified in place. Answer for libraries with immutable arrays (JAX: ``array.at[key].set``).

    ``None`` means the default, ``array[key] = value`` in place.

    Calling stops at the first non-``None`` result.
    """


@hookspec(firstresult=True)
def arraygrad_special(backend: str) -> Any:
    """Return an object whose attributes are the library's special functions under SciPy's
    names (``erf``, ``gammaln``, ``xlogy``...), on its raw arrays: ``scipy.special`` for NumPy,
    an adapter of ``torch.special`` for torch. arraygrad builds the differentiable
    ``xp.special`` from it, which SciPy's array-API mode calls; names it lacks are left out.

    ``None`` means the backend has no special functions.

    Calling stops at the first non-``None`` result.
    """


@hookspec(firstresult=True)
def arraygrad_get_index(backend: str, array: Any, key: Any) -> Any:
    """Return ``array[key]`` for a key the library's own ``__getitem__`` does not take but the
    standard allows (torch: slices with a negative step). Only the backend's own plugin is
    asked, and whether it implements this hook is found once (indexing is on the per-op path).

    ``None`` means the default, ``array[key]``.
    """


@hookspec(firstresult=True)
def arraygrad_to_numpy(backend: str, array: Any) -> Any:
    """Return a NumPy array on the host holding the values of ``array`` (for comparisons only).
    The NumPy plugin answers last for every backend with ``numpy.asarray(array)``.

    Calling stops at the first non-``None`` result.
    """


# -------------------------------------------------------------------------
# Facts about a backend
# -------------------------------------------------------------------------


@hookspec(firstresult=True)
def arraygrad_version(backend: str) -> str | None:
    """Return the version string of the library behind ``backend``.

    Calling stops at the first non-``None`` result.
    """


@hookspec(firstresult=True)
def arraygrad_tolerances(backend: str, dtype: str) -> tuple[float, float] | None:
    """Return ``(rtol, atol)`` for comparing gradients of dtype ``dtype`` (``"float32"`` ...).

    ``None`` means the defaults of :data:`arraygrad.DEFAULT_TOLERANCES`.

    Calling stops at the first non-``None`` result.
    """


@hookspec(firstresult=True)
def arraygrad_capabilities(backend: str) -> dict[str, bool] | None:
    """Return what ``backend`` can do, as flags: ``inplace`` (arrays are mutable),
    ``data_dependent_shapes`` (boolean masks, ``nonzero``, ``unique_*``), ``float64``,
    ``host_reads`` (reading a value on the host is cheap), ``reuse_unshared`` (arrays have
    NumPy's ``base``, ``None`` exactly when an array owns its memory, and ``flags.writeable``,
    so backward may overwrite one that nothing else refers to).

    Missing flags take the defaults of :data:`arraygrad.DEFAULT_CAPABILITIES`.

    Calling stops at the first non-``None`` result.
    """


# -------------------------------------------------------------------------
# Faster kernels
# -------------------------------------------------------------------------


@hookspec(firstresult=True)
def arraygrad_rule_override(backend: str, op: str) -> Any:
    """Return a :class:`arraygrad.rules.Rule` replacing the built-in rule of ``op`` on ``backend``.

    Use it for a faster kernel with the same maths (a fused CuPy kernel, say); the conformance
    suite checks an override exactly like the built-in rule. ``None`` keeps the built-in rule.

    Calling stops at the first non-``None`` result.
    """
