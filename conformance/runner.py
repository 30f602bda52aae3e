"""Runs the conformance checks of every case on a backend and collects the results."""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import shlex
import signal
import sys
import threading
import time
import traceback
import types
import zlib

import numpy as np

import arraygrad as ag
from arraygrad.errors import BackendUnavailable
from arraygrad.hookspecs import DTYPES
from arraygrad.testing import counted, grad_function, gradient_errors, host_inner, random_like

from . import behaviour, diagnose, external, known as deviations
from .cases import CASES, CHECKS, draw

REFERENCE = "numpy"


@dataclasses.dataclass
class Result:
    """The outcome of one case on one backend in one dtype: a status per check."""

    backend: str
    case: object
    dtype: str
    checks: dict  # check -> (status, detail, max_abs, max_rel)
    seed: int
    inputs: str | None = None  # the backend's semantic inputs (``"masked"``), or plain ones
    cause: str | None = None  # the call to blame, found by running the failure again traced
    traceback: str | None = None  # of a crash
    program: str | None = None  # a failing program's minimal reproduction (programs.*)

    @property
    def id(self) -> str:
        """The case id, with ``@inputs`` for the backend's semantic inputs."""
        return self.case.id + (f"@{self.inputs}" if self.inputs else "")

    @property
    def status(self) -> str:
        statuses = [s for s, *_ in self.checks.values()]
        for status in ("fail", "deviation", "pass"):
            if status in statuses:
                return status
        return "skip"

    def _plugin(self):
        """``module:object`` of a backend registered at run time (None: from an entry point,
        or not importable by name)."""
        backend = ag.get_backend(self.backend)
        if backend.from_entry_point:
            return None
        plugin = backend.plugin
        if isinstance(plugin, types.ModuleType):
            return plugin.__name__
        module = sys.modules.get(getattr(plugin, "__module__", ""))
        name = next((k for k, v in vars(module).items() if v is plugin), None) if module else None
        return f"{module.__name__}:{name}" if name else "MODULE:OBJECT"

    def reproduce(self) -> str:
        """A shell command running this case again (quoted for POSIX shells)."""
        plugin = self._plugin()
        semantic = ag.get_backend(self.backend).spec.semantic_inputs
        op = self.id if self.inputs or not semantic else f"{self.id}@plain"
        return shlex.join(["arraygrad", "conformance", *(["--plugin", plugin] if plugin else []),
                           "--backend", self.backend, "--op", op, "--dtype",
                           {"complex64": "float32", "complex128": "float64"}.get(self.dtype,
                                                                                 self.dtype),
                           "--seed", str(self.seed), "--traceback"])

    def snippet(self) -> str:
        """Python lines running this case again and printing each check, the cause and the
        traceback; for a failing program, its minimal reproduction."""
        if self.program:
            return self.program
        plugin = self._plugin()
        register = ""
        if plugin:
            module, _, name = plugin.partition(":")
            register = (f"import {module}\nag.register_backend({module}"
                        f"{'.' + name if name else ''})\n")
        return (f"import arraygrad as ag\nfrom arraygrad.conformance import runner\n{register}"
                f"result = runner.run_one({self.backend!r}, runner.case({self.case.id!r}), "
                f"{self.dtype!r}, seed={self.seed}"
                f"{f', inputs={self.inputs!r}' if self.inputs else ''})\n"
                "print(result.explain())")

    def explain(self) -> str:
        """Every check with its status and detail, then the cause and the traceback."""
        lines = [f"{self.backend} {self.id} {self.dtype}: {self.status}"]
        lines += [f"  {check}: {status}{' - ' + detail if detail else ''}"
                  for check, (status, detail, *_) in self.checks.items()]
        if self.cause:
            lines.append(f"  cause: {self.cause}")
        if self.traceback:
            lines.append(self.traceback.rstrip())
        return "\n".join(lines)


def _matches(text, pattern):
    """Glob matching where brackets are literal (``prod[axis=None*`` as typed): case ids
    contain them; ``?`` and ``*`` remain wildcards."""
    return fnmatch.fnmatchcase(text, pattern.replace("[", "[[]"))


def _patterns(patterns) -> list:
    """``--op``'s globs as a list: one glob, several (the option is repeatable), or none."""
    return [patterns] if isinstance(patterns, str) else list(patterns or ())


def _case_matches(case, pattern) -> bool:
    pattern = pattern.split("@")[0]
    return _matches(case.id, pattern) or _matches(case.op, pattern)


