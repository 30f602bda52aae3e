"""Gradients at IEEE edge values agree with ``torch.autograd`` (PyTorch 2.13), value by value.

Every differentiable elementwise function (unary ones on each value, binary ones on every pair,
``clip`` on every triple, ``pow`` with Python scalars), the special functions that torch has,
and the reductions, cumulative functions and norms on rows and matrices made of those values
are evaluated at ``+-0``, ``+-inf``, NaN, ``+-1e300`` and the subnormal ``1e-310`` (with a few
ordinary values and domain boundaries beside them). Forward values, gradients (float64, NumPy
backend, cotangent 1) and forward-mode tangents must equal torch's, NaN equal to NaN and
infinities exactly, except where :data:`DIFFERENCES` says what arraygrad gives instead and why.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, NamedTuple

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import _standard
from arraygrad.rules import RULES

torch = pytest.importorskip(
    "torch", reason="the reference gradients are torch.autograd's: pip install torch==2.13.0")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf and friends

INF, NAN = math.inf, math.nan
EDGES = [0.0, -0.0, INF, -INF, NAN, 1e300, -1e300, 1e-310]
# Ordinary values, domain boundaries (asin and atanh at +-1, acosh at 1, ...) and 1e16, where
# x + 1 rounds to x (logaddexp(x, x) - x is log(2) there, not 0).
ORDINARY = [1.0, -1.0, 0.5, 2.0, -2.5, 1e16]
VALUES = np.array(EDGES + ORDINARY)
PAIRS = tuple(np.array(list(itertools.product(VALUES, repeat=2))).T)  # every (x1, x2)
TRIPLES = tuple(np.array(list(itertools.product(
    [0.0, -1.0, 1.0, 2.0, INF, -INF, NAN], repeat=3))).T)  # clip's (x, min, max)
ROWS = np.stack(PAIRS, axis=-1)  # one probe per row of a reduction: every pair ...
ROWS3 = np.concatenate([ROWS, np.full((len(ROWS), 1), 1.5)], axis=-1)  # ... and beside 1.5
MATRICES = np.stack([ROWS, np.stack([np.full(len(ROWS), 1.5), np.zeros(len(ROWS))], -1)], -2)
FINITE_MATRICES = np.array([  # for the norms that take an SVD: zero, tied and extreme values
    [[0.0, 0.0], [0.0, 0.0]], [[-0.0, 0.0], [0.0, -0.0]], [[1.0, 0.0], [0.0, 1.0]],
    [[2.0, 1.0], [1.0, 2.0]], [[1e-310, 0.0], [0.0, 0.0]], [[1e300, 0.0], [0.0, 1e300]],
    [[1.0, 1.0], [1.0, 1.0]]])


# Gradients below 1e-290 count as 0: where x * x overflows, torch's rsqrt(x * x - 1) gives
# acosh'(1e300) = 0 for 1e-300. A case whose formula cancels has its own tolerance.
ATOL = 1e-290


class Case(NamedTuple):
    """One function on a batch of probes: ``ours(xp, *inputs)`` and ``reference(*tensors)``."""

    id: str
    ours: Callable
    reference: Callable
    inputs: tuple
    core: int = 0  # trailing axes that make one probe: 0 elementwise, 1 a row, 2 a matrix
    atol: float = ATOL


CASES: list[Case] = []


def add_case(name, ours, reference, *inputs, core=0, atol=ATOL):
    CASES.append(Case(name, ours, reference, tuple(np.asarray(a, np.float64) for a in inputs),
                      core, atol))


def _call(name):
    return lambda xp, *xs: getattr(xp, name)(*xs)


# ------------------------------------------------------------------------ elementwise
UNARY = ("abs acos acosh asin asinh atan atanh conj cos cosh exp expm1 log log1p log2 log10 "
         "negative positive real reciprocal sin sinh sqrt square tan tanh").split()
for _name in UNARY:
    add_case(_name, _call(_name), getattr(torch, {"negative": "neg"}.get(_name, _name)), VALUES)

BINARY = {"add": torch.add, "subtract": torch.sub, "multiply": torch.mul, "divide": torch.div,
          "pow": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum,
          "logaddexp": torch.logaddexp, "hypot": torch.hypot, "atan2": torch.atan2,
          "remainder": torch.remainder, "copysign": torch.copysign,
          "nextafter": torch.nextafter}
for _name, _reference in BINARY.items():
    add_case(_name, _call(_name), _reference, *PAIRS)
add_case("nextafter(x, 0) * x", lambda xp, x: xp.nextafter(x, xp.zeros_like(x)) * x,
         lambda x: torch.nextafter(x, torch.zeros_like(x)) * x, VALUES)

# pow with a Python exponent (x ** c) or base (c ** x): the rule's scalar paths.
for _c in (0, -0.0, 1, 2, 3, -1, -2, 0.5, -0.5, 1.5, 2.5, INF, -INF, NAN, 1e300):
    add_case(f"x**{_c}", (lambda c: lambda xp, x: x ** c)(_c), (lambda c: lambda x: x ** c)(_c),
             VALUES)
for _c in (0.0, -0.0, 1.0, 2.0, 0.5, -2.0, INF, -INF, NAN, 1e-310, 1e300):
    add_case(f"{_c}**x", (lambda c: lambda xp, x: c ** x)(_c), (lambda c: lambda x: c ** x)(_c),
             VALUES)

add_case("clip", _call("clip"), torch.clamp, *TRIPLES)
for _low, _high in ((-1.0, 1.0), (0.0, None), (None, 0.0), (1.0, 1.0), (1.0, -1.0),
                    (-INF, INF)):
    add_case(f"clip({_low},{_high})",
             (lambda low, high: lambda xp, x: xp.clip(x, min=low, max=high))(_low, _high),
             (lambda low, high: lambda x: torch.clamp(x, low, high))(_low, _high), VALUES)

# Special functions (SciPy's names) with a torch counterpart.
try:
    import scipy.special as scipy_special
except ImportError:  # the numpy backend's special functions are SciPy's
    scipy_special = None
else:
    _F = torch.nn.functional
    SPECIAL = {"erf": torch.special.erf, "erfc": torch.special.erfc,
               "erfinv": torch.special.erfinv, "erfcx": torch.special.erfcx,
               "expit": torch.special.expit, "logit": torch.special.logit,
               "log_expit": _F.logsigmoid, "softplus": _F.softplus,
               "gammaln": torch.special.gammaln, "digamma": torch.special.digamma,
               "psi": torch.special.psi, "ndtr": torch.special.ndtr,
               "log_ndtr": torch.special.log_ndtr, "ndtri": torch.special.ndtri,
               "entr": torch.special.entr, "i0": torch.special.i0, "i0e": torch.special.i0e,
               "i1": torch.special.i1, "i1e": torch.special.i1e}
    for _name, _reference in SPECIAL.items():
        # i1e' = i0e - i1e (sign(x) + 1/x) cancels for large x: eps * i0e(x), 4e-25 at 1e16.
        add_case(f"special.{_name}", (lambda n: lambda xp, x: getattr(xp.special, n)(x))(_name),
                 _reference, VALUES, atol=1e-23 if _name == "i1e" else ATOL)
    for _name in ("xlogy", "xlog1py"):
        add_case(f"special.{_name}",
                 (lambda n: lambda xp, *xs: getattr(xp.special, n)(*xs))(_name),
                 getattr(torch.special, _name), *PAIRS)

# ------------------------------------------------------------- reductions and norms
REDUCTIONS = {
    "sum": (lambda xp, x: xp.sum(x, axis=-1), lambda x: torch.sum(x, -1)),
    "mean": (lambda xp, x: xp.mean(x, axis=-1), lambda x: torch.mean(x, -1)),
    "prod": (lambda xp, x: xp.prod(x, axis=-1), lambda x: torch.prod(x, -1)),
    "max": (lambda xp, x: xp.max(x, axis=-1), lambda x: torch.amax(x, -1)),
    "min": (lambda xp, x: xp.min(x, axis=-1), lambda x: torch.amin(x, -1)),
    "var": (lambda xp, x: xp.var(x, axis=-1), lambda x: torch.var(x, -1, correction=0)),
    "var(correction=1)": (lambda xp, x: xp.var(x, axis=-1, correction=1),
                          lambda x: torch.var(x, -1, correction=1)),
    "std": (lambda xp, x: xp.std(x, axis=-1), lambda x: torch.std(x, -1, correction=0)),
    "std(correction=1)": (lambda xp, x: xp.std(x, axis=-1, correction=1),
                          lambda x: torch.std(x, -1, correction=1)),
    "cumulative_sum": (lambda xp, x: xp.cumulative_sum(x, axis=-1),
                       lambda x: torch.cumsum(x, -1)),
    "cumulative_prod": (lambda xp, x: xp.cumulative_prod(x, axis=-1),
                        lambda x: torch.cumprod(x, -1)),
}
for _ord in (2, 1, INF, -INF, 0, 3, 0.5, -1, -2):
    REDUCTIONS[f"vector_norm(ord={_ord})"] = (
        (lambda o: lambda xp, x: xp.linalg.vector_norm(x, axis=-1, ord=o))(_ord),
        (lambda o: lambda x: torch.linalg.vector_norm(x, ord=o, dim=-1))(_ord))
for _name, (_ours, _reference) in REDUCTIONS.items():
    add_case(f"{_name}[2]", _ours, _reference, ROWS, core=1)
    add_case(f"{_name}[3]", _ours, _reference, ROWS3, core=1)
for _ord in ("fro", 1, -1, INF, -INF, 2, -2, "nuc"):
    _ours = (lambda o: lambda xp, x: xp.linalg.matrix_norm(x, ord=o))(_ord)
    _reference = (lambda o: lambda x: torch.linalg.matrix_norm(x, ord=o))(_ord)
    if _ord not in (2, -2, "nuc"):  # an SVD of inf or NaN does not converge
        add_case(f"matrix_norm(ord={_ord})", _ours, _reference, MATRICES, core=2)
    # The SVD leaves rounding errors of the order of eps where a gradient is 0.
    add_case(f"matrix_norm(ord={_ord})[finite]", _ours, _reference, FINITE_MATRICES, core=2,
             atol=1e-15)


# ------------------------------------------------------------------------ differences
def _nan_where_nan(inputs, gradients):
    """Torch's gradients with NaN at the NaN entries."""
    return [np.where(np.isnan(x), NAN, g) for x, g in zip(inputs, gradients)]


