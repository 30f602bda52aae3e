"""Where a failure comes from: a failing case is run again with the backend's raw namespace
traced, and the first call of it that raised, was missing or returned NaN from finite inputs is
named with the rule and the stage that made it ("the `prod` rule (backward) called
`cumulative_prod`, which returned NaN from finite inputs"). Each result is read on the host, so
that a lazy library's error, which shows only when a value is computed, is named on the call
that made the value. Only failures pay for this."""

from __future__ import annotations

import contextlib
import dataclasses
import sys

import numpy as np

import arraygrad as ag

_STAGES = {"arraygrad._engine": "backward", "arraygrad._forward": "forward mode",
           "arraygrad._namespace": "forward", "arraygrad._transforms": "a transform"}
_NODE_FRAMES = ("_traced_apply", "_traced_accumulate")  # _nodes_on_the_stack's, in the engine


@dataclasses.dataclass
class Call:
    """One anomalous call of the traced namespace."""

    function: str
    rule: str | None
    stage: str | None
    problem: str
    exception: BaseException | None = None

    def __str__(self):
        where = (f"the `{self.rule}` rule ({self.stage}) called" if self.rule else
                 f"arraygrad ({self.stage}) called" if self.stage else "the case called")
        return f"{where} `{self.function}`, which {self.problem}"


def _caller():
    """The rule and stage of the arraygrad code on the stack that made the current call."""
    frame = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == __name__ and frame.f_code.co_name in _NODE_FRAMES:
            module = "arraygrad._engine"
        rule = frame.f_locals.get("rule")
        if module in _STAGES and rule is not None and hasattr(rule, "vjps"):
            return rule.name, _STAGES[module]
        if module in _STAGES and module != "arraygrad._namespace":
            return None, _STAGES[module]
        frame = frame.f_back
    return None, None


def _arrays(value):
    if isinstance(value, (tuple, list)):
        return [a for item in value for a in _arrays(item)]
    return [value] if hasattr(value, "shape") and hasattr(value, "dtype") else []


class Tracer:
    """A raw namespace (or its ``linalg``/``fft``) that logs the anomalous calls made through
    it; anything else passes through."""

    def __init__(self, raw, backend, log, prefix=""):
        self._raw, self._backend, self._log, self._prefix = raw, backend, log, prefix
        self._busy = False

    def __getattr__(self, name):
        try:
            value = getattr(self._raw, name)
        except AttributeError as exc:
            self._log.append(Call(self._prefix + name, *_caller(), "the backend lacks", exc))
            raise
        if name in ("linalg", "fft"):
            return Tracer(value, self._backend, self._log, f"{name}.")
        if not callable(value) or isinstance(value, type) or name.startswith("_"):
            return value
        return lambda *args, **kwargs: self._call(name, value, args, kwargs)

    def _call(self, name, function, args, kwargs):
        if self._busy:
            return function(*args, **kwargs)
        try:
            out = function(*args, **kwargs)
        except Exception as exc:
            self._log.append(Call(self._prefix + name, *_caller(),
                                  f"raised {type(exc).__name__}: {exc}", exc))
            raise
        self._busy = True  # to_numpy may use this namespace: its calls are not the case's
        try:
            inputs = _arrays((args, list(kwargs.values())))
            try:
                nan = self._nan(out, strict=True)
            except Exception as exc:  # a lazy library's error shows when the value is computed
                if all(self._computes(a) for a in inputs):  # (not one it inherited)
                    self._log.append(Call(
                        self._prefix + name, *_caller(), f"raised {type(exc).__name__}: {exc} "
                        "when its result was computed (to_numpy)", exc))
                return out
            if nan and not any(self._nan(a, finite=False) for a in inputs):
                self._log.append(Call(self._prefix + name, *_caller(),
                                      "returned NaN from finite inputs"))
        finally:
            self._busy = False
        return out

    def _ours(self, array):
        return ag.registry.of(array) is self._backend

    def _computes(self, array):
        """Whether ``array``, if it is of this backend, can be computed (read on the host)."""
        if not self._ours(array):
            return True
        try:
            self._backend.to_numpy(array)
        except Exception:
            return False
        return True

    def _nan(self, value, finite=True, strict=False):
        """Whether an output holds NaN (``finite``), or an input holds NaN or inf. An array
        the host cannot read says nothing; where ``strict``, one of this backend raises: its
        value could not be computed."""
        for array in _arrays(value):
            try:
                host = np.asarray(self._backend.to_numpy(array))
            except Exception:
                if strict and self._ours(array):
                    raise
                continue
            if host.dtype.kind in "fc" and (
                    np.isnan(host).any() if finite else not np.isfinite(host).all()):
                return True
        return False


def trace(backend, run):
    """``(log, exception)``: the anomalous calls of the raw namespace of ``backend`` while
    ``run()`` runs, and what it raised (None if nothing)."""
    log, raised = [], None
    real = backend.raw
    backend._raw = Tracer(real, backend, log)
    try:
        with _nodes_on_the_stack():
            run()
    except Exception as exc:
        raised = exc
    finally:
        backend._raw = real
    return log, raised


@contextlib.contextmanager
def _nodes_on_the_stack():
    """Run every backward node through a Python frame that names its rule, for _caller."""
    from arraygrad._engine import AccumulateGrad, Node

    node_apply, leaf_apply = Node.apply, AccumulateGrad.apply

    def _traced_apply(node, *args, **kwargs):
        rule = node.rule  # noqa: F841  (read by _caller)
        return node_apply(node, *args, **kwargs)

    def _traced_accumulate(node, *args, **kwargs):  # arraygrad's own step, of no rule
        return leaf_apply(node, *args, **kwargs)

    Node.apply, AccumulateGrad.apply = _traced_apply, _traced_accumulate
    try:
        yield
    finally:
        Node.apply, AccumulateGrad.apply = node_apply, leaf_apply


def cause(log, exception=None):
    """The call to blame: the one that raised ``exception``, else the first that was missing,
    raised or returned NaN. A missing function counts only where the code looking it up used
    it: ``hasattr`` or ``getattr`` with a default asks whether it exists, which is no failure."""
    log = [call for call in log if call.problem != "the backend lacks" or _used(call.exception)]
    for call in log:
        if exception is not None and call.exception is exception:
            return call
    return log[0] if log else None


def _used(error: AttributeError) -> bool:
    """Whether the AttributeError of a missing function left the tracer's ``__getattr__`` into
    the code that looked it up (which ``hasattr`` and ``getattr(..., default)`` catch first)."""
    outermost = error.__traceback__
    return outermost is not None and outermost.tb_frame.f_code is not Tracer.__getattr__.__code__
