"""Every name of the standard is in the namespace, and every function is accounted for:
differentiable with a VJP and a JVP, or declared non-differentiable."""

import array_api_strict
import pytest

import arraygrad as ag
from arraygrad import _standard
from arraygrad.rules import (LINEAR, MULTILINEAR, NONDIFFERENTIABLE, OUTSIDE_STANDARD,
                             REAL_CONSTANT, RULES, TRANSPOSE)

REVISIONS = ["2024.12", "2025.12"]
# array-api-strict's own helpers, not names of the standard.
STRICT_EXTRAS = {"ArrayAPIStrictFlags", "Device", "ModuleType", "get_array_api_strict_flags",
                 "reset_array_api_strict_flags", "set_array_api_strict_flags"}
SPECIAL = {"asarray"}  # keeps Variables in the graph (astype or a copy when asked): see namespace


def _standard_names(revision):
    """The standard's names for ``revision``, from its reference implementation."""
    array_api_strict.set_array_api_strict_flags(api_version=revision)
    try:
        names = {n for n in dir(array_api_strict) if not n.startswith("_")} - STRICT_EXTRAS
        names -= {"linalg", "fft"}
        for extension in ("linalg", "fft"):
            module = getattr(array_api_strict, extension)
            names |= {f"{extension}.{n}" for n in module.__all__}
        return names
    finally:
        array_api_strict.reset_array_api_strict_flags()


@pytest.mark.parametrize("revision", REVISIONS)
def test_our_list_of_the_standard_is_complete(revision):
    ours = set(_standard.FUNCTIONS) | set(_standard.DTYPES) | set(_standard.CONSTANTS)
    missing = _standard_names(revision) - ours
    assert not missing


@pytest.mark.parametrize("backend_name", ["numpy", "array_api_strict"])
def test_every_name_is_present_in_the_namespace(backend_name):
    ns = ag.namespace(backend_name)
    for name in (*_standard.FUNCTIONS, *_standard.DTYPES, *_standard.CONSTANTS,
                 *_standard.INSPECTION):
        target = ns
        for part in name.split("."):
            target = getattr(target, part)
        assert target is not None or name == "newaxis", name


@pytest.mark.parametrize("backend_name", ["numpy", "array_api_strict"])
def test_functions_outside_the_standard_are_offered_where_the_backend_has_them(backend_name):
    ns, raw = ag.namespace(backend_name), ag.get_backend(backend_name).raw
    assert OUTSIDE_STANDARD and OUTSIDE_STANDARD <= set(RULES)
    assert not OUTSIDE_STANDARD & set(_standard.FUNCTIONS)
    for name in OUTSIDE_STANDARD:
        if hasattr(raw, name) or RULES[name].forward is not None:  # (made of the standard's)
            assert callable(getattr(ns, name)), name
        else:  # array_api_strict has no einsum: a missing name that says why
            with pytest.raises(AttributeError, match=rf"no '{name}': {name} is outside the "
                               rf"Array API standard.*{backend_name}'s does not"):
                getattr(ns, name)
    assert hasattr(ns, "einsum") == (backend_name == "numpy")
    assert all(hasattr(ns, name) for name in ("logsumexp", "softmax", "log_softmax", "sinc",
                                              "xlogy"))


def test_every_function_is_differentiable_or_declared_non_differentiable():
    unaccounted = [name for name in _standard.FUNCTIONS
                   if name not in RULES and name not in NONDIFFERENTIABLE
                   and name not in _standard.CONSTRUCTORS and name not in _standard.QUESTIONS
                   and name not in SPECIAL]
    assert not unaccounted
    both = [name for name in RULES if name in NONDIFFERENTIABLE]
    assert not both


def test_every_rule_has_a_vjp_and_a_jvp():
    for name, rule in RULES.items():
        if name in ("getitem", "setitem", "to_device"):
            continue  # operators and methods of the array object, checked the same way below
        assert rule.vjps or rule.joint, name
        assert rule.jvps in (LINEAR, TRANSPOSE, MULTILINEAR) or any(
            f is not None for f in rule.jvps), name
    for name in ("getitem", "setitem", "to_device"):
        assert RULES[name].jvps == LINEAR


def test_the_issue_s_non_differentiable_list():
    listed = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "floor",
              "ceil", "round", "trunc", "argmax", "argsort", "isnan", "bitwise_and",
              "bitwise_or", "bitwise_xor", "bitwise_invert", "bitwise_left_shift",
              "bitwise_right_shift", "logical_and", "logical_or", "logical_xor", "logical_not",
              "nonzero", "searchsorted", "count_nonzero", "linalg.matrix_rank"}
    assert listed <= NONDIFFERENTIABLE
    # sign is constant for real arguments only: z / |z| is smooth for complex z != 0.
    assert "sign" in REAL_CONSTANT and "sign" in RULES
    # The unique functions return values of their input: dropping their gradient silently would
    # break "record or refuse" (array-api-extra's union1d of floats), so each shares a value's
    # gradient among the equal elements, as max does among ties (their indices and counts are
    # integers, with none).
    assert {"unique_values", "unique_all", "unique_counts", "unique_inverse"} <= set(RULES)


def test_non_differentiable_results_never_require_grad(backend):
    import numpy as np

    xp = backend.xp
    x = backend.variable(np.array([0.5, -1.5, 2.5]))
    for result in (xp.floor(x), xp.sign(x), xp.argmax(x), xp.argsort(x), xp.isnan(x),
                   xp.count_nonzero(x), xp.searchsorted(xp.sort(x), x), xp.round(x)):
        assert isinstance(result, ag.Variable) and not result.requires_grad
