"""Dask backend: ``dask.array`` through array-api-compat's standard-conforming wrapper
(``pip install "arraygrad[dask]"``).

Forward and backward stay lazy: a gradient is a dask array, computed by ``.compute()`` or
``dask.compute(...)``, on a ``dask.distributed`` cluster's workers when a client is connected.
Boolean masks, ``nonzero`` and ``unique_*`` give arrays of unknown shape, to which no gradient
can be fitted (``data_dependent_shapes: False``); rules must not read values to choose a formula,
which would compute (``host_reads: False``).
"""

import math

from arraygrad import BackendSpec, hookimpl
from arraygrad.rules import LINEAR, Rule
from arraygrad.rules.statistical import vjp_mean, vjp_sum

from . import _dask_fixes


def _spread_over_chunks_of(reduced_vjp):
    """``sum``'s or ``mean``'s VJP, spread over the chunks of the input. The built-in rule leaves
    ``g`` on the reduced shape and the engine broadcasts it to the input's shape, which dask makes
    a single chunk of the whole size: every consumer then rechunks it to the input's chunks (two
    tasks a chunk, the one big chunk sent to every worker). Here the spread is a blockwise
    broadcast over the chunks of ``x`` (read-only views, no data, fused by dask into the
    consumer; ``x`` itself is not computed). Under ``create_graph`` the same maths is recorded."""

    def vjp(xp, g, x, *, axis=None, keepdims=False):
        small = reduced_vjp(xp, g, tuple(x.shape), axis=axis, keepdims=keepdims)
        if tuple(small.shape) == tuple(x.shape) or any(math.isnan(n) for n in x.shape):
            return small  # nothing to spread, or chunks of unknown size: the engine fits it
        import dask.array

        if isinstance(small, dask.array.Array) and isinstance(x, dask.array.Array):
            # Along kept axes, g takes the chunks of x (as its consumer would make it).
            small = small.rechunk(tuple(x.chunks[i] if n != 1 else (1,)
                                        for i, n in enumerate(small.shape)))
            return dask.array.map_blocks(_broadcast_block, small,
                                         dask.array.ones_like(x, dtype=small.dtype),
                                         dtype=small.dtype, chunks=x.chunks)
        return small * xp.ones_like(x, dtype=small.dtype)

    return vjp


def _broadcast_block(small, block):
    import numpy  # dispatches to the chunks' own library (CuPy) through NEP 18

    return numpy.broadcast_to(small, block.shape)


_RULES = {name: Rule(name, ["x"], [_spread_over_chunks_of(vjp)], jvps=LINEAR)
          for name, vjp in (("sum", vjp_sum), ("mean", vjp_mean))}


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
        capabilities={"data_dependent_shapes": False, "host_reads": False},
        rules=_RULES)
