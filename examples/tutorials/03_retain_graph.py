"""Autograd mechanics: backward twice with retain_graph=True, gradients that accumulate in
.grad (60, then 120), resetting them, and backward with an explicit gradient on a 2x2 output.

    python examples/tutorials/03_retain_graph.py [numpy | array_api_strict | torch]

(or set ``ARRAYGRAD_BACKEND``).
"""

import os
import sys

import arraygrad as ag
from arraygrad import Variable

BACKEND = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ARRAYGRAD_BACKEND", "numpy")
xp = ag.namespace(BACKEND)

x = Variable(xp.ones(1), requires_grad=True)
y = 2 * x + 3
z = y * y * 3  # z = 3 (2x + 3)^2, dz/dx = 12 (2x + 3) = 60 at x = 1

z.backward(retain_graph=True)  # keep the graph for a second backward
print(x.grad)
assert float(x.grad[0]) == 60.0

z.backward()  # gradients accumulate in .grad
print(x.grad)
assert float(x.grad[0]) == 120.0

# The same on a 2x2 Variable: z is not a scalar, so backward needs a gradient of its shape.
x = Variable(xp.ones((2, 2)), requires_grad=True)
y = 2 * x + 3
z = y * y * 3
z.backward(xp.ones((2, 2)), retain_graph=True)  # torch.ones(2, 2)
print(x.grad)
assert bool(xp.all(x.grad == 60))

# torch: x.grad.data.zero_(). In arraygrad .data is the backend's own array: a torch tensor,
# whose zero_() resets the gradient in place as in the tutorial, or a NumPy array, which has no
# zero_(). x.grad.zero_() resets the gradient Variable itself on every backend (or x.grad = None).
if hasattr(x.grad.data, "zero_"):
    x.grad.data.zero_()
else:
    x.grad.zero_()
assert bool(xp.all(x.grad == 0))

z.backward(xp.asarray([[0.0, 1.0], [1.0, 0.0]]))  # torch.FloatTensor([[0, 1], [1, 0]])
print(x.grad)
assert bool(xp.all(x.grad == xp.asarray([[0.0, 60.0], [60.0, 0.0]])))
print(f"03_retain_graph: all values as in the tutorial, on {BACKEND}")
