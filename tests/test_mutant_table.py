"""The mutation tool's table (``python -m mutants``) must apply to the code as it is: each
mutant's original text occurs exactly once in its file. A change to a mutated line has to
update its entry, or the mutation score silently stops measuring that slip."""

from pathlib import Path

from mutants.__main__ import check_table
from mutants.table import MUTANTS

ROOT = Path(__file__).resolve().parent.parent


def test_every_mutant_applies_to_the_code():
    assert check_table(MUTANTS, ROOT) == []


def test_a_stale_entry_is_reported(tmp_path):
    (tmp_path / "arraygrad").mkdir()
    (tmp_path / "arraygrad" / "_engine.py").write_text("nothing of the original\n")
    stale = [m for m in MUTANTS if m.path == "arraygrad/_engine.py"][:1]
    assert stale, "the table mutates the engine"
    (problem,) = check_table(stale, tmp_path)
    assert "stale" in problem and stale[0].id in problem
