"""Rules of the differentiable creation and data-type functions; the rest create constants."""

from . import defvjp

defvjp("tril", lambda xp, g, *, k=0: xp.tril(g, k=k), jvps=(lambda xp, t, *, k=0: xp.tril(t, k=k),))
defvjp("triu", lambda xp, g, *, k=0: xp.triu(g, k=k), jvps=(lambda xp, t, *, k=0: xp.triu(t, k=k),))
# The engine casts the gradient back to the input's dtype (real part for a real input).
defvjp("astype", lambda xp, g: g, params="dtype")
# Back to the device the input came from.
defvjp("to_device", lambda xp, g, x: g.to_device(x.device), params="device")
