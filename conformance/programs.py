"""Programs, not only functions: seeded random compositions of the backend's functions (chains,
DAGs whose values fan out and whose gradients meet, reductions, broadcasting, indexing, in-place
updates and writes through views), the same programs at sizes just over arraygrad's internal
size thresholds, and writes through views with hooks and ``retain_grad`` on intermediates.

A :class:`Program` is data: input shapes and a list of :class:`Op` in SSA form (value ``k`` is
input ``k`` or the result of op ``k - n_inputs``; an in-place op's value is its target, changed).
:func:`evaluate` runs it with any standard namespace, so one program runs on arraygrad's
namespace, on raw NumPy (float64 central differences) and on torch (``torch.autograd``): the
oracles share nothing with arraygrad. A failing program is shrunk (:func:`shrink`, greedy
delta debugging over its ops) and reported as Python a backend author can paste
(:func:`python`). Nested transforms live in ``conformance/nested.py``.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

import arraygrad as ag
from arraygrad import _buffers
from arraygrad.rules import _core

from .behaviour import Skip

RANGE = (-1.5, 1.5)  # inputs are drawn uniformly here: every op of the vocabulary is smooth on it
EPS = 1e-6  # the central differences' step


class Invalid(Exception):
    """An op does not apply to the shapes it is given (the generator and the shrinker skip it)."""


@dataclasses.dataclass(frozen=True)
class Op:
    """``name`` applied to the values ``args`` with a parameter (an axis, a key, a shape)."""

    name: str
    args: tuple
    param: object = None


@dataclasses.dataclass(frozen=True)
class Program:
    """Inputs of ``shapes`` (drawn from ``seed``), ``ops`` in order; the output is the last
    value, and the loss ``sum(out * u)`` with ``u`` drawn from ``seed`` too."""

    shapes: tuple
    ops: tuple
    seed: int = 0

    @property
    def n_values(self) -> int:
        return len(self.shapes) + len(self.ops)


# -------------------------------------------------------------------------- the vocabulary
def _key_text(key) -> str:
    parts = []
    for k in _full(key):
        if isinstance(k, slice):
            step = "" if k.step in (None, 1) else f":{k.step}"
            parts.append(f"{'' if k.start is None else k.start}:"
                         f"{'' if k.stop is None else k.stop}{step}")
        else:
            parts.append("..." if k is Ellipsis else repr(k))
    return ", ".join(parts)


def _full(key):
    """``key`` with a trailing ``...``: the standard asks a key to index every axis."""
    return key if Ellipsis in key else key + (Ellipsis,)


def _broadcast(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise Invalid("shapes do not broadcast") from None


def _reduced(shape, axis, keepdims):
    if axis is not None and axis >= len(shape):
        raise Invalid("no such axis")
    axes = range(len(shape)) if axis is None else (axis,)
    return tuple(1 if i in axes else n for i, n in enumerate(shape)
                 if keepdims or i not in axes)


def _indexed(shape, key):
    if len(key) > len(shape):
        raise Invalid("too many indices")
    out = []
    for k, n in zip([k for k in key if k is not Ellipsis], shape):
        if isinstance(k, slice):
            out.append(len(range(*k.indices(n))))
        elif not -n <= k < n:
            raise Invalid("index out of range")
    out += shape[len(key):]
    if 0 in out:
        raise Invalid("empty")
    return tuple(out)


def _permuted(shape, axes):
    if sorted(axes) != list(range(len(shape))):
        raise Invalid("not a permutation")
    return tuple(shape[a] for a in axes)


def _reshaped(shape, new):
    if int(np.prod(shape)) != int(np.prod(new)):
        raise Invalid("size differs")
    return tuple(new)


# name: (shape(shapes, param), apply(xp, values, param), code(names, param), kind)
# kind: "fresh" (a new array), "view" (shares the memory of its first argument), "inplace"
# (changes its first argument, a value no input reaches, and is that value).
def _setitem(xp, target, value, key):
    target[_full(key)] = value
    return target


def _iadd(target, value):
    target += value
    return target


def _imul(target, value):
    target *= value
    return target


OPS = {
    "sin": (lambda s, p: s[0], lambda xp, v, p: xp.sin(v[0]), "xp.sin({0})", "fresh"),
    "cos": (lambda s, p: s[0], lambda xp, v, p: xp.cos(v[0]), "xp.cos({0})", "fresh"),
    "tanh": (lambda s, p: s[0], lambda xp, v, p: xp.tanh(v[0]), "xp.tanh({0})", "fresh"),
    "exp": (lambda s, p: s[0], lambda xp, v, p: xp.exp(xp.tanh(v[0])),
            "xp.exp(xp.tanh({0}))", "fresh"),
    "square": (lambda s, p: s[0], lambda xp, v, p: v[0] * v[0], "{0} * {0}", "fresh"),
    "scale": (lambda s, p: s[0], lambda xp, v, p: v[0] * p, "{0} * {p}", "fresh"),
    "add": (lambda s, p: _broadcast(*s), lambda xp, v, p: v[0] + v[1], "{0} + {1}", "fresh"),
    "subtract": (lambda s, p: _broadcast(*s), lambda xp, v, p: v[0] - v[1], "{0} - {1}",
                 "fresh"),
    "multiply": (lambda s, p: _broadcast(*s), lambda xp, v, p: v[0] * v[1], "{0} * {1}",
                 "fresh"),
    "divide": (lambda s, p: _broadcast(*s), lambda xp, v, p: v[0] / (1.5 + xp.sin(v[1])),
               "{0} / (1.5 + xp.sin({1}))", "fresh"),
    "sum": (lambda s, p: _reduced(s[0], *p),
            lambda xp, v, p: xp.sum(v[0], axis=p[0], keepdims=p[1]),
            "xp.sum({0}, axis={p[0]}, keepdims={p[1]})", "fresh"),
    "mean": (lambda s, p: _reduced(s[0], *p),
             lambda xp, v, p: xp.mean(v[0], axis=p[0], keepdims=p[1]),
             "xp.mean({0}, axis={p[0]}, keepdims={p[1]})", "fresh"),
    "getitem": (lambda s, p: _indexed(s[0], p), lambda xp, v, p: v[0][_full(p)], "{0}[{key}]", "view"),
    "permute_dims": (lambda s, p: _permuted(s[0], p),
                     lambda xp, v, p: xp.permute_dims(v[0], p), "xp.permute_dims({0}, {p})",
                     "view"),
    "reshape": (lambda s, p: _reshaped(s[0], p), lambda xp, v, p: xp.reshape(v[0], p),
                "xp.reshape({0}, {p})", "view"),
    "setitem": (lambda s, p: s[0] if _broadcast(s[1], _indexed(s[0], p)) == _indexed(s[0], p)
                else _raise(), lambda xp, v, p: _setitem(xp, v[0], v[1], p),
                "{0}[{key}] = {1}", "inplace"),
    "iadd": (lambda s, p: s[0] if _broadcast(*s) == s[0] else _raise(),
             lambda xp, v, p: _iadd(v[0], v[1]), "{0} += {1}", "inplace"),
    "imul": (lambda s, p: s[0] if _broadcast(*s) == s[0] else _raise(),
             lambda xp, v, p: _imul(v[0], xp.tanh(v[1])), "{0} *= xp.tanh({1})", "inplace"),
}
ARITY = {"add": 2, "subtract": 2, "multiply": 2, "divide": 2, "setitem": 2, "iadd": 2,
         "imul": 2}
INPLACE = {name for name, spec in OPS.items() if spec[3] == "inplace"}


def _raise():
    raise Invalid("the update does not fit its target")


@dataclasses.dataclass
class _Value:
    shape: tuple
    rooted: bool  # an input or a view of one: never written (in place on a leaf is an error)
    contiguous: bool  # C-contiguous in NumPy and torch: reshape gives a view, never a copy
    view_of: int | None = None  # the value whose memory this one shares


def infer(program: Program) -> list:
    """The :class:`_Value` of each value of ``program``; raises :class:`Invalid` where an op does
    not apply (a shape, a write to an input or to a view of one)."""
    values = [_Value(tuple(s), True, True) for s in program.shapes]
    for op in program.ops:
        if any(not 0 <= a < len(values) for a in op.args):
            raise Invalid("an argument that does not exist yet")
        shape_of, _, _, kind = OPS[op.name]
        args = [values[a] for a in op.args]
        shape = shape_of([a.shape for a in args], op.param)
        if kind == "inplace":
            if args[0].rooted:
                raise Invalid("in place on an input or a view of one")
            values.append(dataclasses.replace(args[0]))
            values[-1].view_of = op.args[0]
        elif kind == "view":
            contiguous = op.name == "reshape" and args[0].contiguous
            if op.name == "reshape" and not args[0].contiguous:
                raise Invalid("reshape of a strided value may copy (libraries differ)")
            values.append(_Value(shape, args[0].rooted, contiguous, op.args[0]))
        else:
            values.append(_Value(shape, False, all(a.contiguous for a in args)))
        if 0 in shape:
            raise Invalid("empty")
    return values


def evaluate(xp, program: Program, inputs):
    """Run ``program`` with the namespace ``xp`` on ``inputs``; returns every value."""
    values = list(inputs)
    for op in program.ops:
        values.append(OPS[op.name][1](xp, [values[a] for a in op.args], op.param))
    return values


def code_lines(program: Program) -> list:
    """The ops as Python statements over ``x0, x1, ...`` (inputs) and ``v2, v3, ...``."""
    names = [f"x{i}" for i in range(len(program.shapes))]
    lines = []
    for k, op in enumerate(program.ops, start=len(program.shapes)):
        template, kind = OPS[op.name][2], OPS[op.name][3]
        args = [names[a] for a in op.args]
        key = _key_text(op.param) if op.name in ("getitem", "setitem") else ""
        text = template.format(*args, p=op.param, key=key)
        if kind == "inplace":
            lines.append(text)
            names.append(args[0])  # the changed value keeps its name
        else:
            names.append(f"v{k}")
            lines.append(f"v{k} = {text}")
    return lines, names[-1]


# ------------------------------------------------------------------------------ generation
SHAPES = [(3, 4), (4,), (3, 1), (2, 3, 4), (1, 4)]
KINDS = ("chain", "dag", "inplace")


def _param(rng, name, shape):
    """A random parameter for op ``name`` on a first argument of ``shape``."""
    ndim = len(shape)
    if name in ("sum", "mean"):
        axis = None if ndim == 0 or rng.random() < 0.3 else int(rng.integers(ndim))
        return (axis, bool(rng.random() < 0.5))
    if name in ("getitem", "setitem"):
        if ndim == 0:
            raise Invalid("0-d")
        axis0 = shape[0]
        choices = [slice(1, None), slice(None, None, 2), slice(0, max(axis0 - 1, 1))]
        key = choices[int(rng.integers(len(choices)))]
        if ndim > 1 and rng.random() < 0.3:
            return (int(rng.integers(axis0)),)
        if ndim > 1 and rng.random() < 0.4:
            return (slice(None), slice(1, None))
        return (key,)
    if name == "permute_dims":
        if ndim < 2:
            raise Invalid("needs 2 axes")
        return tuple(int(a) for a in rng.permutation(ndim)) if ndim > 2 else (1, 0)
    if name == "reshape":
        size = int(np.prod(shape))
        return (size,) if ndim > 1 else (1, size) if rng.random() < 0.5 else (size, 1)
    if name == "scale":
        return float(rng.choice([0.5, -1.25, 2.0]))
    return None


def _propose(rng, name, values, n_inputs, kind):
    """An op ``name`` on values picked for ``kind``: the last value first in a chain, any value
    in a DAG (so values fan out and gradients meet), a written one for in-place ops."""
    last = len(values) - 1
    arity = ARITY.get(name, 1)
    if name in INPLACE:
        targets = [k for k, v in enumerate(values) if not v.rooted]
        if not targets:
            raise Invalid("nothing to write")
        first = targets[-1] if rng.random() < 0.5 else int(rng.choice(targets))
    else:
        first = last if kind == "chain" or rng.random() < 0.4 else int(rng.integers(len(values)))
    args = [first] + [int(rng.integers(len(values))) for _ in range(arity - 1)]
    shape = values[first].shape
    if name == "setitem":  # the value is an earlier value of the slot's shape, or reduced
        return Op(name, tuple(args), _param(rng, name, shape))
    return Op(name, tuple(args), _param(rng, name, shape))


def generate(seed: int, kind: str = "dag", shapes=None, n_ops=None, inplace=True) -> Program:
    """A valid random program for ``seed``: ``kind`` is ``chain`` (each op takes the last
    value), ``dag`` (any earlier value) or ``inplace`` (in-place updates and writes through
    views, favoured). ``inplace=False`` (a backend without mutable arrays) leaves them out."""
    rng = np.random.default_rng(seed)
    if shapes is None:
        count = 1 if kind == "chain" else int(rng.integers(2, 4))
        shapes = [SHAPES[int(i)] for i in rng.integers(len(SHAPES), size=count)]
    n_ops = n_ops or int(rng.integers(4, 9))
    names = [n for n in OPS if inplace or n not in INPLACE]
    weights = np.array([4.0 if (kind == "inplace" and (n in INPLACE or OPS[n][3] == "view"))
                        else 1.0 for n in names])
    program = Program(tuple(tuple(s) for s in shapes), (), seed)
    values = infer(program)
    for _ in range(50 * n_ops):
        if len(program.ops) >= n_ops:
            break
        name = names[int(rng.choice(len(names), p=weights / weights.sum()))]
        try:
            op = _propose(rng, name, values, len(shapes), kind)
            candidate = dataclasses.replace(program, ops=program.ops + (op,))
            values = infer(candidate)
        except Invalid:
            continue
        program = candidate
    return _ending(program)


def _ending(program):
    """End on an op that reads the inputs: a program ending on a value no input reaches has no
    gradient to check (and one ending on an input is the identity)."""
    values = infer(program)
    if not program.ops or values[-1].view_of is None and len(program.ops) == 0:
        return dataclasses.replace(program, ops=(Op("sin", (0,)),))
    return program


# ------------------------------------------------------------------------------- the check
def draw(program: Program):
    """The host inputs and the cotangent of the output (float64), drawn from the seed."""
    rng = np.random.default_rng(program.seed)
    inputs = [rng.uniform(*RANGE, s) for s in program.shapes]
    out_shape = infer(program)[-1].shape
    return inputs, rng.uniform(*RANGE, out_shape)


def _numpy_loss(program, inputs, u):
    out = evaluate(np, program, [np.array(h, copy=True) for h in inputs])[-1]
    return float(np.sum(np.asarray(out) * u))


def reference_gradients(program, inputs, u):
    """``torch.autograd``'s gradients of ``sum(out * u)`` (None when torch is missing or refuses
    the program: an in-place change of a value its backward needs)."""
    try:
        import array_api_compat.torch as tx
        import torch
    except ImportError:
        return None
    leaves = [torch.tensor(h, dtype=torch.float64, requires_grad=True) for h in inputs]
    try:
        out = evaluate(tx, program, leaves)[-1]
        grads = torch.autograd.grad(torch.sum(out * torch.tensor(u)), leaves, allow_unused=True)
    except RuntimeError:
        return None
    return [np.zeros_like(h) if g is None else g.numpy() for g, h in zip(grads, inputs)]


def _arraygrad_gradients(backend, program, inputs, u):
    """The output and the gradients arraygrad computes on ``backend`` (host arrays)."""
    raw = backend.raw
    leaves = [ag.Variable(raw.asarray(np.array(h, copy=True)), requires_grad=True)
              for h in inputs]
    out = evaluate(backend.ns, program, leaves)[-1]
    backend.ns.sum(out * ag.Variable(raw.asarray(u))).backward()
    grads = [np.zeros_like(h) if x.grad is None else np.asarray(backend.to_numpy(x.grad.data))
             for x, h in zip(leaves, inputs)]
    return np.asarray(backend.to_numpy(out.data)), grads


def check(backend, program: Program):
    """None when arraygrad agrees on ``backend`` with the oracles on ``program``, else what
    differs: the forward with NumPy's, the gradients with central differences of the NumPy
    program along two random directions and with ``torch.autograd``."""
    inputs, u = draw(program)
    try:
        out, grads = _arraygrad_gradients(backend, program, inputs, u)
    except Exception as exc:  # noqa: BLE001  (a crash is a finding, reported with the program)
        return f"crashed: {type(exc).__name__}: {exc}"
    expected = np.asarray(evaluate(np, program, [np.array(h, copy=True) for h in inputs])[-1])
    if out.shape != expected.shape or not np.allclose(out, expected, rtol=1e-9, atol=1e-12):
        return f"forward: {_differs(out, expected)} (NumPy's result of the same program)"
    rng = np.random.default_rng(program.seed + 1)
    scale = 1 + sum(float(np.sum(np.abs(g))) for g in grads)
    for _ in range(2):
        directions = [rng.standard_normal(h.shape) for h in inputs]
        moved = [[h + sign * EPS * d for h, d in zip(inputs, directions)] for sign in (1, -1)]
        numeric = (_numpy_loss(program, moved[0], u) - _numpy_loss(program, moved[1], u)) / (
            2 * EPS)
        analytic = sum(float(np.sum(g * d)) for g, d in zip(grads, directions))
        if abs(numeric - analytic) > 1e-6 * (scale + abs(numeric)):
            return (f"gradient: <grad, v> = {analytic:.10g}, central differences "
                    f"{numeric:.10g} (along a random v)")
    torch_grads = reference_gradients(program, inputs, u)
    for i, (g, t) in enumerate(zip(grads, torch_grads or ())):
        if not np.allclose(g, t, rtol=1e-7, atol=1e-9 * scale):
            return f"gradient of x{i}: {_differs(g, t)} (torch.autograd)"
    return None


def _differs(got, expected) -> str:
    if np.shape(got) != np.shape(expected):
        return f"shape {np.shape(got)}, expected {np.shape(expected)}"
    error = np.abs(np.asarray(got) - expected)
    at = np.unravel_index(int(np.argmax(error)), error.shape) if error.ndim else ()
    where = f" at {tuple(int(i) for i in at)}" if at else ""
    return (f"got {np.asarray(got)[at]:.10g}, expected {np.asarray(expected)[at]:.10g}{where} "
            f"(max abs error {float(np.max(error)):.3g})")


# ------------------------------------------------------------------------------- shrinking
def without(program: Program, index: int) -> Program:
    """``program`` without op ``index``: its readers read its first argument instead (the same
    shape, else :class:`Invalid`); later values move down by one."""
    n_inputs = len(program.shapes)
    removed = n_inputs + index
    op = program.ops[index]
    values = infer(program)
    stand_in = op.args[0] if op.args else None
    if stand_in is None or values[stand_in].shape != values[removed].shape:
        stand_in = None

    def renamed(a):
        if a == removed:
            if stand_in is None:
                raise Invalid("its result is read and nothing stands in for it")
            return stand_in
        return a - 1 if a > removed else a

    ops = tuple(Op(o.name, tuple(renamed(a) for a in o.args), o.param)
                for o in program.ops[:index] + program.ops[index + 1:])
    candidate = dataclasses.replace(program, ops=ops)
    infer(candidate)
    if index == len(program.ops) - 1 and stand_in is None:
        raise Invalid("the output")
    return candidate


def _without_input(program: Program, index: int) -> Program:
    if any(index in op.args for op in program.ops) or len(program.shapes) == 1:
        raise Invalid("the input is read")
    ops = tuple(Op(o.name, tuple(a - 1 if a > index else a for a in o.args), o.param)
                for o in program.ops)
    shapes = program.shapes[:index] + program.shapes[index + 1:]
    return dataclasses.replace(program, shapes=shapes, ops=ops)


def shrink(program: Program, fails, budget: int = 60) -> Program:
    """A smaller program for which ``fails(program)`` still holds: greedy delta debugging that
    drops one op (or an unread input) at a time while the failure remains, until no single
    removal keeps it (or ``budget`` candidates were tried)."""
    tried = 0
    changed = True
    while changed and tried < budget:
        changed = False
        candidates = [functools.partial(without, program, i)
                      for i in reversed(range(len(program.ops)))]
        candidates += [functools.partial(_without_input, program, i)
                       for i in range(len(program.shapes))]
        for make in candidates:
            try:
                candidate = make()
            except Invalid:
                continue
            tried += 1
            if fails(candidate):
                program, changed = candidate, True
                break
            if tried >= budget:
                break
    return program


# --------------------------------------------------------------------------- reproductions
def python(backend_name: str, program: Program, problem: str = "") -> str:
    """``program`` as Python a backend author can paste: it builds the inputs from the seed,
    runs the ops on arraygrad's namespace and prints the gradients, with what was wrong."""
    lines, out = code_lines(program)
    setup = [
        "import numpy as np",
        "import arraygrad as ag",
        "",
        f"xp = ag.namespace({backend_name!r})",
        f"raw = ag.get_backend({backend_name!r}).raw",
        f"rng = np.random.default_rng({program.seed})",
    ]
    setup += [f"x{i} = ag.Variable(raw.asarray(rng.uniform({RANGE[0]}, {RANGE[1]}, {s})), "
              "requires_grad=True)" for i, s in enumerate(program.shapes)]
    shape = infer(program)[-1].shape
    tail = [f"u = raw.asarray(rng.uniform({RANGE[0]}, {RANGE[1]}, {shape}))",
            f"xp.sum({out} * u).backward()"]
    tail += [f"print(x{i}.grad)" for i in range(len(program.shapes))]
    text = "\n".join(setup + lines + tail)
    return text + (f"\n# {problem}" if problem else "")


