"""arraygrad backend ``sparse``: pydata `sparse <https://sparse.pydata.org>`_'s ``COO`` arrays,
with the ``sparse`` module as namespace.

COO arrays refuse item assignment, so the backend declares ``inplace: False`` and a
``set_index`` that returns a new array. The suite's semantic inputs ``fill`` (``case-id@fill``)
are COO arrays whose fill value is one of their own values: the same values, with the entries
equal to it implicit. Cases whose own function refuses a non-zero fill value are skipped there.
"""

from __future__ import annotations

from arraygrad import BackendSpec, hookimpl

NAME = "sparse"
__version__ = "0.1.0"

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128")
"""Those of ``sparse.__array_namespace_info__().dtypes()``: all of the standard's."""


def to_numpy(array):
    # (some of sparse's functions return NumPy arrays: unique_values)
    import numpy

    return numpy.asarray(array.todense() if hasattr(array, "todense") else array)


def coerce(value):
    # Integer indexing gives NumPy scalars (x[0]), unique_values a NumPy array.
    import numpy

    if isinstance(value, (numpy.ndarray, numpy.generic)):
        import sparse

        return sparse.COO.from_numpy(numpy.asarray(value))
    return None


def set_index(array, key, value):
    # COO arrays refuse item assignment: assign into a dense copy, keep the fill value.
    import sparse

    dense = array.todense()
    dense[key] = value.todense() if isinstance(value, sparse.SparseArray) else value
    return sparse.COO.from_numpy(dense, fill_value=array.fill_value)


def make_filled(host):
    """``host``'s values as a COO array whose fill value is its first entry (0 for an empty
    array), so that the entries equal to it are implicit."""
    import sparse

    fill = host.reshape(-1)[0] if host.size else 0
    return sparse.COO.from_numpy(host, fill_value=fill)


# ------------------------------------------------------------------------------ declaration


@hookimpl
def arraygrad_backend():
    return BackendSpec(
        name=NAME, library="sparse", arrays=("sparse:COO",), namespace="sparse",
        to_numpy=to_numpy, coerce=coerce, capabilities={"inplace": False},
        set_index=set_index, dtypes=DTYPES, deviations=f"{__name__}:deviations.txt",
        semantic_inputs={"fill": make_filled})
