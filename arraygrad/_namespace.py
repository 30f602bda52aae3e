"""Build the differentiable Array API namespace of a backend from its raw namespace.

Every function of the standard is wrapped according to what it is: differentiable (it has a
rule: the call is recorded when an input requires grad), non-differentiable (results never
require grad), a constructor (results are constants), a dtype question (answered as is).
A function with no rule still runs; backward through it raises an error naming it.
"""

from __future__ import annotations

import functools
import operator
import types

from . import _grad_mode, _specials, _standard, _views
from ._arguments import (_ARRAYS_ONLY_FUNCTIONS, _NUMBERS, Arguments, _options_read, _owners,
                         _plain_options, _scalar_operand, _shape, check_positional)
from ._engine import Node, accumulator
from ._methods import _BINARY_OPERATORS, _COMPARISONS, _UNARY_OPERATORS
from ._plugins import Backend
from ._variable import Variable
from .errors import GradientError
from .rules import (NONDIFFERENTIABLE, OUTSIDE_STANDARD, REAL_CONSTANT, RULES, Rule, is_complex,
                    no_rule)
from ._numpy_protocol import pad

_state = _grad_mode.state
_make = Variable._make


class Namespace(types.ModuleType):
    """A differentiable Array API namespace over one backend (``arraygrad.namespace(name)``).

    It behaves like the module it stands for: one object per backend, hashable by identity
    (SciPy, array-api-extra and array-api-compat cache by namespace), with a ``__name__``."""

    def __init__(self, name, backend):
        super().__init__(name, f"The differentiable Array API namespace over {backend.name!r}.")
        self._backend = backend

    def __repr__(self):
        return f"<arraygrad namespace over {self._backend.name!r}>"

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        # xp.special (not xp.linalg.special): built on first use, since it imports SciPy.
        if name == "special" and self.__name__ == f"arraygrad[{self._backend.name}]":
            special = _specials.special_namespace(self._backend, Namespace, _Recorder)
            if special is not None:
                self.special = special
                return special
        if name in OUTSIDE_STANDARD and self.__name__ == f"arraygrad[{self._backend.name}]":
            raise AttributeError(
                f"the arraygrad namespace of backend {self._backend.name!r} has no {name!r}: "
                f"{name} is outside the Array API standard, and arraygrad offers it (with its "
                f"differentiation rule) only where the backend's own namespace has it, and "
                f"{self._backend.name}'s does not. Use a backend that has it, or compose it "
                f"from the standard's functions.")
        if _is_dtype(self._backend.raw, name):  # float16
            raise AttributeError(
                f"the arraygrad namespace of backend {self._backend.name!r} has no {name!r}: "
                f"{name} is a dtype of the backend, not of the Array API standard, so "
                f"arraygrad's rules do not take it. Use one of the standard's dtypes "
                f"(float32, float64...).")
        if hasattr(self._backend.raw, name):
            raise AttributeError(
                f"the arraygrad namespace of backend {self._backend.name!r} has no {name!r}: "
                f"it is not a function of the Array API standard, so arraygrad has no rule "
                f"for it (calling the backend's own would leave the graph). Compose it from "
                f"the standard's functions, or apply it to detached values.")
        raise AttributeError(
            f"the arraygrad namespace of backend {self._backend.name!r} has no {name!r}: "
            f"the backend's own namespace does not provide it")


def _is_dtype(raw, name) -> bool:
    """Whether ``raw.name`` is a dtype (``isdtype`` takes it)."""
    try:
        raw.isdtype(getattr(raw, name), "numeric")
    except Exception:  # noqa: BLE001  (not a dtype, or no such name: each library says so its way)
        return False
    return True


