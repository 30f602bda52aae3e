"""Certifying a third-party backend from the report alone: each failure names its stage and the
call to blame, the preflight lists what the rules need before anything runs, bad declarations
get errors naming the hook to declare, and every failure can be run again (shell, Python)."""

from __future__ import annotations

import json
import types

import array_api_compat.numpy as compat
import numpy as np
import pytest

import arraygrad as ag
from arraygrad.conformance import cli, preflight, report, runner
from test_conformance import _broken_backend


def _one(backend, case_id, dtype="float64", **options):
    return runner.run_one(backend, runner.case(case_id), dtype, known={}, **options)


def _nan_from(name):
    """A function of compat that returns NaN wherever it would return its value."""
    return lambda *args, **kwargs: getattr(compat, name)(*args, **kwargs) * np.nan


# ------------------------------------------------------------------- where failures come from
def test_a_rule_calling_a_broken_function_is_named_not_the_op():
    """``std``'s rule calls the backend's ``mean`` (to centre ``x``), which ``std`` itself does
    not: a NaN from it is blamed on it."""
    name = _broken_backend("nan_mean", {"mean": _nan_from("mean")})
    result = _one(name, "std[axis=-1,keepdims=False]")
    assert result.status == "fail"
    assert result.cause == ("the `std` rule (backward) called `mean`, which "
                            "returned NaN from finite inputs")
    assert f"cause: {result.cause}" in report.text([result], {})


def test_a_function_a_rule_needs_and_the_backend_lacks_is_named_with_the_rule():
    name = _broken_backend("no_searchsorted", {"searchsorted": None})
    result = _one(name, "sort[basic]")
    status, detail, *_ = result.checks["run"]
    assert status == "fail" and detail.startswith("crashed in backward: AttributeError")
    assert "the `sort` rule (backward) called `searchsorted`, which the backend lacks" in detail
    assert "Traceback" in result.traceback and "searchsorted" in result.traceback
    # the preflight says so before anything runs, with every case it affects
    found = preflight.check(ag.get_backend(name), runner.select("sort*"))
    assert set(found.missing) == {"searchsorted"}
    assert "sort[basic]" in found.missing["searchsorted"]
    assert "`searchsorted` is missing, and arraygrad's rules call it" in found.text()


def test_a_crash_in_forward_mode_names_the_stage_and_the_rule():
    from arraygrad.rules import Rule, conj

    def jvp(xp, t, ans):
        return xp.cumulative_prod(t * ans)  # a JVP calling a function the backend breaks

    rule = Rule("exp", ["x"], [lambda xp, g, ans: g * conj(xp, ans)], jvps=[jvp])

    def broken(*args, **kwargs):
        raise RuntimeError("cumulative_prod is broken on this device")

    name = _broken_backend("broken_exp_jvp", {"cumulative_prod": broken}, rules={"exp": rule})
    result = _one(name, "exp[2d]")
    status, detail, *_ = result.checks["run"]
    assert detail.startswith("crashed in forward mode (jvp): RuntimeError: cumulative_prod is "
                             "broken on this device")
    assert detail.endswith("(the `exp` rule (forward mode) called `cumulative_prod`, which "
                           "raised RuntimeError: cumulative_prod is broken on this device)")
    assert result.checks["numerical"][0] == "pass"  # the stages before it ran


def test_not_implemented_in_the_backends_own_function_counts_as_missing():
    def hypot(x1, x2):
        raise NotImplementedError

    name = _broken_backend("hypot_not_implemented", {"hypot": hypot})
    case_id = next(c.id for c in runner.select("hypot*"))
    result = _one(name, case_id)
    status, detail, *_ = result.checks["forward"]
    assert status == "fail"
    assert f"{name}'s own `hypot` raised NotImplementedError" in detail
    assert "--allow-missing" in detail
    assert _one(name, case_id, allow_missing=True).status == "skip"


