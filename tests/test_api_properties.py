"""Wrong arguments to the public API, drawn by hypothesis: every call either gives the right
result (the value the backend's own function gives on ``.data``, and where an input requires
grad, the gradient of a float64 central difference or of a hand formula), or raises an error
that says what is wrong: an ``ArraygradError``, or a ``TypeError``/``ValueError``/``IndexError``
naming the function, an argument or the shapes. Never an ``AttributeError`` or ``KeyError``,
never an internal error of arraygrad's own code, never a silently wrong value or gradient.

Every call is a probe, counted by verdict; ``pytest -s`` prints the counts at the end.
"""

from __future__ import annotations

import collections
import linecache
import os
import re
import traceback
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arraygrad as ag

xp = ag.namespace("numpy")
RAW = ag.get_backend("numpy").raw  # the backend's own namespace: the reference
PACKAGE = os.path.dirname(os.path.abspath(ag.__file__)) + os.sep
# Drawn values include 1e308: backward passes may overflow, as the function itself does.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                                        "ignore:invalid value encountered:RuntimeWarning")
PROBES = settings(max_examples=max(150, settings.default.max_examples), deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ------------------------------------------------------------------------------- verdicts
CORRECT, CLEAR, BACKEND_UNCLEAR, UNCLEAR, WRONG = (
    "correct", "clear error", "unclear error from NumPy itself", "unclear", "wrong")
TALLY: collections.Counter = collections.Counter()
EXAMPLES: dict = collections.defaultdict(list)


@pytest.fixture(scope="session", autouse=True)
def probe_summary():
    """Print the probes by verdict when the session ends (shown with ``pytest -s``)."""
    yield
    if TALLY:
        total = sum(TALLY.values())
        verdicts = (CORRECT, CLEAR, BACKEND_UNCLEAR, UNCLEAR, WRONG)
        counts = ", ".join(f"{TALLY[v]} {v}" for v in verdicts
                           if TALLY[v] or v in (CORRECT, CLEAR))
        print(f"\napi properties: {total} probes: {counts}")
        for message in EXAMPLES[BACKEND_UNCLEAR][:5]:
            print(f"  tolerated ({BACKEND_UNCLEAR}): {message}")


# Python's own complaints about an object it cannot use: from arraygrad's code, a bug.
_INTERNAL = re.compile(
    r"object is not (iterable|subscriptable|callable)|has no len\(\)|cannot unpack|"
    r"unhashable type|(tuple|list) index out of range|iteration over a 0-d array|"
    r"values to unpack|object has no attribute|unsupported operand type")
# What a message names when it says what is wrong.
_PROBLEM = re.compile(
    r"shape|dimension|broadcast|dtype|\baxis\b|\baxes\b|indices|out of bounds|integer|"
    r"could not convert|not supported|singular|square|inhomogeneous|duplicate|repeated|"
    r"too large|keyword|positional argument|missing \d+ required|must be|requires|zero-size|"
    r"not a supported array type")
_ALIASES = {"atan2": "arctan2", "pow": "power", "concat": "concatenate", "abs": "absolute",
            "permute_dims": "transpose", "linalg.inv": "inv", "linalg.solve": "solve",
            "__getitem__": "getitem", "__setitem__": "setitem"}


def _origin(exc):
    """``"raise"``: a raise statement of arraygrad; ``"arraygrad"``: a builtin or C function
    called from arraygrad's code; ``"backend"``: the backend's Python code; ``"caller"``: Python
    refusing the call itself (a missing or unexpected argument)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "caller"
    inner = frames[-1]
    if inner.filename.startswith(PACKAGE):
        line = linecache.getline(inner.filename, inner.lineno).strip()
        return "raise" if line.startswith("raise") else "arraygrad"
    if os.path.abspath(inner.filename) == os.path.abspath(__file__):
        return "caller"
    return "backend"


def _names(message, names):
    words = {n for name in names for n in (name, _ALIASES.get(name, name)) if n}
    words |= {w.rsplit(".", 1)[-1] for w in words}
    return any(re.search(rf"(?<![A-Za-z_]){re.escape(w)}(?![A-Za-z_])", message) for w in words)


def error_verdict(exc, names=()):
    """The verdict on an exception: clear, unclear (arraygrad's fault), tolerated (NumPy's own
    unclear message), or wrong (AttributeError, KeyError, or anything else unexpected)."""
    message = " ".join([str(exc), *getattr(exc, "__notes__", ())])  # notes show in tracebacks
    if isinstance(exc, ag.ArraygradError):
        return CLEAR
    if isinstance(exc, (AttributeError, KeyError)):
        return WRONG
    origin = _origin(exc)
    if not isinstance(exc, (TypeError, ValueError, IndexError, OverflowError)):
        return WRONG if origin in ("raise", "arraygrad") else BACKEND_UNCLEAR
    named = _names(message, names) or bool(re.search(r"\(\d+,\)|\(\d+, \d+", message))
    if origin in ("raise", "arraygrad", "caller"):
        if _INTERNAL.search(message) and not named:
            return UNCLEAR
        return CLEAR if named or _PROBLEM.search(message) else UNCLEAR
    return CLEAR if named or _PROBLEM.search(message) else BACKEND_UNCLEAR


def record(verdict, label, detail=""):
    TALLY[verdict] += 1
    if verdict not in (CORRECT, CLEAR):
        EXAMPLES[verdict].append(f"{label}: {detail}")
    assert verdict not in (UNCLEAR, WRONG), f"{verdict}: {label}\n{detail}"


# --------------------------------------------------------------------------------- values
SHAPES = [(), (3,), (2, 3), (1, 3), (2, 1), (0,), (4,), (3, 3)]
GOOD = ("var", "var", "var", "var", "var_nograd", "ndarray")
KINDS = GOOD + ("var_f32", "int", "bool", "complex", "var_complex", "pyfloat", "pyint",
                "pybool", "pycomplex", "npscalar", "list", "ragged", "none", "str", "dict",
                "object", "huge")


class Opaque:
    """An object no backend knows."""

    def __repr__(self):
        return "Opaque()"


class Arg:
    """A drawn argument: ``value`` is given to arraygrad, ``ref`` to the backend's function;
    ``grad``: a Variable that requires grad (float64 or float32), whose gradient is checked."""

    def __init__(self, kind, value, ref, array_like=True):
        self.kind, self.value, self.ref, self.array_like = kind, value, ref, array_like
        self.grad = isinstance(value, ag.Variable) and value.requires_grad

    def __repr__(self):
        value = self.value
        if isinstance(value, ag.Variable):
            return (f"Variable({value.dtype}{tuple(value.shape)}, "
                    f"requires_grad={value.requires_grad})")
        if isinstance(value, np.ndarray):
            return f"ndarray({value.dtype}{value.shape})"
        return f"{value!r:.40}"


def make_arg(kind, shape, seed, data=None):
    if data is None:
        data = np.random.default_rng(seed).uniform(0.3, 1.7, shape)
    if kind == "var":
        return Arg(kind, ag.Variable(data, requires_grad=True), data)
    if kind == "var_nograd":
        return Arg(kind, ag.Variable(data), data)
    if kind == "var_f32":
        data = data.astype(np.float32)
        return Arg(kind, ag.Variable(data, requires_grad=True), data)
    if kind == "ndarray":
        return Arg(kind, data, data)
    if kind == "int":
        data = (data * 3).astype(np.int64)
        return Arg(kind, data, data)
    if kind == "bool":
        data = data > 1.0
        return Arg(kind, data, data)
    if kind == "complex":
        data = data + 0.5j
        return Arg(kind, data, data)
    if kind == "var_complex":
        data = data + 0.5j
        return Arg(kind, ag.Variable(data), data)
    scalars = {"pyfloat": 1.25, "pyint": 2, "pybool": True, "pycomplex": 1 + 2j,
               "npscalar": np.float64(0.75)}
    if kind in scalars:
        return Arg(kind, scalars[kind], scalars[kind])
    if kind == "list":
        return Arg(kind, data.tolist(), data.tolist())
    if kind == "huge":
        return Arg(kind, 1e308, 1e308)
    bad = {"ragged": [[1.0, 2.0], [3.0]], "none": None, "str": "abc", "dict": {"a": 1},
           "object": Opaque()}.get(kind)  # other kinds: filled in by the test that draws them
    return Arg(kind, bad, bad, array_like=False)


@st.composite
def args(draw, kinds=KINDS, shapes=SHAPES, salt=0):
    """A drawn argument; ``salt`` keeps two arguments apart (equal values would tie in maximum
    or clip, where a central difference splits the gradient between them)."""
    return make_arg(draw(st.sampled_from(kinds)), draw(st.sampled_from(shapes)),
                    (draw(st.integers(0, 2 ** 16)), salt))


# ------------------------------------------------------------------------ the comparison
def _host(value):
    return np.asarray(value.data if isinstance(value, ag.Variable) else value)


def _weights(shape):
    return np.random.default_rng(len(shape) * 7 + sum(shape)).normal(size=shape)


def _close(got, want, dtype):
    loose = np.dtype(dtype) in (np.float32, np.complex64)
    return np.allclose(got, want, rtol=2e-3 if loose else 1e-6, atol=2e-3 if loose else 1e-8,
                       equal_nan=True)


def _numerical_gradient(function, arguments, k, weights, eps=1e-6):
    """d sum(function(...) * weights) / d arguments[k], by float64 central differences."""
    base = [np.array(a, dtype=np.float64) if i == k else a for i, a in enumerate(arguments)]
    point = base[k]
    grad = np.zeros_like(point)
    for index in np.ndindex(point.shape):
        values = []
        for step in (eps, -eps):
            moved = point.copy()
            moved[index] += step
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                values.append(np.asarray(function(*base[:k], moved, *base[k + 1:]),
                                         dtype=np.complex128).real)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grad[index] = np.sum((values[0] - values[1]) * weights) / (2 * eps)
    return grad


def _reference(reference, arguments):
    """The backend's result; where it refuses a list or a Python number that arraygrad makes
    an array first (``clip(1.25)``, ``h[0] = [[1, 2, 3]]``), its result on that array."""
    try:
        return reference(*[a.ref for a in arguments])
    except Exception:  # noqa: BLE001
        if not any(isinstance(a.ref, (list, tuple, bool, int, float, complex)) for a in arguments):
            raise
        arrays = [np.asarray(a.ref) if isinstance(a.ref, (list, tuple, bool, int, float, complex))
                  else a.ref for a in arguments]
        for a, array in zip(arguments, arrays):
            a.ref = array  # the gradient check differentiates the same function
        return reference(*arrays)


def probe(label, call, reference, arguments, names, check_grads=True):
    """Run ``call()``; judge it against ``reference(*refs)`` (the backend's own function on the
    same values), including the gradients of arguments that require grad."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = call()
    except Exception as exc:  # noqa: BLE001  (every exception is judged)
        return record(error_verdict(exc, names), label, f"{type(exc).__name__}: {exc}")
    if any(not a.array_like for a in arguments):
        return record(WRONG, label, f"accepted a non-array and returned {out!r:.80}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = _reference(reference, arguments)
    except Exception as exc:  # noqa: BLE001
        return record(WRONG, label, f"returned a result where the backend itself raises "
                                    f"{type(exc).__name__}: {exc}")
    if not isinstance(out, ag.Variable):
        return record(WRONG, label, f"returned a {type(out).__name__}, not a Variable")
    got = _host(out)
    want = np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype or not (
            got.dtype.kind not in "fc" and np.array_equal(got, want) or
            got.dtype.kind in "fc" and _close(got, want, got.dtype)):
        return record(WRONG, label, f"value {got!r:.120} (dtype {got.dtype}), expected "
                                    f"{want!r:.120} (dtype {want.dtype})")
    grads = [a for a in arguments if a.grad and a.value.dtype.kind == "f"]
    if not grads or not check_grads:
        return record(CORRECT, label)
    if got.dtype.kind != "f" or not np.all(np.isfinite(want)) or np.any(np.abs(want) > 1e8):
        # (central differences cannot resolve a change of 1e-6 in a huge value)
        if got.dtype.kind == "f" and not out.requires_grad:
            return record(WRONG, label, "the result lost the graph")
        return record(CORRECT, label)
    if not out.requires_grad:
        return record(WRONG, label, "an input requires grad, but the result does not")
    weights = _weights(got.shape)
    try:
        xp.sum(out * weights).backward()
    except Exception as exc:  # noqa: BLE001
        return record(error_verdict(exc, names), label + " (backward)",
                      f"{type(exc).__name__}: {exc}")
    refs = [a.ref for a in arguments]
    for k, a in enumerate(arguments):
        if not a.grad or a.value.dtype.kind != "f":
            continue
        single = got.dtype == np.float32  # the function computes in float32 (dtype=float32)
        want_grad = _numerical_gradient(reference, refs, k, weights, 1e-3 if single else 1e-6)
        if not np.all(np.isfinite(want_grad)):
            continue  # the function overflows near this point: no reference
        got_grad = a.value.grad
        if got_grad is None:
            if np.any(want_grad):
                return record(WRONG, label, f"no gradient for argument {k}")
            continue
        if got_grad.shape != a.value.shape or not _close(
                _host(got_grad), want_grad, np.float32 if single else a.value.dtype):
            return record(WRONG, label, f"gradient of argument {k}: {_host(got_grad)!r:.200}"
                                        f", central difference {want_grad!r:.200}")
    return record(CORRECT, label)


# ---------------------------------------------------------------- elementwise functions
UNARY = ["sin", "exp", "tanh", "abs", "negative", "sqrt", "square", "log1p"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "atan2", "pow", "hypot"]
OPERATORS = {"+": lambda a, b: a + b, "*": lambda a, b: a * b, "-": lambda a, b: a - b,
             "/": lambda a, b: a / b, "**": lambda a, b: a ** b}
EXTRA_KEYWORDS = [None, ("out", None), ("where", True), ("x", 1.0), ("axis", 0),
                  ("dtype", np.float32)]


@PROBES
@given(name=st.sampled_from(UNARY + BINARY), data=st.data())
def test_elementwise_functions(name, data):
    arity = 1 if name in UNARY else 2
    count = data.draw(st.sampled_from([arity] * 6 + [arity - 1, arity + 1]), "count")
    arguments = [data.draw(args(salt=i), f"arg{i}") for i in range(count)]
    extra = data.draw(st.sampled_from(EXTRA_KEYWORDS), "keyword")
    kwargs = dict([extra]) if extra else {}
    label = f"{name}({', '.join(map(repr, arguments))}, **{kwargs})"
    probe(label, lambda: getattr(xp, name)(*[a.value for a in arguments], **kwargs),
          lambda *refs: getattr(RAW, name)(*refs, **kwargs), arguments,
          [name, "x", "x1", "x2", *kwargs])


@PROBES
@given(symbol=st.sampled_from(sorted(OPERATORS)), left=args(), right=args(salt=1),
       reflected=st.booleans())
def test_operators(symbol, left, right, reflected):
    """``x + y`` and friends, with a Variable on at least one side."""
    if not isinstance(left.value, ag.Variable):
        left = make_arg("var", (3,), 1)
    a, b = (right, left) if reflected else (left, right)
    operator = OPERATORS[symbol]
    name = {"+": "add", "*": "multiply", "-": "subtract", "/": "divide", "**": "pow"}[symbol]
    probe(f"{a!r} {symbol} {b!r}", lambda: operator(a.value, b.value),
          lambda x, y: operator(np.asarray(x) if isinstance(x, list) else x, y), [a, b],
          [name, symbol])


# ------------------------------------------------------------------------------ reductions
REDUCTIONS = ["sum", "mean", "prod", "max", "min", "std", "var", "cumulative_sum"]
AXES = [None, 0, 1, -1, 2, -3, 10 ** 20, 1.5, "0", (0,), (0, 0), (0, 1), [0], True,
        np.int64(1), np.array(0)]
NOT_GIVEN = object()


@PROBES
@given(name=st.sampled_from(REDUCTIONS), x=args(GOOD * 4 + KINDS), axis=st.sampled_from(AXES),
       keepdims=st.sampled_from([NOT_GIVEN, NOT_GIVEN, True, False, "yes", None]),
       extra=st.sampled_from([None] * 4 + [("axes", 0), ("where", True), ("initial", 0.5),
                                           ("out", None), ("ddof", 1), ("dtype", np.float32)]),
       positional=st.sampled_from([(), (), (), (0,)]))
def test_reductions(name, x, axis, keepdims, extra, positional):
    kwargs = {"axis": axis}
    if keepdims is not NOT_GIVEN and name != "cumulative_sum":
        kwargs["keepdims"] = keepdims
    if extra:
        kwargs[extra[0]] = extra[1]
    if extra and extra[0] == "where" and hasattr(x.ref, "shape"):
        kwargs["where"] = np.arange(x.ref.size).reshape(x.ref.shape) % 2 == 0
    label = f"{name}({x!r}, *{positional}, **{kwargs})"
    # NumPy's ddof= is the standard's correction=, which arraygrad reads it as (xarray passes
    # it): the backend's own function is asked with the standard's name.
    standard = {("correction" if k == "ddof" and name in ("std", "var") else k): v
                for k, v in kwargs.items()}
    probe(label, lambda: getattr(xp, name)(x.value, *positional, **kwargs),
          lambda ref: getattr(RAW, name)(ref, *positional, **standard), [x],
          [name, "x", *kwargs])


# ---------------------------------------------------------------------------- manipulation
def _draw_shape_option(data):
    return data.draw(st.sampled_from([(3, 2), (6,), (-1,), (2, -1), (-1, -1), (4,), (), None,
                                      "a", [3, 2], (3.0, 2), (1, 6, 1), (0,), (2, 3)]), "shape")


MANIPULATION = ["reshape", "permute_dims", "expand_dims", "squeeze", "stack", "concat", "take",
                "where", "clip", "matmul", "tensordot", "linalg.inv", "linalg.solve"]


def _function(name):
    target = xp
    for part in name.split("."):
        target = getattr(target, part)
    return target


def _raw_function(name):
    target = RAW
    for part in name.split("."):
        target = getattr(target, part)
    return target


@PROBES
@given(name=st.sampled_from(MANIPULATION), data=st.data())
def test_manipulation_and_linear_algebra(name, data):
    """Shapes and options drawn for each function; sequences of drawn arrays for stack/concat."""
    draw = data.draw
    x = draw(args(GOOD * 5 + KINDS, [(2, 3), (3,), (3, 3), (), (1, 3), (0,), (2, 3, 1)]), "x")
    positional, kwargs, arrays = [], {}, [x]
    extra = draw(st.sampled_from([None] * 5 + [("order", "F"), ("axes", 0), ("mode", "wrap"),
                                               ("out", None), ("copy", True)]), "extra")
    sequence = False
    if name == "reshape":
        positional = [_draw_shape_option(data)]
    elif name == "permute_dims":
        positional = [draw(st.sampled_from([(1, 0), (0,), (0, 0), (1, 5), None, [1, 0], "a",
                                            (0, 1, 2), (-1, 0)]), "axes")]
    elif name in ("expand_dims", "squeeze"):
        kwargs["axis"] = draw(st.sampled_from([0, -1, 1, 5, -4, None, (0, 1), 1.5, "0"]), "axis")
    elif name in ("stack", "concat"):
        sequence = True
        count = draw(st.integers(0, 3), "count")
        arrays = [draw(args(GOOD * 5 + KINDS, [(2, 3), (3,), (1, 3), ()], salt=i), f"array{i}")
                  for i in range(count)]
        kwargs["axis"] = draw(st.sampled_from([0, 1, -1, 3, None, "0", 1.5]), "axis")
    elif name == "take":
        arrays.append(make_arg("ndarray", (), 0))
        arrays[1] = draw(st.sampled_from([
            Arg("indices", np.array([0, 1, 1]), np.array([0, 1, 1])),
            Arg("indices", np.array([5]), np.array([5])),
            Arg("indices", np.array([0.5]), np.array([0.5])),
            Arg("indices", np.array([True, False, True]), np.array([True, False, True])),
            Arg("indices", 1, 1), Arg("indices", [0, 0], [0, 0]),
            Arg("indices", None, None, array_like=False), Arg("indices", "a", "a", False),
            Arg("indices", ag.Variable(np.array([2, 0])), np.array([2, 0]))]), "indices")
        kwargs["axis"] = draw(st.sampled_from([0, -1, 1, 3, None]), "axis")
    elif name == "where":
        condition = draw(st.sampled_from([
            Arg("condition", np.array([True, False, True]), np.array([True, False, True])),
            Arg("condition", np.array([[True], [False]]), np.array([[True], [False]])),
            Arg("condition", np.array([True, False]), np.array([True, False])),
            Arg("condition", True, True), Arg("condition", None, None, array_like=False),
            Arg("condition", np.array([0.5, 0.0, 1.0]), np.array([0.5, 0.0, 1.0]))]), "cond")
        arrays = [condition, x, draw(args(salt=1), "y")]
    elif name == "clip":
        bounds = [draw(st.sampled_from([NOT_GIVEN, None, 0.6, 1.4, "a"]), "min"),
                  draw(st.sampled_from([NOT_GIVEN, None, 1.2, 0.4]), "max")]
        by_keyword = draw(st.booleans(), "by keyword")
        bound_arg = draw(st.sampled_from([None, "min", "max"]), "array bound")
        if bound_arg:  # an array (maybe a Variable of another shape) as a bound
            bounds[bound_arg == "max"] = draw(args(GOOD, salt=1), "bound")
        for key, bound in zip(("min", "max"), bounds):
            if bound is NOT_GIVEN:
                continue
            bound = bound if isinstance(bound, Arg) else Arg(
                key, bound, bound, array_like=bound != "a")
            if by_keyword:
                kwargs[key] = bound
            else:
                arrays.append(bound)
        if not by_keyword and bounds[0] is NOT_GIVEN and bounds[1] is not NOT_GIVEN:
            arrays.insert(1, Arg("min", None, None))
    elif name in ("matmul", "tensordot", "linalg.solve"):
        arrays.append(draw(args(GOOD * 3 + KINDS, [(3,), (3, 3), (2, 3), (3, 2), ()], salt=1),
                           "y"))
        if name == "tensordot":
            kwargs["axes"] = draw(st.sampled_from([2, 1, 0, -1, 5, "a", None, ((1,), (0,)),
                                                   ((0,),), [[1], [0]]]), "axes")
    elif name == "linalg.inv" and draw(st.booleans(), "well-conditioned"):
        matrix = np.random.default_rng(5).uniform(0.3, 1.7, (3, 3)) + 2 * np.eye(3)
        x = arrays[0] = make_arg(draw(st.sampled_from(GOOD + ("int",))), (3, 3), 0, matrix)
    if extra:
        kwargs[extra[0]] = extra[1]
    keyword_args = {k: v for k, v in kwargs.items() if isinstance(v, Arg)}
    options = {k: v for k, v in kwargs.items() if not isinstance(v, Arg)}
    every = arrays + list(keyword_args.values())
    values = [a.value for a in arrays]
    label = f"{name}({values if sequence else ', '.join(map(repr, arrays))}, *{positional}, " \
            f"**{ {k: v for k, v in kwargs.items()} })"
    function, raw = _function(name), _raw_function(name)

    def call():
        given = {**options, **{k: a.value for k, a in keyword_args.items()}}
        if sequence:
            return function(values, *positional, **given)
        return function(*values, *positional, **given)

    def reference(*refs):
        given = dict(options, **dict(zip(keyword_args, refs[len(arrays):])))
        if sequence:
            return raw(list(refs[:len(arrays)]), *positional, **given)
        return raw(*refs[:len(arrays)], *positional, **given)

    probe(label, call, reference, every,
          [name, "x", "x1", "x2", "arrays", "indices", "condition", "shape", *kwargs])


# ------------------------------------------------------------------- indexing, in place
KEYS = [0, -1, 5, -4, 10 ** 20, 1.5, "a", None, Ellipsis, slice(None, None, -1), slice(5, 9),
        (0, 1), (0, 0, 0), (Ellipsis, 1), (None, 0), [0, 0, 1], [1, 0], [], [[0, 1], [1, 0]],
        [True, False], ([0, 1], [2, 2]), ([0, 0], [1, 1]), np.array([1, 1]), np.array([0.5]),
        np.array([[True, False, True], [False, True, True]]), {"a": 1}, Opaque(),
        np.int64(1), np.array(1), (slice(None), [2, 0, 2])]


def _key_repr(key):
    return repr(key) if not isinstance(key, np.ndarray) else f"ndarray({key.tolist()})"


def _repeats(key):
    """Whether a key repeats an element (then assignment order is unspecified)."""
    parts = key if isinstance(key, tuple) else (key,)
    return any(isinstance(p, (list, np.ndarray)) and np.asarray(p).dtype.kind == "i" and
               len(set(np.asarray(p).ravel().tolist())) < np.asarray(p).size for p in parts)


@PROBES
@given(key=st.sampled_from(KEYS), x=args(GOOD * 4 + ("int", "var_f32"), [(2, 3), (3,), ()]),
       as_variable=st.booleans())
def test_getitem(key, x, as_variable):
    if not isinstance(x.value, ag.Variable):
        x = Arg(x.kind, ag.Variable(x.value), x.ref)
    if as_variable and isinstance(key, np.ndarray) and key.dtype.kind in "ib":
        given = ag.Variable(key)
    else:
        given = key
    probe(f"{x!r}[{_key_repr(key)}]", lambda: x.value[given], lambda ref: ref[key], [x],
          ["__getitem__", "index", "indices", "key"])


@PROBES
@given(key=st.sampled_from(KEYS),
       value=args(GOOD * 2 + KINDS, [(), (3,), (2, 3), (1, 3), (2,)], salt=1),
       shape=st.sampled_from([(2, 3), (3,)]))
def test_setitem(key, value, shape):
    """``h[key] = value`` on a non-leaf ``h = x * 1`` (a leaf that requires grad refuses)."""
    x = make_arg("var", shape, 3)

    def call():
        h = x.value * 1
        h[key] = value.value
        return h

    def reference(x_ref, value_ref):
        h = np.array(x_ref, dtype=np.result_type(x_ref, np.float64))
        h[key] = value_ref
        return h

    check = not _repeats(key)  # which of two assignments to one element wins is unspecified
    probe(f"h{shape}[{_key_repr(key)}] = {value!r}", call, reference, [x, value],
          ["__setitem__", "index", "indices", "key", "value"], check_grads=check)


# ------------------------------------------------------------------- Variable, backward
FLAGS = [True, False, True, "no", None, 1, 0, 2.0, np.bool_(True), [True]]


@PROBES
@given(data=args(KINDS + ("nested_variables", "strict")), requires_grad=st.sampled_from(FLAGS),
       extra=st.sampled_from([None] * 3 + [("dtype", np.float32), ("grad", True)]))
def test_variable_construction(data, requires_grad, extra):
    if data.kind == "nested_variables":
        data = Arg(data.kind, [ag.Variable(np.ones(2)), ag.Variable(np.zeros(2))], None, False)
    elif data.kind == "strict":
        import array_api_strict

        data = Arg(data.kind, array_api_strict.asarray([1.0, 2.0]), np.array([1.0, 2.0]))
    kwargs = dict([extra]) if extra else {}
    label = f"Variable({data!r}, requires_grad={requires_grad!r}, **{kwargs})"
    try:
        out = ag.Variable(data.value, requires_grad=requires_grad, **kwargs)
    except Exception as exc:  # noqa: BLE001
        return record(error_verdict(exc, ["Variable", "requires_grad", "data", *kwargs]), label,
                      f"{type(exc).__name__}: {exc}")
    if not data.array_like or extra or not isinstance(requires_grad, (bool, int, np.bool_)):
        return record(WRONG, label, f"accepted, giving {out!r:.80}")
    source = data.value.data if isinstance(data.value, ag.Variable) else data.value
    want = np.asarray(source) if data.kind != "strict" else data.ref
    if np.asarray(out.data).shape != want.shape or not np.array_equal(
            np.asarray(out.data), want) or out.requires_grad != bool(requires_grad):
        return record(WRONG, label, f"gave {out!r:.120}")
    record(CORRECT, label)


@PROBES
@given(gradient=args(KINDS + ("omitted",), [(), (3,), (2, 3), (1, 3), (4,)]),
       reduce=st.booleans(), shape=st.sampled_from([(3,), (2, 3), ()]))
def test_backward_gradient_argument(gradient, reduce, shape):
    """``y.backward(gradient)`` with y = x * c (or its sum): x.grad must be c * gradient."""
    x = ag.Variable(np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape), requires_grad=True)
    c = np.arange(1.0, 1.0 + x.size).reshape(shape)
    y = xp.sum(x * c) if reduce else x * c
    given = () if gradient.kind == "omitted" else (gradient.value,)
    label = f"y{tuple(y.shape)}.backward({', '.join(map(repr, given)) if given else ''})"
    try:
        y.backward(*given)
    except Exception as exc:  # noqa: BLE001
        return record(error_verdict(exc, ["backward", "gradient"]), label,
                      f"{type(exc).__name__}: {exc}")
    implicit = not given or gradient.kind == "none"  # None: 1 for a single-element output
    g = np.ones(y.shape) if implicit else np.asarray(gradient.ref, dtype=np.complex128)
    if not (gradient.array_like or implicit) or g.shape != tuple(y.shape) or np.any(g.imag) or (
            implicit and y.size != 1):
        return record(WRONG, label, f"accepted, giving x.grad = {x.grad!r:.100}")
    want = c * g.real
    if x.grad is None or not np.allclose(_host(x.grad), want):
        return record(WRONG, label, f"x.grad = {x.grad!r:.100}, expected {want!r:.100}")
    record(CORRECT, label)


# -------------------------------------------------------------------------- autograd.grad
@PROBES
@given(data=st.data())
def test_autograd_grad(data):
    """``autograd.grad(outputs, inputs, grad_outputs)``: y = x * c (vector) and s = sum(x * x)
    as outputs; x, an unused leaf, a constant, a raw array or junk as inputs."""
    draw = data.draw
    x = ag.Variable(np.array([0.5, 1.0, 1.5]), requires_grad=True)
    unused = ag.Variable(np.ones(3), requires_grad=True)
    c = np.array([1.0, 2.0, 3.0])
    pool_out = {"y": x * c, "s": xp.sum(x * x), "none": None, "raw": np.ones(3),
                "constant": ag.Variable(np.ones(3))}
    pool_in = {"x": x, "unused": unused, "constant": ag.Variable(np.ones(3)), "raw": np.ones(3),
               "none": None, "str": "x"}
    out_names = draw(st.lists(st.sampled_from(sorted(pool_out)), min_size=0, max_size=2), "outs")
    in_names = draw(st.lists(st.sampled_from(sorted(pool_in)), min_size=0, max_size=2), "ins")
    single_out = len(out_names) == 1 and draw(st.booleans(), "bare output")
    single_in = len(in_names) == 1 and draw(st.booleans(), "bare input")
    outputs = pool_out[out_names[0]] if single_out else [pool_out[n] for n in out_names]
    inputs = pool_in[in_names[0]] if single_in else [pool_in[n] for n in in_names]
    mode = draw(st.sampled_from(["none", "list", "bare"]), "grad_outputs")
    cotangents = [draw(args(KINDS + ("omitted",), [(), (3,), (2, 3)], salt=i), f"g{i}")
                  for i in range(draw(st.integers(0, 3), "count"))]
    grad_outputs = (None if mode == "none" else
                    [None if g.kind == "omitted" else g.value for g in cotangents]
                    if mode == "list" else (cotangents[0].value if cotangents else None))
    allow_unused = draw(st.booleans(), "allow_unused")
    label = (f"grad(outputs={out_names}, inputs={in_names}, grad_outputs={mode}:"
             f"{cotangents}, allow_unused={allow_unused})")
    try:
        got = ag.autograd.grad(outputs, inputs, grad_outputs, allow_unused=allow_unused)
    except Exception as exc:  # noqa: BLE001
        return record(error_verdict(exc, ["grad", "outputs", "inputs", "grad_outputs",
                                          "allow_unused"]), label, f"{type(exc).__name__}: {exc}")
    # Accepted: work out what it had to be by hand.
    if mode == "none":
        given = [None] * len(out_names)
    elif mode == "list":
        given = [None if g.kind in ("omitted", "none") else g for g in cotangents]
    else:
        given = [cotangents[0] if cotangents and cotangents[0].kind not in ("omitted", "none")
                 else None] * len(out_names)
    if len(given) != len(out_names) or any(n not in ("y", "s") for n in out_names) or any(
            n not in ("x", "unused") for n in in_names):
        return record(WRONG, label, "accepted invalid outputs, inputs or grad_outputs")
    total = np.zeros(3)
    for name, g in zip(out_names, given):
        shape = (3,) if name == "y" else ()
        value = np.ones(shape) if g is None else np.asarray(g.ref, dtype=np.complex128)
        if (g is not None and not g.array_like) or value.shape != shape or np.any(value.imag):
            return record(WRONG, label, f"accepted grad_output {g!r} for {name}")
        total = total + (c * value.real if name == "y" else 2 * x.data * value.real)
    if not isinstance(got, tuple) or len(got) != len(in_names):  # torch's: always a tuple
        return record(WRONG, label, f"returned {type(got).__name__} for {len(in_names)} inputs")
    results = list(got)
    for name, result in zip(in_names, results):
        want = total if name == "x" and out_names else None
        if want is None:
            if result is not None and (np.any(_host(result)) or not allow_unused):
                return record(WRONG, label, f"{name}: {result!r:.80}, expected None")
            if result is None and not allow_unused:
                return record(WRONG, label, "None for an unused input without allow_unused")
        elif result is None or not np.allclose(_host(result), want):
            return record(WRONG, label, f"{name}: {result!r:.80}, expected {want}")
    record(CORRECT, label)


# ------------------------------------------------------------------------------ transforms
ARGNUMS = [0, 1, -1, -2, 2, -3, "0", None, 1.0, True, (0,), (1, 0), (0, 0), [0, 1], (),
           ((0,),), (0, "1"), np.int64(0)]
A = np.array([0.5, 1.0, 1.5])
B = np.array([2.0, -1.0, 0.5])


def _expected_type(given):
    return ag.Variable if isinstance(given, ag.Variable) else np.ndarray


def _positions(argnums, count=2):
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple, list)):
        return None
    items = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in items) or not all(
            -count <= i < count for i in items):
        return None
    return [i % count for i in items]


