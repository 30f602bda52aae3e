"""Rules of special functions (SciPy's ``scipy.special`` names), for the ``special`` namespace
of backends that provide them: SciPy's ufuncs on NumPy, ``torch.special``, ``jax.scipy.special``.

SciPy's array-API mode looks for ``xp.special`` first, so with these rules SciPy's special
functions differentiate on every such backend; on NumPy-backed Variables, SciPy's ufuncs reach
them through ``__array_ufunc__`` too. A derivative that needs another special function asks
``special_of(xp)``, which is the differentiable ``special`` namespace under ``create_graph``,
so that every rule here has higher derivatives. Gradients with respect to an integer order
(``polygamma``'s ``n``) or a shape parameter with no closed form (``gammainc``'s ``a``) are
refused, never zero.
"""

from __future__ import annotations

import math

from ..errors import NoRuleError
from ._core import Rule, backends
from .elementwise import from_derivative

SPECIAL: dict[str, Rule] = {}
"""Differentiable special functions by their ``scipy.special`` name."""

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_raw_specials: dict = {}  # {id(raw namespace): its backend's raw special functions}


def special_of(xp):
    """The special functions that go with ``xp``: the differentiable ``xp.special`` under
    ``create_graph``, else the raw special functions of ``xp``'s backend."""
    if hasattr(xp, "_backend"):  # the differentiable namespace (a raw one may have its own
        return xp.special         # special module, as torch's: it is not SciPy's names)
    special = _raw_specials.get(id(xp))
    if special is None:
        backend = backends.of_namespace(xp)
        if backend is not None:
            special = _raw_specials[id(xp)] = backend.raw_special
    return special


def _safe(xp, x):
    """``x`` with its zeros replaced by 1, for a formula whose value at 0 is set apart."""
    return xp.where(x == 0, xp.ones_like(x), x)


UNARY = {
    "erf": lambda xp, x: (2 / _SQRT_PI) * xp.exp(-(x * x)),
    "erfc": lambda xp, x: (-2 / _SQRT_PI) * xp.exp(-(x * x)),
    "erfinv": lambda xp, ans: (_SQRT_PI / 2) * xp.exp(ans * ans),
    "erfcinv": lambda xp, ans: (-_SQRT_PI / 2) * xp.exp(ans * ans),
    "erfcx": lambda xp, x, ans: 2 * x * ans - 2 / _SQRT_PI,
    "expit": lambda xp, ans: ans * (1 - ans),
    "logit": lambda xp, x: _logit_derivative(xp, x),
    "log_expit": lambda xp, x: special_of(xp).expit(-x),
    "softplus": lambda xp, x: special_of(xp).expit(x),
    "gammaln": lambda xp, x: special_of(xp).digamma(x),
    "gamma": lambda xp, x, ans: ans * special_of(xp).digamma(x),
    "digamma": lambda xp, x: special_of(xp).polygamma(1, x),
    "psi": lambda xp, x: special_of(xp).polygamma(1, x),
    "ndtr": lambda xp, x: xp.exp(-0.5 * (x * x)) / _SQRT_2PI,
    "log_ndtr": lambda xp, x, ans: xp.exp(-0.5 * (x * x) - ans) / _SQRT_2PI,
    "ndtri": lambda xp, ans: _SQRT_2PI * xp.exp(0.5 * (ans * ans)),
    "entr": lambda xp, x: -(xp.log(x) + 1),
    "i0": lambda xp, x: special_of(xp).i1(x),
    "i0e": lambda xp, x, ans: special_of(xp).i1e(x) - xp.sign(x) * ans,
    # i1' = i0 - i1 / x and i1e' = i0e - i1e (sign(x) + 1 / x), both 1/2 at 0.
    "i1": lambda xp, x, ans: xp.where(x == 0, 0.5 * xp.ones_like(x),
                                      special_of(xp).i0(x) - ans / _safe(xp, x)),
    "i1e": lambda xp, x, ans: xp.where(x == 0, 0.5 * xp.ones_like(x), special_of(xp).i0e(x)
                                       - ans * xp.sign(x) - ans / _safe(xp, x)),
    # Bessel functions: j0' = -j1, j1' = j0 - j1 / x (1/2 at 0), the same for y0 and y1.
    "j0": lambda xp, x: -special_of(xp).j1(x),
    "j1": lambda xp, x, ans: xp.where(x == 0, 0.5 * xp.ones_like(x),
                                      special_of(xp).j0(x) - ans / _safe(xp, x)),
    "y0": lambda xp, x: -special_of(xp).y1(x),
    "y1": lambda xp, x, ans: special_of(xp).y0(x) - ans / x,
    "gammasgn": lambda xp, x: xp.zeros_like(x),  # piecewise constant
    "rgamma": lambda xp, x, ans: _rgamma_derivative(xp, x, ans),
}


