"""CuPy backend (NVIDIA GPUs), through array-api-compat's standard-conforming wrapper of CuPy.

Install with ``pip install "arraygrad[cupy]"`` (the ``cupy-cuda12x`` wheel). Without a usable
CUDA device the backend is listed as "not available: <reason>" rather than failing later.
Arrays and their gradients stay on their GPU: forward and backward make no host round trips
(the tests check this under CUDA stream capture, where a device-to-host copy is an error).
"""

from arraygrad import BackendSpec, hookimpl


def _namespace():
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


def _solve_triangular():
    import cupy
    from cupyx.scipy.linalg import solve_triangular

    def solve(a, b, *, upper):
        if a.ndim == 2 and b.ndim == 2:
            return solve_triangular(a, b, lower=not upper)
        return cupy.linalg.solve(a, b)  # cupyx's takes no batch: a batched LU solve instead
    return solve


@hookimpl
def arraygrad_backend():
    return BackendSpec(
        name="cupy", library="cupy", arrays=("cupy:ndarray",), namespace=_namespace,
        to_numpy=lambda array: array.get(),  # the one device-to-host copy (comparisons only)
        # host_reads: a rule that reads values (bool(...)) would copy from the GPU.
        capabilities={"host_reads": False, "reuse_unshared": True,
                      "solve_triangular": _solve_triangular},
        tolerances={"float16": (1e-2, 1e-3)})  # GPU reductions sum in another order