def test_traceback_and_snippet_are_printed_on_request_and_kept_in_the_json(tmp_path, capsys):
    name = _broken_backend("no_searchsorted", {"searchsorted": None})
    path = tmp_path / "report.json"
    assert cli.main(["--backend", name, "--op", "sort[basic]", "-q",
                     "--dtype", "float64", "--traceback", "--json", str(path)]) == 1
    out = capsys.readouterr().out
    assert "Traceback (most recent call last)" in out
    assert "runner.run_one(" in out and "print(result.explain())" in out
    document = json.loads(path.read_text())
    failed = [r for r in document["results"] if r["status"] == "fail"]
    assert failed and all("Traceback" in r["traceback"] and "runner.case(" in r["python"]
                          and "searchsorted" in r["cause"] for r in failed)
    assert document["preflight"][name]["missing"] == {
        "searchsorted": ["sort[basic]"]}
    environment = document["environment"]
    assert {"python", "platform", "date"} <= set(environment)
    assert list(environment["backends"]) == [name]


def test_the_python_snippet_runs_and_explains_the_failure(capsys):
    name = _broken_backend("nan_mean", {"mean": _nan_from("mean")})
    result = _one(name, "std[axis=-1,keepdims=False]")
    # the snippet registers nothing here: the backend has no importable plugin, and is
    # registered in this process already
    snippet = result.snippet().replace("import MODULE\nag.register_backend(MODULE.OBJECT)\n", "")
    exec(snippet, {})
    printed = capsys.readouterr().out
    assert printed.startswith(f"{name} std[axis=-1,keepdims=False] float64: fail")
    assert "cause: the `std` rule (backward) called `mean`" in printed


# --------------------------------------------------------------------------- the preflight
def _spec_backend(name, namespace, arrays, **spec):
    class Plugin:
        @ag.hookimpl
        def arraygrad_backend(self):
            return ag.BackendSpec(name=name, arrays=arrays, namespace=lambda: namespace, **spec)

    if name not in ag.registry.backends:
        ag.register_backend(Plugin(), name=f"plugin-{name}")
    return ag.get_backend(name)


class Frozen(np.ndarray):
    """An array refusing item assignment (sparse's COO, say)."""

    def __setitem__(self, key, value):
        raise TypeError(f"'{type(self).__name__}' object does not support item assignment")


class _FrozenNamespace:
    def __getattr__(self, name):
        value = getattr(compat, name)
        if name == "asarray":
            return lambda *a, **k: np.asarray(value(*a, **k)).view(Frozen)
        return value


def test_preflight_explains_inplace_and_set_index_when_item_assignment_fails(capsys):
    backend = _spec_backend("frozen", _FrozenNamespace(), (Frozen,),
                            to_numpy=lambda a: np.asarray(a).view(np.ndarray))
    found = preflight.check(backend, runner.select("getitem*"))
    (problem,) = found.problems
    assert "does not support item assignment" in problem
    assert "capabilities={'inplace': False}" in problem and "set_index" in problem
    assert cli.main(["--backend", "frozen", "--preflight"]) == 1
    assert "set_index" in capsys.readouterr().out


def test_preflight_of_a_backend_that_cannot_be_used_says_why_and_fails(capsys):
    class Unusable(np.ndarray):
        pass

    def no_licence():
        raise ImportError("the licence server is unreachable")

    class Plugin:
        @ag.hookimpl
        def arraygrad_backend(self):
            return ag.BackendSpec(name="unusable", arrays=(Unusable,), namespace=no_licence)

    plugin = ag.register_backend(Plugin(), name="plugin-unusable")
    try:
        assert cli.main(["--backend", "unusable", "--preflight"]) == 1
    finally:
        ag.registry.unregister(plugin)
    assert ("unusable: not run: backend 'unusable' is not available: ImportError: the licence "
            "server is unreachable") in capsys.readouterr().out


