"""Exceptions raised by arraygrad; each also derives from the builtin users would catch."""


class ArraygradError(Exception):
    """Base class of every error arraygrad raises on purpose."""


class BackwardError(ArraygradError, RuntimeError):
    """backward() cannot run: freed graph, non-scalar output without a gradient, and so on."""


class GradientError(ArraygradError, ValueError):
    """A gradient has the wrong shape, dtype or backend for the value it belongs to."""


class BackendError(ArraygradError, TypeError):
    """Arrays of two backends were mixed, or an object belongs to no registered backend."""


class BackendUnavailable(ArraygradError, RuntimeError):
    """The requested backend is registered but its library cannot be used here."""


class InplaceError(ArraygradError, RuntimeError):
    """An in-place operation is not allowed (on a leaf that requires grad, outside no_grad)."""


class NoRuleError(ArraygradError, NotImplementedError):
    """A differentiable path went through a function that has no differentiation rule."""


class AnomalyError(BackwardError):
    """Anomaly detection found a NaN or inf in a gradient; the message shows the forward call."""


class GraphvizUnavailable(ArraygradError, RuntimeError):
    """Rendering a graph needs the ``graphviz`` Python package and Graphviz's ``dot`` program."""
