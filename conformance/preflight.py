"""Checks before a run: what arraygrad needs of a backend beyond the functions each case calls,
found at once instead of one crash at a time. Which namespace functions each rule's VJPs and
JVPs call is read from their code (names they use, followed into the rules' helpers)."""

from __future__ import annotations

import collections
import dataclasses
import dis
import functools
import types

import numpy as np

import arraygrad as ag
from arraygrad import _standard, rules

ENGINE = ("asarray", "zeros", "zeros_like", "ones_like", "sum", "reshape", "broadcast_to",
          "real", "astype")
"""What backward itself calls around the rules (fitting gradients to inputs, zeros, seeds)."""

_TOP = set(_standard.FUNCTIONS) - {n for n in _standard.FUNCTIONS if "." in n}
_EXTENSIONS = {"linalg": set(_standard.LINALG), "fft": set(_standard.FFT)}


def _names(code, globals_, seen):
    """The standard's function names a code object (and the rule helpers it calls) reads as
    attributes (``xp.cumulative_prod``, ``xp.linalg.inv``)."""
    found = set()
    attributes, globals_used = set(), set()
    previous = None
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_ATTR", "LOAD_METHOD") and not (
                previous is not None and previous.opname == "LOAD_GLOBAL" and isinstance(
                    globals_.get(previous.argval), types.ModuleType)):  # math.prod is not xp's
            attributes.add(instruction.argval)
        elif instruction.opname == "LOAD_GLOBAL":
            globals_used.add(instruction.argval)
        previous = instruction
    for name in attributes:
        if name in _TOP:
            found.add(name)
        for extension, members in _EXTENSIONS.items():
            if extension in attributes and name in members and name not in _TOP:
                found.add(f"{extension}.{name}")
    for name in globals_used:
        helper = globals_.get(name)
        if isinstance(helper, types.FunctionType) and helper.__module__.startswith(
                "arraygrad.rules") and helper.__code__ not in seen:
            seen.add(helper.__code__)
            found |= _names(helper.__code__, helper.__globals__, seen)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names(const, globals_, seen)
    return found


@functools.lru_cache(maxsize=None)
def needs(op: str) -> frozenset:
    """The namespace functions the rule of ``op`` may call in backward and forward mode."""
    rule = rules.RULES.get(op)
    if rule is None:
        return frozenset()
    functions = [f for group in (rule.vjps or (), (rule.joint,),
                                 rule.jvps if isinstance(rule.jvps, tuple) else ())
                 for f in group if callable(f)]
    found = set()
    for function in functions:
        found |= _names(function.__code__, function.__globals__, set())
    return frozenset(found)


def _has(raw, name):
    owner, _, leaf = name.rpartition(".")
    namespace = getattr(raw, owner, None) if owner else raw
    return namespace is not None and hasattr(namespace, leaf)


@dataclasses.dataclass
class Report:
    """What the preflight found on one backend: problems each with what to do."""

    backend: str
    missing: dict  # function -> case ids whose rules call it
    problems: list  # sentences: what failed and what to declare

    @property
    def ok(self):
        return not self.missing and not self.problems

    def text(self, cases_shown=4) -> str:
        lines = [f"preflight of {self.backend}: " + ("nothing missing" if self.ok else
                                                      "what arraygrad needs that it lacks")]
        by_family = collections.defaultdict(list)
        for function, ids in sorted(self.missing.items()):
            by_family[_family(function)].append((function, ids))
        for family, entries in sorted(by_family.items()):
            lines.append(f"  {family}:")
            for function, ids in entries:
                shown = ", ".join(ids[:cases_shown]) + (
                    f" and {len(ids) - cases_shown} more" if len(ids) > cases_shown else "")
                lines.append(f"    `{function}` is missing, and arraygrad's rules call it: "
                             f"{len(ids)} case(s) will crash ({shown})")
        lines += [f"  {problem}" for problem in self.problems]
        return "\n".join(lines)

    def as_json(self) -> dict:
        return {"missing": self.missing, "problems": self.problems}


