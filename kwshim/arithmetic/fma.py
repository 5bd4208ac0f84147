"""``a * b + c`` rounded once, as the GPU's ``fma.rn`` rounds it, for NumPy arrays of fp16, bf16,
fp32 and fp64 (NumPy has no fused multiply-add, and Python's ``math.fma`` arrives in 3.13).

Rounding twice (the exact value to fp64, then to fp32) is wrong when the first rounding lands on a
tie of the second. Rounding to odd first is not (Boldo and Melquiond, "Emulation of FMA and
correctly rounded sums: proved algorithms using rounding to odd", IEEE TC 2008): a value rounded to
odd with two bits more than the target rounds to nearest correctly. So:

- fp16, bf16, fp32: the product is exact in fp64; ``p + c`` is rounded to odd in fp64 (53 bits),
  then to the target (bf16 through fp32, rounded to odd again: ml_dtypes converts fp64 through fp32).
  Only where the plain fp64 sum can round differently (it is a midpoint of the target's neighbours,
  ``_doubtful``) is the sum redone, rounded to odd: almost everywhere the fma costs one fp64 add;
- fp64: the product is split exactly into high + low (Dekker), ``c + high`` is added exactly
  into t + u, ``u + low`` is rounded to odd and added to t, rounded to nearest (their algorithm 5).

Where numba is installed, fp32 and fp64 blocks of ``compiled.COMPILED_FROM`` elements or more go
to the CPU's own fused multiply-add instead (``compiled``): the same bits, 10-40 times faster.
"""

import numpy as np

from . import compiled
from .formats import canonical_nans, type_name
from .numpy_quiet import quiet

__all__ = ["fma", "numpy_fma", "fma_chain"]


def fma(a, b, c):
    """``a * b + c`` with one rounding, in the arrays' (common) type; inf and NaN as IEEE's fma."""
    dtype = np.result_type(a, b, c)
    fused = compiled.ufunc_for("fma", max(np.size(a), np.size(b), np.size(c))) if dtype in _COMPILED_TYPES else None
    if fused is not None:
        with np.errstate(all="ignore"):  # inf * 0 is NaN, as IEEE's
            return canonical_nans(fused(np.asarray(a, dtype), np.asarray(b, dtype), np.asarray(c, dtype)))
    if dtype in _COMPILED_TYPES:  # NumPy's time counted: the compiled loop could take it
        return canonical_nans(compiled.in_numpy(numpy_fma, a, b, c))  # one NaN, whichever engine ran
    return numpy_fma(a, b, c)


_COMPILED_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def fma_chain(xs, ys, start):
    """``acc = start``, then ``acc = fma(x, y, acc)`` for each ``x, y`` of the sequences ``xs, ys``
    in turn: a thread's contracted sum. Small fp32 and fp16 chains run in fp64, where each product
    is exact, and every step's sum is checked at the end for a midpoint of the type as
    ``numpy_fma`` checks it: a chain with a doubtful step is computed again step by step."""
    dtype = start.dtype
    if dtype.name not in ("float32", "float16") or \
            start.size >= compiled.COMPILED_FROM and compiled.ufunc_for("fma", start.size) is not None:
        accumulated = start
        for x, y in zip(xs, ys):
            accumulated = fma(x, y, accumulated).astype(dtype, copy=False)
        return accumulated
    with quiet(invalid="ignore", over="ignore"):
        products = np.multiply(np.array(xs, np.float64), np.array(ys, np.float64))
        sums = np.empty(products.shape, np.float64)
        accumulated = start
        for step in range(len(products)):
            np.add(products[step], accumulated, out=sums[step])
            accumulated = sums[step].astype(dtype)
        if _doubtful(sums, sums.astype(dtype), dtype) is None:
            return canonical_nans(accumulated)  # as the steps through ``fma`` leave a NaN
    accumulated = start
    for x, y in zip(xs, ys):
        accumulated = numpy_fma(x, y, accumulated).astype(dtype, copy=False)
    return canonical_nans(accumulated)


def numpy_fma(a, b, c):
    """``fma`` in NumPy alone (what runs without numba, and for small blocks)."""
    dtype = np.result_type(a, b, c)
    if dtype == np.float64:
        return _fma64(np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float64))
    with quiet(invalid="ignore", over="ignore"):  # inf * 0 is NaN, as IEEE's
        product, addend = np.asarray(a, np.float64) * np.asarray(b, np.float64), np.asarray(c, np.float64)
        nearest = product + addend
        narrow = nearest.astype(np.float16 if dtype == np.float16 else np.float32)
        result = narrow if narrow.dtype == dtype else narrow.astype(dtype)
        doubtful = _doubtful(nearest, narrow, dtype) if type_name(dtype) in _FAST else np.ones_like(narrow, bool)
        if doubtful is None:
            return result
        product, addend = np.broadcast_arrays(product, addend)
        exact = _odd_sum(product[doubtful], addend[doubtful])
        result = np.array(np.broadcast_to(result, doubtful.shape))
        result[doubtful] = exact.astype(dtype) if narrow.dtype == dtype else _to_odd_fp32(exact).astype(dtype)
        return result


