"""Conversions as an NVIDIA GPU's ``cvt`` performs them (measured on the H200, compiled Triton 3.6).

NumPy's ``astype`` wraps an out-of-range float and turns NaN into INT_MIN; the GPU saturates:

- float -> int: truncated toward zero, clamped to the target's range. NaN -> 0, except to a 64-bit
  target (2**63's bits) and from fp64 (the sign bit alone of the target's width).
  8-bit targets go through 16 bits: clamped to int16/uint16, then the low byte (fp32 1e5 -> int8 is -1).
  A negative value to an unsigned target is undefined (LLVM poison): the GPU's byte depends on the
  element's place; kwshim clamps it (0).
- float -> fp8 (``satfinite``): out-of-range values and infinities become the largest finite value,
  NaN stays NaN (to fp8e5: 0x7f, the H200's, whatever the NaN and the rounding).
  ``fp_downcast_rounding="rtz"`` rounds toward zero (an infinity stays infinite).
- fp8e5 -> bf16 rebiases the exponent: an fp8e5 infinity or NaN becomes +-2**16 * (1 + m/4).
- int -> float and float -> float otherwise: round to nearest even, once.
"""

import functools

import numpy as np

from . import compiled, numpy_quiet
from .formats import bits_type, finite_max, is_fp8, type_name

__all__ = ["float_to_int", "float_to_float", "int_to_float"]


def _integer_range(numpy_type):
    info = np.iinfo(numpy_type)
    return int(info.min), int(info.max)


def float_to_int(data, target):
    """``data`` (a float array) converted to the integer dtype ``target`` as the GPU's ``cvt.rzi``."""
    target = np.dtype(target)
    data = np.asarray(data)
    wide = data.astype(np.float64)
    via = target
    if target.itemsize == 1:  # through 16 bits, then the low byte
        via = np.dtype(np.int16 if target.kind == "i" else np.uint16)
    low, high = _integer_range(via)
    truncated = np.trunc(wide)
    nan = np.isnan(wide)
    above = truncated >= float(high) + 1.0 if via.itemsize < 8 else truncated >= 2.0 ** (64 if via.kind == "u" else 63)
    below = truncated < float(low)
    inside = ~(nan | above | below)
    result = np.zeros(wide.shape, dtype=via)
    result[inside] = truncated[inside].astype(via)
    result[above] = high
    result[below] = low
    if via.itemsize == 8 or data.dtype == np.float64:  # NaN: the sign bit alone
        result[nan] = np.array(1 << (via.itemsize * 8 - 1), dtype=np.uint64).astype(via)
    return result.astype(target) if via != target else result


def _toward_zero(wide, rounded, target):
    """``rounded`` (``wide`` rounded to nearest in ``target``) moved one step toward zero where
    rounding went away from it: rounding toward zero."""
    unsigned = bits_type(target)
    bits = rounded.view(unsigned).copy()
    back = rounded.astype(np.float64)
    away = np.isfinite(wide) & (np.abs(back) > np.abs(wide))
    bits[away] -= np.array(1, dtype=unsigned)  # the magnitude's next value down (sign kept)
    return bits.view(target)


#: target -> the sources a direct cast converts as the fp64 path does, NaNs apart: the target holds
#: every source value exactly (widening), or the source is fp32, rounded once to nearest even
_DIRECT = {"float64": ("float16", "bfloat16", "float32"), "float32": ("float16", "bfloat16", "float32"),
           "float16": ("float32",), "bfloat16": ("float32",)}


def _quiet(function):
    """``function`` with NumPy's overflow and invalid-value warnings off: a GPU converts an
    out-of-range value to inf (or saturates) quietly, and so must the conversions here."""
    @functools.wraps(function)
    def quiet(*args, **kwargs):
        with numpy_quiet.quiet(over="ignore", invalid="ignore"):
            return function(*args, **kwargs)

    return quiet


