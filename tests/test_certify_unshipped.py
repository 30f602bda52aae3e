"""What got in the way of certifying libraries the repository does not ship, from the docs alone
(a distributed chunked library, an ONNX-backed one, an accelerator library's CPU build): a
crash blamed on a function the case never used, complex-input cases run where no complex dtype
is declared, a deviation reason over several lines cut to its last, arrays without ``.device``,
and a lazy library's error that shows only when a value is computed. Each backend here is a
throwaway plugin registered in-process."""

from __future__ import annotations

import array_api_compat.numpy as compat
import numpy as np
import pytest

import arraygrad as ag
from arraygrad.conformance import cli, known, preflight, report, runner
from test_certify import _spec_backend


def _one(backend, case_id, dtype="float64"):
    return runner.run_one(backend, runner.case(case_id), dtype, known={})


def _numpy_backend(name, array_type, overrides=None, **spec):
    """A backend over NumPy whose arrays are ``array_type`` (an ndarray subclass), with some
    functions of its namespace replaced (``None``: the library lacks it)."""

    def own(value):
        if isinstance(value, (tuple, list)):
            return type(value)(own(v) for v in value)
        if isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, array_type):
            return np.asarray(value).view(array_type)
        return value

    class Namespace:
        __name__ = name

        def __getattr__(self, attr):
            replaced = (overrides or {}).get(attr, compat)
            if replaced is None:
                raise AttributeError(f"module {name!r} has no attribute {attr!r}", name=attr,
                                     obj=self)
            value = getattr(compat, attr) if replaced is compat else replaced
            if callable(value) and not isinstance(value, type) and attr not in ("linalg", "fft"):
                return lambda *args, **kwargs: own(value(*args, **kwargs))
            return value

    return _spec_backend(name, Namespace(), (array_type,), **spec,
                         coerce=lambda a: None if isinstance(a, array_type) else own(a))


# ----------------------------------------------------------------- 1. the call a crash is blamed on
class NoDevice(np.ndarray):
    """Arrays without the standard's ``device`` attribute (an accelerator library's CPU build)."""

    @property
    def device(self):
        raise AttributeError(f"'{type(self).__name__}' object has no attribute 'device'")


class NoToDevice(np.ndarray):
    """Arrays without the standard's ``to_device`` method (torch's and dask's have none)."""

    @property
    def to_device(self):
        raise AttributeError(f"'{type(self).__name__}' object has no attribute 'to_device'")


def test_a_crash_is_blamed_on_no_function_the_case_did_not_call():
    """The library has no ``fft``, and the conformance code asks whether it has one
    (``getattr(xp, "fft", None)``) to tell a missing function from another AttributeError:
    that is no call of the case, and no cause of its crash."""
    backend = _numpy_backend("no_fft_no_device", NoDevice, {"fft": None, "hypot": None})
    result = _one(backend.name, "to_device[same]")
    status, detail, *_ = result.checks["run"]
    assert status == "fail" and detail.startswith(
        "crashed in the backend's own `to_device`: AttributeError: 'NoDevice' object has no "
        "attribute 'device'"), detail
    assert "fft" not in detail and result.cause is None
    # A function the case does call and the backend lacks is still the one named.
    assert _one(backend.name, "hypot[same]").cause == (
        "the case called `hypot`, which the backend lacks")
    # An AttributeError naming no object (a method's own) is a crash, not a function the
    # backend lacks, even where the backend lacks an extension.
    backend = _numpy_backend("no_fft_no_to_device", NoToDevice, {"fft": None})
    detail = _one(backend.name, "to_device[same]").checks["run"][1]
    assert detail.startswith("crashed in the backend's own `to_device`: AttributeError: "
                             "'NoToDevice' object has no attribute 'to_device'"), detail


# ------------------------------------------------------------ 2. complex inputs and declared dtypes
class RealOnly(np.ndarray):
    pass


def test_complex_input_cases_are_skipped_where_no_complex_dtype_is_declared():
    """conj[2d] is registered in float64 and float32 and runs on complex128 and complex64
    inputs: a backend declaring float64 and float32 alone does not run it, and says why."""
    backend = _numpy_backend("real_only", RealOnly, dtypes=("float32", "float64"))
    results = [_one(backend.name, "conj[2d]", dtype) for dtype in ("float64", "float32")]
    assert [r.status for r in results] == ["skip", "skip"]
    assert [next(iter(r.checks.values()))[1] for r in results] == [
        "the backend declares no complex128", "the backend declares no complex64"]
    assert dict(report.removed(results)[backend.name]) == {
        "the backend declares no complex128": 1, "the backend declares no complex64": 1}
    assert _one(backend.name, "sin[2d]").status == "pass"  # its real cases run


