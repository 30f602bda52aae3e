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

from . import _grad_mode, _standard, _views
from ._engine import Node, accumulator
from ._plugins import Backend, registry
from ._variable import (_BINARY_OPERATORS, _COMPARISONS, _UNARY_OPERATORS, OTHER_SPELLINGS,
                        Variable)
from .errors import BackendError, GradientError
from .rules import (NONDIFFERENTIABLE, OUTSIDE_STANDARD, REAL_CONSTANT, RULES, Rule, is_complex,
                    no_rule)
from .rules.creation import to_device as raw_to_device
from .rules.indexing import selects_nothing
from .rules.special import SPECIAL
from ._numpy_protocol import pad

_SCALARS = (bool, int, float, complex, type(None))
_PASSED = frozenset((*_SCALARS, str, slice, type(Ellipsis)))
_NUMBERS = frozenset((bool, int, float, complex))
_EXACT_INT = 2**53  # every int up to it is a float64 as it is
_ARRAY_PROTOCOLS = ("__array__", "__array_namespace__", "__dlpack__", "__array_interface__")
_owners = registry._by_type  # {array type: its backend}, filled by registry.of
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
            special = _build_special(self._backend)
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
        if hasattr(self._backend.raw, name):
            raise AttributeError(
                f"the arraygrad namespace of backend {self._backend.name!r} has no {name!r}: "
                f"it is not a function of the Array API standard, so arraygrad has no rule "
                f"for it (calling the backend's own would leave the graph). Compose it from "
                f"the standard's functions, or apply it to detached values.")
        raise AttributeError(
            f"the arraygrad namespace of backend {self._backend.name!r} has no {name!r}: "
            f"the backend's own namespace does not provide it")


def mixed_backends(a, b, where):
    return BackendError(
        f"{where}: cannot mix Variables or arrays of backend {a.name!r} and backend {b.name!r} "
        "in one operation; move one of them first (Variable.to(backend)) so both match")


def _refuse_other_spellings(name, reads, kwargs):
    """torch's ``dim=``...: refused with the standard's name, before the backend's function
    sees them. NumPy's ``ddof=`` (xarray passes it) is the standard's ``correction=``: renamed."""
    if "ddof" in kwargs and "correction" in reads and "correction" not in kwargs:
        kwargs["correction"] = kwargs.pop("ddof")
    for key in kwargs:
        if key in OTHER_SPELLINGS and key not in reads:
            standard, note = OTHER_SPELLINGS[key]
            raise TypeError(f"{name}() takes the Array API standard's option names: write "
                            f"{standard}= instead of {key}={note}")


def foreign_constant(backend, owner, value, where):
    """A raw array or scalar of another library, taken as a constant as the backend's own
    functions take it: a scalar (NumPy's ``int64`` in a shape, an axis, an index) becomes the
    Python number it holds, an array is converted by the backend's ``asarray``. Only
    Variables of two backends meeting in one operation are an error."""
    if getattr(value, "ndim", None) == 0 and not hasattr(value, "__len__"):  # a NumPy scalar
        return value.item()
    try:
        return backend.raw.asarray(value)
    except Exception as exc:
        raise BackendError(
            f"{where}: a raw array of backend {owner.name!r} (shape {tuple(value.shape)}, dtype "
            f"{value.dtype}) was given to an operation on backend {backend.name!r}, whose "
            f"asarray() cannot take it ({type(exc).__name__}: {exc}). Convert it first, "
            f"e.g. with arraygrad.Variable(a).to({backend.name!r}).") from exc