@PROBES
@given(argnums=st.sampled_from(ARGNUMS), has_aux=st.sampled_from([False, True, "yes", None]),
       returns_pair=st.booleans(), transform=st.sampled_from(["grad", "value_and_grad"]),
       as_variables=st.booleans(), f=st.sampled_from([3, None, "f"]) | st.just("good"))
def test_grad_and_value_and_grad(argnums, has_aux, returns_pair, transform, as_variables, f):
    """f(a, b) = sum(a * a * b): df/da = 2ab, df/db = a * a."""
    a, b = (ag.Variable(A), ag.Variable(B)) if as_variables else (A.copy(), B.copy())

    def good(u, v):
        value = xp.sum(u * u * v)
        return (value, "aux") if returns_pair else value

    function = good if f == "good" else f
    label = (f"{transform}({f}, argnums={argnums!r}, has_aux={has_aux!r}) on "
             f"{'Variables' if as_variables else 'arrays'}, f returns "
             f"{'a pair' if returns_pair else 'a scalar'}")
    try:
        out = getattr(ag, transform)(function, argnums=argnums, has_aux=has_aux)(a, b)
    except Exception as exc:  # noqa: BLE001
        return record(error_verdict(exc, [transform, "grad", "f", "argnums", "has_aux"]), label,
                      f"{type(exc).__name__}: {exc}")
    positions = _positions(argnums)
    if f != "good" or positions is None or bool(has_aux) != returns_pair:
        return record(WRONG, label, f"accepted, giving {out!r:.100}")
    value, grads = out if transform == "value_and_grad" else (None, out)
    if has_aux:
        if transform == "value_and_grad":
            value, aux = value
        else:
            grads, aux = grads
        if aux != "aux":
            return record(WRONG, label, f"aux {aux!r}")
    if value is not None and not np.isclose(float(_host(value)), np.sum(A * A * B)):
        return record(WRONG, label, f"value {value!r}")
    expected = [2 * A * B, A * A]
    several = not isinstance(argnums, int)
    got = list(grads) if several else [grads]
    if len(got) != len(positions):
        return record(WRONG, label, f"{len(got)} gradients for argnums={argnums!r}")
    for position, g in zip(positions, got):
        if not isinstance(g, _expected_type(a)) or not np.allclose(_host(g), expected[position]):
            return record(WRONG, label, f"gradient of argument {position}: {g!r:.100} "
                                        f"(expected a {_expected_type(a).__name__} "
                                        f"{expected[position]})")
    record(CORRECT, label)


