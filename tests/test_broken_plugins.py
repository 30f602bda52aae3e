"""Broken plugins are reported with their reason, by ``arraygrad.backends()`` and by
``arraygrad backends``, and never stop the other backends.

Each scenario is a real (if minimal) installed distribution: a ``*.dist-info`` directory with
an ``entry_points.txt`` in group ``arraygrad``, put on ``PYTHONPATH`` of a fresh interpreter,
so that discovery runs exactly as for a pip-installed plugin.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

HEADER = "import arraygrad as ag\n"


def _declaring(name, **facts):
    """A plugin module declaring backend ``name`` with ``facts`` (Python source)."""
    fields = ", ".join(f"{key}={value}" for key, value in
                       {"arrays": repr((f"{name}_lib:Array",)), **facts}.items())
    return HEADER + textwrap.dedent(f"""
        @ag.hookimpl
        def arraygrad_backend():
            return ag.BackendSpec(name={name!r}, {fields})
    """)


# Plugins that fail in the ways a plugin may fail at load time or when its namespace is loaded.
AT_LOAD = {
    "broken_import": 'raise RuntimeError("this plugin fails on import on purpose")\n',
    "broken_backend": HEADER + textwrap.dedent("""
        @ag.hookimpl
        def arraygrad_backend():
            return "not-a-spec"
    """),
    "unknown_fact": _declaring("unknown_fact", namespace="'numpy'",
                               capabilities="{'complex': False}"),
    "no_namespace": _declaring("no_namespace", namespace="lambda: None"),
    "raising_namespace": _declaring("raising_namespace",
                                    namespace="'imaginary_array_lib'"),
    # registered by the entry point above this one:
    "clashing_name": _declaring("no_namespace", namespace="'numpy'"),
    # a namespace that is no namespace at all
    "number_namespace": _declaring("number_namespace", namespace="lambda: 42"),
    # claims NumPy's arrays, which the numpy backend owns: it must not take them over
    "numpy_thief": _declaring("numpy_thief", namespace="'array_api_compat.numpy'",
                              arrays="('numpy:ndarray',)"),
    # a rule override that is not a Rule: only its own backend is affected, with a clear error
    "bad_override": _declaring("bad_override", namespace="'array_api_compat.numpy'",
                               arrays="(type('Own', (__import__('numpy').ndarray,), {}),)")
                    + textwrap.dedent("""
        @ag.hookimpl
        def arraygrad_rule_override(backend, op):
            return [1, 2]
    """),
}

# A plugin whose declaration is wrong in a way seen only when arrays are looked up: it must be
# dropped and reported, and never break the other backends.
WHEN_ASKED = {
    "missing_array_type": _declaring("missing_array_type", namespace="'numpy'",
                                     arrays="('numpy:NoSuchArray',)"),
}

PROBE = textwrap.dedent("""
    import json
    import numpy as np
    import arraygrad as ag

    def listing():
        return {i.name: {"available": i.available, "reason": i.reason} for i in ag.backends()}

    report = {"before": listing()}

    def probe(name, function):
        try:
            report[name] = {"ok": True, "value": function()}
        except Exception as exc:
            report[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    def numpy_gradient():
        x = ag.Variable(np.arange(3.0), requires_grad=True)
        ag.namespace("numpy").sum(x * x).backward()
        return x.grad.data.tolist()

    def strict_gradient():
        import array_api_strict as strict
        x = ag.Variable(strict.asarray([0.0, 1.0, 2.0]), requires_grad=True)
        ag.namespace("array_api_strict").sum(x * x).backward()
        return np.asarray(x.grad.data).tolist()

    probe("numpy", numpy_gradient)
    probe("array_api_strict", strict_gradient)
    report["after"] = listing()
    print(json.dumps(report))
""")


def _install(root, plugins):
    """Write ``plugins`` as modules of one fake distribution with an entry point each."""
    root.mkdir()
    info = root / "arraygrad_broken_examples-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: arraygrad-broken-examples\n"
                                   "Version: 0.0.0\n")
    lines = [f"{name} = agbroken_{name}" for name in plugins]
    (info / "entry_points.txt").write_text("[arraygrad]\n" + "\n".join(lines) + "\n")
    for name, code in plugins.items():
        (root / f"agbroken_{name}.py").write_text(code)
    return root


def _run(root, args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _cli(root):
    listing = _run(root, ["-m", "arraygrad.cli", "backends"])
    return {line.split()[0]: line for line in listing.splitlines()}


@pytest.fixture(scope="module")
def at_load(tmp_path_factory):
    root = _install(tmp_path_factory.mktemp("at-load") / "site", AT_LOAD)
    return json.loads(_run(root, ["-c", PROBE])), _cli(root)


@pytest.fixture(scope="module")
def when_asked(tmp_path_factory):
    root = _install(tmp_path_factory.mktemp("when-asked") / "site", WHEN_ASKED)
    return json.loads(_run(root, ["-c", PROBE])), _cli(root)


@pytest.mark.parametrize("name, reason", [
    ("broken_import",
     "broken plugin: import failed: RuntimeError: this plugin fails on import on purpose"),
    ("broken_backend", "broken plugin: TypeError: arraygrad_backend() must return an "
                       "arraygrad.BackendSpec or a list of them, got 'not-a-spec'"),
    ("unknown_fact", "broken plugin: TypeError: BackendSpec 'unknown_fact': unknown "
                     "capabilities ['complex']"),
    ("no_namespace", "its plugin returned no namespace"),
    ("raising_namespace", "ModuleNotFoundError: No module named 'imaginary_array_lib'"),
    ("clashing_name", "already registered by another plugin"),
    ("number_namespace", "its plugin's namespace is 42, which has no asarray"),
    ("numpy_thief", "array type(s) already owned by another backend: numpy:ndarray (by "
                    "'numpy')"),
    ("bad_override", "rule override for 'abs' is a list, not an arraygrad.rules.Rule"),
])
def test_reported_with_its_reason(at_load, name, reason):
    report, cli = at_load
    listed = report["before"][name]
    assert not listed["available"] and reason in listed["reason"], listed
    assert "not available: " in cli[name] and reason in cli[name], cli[name]


def test_the_other_backends_keep_working_beside_plugins_broken_at_load(at_load):
    report, cli = at_load
    for backend in ("numpy", "array_api_strict"):
        assert report["before"][backend]["available"], report["before"][backend]
        assert report[backend] == {"ok": True, "value": [0.0, 2.0, 4.0]}, report[backend]
        assert "not available" not in cli[backend]


def test_a_plugin_whose_array_type_cannot_be_found_is_dropped_and_reported(when_asked):
    report, _ = when_asked
    for backend in ("numpy", "array_api_strict"):
        assert report[backend] == {"ok": True, "value": [0.0, 2.0, 4.0]}, report[backend]
    listed = report["after"]["missing_array_type"]
    assert not listed["available"]
    assert ("its array type 'numpy:NoSuchArray' cannot be found: AttributeError"
            in listed["reason"]), listed


def test_a_bad_rule_override_names_the_op_and_what_to_return(tmp_path):
    root = _install(tmp_path / "site", {"bad_override": AT_LOAD["bad_override"]})
    out = _run(root, ["-c", "import arraygrad as ag\ntry:\n    ag.namespace('bad_override')\n"
                            "except ag.BackendError as e:\n    print(e)"])
    assert "rule override for 'abs' is a list, not an arraygrad.rules.Rule" in out
    assert "return None to keep the built-in rule" in out


RAISING_OVERRIDE = _declaring(
    "raising_override", namespace="'array_api_compat.numpy'",
    arrays="(type('Own', (__import__('numpy').ndarray,), {}),)") + textwrap.dedent("""
        @ag.hookimpl
        def arraygrad_rule_override(backend, op):
            if op == "exp":
                raise KeyError("rule table corrupt")
    """)


def test_a_raising_rule_override_breaks_its_plugin_naming_the_hook_backend_and_op(tmp_path):
    """As a raising arraygrad_backend does: the plugin is reported broken with the reason, and
    the other backends keep working."""
    root = _install(tmp_path / "site", {"raising_override": RAISING_OVERRIDE})
    reason = ("arraygrad_rule_override(backend='raising_override', op='exp') raised KeyError: "
              "'rule table corrupt'")
    out = _run(root, ["-c", textwrap.dedent("""
        import numpy as np
        import arraygrad as ag
        for attempt in range(2):
            try:
                ag.namespace("raising_override")
            except ag.BackendUnavailable as e:
                print(e)
        print({i.name: i.reason for i in ag.backends()}["raising_override"])
        print(ag.namespace("numpy").sum(ag.Variable(np.ones(2))))
    """)])
    assert out.count(f"its plugin 'raising_override' is broken: {reason}") == 2, out
    assert f"broken plugin: {reason}" in out and "Variable(array(2.))" in out
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, "-m", "arraygrad.cli", "conformance", "--backend",
                           "raising_override", "--op", "exp[2d]", "-q"], capture_output=True,
                          text=True, env=env, cwd=root)
    assert done.returncode == 1
    assert f"raising_override: not run: its plugin is broken: {reason}" in done.stdout
    assert "crashed" not in done.stdout


HEALTHY_OVERRIDE = _declaring(
    "healthy_override", namespace="'array_api_compat.numpy'",
    arrays="(type('Mine', (__import__('numpy').ndarray,), {}),)") + textwrap.dedent("""
        @ag.hookimpl
        def arraygrad_rule_override(backend, op):
            return None
    """)


def test_backends_lists_a_raising_rule_override_as_broken_before_any_namespace(tmp_path):
    """``ag.backends()`` and ``arraygrad backends``, asked first, report the plugin broken with
    the hook, backend and op (they used to list it available until a namespace was built);
    only plugins with a rule override hook have their overrides asked: the others' namespaces
    are not built."""
    root = _install(tmp_path / "site", {"raising_override": RAISING_OVERRIDE,
                                        "healthy_override": HEALTHY_OVERRIDE})
    reason = ("broken plugin: arraygrad_rule_override(backend='raising_override', op='exp') "
              "raised KeyError: 'rule table corrupt'")
    out = _run(root, ["-c", textwrap.dedent("""
        import numpy as np
        import arraygrad as ag
        listed = {i.name: (i.available, i.reason) for i in ag.backends()}
        print(listed["raising_override"])
        print(listed["healthy_override"], listed["numpy"])
        print("built:", sorted(n for n in ("numpy", "array_api_strict", "healthy_override")
                               if ag.get_backend(n)._ns is not None))
        try:
            ag.namespace("raising_override")
        except ag.BackendUnavailable as e:
            print(e)
        print(ag.namespace("numpy").sum(ag.Variable(np.ones(2))))
    """)]).splitlines()
    assert out[0] == repr((False, reason)), out
    assert out[1] == "(True, '') (True, '')", out
    assert out[2] == "built: ['healthy_override']", out
    assert "its plugin 'raising_override' is broken: arraygrad_rule_override(" in out[3], out
    assert out[4] == "Variable(array(2.))", out
    cli = _cli(root)
    assert cli["raising_override"].split(None, 1)[1] == f"not available: {reason}", cli
    assert "  available  " in cli["healthy_override"] and "  available  " in cli["numpy"], cli


def test_certifying_a_backend_whose_plugin_is_broken_says_why(tmp_path):
    root = _install(tmp_path / "site", {"broken_import": AT_LOAD["broken_import"]})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, "-m", "arraygrad.cli", "conformance", "--backend",
                           "broken_import", "-q"], capture_output=True, text=True, env=env,
                          cwd=root)
    assert done.returncode == 1
    assert ("broken_import: not run: its plugin is broken: import failed: RuntimeError: this "
            "plugin fails on import on purpose") in done.stdout
