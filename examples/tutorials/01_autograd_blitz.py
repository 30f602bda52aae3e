"""PyTorch's "Deep Learning with PyTorch: A 60 Minute Blitz", part 2, "Autograd: automatic
differentiation", line by line with arraygrad (the Variable-era text, then its no_grad() note).

    python examples/tutorials/01_autograd_blitz.py [numpy | array_api_strict | torch]

(or set ``ARRAYGRAD_BACKEND``). docs/coming-from-pytorch.md translates every line.
"""

import os
import random
import sys

import arraygrad as ag
from arraygrad import Variable

BACKEND = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ARRAYGRAD_BACKEND", "numpy")
xp = ag.namespace(BACKEND)  # torch's functions -> the Array API standard's, on this backend

# ---------------------------------------------------------------------------------- Variable
# Create a Variable (torch: Variable(torch.ones(2, 2), requires_grad=True)):
x = Variable(xp.ones((2, 2)), requires_grad=True)
print(x)

# Do an operation of the Variable:
y = x + 2
print(y)

# y was created as a result of an operation, so it has a grad_fn.
print(y.grad_fn)
assert y.grad_fn.name() == "AddBackward" and x.grad_fn is None

# Do more operations on y
z = y * y * 3
out = z.mean()  # or xp.mean(z)
print(z, out)
assert bool(xp.all(z == 27)) and float(out) == 27.0

# ---------------------------------------------------------------------------------- Gradients
# out.backward() is out.backward(1): out holds a single value.
out.backward()

# print gradients d(out)/dx: out = 1/4 sum 3 (x + 2)^2, so d(out)/dx = 3/2 (x + 2) = 4.5
print(x.grad)
assert bool(xp.all(x.grad == 4.5))

# You can do many crazy things with autograd! The standard has no random numbers (torch.randn),
# so the values come from Python's random module.
rng = random.Random(0)
x = Variable(xp.asarray([rng.gauss(0.0, 1.0) for _ in range(3)]), requires_grad=True)

y = x * 2
doublings = 1
while xp.linalg.vector_norm(y) < 1000:  # torch: y.data.norm() (arraygrad also has y.norm())
    y = y * 2
    doublings += 1

print(y)

gradients = xp.asarray([0.1, 1.0, 0.0001])  # torch.FloatTensor([0.1, 1.0, 0.0001])
y.backward(gradients)

print(x.grad)
assert bool(xp.all(x.grad == gradients * 2.0**doublings))  # y = 2**k x: exact in binary

# Stop autograd from tracking history by wrapping code in `with no_grad():` (this replaced
# Variable(..., volatile=True), which arraygrad accepts and ignores).
print(x.requires_grad)
print((x**2).requires_grad)

with ag.no_grad():
    print((x**2).requires_grad)
    assert not (x**2).requires_grad
assert x.requires_grad and (x**2).requires_grad
print(f"01_autograd_blitz: all values as in the tutorial, on {BACKEND}")
