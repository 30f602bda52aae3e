# Autograd mechanics: backward twice with retain_graph=True, accumulated gradients, resetting
# them with x.grad.data.zero_(), and backward with an explicit gradient, as the PyTorch 0.3
# tutorials write it (the torch lines that ../03_retain_graph.py translates): only the import of
# Variable is changed.
import torch
from arraygrad import Variable

x = Variable(torch.ones(1), requires_grad=True)
y = 2 * x + 3
z = y * y * 3

z.backward(retain_graph=True)
print(x.grad)

z.backward()
print(x.grad)

x = Variable(torch.ones(2, 2), requires_grad=True)
y = 2 * x + 3
z = y * y * 3

z.backward(torch.ones(2, 2), retain_graph=True)
print(x.grad)

x.grad.data.zero_()
z.backward(torch.FloatTensor([[0, 1], [1, 0]]))
print(x.grad)