class ProgramFailure(AssertionError):
    """A program arraygrad gets wrong: the message says what, and gives the minimal program."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def certify(backend, programs, label):
    """Check each program on ``backend``; the first failure is shrunk and raised as a
    :class:`ProgramFailure` with the minimal reproduction and how many programs failed."""
    failures = [(p, problem) for p in programs for problem in [check(backend, p)] if problem]
    if not failures:
        return
    program, problem = failures[0]
    small = shrink(program, lambda candidate: check(backend, candidate) is not None)
    small_problem = check(backend, small) or problem
    code = python(backend.name, small, small_problem)
    raise ProgramFailure(
        f"{len(failures)} of {len(programs)} {label} programs failed; the first (seed "
        f"{program.seed}, {len(program.ops)} ops) shrunk to {len(small.ops)} op(s): "
        f"{small_problem}\nminimal reproduction:\n{code}", code)


# ----------------------------------------------------------------------------- the families
PROGRAMS_PER_CASE = 8


def _can_write(backend) -> bool:
    return bool(backend.capabilities().get("inplace", True))


def random_family(kind):
    """The check of ``PROGRAMS_PER_CASE`` random programs of ``kind``, seeded by the run."""
    def family(backend, rng):
        if kind == "inplace" and not _can_write(backend):
            raise Skip("capability 'inplace' is False")
        seeds = rng.integers(2 ** 31, size=PROGRAMS_PER_CASE)
        programs = [generate(int(s), kind, inplace=_can_write(backend)) for s in seeds]
        certify(backend, programs, kind)
    family.__doc__ = f"Random {kind} programs against central differences and torch.autograd."
    return family


def thresholds() -> dict:
    """Input shapes just over each size threshold of arraygrad, read from the code: the bytes
    from which backward takes over gradient buffers (``_buffers.MIN_BYTES``, float64 here) and
    the longest sum made a product with ones (``_core.MATMUL_SUM_MAX``), at and just over it."""
    reuse_columns = _buffers.MIN_BYTES // (8 * 8) + 1  # (8, n) float64 just over
    longest = _core.MATMUL_SUM_MAX
    return {
        "reuse": [(8, reuse_columns), (reuse_columns,)],
        "reuse_1d": [(_buffers.MIN_BYTES // 8 + 1,), (1,)],
        "matmul_sum_at": [(longest, 3), (3,)],
        "matmul_sum_over": [(longest + 1, 3), (3,), (longest + 1, 1)],
    }


def threshold_family(name):
    """Random DAG programs (with in-place ops where the backend has them) on inputs just over
    the threshold ``name`` of :func:`thresholds`."""
    def family(backend, rng):
        shapes = thresholds()[name]
        seeds = rng.integers(2 ** 31, size=2)
        programs = [generate(int(s), "inplace" if i % 2 else "dag", shapes=shapes, n_ops=6,
                             inplace=_can_write(backend)) for i, s in enumerate(seeds)]
        certify(backend, programs, f"{name} threshold")
    family.__doc__ = f"Programs just over the {name} size threshold."
    return family


# Writes through views: (input shapes, ops), each write reaching a base that the graph reads.
VIEWS = {
    "setitem_slice": (((3, 4), (4,)), (Op("sin", (0,)), Op("setitem", (2, 1), (slice(1, None),)),
                                      Op("multiply", (3, 0)))),
    "view_of_view": (((4, 5), (3, 4)), (Op("scale", (0,), 2.0), Op("getitem", (2,), (slice(1, None),)),
                                       Op("getitem", (3,), (slice(None), slice(1, None))),
                                       Op("iadd", (4, 1)), Op("multiply", (2, 2)))),
    "transpose_write": (((3, 4), (3,)), (Op("sin", (0,)), Op("permute_dims", (2,), (1, 0)),
                                        Op("setitem", (3, 1), (slice(1, None),)),
                                        Op("multiply", (2, 0)))),
    "reshape_write": (((3, 4), (6,)), (Op("tanh", (0,)), Op("reshape", (2,), (12,)),
                                      Op("cos", (1,)), Op("setitem", (3, 4), (slice(None, None, 2),)),
                                      Op("multiply", (2, 2)))),
    "inplace_on_view_of_saved": (((3, 4), (4,)), (Op("exp", (0,)), Op("multiply", (2, 1)),
                                                 Op("getitem", (2,), (0,)), Op("imul", (4, 1)),
                                                 Op("add", (3, 2)))),
}


def view_family(name):
    """The program ``name`` of :data:`VIEWS` on two seeds."""
    def family(backend, rng):
        if not _can_write(backend):
            raise Skip("capability 'inplace' is False")
        shapes, ops = VIEWS[name]
        certify(backend, [Program(shapes, ops, int(s)) for s in rng.integers(2 ** 31, size=2)],
                name)
    family.__doc__ = f"Writes through views: {name}."
    return family


def _intermediates(program):
    """The values of ``program`` made by a fresh op (no view, no in-place): hooks go there."""
    n = len(program.shapes)
    return [n + i for i, op in enumerate(program.ops) if OPS[op.name][3] == "fresh"]


def hooks(backend, rng):
    """retain_grad on every intermediate of random chain programs, and a hook doubling one of
    them: retained gradients against central differences (a perturbation added at that value)
    and, with the doubling hook, the inputs' gradients against torch.autograd's."""
    for seed in rng.integers(2 ** 31, size=4):
        program = generate(int(seed), "chain", inplace=False)
        inputs, u = draw(program)
        raw, xp = backend.raw, backend.ns
        leaves = [ag.Variable(raw.asarray(h), requires_grad=True) for h in inputs]
        values = evaluate(xp, program, leaves)
        picked = _intermediates(program)
        for k in picked:
            values[k].retain_grad()
        xp.sum(values[-1] * raw.asarray(u)).backward()
        for k in picked:
            got = values[k].grad
            if got is None:
                raise ProgramFailure(f"retain_grad: no .grad on v{k}\n" + python(
                    backend.name, program), python(backend.name, program))
            direction = np.random.default_rng(int(seed)).standard_normal(tuple(got.shape))
            numeric = (_bumped_loss(program, inputs, u, k, EPS * direction)
                       - _bumped_loss(program, inputs, u, k, -EPS * direction)) / (2 * EPS)
            analytic = float(np.sum(np.asarray(backend.to_numpy(got.data)) * direction))
            if abs(numeric - analytic) > 1e-6 * (1 + abs(numeric) + abs(analytic)):
                code = python(backend.name, program) + f"\n# v{k}.retain_grad() before backward"
                raise ProgramFailure(f"retain_grad on v{k}: <grad, v> = {analytic:.10g}, central "
                                     f"differences {numeric:.10g}\n{code}", code)
        _doubling_hook(backend, program, inputs, u, picked)


def _bumped_loss(program, inputs, u, k, bump):
    values = [np.array(h, copy=True) for h in inputs]
    for index, op in enumerate(program.ops, start=len(inputs)):
        values.append(OPS[op.name][1](np, [values[a] for a in op.args], op.param))
        if index == k:
            values[-1] = values[-1] + bump
    return float(np.sum(values[-1] * u))


def _doubling_hook(backend, program, inputs, u, picked):
    try:
        import array_api_compat.torch as tx
        import torch
    except ImportError:
        return
    if not picked:
        return
    k = picked[len(picked) // 2]
    leaves = [ag.Variable(backend.raw.asarray(h), requires_grad=True) for h in inputs]
    values = evaluate(backend.ns, program, leaves)
    values[k].register_hook(lambda g: g * 2.0)
    backend.ns.sum(values[-1] * backend.raw.asarray(u)).backward()
    tensors = [torch.tensor(h, requires_grad=True) for h in inputs]
    values_t = evaluate(tx, program, tensors)
    values_t[k].register_hook(lambda g: g * 2.0)
    torch.sum(values_t[-1] * torch.tensor(u)).backward()
    for i, (x, t) in enumerate(zip(leaves, tensors)):
        got = np.zeros_like(inputs[i]) if x.grad is None else backend.to_numpy(x.grad.data)
        if not np.allclose(got, t.grad.numpy(), rtol=1e-9, atol=1e-12):
            code = python(backend.name, program) + f"\n# with v{k}.register_hook(lambda g: g * 2.0)"
            raise ProgramFailure(f"a hook doubling v{k}'s gradient: x{i}.grad "
                                 f"{_differs(got, t.grad.numpy())} (torch.autograd)\n{code}", code)


FAMILIES = {
    **{f"programs.random[{kind}]": random_family(kind) for kind in KINDS},
    **{f"programs.threshold[{name}]": threshold_family(name) for name in thresholds()},
    **{f"programs.views[{name}]": view_family(name) for name in VIEWS},
    "programs.hooks[retain_grad,register_hook]": hooks,
}
"""Every program family by case id: the cases ``conformance/cases.py`` adds to the suite."""