def select(patterns):
    """The cases whose id or op matches the glob ``patterns`` (or any of a list of globs; all
    cases when there is none); in ``id@inputs``, the part before ``@``."""
    patterns = _patterns(patterns)
    if not patterns:
        return list(CASES)
    return [c for c in CASES if any(_case_matches(c, p) for p in patterns)]


def wanted(case, kind, patterns) -> bool:
    """Whether a run of ``patterns`` (a glob, a list of globs, or None for all) includes
    ``case`` on the inputs ``kind``: some one glob must select both."""
    patterns = _patterns(patterns)
    return not patterns or any(_case_matches(case, p) and _inputs_selected(kind, p)
                               for p in patterns)


def case(case_id: str):
    """The case with this id (``"prod[axis=None]"``)."""
    for c in CASES:
        if c.id == case_id:
            return c
    raise ValueError(f"no conformance case {case_id!r} (arraygrad conformance --list shows them)")


def _inputs_selected(kind, pattern):
    """Whether the run of ``pattern`` includes the inputs ``kind`` (None: plain ones): a
    pattern without ``@`` takes every kind, ``...@masked`` only that one, ``...@plain`` the
    plain inputs alone."""
    if not pattern or "@" not in pattern:
        return True
    wanted = pattern.split("@", 1)[1]
    if wanted == "plain":
        return kind is None
    return kind is not None and fnmatch.fnmatchcase(kind, wanted)


