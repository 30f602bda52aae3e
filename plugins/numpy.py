"""NumPy backend, through array-api-compat's standard-conforming wrapper of NumPy (with fast
paths to NumPy's C core, plugins/_numpy_fast.py)."""

from arraygrad import BackendSpec, hookimpl


def _namespace():
    import array_api_compat.numpy

    from . import _numpy_fast  # (imports NumPy: when the backend is first used)

    return _numpy_fast.Namespace(array_api_compat.numpy)


def _scalar_as_array(value):
    """NumPy returns scalars (``numpy.float64``) from reductions and 0-d arithmetic. Masked
    arrays and matrices are refused: their own rules (a mask honoured forward, ``*`` as a
    matrix product) would decide results that the gradient does not follow."""
    import numpy

    if isinstance(value, (numpy.ma.MaskedArray, numpy.matrix)):
        kind = type(value)
        raise TypeError(
            f"arraygrad does not take a {kind.__module__}.{kind.__qualname__}: its own rules "
            "(a mask, or * as a matrix product) would change results without the gradient "
            "knowing. Pass plain arrays: numpy.ma.filled(a, value) or a.data with the mask as "
            "an array of its own (xp.where(mask, x, fill)), numpy.asarray(m) for a matrix.")
    return numpy.asarray(value) if isinstance(value, numpy.generic) else None


def _solve_triangular():
    """SciPy's triangular solve (batched, broadcasting); SciPy is optional: without it (an
    ImportError) rules solve through the standard's ``linalg.solve``."""
    from scipy.linalg import solve_triangular

    return lambda a, b, *, upper: solve_triangular(a, b, lower=not upper, check_finite=False)


def _scatter_add():
    """``numpy.add.at`` into zeros: unbuffered, so repeated positions add up."""
    import numpy

    def scatter_add(size, positions, values):
        total = numpy.zeros(size, dtype=values.dtype)
        numpy.add.at(total, positions, values)
        return total
    return scatter_add


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
        coerce=_scalar_as_array, capabilities={"reuse_unshared": True, "matmul_sums": True,
                      "solve_triangular": _solve_triangular, "scatter_add": _scatter_add},
        random_state=_random_state, set_random_state=_set_random_state)
