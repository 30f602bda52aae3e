"""Function transforms on pytrees (dicts, tuples, lists, namedtuples, None), jacfwd/jacrev and
hvp: every result checked against float64 central differences, and against ``torch.func`` and
JAX where they are installed (JAX's functions jitted: compiling once is faster than its eager
dispatch of every op, and computes the same values)."""

import collections

import numpy as np
import pytest

import arraygrad as ag

xp = ag.namespace("numpy")
RNG = np.random.default_rng(7)
W, B, X = RNG.standard_normal((3, 2)), RNG.standard_normal(2), RNG.standard_normal((4, 3))
V = RNG.standard_normal(2)
EPS = 1e-6


# ------------------------------------------------------------------- trees, by hand (no _pytree)
def tmap(fn, *trees):
    """``fn`` on the leaves of trees of one structure (dicts by key)."""
    first = trees[0]
    if first is None:
        return None
    if isinstance(first, dict):
        return {k: tmap(fn, *[t[k] for t in trees]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*[tmap(fn, *items) for items in zip(*trees)])
    if isinstance(first, (tuple, list)):
        return type(first)(tmap(fn, *items) for items in zip(*trees))
    return fn(*trees)


def leaves(tree):
    found = []
    tmap(found.append, tree)
    return found


def assert_trees_close(got, want, rtol=1e-6, atol=1e-8, exact_types=True):
    """Same structure (types and dict keys), values close."""
    if want is None:
        assert got is None
        return
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), (got, want)
        for k in want:
            assert_trees_close(got[k], want[k], rtol, atol, exact_types)
        return
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), (got, want)
        if exact_types:
            assert type(got) is type(want), (type(got), type(want))
        for g, w in zip(got, want):
            assert_trees_close(g, w, rtol, atol, exact_types)
        return
    g = np.asarray(got.data if isinstance(got, ag.Variable) else got)
    w = np.asarray(want.detach().cpu().numpy() if hasattr(want, "detach") else want)
    assert g.shape == w.shape, (g.shape, w.shape)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def central(f, primals, tangents):
    """(f(p + eps t) - f(p - eps t)) / 2 eps, as a tree of f's output structure (NumPy)."""
    plus = f(*[tmap(lambda p, t: p + EPS * t, p, t) for p, t in zip(primals, tangents)])
    minus = f(*[tmap(lambda p, t: p - EPS * t, p, t) for p, t in zip(primals, tangents)])
    return tmap(lambda a, b: (np.asarray(a) - np.asarray(b)) / (2 * EPS), plus, minus)


def basis(tree, path_leaf, index):
    """A tree of zeros like ``tree``, with a 1 at ``index`` of leaf number ``path_leaf``."""
    counter = iter(range(10**6))

    def one(a):
        z = np.zeros_like(a)
        if next(counter) == path_leaf:
            z[index] = 1.0
        return z
    return tmap(one, tree)


def numpy_of(f):
    """``f`` (written against the differentiable namespace) run on NumPy trees, no recording."""
    def run(*trees):
        with ag.no_grad():
            out = f(*tmap(ag.Variable, trees))
        return tmap(lambda v: np.asarray(v.data), out)
    return run


# ------------------------------------------------------------------- functions, one per library
def loss(lib):
    """A scalar from a dict of parameters and an input array (not symmetric in anything)."""
    def f(params, x):
        h = lib.tanh(x @ params["w"] + params["b"])
        return lib.sum(h * h * params["b"]) + lib.sum(lib.sin(params["w"][0]) * params["b"])
    return f


def tree_out(lib):
    """A dict holding a tuple, from a dict and a list."""
    def f(params, xs):
        y = lib.tanh(xs[0] @ params["w"] + params["b"])
        return {"y": y, "pair": (lib.sum(params["w"] * params["w"] * xs[1]), params["b"] * y[1])}
    return f


def params():
    return {"w": W.copy(), "b": B.copy()}


def torch_tree(tree):
    torch = pytest.importorskip("torch")
    return tmap(lambda a: torch.tensor(a, dtype=torch.float64), tree)


