"""docs/interop.md is what ``python -m tests.interop.matrix`` writes from the case tables."""

import pytest

from . import matrix, torch_matrix


def test_the_support_matrix_is_current():
    cases = matrix.load_cases()
    modules = {case.library for case in cases}
    if len(modules) < 7:
        pytest.skip(f"only {sorted(modules)} are installed: the matrix needs every library")
    assert matrix.OUTPUT.read_text() == matrix.render(cases), (
        "docs/interop.md is out of date: run python -m tests.interop.matrix")


def test_the_torch_section_is_current():
    pytest.importorskip("torch")
    text = matrix.OUTPUT.read_text()
    assert torch_matrix.HEADING in text and text == torch_matrix.render_into(text), (
        "docs/interop.md's torch section is out of date: run python -m tests.interop.torch_matrix")