def _gradients_of(reference):
    """The gradients of another torch function of the same inputs."""
    return lambda inputs, gradients: _torch(reference, inputs)[1]


def _prefix_products(x):
    return torch.stack([torch.prod(x[..., :k + 1], -1) for k in range(x.shape[-1])], -1)


def _product_not_finite(x):
    with np.errstate(all="ignore"):
        return ~np.isfinite(np.cumprod(x, axis=-1)).all(-1)


def _has_nan(x):
    return np.isnan(x).any(-1)


class Difference(NamedTuple):
    """Where arraygrad deliberately gives another value than torch, and which."""

    case: str  # a case id
    where: Callable  # (*inputs) -> a boolean mask over the probes (the first axis)
    gradients: Callable | None  # (inputs, torch's gradients) -> arraygrad's, or None: torch's
    values: Callable | None  # (*inputs) -> arraygrad's forward values, or None: torch's
    reason: str


def _nan(inputs, gradients):
    return [np.full_like(g, NAN) for g in gradients]


DIFFERENCES = [
    # NaN in, NaN out. The standard says sign(NaN) is NaN; torch's sign(NaN) is 0, so its
    # g * sign(x) gives 0 (abs, the 1-norm), and its i1/i1e rules give 1/2 there.
    *(Difference(name, np.isnan, _nan, None, "NaN input: NaN gradient (torch: 0 or 1/2)")
      for name in ("abs", "special.i1", "special.i1e")),
    *(Difference(f"vector_norm(ord=1)[{n}]", _has_nan, _nan_where_nan, None,
                 "NaN entry: NaN gradient, as abs (torch: 0 from sign(NaN) = 0)")
      for n in (2, 3)),
    # Outside its domain acosh is NaN; torch's formula rsqrt(x*x - 1) is real for x <= -1.
    Difference("acosh", lambda x: x < 1, _nan, None,
               "x < 1 is outside the domain (the value is NaN there)"),
    # A slice with NaN: torch.amax gives every entry NaN, torch.linalg.vector_norm(ord=inf)
    # gives every entry 0. arraygrad's inf-norm agrees with its max, which is torch.amax.
    *(Difference(f"vector_norm(ord={s}inf)[{n}]", _has_nan,
                 _gradients_of(lambda x, r=r: r(torch.abs(x), -1)), None,
                 "NaN in the slice: as the max of |x| (torch.amax), not torch's 0")
      for n in (2, 3) for s, r in (("", torch.amax), ("-", torch.amin))),
    # ord < 0 with a zero norm: torch's own convention is 0 (it gives 0 at [0, 1]), but at
    # [0, 1e-310] its |x| ** (ord - 1) overflows and inf * 0 gives NaN.
    *(Difference(f"vector_norm(ord={o})[{n}]",
                 lambda x: (x == 1e-310).any(-1) & ~np.isnan(x).any(-1),
                 lambda inputs, g: [np.zeros_like(g[0])], None,
                 "0 at a zero norm, as torch gives where no subnormal overflows")
      for o in (-1, -2) for n in (2, 3)),
    # torch.cumprod's backward divides by x (inf / inf, 0 * inf) and disagrees with torch.prod
    # on the same products; arraygrad's is the exact product of the other entries.
    *(Difference(f"cumulative_prod[{n}]", _product_not_finite,
                 _gradients_of(_prefix_products), None,
                 "as torch.prod of each prefix, where a partial product is not finite")
      for n in (2, 3)),
    # x below min == max: the result is that bound; torch's clamp gives the gradient to
    # neither (min needs min < max, max needs x > max). arraygrad gives it to min, so that
    # moving both bounds together moves the result (the gradients sum to 1).
    Difference("clip", lambda x, low, high: (x < low) & (low == high),
               lambda inputs, g: [g[0], np.ones_like(g[1]), g[2]], None,
               "x < min == max: min gets the gradient (torch drops it)"),
    # digamma's derivative is the backend's trigamma: SciPy's is exact (pi^2 / 6 at 1) and
    # infinite at the poles; torch's polygamma(1, x) is 5e-10 off and finite at x = -1.
    *(Difference(f"special.{n}", lambda x: np.ones(x.shape, bool),
                 lambda inputs, g: [scipy_special.polygamma(1, inputs[0])], None,
                 "trigamma from SciPy (exact), not torch's approximation")
      for n in ("digamma", "psi")),
    # logit's derivative 1 / (x (1 - x)) is +inf at the pole x = 0, from either side (the
    # function goes to -inf there); torch's vectorized loop gives -inf at -0.0 (its scalar
    # one +inf), so which one it gives depends on how many values it is given.
    Difference("special.logit", lambda x: (x == 0) & np.signbit(x),
               lambda inputs, g: [np.full_like(g[0], INF)], None,
               "+inf at -0.0 as at +0.0 (torch: -inf in its vectorized loop)"),
    # Forward values are the backend's own (tests/test_values.py): NumPy's remainder is exact
    # (fmod), torch's x - y * floor(x / y) overflows; NumPy's x ** -0.5 is C's pow, torch's
    # rsqrt; SciPy's gammaln is -inf at -inf and inf at 1e-310 (torch: inf, 713.8).
    Difference("remainder", lambda x1, x2: np.isfinite(x1) & ~np.isfinite(x1 / x2), None,
               lambda x1, x2: np.remainder(x1, x2), "NumPy's forward value"),
    Difference("x**-0.5", lambda x: (x == 0) | (x == -INF), None,
               lambda x: np.power(x, -0.5), "NumPy's forward value"),
    Difference("special.gammaln", lambda x: (x == -INF) | (x == 1e-310), None,
               scipy_special and scipy_special.gammaln, "SciPy's forward value"),
]
if scipy_special is None:
    DIFFERENCES = [d for d in DIFFERENCES if not d.case.startswith("special.")]