def _rgamma_derivative(xp, x, ans):
    # -digamma(x) / gamma(x); at the poles x = -n of gamma, where 1/gamma is 0: (-1)^n n!.
    special = special_of(xp)
    at_pole = (ans == 0) & (x <= 0) & (x == xp.round(x))
    safe = xp.where(at_pole, xp.full_like(x, 0.5), x)
    return xp.where(at_pole, xp.cos(math.pi * x) * special.gamma(1 - x),
                    -ans * special.digamma(safe))


def _multigammaln_da(xp, a, d):
    # sum over j < d of digamma(a - j / 2); d is the (integer) dimension
    digamma = special_of(xp).digamma
    return sum(digamma(a - j / 2) for j in range(int(d)))


def _not_differentiable(op, argument, why):
    """The VJP and JVP of an argument without a gradient: both raise, naming it."""
    def refuse(xp, g):
        raise NoRuleError(f"special.{op}: no gradient with respect to {argument} ({why}); "
                          f"pass it as a constant (a Python number or a detached array).")
    refuse.refused = True
    return refuse


def _nonzero(xp, x, d):
    """``d(x)`` where ``x != 0``, else 0 (``xlogy``'s convention: 0 * log(0) = 0, as in
    PyTorch); ``d`` is taken of 1 where ``x`` is 0 (the double where), so that its second
    derivative is no NaN."""
    zero = x == 0
    found = d(xp.where(zero, xp.ones_like(x), x))
    return xp.where(zero, xp.zeros_like(found), found)


def _unless_zero_at_pole(xp, x, y, pole, log):
    """``log(y)``, and 0 where ``x == 0`` and ``y <= pole`` (where the logarithm is not finite):
    PyTorch's ``xlogy``/``xlog1py``, whose derivative in ``x`` is ``log(y)`` at ``x = 0`` too.
    The masked-out logarithm is taken at ``pole + 1`` (the double where), so that its second
    derivative is no NaN."""
    zero = (x == 0) & (y <= pole)
    d = log(xp.where(zero, xp.ones_like(y) + pole, y)) + xp.zeros_like(x)
    return xp.where(zero, xp.zeros_like(d), d)


def _logit_derivative(xp, x):
    # 1 / (x (1 - x)) on [0, 1] (+inf at -0.0 too), NaN outside it, as the forward (PyTorch).
    d = 1 / xp.abs(x * (1 - x))
    return xp.where((x < 0) | (x > 1), xp.full_like(d, math.nan), d)


def _gammainc_dx(xp, a, x):
    return xp.exp((a - 1) * xp.log(x) - x - special_of(xp).gammaln(a))


def _digamma_difference(xp, a, b):
    special = special_of(xp)
    return special.digamma(a) - special.digamma(a + b)


def _student_t_density(xp, df, t):
    special = special_of(xp)
    return xp.exp(special.gammaln((df + 1) / 2) - special.gammaln(df / 2)
                  - 0.5 * xp.log(df * math.pi) - (df + 1) / 2 * xp.log1p(t * t / df))


def _beta_density(xp, a, b, x):
    return xp.exp((a - 1) * xp.log(x) + (b - 1) * xp.log1p(-x) - special_of(xp).betaln(a, b))


