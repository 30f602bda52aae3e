# "Variables" and "Gradients" of a PyTorch fundamentals tutorial (PyTorch 0.3), as it writes
# them (the torch lines that ../04_variables_and_gradients.py translates): only the import of
# Variable is changed (it was `from torch.autograd import Variable`).
import torch
from arraygrad import Variable

a = Variable(torch.ones(2, 2), requires_grad=True)
b = Variable(torch.ones(2, 2), requires_grad=True)

# Variables and tensors behave the same
print(a + b)
print(torch.add(a, b))

print(a * b)
print(torch.mul(a, b))

x = Variable(torch.ones(2), requires_grad=True)
y = 5 * (x + 1) ** 2
print(y)

o = (1/2) * torch.sum(y)
print(o)

o.backward()
print(x.grad)

# A second backward through the same graph raises an error, as in the tutorial ("Trying to
# backward through the graph a second time ... retain_graph=True").
o.backward()
