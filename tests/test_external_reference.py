"""The external reference (torch.autograd, jax.vjp) agrees with arraygrad's own reference, and
would catch a wrong arraygrad gradient."""

import subprocess
import sys
import zlib

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.conformance import cases, external, runner
from arraygrad.testing import random_like

LIBRARIES = ["torch", "jax"]
# real elementwise, matmul, complex (holomorphic and not), SVD (values and vectors)
CASE_IDS = ["sin[2d]", "matmul[2d]", "divide[complex]", "abs[2d]",
            "linalg.slogdet[complex,logabs]", "linalg.svd[3x3]", "linalg.svd[2x3,Vh]"]


def _inputs(case_id, seed=0):
    """A case, its float64/complex128 host inputs, cotangents and arraygrad's reference."""
    case = next((c for c in cases.CASES if c.id == case_id), None)
    assert case is not None, f"no conformance case {case_id}"
    dtype = "complex128" if "complex128" in case.dtypes else "float64"
    rng = np.random.default_rng(seed + zlib.crc32(case.id.encode()))
    host = [cases.draw(arg, dtype, rng) for arg in case.args]
    outs = case.call(ag.get_backend("numpy").ns, *[ag.Variable(np.array(h)) for h in host])
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    us = [random_like(rng, np.asarray(o.data)) for o in outs]
    return case, host, us, runner._reference()(case, host, us)


def _library(name):
    pytest.importorskip(name, reason=f"{name} is not installed")
    return name


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("case_id", CASE_IDS)
def test_external_gradients_agree_with_reference(library, case_id):
    case, host, us, expected = _inputs(case_id)
    got = external.gradients(case, host, us, library=_library(library))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case_id", ["copy[asarray]", "copy[complex,3x4]"])
def test_torch_keeps_an_asarray_copy_in_the_graph(case_id):
    """``asarray(x, copy=True) * f(x)``: arraygrad records the copy, so x gets both terms.
    torch.asarray keeps a tensor's graph only where ``requires_grad`` says so (its default
    before 2.13 cut it): the reference passes it."""
    case, host, us, expected = _inputs(case_id)
    got = external.gradients(case, host, us, library=_library("torch"))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)


def test_the_torch_reference_of_asarray_does_not_warn():
    """torch 2.13 warns, once per process, where asarray of a tensor leaves ``requires_grad``
    out: in a fresh process, as an error, the reference still computes."""
    _library("torch")
    code = ("import numpy as np\n"
            "from arraygrad.conformance import cases, external\n"
            "case = next(c for c in cases.CASES if c.id == 'copy[asarray]')\n"
            "external.gradients(case, [np.ones((3, 4))], [np.ones((3, 4))], library='torch')\n")
    done = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("case_id", ["sin[2d]", "divide[complex]", "linalg.svd[2x3,Vh]"])
def test_a_wrong_gradient_is_detected(library, case_id):
    """A negated (or conjugated, for complex inputs) gradient does not pass for the truth."""
    case, host, us, expected = _inputs(case_id)
    got = external.gradients(case, host, us, library=_library(library))
    wrong = [np.conj(e) if np.iscomplexobj(e) else -e for e in expected]
    assert not all(np.allclose(g, w, rtol=1e-6, atol=1e-8) for g, w in zip(got, wrong))


def test_the_default_library_and_availability():
    name = external.available()
    assert name in ("torch", "jax", None)
    if name is None:
        with pytest.raises(external.Unsupported):
            external.gradients(*_inputs("sin[2d]")[:3])
        return
    case, host, us, expected = _inputs("sin[2d]")
    np.testing.assert_allclose(external.gradients(case, host, us)[0], expected[0], rtol=1e-6)


def test_a_case_jax_cannot_run_is_unsupported_with_the_reason():
    _library("jax")
    case, host, us, _ = _inputs("setitem[slice]")
    with pytest.raises(external.Unsupported, match=r"^jax: TypeError: .*immutable"):
        external.gradients(case, host, us, library="jax")


def test_jax_float64_mode_is_not_switched_on_for_the_process():
    jax = pytest.importorskip("jax")
    before = jax.config.jax_enable_x64
    external.gradients(*_inputs("sin[2d]")[:3], library="jax")
    assert jax.config.jax_enable_x64 == before
