"""Rules of ``matmul``, ``matrix_transpose``, ``tensordot``, ``vecdot``, the ``linalg``
extension's norms, and ``einsum`` (outside the standard)."""

import functools
import math
import string

from ._core import (MULTILINEAR, H, conj, defjoint, defvjp, device_of, expand_reduced,
                    is_complex, normalize_axis)


def _as_matrices(xp, g, x1, x2):
    """Promote 1-D operands of matmul to matrices and ``g`` to match (the engine fits back)."""
    if x2.ndim == 1:
        x2 = xp.reshape(x2, (-1, 1))
        g = xp.reshape(g, tuple(g.shape) + (1,))
    if x1.ndim == 1:
        x1 = xp.reshape(x1, (1, -1))
        g = xp.reshape(g, tuple(g.shape[:-1]) + (1,) + tuple(g.shape[-1:]))
    return g, x1, x2


def vjp_matmul_x1(xp, g, x1, x2):
    if x1.ndim == 1 and x2.ndim == 2:  # vector @ matrix: a matrix-vector product (gemv)
        return g @ H(xp, x2)
    vector = x1.ndim == 1
    g, x1, x2 = _as_matrices(xp, g, x1, x2)
    grad = g @ H(xp, x2)
    return grad[..., 0, :] if vector else grad  # batch axes are summed by the engine


def vjp_matmul_x2(xp, g, x1, x2):
    if x2.ndim == 1 and x1.ndim == 2:  # matrix @ vector: no promotion to an (n, 1) matrix
        return H(xp, x1) @ g
    if x2.ndim <= 2 < x1.ndim:  # a batch times one matrix: its gradient sums over the batch,
        # one product of the stacked rows (not a product per batch, then their sum)
        count = math.prod(x1.shape[:-1])  # (not -1: an empty x1 has no length to infer)
        rows = xp.reshape(x1, (count, x1.shape[-1]))
        return H(xp, rows) @ xp.reshape(g, (count,) if x2.ndim == 1 else (count, g.shape[-1]))
    vector = x2.ndim == 1
    g, x1, x2 = _as_matrices(xp, g, x1, x2)
    grad = H(xp, x1) @ g
    return grad[..., 0] if vector else grad


def _sgn(xp, x):
    if is_complex(x):
        magnitude = xp.abs(x)
        return x / xp.where(magnitude == 0, xp.ones_like(magnitude), magnitude)
    return xp.sign(x)


def vjp_vector_norm(xp, g, x, ans, *, axis=None, keepdims=False, ord=2):
    ans = expand_reduced(xp, ans, axis, x.ndim, keepdims)
    g = expand_reduced(xp, g, axis, x.ndim, keepdims)
    if ord == 0:  # a count: 0 everywhere, infinite and NaN entries included (PyTorch)
        return xp.zeros_like(x)
    if ord in (float("inf"), float("-inf")):  # ties share equally, as in max/min
        mask = xp.astype(xp.abs(x) == ans, g.dtype)
        count = xp.sum(mask, axis=_axes(axis, x.ndim), keepdims=True)
        return g * _sgn(xp, x) * mask / count
    safe = xp.where(ans == 0, xp.ones_like(ans), ans)
    if ord == 2:
        grad = g * x / safe
    elif ord == 1:
        grad = g * _sgn(xp, x)
    else:
        magnitude = xp.abs(x)  # PyTorch: 0 at a zero entry, also for ord < 1 (not 0 * inf);
        zero = magnitude == 0  # 0 ** (ord - 1) is not computed there (a warning, and NaN in
        safe_magnitude = xp.where(zero, xp.ones_like(magnitude), magnitude)  # second order)
        scale = xp.where(zero, xp.zeros_like(magnitude), safe_magnitude ** (ord - 1))
        grad = g * _sgn(xp, x) * scale / safe ** (ord - 1)
    return xp.where(ans == 0, xp.zeros_like(grad), grad)  # PyTorch: 0 at a zero norm


def _axes(axis, ndim):
    return normalize_axis(axis, ndim) if ndim else None


defvjp("matmul", vjp_matmul_x1, vjp_matmul_x2, arrays="x1 x2",
       jvps=(lambda xp, t, x2: t @ x2, lambda xp, t, x1: x1 @ t))
defvjp("matrix_transpose", lambda xp, g: xp.matrix_transpose(g),
       jvps=(lambda xp, t: xp.matrix_transpose(t),))


def jvp_vector_norm(xp, t, x, ans, *, axis=None, keepdims=False, ord=2):
    # A real-valued reduction: contract t with the VJP's weights, Re(conj(w) t).
    w = vjp_vector_norm(xp, xp.ones_like(ans), x, ans, axis=axis, keepdims=keepdims, ord=ord)
    product = conj(xp, w) * t
    return xp.sum(xp.real(product) if is_complex(product) else product,
                  axis=_axes(axis, x.ndim), keepdims=keepdims)