def _outputs(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _errors(got, expected):
    got, expected = np.asarray(got, dtype=complex), np.asarray(expected, dtype=complex)
    if got.size == 0:
        return 0.0, 0.0
    diff = np.abs(got - expected)
    diff = np.where(np.isnan(got) & np.isnan(expected), 0, diff)
    return float(np.max(diff)), float(np.max(diff / np.maximum(np.abs(expected), 1e-30)))


FLOAT64 = ("float64", "complex128")
_REAL = {"complex64": "float32", "complex128": "float64"}
JACOBIAN_SIZE = 24  # the full Jacobian is checked when inputs and outputs have at most this
#                     many real coordinates; larger cases rely on the random projections


class _Runner:
    """Checks of one case on one backend in one dtype."""

    def __init__(self, backend, case, dtype, seed, tolerances, allow_missing=False,
                 inputs=None):
        self.backend, self.case, self.dtype, self.seed = backend, case, dtype, seed
        self.rtol, self.atol = tolerances
        self.rtol = case.rtol.get(dtype, self.rtol)
        self.allow_missing = allow_missing
        self.rng = np.random.default_rng(seed + zlib.crc32(case.id.encode()))
        self.host = [draw(arg, dtype, self.rng) for arg in case.args]
        self.checks = {}
        self.program = None
        self.stage = "drawing the inputs"
        self.inputs = inputs
        make = backend.spec.semantic_inputs[inputs] if inputs else None
        # Host values to the backend's arrays: its semantic inputs for float and complex ones.
        self.to_backend = backend.raw.asarray if make is None else (
            lambda h: make(h) if np.issubdtype(np.asarray(h).dtype, np.inexact)
            else backend.raw.asarray(h))

    def _raw(self, host, arg):
        raw = self.backend.raw
        if arg.strided and self.inputs is None and self.backend.name in ("numpy", "torch", "cupy"):
            return raw.permute_dims(raw.asarray(np.ascontiguousarray(host.T)),
                                    tuple(reversed(range(host.ndim))))
        return self.to_backend(host)

    def record(self, check, status, detail="", errors=(None, None)):
        self.checks[check] = (status, detail, *errors)

    def compare(self, check, got, expected, rtol=None, atol=None):
        rtol = self.rtol if rtol is None else rtol
        atol = self.atol if atol is None else atol
        worst = (0.0, 0.0)
        for g, e in zip(got, expected):
            if np.shape(g) != np.shape(e):
                return self.record(check, "fail", f"shape {np.shape(g)} != {np.shape(e)}")
            g, e = np.asarray(g, dtype=complex), np.asarray(e, dtype=complex)
            abs_err, rel_err = _errors(g, e)
            worst = (max(worst[0], abs_err), max(worst[1], rel_err))
            if not np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=self.case.nan_expected):
                nans = np.isnan(g) | np.isnan(e)
                ours = (np.isnan(g) & ~np.isnan(e)).any()
                detail = (("NaN where the reference is not NaN" if ours else
                           "the reference is NaN where this is not")
                          if nans.any() and not self.case.nan_expected else
                          f"max abs error {abs_err:.3g}, max rel error {rel_err:.3g}")
                return self.record(check, "fail", f"{detail} (rtol {rtol:g}, atol {atol:g})",
                                   (abs_err, rel_err))
        self.record(check, "pass", "", worst)

    def at_least(self, rtol, atol):
        """A check's own tolerances, loosened to the backend's where it declares looser ones
        (central differences cannot be trusted beyond about 1e-5 in any case)."""
        return max(rtol, self.rtol), max(atol, self.atol)

    def skip_all(self, reason):
        for check in CHECKS:
            self.record(check, "skip", reason)
        return self.checks

    def run(self, reference):
        backend, case = self.backend, self.case
        caps = backend.capabilities()
        missing = [f"capability {c!r} is False" for c in case.requires if not caps.get(c, True)]
        # The inputs' dtypes too: conj[2d] runs in float64 on complex128 inputs.
        missing += [f"the backend declares no {dtype}" for dtype in dict.fromkeys(
            (self.dtype, *(str(h.dtype) for h in self.host))) if dtype not in backend.dtypes]
        if missing:
            return self.skip_all(missing[0])
        if case.behaviour is not None:
            return self._behaviour()
        self.record("behaviour", "skip", "checked by the autograd.* cases")
        ns, raw = backend.ns, backend.raw
        self.stage = f"making {self.inputs} inputs" if self.inputs else "making the inputs"
        raw_inputs = [self._raw(h, a) for h, a in zip(self.host, case.args)]
        self.stage = f"the backend's own `{case.op}`"
        try:
            expected = _outputs(case.call(raw, *raw_inputs))
        except (AttributeError, NotImplementedError) as exc:
            if getattr(exc, "name", None) in DTYPES and exc.name not in backend.dtypes:
                return self.skip_all(f"the backend declares no {exc.name}")  # (xp.complex128)
            if isinstance(exc, AttributeError) and not _lacks_function(exc, raw):
                raise
            what = (f"{backend.name}'s own `{case.op}` raised NotImplementedError: {exc}"
                    if isinstance(exc, NotImplementedError) else
                    f"not offered by the backend, and outside the standard: {exc}"
                    if case.outside_standard else f"not provided by the backend: {exc}")
            if case.extension or self.allow_missing:
                return self.skip_all(what)
            self.skip_all("not run: the backend lacks a function")
            self.record("forward", "fail", f"{what}; the standard requires it "
                        "(--allow-missing turns this into a skip)")
            return self.checks
        except Exception as exc:
            if self.inputs is None:
                raise
            return self.skip_all(f"not applicable to {self.inputs} inputs: {backend.name}'s "
                                 f"own `{case.op}` raised {type(exc).__name__}: {exc}")
        # 1. Forward values, dtype, shape and device equal the backend's own.
        self.stage = "the forward pass through arraygrad"
        got = _outputs(case.call(ns, *[ag.Variable(r) for r in raw_inputs]))
        problems = [f"dtype {g.dtype} != {e.dtype}" for g, e in zip(got, expected)
                    if g.dtype != e.dtype]
        # (array-api-compat's device(): dask arrays have no attribute; Variables answer "cpu")
        problems += [f"device {g.device} != {_device(e, backend)}" for g, e in
                     zip(got, expected) if g.device != _device(e, backend)]
        if problems:
            self.record("forward", "fail", "; ".join(problems))
        else:
            host_got = [backend.to_numpy(g.data) for g in got]
            self.compare("forward", host_got, [backend.to_numpy(e) for e in expected],
                         rtol=1e-12, atol=0)
            if self.inputs is None and self.checks["forward"][0] == "pass":
                # The backend's own function may be wrong too: compare with the reference's.
                self.stage = "the reference backend's forward"
                self._forward_reference(host_got, reference)
        # The gradient, with invariants.
        self.stage = "backward"
        variables = [ag.Variable(r, requires_grad=np.issubdtype(h.dtype, np.inexact))
                     for r, h in zip(raw_inputs, self.host)]
        outs = _outputs(case.call(ns, *variables))
        us_host = [random_like(self.rng, backend.to_numpy(o.data)) for o in outs]
        if self.inputs:  # zero where to_numpy ignores the output (masked entries)
            us_host = [u * counted(backend, o.data) for u, o in zip(us_host, outs)]
        # A private copy: raw.asarray may share memory with the host array, and then a VJP
        # that writes into its cotangent would change both and pass the invariant below.
        us = [raw.asarray(np.array(u, copy=True)) for u in us_host]
        before = [backend.to_numpy(r).copy() for r in raw_inputs]
        grads = _vjp(outs, [v for v in variables if v.requires_grad], us)
        self._invariants(variables, grads, raw_inputs, before, us, us_host)
        f = lambda *xs: case.call(ns, *xs)  # noqa: E731
        host_grads = [backend.to_numpy(g.data) if g is not None else None for g in grads]
        smooth = case.convention is None
        kink = "not differentiable at this input: checked against the convention"
        # 2. The numerical gradient (float64 only), projected and, for small cases, in full.
        self.stage = "central differences"
        if not smooth:
            self.record("numerical", "skip", kink)
        elif self.dtype in FLOAT64:
            analytic, numeric = gradient_errors(f, self.host, backend, seed=self.seed,
                                                to_backend=self.to_backend)
            self.compare("numerical", [analytic], [numeric], *self.at_least(1e-5, 1e-7))
        else:
            self.record("numerical", "skip", "central differences need float64")
        self._jacobian(f, grads, us_host, kink if not smooth else None)
        # 3. Agreement with the reference backend and an independent library.
        if self.inputs is None:
            self.stage = "the reference backend"
            self._cross_backend(host_grads, us_host, reference)
            self.stage = "the external reference"
            self._external(host_grads, us_host, reference)
            self._convention(host_grads, us_host)
        else:
            for check in ("cross_backend", "external", "convention"):
                self.record(check, "skip", f"the references know plain arrays, not {self.inputs}")
        # 5. Second order.
        self.stage = "second order (create_graph)"
        if case.second_order and self.dtype in FLOAT64 and smooth:
            analytic, numeric = gradient_errors(grad_function(f, backend, self.seed + 1,
                                                              bool(self.inputs)),
                                                self.host, backend, seed=self.seed + 2,
                                                to_backend=self.to_backend)
            self.compare("second_order", [analytic], [numeric], *self.at_least(1e-5, 1e-7))
        else:
            self.record("second_order", "skip", "not marked for second order"
                        if not case.second_order else kink if not smooth else
                        "second order is checked in float64")
        # 6. Forward mode: <u, J v> = <J^H u, v>.
        self.stage = "forward mode (jvp)"
        self._forward_mode(f, raw_inputs, grads, us_host)
        return self.checks

    def _behaviour(self):
        self.skip_all("an engine behaviour, checked by itself")
        try:
            self.case.behaviour(self.backend, self.rng)
            self.record("behaviour", "pass")
        except behaviour.Skip as exc:
            self.record("behaviour", "skip", str(exc))
        except AssertionError as exc:
            self.record("behaviour", "fail", str(exc))
            self.program = getattr(exc, "code", None)  # a program's minimal reproduction
        return self.checks

    def _invariants(self, variables, grads, raw_inputs, before, us, us_host):
        backend = self.backend
        problems = []
        for v, grad in zip([v for v in variables if v.requires_grad], grads):
            if grad is None:
                continue
            if not isinstance(grad, ag.Variable) or grad.backend != v.backend:
                problems.append(f"gradient of backend {getattr(grad, 'backend', None)}")
                continue
            if tuple(grad.shape) != tuple(v.shape):
                problems.append(f"gradient shape {tuple(grad.shape)} != {tuple(v.shape)}")
            if grad.dtype != v.dtype:
                problems.append(f"gradient dtype {grad.dtype} != input dtype {v.dtype}")
            if grad.device != v.device:
                problems.append(f"gradient device {grad.device} != {v.device}")
        for r, b in zip(raw_inputs, before):
            if not np.array_equal(backend.to_numpy(r), b, equal_nan=True):
                problems.append("an input was modified")
        for u, host in zip(us, us_host):
            if not np.array_equal(backend.to_numpy(u), host, equal_nan=True):
                problems.append("the upstream gradient was modified")
        if backend.name == "numpy":
            datas = [g.data for g in grads if g is not None]
            if any(np.shares_memory(a, b) for i, a in enumerate(datas) for b in datas[i + 1:]):
                problems.append("gradients alias each other")
        self.record("invariants", "fail" if problems else "pass", "; ".join(problems))

    def _jacobian(self, f, grads, us_host, kink):
        """The full Jacobian of a small case by central differences (one column per real input
        coordinate), contracted with the cotangent: every coordinate of the reverse-mode
        gradient is checked, not only a random projection of it."""
        if kink:
            return self.record("jacobian", "skip", kink)
        if self.dtype not in FLOAT64:
            return self.record("jacobian", "skip", "checked in float64")
        if not self.backend.capabilities().get("host_reads", True):
            return self.record("jacobian", "skip", "host reads are slow on this backend (2n "
                               "evaluations): the projections and cross_backend stand in")
        backend = self.backend
        columns = [(i, j, unit) for i, h in enumerate(self.host)
                   if np.issubdtype(h.dtype, np.inexact)
                   for j in range(h.size) for unit in ((1, 1j) if np.iscomplexobj(h) else (1,))]
        if not columns or len(columns) > JACOBIAN_SIZE:
            return self.record("jacobian", "skip", f"checked up to {JACOBIAN_SIZE} real input "
                               "coordinates (the random projections cover larger inputs)")
        eps = 1e-6

        def loss(host_inputs):
            return host_inner(backend, us_host, _outputs(
                f(*[ag.Variable(self.to_backend(h)) for h in host_inputs])))

        numeric, analytic = [], []
        by_input = iter(grads)
        grads = {i: next(by_input) for i, h in enumerate(self.host)
                 if np.issubdtype(h.dtype, np.inexact)}
        for i, j, unit in columns:
            step = np.zeros(self.host[i].size, self.host[i].dtype)
            step[j] = eps * unit
            moved = [[h + sign * step.reshape(h.shape) if n == i else h
                      for n, h in enumerate(self.host)] for sign in (1, -1)]
            numeric.append((loss(moved[0]) - loss(moved[1])) / (2 * eps))
            g = grads[i]
            value = 0 if g is None else backend.to_numpy(g.data).reshape(-1)[j]
            analytic.append(np.real(np.conj(unit) * value))  # Re<grad, unit e_j>
        self.compare("jacobian", [np.array(analytic)], [np.array(numeric)],
                     *self.at_least(1e-5, 1e-7))

    def _forward_reference(self, got, reference):
        """The forward values against the reference backend's (NumPy's) on the same host inputs
        in the same dtype, for the outputs NumPy gives in a floating or complex dtype (integer
        widths are the library's choice): the dtype must be NumPy's, which follows the
        standard's type promotion, and the values agree within the backend's tolerance for the
        dtype (NaN equals NaN, an infinity must be the same infinity)."""
        forward = getattr(reference, "forward", None)
        if forward is None or self.backend.name == REFERENCE:
            return
        expected = forward(self.case, self.host)
        op, dtype = self.case.op, self.dtype
        worst = (0.0, 0.0)
        for index, (g, e) in enumerate(zip(got, expected)):
            g, e = np.asarray(g), np.asarray(e)
            if not np.issubdtype(e.dtype, np.inexact):
                continue
            which = f" (output {index})" if len(expected) > 1 else ""
            if g.dtype != e.dtype:
                return self.record("forward", "fail", f"`{op}` in {dtype}{which} returned "
                                   f"{g.dtype}, expected {e.dtype} (NumPy, the reference: the "
                                   "standard's type promotion)")
            if g.shape != e.shape:
                return self.record("forward", "fail", f"`{op}` in {dtype}{which}: shape "
                                   f"{g.shape}, expected {e.shape} (NumPy, the reference)")
            abs_err, rel_err = _errors(g, e)
            worst = (max(worst[0], abs_err), max(worst[1], rel_err))
            close = np.isclose(g, e, rtol=self.rtol, atol=self.atol, equal_nan=True)
            if not close.all():
                at = np.unravel_index(np.argmin(close), close.shape) if close.ndim else ()
                position = f" at {tuple(int(i) for i in at)}" if at else ""
                return self.record(
                    "forward", "fail", f"`{op}` in {dtype}{which} differs from NumPy's (the "
                    f"reference): expected {e[at].item():.7g}, got {g[at].item():.7g}"
                    f"{position}; max abs error {abs_err:.3g}, max rel error {rel_err:.3g} "
                    f"(rtol {self.rtol:g}, atol {self.atol:g})", (abs_err, rel_err))

    def _cross_backend(self, got, us_host, reference):
        if reference is None or self.backend.name == REFERENCE and self.dtype == "float64":
            return self.record("cross_backend", "skip", "this is the reference")
        expected = reference(self.case, self.host, us_host)
        pairs = [(g, e) for g, e in zip(got, expected) if g is not None and e is not None]
        self.compare("cross_backend", [g for g, _ in pairs], [e for _, e in pairs])

    def _external(self, got, us_host, reference):
        """Agreement with torch.autograd or jax.vjp: an implementation sharing nothing with
        arraygrad's rules (skipped when neither is installed or the case cannot run there)."""
        expected = getattr(reference, "external", None)
        if expected is None:
            return self.record("external", "skip", "no external reference (install torch or "
                               "jax, or it was turned off)")
        try:
            expected = expected(self.case, self.host, us_host)
        except external.Unsupported as exc:
            return self.record("external", "skip", str(exc))
        # A gradient one side leaves out (not reached, not differentiable) is zero.
        pairs = [(np.zeros_like(e) if g is None else g, np.zeros_like(g) if e is None else e)
                 for g, e in zip(got, expected) if g is not None or e is not None]
        self.compare("external", [g for g, _ in pairs], [e for _, e in pairs])

    def _convention(self, got, us_host):
        if self.case.convention is None:
            return self.record("convention", "skip", "differentiable at this input")
        wide = [h.astype(np.complex128 if np.iscomplexobj(h) else np.float64) for h in self.host]
        expected = self.case.convention(wide, us_host)
        self.compare("convention", [g for g in got if g is not None], expected)

    def _forward_mode(self, f, raw_inputs, grads, us_host):
        if self.dtype not in FLOAT64:
            return self.record("forward_mode", "skip", "checked in float64")
        inexact = [np.issubdtype(h.dtype, np.inexact) for h in self.host]
        if not all(inexact):
            return self.record("forward_mode", "skip", "integer inputs")
        vs = [random_like(self.rng, h) for h in self.host]
        _, tangents = ag.jvp(f, [r for r in raw_inputs], [self.to_backend(v) for v in vs])
        tangents = _outputs(tangents)
        forward = sum(float(np.real(np.vdot(u, self.backend.to_numpy(t))))
                      for u, t in zip(us_host, tangents))
        backward = sum(float(np.real(np.vdot(self.backend.to_numpy(g.data), v)))
                       for g, v in zip(grads, vs) if g is not None)
        self.compare("forward_mode", [forward], [backward], *self.at_least(1e-7, 1e-9))


