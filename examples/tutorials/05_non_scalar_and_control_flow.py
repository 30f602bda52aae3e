"""Automatic differentiation as "Dive into Deep Learning" teaches it: y = 2 x.x, accumulated
gradients and x.grad.zero_(), backward on a non-scalar (an error without a gradient), detaching
a computation, and the gradient of Python control flow.

    python examples/tutorials/05_non_scalar_and_control_flow.py [numpy | array_api_strict | torch]

(or set ``ARRAYGRAD_BACKEND``).
"""

import os
import random
import sys

import arraygrad as ag
from arraygrad import Variable

BACKEND = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ARRAYGRAD_BACKEND", "numpy")
xp = ag.namespace(BACKEND)

x = Variable(xp.arange(4.0), requires_grad=True)  # torch.arange(4.0, requires_grad=True)
print(x.grad)  # None by default

y = 2 * xp.vecdot(x, x)  # torch.dot(x, x)
print(y)
assert float(y) == 28.0

y.backward()
print(x.grad)
assert bool(xp.all(x.grad == 4 * x))

# PyTorch accumulates the gradient: reset it before computing another function.
x.grad.zero_()
y = x.sum()
y.backward()
print(x.grad)
assert bool(xp.all(x.grad == 1))

# ------------------------------------------------------------ Backward for non-scalar y
x.grad.zero_()
y = x * x
try:
    y.backward()  # an implicit gradient exists only for a single value
except ag.BackwardError as error:  # also a RuntimeError, as in PyTorch
    print(f"BackwardError: {error}")
    assert "(4,)" in str(error) and "gradient" in str(error)
else:
    raise AssertionError("backward() on a non-scalar without a gradient ran")

y.backward(xp.ones(y.shape))  # torch: y.backward(torch.ones(y.size())), or y.sum().backward()
print(x.grad)
assert bool(xp.all(x.grad == 2 * x))

# -------------------------------------------------------------------- Detaching computation
x.grad.zero_()
y = x * x
u = y.detach()  # u has y's values but no history: a constant below
z = u * x
z.sum().backward()
assert bool(xp.all(x.grad == u))

x.grad.zero_()
y.sum().backward()  # y itself still has its graph
assert bool(xp.all(x.grad == 2 * x))


# ----------------------------------------------------- Gradient of Python control flow
def f(a):
    b = a * 2
    while b.norm() < 1000:  # the number of doublings depends on a
        b = b * 2
    if b.sum() > 0:  # and so does the branch
        c = b
    else:
        c = 100 * b
    return c


rng = random.Random(0)
for value in (rng.gauss(0.0, 1.0), -abs(rng.gauss(0.0, 1.0))):  # both branches
    a = Variable(xp.asarray(value), requires_grad=True)  # torch.randn(size=(), ...)
    d = f(a)
    d.backward()
    print(a.grad, d / a)
    # f is linear in a (d = a * 2**k, or 100 * a * 2**k): a.grad == d / a
    assert float(xp.abs(a.grad - d / a)) <= 1e-12 * float(xp.abs(d / a))
print(f"05_non_scalar_and_control_flow: all values as in the tutorial, on {BACKEND}")
