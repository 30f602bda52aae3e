"""Build arraygrad's engine (``../arraygrad/_engine.py``, unchanged) as a Cython extension.

The source is copied into ``build/`` at build time and its SHA-256 recorded, so that arraygrad
uses the extension only while its own ``_engine.py`` is the one compiled here (an edited
checkout falls back to the source, with a warning that says to rebuild)."""

import hashlib
import os
import shutil
from pathlib import Path

import Cython
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "arraygrad" / "_engine.py"

if not SOURCE.is_file():
    raise SystemExit(f"arraygrad-speedups is built from arraygrad's source tree: {SOURCE} is "
                     "missing. Build it from a checkout of arraygrad: pip install ./speedups")
# Compiled from build/source/arraygrad/_engine.py, which tracebacks call arraygrad/_engine.py
# (Python finds that on sys.path to show its lines). Outside the package: not installed.
COPY = HERE / "build" / "source" / "arraygrad" / "_engine.py"
COPY.parent.mkdir(parents=True, exist_ok=True)
(COPY.parent / "__init__.py").write_text("")
shutil.copyfile(SOURCE, COPY)
(HERE / "arraygrad_speedups" / "_build.py").write_text(
    '"""Written by setup.py: what this extension was built from."""\n\n'
    f'SOURCE_SHA256 = "{hashlib.sha256(SOURCE.read_bytes()).hexdigest()}"\n'
    f'CYTHON = "{Cython.__version__}"\n')


class BuildInPackage(build_ext):
    """Compile the module under its real name, ``arraygrad._engine`` (what its classes and
    tracebacks say), into this package rather than arraygrad's."""

    def get_ext_fullpath(self, ext_name):
        return super().get_ext_fullpath(ext_name.replace("arraygrad.", "arraygrad_speedups.", 1))


os.chdir(COPY.parent.parent)  # so that the compiled module calls its file arraygrad/_engine.py
try:
    (engine,) = cythonize([Extension("arraygrad._engine", ["arraygrad/_engine.py"])],
                          compiler_directives={"language_level": 3}, quiet=True)
finally:
    os.chdir(HERE)
engine.sources = [str(COPY.parent.parent / source) for source in engine.sources]
setup(ext_modules=[engine], cmdclass={"build_ext": BuildInPackage})
