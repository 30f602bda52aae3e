"""An out-of-tree arraygrad backend, ``example_strict``: a template for third-party plugins.

It serves array-api-strict on a different device set: only the devices that hold every dtype
of the standard (``CPU_DEVICE``, ``device1`` and ``device2``; not ``no_float64``/``no_x64``).

Ownership is unambiguous: plain array-api-strict arrays belong to arraygrad's built-in
``array_api_strict`` backend, so this backend's arrays are a tiny subclass, ``ExampleArray``,
which only the namespace below creates; where two backends' array types match, arraygrad picks
the more derived class. Ownership is decided once per type, never by values or device.

The whole plugin is the declaration at the bottom; the rest is the fix-up this backend needs
(its namespace returns ``ExampleArray``), kept as small as array-api-compat's wrappers.
"""

from __future__ import annotations

import functools
import sys

from arraygrad import BackendSpec, hookimpl

NAME = "example_strict"
__version__ = "0.1.0"

ExampleArray = None  # the array type, made with the namespace (array-api-strict is lazy)
_namespace = None


def _make_array_type(base):
    class ExampleArray(base):
        """An array-api-strict array owned by the ``example_strict`` backend."""

        __slots__ = ()

    ExampleArray.__module__ = __name__
    ExampleArray.__qualname__ = "ExampleArray"
    return ExampleArray


class _Info:
    """array-api-strict's ``__array_namespace_info__``, reporting this backend's devices."""

    def __init__(self, strict):
        self._info = strict.__array_namespace_info__()

    def __getattr__(self, name):
        return getattr(self._info, name)

    def devices(self):
        info = self._info
        return tuple(device for device in info.devices()
                     if "float64" in info.dtypes(device=device, kind="real floating"))


class _Namespace:
    """array-api-strict's namespace (or its ``linalg``/``fft``), returning ``ExampleArray``."""

    def __init__(self, module, name, ours):
        self._module = module
        self._ours = ours
        self.__name__ = name

    def __repr__(self):
        return f"<{self.__name__}: array-api-strict as backend {NAME!r}>"

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if name in ("linalg", "fft") and not callable(value):  # the extension modules
            value = _Namespace(value, f"{self.__name__}.{name}", self._ours)
        elif callable(value) and not isinstance(value, type):
            value = _returning_ours(value, self._ours)
        setattr(self, name, value)  # cached: built once per name
        return value


def _returning_ours(function, ours):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return ours(function(*args, **kwargs))

    return wrapper


def _load():
    """Import array-api-strict and build the array type and the namespace (once)."""
    global ExampleArray, _namespace
    if _namespace is None:
        import array_api_strict
        from array_api_strict._array_object import Array  # not exported by the package

        array_type = _make_array_type(Array)
        info = _Info(array_api_strict)
        devices = info.devices()

        def ours(value):
            """``value`` with every plain array-api-strict array in it made an ExampleArray."""
            if type(value) is Array:
                if value.device not in devices:
                    raise ValueError(f"backend {NAME!r} has no device {value.device!r}; "
                                     f"its devices are {devices}")
                # array-api-strict has no public constructor for a subclass: use its own.
                return array_type._new(value._array, device=value.device)
            if isinstance(value, tuple):
                items = [ours(item) for item in value]
                return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
            if isinstance(value, list):
                return [ours(item) for item in value]
            return value

        namespace = _Namespace(array_api_strict, "arraygrad_example.namespace", ours)
        namespace.__array_namespace_info__ = lambda: info
        ExampleArray = array_type
        _namespace = namespace
    return _namespace


# ------------------------------------------------------------------------------ declaration


def _coerce(array):
    # Some operators of array-api-strict return the base class: make them ours again.
    strict = sys.modules.get("array_api_strict._array_object")
    if strict is not None and type(array) is strict.Array:
        return _load()._ours(array)
    return None


def _to_numpy(array):
    import array_api_strict
    import numpy

    cpu = array_api_strict.__array_namespace_info__().default_device()
    return numpy.asarray(array.to_device(cpu))  # NumPy reads CPU_DEVICE arrays only


def _capabilities():
    import array_api_strict

    flags = array_api_strict.get_array_api_strict_flags()
    return {"data_dependent_shapes": flags.get("data_dependent_shapes", True)}


@hookimpl
def arraygrad_backend():
    # ExampleArray subclasses array-api-strict's Array, which the built-in backend owns: the
    # more derived class wins, so these arrays are ours. It is None until the namespace is
    # built, and no array of it exists before then.
    return BackendSpec(
        name=NAME, library="array_api_strict", arrays=(f"{__name__}:ExampleArray",),
        namespace=_load, coerce=_coerce, to_numpy=_to_numpy, capabilities=_capabilities,
        deviations=lambda: DEVIATIONS)


DEVIATIONS = """\
# array-api-strict's operators, which its arrays inherit, raise TypeError on an operand that
# is not one of their own arrays (a Variable) instead of returning NotImplemented:
# `raw_array * variable` fails, while `variable * raw_array` and xp.multiply work
programs.nested[outer_times_inner_grad]
"""
