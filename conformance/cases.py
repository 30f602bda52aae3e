"""The conformance cases, as data: one record per (op, variant).

A record names the op, the input domain of each argument, the variant, the checks that apply,
and tolerances per dtype where the defaults do not fit. The tests, the ``arraygrad
conformance`` command and the pytest plugin all read ``CASES``.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from arraygrad import _standard

CHECKS = ("forward", "numerical", "cross_backend", "invariants", "second_order", "forward_mode")


@dataclasses.dataclass(frozen=True)
class Arg:
    """One argument: its shape and domain (``normal``, ``positive``, ``unit`` = (-0.9, 0.9),
    ``above1``, ``spd``, ``separated`` (symmetric, well-separated eigenvalues),
    ``well_conditioned``, ``nonzero``, ``complex``) or a constant (``const``)."""

    shape: tuple
    domain: str = "normal"
    const: object = None
    strided: bool = False  # pass a non-contiguous view (where the backend has strides)


@dataclasses.dataclass(frozen=True)
class Case:
    """One conformance case: ``call(xp, *arrays)`` on inputs drawn from ``args``."""

    op: str
    variant: str
    call: Callable
    args: tuple
    family: str
    second_order: bool = False
    requires: tuple = ()  # capabilities needed (``inplace``, ``data_dependent_shapes``)
    dtypes: tuple = ("float64", "float32")
    rtol: dict = dataclasses.field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.op}[{self.variant}]"


def _family(op: str) -> str:
    for family, names in _standard.FUNCTION_FAMILIES.items():
        if op in names:
            return family
    return "indexing" if op in ("getitem", "setitem") else "other"


CASES: list[Case] = []


def case(op, variant, call, *args, second_order=False, requires=(), dtypes=None, rtol=None):
    """Add a record (``args`` are :class:`Arg` or shapes)."""
    args = tuple(a if isinstance(a, Arg) else Arg(tuple(a)) for a in args)
    CASES.append(Case(op, variant, call, args, _family(op), second_order, tuple(requires),
                      dtypes or ("float64", "float32"), rtol or {}))


# ------------------------------------------------------------------- elementwise, unary
UNARY_DOMAINS = {
    "abs": "nonzero", "acos": "unit", "acosh": "above1", "asin": "unit", "asinh": "normal",
    "atan": "normal", "atanh": "unit", "conj": "complex", "cos": "normal", "cosh": "normal",
    "exp": "normal", "expm1": "normal", "imag": "complex", "log": "positive",
    "log1p": "positive", "log2": "positive", "log10": "positive", "negative": "normal",
    "positive": "normal", "real": "complex", "reciprocal": "nonzero", "sin": "normal",
    "sinh": "normal", "sqrt": "positive", "square": "normal", "tan": "unit", "tanh": "normal",
}
for _op, _domain in UNARY_DOMAINS.items():
    _f = (lambda op: lambda xp, x: getattr(xp, op)(x))(_op)
    case(_op, "2d", _f, Arg((3, 4), _domain), second_order=True)
    case(_op, "0d", _f, Arg((), _domain))
    case(_op, "size0", _f, Arg((0, 3), _domain))
    case(_op, "strided", _f, Arg((4, 3), _domain, strided=True))
    if _domain not in ("complex",) and _op not in ("abs",):
        case(_op, "complex", _f, Arg((3,), "complex"), dtypes=("complex128", "complex64"))

# ------------------------------------------------------------------ elementwise, binary
BINARY_DOMAINS = {
    "add": ("normal", "normal"), "subtract": ("normal", "normal"),
    "multiply": ("normal", "normal"), "divide": ("normal", "nonzero"),
    "pow": ("positive", "normal"), "maximum": ("normal", "normal"),
    "minimum": ("normal", "normal"), "logaddexp": ("normal", "normal"),
    "hypot": ("nonzero", "nonzero"), "atan2": ("nonzero", "nonzero"),
    "remainder": ("positive", "above1"), "copysign": ("nonzero", "nonzero"),
}
for _op, (_d1, _d2) in BINARY_DOMAINS.items():
    _f = (lambda op: lambda xp, a, b: getattr(xp, op)(a, b))(_op)
    case(_op, "same", _f, Arg((3, 4), _d1), Arg((3, 4), _d2), second_order=True)
    case(_op, "broadcast", _f, Arg((2, 1, 4), _d1), Arg((3, 1), _d2))
    case(_op, "0d", _f, Arg((), _d1), Arg((3,), _d2))
    if _op in ("add", "subtract", "multiply", "divide", "pow"):
        case(_op, "complex", _f, Arg((3,), "complex"), Arg((3,), "complex"),
             dtypes=("complex128", "complex64"))
case("clip", "scalars", lambda xp, x: xp.clip(x, -0.5, 0.5), (3, 4))
# hi = lo + a positive width, so that lo <= hi holds for every seed.
case("clip", "arrays", lambda xp, x, lo, width: xp.clip(x, lo, lo + width), (3, 4),
     Arg((4,), "normal"), Arg((3, 1), "positive"))

# ------------------------------------------------------------------------ statistical
AXES = {"None": None, "0": 0, "-1": -1, "(0,2)": (0, 2)}
for _op in ("sum", "mean", "prod", "max", "min", "var", "std"):
    for _name, _axis in AXES.items():
        for _keep in (False, True):
            _f = (lambda op, axis, keep: lambda xp, x: getattr(xp, op)(
                x, axis=axis, keepdims=keep))(_op, _axis, _keep)
            case(_op, f"axis={_name},keepdims={_keep}", _f, Arg((2, 3, 4), "nonzero"),
                 second_order=_name == "-1" and not _keep)
    case(_op, "0d", lambda xp, x, op=_op: getattr(xp, op)(x), Arg((), "nonzero"))
case("sum", "size0", lambda xp, x: xp.sum(x, axis=0), (0, 3))
case("var", "correction=1", lambda xp, x: xp.var(x, axis=1, correction=1), (3, 4))
case("std", "correction=1", lambda xp, x: xp.std(x, correction=1), (3, 4))
case("prod", "zeros", lambda xp, x: xp.prod(x * xp.astype(x > -0.5, x.dtype), axis=1), (3, 4))
case("cumulative_sum", "axis=1", lambda xp, x: xp.cumulative_sum(x, axis=1), (3, 4),
     second_order=True)
case("cumulative_sum", "include_initial", lambda xp, x: xp.cumulative_sum(
    x, axis=0, include_initial=True), (3, 4))
case("cumulative_prod", "axis=1", lambda xp, x: xp.cumulative_prod(x, axis=1), (3, 4),
     second_order=True)
case("cumulative_prod", "include_initial", lambda xp, x: xp.cumulative_prod(
    x, axis=0, include_initial=True), Arg((3, 4), "nonzero"))

# ----------------------------------------------------------------------- manipulation
MANIPULATIONS = {
    "reshape": lambda xp, x: xp.reshape(x, (4, 3)),
    "permute_dims": lambda xp, x: xp.permute_dims(x, (1, 0)),
    "expand_dims": lambda xp, x: xp.expand_dims(x, axis=1),
    "squeeze": lambda xp, x: xp.squeeze(xp.reshape(x, (3, 1, 4)), axis=1),
    "broadcast_to": lambda xp, x: xp.broadcast_to(x, (2, 3, 4)),
    "flip": lambda xp, x: xp.flip(x, axis=0),
    "roll": lambda xp, x: xp.roll(x, 2, axis=1),
    "moveaxis": lambda xp, x: xp.moveaxis(xp.reshape(x, (3, 2, 2)), 0, -1),
    "tile": lambda xp, x: xp.tile(x, (2, 1)),
    "repeat": lambda xp, x: xp.repeat(x, 2, axis=1),
    "unstack": lambda xp, x: xp.unstack(x, axis=1),
    "matrix_transpose": lambda xp, x: xp.matrix_transpose(x),
    "tril": lambda xp, x: xp.tril(x, k=1),
    "triu": lambda xp, x: xp.triu(x, k=-1),
    "astype": lambda xp, x: xp.astype(x, xp.float64) * 2,
    "sort": lambda xp, x: xp.sort(x, axis=0),
    "diff": lambda xp, x: xp.diff(x, axis=1, n=2),
    "getitem": lambda xp, x: x[1:, ::2],
    "take": lambda xp, x: xp.take(x, xp.asarray([0, 2, 2]), axis=0),
    "take_along_axis": lambda xp, x: xp.take_along_axis(x, xp.asarray([[0, 1, 1, 0]]), axis=0),
}
for _op, _f in MANIPULATIONS.items():
    case(_op, "basic", _f, Arg((3, 4), strided=_op in ("reshape", "flip")), second_order=True)
case("getitem", "int_array", lambda xp, x: x[xp.asarray([0, 2, 0]), 1], (3, 4))
case("getitem", "boolean_mask", lambda xp, x: x[x > 0], (3, 4),
     requires=("data_dependent_shapes",))
case("concat", "axis0", lambda xp, a, b: xp.concat([a, b], axis=0), (2, 3), (4, 3))
case("stack", "axis-1", lambda xp, a, b: xp.stack([a, b], axis=-1), (2, 3), (2, 3))
case("broadcast_arrays", "basic", lambda xp, a, b: xp.broadcast_arrays(a, b), (3, 1), (4,))
case("meshgrid", "xy", lambda xp, a, b: xp.meshgrid(a, b), (3,), (4,))
case("where", "basic", lambda xp, a, b: xp.where(a > 0, a, b), (3, 4), (4,))
case("unique_values", "distinct", lambda xp, x: xp.unique_values(x), (3, 4),
     requires=("data_dependent_shapes",))
case("setitem", "slice", lambda xp, x, v: _setitem(x, v), (3, 4), (4,),
     requires=("inplace",))
case("matmul", "2d", lambda xp, a, b: a @ b, (3, 4), (4, 2), second_order=True)
case("matmul", "batched_1d", lambda xp, a, b: xp.matmul(a, b), (2, 3, 4), (4,))
case("linalg.vector_norm", "axis=1", lambda xp, x: xp.linalg.vector_norm(x, axis=1), (3, 4))
case("linalg.vector_norm", "ord=3", lambda xp, x: xp.linalg.vector_norm(x, ord=3), (3, 4))


def _eigh_invariant(xp, a):
    values, vectors = xp.linalg.eigh(a)
    return values, vectors * vectors * values[..., None, :]  # v v does not depend on the sign


def _svd_invariant(xp, a):
    U, S, Vh = xp.linalg.svd(a, full_matrices=False)
    return S, (U * S[..., None, :]) @ Vh * 2 + U[..., :1] * Vh[..., :1, :]


def _outer_of_first_row(xp, v):
    """``v[0]^T v[0]``: a function of a singular vector that does not depend on its sign."""
    row = v[..., :1, :]
    return xp.matrix_transpose(row) @ row


def _qr_invariant(xp, a, mode="reduced"):
    Q, R = xp.linalg.qr(a, mode=mode)
    return Q * 2, 0.5 * R


def _setitem(x, v):
    y = x * 1
    y[1, :] = v * 2
    return y


# --------------------------------------------------------------------- linear algebra
LINALG = {
    "linalg.inv": (lambda xp, a: xp.linalg.inv(a), "well_conditioned"),
    "linalg.det": (lambda xp, a: xp.linalg.det(a), "well_conditioned"),
    "linalg.slogdet": (lambda xp, a: xp.linalg.slogdet(a)[1], "well_conditioned"),
    # Symmetric-input functions read one triangle: differentiate through a symmetrization.
    "linalg.cholesky": (lambda xp, a: xp.linalg.cholesky((a + xp.matrix_transpose(a)) / 2), "spd"),
    "linalg.eigvalsh": (lambda xp, a: xp.linalg.eigvalsh((a + xp.matrix_transpose(a)) / 2), "separated"),
    "linalg.eigh": (lambda xp, a: _eigh_invariant(xp, (a + xp.matrix_transpose(a)) / 2), "separated"),
    "linalg.svd": (lambda xp, a: _svd_invariant(xp, a), "well_conditioned"),
    "linalg.qr": (lambda xp, a: _qr_invariant(xp, a), "well_conditioned"),
    "linalg.eigvals": (lambda xp, a: xp.real(xp.linalg.eigvals(a)), "separated"),
    "linalg.svdvals": (lambda xp, a: xp.linalg.svdvals(a), "well_conditioned"),
    "linalg.pinv": (lambda xp, a: xp.linalg.pinv(a), "well_conditioned"),
    "linalg.matrix_power": (lambda xp, a: xp.linalg.matrix_power(a, 3), "normal"),
    "linalg.trace": (lambda xp, a: xp.linalg.trace(a), "normal"),
    "linalg.diagonal": (lambda xp, a: xp.linalg.diagonal(a), "normal"),
    "linalg.matrix_norm": (lambda xp, a: xp.linalg.matrix_norm(a), "normal"),
}
for _op, (_f, _domain) in LINALG.items():
    case(_op, "3x3", _f, Arg((3, 3), _domain), second_order=_op in ("linalg.inv", "linalg.det"))
# Rectangular matrices, options and complex inputs: variants a wrong rule cannot hide in.
for _shape in ((2, 3), (3, 2)):
    _name = "x".join(map(str, _shape))
    case("linalg.svd", _name, lambda xp, a: _svd_invariant(xp, a), Arg(_shape, "well_conditioned"))
    case("linalg.svd", f"{_name},Vh", lambda xp, a: _outer_of_first_row(
        xp, xp.linalg.svd(a, full_matrices=False)[2]), Arg(_shape, "well_conditioned"))
    case("linalg.qr", _name, lambda xp, a: _qr_invariant(xp, a), Arg(_shape, "well_conditioned"))
    case("linalg.pinv", _name, lambda xp, a: xp.linalg.pinv(a), Arg(_shape, "well_conditioned"))
case("linalg.qr", "2x3,complete", lambda xp, a: _qr_invariant(xp, a, mode="complete"),
     Arg((2, 3), "well_conditioned"))
case("linalg.cholesky", "upper", lambda xp, a: xp.linalg.cholesky((a + xp.matrix_transpose(a)) / 2, upper=True),
     Arg((3, 3), "spd"))
case("linalg.slogdet", "complex,sign", lambda xp, a, b: _real_view(xp, xp.linalg.slogdet(
    _complex(xp, a) + 0.3 * b)[0]), Arg((3, 3), "well_conditioned"), Arg((3, 3), "complex"),
    dtypes=("complex128", "complex64"))
case("linalg.slogdet", "complex,logabs", lambda xp, a, b: xp.linalg.slogdet(
    _complex(xp, a) + 0.3 * b)[1], Arg((3, 3), "well_conditioned"), Arg((3, 3), "complex"),
    dtypes=("complex128", "complex64"))
case("linalg.solve", "matrix", lambda xp, a, b: xp.linalg.solve(a, b),
     Arg((3, 3), "well_conditioned"), (3, 2))
case("linalg.outer", "basic", lambda xp, a, b: xp.linalg.outer(a, b), (3,), (4,))
case("linalg.cross", "basic", lambda xp, a, b: xp.linalg.cross(a, b), (2, 3), (2, 3))
case("tensordot", "axes=1", lambda xp, a, b: xp.tensordot(a, b, axes=1), (2, 3), (3, 4))
case("vecdot", "basic", lambda xp, a, b: xp.vecdot(a, b), (2, 3), (2, 3))
def _complex(xp, x):
    return xp.astype(x, xp.complex64 if x.dtype == xp.float32 else xp.complex128)


FFTS = {  # op: (input shape, complex input)
    "fft.fft": ((6,), True), "fft.ifft": ((6,), True), "fft.fftn": ((4, 6), True),
    "fft.ifftn": ((4, 6), True), "fft.rfft": ((6,), False), "fft.rfftn": ((4, 6), False),
    "fft.irfft": ((5,), True), "fft.irfftn": ((4, 5), True), "fft.hfft": ((5,), True),
    "fft.ihfft": ((6,), False), "fft.fftshift": ((6,), False), "fft.ifftshift": ((5,), False),
}
for _op, (_shape, _complex_input) in FFTS.items():
    _f = (lambda op, c: lambda xp, x: _real_view(xp, getattr(xp.fft, op[4:])(
        _complex(xp, x) if c else x)))(_op, _complex_input)
    case(_op, f"{len(_shape)}d", _f, _shape, second_order=_op == "fft.rfft")
    if _op in ("fft.fft", "fft.rfft", "fft.irfft"):
        _g = (lambda op, c: lambda xp, x: _real_view(xp, getattr(xp.fft, op[4:])(
            _complex(xp, x) if c else x, n=8, norm="ortho")))(_op, _complex_input)
        case(_op, "n=8,ortho", _g, _shape)


def _real_view(xp, z):
    """Complex outputs compared through both parts (a real function of the result)."""
    return xp.real(z) + 2 * xp.imag(z) if "complex" in str(z.dtype) else z


def draw(arg: Arg, dtype: str, rng) -> np.ndarray:
    """A host array for ``arg`` in ``dtype`` (complex dtypes draw both parts)."""
    shape, domain = arg.shape, arg.domain
    real_dtype = {"complex64": "float32", "complex128": "float64"}.get(dtype, dtype)
    if domain == "well_conditioned" and shape[-2] != shape[-1]:  # singular values 1..2
        m, n = shape[-2:]
        u, _ = np.linalg.qr(rng.standard_normal((m, m)))
        v, _ = np.linalg.qr(rng.standard_normal((n, n)))
        k = min(m, n)
        matrix = (u[:, :k] * np.linspace(1.0, 2.0, k)) @ v[:, :k].T
        return np.broadcast_to(matrix, shape).astype(real_dtype)
    if domain in ("spd", "separated", "well_conditioned"):
        n = shape[-1]
        q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        values = {"spd": np.linspace(1.0, 3.0, n), "separated": np.linspace(-2.0, 2.0, n),
                  "well_conditioned": np.linspace(1.0, 2.0, n)}[domain]
        matrix = (q * values) @ q.T
        if domain == "well_conditioned":
            matrix = matrix + 0.3 * np.triu(rng.standard_normal((n, n)), 1)
        return np.broadcast_to(matrix, shape).astype(real_dtype)
    values = {"normal": lambda: rng.standard_normal(shape),
              "positive": lambda: rng.uniform(0.5, 2.0, shape),
              "unit": lambda: rng.uniform(-0.9, 0.9, shape),
              "above1": lambda: rng.uniform(1.2, 3.0, shape),
              "nonzero": lambda: rng.uniform(0.3, 1.5, shape) * rng.choice([-1, 1], shape),
              "complex": lambda: rng.standard_normal(shape)}[domain]()
    if "complex" in dtype or domain == "complex":
        values = values + 1j * rng.uniform(0.3, 1.0, shape)
        return values.astype(dtype if "complex" in dtype else {"float32": "complex64"}.get(
            dtype, "complex128"))
    return values.astype(real_dtype)
