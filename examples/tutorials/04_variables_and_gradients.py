"""The "Variables" and "Gradients" part of a PyTorch fundamentals tutorial: Variables behave as
arrays (a + b is torch.add(a, b), a * b is torch.mul(a, b)); o = 1/2 sum 5 (x + 1)^2 gives
x.grad = [10, 10]; a second backward through the same graph is an error.

    python examples/tutorials/04_variables_and_gradients.py [numpy | array_api_strict | torch]

(or set ``ARRAYGRAD_BACKEND``).
"""

import os
import sys

import arraygrad as ag
from arraygrad import Variable

BACKEND = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ARRAYGRAD_BACKEND", "numpy")
xp = ag.namespace(BACKEND)

# ------------------------------------------------------------------------------- Variables
a = Variable(xp.ones((2, 2)), requires_grad=True)
b = Variable(xp.ones((2, 2)), requires_grad=True)

# Variables and arrays behave the same
print(a + b)
print(xp.add(a, b))  # torch.add(a, b)
assert bool(xp.all(a + b == 2)) and bool(xp.all(xp.add(a, b) == 2))

print(a * b)
print(xp.multiply(a, b))  # torch.mul(a, b)
assert bool(xp.all(xp.multiply(a, b) == a * b))

# ------------------------------------------------------------------------------- Gradients
x = Variable(xp.ones(2), requires_grad=True)
y = 5 * (x + 1) ** 2
print(y)
assert bool(xp.all(y == 20))

# backward() needs a single value: reduce y to one, o = 1/2 sum(y)
o = (1 / 2) * xp.sum(y)  # torch.sum(y); or y.sum()
print(o)
assert float(o) == 20.0

o.backward()  # do/dx = 5 (x + 1) = 10
print(x.grad)
assert bool(xp.all(x.grad == xp.asarray([10.0, 10.0])))

# The first backward freed the graph's saved values: a second one is an error that says to
# pass retain_graph=True to the first.
try:
    o.backward()
except ag.BackwardError as error:  # also a RuntimeError, as in PyTorch
    print(f"BackwardError: {error}")
    assert "retain_graph=True" in str(error)
else:
    raise AssertionError("a second backward through a freed graph ran")
print(f"04_variables_and_gradients: all values as in the tutorial, on {BACKEND}")
