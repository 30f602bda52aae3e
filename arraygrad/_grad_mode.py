"""Thread-local grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``."""

from __future__ import annotations

import functools
import threading


class _State(threading.local):
    enabled = True


state = _State()


def is_grad_enabled() -> bool:
    """Return whether operations on Variables are recorded in this thread."""
    return state.enabled


class _GradMode:
    """A context manager and decorator that sets the grad mode for its block, then restores it."""

    def __init__(self, enabled: bool):
        self._enabled = bool(enabled)
        self._previous: list[bool] = []

    def __enter__(self):
        self._previous.append(state.enabled)
        state.enabled = self._enabled
        return self

    def __exit__(self, *exc):
        state.enabled = self._previous.pop()
        return False

    def __call__(self, func):
        enabled = self._enabled

        @functools.wraps(func)
        def with_grad_mode(*args, **kwargs):
            with _GradMode(enabled):
                return func(*args, **kwargs)

        return with_grad_mode


class no_grad(_GradMode):
    """Do not record operations inside the block (or decorated function): results never require grad."""

    def __init__(self):
        super().__init__(False)


class enable_grad(_GradMode):
    """Record operations inside the block (or decorated function), even within ``no_grad``."""

    def __init__(self):
        super().__init__(True)


class set_grad_enabled(_GradMode):
    """Set the grad mode now; used as a context manager or decorator it restores the mode on exit."""

    def __init__(self, mode: bool):
        super().__init__(mode)
        self._previous.append(state.enabled)
        state.enabled = self._enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        state.enabled = self._previous.pop() if self._previous else True
        return False

    def __call__(self, func):
        # Used as a decorator, the mode set at construction must not leak: restore it first.
        if self._previous:
            state.enabled = self._previous.pop()
        return super().__call__(func)
