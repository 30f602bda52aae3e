"""What torch needs to follow the standard where array-api-compat leaves it: negative-step
slices, and SciPy's names for ``torch.special``. Used by the torch plugin's declaration."""


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


def get_index(array, key):
    fixed = _without_negative_steps(tuple(array.shape), key)
    if fixed is None:
        return array[key]
    axes, key = fixed
    return array.flip(axes)[key]


def set_index(array, key, value):
    fixed = _without_negative_steps(tuple(array.shape), key)
    if fixed is None:
        array[key] = value
        return array
    axes, key = fixed
    flipped = array.flip(axes)
    flipped[key] = value
    return flipped.flip(axes)


class Special:
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
