"""JAX backend: ``jax.numpy``, which follows the Array API standard itself.

Install with ``pip install "arraygrad[jax]"``.

float64: JAX computes in float32 unless ``jax_enable_x64`` is set. The first use of this backend
(its namespace) sets ``jax.config.update("jax_enable_x64", True)`` process-wide, so float64
gradient checks run; arrays made before that are float32.

JAX arrays are immutable: this plugin answers ``arraygrad_set_index`` with ``.at[key].set()``
and declares ``inplace: False``. In-place operators on a JAX-backed Variable (``v += 1``,
``v[0] = 2``) still work, because arraygrad's in-place ops are copy-on-write: they rebind
``v.data`` to a new array.
"""

import sys

from arraygrad import hookimpl

NAME = "jax"


@hookimpl
def arraygrad_backends():
    return [NAME]


@hookimpl
def arraygrad_owns(array):
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(array, jax.Array):
        return NAME
    return None


@hookimpl
def arraygrad_namespace(backend):
    if backend == NAME:
        import jax
        import jax.numpy

        jax.config.update("jax_enable_x64", True)  # float64 as in every other backend
        return jax.numpy
    return None


@hookimpl
def arraygrad_set_index(backend, array, key, value):
    if backend == NAME:
        return array.at[key].set(value)  # JAX arrays are immutable: a new array
    return None


@hookimpl
def arraygrad_to_numpy(backend, array):
    if backend == NAME:
        import numpy

        return numpy.asarray(array)
    return None


@hookimpl
def arraygrad_version(backend):
    if backend == NAME:
        import jax

        return jax.__version__
    return None


@hookimpl
def arraygrad_capabilities(backend):
    if backend == NAME:
        # Data-dependent shapes (boolean masks, nonzero, unique_*) work eagerly, and arraygrad
        # runs eagerly: only jax.jit rules them out.
        return {"inplace": False, "data_dependent_shapes": True, "float64": True}
    return None


@hookimpl
def arraygrad_special(backend):
    if backend == NAME:
        import jax.scipy.special

        return jax.scipy.special
    return None
