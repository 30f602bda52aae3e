"""``checkpoint``: trade compute for memory, as ``torch.utils.checkpoint.checkpoint``
(``use_reentrant=False``).

The segment ``fn(*args, **kwargs)`` runs once, recorded as usual; its nodes are then replaced by
one node, ``CheckpointBackward``, whose inputs are the values the segment read from outside
(arguments and Variables it closes over alike, found from the graph it recorded), so that the
segment's intermediates are freed as soon as it returns. Backward through that node runs
``fn`` again with grad enabled and backpropagates through the recorded copy only as far as those
inputs. So gradients are those of the plain computation, ``autograd.grad`` and
``create_graph=True`` (higher derivatives) work through it, and a checkpoint may hold others.
"""

from __future__ import annotations

import contextlib
import math
import sys

from . import _engine, _grad_mode
from ._plugins import registry
from ._variable import Variable
from .errors import BackwardError
from .rules._core import Rule

_SAMPLE = 64
"""How many of an output's values (evenly spaced) the segment keeps to compare its second run
with, besides their sum."""


def checkpoint(fn, *args, **kwargs):
    """Call ``fn(*args, **kwargs)`` without keeping its intermediate values for backward: they
    are recomputed (``fn`` runs again) when backward reaches its outputs.

    ``fn`` returns a Variable, or a tuple, list or dict of values (Variables among them). It
    must compute the same thing when run again. The global random generators of the backends'
    libraries (``np.random``'s, torch's) are put back as they were for that second run, as
    ``torch.utils.checkpoint`` does; a run that still gives other values (randomness from
    another generator, an input changed in place between the forward and the backward) is an
    error. Gradients reach the Variables ``fn`` closes over too, not only its arguments. Under
    ``no_grad`` it just calls ``fn``. Memory: the segment's inputs stay alive until the graph is
    dropped.
    """
    if not _grad_mode.state.enabled:
        return fn(*args, **kwargs)
    random_states = _random_states()
    since = _grad_mode.serial()
    with _engine.new_nodes() as created:
        result = fn(*args, **kwargs)
    items, rebuild = _flatten(result)
    internal = set(created)
    del created
    positions = [k for k, item in enumerate(items)
                 if isinstance(item, Variable) and item.grad_fn in internal]
    if not positions:  # nothing recorded reaches the outputs: nothing to save
        return result
    outputs = [items[k] for k in positions]
    inputs = _inputs(outputs, internal, since)
    backend = outputs[0]._backend
    segment = _Segment(fn, args, kwargs, positions, inputs, random_states,
                       [_fingerprint(o) for o in outputs])
    meta = list(inputs.values()) + [(tuple(o.data.shape), o.data.dtype) for o in outputs]
    edges = tuple(inputs)
    # saved: a token, so that backward without retain_graph marks the node freed, and a second
    # backward raises as everywhere else
    node = _engine.Node(_RULE, backend, edges, meta, (True,), {"segment": segment, "edges": edges},
                        len(outputs))
    for j, k in enumerate(positions):
        items[k] = Variable._make(items[k].data, backend, node, j)
    return rebuild(items)


class _Segment:
    """What backward needs to run a checkpointed segment again."""

    __slots__ = ("fn", "args", "kwargs", "positions", "edges", "values", "random_states",
                 "fingerprints")

    def __init__(self, fn, args, kwargs, positions, inputs, random_states, fingerprints):
        self.fn, self.args, self.kwargs, self.positions = fn, args, kwargs, positions
        self.edges = set(inputs)
        self.random_states, self.fingerprints = random_states, fingerprints
        # The arrays of the arguments and leaves read, to catch an in-place change before backward.
        variables = [a for a in (*args, *kwargs.values()) if isinstance(a, Variable)]
        variables += [node.variable for node, _ in inputs
                      if isinstance(node, _engine.AccumulateGrad)]
        self.values = [(v, v.data) for v in variables]

    def backward(self, grads):
        for variable, data in self.values:
            if variable.data is not data:
                raise BackwardError(
                    f"checkpoint: a Variable that the checkpointed function {_name(self.fn)} "
                    f"reads (shape {tuple(variable.shape)}, dtype {variable.dtype}) was changed "
                    "in place after the forward pass, so its recomputation would give other "
                    "values. Change it only after backward(), or on a copy.")
        create_graph = _grad_mode.state.enabled  # the engine sets the mode to create_graph
        since = _grad_mode.serial()
        with _grad_mode.enable_grad(), _restored(self.random_states), \
                _engine.new_nodes() as created:
            result = self.fn(*self.args, **self.kwargs)
        items, _ = _flatten(result)
        internal = set(created)
        del created
        outputs = [items[k] if k < len(items) else None for k in self.positions]
        if not all(isinstance(o, Variable) and o.grad_fn in internal for o in outputs) or \
                set(_inputs(outputs, internal, since)) != self.edges:
            raise BackwardError(
                f"checkpoint: run again for backward, the function {_name(self.fn)} recorded "
                "another graph than in the forward pass (other outputs, or other inputs "
                "reached). A checkpointed function must compute the same thing each time it "
                "runs: no randomness, no dependence on state that changed since.")
        for j, (output, fingerprint) in enumerate(zip(outputs, self.fingerprints)):
            if fingerprint is not None and not _same(fingerprint, _fingerprint(output)):
                raise BackwardError(
                    f"checkpoint: run again for backward, the function {_name(self.fn)} gave "
                    f"other values than in the forward pass (its output {j}, of shape "
                    f"{tuple(output.shape)}), so its gradients would be wrong. Either it draws "
                    "random values from a generator arraygrad does not put back (only the "
                    "libraries' global ones are: np.random.*, torch's), or a value it reads "
                    "(an argument, an array in its closure) was changed in place after the "
                    "forward pass. Draw the random values outside the checkpointed function and "
                    "pass them in, and change its inputs only after backward() (or change a "
                    "copy).")
        roots = [(output._edge, grad) for output, grad in zip(outputs, grads) if grad is not None]
        capture = _engine.backward(roots, retain_graph=create_graph, create_graph=create_graph,
                                   capture=dict.fromkeys(self.edges), cut=True)
        return capture


