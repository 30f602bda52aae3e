"""JAX backend: ``jax.numpy``, which follows the Array API standard itself.

Install with ``pip install "arraygrad[jax]"``.

float64: JAX computes in float32 unless ``jax_enable_x64`` is set. The first use of this backend
(its namespace) sets ``jax.config.update("jax_enable_x64", True)`` process-wide, so float64
gradient checks run; arrays made before that are float32.

JAX arrays are immutable: the spec sets an index with ``.at[key].set()`` and declares
``inplace: False``. In-place operators on a JAX-backed Variable (``v += 1``, ``v[0] = 2``) still
work, because arraygrad's in-place ops are copy-on-write: they rebind ``v.data`` to a new array.
Data-dependent shapes (boolean masks, ``nonzero``) work eagerly, and arraygrad runs eagerly.
"""

from arraygrad import BackendSpec, hookimpl


def _namespace():
    import jax
    import jax.numpy

    jax.config.update("jax_enable_x64", True)  # float64 as in every other backend
    return jax.numpy


def _solve_triangular():
    import jax.numpy
    from jax.scipy.linalg import solve_triangular

    def solve(a, b, *, upper):
        batch = jax.numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2])  # (it broadcasts none)
        a = jax.numpy.broadcast_to(a, batch + a.shape[-2:])
        b = jax.numpy.broadcast_to(b, batch + b.shape[-2:])
        return solve_triangular(a, b, lower=not upper)
    return solve


def _scatter_add():
    import jax.numpy

    return lambda size, positions, values: jax.numpy.zeros(
        size, dtype=values.dtype, device=values.device).at[positions].add(values)


@hookimpl
def arraygrad_backend():
    return BackendSpec(
        name="jax", library="jax", arrays=("jax:Array",), namespace=_namespace,
        special="jax.scipy.special",
        capabilities={"inplace": False, "solve_triangular": _solve_triangular,
                      "scatter_add": _scatter_add},
        set_index=lambda array, key, value: array.at[key].set(value))  # immutable: a new array
