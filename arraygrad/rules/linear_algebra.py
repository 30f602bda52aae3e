"""Rules of ``matmul``, ``matrix_transpose``, ``tensordot``, ``vecdot`` and the ``linalg``
extension's norms."""

from . import conj, defvjp, expand_reduced, is_complex, normalize_axis


def _as_matrices(xp, g, x1, x2):
    """Promote 1-D operands of matmul to matrices and ``g`` to match (the engine fits back)."""
    if x2.ndim == 1:
        x2 = xp.reshape(x2, (-1, 1))
        g = xp.reshape(g, tuple(g.shape) + (1,))
    if x1.ndim == 1:
        x1 = xp.reshape(x1, (1, -1))
        g = xp.reshape(g, tuple(g.shape[:-1]) + (1,) + tuple(g.shape[-1:]))
    return g, x1, x2


def vjp_matmul_x1(xp, g, x1, x2):
    vector = x1.ndim == 1
    g, x1, x2 = _as_matrices(xp, g, x1, x2)
    grad = g @ xp.matrix_transpose(conj(xp, x2))
    return grad[..., 0, :] if vector else grad  # batch axes are summed by the engine


def vjp_matmul_x2(xp, g, x1, x2):
    vector = x2.ndim == 1
    g, x1, x2 = _as_matrices(xp, g, x1, x2)
    grad = xp.matrix_transpose(conj(xp, x1)) @ g
    return grad[..., 0] if vector else grad


def _sgn(xp, x):
    if is_complex(x):
        magnitude = xp.abs(x)
        return x / xp.where(magnitude == 0, xp.ones_like(magnitude), magnitude)
    return xp.sign(x)


def vjp_vector_norm(xp, g, x, ans, *, axis=None, keepdims=False, ord=2):
    ans = expand_reduced(xp, ans, axis, x.ndim, keepdims)
    g = expand_reduced(xp, g, axis, x.ndim, keepdims)
    if ord == 0:
        return 0 * g * xp.abs(x)
    if ord in (float("inf"), float("-inf")):  # ties share equally, as in max/min
        mask = xp.astype(xp.abs(x) == ans, g.dtype)
        count = xp.sum(mask, axis=_axes(axis, x.ndim), keepdims=True)
        return g * _sgn(xp, x) * mask / count
    safe = xp.where(ans == 0, xp.ones_like(ans), ans)
    if ord == 2:
        grad = g * x / safe
    elif ord == 1:
        grad = g * _sgn(xp, x)
    else:
        grad = g * _sgn(xp, x) * xp.abs(x) ** (ord - 1) / safe ** (ord - 1)
    return xp.where(ans == 0, xp.zeros_like(grad), grad)  # PyTorch: 0 at a zero norm


def _axes(axis, ndim):
    return normalize_axis(axis, ndim) if ndim else None


defvjp("matmul", vjp_matmul_x1, vjp_matmul_x2, arrays="x1 x2",
       jvps=(lambda xp, t, x2: t @ x2, lambda xp, t, x1: x1 @ t))
defvjp("matrix_transpose", lambda xp, g: xp.matrix_transpose(g),
       jvps=(lambda xp, t: xp.matrix_transpose(t),))
defvjp("linalg.vector_norm", vjp_vector_norm)