class _Torch:
    """Enough of the torch namespace for the functions above."""

    def __getattr__(self, name):
        return getattr(__import__("torch"), name)


# ================================================================================== grad, vjp
def test_grad_of_a_dict_matches_central_differences_torch_and_jax():
    f = loss(xp)
    got = ag.grad(f)(params(), X)
    assert set(got) == {"w", "b"} and all(isinstance(v, np.ndarray) for v in got.values())
    host = numpy_of(f)
    for k, leaf in enumerate(leaves(params())):
        for index in np.ndindex(leaf.shape):
            direction = basis(params(), k, index)
            want = central(host, [params(), X], [direction, np.zeros_like(X)])
            assert abs(float(leaves(got)[k][index]) - float(want)) < 1e-6
    value, both = ag.value_and_grad(f, argnums=(0, 1))(params(), X)
    np.testing.assert_allclose(value, host(params(), X))
    assert_trees_close(both[0], got)
    pytest.importorskip("torch")
    from torch import func
    want = func.grad(loss(_Torch()), argnums=(0, 1))(torch_tree(params()), torch_tree(X))
    assert_trees_close(both, want, rtol=1e-10, atol=1e-12)


def test_grad_against_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    with jax.enable_x64(True):
        want = jax.jit(jax.grad(loss(jnp), argnums=(0, 1)))(params(), X)
        got = ag.grad(loss(xp), argnums=(0, 1))(params(), X)
        assert_trees_close(got, want, rtol=1e-10, atol=1e-12)


def test_vjp_of_trees_matches_central_differences_and_torch():
    f = tree_out(xp)
    primals = (params(), [X.copy(), V.copy()])
    out, vjp_fn = ag.vjp(f, *primals)
    assert_trees_close(out, numpy_of(f)(*primals))
    u = tmap(lambda a: RNG.standard_normal(np.shape(a)), out)
    grads = vjp_fn(u)
    assert isinstance(grads, tuple) and len(grads) == 2 and isinstance(grads[1], list)
    # <u, J t> by central differences equals <J^T u, t>, for a random tangent t.
    t = tmap(lambda a: RNG.standard_normal(a.shape), primals)
    along = central(numpy_of(f), primals, t)
    forward = sum(np.vdot(a, b) for a, b in zip(leaves(u), leaves(along)))
    backward = sum(np.vdot(a, b) for a, b in zip(leaves(grads), leaves(t)))
    np.testing.assert_allclose(forward, backward, rtol=1e-7)
    pytest.importorskip("torch")
    from torch import func
    _, torch_vjp = func.vjp(tree_out(_Torch()), *torch_tree(primals))
    assert_trees_close(grads, torch_vjp(torch_tree(u)), rtol=1e-10, atol=1e-12)


def test_vjp_and_jvp_against_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    primals = (params(), [X.copy(), V.copy()])
    t = tmap(lambda a: RNG.standard_normal(a.shape), primals)
    with jax.enable_x64(True):
        out, jax_vjp = jax.vjp(jax.jit(tree_out(jnp)), *primals)
        u = tmap(lambda a: RNG.standard_normal(np.shape(a)), out)
        _, vjp_fn = ag.vjp(tree_out(xp), *primals)
        assert_trees_close(vjp_fn(u), jax_vjp(u), rtol=1e-10, atol=1e-12, exact_types=False)
        want_out, want_t = jax.jvp(jax.jit(tree_out(jnp)), primals, t)
        got_out, got_t = ag.jvp(tree_out(xp), primals, t)
        assert_trees_close(got_out, want_out, rtol=1e-12)
        assert_trees_close(got_t, want_t, rtol=1e-10, atol=1e-12)


