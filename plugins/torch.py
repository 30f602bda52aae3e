"""PyTorch backend, through array-api-compat's standard-conforming wrapper of ``torch``.

Install with ``pip install "arraygrad[torch]"`` (pin a CPU build, e.g. ``torch==2.13.0``, where
the CUDA wheels are not wanted). Tensors stay on their device: gradients of a CUDA tensor are
CUDA tensors. arraygrad records the graph itself, so tensors given to :class:`arraygrad.Variable`
need not (and should not) have torch's own ``requires_grad`` set.
"""

import warnings

from arraygrad import BackendSpec, hookimpl

from . import _torch_fixes


def _namespace():
    import array_api_compat.torch

    from . import _torch_fast  # (imports torch: when the backend is first used)

    # array-api-compat lists devices by probing every device type, and torch >= 2.9 warns
    # that one of them ('mkldnn') is deprecated: that warning is not the user's concern.
    warnings.filterwarnings("ignore", message="'mkldnn' is no longer used as device type",
                            category=UserWarning)
    return _torch_fast.Namespace(array_api_compat.torch)


def _to_numpy(array):
    # detach: a tensor with torch's own requires_grad refuses .numpy(); cpu: from any device;
    # resolve_conj/resolve_neg: conj() and neg() may return lazy views.
    return array.detach().cpu().resolve_conj().resolve_neg().numpy()


def _solve_triangular():
    import torch

    return lambda a, b, *, upper: torch.linalg.solve_triangular(a, b, upper=upper)


def _scatter_add():
    import torch

    return lambda size, positions, values: torch.zeros(
        size, dtype=values.dtype, device=values.device).index_add_(0, positions, values)


def _random_state():
    """torch's default generator on the CPU, and on every CUDA device once CUDA is in use."""
    import torch

    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.random.get_rng_state(), cuda


def _set_random_state(state):
    import torch

    cpu, cuda = state
    torch.random.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


@hookimpl
def arraygrad_backend():
    return BackendSpec(
        name="torch", library="torch", arrays=("torch:Tensor",), namespace=_namespace,
        to_numpy=_to_numpy, special=_torch_fixes.Special,
        get_index=_torch_fixes.get_index, set_index=_torch_fixes.set_index,
        random_state=_random_state, set_random_state=_set_random_state,
        tracked=lambda tensor: tensor.requires_grad,
        capabilities={"solve_triangular": _solve_triangular, "scatter_add": _scatter_add},
        # half precision computes with float32 accumulation at best: looser agreement.
        tolerances={"float16": (1e-2, 1e-3), "bfloat16": (5e-2, 1e-2)})