class _Recorder:
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
        self.most_options = 0 if rule is None else min(
            len(rule.params), self.positional - 1 if self.positional else len(rule.params))
        self.numbers = name in _standard.ELEMENTWISE and not self.arrays_only
        # What the node saves: (kind, index, a bit mask of the inputs whose VJPs read it).
        self.saves = () if rule is None else tuple(
            (kind, index, -1 if readers is None else sum(1 << i for i in readers))
            for (kind, index), readers in zip(rule.sources, rule.users))
        # dask's shapes may be unknown (NaN) where they depend on data: refused when recorded.
        self.unknown_shapes = not backend.capabilities()["data_dependent_shapes"]

    # ------------------------------------------------------------------ argument handling
    def own(self, value):
        """An array of this backend, as the backend takes it (``coerce``: NumPy's masked
        arrays are refused), and refused where its library's own autograd tracks it (torch's
        requires_grad)."""
        value = self.backend.coerce(value)
        return value if self.backend.tracked is None else self.backend.untracked(
            value, f"{self.name}()")

    def unwrap(self, value):
        """Raw value of an argument: a Variable's data, after checking its backend."""
        kind = value.__class__
        if kind is Variable:
            if value._backend is not self.backend:
                raise mixed_backends(self.backend, value._backend, self.name)
            return value._values  # (the slot: .data is a checked property)
        if kind in _PASSED:
            return value
        if _owners.get(kind) is self.backend:  # our array
            return self.own(value)
        if isinstance(value, _SCALARS):  # NumPy's float64 subclasses float: to another backend,
            # the number it holds (a rule would meet NumPy's scalars: log, where...)
            owner = registry.of(value) if hasattr(value, "item") else None
            return value.item() if owner is not None and owner is not self.backend else value
        if isinstance(value, (str, slice, type(Ellipsis))):
            return value
        if isinstance(value, (list, tuple)):
            return type(value)(self.unwrap(v) for v in value)
        if isinstance(value, Variable):
            return self.unwrap(value)  # a subclass
        owner = registry.of(value)
        if owner is not None and owner is not self.backend:
            return foreign_constant(self.backend, owner, value, self.name)
        if owner is None and not isinstance(value, type) and any(
                hasattr(value, a) for a in _ARRAY_PROTOCOLS):
            kind = type(value)
            raise TypeError(
                f"{self.name}() got a {kind.__module__}.{kind.__qualname__}, an array-like no "
                f"backend owns: its own rules (pandas' label alignment, say) would decide the "
                f"result, unseen by the gradient. Convert it to an array of backend "
                f"{self.backend.name!r} first (xp.asarray(np.asarray(value))).")
        return value

    def operand(self, value, position):
        """Raw value of an elementwise operand that is not a Variable of this backend: as
        ``unwrap``, refusing what cannot be an array (None, a string, a dict...)."""
        kind = value.__class__
        if kind in _NUMBERS:  # 2 * x
            return value
        if _owners.get(kind) is self.backend:  # x + array
            return self.own(value)
        if kind is Variable:
            return self.unwrap(value)  # of another backend: refused there
        return self.array_input(self.rule.arrays[position], value)

    def array_input(self, name, value):
        """An array argument that is not a Variable: refused if it cannot be an array, and
        made one where a rule needs it (a list; a Python number where the standard takes
        arrays only)."""
        kind = value.__class__
        if kind in _NUMBERS:  # clip(x, 0.0, 1.0)
            return self.backend.raw.asarray(value) if name == "x" or self.arrays_only else value
        if value is None and name in _OPTIONAL_ARRAYS:
            return value
        if _owners.get(kind) is self.backend:
            return self.own(value)
        if not _array_like(value):
            raise _not_an_array(self.name, name, value)
        if isinstance(value, (list, tuple)):
            if _holds_variables(value):
                raise TypeError(
                    f"{self.name}(): its array argument {name} is a list holding Variables, "
                    "which would drop their gradients: stack them first with xp.stack([...]) "
                    "(or xp.asarray([...])), which records them")
            return self.backend.raw.asarray(self.unwrap(value))
        return self.unwrap(value)

    def unread_option(self, key, value):
        """The error for an option outside the standard that the rule does not read."""
        start = (f"{self.name}(): the option {key}={value!r:.40} is not an option of the Array "
                 "API standard, and ")
        instead = _standard_only(self.name, key, value)
        if instead is not None:
            return TypeError(start + "it changes what the function returns, on some backends "
                             "wrongly, so it is refused. " + instead)
        return TypeError(start + f"arraygrad's rule for {self.name} does not read it, so the "
                         "gradient would silently ignore it. Leave it out, or call the function "
                         "on detached values (x.detach()) where no gradient is needed.")

    def options(self, params):
        """The options a recorded call hands its rule, integer scalars of a backend
        (``axis=np.int64(1)``) as the Python ints rules expect. (Each is one the rule reads:
        ``__call__`` refused any other, ``reshape(x, s, order="F")`` or ``sum(x, where=m)``,
        before the backend ran.)"""
        arrays = self.rule.arrays
        converted = None
        for key, value in params.items():
            kind = value.__class__
            if kind in _OPTION_TYPES or key in arrays or key == "key" or (
                    kind is tuple and all(item.__class__ is int for item in value)):
                continue
            python = self._python_int(value)
            if python is not value:
                converted = converted or dict(params)
                converted[key] = python
        return converted or params

    def _python_int(self, value):
        if isinstance(value, tuple):
            items = tuple(self._python_int(item) for item in value)
            return items if any(a is not b for a, b in zip(items, value)) else value
        if getattr(value, "ndim", None) == 0 and hasattr(value, "__index__"):
            try:
                if self.backend.raw.isdtype(value.dtype, "integral"):
                    return operator.index(value)
            except (TypeError, AttributeError):
                pass
        return value

    def record(self, inputs, raw_inputs, out, params):
        """Wrap the raw result ``out``; record a Node when some input requires grad (and, for
        one output, when it is inexact: integer outputs carry no gradient)."""
        backend = self.backend
        if isinstance(out, (tuple, list)):
            return self.record_several(inputs, raw_inputs, out, params)
        if out.__class__ not in backend._plain_types:
            out = backend.coerce(out)
        if _state.enabled and backend.is_inexact(out.dtype):
            for v in inputs:
                if v.__class__ is Variable and v._requires_grad:
                    return _make(out, backend, self.node(inputs, raw_inputs, [out], params,
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
        outputs' shapes and dtypes; what the rule's VJPs read (None where only inputs that
        need no gradient read it)."""
        nodes, nrs, meta = [], [], []
        needs = 0  # a bit mask of the inputs that need a gradient
        for i, (v, r) in enumerate(zip(inputs, raw_inputs)):
            if v.__class__ is Variable and v._requires_grad:
                nodes.append(v.grad_fn or accumulator(v))
                nrs.append(v._output_nr)
                needs |= 1 << i
            else:
                nodes.append(None)
                nrs.append(0)
            meta.append(None if r.__class__ in _NUMBERS or not hasattr(r, "shape") else
                        (tuple(r.shape), r.dtype))
        for o in outs:
            if self.unknown_shapes and any(n is None or n != n for n in o.shape):
                raise _unknown_shape(self.name, self.backend, o)
            meta.append((tuple(o.shape), o.dtype))
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
        return Node(self.rule, self.backend, tuple(nodes), tuple(nrs), tuple(meta),
                    tuple(saved), params, len(outs) if multiple else 1)

    # -------------------------------------------------------------------------- the calls
    def __call__(self, *args, **kwargs):
        """The call, recorded. Fast where it needs no checks: the rule's arrays given by
        position as Variables of this backend (or Python numbers, where elementwise), then plain
        Python options the rule reads (``sin(x)``, ``sum(x, axis=1)``, ``x * 2``)."""
        arity = self.arity
        plain = not kwargs and len(args) == arity  # arrays and no option: the common case
        if not plain and (arity is None or not arity <= len(args) <= arity + self.most_options
                          or not _plain_options(args[arity:], kwargs, self.reads)):
            return self.checked_call(args, kwargs)
        backend, numbers = self.backend, self.numbers
        raw_inputs = []
        for value in args[:arity] if not plain else args:
            if value.__class__ is Variable and value._backend is backend:
                raw_inputs.append(value._values)
            elif numbers and value.__class__ in _NUMBERS:
                raw_inputs.append(value)
            else:
                return self.checked_call(args, kwargs)
        if plain:
            return self.record(args, raw_inputs, self.raw_function(*raw_inputs), None)
        out = self.raw_function(*raw_inputs, *args[arity:], **kwargs)
        params = dict(zip(self.rule.params, args[arity:]))
        params.update(kwargs)
        return self.record(args[:arity], raw_inputs, out, params)

    def checked_call(self, args, kwargs):
        """A call of any form: every argument checked, and made what the rule expects."""
        check_positional(self.name, self.positional, args, self.rule)
        rule = self.rule
        if kwargs:
            _refuse_other_spellings(self.name, self.reads, kwargs)
        unwrap = self.unwrap
        keyword_inputs = {}
        if rule.sequence == "list":
            arrays = args[0] if args else kwargs.pop("arrays", _MISSING)
            inputs, rest = self.arrays(arrays), args[1:]
        elif rule.sequence == "varargs":  # options given by position come first (einsum's)
            inputs, rest = self.varargs(args)
        elif rule.vjps is None:  # no rule: every Variable argument is an input
            inputs, rest = [a for a in args if isinstance(a, Variable)], ()
        else:
            count = len(rule.arrays)
            inputs, rest = list(args[:count]), args[count:]
            for i, (name, value) in enumerate(zip(rule.arrays, inputs)):
                if value.__class__ is not Variable:  # None only for clip's optional bounds
                    inputs[i] = self.array_input(name, value)
            for name in rule.arrays[len(inputs):]:  # array arguments given by keyword
                value = kwargs.pop(name, None)
                if value is not None:
                    if value.__class__ is not Variable:
                        value = self.array_input(name, value)
                    keyword_inputs[name] = value
                inputs.append(value)
        if len(rest) > len(rule.params) and rule.vjps is not None and not rule.sequence:
            raise TypeError(_positional_options(self.name, rule, len(rest)))
        if kwargs and self.reads is not None:  # refused before the backend's function runs
            recording = _state.enabled and any(
                v.__class__ is Variable and v._requires_grad for v in inputs)
            for key, value in kwargs.items():
                if key not in self.reads and (
                        recording or _standard_only(self.name, key, value) is not None):
                    raise self.unread_option(key, value)
        raw_inputs = [unwrap(v) for v in inputs]
        raw_rest = [unwrap(v) for v in rest]
        raw_kwargs = {k: unwrap(v) for k, v in kwargs.items()}
        try:
            if rule.sequence == "list":
                out = self.raw_function(raw_inputs, *raw_rest, **raw_kwargs)
            elif rule.vjps is None:
                out = self.raw_function(*[unwrap(a) for a in args], **raw_kwargs)
            elif rule.sequence == "varargs":
                out = self.raw_function(*raw_rest, *raw_inputs, **raw_kwargs)
            else:
                positional = len(args[:len(rule.arrays)])
                out = self.raw_function(*raw_inputs[:positional], *raw_rest, **raw_kwargs,
                                        **{k: unwrap(v) for k, v in keyword_inputs.items()})
        except Exception as exc:  # the backend's own error: say where it came from
            if hasattr(exc, "add_note"):  # Python 3.11+
                exc.add_note(f"(raised by backend {self.backend.name!r} in {self.name}(), given "
                             f"{_shapes(raw_inputs)}{_options_note(raw_rest, raw_kwargs)})")
            raise
        params = dict(zip(rule.params, raw_rest))
        params.update(raw_kwargs)
        for name, value in zip(rule.arrays, raw_inputs):
            if name in keyword_inputs or (rule.sequence is False and value is None):
                params[name] = value
        if params and self.reads is not None:
            params = self.options(params)
        return self.record(inputs, raw_inputs, out, params)

    def varargs(self, args):
        """The arrays and the options before them of a function taking ``*arrays`` (options
        given by position come first: ``einsum(subscripts, *operands)``), checked."""
        lead = len(self.rule.positional)
        for name, value in zip(self.rule.positional, args):
            if _array_like(value):
                raise TypeError(f"{self.name}() takes its option {name} first, then its arrays; "
                                f"got {_a(value)} for {name}")
        inputs = list(args[lead:])
        for k, value in enumerate(inputs):
            if value.__class__ is not Variable:
                inputs[k] = self.array_input(f"arrays[{k}]", value)
        return inputs, args[:lead]

    def arrays(self, arrays):
        """The arrays of ``stack(arrays)`` or ``concat(arrays)`` as a list, checked."""
        if arrays is _MISSING:
            raise TypeError(f"{self.name}() missing its array argument arrays (a list or tuple "
                            "of arrays)")
        try:
            inputs = list(arrays)
        except TypeError:
            raise TypeError(f"{self.name}() takes a list or tuple of arrays, got "
                            f"{_a(arrays)}") from None
        for k, value in enumerate(inputs):
            if value.__class__ is not Variable:
                inputs[k] = self.array_input(f"arrays[{k}]", value)
        return inputs


_MISSING = object()
_ARRAYS_ONLY_FUNCTIONS = frozenset((*_standard.LINEAR_ALGEBRA, *_standard.INDEXING,
                                    *_standard.FUNCTION_FAMILIES["linalg"],
                                    *_standard.FUNCTION_FAMILIES["fft"]))
_OPTIONAL_ARRAYS = frozenset({"min", "max"})  # clip(x, None, 1.0): the standard's defaults
_HARMLESS = frozenset({"dtype", "copy", "device", "stream"})  # no effect on a gradient's value


def _options_read(rule):
    """The options whose effect a rule's VJPs and JVPs see (None: every option)."""
    if rule is None or rule.vjps is None:
        return None
    names = set(rule.params) | set(rule.arrays) | _HARMLESS
    for keywords in (*rule.keywords, *rule.jvp_keywords):
        if keywords is None:
            return None
        names.update(keywords)
    return frozenset(names)


def _unknown_shape(name, backend, out):
    return GradientError(
        f"{name} on backend {backend.name!r} gives an output of unknown shape "
        f"{tuple(out.shape)} (a data-dependent shape, which this backend cannot provide), so "
        "no gradient can flow through it. Detach its input, or make the shape known first "
        "(dask: .compute_chunk_sizes()).")


def _array_like(value) -> bool:
    """Whether an array argument can be taken as an array: a number, a (nested) sequence, an
    array of a backend, or an object offering an array protocol."""
    if isinstance(value, (Variable, bool, int, float, complex, list, tuple)):
        return True
    if value is None or isinstance(value, (str, bytes, dict, set)):
        return False
    return registry.of(value) is not None or any(hasattr(value, a) for a in _ARRAY_PROTOCOLS)


def _a(value):
    """``a dict ({'a': 1})``, ``a mymodule.Thing``: what an argument is, for messages."""
    kind = type(value)
    if kind.__module__ == "builtins":
        return f"a {kind.__qualname__} ({value!r:.30})"
    return f"a {kind.__module__}.{kind.__qualname__}"


def _not_an_array(function, argument, value):
    if value is None:
        return TypeError(f"{function}(): its array argument {argument} is None")
    return TypeError(f"{function}(): its array argument {argument} is {_a(value)}, not an array"
                     ": pass an array, a Variable or a Python number")


def check_positional(name, limit, args, rule=None):
    """Refuse options given by position where the standard makes them keyword-only (else
    ``stack([a, b], 1)`` would stack on axis 1 and record axis 0), and anything but arrays
    where a function takes ``*arrays``."""
    if limit is not None and len(args) > limit:
        keywords = sorted({k for ks in (rule.keywords if rule else ()) if ks for k in ks})
        raise TypeError(
            f"{name}() takes {limit} positional argument(s) in the Array API standard, got "
            f"{len(args)}: its other options are keyword-only; pass them by name" + (
                f" (such as {', '.join(k + '=...' for k in keywords)})." if keywords else "."))
    if name in _ARRAYS_ONLY:
        for value in args:
            if isinstance(value, (str, bytes, dict)) or value is None:
                raise TypeError(f"{name}() takes arrays by position, got {value!r}: pass its "
                                "options by name (meshgrid(x, y, indexing='ij'))")


_ARRAYS_ONLY = frozenset({"meshgrid", "broadcast_arrays"})


def _positional_options(name, rule, count):
    keywords = sorted({k for ks in rule.keywords if ks for k in ks})
    return (f"{name}() got {count} positional argument(s) after its array argument(s) "
            f"{', '.join(rule.arrays)}, but takes only {len(rule.params)}: the standard makes its "
            f"options keyword-only; pass them by name (such as "
            f"{', '.join(k + '=...' for k in keywords) or 'axis=...'}).")


def _shape(value):
    return tuple(value.shape) if hasattr(value, "shape") else ()


def _shapes(values):
    shapes = [str(tuple(v.shape)) if hasattr(v, "shape") else _a(v) for v in values]
    return f"arrays of shape {', '.join(shapes)}" if shapes else "no arrays"


def _options_note(rest, kwargs):
    options = [f"{v!r:.30}" for v in rest] + [f"{k}={v!r:.30}" for k, v in kwargs.items()]
    return f" and options {', '.join(options)}" if options else ""


def _describe(value):
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"a value of shape {tuple(value.shape)} and dtype {value.dtype}"
    return _a(value)


def _pack(out, results):
    if hasattr(out, "_fields"):  # a named tuple such as eigh's or svd's
        return type(out)(*results)
    return type(out)(results) if isinstance(out, (tuple, list)) else results


_OPTION_TYPES = frozenset((bool, int, float, str, type(None)))
# A library's option refused even where nothing is recorded, but for the value the standard
# implies, with what to do instead: with compute_uv=False, array-api-compat's NumPy svd unpacks
# the singular values into U, S and Vh (when there are three) or fails.
_STANDARD_ONLY = {
    ("linalg.svd", "compute_uv"): (True, "For the singular values alone, call "
                                         "linalg.svdvals(x), which has a gradient."),
}


def _standard_only(name, key, value):
    """What to do instead where ``value`` of a library's option ``key`` changes what ``name``
    returns, refused even where nothing is recorded; None for any other option or value."""
    accepted, instead = _STANDARD_ONLY.get((name, key), (value, None))
    return None if accepted is value else instead


def _plain_options(args, kwargs, reads) -> bool:
    """Whether every option is a plain Python value (``axis=(0, 1)``, ``keepdims=True``), and
    every keyword one the rule reads (``reads``; None: any), so that the fast path may pass them
    on unchanged. Anything else takes the general path, which checks it."""
    if reads is not None and not kwargs.keys() <= reads:
        return False
    return _plain_values(kwargs.values()) and (not args or _plain_values(args))


def _plain_values(values) -> bool:
    for value in values:
        kind = value.__class__
        if kind is tuple:
            for item in value:
                if item.__class__ is not int:
                    return False
        elif kind not in _OPTION_TYPES:
            return False
    return True


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
        ns.__array_namespace_info__ = _namespace_info(backend, raw.__array_namespace_info__)
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
            recorder = recorders[name] = _Recorder(backend, name, raw_function, rule)
            function = _calling(recorder)
            if name in _VIEW_FUNCTIONS:
                function = _viewing(function, _VIEW_FUNCTIONS[name])
            if name in REAL_CONSTANT:  # sign: recorded for complex arguments only
                function = _unless_complex(function, _plain(backend, name, raw_function))
        _install(ns, name, function, raw_function)
    _install_specials(ns, backend, recorders)
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
        if x.__class__ is Variable and result.__class__ is Variable and (
                _views.is_view(result._values, x._values)):
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


def _namespace_info(backend, raw_info):
    """The backend's ``__array_namespace_info__``, whose ``capabilities()`` also say what the
    plugin declared: libraries (array-api-extra's ``apply_where``) choose a path without
    boolean masks from it, on dask, where shapes that depend on data are unknown."""

    class Info:
        def __init__(self):
            self._raw = raw_info()

        def __getattr__(self, name):
            return getattr(self._raw, name)

        def capabilities(self):
            answer = dict(self._raw.capabilities())
            if not backend.capabilities()["data_dependent_shapes"]:
                answer.update({"boolean indexing": False, "data-dependent shapes": False})
            return answer

    Info.__name__ = Info.__qualname__ = "__array_namespace_info__"
    return Info


def _build_special(backend):
    """The differentiable ``special`` namespace of ``backend``, from its plugin's raw special
    functions (SciPy's names), or None where it has none."""
    raw_special = backend.raw_special
    if raw_special is None:
        return None
    special = Namespace(f"arraygrad[{backend.name}].special", backend)
    for name, rule in SPECIAL.items():
        raw_function = getattr(raw_special, name, None)
        if raw_function is not None:
            recorder = _Recorder(backend, rule.name, raw_function, rule)
            function = _calling(recorder)
            function.__name__ = function.__qualname__ = name
            function.__doc__ = getattr(raw_function, "__doc__", None)
            setattr(special, name, function)
    return special


def _calling(recorder):
    """The recorder as a plain function, to take the backend function's name and docs."""
    def function(*args, **kwargs):
        return recorder(*args, **kwargs)
    return function


def _install(ns, name, function, raw_function):
    # Docs and signature (through __wrapped__) are the backend's own function's.
    functools.update_wrapper(function, raw_function, assigned=("__doc__",), updated=())
    # The standard's name, which errors quote (NumPy's atan2 is named arctan2).
    function.__name__ = function.__qualname__ = name.rsplit(".", 1)[-1]
    if "." in name:
        extension, short = name.split(".")
        setattr(getattr(ns, extension), short, function)
    else:
        setattr(ns, name, function)


def _holds_variables(obj) -> bool:
    return any(isinstance(part, Variable) or (isinstance(part, (list, tuple))
                                              and _holds_variables(part)) for part in obj)


def _install_specials(ns, backend, recorders):
    """``asarray`` keeps Variables in the graph; indexing and ``to_device`` are recorded."""
    raw = backend.raw
    raw_asarray = raw.asarray
    astype = getattr(ns, "astype", None)
    unwrap = _Recorder(backend, "asarray", raw_asarray, None).unwrap
    copy_of = _Recorder(backend, "asarray", lambda x: raw_asarray(x, copy=True), RULES["copy"])

    def asarray(obj, /, *, dtype=None, device=None, copy=None):
        # Code written against the standard often starts with x = xp.asarray(x): keep x's graph.
        if isinstance(obj, Variable):
            if obj._backend is not backend:
                raise mixed_backends(backend, obj._backend, "asarray")
            result = obj
            if dtype is not None and dtype != obj.dtype:
                result = astype(result, dtype)
            elif copy:
                result = copy_of(result)
            if device is not None:
                result = result.to_device(device)
            return result
        if isinstance(obj, (list, tuple)) and _holds_variables(obj):
            return _stack_nested(obj, dtype, device)
        return _make(backend.coerce(raw_asarray(unwrap(obj), dtype=dtype, device=device, copy=copy)),
                     backend, None, 0, False)

    def _stack_nested(obj, dtype, device):
        # xp.asarray([a, b]) of Variables: stacked, so the graph is kept (never an object array).
        parts = [asarray(part, device=device) for part in obj]
        if dtype is None:
            dtype = raw.result_type(*[part.data for part in parts])
        return ns.stack([asarray(part, dtype=dtype) for part in parts])

    ns.asarray = asarray
    raw_from_dlpack = getattr(ns, "from_dlpack", None)

    def from_dlpack(x, /, **options):
        # A Variable of this backend: asarray's (its graph kept); of another, its data would
        # leave the graph, so only a constant may go (as Variable.__dlpack__ says).
        if isinstance(x, Variable) and x._backend is backend and not options:
            return asarray(x)
        if isinstance(x, Variable):
            x.__dlpack__()  # refuses where x requires grad
            x = x.data
        return raw_from_dlpack(x, **options)

    if raw_from_dlpack is not None:
        ns.from_dlpack = from_dlpack
    getitem = _Recorder(backend, "__getitem__", backend.get_index, RULES["getitem"])

    def _getitem(x, key):
        if key.__class__ is list or key.__class__ is tuple and list in map(type, key):
            key = _list_key(key)
        return getitem(x, key=key)

    def _list_key(key):
        # NumPy reads a list in a key as an integer (or boolean) array: make it one, so that
        # the rule sees an array and adds the gradients of a repeated index (x[[0, 0, 1]]).
        if isinstance(key, tuple):
            return tuple(_list_key(part) if part.__class__ is list else part for part in key)
        index = raw_asarray(unwrap(key))
        if index.size == 0:  # [] selects nothing, as NumPy's integer []
            index = raw_asarray(unwrap(key), dtype=raw.int64)
        return index

    def raw_setitem(x, value, key, owned=False):
        if _writes_nothing(x, value, key):  # x as it is, shared: nothing ever writes into an
            return x  # array that two Variables hold (below)
        if not owned:  # copy-on-write: whatever holds x keeps its value
            x = raw_asarray(x, copy=True)
        try:
            return backend.set_index(x, key, value)
        except (TypeError, ValueError) as exc:  # NumPy's "setting an array element with a..."
            kind = TypeError if isinstance(exc, TypeError) else ValueError
            raise kind(
                f"__setitem__: cannot assign {_describe(value)} to x[{key!r:.40}] of a Variable "
                f"of shape {tuple(x.shape)} and dtype {x.dtype} ({type(exc).__name__}: "
                f"{exc})") from exc

    def _writes_nothing(x, value, key):
        # A mask with no True, and a number NumPy would take into x (it refuses NaN into
        # integers, a complex into reals, an int beyond float64 even where nothing is written)
        kind = value.__class__
        if not (kind is float or kind in (int, bool) and -_EXACT_INT <= value <= _EXACT_INT
                or kind is complex and raw.isdtype(x.dtype, "complex floating")):
            return False
        return backend.is_inexact(x.dtype) and selects_nothing(raw, key, x.shape)

    setitem = _Recorder(backend, "__setitem__", raw_setitem, RULES["setitem"])
    keeps_x = any(kind == "inputs" or kind == "input" and index == 0
                  for kind, index in setitem.rule.sources)

    def _setitem(x, key, value, owned=False):
        """``x[key] = value``, recorded; into ``x``'s own array where the caller ``owned`` it
        (nothing else holds it) and the setitem rule does not save it."""
        if key.__class__ is list or key.__class__ is tuple and list in map(type, key):
            key = _list_key(key)  # as in _getitem: the rule sees repeated positions
        return setitem(x, value, key=key, owned=owned and not keeps_x)

    to_device = _Recorder(backend, "to_device", raw_to_device, RULES["to_device"])

    def _to_device(x, device, stream):
        return to_device(x, device=device, stream=stream)

    ns._getitem = _getitem
    ns._setitem = _setitem
    ns._to_device = _to_device
    for recorder in (getitem, setitem, to_device):
        recorder.reads = None  # called here with the options their rules read, nothing else
    recorders.update(getitem=getitem, setitem=setitem, to_device=to_device)
    backend.recorders = recorders  # the forward mode applies linear functions to tangents


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
            recorder = table[name] = _Recorder(backend, name, raw_function, recorders[name].rule)
            table["r" + name] = lambda a, b, recorder=recorder: recorder(b, a)
        else:
            plain = _plain(backend, name, raw_function)
            table[name] = plain
            table["r" + name] = lambda a, b, plain=plain: plain(b, a)
    for dunder, name in _UNARY_OPERATORS.items():
        if name in vars(ns):  # a backend may lack some functions
            table[name] = getattr(ns, name)
    return table


# The array dtypes a Python scalar may meet in an operator, by the standard's type promotion
# ("Mixing arrays with Python scalars"): it takes the array's dtype.
_SCALAR_MEETS = {bool: "bool", int: ("integral", "real floating", "complex floating"),
                 float: ("real floating", "complex floating"), complex: "complex floating"}


def _scalar_operand(raw, raw_function, raw_operator):
    """``raw_function(a, b)`` for a namespace older than the standard's 2024.12, whose functions
    take arrays only: a Python scalar operand becomes a 0-d array of the other's dtype, as the
    standard's operators take it. A mix the standard leaves to the library (an integer array
    and a float) is the library's own operator's."""
    asarray, isdtype = raw.asarray, raw.isdtype

    def function(a, b):
        first = a.__class__ in _NUMBERS
        scalar, array = (a, b) if first else (b, a)
        if scalar.__class__ not in _NUMBERS or array.__class__ in _NUMBERS:
            return raw_function(a, b)
        if not isdtype(array.dtype, _SCALAR_MEETS[scalar.__class__]):
            return raw_operator(a, b)
        device = getattr(array, "device", None)
        scalar = (asarray(scalar, dtype=array.dtype) if device is None else
                  asarray(scalar, dtype=array.dtype, device=device))
        return raw_function(scalar, b) if first else raw_function(a, scalar)

    return function


Backend.namespace_factory = build_namespace  # backends build their namespace through it