class NoComplexLibrary(np.ndarray):
    pass


def test_a_case_asking_for_an_undeclared_dtype_the_library_lacks_is_skipped():
    """An ONNX-backed library without complex dtypes has no ``xp.complex64``: a case that asks
    for it is not a missing function of the standard."""
    backend = _numpy_backend("no_complex_dtypes", NoComplexLibrary,
                             {"complex64": None, "complex128": None},
                             dtypes=("float32", "float64", "int64", "bool"))
    result = _one(backend.name, "astype[to_complex]", "float32")
    assert result.status == "skip", result.explain()
    assert next(iter(result.checks.values()))[1] == "the backend declares no complex64"


class AskedDtypes(np.ndarray):
    pass


def test_a_float32_run_asks_the_backend_for_complex64_not_complex128():
    asked = []

    def astype(x, dtype, /, **kwargs):
        asked.append(str(np.dtype(dtype)))
        return compat.astype(x, dtype, **kwargs)

    backend = _numpy_backend("asked_dtypes", AskedDtypes, {"astype": astype})
    assert _one(backend.name, "astype[to_complex]", "float32").status == "pass"
    assert "complex64" in asked and "complex128" not in asked, asked


# ------------------------------------------------------------- 3. a reason over several lines
def test_a_deviation_reason_over_consecutive_comment_lines_is_kept_whole():
    text = ("# Known failures of onnxlib (a header: a blank line ends it)\n"
            "\n"
            "# onnxruntime has no kernel for a complex input, so each complex case\n"
            "# fails in the library's own function\n"
            "#\n"
            "*[complex*\n"
            "# a reason of its own\n"
            "to_device[same] float64\n")
    complex_cases, to_device = known.parse(text, "onnxlib's deviations")
    assert complex_cases.reason == ("onnxruntime has no kernel for a complex input, so each "
                                    "complex case fails in the library's own function")
    assert to_device.reason == "a reason of its own"
    checks = known.apply({"run": ("fail", "crashed", None, None)}, "exp[complex]", "complex64",
                         [complex_cases])
    assert checks["run"][1].startswith(f"known deviation: {complex_cases.reason}; ")


# ----------------------------------------------------------------- 4. arrays without .device
def _boxed_backend(name, **spec):
    """A backend whose arrays are nobody's NumPy arrays (array-api-compat's included) and have
    no ``device`` attribute, as an ONNX-backed library's: NumPy values in a box of their own."""

    class Box:
        __slots__ = ("value",)
        __hash__ = None

        def __init__(self, value):
            self.value = np.asarray(value)

        shape = property(lambda self: self.value.shape)
        dtype = property(lambda self: self.value.dtype)
        ndim = property(lambda self: self.value.ndim)
        size = property(lambda self: self.value.size)
        mT = property(lambda self: Box(np.swapaxes(self.value, -1, -2)))

        def __array__(self, dtype=None, copy=None):
            return self.value

        def __setitem__(self, key, value):
            self.value[unbox(key)] = unbox(value)

    def box(value):
        if isinstance(value, (tuple, list)):
            return type(value)(box(v) for v in value)
        return Box(value) if isinstance(value, (np.ndarray, np.generic)) else value

    def unbox(value):
        if isinstance(value, (tuple, list)):
            return type(value)(unbox(v) for v in value)
        return value.value if isinstance(value, Box) else value

    def method(name):
        return lambda self, *args: box(getattr(self.value, name)(*unbox(args)))

    for operator in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
                     "or", "xor"):
        for name_ in (f"__{operator}__", f"__r{operator}__"):
            setattr(Box, name_, method(name_))
    for name_ in ("__neg__", "__pos__", "__abs__", "__invert__", "__eq__", "__ne__", "__lt__",
                  "__le__", "__gt__", "__ge__", "__getitem__", "__float__", "__int__",
                  "__bool__", "__complex__", "__index__", "__len__"):
        setattr(Box, name_, method(name_))

    class Namespace:
        __name__ = name

        def __getattr__(self, attr):
            value = getattr(compat, attr)
            if callable(value) and not isinstance(value, type) and attr not in ("linalg", "fft"):
                return lambda *args, **kwargs: box(value(*unbox(args), **{
                    key: unbox(v) for key, v in kwargs.items()}))
            return value

    return _spec_backend(name, Namespace(), (Box,), **spec)


