"""What anomaly mode records and checks: the forward stack of a node, and the gradients a node
returns. The switch itself is ``_watch.anomaly``, which the engine reads on its hot paths;
``arraygrad.detect_anomaly`` turns it on and off. Pure functions over duck-typed nodes
and the backend's raw namespace: no arraygrad import but the errors."""

from __future__ import annotations

import os
import sys
import traceback

from .errors import AnomalyError

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def stack() -> traceback.StackSummary:
    """The current stack, cheaply: file, line number and function of each frame; the source
    lines are read from the file only if an error shows them."""
    return traceback.StackSummary.extract(traceback.walk_stack(sys._getframe(2)),
                                          lookup_lines=False)


def format_trace(trace) -> str:
    """The forward stack of a node as a traceback, innermost last, without arraygrad's own
    frames (those between the user's call and the node's creation)."""
    frames = [frame for frame in reversed(trace)
              if not os.path.abspath(frame.filename).startswith(_PACKAGE)]
    if not frames:
        frames = list(reversed(trace))
    return "".join(traceback.StackSummary.from_list(frames).format())


def describe(node) -> str:
    trace = getattr(node, "forward_trace", None)
    if trace is None:
        return (f"(no forward traceback for <{node.name()}>: it was recorded while anomaly "
                "detection was off)")
    return f"Traceback of the forward call that created <{node.name()}>:\n" + format_trace(trace)


def check(node, results) -> None:
    """Raise :class:`AnomalyError` if a gradient that ``node`` returned (raw arrays, ``None``
    where none) holds a NaN or inf."""
    raw = node.backend.raw
    for index, data in enumerate(results):
        if data is None:
            continue
        finite = raw.isfinite(data)
        if bool(raw.all(finite)):
            continue
        kind = "nan" if bool(raw.any(raw.isnan(data))) else "inf"
        raise AnomalyError(
            f"Function <{node.name()}> returned {kind} values in its gradient for input "
            f"{index} (of shape {tuple(data.shape)}, dtype {data.dtype}).\n" + describe(node))


def annotate(error: BaseException, node) -> None:
    """Add the forward traceback of ``node`` to an error raised while it ran backward."""
    if isinstance(error, AnomalyError) or not hasattr(error, "add_note"):
        return
    error.add_note(f"Error detected in <{node.name()}> during backward (anomaly detection). "
                   + describe(node))