defvjp("linalg.vector_norm", vjp_vector_norm, jvps=(jvp_vector_norm,))


def _tensordot_axes(axes, ndim1, ndim2):
    """The contracted axes of each operand as lists of non-negative ints, from ``axes`` as the
    standard and NumPy take it: an int (the last ``axes`` of ``x1``, the first of ``x2``), or a
    pair of sequences or of ints (``axes=[-1, 0]``, one axis each)."""
    if isinstance(axes, int):
        return list(range(ndim1 - axes, ndim1)), list(range(axes))
    first, second = (list(a) if isinstance(a, (list, tuple)) else [a] for a in axes)
    return [a % ndim1 for a in first], [b % ndim2 for b in second]


def vjp_tensordot(xp, g, x1, x2, *, axes=2, needed=(True, True)):
    # As a matmul: x1 -> (free1, contracted), x2 -> (contracted, free2).
    a1, a2 = _tensordot_axes(axes, x1.ndim, x2.ndim)
    free1 = [i for i in range(x1.ndim) if i not in a1]
    free2 = [i for i in range(x2.ndim) if i not in a2]
    # (sizes, not -1: an empty operand has no length to infer)
    m1 = xp.reshape(xp.permute_dims(x1, tuple(free1 + a1)), (_prod(x1, free1), _prod(x1, a1)))
    m2 = xp.reshape(xp.permute_dims(x2, tuple(a2 + free2)), (_prod(x2, a2), _prod(x2, free2)))
    gm = xp.reshape(g, (m1.shape[0], m2.shape[1]))
    g1 = g2 = None
    if needed[0]:
        g1 = xp.permute_dims(xp.reshape(gm @ H(xp, m2), tuple(x1.shape[i] for i in free1 + a1)),
                             _inverse(free1 + a1))
    if needed[1]:
        g2 = xp.permute_dims(xp.reshape(H(xp, m1) @ gm, tuple(x2.shape[i] for i in a2 + free2)),
                             _inverse(a2 + free2))
    return [g1, g2]


def _prod(x, axes):
    size = 1
    for a in axes:
        size *= x.shape[a]
    return size


def _inverse(order):
    return tuple(order.index(i) for i in range(len(order)))


def _vecdot_axis(x1, x2, axis):
    return axis if axis < 0 else axis - max(x1.ndim, x2.ndim)


# vecdot(x1, x2) = sum(conj(x1) * x2, axis): the gradients are x2 conj(g) and x1 g.
defvjp("vecdot",
       lambda xp, g, x1, x2, *, axis=-1: x2 * conj(xp, xp.expand_dims(g, axis=_vecdot_axis(
           x1, x2, axis))),
       lambda xp, g, x1, x2, *, axis=-1: x1 * xp.expand_dims(g, axis=_vecdot_axis(x1, x2, axis)),
       arrays="x1 x2",
       jvps=(lambda xp, t, x1, x2, *, axis=-1: xp.vecdot(t, x2, axis=axis),
             lambda xp, t, x1, x2, *, axis=-1: xp.vecdot(x1, t, axis=axis)))
defjoint("tensordot", vjp_tensordot, arrays="x1 x2", params="axes",
         jvps=(lambda xp, t, x2, *, axes=2: xp.tensordot(t, x2, axes=axes),
               lambda xp, t, x1, *, axes=2: xp.tensordot(x1, t, axes=axes)))


