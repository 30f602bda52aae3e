"""The conformance suite: it certifies the built-in backends, it can fail (deliberately broken
backends are caught, exactly), and its reports (text, JSON, HTML, pytest) hold what they say."""

import dataclasses
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

import array_api_compat.numpy as compat
import numpy as np
import pytest

import arraygrad as ag
from arraygrad.conformance import cases, cli, known, report, runner
from arraygrad.rules import RULES, Rule, conj

SUBSET = ["sin*", "cos*", "exp*", "multiply*", "sum*", "matmul*", "getitem*"]


def _subset():
    """Cases of SUBSET's ops (not the large ones, which compose sin or exp with their op)."""
    chosen = []
    for pattern in SUBSET:
        chosen.extend(c for c in runner.select(pattern) if c not in chosen
                      and "large" not in c.variant)
    return chosen


def _run(backend, selected):
    reference = runner._reference()
    return [runner.run_one(backend, c, d, reference=reference, known={}) for c in selected
            for d in c.dtypes]


def test_every_differentiable_function_has_a_case():
    covered = {c.op for c in cases.CASES}
    missing = {name for name in RULES if name not in covered and not name.startswith("linalg.")
               or name in ("linalg.vector_norm",) and name not in covered}
    aliases = {"linalg.matmul", "linalg.matrix_transpose", "linalg.tensordot", "linalg.vecdot",
               "to_device", "linalg.eig"}
    assert not (missing | {n for n in RULES if n.startswith("linalg.") and n not in covered}
                ) - aliases


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
def test_the_built_in_backends_pass_a_subset(backend):
    results = _run(backend, _subset())
    assert results and all(r.status in ("pass", "skip") for r in results), [
        (r.case.id, r.dtype, r.checks) for r in results if r.status == "fail"]
    assert sum(r.status == "pass" for r in results) > 0.9 * len(results)


# ----------------------------------------------------------------- deliberately broken backends
def _broken_backend(name, overrides=None, rules=None, linalg=None, deviations=None,
                    tolerances=None, get_index=None):
    """A NumPy-based backend whose arrays are an ndarray subclass of its own, with some functions
    or rules (or its get_index) replaced: registered at run time as any third-party plugin would
    be."""

    class Owned(np.ndarray):
        pass

    def own(value):
        if isinstance(value, (tuple, list)):
            return type(value)(own(v) for v in value)
        if isinstance(value, np.generic):
            value = np.asarray(value)
        return value.view(Owned) if isinstance(value, np.ndarray) and type(value) is not Owned else value

    class Namespace:
        __name__ = f"broken_{name}"

        def __init__(self, module, table):
            self._module, self._table = module, table

        def __getattr__(self, attr):
            if attr in self._table and self._table[attr] is None:  # a function it lacks
                raise AttributeError(f"{self.__name__} has no {attr!r}", name=attr, obj=self)
            value = self._table.get(attr) or getattr(self._module, attr)
            if attr in ("linalg", "fft"):
                return Namespace(value, linalg or {} if attr == "linalg" else {})
            if callable(value) and not isinstance(value, type):
                function = value
                return lambda *a, **k: own(function(*a, **k))
            return value

    namespace = Namespace(compat, overrides or {})

    class Plugin:
        @ag.hookimpl
        def arraygrad_backend(self):
            return ag.BackendSpec(
                name=name, arrays=(Owned,), namespace=lambda: namespace, rules=rules or {},
                deviations=deviations, tolerances=tolerances or {}, get_index=get_index,
                coerce=lambda array: own(array) if type(array) is not Owned else None)

    if name not in ag.registry.backends:
        ag.register_backend(Plugin(), name=f"broken-{name}")
    return name


def _failed(results):
    return {(r.case.id, r.dtype) for r in results if r.status == "fail"}