# ======================================================================================== jvp
def test_jvp_of_trees_matches_central_differences_and_torch():
    f = tree_out(xp)
    primals = (params(), [X.copy(), V.copy()])
    t = tmap(lambda a: RNG.standard_normal(a.shape), primals)
    # The tangent dict's keys in another order: matched by key.
    t = ({"b": t[0]["b"], "w": t[0]["w"]}, t[1])
    out, tangent = ag.jvp(f, primals, t)
    assert list(out) == ["y", "pair"] and isinstance(tangent["pair"], tuple)
    assert_trees_close(tangent, central(numpy_of(f), primals, t))
    pytest.importorskip("torch")
    from torch import func
    in_order = ({"w": t[0]["w"], "b": t[0]["b"]}, t[1])  # torch.func wants the keys' order
    _, want = func.jvp(tree_out(_Torch()), torch_tree(primals), torch_tree(in_order))
    assert_trees_close(tangent, want, rtol=1e-10, atol=1e-12)


def test_variables_in_variables_out_and_nesting_stays_connected():
    """Variables in give Variables out; a jvp under grad (its primal requires grad) gives a
    result connected to the outer graph: d/dw of <J(w) t, 1> checked by central differences."""
    w = ag.Variable(W)
    got = ag.grad(loss(xp))({"w": w, "b": ag.Variable(B)}, X)
    assert isinstance(got["w"], ag.Variable) and isinstance(got["b"], ag.Variable)

    def outer(w):
        _, tangent = ag.jvp(lambda p: tree_out(xp)(p, [X, V]), ({"w": w, "b": B},),
                            ({"w": np.ones_like(W), "b": np.zeros_like(B)},))
        return xp.sum(tangent["y"]) + tangent["pair"][0] + xp.sum(tangent["pair"][1])

    def plain(w):
        _, tangent = ag.jvp(lambda p: tree_out(xp)(p, [X, V]), ({"w": w, "b": B},),
                            ({"w": np.ones_like(W), "b": np.zeros_like(B)},))
        return sum(np.sum(leaf) for leaf in leaves(tangent))

    gradient = ag.grad(outer)(W)
    for index in [(0, 0), (2, 1), (1, 0)]:
        step = np.zeros_like(W)
        step[index] = EPS
        want = (plain(W + step) - plain(W - step)) / (2 * EPS)
        np.testing.assert_allclose(gradient[index], want, rtol=1e-6, atol=1e-8)


# ================================================================================== Jacobians
@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_jacobians_of_trees_match_central_differences(mode):
    """JAX's structure: for each output leaf, a tree like the input; leaves of shape
    output shape + input shape."""
    f = tree_out(xp)
    primals = (params(), [X.copy(), V.copy()])
    transform = ag.jacfwd if mode == "fwd" else ag.jacrev
    jac = transform(f, argnums=(0, 1))(*primals)
    assert ag.jacobian(f, argnums=(0, 1), mode=mode)(*primals).keys() == jac.keys()
    host = numpy_of(f)
    outs = host(*primals)
    jac_leaves_per_output = {"y": jac["y"], "p0": jac["pair"][0], "p1": jac["pair"][1]}
    out_leaves = {"y": outs["y"], "p0": outs["pair"][0], "p1": outs["pair"][1]}
    for a, tree in enumerate(primals):
        for k, leaf in enumerate(leaves(tree)):
            for index in np.ndindex(leaf.shape):
                direction = [basis(p, k, index) if b == a else tmap(np.zeros_like, p)
                             for b, p in enumerate(primals)]
                column = central(host, primals, direction)
                column = {"y": column["y"], "p0": column["pair"][0], "p1": column["pair"][1]}
                for name, block in jac_leaves_per_output.items():
                    got = np.asarray(leaves(block[a])[k])
                    assert got.shape == np.shape(out_leaves[name]) + leaf.shape
                    np.testing.assert_allclose(got[(Ellipsis,) + index], column[name],
                                               rtol=1e-6, atol=1e-8)