@PROBES
@given(pair=st.booleans(), data=st.data())
def test_vjp_cotangents(pair, data):
    """f(a, b) = a * b (and sum(a) with ``pair``): the VJP is (g b, g a) (+ (h, 0))."""
    draw = data.draw
    cotangent_args = [draw(args(KINDS, [(3,), (), (2, 3), (4,)], salt=i), f"cotangent{i}")
                      for i in range(draw(st.integers(0, 3), "count"))]
    packing = draw(st.sampled_from(["tuple", "list", "bare"]), "packing")
    values = [c.value for c in cotangent_args]
    cotangent = (tuple(values) if packing == "tuple" else values if packing == "list"
                 else values[0] if values else None)
    label = f"vjp(f returning {'a pair' if pair else 'a * b'}) then vjp_fn({packing}: " \
            f"{cotangent_args})"

    def f(u, v):
        return (u * v, xp.sum(u)) if pair else u * v

    try:
        _, vjp_fn = ag.vjp(f, A, B)
        got = vjp_fn(cotangent)
    except Exception as exc:  # noqa: BLE001
        return record(error_verdict(exc, ["vjp", "vjp_fn", "cotangent", "cotangents",
                                          "gradient"]), label, f"{type(exc).__name__}: {exc}")
    given = cotangent_args if (pair or packing != "bare") else cotangent_args[:1]
    if pair and (packing == "bare" or len(given) != 2):
        return record(WRONG, label, f"accepted, giving {got!r:.100}")
    if not pair and packing != "bare":  # one output: the sequence is the cotangent itself
        try:
            cotangents = [np.asarray([c.ref for c in given], dtype=np.complex128)]
        except ValueError:
            return record(WRONG, label, f"accepted a ragged cotangent, giving {got!r:.100}")
    else:
        cotangents = [np.asarray(c.ref, dtype=np.complex128) if c.array_like else None
                      for c in given]
    shapes = [(3,), ()] if pair else [(3,)]
    if any(c is None or c.shape != s or np.any(c.imag) for c, s in zip(cotangents, shapes)) or \
            len(cotangents) != len(shapes):
        return record(WRONG, label, f"accepted, giving {got!r:.100}")
    g = cotangents[0].real
    want = [g * B + (cotangents[1].real if pair else 0), g * A]
    if len(got) != 2 or not all(isinstance(r, np.ndarray) and np.allclose(r, w)
                                for r, w in zip(got, want)):
        return record(WRONG, label, f"{got!r:.120}, expected {want}")
    record(CORRECT, label)


