"""The "Variable & Automatic Gradient Calculation" tutorial (Tensor vs Variable, the attributes
of a Variable, then a graph y = x**2 + 4*x, z = 2*y + 3 and z.backward(gradient)), with arraygrad.

    python examples/tutorials/02_variables_and_autograd.py [numpy | array_api_strict | torch]

(or set ``ARRAYGRAD_BACKEND``). The tutorial's torch.Tensor(3, 4) is uninitialized memory;
here the values are fixed, so that the gradient can be checked.
"""

import os
import sys
import warnings

import arraygrad as ag
from arraygrad import Variable

BACKEND = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ARRAYGRAD_BACKEND", "numpy")
xp = ag.namespace(BACKEND)

# ------------------------------------------------------------------ 1. Tensor vs Variable
x_tensor = xp.reshape(xp.arange(12.0), (3, 4)) / 4 - 1  # torch.Tensor(3, 4)
x_variable = Variable(x_tensor)
print(x_variable)

# .data -> the wrapped array: the backend's own (a NumPy array on numpy), not a Variable
print(x_variable.data)
assert not isinstance(x_variable.data, Variable)

# .grad -> gradient of the variable
print(x_variable.grad)
assert x_variable.grad is None

# .requires_grad -> whether the variable requires gradient
print(x_variable.requires_grad)
x_variable = Variable(x_tensor, requires_grad=True)
print(x_variable.requires_grad)
assert x_variable.requires_grad

# .volatile -> inference mode with minimal memory usage. It has had no effect since PyTorch
# 0.4 and has none here: arraygrad accepts it, warns once, and .volatile is always False.
# Use `with ag.no_grad():` instead.
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x_variable = Variable(x_tensor, volatile=True)
    print(x_variable.grad, x_variable.requires_grad, x_variable.volatile)
assert (x_variable.grad, x_variable.requires_grad, x_variable.volatile) == (None, False, False)
assert all("no_grad" in str(w.message) for w in caught)
with ag.no_grad():  # what volatile=True meant
    assert not (Variable(x_tensor, requires_grad=True) * 2).requires_grad

# ------------------------------------------------------------------- 2. Graph & Variables
x = Variable(x_tensor, requires_grad=True)
y = x**2 + 4 * x
z = 2 * y + 3

print(x.requires_grad, y.requires_grad, z.requires_grad)
assert x.requires_grad and y.requires_grad and z.requires_grad

# .backward(gradient, retain_graph, create_graph): the gradient of z with respect to the
# graph's leaves, weighted by `gradient` (z is not a scalar, so it must be given).
gradient = xp.reshape(xp.arange(12.0), (3, 4)) / 10  # torch.FloatTensor(3, 4)
z.backward(gradient)

print(x.grad)  # dz/dx = 2 * (2x + 4), times the gradient
assert bool(xp.all(xp.abs(x.grad - gradient * (4 * x + 8)) < 1e-12))

# Only leaves keep their gradient: y.grad and z.grad are None (arraygrad warns, naming
# retain_grad(), which keeps them).
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    print(y.grad, z.grad)
    assert y.grad is None and z.grad is None
print(f"02_variables_and_autograd: all values as in the tutorial, on {BACKEND}")