def test_a_backend_whose_sin_is_slightly_wrong_fails_exactly_the_sin_cases():
    wrong_sin = lambda x: compat.sin(x) * (1 + 1e-3)  # noqa: E731
    name = _broken_backend("wrong_sin", {"sin": wrong_sin})
    results = _run(name, _subset())
    # sin's values disagree with NumPy's in every dtype; its gradient (cos) disagrees with them:
    # central differences catch that in float64. cos's gradient is -sin: wrong in every dtype,
    # against the reference backend too. sinc is made of the backend's sin: its values are
    # wrong too. (Size-0 variants have no values to be wrong.)
    expected = {(r.case.id, r.dtype) for r in results if r.case.variant != "size0" and (
        r.case.op in ("sin", "cos", "sinc"))}
    assert expected and _failed(results) == expected
    assert all(r.checks["numerical"][0] == "fail" for r in results if r.case.op == "sin"
               and r.status == "fail" and r.dtype in ("float64", "complex128"))
    sin_failures = [r for r in results if r.case.op == "sin" and r.status == "fail"]
    assert all(r.checks["forward"][0] == "fail" and f"`sin` in {r.dtype} differs from NumPy's"
               in r.checks["forward"][1] and "expected" in r.checks["forward"][1]
               for r in sin_failures), [r.checks["forward"] for r in sin_failures]
    assert all(r.checks["cross_backend"][0] == "fail" for r in results if r.case.op == "cos"
               and r.status == "fail")


def test_a_forward_in_the_wrong_dtype_fails_the_forward_check():
    """float32 * float32 giving float64 is the backend's own function's answer too: the
    comparison with the reference (the standard's type promotion) sees it, and where a case is
    written with an operator, the comparison with the library's own operator."""
    def widening(x1, x2, /):
        answer = compat.multiply(x1, x2)
        return answer.astype(np.float64) if answer.dtype == np.float32 else answer

    name = _broken_backend("widening_multiply", {"multiply": widening})
    results = _run(name, [c for c in _subset() if c.op == "multiply"])
    float32 = {(r.case.id, r.dtype) for r in results if r.dtype == "float32"}
    # The variants written with operators (3 * x, x *= b) call this multiply too: there the
    # library's own operator, which keeps float32, disagrees first.
    operators = {("multiply[scalar_left]", "float32"), ("multiply[inplace]", "float32")}
    assert {("multiply[same]", "float32"), ("multiply[broadcast]", "float32")} | operators <= (
        _failed(results)) <= float32
    assert all(("dtype float64 != float32" if (r.case.id, r.dtype) in operators else
                "`multiply` in float32 returned float64, expected float32") in
               r.checks["forward"][1] for r in results if r.status == "fail")


def test_a_wrong_matmul_fails_the_cases_written_with_the_operator_too():
    """``a @ b`` calls the backend's ``matmul``, as ``xp.matmul(a, b)`` does (not the array
    type's own ``__matmul__``): a matmul that transposes square products fails the square case
    in both spellings, the operator's by its forward check."""
    def transposing(x1, x2, /):
        out = compat.matmul(x1, x2)
        square = out.ndim >= 2 and out.shape[-1] == out.shape[-2]
        return compat.matrix_transpose(out) if square else out

    name = _broken_backend("transposing_matmul", {"matmul": transposing})
    results = _run(name, runner.select("matmul*"))
    assert _failed(results) == {(case, dtype) for case in ("matmul[square]",
                                                          "matmul[square,function]")
                                for dtype in ("float64", "float32")}
    assert all(r.checks["forward"][0] == "fail" for r in results if r.status == "fail")


def test_the_getitem_cases_run_the_declared_get_index():
    """``x[key]`` calls the plugin's ``get_index``, and the getitem cases call it on the
    backend's own arrays too: a wrong one fails them against NumPy, and torch's, which flips the
    axes of the negative steps torch refuses, passes the case torch's own indexing cannot run."""
    name = _broken_backend("shifted_get_index", get_index=lambda array, key: array[key] + 1)
    results = [r for r in _run(name, runner.select("getitem*")) if r.status != "skip"]
    assert results and all(r.checks["forward"][0] == "fail" and "differs from NumPy's" in
                           r.checks["forward"][1] for r in results)
    pytest.importorskip("torch")
    result = runner.run_one("torch", runner.case("getitem[negative_step]"), "float64", known={})
    assert result.status == "pass", result.checks