@PROBES
@given(data=st.data())
def test_jvp_primals_and_tangents(data):
    """f(a, b) = a * b: the JVP is ta b + a tb."""
    draw = data.draw
    packing = draw(st.sampled_from(["tuple", "list", "list", "bare", "none"]), "packing")
    count = draw(st.sampled_from([2, 2, 2, 1, 3]), "tangents")
    tangent_args = [draw(args(KINDS, [(3,), (), (2, 3), (3, 1)], salt=i), f"t{i}")
                    for i in range(count)]
    primals = {"tuple": (A, B), "list": [A, B], "bare": A, "none": None}[packing]
    tangents = [t.value for t in tangent_args] if packing != "bare" else tangent_args[0].value
    label = f"jvp(a * b, primals={packing}, tangents={tangent_args})"
    try:
        value, tangent = ag.jvp(lambda u, v: u * v, primals, tangents)
    except Exception as exc:  # noqa: BLE001
        return record(error_verdict(exc, ["jvp", "primals", "tangents", "tangent", "primal"]),
                      label, f"{type(exc).__name__}: {exc}")
    if packing in ("bare", "none") or count != 2:
        return record(WRONG, label, f"accepted, giving {tangent!r:.100}")
    ts = [np.asarray(t.ref) if t.array_like else None for t in tangent_args]
    if any(t is None or t.shape != (3,) or t.dtype != np.float64 for t in ts):
        return record(WRONG, label, f"accepted tangents {tangent_args}, giving {tangent!r:.100}")
    if not np.allclose(value, A * B) or not np.allclose(tangent, ts[0] * B + A * ts[1]):
        return record(WRONG, label, f"{value}, {tangent}")
    record(CORRECT, label)


