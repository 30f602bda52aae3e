"""Linked nodes: the graph nodes that the namespace's fast paths record, one per op, made here
and not in ``_engine``, which may run compiled. CPython stores each of a node's slots in one
specialised instruction; Cython's generic attribute setting made recording an op about 60 ns
slower (a twentieth of W1's forward)."""

from . import _engine
from ._engine import Node

_new_object = object.__new__

_metas: dict = {}
"""Linked nodes' ``meta`` tuples, one per signature (shapes and dtypes of inputs and output),
shared by every node that has it: a new one is untracked by the cyclic GC only after it has
outlived a collection or two, so a long graph of same-shaped ops would keep some for every full
collection to scan again."""


def linked(rule, backend, first, first_nr, second, second_nr, meta, saved, params):
    """A :class:`~arraygrad._engine.Node` of a one- or two-input function that keeps its inputs'
    nodes in slots, not in a tuple of ``(node, output_nr)`` pairs: the graph that a long chain
    leaves alive then holds one object per op for Python's cyclic GC to scan, not three.
    ``second`` is ``False`` for a one-input function, None for an input that needs no gradient.
    :attr:`Node.edges` builds the pairs each time it is read: cached, they would be as many
    long-lived objects again while backward runs."""
    # The meta tuple of an earlier node of the same backend, shapes and dtypes, if any (the
    # backend first: dtypes of different libraries are not compared).
    key = (backend, meta)
    try:
        shared = _metas.get(key)
    except TypeError:  # a dtype that cannot be hashed
        shared = meta
    if shared is None:
        if len(_metas) >= 4096:
            _metas.clear()
        shared = _metas[key] = meta
    node = _new_object(Node)  # Node.__init__'s work, without its call; one slot a statement,
    node.rule = rule  # as packed tuples of several (a, b = c, d) cost a fifth more
    node.backend = backend
    node._edges = None
    node.meta = shared
    node.saved = saved
    node.params = params
    node.n_outputs = 1
    node.pre_hooks = None
    node.retained = None
    node._next = first
    node._nr = first_nr
    node._next2 = second
    node._nr2 = second_nr
    if _engine._watching:
        _engine._watch(node)
    return node
