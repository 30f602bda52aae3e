"""What watches nodes as they are created: anomaly mode (``arraygrad.detect_anomaly``), which
keeps each node's forward stack and checks what backward computes, and checkpoint, which
collects the nodes of its segment. ``Node.__init__`` reads one flag, ``watching``, so that
recording pays nothing else."""

from __future__ import annotations

import contextlib
import threading

from . import _anomaly

anomaly = False
"""Anomaly detection (``arraygrad.detect_anomaly``): global, as PyTorch's, so that it also
covers backward passes run in other threads."""

watching = False
"""Whether anything watches nodes being created: anomaly mode, or a checkpoint collecting its
nodes in some thread. The one flag Node.__init__ reads, so that recording pays nothing else."""


class _Collectors(threading.local):
    lists: tuple = ()  # per thread: the lists that new nodes are appended to (checkpoint)


_collectors = _Collectors()
_collecting = 0  # threads' collectors now open, over all threads
_watch_lock = threading.Lock()


def watch(node):
    """Give a new node to whatever watches: its forward stack, the open collectors."""
    if anomaly:
        node.forward_trace = _anomaly.stack()
    for found in _collectors.lists:
        found.append(node)


def _update_watching():
    global watching
    watching = anomaly or _collecting > 0


def set_anomaly(enabled: bool):
    """Turn anomaly mode on or off, for every thread (as PyTorch's)."""
    global anomaly
    with _watch_lock:
        anomaly = bool(enabled)
        _update_watching()


@contextlib.contextmanager
def new_nodes():
    """Collect in a list the nodes that this thread creates inside the block (checkpoint)."""
    global _collecting
    found: list = []
    with _watch_lock:
        _collecting += 1
        _update_watching()
    previous = _collectors.lists
    _collectors.lists = previous + (found,)
    try:
        yield found
    finally:
        _collectors.lists = previous
        with _watch_lock:
            _collecting -= 1
            _update_watching()
