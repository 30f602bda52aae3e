"""Rules of the standard's elementwise functions.

Conventions at points where the derivative does not exist follow PyTorch: ``abs`` and ``sign``
give 0 at 0 (``sign`` is constant for real arguments, no gradient there), ``maximum``/``minimum`` split the gradient equally on ties (and give it to both
sides where one is NaN), ``clip`` passes the gradient at its bounds, ``sqrt`` gives ``inf`` at 0,
``x ** 0`` gives 0 even at an infinite ``x``, ``nextafter`` is the identity in ``x1``. Values at
``+-inf``, NaN and ``+-0`` are checked against PyTorch by ``tests/test_edge_values.py``. Complex
gradients are PyTorch's conjugate Wirtinger derivatives: for a holomorphic op the VJP is
``g * conj(f'(x))``.
"""

import cmath
import inspect
import math

from ._core import LINEAR, conj, defvjp, is_complex, nondifferentiable, sum_to


def from_derivative(derivative):
    """Return ``(vjp, jvp)`` of a holomorphic elementwise op from its derivative
    ``d(xp, <saved>...)``: the VJP is ``g * conj(d)`` (PyTorch's convention), the JVP ``t * d``."""
    needed = list(inspect.signature(derivative).parameters.values())[1:]

    def vjp(xp, g, *saved):
        return g * conj(xp, derivative(xp, *saved))

    def jvp(xp, t, *saved):
        return t * derivative(xp, *saved)

    for function in (vjp, jvp):
        function.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in ("xp", "g")]
            + needed)
    return vjp, jvp


# d(op)/dx as a function of what it needs: the input ``x`` or the output ``ans``.
UNARY = {
    "exp": lambda xp, ans: ans,
    "expm1": lambda xp, ans: ans + 1,
    "log": lambda xp, x: 1 / x,
    "log1p": lambda xp, x: 1 / (x + 1),
    "log2": lambda xp, x: 1 / (x * math.log(2)),
    "log10": lambda xp, x: 1 / (x * math.log(10)),
    "sqrt": lambda xp, ans: 0.5 / ans,
    "reciprocal": lambda xp, ans: -(ans * ans),
    "sin": lambda xp, x: xp.cos(x),
    "cos": lambda xp, x: -xp.sin(x),
    "tan": lambda xp, ans: 1 + ans * ans,
    "asin": lambda xp, x: 1 / xp.sqrt(1 - x * x),
    "acos": lambda xp, x: -1 / xp.sqrt(1 - x * x),
    "atan": lambda xp, x: 1 / (1 + x * x),
    "sinh": lambda xp, x: xp.cosh(x),
    "cosh": lambda xp, x: xp.sinh(x),
    "tanh": lambda xp, ans: 1 - ans * ans,
    "asinh": lambda xp, x: 1 / xp.sqrt(x * x + 1),
    "acosh": lambda xp, x: 1 / (xp.sqrt(x - 1) * xp.sqrt(x + 1)),
    "atanh": lambda xp, x: 1 / (1 - x * x),
}

for _name, _derivative in UNARY.items():
    _vjp, _jvp = from_derivative(_derivative)
    defvjp(_name, _vjp, jvps=(_jvp,))


defvjp("square", lambda xp, g, x: g * (2 * conj(xp, x)),
       jvps=(lambda xp, t, x: t * (2 * x),))


def _sgn(xp, x):
    """x / |x|, and 0 at 0 (PyTorch's ``sgn``), for real and complex x."""
    if is_complex(x):
        magnitude = xp.abs(x)
        return xp.where(magnitude == 0, xp.zeros_like(x), x / xp.where(magnitude == 0, 1, magnitude))
    return xp.sign(x)


defvjp("abs", lambda xp, g, x: g * _sgn(xp, x),
       jvps=(lambda xp, t, x: xp.real(t * conj(xp, _sgn(xp, x))) if is_complex(x) else t * xp.sign(x),))
