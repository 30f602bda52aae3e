"""Dask backend: ``dask.array`` through array-api-compat's standard-conforming wrapper
(``pip install "arraygrad[dask]"``).

Forward and backward stay lazy: a gradient is a dask array, computed by ``.compute()`` or
``dask.compute(...)``, on a ``dask.distributed`` cluster's workers when a client is connected.
Boolean masks, ``nonzero`` and ``unique_*`` give arrays of unknown shape, to which no gradient
can be fitted (``data_dependent_shapes: False``); rules must not read values to choose a formula,
which would compute (``host_reads: False``).
"""

from arraygrad import BackendSpec, hookimpl

from . import _dask_fixes


def _namespace():
    import array_api_compat.dask.array

    return _dask_fixes.Namespace(array_api_compat.dask.array)


def _special():
    import scipy.special  # noqa: F401  (an ImportError: no special functions)

    return _dask_fixes.Special()


def _to_numpy(array):
    import numpy

    return numpy.asarray(array.compute())  # the one place this plugin computes


@hookimpl
def arraygrad_backend():
    return BackendSpec(
        name="dask", library="dask", arrays=("dask.array:Array",), namespace=_namespace,
        to_numpy=_to_numpy, special=_special,
        capabilities={"data_dependent_shapes": False, "host_reads": False})
