"""Docs that run: every Python block of the README and of docs/, and every script in examples/
(at reduced size), executed as a user would."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


RUN_BLOCKS = """
import json, sys
blocks, name = json.loads(sys.stdin.read()), sys.argv[1]
namespace = {"__name__": "__docs__"}
for number, block in enumerate(blocks, 1):
    try:
        exec(compile(block, f"{name}, block {number}", "exec"), namespace)
    except ImportError as exc:  # an optional library the block shows
        print(f"{name} block {number} needs {exc.name}, which is not installed")
        sys.exit(3)
"""


@pytest.mark.parametrize("path", [p for p in DOCUMENTS if python_blocks(p)],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_python_blocks_run(path):
    """A document's blocks run in order in a fresh interpreter, as a reader would run them
    (a block may set up the environment before a library is first imported)."""
    done = subprocess.run([sys.executable, "-c", RUN_BLOCKS, path.name], cwd=ROOT, text=True,
                          input=json.dumps(python_blocks(path)), capture_output=True,
                          timeout=300)
    if done.returncode == 3:
        pytest.skip(done.stdout.strip())
    assert done.returncode == 0, f"{path.name}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script):
    env = {**os.environ, "ARRAYGRAD_EXAMPLES_SMALL": "1"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
