"""arraygrad backend ``marray``: masked arrays (`marray <https://github.com/mdhaber/marray>`_)
over NumPy, ``marray.masked_namespace(array_api_compat.numpy)``.

A masked entry is not a value: ``to_numpy`` gives 0 there, and the suite's semantic inputs
``masked`` (``case-id@masked``) mask every third entry. marray's reductions and products skip
masked entries, so the plugin puts rules of its own in their place (``rules.MASKED_RULES``,
through the hook ``arraygrad_rule_override``): arraygrad's built-in ``mean`` rule, for one,
spreads ``1/size`` over every entry. With ``ARRAYGRAD_MARRAY_RULES=builtin`` in the environment
it keeps the built-in rules, and the suite flags them on masked inputs::

    ARRAYGRAD_MARRAY_RULES=builtin arraygrad conformance --backend marray --op 'mean*'

Arrays of this backend are those of the namespace the plugin builds, ``namespace()`` (the
backend's raw namespace): ``masked_namespace`` makes a new array class on every call.
"""

from __future__ import annotations

import os

from arraygrad import BackendSpec, hookimpl

NAME = "marray"
__version__ = "0.1.0"

MArray = None  # the array class, made with the namespace
_namespace = None


def namespace():
    """marray's namespace over ``array_api_compat.numpy`` (built once)."""
    global MArray, _namespace
    if _namespace is None:
        import array_api_compat.numpy
        import marray

        _namespace = marray.masked_namespace(array_api_compat.numpy)
        MArray = _namespace.MArray
    return _namespace


def to_numpy(array):
    # numpy.asarray of an MArray is an object array: the data, with masked entries 0
    import numpy

    return numpy.where(array.mask, numpy.zeros((), array.dtype), numpy.asarray(array.data))


def make_masked(host):
    """``host``'s values, masked where the sum of the indices is 1 mod 3 (every third entry
    along each axis): the mask depends on the shape alone, never covers the first entry, and
    leaves an unmasked entry in every slice of length 2 or more."""
    import numpy

    mask = sum(numpy.indices(host.shape)) % 3 == 1 if host.ndim else numpy.zeros((), bool)
    return namespace().asarray(host, mask=mask)


# ------------------------------------------------------------------------------ declaration


@hookimpl
def arraygrad_backend():
    # MArray is None until the namespace is built, and no array of it exists before then.
    return BackendSpec(
        name=NAME, library="marray", arrays=(f"{__name__}:MArray",), namespace=namespace,
        to_numpy=to_numpy, deviations=f"{__name__}:deviations.txt",
        semantic_inputs={"masked": make_masked})


@hookimpl
def arraygrad_rule_override(op):
    # A hook rather than BackendSpec.rules: the rules import NumPy (arraygrad imports plugins
    # and reads their specs without importing a library), and the choice is made at run time.
    if os.environ.get("ARRAYGRAD_MARRAY_RULES") == "builtin":
        return None
    from .rules import MASKED_RULES

    return MASKED_RULES.get(op)
