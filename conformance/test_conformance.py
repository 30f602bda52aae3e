"""The conformance suite as pytest tests (collected by ``pytest --pyargs arraygrad.conformance``;
see ``pytest_plugin``)."""

import shlex

import pytest


def test_gradients(arraygrad_case, request):
    from .runner import _REAL, run_one

    backend, case, dtype, inputs = arraygrad_case
    config = request.config
    result = run_one(backend, case, dtype, seed=config.getoption("arraygrad_seed"),
                     inputs=inputs, timeout=config.getoption("arraygrad_timeout"))
    details = "\n".join(f"{check}: {status} {detail}" for check, (status, detail, *_)
                        in result.checks.items() if status != "pass")
    if result.status == "fail":
        rerun = shlex.join(["pytest", "--pyargs", "arraygrad.conformance", "--arraygrad-backend",
                            backend, "--arraygrad-op", result.id, "--arraygrad-dtype",
                            _REAL.get(dtype, dtype)])
        pytest.fail(f"{result.explain()}\nrerun: {rerun}\nor: {result.reproduce()}\n"
                    f"in Python:\n{result.snippet()}", pytrace=False)
    if result.status == "deviation":
        pytest.xfail(details)
    if result.status == "skip":
        pytest.skip(details)