def _lacks_function(exc: AttributeError, raw) -> bool:
    """Whether ``exc`` says that the backend's namespace ``raw`` (or its ``linalg``/``fft``
    extension) lacks a function, not that the case or a rule failed."""
    owner = getattr(exc, "obj", None)  # (None for an AttributeError the code raised itself)
    return isinstance(owner, types.ModuleType) or type(owner) is type(raw) or owner is not None \
        and any(owner is getattr(raw, extension, None) for extension in ("linalg", "fft"))


def _vjp(outs, inputs, cotangents):
    """The gradients of ``sum Re<u, out>`` with respect to ``inputs``, straight from backward
    with the cotangents as output gradients (nothing else of the namespace is used)."""
    pairs = [(o, u) for o, u in zip(outs, cotangents) if o.requires_grad]
    if not pairs or not inputs:
        return [None] * len(inputs)
    return list(ag.autograd.grad([o for o, _ in pairs], inputs, [u for _, u in pairs],
                                 allow_unused=True))


def _reference(external_library="auto"):
    """The NumPy float64 gradients of a case on given host inputs and cotangents; its
    ``external`` attribute computes them with torch or jax (``external_library``: ``"auto"``
    for whichever is installed, ``"torch"``, ``"jax"``, or None for no external check)."""
    backend = ag.get_backend(REFERENCE)

    def gradients(case, host, us_host):
        wide = {"float32": np.float64, "complex64": np.complex128}
        host = [h.astype(wide.get(str(h.dtype), h.dtype)) for h in host]
        variables = [ag.Variable(np.array(h), requires_grad=np.issubdtype(h.dtype, np.inexact))
                     for h in host]
        outs = _outputs(case.call(backend.ns, *variables))
        us = [u.astype(wide.get(str(u.dtype), u.dtype)) for u in us_host]
        grads = _vjp(outs, [v for v in variables if v.requires_grad], us)
        return [g.data if g is not None else None for g in grads]

    def forward(case, host):
        """The case's outputs on NumPy, from the same host inputs in the same dtypes."""
        raw = backend.raw
        return [np.asarray(o) for o in _outputs(case.call(raw, *[raw.asarray(np.array(h))
                                                                  for h in host]))]

    gradients.forward = forward

    # auto: torch when installed (seconds for the whole suite); jax only when asked for, as it
    # runs the cases op by op (minutes).
    library = ("torch" if external.available() == "torch" else None
               ) if external_library == "auto" else external_library
    if library:
        cache = {}

        def external_gradients(case, host, us_host):
            # The same case, dtype and seed draw the same inputs on every backend: compute once.
            key = (case.id, *(h.tobytes() for h in host), *(u.tobytes() for u in us_host))
            if key not in cache:
                try:
                    cache[key] = external.gradients(case, host, us_host, library)
                except external.Unsupported as exc:
                    cache[key] = exc
            if isinstance(cache[key], Exception):
                raise cache[key]
            return cache[key]

        gradients.external = external_gradients
    return gradients