def test_the_forward_check_accepts_what_the_standard_leaves_to_the_library():
    """Against the reference, values are compared in inexact outputs only (an index's integer
    width is the library's choice), NaN equals NaN, and a value within the dtype's tolerance
    passes."""
    def int32_argmax(x, /, **kwargs):
        return compat.argmax(x, **kwargs).astype(np.int32)

    near = lambda x: compat.sin(x) * (1 + 1e-6)  # noqa: E731  (float32's rtol is 1e-4)
    name = _broken_backend("lenient_forward", {"argmax": int32_argmax, "sin": near})
    runner_ = runner._Runner(ag.get_backend(name), runner.case("sin[2d]"), "float32", 0,
                             (1e-4, 1e-5))
    runner_._forward_reference([np.array([np.nan, 1.0], np.float32)], type(
        "Reference", (), {"forward": staticmethod(lambda case, host: [
            np.array([np.nan, 1.0], np.float32), np.array(3)])}))
    assert "forward" not in runner_.checks
    results = _run(name, [c for c in _subset() if c.op == "sin"])
    assert all(r.status == "pass" for r in results if r.dtype in ("float32", "complex64")), [
        (r.id, r.dtype, r.checks["forward"]) for r in results if r.status != "pass"]


def test_a_wrong_gradient_override_fails_exactly_that_op():
    wrong = Rule("exp", ["x"], [lambda xp, g, ans: g * conj(xp, ans) * 1.01])
    name = _broken_backend("wrong_exp_rule", rules={"exp": wrong})
    results = _run(name, _subset())
    expected = {(r.case.id, r.dtype) for r in results if r.case.op == "exp"
                and r.case.variant != "size0"}
    assert expected and _failed(results) == expected
    assert all(r.checks["cross_backend"][0] == "fail" for r in results if r.status == "fail")


def test_a_rule_without_its_conj_fails_the_numerical_check_on_complex_inputs():
    """exp's VJP ``g * ans`` instead of ``g * conj(ans)`` is right for real inputs and wrong for
    complex ones. Central differences see it only along complex directions: with real
    cotangents and real directions ``Re<v, u ans>`` equals ``Re<v, u conj(ans)>``."""
    dropped = Rule("exp", ["x"], [lambda xp, g, ans: g * ans])
    name = _broken_backend("exp_without_conj", rules={"exp": dropped})
    results = [r for r in _run(name, _subset()) if r.case.op == "exp"
               and r.case.variant != "size0"]
    complex_results = [r for r in results if r.dtype.startswith("complex")
                       or r.case.variant.startswith("complex")]
    # complex64 has no central differences (float64 only): the reference backend catches it.
    assert {r.dtype for r in complex_results} == {"complex64", "complex128"}
    assert all(r.checks["numerical" if r.dtype == "complex128" else "cross_backend"][0] == "fail"
               for r in complex_results), [(r.case.id, r.dtype, r.checks) for r in complex_results]
    assert all(r.status == "pass" for r in results if r not in complex_results), [
        (r.case.id, r.dtype) for r in results if r not in complex_results and r.status != "pass"]

def test_a_rule_that_writes_into_its_cotangent_fails_the_invariants():
    def overwriting(xp, g, ans):
        g *= ans  # the right value, but the caller's cotangent is destroyed
        return g

    name = _broken_backend("overwrites_g", rules={"exp": Rule("exp", ["x"], [overwriting])})
    results = [r for r in _run(name, _subset()) if r.case.op == "exp"
               and r.case.variant != "size0" and r.case.variant != "0d"]
    assert results and all(r.checks["invariants"][:2] == ("fail", "the upstream gradient was "
                                                      "modified") for r in results), [
        (r.case.id, r.checks["invariants"]) for r in results]


