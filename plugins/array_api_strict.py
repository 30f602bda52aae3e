"""array-api-strict backend: the standard's reference implementation, with nothing extra."""

import sys

from arraygrad import hookimpl

NAME = "array_api_strict"


@hookimpl
def arraygrad_backends():
    return [NAME]


@hookimpl
def arraygrad_owns(array):
    module = sys.modules.get("array_api_strict._array_object")
    if module is not None and isinstance(array, module.Array):
        return NAME
    return None


@hookimpl
def arraygrad_namespace(backend):
    if backend == NAME:
        import array_api_strict

        return array_api_strict
    return None


@hookimpl
def arraygrad_to_numpy(backend, array):
    if backend == NAME:
        import array_api_strict
        import numpy

        # Only arrays on the default device convert: move the others there first.
        home = array_api_strict.__array_namespace_info__().default_device()
        return numpy.asarray(array if array.device == home else array.to_device(home))
    return None


@hookimpl
def arraygrad_version(backend):
    if backend == NAME:
        import array_api_strict

        return array_api_strict.__version__
    return None


@hookimpl
def arraygrad_capabilities(backend):
    if backend == NAME:
        import array_api_strict

        flags = array_api_strict.get_array_api_strict_flags()
        return {"inplace": True, "data_dependent_shapes": flags.get("data_dependent_shapes", True),
                "float64": True}
    return None
