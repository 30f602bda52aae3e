"""pytest plugin of the conformance suite, for backend authors' CI.

``pytest --pyargs arraygrad.conformance --arraygrad-backend NAME`` runs one test per case and
dtype, with ids naming the backend, the op, the variant and the dtype
(``torch-sum[axis=-1,keepdims=False]-float64``). ``--arraygrad-op PATTERN`` selects cases.
"""


def pytest_addoption(parser):
    group = parser.getgroup("arraygrad", "arraygrad conformance suite")
    group.addoption("--arraygrad-backend", action="append", default=None,
                    help="backend to certify (repeatable; default: numpy)")
    group.addoption("--arraygrad-op", default=None, help="only cases matching this glob")
    group.addoption("--arraygrad-seed", type=int, default=0, help="seed of the random inputs")


def pytest_generate_tests(metafunc):
    if "arraygrad_case" not in metafunc.fixturenames:
        return
    from .runner import select

    backends = metafunc.config.getoption("arraygrad_backend") or ["numpy"]
    cases = select(metafunc.config.getoption("arraygrad_op"))
    params = [(backend, case, dtype) for backend in backends for case in cases
              for dtype in case.dtypes]
    metafunc.parametrize("arraygrad_case", params,
                         ids=[f"{b}-{c.id}-{d}" for b, c, d in params])
