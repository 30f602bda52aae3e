"""Dask backend: ``dask.array`` through array-api-compat's standard-conforming wrapper.

Install with ``pip install "arraygrad[dask]"``.

Forward and backward stay lazy: a gradient is a dask array, computed when the user calls
``.compute()`` or ``dask.compute(...)``. With a ``dask.distributed.Client`` connected, that
computation runs on the cluster's workers, like any other dask computation.

Data-dependent shapes (boolean masks, ``nonzero``, ``unique_*``) give arrays of unknown shape,
which arraygrad cannot fit gradients to: the plugin declares ``data_dependent_shapes: False``.
Rules must not read values to choose a formula (that would compute): ``host_reads: False``.
"""

import sys

from arraygrad import hookimpl

NAME = "dask"


@hookimpl
def arraygrad_backends():
    return [NAME]


@hookimpl
def arraygrad_owns(array):
    dask_array = sys.modules.get("dask.array")
    if dask_array is not None and isinstance(array, dask_array.Array):
        return NAME
    return None


class _Namespace:
    """``array_api_compat.dask.array`` plus the functions of the standard it lacks (below)."""

    def __init__(self, compat):
        self._compat = compat
        self.__name__ = compat.__name__  # so that arraygrad.namespace(compat) finds this backend

    def __getattr__(self, name):
        value = getattr(self._compat, name)
        if name == "fft":
            value = _SingleChunkFFT(value)
        setattr(self, name, value)  # found once: rules look functions up on every backward
        return value

    def __repr__(self):
        return f"<arraygrad's fix-ups over {self._compat!r}>"

    @staticmethod
    def broadcast_shapes(*shapes):
        # Missing in dask: a question about shapes alone, NumPy answers it.
        import numpy

        return numpy.broadcast_shapes(*shapes)

    def reshape(self, x, /, shape, *, copy=None):
        # dask reshapes only by merging or evenly splitting chunked axes ((3, 4) in chunks of
        # 1 row cannot become (2, 6)); the standard allows any shape of the same size: put
        # the whole array in one chunk first where dask cannot do it otherwise.
        try:
            return self._compat.reshape(x, shape, copy=copy)
        except NotImplementedError:
            return self._compat.reshape(x.rechunk(-1), shape, copy=copy)

    @staticmethod
    def take_along_axis(x, indices, /, *, axis=-1):
        # Missing in dask (arraygrad's sort and max/min rules use it): gather within blocks that
        # hold the whole of ``axis``, the other axes broadcast and chunked alike.
        import dask.array
        import numpy

        axis = axis % x.ndim
        shape = [max(a, b) if i != axis else None for i, (a, b) in
                 enumerate(zip(x.shape, indices.shape))]
        x = dask.array.broadcast_to(x, tuple(x.shape[axis] if n is None else n for n in shape))
        indices = dask.array.broadcast_to(
            indices, tuple(indices.shape[axis] if n is None else n for n in shape))
        x = x.rechunk({axis: -1})
        indices = indices.rechunk({**{i: c for i, c in enumerate(x.chunks) if i != axis},
                                   axis: -1})
        return dask.array.map_blocks(numpy.take_along_axis, x, indices, axis=axis,
                                     dtype=x.dtype, chunks=indices.chunks)


class _SingleChunkFFT:
    """dask's fft transforms only along axes held in one chunk (arraygrad's fft rules pad and
    crop, which splits chunks): give each transform its input in one chunk."""

    def __init__(self, fft):
        self._fft = fft

    def __getattr__(self, name):
        function = getattr(self._fft, name)
        if name in ("fftfreq", "rfftfreq") or not callable(function):
            return function

        def transform(x, /, *args, **kwargs):
            return function(x.rechunk(-1), *args, **kwargs)

        return transform


@hookimpl
def arraygrad_namespace(backend):
    if backend == NAME:
        import array_api_compat.dask.array

        return _Namespace(array_api_compat.dask.array)
    return None


@hookimpl
def arraygrad_to_numpy(backend, array):
    if backend == NAME:
        import numpy

        return numpy.asarray(array.compute())  # the one place this plugin computes
    return None


@hookimpl
def arraygrad_version(backend):
    if backend == NAME:
        import dask

        return dask.__version__
    return None


@hookimpl
def arraygrad_capabilities(backend):
    if backend == NAME:
        # host_reads: a rule that reads values (bool(...)) would compute the graph.
        return {"inplace": True, "data_dependent_shapes": False, "float64": True,
                "host_reads": False}
    return None


class _Special:
    """SciPy's special functions (NumPy ufuncs) applied elementwise to dask arrays, lazily."""

    def __getattr__(self, name):
        import dask.array
        import scipy.special

        ufunc = getattr(scipy.special, name)
        return lambda *args: dask.array.core.elemwise(ufunc, *args)


@hookimpl
def arraygrad_special(backend):
    if backend == NAME:
        try:
            import scipy.special  # noqa: F401
        except ImportError:
            return None
        return _Special()
    return None
