"""array-api-compat's torch namespace, with its two-argument functions calling torch's own
function directly where array-api-compat's wrapper would change nothing: two tensors of one
dtype, or a tensor and a Python number where torch takes one as the standard does. The wrapper
exists to fix torch's promotion of mixed dtypes (a 0-d tensor downcasts the other operand) and
to make tensors of Python numbers for torch functions that take none; it costs two Python calls
on every op, about as much as torch's own work on a small tensor. Anything else takes the
wrapper, as before. Used by the torch plugin's declaration."""

import torch

from ._over_compat import OverCompat

_Tensor = torch.Tensor
_NUMBERS = frozenset((bool, int, float, complex))

# array-api-compat's two-argument wrappers (array_api_compat/torch/_aliases.py, _two_arg) that
# pass a Python number on to torch unchanged: torch's function takes one there, as the
# standard does. The others (maximum, atan2, the comparisons...) make a tensor of it first.
TAKES_NUMBERS = frozenset((
    "add", "subtract", "multiply", "divide", "pow", "remainder", "floor_divide",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"))

TWO_ARGUMENTS = TAKES_NUMBERS | frozenset((
    "atan2", "copysign", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
    "hypot", "logaddexp", "logical_and", "logical_or", "logical_xor", "maximum", "minimum",
    "nextafter"))
"""Every function array-api-compat wraps so (its ``_two_arg``)."""


class Namespace(OverCompat):
    """``array_api_compat.torch``, with torch's own two-argument functions where its wrapper
    would change nothing (above), and the same elsewhere."""

    _role = "fast paths"

    def _adapt(self, name, value):
        raw = getattr(value, "__wrapped__", None)  # (the wrapper's functools.wraps)
        if name not in TWO_ARGUMENTS or raw is None or getattr(torch, raw.__name__, None) is not raw:
            return value
        return _direct(raw, value, name in TAKES_NUMBERS)


def _direct(raw, wrapper, takes_numbers):
    """``wrapper`` (array-api-compat's), calling ``raw`` (torch's) itself where the wrapper
    would pass its arguments on unchanged."""
    def function(x1, x2, /, **options):
        if x1.__class__ is _Tensor and not options and (
                x2.__class__ is _Tensor and x1.dtype is x2.dtype
                or takes_numbers and x2.__class__ in _NUMBERS):
            return raw(x1, x2)
        return wrapper(x1, x2, **options)

    function.__name__ = function.__qualname__ = wrapper.__name__
    function.__doc__ = wrapper.__doc__
    function.__wrapped__ = raw
    return function