@functools.lru_cache(maxsize=256)
def parse_einsum(subscripts: str, shapes: tuple) -> tuple[tuple[str, ...], str]:
    """The letters of each operand and of the output of ``einsum(subscripts, ...)`` on operands
    of ``shapes``: spaces dropped, each ``...`` written out as letters unused in ``subscripts``
    (the same letters for the same axes, aligned from the right), and an implicit output made
    explicit as NumPy makes it (the ellipsis' axes, then the letters that occur once, sorted).
    Raises an error naming ``einsum``, the subscripts and the shapes for what no backend
    takes."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    specs = inputs.split(",")
    where = f"einsum({subscripts!r}) on operands of shape {', '.join(map(str, shapes))}"
    if len(specs) != len(shapes):
        raise TypeError(f"{where}: its subscripts name {len(specs)} operand"
                        f"{'s' if len(specs) != 1 else ''} but got {len(shapes)}")
    ellipsis = ""
    if "." in subscripts:
        specs, output, ellipsis = _without_ellipsis(where, specs, output if arrow else None,
                                                    shapes)
    for k, (spec, shape) in enumerate(zip(specs, shapes)):
        if len(spec) != len(shape):
            raise ValueError(f"{where}: operand {k} has {len(shape)} axes, but its subscripts "
                             f"name {len(spec)}")
    letters = "".join(specs)
    if not arrow:
        output = ellipsis + "".join(sorted(c for c in set(letters) if letters.count(c) == 1
                                           and c not in ellipsis))
    wrong = [c for c in letters + output if c not in string.ascii_letters]
    if wrong or len(set(output)) != len(output) or not set(output) <= set(letters):
        raise ValueError(f"{where}: " + (f"{wrong[0]!r} is not a letter" if wrong else
                         "the output repeats a letter or names one that no operand has"))
    sizes = {}  # {letter: (its length other than 1, if any, and an operand with it)}
    for k, (spec, shape) in enumerate(zip(specs, shapes)):
        for c, n in zip(spec, shape):
            seen, j = sizes.get(c, (n, k))
            if n != 1 and seen not in (1, n):
                raise ValueError(f"{where}: {c!r} is {seen} long in operand {j} but {n} in "
                                 f"operand {k}")
            if n != 1 or c not in sizes:
                sizes[c] = (n, k)
    return tuple(specs), output


def _without_ellipsis(where, specs, output, shapes):
    """``specs`` and ``output`` with each ``...`` written out as letters, and those letters."""
    free = [c for c in string.ascii_letters if c not in "".join(specs) + (output or "")]
    widths = []
    for spec, shape in zip(specs, shapes):
        if spec.replace("...", "", 1).count("."):
            raise ValueError(f"{where}: a '.' that is not part of an ellipsis")
        widths.append(len(shape) - (len(spec) - 3) if "..." in spec else 0)
        if widths[-1] < 0:
            raise ValueError(f"{where}: operand {len(widths) - 1} has {len(shape)} axes, "
                             "fewer than its subscripts name")
    width = max(widths)
    if width > len(free):
        raise ValueError(f"{where}: too many axes under the ellipsis")
    ellipsis = "".join(free[:width])
    specs = [spec.replace("...", ellipsis[width - w:]) for spec, w in zip(specs, widths)]
    if output is not None:
        if "..." not in output and width:
            raise ValueError(f"{where}: the operands have axes under the ellipsis, so the output "
                             "must have one too ('...->...'), as in NumPy")
        output = output.replace("...", ellipsis)
        if "." in output:
            raise ValueError(f"{where}: a '.' that is not part of an ellipsis")
    return specs, output, ellipsis


def vjp_einsum(xp, g, operands, *, subscripts, needed=None):
    # Operand k's gradient is the einsum of g with the other operands (conjugated: PyTorch's
    # convention for complex values, as matmul's) that gives k's letters, each once.
    specs, output = parse_einsum(subscripts, tuple(tuple(o.shape) for o in operands))
    grads = []
    for k, (spec, operand) in enumerate(zip(specs, operands)):
        if needed is not None and not needed[k]:  # a constant operand: no einsum for it
            grads.append(None)
            continue
        others = specs[:k] + specs[k + 1:]
        reached = set(output).union(*others)
        kept = "".join(c for c in dict.fromkeys(spec) if c in reached)
        terms = [conj(xp, o) for j, o in enumerate(operands) if j != k]
        grad = xp.einsum(",".join((output, *others)) + "->" + kept, g, *terms)
        grads.append(grad if kept == spec else _einsum_layout(xp, grad, kept, spec, operand.shape))
    return grads


def _einsum_layout(xp, grad, kept, spec, shape):
    """``grad``, whose axes are the letters ``kept``, as a gradient of an operand of ``spec`` and
    ``shape``: on the diagonal of each letter ``spec`` repeats (times an identity), and constant
    along the letters no other operand nor the output has (the forward summed them)."""
    grad = xp.reshape(grad, tuple(grad.shape[kept.index(c)] if c in kept and spec.index(c) == i
                                  else 1 for i, c in enumerate(spec)))
    for i, c in enumerate(spec):
        first = spec.index(c)
        if first != i:
            axes = [1] * len(spec)
            axes[first] = axes[i] = shape[i]
            eye = xp.eye(shape[i], dtype=xp.bool, device=device_of(grad))
            grad = xp.where(xp.reshape(eye, tuple(axes)), grad,
                            xp.zeros((), dtype=grad.dtype, device=device_of(grad)))
    return xp.broadcast_to(grad, tuple(n if m == 1 else m for n, m in zip(shape, grad.shape)))


defjoint("einsum", vjp_einsum, arrays="operands", sequence="varargs", params="subscripts",
         jvps=MULTILINEAR, standard=False)
