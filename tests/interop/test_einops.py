"""einops, run by einops itself on Variables: plain ``einops`` finds arraygrad's backend
(``arraygrad/_einops.py``), ``einops.array_api`` uses ``__array_namespace__``. Checked against
central differences and ``torch.autograd`` (the same call on raw torch tensors). See
``harness.py`` for what one case checks."""

import numpy as np
import pytest

from .harness import Case, params, run

einops = pytest.importorskip("einops", reason="einops is not installed (pip install -e '.[interop]')")

import einops.array_api as eapi  # noqa: E402

rng = np.random.default_rng(7)


def normal(*shape):
    return rng.standard_normal(shape)


def array_api(name):
    """``einops.array_api.<name>``; on raw torch tensors (no ``__array_namespace__``, so
    einops.array_api cannot take them) the same operation of plain einops, which gives the
    ``torch.autograd`` reference."""
    def fn(tensor, *args, **kwargs):
        first = tensor[0] if isinstance(tensor, list) else tensor
        module = eapi if hasattr(first, "__array_namespace__") else einops
        return getattr(module, name)(tensor, *args, **kwargs)
    return fn


rearrange, reduce, repeat, pack, unpack = map(array_api, ("rearrange", "reduce", "repeat", "pack",
                                                          "unpack"))


def pack_unpack(pack, unpack):
    """pack two arrays along a new trailing axis, scale, and unpack them again."""
    def fn(a, b):
        packed, ps = pack([a, b], "h *")
        first, second = unpack(packed * packed, ps, "h *")
        return first, second
    return fn


CASES = [
    # ---- plain einops: arraygrad's einops backend ----
    Case("einops", "rearrange(transpose)", lambda x: einops.rearrange(x, "h w -> w h"),
         (normal(3, 4),)),
    Case("einops", "rearrange(merge+split)",
         lambda x: einops.rearrange(x, "(a b) c -> b (c a)", a=2), (normal(4, 3),)),
    Case("einops", "reduce(sum)", lambda x: einops.reduce(x, "h w -> w", "sum"), (normal(3, 4),)),
    Case("einops", "reduce(mean)", lambda x: einops.reduce(x, "h (w k) -> h w", "mean", k=2),
         (normal(2, 6),)),
    Case("einops", "reduce(max)", lambda x: einops.reduce(x, "h w -> h", "max"), (normal(3, 4),)),
    Case("einops", "reduce(min)", lambda x: einops.reduce(x, "h w -> w", "min"), (normal(3, 4),)),
    Case("einops", "repeat", lambda x: einops.repeat(x, "h w -> h w k", k=2), (normal(2, 3),)),
    Case("einops", "repeat(tile)", lambda x: einops.repeat(x, "h w -> (r h) w", r=2),
         (normal(2, 3),)),
    Case("einops", "einsum(matmul)", lambda a, b: einops.einsum(a, b, "i j, j k -> i k"),
         (normal(2, 3), normal(3, 4))),
    Case("einops", "einsum(trace-like)", lambda a, b: einops.einsum(a, b, "i j, i j -> i"),
         (normal(3, 4), normal(3, 4))),
    Case("einops", "pack/unpack", pack_unpack(einops.pack, einops.unpack),
         (normal(3, 2), normal(3))),
    # ---- einops.array_api: generic code over __array_namespace__ ----
    Case("einops", "array_api.rearrange", lambda x: rearrange(x, "(a b) c -> c b a", a=2),
         (normal(4, 3),)),
    Case("einops", "array_api.reduce(sum)", lambda x: reduce(x, "h w -> h", "sum"),
         (normal(3, 4),)),
    Case("einops", "array_api.reduce(max)", lambda x: reduce(x, "h w -> w", "max"),
         (normal(3, 4),)),
    Case("einops", "array_api.reduce(mean)", lambda x: reduce(x, "h w -> ", "mean"),
         (normal(3, 4),)),
    Case("einops", "array_api.repeat", lambda x: repeat(x, "h -> h k", k=3), (normal(4),)),
    Case("einops", "array_api.pack/unpack", pack_unpack(pack, unpack),
         (normal(3, 2), normal(3))),
]


@pytest.mark.parametrize("case, backend", params(CASES))
def test_einops(case, backend):
    run(case, backend)
