"""What a Variable takes from its user, checked, with errors that say what to give instead:
the array assigned to ``.data``, the flags, the gradient given to ``backward()``."""

from __future__ import annotations

from ._plugins import registry
from .errors import BackendError, BackwardError, GradientError
from .rules import is_complex_dtype

NUMBERS_ONLY = object()  # what not_a_number finds in a nested list of numbers


def assignable(variable, value):
    """``value`` as ``variable.data``, or an error naming what it is and what to assign."""
    backend = variable._backend
    if isinstance(value, type(variable)):
        value = value._values  # its array, as Variable(w) takes it
    owner = registry.of(value)
    if owner is not backend:
        kind = type(value)
        name = kind.__qualname__ if kind.__module__ == "builtins" else (
            f"{kind.__module__}.{kind.__qualname__}")
        if owner is None:
            got = f"a {name}"
            what = (f"assign an array of that backend (xp.asarray(value), with xp = "
                    f"arraygrad.namespace({backend.name!r}))")
        else:
            got = f"an array of backend {owner.name!r} ({name})"
            what = (f"a Variable holds arrays of one backend: make a new Variable of it "
                    f"(arraygrad.Variable(array)), or move this one first (v = "
                    f"v.to({owner.name!r}))")
        raise BackendError(f"Variable.data must be an array of backend {backend.name!r} (the "
                           f"Variable's), got {got}: {what}")
    value = backend.coerce(backend.untracked(value, "Variable.data"))
    if variable._requires_grad and not backend.is_inexact(value.dtype):
        undo = ("set v.requires_grad = False first" if variable.grad_fn is None else
                "take v.detach() to hold it")
        raise GradientError(
            f"Variable.data: this Variable requires grad, so its data must be floating-point or "
            f"complex, got dtype {value.dtype}: its gradients would be cast to that dtype "
            f"(truncated). Assign a floating array (xp.astype(a, xp.float64)), or {undo}")
    return value


def check_flag(what, value):
    """Refuse a flag that is not a bool (``requires_grad="no"`` would be truthy)."""
    if not isinstance(value, (bool, int)) and type(value).__name__ not in ("bool", "bool_"):
        raise TypeError(f"{what} must be True or False, got {value!r}")


def cannot_require_grad(dtype):
    return GradientError(
        f"only floating-point and complex Variables can require grad, but this one has dtype "
        f"{dtype}. Convert it first, e.g. Variable(xp.astype(a, xp.float64), requires_grad=True).")


def not_a_number(values):
    """The first value of a nested list that is not a number (``asarray(.., dtype=float64)``
    would make a None nan, silently), or ``NUMBERS_ONLY``."""
    if not isinstance(values, (list, tuple)):
        return values if isinstance(values, (str, bytes, dict, set, type(None))) else NUMBERS_ONLY
    for value in values:
        bad = not_a_number(value)
        if bad is not NUMBERS_ONLY:
            return bad
    return NUMBERS_ONLY


def seed(variable, gradient, create_graph, what="backward(): the gradient",
          output="the output"):
    """Check the gradient given to backward() against this Variable; make 1 if none.
    ``what`` and ``output`` name the two in messages (autograd.grad: grad_outputs[k])."""
    backend = variable._backend
    raw = backend.raw
    if gradient is None:
        if variable.size != 1:
            raise BackwardError(
                f"backward() needs a gradient for a Variable of shape {tuple(variable.shape)}: "
                "an implicit gradient exists only for single-element outputs. Pass "
                "gradient=xp.ones_like(y) (or a gradient of that shape), or reduce first, "
                "e.g. xp.sum(y).backward()." if output == "the output" else
                f"{what} is None, but {output} has shape {tuple(variable.shape)}: an implicit "
                "gradient exists only for single-element outputs; give one of that shape "
                "(xp.ones_like(...)).")
        if is_complex_dtype(variable.dtype):
            # as torch: which real function of it to differentiate is the user's choice
            raise BackwardError(
                f"{what} is None, but {output} is complex ({variable.dtype}): an implicit "
                "gradient exists only for real single-element outputs. Differentiate a "
                "real value of it (xp.real(y), xp.abs(y) ** 2), or pass a gradient "
                "explicitly (xp.ones_like(y) differentiates its real part).")
        grad = raw.ones_like(variable.data)
    elif isinstance(gradient, type(variable)):
        if gradient._backend is not backend:
            raise BackendError(
                f"{what} is a Variable of backend {gradient._backend.name!r}, but {output} "
                f"is of backend {backend.name!r}")
        grad = gradient if create_graph else gradient.data
    else:
        owner = registry.of(gradient)
        if owner is None:
            bad = gradient if not isinstance(gradient, (bool, int, float, complex, list,
                                                        tuple)) else not_a_number(gradient)
            if bad is not NUMBERS_ONLY:
                holding = f"{type(gradient).__name__} holding " if bad is not gradient else ""
                raise TypeError(
                    f"{what} must be an array of backend {backend.name!r}, a Variable or a "
                    f"number, got a {holding}{type(bad).__name__}")
            try:
                grad = raw.asarray(gradient, device=variable.device)
                if grad.dtype != variable.dtype:
                    if raw.isdtype(grad.dtype, "complex floating") and not raw.isdtype(
                            variable.dtype, "complex floating"):  # astype would drop .imag
                        raise TypeError("it holds complex values")
                    grad = raw.astype(grad, variable.dtype)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"{what} {gradient!r:.60} cannot be made an array of shape "
                    f"{tuple(variable.shape)} and dtype {variable.dtype}: {exc}") from None
        elif owner is not backend:
            raise BackendError(
                f"{what} is an array of backend {owner.name!r}, but {output} is of backend "
                f"{backend.name!r}")
        else:
            grad = backend.coerce(gradient)
    if tuple(grad.shape) != tuple(variable.shape):
        raise GradientError(
            f"{what} has shape {tuple(grad.shape)} but {output} has shape "
            f"{tuple(variable.shape)}; they must be equal (gradients are not broadcast).")
    if grad.dtype != variable.dtype:
        # As PyTorch: a gradient of another floating dtype of the same kind is cast (float32
        # ones for a float64 output); complex for real, real for complex, integers are refused.
        kinds = [next((k for k in ("real floating", "complex floating") if raw.isdtype(d, k)),
                      None) for d in (grad.dtype, variable.dtype)]
        if kinds[0] is None or kinds[0] != kinds[1]:
            raise GradientError(
                f"{what} has dtype {grad.dtype} but {output} has dtype {variable.dtype}: "
                "a gradient is cast only from another dtype of the same kind (real floating "
                f"or complex floating); convert it, e.g. xp.astype(gradient, {variable.dtype})"
                + (", or take xp.real(gradient) for a real output" if kinds[0] ==
                   "complex floating" else "") + ".")
        grad = (backend.ns if isinstance(grad, type(variable)) else raw).astype(
            grad, variable.dtype)
    if create_graph and not isinstance(grad, type(variable)):
        grad = type(variable)._make(grad, backend, None, 0, False)
    return grad