def _joint(xp, g, *token, segment, edges):
    """The VJP of ``CheckpointBackward``: run the segment again, backpropagate through it."""
    capture = segment.backward(g if isinstance(g, tuple) else (g,))
    return [capture[edge] for edge in edges]


_RULE = Rule("checkpoint", (), (), joint=_joint)


def _inputs(outputs, internal, since) -> dict:
    """``{edge: (shape, dtype)}`` for every edge from a node of the segment to one outside it
    (an argument, a Variable read from outside, a leaf), in a fixed order. The leaves that a
    transform inside the segment made (after the serial number ``since``) are the segment's
    own."""
    found: dict = {}
    seen = set()
    stack = []
    for output in outputs:
        node = output.grad_fn
        if node not in seen:
            seen.add(node)
            stack.append(node)
    while stack:
        node = stack.pop()
        meta = getattr(node, "meta", None)
        for i, edge in enumerate(node.edges):
            if edge is None:
                continue
            child = edge[0]
            if child in internal:
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
            elif isinstance(child, _engine.AccumulateGrad) and _grad_mode.made_since(
                    child.variable, since):
                continue
            elif edge not in found:
                if meta is not None and meta[i] is not None:
                    found[edge] = meta[i]
                elif isinstance(child, _engine.AccumulateGrad):
                    found[edge] = (tuple(child.variable.shape), child.variable.dtype)
                else:
                    raise BackwardError(f"checkpoint: cannot tell the shape of input {i} of "
                                        f"<{node.name()}>")
    return found


def _flatten(result):
    """The values ``fn`` returned, as a list, and how to rebuild its kind of result."""
    if isinstance(result, tuple):
        if hasattr(result, "_fields"):  # a namedtuple
            return list(result), lambda items: type(result)(*items)
        return list(result), lambda items: type(result)(items)
    if isinstance(result, list):
        return list(result), lambda items: type(result)(items)
    if isinstance(result, dict):
        keys = list(result)
        return [result[k] for k in keys], lambda items: type(result)(zip(keys, items))
    return [result], lambda items: items[0]


def _random_states() -> list:
    """``(set_random_state, state)`` of each backend whose library is imported and declares
    its generators' state."""
    states = []
    for backend in list(registry.backends.values()):
        spec = backend.spec
        if spec.random_state is not None and (backend._raw is not None
                                              or sys.modules.get(spec.library) is not None):
            states.append((spec.random_state, spec.set_random_state, spec.random_state()))
    return states


@contextlib.contextmanager
def _restored(random_states):
    """Run with the generators as ``random_states`` has them, then as they were before."""
    now = [(put, take()) for take, put, _ in random_states]
    for _, put, state in random_states:
        put(state)
    try:
        yield
    finally:
        for put, state in now:
            put(state)


def _fingerprint(output):
    """Evenly spaced values of ``output``, the sum and the absolute sum of all of them and
    their count, on the host, to compare the segment's second run with (None where reading
    values would compute a lazy graph, Dask's, or there are none)."""
    backend = output._backend
    capabilities = backend.capabilities()
    data = output.data
    size = math.prod(data.shape)
    if not (capabilities["host_reads"] or capabilities["data_dependent_shapes"]) or \
            not backend.is_inexact(data.dtype) or not size:
        return None
    xp = backend.raw
    flat = xp.reshape(data, (-1,))
    to_numpy = backend.to_numpy
    return (to_numpy(flat[::max(1, size // _SAMPLE)]).copy(), to_numpy(xp.sum(flat)),
            to_numpy(xp.sum(xp.abs(flat))), size, math.sqrt(_eps(xp, data.dtype)))


def _eps(xp, dtype):
    try:
        return float(xp.finfo(dtype).eps)
    except (TypeError, ValueError):
        return 2.0 ** -7  # a dtype finfo does not know (bfloat16 in some libraries): coarse


def _same(before, after) -> bool:
    """Whether two fingerprints agree up to reordered sums (a GPU's reductions): within the
    square root of the dtype's epsilon, relative to the values' magnitude; NaN matches NaN."""
    np = registry.get("numpy").raw
    sample, total, scale, size, rtol = before
    sample2, total2, scale2, _, _ = after
    typical = rtol * float(max(scale, scale2)) / size  # rtol times the mean magnitude
    values = np.concatenate([np.reshape(sample, (-1,)), np.reshape(total, (1,))])
    again = np.concatenate([np.reshape(sample2, (-1,)), np.reshape(total2, (1,))])
    tolerance = rtol * np.abs(values) + typical
    tolerance[-1] = rtol * float(max(scale, scale2))  # the sum: relative to the absolute sum
    with np.errstate(invalid="ignore"):  # inf - inf
        close = np.abs(values - again) <= tolerance
    return bool(np.all(close | (values == again) | np.isnan(values) & np.isnan(again)))


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)
