"""marray masked arrays over arraygrad's differentiable namespace
(``marray.masked_namespace(ag.namespace(backend))``): marray's masked reductions and
elementwise functions run on Variables, and the result's ``.data`` is a Variable, checked
against central differences (masked elements get a zero gradient). ``torch_reference=False``:
the masked namespace is built over arraygrad's namespace, not over raw torch tensors. See
``harness.py`` for what one case checks."""

import functools

import numpy as np
import pytest

import arraygrad as ag

from .harness import Case, params, run

marray = pytest.importorskip("marray", reason="marray is not installed (pip install -e '.[interop]')")

rng = np.random.default_rng(5)


def normal(*shape):
    return rng.standard_normal(shape)


MASK = np.array([[False, True, False, False],
                 [False, False, False, True],
                 [True, False, False, False]])


@functools.cache
def masked_namespace(xp):
    return marray.masked_namespace(xp)


def masked(v, mask=MASK):
    """(mxp, the masked array of Variable ``v``)."""
    xp = ag.namespace(v)
    mxp = masked_namespace(xp)
    return mxp, mxp.asarray(v, mask=xp.asarray(mask))


def reduction(name, **kwargs):
    def fn(v):
        mxp, m = masked(v)
        return getattr(mxp, name)(m, **kwargs).data
    return fn


def elementwise(v, w):
    mxp, m = masked(v)
    return (mxp.exp(m) * mxp.asarray(w) + mxp.sin(m) / 2.5).data


def matmul(v, w):
    mxp, m = masked(v)
    return (m @ mxp.asarray(w)).data


def case(name, fn, inputs):
    return Case("marray", name, fn, inputs, torch_reference=False)


X = normal(3, 4)

CASES = [
    case("sum(axis=1)", reduction("sum", axis=1), (X,)),
    case("sum()", reduction("sum"), (X,)),
    case("mean(axis=0)", reduction("mean", axis=0), (X,)),
    case("std(axis=1, correction=1)", reduction("std", axis=1, correction=1), (X,)),
    case("var()", reduction("var"), (X,)),
    case("max(axis=1)", reduction("max", axis=1), (X,)),
    case("min(axis=0)", reduction("min", axis=0), (X,)),
    case("prod(axis=1)", reduction("prod", axis=1), (X,)),
    case("cumulative_sum(axis=1)", reduction("cumulative_sum", axis=1), (X,)),
    case("exp(m) * w + sin(m) / 2.5", elementwise, (X, normal(3, 4))),
    case("m @ w", matmul, (X, normal(4, 2))),
]


@pytest.mark.parametrize("case, backend", params(CASES))
def test_marray(case, backend):
    run(case, backend)
