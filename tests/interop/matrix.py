"""Write docs/interop.md, the support matrix, from the interop tests' case tables.

Run ``python -m tests.interop.matrix`` from the repository root. Each cell comes from a case's
declaration, which its test verifies: a gradient checked against central differences (and
torch.autograd), or the exact error a user gets, with its reason. ``tests/interop/
test_matrix.py`` fails when docs/interop.md is not what this script writes.
"""

from __future__ import annotations

import collections
import importlib
import pathlib

from arraygrad import _numpy_protocol
from arraygrad.rules import OUTSIDE_STANDARD
from arraygrad.rules.special import SPECIAL

from . import torch_matrix
from .harness import BACKENDS

MODULES = ["test_scipy", "test_array_api_extra", "test_sklearn", "test_numpy", "test_einops",
           "test_xarray", "test_marray"]
OUTPUT = pathlib.Path(__file__).resolve().parents[2] / "docs" / "interop.md"

HEADER = """\
# Existing array code, differentiated

Code written against the Array API standard (SciPy with `SCIPY_ARRAY_API=1`, scikit-learn with
`array_api_dispatch=True`, array-api-extra, einops, xarray, marray) or against plain NumPy runs on
Variables and records its operations, so `.backward()` gives its gradient:

```python
import os
os.environ["SCIPY_ARRAY_API"] = "1"  # before SciPy is imported
import numpy as np
import arraygrad as ag
from scipy import special, stats

x = ag.Variable(np.array([0.5, 1.5, -0.3, 2.0]), requires_grad=True)
loss = special.logsumexp(stats.zscore(x) * 2.0) + np.sum(np.sin(x))  # SciPy, then plain NumPy
loss.backward()
x.grad                               # checked against central differences in tests/interop
```

How each reaches arraygrad:

- **`__array_namespace__`**: SciPy, scikit-learn, array-api-extra, xarray and marray ask a
  Variable for its namespace, `ag.namespace(backend)`, which records every call. SciPy's
  special functions find `xp.special`: `scipy.special` on NumPy and Dask, `torch.special`
  on torch, `jax.scipy.special` on JAX, each with differentiation rules. xarray's `xr.dot` and
  `weighted` find `xp.einsum` (without opt_einsum), differentiable where the backend has one.
- **NEP 13 and NEP 18**: plain NumPy calls on Variables (`np.sin(v)`, `np.mean(v, axis=0)`,
  `ndarray @ v`) record through the same namespace, on any backend. A NumPy function not listed
  below raises `TypeError` naming it.
- **Operators with another library's array-like** (`v * DataArray`, `v < Series`): where that
  type has the reflected operator, it answers, as it does for `ndarray * DataArray`. xarray
  computes with the Variable inside (the product records); pandas converts its operands, which
  a Variable that requires grad refuses. Namespace functions (`xp.add(v, series)`) refuse it.
- **einops** finds arraygrad's backend among its subclasses: `einops.rearrange(v, ...)`, `reduce`,
  `repeat`, `einsum`; `einops.array_api` works through `__array_namespace__`.
- **Record or refuse**: `np.asarray(v)` and `v.numpy()` on a Variable that requires grad raise
  `GradientError` ("cannot convert a Variable that requires grad to NumPy ... Use
  v.detach().numpy() ..."). A library that converts to NumPy internally therefore fails
  loudly instead of returning a gradient that silently left the graph. To integers or booleans
  (`np.int64(v)`, `np.asarray(v, dtype=bool)`) it converts: they have no derivative to lose,
  as `int(v)` and `xp.astype(v, xp.int64)` have none.

## Library limits outside arraygrad, and their workarounds

- **scikit-learn metrics that `return float(...)`** (`r2_score`, `mean_squared_error` with the
  default `multioutput="uniform_average"`, `log_loss`, `brier_score_loss`, `max_error`) give a
  Python number: `float(v)`, `v.item()` and `v.tolist()` leave the graph, as in PyTorch, so
  such a metric added to a Variable contributes no gradient. Pass
  `multioutput="raw_values"` and reduce with `xp.mean`, or write the metric with the
  namespace.
- **SciPy functions that convert to NumPy in compiled code** (`signal.detrend`,
  `signal.lfilter`, `fft.dct`, `linalg.det`/`inv`/`solve`/`expm`, `ndimage`, the distribution
  objects `stats.norm`) raise the `GradientError` above. Use the standard's equivalent
  (`xp.linalg.det`, `xp.linalg.solve`, `xp.fft`), `arraygrad.scipy.stats` for the
  distributions ([scipy-stats.md](scipy-stats.md)), or detach.
- **Dask's unknown chunk sizes**: functions with data-dependent output sizes (`unique_values`,
  boolean masks) give dask arrays of unknown shape, which no gradient can be fitted to:
  arraygrad raises `GradientError` naming `.compute_chunk_sizes()`.
- **`array_api_compat.is_lazy_array`** on a dask-backed Variable says `False`: it recognises dask
  by type, and a Variable is not a `dask.array.Array` (bool() on it computes, as on dask). The
  namespace's `__array_namespace_info__().capabilities()` does say that boolean indexing and
  data-dependent shapes are unavailable, which is what array-api-extra and SciPy use to choose a
  lazy-safe path. Call `.compute()` on `v.data` to evaluate explicitly.
- **NaN overwritten after the fact**: where a library computes a NaN and then overwrites it
  (scikit-learn's incremental variance in `StandardScaler`; `apply_where` on dask, which
  evaluates both branches), the gradient through the overwritten NaN is NaN, exactly as
  `torch.autograd` and `jax.grad` give. Write the computation so that no branch is NaN.
- **A NumPy array beside a Variable** in a library that asks every argument for its namespace
  (SciPy's `array_namespace`, array-api-compat's) is two namespaces, and the library raises
  `TypeError: Multiple namespaces for array inputs`. Wrap the constant in a Variable of the same
  backend, which requires no grad, or build it with the namespace:

  ```python
  import os
  os.environ["SCIPY_ARRAY_API"] = "1"
  import numpy as np
  import arraygrad as ag
  from scipy import special

  x = ag.Variable(np.array([0.5, 1.5, -0.3]), requires_grad=True)
  b = np.array([1.0, 2.0, 0.5])                      # special.logsumexp(x, b=b) raises
  special.logsumexp(x, b=ag.Variable(b)).backward()  # a constant Variable: one namespace
  expected = b * np.exp(x.data) / np.sum(b * np.exp(x.data))
  assert np.allclose(x.grad.data, expected)
  ```
- **In place on a leaf**: `array_api_extra.at(x)[i].set(v)` with the default `copy=None` on a
  leaf that requires grad raises `InplaceError`, as any in-place change of such a leaf does in
  PyTorch: pass `copy=True`.

## Other projects' own test suites on arraygrad

SciPy, scikit-learn and array-api-extra test their array-API code on several backends. On
2026-11-28 their own suites were run with one more backend, `ag.namespace("numpy")`, which was
the only backend selected. The runs used arraygrad at commit ba72b49, NumPy 2.4.6, pytest 9.2.0
and the pure-Python engine (`ARRAYGRAD_PURE_PYTHON=1`). Only the suites' test-setup code was
patched, to register the backend:

```text
array-api-extra 0.11.5  tests shipped in the wheel (array_api_extra/tests/main), -k arraygrad;
                        Backend.ARRAYGRAD added, the xp fixture yields ag.namespace("numpy")
SciPy 1.17.1            scipy/conftest.py: arraygrad added to xp_available_backends and
                        xp_known_backends; SCIPY_ARRAY_API='["arraygrad"]', -m array_api_backends;
                        modules _lib cluster differentiate fft integrate interpolate linalg
                        ndimage optimize signal spatial special stats
scikit-learn 1.9.1      pytest --pyargs sklearn -k array_api, with a plugin that makes
                        yield_namespace_device_dtype_combinations() yield only arraygrad's namespace
```

| suite | passed | failed | arraygrad's | the suite's |
|---|---|---|---|---|
| array-api-extra 0.11.5 | 1202 | 1 | 0 | 1 |
| SciPy 1.17.1 (13 modules) | 26467 | 289 (150 failures, 139 setup errors) | 0 | 289 |
| scikit-learn 1.9.1 | 854 | 3 | 0 | 3 |

None of the failures is a wrong result or a crash in arraygrad. Each one comes from the suite or
the library: an assumption that the standard does not make, or a choice made by the backend's name.
Grouped by reason:

| count | tests | why it is the suite's |
|---|---|---|
| 139 | SciPy `test_device*` (special `test_logsumexp` 3, fft `test_device` 2, stats `test_device_dtype` 134): setup error | SciPy's `devices` fixture returns `__array_namespace_info__().devices() + [None]`, which assumes the list of the 2024.12 standard. arraygrad, like array-api-strict at 2025.12, returns a tuple. |
| 48 | SciPy interpolate `RBFInterpolator` (`test_rbfinterp.py`) | SciPy calls `d.view(float)`, which it marks "NB not Array API compliant" and skips on array-api-strict. |
| 38 | SciPy signal `TestResample::test_resample_methods` 29, `TestGroupDelay` 7; interpolate `TestBSpline` 2 | NumPy functions are called on xp arrays: `np.interp` in a test helper, `np.convolve` inside `signal.group_delay`, `np.piecewise` in test helpers. arraygrad refuses NumPy functions it does not list, so that they cannot silently leave the graph (see [Why a function is refused](#why-a-function-is-refused-and-what-the-user-sees)). |
| 23 | SciPy integrate `TestNSum` (all of it) | `nsum` does `nfev[i] += tmp[-1]`, an int32 array plus int64 values in place. The standard says an in-place operation must not change the dtype, and array-api-strict raises the same `TypeError`. NumPy and torch cast silently. SciPy skips `nsum` on array-api-strict and torch. |
| 19 | SciPy special `test_support_alternative_backends[...-chdtrc-...]` 5, stats `test_marray::test_power_divergence_chisquare` 14 | On a namespace that has `xp.special`, SciPy runs its own generic `chdtrc`, which gives NaN for `v <= 0` and 1 for `x < 0`. The compiled ufunc gives 0 and NaN there (scipy/scipy#20972). The test avoids those inputs only for the backends it names (`positive_only={"cupy", "jax.numpy", "torch"}`). |
| 19 | SciPy optimize `test_bracket.py` `test_dtype[...-float16-...]` 18, ndimage `test_gaussian_filter_float16` 1 | float16 is not a dtype of the standard, and arraygrad's namespace has no `float16`. SciPy skips the ndimage test on array-api-strict. |
| 4 | SciPy `_lib` `TestContainsNaN::test_array_api_lazy`; array-api-extra `TestNUnique::test_delegates`; scikit-learn `test_label_binarize_array_api_compliance` (2) | The test decides by backend name. It skips the lazy-only test for the eager backends it names, it expects native delegation for every backend it does not exclude by name, and it expects any namespace not named NumPy to reject `asarray(["yes", "no"])`. arraygrad over NumPy accepts NumPy's string dtype. |
| 2 | scikit-learn `test_array_api_error_and_warnings_for_solver_parameter`, SciPy stats `TestBootstrap::test_bootstrap_iv_other` | The expected message contains the namespace's `__name__` without `re.escape`. The `[numpy]` in `arraygrad[numpy]` is then read as a regex character class, so the exact message does not match. |
| 1 | SciPy differentiate `TestDerivative::test_initial_step` | The test calls `xp.logspace`, which is not in the standard. |

An earlier run the same day, on an older commit (70be683), found three arraygrad bugs, all fixed
since. `moveaxis`, `permute_dims` and `reshape` returned copies where NumPy makes views. As a result
`signal.oaconvolve`, `ndimage.vectorized_filter(output=...)` and `tanhsinh` silently lost their
writes. `np.isclose` with a Variable passed by keyword recursed forever. `np.may_share_memory` was
refused on Variables.
"""


