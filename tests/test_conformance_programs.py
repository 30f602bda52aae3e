"""The program families of the conformance suite (conformance/programs.py, nested.py): the
generator is deterministic per seed and makes valid programs, a planted wrong gradient is
found and shrunk to the op that carries it, the report gives the minimal program as Python
that runs, and slips of the table above the reuse threshold are caught by a program family."""

import types

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.conformance import programs, runner
from arraygrad.conformance.cases import CASES, Case
from arraygrad.conformance.programs import Op, Program


def test_the_generator_is_deterministic_per_seed_and_makes_valid_programs():
    for kind in programs.KINDS:
        made = [programs.generate(seed, kind) for seed in range(20)]
        assert made == [programs.generate(seed, kind) for seed in range(20)]
        assert len({repr(p) for p in made}) == 20, f"{kind}: seeds gave equal programs"
        for program in made:
            programs.infer(program)  # raises Invalid on an op that does not apply
    inplace = [programs.generate(seed, "inplace") for seed in range(20)]
    assert sum(any(op.name in programs.INPLACE for op in p.ops) for p in inplace) >= 12
    dag = [programs.generate(seed, "dag") for seed in range(20)]
    fan_out = [p for p in dag if len({a for op in p.ops for a in op.args})
               < sum(len(op.args) for op in p.ops)]
    assert len(fan_out) >= 10, "few DAGs read a value twice: gradients rarely meet"


def test_no_inplace_op_without_the_capability():
    for seed in range(20):
        program = programs.generate(seed, "dag", inplace=False)
        assert not any(op.name in programs.INPLACE for op in program.ops)


def test_threshold_shapes_are_just_over_the_thresholds_in_the_code():
    from arraygrad import _buffers
    from arraygrad.rules import _core

    shapes = programs.thresholds()
    nbytes = 8 * int(np.prod(shapes["reuse"][0]))
    assert _buffers.MIN_BYTES < nbytes <= _buffers.MIN_BYTES + 8 * 8  # a column over
    assert shapes["matmul_sum_over"][0][0] == _core.MATMUL_SUM_MAX + 1


def _planted(factor=1.001):
    """The NumPy backend with a wrong ``sin``: forward and gradient off by ``factor``."""
    real = ag.get_backend("numpy")
    ns = types.SimpleNamespace(**{name: getattr(real.ns, name) for name in
                                  ("sum", "mean", "cos", "tanh", "exp", "permute_dims",
                                   "reshape")})
    ns.sin = lambda x: real.ns.sin(x) * factor
    return types.SimpleNamespace(name="numpy", raw=real.raw, ns=ns, to_numpy=real.to_numpy,
                                 capabilities=real.capabilities)


def test_a_correct_program_passes_and_a_planted_bug_fails():
    program = Program(((3, 4), (4,)), (Op("sin", (0,)), Op("multiply", (2, 1)),
                                       Op("sum", (3,), (0, False))), seed=5)
    assert programs.check(ag.get_backend("numpy"), program) is None
    assert "NumPy's result" in programs.check(_planted(), program)


def test_the_shrinker_keeps_only_the_op_that_fails():
    backend = _planted()
    program = next(p for p in map(programs.generate, range(200))
                   if len(p.ops) >= 6 and programs.check(backend, p) is not None)
    small = programs.shrink(program, lambda p: programs.check(backend, p) is not None)
    # Minimal: it still fails, reads the wrong sin (also inside divide), and dropping any
    # one op makes it pass or leaves no valid program.
    lines, _ = programs.code_lines(small)
    assert len(small.ops) <= 2 and "xp.sin(" in "\n".join(lines), lines
    assert programs.check(backend, small) is not None
    for index in range(len(small.ops)):
        try:
            smaller = programs.without(small, index)
        except programs.Invalid:
            continue
        assert programs.check(backend, smaller) is None, programs.code_lines(smaller)


def test_the_shrinker_drops_ops_but_keeps_what_a_failure_needs():
    # A failure needing two ops: shrinking must keep both, and only them.
    def fails(program):
        names = [op.name for op in program.ops]
        return "tanh" in names and "cos" in names
    program = Program(((3, 4),), (Op("sin", (0,)), Op("tanh", (1,)), Op("square", (2,)),
                                  Op("cos", (3,)), Op("scale", (4,), 2.0)))
    small = programs.shrink(program, fails)
    assert [op.name for op in small.ops] == ["tanh", "cos"]
    assert small.ops[1].args == (1,)  # cos now reads tanh's result


