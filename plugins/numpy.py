"""NumPy backend, through array-api-compat's standard-conforming wrapper of NumPy."""

import sys

from arraygrad import hookimpl

NAME = "numpy"


@hookimpl
def arraygrad_backends():
    return [NAME]


@hookimpl
def arraygrad_owns(array):
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(array, (numpy.ndarray, numpy.generic)):
        return NAME
    return None


@hookimpl
def arraygrad_namespace(backend):
    if backend == NAME:
        import array_api_compat.numpy

        return array_api_compat.numpy
    return None


@hookimpl
def arraygrad_coerce(backend, array):
    # NumPy returns scalars (numpy.float64) from reductions and 0-d arithmetic.
    if backend == NAME:
        import numpy

        if isinstance(array, numpy.generic):
            return numpy.asarray(array)
    return None


@hookimpl
def arraygrad_to_numpy(backend, array):
    if backend == NAME:
        return array
    return None


@hookimpl(trylast=True, specname="arraygrad_to_numpy")
def any_array_to_numpy(backend, array):
    """The fallback for backends whose plugin has no conversion: what ``numpy.asarray`` makes
    of the array (the buffer protocol, ``__array__``, DLPack)."""
    import numpy

    return numpy.asarray(array)


@hookimpl
def arraygrad_version(backend):
    if backend == NAME:
        import numpy

        return numpy.__version__
    return None


@hookimpl
def arraygrad_capabilities(backend):
    if backend == NAME:
        return {"inplace": True, "data_dependent_shapes": True, "float64": True,
                "reuse_unshared": True}
    return None


@hookimpl
def arraygrad_special(backend):
    if backend == NAME:
        try:
            import scipy.special
        except ImportError:  # SciPy is optional: no special functions then
            return None
        return scipy.special
    return None
