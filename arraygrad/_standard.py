"""The names of the Python Array API standard, by family: revision 2024.12, plus the 2025.12
additions (``broadcast_shapes``, ``isin``, ``linalg.eig``, ``linalg.eigvals``), which the
namespace offers wherever the backend has them."""

ELEMENTWISE = (
    "abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift "
    "bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh "
    "divide equal exp expm1 floor floor_divide greater greater_equal hypot imag isfinite isinf "
    "isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not logical_or "
    "logical_xor maximum minimum multiply negative nextafter not_equal positive pow real "
    "reciprocal remainder round sign signbit sin sinh square sqrt subtract tan tanh trunc"
).split()
CREATION = (
    "arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones "
    "ones_like tril triu zeros zeros_like"
).split()
DATA_TYPE_FUNCTIONS = "astype can_cast finfo iinfo isdtype result_type".split()
ADDED_2025_12 = ["broadcast_shapes", "isin", "linalg.eig", "linalg.eigvals"]
DTYPES = (
    "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64 complex128"
).split()
CONSTANTS = "e inf nan newaxis pi".split()
INDEXING = "take take_along_axis".split()
LINEAR_ALGEBRA = "matmul matrix_transpose tensordot vecdot".split()
MANIPULATION = (
    "broadcast_arrays broadcast_shapes broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape "
    "roll squeeze stack tile unstack"
).split()
SEARCHING = "argmax argmin count_nonzero nonzero searchsorted where".split()
SETS = "isin unique_all unique_counts unique_inverse unique_values".split()
SORTING = "argsort sort".split()
STATISTICAL = "cumulative_prod cumulative_sum max mean min prod std sum var".split()
UTILITY = "all any diff".split()
INSPECTION = ("__array_namespace_info__",)
LINALG = (
    "cholesky cross det diagonal eig eigh eigvals eigvalsh inv matmul matrix_norm matrix_power matrix_rank "
    "matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot vector_norm"
).split()
FFT = (
    "fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift ifftshift"
).split()

FUNCTION_FAMILIES = {
    "elementwise": ELEMENTWISE, "creation": CREATION, "data_type": DATA_TYPE_FUNCTIONS,
    "indexing": INDEXING, "linear_algebra": LINEAR_ALGEBRA, "manipulation": MANIPULATION,
    "searching": SEARCHING, "sets": SETS, "sorting": SORTING, "statistical": STATISTICAL,
    "utility": UTILITY, "linalg": ["linalg." + n for n in LINALG], "fft": ["fft." + n for n in FFT],
}
"""Every function of the standard, by family; extension functions carry their prefix."""

FUNCTIONS = [name for names in FUNCTION_FAMILIES.values() for name in names]

# Functions that make new arrays from Python values, shapes or dtypes: their results are constants.
CONSTRUCTORS = set(CREATION) - {"asarray", "tril", "triu", "meshgrid"} | {
    "fft.fftfreq", "fft.rfftfreq"}
# Functions that answer questions about dtypes: arguments unwrapped, answers returned as they are.
QUESTIONS = {"broadcast_shapes", "can_cast", "finfo", "iinfo", "isdtype", "result_type"}

POSITIONAL = {name: count for count, names in {
    1: "abs acos acosh asin asinh atan atanh bitwise_invert ceil conj cos cosh exp expm1 floor "
       "imag isfinite isinf isnan log log1p log2 log10 logical_not negative positive real "
       "reciprocal round sign signbit sin sinh square sqrt tan tanh trunc asarray empty "
       "empty_like from_dlpack ones ones_like tril triu zeros zeros_like finfo iinfo "
       "matrix_transpose concat flip stack unstack argmax argmin count_nonzero nonzero "
       "unique_all unique_counts unique_inverse unique_values argsort sort cumulative_prod "
       "cumulative_sum max mean min prod std sum var all any diff linalg.cholesky linalg.det "
       "linalg.diagonal linalg.eig linalg.eigh linalg.eigvals linalg.eigvalsh linalg.inv "
       "linalg.matrix_norm linalg.matrix_rank linalg.matrix_transpose linalg.pinv linalg.qr "
       "linalg.slogdet linalg.svd linalg.svdvals linalg.trace linalg.vector_norm fft.fft "
       "fft.ifft fft.fftn fft.ifftn fft.rfft fft.irfft fft.rfftn fft.irfftn fft.hfft fft.ihfft "
       "fft.fftfreq fft.rfftfreq fft.fftshift fft.ifftshift",
    2: "add atan2 bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor "
       "copysign divide equal floor_divide greater greater_equal hypot less less_equal logaddexp "
       "logical_and logical_or logical_xor maximum minimum multiply nextafter not_equal pow "
       "remainder subtract eye full full_like astype can_cast isdtype take take_along_axis "
       "matmul tensordot vecdot broadcast_to expand_dims permute_dims repeat reshape roll "
       "squeeze tile searchsorted isin linalg.cross linalg.matmul linalg.matrix_power "
       "linalg.outer linalg.solve linalg.tensordot linalg.vecdot",
    3: "clip arange linspace moveaxis where",
}.items() for name in names.split()}
"""How many arguments each function of the standard takes by position; its others are
keyword-only (``stack(arrays, /, *, axis=0)``). Functions taking ``*arrays`` are not listed."""
