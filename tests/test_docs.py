"""Docs that run: every Python block of the README and of docs/, and every script in examples/
(at reduced size), executed as a user would."""

import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
TUTORIALS = sorted((ROOT / "examples" / "tutorials").glob("*.py"))
TUTORIAL_BACKENDS = ["numpy", "array_api_strict", pytest.param("torch", marks=pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed"))]
VERBATIM = sorted((ROOT / "examples" / "tutorials" / "verbatim").glob("*.py"))
PYTHON = ("python", "py", "python3")  # the info strings of a Python block
FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n`]*\n(.*?)^\1\2[ \t]*$",
                   re.M | re.S)


def fenced_blocks(path):
    """Every fenced block of a Markdown file as (language, code), code dedented by the fence's
    own indentation (a block inside a list item)."""
    return [(language.lower(), textwrap.dedent(code)) if indent else (language.lower(), code)
            for indent, _, language, code in FENCE.findall(path.read_text())]


def python_blocks(path):
    return [code for language, code in fenced_blocks(path) if language in PYTHON]


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


@pytest.mark.parametrize("number", range(1, len(python_blocks(ROOT / "README.md")) + 1))
def test_readme_blocks_stand_alone(number):
    """A reader copies one README block, not the page: each runs alone, with its imports."""
    block = python_blocks(ROOT / "README.md")[number - 1]
    done = subprocess.run([sys.executable, "-c", RUN_BLOCKS, "README.md"], cwd=ROOT, text=True,
                          input=json.dumps([block]), capture_output=True, timeout=300)
    if done.returncode == 3:
        pytest.skip(done.stdout.strip())
    assert done.returncode == 0, f"README.md block {number} alone:\n{done.stderr[-3000:]}"


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_python_hides_from_the_block_runner(path):
    """Every Python block is tagged ```python, so test_python_blocks_run runs it: a block with no
    language must not be Python (a diagram is not), and no other Python tag (```pycon,
    ```ipython, which this runner would skip) is used."""
    for language, code in fenced_blocks(path):
        if language in PYTHON:
            continue
        assert not language.startswith(("py", "ipy")), (
            f"{path.name}: a ```{language} block is not run; write it as ```python")
        if language:
            continue
        try:
            compile(code, path.name, "exec")
        except SyntaxError:
            continue
        raise AssertionError(f"{path.name}: an untagged block is Python, so it is not run; "
                             f"tag it ```python (or ```text):\n{code[:300]}")


def test_fences_are_found():
    """The fence pattern finds every block: as many as there are opening fences."""
    for path in DOCUMENTS:
        opening = 0
        inside = False
        for line in path.read_text().splitlines():
            if re.match(r"^[ \t]*(`{3,}|~{3,})", line):
                opening += not inside
                inside = not inside
        assert len(fenced_blocks(path)) == opening, path.name
    assert python_blocks(ROOT / "README.md"), "the README's Python blocks are not found"


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script):
    env = {**os.environ, "ARRAYGRAD_EXAMPLES_SMALL": "1"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.mark.parametrize("backend", TUTORIAL_BACKENDS)
@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_runs(script, backend):
    """The PyTorch tutorials' scripts run on each built-in backend and assert their values."""
    env = {**os.environ, "ARRAYGRAD_BACKEND": backend}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, (f"{script.name} on {backend} failed:\n{done.stdout[-3000:]}\n"
                                  f"{done.stderr[-3000:]}")
    assert f"on {backend}" in done.stdout.splitlines()[-1]  # it ran on the backend asked for


# What each verbatim tutorial prints (its values, as the tutorial shows them), and the error it
# ends with, if any.
VERBATIM_OUTPUT = {
    "01_autograd_blitz.py": ([r"grad_fn=<AddBackward>\)", r"^<AddBackward>$",
                              r"tensor\(27\.\), grad_fn=<MeanBackward>",
                              r"tensor\(\[\[4\.5000, 4\.5000\],\s+\[4\.5000, 4\.5000\]\]\)"], None),
    "02_two_layer_net.py": ([r"^0 \d", r"^499 \d"], None),
    "03_retain_graph.py": ([r"tensor\(\[60\.\]\)", r"tensor\(\[120\.\]\)",
                            r"\[\[60\., 60\.\],\s+\[60\., 60\.\]\]",
                            r"\[\[ 0\., 60\.\],\s+\[60\.,  0\.\]\]"], None),
    "04_variables_and_gradients.py": ([r"tensor\(\[\[2\., 2\.\],\s+\[2\., 2\.\]\]",
                                       r"tensor\(\[20\., 20\.\]\), grad_fn=<MulBackward>",
                                       r"tensor\(20\.\), grad_fn=<MulBackward>",
                                       r"tensor\(\[10\., 10\.\]\)\)$"],
                                      r"BackwardError: Trying to backward through the graph a "
                                      r"second time.*retain_graph=True"),
    "05_tensor_vs_variable.py": ([r"^None False False$", r"^True True True$",
                                  r"\[\[  1\.2000,  16\.0000\],\s+\[ 20\.0000, 240\.0000\]\]",
                                  r"^None None$"], None),
}


@pytest.mark.parametrize("script", VERBATIM, ids=lambda p: p.name)
def test_verbatim_tutorial_prints_the_tutorials_values(script):
    """The classic PyTorch Variable tutorials, with only their import changed to arraygrad's
    Variable, run on torch tensors and print the tutorials' values."""
    pytest.importorskip("torch")
    patterns, error = VERBATIM_OUTPUT[script.name]
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    if error is None:
        assert done.returncode == 0, f"{script.name} failed:\n{done.stderr[-3000:]}"
    else:
        assert done.returncode != 0 and re.search(error, done.stderr.splitlines()[-1]), (
            f"{script.name} should end with {error!r}:\n{done.stderr[-3000:]}")
    for pattern in patterns:
        assert re.search(pattern, done.stdout, re.M), (
            f"{script.name} did not print {pattern!r}:\n{done.stdout[-3000:]}")
    if script.name == "02_two_layer_net.py":  # the loss falls, as in the tutorial
        losses = [float(line.split()[1]) for line in done.stdout.splitlines()]
        assert len(losses) == 500 and losses[-1] < 1e-2 * losses[0]


def test_every_verbatim_tutorial_has_its_values():
    assert sorted(VERBATIM_OUTPUT) == [p.name for p in VERBATIM]


def test_every_tutorial_is_run():
    assert [p.name[:2] for p in TUTORIALS] == ["01", "02", "03", "04", "05"]