# ------------------------------------------------------------------------ evaluation
def _ours(case):
    xp = ag.namespace("numpy")
    variables = [ag.Variable(x.copy(), requires_grad=True) for x in case.inputs]
    with np.errstate(all="ignore"):
        out = case.ours(xp, *variables)
        out.backward(np.ones_like(out.data))
    return out.data, [np.zeros_like(v.data) if v.grad is None else v.grad.data
                      for v in variables]


def _torch(reference, inputs):
    tensors = [torch.tensor(x, requires_grad=True) for x in inputs]
    out = reference(*tensors)
    grads = torch.autograd.grad(out, tensors, torch.ones_like(out), allow_unused=True,
                                materialize_grads=True)
    return out.detach().numpy(), [g.numpy() for g in grads]


def _per_probe(mask, array):
    """A mask over the probes (the first axis), broadcast to ``array``."""
    return np.broadcast_to(np.reshape(mask, mask.shape + (1,) * (array.ndim - mask.ndim)),
                           array.shape)


def expected(case, differences=None):
    """torch's forward values and gradients, with the :data:`DIFFERENCES` of ``case``."""
    values, gradients = _torch(case.reference, case.inputs)
    if differences is None:
        differences = [d for d in DIFFERENCES if d.case == case.id]
    for difference in differences:
        with np.errstate(all="ignore"):
            mask = np.asarray(difference.where(*case.inputs))
            if difference.gradients is not None:
                ours = difference.gradients(case.inputs, gradients)
                gradients = [np.where(_per_probe(mask, g), o, g) for g, o in zip(gradients, ours)]
            if difference.values is not None:
                values = np.where(_per_probe(mask, values), difference.values(*case.inputs),
                                  values)
    return values, gradients


