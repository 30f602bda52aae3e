"""pytest plugin of the conformance suite, for backend authors' CI.

``pytest --pyargs arraygrad.conformance --arraygrad-backend NAME`` runs one test per case and
dtype, with ids naming the backend, the op, the variant and the dtype
(``torch-sum[axis=-1,keepdims=False]-float64``). ``--arraygrad-op PATTERN`` (repeatable)
selects cases by the same globs as the command line (brackets literal); ``-k`` works on the ids
as usual. ``--arraygrad-timeout SECONDS`` stops a case run that hangs, as the command's
``--timeout`` does.
"""


def pytest_addoption(parser):
    group = parser.getgroup("arraygrad", "arraygrad conformance suite")
    group.addoption("--arraygrad-backend", action="append", default=None,
                    help="backend to certify (repeatable; default: numpy)")
    group.addoption("--arraygrad-op", action="append", default=None,
                    help="only cases matching this glob (repeatable: any of them)")
    group.addoption("--arraygrad-dtype", action="append", default=None,
                    choices=["float32", "float64"],
                    help="only this dtype (complex cases follow their real precision)")
    group.addoption("--arraygrad-seed", type=int, default=0, help="seed of the random inputs")
    group.addoption("--arraygrad-timeout", type=float, default=60.0, metavar="SECONDS",
                    help="stop a case run after this long, as a failure (default 60; 0: none)")
    group.addoption("--arraygrad-plugin", action="append", default=[],
                    metavar="MODULE[:OBJECT]", help="register a plugin first")


def pytest_configure(config):
    """Register the plugins asked for, and refuse an unknown backend or an ``--arraygrad-op``
    matching no case before collecting."""
    import pytest

    from .runner import select

    for pattern in config.getoption("arraygrad_op", default=None) or ():
        if not select(pattern):
            raise pytest.UsageError(f"--arraygrad-op {pattern!r} matches no case id or op "
                                    "(`arraygrad conformance --list` lists them)")
    backends = config.getoption("arraygrad_backend", default=None)
    plugins = config.getoption("arraygrad_plugin", default=None)
    if not backends and not plugins:
        return

    import arraygrad as ag
    from arraygrad.hookspecs import load

    from .runner import ready

    for target in plugins:
        try:
            plugin = load(target)
            if not ag.registry.pm.is_registered(plugin):
                ag.register_backend(plugin)
        except Exception as exc:  # as the command's --plugin: a usage error, not a traceback
            raise pytest.UsageError(f"--arraygrad-plugin {target}: {type(exc).__name__}: "
                                    f"{exc}") from None
    known = {info.name: info for info in ag.backends()}
    for name in backends or ():
        if name not in known:
            raise pytest.UsageError(
                f"--arraygrad-backend {name}: no such backend (registered: "
                f"{', '.join(sorted(known))}); install its plugin, or pass "
                "--arraygrad-plugin MODULE:OBJECT")
        if not known[name].available:
            raise pytest.UsageError(f"--arraygrad-backend {name}: {known[name].reason}")
    # its namespace (rule overrides), capabilities and deviations: a raise is named here once
    _, unavailable, _ = ready(backends or ["numpy"])
    for name, reason in unavailable.items():
        raise pytest.UsageError(f"--arraygrad-backend {name}: {reason}")


def pytest_generate_tests(metafunc):
    if "arraygrad_case" not in metafunc.fixturenames:
        return
    import arraygrad as ag

    from .runner import _REAL, select, wanted

    config = metafunc.config
    backends = config.getoption("arraygrad_backend") or ["numpy"]
    dtypes = config.getoption("arraygrad_dtype")
    pattern = config.getoption("arraygrad_op")
    params = [(backend, case, dtype, kind) for backend in backends for case in select(pattern)
              for dtype in case.dtypes
              for kind in (None, *ag.get_backend(backend).spec.semantic_inputs)
              if (dtypes is None or _REAL.get(dtype, dtype) in dtypes)
              and wanted(case, kind, pattern) and (kind is None or case.behaviour is None)]
    metafunc.parametrize("arraygrad_case", params, ids=[
        f"{b}-{c.id}{'@' + k if k else ''}-{d}" for b, c, d, k in params])
