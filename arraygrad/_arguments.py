"""What the differentiable namespace's functions accept: each argument checked and made what
the rules expect (Variables unwrapped, Python numbers made arrays where the standard takes
arrays, a backend's integer scalars made Python ints, options the rule does not read refused),
with errors that name the function, the argument and what to do instead."""

from __future__ import annotations

import operator

from . import _grad_mode, _standard
from ._methods import OTHER_SPELLINGS
from ._plugins import registry
from ._variable import Variable
from .errors import BackendError

_SCALARS = (bool, int, float, complex, type(None))
_PASSED = frozenset((*_SCALARS, str, slice, type(Ellipsis)))
_NUMBERS = frozenset((bool, int, float, complex))
_EXACT_INT = 2**53  # every int up to it is a float64 as it is
_ARRAY_PROTOCOLS = ("__array__", "__array_namespace__", "__dlpack__", "__array_interface__")
_owners = registry._by_type  # {array type: its backend}, filled by registry.of
_state = _grad_mode.state


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


class Arguments:
    """The argument handling of a recorder (``_namespace._Recorder``, which subclasses it):
    its ``backend``, ``name``, ``rule``, ``reads`` and ``raw_function`` are the recorder's."""

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

    def checked_call(self, args, kwargs):
        """A call of any form: every argument checked, and made what the rule expects."""
        check_positional(self.name, self.positional, args, self.rule)
        rule = self.rule
        if kwargs:
            _refuse_other_spellings(self.name, self.reads, kwargs)
            _check_values(self.name, kwargs)
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


_OPTION_TYPES = frozenset((bool, int, float, str, type(None)))
# A library's option refused even where nothing is recorded, but for the value the standard
# implies, with what to do instead: with compute_uv=False, array-api-compat's NumPy svd unpacks
# the singular values into U, S and Vh (when there are three) or fails.
_STANDARD_ONLY = {
    ("linalg.svd", "compute_uv"): (True, "For the singular values alone, call "
                                         "linalg.svdvals(x), which has a gradient."),
}


# Options whose other values a backend may take as its own extension, returning something else
# (NumPy's qr: mode="r" gives R alone, "raw" LAPACK's reflectors; its pinv(hermitian=True) reads
# one triangle, which the rule does not model): only the standard's values are passed on.
_STANDARD_VALUES = {("linalg.qr", "mode"): ("reduced", "complete"),
                    ("linalg.pinv", "hermitian"): (False,)}
_VALUE_CHECKED = frozenset(key for _, key in _STANDARD_VALUES)


def _check_values(name, kwargs):
    for key, value in kwargs.items():
        allowed = _STANDARD_VALUES.get((name, key))
        if allowed is not None and value not in allowed:
            raise ValueError(
                f"{name}(): {key}={value!r} is not one of the standard's values "
                f"({', '.join(map(repr, allowed))}); a backend's own extension returns something "
                "else, which would be read as the standard's result")


def _standard_only(name, key, value):
    """What to do instead where ``value`` of a library's option ``key`` changes what ``name``
    returns, refused even where nothing is recorded; None for any other option or value."""
    accepted, instead = _STANDARD_ONLY.get((name, key), (value, None))
    return None if accepted is value else instead


def _plain_options(args, kwargs, reads) -> bool:
    """Whether every option is a plain Python value (``axis=(0, 1)``, ``keepdims=True``), and
    every keyword one the rule reads (``reads``; None: any), so that the fast path may pass them
    on unchanged. Anything else takes the general path, which checks it."""
    if kwargs and (reads is not None and not kwargs.keys() <= reads
                   or not _VALUE_CHECKED.isdisjoint(kwargs) or not _plain_values(kwargs.values())):
        return False
    return not args or _plain_values(args)


def _plain_values(values) -> bool:
    """Whether each value is a Python number, text, None, or an index made of Python integers
    (a slice, ``...``, or a tuple of those, None and integers: ``x[1:, None]``'s key)."""
    for value in values:
        kind = value.__class__
        if kind is tuple:
            for item in value:
                if item.__class__ is not int and not _plain_index(item):
                    return False
        elif kind not in _OPTION_TYPES and not _plain_index(value):
            return False
    return True


def _plain_index(value) -> bool:
    """Whether ``value`` is None, ``...``, or a slice of Python integers (or None)."""
    kind = value.__class__
    if kind is slice:
        start, stop, step = value.start, value.stop, value.step
        return ((start is None or start.__class__ is int)
                and (stop is None or stop.__class__ is int)
                and (step is None or step.__class__ is int))
    return value is None or value is Ellipsis


def _holds_variables(obj) -> bool:
    return any(isinstance(part, Variable) or (isinstance(part, (list, tuple))
                                              and _holds_variables(part)) for part in obj)


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
