"""Differentiable counterparts of parts of SciPy, as ``jax.scipy`` and ``autograd.scipy`` offer:
:mod:`arraygrad.scipy.stats`. SciPy itself is never imported here."""
