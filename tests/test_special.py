"""The special functions of ``xp.special`` (SciPy's names): every rule against central
differences, with second order (its derivative uses other special functions, recorded), and
forward mode against reverse mode, on each backend that provides them."""

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.conformance.cases import SPECIAL_CONSTANTS, SPECIAL_TRAILING
from arraygrad.rules.special import SPECIAL
from arraygrad.testing import check_grads

# Inside each function's domain, away from zero where a formula sets 0 apart.
DOMAINS = {"multigammaln": (1.2, 2.5), "erfinv": (-0.9, 0.9), "erfcinv": (0.1, 1.9), "logit": (0.1, 0.9),
           "ndtri": (0.1, 0.9), "betainc": (0.1, 0.9), "betaincc": (0.1, 0.9)}
# Constant arguments (an integer order, a shape parameter with no gradient), as the conformance
# cases give them: one table for both.
CONSTANT_FIRST, CONSTANT_LAST = SPECIAL_CONSTANTS, SPECIAL_TRAILING
BACKENDS = {"numpy": 2, "torch": 2, "dask": 1, "jax": 1}  # backend: order checked


def _call(backend, name):
    constants, last = CONSTANT_FIRST.get(name, ()), CONSTANT_LAST.get(name, ())

    def f(*xs):
        return getattr(xs[0].__array_namespace__().special, name)(*constants, *xs, *last)
    return f, len(SPECIAL[name].arrays) - len(constants) - len(last)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_function_gradients(name, backend):
    pytest.importorskip("scipy", reason="scipy is not installed (pip install -e '.[interop]')")
    try:
        special = ag.namespace(backend).special
    except (ag.BackendUnavailable, AttributeError) as exc:
        pytest.skip(str(exc))
    if not hasattr(special, name):
        pytest.skip(f"{backend}'s library has no {name}")
    if name == "multigammaln" and backend == "dask":
        pytest.skip("SciPy's multigammaln is not a ufunc: it does not run on dask arrays")
    low, high = DOMAINS.get(name, (0.2, 2.5))
    rng = np.random.default_rng(3)
    f, count = _call(backend, name)
    arrays = [rng.uniform(low, high, 5) for _ in range(count)]
    check_grads(f, *arrays, backend=backend, order=BACKENDS[backend], rtol=1e-5, atol=1e-6)
    if backend == "numpy":  # forward mode: J t against the VJP's <g, J t>
        x = [ag.Variable(a) for a in arrays]
        t = [rng.standard_normal(5) for _ in arrays]
        _, tangent = ag.jvp(f, tuple(x), tuple(ag.Variable(v) for v in t))
        g = rng.standard_normal(5)
        _, pullback = ag.vjp(f, *x)
        cotangents = pullback(ag.Variable(g))
        cotangents = cotangents if isinstance(cotangents, tuple) else (cotangents,)
        np.testing.assert_allclose(np.dot(g, tangent.data),
                                   sum(np.dot(c.data, v) for c, v in zip(cotangents, t)),
                                   rtol=1e-10)


@pytest.mark.parametrize("name", ["polygamma", "gammainc", "stdtr", "betainc"])
def test_gradients_without_a_formula_are_refused_not_zero(name):
    pytest.importorskip("scipy", reason="scipy is not installed (pip install -e '.[interop]')")
    xp = ag.namespace("numpy")
    constants = [ag.Variable(np.asarray(float(c)), requires_grad=True)
                 for c in CONSTANT_FIRST[name]]
    x = ag.Variable(np.array([0.3, 0.6]), requires_grad=True)
    out = getattr(xp.special, name)(*constants, x)
    with pytest.raises(ag.NoRuleError, match=f"special.{name}: no gradient"):
        xp.sum(out).backward()


def test_scipy_ufuncs_on_numpy_variables_reach_the_rules():
    special = pytest.importorskip("scipy.special._ufuncs",
                                  reason="scipy is not installed (pip install -e '.[interop]')")
    check_grads(lambda x: special.erf(x) * special.gammaln(x) + special.xlogy(x, x + 1),
                np.array([0.4, 1.3, 2.2]), order=2)
