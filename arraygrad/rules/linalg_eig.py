"""Rules of the 2025.12 ``linalg.eig`` and ``linalg.eigvals`` (general, non-symmetric matrices).

The formulas are PyTorch's (``linalg_eig_backward`` and ``linalg_eig_jvp``): eigenvectors have
unit norm and an arbitrary phase, so only phase-invariant functions of them have gradients.
With ``E[i, j] = L[j] - L[i]`` (1 on the diagonal) and ``P = V^{-1} dA V``, the tangents are
``dL = diag(P)`` and ``dV = V (P / E, diagonal 0)`` minus its component along ``V``.
"""

from ..errors import BackwardError
from ._core import H, defvjp, device_of, kernel


def solve(xp, a, b, op):
    """``xp.linalg.solve(a, b)`` in a rule of ``op``; a singular ``a`` (where the gradient is
    infinite or undefined) raises an error naming ``op``, not the library's own."""
    return _nonsingular(xp.linalg.solve, op, a, b)


def solve_triangular(xp, a, b, op, *, upper):
    """``a^-1 b`` for a triangular ``a`` (upper or lower) in a rule of ``op``: the backend's
    kernel (capability ``solve_triangular``), O(n^2) per column, where it has one; else the
    standard's ``linalg.solve`` (an LU factorisation more: the same values). A singular ``a``
    is refused as in :func:`solve`."""
    fast = kernel(a, "solve_triangular")
    if fast is None:
        return solve(xp, a, b, op)
    return _nonsingular(lambda a, b: fast(a, b, upper=upper), op, a, b)


def inv(xp, a, op):
    """``xp.linalg.inv(a)`` in a rule of ``op``, refusing a singular ``a`` as :func:`solve`."""
    return _nonsingular(xp.linalg.inv, op, a)


def invertible(xp, a):
    """``xp.linalg.inv(a)``, or None where the library finds ``a`` singular."""
    try:
        return xp.linalg.inv(a)
    except Exception as error:  # noqa: BLE001 (NumPy's LinAlgError, torch's _LinAlgError...)
        if not _is_singular_error(error):
            raise
        return None


def _is_singular_error(error) -> bool:
    return "LinAlgError" in type(error).__name__ or "singular" in str(error).lower()


def _nonsingular(function, op, a, *rest):
    try:
        return function(a, *rest)
    except Exception as error:  # NumPy's LinAlgError, torch's _LinAlgError...
        if not _is_singular_error(error):
            raise
        raise BackwardError(
            f"{op}: its gradient needs to solve with a singular {tuple(a.shape)} {a.dtype} "
            f"matrix ({type(error).__name__}: {error}), where the gradient is infinite or "
            "undefined. Keep the input away from singular matrices (add a small multiple of the "
            "identity, say), or use a function whose gradient exists there (linalg.det for "
            "linalg.slogdet, linalg.pinv or linalg.lstsq-like least squares for linalg.inv and "
            "linalg.solve).") from error


def _eye(xp, n, device):
    return xp.eye(n, dtype=xp.bool, device=device)


def _gaps(xp, L):
    """``[i, j] = L[j] - L[i]``, and 1 on the diagonal."""
    gaps = L[..., None, :] - L[..., :, None]
    return xp.where(_eye(xp, L.shape[-1], device_of(L)), xp.ones_like(gaps), gaps)


def _diag_embed(xp, d):
    return d[..., None, :] * xp.astype(_eye(xp, d.shape[-1], device_of(d)), d.dtype)


def _backward(xp, gL, gV, L, V):
    """``V^-H (diag(gL) + <gauge-invariant V^H gV> / conj(E)) V^H``; with no gradient for the
    vectors (None), ``V^-H diag(gL) V^H``: defined for repeated eigenvalues too."""
    Vh = H(xp, V)
    gL = xp.zeros_like(L) if gL is None else gL
    if gV is None:
        return solve(xp, Vh, _diag_embed(xp, gL) @ Vh, "linalg.eig")
    inner = Vh @ gV  # keep the gauge-invariant part of gV
    phases = xp.real(xp.linalg.diagonal(inner))
    inner = inner - Vh @ (V * xp.astype(phases, V.dtype)[..., None, :])
    inner = inner / xp.conj(_gaps(xp, L))
    eye = _eye(xp, L.shape[-1], device_of(L))
    inner = xp.where(eye, _diag_embed(xp, gL), inner)
    return solve(xp, Vh, inner @ Vh, "linalg.eig")


def vjp_eig(xp, g, ans):
    (gL, gV), (L, V) = g, ans
    return _backward(xp, gL, gV, L, V)


def jvp_eig(xp, t, ans):
    L, V = ans
    P = solve(xp, V, xp.astype(t, V.dtype) @ V, "linalg.eig")
    dL = xp.linalg.diagonal(P)
    dV = V @ xp.where(_eye(xp, L.shape[-1], device_of(L)), xp.zeros_like(P), P / _gaps(xp, L))
    phases = xp.real(xp.linalg.diagonal(H(xp, V) @ dV))
    return dL, dV - V * xp.astype(phases, V.dtype)[..., None, :]


def vjp_eigvals(xp, g, x):
    L, V = xp.linalg.eig(x)
    return _backward(xp, g, None, L, V)


def jvp_eigvals(xp, t, x):
    L, V = xp.linalg.eig(x)
    return xp.linalg.diagonal(solve(xp, V, xp.astype(t, V.dtype) @ V, "linalg.eigvals"))


defvjp("linalg.eig", vjp_eig, outputs=None, jvps=(jvp_eig,), symbolic_zeros=True)
defvjp("linalg.eigvals", vjp_eigvals, jvps=(jvp_eigvals,))