def test_preflight_says_which_dtypes_to_declare():
    class NoComplex:
        def __getattr__(self, name):
            value = getattr(compat, name)
            if name != "asarray":
                return value

            def asarray(obj, **kwargs):
                if np.iscomplexobj(obj):
                    raise TypeError(f"'{np.asarray(obj).dtype}' does not have a corresponding "
                                    "nocomplex data type")
                return value(obj, **kwargs)
            return asarray

    class Own(np.ndarray):
        pass

    backend = _spec_backend("nocomplex", NoComplex(), (Own,))
    found = preflight.check(backend, [])
    assert any("complex128" in p and "dtypes=" in p for p in found.problems)
    declared = _spec_backend("nocomplex_declared", NoComplex(), (type("Own2", (np.ndarray,), {}),),
                             dtypes=("float32", "float64", "int64", "bool"))
    assert preflight.check(declared, []).problems == []


def test_to_numpy_giving_an_object_array_is_an_error_naming_the_hook():
    class Opaque:
        shape, dtype = (3,), "float64"

    backend = _spec_backend("opaque", types.SimpleNamespace(
        asarray=lambda obj, **k: Opaque()), (Opaque,))
    with pytest.raises(ag.BackendError, match="give its BackendSpec a to_numpy"):
        backend.to_numpy(Opaque())
    (problem,) = preflight._to_numpy(backend)
    assert "BackendSpec.to_numpy" in problem


def test_preflight_of_the_built_in_backends_finds_nothing():
    for name in ("numpy", "array_api_strict"):
        assert preflight.check(ag.get_backend(name), runner.CASES).ok


def test_the_rules_needs_are_read_from_their_code():
    assert {"cumulative_prod", "flip"} <= preflight.needs("prod")
    assert {"argsort", "searchsorted", "take_along_axis"} <= preflight.needs("sort")
    assert "prod" not in preflight.needs("mean")  # math.prod is not the namespace's
    assert "linalg.diagonal" in preflight.needs("linalg.svd")


# ------------------------------------------------------------------------ selecting and usage
def test_case_ids_are_selected_with_brackets_as_typed():
    selected = runner.select("prod[axis=None*")
    assert selected and all(c.id.startswith("prod[axis=None") for c in selected)
    assert runner.select("sum[axis=-1,keepdims=False]") == [runner.case(
        "sum[axis=-1,keepdims=False]")]
    with pytest.raises(ValueError, match="arraygrad conformance --list"):
        runner.case("expp[2d]")


def test_an_unknown_backend_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--backend", "nosuch", "-q"])
    assert exit_.value.code == 2
    assert "no backend named 'nosuch'" in capsys.readouterr().err


def test_a_default_run_lists_the_unavailable_backends_with_reasons(monkeypatch):
    spec = ag.BackendSpec(name="missing_lib", arrays=("missing_lib:Array",),
                          namespace="missing_lib_that_is_not_installed")

    class Plugin:
        @ag.hookimpl
        def arraygrad_backend(self):
            return spec

    plugin = Plugin()
    ag.register_backend(plugin, name="plugin-missing_lib")
    try:
        _, unavailable = runner.run(None, "sin[2d]", ["float64"], external_library=None)
        assert "No module named 'missing_lib_that_is_not_installed'" in unavailable["missing_lib"]
        assert "missing_lib: not run: " in report.text([], unavailable)
    finally:
        ag.registry.unregister(plugin)