# sign(z) = z / |z| is smooth for complex z != 0 (PyTorch's sgn): with s = sign(z), its VJP is
# (g - s^2 conj(g)) / (2|z|) and its JVP (t - s^2 conj(t)) / (2|z|), both 0 at 0. Constant for
# real x: declared below, the namespace records it only for complex arguments.
def _sgn_derivative_applied(xp, v, x, ans):
    magnitude = xp.abs(x)
    zero = magnitude == 0
    scaled = (v - ans * ans * conj(xp, v)) / (2 * xp.where(zero, xp.ones_like(magnitude),
                                                            magnitude))
    return xp.where(zero, xp.zeros_like(scaled), scaled)


defvjp("sign", _sgn_derivative_applied, jvps=(_sgn_derivative_applied,))
defvjp("negative", lambda xp, g: -g, jvps=LINEAR)
defvjp("positive", lambda xp, g: g, jvps=LINEAR)
defvjp("conj", lambda xp, g: conj(xp, g), jvps=LINEAR)
defvjp("real", lambda xp, g: g, jvps=LINEAR)
defvjp("imag", lambda xp, g: g * 1j, jvps=LINEAR)

# Binary functions: one VJP per argument.
defvjp("add", lambda xp, g: g, lambda xp, g: g, arrays="x1 x2", jvps=LINEAR)
defvjp("multiply",
       lambda xp, g, x2: g * conj(xp, x2),
       lambda xp, g, x1: g * conj(xp, x1), arrays="x1 x2",
       jvps=(lambda xp, t, x2: t * x2, lambda xp, t, x1: t * x1))
def vjp_divide_x2(xp, g, ans, x2):
    """``-g conj(ans / x2)``; a broadcast denominator (``x / n``, ``x / std``) sums ``g conj(ans)``
    to its shape first, so that only one full-size temporary is made."""
    shape = tuple(getattr(x2, "shape", ()))
    if shape != tuple(ans.shape):
        return -sum_to(xp, g * conj(xp, ans), shape) / conj(xp, x2)
    return g * conj(xp, ans / -x2)


def vjp_subtract_x2(xp, g, x2_shape):
    """``-g``, summed first where ``x2`` was broadcast (``x - mean``)."""
    if tuple(x2_shape) != tuple(g.shape):
        return -sum_to(xp, g, x2_shape)
    return -g


defvjp("subtract", lambda xp, g: g, vjp_subtract_x2, arrays="x1 x2", jvps=LINEAR)


defvjp("divide",
       lambda xp, g, x2: g / conj(xp, x2),
       vjp_divide_x2, arrays="x1 x2",
       jvps=(lambda xp, t, x2: t / x2, lambda xp, t, ans, x2: -t * ans / x2))


def _pow_base_derivative(xp, x1, x2):
    # PyTorch: 0 where the exponent is 0, even at a zero or infinite base.
    if not hasattr(x2, "shape"):  # a Python exponent: x ** 2
        if x2 == 0:
            return xp.zeros_like(x1)
        if x2 == 0.5:  # computed as sqrt by NumPy and torch: sqrt's rule (-inf at -0.0)
            return 0.5 / xp.sqrt(x1)
        if x2 == 2:  # the common square: one pass, no power
            return 2 * x1
        return x2 * x1 ** (x2 - 1)
    # The base is 1 where the exponent is 0 (the double where): else 0 ** -1 = inf there, and
    # the second derivative of the masked-out branch 0 * inf = NaN.
    exponent_zero = x2 == 0
    d = x2 * xp.where(exponent_zero, xp.ones_like(x1), x1) ** (x2 - 1)
    return xp.where(exponent_zero, xp.zeros_like(d), d)


def _log_of_base(x1, ans):
    """log(x1) of a Python base, in the domain of the result: NaN for a negative base of a real
    power, as the forward's NaN; the principal logarithm for a complex one."""
    if is_complex(ans) and x1 != 0:
        return cmath.log(x1)
    return math.log(x1) if x1 > 0 else -math.inf if x1 == 0 else math.nan


def _flat_at_zero(xp, x2):
    """Where ``0 ** x2`` is flat in ``x2``: a real exponent >= 0."""
    return (xp.real(x2) >= 0) & (xp.imag(x2) == 0) if is_complex(x2) else x2 >= 0


