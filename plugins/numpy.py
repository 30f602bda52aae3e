"""NumPy backend, through array-api-compat's standard-conforming wrapper of NumPy (with fast
paths to NumPy's C core, plugins/_numpy_fast.py)."""

from arraygrad import BackendSpec, hookimpl


def _namespace():
    import array_api_compat.numpy

    from . import _numpy_fast  # (imports NumPy: when the backend is first used)

    return _numpy_fast.Namespace(array_api_compat.numpy)


def _scalar_as_array(value):
    """NumPy returns scalars (``numpy.float64``) from reductions and 0-d arithmetic."""
    import numpy

    return numpy.asarray(value) if isinstance(value, numpy.generic) else None


def _random_state():
    import numpy

    return numpy.random.get_state()  # np.random.rand's, randn's... (not a Generator's)


def _set_random_state(state):
    import numpy

    numpy.random.set_state(state)


@hookimpl
def arraygrad_backend():
    return BackendSpec(
        name="numpy", library="numpy", arrays=("numpy:ndarray", "numpy:generic"),
        namespace=_namespace, special="scipy.special",  # SciPy is optional
        coerce=_scalar_as_array, capabilities={"reuse_unshared": True, "matmul_sums": True},
        random_state=_random_state, set_random_state=_set_random_state)
