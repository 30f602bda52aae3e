"""The NumPy backend's fast paths (plugins/_numpy_fast.py): every one gives what
array-api-compat's function gives, bit for bit and of the same type, and leaves what it does
not cover (other dtypes, options, array types, empty arrays, bad axes) to that function."""

import copy
import warnings

import array_api_compat.numpy as compat
import numpy as np
import pytest

import arraygrad as ag

raw = ag.get_backend("numpy").raw
rng = np.random.default_rng(7)
# Uneven lengths, values of mixed signs and magnitudes: sums in a different order, or a count off
# by one, change low bits; a max taken as a min, or over another axis, changes the values.
ARRAYS = {dtype: (rng.standard_normal((3, 5, 7)) * 10.0 ** rng.integers(-3, 4, (3, 5, 7))
                  ).astype(dtype) for dtype in ("float32", "float64")}
AXES = [None, 0, 1, -1, (0, 2), (2, 0), (0, 1, 2), ()]


def same(got, expected):
    """Equal bit for bit (NaNs included), of the same dtype, shape and type (a NumPy scalar
    where NumPy gives one)."""
    assert type(got) is type(expected)
    assert got.dtype == expected.dtype and np.shape(got) == np.shape(expected)
    assert np.asarray(got).tobytes() == np.asarray(expected).tobytes()


def test_the_backend_takes_the_fast_paths_over_array_api_compat():
    assert raw.__name__ == compat.__name__  # ag.namespace(array_api_compat.numpy) finds it
    assert raw.sum is not compat.sum and raw.mean is not compat.mean
    assert raw.matmul is np.matmul
    assert raw.exp is compat.exp  # everything else is array-api-compat's, unchanged


def test_the_wrapper_copies_and_says_what_it_wraps():
    """A copy (made before ``__init__`` runs) looks its functions up anew, with no endless
    ``__getattr__`` loop over the unset wrapped namespace; a name neither has is refused by
    array-api-compat's own AttributeError."""
    copied = copy.copy(raw)
    assert copied.exp is compat.exp and copied.sum(np.ones(3)) == 3.0
    assert repr(copied) == f"<arraygrad's fast paths over {compat!r}>"
    with pytest.raises(AttributeError, match="no_such_function"):
        raw.no_such_function


