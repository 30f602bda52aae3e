"""The optional compiled engine (``pip install ./speedups``): used only when it was built from
this very ``_engine.py``, for this Python, by a Cython whose functions hold their arguments'
references (the reuse checks count them); otherwise refused with a warning that says why and
what to do. The pure-Python engine stays tested either way."""

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import arraygrad
from arraygrad import _engine, _speedups

ROOT = Path(__file__).resolve().parent.parent
SOURCE_SHA256 = hashlib.sha256((ROOT / "arraygrad" / "_engine.py").read_bytes()).hexdigest()
compiled = pytest.mark.skipif(
    not _speedups.ENGINE.startswith("compiled"),
    reason="the compiled engine is not in use (install it: pip install ./speedups); the "
    "pure-Python engine runs, and the rest of the suite tests it")

REPORT = ("import arraygrad, arraygrad._engine as e, arraygrad._speedups as s\n"
          "print(s.ENGINE); print(e.__file__)\n"
          "xp = arraygrad.namespace('numpy'); x = arraygrad.Variable([0.5, 2.0], "
          "requires_grad=True)\n(xp.sum(xp.sin(x) * x)).backward()\n"
          "print(*x.grad.data.tolist())")


def _run(code, env_extra=(), path=None):
    env = {k: v for k, v in os.environ.items() if k != "ARRAYGRAD_PURE_PYTHON"}
    env.update(env_extra)
    if path is not None:  # a stand-in build of arraygrad_speedups, found before any installed
        env["PYTHONPATH"] = os.pathsep.join([str(path), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines(), done.stderr


def _build(tmp_path, sha256=SOURCE_SHA256, cython="3.3.1", extension="garbage"):
    """An arraygrad_speedups package as setup.py writes it, with what the test chooses."""
    package = tmp_path / "arraygrad_speedups"
    package.mkdir()
    path = None
    if extension is not None:
        path = package / "_engine.so"
        path.write_bytes(b"not an extension" if extension == "garbage" else extension)
    found = "None" if path is None else f"Path({str(path)!r})"
    (package / "__init__.py").write_text(textwrap.dedent(f"""
        from pathlib import Path
        SOURCE_SHA256, CYTHON = {sha256!r}, {cython!r}
        def extension_path():
            return {found}
        """))
    return tmp_path


def _expected_gradient():
    import math
    return [math.cos(v) * v + math.sin(v) for v in (0.5, 2.0)]


@compiled
def test_the_compiled_engine_runs_when_installed_and_built_from_this_source():
    import arraygrad_speedups

    assert Path(_engine.__file__) == arraygrad_speedups.extension_path()
    assert not _engine.__file__.endswith(".py")
    assert _engine.__name__ == "arraygrad._engine" and _engine.Node.__module__ == _engine.__name__
    assert arraygrad_speedups.SOURCE_SHA256 == SOURCE_SHA256


@compiled
def test_the_pure_python_engine_still_passes_the_engine_and_reuse_tests():
    """With the extension installed, ARRAYGRAD_PURE_PYTHON=1 runs the source: the tests of what
    the engine does (backward, memory reuse, the engine's behaviour, threads, custom rules) pass
    on it too; the rest of the suite runs compiled."""
    (engine, path, grad), _ = _run(REPORT, {"ARRAYGRAD_PURE_PYTHON": "1"})
    assert engine == "pure Python" and path.endswith("_engine.py")
    env = dict(os.environ, ARRAYGRAD_PURE_PYTHON="1")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_engine.py",
         "tests/test_reuse.py", "tests/test_behaviour.py", "tests/test_threads.py",
         "tests/test_custom_rules.py"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:]
    assert " passed" in done.stdout and " failed" not in done.stdout


@pytest.mark.parametrize("build, why", [
    (dict(sha256="0" * 64), "built from another version of"),
    (dict(cython="3.0.11"), "built by Cython 3.0.11, whose functions borrow"),
    (dict(extension=None), "holds no extension for this Python"),
    (dict(), "failed (ImportError"),  # right source and Cython, but not an extension
])
def test_an_unusable_build_is_refused_with_the_reason_and_the_source_runs(tmp_path, build, why):
    (engine, path, grad), stderr = _run(REPORT, path=_build(tmp_path, **build))
    assert engine == "pure Python" and path.endswith("_engine.py")
    assert [float(v) for v in grad.split()] == pytest.approx(_expected_gradient(), rel=1e-12)
    assert "RuntimeWarning: arraygrad-speedups is installed but not used" in stderr
    assert why in stderr and "pip install ./speedups" in stderr
    assert "ARRAYGRAD_PURE_PYTHON=1" in stderr


def test_arraygrad_pure_python_turns_the_extension_off_without_a_word(tmp_path):
    (engine, path, grad), stderr = _run(REPORT, {"ARRAYGRAD_PURE_PYTHON": "1"},
                                        path=_build(tmp_path, sha256="0" * 64))
    assert engine == "pure Python" and path.endswith("_engine.py")
    assert "arraygrad-speedups" not in stderr
    assert [float(v) for v in grad.split()] == pytest.approx(_expected_gradient(), rel=1e-12)


@pytest.mark.parametrize("text, version", [("3.3.1", (3, 3)), ("3.1.0b1", (3, 1)),
                                           ("3.0.11", (3, 0)), ("10.2", (10, 2)),
                                           ("nightly", (0, 0))])
def test_cython_versions_are_compared_as_numbers(text, version):
    assert _speedups._version(text) == version
    assert (_speedups._version(text) >= _speedups.MIN_CYTHON) == (version >= (3, 1))




@compiled
def test_a_traceback_through_the_compiled_engine_names_its_source_file():
    import traceback

    import numpy as np

    xp = arraygrad.namespace("numpy")
    x = arraygrad.Variable(np.ones(3), requires_grad=True)
    y = xp.sum(xp.sin(x))
    y.backward()
    with pytest.raises(arraygrad.BackwardError) as raised:
        y.backward()
    frames = traceback.extract_tb(raised.value.__traceback__)
    assert [frame.lineno for frame in frames if frame.filename == "arraygrad/_engine.py"]