@PROBES
@given(argnums=st.sampled_from(ARGNUMS), transform=st.sampled_from(["jacobian", "hessian"]),
       as_variables=st.booleans())
def test_jacobian_and_hessian(argnums, transform, as_variables):
    """jacobian(a * b) w.r.t. a is diag(b); hessian(sum(a * a * b)) w.r.t. a is diag(2b)."""
    a, b = (ag.Variable(A), ag.Variable(B)) if as_variables else (A.copy(), B.copy())
    f = (lambda u, v: u * v) if transform == "jacobian" else (lambda u, v: xp.sum(u * u * v))
    label = f"{transform}(argnums={argnums!r}) on {'Variables' if as_variables else 'arrays'}"
    try:
        out = getattr(ag, transform)(f, argnums=argnums)(a, b)
    except Exception as exc:  # noqa: BLE001
        return record(error_verdict(exc, [transform, "jacobian", "argnums"]), label,
                      f"{type(exc).__name__}: {exc}")
    positions = _positions(argnums)
    if positions is None:
        return record(WRONG, label, f"accepted, giving {out!r:.100}")
    jac = {0: np.diag(B), 1: np.diag(A)}
    hess = {(0, 0): np.diag(2 * B), (0, 1): np.diag(2 * A), (1, 0): np.diag(2 * A),
            (1, 1): np.zeros((3, 3))}
    if isinstance(argnums, int):
        got = [out]
        want = [jac[positions[0]] if transform == "jacobian" else hess[tuple(positions) * 2]]
    elif not isinstance(out, tuple) or len(out) != len(positions):  # one per position, as JAX
        return record(WRONG, label, f"{out!r:.120} for argnums={argnums!r}")
    elif transform == "jacobian":
        got, want = list(out), [jac[p] for p in positions]
    else:  # a tuple of tuples
        if not all(isinstance(row, tuple) and len(row) == len(positions) for row in out):
            return record(WRONG, label, f"{out!r:.120} for argnums={argnums!r}")
        got = [h for row in out for h in row]
        want = [hess[(p, q)] for p in positions for q in positions]
    for g, w in zip(got, want):
        if not isinstance(g, _expected_type(a)) or not np.allclose(_host(g), w):
            return record(WRONG, label, f"{out!r:.120}, expected {want}")
    record(CORRECT, label)


