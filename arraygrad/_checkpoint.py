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
import sys
from collections import Counter

from . import _engine, _grad_mode, _watch
from ._plugins import registry
from ._variable import Variable
from .errors import BackwardError
from .rules._core import Rule

def checkpoint(fn, *args, **kwargs):
    """Call ``fn(*args, **kwargs)`` without keeping its intermediate values for backward: they
    are recomputed (``fn`` runs again) when backward reaches its outputs.

    ``fn`` returns a Variable, or a tuple, list or dict of values (Variables among them). It
    must compute the same thing when run again. The global random generators of the backends'
    libraries (``np.random``'s, torch's) are put back as they were for that second run, as
    ``torch.utils.checkpoint`` does; a run that still gives other values (randomness from
    another generator, an input changed in place between the forward and the backward) is an
    error (the outputs are compared in full, exactly, and the operations recorded by kind and
    shape). Gradients reach the Variables ``fn`` closes over too, not only its arguments. Under
    ``no_grad`` it just calls ``fn``. Memory: the segment's inputs stay alive until the graph is
    dropped.
    """
    if not _grad_mode.state.enabled:
        return fn(*args, **kwargs)
    random_states = _random_states()
    since = _grad_mode.serial()
    with _watch.new_nodes() as created:
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
                       [_kept(o) for o in outputs], _recorded(internal), _read(internal))
    meta = list(inputs.values()) + [(tuple(o.data.shape), o.data.dtype) for o in outputs]
    edges = tuple(inputs)
    # saved: a token, so that backward without retain_graph marks the node freed, and a second
    # backward raises as everywhere else
    node = _engine.Node.of_edges(_RULE, backend, edges, meta, (True,), {"segment": segment, "edges": edges},
                        len(outputs))
    for j, k in enumerate(positions):
        items[k] = Variable._make(items[k].data, backend, node, j)
    return rebuild(items)