@_quiet
def float_to_float(data, target, toward_zero=False, rebias_fp8e5=False):
    """``data`` (any float array) rounded to the float dtype ``target`` as the GPU converts;
    ``rebias_fp8e5``: ``data`` is fp8e5 and ``target`` bf16 (the GPU's exponent rebias)."""
    target = np.dtype(target)
    data = np.asarray(data)
    target_name = type_name(target)
    if not (toward_zero or rebias_fp8e5) and type_name(data.dtype) in _DIRECT.get(target_name, ()):
        rounded = _compiled_rounding(data, compiled.bf16_rounding_for) if target_name == "bfloat16" else \
            _compiled_rounding(data, compiled.fp16_rounding_for) if target_name == "float16" else \
            _compiled_widening(data) if target_name == "float32" and data.dtype.itemsize == 2 else None
        if rounded is not None:
            return rounded.view(target)
        direct = data.astype(target)  # exact, or one rounding from fp32: the fp64 path's bits
        # but for NaNs' payloads, which the fp64 path quiets: a NaN is in both or in neither (an
        # overflow rounds to inf), so look in the fp32 or fp64 one of the two (ml_dtypes' isnan
        # costs 3.4 times NumPy's on fp32, and NumPy's on fp16 10 times its own on fp32)
        native = direct if direct.dtype.type in (np.float32, np.float64) else data
        if not np.isnan(native).any():
            return direct
    wide = data.astype(np.float64)
    if rebias_fp8e5:
        bits = data.view(np.uint8)
        special = (bits & 0x7C) == 0x7C
        rebiased = np.where(bits & 0x80, -1.0, 1.0) * 2.0 ** 16 * (1 + (bits & 3) / 4)
        wide = np.where(special, rebiased, wide)
        data = wide
    if is_fp8(target) and not toward_zero:
        largest = finite_max(target)
        wide = np.where(np.isnan(wide), wide, np.clip(wide, -largest, largest))  # satfinite
    if target.itemsize >= 4 or data.dtype.itemsize > 4:
        rounded = wide.astype(target)
    else:  # from at most fp32: exact in fp32, rounded once
        rounded = wide.astype(np.float32).astype(target)
    if toward_zero:
        rounded = _toward_zero(wide, rounded, target)
    if target_name == "float8_e5m2":  # the H200's one fp8e5 NaN, whichever NaN it came from and rounding
        nan = np.isnan(wide)
        if nan.any():
            rounded = np.array(rounded, copy=True)
            rounded.view(np.uint8)[nan] = 0x7F
    return rounded


def _compiled_rounding(data, rounding_for):
    """fp32 ``data``'s bf16 or fp16 bits (uint16) from the loop ``rounding_for`` gives
    (``compiled.bf16_rounding_for``, ``fp16_rounding_for``), or None (a small block, no numba, or a
    NaN: the fp64 path quiets its payload)."""
    rounding = rounding_for(data.size)
    if rounding is None:
        return None
    source = np.ascontiguousarray(data)
    bits = np.empty(source.shape, np.uint16)
    if rounding(compiled.read_only(source.reshape(-1)), bits.reshape(-1)):
        return None
    return bits


def _compiled_widening(data):
    """bf16 or fp16 ``data`` as fp32 from ``compiled.widening_for``'s loop (NaNs made quiet, as the
    fp64 path makes them), or None (a small block, or no numba)."""
    widening = compiled.widening_for(data.size)
    if widening is None:
        return None
    source = np.ascontiguousarray(data)
    widened = np.empty(source.shape, np.float32)
    widening(compiled.read_only(source.view(np.uint16).reshape(-1)), widened.reshape(-1), source.dtype == np.float16)
    return widened


@_quiet
def int_to_float(data, target):
    """An integer array rounded to the float dtype ``target`` (round to nearest even, once)."""
    target = np.dtype(target)
    data = np.asarray(data)
    if target.itemsize >= 4:
        return data.astype(target)
    return data.astype(np.float64).astype(target)
