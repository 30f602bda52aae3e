"""The conformance cases, as data: one record per (op, variant).

A record names the op, the input domain of each argument, the variant, the checks that apply,
and tolerances per dtype where the defaults do not fit. The tests, the ``arraygrad
conformance`` command and the pytest plugin all read ``CASES``.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from typing import Callable

import numpy as np

import arraygrad as ag
from arraygrad import _standard
from arraygrad._namespace import Namespace
from arraygrad.rules import OUTSIDE_STANDARD, RULES
from arraygrad.rules.special import SPECIAL

from .behaviour import BEHAVIOURS
from .nested import FAMILIES as NESTED_FAMILIES
from .programs import FAMILIES as PROGRAM_FAMILIES

CHECKS = ("forward", "numerical", "jacobian", "cross_backend", "external", "invariants",
          "second_order", "forward_mode", "convention", "behaviour")


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
    second_order: bool = True  # Hessian-vector products, wherever the function is smooth
    requires: tuple = ()  # capabilities needed (``inplace``, ``data_dependent_shapes``)
    dtypes: tuple = ("float64", "float32")
    rtol: dict = dataclasses.field(default_factory=dict)
    # At a point where the function is not differentiable (ties, a kink), the gradient follows a
    # convention (PyTorch's): ``convention(host, us)`` computes it by hand with NumPy, and the
    # checks by finite differences are skipped.
    convention: Callable | None = None
    nan_expected: bool = False  # NaN gradients are the right answer (else NaN fails)
    behaviour: Callable | None = None  # an engine behaviour, ``behaviour(backend, rng)``

    @property
    def id(self) -> str:
        return f"{self.op}[{self.variant}]"

    @property
    def extension(self) -> bool:
        """Whether the op belongs to an optional extension (``linalg``, ``fft``, and arraygrad's
    ``special``, SciPy's special functions where the backend has them) or is outside the
    standard: a backend without it skips its cases."""
        return self.op.startswith(("linalg.", "fft.", "special.")) or self.outside_standard

    @property
    def outside_standard(self) -> bool:
        """Whether the op is outside the standard (``einsum``), offered where the backend has it."""
        return self.op in OUTSIDE_STANDARD


def _family(op: str) -> str:
    for family, names in _standard.FUNCTION_FAMILIES.items():
        if op in names:
            return family
    if op.startswith(("autograd.", "special.")):
        return op.split(".")[0]
    return "indexing" if op in ("getitem", "setitem") else "other"


CASES: list[Case] = []


def case(op, variant, call, *args, second_order=True, requires=(), dtypes=None, rtol=None,
         convention=None, nan_expected=False):
    """Add a record (``args`` are :class:`Arg` or shapes)."""
    args = tuple(a if isinstance(a, Arg) else Arg(tuple(a)) for a in args)
    CASES.append(Case(op, variant, call, args, _family(op), second_order, tuple(requires),
                      dtypes or ("float64", "float32"), rtol or {}, convention, nan_expected))


def _getitem(x, key):
    """``x[key]`` on a Variable; on a backend's own array, the ``get_index`` its plugin declares,
    which that operator calls: so the forward check compares the two, and a key the library
    refuses but the standard allows (torch's negative steps) is checked too."""
    backend = None if isinstance(x, ag.Variable) else ag.registry.of(x)
    return x[key] if backend is None else backend.get_index(x, key)


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
    case(_op, "2d", _f, Arg((3, 4), _domain))
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
    "nextafter": ("normal", "normal"),
}
for _op, (_d1, _d2) in BINARY_DOMAINS.items():
    _f = (lambda op: lambda xp, a, b: getattr(xp, op)(a, b))(_op)
    case(_op, "same", _f, Arg((3, 4), _d1), Arg((3, 4), _d2))
    case(_op, "broadcast", _f, Arg((2, 1, 4), _d1), Arg((3, 1), _d2))
    case(_op, "0d", _f, Arg((), _d1), Arg((3,), _d2))
    if _op in ("add", "subtract", "multiply", "divide", "pow"):
        case(_op, "complex", _f, Arg((3,), "complex"), Arg((3,), "complex"),
             dtypes=("complex128", "complex64"))
case("clip", "scalars", lambda xp, x: xp.clip(x, -0.5, 0.5), (3, 4))
# hi = lo + a positive width, so that lo <= hi holds for every seed.
case("clip", "arrays", lambda xp, x, lo, width: xp.clip(x, lo, lo + width), Arg((3, 4), "wide"),
     Arg((4,), "normal"), Arg((3, 1), "positive"))  # x spread on both sides of [lo, hi]

# ------------------------------------------------------------------------ statistical
AXES = {"None": None, "0": 0, "-1": -1, "(0,2)": (0, 2)}
for _op in ("sum", "mean", "prod", "max", "min", "var", "std"):
    for _name, _axis in AXES.items():
        for _keep in (False, True):
            _f = (lambda op, axis, keep: lambda xp, x: getattr(xp, op)(
                x, axis=axis, keepdims=keep))(_op, _axis, _keep)
            case(_op, f"axis={_name},keepdims={_keep}", _f, Arg((2, 3, 4), "nonzero"))
    case(_op, "0d", lambda xp, x, op=_op: getattr(xp, op)(x), Arg((), "nonzero"))
case("sum", "size0", lambda xp, x: xp.sum(x, axis=0), (0, 3))
case("var", "correction=1", lambda xp, x: xp.var(x, axis=1, correction=1), (3, 4))
case("std", "correction=1", lambda xp, x: xp.std(x, correction=1), (3, 4))
case("prod", "zeros", lambda xp, x: xp.prod(x * xp.astype(x > -0.5, x.dtype), axis=1), (3, 4))
case("cumulative_sum", "axis=1", lambda xp, x: xp.cumulative_sum(x, axis=1), (3, 4))
case("cumulative_sum", "include_initial", lambda xp, x: xp.cumulative_sum(
    x, axis=0, include_initial=True), (3, 4))
case("cumulative_prod", "axis=1", lambda xp, x: xp.cumulative_prod(x, axis=1), (3, 4))
case("cumulative_prod", "include_initial", lambda xp, x: xp.cumulative_prod(
    x, axis=0, include_initial=True), Arg((3, 4), "nonzero"))

# ----------------------------------------------------------------------- manipulation
MANIPULATIONS = {
    "reshape": lambda xp, x: xp.reshape(x, (4, 3)),
    "permute_dims": lambda xp, x: xp.permute_dims(xp.reshape(x, (2, 3, 2)), (1, 2, 0)),
    "expand_dims": lambda xp, x: xp.expand_dims(x, axis=1),
    "squeeze": lambda xp, x: xp.squeeze(xp.reshape(x, (3, 1, 4)), axis=1),
    "broadcast_to": lambda xp, x: xp.broadcast_to(x, (2, 3, 4)),
    "flip": lambda xp, x: xp.flip(x, axis=0),
    "roll": lambda xp, x: xp.roll(x, 1, axis=1),  # 1 != -1 (mod 4)
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
    "getitem": lambda xp, x: _getitem(x, np.s_[1:, ::2]),
    "take": lambda xp, x: xp.take(x, xp.asarray([0, 2, 2]), axis=0),
    "take_along_axis": lambda xp, x: xp.take_along_axis(x, xp.asarray([[0, 1, 1, 0]]), axis=0),
}
for _op, _f in MANIPULATIONS.items():
    case(_op, "basic", _f, Arg((3, 4), strided=_op in ("reshape", "flip")))
case("getitem", "int_array", lambda xp, x: _getitem(x, np.s_[xp.asarray([0, 2, 0]), 1]), (3, 4))
case("getitem", "boolean_mask", lambda xp, x: _getitem(x, x > 0), (3, 4),
     requires=("data_dependent_shapes",))
case("concat", "axis0", lambda xp, a, b: xp.concat([a, b], axis=0), (2, 3), (4, 3))
case("stack", "axis-1", lambda xp, a, b: xp.stack([a, b], axis=-1), (2, 3), (2, 3))
case("broadcast_arrays", "basic", lambda xp, a, b: xp.broadcast_arrays(a, b), (3, 1), (4,))
case("meshgrid", "xy", lambda xp, a, b: xp.meshgrid(a, b), (3,), (4,))
case("where", "basic", lambda xp, a, b: xp.where(a > 0, a, b), (3, 4), (4,))
case("unique_values", "distinct", lambda xp, x: xp.unique_values(x), (3, 4),
     requires=("data_dependent_shapes",))
case("setitem", "slice", lambda xp, x, v: _setitem_at(x, (1, slice(None)), v), (3, 4), (4,),
     requires=("inplace",))
case("matmul", "2d", lambda xp, a, b: a @ b, (3, 4), (4, 2))
case("matmul", "batched_1d", lambda xp, a, b: xp.matmul(a, b), (2, 3, 4), (4,))
# A square product in both spellings: the operator calls the backend's matmul, as the function.
case("matmul", "square", lambda xp, a, b: a @ b, (3, 4), (4, 3))
case("matmul", "square,function", lambda xp, a, b: xp.matmul(a, b), (3, 4), (4, 3))
for _variant, _shapes in (("complex,2d@1d", ((3, 4), (4,))), ("complex,1d@2d", ((3,), (3, 4)))):
    case("matmul", _variant, lambda xp, a, b: a @ b, *(Arg(s, "complex") for s in _shapes),
         dtypes=("complex128", "complex64"))  # matrix-vector products: conj on each side
case("linalg.vector_norm", "axis=1", lambda xp, x: xp.linalg.vector_norm(x, axis=1), (3, 4))
case("linalg.vector_norm", "ord=3", lambda xp, x: xp.linalg.vector_norm(x, ord=3), (3, 4))


def _eigh_invariant(xp, a):
    values, vectors = xp.linalg.eigh(a)
    # |v|^2 depends neither on the sign nor, for complex inputs, on the phase of a vector
    return values, xp.real(vectors * xp.conj(vectors)) * values[..., None, :]


def _svd_invariant(xp, a, full_matrices=False):
    U, S, Vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return S, (U * S[..., None, :]) @ Vh * 2 + U[..., :1] * Vh[..., :1, :]


def _outer_of_first_row(xp, v):
    """``v[0]^T v[0]``: a function of a singular vector that does not depend on its sign."""
    row = v[..., :1, :]
    return xp.matrix_transpose(row) @ row


def _qr_invariant(xp, a, mode="reduced"):
    Q, R = xp.linalg.qr(a, mode=mode)
    return Q * 2, 0.5 * R


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
    case(_op, "3x3", _f, Arg((3, 3), _domain))
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
# einsum, outside the standard (skipped where the backend has none): explicit and implicit
# outputs, repeated letters (diagonals, traces), an ellipsis, letters of one operand alone,
# letters of length 1 broadcast, several operands.
EINSUM = {  # variant: (subscripts, shapes)
    "matmul": ("ij,jk->ik", ((3, 4), (4, 2))),
    "implicit": ("jk,ij", ((4, 2), (3, 4))),  # output "ik": sorted, not in the operands' order
    "transpose": ("ij->ji", ((3, 4),)),
    "trace": ("ii", ((3, 3),)),
    "diagonal": ("ii->i", ((3, 3),)),
    "diagonal_summed": ("iij->j", ((3, 3, 2),)),
    "repeated_and_shared": ("iji,j->ij", ((3, 2, 3), (2,))),
    "ellipsis_batch": ("...ij,...jk->...ik", ((2, 3, 4), (4, 2))),
    "ellipsis_implicit": ("...ij,j", ((2, 3, 4), (4,))),
    "outer": ("i,j->ij", ((3,), (4,))),
    "three_operands": ("ij,jk,kl->il", ((2, 3), (3, 4), (4, 2))),
    "letter_of_one_operand": ("ij,jk->k", ((3, 4), (4, 2))),
    "broadcast_length_1": ("ij,ij->i", ((3, 1), (3, 4))),
    "to_scalar": ("ij,ij->", ((3, 4), (3, 4))),
}
for _variant, (_subscripts, _shapes) in EINSUM.items():
    case("einsum", _variant, (lambda s: lambda xp, *xs: xp.einsum(s, *xs))(_subscripts), *_shapes)
for _variant in ("matmul", "trace", "three_operands", "diagonal_summed"):
    _subscripts, _shapes = EINSUM[_variant]
    case("einsum", f"complex,{_variant}", (lambda s: lambda xp, *xs: _real_view(
        xp, xp.einsum(s, *xs)))(_subscripts), *(Arg(s, "complex") for s in _shapes),
        dtypes=("complex128", "complex64"))


def _outside(name):
    """``xp.<name>`` for a function outside the standard made of the standard's functions:
    arraygrad's, with its own rule; on another library's namespace (torch.autograd's, JAX's
    reference), the same composition of that library's standard functions, which it
    differentiates by itself."""
    def call(xp, *arrays, **options):
        if isinstance(xp, Namespace) or getattr(xp, "offers_outside_standard", False):
            return getattr(xp, name)(*arrays, **options)
        return RULES[name].forward(xp, *arrays, **options)
    return call


# Named functions outside the standard, offered on every backend: a loss head's logsumexp,
# softmax and log_softmax, and sinc, xlogy (large values: the shift by the maximum must hold).
case("logsumexp", "axis=None", lambda xp, x: _outside("logsumexp")(xp, x), (3, 4))
case("logsumexp", "axis=1", lambda xp, x: _outside("logsumexp")(xp, x, axis=1), (3, 4))
case("logsumexp", "axis=(0,2),keepdims", lambda xp, x: _outside("logsumexp")(
    xp, x, axis=(0, 2), keepdims=True), (2, 3, 4))
case("logsumexp", "large", lambda xp, x: _outside("logsumexp")(xp, x * 500.0, axis=-1), (3, 4))
case("logsumexp", "0d", lambda xp, x: _outside("logsumexp")(xp, x), ())
for _op in ("softmax", "log_softmax"):
    case(_op, "axis=-1", (lambda op: lambda xp, x: _outside(op)(xp, x))(_op), (3, 4))
    case(_op, "axis=0", (lambda op: lambda xp, x: _outside(op)(xp, x, axis=0))(_op), (3, 4))
    case(_op, "large", (lambda op: lambda xp, x: _outside(op)(xp, x * 500.0))(_op), (2, 5))
case("sinc", "basic", lambda xp, x: _outside("sinc")(xp, x), (3, 4))
case("xlogy", "basic", lambda xp, a, b: _outside("xlogy")(xp, a, b), (3, 4),
     Arg((3, 4), "positive"))
case("xlogy", "broadcast", lambda xp, a, b: _outside("xlogy")(xp, a, b), (3, 4),
     Arg((4,), "positive"))


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
    case(_op, f"{len(_shape)}d", _f, _shape)
    if _op in ("fft.fft", "fft.rfft", "fft.irfft"):
        _g = (lambda op, c: lambda xp, x: _real_view(xp, getattr(xp.fft, op[4:])(
            _complex(xp, x) if c else x, n=8, norm="ortho")))(_op, _complex_input)
        case(_op, "n=8,ortho", _g, _shape)


# ------------------------------------------------------- variants a wrong rule cannot hide in
# Every option of every function, asymmetric parameters (a shift that is not its own inverse, a
# permutation that is not an involution, rectangular matrices), Python scalars and arrays in each
# place an argument allows, complex inputs, and ties or zeros where a convention applies.
def _complex_view(xp, a, b):
    """A complex array from two real inputs (both parts perturbed by the checks)."""
    return _complex(xp, a) + _complex(xp, b) * xp.asarray(1j, dtype=_complex(xp, b).dtype)


COMPLEX = ("complex128", "complex64")
VARIANTS = [  # (op, variant, call, args...)
    ("roll", "axis=None,shift=-5", lambda xp, x: xp.roll(x, -5), (3, 4)),
    ("roll", "tuple", lambda xp, x: xp.roll(x, (1, -1), axis=(0, 1)), (3, 4)),
    ("roll", "same_axis_twice", lambda xp, x: xp.roll(x, (1, 2), axis=(1, 1)), (3, 5)),
    ("permute_dims", "2d", lambda xp, x: xp.permute_dims(x, (1, 0)), (3, 4)),
    ("moveaxis", "tuples", lambda xp, x: xp.moveaxis(x, (0, 1), (2, 0)), (2, 3, 4)),
    ("expand_dims", "axis=-1", lambda xp, x: xp.expand_dims(x, axis=-1), (3, 4)),
    ("expand_dims", "axis=0", lambda xp, x: xp.expand_dims(x, axis=0), (3, 4)),
    ("squeeze", "tuple", lambda xp, x: xp.squeeze(xp.reshape(x, (1, 3, 1, 4)), axis=(0, 2)),
     (3, 4)),
    ("flip", "axis=None", lambda xp, x: xp.flip(x), (2, 3, 4)),
    ("flip", "axis=(0,2)", lambda xp, x: xp.flip(x, axis=(0, 2)), (2, 3, 4)),
    ("tile", "more_reps", lambda xp, x: xp.tile(x, (2, 1, 3)), (3, 4)),
    ("tile", "fewer_reps", lambda xp, x: xp.tile(x, (2,)), (2, 3)),
    ("repeat", "array", lambda xp, x: xp.repeat(x, xp.asarray([2, 0, 1, 3]), axis=1), (3, 4)),
    ("repeat", "axis=None", lambda xp, x: xp.repeat(x, 3), (3, 4)),
    ("reshape", "-1", lambda xp, x: xp.reshape(x, (2, -1)), (3, 4)),
    ("broadcast_to", "leading", lambda xp, x: xp.broadcast_to(x, (2, 3, 4)), (3, 1)),
    ("tril", "k=-1,rectangular", lambda xp, x: xp.tril(x, k=-1), (2, 3, 4)),
    ("triu", "k=2", lambda xp, x: xp.triu(x, k=2), (3, 4)),
    ("sort", "descending", lambda xp, x: xp.sort(x, axis=1, descending=True), (3, 4)),
    ("sort", "axis=-1,unstable", lambda xp, x: xp.sort(x, stable=False), (3, 4)),
    ("diff", "prepend", lambda xp, x, p: xp.diff(x, axis=1, prepend=p), (3, 4), (3, 1)),
    ("diff", "append", lambda xp, x, a: xp.diff(x, axis=0, n=1, append=a), (3, 4), (2, 4)),
    ("diff", "prepend_append_n3", lambda xp, x, p, a: xp.diff(x, n=3, prepend=p, append=a),
     (3, 4), (3, 2), (3, 1)),
    ("take", "axis=1,3d", lambda xp, x: xp.take(x, xp.asarray([3, 0, 1, 1]), axis=1), (2, 4, 3)),
    ("take", "1d", lambda xp, x: xp.take(x, xp.asarray([4, 1, 1])), (5,)),
    ("take_along_axis", "axis=-1", lambda xp, x: xp.take_along_axis(
        x, xp.asarray([[2, 0, 0], [1, 3, 2], [0, 0, 0]]), axis=-1), (3, 4)),
    ("getitem", "negative_step", lambda xp, x: _getitem(x, np.s_[::-1, 3:0:-2]), (3, 4)),
    ("getitem", "integer", lambda xp, x: _getitem(x, np.s_[-1, :]), (3, 4)),
    ("getitem", "ellipsis_none", lambda xp, x: _getitem(x, np.s_[..., None, 1:3]), (2, 3, 4)),
    ("getitem", "int_arrays", lambda xp, x: _getitem(
        x, np.s_[xp.asarray([2, 0, 2]), xp.asarray([3, 1, 3])]), (3, 4)),
    ("getitem", "int_array_axis1", lambda xp, x: _getitem(x, np.s_[1, xp.asarray([3, 1, 3])]),
     (3, 4)),
    ("concat", "axis=1,three", lambda xp, a, b, c: xp.concat([a, b, c], axis=1),
     (2, 1), (2, 3), (2, 2)),
    ("concat", "axis=None", lambda xp, a, b: xp.concat((a, b), axis=None), (2, 3), (4,)),
    ("concat", "axis=-1", lambda xp, a, b: xp.concat([a, b], axis=-1), (2, 3), (2, 1)),
    ("stack", "axis=0,three", lambda xp, a, b, c: xp.stack([a, b, c]), (2, 3), (2, 3), (2, 3)),
    ("stack", "axis=1", lambda xp, a, b: xp.stack((a, b), axis=1), (2, 3), (2, 3)),
    ("unstack", "axis=0", lambda xp, x: xp.unstack(x), (3, 4)),
    ("unstack", "axis=-1", lambda xp, x: xp.unstack(x, axis=-1)[1:], (2, 3)),
    ("broadcast_arrays", "three", lambda xp, a, b, c: xp.broadcast_arrays(a, b, c),
     (2, 1, 1), (3, 1), (4,)),
    ("meshgrid", "ij,three", lambda xp, a, b, c: xp.meshgrid(a, b, c, indexing="ij"),
     (2,), (3,), (4,)),
    ("meshgrid", "xy,three", lambda xp, a, b, c: xp.meshgrid(a, b, c, indexing="xy"),
     (2,), (3,), (4,)),
    ("where", "scalar", lambda xp, a: xp.where(a > 0, a, 0.5), (3, 4)),
    ("where", "scalar_first", lambda xp, a: xp.where(a > 0, -2.0, a), (3, 4)),
    ("where", "broadcast_condition", lambda xp, a, b: xp.where(
        xp.asarray([True, False, True]), a, b), (2, 3), (2, 1)),
    ("setitem", "scalar_value", lambda xp, x: _setitem_at(x, (slice(None), 1), 3.0), (3, 4)),
    ("setitem", "integer_column", lambda xp, x, v: _setitem_at(x, (slice(None), -1), v),
     (3, 4), (3,)),
    ("astype", "to_complex", lambda xp, x: _real_view(xp, _complex(xp, x) * (1 + 2j)), (3, 4)),
    ("astype", "copy", lambda xp, x: xp.astype(x, x.dtype, copy=True) * x, (3, 4)),
    ("reshape", "copy", lambda xp, x: xp.reshape(x, (6, 2), copy=True), (3, 4)),
    ("cumulative_sum", "dtype", lambda xp, x: xp.cumulative_sum(x, axis=0, dtype=xp.float64),
     (3, 4)),
    ("cumulative_prod", "dtype", lambda xp, x: xp.cumulative_prod(x, axis=1, dtype=xp.float64),
     Arg((3, 4), "nonzero")),
    ("linalg.trace", "dtype", lambda xp, a: xp.linalg.trace(a, dtype=xp.float64), (3, 3)),
    ("matrix_transpose", "batched", lambda xp, x: xp.matrix_transpose(x), (2, 3, 4)),
    # Python scalars and reflected operators.
    ("subtract", "scalar_left", lambda xp, x: 2.0 - x, (3, 4)),
    ("subtract", "scalar_right", lambda xp, x: x - 2, (3, 4)),
    ("divide", "scalar_left", lambda xp, x: 2.0 / x, Arg((3, 4), "nonzero")),
    ("divide", "scalar_right", lambda xp, x: x / 4, (3, 4)),
    ("pow", "scalar_exponent", lambda xp, x: x ** 3, (3, 4)),
    ("pow", "fractional_exponent", lambda xp, x: x ** 1.5, Arg((3, 4), "positive")),
    ("pow", "scalar_base", lambda xp, x: 2.0 ** x, (3, 4)),
    ("pow", "function_scalar", lambda xp, x: xp.pow(x, 2.5), Arg((3, 4), "positive")),
    ("multiply", "scalar_left", lambda xp, x: 3 * x, (3, 4)),
    ("add", "scalar_left", lambda xp, x: 1.5 + x * x, (3, 4)),
    ("negative", "operator", lambda xp, x: -x * x, (3, 4)),
    ("abs", "operator", lambda xp, x: abs(x), Arg((3, 4), "nonzero")),
    ("atan2", "scalar_right", lambda xp, x: xp.atan2(x, 2.0), (3, 4)),
    ("atan2", "swapped", lambda xp, a, b: xp.atan2(b, a * 2), Arg((3,), "nonzero"),
     Arg((3,), "nonzero")),
    ("maximum", "scalar", lambda xp, x: xp.maximum(x, 0.1), (3, 4)),
    ("minimum", "scalar_left", lambda xp, x: xp.minimum(0.1, x), (3, 4)),
    ("hypot", "scalar", lambda xp, x: xp.hypot(x, 0.5), (3, 4)),
    ("copysign", "scalar", lambda xp, x: xp.copysign(x, -1.0), Arg((3, 4), "nonzero")),
    ("logaddexp", "scalar", lambda xp, x: xp.logaddexp(1.0, x), (3, 4)),
    ("remainder", "scalar", lambda xp, x: xp.remainder(x, 0.7), Arg((3, 4), "positive")),
    ("clip", "min_only", lambda xp, x: xp.clip(x, min=-0.2), (3, 4)),
    ("clip", "max_only", lambda xp, x, hi: xp.clip(x, max=hi), (3, 4), (4,)),
    # In-place operators on a copy (the copy's gradient flows through each update).
    ("add", "inplace", lambda xp, x, b: _inplace(x, b, "__iadd__"), (3, 4), (4,)),
    ("subtract", "inplace", lambda xp, x, b: _inplace(x, b, "__isub__"), (3, 4), (4,)),
    ("multiply", "inplace", lambda xp, x, b: _inplace(x, b, "__imul__"), (3, 4), (4,)),
    ("divide", "inplace", lambda xp, x, b: _inplace(x, b, "__itruediv__"), (3, 4),
     Arg((4,), "nonzero")),
    ("pow", "inplace", lambda xp, x, b: _inplace(x, b, "__ipow__"), Arg((3, 4), "positive"),
     (4,)),
    ("remainder", "signs", lambda xp, a, b: xp.remainder(a, b), Arg((3, 4), "nonzero"),
     Arg((3, 4), "nonzero")),
    ("setitem", "saved_by_another_op", lambda xp, x, v: _setitem_saved(xp, x, v), (3, 4), (4,)),
    ("setitem", "mask", lambda xp, x: _setitem_at(x, _every_third(xp, (3, 4)), 3.0), (3, 4)),
    ("setitem", "mask_of_no_true", lambda xp, x: _setitem_saved(
        xp, x, 3.0, xp.zeros((3, 4), dtype=xp.bool)), (3, 4)),
    # Unsorted axes of a 4-d input, and inputs large enough for the memory-reuse paths.
    ("sum", "axis=(2,0),4d", lambda xp, x: xp.sum(x, axis=(2, 0)), (2, 3, 2, 2)),
    ("mean", "axis=(3,1),keepdims,4d", lambda xp, x: xp.mean(x, axis=(3, 1), keepdims=True),
     (2, 3, 2, 2)),
    ("prod", "axis=(2,0),4d", lambda xp, x: xp.prod(x, axis=(-2, 0)), Arg((2, 3, 2, 2), "nonzero")),
    ("max", "axis=(3,0),4d", lambda xp, x: xp.max(x, axis=(3, 0)), (2, 3, 2, 2)),
    ("var", "axis=(2,1),4d", lambda xp, x: xp.var(x, axis=(2, 1)), (2, 3, 2, 2)),
    ("sum", "large", lambda xp, x: xp.sum(x, axis=0), (3, 40000)),
    ("mean", "large", lambda xp, x: xp.mean(x), (2, 40000)),
    ("sum", "large,of_sin", lambda xp, x: xp.sum(xp.sin(x)), (2, 20000)),
    ("multiply", "large", lambda xp, a, b: a * b + xp.exp(a), (2, 40000), (40000,)),
    ("negative", "large,gaussian", lambda xp, x: xp.exp(-x * x) + xp.sin(x * -x), (2, 4096)),
    # Statistical options.
    ("sum", "dtype", lambda xp, x: xp.sum(x, axis=1, dtype=xp.float64), (3, 4)),
    ("prod", "dtype", lambda xp, x: xp.prod(x, axis=0, dtype=xp.float64), Arg((3, 4), "nonzero")),
    ("prod", "two_zeros", lambda xp, x: xp.prod(x * xp.asarray(
        [[1.0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 1, 1]], dtype=x.dtype), axis=1), (3, 4)),
    ("mean", "axis=(0,1),keepdims", lambda xp, x: xp.mean(x, axis=(0, 1), keepdims=True),
     (2, 3, 4)),
    ("var", "correction=2,axis=(0,2)", lambda xp, x: xp.var(x, axis=(0, 2), correction=2),
     (2, 3, 4)),
    ("std", "correction=0.5,keepdims", lambda xp, x: xp.std(x, axis=-1, correction=0.5,
                                                             keepdims=True), (3, 4)),
    ("cumulative_sum", "axis=0,3d", lambda xp, x: xp.cumulative_sum(x, axis=0), (3, 2, 4)),
    ("cumulative_sum", "1d", lambda xp, x: xp.cumulative_sum(x), (5,)),
    ("cumulative_sum", "include_initial,axis=-1", lambda xp, x: xp.cumulative_sum(
        x, axis=-1, include_initial=True), (3, 4)),
    ("cumulative_prod", "zeros", lambda xp, x: xp.cumulative_prod(x * xp.asarray(
        [[1.0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 1, 0]], dtype=x.dtype), axis=1), (3, 4)),
    # Zeros among the inputs themselves (above, a mask multiplies them away): the gradient at
    # a zero, and at a second zero of the slice, is the product of the other entries.
    ("cumulative_prod", "zero_inputs", lambda xp, x: xp.cumulative_prod(x, axis=1),
     Arg((3, 5), "zeros")),
    ("prod", "zero_inputs", lambda xp, x: xp.prod(x, axis=1), Arg((3, 5), "zeros")),
    ("cumulative_prod", "1d,include_initial", lambda xp, x: xp.cumulative_prod(
        x, include_initial=True), Arg((5,), "nonzero")),
    ("cumulative_prod", "axis=0,3d", lambda xp, x: xp.cumulative_prod(x, axis=0),
     Arg((3, 2, 2), "nonzero")),
    # Linear algebra: every option, rectangular and batched.
    ("matmul", "1d@2d", lambda xp, a, b: a @ b, (3,), (3, 4)),
    ("matmul", "2d@1d", lambda xp, a, b: a @ b, (3, 4), (4,)),
    ("matmul", "1d@1d", lambda xp, a, b: xp.matmul(a, b), (4,), (4,)),
    ("matmul", "broadcast_batch", lambda xp, a, b: a @ b, (2, 1, 3, 4), (3, 4, 2)),
    ("tensordot", "axes=2", lambda xp, a, b: xp.tensordot(a, b, axes=2), (2, 3, 4), (3, 4, 5)),
    ("tensordot", "axes=0", lambda xp, a, b: xp.tensordot(a, b, axes=0), (2, 3), (4,)),
    ("tensordot", "axes=pairs", lambda xp, a, b: xp.tensordot(a, b, axes=((2, 0), (0, 1))),
     (2, 3, 4), (4, 2, 5)),  # a's axes in the order (1, 2, 0): not their own inverse
    ("tensordot", "axes=first", lambda xp, a, b: xp.tensordot(a, b, axes=((0,), (1,))),
     (4, 2, 3), (2, 4)),
    ("vecdot", "axis=-2", lambda xp, a, b: xp.vecdot(a, b, axis=-2), (3, 4), (3, 1)),
    ("linalg.vecdot", "basic", lambda xp, a, b: xp.linalg.vecdot(a, b, axis=-2), (3, 4), (3, 4)),
    ("linalg.matmul", "basic", lambda xp, a, b: xp.linalg.matmul(a, b), (2, 3), (3, 4)),
    ("linalg.tensordot", "basic", lambda xp, a, b: xp.linalg.tensordot(a, b, axes=1),
     (2, 3), (3, 4)),
    ("linalg.matrix_transpose", "basic", lambda xp, a: xp.linalg.matrix_transpose(a) * a[0, 0],
     (3, 3)),
    ("linalg.vector_norm", "ord=1", lambda xp, x: xp.linalg.vector_norm(x, ord=1, axis=0),
     Arg((3, 4), "nonzero")),
    ("linalg.vector_norm", "ord=inf", lambda xp, x: xp.linalg.vector_norm(
        x, ord=float("inf"), axis=-1, keepdims=True), (3, 4)),
    ("linalg.vector_norm", "ord=-inf", lambda xp, x: xp.linalg.vector_norm(
        x, ord=-float("inf"), axis=1), (3, 4)),
    ("linalg.vector_norm", "ord=-1.5", lambda xp, x: xp.linalg.vector_norm(x, ord=-1.5),
     Arg((3, 4), "nonzero")),
    ("linalg.vector_norm", "ord=0", lambda xp, x: xp.linalg.vector_norm(x, ord=0) * x,
     Arg((3, 4), "nonzero")),
    ("linalg.vector_norm", "axis=(0,2),keepdims", lambda xp, x: xp.linalg.vector_norm(
        x, axis=(0, 2), keepdims=True), (2, 3, 4)),
    ("linalg.matrix_norm", "keepdims,batched", lambda xp, x: xp.linalg.matrix_norm(
        x, keepdims=True), (2, 3, 4)),
    ("linalg.matrix_power", "n=0", lambda xp, a: xp.linalg.matrix_power(a, 0) * a, (3, 3)),
    ("linalg.matrix_power", "n=1", lambda xp, a: xp.linalg.matrix_power(a, 1), (3, 3)),
    ("linalg.matrix_power", "n=-2", lambda xp, a: xp.linalg.matrix_power(a, -2),
     Arg((3, 3), "well_conditioned")),
    ("linalg.trace", "offset=1,rectangular", lambda xp, a: xp.linalg.trace(a, offset=1),
     (2, 3, 4)),
    ("linalg.trace", "offset=-1", lambda xp, a: xp.linalg.trace(a, offset=-1), (4, 3)),
    ("linalg.diagonal", "offset=-1", lambda xp, a: xp.linalg.diagonal(a, offset=-1), (4, 3)),
    ("linalg.diagonal", "offset=2,batched", lambda xp, a: xp.linalg.diagonal(a, offset=2),
     (2, 3, 5)),
    ("linalg.cross", "axis=-2", lambda xp, a, b: xp.linalg.cross(a, b, axis=-2), (3, 2), (3, 2)),
    ("linalg.cross", "broadcast", lambda xp, a, b: xp.linalg.cross(a, b), (2, 3), (3,)),
    ("linalg.outer", "lengths", lambda xp, a, b: xp.linalg.outer(a, b) * a[0], (2,), (5,)),
    ("linalg.solve", "vector", lambda xp, a, b: xp.linalg.solve(a, b),
     Arg((3, 3), "well_conditioned"), (3,)),
    ("linalg.solve", "batched", lambda xp, a, b: xp.linalg.solve(a, b),
     Arg((2, 3, 3), "well_conditioned"), (2, 3, 2)),
    ("linalg.inv", "batched", lambda xp, a: xp.linalg.inv(a), Arg((2, 3, 3), "well_conditioned")),
    ("linalg.det", "batched", lambda xp, a: xp.linalg.det(a), Arg((2, 3, 3), "well_conditioned")),
    ("linalg.det", "negative", lambda xp, a: xp.linalg.det(-a), Arg((3, 3), "well_conditioned")),
    ("linalg.slogdet", "sign", lambda xp, a: xp.linalg.slogdet(-a)[1] * xp.linalg.slogdet(-a)[0],
     Arg((3, 3), "well_conditioned")),
    ("linalg.pinv", "rtol", lambda xp, a: xp.linalg.pinv(a, rtol=1e-3),
     Arg((3, 2), "well_conditioned")),
    ("linalg.svdvals", "2x3", lambda xp, a: xp.linalg.svdvals(a), Arg((2, 3), "well_conditioned")),
    ("linalg.svd", "full_matrices,square", lambda xp, a: _svd_invariant(xp, a, True),
     Arg((3, 3), "well_conditioned")),
    ("linalg.eig", "eigenvectors", lambda xp, a: _eig_invariant(xp, a), Arg((3, 3), "diagonalizable")),
    ("linalg.eig", "eigenvalues", lambda xp, a: _real_view(xp, xp.linalg.eig(a)[0]),
     Arg((3, 3), "diagonalizable")),
    ("linalg.eig", "complex_eigenvalues", lambda xp, a: _eig_invariant(xp, a),
     Arg((3, 3), "rotation")),
    ("linalg.eigvals", "nonsymmetric", lambda xp, a: _real_view(xp, xp.linalg.eigvals(a)),
     Arg((3, 3), "diagonalizable")),
    ("to_device", "same", lambda xp, x: x.to_device(x.device) * x, (3, 4)),
    ("copy", "asarray", lambda xp, x: xp.asarray(x, copy=True) * xp.exp(x), (3, 4)),
]
# Every FFT with each norm and with n or s (cropping and padding) and axes.
for _op, (_shape, _complex_input) in FFTS.items():
    _wrap = (lambda c: lambda xp, x: _complex(xp, x) if c else x)(_complex_input)
    _name = _op[4:]
    if "shift" in _name:
        VARIANTS.append((_op, "axes", (lambda n, w: lambda xp, x: getattr(xp.fft, n)(
            w(xp, x), axes=(0,)))(_name, _wrap), (3, 5) if _name == "fftshift" else (4, 5)))
        continue
    for _norm in ("forward", "ortho"):
        VARIANTS.append((_op, f"norm={_norm}", (lambda n, w, norm: lambda xp, x: _real_view(
            xp, getattr(xp.fft, n)(w(xp, x), norm=norm)))(_name, _wrap, _norm), _shape))
    if len(_shape) == 1:
        for _n in (4, 9):
            VARIANTS.append((_op, f"n={_n}", (lambda n, w, size: lambda xp, x: _real_view(
                xp, getattr(xp.fft, n)(w(xp, x), n=size)))(_name, _wrap, _n), (2, *_shape)))
        VARIANTS.append((_op, "axis=0", (lambda n, w: lambda xp, x: _real_view(
            xp, getattr(xp.fft, n)(w(xp, x), axis=0)))(_name, _wrap), (_shape[0], 3)))
    else:
        for _s in ((3, 8), (5, 4)):
            VARIANTS.append((_op, f"s={_s}".replace(" ", ""), (lambda n, w, s: lambda xp, x:
                             _real_view(xp, getattr(xp.fft, n)(w(xp, x), s=s, axes=(0, 1))))(_name, _wrap, _s),
                             _shape))
        VARIANTS.append((_op, "axes=(0,)", (lambda n, w: lambda xp, x: _real_view(
            xp, getattr(xp.fft, n)(w(xp, x), axes=(0,))))(_name, _wrap), _shape))
        VARIANTS.append((_op, "s,axes=(1,0)", (lambda n, w: lambda xp, x: _real_view(
            xp, getattr(xp.fft, n)(w(xp, x), s=(7, 3), axes=(1, 0))))(_name, _wrap), _shape))
for _op, _variant, _f, *_args in VARIANTS:
    case(_op, _variant, _f, *_args,
         requires=("inplace",) if _variant == "inplace" or _op == "setitem" else ())

# Complex inputs, for every function that accepts them.
COMPLEX_CASES = {
    "sum": lambda xp, x: xp.sum(x, axis=1),
    "mean": lambda xp, x: xp.mean(x, axis=0),
    "prod": lambda xp, x: xp.prod(x, axis=1),
    "cumulative_sum": lambda xp, x: xp.cumulative_sum(x, axis=1),
    "cumulative_prod": lambda xp, x: xp.cumulative_prod(x, axis=0),
    "matmul": lambda xp, x: x @ xp.matrix_transpose(xp.flip(x, axis=0)[:2, :]),
    "tensordot": lambda xp, x: xp.tensordot(x, xp.flip(x, axis=1), axes=((0,), (0,))),
    "vecdot": lambda xp, x: xp.vecdot(x, xp.flip(x, axis=1) * 2),  # conjugates its first
    "linalg.outer": lambda xp, x: xp.linalg.outer(x[0, :], x[1, :]),
    "linalg.vector_norm": lambda xp, x: xp.linalg.vector_norm(x, axis=1),
    "linalg.matrix_norm": lambda xp, x: xp.linalg.matrix_norm(x),
    "linalg.trace": lambda xp, x: xp.linalg.trace(x[:, :3]),
    "linalg.diagonal": lambda xp, x: xp.linalg.diagonal(x, offset=1),
    "where": lambda xp, x: xp.where(xp.real(x) > 0, x, x * x),
    "concat": lambda xp, x: xp.concat([x, x[:1, :] * 2], axis=0),
    "take": lambda xp, x: xp.take(x, xp.asarray([2, 0, 0]), axis=0),
    "abs": lambda xp, x: xp.abs(x),
    "sqrt": lambda xp, x: xp.sqrt(x),
}
for _name, _f in MANIPULATIONS.items():
    if _name not in ("astype", "sort", "unstack"):
        COMPLEX_CASES.setdefault(_name, _f)
COMPLEX_CASES.update({
    "stack": lambda xp, x: xp.stack([x, x * x], axis=1),
    "unstack": lambda xp, x: xp.unstack(x, axis=1)[2],
    "broadcast_arrays": lambda xp, x: xp.broadcast_arrays(x, x[:1, :1] * 2)[1],
    "meshgrid": lambda xp, x: xp.meshgrid(x[0, :], x[1, :3] * 2, indexing="ij")[1],
    "setitem": lambda xp, x: _setitem_at(x, (slice(0, 2), 1), x[2, :2]),
    "copy": lambda xp, x: xp.asarray(x, copy=True) * xp.flip(x, axis=1),
})
for _op in ("fft.fft", "fft.ifft", "fft.fftn", "fft.ifftn", "fft.irfft", "fft.irfftn",
            "fft.hfft", "fft.fftshift", "fft.ifftshift"):
    COMPLEX_CASES[_op] = (lambda name: lambda xp, x: getattr(xp.fft, name)(x))(_op[4:])
for _op, _f in COMPLEX_CASES.items():
    case(_op, "complex,3x4", (lambda f: lambda xp, a, b: _real_view(xp, f(xp, _complex_view(
        xp, a, b))))(_f), (3, 4), (3, 4), dtypes=COMPLEX,
        requires=("inplace",) if _op == "setitem" else ())
COMPLEX_LINALG = {
    "linalg.inv": lambda xp, a: xp.linalg.inv(a),
    "linalg.det": lambda xp, a: xp.linalg.det(a),
    "linalg.solve": lambda xp, a: xp.linalg.solve(a, a[:, :2] * 2),
    "linalg.svdvals": lambda xp, a: xp.linalg.svdvals(a),
    "linalg.svd": lambda xp, a: _svd_invariant(xp, a),
    "linalg.pinv": lambda xp, a: xp.linalg.pinv(a),
    "linalg.matrix_power": lambda xp, a: xp.linalg.matrix_power(a, 2),
    "linalg.matrix_norm": lambda xp, a: xp.linalg.matrix_norm(a, ord="nuc"),
    "linalg.cholesky": lambda xp, a: xp.linalg.cholesky(a @ xp.conj(xp.matrix_transpose(a))),
    "linalg.eigvalsh": lambda xp, a: xp.linalg.eigvalsh(a + xp.conj(xp.matrix_transpose(a))),
    "linalg.eigh": lambda xp, a: _eigh_invariant(xp, a + xp.conj(xp.matrix_transpose(a))),
    "linalg.qr": lambda xp, a: _qr_invariant(xp, a),
    "linalg.slogdet": lambda xp, a: xp.linalg.slogdet(a)[1],
    "linalg.eigvals": lambda xp, a: xp.linalg.eigvals(a),
    "linalg.eig": lambda xp, a: _eig_invariant(xp, a),
}
for _op, _f in COMPLEX_LINALG.items():
    case(_op, "complex", (lambda f: lambda xp, a, b: _real_view(xp, f(xp, _complex(xp, a) +
         0.3 * _complex_view(xp, b, b * 0.5))))(_f), Arg((3, 3), "well_conditioned"), (3, 3),
         dtypes=COMPLEX)
for _ord in ("fro", "nuc", 1, -1, 2, -2, float("inf"), -float("inf")):
    case("linalg.matrix_norm", f"ord={_ord},3x4", (lambda o: lambda xp, a: xp.linalg.matrix_norm(
        a, ord=o))(_ord), Arg((3, 4), "well_conditioned"))


# Ties and zeros: the gradient follows PyTorch's convention, written out with NumPy.
def _extremum_convention(op, axis):
    def gradient(host, us):
        (x,), (u,) = host, us
        best = getattr(np, op)(x, axis=axis, keepdims=True)
        winners = x == best
        return [winners / np.sum(winners, axis=axis, keepdims=True) * np.reshape(u, best.shape)]
    return gradient


def _pairwise_convention(wins):
    def gradient(host, us):
        (a, b), (u,) = host, us
        share = np.where(a == b, 0.5, 0.0)
        return [np.sum(u * (wins(a, b) + share), axis=0, keepdims=False) if a.shape != u.shape
                else u * (wins(a, b) + share), u * (wins(b, a) + share)]
    return gradient


def _sort_convention(descending):
    def gradient(host, us):
        (x,), (u,) = host, us
        order = np.argsort(-x if descending else x, axis=1, kind="stable")
        grad = np.zeros_like(x)
        np.put_along_axis(grad, order, u, axis=1)
        return [grad]
    return gradient


for _op in ("max", "min"):
    for _name, _axis in (("None", None), ("1", 1), ("0", 0), ("(0,1)", (0, 1))):
        case(_op, f"ties,axis={_name}", (lambda op, axis: lambda xp, x: getattr(xp, op)(
            x, axis=axis))(_op, _axis), Arg((3, 5), "ties"),
            convention=_extremum_convention(_op, _axis))
case("maximum", "ties", lambda xp, a, b: xp.maximum(a, b), Arg((3, 5), "ties"),
     Arg((3, 5), "ties"), convention=_pairwise_convention(np.greater))
case("minimum", "ties", lambda xp, a, b: xp.minimum(a, b), Arg((3, 5), "ties"),
     Arg((3, 5), "ties"), convention=_pairwise_convention(np.less))
case("nextafter", "ties", lambda xp, a, b: xp.nextafter(a, b), Arg((3, 5), "ties"),
     Arg((3, 5), "ties"), convention=lambda host, us: [us[0] * (host[0] != host[1]),
                                                      np.zeros_like(host[1])])
case("abs", "zeros", lambda xp, x: xp.abs(x), Arg((3, 4), "zeros"),
     convention=lambda host, us: [us[0] * np.sign(host[0])])
case("clip", "at_bounds", lambda xp, x: xp.clip(x, -0.5, 1.0), Arg((3, 5), "ties"),
     convention=lambda host, us: [us[0] * ((host[0] >= -0.5) & (host[0] <= 1.0))])
def _unique_convention(host, us):
    (x,), (u,) = host, us
    values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    return [(2 * u / counts)[inverse.reshape(x.shape)]]


case("unique_values", "repeated", lambda xp, x: xp.unique_values(x) * 2, Arg((3, 5), "ties"),
     requires=("data_dependent_shapes",), convention=_unique_convention)
for _descending in (False, True):
    case("sort", f"ties,descending={_descending}", (lambda d: lambda xp, x: xp.sort(
        x, axis=1, descending=d, stable=True))(_descending), Arg((3, 5), "ties"),
        convention=_sort_convention(_descending))


def _setitem_at(x, index, value):
    y = x * 1
    y[index] = value * 2 if not isinstance(value, float) else value
    return y


def _setitem_saved(xp, x, v, key=(1, slice(None))):
    """An index set on an array that another op saved for its gradient (sin saves y)."""
    y = x * 1
    z = xp.sin(y)
    y[key] = v
    return z + y


def _every_third(xp, shape):
    """A boolean mask of ``shape``, True at every third element (in C order)."""
    return xp.reshape(xp.arange(math.prod(shape)) % 3 == 0, shape)


def _inplace(x, b, method):
    """``y = x * 1; y op= b``, as the statement does it (falling back to ``y = y op b`` where
    the array has no in-place method, as dask's)."""
    y = x * 1
    return getattr(operator, method.strip("_"))(y, b)


def _eig_invariant(xp, a):
    """``|V|^2`` (phase-invariant) and the eigenvalues of a diagonalizable real matrix."""
    values, vectors = xp.linalg.eig(a)
    return _real_view(xp, values), xp.real(vectors * xp.conj(vectors))


# Special functions (scipy.special's names) on the backends that provide them: inside each
# domain; an integer order or a shape parameter without a gradient is a constant.
SPECIAL_DOMAINS = {"erfinv": "unit", "erfcinv": "positive_below2", "logit": "probability",
                   "ndtri": "probability", "betainc": "probability", "betaincc": "probability",
                   "multigammaln": "above1"}  # defined for a > (d - 1) / 2
# Leading constant arguments (a Python int as it is, a float as a full array), and trailing
# ones (multigammaln's dimension d follows a).
SPECIAL_CONSTANTS = {"polygamma": (2,), "yn": (2,), "jv": (1.5,), "yv": (1.5,), "iv": (1.5,),
                     "ive": (1.5,), "kv": (1.5,), "gammainc": (1.7,), "gammaincc": (1.7,),
                     "stdtr": (3.5,), "betainc": (2.5, 1.5), "betaincc": (2.5, 1.5)}
SPECIAL_TRAILING = {"multigammaln": (3,)}


def _special(xp, name):
    """``name`` of ``xp.special`` (arraygrad's namespaces), or of the raw special functions of
    the backend that owns the raw namespace ``xp``."""
    special = getattr(xp, "special", None)
    if special is None:
        from arraygrad.rules import backends

        backend = backends.of_namespace(xp)
        special = backend.raw_special if backend is not None else None
    if special is None:
        raise AttributeError(f"{xp.__name__} has no special functions", name="special", obj=xp)
    return getattr(special, name)


def _special_call(name, leading, trailing):
    """``xp.special.<name>`` of the case's arrays between its constant arguments."""
    def call(xp, *xs):
        def constant(k):
            return k if isinstance(k, int) else xp.full_like(xs[0], k)
        return _special(xp, name)(*map(constant, leading), *xs, *map(constant, trailing))
    return call


for _name, _rule in sorted(SPECIAL.items()):
    _leading, _trailing = SPECIAL_CONSTANTS.get(_name, ()), SPECIAL_TRAILING.get(_name, ())
    _arity = len(_rule.arrays) - len(_leading) - len(_trailing)
    case(f"special.{_name}", "basic", _special_call(_name, _leading, _trailing),
         *[Arg((5,), SPECIAL_DOMAINS.get(_name, "positive"))] * _arity, dtypes=("float64",))


# Engine behaviour on each backend: accumulation, retain_graph, hooks, create_graph, saved
# values released (conformance/behaviour.py).
for _name, _check in BEHAVIOURS.items():
    CASES.append(Case(f"autograd.{_name}", "float64", None, (), "autograd",
                      dtypes=("float64",), behaviour=_check))

# Programs, not only functions: random compositions, sizes over the internal thresholds, writes
# through views, hooks on intermediates, nested transforms (conformance/programs.py, nested.py).
for _id, _check in {**PROGRAM_FAMILIES, **NESTED_FAMILIES}.items():
    _op, _variant = _id[:-1].split("[", 1)
    CASES.append(Case(_op, _variant, None, (), "programs", dtypes=("float64",),
                      behaviour=_check))


def _real_view(xp, z):
    """Complex outputs compared through both parts (a real function of the result)."""
    if isinstance(z, (tuple, list)):
        return tuple(_real_view(xp, part) for part in z)
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
    if domain == "diagonalizable":  # P diag(1, 2, 3.5...) P^-1: real, well-separated eigenvalues
        n = shape[-1]
        p = np.eye(n) + 0.3 * rng.standard_normal((n, n))
        matrix = (p * np.linspace(1.0, 3.5, n)) @ np.linalg.inv(p)
        return np.broadcast_to(matrix, shape).astype(real_dtype)
    if domain == "rotation":  # real, with eigenvalues 1.5 +- 1j and 3 (a complex pair)
        p = np.eye(3) + 0.3 * rng.standard_normal((3, 3))
        block = np.array([[1.5, -1.0, 0.0], [1.0, 1.5, 0.0], [0.0, 0.0, 3.0]])
        return np.broadcast_to(p @ block @ np.linalg.inv(p), shape).astype(real_dtype)
    if domain == "ties":  # three levels; along the last axis, ties of the maximum and minimum
        values = rng.integers(0, 3, shape) * 0.75 - 0.5
        values[..., 0] = values[..., -1] = 1.0
        values[..., 1] = values[..., 2] = -0.5
        return values.astype(real_dtype)
    values = {"normal": lambda: rng.standard_normal(shape),
              "zeros": lambda: rng.standard_normal(shape) * (np.arange(np.prod(shape)).reshape(
                  shape) % 3 != 0),
              "positive": lambda: rng.uniform(0.5, 2.0, shape),
              "probability": lambda: rng.uniform(0.1, 0.9, shape),
              "wide": lambda: rng.uniform(-4.0, 4.0, shape),
              "positive_below2": lambda: rng.uniform(0.1, 1.9, shape),
              "unit": lambda: rng.uniform(-0.9, 0.9, shape),
              "above1": lambda: rng.uniform(1.2, 3.0, shape),
              "nonzero": lambda: rng.uniform(0.3, 1.5, shape) * rng.choice([-1, 1], shape),
              "complex": lambda: rng.standard_normal(shape)}[domain]()
    if "complex" in dtype or domain == "complex":
        values = values + 1j * rng.uniform(0.3, 1.0, shape)
        return values.astype(dtype if "complex" in dtype else {"float32": "complex64"}.get(
            dtype, "complex128"))
    return values.astype(real_dtype)


# ------------------------------------------------------------------------------ edges
# Complex sign, the values of every unique function, multi-output functions with one output,
# empty operands, repeated eigenvalues and singular values, singular matrices for det.
def _degenerate_symmetric(xp, a, b):
    """``a I + b b^T`` (3 x 3): the eigenvalue ``a`` twice, for every ``a`` and ``b``."""
    eye = xp.eye(3, dtype=b.dtype)
    return a * eye + b[:, None] * b[None, :]


def _unique_values_of(name):
    """The values ``name`` returns (the first of several outputs), times distinct weights."""
    def f(xp, x):
        values = getattr(xp, name)(x)[0]
        return values * xp.arange(1, values.shape[0] + 1, dtype=values.dtype)
    return f


EDGES = [
    ("sign", "complex", lambda xp, a, b: _real_view(xp, xp.sign(_complex_view(xp, a, b))),
     Arg((3, 4), "nonzero"), Arg((3, 4), "nonzero")),
    ("unstack", "length_1", lambda xp, x: xp.unstack(x, axis=1)[0], (3, 1)),
    ("broadcast_arrays", "one", lambda xp, x: xp.broadcast_arrays(x)[0], (3,)),
    ("meshgrid", "one", lambda xp, x: xp.meshgrid(x)[0], (3,)),
    ("prod", "empty_other_axis", lambda xp, x: xp.prod(x, axis=1), (0, 3)),
    ("tensordot", "empty_free_axis", lambda xp, a, b: xp.tensordot(a, b, axes=1), (0, 2),
     (2, 3)),
    ("cumulative_prod", "empty,include_initial", lambda xp, x: xp.cumulative_prod(
        x, include_initial=True), (0,)),
    ("linalg.eigvalsh", "repeated", lambda xp, a, b: xp.linalg.eigvalsh(
        _degenerate_symmetric(xp, a, b)), Arg((), "positive"), (3,)),
    ("linalg.eigh", "repeated,values", lambda xp, a, b: xp.linalg.eigh(
        _degenerate_symmetric(xp, a, b))[0], Arg((), "positive"), (3,)),
    ("linalg.svd", "repeated,values", lambda xp, a, b: xp.linalg.svd(
        _degenerate_symmetric(xp, a, b))[1], Arg((), "positive"), (3,)),
    ("linalg.svdvals", "repeated", lambda xp, a, b: xp.linalg.svdvals(
        _degenerate_symmetric(xp, a, b)), Arg((), "positive"), (3,)),
    ("linalg.det", "rank_2_of_3", lambda xp, a, b: xp.linalg.det(a @ b), (3, 2), (2, 3)),
    ("linalg.det", "rank_1_of_3", lambda xp, a, b: xp.linalg.det(a @ b), (3, 1), (1, 3)),
]
for _name in ("unique_all", "unique_counts", "unique_inverse"):
    EDGES.append((_name, "values", _unique_values_of(_name), (3, 4)))
for _op, _variant, _f, *_args in EDGES:
    # Second order through repeated values differentiates the vectors, which are not unique.
    case(_op, _variant, _f, *_args, dtypes=COMPLEX if "complex" in _variant else None,
         requires=("data_dependent_shapes",) if _op.startswith("unique") else (),
         second_order="repeated" not in _variant)