@pytest.mark.parametrize("argv, message", [
    (["--seed", "-1"], "-1 is not a seed from 0 to 2**32 - 1"),
    (["--op", "no_such*"], "--op 'no_such*' matches no case id or op"),
    (["--json", "/no/such/dir/report.json"], "--json /no/such/dir/report.json: cannot write"),
    (["--html", "/no/such/dir/report.html"], "--html /no/such/dir/report.html: cannot write"),
])
def test_usage_errors_come_before_the_run(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--backend", "numpy", "-q", *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_declaration_that_raises_fails_only_its_own_backends_cases(tmp_path, capsys):
    def capabilities():
        raise RuntimeError("cannot query the device")

    class Own(np.ndarray):
        pass

    _spec_backend("raising_caps", compat, (Own,), capabilities=capabilities)
    path = tmp_path / "report.json"
    assert cli.main(["--backend", "raising_caps", "--backend", "numpy", "--op", "sin[2d]",
                     "--dtype", "float64", "-q", "--external", "none",
                     "--json", str(path)]) == 1
    document = json.loads(path.read_text())
    assert [(r["backend"], r["status"]) for r in document["results"]] == [("numpy", "pass")]
    assert document["unavailable"]["raising_caps"] == (
        "its plugin 'plugin-raising_caps' is broken: BackendSpec.capabilities raised "
        "RuntimeError: cannot query the device")


def _pytest_plugin(tmp_path, *args):
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "arraygrad.conformance", "-p",
         "no:cacheprovider", *args], capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def test_the_pytest_form_refuses_an_unknown_backend_and_selects_dtypes(tmp_path):
    done = _pytest_plugin(tmp_path, "--arraygrad-backend", "nosuch")
    assert done.returncode == 4  # pytest's usage error, not hundreds of failures
    assert "--arraygrad-backend nosuch: no such backend" in done.stderr
    done = _pytest_plugin(tmp_path, "--arraygrad-backend", "numpy", "--arraygrad-op",
                          "sum[axis=-1*", "--arraygrad-dtype", "float64", "-v")
    assert done.returncode == 0, done.stdout[-2000:]
    assert "2 passed" in done.stdout and "float32" not in done.stdout
    done = _pytest_plugin(tmp_path, "--arraygrad-op", "sinn*")
    assert done.returncode == 4, done.stdout[-2000:]  # as the command's exit 2, not "1 skipped"
    assert "--arraygrad-op 'sinn*' matches no case id or op" in done.stderr
    # -k takes words of the ids (pytest's -k grammar has no '=')
    done = _pytest_plugin(tmp_path, "--arraygrad-backend", "numpy", "--arraygrad-op", "sum*",
                          "-k", "keepdims and float32", "-q")
    assert done.returncode == 0 and " passed" in done.stdout


def test_a_deviations_file_missing_from_the_plugin_package_is_named(tmp_path):
    """Forgotten in the package data: the plugin and the file are named; the command reports
    the backend not run and exits 1 (its plugin is broken: the other backends would run),
    pytest with a usage error."""
    import os
    import subprocess
    import sys

    package = tmp_path / "agnodev_plugin"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import numpy as np\nimport arraygrad as ag\n\n\nclass Own(np.ndarray):\n    pass\n\n\n"
        "@ag.hookimpl\ndef arraygrad_backend():\n    return ag.BackendSpec(name='nodev', "
        "arrays=(Own,), namespace='array_api_compat.numpy', "
        "deviations='agnodev_plugin:deviations.txt')\n")
    message = ("the nodev plugin's deviations ('agnodev_plugin:deviations.txt'): package "
               "'agnodev_plugin' has no file 'deviations.txt' (is it shipped as package data?")
    done = subprocess.run(
        [sys.executable, "-m", "arraygrad.cli", "conformance", "--plugin", "agnodev_plugin",
         "--backend", "nodev", "--op", "sin[2d]", "-q"], capture_output=True, text=True,
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])})
    assert done.returncode == 1 and message in done.stdout, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    done = _pytest_plugin(tmp_path, "--arraygrad-plugin", "agnodev_plugin",
                          "--arraygrad-backend", "nodev", "--arraygrad-op", "sin[2d]")
    assert done.returncode == 4 and message in done.stderr, done.stdout[-2000:] + done.stderr


def test_a_plugin_module_whose_hook_is_in_a_class_says_to_name_the_class(tmp_path, monkeypatch,
                                                                         capsys):
    (tmp_path / "agclass_plugin.py").write_text(
        "import arraygrad as ag\n\n\nclass Plugin:\n    @staticmethod\n    @ag.hookimpl\n"
        "    def arraygrad_backend():\n        return ag.BackendSpec(name='agclass', arrays="
        "('agclass_plugin:Nothing',), namespace='array_api_strict')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--plugin", "agclass_plugin", "--backend", "agclass", "--preflight"])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert ("module 'agclass_plugin' has no @hookimpl arraygrad_backend; Plugin in it has one: "
            "name that object, 'agclass_plugin:Plugin' (--plugin MODULE:OBJECT)") in error
    ag.registry.broken.pop("agclass_plugin", None)

