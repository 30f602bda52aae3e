"""Rules of the 2025.12 ``linalg.eig`` and ``linalg.eigvals`` (general, non-symmetric matrices).

The formulas are PyTorch's (``linalg_eig_backward`` and ``linalg_eig_jvp``): eigenvectors have
unit norm and an arbitrary phase, so only phase-invariant functions of them have gradients.
With ``E[i, j] = L[j] - L[i]`` (1 on the diagonal) and ``P = V^{-1} dA V``, the tangents are
``dL = diag(P)`` and ``dV = V (P / E, diagonal 0)`` minus its component along ``V``.
"""

from ._core import H, defvjp, device_of


def _eye(xp, n, device):
    return xp.eye(n, dtype=xp.bool, device=device)


def _gaps(xp, L):
    """``[i, j] = L[j] - L[i]``, and 1 on the diagonal."""
    gaps = L[..., None, :] - L[..., :, None]
    return xp.where(_eye(xp, L.shape[-1], device_of(L)), xp.ones_like(gaps), gaps)


def _diag_embed(xp, d):
    return d[..., None, :] * xp.astype(_eye(xp, d.shape[-1], device_of(d)), d.dtype)


def _backward(xp, gL, gV, L, V):
    Vh = H(xp, V)
    inner = xp.zeros_like(Vh) if gV is None else Vh @ gV
    if gV is not None:  # keep the gauge-invariant part of gV
        phases = xp.real(xp.linalg.diagonal(inner))
        inner = inner - Vh @ (V * xp.astype(phases, V.dtype)[..., None, :])
    inner = inner / xp.conj(_gaps(xp, L))
    eye = _eye(xp, L.shape[-1], device_of(L))
    inner = xp.where(eye, _diag_embed(xp, gL), inner)
    return xp.linalg.solve(Vh, inner @ Vh)


def vjp_eig(xp, g, ans):
    (gL, gV), (L, V) = g, ans
    return _backward(xp, gL, gV, L, V)


def jvp_eig(xp, t, ans):
    L, V = ans
    P = xp.linalg.solve(V, xp.astype(t, V.dtype) @ V)
    dL = xp.linalg.diagonal(P)
    dV = V @ xp.where(_eye(xp, L.shape[-1], device_of(L)), xp.zeros_like(P), P / _gaps(xp, L))
    phases = xp.real(xp.linalg.diagonal(H(xp, V) @ dV))
    return dL, dV - V * xp.astype(phases, V.dtype)[..., None, :]


def vjp_eigvals(xp, g, x):
    L, V = xp.linalg.eig(x)
    return _backward(xp, g, None, L, V)


def jvp_eigvals(xp, t, x):
    L, V = xp.linalg.eig(x)
    return xp.linalg.diagonal(xp.linalg.solve(V, xp.astype(t, V.dtype) @ V))


defvjp("linalg.eig", vjp_eig, outputs=None, jvps=(jvp_eig,))
defvjp("linalg.eigvals", vjp_eigvals, jvps=(jvp_eigvals,))
