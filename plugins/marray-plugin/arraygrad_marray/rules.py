"""The rules of marray's functions whose maths differ from arraygrad's built-in rules.

marray skips masked entries where it reduces or contracts: ``sum``, ``cumulative_sum``,
``matmul``, ``tensordot`` and ``vecdot`` fill them with 0, ``prod`` and ``cumulative_prod`` with
1; ``mean`` divides by the count of the entries that count, and ``var`` and ``std`` centre on
that mean and divide by that count. So the derivative with respect to a masked entry is 0, and
the others are those of the built-in rule at the filled input, or over the entries that count.
The built-in ``mean`` rule, for one, gives each of 3 entries 1/3 where marray's mean of the 2
unmasked ones has 1/2 for each of those and 0 for the masked one.

A mask is data, not a value: it is read from the saved input (a raw array, or a Variable's
under ``create_graph``). The weights are written with ``xp``, so ``create_graph`` differentiates
them again, and the built-in rules are called from ``arraygrad.rules.RULES``, not copied.
"""

from __future__ import annotations

import numpy

from arraygrad.rules import RULES, Rule, conj, expand_reduced, is_complex


def _counted(xp, x):
    """1 where ``x`` counts, 0 where it is masked, in ``x``'s dtype, unmasked."""
    raw = x if hasattr(x, "mask") else x.data  # a Variable under create_graph
    return xp.asarray(~numpy.asarray(raw.mask), dtype=x.dtype)


def _filled(xp, x, counted, value):
    """``x`` with its masked entries replaced by ``value``, unmasked."""
    return xp.where(counted != 0, x, xp.asarray(value, dtype=x.dtype))


def _zeroed(xp, g, counted):
    """``g`` with 0 where ``counted`` is 0: a masked output passes no gradient back."""
    return xp.where(counted != 0, g, xp.zeros_like(counted))


def _count(xp, counted, axis):
    """The number of entries that count in each reduced slice (at least 1), keeping dims."""
    return xp.clip(xp.real(xp.sum(counted, axis=axis, keepdims=True)), min=1)


# ------------------------------------------------------------------------------ reductions
# d reduction / d x_i as weights w_i (0 at masked entries); the VJP is g * conj(w) and the JVP
# sum(w t), or g * w and sum(Re(conj(w) t)) for var and std (real results of complex inputs).


def _prod_weights(xp, x, counted, *, axis=None, **_):
    # The product of the other entries that count: the built-in rule's at x with its masked
    # entries 1, exact with zeros (its VJP of a 1 gives conj of the weights).
    ones, filled = xp.ones((1,) * x.ndim, dtype=x.dtype), _filled(xp, x, counted, 1)
    others = RULES["prod"].vjps[0](xp, ones, filled, xp.prod(filled, axis=axis, keepdims=True),
                                   axis=axis, keepdims=True)
    return counted * conj(xp, others)


def _var_weights(xp, x, counted, *, axis=None, correction=0.0, **_):
    # 2 (x_i - mean) / (n - correction) over the n entries that count; marray's mean is theirs
    centred = _filled(xp, x, counted, 0) - xp.mean(x, axis=axis, keepdims=True)
    return 2 * counted * centred / (_count(xp, counted, axis) - correction)


def _std_weights(xp, x, counted, ans, *, axis=None, keepdims=False, **options):
    ans = expand_reduced(xp, ans, axis, x.ndim, keepdims)
    zero = ans == 0  # PyTorch's convention: 0 where std is 0
    weights = _var_weights(xp, x, counted, axis=axis, **options) / (
        2 * xp.where(zero, xp.ones_like(ans), ans))
    return xp.where(zero, xp.zeros_like(weights), weights)


WEIGHTS = {
    "sum": lambda xp, x, counted, **_: counted,
    "mean": lambda xp, x, counted, *, axis=None, **_: counted / _count(xp, counted, axis),
    "prod": _prod_weights,
    "var": _var_weights,
    "std": _std_weights,
}
REAL_VALUED = ("var", "std")


def masked_reduction(name):
    """The rule of marray's reduction ``name``, with the weights ``WEIGHTS[name]``."""
    weights, real = WEIGHTS[name], name in REAL_VALUED

    def vjp(xp, g, x, ans=None, **options):
        w = weights(xp, x, _counted(xp, x), *([ans] if ans is not None else []), **options)
        spread = expand_reduced(xp, g, options.get("axis"), x.ndim, options.get("keepdims"))
        return spread * (w if real else conj(xp, w))

    def jvp(xp, t, x, ans=None, **options):
        w = weights(xp, x, _counted(xp, x), *([ans] if ans is not None else []), **options)
        product = conj(xp, w) * t if real else w * t
        if real and is_complex(product):
            product = xp.real(product)
        return xp.sum(product, axis=options.get("axis"), keepdims=bool(options.get("keepdims")))

    if name == "std":  # only std's weights need its result: the others keep x alone
        return Rule(name, ("x",), (vjp,), jvps=(jvp,))
    return Rule(name, ("x",), (lambda xp, g, x, **options: vjp(xp, g, x, **options),),
                jvps=(lambda xp, t, x, **options: jvp(xp, t, x, **options),))


