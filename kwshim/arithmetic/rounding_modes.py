"""libdevice's directed roundings (``_rz``, ``_rd``, ``_ru``) and correctly rounded fused
multiply-adds, exactly, element by element: NumPy rounds each operation to nearest, so a directed
variant computes the exact result as a rational number and rounds it in the result's dtype as the
GPU's instruction does. Slow (Python per element), for the few kernels that ask for it.
"""

import math
from fractions import Fraction

import numpy as np

from .fma import fma as fma_nearest

__all__ = ["rounded", "sqrt_rounded", "fma_rounded", "round_exact"]


def round_exact(exact, dtype, mode):
    """The ``dtype`` value that rounding ``mode`` gives for the exact nonzero rational ``exact``."""
    largest = np.finfo(dtype).max
    limit = Fraction(float(largest))
    if abs(exact) > limit:  # past the largest finite value: to it, or to infinity
        if mode == "rn":
            half_ulp = (limit - Fraction(float(np.nextafter(largest, dtype.type(0))))) / 2
            away = abs(exact) >= limit + half_ulp
        else:
            away = (mode == "ru" and exact > 0) or (mode == "rd" and exact < 0)
        return dtype.type(math.copysign(math.inf if away else float(largest), -1.0 if exact < 0 else 1.0))
    candidate = dtype.type(float(exact))  # one of the two neighbours of ``exact`` (|exact| <= largest: no overflow)
    value = Fraction(float(candidate))
    if value == exact:
        return candidate
    other = np.nextafter(candidate, dtype.type(math.inf if value < exact else -math.inf))
    if mode == "rn":
        near, far = abs(value - exact), abs(Fraction(float(other)) - exact)
        even = int(np.asarray(other).view({4: np.uint32, 8: np.uint64}[dtype.itemsize])) % 2 == 0
        return other if far < near or (far == near and even) else candidate
    lower = mode == "rd" or (mode == "rz" and exact > 0)
    return other if (value > exact) == lower else candidate


def _signed_zero_sum(mode, addend, other):
    """The zero that an exact zero sum takes (IEEE 754, 6.3): the addends' sign if they share it
    (both zeros), else +0, or -0 when rounding down."""
    if not _opposite_signs(addend, other):
        return -0.0 if np.signbit(addend) else 0.0
    return -0.0 if mode == "rd" else 0.0


def rounded(mode, exact, nearest, addends=None):
    """A NumPy function: ``exact(*values)`` (on Fractions) rounded by ``mode``, element by element.
    ``nearest`` gives the array (and what the mode does not change: NaN and infinite operands,
    division by zero, the sign of a zero product). ``addends(*values)``: the two addends of a sum,
    whose exact zero takes its sign from them and the mode."""

    def apply(*arrays):
        result = np.array(nearest(*arrays))
        for index in np.ndindex(result.shape):
            values = [a[index] for a in arrays]
            if any(isinstance(v, np.floating) and not np.isfinite(v) for v in values):
                continue
            try:
                value = exact(*(Fraction(int(v)) if isinstance(v, np.integer) else Fraction(float(v))
                                for v in values))
            except ZeroDivisionError:
                continue
            if value != 0:
                result[index] = round_exact(value, result.dtype, mode)
            elif addends is not None:
                result[index] = _signed_zero_sum(mode, *addends(*values))
        return result

    return apply


def sqrt_rounded(mode):
    """``sqrt`` rounded by ``mode``: NumPy's correctly rounded root, one step over where its square
    lies on the wrong side of the operand."""

    def apply(x):
        result = np.array(np.sqrt(x))
        for index in np.ndindex(result.shape):
            root = result[index]
            if np.isfinite(root) and root != 0:
                square, operand = Fraction(float(root)) ** 2, Fraction(float(x[index]))
                if mode != "ru" and square > operand:
                    result[index] = np.nextafter(root, result.dtype.type(-math.inf))
                elif mode == "ru" and square < operand:
                    result[index] = np.nextafter(root, result.dtype.type(math.inf))
        return result

    return apply


def fma_rounded(mode):
    """``x * y + z`` rounded once (``interpreter.fma`` to nearest; the exact rational otherwise, where
    infinities, NaN and the signs of zeros are the nearest result's)."""
    if mode == "rn":
        return fma_nearest
    return rounded(mode, lambda x, y, z: x * y + z, fma_nearest,
                   lambda x, y, z: (-1.0 if _opposite_signs(x, y) else 1.0, z))


def _opposite_signs(x, y):
    return bool(np.signbit(x)) != bool(np.signbit(y))