def test_permute_dims_with_axes_none_records_a_gradient():
    """NumPy's transpose takes axes=None (reverse them): the VJP reverses them back."""
    x = ag.Variable(np.arange(24.0).reshape(2, 3, 4), requires_grad=True)
    weights = np.arange(24.0).reshape(4, 3, 2) + 1
    xp.sum(xp.permute_dims(x, None) * weights).backward()
    np.testing.assert_array_equal(x.grad.data, np.transpose(weights))


# ----------------------------------------------------------------- the helpers themselves
def test_the_verdicts_themselves():
    """An AttributeError or KeyError is wrong wherever it comes from; Python's complaint about
    a None inside arraygrad's code is unclear; an arraygrad error is clear; NumPy naming the
    shapes is clear."""
    assert error_verdict(AttributeError("x")) == WRONG
    assert error_verdict(KeyError("arrays")) == WRONG
    try:
        xp.stack([ag.Variable(np.ones(2)), ag.Variable(np.ones(3))])
    except ValueError as exc:
        assert error_verdict(exc, ["stack"]) == CLEAR
    try:
        ag.Variable(np.ones(2)).backward()
    except ag.BackwardError as exc:
        assert error_verdict(exc) == CLEAR
    with pytest.raises(TypeError) as error:
        exec(compile("len(None)", PACKAGE + "_fake.py", "exec"), {})
    assert _origin(error.value) == "arraygrad"
    assert error_verdict(error.value, ["sum"]) == UNCLEAR
    with pytest.raises(TypeError) as error:
        exec(compile("raise TypeError('sum(): its array argument x is None')",
                     PACKAGE + "_fake.py", "exec"), {})
    assert error_verdict(error.value, ["sum", "x"]) == CLEAR


def test_the_numerical_gradient_itself():
    f = lambda a, b: a * a * b  # noqa: E731
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    w = np.array([1.0, -1.0])
    assert np.allclose(_numerical_gradient(f, [a, b], 0, w), 2 * a * b * w)
    assert np.allclose(_numerical_gradient(f, [a, b], 1, w), a * a * w)
