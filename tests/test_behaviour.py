"""The engine-behaviour checks of conformance/behaviour.py pass on every backend, and catch a
broken engine."""

import numpy as np
import pytest

import arraygrad as ag
from arraygrad import _engine
from conformance.behaviour import BEHAVIOURS, Skip, run_behaviours

# backend name -> the library it needs
BACKENDS = {"numpy": "numpy", "array_api_strict": "array_api_strict", "torch": "torch",
            "jax": "jax", "dask": "dask.array"}


@pytest.fixture(params=list(BACKENDS))
def backend(request):
    pytest.importorskip(BACKENDS[request.param])
    return ag.get_backend(request.param)


@pytest.mark.parametrize("name", list(BEHAVIOURS))
@pytest.mark.parametrize("seed", [0, 1])
def test_behaviour(backend, name, seed):
    try:
        BEHAVIOURS[name](backend, np.random.default_rng(seed))
    except Skip as reason:
        pytest.skip(f"{backend.name}: {reason}")


def _overwrite_leaf_grad(monkeypatch):
    """.grad is replaced, not added to, by each backward()."""
    apply = _engine.AccumulateGrad.apply

    def overwriting(self, grads, *options):
        self.variable._grad = None
        return apply(self, grads, *options)

    monkeypatch.setattr(_engine.AccumulateGrad, "apply", overwriting)


def _reverse_hooks(monkeypatch):
    """Hooks run last-registered first."""
    run_hooks = _engine._run_hooks
    monkeypatch.setattr(_engine, "_run_hooks",
                        lambda hooks, *args: run_hooks(dict(reversed(hooks.items())), *args))


def _ignore_retain_graph(monkeypatch):
    """Saved values are freed after every backward()."""
    apply = _engine.Node.apply
    monkeypatch.setattr(_engine.Node, "apply",
                        lambda self, grads, create_graph, retain_graph, *edges:
                        apply(self, grads, create_graph, False, *edges))


@pytest.mark.parametrize("mutate, caught_by", [
    (_overwrite_leaf_grad, "accumulate"),
    (_reverse_hooks, "hooks_leaf_order"),
    (_reverse_hooks, "hooks_nonleaf"),
    (_ignore_retain_graph, "retain_graph"),
    (_ignore_retain_graph, "saved_released"),
])
def test_a_broken_engine_is_caught(monkeypatch, mutate, caught_by):
    check = BEHAVIOURS[caught_by]
    backend = ag.get_backend("numpy")
    check(backend, np.random.default_rng(0))  # passes before the mutation
    mutate(monkeypatch)
    with pytest.raises(AssertionError):
        check(backend, np.random.default_rng(0))


def test_run_behaviours_reports_a_status_per_check(monkeypatch):
    assert run_behaviours("numpy") == {name: ("pass", "") for name in BEHAVIOURS}
    _overwrite_leaf_grad(monkeypatch)
    status, detail = run_behaviours("numpy", names=["accumulate"])["accumulate"]
    assert status == "fail" and "AssertionError" in detail