def load_cases():
    cases = []
    for name in MODULES:
        try:
            module = importlib.import_module(f".{name}", __package__)
        except Exception as exc:  # a library that is not installed (pytest.skip raises)
            print(f"skipping {name}: {type(exc).__name__}: {exc}")
            continue
        cases.extend(module.CASES)
    return cases


def cell(case, backend):
    if backend not in case.backends:
        return "–"
    refusal = case.refuse.get(backend) or case.refuse.get("*")
    if refusal is None:
        return "✓"
    return "NaN" if refusal.error is None else f"✗ `{refusal.error.__name__}`"


def render(cases):
    lines = [HEADER, "## Support matrix", "",
             "✓: the gradient matches float64 central differences (and `torch.autograd` on torch"
             " where torch runs the function); ✗: refused with the error named (reasons below);"
             " NaN: a NaN gradient, as torch and JAX give (reasons below); –: not tried.", "",
             "| library | " + " | ".join(f"{b}: works / tried" for b in BACKENDS) + " |",
             "|---|" + "---|" * len(BACKENDS)]
    by_library = collections.OrderedDict()
    for case in cases:
        by_library.setdefault(case.library, []).append(case)
    for library, group in by_library.items():
        counts = []
        for backend in BACKENDS:
            tried = [c for c in group if backend in c.backends]
            works = [c for c in tried if cell(c, backend) == "✓"]
            counts.append(f"{len(works)} / {len(tried)}")
        lines.append(f"| {library} | " + " | ".join(counts) + " |")
    for library, group in by_library.items():
        lines += ["", f"### {library}", "", "| function | " + " | ".join(BACKENDS) + " |",
                  "|---|" + "---|" * len(BACKENDS)]
        for case in group:
            lines.append(f"| `{case.name}` | " + " | ".join(cell(case, b) for b in BACKENDS)
                         + " |")
    lines += ["", "## Why a function is refused, and what the user sees", "",
              "| library | function | backends | error (message matches) | reason and workaround |",
              "|---|---|---|---|---|"]
    for case in cases:
        seen = {}
        for backend, refusal in case.refuse.items():
            seen.setdefault(id(refusal), (refusal, []))[1].append(backend)
        for refusal, backends in seen.values():
            error = "NaN gradient" if refusal.error is None else (
                f"`{refusal.error.__name__}`: `{refusal.match}`")
            where = "all" if "*" in backends else ", ".join(backends)
            lines.append(f"| {case.library} | `{case.name}` | {where} | {error} | "
                         f"{refusal.reason} |")
    lines += ["", *numpy_api_section(), "",
              "Special functions with rules (`xp.special`, and SciPy's ufuncs on NumPy-backed "
              "Variables; a backend offers those its library has):", "",
              ", ".join(f"`{n}`" for n in sorted(SPECIAL)), "",
              "Functions outside the standard with rules, which the namespace offers where the "
              "backend's own namespace has them (NumPy, torch, JAX, CuPy and Dask have `einsum`, "
              "array_api_strict does not; `np.einsum` on its Variables is composed of the "
              "standard's functions):", "",
              ", ".join(f"`{n}`" for n in sorted(OUTSIDE_STANDARD)), ""]
    return torch_matrix.render_into("\n".join(lines))