# How to install the library of a backend arraygrad ships a plugin for, when it is missing.
INSTALL = {
    "torch": 'pip install "torch==2.13.0"',
    "jax": 'pip install ".[jax]" (in a clone of arraygrad)',
    "dask": 'pip install ".[dask]" (in a clone of arraygrad)',
    "cupy": 'pip install ".[cupy]" (in a clone of arraygrad; needs CUDA 12)',
}


def _unavailable(name, exc) -> str:
    """Why backend ``name`` cannot run: its plugin's reason, and for a library of a built-in
    backend that is not installed, how to install it."""
    broken = ag.registry.broken.get(name)
    if broken:
        return f"its plugin is broken: {broken}"
    reason = str(exc)
    backend = ag.registry.backends.get(name)
    module = getattr(backend.plugin, "__name__", "") if backend is not None else ""
    if (name in INSTALL and module.startswith("arraygrad_plugins.")
            and isinstance(exc.__cause__, ImportError)):
        reason += f"; install it with: {INSTALL[name]}"
    return reason


def _declarations(backend):
    """Ask the declarations a run reads once (the differentiable namespace, with its rule
    overrides; ``capabilities``; the plugin's ``deviations``); a raise becomes a ValueError
    naming the field, the plugin and the exception."""
    label = ag.registry.pm.get_name(backend.plugin) or backend.name
    field = "building its differentiable namespace (rule overrides)"
    try:
        backend.ns
        field = "BackendSpec.capabilities"
        backend.capabilities()
        field = "BackendSpec.deviations"
        deviations.for_backend(backend)  # (--deviations files are read later: a usage error)
    except (BackendUnavailable, ag.BackendError):
        raise
    except Exception as exc:
        if field == "BackendSpec.deviations" and not callable(backend.spec.deviations):
            what = str(exc)  # its file: which one, and what is wrong with it
        else:
            raised = exc.__cause__ or exc  # (for_backend wraps the function's exception)
            what = f"{field} raised {type(raised).__name__}: {raised}"
        raise ValueError(f"its plugin {label!r} is broken: {what}") from exc