def _pow_exponent_derivative(xp, ans, x1, x2):
    # PyTorch: 0 where the base is 0 and 0 ** x2 flat; a negative exponent gives
    # ans * log(0) = inf * -inf.
    # The masked-out log(0) is kept out of the formula (the double where), not multiplied by
    # a zero cotangent: its second derivative would be 0 * -inf = NaN.
    if not hasattr(x1, "shape"):  # a Python base: 2 ** x
        if x1 != 0:
            return ans * _log_of_base(x1, ans)
        zeros = xp.zeros_like(xp.real(ans) if is_complex(ans) else ans)
        return ans * xp.where(_flat_at_zero(xp, x2), zeros, zeros - math.inf)
    flat = (x1 == 0) & _flat_at_zero(xp, x2)
    d = ans * xp.log(xp.where(flat, xp.ones_like(x1), x1))
    return xp.where(flat, xp.zeros_like(d), d)


def _vjp_pow_base(xp, g, x1, x2):
    return g * conj(xp, _pow_base_derivative(xp, x1, x2))


defvjp("pow",
       _vjp_pow_base,
       lambda xp, g, ans, x1, x2: g * conj(xp, _pow_exponent_derivative(xp, ans, x1, x2)),
       arrays="x1 x2",
       jvps=(lambda xp, t, x1, x2: t * _pow_base_derivative(xp, x1, x2),
             lambda xp, t, ans, x1, x2: t * _pow_exponent_derivative(xp, ans, x1, x2)))


def _share(xp, g, x1, x2, loses):
    """``g`` to ``x1`` unless it loses, half of it on ties (PyTorch's formula: where either side
    is NaN, both get ``g``)."""
    return g * (1 - xp.astype(loses(x1, x2), g.dtype) - 0.5 * xp.astype(x1 == x2, g.dtype))


def _greater(a, b):
    return a > b


def _less(a, b):
    return a < b


def defreal(name, *vjps, arrays="x1 x2"):
    """Register a function of real arguments only: there ``g * d`` and ``t * d`` coincide, so
    the same per-argument formulas serve as VJPs and JVPs."""
    defvjp(name, *vjps, arrays=arrays, jvps=vjps)


defreal("maximum",
        lambda xp, g, x1, x2: _share(xp, g, x1, x2, _less),
        lambda xp, g, x1, x2: _share(xp, g, x2, x1, _less))
defreal("minimum",
        lambda xp, g, x1, x2: _share(xp, g, x1, x2, _greater),
        lambda xp, g, x1, x2: _share(xp, g, x2, x1, _greater))


def _inside(xp, x, min, max):
    """Where ``clip`` passes the gradient to ``x``: inside the bounds, bounds included."""
    mask = x == x
    if min is not None:
        mask = mask & (x >= min)
    if max is not None:
        mask = mask & (x <= max)
    return mask


defreal("clip",
        lambda xp, g, x, min, max: xp.where(_inside(xp, x, min, max), g, 0 * g),
        lambda xp, g, x, min, max: xp.where(x < min, g, 0 * g) if max is None
        else xp.where((x < min) & (min <= max), g, 0 * g),
        lambda xp, g, x, min, max: xp.where(x > max, g, 0 * g) if min is None
        else xp.where((x > max) | (min > max), g, 0 * g),
        arrays="x min max")

# PyTorch's g / (1 + exp(x2 - x1)): exact where x1 - logaddexp(x1, x2) rounds (1/2 each at
# x1 == x2 == 1e16), and 1 for the larger where the other is infinitely smaller.
defreal("logaddexp",
        lambda xp, g, x1, x2: g / (1 + xp.exp(x2 - x1)),
        lambda xp, g, x1, x2: g / (1 + xp.exp(x1 - x2)))
defreal("hypot",
        lambda xp, g, ans, x1: g * x1 / ans,
        lambda xp, g, ans, x2: g * x2 / ans)


def _atan2_scale(xp, x1, x2):
    # PyTorch: 1 / (x1^2 + x2^2), and 0 where that is 0 (at the origin, or where it underflows).
    denominator = x1 * x1 + x2 * x2
    zero = denominator == 0
    return xp.where(zero, xp.zeros_like(denominator),
                    1 / xp.where(zero, xp.ones_like(denominator), denominator))


