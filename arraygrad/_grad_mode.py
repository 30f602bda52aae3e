"""Thread-local grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``."""

from __future__ import annotations

import functools
import inspect
import itertools
import threading
import weakref


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
        if inspect.isgeneratorfunction(func):
            return _generator_with_grad_mode(func, enabled)

        @functools.wraps(func)
        def with_grad_mode(*args, **kwargs):
            with _GradMode(enabled):
                return func(*args, **kwargs)

        return with_grad_mode


def _generator_with_grad_mode(func, enabled):
    """A decorated generator function: the mode holds whenever its body runs (each resume),
    not just while the generator object is made, as in PyTorch."""

    @functools.wraps(func)
    def generator(*args, **kwargs):
        with _GradMode(enabled):
            inner = func(*args, **kwargs)
            try:
                value = next(inner)
            except StopIteration as stop:
                return stop.value
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                with _GradMode(enabled):
                    inner.close()
                raise
            except BaseException as exc:  # thrown in: passed on to the body
                resume, argument = inner.throw, exc
            else:
                resume, argument = inner.send, sent
            with _GradMode(enabled):
                try:
                    value = resume(argument)
                except StopIteration as stop:
                    return stop.value

    return generator


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
        self._set_at_construction = True

    def __enter__(self):
        if self._set_at_construction:  # the first block: the mode is set already
            self._set_at_construction = False
        else:  # the same object in another block sets its mode again
            super().__enter__()
        return self

    def __exit__(self, *exc):
        state.enabled = self._previous.pop() if self._previous else True
        return False

    def __call__(self, func):
        # Used as a decorator, the mode set at construction must not leak: restore it first.
        if self._set_at_construction and self._previous:
            state.enabled = self._previous.pop()
            self._set_at_construction = False
        return super().__call__(func)


# The leaves that transforms make themselves (``grad``'s leaf for a raw argument), each with a
# serial number. A leaf made after a serial taken at some point belongs to a transform that
# started there or later: a graph reaching it is that transform's own, not one read from
# outside (the outer transforms' and checkpoint's question).
_made: dict = {}
_serials = itertools.count()


def serial() -> int:
    """A serial number: leaves made later have larger ones."""
    return next(_serials)


def made_leaf(variable) -> None:
    """Note that a transform made the leaf ``variable`` now."""
    key = id(variable)  # ids are reused once it is gone: its entry goes with it
    _made[key] = (next(_serials), weakref.ref(variable, lambda _, made=_made: made.pop(key, None)))


def made_since(variable, since) -> bool:
    """Whether a transform made the leaf ``variable`` after the serial number ``since``."""
    return _made.get(id(variable), (-1,))[0] > since