def _agree(actual, desired, atol=ATOL):
    """Per element: equal within 1e-12 relatively, NaN with NaN, infinities exactly."""
    with np.errstate(all="ignore"):
        return np.isclose(actual, desired, rtol=1e-12, atol=atol, equal_nan=True)


def _check(case, actual, desired, what, atol=ATOL):
    """Like assert_allclose (NaN equal to NaN), naming the first probe that differs."""
    actual, desired = np.broadcast_arrays(np.asarray(actual, np.float64), desired)
    close = _agree(actual, desired, atol)
    if not close.all():
        bad = tuple(np.argwhere(~close)[0])
        inputs = tuple(x[bad[0]].tolist() for x in case.inputs)
        raise AssertionError(
            f"{case.id}: {what} differs at {np.count_nonzero(~close)} of {close.size} "
            f"elements, first at the inputs {inputs}: arraygrad gives {actual[bad]!r}, torch "
            f"(or DIFFERENCES) {desired[bad]!r}")


def _case_ids(cases):
    return [c.id for c in cases]


@pytest.mark.parametrize("case", CASES, ids=_case_ids(CASES))
def test_values_and_gradients_match_torch(case):
    values, gradients = _ours(case)
    want_values, want_gradients = expected(case)
    _check(case, values, want_values, "forward value", case.atol)
    for i, (gradient, want) in enumerate(zip(gradients, want_gradients)):
        _check(case, gradient, want, f"gradient of argument {i}", case.atol)


