"""Rules of the ``fft`` extension. Every transform is linear, so its JVP is itself (``LINEAR``)
and its VJP is its adjoint: the inverse transform with the dual normalisation ("backward" and
"forward" swap, "ortho" stays), cropped or zero-padded back to the input's length. The real
transforms follow PyTorch: the adjoint of ``rfft`` pads the half spectrum and keeps the real
part; the adjoint of ``irfft`` is ``rfft`` with the interior bins doubled (each stands for two).
"""

from ._core import LINEAR, conj, defvjp, device_of, slice_along

DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _resize(xp, a, axis, length):
    """``a`` cropped or zero-padded along ``axis`` to ``length``."""
    axis %= a.ndim
    have = a.shape[axis]
    if have == length:
        return a
    if have > length:
        return slice_along(a, axis, 0, length)
    shape = list(a.shape)
    shape[axis] = length - have
    return xp.concat([a, xp.zeros(tuple(shape), dtype=a.dtype, device=device_of(a))], axis=axis)


def _axes(s, axes, ndim):
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    return [a % ndim for a in axes]


def _fit(xp, a, axes, shape):
    for axis in axes:
        a = _resize(xp, a, axis, shape[axis])
    return a


def _double_interior(xp, a, axis, n):
    """Double the bins 1 .. n - (n//2 + 1) along ``axis``: each stands for itself and its
    mirror image in the full spectrum of length ``n``."""
    axis %= a.ndim
    count = n - (n // 2 + 1)
    if count <= 0:
        return a
    weights = [1.0] + [2.0] * count + [1.0] * (a.shape[axis] - 1 - count)
    shape = [1] * a.ndim
    shape[axis] = a.shape[axis]
    return a * xp.reshape(xp.asarray(weights, dtype=xp.real(a).dtype, device=device_of(a)),
                          tuple(shape))


def vjp_fft(inverse):
    def vjp(xp, g, x_shape, *, n=None, axis=-1, norm="backward"):
        adjoint = xp.fft.ifft if not inverse else xp.fft.fft
        return _resize(xp, adjoint(g, axis=axis, norm=DUAL[norm]), axis, x_shape[axis])
    return vjp


def vjp_fftn(inverse):
    def vjp(xp, g, x_shape, *, s=None, axes=None, norm="backward"):
        axes = _axes(s, axes, len(x_shape))
        adjoint = xp.fft.ifftn if not inverse else xp.fft.fftn
        return _fit(xp, adjoint(g, axes=axes, norm=DUAL[norm]), axes, x_shape)
    return vjp


def vjp_rfft(xp, g, x_shape, *, n=None, axis=-1, norm="backward"):
    full = _resize(xp, g, axis, n or x_shape[axis])
    return _resize(xp, xp.real(xp.fft.ifft(full, axis=axis, norm=DUAL[norm])), axis,
                   x_shape[axis])


def vjp_rfftn(xp, g, x_shape, *, s=None, axes=None, norm="backward"):
    axes = _axes(s, axes, len(x_shape))
    last = axes[-1]
    full = _resize(xp, g, last, s[-1] if s is not None else x_shape[last])
    return _fit(xp, xp.real(xp.fft.ifftn(full, axes=axes, norm=DUAL[norm])), axes, x_shape)


def vjp_irfft(xp, g, x_shape, *, n=None, axis=-1, norm="backward"):
    n = n or 2 * (x_shape[axis] - 1)
    spectrum = _double_interior(xp, xp.fft.rfft(g, axis=axis, norm=DUAL[norm]), axis, n)
    return _resize(xp, spectrum, axis, x_shape[axis])


def vjp_irfftn(xp, g, x_shape, *, s=None, axes=None, norm="backward"):
    axes = _axes(s, axes, len(x_shape))
    last = axes[-1]
    n = s[-1] if s is not None else 2 * (x_shape[last] - 1)
    spectrum = _double_interior(xp, xp.fft.rfftn(g, axes=axes, norm=DUAL[norm]), last, n)
    return _fit(xp, spectrum, axes, x_shape)


# hfft(x) = irfft(conj(x)) and ihfft(x) = conj(rfft(x)), each with the dual normalisation.
def vjp_hfft(xp, g, x_shape, *, n=None, axis=-1, norm="backward"):
    return conj(xp, vjp_irfft(xp, g, x_shape, n=n, axis=axis, norm=DUAL[norm]))


def vjp_ihfft(xp, g, x_shape, *, n=None, axis=-1, norm="backward"):
    return vjp_rfft(xp, conj(xp, g), x_shape, n=n, axis=axis, norm=DUAL[norm])


defvjp("fft.fft", vjp_fft(inverse=False), jvps=LINEAR)
defvjp("fft.ifft", vjp_fft(inverse=True), jvps=LINEAR)
defvjp("fft.fftn", vjp_fftn(inverse=False), jvps=LINEAR)
defvjp("fft.ifftn", vjp_fftn(inverse=True), jvps=LINEAR)
defvjp("fft.rfft", vjp_rfft, jvps=LINEAR)
defvjp("fft.rfftn", vjp_rfftn, jvps=LINEAR)
defvjp("fft.irfft", vjp_irfft, jvps=LINEAR)
defvjp("fft.irfftn", vjp_irfftn, jvps=LINEAR)
defvjp("fft.hfft", vjp_hfft, jvps=LINEAR)
defvjp("fft.ihfft", vjp_ihfft, jvps=LINEAR)
defvjp("fft.fftshift", lambda xp, g, *, axes=None: xp.fft.ifftshift(g, axes=axes), jvps=LINEAR)
defvjp("fft.ifftshift", lambda xp, g, *, axes=None: xp.fft.fftshift(g, axes=axes), jvps=LINEAR)