def test_the_reproduction_is_python_that_runs_the_program():
    program = Program(((3,), (3, 1)), (Op("sin", (0,)), Op("multiply", (2, 1)),
                                       Op("getitem", (3,), (slice(1, None),)),
                                       Op("scale", (4,), 2.0)), seed=3)
    code = programs.python("numpy", program, "what was wrong")
    assert "v2 = xp.sin(x0)" in code and "v4 = v3[1:, ...]" in code
    assert code.endswith("# what was wrong")
    scope = {}
    exec(compile(code, "<reproduction>", "exec"), scope)
    (x0, x1), u = programs.draw(program)  # loss = sum(u * 2 * (sin(x0) * x1)[1:])
    expected_x1 = np.zeros((3, 1))
    expected_x1[1:, 0] = (2 * u * np.sin(x0)).sum(axis=1)
    expected_x0 = (2 * u * x1[1:]).sum(axis=0) * np.cos(x0)
    np.testing.assert_allclose(scope["x1"].grad.data, expected_x1, rtol=1e-12)
    np.testing.assert_allclose(scope["x0"].grad.data, expected_x0, rtol=1e-12)


def test_a_failing_family_reports_the_minimal_program(monkeypatch):
    planted = _planted()

    def family(backend, rng):
        programs.certify(planted, [programs.generate(int(s), "dag") for s in range(8)], "dag")

    case = Case("programs.planted", "dag", None, (), "programs", dtypes=("float64",),
                behaviour=family)
    result = runner.run_one("numpy", case, "float64")
    assert result.status == "fail"
    detail = result.checks["behaviour"][1]
    assert "minimal reproduction" in detail and "xp.sin(" in detail
    assert result.snippet() == result.program and "xp.sin(" in result.program
    from arraygrad.conformance import report

    text = report.text([result], {}, tracebacks=True)
    assert "minimal reproduction" in text and "backward()" in text
    document = report.as_json([result], {}, 0)
    assert document["results"][0]["python"] == result.program


def test_every_family_is_a_case_of_the_suite():
    ids = {c.id for c in CASES if c.family == "programs"}
    assert ids == set(programs.FAMILIES) | {f"programs.nested[{n}]" for n in
                                            __import__("arraygrad.conformance.nested",
                                                       fromlist=["PROGRAMS"]).PROGRAMS}


@pytest.mark.parametrize("case_id", ["programs.random[dag]", "programs.threshold[reuse_1d]",
                                     "programs.hooks[retain_grad,register_hook]",
                                     "programs.nested[grad_of_grad]"])
def test_families_pass_on_numpy(case_id):
    result = runner.run_one("numpy", runner.case(case_id), "float64")
    assert result.status == "pass", result.explain()


def _mutated(monkeypatch, mutant_id, module, names):
    """Put the functions ``names`` of ``module``, with mutant ``mutant_id`` of the table
    applied to their source file, in place of the real ones (pure-Python engine)."""
    from pathlib import Path

    from mutants.table import MUTANTS

    (mutant,) = [m for m in MUTANTS if m.id == mutant_id]
    source = (Path(__file__).resolve().parent.parent / mutant.path).read_text()
    assert source.count(mutant.original) == 1
    scope = dict(vars(module))
    exec(compile(source.replace(mutant.original, mutant.replacement), mutant.path, "exec"),
         scope)
    for name in names:
        monkeypatch.setattr(module, name, scope[name])


@pytest.mark.parametrize("mutant_id, module, names, family", [
    ("prog-accumulate-grad-assign", "arraygrad._engine", ["_accumulate"],
     "programs.threshold[reuse]"),
])
def test_a_slip_in_composed_machinery_is_caught_by_a_program_family(
        monkeypatch, mutant_id, module, names, family):
    import importlib

    target = importlib.import_module(module)
    assert runner.run_one("numpy", runner.case(family), "float64").status == "pass"
    _mutated(monkeypatch, mutant_id, target, names)
    result = runner.run_one("numpy", runner.case(family), "float64")
    assert result.status == "fail" and "minimal reproduction" in result.checks["behaviour"][1]
