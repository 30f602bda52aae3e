"""arraygrad's backward engine compiled by Cython (``pip install ./speedups`` from a checkout).

Nothing to import by hand: ``import arraygrad`` loads the extension as ``arraygrad._engine``
when it was built from the installed arraygrad's own ``_engine.py`` (see ``arraygrad._speedups``).
"""

import importlib.machinery
from pathlib import Path

from ._build import CYTHON, SOURCE_SHA256  # noqa: F401  (written by setup.py)


def extension_path():
    """The compiled engine for this interpreter, or None if it was built for another one."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = Path(__file__).with_name("_engine" + suffix)
        if path.is_file():
            return path
    return None