SEVERAL_ARGUMENTS = {  # name: (arguments, one derivative per argument), each d(xp, <saved>)
    "xlogy": ("x y", lambda xp, x, y: _unless_zero_at_pole(xp, x, y, 0, xp.log),
              lambda xp, x, y: x / y),
    "xlog1py": ("x y", lambda xp, x, y: _unless_zero_at_pole(xp, x, y, -1, xp.log1p),
                lambda xp, x, y: x / (1 + y)),
    "rel_entr": ("x y", lambda xp, x, y: _nonzero(xp, x, lambda x: xp.log(x / y) + 1), lambda xp, x, y: -x / y),
    "kl_div": ("x y", lambda xp, x, y: _nonzero(xp, x, lambda x: xp.log(x / y)), lambda xp, x, y: 1 - x / y),
    "betaln": ("a b", lambda xp, a, b: _digamma_difference(xp, a, b),
               lambda xp, a, b: _digamma_difference(xp, b, a)),
    "beta": ("a b", lambda xp, a, b, ans: ans * _digamma_difference(xp, a, b),
             lambda xp, a, b, ans: ans * _digamma_difference(xp, b, a)),
    "polygamma": ("n x", _not_differentiable("polygamma", "n", "an integer order"),
                  lambda xp, n, x: special_of(xp).polygamma(n + 1, x)),
    "gammainc": ("a x", _not_differentiable("gammainc", "a", "no closed form"), _gammainc_dx),
    "gammaincc": ("a x", _not_differentiable("gammaincc", "a", "no closed form"),
                  lambda xp, a, x: -_gammainc_dx(xp, a, x)),
    "yn": ("n x", _not_differentiable("yn", "n", "an integer order"),
           lambda xp, n, x: 0.5 * (special_of(xp).yn(n - 1, x) - special_of(xp).yn(n + 1, x))),
    # Bessel functions of any real order v (a constant here): the recurrences' derivatives.
    "jv": ("v x", _not_differentiable("jv", "v", "no closed form in the order"),
           lambda xp, v, x: 0.5 * (special_of(xp).jv(v - 1, x) - special_of(xp).jv(v + 1, x))),
    "yv": ("v x", _not_differentiable("yv", "v", "no closed form in the order"),
           lambda xp, v, x: 0.5 * (special_of(xp).yv(v - 1, x) - special_of(xp).yv(v + 1, x))),
    "iv": ("v x", _not_differentiable("iv", "v", "no closed form in the order"),
           lambda xp, v, x: 0.5 * (special_of(xp).iv(v - 1, x) + special_of(xp).iv(v + 1, x))),
    "ive": ("v x", _not_differentiable("ive", "v", "no closed form in the order"),
            lambda xp, v, x, ans: 0.5 * (special_of(xp).ive(v - 1, x) + special_of(xp).ive(
                v + 1, x)) - xp.sign(x) * ans),
    "kv": ("v x", _not_differentiable("kv", "v", "no closed form in the order"),
           lambda xp, v, x: -0.5 * (special_of(xp).kv(v - 1, x) + special_of(xp).kv(v + 1, x))),
    "multigammaln": ("a d", _multigammaln_da,
                     _not_differentiable("multigammaln", "d", "an integer dimension")),
    # Distribution functions behind SciPy's p-values (ttest_*, pearsonr).
    "stdtr": ("df t", _not_differentiable("stdtr", "df", "no closed form"), _student_t_density),
    "betainc": ("a b x", _not_differentiable("betainc", "a", "no closed form"),
                _not_differentiable("betainc", "b", "no closed form"), _beta_density),
    "betaincc": ("a b x", _not_differentiable("betaincc", "a", "no closed form"),
                 _not_differentiable("betaincc", "b", "no closed form"),
                 lambda xp, a, b, x: -_beta_density(xp, a, b, x)),
}


def _rule(name, arguments, derivatives):
    pairs = [(d, d) if getattr(d, "refused", False) else from_derivative(d)
             for d in derivatives]
    return Rule(name, arguments.split(), [vjp for vjp, _ in pairs], jvps=[jvp for _, jvp in pairs])


for _name, _derivative in UNARY.items():
    _vjp, _jvp = from_derivative(_derivative)
    SPECIAL[_name] = Rule("special." + _name, ("x",), (_vjp,), jvps=(_jvp,))
for _name, (_arguments, *_derivatives) in SEVERAL_ARGUMENTS.items():
    SPECIAL[_name] = _rule("special." + _name, _arguments, _derivatives)