def test_jacobians_against_torch_and_jax():
    primals = (params(), [X.copy(), V.copy()])
    fwd = ag.jacfwd(tree_out(xp), argnums=(0, 1))(*primals)
    rev = ag.jacrev(tree_out(xp), argnums=(0, 1))(*primals)
    assert_trees_close(fwd, rev, rtol=1e-12, atol=1e-14)
    checked = 0
    try:
        import torch  # noqa: F401
        from torch import func
        want = func.jacrev(tree_out(_Torch()), argnums=(0, 1))(*torch_tree(primals))
        assert_trees_close(rev, want, rtol=1e-10, atol=1e-12)
        want = func.jacfwd(tree_out(_Torch()), argnums=(0, 1))(*torch_tree(primals))
        assert_trees_close(fwd, want, rtol=1e-10, atol=1e-12)
        checked += 1
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp
        with jax.enable_x64(True):
            assert_trees_close(fwd, jax.jit(jax.jacfwd(tree_out(jnp), argnums=(0, 1)))(*primals),
                               rtol=1e-10, atol=1e-12, exact_types=False)
            assert_trees_close(rev, jax.jit(jax.jacrev(tree_out(jnp), argnums=(0, 1)))(*primals),
                               rtol=1e-10, atol=1e-12, exact_types=False)
        checked += 1
    except ImportError:
        pass
    if not checked:
        pytest.skip("neither torch nor jax is installed")


def test_jacfwd_on_every_builtin_backend(backend, rng):
    """The unit tangents are made with the backend's own eye: array_api_strict included."""
    values = rng.standard_normal(4)
    f = lambda x: backend.xp.cumulative_sum(backend.xp.tanh(x)) * x  # noqa: E731
    fwd = ag.jacfwd(f)(backend.array(values))
    rev = ag.jacrev(f)(backend.array(values))
    np.testing.assert_allclose(backend.host(fwd), backend.host(rev), rtol=1e-12, atol=1e-14)
    assert backend.host(ag.jacobian(f)(backend.array(values))).shape == (4, 4)


# ============================================================================== hessian, hvp
def _hessian_by_central_differences(f, tree, x):
    """Central differences of the gradient (itself checked above), one column per element."""
    g = lambda p: ag.grad(f)(p, x)  # noqa: E731
    return g, [central(lambda p: g(p), [tree], [basis(tree, k, index)])
               for k, leaf in enumerate(leaves(tree)) for index in np.ndindex(leaf.shape)]


def test_hessian_of_a_dict_matches_central_differences_torch_and_jax():
    f = loss(xp)
    hess = ag.hessian(f)(params(), X)
    assert set(hess) == {"w", "b"} and set(hess["w"]) == {"w", "b"}
    assert hess["w"]["b"].shape == (3, 2, 2) and hess["b"]["w"].shape == (2, 3, 2)
    _, columns = _hessian_by_central_differences(f, params(), X)
    position = 0
    for k, name in enumerate(["w", "b"]):
        for index in np.ndindex(params()[name].shape):
            column = columns[position]
            position += 1
            for row in ["w", "b"]:
                np.testing.assert_allclose(hess[row][name][(Ellipsis,) + index], column[row],
                                           rtol=1e-6, atol=1e-7)
    try:
        import torch  # noqa: F401
        from torch import func
        want = func.hessian(lambda p: loss(_Torch())(p, torch_tree(X)))(torch_tree(params()))
        assert_trees_close(hess, want, rtol=1e-10, atol=1e-12)
    except ImportError:
        pass
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    with jax.enable_x64(True):
        want = jax.jit(jax.hessian(loss(jnp)))(params(), X)
        assert_trees_close(hess, want, rtol=1e-10, atol=1e-12)


