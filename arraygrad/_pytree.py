"""Pytrees for the function transforms: nested tuples, lists, dicts and namedtuples of arrays.

As in JAX, a tuple, list, dict (or namedtuple) is a node, ``None`` is a node with no leaves, and
anything else is a leaf. Dicts keep their order (torch.utils._pytree's choice; JAX sorts keys),
and another tree is matched to a structure by key, so ``{"w": ., "b": .}`` and
``{"b": ., "w": .}`` match. Paths name a leaf as Python would reach it: ``args[0]['w'][1]``.
"""

from __future__ import annotations

from collections import OrderedDict

LEAF = "*"  # the structure of a leaf


class Node:
    """The structure of a tuple, list, dict or namedtuple: its type, keys and children."""

    __slots__ = ("kind", "keys", "children", "count")

    def __init__(self, kind, keys, children):
        self.kind, self.keys, self.children = kind, keys, tuple(children)
        self.count = sum(leaf_count(c) for c in self.children)

    def __repr__(self):
        return f"{self.kind.__name__}{tuple(self.children)!r}"


def leaf_count(structure):
    return 1 if structure is LEAF else 0 if structure is None else structure.count


def _items(tree):
    """(key, child) pairs of a node, or None for a leaf."""
    if isinstance(tree, dict):
        return list(tree.items())
    if isinstance(tree, (tuple, list)):
        return list(enumerate(tree))
    return None


def flatten(tree):
    """``(leaves, structure)``: the leaves in order, and what ``unflatten`` needs to rebuild."""
    leaves = []

    def walk(node):
        if node is None:
            return None
        items = _items(node)
        if items is None:
            leaves.append(node)
            return LEAF
        keys = tuple(k for k, _ in items) if isinstance(node, dict) else None
        return Node(type(node), keys, [walk(child) for _, child in items])

    return leaves, walk(tree)


def unflatten(structure, leaves):
    """The tree of ``structure`` with ``leaves`` in place of its leaves, in order."""
    iterator = iter(leaves)

    def build(node):
        if node is LEAF:
            return next(iterator)
        if node is None:
            return None
        children = [build(child) for child in node.children]
        if node.keys is not None:
            pairs = zip(node.keys, children)
            return node.kind(pairs) if node.kind in (dict, OrderedDict) else dict(pairs)
        if issubclass(node.kind, tuple) and hasattr(node.kind, "_fields"):
            return node.kind(*children)  # a namedtuple
        return list(children) if issubclass(node.kind, list) else tuple(children)

    return build(structure)


def paths(structure, prefix):
    """The path of each leaf, as Python would reach it from ``prefix``."""
    found = []

    def walk(node, path):
        if node is LEAF:
            found.append(path)
        elif node is not None:
            keys = node.keys if node.keys is not None else range(len(node.children))
            for key, child in zip(keys, node.children):
                walk(child, f"{path}[{key!r}]")

    walk(structure, prefix)
    return found


def describe(structure):
    """A short description of a node, for error messages."""
    if structure is LEAF:
        return "an array"
    if structure is None:
        return "None"
    if structure.keys is not None:
        return f"a dict with keys {list(structure.keys)}"
    return f"a {structure.kind.__name__} of {len(structure.children)}"


def match(structure, tree, where, reference="it", none_is_zero=False):
    """The leaves of ``tree`` placed as the leaves of ``structure`` (a leaf of ``structure``
    takes whatever is there, so a list of numbers may stand for an array). Tuples and lists
    match each other; dicts match by key. Raises ValueError naming the first path that differs.
    ``where`` names ``tree`` (``"tangents[0]"``); ``reference`` names what it must match. With
    ``none_is_zero``, ``None`` in ``tree`` stands for a whole subtree of ``None`` leaves (a
    custom rule's zero gradient, as JAX allows)."""
    leaves = []

    def walk(node, value, path):
        if node is LEAF:
            leaves.append(value)
            return
        if none_is_zero and value is None:
            leaves.extend([None] * leaf_count(node))
            return
        if node is None:
            if value is not None:
                raise ValueError(f"{path} is {_what(value)}, but {reference} has None there: "
                                 "the structures must match")
            return
        if node.keys is not None:
            if not isinstance(value, dict) or set(value) != set(node.keys):
                raise ValueError(f"{path} is {_what(value)}, but {reference} has "
                                 f"{describe(node)} there: the structures must match")
            for key, child in zip(node.keys, node.children):
                walk(child, value[key], f"{path}[{key!r}]")
            return
        if not isinstance(value, (tuple, list)) or isinstance(value, dict) or len(value) != len(
                node.children):
            raise ValueError(f"{path} is {_what(value)}, but {reference} has {describe(node)} "
                             "there: the structures must match")
        for k, (child, item) in enumerate(zip(node.children, value)):
            walk(child, item, f"{path}[{k}]")

    walk(structure, tree, where)
    return leaves


def _what(value):
    if value is None:
        return "None"
    if isinstance(value, dict):
        return f"a dict with keys {list(value)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    shape = getattr(value, "shape", None)
    return f"a {type(value).__name__}" + (f" of shape {tuple(shape)}" if shape is not None else "")
