"""What dask needs to follow the standard where array-api-compat leaves it (missing functions,
reshapes and transforms across chunks), and SciPy's special functions on dask arrays. Used by
the dask plugin's declaration."""

from ._over_compat import OverCompat


class Namespace(OverCompat):
    """``array_api_compat.dask.array`` plus the functions of the standard it lacks (below)."""

    _role = "fix-ups"

    def _adapt(self, name, value):
        if name == "fft":
            return SingleChunkFFT(value)
        if name == "linalg":
            return Linalg(value)
        return value

    @staticmethod
    def broadcast_shapes(*shapes):
        # Missing in dask: a question about shapes alone, NumPy answers it.
        import numpy

        return numpy.broadcast_shapes(*shapes)

    def eye(self, n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
        # dask 2026.8's eye loses a block when it has more columns than rows and k != 0
        # ("Missing dependency"): take the transpose of the tall one, which it builds right.
        if n_cols is not None and n_cols > n_rows and k != 0:
            return self._compat.eye(n_cols, n_rows, k=-k, dtype=dtype, device=device).T
        return self._compat.eye(n_rows, n_cols, k=k, dtype=dtype, device=device)

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


class Linalg(OverCompat):
    """array-api-compat's dask ``linalg``, whose ``cholesky`` passes dask's default through:
    the *upper* factor. The standard's is the lower one unless ``upper=True``. Its ``inv``
    solves against a float64 identity, so a float32 input gave a float64 inverse. Its ``svd``
    refuses the standard's default ``full_matrices=True`` even where it changes nothing (a
    square matrix), and its ``svdvals`` calls that default, so it always raised."""

    _role = "fix-ups"

    @staticmethod
    def cholesky(x, /, *, upper=False):
        import dask.array

        return dask.array.linalg.cholesky(x, lower=not upper)

    def inv(self, x, /):
        return self._compat.inv(x).astype(x.dtype, copy=False)  # keep float32 (complex64)

    def svd(self, x, /, *, full_matrices=True):
        m, n = x.shape[-2:]
        if full_matrices and m != n:
            raise ValueError(
                f"linalg.svd on dask: full_matrices=True (the standard's default) of a {m}x{n} "
                f"matrix is not supported: dask computes the reduced SVD only (U of shape "
                f"({m}, {min(m, n)}), Vh of shape ({min(m, n)}, {n})). Pass "
                "full_matrices=False, or call linalg.svdvals(x) for the singular values alone")
        u, s, vh = _reduced_svd(x)
        return self._compat.SVDResult(u, s, vh)

    def svdvals(self, x, /):
        return _reduced_svd(x)[1]  # dask computes U and Vh too (its SVD is a tall QR first)

    # array-api-compat's matrix_norm (2, -2, 'nuc') and matrix_rank call dask's own SVD, so a
    # matrix chunked along both axes, or a stack, failed, and matrix_rank asked it for NumPy's
    # compute_uv: both take the singular values from svdvals above.
    def matrix_norm(self, x, /, *, keepdims=False, ord="fro"):
        if ord not in (2, -2, "nuc"):
            return self._compat.matrix_norm(x, keepdims=keepdims, ord=ord)
        s = self.svdvals(x)
        norm = s.max(axis=-1) if ord == 2 else s.min(axis=-1) if ord == -2 else s.sum(axis=-1)
        return norm[..., None, None] if keepdims else norm

    def matrix_rank(self, x, /, *, rtol=None):
        import dask.array
        import numpy

        if x.ndim < 2:
            raise ValueError(f"linalg.matrix_rank takes a matrix or a stack of them, got an "
                             f"array of shape {tuple(x.shape)}")
        s = self.svdvals(x)
        if rtol is None:
            rtol = max(x.shape[-2:]) * numpy.finfo(s.dtype).eps
        tol = s.max(axis=-1, keepdims=True) * dask.array.asarray(rtol)[..., None]
        return dask.array.count_nonzero(s > tol, axis=-1)


def _reduced_svd(x):
    """dask's reduced SVD of a matrix or a stack of them, in any chunks. dask's own takes a
    2-D array chunked along one axis only (tall-and-skinny or short-and-fat): a matrix chunked
    along both is rechunked so that its shorter side is one chunk (dask then needs that side
    squared on one worker however the matrix is chunked); a stack has its matrices made one
    chunk each, and NumPy's svd (NEP 18: the chunks' library) runs on each block."""
    import dask.array
    import numpy

    if x.ndim == 2:
        if min(x.numblocks) > 1:
            x = x.rechunk({1: -1} if x.shape[0] >= x.shape[1] else {0: -1})
        return dask.array.linalg.svd(x, coerce_signs=False)
    if x.ndim < 2:
        raise ValueError(f"linalg.svd on dask takes a matrix or a stack of them, got an array "
                         f"of shape {tuple(x.shape)}")
    k = min(x.shape[-2:])
    return dask.array.apply_gufunc(
        numpy.linalg.svd, "(m,n)->(m,k),(k),(k,n)", x, full_matrices=False,
        output_sizes={"k": k}, allow_rechunk=True,
        output_dtypes=(x.dtype, numpy.empty((), x.dtype).real.dtype, x.dtype))


class SingleChunkFFT:
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


class Special:
    """SciPy's special functions (NumPy ufuncs) applied elementwise to dask arrays, lazily."""

    def __getattr__(self, name):
        import dask.array
        import scipy.special

        ufunc = getattr(scipy.special, name)
        return lambda *args: dask.array.core.elemwise(ufunc, *args)
