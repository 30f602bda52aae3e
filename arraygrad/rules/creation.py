"""Rules of the differentiable creation and data-type functions; the rest create constants."""

from . import LINEAR, defvjp

defvjp("tril", lambda xp, g, *, k=0: xp.tril(g, k=k), jvps=LINEAR)
defvjp("triu", lambda xp, g, *, k=0: xp.triu(g, k=k), jvps=LINEAR)
# The engine casts the gradient back to the input's dtype (real part for a real input).
defvjp("astype", lambda xp, g: g, params="dtype", jvps=LINEAR)
# Back to the device the input came from.
defvjp("to_device", lambda xp, g, x: g.to_device(x.device), params="device", jvps=LINEAR)
