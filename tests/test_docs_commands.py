"""Commands that run: every command of docs/plugins.md and docs/conformance.md (the pages a
backend author certifies with) runs from the repository root with this environment's scripts
first on PATH, and exits as the page says.

A command is a line of a ```sh or ```bash block, or a line starting with ``$ `` in a ```console
block (the other lines there are output); ```text, ```yaml and ```json blocks are never run. A
command exits 0 unless it ends with a comment ``# exits N``. The lines of a block that uses
shell variables run in one bash session, in order, as a reader would type them
(``deviations=$(mktemp)`` then ``... --deviations "$deviations"``); everything else runs side by
side, after the blocks that install something. ``pip install`` lines get ``--no-deps
--no-build-isolation --no-index -q`` (the repository's own plugins, installed editable: no
download, and nothing else in the environment changes). A command naming a backend that is not
available here (``--backend torch`` without torch, ``--backend sparse`` without the repository's
sparse plugin) is a skip with the reason, unless it registers a plugin itself (``--plugin``); a
backend no one knows of (a typo) fails.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "docs" / "plugins.md", ROOT / "docs" / "conformance.md"]
BIN = pathlib.Path(sys.executable).parent  # the environment's scripts: arraygrad, pip, pytest
FENCE = re.compile(r"^```(sh|bash|console)[ \t]*\n(.*?)^```", re.M | re.S)
EXITS = re.compile(r"#\s*exits\s+(\d+)\b")
MARK = "@@arraygrad-docs-command"
TIMEOUT = 300  # seconds per block


@dataclasses.dataclass(frozen=True)
class Command:
    document: str
    line: int  # in the document
    block: int  # its block's index among the document's runnable blocks
    text: str  # as written, trailing comment included (bash drops it)

    @property
    def expected(self) -> int:
        found = EXITS.match(_split_comment(self.text)[1])
        return int(found.group(1)) if found else 0

    @property
    def key(self) -> str:
        """The command without its trailing comment."""
        return _split_comment(self.text)[0].strip()

    @property
    def id(self) -> str:
        return f"{self.document}:{self.line}"


def _split_comment(text):
    """``(command, comment)``: the comment starts at the first ``#`` outside quotes that begins
    a word, as in bash."""
    quote = None
    for i, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i], text[i:]
    return text, ""


def commands(path: pathlib.Path) -> list[Command]:
    """The commands of ``path``'s sh, bash and console blocks, in order."""
    text = path.read_text()
    found = []
    for block, match in enumerate(FENCE.finditer(text)):
        first_line = text.count("\n", 0, match.start(2)) + 1
        console = match.group(1) == "console"
        pending, start = "", None
        for offset, line in enumerate(match.group(2).splitlines()):
            if not pending:
                if console and not line.startswith("$ "):
                    continue  # output
                line = line[2:] if console else line
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                start = first_line + offset
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            found.append(Command(path.name, start, block, pending + line))
            pending = ""
    return found


COMMANDS = [c for path in DOCUMENTS for c in commands(path)]


def _is_pip_install(command):
    words = command.key.split()
    return words[:2] == ["pip", "install"] or words[:4] == ["python", "-m", "pip", "install"]


