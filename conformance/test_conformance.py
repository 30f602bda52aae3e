"""The conformance suite as pytest tests (collected by ``pytest --pyargs arraygrad.conformance``;
see ``pytest_plugin``)."""

import pytest


def test_gradients(arraygrad_case, request):
    from .runner import run_one

    backend, case, dtype = arraygrad_case
    result = run_one(backend, case, dtype, seed=request.config.getoption("arraygrad_seed"))
    details = "\n".join(f"{check}: {status} {detail}" for check, (status, detail, *_)
                        in result.checks.items() if status != "pass")
    if result.status == "fail":
        pytest.fail(f"{details}\nreproduce: {result.reproduce()}", pytrace=False)
    if result.status == "deviation":
        pytest.xfail(details)
    if result.status == "skip":
        pytest.skip(details)
