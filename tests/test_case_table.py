"""The rule for case authors (docs/conformance.md), checked on the case table: every option of
every differentiable function is exercised, parameters are not their own inverse, matrices are
rectangular where allowed, complex inputs wherever accepted, conventions declared at ties."""

import collections
import functools
import inspect

import array_api_compat.numpy as compat
import array_api_strict as strict
import numpy as np
import pytest

from arraygrad.conformance import cases
from arraygrad.rules import OUTSIDE_STANDARD, RULES

# Options no gradient depends on.
UNCHECKED_OPTIONS = {"astype": {"device"}}
# Functions the standard defines for real inputs only.
REAL_ONLY = {"atan2", "copysign", "hypot", "logaddexp", "maximum", "minimum", "remainder",
             "nextafter",
             "clip", "max", "min", "var", "std", "sort", "linalg.cross", "cumulative_prod",
             "fft.rfft", "fft.rfftn", "fft.ihfft", "astype", "to_device", "unique_values",
             "unique_all", "unique_counts", "unique_inverse",
             # outside the standard: shifted by a max (no order on complex), or real (xlogy's
             # as SciPy's and torch's); sinc as NumPy's, checked on reals
             "logsumexp", "softmax", "log_softmax", "sinc", "xlogy"}
RECTANGULAR = {"linalg.svd", "linalg.qr", "linalg.pinv", "linalg.svdvals", "linalg.matrix_norm",
               "linalg.trace", "linalg.diagonal", "matmul", "tril", "triu", "matrix_transpose"}
CONVENTIONS = {"max", "min", "maximum", "minimum", "abs", "sort", "clip", "nextafter"}


class _Spy:
    """array_api_strict, recording each call of a function as (name, args, kwargs); with the
    functions outside the standard that arraygrad makes of the standard's (``logsumexp``), as
    the differentiable namespace has them (cases.py's ``_outside`` then calls them by name)."""

    offers_outside_standard = True

    def __init__(self, module, log, prefix=""):
        self._module, self._log, self._prefix = module, log, prefix

    def __getattr__(self, name):
        forward = getattr(RULES.get(name), "forward", None) if not self._prefix else None
        value = getattr(self._module, name) if forward is None else functools.partial(
            forward, self._module)
        if name in ("linalg", "fft") and not self._prefix:
            return _Spy(value, self._log, f"{name}.")
        if not callable(value) or isinstance(value, type):
            return value

        def call(*args, **kwargs):
            self._log.append((self._prefix + name, args, kwargs))
            return value(*args, **kwargs)
        return call


@pytest.fixture(scope="module")
def calls():
    """``{op: [(case, args, kwargs)]}``: how each case calls its own op, set up only through
    the standard (array_api_strict refuses anything else; NumPy's namespace for a function
    outside the standard, which array_api_strict lacks)."""
    found = collections.defaultdict(list)
    for case in cases.CASES:
        if case.behaviour is not None or case.op.startswith("special."):
            continue  # the engine's behaviour; SciPy's functions, not the standard's
        rng = np.random.default_rng(0)
        host = [cases.draw(arg, case.dtypes[0], rng) for arg in case.args]
        log = []
        module = compat if case.outside_standard else strict
        case.call(_Spy(module, log), *[module.asarray(h) for h in host])
        for name, args, kwargs in log:
            if name == case.op:
                found[case.op].append((case, args, kwargs))
    return found


def _standard_function(op):
    function = strict
    for part in op.split("."):
        function = getattr(function, part)
    return function


def _options(op):
    """The options of ``op``: those with a default in the standard's signature; outside the
    standard, those its rule reads by keyword."""
    if op in OUTSIDE_STANDARD:
        rule = RULES[op]
        return {k for ks in (*rule.keywords, *rule.jvp_keywords) for k in ks or ()} - set(
            rule.positional)
    parameters = inspect.signature(_standard_function(op)).parameters.values()
    return {p.name for p in parameters if p.default is not inspect.Parameter.empty}


def test_every_option_of_every_differentiable_function_is_exercised(calls):
    unexercised = {}
    for op in RULES:
        if op in ("getitem", "setitem", "to_device", "copy"):
            continue  # operators and methods: their variants are listed by hand
        options = _options(op)
        used = {k for _, _, kwargs in calls[op] for k in kwargs}
        missing = options - used - UNCHECKED_OPTIONS.get(op, set())
        if missing:
            unexercised[op] = sorted(missing)
    assert not unexercised


def test_shifts_and_permutations_are_not_their_own_inverse(calls):
    for case, (x, shift), kwargs in calls["roll"]:
        axes = kwargs.get("axis")
        shifts = shift if isinstance(shift, tuple) else (shift,)
        axes = axes if isinstance(axes, tuple) else (axes,)
        for s, axis in zip(shifts, axes):
            n = x.size if axis is None else x.shape[axis]
            assert (2 * s) % n != 0, f"{case.id}: a shift of {s} on a length {n} is -{s}"
    for op in ("permute_dims", "moveaxis"):
        assert any(_not_an_involution(op, x, args, kwargs) for _, (x, *args), kwargs in calls[op])


def _not_an_involution(op, x, args, kwargs):
    if op == "permute_dims":
        order = tuple(args[0] if args else kwargs["axes"])
    else:  # the permutation of the axes moveaxis makes: distinct sizes name the axes
        order = tuple(size - 2 for size in np.moveaxis(np.empty(tuple(range(2, 2 + x.ndim))),
                                                       *args).shape)
    return any(order[order[i]] != i for i in range(len(order)))


def test_matrix_functions_see_rectangular_matrices(calls):
    square_only = [op for op in RECTANGULAR
                   if all(x.shape[-1] == x.shape[-2] for _, (x, *_), _ in calls[op])]
    assert not square_only


def test_complex_inputs_for_every_function_that_accepts_them():
    covered = {c.op for c in cases.CASES if "complex128" in c.dtypes
               or any(arg.domain == "complex" for arg in c.args)}
    covered |= {f"linalg.{op}" for op in covered}  # linalg.matmul is matmul
    missing = set(RULES) - covered - REAL_ONLY
    assert not missing, sorted(missing)


def test_ties_and_zeros_follow_a_declared_convention():
    declared = {c.op for c in cases.CASES if c.convention is not None}
    assert CONVENTIONS <= declared


def test_engine_behaviour_is_a_family_of_cases():
    behaviours = {c.op for c in cases.CASES if c.behaviour is not None}
    assert {"autograd.accumulate", "autograd.retain_graph", "autograd.hooks_leaf_order",
            "autograd.hooks_nonleaf", "autograd.create_graph",
            "autograd.saved_released"} <= behaviours
