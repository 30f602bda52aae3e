"""Rules of the ``linalg`` extension, with PyTorch's formulas and conventions (complex inputs
get conjugate Wirtinger gradients). ``H(a)`` is the conjugate transpose of the last two axes.
``det``'s gradient, the adjugate, is finite and right at singular matrices too; a gradient that
needs to solve with a singular matrix (``slogdet``'s, ``qr``'s of a rank-deficient input, ``eig``'s
of a defective one) raises an error naming the function (where the library raises one: JAX
gives infinite or NaN values). Eigenvectors and singular vectors are defined up to phase, so only phase-invariant functions of
them have gradients.
"""

from ._core import (LINEAR, RULES, TRANSPOSE, H, conj, defjoint, defvjp, device_of, host_reads,
                    is_complex, nondifferentiable, recorded, set_index)
from .linalg_eig import _diag_embed, _eye, _gaps, inv, invertible, solve, solve_triangular
from .linear_algebra import vjp_matmul_x1, vjp_matmul_x2
from .statistical import _prod_weights


def _scalar(g):
    return g[..., None, None]


# --------------------------------------------------------------------- inverses, determinants
def vjp_inv(xp, g, ans):
    return -(H(xp, ans) @ g @ H(xp, ans))


def _adjugate_h(xp, x, det):
    """``H(adj(x))``, ``conj(det(x)) x^-H``, as PyTorch computes it: by the inverse (one LU
    factorisation) where no determinant of the batch is exactly 0 (LAPACK's test of
    singularity); the product stays accurate near singular matrices, where the inverse's error
    cancels. Else, and under ``create_graph`` (whose derivative of that product would not
    cancel), from the SVD ``x = U diag(S) Vh``: ``conj(det(U) det(Vh)) U diag(prod_{j != i}
    S_j) Vh``, finite and right at singular ``x``, at the cost of several factorisations."""
    if x.shape[-1] == 0:
        return xp.zeros_like(x)
    if not recorded(x) and host_reads(x) and bool(xp.all(det != 0)):
        inverse = invertible(xp, x)
        if inverse is not None:
            return _scalar(conj(xp, det)) * H(xp, inverse)
    U, S, Vh = xp.linalg.svd(x, full_matrices=False)
    others = xp.astype(_prod_weights(xp, S, -1), U.dtype)  # exact with zero singular values
    phase = conj(xp, xp.linalg.det(U) * xp.linalg.det(Vh))
    return _scalar(phase) * ((U * others[..., None, :]) @ Vh)


def vjp_det(xp, g, x, ans):
    return _scalar(g) * _adjugate_h(xp, x, ans)


def vjp_slogdet(xp, g, x, ans):
    g_sign, g_logabs = g
    sign, logabs = ans
    c = xp.zeros_like(logabs) if g_logabs is None else g_logabs
    if g_sign is not None and "complex" in str(sign.dtype):  # the phase of the determinant moves with Im tr(A^-1 dA)
        # dL = Re(c tr(A^-1 dA)) with c = g_logabs - i Im(conj(sign) g_sign): gA = conj(c) A^-H
        c = c + 1j * xp.imag(conj(xp, sign) * g_sign)
    return _scalar(c) * H(xp, inv(xp, x, "linalg.slogdet"))


def vjp_solve(xp, g, x1, x2, ans, *, needed=(True, True)):
    # Both gradients come from one solve with A^H (one factorisation): gB = A^-H g, gA = -gB X^H.
    vector = x2.ndim == 1
    gb = solve(xp, H(xp, x1), g[..., None] if vector else g, "linalg.solve")
    ga = None
    if needed[0]:
        ga = -(gb @ H(xp, ans[..., None] if vector else ans))
    return [ga, (gb[..., 0] if vector else gb) if needed[1] else None]


defvjp("linalg.inv", vjp_inv,
       jvps=(lambda xp, t, ans: -(ans @ t @ ans),))