#: The types whose midpoints ``_doubtful`` knows (any other, fp8 among them, takes the exact path everywhere)
_FAST = frozenset({"float32", "float16", "bfloat16"})

#: fp64 significand bits below the last of fp32 and fp16, and their smallest normals
_BELOW = {np.dtype(np.float32): (29, np.float32(2.0 ** -126)), np.dtype(np.float16): (42, np.float16(2.0 ** -14))}


def _doubtful(nearest, narrow, dtype):
    """Where ``narrow``, the fp64 sum ``nearest`` rounded to fp32 (fp16), may not be the exact
    ``a * b + c`` rounded once (a mask, or None: nowhere); bf16 is rounded from ``narrow``.

    Every midpoint of two neighbours of the target type is an fp64 number, and rounding to nearest
    is monotonic: an exact value strictly on one side of a midpoint rounds in fp64 to that side or
    onto it. So the fp64 sum rounds as the exact value does unless it *is* a midpoint: its bits below
    the target's last are 100...0 (the overflow threshold among them); or, where the spacing is
    subnormal, all 0. bf16 goes through fp32: the fp32 value must not be a bf16 midpoint either
    (its low 16 bits 0x8000, subnormal ones too)."""
    cut, tiny = _BELOW[narrow.dtype]
    doubtful = (nearest.view(np.uint64) & np.uint64((1 << cut) - 1)) == np.uint64(1 << (cut - 1))
    small = np.abs(narrow) <= tiny
    if small.any():
        doubtful |= small & (nearest != 0)
    if narrow.dtype != dtype:
        doubtful |= (narrow.view(np.uint32) & np.uint32(0xFFFF)) == np.uint32(0x8000)
    return doubtful if doubtful.any() else None


def _two_sum(x, y):
    """(s, e) with s = fl(x + y) and s + e = x + y exactly (Knuth), for finite s."""
    s = x + y
    bv = s - x
    e = (x - (s - bv)) + (y - bv)
    return s, e


def _odd_sum(x, y):
    """``x + y`` in fp64, rounded to odd: the nearer neighbour's inexact results moved to the odd one."""
    with quiet(invalid="ignore", over="ignore"):
        s, e = _two_sum(x, y)
        even = (s.view(np.uint64) & np.uint64(1)) == 0
        move = np.isfinite(s) & (e != 0) & even
        if np.any(move):
            s = np.where(move, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return s


def _to_odd_fp32(x):
    """fp64 to fp32, rounded to odd (for a second rounding to a narrower type)."""
    with quiet(over="ignore"):
        nearest = x.astype(np.float32)
    inexact = np.isfinite(nearest) & (nearest.astype(np.float64) != x)
    even = (nearest.view(np.uint32) & np.uint32(1)) == 0
    move = inexact & even
    if np.any(move):
        toward = np.where(x > nearest.astype(np.float64), np.float32(np.inf), np.float32(-np.inf))
        nearest = np.where(move, np.nextafter(nearest, toward), nearest)
    return nearest


_SPLIT = 134217729.0  # 2**27 + 1: Dekker's splitting constant for 53-bit significands


def _split(x):
    t = _SPLIT * x
    high = t - (t - x)
    return high, x - high


def _fma64(a, b, c):
    with quiet(invalid="ignore", over="ignore"):
        plain = a * b + c  # where anything is not finite, or the product's split overflows: IEEE's own
        high = a * b
        a_high, a_low = _split(a)
        b_high, b_low = _split(b)
        low = ((a_high * b_high - high) + a_high * b_low + a_low * b_high) + a_low * b_low
        t_high, t_low = _two_sum(c, high)
        result = t_high + _odd_sum(t_low, low)
        exact = np.isfinite(result) & np.isfinite(low) & np.isfinite(t_low) & (np.abs(high) < 2.0 ** 996)
        # a finite product too large for fp64 plus an infinite c is c (the product itself is not inf)
        plain = np.where(np.isinf(c) & np.isfinite(a) & np.isfinite(b), c, plain)
        # an exact zero takes the sign IEEE gives it, which the plain sum has (c is -a * b exactly)
        return np.where(exact & (result != 0), result, plain)