def _can_build_offline():
    """Whether setuptools here can build an editable wheel without a download."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    version = tuple(int(p) for p in importlib.metadata.version("setuptools").split(".")[:2])
    return version >= (70, 1) or importlib.util.find_spec("wheel") is not None


def _repository_plugins():
    """The backend names of the plugin distributions in ``plugins/``, by their entry points."""
    names = {}
    for pyproject in sorted((ROOT / "plugins").glob("*/pyproject.toml")):
        section = re.search(r"^\[project\.entry-points\.arraygrad\]\n(.*?)(?:^\[|\Z)",
                            pyproject.read_text(), re.M | re.S)
        for name in re.findall(r"^(\w+)\s*=", section.group(1) if section else "", re.M):
            names[name] = pyproject.parent.relative_to(ROOT).as_posix()
    return names


def _named_backends(command):
    try:
        words = shlex.split(command.key)
    except ValueError:
        return []
    return [words[i + 1] for i, word in enumerate(words[:-1])
            if word in ("--backend", "--arraygrad-backend")]


def _registers_a_plugin(command):
    return "--plugin" in command.key or "--arraygrad-plugin" in command.key


def _environment(tmp):
    env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
               TMPDIR=str(tmp), COLUMNS="120", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("ARRAYGRAD_MARRAY_RULES", None)
    return env


def _script(block, skips):
    """One bash session running ``block``'s commands in order, each followed by a marker with
    its index and exit status (or ``skip`` for a command this environment cannot run)."""
    lines = []
    for index, command in block:
        if index in skips:
            lines.append(f"printf '\\n{MARK} {index} skip\\n'")
            continue
        text = command.text
        if _is_pip_install(command):
            text = text.replace("pip install", "pip install --no-deps --no-build-isolation "
                                "--no-index -q", 1)
        lines += ["{", text, "} </dev/null 2>&1", f"printf '\\n{MARK} {index} %s\\n' \"$?\""]
    return "\n".join(lines) + "\n"


def _run_block(block, skips, env):
    done = subprocess.run(["bash", "-c", _script(block, skips)], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=TIMEOUT)
    results, output = {}, []
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            _, index, status = line.split()
            results[int(index)] = (status, "\n".join(output).strip())
            output = []
        else:
            output.append(line)
    for index, _ in block:  # a session that died early: its remaining commands did not run
        results.setdefault(index, ("missing", f"bash exited {done.returncode} before it ran\n"
                                   f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"))
    return results


def _available(found, env):
    """``{backend: available}``, read from a documented ``arraygrad backends`` that ran (its
    lines are ``NAME  available ...`` or ``NAME  not available: ...``), else asked."""
    for index, command in enumerate(COMMANDS):
        status, output = found.get(index, ("", ""))
        if command.key == "arraygrad backends" and status == "0":
            rows = [line.split() for line in output.splitlines()]
            return {row[0]: row[1] == "available" for row in rows if len(row) > 1}
    done = subprocess.run(
        [sys.executable, "-c", "import json, arraygrad\n"
         "print(json.dumps({i.name: i.available for i in arraygrad.backends()}))"],
        cwd=ROOT, env=env, text=True, capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """``{command index: (status, output)}`` for every command, ``status`` an exit status, or
    ``skip: reason``."""
    env = _environment(tmp_path_factory.mktemp("docs-commands"))
    first = {}  # command key -> index of the command that runs it
    blocks = {}
    for index, command in enumerate(COMMANDS):
        if "$" not in command.key and command.key in first:
            continue  # run once; the later copies read its result
        first.setdefault(command.key, index)
        blocks.setdefault((command.document, command.block), []).append((index, command))
    # A block whose lines share shell variables, or install something, is one session; the
    # lines of any other block are independent, and run side by side.
    units = [unit for block in blocks.values() for unit in (
        [block] if any("$" in c.key or _is_pip_install(c) for _, c in block) else
        [[line] for line in block])]
    reasons = {}
    installing = [u for u in units if any(_is_pip_install(c) for _, c in u)]
    for block in installing:
        reasons.update({i: "setuptools here cannot build an editable wheel without a download"
                        for i, c in block if _is_pip_install(c) and not _can_build_offline()})
    found = {}
    for unit in installing:  # first, one at a time: they change the environment
        found.update(_run_block(unit, set(reasons), env))
    others = [u for u in units if u not in installing]
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        for unit_results in pool.map(lambda u: _run_block(u, set(reasons), env), others):
            found.update(unit_results)
    available, repository = _available(found, env), _repository_plugins()
    for index, command in enumerate(COMMANDS):
        if _registers_a_plugin(command):
            continue
        for name in _named_backends(command):
            if available.get(name) is False:
                reasons[index] = f"backend {name!r} is not available here"
            elif name not in available and name in repository:
                reasons[index] = f"the plugin of backend {name!r} ({repository[name]}) is not " \
                                 "installed here"
    for index, command in enumerate(COMMANDS):
        if index not in found:
            found[index] = found[first[command.key]]
        if index in reasons:
            found[index] = (f"skip: {reasons[index]}", "")
    return found


def test_the_documents_have_commands():
    for path in DOCUMENTS:
        assert any(c.document == path.name for c in COMMANDS), f"no command found in {path.name}"
    assert any(c.expected != 0 for c in COMMANDS)


@pytest.mark.parametrize("index", range(len(COMMANDS)), ids=[c.id for c in COMMANDS])
def test_command(results, index):
    command = COMMANDS[index]
    status, output = results[index]
    if status.startswith("skip"):
        pytest.skip(f"{command.text}: {status[len('skip: '):]}")
    assert status == str(command.expected), (
        f"{command.id}: `{command.text}` exited {status}, the document says "
        f"{command.expected}\n{output[-4000:]}")
