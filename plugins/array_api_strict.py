"""array-api-strict backend: the standard's reference implementation, with nothing extra."""

from arraygrad import BackendSpec, hookimpl


def _to_numpy(array):
    import array_api_strict
    import numpy

    # Only arrays on the default device convert: move the others there first.
    home = array_api_strict.__array_namespace_info__().default_device()
    return numpy.asarray(array if array.device == home else array.to_device(home))


def _capabilities():
    import array_api_strict

    flags = array_api_strict.get_array_api_strict_flags()  # the user may switch them
    return {"data_dependent_shapes": flags.get("data_dependent_shapes", True)}


@hookimpl
def arraygrad_backend():
    return BackendSpec(
        name="array_api_strict", arrays=("array_api_strict._array_object:Array",),
        namespace="array_api_strict", to_numpy=_to_numpy, capabilities=_capabilities)
