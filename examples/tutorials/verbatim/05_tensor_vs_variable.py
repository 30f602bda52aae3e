# "Tensor vs Variable" and "Graph & Variables" of a PyTorch autograd tutorial (PyTorch 0.3), as
# it writes them (the torch lines that ../02_variables_and_autograd.py translates; its values
# here are small integers so that the printed gradient can be checked): only the import of
# Variable is changed (it was `from torch.autograd import Variable`).
import torch
from arraygrad import Variable

x_tensor = torch.randn(3, 4)
x_variable = Variable(x_tensor)

# .data -> wrapped tensor
print(x_variable.data)

# .grad -> gradient of the variable
print(x_variable.grad)

# .requires_grad -> whether the variable requires gradient
print(x_variable.requires_grad)
x_variable = Variable(x_tensor, requires_grad=True)
print(x_variable.requires_grad)

# .volatile -> inference mode with minimal memory usage
x_variable = Variable(x_tensor, volatile=True)
print(x_variable.grad, x_variable.requires_grad, x_variable.volatile)

x = Variable(torch.FloatTensor([[1, 2], [3, 4]]), requires_grad=True)
y = x ** 2 + 4 * x
z = 2 * y + 3

print(x.requires_grad, y.requires_grad, z.requires_grad)

# .backward(gradient, retain_graph, create_graph): compute the gradient of z with respect to
# the graph leaves
gradient = torch.FloatTensor([[0.1, 1.0], [1.0, 10.0]])
z.backward(gradient)

print(x.grad)
print(y.grad, z.grad)