def test_arrays_without_device_are_reported_by_the_preflight_with_what_to_declare(capsys):
    backend = _boxed_backend("boxed_no_device")
    found = preflight.check(backend, runner.select("sin[2d]"))
    (problem,) = found.problems
    assert "have no `device` attribute" in problem and "BackendSpec.device_of" in problem
    assert cli.main(["--backend", backend.name, "--preflight", "--op", "sin[2d]"]) == 1
    assert "BackendSpec.device_of" in capsys.readouterr().out
    # and each case's crash says what to declare
    detail = _one(backend.name, "sin[2d]").checks["run"][1]
    assert "has no `device` attribute (the standard's): give the backend's BackendSpec a " \
           "device_of" in detail, detail


DEVICES_ASKED = []


def device_of_box(array):
    """A ``device_of`` named as ``"module:function"``."""
    DEVICES_ASKED.append(type(array).__name__)
    return "cpu"


def test_device_of_answers_wherever_arraygrad_reads_a_device():
    backend = _boxed_backend("boxed_device_of", device_of=f"{__name__}:device_of_box")
    assert preflight.check(backend, runner.select("sin[2d]")).ok
    DEVICES_ASKED.clear()
    raw = backend.raw.asarray(np.ones((2, 3)))
    assert ag.Variable(raw).device == "cpu" and DEVICES_ASKED == ["Box"]
    # what rules pass as device= to make arrays beside an input (getitem's gradient, say)
    assert ag.rules.device_of(raw) == "cpu" and DEVICES_ASKED == ["Box", "Box"]
    for case_id in ("sin[2d]", "getitem[int_array]"):
        result = _one(backend.name, case_id)
        assert result.status == "pass", result.explain()


def test_device_of_must_be_a_function_or_module_function():
    with pytest.raises(TypeError, match="device_of must be a function or 'module:function'"):
        ag.BackendSpec(name="bad_device_of", arrays=("x:Y",), namespace="x", device_of="cpu")


# -------------------------------------------------------------- 6. errors a lazy library defers
class Deferred(np.ndarray):
    """A value a lazy library has not computed yet (a dask-like array)."""


class FailsWhenComputed(Deferred):
    """One whose computation fails (a worker's error): results made from it fail as well."""

    __array_priority__ = 10  # (NumPy gives a product of the two this type)


def _compute(array):
    if isinstance(array, FailsWhenComputed):
        raise RuntimeError("task ('cos-3f2a', 0, 0) failed on worker tcp://10.0.0.7")
    return np.asarray(array).view(np.ndarray)


def test_a_lazy_librarys_error_at_compute_is_blamed_on_the_call_that_made_the_value():
    def deferred_cos(x, /):
        return np.asarray(compat.cos(x)).view(FailsWhenComputed)  # raises only when computed

    backend = _numpy_backend("lazy_cos", Deferred, {"cos": deferred_cos}, to_numpy=_compute)
    result = _one(backend.name, "sin[2d]")
    status, detail, *_ = result.checks["run"]
    error = "RuntimeError: task ('cos-3f2a', 0, 0) failed on worker tcp://10.0.0.7"
    assert status == "fail" and detail.startswith(f"crashed in backward: {error}"), detail
    assert result.cause == (f"the `sin` rule (backward) called `cos`, which raised {error} "
                            "when its result was computed (to_numpy)")
    assert f"sin[2d] float64 run: {detail}" in report.text([result], {})

    # as an eager library's error is named
    def eager_cos(x, /):
        raise RuntimeError("task ('cos-3f2a', 0, 0) failed on worker tcp://10.0.0.7")

    eager = _numpy_backend("eager_cos", type("Eager", (np.ndarray,), {}), {"cos": eager_cos})
    assert _one(eager.name, "sin[2d]").cause == (
        f"the `sin` rule (backward) called `cos`, which raised {error}")
