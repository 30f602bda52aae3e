"""SciPy's quasi-Newton optimizers with arraygrad's exact gradients: ``ag.value_and_grad(f)``
becomes ``scipy.optimize.minimize``'s ``fun`` with ``jac=True``, here on the Rosenbrock function
in 10 dimensions, and needs far fewer function evaluations than finite differences.

Set ``ARRAYGRAD_EXAMPLES_SMALL=1`` for a quick run.
"""

import os
import time

import numpy as np
from scipy.optimize import minimize

import arraygrad as ag

SMALL = os.environ.get("ARRAYGRAD_EXAMPLES_SMALL") == "1"
DIMENSIONS = 10
METHOD = "L-BFGS-B"


def rosenbrock(x):
    """sum(100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2), minimal (0) at x = ones; plain NumPy calls,
    which arraygrad records on NumPy-backed Variables (NEP 13/18)."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


_value_and_grad = ag.value_and_grad(rosenbrock)


def fun_and_jac(x):
    """What ``minimize(..., jac=True)`` wants: (float, float64 NumPy array)."""
    value, gradient = _value_and_grad(x)
    return float(value), np.asarray(gradient, dtype=np.float64)


def main():
    x0 = np.full(DIMENSIONS, -1.2)
    x0[1::2] = 1.0  # the classic start (-1.2, 1, -1.2, 1, ...)
    options = {"maxiter": 2_000 if SMALL else 20_000, "gtol": 1e-10}
    assert np.allclose(fun_and_jac(x0)[1], _finite_difference_gradient(x0), rtol=1e-5)

    start = time.perf_counter()
    exact = minimize(fun_and_jac, x0, jac=True, method=METHOD, options=options)
    exact_seconds = time.perf_counter() - start
    start = time.perf_counter()
    numeric = minimize(rosenbrock, x0, jac=None, method=METHOD, options=options)
    numeric_seconds = time.perf_counter() - start

    print(f"Rosenbrock in {DIMENSIONS} dimensions, {METHOD}")
    print(f"  arraygrad gradient:  {exact.nfev:5d} evaluations of f and its gradient "
          f"({exact.nit} iterations, {exact_seconds:.2f} s), f = {exact.fun:.2e}, "
          f"|x - 1| = {np.linalg.norm(exact.x - 1):.1e}")
    print(f"  finite differences:  {numeric.nfev:5d} evaluations of f "
          f"({numeric.nit} iterations, {numeric_seconds:.2f} s), f = {numeric.fun:.2e}, "
          f"|x - 1| = {np.linalg.norm(numeric.x - 1):.1e}")
    assert exact.success, exact.message
    assert np.allclose(exact.x, np.ones(DIMENSIONS), atol=1e-5), exact.x
    assert exact.nfev < numeric.nfev, (exact.nfev, numeric.nfev)
    print("OK")


def _finite_difference_gradient(x, eps=1e-6):
    basis = np.eye(x.size) * eps
    return np.array([(rosenbrock(x + e) - rosenbrock(x - e)) / (2 * eps) for e in basis])


if __name__ == "__main__":
    main()