defvjp("linalg.det", vjp_det,
       jvps=(lambda xp, t, x, ans: xp.sum(conj(xp, _adjugate_h(xp, x, ans)) * t,
                                          axis=(-2, -1)),))
defvjp("linalg.slogdet", vjp_slogdet, outputs=None, jvps=TRANSPOSE, symbolic_zeros=True)
defjoint("linalg.solve", vjp_solve, arrays="x1 x2", jvps=TRANSPOSE)


# --------------------------------------------------------------------- factorizations
def _phi(xp, a):
    """The lower triangle with its diagonal halved."""
    n = a.shape[-1]
    half = xp.astype(_eye(xp, n, device_of(a)), a.dtype) * 0.5
    return xp.tril(a) - half * a


def vjp_cholesky(xp, g, ans, *, upper=False):
    L, gL = (H(xp, ans), H(xp, g)) if upper else (ans, g)
    # gA = L^-H Phi(L^H gL) L^-1, made Hermitian: two triangular solves with L^H.
    Lh = H(xp, L)
    inner = solve_triangular(xp, Lh, _phi(xp, Lh @ gL), "linalg.cholesky", upper=True)
    grad = H(xp, solve_triangular(xp, Lh, H(xp, inner), "linalg.cholesky", upper=True))
    return 0.5 * (grad + H(xp, grad))


def jvp_cholesky(xp, t, ans, *, upper=False):
    L = H(xp, ans) if upper else ans
    inner = solve_triangular(xp, L, H(xp, solve_triangular(
        xp, L, H(xp, t), "linalg.cholesky", upper=False)), "linalg.cholesky",
        upper=False)  # L^-1 dA L^-H
    dL = L @ _phi(xp, inner)
    return H(xp, dL) if upper else dL


def _hermitian_backward(xp, gL, gV, L, V):
    """``V (diag(gL) + skew(V^H gV) / 2 / E) V^H`` for a Hermitian eigendecomposition; with no
    gradient for the vectors (None), ``V diag(gL) V^H``: defined for repeated eigenvalues too."""
    gL = xp.zeros_like(L) if gL is None else gL
    if gV is None:
        return (V * xp.astype(gL, V.dtype)[..., None, :]) @ H(xp, V)
    inner = H(xp, V) @ gV
    inner = 0.5 * (inner - H(xp, inner)) / xp.astype(_gaps(xp, L), V.dtype)
    inner = xp.where(_eye(xp, L.shape[-1], device_of(L)), _diag_embed(xp, xp.astype(gL, V.dtype)),
                     inner)
    return V @ inner @ H(xp, V)


def vjp_eigh(xp, g, ans):
    (gL, gV), (L, V) = g, ans
    return _hermitian_backward(xp, gL, gV, L, V)


def vjp_eigvalsh(xp, g, x):
    L, V = xp.linalg.eigh(x)
    return _hermitian_backward(xp, g, None, L, V)


def jvp_eigvalsh(xp, t, x):
    _, V = xp.linalg.eigh(x)
    # diag(V^H t V)_i = sum_j conj(V[j, i]) (t V)[j, i]: one product, not two
    return xp.real(xp.sum(conj(xp, V) * (xp.astype(t, V.dtype) @ V), axis=-2))


def _skew(xp, a):
    return a - H(xp, a)


