"""The example out-of-tree plugin (``plugins/example-plugin``), installed with pip as its own
distribution: discovered through its entry point, listed by ``arraygrad backends``, certified by
the conformance suite, and a working backend (``example_strict``: array-api-strict on its
full-dtype devices, with arrays of a subclass so that ownership is unambiguous)."""

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import arraygrad as ag
from arraygrad.testing import check_grads

pytest.importorskip("array_api_strict")

NAME = "example_strict"
SOURCE = Path(__file__).resolve().parents[1] / "plugins" / "example-plugin"


def _can_build_offline():
    try:
        version = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:  # Python >= 3.12 venvs have none
        return False
    version = tuple(int(part) for part in version.split(".")[:2])
    return version >= (70, 1) or importlib.util.find_spec("wheel") is not None  # bdist_wheel


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A directory the example distribution was pip-installed into (``--target``), built from a
    copy of its source so that the build leaves nothing in the work tree."""
    root = tmp_path_factory.mktemp("example-plugin")
    source = shutil.copytree(SOURCE, root / "source")
    target = root / "site"
    # Build with this environment's setuptools where it can make wheels (no download); else
    # pip fetches the build requirements into an isolated environment.
    offline = ["--no-build-isolation", "--no-index"] if _can_build_offline() else []
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *offline,
         "--target", str(target), str(source)],
        capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / "arraygrad_example").is_dir()
    return target


def _run(site, args, **kwargs):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=site, **kwargs)


@pytest.fixture(scope="module")
def backend(site):
    """The installed plugin registered in this process, removed again after the module."""
    sys.path.insert(0, str(site))
    import arraygrad_example

    registry = ag.registry
    registry.ensure_loaded()
    registered_here = NAME not in registry.backends  # else installed for real, found already
    if registered_here:
        ag.register_backend(arraygrad_example, name=NAME)
    yield ag.get_backend(NAME)
    if registered_here:  # leave the session's registry as it was for the other test modules
        registry.unregister(arraygrad_example)
    sys.path.remove(str(site))


def test_discovered_through_its_entry_point(site):
    script = textwrap.dedent(f"""
        import importlib.metadata
        import numpy as np
        import arraygrad as ag
        points = {{p.name: p.value for p in importlib.metadata.entry_points(group="arraygrad")}}
        assert points.get({NAME!r}) == "arraygrad_example", points
        infos = {{info.name: info for info in ag.backends()}}
        info = infos[{NAME!r}]
        assert info.available, info.reason
        assert info.plugin == {NAME!r}
        print([str(d) for d in info.devices])
        raw = ag.get_backend({NAME!r}).raw
        x = ag.Variable(raw.asarray(np.arange(3.0)), requires_grad=True)
        assert x.backend == {NAME!r}, x.backend
        ag.namespace({NAME!r}).sum(x * x).backward()
        assert type(x.grad.data).__name__ == "ExampleArray"
        print(ag.get_backend({NAME!r}).to_numpy(x.grad.data).tolist())
    """)
    done = _run(site, ["-c", script])
    assert done.returncode == 0, done.stderr
    devices, grad = done.stdout.splitlines()
    assert "no_float64" not in devices and "device1" in devices and "CPU_DEVICE" in devices
    assert grad == "[0.0, 2.0, 4.0]"


def test_listed_by_the_backends_command(site):
    done = _run(site, ["-m", "arraygrad.cli", "backends"])
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()}
    line = lines[NAME]
    assert "available" in line and "not available" not in line
    import array_api_strict

    assert array_api_strict.__version__ in line
    assert "device1" in line and "device2" in line and "no_float64" not in line
    assert "available" in lines["numpy"] and "available" in lines["array_api_strict"]


def test_certified_by_the_conformance_suite(site):
    if importlib.util.find_spec("arraygrad.conformance.cli") is None:
        pytest.skip("the conformance runner (arraygrad.conformance.cli) is not there yet")
    done = _run(site, ["-m", "arraygrad.cli", "conformance", "--backend", NAME], timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert NAME in done.stdout


def test_ownership_is_unambiguous(backend):
    import array_api_strict

    raw = backend.raw
    ours = raw.asarray(np.ones(3))
    plain = array_api_strict.asarray(np.ones(3))
    assert type(ours).__name__ == "ExampleArray" and isinstance(ours, type(plain))
    assert ag.Variable(ours).backend == NAME
    assert ag.Variable(plain).backend == "array_api_strict"
    # results of the namespace, including those array-api-strict makes of its base class
    xp = backend.ns
    x = ag.Variable(ours, requires_grad=True)
    for result in (x + 1, x[:2], xp.sort(x), xp.unstack(xp.stack([x, x]))[0], xp.asarray(x)):
        assert result.backend == NAME and type(result.data).__name__ == "ExampleArray"
    with pytest.raises(ag.BackendError, match="'example_strict'.*'array_api_strict'"):
        x + ag.Variable(plain)


def test_its_device_set(backend):
    import array_api_strict

    devices = backend.devices()
    assert [str(d) for d in devices] == [str(array_api_strict.Device(name)) for name in
                                         ("CPU_DEVICE", "device1", "device2")]
    with pytest.raises(ValueError, match="has no device"):
        backend.raw.ones(3, device=array_api_strict.Device("no_float64"))
    caps = backend.capabilities()
    assert caps["inplace"] and "float64" in backend.dtypes


CASES = {
    "elementwise": (lambda xp, x: xp.exp(x) * xp.sin(x) + x ** 2 / (1 + x * x), [(3, 4)]),
    "reductions": (lambda xp, x: xp.sum(x, axis=1, keepdims=True) * xp.max(x, axis=0), [(3, 4)]),
    "matmul": (lambda xp, x, y: x @ y, [(3, 4), (4, 2)]),
    "getitem": (lambda xp, x: x[1:, ::2] * x[0, 1], [(3, 4)]),
    "take": (lambda xp, x: xp.take(x, xp.asarray([2, 0, 2], device=x.device), axis=0), [(3, 4)]),
    "reshape": (lambda xp, x: xp.permute_dims(xp.reshape(x, (2, 6)), (1, 0)), [(3, 4)]),
    "sort": (lambda xp, x: xp.sort(x, axis=1), [(3, 4)]),
    "unstack": (lambda xp, x: xp.unstack(x)[1], [(3, 4)]),
    "cumulative_prod": (lambda xp, x: xp.cumulative_prod(x, axis=1), [(3, 4)]),
}


def _inputs(shapes):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(shape) for shape in shapes]


@pytest.mark.parametrize("case", CASES)
def test_gradients_check_and_agree_with_numpy(backend, case):
    f, shapes = CASES[case]
    arrays = _inputs(shapes)
    check_grads(lambda *v: f(backend.ns, *v), *arrays, backend=NAME, order=2)
    results = {}
    for be in (backend, ag.get_backend("numpy")):
        inputs = [ag.Variable(be.raw.asarray(a), requires_grad=True) for a in arrays]
        out = f(be.ns, *inputs)
        be.ns.sum(out * out).backward()
        results[be.name] = [be.to_numpy(x.grad.data) for x in inputs]
    for ours, expected in zip(results[NAME], results["numpy"]):
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES)
def test_gradients_stay_on_a_non_default_device(backend, case):
    # Rules and the engine must make their arrays on the device of the values they work on.
    import array_api_strict

    device = array_api_strict.Device("device1")
    f, shapes = CASES[case]
    inputs = [ag.Variable(backend.raw.asarray(a, device=device), requires_grad=True)
              for a in _inputs(shapes)]
    xp = backend.ns
    out = f(xp, *inputs)
    xp.sum(out * out).backward()
    for x in inputs:
        assert x.grad.device == device, f"{case}: gradient on {x.grad.device}"
        assert type(x.grad.data).__name__ == "ExampleArray"


def test_to_moves_a_leaf_in_and_out(backend):
    x = ag.Variable(np.arange(3.0), requires_grad=True)
    moved = x.to(NAME)
    assert moved.backend == NAME and moved.is_leaf and moved.requires_grad
    back = moved.detach().to("numpy")
    np.testing.assert_array_equal(back.data, [0.0, 1.0, 2.0])
