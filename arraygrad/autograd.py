"""``arraygrad.autograd.grad``: gradients of outputs with respect to chosen inputs, returned
instead of accumulated into ``.grad`` (as ``torch.autograd.grad``); ``Variable`` is here too,
where PyTorch code imports it from (``from torch.autograd import Variable``)."""

from __future__ import annotations

from . import _engine
from ._variable import Variable
from .errors import BackwardError


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    """Return the gradients of ``outputs`` with respect to each of ``inputs``, as a tuple with
    one entry per input (even for a single input given bare, as ``torch.autograd.grad``: write
    ``(g,) = grad(y, x)`` or ``grad(y, x)[0]``).

    Parameters
    ----------
    outputs, inputs : Variable or sequence of Variables
    grad_outputs : gradients of some scalar with respect to ``outputs`` (``None`` for
        single-element outputs), as for ``Variable.backward``.
    retain_graph, create_graph : as for ``Variable.backward``.
    allow_unused : return ``None`` for an input the outputs do not depend on, instead of raising.
    """
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    if grad_outputs is None or not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    if len(grad_outputs) != len(outputs):
        raise BackwardError(f"grad(): got {len(outputs)} outputs and {len(grad_outputs)} "
                            "grad_outputs; give one per output (None for a single-element one)")
    for role, values in (("outputs", outputs), ("inputs", inputs)):
        for k, value in enumerate(values):
            if not isinstance(value, Variable):
                raise TypeError(f"grad(): {role}[{k}] is a {type(value).__name__}, not a "
                                "Variable: differentiate Variables computed from leaves made "
                                "with Variable(x, requires_grad=True)")
    if retain_graph is None:
        retain_graph = create_graph
    roots = []
    for k, (output, gradient) in enumerate(zip(outputs, grad_outputs)):
        edge = output._edge
        if edge is None:
            raise BackwardError(f"grad(): outputs[{k}] does not require grad; nothing to "
                                "differentiate")
        roots.append((edge, output._seed(gradient, create_graph, f"grad(): grad_outputs[{k}]",
                                         f"outputs[{k}]")))
    edges = []
    for k, variable in enumerate(inputs):
        if not variable.requires_grad:
            raise BackwardError(f"grad(): inputs[{k}] does not require grad; every input must "
                                "(requires_grad=True)")
        edges.append(variable._edge)
    capture = _engine.backward(roots, retain_graph, create_graph, Variable,
                               {edge: None for edge in edges})

    results, handed_out = [], set()
    for variable, edge in zip(inputs, edges):
        found = capture[edge]
        if found is not None and id(found) in handed_out:  # one array for two inputs (x + y)
            found = found * 1 if isinstance(found, Variable) else variable._backend.raw.asarray(
                found, copy=True)
        handed_out.add(id(found))
        if found is None and not allow_unused:
            raise BackwardError(
                "grad(): one of the inputs was not used to compute the outputs; pass "
                "allow_unused=True to get None for it")
        if found is not None and not isinstance(found, Variable):
            found = Variable._make(found, variable._backend, None, 0, False)
        results.append(found)
    return tuple(results)