def _svd_backward(xp, gU, gS, gVh, U, S, Vh):
    """PyTorch's ``svd_backward`` for the reduced SVD ``A = U diag(S) Vh``; with no gradient for
    the vectors (None), ``U diag(gS) Vh``: defined for repeated singular values too."""
    if gU is None and gVh is None:
        diagonal = xp.zeros_like(S) if gS is None else gS
        return (U * xp.astype(diagonal, U.dtype)[..., None, :]) @ Vh
    V = H(xp, Vh)
    gV = None if gVh is None else H(xp, gVh)
    S_rows, S_cols = S[..., :, None], S[..., None, :]
    S2 = S * S
    gaps = xp.astype(_gaps(xp, S2), U.dtype)
    inner = xp.zeros(tuple(U.shape[:-2]) + (S.shape[-1], S.shape[-1]), dtype=U.dtype,
                     device=device_of(U))
    UhgU = _skew(xp, H(xp, U) @ gU) if gU is not None else None
    if UhgU is not None:
        inner = inner + UhgU * S_cols / gaps
    if gV is not None:
        inner = inner + S_rows * _skew(xp, H(xp, V) @ gV) / gaps
    eye = _eye(xp, S.shape[-1], device_of(S))
    diagonal = xp.zeros_like(S) if gS is None else gS
    inner = xp.where(eye, _diag_embed(xp, xp.astype(diagonal, U.dtype)), inner)
    if UhgU is not None and "complex" in str(U.dtype):
        inner = inner + _diag_embed(xp, xp.linalg.diagonal(UhgU) / (2 * xp.astype(S, U.dtype)))
    grad = U @ inner
    if gU is not None and U.shape[-2] > S.shape[-1]:
        grad = grad + (gU - U @ (H(xp, U) @ gU)) / xp.astype(S_cols, U.dtype)
    grad = grad @ Vh
    if gV is not None and Vh.shape[-1] > S.shape[-1]:
        grad = grad + U @ H(xp, (gV - V @ (H(xp, V) @ gV)) / xp.astype(S_cols, U.dtype))
    return grad


def vjp_svd(xp, g, ans, *, full_matrices=True):
    (gU, gS, gVh), (U, S, Vh) = g, ans
    k = S.shape[-1]
    if full_matrices and (U.shape[-1] != k or Vh.shape[-2] != k):
        U, Vh = U[..., :k], Vh[..., :k, :]
        gU = None if gU is None else gU[..., :k]
        gVh = None if gVh is None else gVh[..., :k, :]
    return _svd_backward(xp, gU, gS, gVh, U, S, Vh)


def vjp_svdvals(xp, g, x):
    U, S, Vh = xp.linalg.svd(x, full_matrices=False)
    return _svd_backward(xp, None, g, None, U, S, Vh)


def _qr_backward(xp, gQ, gR, Q, R):
    """PyTorch's ``linalg_qr_backward`` for ``A = QR`` with ``Q`` square or tall:
    ``gA = (gQ + Q copyltu(M)) R^-H`` with ``M = triu(gR R^H - Q^H gQ)``."""
    M = xp.triu(gR @ H(xp, R) - H(xp, Q) @ gQ)
    eye = xp.astype(_eye(xp, M.shape[-1], device_of(M)), M.dtype)
    S = M + H(xp, M) - eye * xp.astype(xp.real(M), M.dtype)
    return H(xp, solve_triangular(xp, R, H(xp, gQ + Q @ S), "linalg.qr", upper=True))


def vjp_qr(xp, g, ans, *, mode="reduced"):
    (gQ, gR), (Q, R) = g, ans
    gQ = xp.zeros_like(Q) if gQ is None else gQ
    gR = xp.zeros_like(R) if gR is None else gR
    m, n = Q.shape[-2], R.shape[-1]
    if m < n:  # Q is m x m in both modes. A = [X | Y], R = [U | V] with X = Q U, Y = Q V:
        # X's gradient is the square case with gQ + Y gV^H, Y's is Q gV (PyTorch's split).
        U, V, gU, gV = R[..., :m], R[..., m:], gR[..., :m], gR[..., m:]
        gX = _qr_backward(xp, gQ + (Q @ V) @ H(xp, gV), gU, Q, U)
        return xp.concat([gX, Q @ gV], axis=-1)
    if mode != "reduced" and m > n:
        raise NotImplementedError(
            f"linalg.qr: mode={mode!r} of a {m}x{n} input (more rows than columns) has no "
            "gradient: the last m - n columns of Q are not unique (as in PyTorch). Use "
            "mode='reduced'.")
    return _qr_backward(xp, gQ, gR, Q, R)