def ready(names=None):
    """``(backends, unavailable, failing)``: the backends named (every available one when
    None) that can run; ``{name: reason}`` for the others; and the names among those that make
    the run fail: each one named, and in a default run each whose plugin raised. A plugin whose
    declaration raises breaks only its own backend."""
    ag.registry.ensure_loaded()
    unavailable, targets = {}, []
    if not names:  # every available backend; the others are listed with their reasons
        infos = ag.backends()
        unavailable.update({info.name: info.reason for info in infos if not info.available})
    asked = list(names or [info.name for info in infos if info.available])
    for name in asked:
        try:
            backend = ag.get_backend(name)
            backend.raw
            _declarations(backend)  # (a raising rule override breaks its plugin here)
            targets.append(backend)
        except (BackendUnavailable, ag.BackendError) as exc:
            unavailable[name] = _unavailable(name, exc)
        except ValueError as exc:
            unavailable[name] = str(exc)
    return targets, unavailable, [name for name in asked if name in unavailable]


class CaseTimeout(BaseException):
    """A case run went past its time limit. Not an ``Exception``: a plugin's ``except
    Exception`` cannot swallow it."""


SLOW = 10.0  # seconds after which run() says which case is still running


def can_time_out() -> bool:
    """Whether a time limit can stop a case here: SIGALRM's timer, in the main thread (Unix)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds):
    """Raise :class:`CaseTimeout` in the block after ``seconds`` (None or 0: no limit). It
    interrupts Python code and sleeps, not a C function that never returns to the interpreter;
    where SIGALRM is missing or this is not the main thread there is no limit. A timer already
    set (pytest-timeout's) is put back with the time it has left."""
    if not seconds or not can_time_out():
        yield
        return

    def expire(signum, frame):
        raise CaseTimeout(seconds)

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expire)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            signal.signal(signal.SIGALRM, previous)
            if outer:
                signal.setitimer(signal.ITIMER_REAL,
                                 max(outer - (time.monotonic() - started), 1e-3))


