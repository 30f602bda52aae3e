"""Rules of the differentiable creation and data-type functions; the rest create constants."""

from ._core import LINEAR, defvjp, device_of


def to_device(x, device, stream=None):
    """``x`` on ``device``: the method where the array has one (a Variable, under create_graph,
    records it), else array-api-compat's ``to_device`` (torch tensors and dask arrays lack it)."""
    if device is None:  # arrays without a device attribute (dask): stay where they are
        return x
    if hasattr(x, "to_device"):
        return x.to_device(device) if stream is None else x.to_device(device, stream=stream)
    import array_api_compat  # only for such arrays: the core imports no array library

    return array_api_compat.to_device(x, device, stream=stream)


defvjp("tril", lambda xp, g, *, k=0: xp.tril(g, k=k), jvps=LINEAR)
defvjp("triu", lambda xp, g, *, k=0: xp.triu(g, k=k), jvps=LINEAR)
# The engine casts the gradient back to the input's dtype (real part for a real input).
defvjp("astype", lambda xp, g: g, params="dtype", jvps=LINEAR)
# xp.asarray(x, copy=True) of a Variable: a new array, the gradient passes through unchanged.
defvjp("copy", lambda xp, g: g, jvps=(lambda xp, t: t,))
# Back to the device the input came from.
defvjp("to_device", lambda xp, g, x: to_device(g, device_of(x)), params="device", jvps=LINEAR)