def test_a_gradient_of_the_wrong_dtype_fails_exactly_that_op():
    # multiply's gradient comes back in float32, and this backend's astype ignores its dtype,
    # so the engine's cast cannot repair it.
    def to_float32(xp, a):
        return np.asarray(a).astype(np.float32).view(type(a)) if "complex" not in str(
            a.dtype) else np.real(np.asarray(a)).astype(np.float32).view(type(a))

    wrong = Rule("multiply", ["x1", "x2"], [
        lambda xp, g, x2: to_float32(xp, g * conj(xp, x2)),
        lambda xp, g, x1: to_float32(xp, g * conj(xp, x1))])
    name = _broken_backend("wrong_dtype", {"astype": lambda x, dtype, **k: x},
                           rules={"multiply": wrong})
    # (complex variants build their input with a multiplication by 1j, and sum[dtype] needs
    # astype to cast its gradient back to float32: they would fail too)
    results = _run(name, [c for c in _subset() if c.op != "getitem"
                          and not c.variant.startswith(("complex,", "dtype"))])
    expected = {(r.case.id, r.dtype) for r in results if r.case.op == "multiply"
                and r.dtype != "float32"}  # float32 inputs: a float32 gradient is right
    # (second order of other ops differentiates their VJPs, which multiply: left out here)
    first_order = {(r.case.id, r.dtype) for r in results if any(
        status == "fail" for check, (status, *_) in r.checks.items() if check != "second_order")}
    assert expected and first_order == expected
    failing = [r for r in results if (r.case.id, r.dtype) in first_order]
    assert all("dtype" in r.checks["invariants"][1] for r in failing)


def test_the_command_exits_non_zero_on_failure_and_lists_a_reproduction(capsys):
    name = _broken_backend("wrong_sin", {"sin": lambda x: compat.sin(x) * (1 + 1e-3)})
    assert cli.main(["--backend", name, "--op", "sin[2d]", "-q"]) == 1
    out = capsys.readouterr().out
    # registered at run time from no importable module: the line says where --plugin goes
    assert (f"reproduce: arraygrad conformance --plugin MODULE:OBJECT --backend {name} --op "
            "'sin[2d]' --dtype float64 --seed 0 --traceback") in out
    assert "max abs error" in out
    assert cli.main(["--backend", "numpy", "--op", "cos[2d]", "-q"]) == 0


