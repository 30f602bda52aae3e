"""PyTorch backend, through array-api-compat's standard-conforming wrapper of ``torch``.

Install with ``pip install "arraygrad[torch]"`` (pin a CPU build, e.g. ``torch==2.13.0``, where
the CUDA wheels are not wanted). Tensors stay on their device: gradients of a CUDA tensor are
CUDA tensors. arraygrad records the graph itself, so tensors given to :class:`arraygrad.Variable`
need not (and should not) have torch's own ``requires_grad`` set.
"""

import sys
import warnings

from arraygrad import hookimpl

NAME = "torch"

# torch computes half precision with float32 accumulation at best: gradients agree more loosely.
TOLERANCES = {
    "float16": (1e-2, 1e-3),
    "bfloat16": (5e-2, 1e-2),
    "float32": (1e-4, 1e-5),
    "float64": (1e-7, 1e-9),
    "complex64": (1e-4, 1e-5),
    "complex128": (1e-7, 1e-9),
}


@hookimpl
def arraygrad_backends():
    return [NAME]


@hookimpl
def arraygrad_owns(array):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(array, torch.Tensor):
        return NAME
    return None


@hookimpl
def arraygrad_namespace(backend):
    if backend == NAME:
        import array_api_compat.torch

        # array-api-compat lists devices by probing every device type, and torch >= 2.9 warns
        # that one of them ('mkldnn') is deprecated: that warning is not the user's concern.
        warnings.filterwarnings("ignore", message="'mkldnn' is no longer used as device type",
                                category=UserWarning)
        return array_api_compat.torch
    return None


@hookimpl
def arraygrad_to_numpy(backend, array):
    if backend == NAME:
        # detach: a tensor with torch's own requires_grad refuses .numpy(); cpu: from any
        # device; resolve_conj/resolve_neg: conj() and neg() may return lazy views.
        return array.detach().cpu().resolve_conj().resolve_neg().numpy()
    return None


def _without_negative_steps(shape, key):
    """``(axes, key')`` such that ``x[key] == flip(x, axes)[key']`` and ``key'`` has no negative
    step (torch refuses them; the standard allows them). None if ``key`` has none."""
    parts = key if isinstance(key, tuple) else (key,)
    if not any(isinstance(p, slice) and p.step is not None and p.step < 0 for p in parts):
        return None
    # Which axis of x each part indexes: None adds one, a boolean mask spans its ndim.
    spans = [0 if p is None or p is Ellipsis else getattr(p, "ndim", 1)
             if str(getattr(p, "dtype", "")) == "torch.bool" else 1 for p in parts]
    if Ellipsis in parts:
        at = parts.index(Ellipsis)
        spans[at] = len(shape) - sum(spans)
    axes, new, axis = [], [], 0
    for part, span in zip(parts, spans):
        if isinstance(part, slice) and part.step is not None and part.step < 0:
            n = shape[axis]
            chosen = range(n)[part]
            axes.append(axis)
            if len(chosen):  # the same elements, counted from the end of the flipped axis
                part = slice(n - 1 - chosen[0], n - chosen[-1], -part.step)
            else:
                part = slice(0, 0)
        new.append(part)
        axis += span
    return tuple(axes), tuple(new)


@hookimpl
def arraygrad_get_index(backend, array, key):
    if backend == NAME:
        fixed = _without_negative_steps(tuple(array.shape), key)
        if fixed is not None:
            axes, key = fixed
            return array.flip(axes)[key]
    return None


@hookimpl
def arraygrad_set_index(backend, array, key, value):
    if backend == NAME:
        fixed = _without_negative_steps(tuple(array.shape), key)
        if fixed is not None:
            axes, key = fixed
            flipped = array.flip(axes)
            flipped[key] = value
            return flipped.flip(axes)
    return None


@hookimpl
def arraygrad_version(backend):
    if backend == NAME:
        import torch

        return torch.__version__
    return None


@hookimpl
def arraygrad_tolerances(backend, dtype):
    if backend == NAME:
        return TOLERANCES.get(dtype)
    return None


@hookimpl
def arraygrad_capabilities(backend):
    if backend == NAME:
        return {"inplace": True, "data_dependent_shapes": True, "float64": True}
    return None


class _Special:
    """``torch.special`` under SciPy's names (``psi`` is ``digamma``; ``rel_entr`` and
    ``kl_div`` from ``xlogy``); names it lacks are absent, so arraygrad leaves them out of
    ``xp.special``. torch.special takes no Python float where SciPy does (``gammaln(2.5)``,
    ``gammainc(1.7, x)``): those become tensors like the tensor argument."""

    def __getattr__(self, name):
        import torch

        if name == "rel_entr":  # x log(x / y), 0 at x = 0, as SciPy's
            function = lambda x, y: torch.special.xlogy(x, x / y)  # noqa: E731
        elif name == "kl_div":
            function = lambda x, y: torch.special.xlogy(x, x / y) - x + y  # noqa: E731
        else:
            function = getattr(torch.special, {"psi": "digamma"}.get(name, name))

        def with_tensors(*args):
            like = next((a for a in args if torch.is_tensor(a)), None)
            return function(*[torch.as_tensor(a, dtype=torch.float64 if like is None else
                                              like.dtype, device=None if like is None else
                                              like.device) if isinstance(a, float) else a
                              for a in args])
        return with_tensors


@hookimpl
def arraygrad_special(backend):
    return _Special() if backend == NAME else None