# ------------------------------------------------------------------------------ products
# matmul, tensordot, vecdot: the built-in VJPs at the zero-filled inputs, 0 at each input's
# masked entries; the JVP is the function of a tangent that counts and the other filled input.


def zero_filled_product(name):
    """The rule of marray's ``matmul``, ``tensordot`` or ``vecdot``."""
    builtin = RULES[name]

    def inputs(xp, x1, x2):
        counted = (_counted(xp, x1), _counted(xp, x2))
        return counted, (_filled(xp, x1, counted[0], 0), _filled(xp, x2, counted[1], 0))

    def vjp(i):
        def vjp_i(xp, g, x1, x2, **options):
            counted, filled = inputs(xp, x1, x2)
            return counted[i] * builtin.vjps[i](xp, g, *filled, **options)
        return vjp_i

    def joint(xp, g, x1, x2, **options):
        counted, filled = inputs(xp, x1, x2)
        return [c * grad for c, grad in zip(counted, builtin.joint(xp, g, *filled, **options))]

    def jvp(i):
        def jvp_i(xp, t, x1, x2, **options):
            counted, operands = inputs(xp, x1, x2)
            operands = list(operands)
            operands[i] = t * counted[i]
            return getattr(xp, name)(*operands, **options)
        return jvp_i

    if builtin.joint is not None:  # tensordot
        return Rule(name, ("x1", "x2"), (), joint=joint, jvps=(jvp(0), jvp(1)),
                    params=builtin.params)
    return Rule(name, ("x1", "x2"), (vjp(0), vjp(1)), jvps=(jvp(0), jvp(1)),
                params=builtin.params)


# ------------------------------------------------------------------------------ cumulative
# marray fills masked entries with the identity and masks the outputs at them: the built-in
# rule at the filled input, with no gradient from masked outputs and none to masked entries.


def _counted_out(xp, counted, options):
    """Which outputs count: those at entries that count, and the initial value where
    ``include_initial`` adds one."""
    if not options.get("include_initial"):
        return counted
    axis = options.get("axis") or 0
    # (the initial slice's shape from a reduction: a take of index 0 fails on an empty axis)
    first = xp.expand_dims(xp.ones_like(xp.any(counted, axis=axis)), axis=axis)
    return xp.concat([first, counted], axis=axis)


def vjp_masked_cumulative_sum(xp, g, x, **options):
    counted = _counted(xp, x)
    g = _zeroed(xp, g, _counted_out(xp, counted, options))
    return counted * RULES["cumulative_sum"].vjps[0](xp, g, x.shape, **options)


def jvp_masked_cumulative_sum(xp, t, x, **options):
    counted = _counted(xp, x)
    return _zeroed(xp, xp.cumulative_sum(t * counted, **options),
                   _counted_out(xp, counted, options))


def _cumulative_prod_inputs(xp, x, options):
    counted = _counted(xp, x)
    filled = _filled(xp, x, counted, 1)
    return counted, filled, xp.cumulative_prod(filled, **options)


def vjp_masked_cumulative_prod(xp, g, x, **options):
    counted, filled, ans = _cumulative_prod_inputs(xp, x, options)
    # g unmasked, 0 where it is masked: the built-in rule's running sums would carry its mask
    g = _filled(xp, g, _counted(xp, g) * _counted_out(xp, counted, options), 0)
    return counted * RULES["cumulative_prod"].vjps[0](xp, g, filled, ans, **options)


def jvp_masked_cumulative_prod(xp, t, x, **options):
    counted, filled, ans = _cumulative_prod_inputs(xp, x, options)
    tangent = RULES["cumulative_prod"].jvps[0](xp, t * counted, filled, ans, **options)
    return _zeroed(xp, tangent, _counted_out(xp, counted, options))


MASKED_RULES = {
    **{name: masked_reduction(name) for name in WEIGHTS},
    **{name: zero_filled_product(name) for name in ("matmul", "tensordot", "vecdot")},
    "cumulative_sum": Rule("cumulative_sum", ("x",), (vjp_masked_cumulative_sum,),
                           jvps=(jvp_masked_cumulative_sum,)),
    "cumulative_prod": Rule("cumulative_prod", ("x",), (vjp_masked_cumulative_prod,),
                            jvps=(jvp_masked_cumulative_prod,)),
}
"""The plugin's rules by function name (``BackendSpec.rules``)."""
