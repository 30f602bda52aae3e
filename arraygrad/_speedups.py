"""The compiled engine: ``_engine.py`` built by Cython in the optional distribution
arraygrad-speedups (``pip install ./speedups`` from a checkout).

:func:`load` puts it in ``sys.modules`` as ``arraygrad._engine`` before anything imports the
engine, when it is installed, was built from this very ``_engine.py`` for this interpreter, by a
Cython whose functions hold a reference to each argument as Python's frames do (the reuse checks
count references: with fewer, arrays that others still hold would be overwritten), and
``ARRAYGRAD_PURE_PYTHON`` is not set. Otherwise the source runs, with a warning that says why
where the extension is there but cannot be used."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import warnings
from pathlib import Path

MIN_CYTHON = (3, 1)
"""Cython 3.1 made functions take their own reference to each argument (``__Pyx_ArgRef``)."""

ENGINE = "pure Python"
"""Which engine runs: ``"pure Python"``, or ``"compiled (arraygrad-speedups, Cython X)"``."""


def load() -> None:
    """Load the compiled engine in place of the source, if it may be used (see the module)."""
    global ENGINE
    if os.environ.get("ARRAYGRAD_PURE_PYTHON", "") not in ("", "0"):
        return
    if importlib.util.find_spec("arraygrad_speedups") is None:
        return
    problem, path = _unusable()
    if not problem:
        spec = importlib.util.spec_from_file_location("arraygrad._engine", path)
        try:
            module = sys.modules["arraygrad._engine"] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except Exception as error:  # a broken build: the source still runs
            sys.modules.pop("arraygrad._engine", None)
            problem = f"loading {path} failed ({type(error).__name__}: {error})"
    if problem:
        warnings.warn(f"arraygrad-speedups is installed but not used: {problem}. arraygrad "
                      "runs its pure-Python engine. Rebuild it from this checkout (pip install "
                      "./speedups), uninstall it, or set ARRAYGRAD_PURE_PYTHON=1.",
                      RuntimeWarning, stacklevel=3)
        return
    import arraygrad_speedups
    ENGINE = f"compiled (arraygrad-speedups, Cython {arraygrad_speedups.CYTHON})"


def _unusable():
    """``(why the installed extension cannot be used, or "", its path)``."""
    try:
        import arraygrad_speedups
        built_from, cython, path = (arraygrad_speedups.SOURCE_SHA256, arraygrad_speedups.CYTHON,
                                    arraygrad_speedups.extension_path())
    except (ImportError, AttributeError) as error:
        return f"it is incomplete ({error})", None
    if path is None:
        return f"it holds no extension for this Python ({sys.implementation.cache_tag})", None
    if _version(cython) < MIN_CYTHON:
        return (f"it was built by Cython {cython}, whose functions borrow their arguments' "
                f"references; arraygrad's reuse checks need Cython "
                f"{'.'.join(map(str, MIN_CYTHON))} or later"), None
    source = Path(__file__).with_name("_engine.py")
    if hashlib.sha256(source.read_bytes()).hexdigest() != built_from:
        return f"it was built from another version of {source}", None
    return "", path


def _version(text: str) -> tuple:
    found = re.match(r"(\d+)\.(\d+)", text)
    return (int(found[1]), int(found[2])) if found else (0, 0)
