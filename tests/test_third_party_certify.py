"""Two third-party plugin distributions certified by the conformance suite:
``plugins/marray-plugin`` (masked arrays, semantic inputs ``masked``, rules of its own) and
``plugins/sparse-plugin`` (immutable COO arrays, semantic inputs ``fill``). Each runs with no
failure, and its deviations all come from the plugin's own ``deviations.txt``. Skipped where a
library or a plugin distribution is not installed (``pip install -e plugins/marray-plugin
-e plugins/sparse-plugin``).

The masked ``mean`` shows why a backend may need rules of its own: arraygrad's built-in rule
gives each of 3 entries 1/3, where marray's mean of the 2 unmasked ones has 1/2 for each of them
and 0 for the masked one; the suite flags the built-in rule on masked inputs.
"""

import importlib.metadata
import json
import os
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.conformance import known
from arraygrad.conformance.runner import run
from arraygrad.rules import RULES

# A subset of sparse's cases (its whole run takes minutes: numba compiles each kernel): passes,
# its deviations (missing functions, refused fill values) and its `fill` inputs.
SPARSE_OPS = ("mean*", "exp*", "reshape*", "getitem*", "prod*", "cumulative_sum*", "unique_values*",
              "autograd.*")


def _plugin(library, distribution, package, backend):
    """The backend of an installed plugin distribution, or a skip saying what is missing."""
    pytest.importorskip(library)
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"the plugin distribution {distribution} is not installed "
                    f"(pip install -e plugins/{distribution.split('-', 1)[1]}-plugin)")
    module = pytest.importorskip(package)
    try:
        ag.get_backend(backend)
    except ag.BackendError:
        pytest.skip(f"backend {backend!r} is not registered (its entry point is missing)")
    return module


@pytest.fixture(scope="module")
def marray_plugin():
    return _plugin("marray", "arraygrad-marray", "arraygrad_marray", "marray")


@pytest.fixture(scope="module")
def sparse_plugin():
    return _plugin("sparse", "arraygrad-sparse", "arraygrad_sparse", "sparse")


def _certify(name, package, patterns=(None,)):
    """Run the suite on backend ``name``; assert no failure, every deviation covered by an entry
    of the plugin's own file, no stale entry and no file of arraygrad's for the backend."""
    results = []
    for pattern in patterns:
        found, unavailable = run([name], pattern, external_library=None)
        assert not unavailable, unavailable
        results += found
    failures = [f"{r.id} {r.dtype}: " + "; ".join(
        f"{check}: {detail}" for check, (status, detail, *_) in r.checks.items()
        if status == "fail") for r in results if r.status == "fail"]
    assert not failures, "\n".join(failures)
    assert not resources.files("arraygrad.conformance").joinpath(
        "deviations", f"{name}.txt").is_file()
    own = known.parse(resources.files(package).joinpath("deviations.txt").read_text(),
                      f"{package}:deviations.txt")
    for r in results:
        for check, (status, *_) in r.checks.items():
            if status == "deviation":
                assert any(e.matches(r.id, r.dtype, check) for e in own), (r.id, r.dtype, check)
    assert not known.stale(results, {name: own}), "stale deviations: remove their lines"
    return results


# ------------------------------------------------------------------------------ marray


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # marray's sort
def test_marray_certifies(marray_plugin):
    results = _certify("marray", "arraygrad_marray")
    masked = [r for r in results if r.inputs == "masked"]
    assert sum(r.status == "pass" for r in masked) > 500
    assert {r.status for r in results if r.case.op == "mean" and r.inputs} == {"pass"}


def test_masked_mean_gradient(marray_plugin):
    """The plugin's mean rule: 1/2 at each of the 2 unmasked entries, 0 at the masked one;
    the built-in rule's VJP gives 1/3 to each of the 3."""
    x = ag.Variable(marray_plugin.make_masked(np.array([1.0, 2.0, 3.0])), requires_grad=True)
    assert x.data.mask.tolist() == [False, True, False]
    y = ag.namespace("marray").mean(x)
    assert float(marray_plugin.to_numpy(y.data)) == 2.0  # (1 + 3) / 2
    y.backward()
    np.testing.assert_allclose(marray_plugin.to_numpy(x.grad.data), [0.5, 0.0, 0.5])
    builtin = RULES["mean"].vjps[0](marray_plugin.namespace(), x.data[0], (3,))
    np.testing.assert_allclose(marray_plugin.to_numpy(builtin), [1 / 3])  # broadcast to 3


def _conformance_json(tmp_path, env, *args):
    out = tmp_path / "out.json"
    done = subprocess.run([sys.executable, "-m", "arraygrad.cli", "conformance", *args,
                           "-q", "--external", "none", "--json", str(out)],
                          capture_output=True, text=True, env={**os.environ, **env})
    return done.returncode, json.loads(out.read_text())["results"], done.stdout + done.stderr


@pytest.mark.parametrize("rules", ["plugin", "builtin"])
def test_masked_mean_flagged_without_the_plugins_rule(marray_plugin, tmp_path, rules):
    """``ARRAYGRAD_MARRAY_RULES=builtin`` leaves arraygrad's own rules in place: the suite
    flags mean on masked inputs (against central differences); the plugin's rule passes."""
    code, results, output = _conformance_json(
        tmp_path, {"ARRAYGRAD_MARRAY_RULES": rules}, "--backend", "marray",
        "--op", "mean*@masked", "--dtype", "float64")
    assert results and all(r["inputs"] == "masked" for r in results), output
    if rules == "plugin":
        assert code == 0 and {r["status"] for r in results} == {"pass"}, output
        return
    assert code == 1, output
    flagged = [r for r in results if r["status"] == "fail"]
    assert all(r["checks"]["numerical"]["status"] == "fail" for r in flagged), output
    # every real mean over masked entries is flagged (a 0-d input has no masked entry)
    assert {r["case"] for r in flagged} == {r["case"] for r in results
                                            if r["case"] != "mean[0d]"}, output


# ------------------------------------------------------------------------------ sparse


def test_sparse_certifies(sparse_plugin):
    results = _certify("sparse", "arraygrad_sparse", SPARSE_OPS)
    filled = [r for r in results if r.inputs == "fill"]
    assert filled and sum(r.status == "pass" for r in filled) > 50
    assert any(r.status == "deviation" for r in results)  # sparse lacks cumulative_sum...


def test_sparse_index_assignment_makes_a_new_array(sparse_plugin):
    import sparse

    x = ag.Variable(sparse.COO.from_numpy(np.array([1.0, 2.0, 3.0])), requires_grad=True)
    y = x * 2
    before = y.data
    y[0] = 5.0  # COO refuses item assignment: the plugin's set_index gives a new array
    assert y.data is not before and isinstance(y.data, sparse.COO)
    ag.namespace("sparse").sum(y * y).backward()
    np.testing.assert_allclose(sparse_plugin.to_numpy(x.grad.data), [0.0, 16.0, 24.0])