def numpy_api():
    """``(functions, ufuncs)``: the names of NumPy's functions that dispatch through
    ``__array_function__`` (``numpy``, ``numpy.linalg``, ``numpy.fft``; as the tables name
    them) and of its ufuncs, read from the installed NumPy."""
    import numpy as np

    dispatcher = type(np.concatenate)
    functions = {_numpy_protocol._name(f) for module in (np, np.linalg, np.fft)
                 for name, f in vars(module).items()
                 if not name.startswith("_") and isinstance(f, dispatcher)}
    ufuncs = {u.__name__ for u in vars(np).values() if isinstance(u, np.ufunc)}
    return functions, ufuncs


def numpy_api_section():
    """The lines of docs/interop.md that classify NumPy's API on Variables."""
    import numpy as np

    P = _numpy_protocol
    functions, ufuncs = numpy_api()

    def names(group):
        return ", ".join(f"`{n}`" for n in sorted(group)) or "(none)"
    recorded = ufuncs & ({*P.UFUNCS, *P.COMPOSED_UFUNCS})
    lines = [f"## NumPy's API on Variables (NEP 13 and NEP 18; NumPy {np.__version__})", "",
             "Every public NumPy function that dispatches through `__array_function__` "
             "(`numpy.`, `numpy.linalg.`, `numpy.fft.`) and every ufunc is in one list below; "
             "`tests/test_numpy_api.py` fails when NumPy has one that is in none. Each function "
             "takes NumPy's full signature: an argument that arraygrad does not implement is "
             "accepted only at NumPy's default, else refused with a `TypeError` naming it.", "",
             "**Recorded, differentiable** (through the differentiable namespace):", "",
             names(functions & set(P.FUNCTIONS) - P.NO_DERIVATIVE), "",
             "**Recorded, no derivative** (integer, boolean or constant results):", "",
             names(functions & P.NO_DERIVATIVE), "",
             "**On the values** (NumPy's own result; a floating result of a Variable that "
             "requires grad is refused):", "", names(functions & P.ON_VALUES), "",
             "**Refused** (`TypeError` with the reason):", "",
             "| function | reason |", "|---|---|"]
    lines += [f"| `{n}` | {P.REFUSED[n]} |" for n in sorted(functions & set(P.REFUSED))]
    lines += ["", "**Ufuncs**, called (`np.sin(v)`), reduced (`np.add.reduce`: add, multiply, "
              "maximum, minimum, logical_and, logical_or) or accumulated (add, multiply); "
              "`out=` may only name a Variable; recorded:", "", names(recorded), "",
              "Ufuncs on the values (no derivative): " + names(
                  ufuncs & set(P.UFUNCS_ON_VALUES)) + "; SciPy's special ufuncs reach "
              "`xp.special` (below); any other ufunc is refused."]
    return lines


def main():
    OUTPUT.write_text(render(load_cases()))
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