defreal("atan2",
        lambda xp, g, x1, x2: g * x2 * _atan2_scale(xp, x1, x2),
        lambda xp, g, x1, x2: -g * x1 * _atan2_scale(xp, x1, x2))
# floor_divide, not floor(x1 / x2): the quotient remainder's own result uses (9 for 1 % 0.1,
# NaN for an infinite x1), as PyTorch's div(rounding_mode="floor").
defreal("remainder",
        lambda xp, g: g,
        lambda xp, g, x1, x2: -g * xp.floor_divide(x1, x2))
# PyTorch: the identity for x1 (the result is x1 moved by one ulp) except where x1 == x2 (the
# result is x2 there), 0 for x2.
defreal("nextafter", lambda xp, g, x1, x2: xp.where(x1 == x2, xp.zeros_like(g), g), None)


def vjp_copysign(xp, g, ans, x1):
    # PyTorch: the gradient is ans / x1, and 0 where x1 is 0.
    zero = x1 == 0
    return g * xp.where(zero, 0 * ans, ans / xp.where(zero, 1.0, x1))


defreal("copysign", vjp_copysign, None)

nondifferentiable(
    "bitwise_and", "bitwise_left_shift", "bitwise_invert", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "ceil", "floor", "round", "trunc", "signbit", "floor_divide", "equal",
    "not_equal", "greater", "greater_equal", "less", "less_equal",
    "isfinite", "isinf", "isnan", "logical_and", "logical_not", "logical_or", "logical_xor",
)
nondifferentiable("sign", unless_complex=True)


# Outside the standard, offered on every backend (made of the standard's functions), as in
# NumPy, PyTorch and JAX (sinc) and SciPy and PyTorch (xlogy).
def _nonzero(xp, x):
    """``x`` with its zeros replaced by 1, for a formula whose value at 0 is set apart."""
    return xp.where(x == 0, xp.ones_like(x), x)


def sinc(xp, x, /):
    """``sin(pi x) / (pi x)``, 1 at 0: the normalized sinc of NumPy, PyTorch and JAX."""
    y = math.pi * _nonzero(xp, x)
    return xp.where(x == 0, xp.ones_like(x), xp.sin(y) / y)


def xlogy(xp, x1, x2, /):
    """``x1 log(x2)``, 0 where ``x1`` is 0 (even where ``x2`` is 0): SciPy's and PyTorch's."""
    product = x1 * xp.log(x2)
    return xp.where(x1 == 0, xp.zeros_like(product), product)


def _sinc_derivative(xp, x, ans):
    """``(cos(pi x) - sinc(x)) / x``, 0 at 0, where it is ``-pi^2 x / 3`` (its Maclaurin
    series' first term, as JAX's): 0, with the second derivative of sinc, ``-pi^2 / 3``."""
    return xp.where(x == 0, x * (-math.pi ** 2 / 3),
                    (xp.cos(math.pi * x) - ans) / _nonzero(xp, x))


def _log_unless_zero(xp, x1, x2):
    """``log(x2)``, and 0 where ``x1`` is 0 and ``x2 <= 0`` (where the log is not finite):
    xlogy's derivative in ``x1``, PyTorch's (``log(x2)`` at ``x1 = 0`` too, as in JAX). The
    masked-out ``log(x2)`` is taken of 1 (the double where), so that its second derivative is
    no NaN."""
    zero = (x1 == 0) & (x2 <= 0)
    log = xp.log(xp.where(zero, xp.ones_like(x2), x2)) + xp.zeros_like(x1)
    return xp.where(zero, xp.zeros_like(log), log)


_vjp_sinc, _jvp_sinc = from_derivative(_sinc_derivative)
defvjp("sinc", _vjp_sinc, jvps=(_jvp_sinc,), standard=False, forward=sinc)
defvjp("xlogy", lambda xp, g, x1, x2: g * conj(xp, _log_unless_zero(xp, x1, x2)),
       lambda xp, g, x1, x2: g * conj(xp, x1 / x2), arrays="x1 x2", standard=False,
       forward=xlogy, jvps=(lambda xp, t, x1, x2: t * _log_unless_zero(xp, x1, x2),
                            lambda xp, t, x1, x2: t * (x1 / x2)))