def test_hvp_matches_the_hessian_central_differences_torch_and_jax():
    f = loss(xp)
    primals = (params(), X.copy())
    tangents = (tmap(lambda a: RNG.standard_normal(a.shape), params()),
                RNG.standard_normal(X.shape))
    value, product = ag.hvp(f, primals, tangents)
    np.testing.assert_allclose(value, numpy_of(f)(*primals))
    assert isinstance(product, tuple) and set(product[0]) == {"w", "b"}
    # Central differences of the (checked) gradient along the tangents.
    gradient = lambda p, x: ag.grad(f, argnums=(0, 1))(p, x)  # noqa: E731
    assert_trees_close(product, central(gradient, primals, tangents), rtol=1e-6, atol=1e-7)
    # The same as jvp(grad(f)) and as the full Hessian times the tangent.
    _, again = ag.jvp(ag.grad(f, argnums=(0, 1)), primals, tangents)
    assert_trees_close(product, again, rtol=1e-12, atol=1e-14)
    try:
        import torch
        from torch import func
        tf = loss(_Torch())
        tp, tt = torch_tree(primals), torch_tree(tangents)
        want_value, want = torch.autograd.functional.hvp(
            lambda w, b, x: tf({"w": w, "b": b}, x), (tp[0]["w"], tp[0]["b"], tp[1]),
            (tt[0]["w"], tt[0]["b"], tt[1]))
        assert_trees_close(value, want_value, rtol=1e-12)
        assert_trees_close(product, ({"w": want[0], "b": want[1]}, want[2]), rtol=1e-10,
                           atol=1e-12)
        _, want = func.jvp(func.grad(tf, argnums=(0, 1)), tp, tt)
        assert_trees_close(product, want, rtol=1e-10, atol=1e-12)
    except ImportError:
        pass
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    with jax.enable_x64(True):
        _, want = jax.jit(lambda p, t: jax.jvp(jax.grad(loss(jnp), argnums=(0, 1)), p, t))(
            primals, tangents)
        assert_trees_close(product, want, rtol=1e-10, atol=1e-12)


def test_third_derivative_through_hessian_and_hvp_stays_connected():
    """grad of a hessian and of an hvp (under grad, they must stay on the outer graph)."""
    c = np.array([0.3, -1.2, 0.8])
    f = lambda x: xp.sum(xp.sin(x) * x * c)  # noqa: E731
    x0 = np.array([0.4, 1.1, -0.7])
    third = ag.grad(lambda x: xp.sum(ag.hessian(f)(x)))(x0)
    # d/dx sum(H) = d/dx sum_i (2 cos x - x sin x) c_i = (-3 sin x - x cos x) c
    np.testing.assert_allclose(third, (-3 * np.sin(x0) - x0 * np.cos(x0)) * c, rtol=1e-10)
    t = np.array([1.0, -2.0, 0.5])
    third = ag.grad(lambda x: xp.sum(ag.hvp(f, (x,), (t,))[1][0]))(x0)
    np.testing.assert_allclose(third, (-3 * np.sin(x0) - x0 * np.cos(x0)) * c * t, rtol=1e-10)


# ============================================================ leaves that are not arrays; errors
Pair = collections.namedtuple("Pair", "a b")


def test_none_namedtuples_lists_and_python_floats():
    f = lambda p: xp.sum(p["pair"].a * p["pair"].b[0]) * p["scale"]  # noqa: E731
    tree = {"pair": Pair(np.array([1.0, 2.0]), [np.array([3.0, -1.0])]), "skip": None,
            "scale": 2.5}
    got = ag.grad(f)(tree)
    assert got["skip"] is None and isinstance(got["pair"], Pair)
    assert isinstance(got["pair"].b, list)
    np.testing.assert_allclose(got["pair"].a, [7.5, -2.5])
    np.testing.assert_allclose(got["pair"].b[0], [2.5, 5.0])
    np.testing.assert_allclose(got["scale"], 1.0)  # a Python float is differentiated, as JAX
    out, tangent = ag.jvp(lambda p: {"s": f(p), "none": None}, (tree,),
                          ({"pair": Pair(np.ones(2), [np.zeros(2)]), "skip": None,
                            "scale": 0.0},))
    assert tangent["none"] is None
    np.testing.assert_allclose(tangent["s"], 2.5 * (3.0 - 1.0))