def _family(function):
    return next((f for f, names in _standard.FUNCTION_FAMILIES.items() if function in names),
                "other")


def check(backend, cases) -> Report:
    """Probe ``backend`` (a Backend) for what running ``cases`` will need."""
    raw = backend.raw
    missing = collections.defaultdict(list)
    for case in cases:
        if case.behaviour is not None or not _has_own(raw, case.op):
            continue  # the case's own function missing is reported by the case itself
        for function in sorted(needs(case.op) | set(ENGINE)):
            if not _has(raw, function):
                missing[function].append(case.id)
    problems = []
    for probe in (_to_numpy, _device, _dtypes, _item_assignment, _semantic_inputs):
        try:
            problems += probe(backend)
        except Exception as exc:  # the declaration itself raised (a capabilities function)
            problems.append(f"reading the declaration raised {type(exc).__name__}: {exc}")
    return Report(backend.name, dict(missing), problems)


def _has_own(raw, op):
    return op.startswith(("special.", "autograd.")) or _has(raw, op)


def _probe(backend, dtype="float64"):
    return backend.raw.asarray(np.array([1.5, -2.0, 3.0], dtype=dtype))


def _to_numpy(backend):
    try:
        host = np.asarray(backend.to_numpy(_probe(backend)))
        assert host.tolist() == [1.5, -2.0, 3.0], f"values {host.tolist()} for [1.5, -2.0, 3.0]"
    except Exception as exc:
        return [f"to_numpy fails: {type(exc).__name__}: {exc}. Declare BackendSpec.to_numpy: "
                "a function returning a host NumPy array of an array's values."]
    return []


def _device(backend):
    """Whether arraygrad can tell an array's device (``Variable.device``, which every case
    reads): the standard's ``array.device``, the plugin's ``device_of``, or array-api-compat's
    answer (dask's)."""
    array = _probe(backend)
    declared = backend.spec.device_of is not None
    try:
        if ag.Variable(array).device is not None or declared or hasattr(array, "device"):
            return []
    except Exception as exc:
        if declared:
            return [f"BackendSpec.device_of fails on a float64 array: {type(exc).__name__}: "
                    f"{exc}"]
    return [f"its arrays ({type(array).__name__}) have no `device` attribute (the standard's), "
            "which arraygrad reads in every case (Variable.device, the device of new arrays "
            "beside an input). Declare BackendSpec.device_of: a function (or "
            "'module:function') returning an array's device as the library's "
            "asarray(device=...) takes it, or None for its default device."]


def _dtypes(backend):
    failed = []
    for dtype in backend.dtypes:
        if dtype in ("float32", "float64", "complex64", "complex128"):
            try:
                _probe(backend, dtype)
            except Exception as exc:
                failed.append(f"{dtype} ({type(exc).__name__}: {exc})")
    if failed:
        return [f"asarray cannot make {'; '.join(failed)}. Declare the dtypes the library has: "
                f"BackendSpec(dtypes=...); the cases of the others are then not run, and the "
                "report says so."]
    return []


def _item_assignment(backend):
    if not backend.capabilities()["inplace"] and backend.spec.set_index is not None:
        return []
    try:
        array = _probe(backend)
        backend.set_index(array, slice(0, 1), backend.raw.asarray(np.array([0.0])))
    except Exception as exc:
        return [f"item assignment fails ({type(exc).__name__}: {exc}), and backward writes "
                "gradients of indexing into arrays it owns. Declare capabilities={'inplace': "
                "False} (in-place cases are then not run) and BackendSpec.set_index: a function "
                "(array, key, value) returning a new array with array[key] = value (JAX's "
                "array.at[key].set(value))."]
    return []


def _semantic_inputs(backend):
    problems = []
    for name, make in backend.spec.semantic_inputs.items():
        try:
            made = make(np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]]))
            backend.to_numpy(made)
        except Exception as exc:
            problems.append(f"semantic inputs {name!r} fail on a (2, 3) float64 array: "
                            f"{type(exc).__name__}: {exc}")
    return problems
