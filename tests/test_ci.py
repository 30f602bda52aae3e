"""The README's test command is what CI runs, and the lock it installs against pins every package
of the test environment, so that a fresh clone tests what CI tested."""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
import re
import subprocess


import pytest

tomllib = pytest.importorskip("tomllib", reason="Python 3.11 or later reads pyproject.toml")

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
LOCK = ROOT / "requirements" / "constraints.txt"
REQUIREMENTS = ROOT / "requirements" / "test.txt"


def _normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _readme_test_command():
    """The command line under the README's ``# Tests:`` comment."""
    found = re.search(r"^# Tests:.*\n(.+)$", README, re.M)
    assert found, "the README has no '# Tests:' command"
    return found.group(1).strip()


def _locked():
    pins = {}
    for line in LOCK.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not an exact pin (name==version)"
            pins[_normal(name)] = version.strip()
    return pins


def test_ci_runs_the_readme_test_command():
    command = _readme_test_command()
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [line.strip() for line in ci.splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    assert commands[-1] == command, f".ci/run ends {commands[-1]!r}, the README says {command!r}"
    assert "-c requirements/constraints.txt" in command and "-r requirements/test.txt" in command


def test_the_lock_pins_every_test_dependency():
    """Each requirement of the extras the test command installs, and of requirements/test.txt,
    has an exact pin in the lock (a new dependency without a refreshed lock fails here)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = re.search(r"-e \.\[([\w,]+)\]", REQUIREMENTS.read_text()).group(1).split(",")
    wanted = list(project["dependencies"])
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    wanted += [line for line in REQUIREMENTS.read_text().splitlines()
               if line and not line.startswith(("#", "-", "."))]
    pins = _locked()
    names = {_normal(re.match(r"[A-Za-z0-9_.\-]+", w).group()) for w in wanted}
    assert names and not names - set(pins), f"not in the lock: {sorted(names - set(pins))}"


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="checks the environment CI made "
                    "with the README's test command (CI=true); a developer's may differ")
def test_ci_installed_the_locked_versions():
    pins = _locked()
    wrong = {}
    for dist in importlib.metadata.distributions():
        name = _normal(dist.metadata["Name"])
        if name in pins and dist.version.split("+")[0] != pins[name]:
            wrong[name] = (dist.version, pins[name])
    assert not wrong, f"installed (version, locked): {wrong}"


def test_newest_script_refuses_unknown_options():
    done = subprocess.run(["bash", str(ROOT / "requirements" / "newest.sh"), "--bogus"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "usage" in done.stderr