class _Segment:
    """What backward needs to run a checkpointed segment again."""

    __slots__ = ("fn", "args", "kwargs", "positions", "edges", "values", "random_states",
                 "outputs", "recorded", "read")

    def __init__(self, fn, args, kwargs, positions, inputs, random_states, outputs, recorded,
                 read):
        self.fn, self.args, self.kwargs, self.positions = fn, args, kwargs, positions
        self.edges = set(inputs)
        self.random_states, self.outputs, self.recorded = random_states, outputs, recorded
        self.read = read
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
                _watch.new_nodes() as created:
            result = self.fn(*self.args, **self.kwargs)
        items, _ = _flatten(result)
        internal = set(created)
        del created
        outputs = [items[k] if k < len(items) else None for k in self.positions]
        if not all(isinstance(o, Variable) and o.grad_fn in internal for o in outputs) or \
                set(_inputs(outputs, internal, since)) != self.edges or \
                _recorded(internal) != self.recorded:
            raise BackwardError(
                f"checkpoint: run again for backward, the function {_name(self.fn)} recorded "
                "another graph than in the forward pass (other outputs, or other inputs "
                "reached). A checkpointed function must compute the same thing each time it "
                "runs: no randomness, no dependence on state that changed since.")
        if _read(internal) != self.read:
            raise BackwardError(
                f"checkpoint: run again for backward, the function {_name(self.fn)} read other "
                "values than in the forward pass (an array it uses as a constant, such as a "
                "mask, indices or a closure's array, holds other values now), so its gradients "
                "would be wrong. Change the arrays a checkpointed function reads only after "
                "backward(), or give it a copy (xp.asarray(mask, copy=True)).")
        for j, (output, kept) in enumerate(zip(outputs, self.outputs)):
            if kept is not None and not _same(output._backend.raw, kept, output.data):
                raise BackwardError(
                    f"checkpoint: run again for backward, the function {_name(self.fn)} gave "
                    f"other values than in the forward pass (its output {j}, of shape "
                    f"{tuple(output.shape)}), so its gradients would be wrong. Either it draws "
                    "random values from a generator arraygrad does not put back (only the "
                    "libraries' global ones are: np.random.*, torch's), or a value it reads "
                    "(an argument, an array in its closure) was changed in place after the "
                    "forward pass, or its backend's kernels are not deterministic (some GPU "
                    "reductions: torch.use_deterministic_algorithms(True)). Draw the random "
                    "values outside the checkpointed function and pass them in, and change its "
                    "inputs only after backward() (or change a copy).")
        roots = [(output._edge, grad) for output, grad in zip(outputs, grads) if grad is not None]
        capture = _engine.backward(roots, create_graph, create_graph, Variable,
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


def _kept(output):
    """The array of ``output``, to compare the segment's second run with in full (None where
    reading values would compute a lazy graph, Dask's). Kept by reference: an output's array
    is never written to (in-place operators rebind ``.data``)."""
    capabilities = output._backend.capabilities()
    if not (capabilities["host_reads"] or capabilities["data_dependent_shapes"]):
        return None
    return output.data


def _same(xp, before, after) -> bool:
    """Whether the second run's output equals the first's exactly: shape, dtype and every
    value (NaN matches NaN), so that no change (a permutation, another mask, one ulp) that
    would give other gradients goes unseen. Deterministic code gives the very same values."""
    if tuple(before.shape) != tuple(after.shape) or before.dtype != after.dtype:
        return False
    equal = before == after
    if xp.isdtype(before.dtype, ("real floating", "complex floating")):
        equal = equal | (xp.isnan(before) & xp.isnan(after))
    return bool(xp.all(equal))


def _recorded(nodes) -> Counter:
    """The operations a run recorded, by name and the shapes and dtypes of their inputs and
    outputs (counted, as the order of an inner backward's nodes may vary): another branch
    taken the second time is seen even where it gives the same outputs."""
    return Counter((node.name(), repr(getattr(node, "meta", None))) for node in nodes)


def _read(nodes) -> Counter:
    """A fingerprint of the constants the recorded nodes read (see ``_constants``), counted
    per node as ``_recorded``: each array's shape, dtype, sum and position-weighted sum, so
    that a constant changed in place between the two runs (another mask giving the same
    outputs) is seen without keeping a copy. The values computed from the segment's inputs
    need none: the inputs are checked, and the outputs compared. Empty where reading values
    would compute a lazy graph (Dask's)."""
    found = Counter()
    for node in nodes:
        backend = getattr(node, "backend", None)
        saved = getattr(node, "saved", None)
        if backend is None or not isinstance(saved, tuple):  # a leaf, or freed
            continue
        capabilities = backend.capabilities()
        if not (capabilities["host_reads"] or capabilities["data_dependent_shapes"]):
            continue
        arrays = _arrays(_constants(node, saved), backend)
        found[(node.name(), tuple(_fingerprint(backend.raw, a) for a in arrays))] += 1
    return found


def _constants(node, saved):
    """The values ``node`` saved of its arguments that need no gradient (a mask, a detached
    array, a closure's array: ``node.inputs`` has None for them), and its options (indices);
    everything it saved where its rule does not say where each saved value comes from."""
    sources = getattr(node.rule, "sources", None)
    if sources is None or len(sources) != len(saved):
        yield from saved
    else:
        for (kind, i), value in zip(sources, saved):
            if kind == "input" and i < len(node.inputs) and node.inputs[i] is None:
                yield value
            elif kind == "inputs" and isinstance(value, (tuple, list)):
                yield [v for v, child in zip(value, node.inputs) if child is None]
    yield from (node.params or {}).values()


def _arrays(values, backend):
    """The backend arrays among ``values`` (in tuples and lists too)."""
    for value in values:
        if isinstance(value, (tuple, list)):
            yield from _arrays(value, backend)
        elif type(value) in backend._plain_types:
            yield value


def _fingerprint(xp, a) -> tuple:
    """``a``'s shape, dtype, sum and sum weighted by position, as text (NaN equals NaN)."""
    if a.size == 0:
        return (tuple(a.shape), str(a.dtype))
    flat = xp.reshape(a, (-1,))
    complex_ = xp.isdtype(a.dtype, "complex floating")
    if not complex_:
        flat = xp.astype(flat, xp.float64 if hasattr(xp, "float64") else xp.float32)
    weights = xp.astype(xp.arange(1, flat.shape[0] + 1), flat.dtype)
    return (tuple(a.shape), str(a.dtype), repr(complex(xp.sum(flat))),
            repr(complex(xp.sum(flat * weights))))


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)