def test_errors_name_the_path_in_the_tree():
    f = lambda p: xp.sum(p["w"]) * p["n"]  # noqa: E731
    with pytest.raises(TypeError, match=r"grad\(\): args\[0\]\['n'\] is a Python int"):
        ag.grad(f)({"w": np.ones(2), "n": 3})
    assert ag.grad(f, argnums=0)({"w": np.ones(2), "n": 3.0})["n"] == 2.0
    with pytest.raises(ValueError, match=r"tangents\[0\]\['b'\] is a ndarray of shape \(2,\), but "
                                         r"primals\[0\] has a tuple of 1 there"):
        ag.jvp(lambda p: p["b"], ({"b": (np.ones(2),)},), ({"b": np.ones(2)},))
    with pytest.raises(ValueError, match=r"tangents\[0\] is a dict with keys \['a'\], but "
                                         r"primals\[0\] has a dict with keys \['b'\]"):
        ag.jvp(lambda p: p["b"], ({"b": np.ones(2)},), ({"a": np.ones(2)},))
    with pytest.raises(ValueError, match=r"tangents\[0\]\['b'\] has shape \(3,\)"):
        ag.jvp(lambda p: p["b"], ({"b": np.ones(2)},), ({"b": np.ones(3)},))
    _, vjp_fn = ag.vjp(lambda p: {"y": p * 2, "z": p}, np.ones(2))
    with pytest.raises(ValueError, match=r"cotangent is a dict with keys \['y'\]"):
        vjp_fn({"y": np.ones(2)})
    with pytest.raises(TypeError, match=r"jacrev\(\): f returned a str at output\['s'\]"):
        ag.jacrev(lambda p: {"s": "no"})(np.ones(2))
    with pytest.raises(ValueError, match="mode must be 'rev' or 'fwd'"):
        ag.jacobian(lambda p: p, mode="forward")
    with pytest.raises(ag.BackwardError, match="single-element"):
        ag.hvp(lambda p: p * 2, (np.ones(2),), (np.ones(2),))


def test_has_aux_on_vjp_jvp_and_jacobians():
    f = lambda x: (xp.sin(x), {"note": "aux"})  # noqa: E731
    x = np.array([0.2, 0.5])
    _, vjp_fn, aux = ag.vjp(f, x, has_aux=True)
    assert aux == {"note": "aux"}
    np.testing.assert_allclose(vjp_fn(np.ones(2))[0], np.cos(x))
    _, tangent, aux = ag.jvp(f, (x,), (np.ones(2),), has_aux=True)
    np.testing.assert_allclose(tangent, np.cos(x))
    for transform in (ag.jacfwd, ag.jacrev):
        jac, aux = transform(f, has_aux=True)(x)
        np.testing.assert_allclose(jac, np.diag(np.cos(x)))
        assert aux == {"note": "aux"}


def test_has_aux_gives_aux_as_the_outputs_raw_for_raw_inputs_as_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    xp = ag.namespace("numpy")
    a = np.array([0.3, -1.2, 2.0])

    def f(np_):
        return lambda x: (np_.sum(np_.sin(x) * x), {"mean": np_.mean(x), "sq": (x * x, None)})

    def leaves(aux):
        return [aux["mean"], aux["sq"][0]]

    with jax.enable_x64(True):
        results = {
            "grad": (ag.grad(f(xp), has_aux=True)(a)[1],
                     jax.grad(f(jnp), has_aux=True)(a)[1]),
            "value_and_grad": (ag.value_and_grad(f(xp), has_aux=True)(a)[0][1],
                               jax.value_and_grad(f(jnp), has_aux=True)(a)[0][1]),
            "vjp": (ag.vjp(f(xp), a, has_aux=True)[2], jax.vjp(f(jnp), a, has_aux=True)[2]),
            "jvp": (ag.jvp(f(xp), (a,), (a,), has_aux=True)[2],
                    jax.jvp(f(jnp), (a,), (a,), has_aux=True)[2]),
            "jacrev": (ag.jacrev(f(xp), has_aux=True)(a)[1],
                       jax.jacrev(f(jnp), has_aux=True)(a)[1]),
            "jacfwd": (ag.jacfwd(f(xp), has_aux=True)(a)[1],
                       jax.jacfwd(f(jnp), has_aux=True)(a)[1]),
        }
    for transform, (aux, want) in results.items():
        assert aux["sq"][1] is None, transform
        for got, expected in zip(leaves(aux), leaves(want)):
            assert isinstance(got, np.ndarray), (transform, type(got))
            assert np.allclose(got, expected), transform
    # Variables in (requiring grad): aux stays a Variable connected to them, as the value does
    x = ag.Variable(a, requires_grad=True)
    _, aux = ag.grad(f(xp), has_aux=True)(x)
    assert isinstance(aux["mean"], ag.Variable) and aux["mean"].grad_fn is not None