@pytest.mark.parametrize("dtype", sorted(ARRAYS))
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["sum", "max", "min", "mean"])
def test_reductions_give_array_api_compats_values_bit_for_bit(name, dtype, axis, keepdims):
    x = ARRAYS[dtype]
    same(getattr(raw, name)(x, axis=axis, keepdims=keepdims),
         getattr(compat, name)(x, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("axis", [np.int64(1), np.intp(-1), (np.int32(0), 2)],
                         ids=["int64", "intp-negative", "tuple-of-int32"])
@pytest.mark.parametrize("name", ["sum", "max", "min", "mean"])
def test_reductions_take_numpy_integer_axes_as_array_api_compat_does(name, axis):
    """An axis that is a NumPy integer (what ``np.argmax`` or ``x.ndim - 1`` on a NumPy value
    gives) is an axis: mean's count once took it for a tuple and raised a TypeError."""
    x = ARRAYS["float64"]
    for keepdims in (False, True):
        same(getattr(raw, name)(x, axis=axis, keepdims=keepdims),
             getattr(compat, name)(x, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("name", ["sum", "mean"])
def test_long_float32_sums_keep_numpys_pairwise_order(name):
    x = (rng.standard_normal(100_003) + 1e3).astype(np.float32)  # naive order differs
    for axis in (None, 0):
        same(getattr(raw, name)(x, axis=axis), getattr(compat, name)(x, axis=axis))
    rows = x[:100_000].reshape(400, 250)
    for axis in (0, 1):
        same(getattr(raw, name)(rows, axis=axis), getattr(compat, name)(rows, axis=axis))


def test_complex_sums_take_the_fast_path_and_agree():
    z = ARRAYS["float64"] + 1j * ARRAYS["float64"][::-1]
    for axis in (None, 1, (0, 2)):
        same(raw.sum(z, axis=axis), compat.sum(z, axis=axis))
        same(raw.sum(z.astype(np.complex64), axis=axis), compat.sum(z.astype(np.complex64),
                                                                      axis=axis))


@pytest.mark.parametrize("x", [
    np.arange(12, dtype=np.int8).reshape(3, 4),  # sum upcasts, mean gives float64
    np.arange(12, dtype=np.uint16).reshape(3, 4),
    (rng.random((3, 1367)) + 0.1).astype(np.float16),  # mean sums in float32: not as float16
    np.array([[True, False, True], [True, True, False]]),
], ids=["int8", "uint16", "float16", "bool"])
@pytest.mark.parametrize("name", ["sum", "max", "min", "mean"])
def test_other_dtypes_are_array_api_compats(name, x):
    for axis in (None, 0, 1):
        same(getattr(raw, name)(x, axis=axis), getattr(compat, name)(x, axis=axis))


def test_a_sum_with_a_dtype_is_array_api_compats():
    x = ARRAYS["float32"]
    same(raw.sum(x, axis=1, dtype=np.float64), compat.sum(x, axis=1, dtype=np.float64))


def test_subclasses_keep_their_own_reductions():
    masked = np.ma.masked_array(ARRAYS["float64"], mask=ARRAYS["float64"] > 1)
    for name in ("sum", "max", "min", "mean"):
        got, expected = getattr(raw, name)(masked, axis=1), getattr(compat, name)(masked, axis=1)
        assert type(got) is type(expected) is np.ma.MaskedArray
        np.testing.assert_array_equal(got, expected)


def test_empty_arrays_behave_as_numpys():
    empty = np.zeros((0, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = raw.mean(empty)
    assert np.isnan(got) and any("Mean of empty slice" in str(w.message) for w in caught)
    same(raw.sum(empty, axis=0), compat.sum(empty, axis=0))
    with pytest.raises(ValueError, match="zero-size array"):
        raw.max(empty, axis=0)
    with pytest.raises(ValueError, match="zero-size array"):
        raw.min(empty)


@pytest.mark.parametrize("name", ["sum", "max", "min", "mean"])
def test_bad_axes_raise_numpys_errors(name):
    x = ARRAYS["float64"]
    for axis in (3, -4, (0, 0)):
        with pytest.raises((np.exceptions.AxisError, ValueError)) as expected:
            getattr(compat, name)(x, axis=axis)
        with pytest.raises(type(expected.value)):
            getattr(raw, name)(x, axis=axis)


def test_reshape_astype_and_matmul_agree():
    x = ARRAYS["float32"]
    for shape in [(15, 7), (-1,), (7, 15), (3, -1, 1)]:
        got = raw.reshape(x, shape)
        same(got, compat.reshape(x, shape))
        assert np.shares_memory(got, x)  # a view, as NumPy gives where it can
    strided = x[:, ::2]
    copied = raw.reshape(strided, (-1,))
    same(copied, compat.reshape(strided, (-1,)))
    assert not np.shares_memory(copied, x)
    with pytest.raises(ValueError, match="copy"):
        raw.reshape(strided, (-1,), copy=False)  # NumPy's refusal, through array-api-compat
    for dtype, copy in [(np.float64, True), (np.float32, False), (np.float32, True)]:
        got = raw.astype(x, dtype, copy=copy)
        same(got, compat.astype(x, dtype, copy=copy))
        assert (got is x) == (dtype is np.float32 and not copy)
    with pytest.raises(ValueError):
        raw.astype(x, np.float64, device="gpu")  # array-api-compat's device check
    same(raw.matmul(x[0], x[1].T), compat.matmul(x[0], x[1].T))


@pytest.mark.parametrize("name", ["ones_like", "zeros_like"])
def test_filled_likes_agree_in_value_type_and_layout(name):
    """The fast ones_like and zeros_like keep x's dtype, shape and memory layout (NumPy's
    order='K'), as array-api-compat's do; a dtype, a subclass or NumPy's options take
    array-api-compat's function."""
    base = ARRAYS["float64"]
    inputs = [base, base.astype(np.float32), np.asfortranarray(base), base[:, ::2, 1:],
              np.array(2.5), (base > 0), base.astype(np.int16), base.astype(np.complex64)]
    for x in inputs:
        got, expected = getattr(raw, name)(x), getattr(compat, name)(x)
        same(got, expected)
        assert got.strides == expected.strides and not np.shares_memory(got, x)
    x = ARRAYS["float32"]
    same(getattr(raw, name)(x, dtype=np.int8), getattr(compat, name)(x, dtype=np.int8))
    same(getattr(raw, name)(x, order="C"), getattr(compat, name)(x, order="C"))
    masked = np.ma.masked_array(x, mask=x > 1)
    assert type(getattr(raw, name)(masked)) is np.ma.MaskedArray


def test_gradients_through_the_fast_paths():
    xp = ag.namespace("numpy")
    x0 = ARRAYS["float64"][:2, :3, :4]
    x = ag.Variable(x0, requires_grad=True)
    y = xp.mean(xp.max(x, axis=2) + xp.sum(x, axis=2)) - 2 * xp.sum(xp.min(x, axis=(0, 1)))
    y.backward()
    expected = np.full_like(x0, 1 / 6)  # mean over the 2 x 3 results of sum(x, axis=2)
    expected[np.arange(2)[:, None], np.arange(3), np.argmax(x0, axis=2)] += 1 / 6
    lowest = np.argmin(x0.reshape(6, 4), axis=0)  # per last index, over the first two axes
    expected[lowest // 3, lowest % 3, np.arange(4)] -= 2
    np.testing.assert_allclose(x.grad.data, expected, rtol=1e-12)


def test_numpys_own_options_reach_numpy():
    """Options outside the standard go to array-api-compat's function, which hands them to NumPy
    (the namespace above refuses them first where a rule would ignore them)."""
    x = ARRAYS["float64"]
    same(raw.sum(x, axis=1, initial=0.5), compat.sum(x, axis=1, initial=0.5))
    same(raw.max(x, axis=0, initial=100.0), compat.max(x, axis=0, initial=100.0))
    same(raw.min(x, initial=-1e9), compat.min(x, initial=-1e9))
    same(raw.mean(x, axis=2, where=x > 0), compat.mean(x, axis=2, where=x > 0))
    same(raw.reshape(x, (15, 7), order="F"), compat.reshape(x, (15, 7), order="F"))


BROADCASTS = [((), (3,)), ((), ()), ((1,), (1,)), ((1,), (4,)), ((3,), (2, 3)), ((1, 3), (4, 3)),
              ((2, 1), (2, 5)), ((2, 1, 3), (4, 2, 6, 3)), ((0,), (2, 0)), ((1, 0), (3, 0)),
              ((1,), (0,)), ((2, 3), (2, 3))]


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "bool", "int64"])
@pytest.mark.parametrize("shape, target", BROADCASTS, ids=str)
def test_broadcast_to_gives_numpys_read_only_view(shape, target, dtype):
    """The view every reduction's gradient is broadcast back with: NumPy's values, strides
    and memory (a view of ``x``), read-only, so that nothing writes through its zero strides."""
    x = np.asarray(rng.standard_normal(shape)).astype(dtype)
    got, expected = raw.broadcast_to(x, target), np.broadcast_to(x, target)
    same(got, expected)
    assert got.strides == expected.strides and (np.shares_memory(got, x) or got.size == 0)
    assert not got.flags.writeable


@pytest.mark.parametrize("x", [np.ones((4, 6))[:, ::2], np.ones((4, 3)).T, np.ones((2, 3))[::-1]],
                         ids=["strided", "transposed", "reversed"])
def test_broadcast_to_of_any_layout_agrees(x):
    target = (2,) + x.shape
    same(raw.broadcast_to(x, target), np.broadcast_to(x, target))


@pytest.mark.parametrize("shape, target", [((3,), (4,)), ((2, 3), (3,)), ((3,), (2, 4))])
def test_broadcast_to_refuses_what_numpy_refuses(shape, target):
    with pytest.raises(ValueError):
        raw.broadcast_to(np.ones(shape), target)


def test_transposes_takes_and_zeros_agree():
    """The other fast paths, NumPy's methods without their Python dispatch: the same values,
    layout and type as array-api-compat's, and its errors."""
    x = ARRAYS["float64"]
    same(raw.permute_dims(x, (2, 0, 1)), compat.permute_dims(x, (2, 0, 1)))
    assert raw.permute_dims(x, (2, 0, 1)).strides == compat.permute_dims(x, (2, 0, 1)).strides
    same(raw.matrix_transpose(x), compat.matrix_transpose(x))
    assert raw.matrix_transpose(x).strides == compat.matrix_transpose(x).strides
    with pytest.raises(ValueError):
        raw.matrix_transpose(x[0, 0])
    indices = np.array([2, 0, 2, 1])
    for axis in (None, 0, 1, -1):
        same(raw.take(x if axis is not None else x.ravel(), indices, axis=axis),
             compat.take(x if axis is not None else x.ravel(), indices, axis=axis))
    with pytest.raises(IndexError):
        raw.take(x, np.array([9]), axis=1)
    for shape, dtype in [((2, 3), None), ((), raw.float32), (4, raw.int64), ((0, 2), None)]:
        same(raw.zeros(shape, dtype=dtype), compat.zeros(shape, dtype=dtype))
    same(raw.zeros((2,), device="cpu"), compat.zeros((2,), device="cpu"))


@pytest.mark.parametrize("subscripts, shapes, contracted", [
    ("bij,jk->bik", [(16, 64, 64), (64, 64)], True),  # 2**22 multiply-adds looped
    ("ij,jk", [(128, 64), (64, 32)], True),  # implicit output
    ("...ij,...jk->...ik", [(8, 40, 40), (40, 40)], True),  # ellipsis: sizes' product
    ("ij,jk->ik", [(4, 4), (4, 4)], False),  # 64: the path search would cost more
    ("ij,ij->", [(100, 100), (100, 100)], False),  # 10**4: each index counted once
])
def test_einsum_contracts_through_blas_where_numpys_loop_would_be_long(
        monkeypatch, subscripts, shapes, contracted):
    operands = [rng.standard_normal(shape) for shape in shapes]
    asked = []
    plain = np.einsum

    def einsum(*args, **options):
        asked.append(options.get("optimize", False))
        return plain(*args, **options)
    monkeypatch.setattr(compat, "einsum", einsum)
    got = raw.einsum(subscripts, *operands)
    assert asked == [contracted]
    np.testing.assert_allclose(got, plain(subscripts, *operands), rtol=1e-12, atol=1e-12)
    raw.einsum(subscripts, *operands, optimize=False)  # the caller's choice stands
    assert asked[-1] is False