defvjp("linalg.cholesky", vjp_cholesky, jvps=(jvp_cholesky,))
defvjp("linalg.eigh", vjp_eigh, outputs=None, jvps=TRANSPOSE, symbolic_zeros=True)
defvjp("linalg.eigvalsh", vjp_eigvalsh, jvps=(jvp_eigvalsh,))
defvjp("linalg.svd", vjp_svd, outputs=None, jvps=TRANSPOSE, symbolic_zeros=True)
defvjp("linalg.svdvals", vjp_svdvals, jvps=TRANSPOSE)
defvjp("linalg.qr", vjp_qr, outputs=None, jvps=TRANSPOSE, symbolic_zeros=True)


# ----------------------------------------------------------------------- norms and powers
def vjp_pinv(xp, g, x, ans, **options):
    m, n = x.shape[-2], x.shape[-1]
    if m < n:  # pinv(x^H) = pinv(x)^H: the tall case, with every product O(m n min(m, n))
        return H(xp, vjp_pinv(xp, H(xp, g), H(xp, x), H(xp, ans)))
    P, Ph, gh = ans, H(xp, ans), H(xp, g)
    # Golub and Pereyra's derivative of the pseudo-inverse, transposed:
    # -P^H g P^H + (I - x P) g^H P P^H + P^H P g^H (I - P x), each product at most n x n.
    outside = gh @ (P @ Ph)  # g^H P P^H, then less its part in the range of x
    inside = Ph @ (P @ gh)  # P^H P g^H, then less its part along P x
    return (-(Ph @ (g @ Ph)) + (outside - x @ (P @ outside))
            + (inside - inside @ (P @ x)))


def _power_derivative(xp, X, G, n):
    """``sum_{k < n} X^k G X^(n-1-k)``, the top right block of ``[[X, G], [0, X]]^n``: by
    repeated squaring of the pair (power, block), three products a step, O(log n) products."""
    total, step = None, (X, G)
    while True:
        if n & 1:
            total = step if total is None else (total[0] @ step[0],
                                                total[0] @ step[1] + total[1] @ step[0])
        n >>= 1
        if not n:
            return total[1]
        power, block = step
        step = (power @ power, power @ block + block @ power)


def vjp_matrix_power(xp, g, x, *, n):
    if n == 0:
        return 0 * g
    base = x if n > 0 else inv(xp, x, "linalg.matrix_power")
    # d(B^n) = sum_k B^k dB B^(n-1-k), transposed: sum_k (B^H)^k g (B^H)^(n-1-k)
    grad = _power_derivative(xp, H(xp, base), g, abs(n))
    if n < 0:  # dB = -B dA B with B = A^-1
        grad = -(H(xp, base) @ grad @ H(xp, base))
    return grad


def vjp_matrix_norm(xp, g, x, ans, *, keepdims=False, ord="fro"):
    g = g if keepdims else g[..., None, None]
    ans = ans if keepdims else ans[..., None, None]
    if ord == "fro":  # 0 at a zero norm, as vector_norm: no second derivative there
        zero = ans == 0
        grad = g * x / xp.where(zero, xp.ones_like(ans), ans)
        return xp.where(zero, xp.zeros_like(grad), grad)
    if ord == "nuc" or ord in (2, -2):
        U, S, Vh = xp.linalg.svd(x, full_matrices=False)
        if ord == "nuc":
            return xp.astype(g, U.dtype) * (U @ Vh)
        pick = xp.astype(S == (xp.max(S, axis=-1, keepdims=True) if ord == 2 else
                               xp.min(S, axis=-1, keepdims=True)), U.dtype)
        pick = pick / xp.sum(pick, axis=-1, keepdims=True)
        return xp.astype(g, U.dtype) * ((U * pick[..., None, :]) @ Vh)
    # 1, -1: over columns (sums along rows); inf, -inf: over rows.
    axis = -2 if ord in (1, -1) else -1
    sums = xp.sum(xp.abs(x), axis=axis, keepdims=True)
    extreme = xp.max(sums, axis=-1 if axis == -2 else -2, keepdims=True) if ord in (
        1, float("inf")) else xp.min(sums, axis=-1 if axis == -2 else -2, keepdims=True)
    pick = xp.astype(sums == extreme, x.dtype)
    pick = pick / xp.sum(pick, axis=-1 if axis == -2 else -2, keepdims=True)
    if is_complex(x):
        magnitude = xp.abs(x)
        sign = x / xp.where(magnitude == 0, xp.ones_like(magnitude), magnitude)
    else:
        sign = xp.sign(x)  # not x / |x|: +-1 at an infinite entry too (PyTorch)
    return g * pick * sign


