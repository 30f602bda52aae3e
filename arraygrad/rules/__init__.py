"""Differentiation rules, one module per family of the Array API standard.

A rule is written once against ``xp``: the engine calls it with the backend's raw namespace for an
ordinary backward, and with the differentiable namespace when ``create_graph=True``, so the same
rule yields higher derivatives. Each array argument gets a vector-Jacobian product
``vjp(xp, g, <saved>..., *, <params>)``: the parameters after ``g`` name what the rule needs
(an array argument, ``ans`` for the output, ``<arg>_shape`` for an argument's shape), and only
those are kept alive for backward. Keyword-only parameters receive the op's options (``axis``...).

A rule may return a gradient whose shape broadcasts to or from its argument's shape, and of a
related dtype: the engine fits shape and dtype once, centrally (a gradient that only needs
broadcasting, ``sum``'s, becomes a read-only broadcast view). Every gradient a rule receives or
returns is an array of its backend; ``None`` is the one symbolic zero (an input that gets no
gradient). Rules are pure: they never write into an array they did not make.
"""

from __future__ import annotations

from ._core import (LINEAR, MULTILINEAR, NONDIFFERENTIABLE, OUTSIDE_STANDARD, REAL_CONSTANT,
                    RULES, TRANSPOSE, BackendQueries, Rule, RuleInterface, backends, broadcasts,
                    capable, conj, defjoint,
                    defvjp, device_of, expand_reduced, get_index, host_reads, is_complex,
                    is_complex_dtype, kernel, no_rule, nondifferentiable, normalize_axis, set_index,
                    forget_capabilities, sum_axes, sum_to)
from . import (creation, elementwise, fft, indexing, linalg, linalg_eig,  # noqa: F401
               linear_algebra, manipulation, searching, statistical, utility)
