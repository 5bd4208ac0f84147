"""bf16 and fp8 held as real NumPy floats (``ml_dtypes``), where Triton's interpreter holds their bits.

The interpreter stores a bf16 block as ``uint16`` and an fp8 block as ``uint8``, then computes on
those integers: ``x + y`` of two bf16 values adds their bit patterns. ``numpy_dtype`` is the
interpreter's ``_get_np_dtype`` with those formats mapped to ``ml_dtypes`` types, whose arithmetic
rounds each result to the format as a GPU does (fp32 computation, one rounding). Memory is
unchanged: a value of either kind has the same bytes.

fp8e4b15 has no ``ml_dtypes`` type; it stays as Triton keeps it (bits, converted by Triton's own code).
"""

import functools

import numpy as np

__all__ = ["LOG2_E", "SMALLEST_NORMAL",
           "ML_DTYPES", "numpy_type", "is_ml_dtype", "numpy_dtype_function", "bits_type", "is_fp8", "finite_max",
           "missing_ml_dtypes", "type_name"]

#: Triton's format names and the ``ml_dtypes`` type of each.
#: fp32 constants of the ``ex2.approx`` model (``approximations``, ``compiled_loops``): log2(e) as
#: compiled Triton's ``tl.exp`` multiplies by it, and fp32's smallest normal magnitude (below it,
#: ``.ftz`` flushes).
LOG2_E = np.float32(1.4426950408889634)
SMALLEST_NORMAL = np.float32(2.0 ** -126)

ML_DTYPES = {
    "bf16": "bfloat16",
    "fp8e4nv": "float8_e4m3fn",
    "fp8e5": "float8_e5m2",
    "fp8e4b8": "float8_e4m3fnuz",
    "fp8e5b16": "float8_e5m2fnuz",
}


def missing_ml_dtypes(type_name):
    """The error for a bf16 or fp8 block where ``ml_dtypes`` is not installed."""
    from ..errors import MissingNumericsDependencyError

    return MissingNumericsDependencyError(
        f"kwshim: a {type_name} kernel needs the 'ml_dtypes' package on the CPU (without it Triton's "
        "interpreter computes on the raw bits of bf16 and fp8 values and stores garbage); "
        "pip install 'ml_dtypes>=0.5' (or 'kwshim[interpreter]')")


@functools.lru_cache(maxsize=None)
def _table() -> dict:
    """``{Triton format name: NumPy dtype}``; empty where ``ml_dtypes`` is not installed. Imported at
    the first bf16 or fp8 block, so that other kernels never load it."""
    try:
        import ml_dtypes
    except ImportError:
        return {}
    return {triton_name: np.dtype(getattr(ml_dtypes, numpy_name)) for triton_name, numpy_name in ML_DTYPES.items()}


def numpy_type(triton_name):
    """The ``ml_dtypes`` dtype of a Triton format name (``"bf16"``), or None."""
    return _table().get(triton_name)


def is_ml_dtype(numpy_dtype) -> bool:
    """Whether a NumPy dtype is one of ``ml_dtypes``' (a bf16 or fp8 block held as floats)."""
    return numpy_dtype.type.__module__ == "ml_dtypes"


def numpy_dtype_function(original):
    """The interpreter's ``_get_np_dtype`` with bf16 and fp8 as ``ml_dtypes`` types. Each answer is
    kept by the type's name (the interpreter's own builds its table on every call, and it is called
    for every load, store and cast)."""
    import triton.language as tl

    block_type = tl.block_type
    known: dict = {}

    def _get_np_dtype(tt_dtype):
        scalar = tt_dtype.element_ty if isinstance(tt_dtype, block_type) else tt_dtype
        found = known.get(scalar.name)
        if found is None:
            if scalar.name in ML_DTYPES:
                found = _table().get(scalar.name)
                if found is None:
                    raise missing_ml_dtypes(scalar.name)
            else:
                found = original(scalar)
            known[scalar.name] = found
        return found

    return _get_np_dtype


_NAMES: dict = {}  #: NumPy type -> its name (``type_name``)


def type_name(numpy_type) -> str:
    """``np.dtype(numpy_type).name``, kept per type: NumPy computes a name in Python at each call, a
    few microseconds, and a conversion or an fma asks it each time."""
    found = _NAMES.get(numpy_type)
    if found is None:
        found = _NAMES[numpy_type] = np.dtype(numpy_type).name
    return found


def bits_type(numpy_type):
    """The unsigned integer dtype of the same width: a float's bits, for NumPy's own views and
    for the interpreter's native loads and stores (which refuse ``ml_dtypes`` dtypes)."""
    return np.dtype(f"uint{numpy_type.itemsize * 8}")


def is_fp8(numpy_type) -> bool:
    """Whether a NumPy dtype is one of ``ml_dtypes``' 8-bit floats."""
    return numpy_type.itemsize == 1 and numpy_type.kind not in "biu"


def finite_max(numpy_type) -> float:
    """The largest finite value of a float dtype (``ml_dtypes`` or NumPy's own)."""
    try:
        import ml_dtypes

        return float(ml_dtypes.finfo(numpy_type).max)
    except (ImportError, ValueError):
        return float(np.finfo(numpy_type).max)


#: The NaN the H200's fp32 arithmetic makes of any NaN, whatever the sign and payload it came from
#: (``parity/nan_payloads_h100.json``). fp64 has none: its NaN keeps its input's sign and payload, and
#: an invalid operation makes 0xfff8000000000000, as x86 (``parity/fp64_nans_h100.json``).
CANONICAL_NAN_BITS = {np.dtype(np.float32): 0x7FFFFFFF}


def canonical_nans(values):
    """``values`` (an fp32 array; any other is returned as it is) with every NaN the H200's canonical
    one, in place where it can be written: the operations whose engine depends on a block's size
    (fused multiply-adds, lane sums and scans: NumPy's code or numba's loops) leave NaN payloads as
    each engine propagates them, and the H200 leaves one NaN. Costs one sum of the values where
    there is none."""
    canonical = CANONICAL_NAN_BITS.get(getattr(values, "dtype", None))
    if canonical is None or not values.size:
        return values
    if not isinstance(values, np.ndarray):  # a scalar
        return np.array(canonical, bits_type(values.dtype)).view(values.dtype)[()] if np.isnan(values) else values
    with np.errstate(all="ignore"):
        if np.isfinite(np.add.reduce(values, axis=None)):  # no NaN (an overflow to inf looks again)
            return values
    nan = np.isnan(values)
    if not nan.any():
        return values
    if not values.flags.writeable:
        values = values.copy()
    values.view(bits_type(values.dtype))[nan] = canonical
    return values