def run(backends=None, pattern=None, dtypes=None, seed=0, progress=None, *,
        allow_missing=False, external_library="auto", exitfirst=False, deviation_files=(),
        timeout=None, notice=None):
    """Run the suite on the cases any glob of ``pattern`` selects; returns ``(results,
    unavailable)`` where ``unavailable`` maps backend names to reasons. ``timeout`` stops a
    case run after that many seconds (a failure); ``notice(text)`` is told, from another
    thread, of a case still running after :data:`SLOW` seconds."""
    targets, unavailable, _ = ready(backends)
    cases = select(pattern)
    jobs = [(b, c, d, kind) for b in targets for c in cases for d in c.dtypes
            for kind in (None, *b.spec.semantic_inputs)
            if (dtypes is None or d in dtypes or _REAL.get(d) in dtypes)
            and wanted(c, kind, pattern) and (kind is None or c.behaviour is None)]
    reference = _reference(external_library)
    results = []
    known = {b.name: deviations.for_backend(b, deviation_files) for b in targets}
    for index, (backend, case, dtype, kind) in enumerate(jobs):
        label = f"{backend.name} {case.id}{f'@{kind}' if kind else ''} {dtype}"
        if progress:
            progress(index, len(jobs), label)
        timer = None
        if notice:
            limit = f" (stopped at {timeout:g} s by --timeout)" if timeout else ""
            timer = threading.Timer(SLOW, notice, [f"still running after {SLOW:g} s: "
                                                   f"{label}{limit}"])
            timer.daemon = True
            timer.start()
        try:
            results.append(run_one(backend, case, dtype, seed, reference, known[backend.name],
                                   allow_missing=allow_missing, inputs=kind, timeout=timeout))
        finally:
            if timer:
                timer.cancel()
        if exitfirst and results[-1].status == "fail":
            break
    if progress:
        progress(len(jobs), len(jobs), "done")
    return results, unavailable


