"""CuPy backend (NVIDIA GPUs), through array-api-compat's standard-conforming wrapper of CuPy.

Install with ``pip install "arraygrad[cupy]"`` (the ``cupy-cuda12x`` wheel). Without a usable
CUDA device the backend is listed as "not available: <reason>" rather than failing later.
Arrays and their gradients stay on their GPU: forward and backward make no host round trips
(the tests check this under CUDA stream capture, where a device-to-host copy is an error).
"""

import sys

from arraygrad import hookimpl

NAME = "cupy"


@hookimpl
def arraygrad_backends():
    return [NAME]


@hookimpl
def arraygrad_owns(array):
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(array, cupy.ndarray):
        return NAME
    return None


@hookimpl
def arraygrad_namespace(backend):
    if backend == NAME:
        import cupy

        # CuPy imports without a GPU and fails at the first array: check the device up front.
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:
            raise RuntimeError(f"no usable CUDA device ({type(exc).__name__}: {exc})") from exc
        if count == 0:
            raise RuntimeError("no CUDA device found")
        import array_api_compat.cupy

        return array_api_compat.cupy
    return None


@hookimpl
def arraygrad_to_numpy(backend, array):
    if backend == NAME:
        return array.get()  # the one explicit device-to-host copy (comparisons only)
    return None


@hookimpl
def arraygrad_version(backend):
    if backend == NAME:
        import cupy

        return cupy.__version__
    return None


@hookimpl
def arraygrad_tolerances(backend, dtype):
    if backend == NAME:
        # GPU reductions sum in another order than NumPy's pairwise sums.
        return {"float16": (1e-2, 1e-3), "float32": (1e-4, 1e-5),
                "complex64": (1e-4, 1e-5)}.get(dtype)
    return None


@hookimpl
def arraygrad_capabilities(backend):
    if backend == NAME:
        # host_reads: a rule that reads values (bool(...)) would copy from the GPU.
        return {"inplace": True, "data_dependent_shapes": True, "float64": True,
                "host_reads": False, "reuse_unshared": True}
    return None