class _Recorder(Arguments):
    """Turns one raw function into a differentiable one, for one backend."""

    def __init__(self, backend, name, raw_function, rule: Rule):
        self.backend = backend
        self.name = name
        self.raw_function = raw_function
        self.rule = rule
        self.override = None
        self.positional = _standard.POSITIONAL.get(name)  # the standard's; None: not checked
        self.reads = _options_read(rule)
        # Python numbers become arrays here (the standard takes arrays only; rules read .ndim)
        self.arrays_only = name in _ARRAYS_ONLY_FUNCTIONS
        # The fast path's calls: this many arrays by position (None: none such), then at most
        # ``most_options`` options; Python numbers as operands where the function is elementwise.
        self.arity = (len(rule.arrays) if rule is not None and rule.vjps is not None
                      and not rule.sequence else None)
        self.most_options = 0 if self.arity is None else min(
            len(rule.params), len(rule.params) if self.positional is None else
            self.positional - self.arity)
        self.numbers = name in _standard.ELEMENTWISE and not self.arrays_only
        # What the node saves: (kind, index, a bit mask of the inputs whose VJPs read it, from
        # bit 1 for input 0: see node()).
        self.saves = () if rule is None else tuple(
            (kind, index, -1 if readers is None else sum(2 << i for i in readers))
            for (kind, index), readers in zip(rule.sources, rule.users))
        self.unknown_shapes = None  # may shapes be unknown (dask's NaN)? Asked when first recording
        self.tracks = backend.tracked is not None  # (see constant())

    def record(self, inputs, raw_inputs, out, params):
        """Wrap the raw result ``out``; record a Node when some input requires grad (and, for
        one output, when it is inexact: integer outputs carry no gradient)."""
        backend = self.backend
        if out.__class__ not in backend._plain_types:
            if isinstance(out, (tuple, list)):
                return self.record_several(inputs, raw_inputs, out, params)
            out = backend.coerce(out)
        if _state.enabled and backend.is_inexact(out.dtype):
            for v in inputs:
                if v.__class__ is Variable and v._requires_grad:
                    return _make(out, backend, self.node(inputs, raw_inputs, (out,), params,
                                                         False), 0)
        return _make(out, backend, None, 0, False)

    def record_several(self, inputs, raw_inputs, out, params):
        """``record`` for a function of several outputs (a tuple or list of arrays)."""
        backend = self.backend
        outs = [backend.coerce(o) for o in out]
        node = None
        if _state.enabled and any(v.__class__ is Variable and v._requires_grad for v in inputs):
            node = self.node(inputs, raw_inputs, outs, params, True)
        results = [_make(o, backend, node, i) if node is not None and backend.is_inexact(o.dtype)
                   else _make(o, backend, None, 0, False) for i, o in enumerate(outs)]
        return _pack(out, results)

    def node(self, inputs, raw_inputs, outs, params, multiple):
        """The Node of a call: per input, the node its gradient goes to; the inputs' and
        outputs' shapes and dtypes (shared: :data:`_signatures`); what the rule's VJPs read."""
        backend = self.backend
        nodes, key = [], [backend]  # key: the signature, flat (see _signatures)
        needs, bit = 1, 2  # a bit mask of the inputs that need a gradient, from bit 1 (saves)
        for v in inputs:
            if v.__class__ is Variable and v._requires_grad:
                nodes.append(v.grad_fn or accumulator(v))  # (a leaf's output number is 0)
                key.append(v._output_nr)
                needs |= bit
            else:
                nodes.append(None)
                key.append(0)
            bit <<= 1
        for r in raw_inputs:
            key += _NO_META if r is None or r.__class__ in _NUMBERS else (r.shape, r.dtype)
        if self.unknown_shapes is not False:
            self.check_known(outs)
        for o in outs:
            key += o.shape, o.dtype
        key = tuple(key)
        try:
            input_nrs, meta = _signatures[key]
        except (KeyError, TypeError):  # a new signature, or a dtype that cannot be hashed
            input_nrs, meta = _new_signature(key, len(nodes))
        return Node(self.rule, backend, tuple(nodes), input_nrs, meta,
                    self.saved(needs, raw_inputs, outs, multiple), params,
                    len(outs) if multiple else 1)

    def check_known(self, outs):
        """Refuse outputs of unknown shape (dask's NaN), where the backend may give them."""
        if self.unknown_shapes is None:
            self.unknown_shapes = not self.backend.capabilities()["data_dependent_shapes"]
        for o in outs:
            if self.unknown_shapes and any(n is None or n != n for n in o.shape):
                raise GradientError(
                    f"{self.name} on backend {self.backend.name!r} gives an output of unknown "
                    f"shape {tuple(o.shape)} (a data-dependent shape, which this backend cannot "
                    "provide), so no gradient can flow through it. Detach its input, or make "
                    "the shape known first (dask: .compute_chunk_sizes()).")

    def saved(self, needs, raw_inputs, outs, multiple):
        """What the rule's VJPs read, None where only inputs that need no gradient (not in the
        bit mask ``needs``) read it."""
        saved = []
        for kind, index, readers in self.saves:
            if not needs & readers:
                saved.append(None)
            elif kind == "input":
                saved.append(raw_inputs[index])
            elif kind == "ans":
                saved.append(tuple(outs) if multiple else outs[0])
            elif kind == "shape":
                saved.append(_shape(raw_inputs[index]))
            elif kind == "inputs":
                saved.append(list(raw_inputs))
            else:
                saved.append([_shape(r) for r in raw_inputs])
        return tuple(saved)

    # -------------------------------------------------------------------------- the calls
    def __call__(self, *args, **kwargs):
        """The call, recorded. Fast where it needs no checks: the rule's arrays given by
        position as Variables or plain arrays of this backend, or Python numbers where
        elementwise (``sin(x)``, ``x * 2``, ``X @ w``); with options, :meth:`call_with_options`."""
        if kwargs or len(args) != self.arity:
            return self.call_with_options(args, kwargs)
        backend = self.backend
        raw_inputs = []
        recording = False
        for value in args:
            if value.__class__ is Variable and value._backend is backend:
                raw_inputs.append(value._values)
                recording = recording or value._requires_grad
            elif self.numbers and value.__class__ in _NUMBERS:
                raw_inputs.append(value)  # (a Python number)
            elif self.constant(value):
                raw_inputs.append(backend.coerce(value))  # (an array, or NumPy's float64)
            else:
                return self.checked_call(args, kwargs)
        out = self.raw_function(*raw_inputs)
        if recording and out.__class__ in backend._plain_types and _state.enabled and (
                backend.is_inexact(out.dtype)):  # (record()'s answer, without its call)
            return _make(out, backend, self.node(args, raw_inputs, (out,), None, False), 0)
        return self.record(args, raw_inputs, out, None)

    def constant(self, value) -> bool:
        """Whether ``value`` may be taken as a constant array after ``coerce`` (which makes
        NumPy's scalars 0-d arrays, and refuses masked arrays): an array of this backend's, of
        a library whose autograd tracks nothing (torch's tensors: checked)."""
        return _owners.get(value.__class__) is self.backend and not self.tracks

    def call_with_options(self, args, kwargs):
        """A call with options: passed on unchanged where the arrays are Variables or plain
        arrays (:meth:`constant`) of this backend and the options plain Python values the rule
        reads (``sum(x, axis=1)``), else every argument checked (:meth:`checked_call`)."""
        arity, backend = self.arity, self.backend
        if arity is None or not arity <= len(args) <= arity + self.most_options:
            return self.checked_call(args, kwargs)
        inputs, options = args[:arity], args[arity:]
        raw_inputs = []
        for v in inputs:
            if v.__class__ is Variable and v._backend is backend:
                raw_inputs.append(v._values)
            elif self.constant(v):
                raw_inputs.append(backend.coerce(v))
            else:
                return self.checked_call(args, kwargs)
        if (options or kwargs) and not _plain_options(options, kwargs, self.reads):
            return self.checked_call(args, kwargs)
        out = self.raw_function(*raw_inputs, *options, **kwargs)
        params = dict(zip(self.rule.params, options)) if options else {}
        params.update(kwargs)
        return self.record(inputs, raw_inputs, out, params)


