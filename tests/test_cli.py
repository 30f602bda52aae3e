"""The command line: ``arraygrad --version``; ``arraygrad conformance`` with several ``--op``
globs, unavailable backends, plugin text shown literally, a time limit per case run, reports
that cannot be written, and plugins whose declarations raise."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import io
import json
import os
import signal
import time
import types

import array_api_compat.numpy as compat
import numpy as np
import pytest

import arraygrad as ag
from arraygrad import cli as main_cli
from arraygrad.conformance import cli, report, runner
from arraygrad.conformance import test_conformance as pytest_form
from arraygrad.rules import Rule
from test_conformance import _broken_backend

QUICK = ["--op", "sin[2d]", "--dtype", "float64", "-q", "--external", "none"]


@pytest.fixture
def register():
    """Register a throwaway backend with spec fields (compat's NumPy namespace, declaring an
    ndarray subclass of its own: enough for a backend that never runs a case); unregistered
    after the test."""
    plugins = []

    def make(name, **spec):
        own = type("Own", (np.ndarray,), {})

        class Plugin:
            @ag.hookimpl
            def arraygrad_backend(self):
                return ag.BackendSpec(name=name, arrays=(own,), **{"namespace": lambda: compat,
                                                                   **spec})

        plugins.append(Plugin())
        ag.register_backend(plugins[-1], name=f"agcli-{len(plugins)}")
        return name

    yield make
    for plugin in plugins:
        ag.registry.unregister(plugin)


# ------------------------------------------------------------------------------- --version
def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main_cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"arraygrad {importlib.metadata.version('arraygrad')}\n"


def test_version_falls_back_to_the_package_version(monkeypatch, capsys):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    with pytest.raises(SystemExit) as exit_:
        main_cli.main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"arraygrad {ag.__version__}\n"


# -------------------------------------------------------------------------------- --op twice
def test_op_given_twice_selects_both(capsys):
    one, two = "sum[axis=None,keepdims=False]", "prod[axis=None,keepdims=False]"
    assert cli.main(["--list", "--op", one, "--op", two]) == 0
    assert capsys.readouterr().out.split() == [one, two]
    results, _ = runner.run(["numpy"], [one, two], ["float64"], external_library=None)
    assert [r.id for r in results] == [one, two]


def test_each_op_must_match_a_case(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--list", "--op", "sum*", "--op", "nosuch*"])
    assert exit_.value.code == 2
    assert "--op 'nosuch*' matches no case id or op" in capsys.readouterr().err


def test_the_pytest_form_takes_op_twice():
    from arraygrad.conformance import pytest_plugin

    options = {"arraygrad_backend": ["numpy"], "arraygrad_dtype": ["float64"],
               "arraygrad_op": ["sum[axis=None,keepdims=False]", "prod[axis=None,keepdims=False]"]}
    found = {}
    metafunc = types.SimpleNamespace(
        fixturenames=["arraygrad_case"], config=types.SimpleNamespace(getoption=options.get),
        parametrize=lambda name, params, ids: found.update(ids=ids))
    pytest_plugin.pytest_generate_tests(metafunc)
    assert found["ids"] == ["numpy-sum[axis=None,keepdims=False]-float64",
                            "numpy-prod[axis=None,keepdims=False]-float64"]


def test_a_glob_pairs_cases_with_its_own_inputs():
    case = runner.case("mean[axis=0,keepdims=False]")
    patterns = ["mean*@masked", "sum*"]
    assert runner.wanted(case, "masked", patterns) and not runner.wanted(case, None, patterns)
    assert runner.wanted(runner.case("sum[axis=0,keepdims=False]"), None, patterns)


# -------------------------------------------------------------------- unavailable backends
def test_a_backend_whose_library_is_missing_is_an_error_with_its_reason(register, tmp_path,
                                                                       capsys):
    name = register("agcli_missing", namespace="agcli_library_that_is_not_installed")
    path = tmp_path / "report.json"
    assert cli.main(["--backend", name, *QUICK, "--json", str(path)]) == 1
    out = capsys.readouterr().out
    assert out == (f"{name}: not run: backend {name!r} is not available: ModuleNotFoundError: "
                   "No module named 'agcli_library_that_is_not_installed'\n")  # no "0 case runs"
    assert not path.exists()  # the check of --json before the run leaves no empty file


def test_a_built_in_backend_without_its_library_says_how_to_install_it(monkeypatch, capsys):
    torch = ag.get_backend("torch")
    monkeypatch.setattr(torch, "spec", dataclasses.replace(torch.spec, namespace="agcli_no_torch"))
    monkeypatch.setattr(torch, "_raw", None)
    assert cli.main(["--backend", "torch", *QUICK]) == 1
    assert capsys.readouterr().out.endswith(
        "No module named 'agcli_no_torch'; install it with: pip install \"torch==2.13.0\"\n")


# ------------------------------------------------------------------ plugin text is literal
def test_backend_names_with_markup_are_shown_literally(tmp_path, capsys):
    bold, closing = _broken_backend("[bold]b1[/bold]"), _broken_backend("x[/]")
    path = tmp_path / "report.json"
    try:
        assert cli.main(["--backend", bold, "--backend", closing, *QUICK, "--json",
                         str(path)]) == 0
    finally:
        for name in (bold, closing):
            ag.registry.unregister(ag.get_backend(name).plugin)
    out = capsys.readouterr().out
    assert "[bold]b1[/bold]" in out and "x[/]" in out
    assert {r["backend"] for r in json.loads(path.read_text())["results"]} == {bold, closing}


def test_the_reports_are_written_before_the_terminal_report(monkeypatch, tmp_path):
    def broken_render(*args, **kwargs):
        raise RuntimeError("the terminal report crashed")

    monkeypatch.setattr(report, "render", broken_render)
    path = tmp_path / "report.json"
    with pytest.raises(RuntimeError, match="the terminal report crashed"):
        cli.main(["--backend", "numpy", *QUICK, "--json", str(path)])
    assert [r["status"] for r in json.loads(path.read_text())["results"]] == ["pass"]


def test_the_progress_bar_shows_case_labels_literally():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream, label = Terminal(), "x[/] sum[axis=0] float64"  # (rich read it as "x sum float64")
    show = runner.progress_bar(stream)
    show(0, 1, label)
    show(1, 1, label)  # renders the bar with this label, then clears it
    assert label in stream.getvalue()


# ------------------------------------------------------------------------------ time limit
def _forever(xp, g, ans):
    """A VJP in an endless loop (it gives up after 20 s, so that without a time limit the
    tests fail rather than hang)."""
    give_up = time.monotonic() + 20
    while time.monotonic() < give_up:
        pass
    raise AssertionError("the time limit did not stop this loop")


def _asleep(xp, g, ans):
    time.sleep(20)  # (as long as it likes: the time limit stops it at once)
    raise AssertionError("the time limit did not stop this sleep")


def _hanging(name, vjp):
    jvp = lambda xp, t, ans: t * ans  # noqa: E731
    return _broken_backend(name, rules={"exp": Rule("exp", ["x"], [vjp], jvps=[jvp])})


def test_a_hanging_rule_is_stopped_at_the_time_limit_and_fails():
    name = _hanging("agcli_loops", _forever)
    started = time.monotonic()
    result = runner.run_one(name, runner.case("exp[2d]"), "float64", known={}, timeout=0.5)
    assert time.monotonic() - started < 10
    assert result.status == "fail" and result.checks["run"][1] == (
        "timed out: stopped after 0.5 s (the time limit of a case run) in backward")
    assert "_forever" in result.traceback  # where it was stopped


def test_the_limit_puts_back_a_timer_already_set():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        runner.run_one("numpy", runner.case("sin[2d]"), "float64", known={}, timeout=5)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 20 < left < 30 and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_the_command_goes_on_after_a_case_that_hangs(monkeypatch, tmp_path, capsys):
    name = _hanging("agcli_sleeps", _asleep)
    monkeypatch.setattr(runner, "SLOW", 0.1)
    path = tmp_path / "report.json"
    assert cli.main(["--backend", name, "--op", "exp[2d]", "--op", "sin[2d]", "--dtype",
                     "float64", "-q", "--external", "none", "--timeout", "0.5",
                     "--json", str(path)]) == 1
    out, err = capsys.readouterr()
    status = {r["id"]: r["status"] for r in json.loads(path.read_text())["results"]}
    assert status == {"exp[2d]": "fail", "sin[2d]": "pass"}
    assert f"{name} exp[2d] float64 run: timed out: stopped after 0.5 s" in out
    assert (f"still running after 0.1 s: {name} exp[2d] float64 (stopped at 0.5 s by "
            "--timeout)") in err  # even under -q


def test_the_pytest_form_passes_its_time_limit():
    name = _hanging("agcli_loops", _forever)
    options = {"arraygrad_seed": 0, "arraygrad_timeout": 0.5}
    request = types.SimpleNamespace(config=types.SimpleNamespace(getoption=options.get))
    with pytest.raises(pytest.fail.Exception, match="timed out: stopped after 0.5 s"):
        pytest_form.test_gradients((name, runner.case("exp[2d]"), "float64", None), request)


# --------------------------------------------------------------- files that cannot be used
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("option", ["--json", "--html"])
def test_a_full_disk_is_one_line_naming_the_file(option, capsys):
    assert cli.main(["--backend", "numpy", *QUICK, option, "/dev/full"]) == 2
    out, err = capsys.readouterr()
    assert err == (f"arraygrad conformance: error: {option} /dev/full: cannot write there "
                   "(No space left on device)\n")
    assert "1 case runs" in out  # the results are still shown


def test_a_deviations_file_that_is_not_utf8_is_named(tmp_path, capsys):
    path = tmp_path / "deviations.txt"
    path.write_bytes(b"# reason\nsin[2d] \xff\n")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--backend", "numpy", *QUICK, "--deviations", str(path)])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        f"arraygrad conformance: error: --deviations {path}: cannot be read: not UTF-8 text "
        "(invalid start byte at byte 17)\n")


# ------------------------------------------------------- plugins whose declarations raise
def _raises():
    raise RuntimeError("the plugin's own bug")


@pytest.mark.parametrize("field", ["deviations", "capabilities"])
def test_a_raising_declaration_breaks_only_its_own_backend(field, register, tmp_path, capsys):
    name = register(f"agcli_raising_{field}", **{field: _raises})
    label = ag.registry.pm.get_name(ag.get_backend(name).plugin)
    path = tmp_path / "report.json"
    assert cli.main(["--backend", name, "--backend", "numpy", *QUICK, "--json", str(path)]) == 1
    reason = (f"its plugin {label!r} is broken: BackendSpec.{field} raised RuntimeError: the "
              "plugin's own bug")
    assert f"{name}: not run: {reason}" in capsys.readouterr().out
    document = json.loads(path.read_text())
    assert document["unavailable"] == {name: reason}
    assert [(r["backend"], r["status"]) for r in document["results"]] == [("numpy", "pass")]


def test_a_default_run_fails_on_a_plugin_that_raises(register):
    name = register("agcli_raising_default", deviations=_raises)
    backends, unavailable, failing = runner.ready()
    assert name in unavailable and name in failing
    assert "numpy" in [b.name for b in backends]