def run_one(backend, case, dtype, seed=0, reference=None, known=None, *,
            allow_missing=False, inputs=None, timeout=None) -> Result:
    """Run every check of ``case`` on ``backend`` (a Backend or a name) in ``dtype``, on its
    semantic ``inputs`` where named; a failure is run again, traced, to name its cause. A run
    past ``timeout`` seconds is stopped and fails (see :func:`time_limit`)."""
    backend = ag.get_backend(backend) if isinstance(backend, str) else backend
    reference = reference or _reference()
    known = deviations.for_backend(backend) if known is None else known

    made = []

    def attempt():
        runner = None
        try:
            with time_limit(timeout):
                runner = _Runner(backend, case, dtype, seed, backend.tolerances(dtype),
                                 allow_missing, inputs)
                made.append(runner)
                return runner.run(reference), None
        except (Exception, CaseTimeout) as exc:  # fails once; the checks left did not run
            checks = runner.checks if runner else {}
            stage = runner.stage if runner else "reading the backend's declaration"
            checks["run"] = ("fail", f"timed out: stopped after {timeout:g} s (the time limit "
                             f"of a case run) in {stage}" if isinstance(exc, CaseTimeout) else
                             f"crashed in {stage}: {type(exc).__name__}: {exc}".rstrip(": "),
                             None, None)
            for check in CHECKS:
                checks.setdefault(check, ("skip", "not run: the case crashed", None, None))
            return checks, exc

    checks, crash = attempt()
    result = Result(backend.name, case, dtype, checks, seed, inputs,
                    program=made[0].program if made else None)
    if isinstance(crash, CaseTimeout):  # running it again, traced, would hang again
        result.traceback = "".join(traceback.format_exception(crash))
    elif result.status == "fail" and case.behaviour is None:
        if crash is not None:
            result.traceback = "".join(traceback.format_exception(crash))
        log, raised = diagnose.trace(backend, attempt)
        blamed = diagnose.cause(log)
        if blamed is not None:
            result.cause = str(blamed)
            if crash is not None:
                status, detail, *errors = checks["run"]
                checks["run"] = (status, f"{detail} ({result.cause})", *errors)
    result.checks = deviations.apply(checks, result.id, dtype, known)
    return result


def progress_bar(stream=sys.stderr):
    """Progress on a terminal (rich's bar, cleared when done); elsewhere (a CI log) a line per
    tenth done."""
    if getattr(stream, "isatty", lambda: False)():
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import Progress

        bar = Progress(console=Console(file=stream), transient=True)
        task = None

        def show(done, total, label):
            nonlocal task
            if task is None:
                bar.start()
                task = bar.add_task("case runs", total=total)
            bar.update(task, completed=done, description=escape(label[:40]))
            if done == total:
                bar.stop()
        return show
    shown = [-1]

    def show(done, total, label):
        tenth = 10 * done // max(total, 1)
        if tenth != shown[0]:
            shown[0] = tenth
            stream.write(f"{done}/{total} case runs ({10 * tenth}%)\n")
            stream.flush()
    return show


def _device(array, backend):
    """``array``'s device as ``Variable.device`` reads it: the plugin's ``device_of`` where it
    declares one, else array-api-compat's answer."""
    if backend.spec.device_of is not None:
        return backend.device(array)
    import array_api_compat

    return array_api_compat.device(array)
