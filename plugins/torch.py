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
