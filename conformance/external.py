"""An independent reference for the gradients of the conformance cases: torch.autograd or jax.vjp.

``runner._reference()`` computes the reference gradients with arraygrad itself (on NumPy), so a
wrong rule would be wrong in the reference too. This module runs the same ``case.call`` (written
against the Array API standard) in PyTorch (through ``array_api_compat.torch``) or in JAX
(``jax.numpy``), which share nothing with arraygrad's rules, and returns the gradients of
``sum Re<u, out>`` in PyTorch's complex convention (``dL/dRe(x) + i dL/dIm(x)``), as the runner
compares them. JAX runs inside ``jax.enable_x64(True)``, a context manager, so its float64 mode is
not switched on for the rest of the process.
"""

from __future__ import annotations

import importlib.util

import numpy as np

_WIDE = {"float32": np.float64, "complex64": np.complex128}


class Unsupported(Exception):
    """The external library cannot run this case (reason in the message)."""


def available() -> str | None:
    """'torch', 'jax' or None (what is importable)."""
    return next((m for m in ("torch", "jax") if importlib.util.find_spec(m)), None)


def _outputs(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


class _GraphKeepingTorch:
    """``array_api_compat.torch`` whose ``asarray`` of a tensor stays in its graph, as
    arraygrad's ``asarray`` of a Variable does (a recorded copy with ``copy=True``). torch.asarray
    keeps the graph only where ``requires_grad`` says so: its default cut it before 2.13, and 2.13
    warns where it is left out. Passing it gives the same reference on every version."""

    def __init__(self, xp, torch):
        self._xp, self._tensor = xp, torch.Tensor

    def __getattr__(self, name):
        return getattr(self._xp, name)

    def asarray(self, obj, /, **options):
        if isinstance(obj, self._tensor):
            options.setdefault("requires_grad", obj.requires_grad)
        return self._xp.asarray(obj, **options)


def _torch(case, host, us):
    import array_api_compat.torch
    import torch

    xp = _GraphKeepingTorch(array_api_compat.torch, torch)
    inputs = [torch.tensor(h, requires_grad=np.issubdtype(h.dtype, np.inexact)) for h in host]
    outs = _outputs(case.call(xp, *inputs))
    pairs = [(o, torch.tensor(u)) for o, u in zip(outs, us)
             if isinstance(o, torch.Tensor) and o.requires_grad]  # else: not differentiable
    leaves = [x for x in inputs if x.requires_grad]
    grads = torch.autograd.grad([o for o, _ in pairs], leaves, [u for _, u in pairs],
                                allow_unused=True) if pairs and leaves else [None] * len(leaves)
    grads = iter([None if g is None else g.detach().resolve_conj().resolve_neg().numpy().copy()
                  for g in grads])
    return [next(grads) if x.requires_grad else None for x in inputs]


def _jax(case, host, us):
    import jax
    import jax.numpy as jnp

    places = [i for i, h in enumerate(host) if np.issubdtype(h.dtype, np.inexact)]
    kept = []  # the outputs of inexact dtype (the others do not contribute)

    def f(*xs):
        args = [jnp.asarray(h) for h in host]
        for i, x in zip(places, xs):
            args[i] = x
        outs = _outputs(case.call(jnp, *args))
        kept[:] = [k for k, o in enumerate(outs) if jnp.issubdtype(o.dtype, jnp.inexact)]
        return [outs[k] for k in kept]

    with jax.enable_x64(True):
        _, vjp = jax.vjp(f, *[jnp.asarray(host[i]) for i in places])
        # JAX's vjp is the plain transpose of the R-linear derivative; for a complex x,
        # PyTorch's gradient is conj(vjp(conj(u))). Checked on L = Re(z*z) at z = 1+2j: JAX
        # gives 2+4j, PyTorch 2-4j (= dL/dx + i dL/dy); likewise on a non-holomorphic f.
        grads = vjp([jnp.asarray(np.conj(us[k])) for k in kept])
    grads = dict(zip(places, grads))
    return [np.conj(np.asarray(grads[i])) if i in grads else None for i in range(len(host))]


def gradients(case, host, us_host, library=None) -> list:
    """The gradients of ``sum Re<u, out>`` w.r.t. the inexact ``host`` inputs (NumPy arrays,
    float64/complex128; None for the other inputs and for inputs not reached), computed by
    ``library`` ('torch' or 'jax'; None: torch, falling back to jax where torch fails)."""
    host = [np.array(h, dtype=_WIDE.get(str(h.dtype), h.dtype)) for h in host]
    us = [np.array(u, dtype=_WIDE.get(str(u.dtype), u.dtype)) for u in us_host]
    libraries = [library] if library else [m for m in ("torch", "jax")
                                           if importlib.util.find_spec(m)]
    reasons = []
    for name in libraries:
        try:
            return {"torch": _torch, "jax": _jax}[name](case, host, us)
        except Exception as exc:  # noqa: BLE001 - any failure means the library cannot run it
            reasons.append(f"{name}: {type(exc).__name__}: {exc}")
    raise Unsupported("; ".join(reasons) or "neither torch nor jax is installed")