_signatures: dict = {}
"""Per signature of a call, flat (backend, input nrs, then shape and dtype of each input and
output), the ``(input_nrs, meta)`` that its nodes share: a new tuple of tuples per node outlives
a collection or two, and a long graph of them kept the GC scanning (W4's forward took twice as
long). The backend is in the key: dtypes of two libraries are never compared."""
_NO_META = (None, None)  # the shape and dtype in a signature of an input that is a Python number


def _new_signature(key, n):
    """``(input_nrs, meta)`` of a signature ``key`` of ``n`` inputs seen for the first time."""
    pairs = [None if shape is None else (shape, dtype)
             for shape, dtype in zip(key[n + 1::2], key[n + 2::2])]
    pair = key[1:n + 1], tuple(pairs)
    try:
        if len(_signatures) >= 4096:
            _signatures.clear()
        _signatures[key] = pair
    except TypeError:  # a dtype that cannot be hashed: not shared
        pass
    return pair

def _pack(out, results):
    if hasattr(out, "_fields"):  # a named tuple such as eigh's or svd's
        return type(out)(*results)
    return type(out)(results) if isinstance(out, (tuple, list)) else results


def _plain(backend, name, raw_function, constant_inputs=False):
    """A function whose results never require grad: comparisons, argmax, constructors..."""
    recorder = _Recorder(backend, name, raw_function, None)
    unwrap = recorder.unwrap
    positional = recorder.positional

    def function(*args, **kwargs):
        check_positional(name, positional, args)
        out = raw_function(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
        coerce = backend.coerce
        if isinstance(out, (tuple, list)):
            return _pack(out, [_make(coerce(o), backend, None, 0, False) for o in out])
        return _make(coerce(out), backend, None, 0, False)

    function.__name__ = name.rsplit(".", 1)[-1]
    return function


def _unless_complex(recorded, plain):
    """``recorded`` for a complex argument, else ``plain`` (no gradient): a function of
    ``rules.REAL_CONSTANT``, constant for real arguments."""
    def function(x, /, *args, **kwargs):
        return (recorded if is_complex(x) else plain)(x, *args, **kwargs)
    return function


def _question(backend, name, raw_function):
    """A dtype question (``finfo``, ``result_type``...): arguments unwrapped, answer as is."""
    recorder = _Recorder(backend, name, raw_function, None)

    def function(*args, **kwargs):
        check_positional(name, recorder.positional, args)
        return raw_function(*[recorder.unwrap(a) for a in args],
                            **{k: recorder.unwrap(v) for k, v in kwargs.items()})

    function.__name__ = name
    return function


def _resolve(raw, name):
    target = raw
    for part in name.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None
    return target


def build_namespace(backend) -> Namespace:
    """Build the differentiable namespace of ``backend`` (called once per backend)."""
    raw = backend.raw
    ns = Namespace(f"arraygrad[{backend.name}]", backend)
    ns.linalg = Namespace(f"arraygrad[{backend.name}].linalg", backend)
    ns.fft = Namespace(f"arraygrad[{backend.name}].fft", backend)
    ns.__array_api_version__ = getattr(raw, "__array_api_version__", "2024.12")
    for name in (*_standard.DTYPES, *_standard.CONSTANTS):
        if hasattr(raw, name):
            setattr(ns, name, getattr(raw, name))
    if hasattr(raw, "__array_namespace_info__"):
        ns.__array_namespace_info__ = _specials.namespace_info(backend,
                                                            raw.__array_namespace_info__)
    recorders = {}
    for name in (*_standard.FUNCTIONS, *sorted(OUTSIDE_STANDARD)):  # those where raw has them
        raw_function = _resolve(raw, name)
        forward = getattr(RULES.get(name), "forward", None)
        if forward is not None:  # made of the standard's functions: the same on every backend
            raw_function = _composed(forward, raw)
        if raw_function is None:
            continue
        if name in _standard.QUESTIONS:
            function = _question(backend, name, raw_function)
        elif name in NONDIFFERENTIABLE or name in _standard.CONSTRUCTORS:
            function = _plain(backend, name, raw_function)
        else:
            rule = backend.rule_override(name) or RULES.get(name) or no_rule(name)
            function = recorders[name] = _Recorder(backend, name, raw_function, rule)
            if name in _VIEW_FUNCTIONS:
                function = _viewing(function, _VIEW_FUNCTIONS[name])
            if name in REAL_CONSTANT:  # sign: recorded for complex arguments only
                function = _unless_complex(function, _plain(backend, name, raw_function))
        _install(ns, name, function, raw_function)
    _specials.install(ns, backend, recorders, _Recorder)
    ns.pad = pad  # not in the standard; xarray's rolling windows call xp.pad
    backend.operators = _operators(ns, backend, recorders)
    return ns


def _inverse_permutation(view, base, args, kwargs, ns):
    axes = args[0] if args else kwargs["axes"]
    return ns.permute_dims(view, tuple(sorted(range(len(axes)), key=lambda i: axes[i])))


# Functions whose result is a view of their argument in NumPy, and how a view's new value gives
# its base's: ``back(view, base, args, kwargs, ns)``.
_VIEW_FUNCTIONS = {
    "reshape": lambda view, base, args, kwargs, ns: ns.reshape(view, base.shape),
    "expand_dims": lambda view, base, args, kwargs, ns: ns.reshape(view, base.shape),
    "squeeze": lambda view, base, args, kwargs, ns: ns.reshape(view, base.shape),
    "permute_dims": _inverse_permutation,
    "matrix_transpose": lambda view, base, args, kwargs, ns: ns.matrix_transpose(view),
    "moveaxis": lambda view, base, args, kwargs, ns: ns.moveaxis(view, args[1], args[0]),
    "flip": lambda view, base, args, kwargs, ns: ns.flip(view, *args, **kwargs),
}


def _viewing(function, back):
    """``function`` whose result, where the backend made it a view of its argument, is linked
    to it as a view: in-place changes of either reach the other (``_views``)."""
    def view_function(x, /, *args, **kwargs):
        result = function(x, *args, **kwargs)
        if x.__class__ is Variable and result.__class__ is Variable and not kwargs.get(
                "copy") and _views.is_view(result._values, x._values):  # (copy=True: never)
            ns = x._backend.ns
            _views.link(x, result, lambda base: function(base, *args, **kwargs),
                        lambda base, view: back(view, base, args, kwargs, ns))
        return result
    return view_function


def _composed(forward, raw):
    """``forward(raw, ...)``: a function outside the standard made of the standard's functions
    of the raw namespace ``raw`` (``logsumexp``)."""
    def function(*args, **kwargs):
        return forward(raw, *args, **kwargs)
    function.__doc__ = forward.__doc__
    return function


def _install(ns, name, function, raw_function):
    """Install ``function`` (a recorder, or a plain function) as ``ns.name``: docs and
    signature (through ``__wrapped__``) are the backend's own function's."""
    functools.update_wrapper(function, raw_function, assigned=("__doc__",), updated=())
    # The standard's name, which errors quote (NumPy's atan2 is named arctan2).
    function.__name__ = function.__qualname__ = name.rsplit(".", 1)[-1]
    if "." in name:
        extension, short = name.split(".")
        setattr(getattr(ns, extension), short, function)
    else:
        setattr(ns, name, function)


class _OperatorTable(dict):
    """The operators of one backend; a missing one is a clear error, not a KeyError."""

    def __init__(self, backend_name):
        super().__init__()
        self.backend_name = backend_name

    def __missing__(self, name):
        raise TypeError(f"backend {self.backend_name!r} does not provide {name.lstrip('r')!r}, "
                        "which this operator needs")


def _operators(ns, backend, recorders):
    """The functions behind Variable's operators: the raw functions the namespace's functions
    call, so that a plugin's fix-up of ``matmul`` reaches ``x @ y`` too. Namespaces of the
    standard's 2024.12 and later take a Python scalar operand (``2 * x``, ``x ** 2``) as its
    operators do; an older one's functions get it as an array (:func:`_scalar_operand`)."""
    table = _OperatorTable(backend.name)
    version = getattr(backend.raw, "__array_api_version__", None)
    takes_scalars = isinstance(version, str) and version >= "2024.12"
    for dunder, name in {**_BINARY_OPERATORS, **_COMPARISONS}.items():
        raw_operator = getattr(operator, dunder if dunder not in ("and", "or") else dunder + "_")
        raw_function = recorders[name].raw_function if name in recorders else _resolve(
            backend.raw, name)
        if raw_function is None:  # the namespace lacks it: the library's own operator
            raw_function = raw_operator
        elif not takes_scalars:
            raw_function = _scalar_operand(backend.raw, raw_function, raw_operator)
        if name in recorders:
            recorder = _Recorder(backend, name, raw_function, recorders[name].rule)
            table[name] = recorder.__call__  # (a bound method: called without the type's slot)
            table["r" + name] = lambda a, b, recorder=recorder: recorder(b, a)
        else:
            plain = _plain(backend, name, raw_function)
            table[name] = plain
            table["r" + name] = lambda a, b, plain=plain: plain(b, a)
    for dunder, name in _UNARY_OPERATORS.items():
        if name in vars(ns):  # a backend may lack some functions
            table[name] = getattr(ns, name)
    return table


Backend.namespace_factory = build_namespace  # backends build their namespace through it