def _on_diagonal(xp, values, x_shape, offset):
    """Zeros of ``x_shape`` with ``values`` (its last axis the offset diagonal's length, or 1)
    on the offset diagonal: one strided write into the flattened matrices, O(min(rows, cols))
    after the zeros, as PyTorch places it (a mask over every entry costs a pass more)."""
    rows, cols = x_shape[-2], x_shape[-1]
    n = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    grad = xp.zeros(tuple(x_shape[:-2]) + (rows * cols,), dtype=values.dtype,
                    device=device_of(values))
    if n:
        first = offset if offset >= 0 else -offset * cols  # entry (i, i + offset), flattened
        grad = set_index(xp, grad, (..., slice(first, first + (n - 1) * (cols + 1) + 1,
                                                cols + 1)), values)
    return xp.reshape(grad, tuple(x_shape))


def vjp_trace(xp, g, x_shape, *, offset=0, dtype=None):
    return _on_diagonal(xp, g[..., None], x_shape, offset)


def vjp_diagonal(xp, g, x_shape, *, offset=0):
    return _on_diagonal(xp, g, x_shape, offset)


def vjp_cross(xp, g, other, first, axis):
    return xp.linalg.cross(conj(xp, other), g, axis=axis) if first else xp.linalg.cross(
        g, conj(xp, other), axis=axis)


defvjp("linalg.pinv", vjp_pinv, jvps=TRANSPOSE)
defvjp("linalg.matrix_power", vjp_matrix_power, params="n", jvps=TRANSPOSE)
defvjp("linalg.matrix_norm", vjp_matrix_norm, jvps=TRANSPOSE)
defvjp("linalg.trace", vjp_trace, jvps=LINEAR)
defvjp("linalg.diagonal", vjp_diagonal, jvps=LINEAR)
defvjp("linalg.outer",
       lambda xp, g, x2: g @ conj(xp, x2),
       lambda xp, g, x1: conj(xp, x1) @ g, arrays="x1 x2",
       jvps=(lambda xp, t, x2: t[..., :, None] * x2[..., None, :],
             lambda xp, t, x1: x1[..., :, None] * t[..., None, :]))
defvjp("linalg.cross",
       lambda xp, g, x2, *, axis=-1: xp.linalg.cross(conj(xp, x2), g, axis=axis),
       lambda xp, g, x1, *, axis=-1: xp.linalg.cross(g, conj(xp, x1), axis=axis),
       arrays="x1 x2",
       jvps=(lambda xp, t, x2, *, axis=-1: xp.linalg.cross(t, x2, axis=axis),
             lambda xp, t, x1, *, axis=-1: xp.linalg.cross(x1, t, axis=axis)))
defvjp("linalg.matmul", vjp_matmul_x1, vjp_matmul_x2, arrays="x1 x2",
       jvps=(lambda xp, t, x2: t @ x2, lambda xp, t, x1: x1 @ t))
defvjp("linalg.matrix_transpose", lambda xp, g: xp.matrix_transpose(g), jvps=LINEAR)
RULES["linalg.tensordot"] = RULES["tensordot"]
RULES["linalg.vecdot"] = RULES["vecdot"]
nondifferentiable("linalg.matrix_rank")