ELEMENTWISE = [c for c in CASES if c.core == 0]


@pytest.mark.parametrize("case", ELEMENTWISE, ids=_case_ids(ELEMENTWISE))
def test_forward_mode_matches_torch(case):
    """``ag.jvp`` with tangent 1 in one argument, the others constant, gives the same derivative
    as the VJP: the fixes hold in forward mode too."""
    xp = ag.namespace("numpy")
    _, want_gradients = expected(case)
    for i, x in enumerate(case.inputs):
        def f(v, i=i):
            return case.ours(xp, *case.inputs[:i], v, *case.inputs[i + 1:])

        with np.errstate(all="ignore"):
            _, tangent = ag.jvp(f, [x], [np.ones_like(x)])
        _check(case, getattr(tangent, "data", tangent), want_gradients[i],
               f"tangent of argument {i}", case.atol)


REDUCTIONS_TO_SCALARS = [c for c in CASES if c.core and "cumulative" not in c.id]


@pytest.mark.parametrize("case", REDUCTIONS_TO_SCALARS, ids=_case_ids(REDUCTIONS_TO_SCALARS))
def test_forward_mode_of_reductions(case):
    """A reduction's tangent for tangent 1 is the sum of its gradient over the probe (up to
    the rounding of that sum, eps times the sum of magnitudes: var's weights cancel)."""
    xp = ag.namespace("numpy")
    _, (want,) = expected(case)
    (x,) = case.inputs
    axes = tuple(range(1, want.ndim))
    with np.errstate(all="ignore"):
        _, tangent = ag.jvp(lambda v: case.ours(xp, v), [x], [np.ones_like(x)])
        total = np.sum(want, axis=axes)
        scale = np.sum(np.abs(want), axis=axes)
    atol = np.maximum(case.atol, 1e-14 * np.where(np.isfinite(scale), scale, 0))
    _check(case, getattr(tangent, "data", tangent), total, "tangent", atol)


def test_every_difference_is_needed_and_named():
    """Each entry names a case, selects some probes and changes torch's value at some of them:
    the table lists no case that agrees anyway."""
    cases = {c.id: c for c in CASES}
    for difference in DIFFERENCES:
        assert difference.case in cases, difference.case
        case = cases[difference.case]
        torch_values, torch_gradients = _torch(case.reference, case.inputs)
        values, gradients = expected(case, [difference])
        changed = not _agree(values, torch_values).all() or not all(
            _agree(g, t).all() for g, t in zip(gradients, torch_gradients))
        assert changed, f"{difference.case}: {difference.reason} changes nothing"


def test_the_probes_cover_every_differentiable_elementwise_function():
    covered = {c.id.split("(")[0].split("[")[0] for c in CASES}
    elementwise = {n for n in _standard.ELEMENTWISE if n in RULES}
    # imag of a real array: torch has no gradient; sign is constant for real arguments (its
    # complex rule, torch's sgn, is checked by tests/test_rule_edges.py)
    assert elementwise - covered == {"imag", "sign"}