def test_a_reproduce_line_is_shell_quoted_and_reruns_a_runtime_plugin(tmp_path, monkeypatch,
                                                                      capsys):
    """A backend registered at run time from a module is reproduced with --plugin; a name with
    shell metacharacters stays one quoted word."""
    import shlex

    (tmp_path / "odd_plugin.py").write_text(
        "import array_api_compat.numpy as np_ns, numpy as np\n"
        "from arraygrad import BackendSpec, hookimpl\n"
        "class Odd(np.ndarray):\n    pass\n"
        "class NS:\n"
        "    def __getattr__(self, name):\n"
        "        f = getattr(np_ns, name)\n"
        "        if name == 'sin':\n"
        "            return lambda x: np.asarray(np_ns.sin(x) * 1.001).view(Odd)\n"
        "        if not callable(f) or isinstance(f, type):\n            return f\n"
        "        def own(*a, **k):\n"
        "            out = f(*a, **k)\n"
        "            return np.asarray(out).view(Odd) if isinstance(out, (np.ndarray, np.generic)) else out\n"
        "        return own\n"
        "@hookimpl\n"
        "def arraygrad_backend():\n"
        "    return BackendSpec(name='odd;$(echo no)', arrays=(Odd,), namespace=lambda: NS(),\n"
        "                       to_numpy=lambda a: np.asarray(a).view(np.ndarray))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import odd_plugin

    ag.register_backend(odd_plugin)
    try:
        result = runner.run_one("odd;$(echo no)", runner.case("sin[2d]"), "float64")
        assert result.status == "fail"
        line = result.reproduce()
        words = shlex.split(line)
        assert words[words.index("--backend") + 1] == "odd;$(echo no)"
        assert words[words.index("--plugin") + 1] == "odd_plugin"
        assert cli.main(words[2:] + ["-q"]) == 1  # the plugin is registered already: reused
        assert "odd;$(echo no) sin[2d] float64" in capsys.readouterr().out
        snippet = result.snippet()
        assert "import odd_plugin" in snippet
        assert "runner.case('sin[2d]')" in snippet
    finally:
        ag.registry.unregister(odd_plugin)


# ------------------------------------------------------------------------------ reports
@pytest.fixture(scope="module")
def small_run():
    return runner.run(["numpy", "array_api_strict"], "exp*", None, 0)


def test_progress_is_a_bar_on_a_terminal_and_ten_lines_in_a_log():
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    log, terminal = io.StringIO(), Terminal()
    for stream in (log, terminal):
        show = runner.progress_bar(stream)
        for done in range(1001):
            show(done, 1000, "numpy sin[2d] float64")
    assert log.getvalue().splitlines()[-1] == "1000/1000 case runs (100%)"
    assert len(log.getvalue().splitlines()) == 11 and "\r" not in log.getvalue()
    # rich's bar: redrawn in place, then cleared (transient), the cursor shown again
    drawn = terminal.getvalue()
    assert "100%" in drawn and "\n" not in drawn.replace("\n\x1b[?25h", "")
    assert drawn.endswith("\x1b[2K")


def test_json_report_is_versioned_and_complete(small_run, tmp_path):
    results, unavailable = small_run
    path = tmp_path / "report.json"
    report.write_json(path, results, unavailable, 0)
    document = json.loads(path.read_text())
    assert document["schema"] == "arraygrad-conformance" and document["version"] == 1
    assert len(document["results"]) == len(results)
    first = document["results"][0]
    assert set(first["checks"]) >= set(cases.CHECKS)
    assert sum(row["pass"] for row in document["summary"]["numpy"].values()) == sum(
        r.status == "pass" for r in results if r.backend == "numpy")


class _MatrixParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.cells, self.rows, self.external = [], 0, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "td":
            self.cells.append((attrs.get("class"), attrs.get("title", "")))
        if tag == "tr":
            self.rows += 1
        for key in ("src", "href"):
            if attrs.get(key, "").startswith(("http", "//")):
                self.external.append(attrs[key])


def test_html_report_holds_the_matrix_and_needs_no_network(small_run, tmp_path):
    results, unavailable = small_run
    page = report.as_html(results, unavailable, 0)
    parser = _MatrixParser()
    parser.feed(page)
    case_ids = {r.case.id for r in results}
    assert parser.rows == len(case_ids) + 1  # one row per case, plus the header
    assert len(parser.cells) == 2 * len(case_ids)  # one cell per case and backend
    assert all(status == "pass" for status, _ in parser.cells)
    assert all(": pass;" in title and "fail" not in title for _, title in parser.cells)
    assert not parser.external


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian package chromium)")
def test_html_report_renders_in_a_real_browser(small_run, tmp_path):
    results, unavailable = small_run
    page = tmp_path / "report.html"
    report.write_html(page, results, unavailable, 0)
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tempfile.mkdtemp()}", "--enable-logging=stderr", "--v=0"]
    dom = subprocess.run(flags + ["--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120)
    assert 'data-ready="yes"' in dom.stdout  # the page's script ran
    assert "Uncaught" not in dom.stderr and "CONSOLE" not in dom.stderr.upper().replace(
        "CONSOLE_", "")
    shot = tmp_path / "shot.png"
    subprocess.run(flags + [f"--screenshot={shot}", "--window-size=900,700", page.as_uri()],
                   capture_output=True, timeout=120)
    pixels = _png_pixels(shot.read_bytes())
    green = (0x3C, 0x9A, 0x5F)  # the colour of a passing cell
    assert any(tuple(p[:3]) == green for p in pixels), "no passing cell is visible"


def _png_pixels(data):
    """Decode an 8-bit RGB(A) PNG (no interlace) into a list of pixels, with NumPy only."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks, header = 8, b"", None
    while position < len(data):
        length = int.from_bytes(data[position:position + 4], "big")
        kind = data[position + 4:position + 8]
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks += body
        position += 12 + length
    width, height = int.from_bytes(header[:4], "big"), int.from_bytes(header[4:8], "big")
    channels = {2: 3, 6: 4}[header[9]]
    raw = np.frombuffer(zlib.decompress(chunks), dtype=np.uint8)
    stride = width * channels
    image = np.zeros((height, stride), dtype=np.int32)
    previous = np.zeros(stride, dtype=np.int32)
    for row in range(height):
        line = raw[row * (stride + 1):(row + 1) * (stride + 1)]
        kind, values = line[0], line[1:].astype(np.int32)
        out = np.zeros(stride, dtype=np.int32)
        for i in range(stride):
            left = out[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            predictor = {0: 0, 1: left, 2: up, 3: (left + up) // 2,
                         4: _paeth(left, up, corner)}[kind]
            out[i] = (values[i] + predictor) & 0xFF
        image[row] = out
        previous = out
    return image.reshape(height * width, channels)[:: max(1, width // 50)]


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def test_pytest_plugin_gives_one_test_per_case_with_readable_ids(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "arraygrad.conformance",
         "--arraygrad-backend", "array_api_strict", "--arraygrad-op", "sum[axis=-1*", "-v",
         "-p", "no:cacheprovider"], capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stdout[-2000:]
    assert "[array_api_strict-sum[axis=-1,keepdims=False]-float64] PASSED" in done.stdout
    assert "4 passed" in done.stdout


@pytest.mark.parametrize("seed", [0, 1, 3])
@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
def test_every_case_passes_on_the_built_in_backends(backend, seed):
    """The whole suite: every differentiable function of the standard, every variant, checked
    against central differences (and second order, forward mode, NumPy) on this backend, for
    several seeds: every case's domain holds for any draw (``lo <= hi`` for clip, say)."""
    results, unavailable = runner.run([backend], seed=seed)
    assert not unavailable
    failures = [(r.case.id, r.dtype, {k: v[1] for k, v in r.checks.items() if v[0] == "fail"})
                for r in results if r.status == "fail"]
    assert not failures
    assert {r.case.op for r in results} >= set(RULES) - {
        "linalg.matmul", "linalg.matrix_transpose", "linalg.tensordot", "linalg.vecdot",
        "to_device", "linalg.eig"}  # aliases of checked rules; eig has its own tests


# ------------------------------------------- every check fails on a deliberately wrong input
def test_a_wrong_jvp_alone_fails_exactly_the_forward_mode_check():
    wrong = Rule("exp", ["x"], [lambda xp, g, ans: g * conj(xp, ans)],
                 jvps=[lambda xp, t, ans: t * ans * 1.01])
    name = _broken_backend("wrong_exp_jvp", rules={"exp": wrong})
    results = _run(name, [c for c in _subset() if c.op == "exp" and c.variant != "size0"])
    failing = {(r.case.id, r.dtype) for r in results if r.status == "fail"}
    assert failing == {(r.case.id, r.dtype) for r in results if r.dtype in runner.FLOAT64}
    assert all({check for check, (status, *_) in r.checks.items() if status == "fail"}
               == {"forward_mode"} for r in results if r.status == "fail")


def test_a_vjp_right_in_value_but_not_differentiable_fails_the_second_order_check():
    def detached(xp, g, ans):  # the right first derivative; its own derivative is lost
        return g * conj(xp, ans.detach() if isinstance(ans, ag.Variable) else ans)

    name = _broken_backend("detached_exp", rules={"exp": Rule(
        "exp", ["x"], [detached], jvps=[lambda xp, t, ans: t * ans])})
    result = runner.run_one(name, next(c for c in cases.CASES if c.id == "exp[2d]"), "float64",
                            known={})
    assert result.checks["second_order"][0] == "fail"
    assert {k for k, (s, *_) in result.checks.items() if s == "fail"} == {"second_order"}


def _runner_on(case_id, dtype="float64"):
    case = next(c for c in cases.CASES if c.id == case_id)
    run = runner._Runner(ag.get_backend("numpy"), case, dtype, 0,
                         ag.get_backend("numpy").tolerances(dtype))
    run.run(runner._reference(None))
    return run


def test_the_full_jacobian_check_sees_one_wrong_coordinate():
    run = _runner_on("take[basic]")  # repeated indices: gradients accumulate
    assert run.checks["jacobian"][0] == "pass"
    ns = ag.namespace("numpy")
    x = ag.Variable(run.host[0], requires_grad=True)
    us = [np.random.default_rng(1).standard_normal((3, 4))]
    out = run.case.call(ns, x)
    out.backward(ns.asarray(us[0]))
    wrong = x.grad.data.copy()
    wrong[2, 3] += 1e-3  # one coordinate of twelve, by a thousandth
    run._jacobian(lambda *xs: run.case.call(ns, *xs), [ag.Variable(wrong)], us, None)
    assert run.checks["jacobian"][0] == "fail"
    run._jacobian(lambda *xs: run.case.call(ns, *xs), [x.grad], us, None)
    assert run.checks["jacobian"][0] == "pass"


def test_nan_against_nan_fails_unless_the_case_expects_it():
    run = _runner_on("sin[2d]")
    run.compare("numerical", [np.array([np.nan, 1.0])], [np.array([np.nan, 1.0])])
    assert run.checks["numerical"][0] == "fail" and "NaN" in run.checks["numerical"][1]
    run.compare("numerical", [np.array([np.nan])], [np.array([2.0])])
    assert run.checks["numerical"][0] == "fail"
    run.compare("numerical", [np.array([np.inf])], [np.array([2.0])])
    assert run.checks["numerical"][0] == "fail"
    run.case = dataclasses.replace(run.case, nan_expected=True)
    run.compare("numerical", [np.array([np.nan, 1.0])], [np.array([np.nan, 1.0])])
    assert run.checks["numerical"][0] == "pass"


def test_the_convention_and_external_checks_fail_on_a_wrong_gradient():
    run = _runner_on("max[ties,axis=1]")
    assert run.checks["convention"][0] == "pass" and run.checks["numerical"][0] == "skip"
    x = run.host[0]
    us = [np.arange(1.0, 4.0)]
    first_of_ties = (x == x.max(axis=1, keepdims=True)).cumsum(axis=1) == 1  # torch.max(dim)
    wrong = np.where(first_of_ties & (x == x.max(axis=1, keepdims=True)), us[0][:, None], 0.0)
    run._convention([wrong], us)
    assert run.checks["convention"][0] == "fail"
    if runner.external.available() == "torch":
        run._external([wrong], us, runner._reference("torch"))
        assert run.checks["external"][0] == "fail"
        run._external(run.case.convention([x], us), us, runner._reference("torch"))
        assert run.checks["external"][0] == "pass"


def test_a_function_the_backend_lacks_fails_unless_allowed():
    name = _broken_backend("no_hypot", {"hypot": None})
    case = next(c for c in cases.CASES if c.id == "hypot[same]")
    failed = runner.run_one(name, case, "float64", known={})
    assert failed.status == "fail" and "--allow-missing" in failed.checks["forward"][1]
    allowed = runner.run_one(name, case, "float64", known={}, allow_missing=True)
    assert allowed.status == "skip" and "not provided" in allowed.checks["forward"][1]
    extension = next(c for c in cases.CASES if c.id == "linalg.inv[3x3]")
    no_inv = _broken_backend("no_inv", linalg={"inv": None})
    assert runner.run_one(no_inv, extension, "float64", known={}).status == "skip"
    rows = report.removed([allowed])
    assert list(rows[name].values()) == [1]


# ------------------------------------------------------------------------------ deviations
def test_a_plugin_ships_deviations_targeting_a_dtype_and_a_check():
    text = ("# its sin is 0.1% off (float64 central differences see it)\nsin[*] float64\n"
            "# only the numerical check of cos\ncos[2d] float64 numerical\n")
    name = _broken_backend("wrong_sin_known", {"sin": lambda x: compat.sin(x) * (1 + 1e-3)},
                           deviations=lambda: text)
    results = runner.run([name], "sin*", external_library=None)[0] + runner.run(
        [name], "cos[2d]", external_library=None)[0]
    by_id = {(r.case.id, r.dtype): r for r in results}
    assert by_id[("sin[2d]", "float64")].status == "deviation"
    assert "0.1% off" in by_id[("sin[2d]", "float64")].checks["numerical"][1]
    assert by_id[("sin[complex]", "complex128")].status == "fail"  # another dtype: not covered
    cos = by_id[("cos[2d]", "float64")]  # only its numerical check is covered
    assert cos.status == "fail" and cos.checks["cross_backend"][0] == "fail"
    assert cos.checks["numerical"][0] in ("deviation", "pass")
    entries = known.for_backend(ag.get_backend(name))
    assert known.stale(results, {name: entries}) == []
    assert "known deviation" in report.text(results, {})


def test_deviation_entries_that_match_nothing_or_do_not_parse_are_errors(tmp_path, capsys):
    with pytest.raises(ValueError, match="'float65' is neither a dtype nor a check"):
        known.parse("# reason\nsin[2d] float65\n", "f.txt")
    with pytest.raises(ValueError, match="no '# reason'"):
        known.parse("sin[2d]\n", "f.txt")
    typo = tmp_path / "typo.txt"
    typo.write_text("# a typo\nexpp[2d]\n")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--backend", "numpy", "--op", "exp[2d]", "--deviations", str(typo), "-q"])
    assert exit_info.value.code == 2 and "expp[2d]" in capsys.readouterr().err


def test_a_stale_deviation_is_reported_and_fails_under_strict(tmp_path, capsys):
    stale = tmp_path / "stale.txt"
    stale.write_text("# fixed long ago\nsin[2d] float64\n")
    arguments = ["--backend", "numpy", "--op", "sin[2d]", "--deviations", str(stale), "-q",
                 "--external", "none"]
    assert cli.main(arguments) == 0
    assert "1 stale deviation entry" in capsys.readouterr().out
    assert cli.main(arguments + ["--strict-deviations"]) == 1


def test_a_plugin_s_tolerances_loosen_every_check_with_a_tolerance():
    wrong_sin = {"sin": lambda x: compat.sin(x) * (1 + 1e-3)}
    case = next(c for c in cases.CASES if c.id == "sin[2d]")
    tight = runner.run_one(_broken_backend("sin_tight", wrong_sin), case, "float64", known={})
    assert {"numerical", "jacobian", "second_order"} <= {
        k for k, (status, *_) in tight.checks.items() if status == "fail"}
    loose = runner.run_one(_broken_backend("sin_loose", wrong_sin, tolerances={
        "float64": (1e-2, 1e-2)}), case, "float64", known={})
    assert all(status != "fail" for status, *_ in loose.checks.values()), loose.checks


def test_the_reports_list_every_tolerance_looser_than_the_defaults(tmp_path):
    name = _broken_backend("loose_float32", tolerances={"float32": (1e-2, 1e-5),
                                                        "float64": (1e-8, 1e-9)})
    results = _run(name, [runner.case("sin[2d]")])
    listed = "float32: rtol 0.01, atol 1e-05 (default 0.0001, 1e-05)"
    text = report.text(results, {})
    assert f"{name}: declares tolerances looser than arraygrad's defaults: {listed}" in text
    assert "float64: rtol 1e-08" not in text  # tighter than the default: nothing to say
    document = report.as_json(results, {}, 0)
    assert document["tolerances"] == {name: {"float32": {"rtol": 1e-2, "atol": 1e-5,
                                                         "default": [1e-4, 1e-5]}}}
    assert f"<li>looser tolerance: {listed}</li>" in report.as_html(results, {}, 0)
    assert report.as_json(_run("numpy", [runner.case("sin[2d]")]), {}, 0)["tolerances"] == {}

