"""libdevice's functions computed with NumPy, as the GPU computes them: the table that
``interpreter.libdevice`` puts in place of the stubs. Each entry is a function of NumPy arrays
(the arguments as Triton's front end typed and promoted them; the result is cast to the type its
table gives); a directed rounding (``_rz``, ``_rd``, ``_ru``) rounds the exact rational result as
the GPU's instruction does (``rounding_modes``).

A new libdevice function is one ``_add`` line here (and a parity row measured on the GPU).
"""

import math
from typing import Any, Callable, Dict

import numpy as np

from .fma import fma
from .numpy_quiet import quiet
from .rounding_modes import fma_rounded, rounded, sqrt_rounded

__all__ = ["TABLE", "IMPLEMENTATIONS"]


def _vectorized(function):
    return lambda x: np.vectorize(function, otypes=[np.float64])(x)


def _torch(name):
    """A ``torch.special`` function on a NumPy array (erfinv, Bessel functions, ...)."""
    def apply(*arrays):
        import torch

        return getattr(torch.special, name)(*(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays)).numpy()

    return apply


def _per_bits(x, per_value, dtype=np.int32):
    """``per_value(value, bits)`` on each element's unsigned bits: the integer bit functions."""
    bits = x.dtype.itemsize * 8
    unsigned = x.astype(np.dtype(f"uint{bits}"))
    return np.array([per_value(int(v), bits) for v in unsigned.ravel()], dtype).reshape(x.shape)


def _clz(x):
    return _per_bits(x, lambda v, bits: bits - v.bit_length())


def _popc(x):
    return _per_bits(x, lambda v, bits: bin(v).count("1"))


def _brev(x):
    unsigned = {4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
    return _per_bits(x, lambda v, bits: int(format(v, f"0{bits}b")[::-1], 2), unsigned).view(x.dtype)


def _ffs(x):
    return _per_bits(x, lambda v, bits: (v & -v).bit_length())


def _mulhi(x, y):
    bits = x.dtype.itemsize * 8
    product = x.astype(object) * y.astype(object)
    return np.array([int(v) >> bits for v in product.ravel()], dtype=x.dtype).reshape(x.shape)


def _byte_perm(x, y, s):
    out = []
    for a, b, sel in zip(x.astype(np.uint32).ravel(), y.astype(np.uint32).ravel(), s.astype(np.uint32).ravel()):
        word = int(a) | (int(b) << 32)
        value = 0
        for i in range(4):
            value |= ((word >> (8 * ((int(sel) >> (4 * i)) & 7))) & 0xFF) << (8 * i)
        out.append(value)
    return np.array(out, np.uint32).reshape(x.shape).view(x.dtype) if x.dtype.itemsize == 4 else np.array(out)


def _remainder(x, y):
    """IEEE 754 ``remainder``: ``x - n * y`` with ``n`` the integer nearest ``x / y`` (ties to even),
    exact (``math.remainder``; the result is representable in the operands' type)."""
    def one(a, b):
        if math.isnan(a) or math.isnan(b) or math.isinf(a) or b == 0:
            return math.nan
        if math.isinf(b):
            return a
        return math.remainder(a, b)

    return np.vectorize(one, otypes=[np.float64])(x, y)


def _erfcinv(x):
    """``erfcinv(x) = -ndtri(x / 2) / sqrt(2)``, computed in fp64: ``erfinv(1 - x)`` loses everything
    below 1e-8 (fp32 ``erfcinv(1e-10)`` was inf)."""
    half = (np.asarray(x, np.float64) / 2)
    return -_torch("ndtri")(half) / math.sqrt(2) + 0.0  # erfcinv(1) is +0


def _pi_times(x, cosine):
    """``sin(pi x)`` or ``cos(pi x)`` with the argument reduced exactly: ``x`` mod 2 is exact in
    floating point, and the integers and half-integers give exact zeros and ones."""
    wide = np.asarray(x, np.float64)
    with quiet(invalid="ignore"):
        reduced = np.fmod(wide, 2.0)  # exact, in (-2, 2), the sign of x
        twice = reduced * 2  # exact
        whole = twice == np.rint(twice)  # a multiple of 1/2
        quarter = np.mod(np.rint(twice), 4)  # which multiple of pi / 2
        if cosine:
            value = np.cos(np.pi * reduced)
            # % 4 again: a NaN or infinite x gives a NaN quarter, cast to an integer out of range
            exact = np.choose(quarter.astype(np.int64) % 4, [1.0, 0.0, -1.0, 0.0])
        else:
            value = np.sin(np.pi * reduced)
            exact = np.choose(quarter.astype(np.int64) % 4, [0.0, 1.0, 0.0, -1.0])
            exact = np.where(exact == 0, np.copysign(0.0, wide), exact)  # sinpi(n) is +-0, as x
        result = np.where(whole & np.isfinite(wide), exact, value)
    return np.where(np.isfinite(wide), result, np.nan)


def _round_half_away(x):
    """C's ``round``: half-way cases away from zero, exactly (``floor(|x| + 0.5)`` rounds twice:
    ``round(0.49999997)`` was 1)."""
    whole = np.trunc(x)
    with quiet(invalid="ignore"):
        return np.where(np.abs(x - whole) >= 0.5, whole + np.copysign(np.ones_like(x), x), whole)


def _logb(x):
    """The unbiased exponent of ``x`` as a float (``frexp``, exact): -inf for 0, inf for inf."""
    _, exponent = np.frexp(x)
    with quiet(invalid="ignore"):
        result = (exponent - 1).astype(np.float64)
    result = np.where(x == 0, -np.inf, result)
    result = np.where(np.isinf(x), np.inf, result)
    return np.where(np.isnan(x), np.nan, result)


def _ilogb(x):
    """``logb`` as an int32: INT_MIN for 0 and NaN, INT_MAX for inf (CUDA's ``ilogbf``)."""
    _, exponent = np.frexp(x)
    result = (exponent - 1).astype(np.int64)
    result = np.where((x == 0) | np.isnan(x), np.iinfo(np.int32).min, result)
    return np.where(np.isinf(x), np.iinfo(np.int32).max, result).astype(np.int32)


def _cvt(round_to_integer, dtype):
    """A float rounded to an integer by ``round_to_integer``, then converted as PTX's ``cvt``
    converts (saturating, NaN to 0 for 32-bit results: ``conversions.float_to_int``)."""
    from .conversions import float_to_int

    def apply(x):
        with quiet(invalid="ignore"):
            return float_to_int(round_to_integer(x), np.dtype(dtype))

    return apply


def _lgamma(v):
    if math.isinf(v):
        return math.inf
    if v <= 0 and v == math.floor(v):  # the poles: 0 and the negative integers
        return math.inf
    return math.lgamma(v)


def _tgamma(v):
    if math.isnan(v) or v == -math.inf:
        return math.nan
    if v == 0:
        return math.copysign(math.inf, v)
    if v < 0 and v == math.floor(v):
        return math.nan
    try:
        return math.gamma(v)
    except OverflowError:  # past 171.6: the result is too large for fp64
        return math.inf


def _cyl_bessel_i0(x):
    """I0 in fp64 (torch's fp32 kernel overflows from 89, where the fp32 result is 1.9e37)."""
    wide = np.asarray(x, np.float64)
    return np.where(np.isinf(wide), np.inf, _torch("i0")(wide))


def _bessel_at_infinity(name):
    """j0, j1, y0, y1: 0 at +-inf (torch's kernels give NaN); y0/y1 of -inf stay NaN."""
    def apply(x):
        wide = np.asarray(x, np.float64)
        result = _torch(name)(wide)
        at_inf = np.isposinf(wide) | (np.isneginf(wide) & name.startswith("bessel_j"))
        return np.where(at_inf, 0.0, result)

    return apply


def _mul24(x, y):
    """PTX ``mul24.lo``: the low 24 bits of each operand, signed for signed operands."""
    def low24(v):
        low = v.astype(np.int64) & 0xFFFFFF
        if v.dtype.kind == "i":
            low = np.where(low >= 1 << 23, low - (1 << 24), low)
        return low

    return (low24(x) * low24(y)).astype(x.dtype)


def _norm(*values):
    """The Euclidean norm in fp64, as ``hypot`` of pairs (no square overflows: ``norm3d(1e20, 0, 0)``
    was inf, ``rhypot(FLT_MAX, FLT_MAX)`` 0)."""
    wide = [np.asarray(v, np.float64) for v in values]
    while len(wide) > 1:
        wide = [np.hypot(*wide[i:i + 2]) if i + 1 < len(wide) else wide[i] for i in range(0, len(wide), 2)]
    return wide[0]


_ROUNDED: Dict[str, Callable[[Any], Any]] = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}


#: name: function of NumPy arrays (the arguments as Triton's front end typed and promoted them);
#: its result is cast to the result type of Triton's own table
_TABLE: Dict[str, Callable[..., Any]] = {}


def _f32(hexadecimal):
    return np.float32(float.fromhex(hexadecimal))


#: ``__nv_tanhf``'s constants: 2 log2(e); where the result is 1; where the polynomial ends; its coefficients
_TANH_2_LOG2_E = _f32("0x1.715476p+1")
_TANH_ONE_FROM, _TANH_POLYNOMIAL_BELOW = _f32("0x1.205968p+3"), _f32("0x1.333334p-1")
_TANH_COEFFICIENTS = tuple(_f32(c) for c in ("0x1.01e104p-6", "-0x1.ac795cp-5", "0x1.10b282p-3", "-0x1.5553dap-2", "0"))


def _tanhf(x):
    """libdevice's ``__nv_tanhf`` step by step (read from the release's ``libdevice.10.bc``): below
    0.6 an odd polynomial in fmas, exact here (the H200's bits for every sampled input); above,
    ``1 - 2 / (2**(2|x| log2 e) + 1)`` through the approximate ``ex2`` and ``rcp``, which are exactly
    rounded here (97% of the H200's bits, the rest within 2 ulps); 1 from 9.0109. fp64 is NumPy's."""
    if x.dtype != np.float32:
        return np.tanh(x)
    one = np.float32(1)
    size = np.abs(x)
    with quiet(over="ignore", invalid="ignore"):
        power = (size * _TANH_2_LOG2_E).astype(np.float32)
        grown = (one + np.exp2(power.astype(np.float64)).astype(np.float32)).astype(np.float32)
        large = fma((1 / grown.astype(np.float64)).astype(np.float32), np.float32(-2), one)
        large = np.copysign(np.where(size >= _TANH_ONE_FROM, one, large), x)
        square = (x * x).astype(np.float32)
        first, *rest = _TANH_COEFFICIENTS
        poly = first
        for coefficient in rest:
            poly = fma(poly, square, coefficient)
        small = fma(poly, x, x)
    return np.where(size >= _TANH_POLYNOMIAL_BELOW, large, small)


def _add(names, function):
    for name in names.split():
        _TABLE[name] = function


_add("exp fast_expf", np.exp)
_add("exp2", np.exp2)
_add("exp10 fast_exp10f", lambda x: np.power(x.dtype.type(10), x))
_add("expm1", np.expm1)
_add("log fast_logf", np.log)
_add("log2 fast_log2f", np.log2)
_add("log10 fast_log10f", np.log10)
_add("log1p", np.log1p)
_add("sqrt sqrt_rn", np.sqrt)
_add("rsqrt rsqrt_rn", lambda x: 1 / np.sqrt(x))
_add("cbrt", np.cbrt)
_add("rcbrt", lambda x: 1 / np.cbrt(x))
_add("rcp_rn", lambda x: 1 / x)
_add("sin fast_sinf", np.sin)
_add("cos fast_cosf", np.cos)
_add("tan fast_tanf", np.tan)
_add("sinpi", lambda x: _pi_times(x, cosine=False))
_add("cospi", lambda x: _pi_times(x, cosine=True))
_add("asin", np.arcsin)
_add("acos", np.arccos)
_add("atan", np.arctan)
_add("sinh", np.sinh)
_add("cosh", np.cosh)
_add("tanh", _tanhf)
_add("fast_tanhf", np.tanh)
_add("asinh", np.arcsinh)
_add("acosh", np.arccosh)
_add("atanh", np.arctanh)
_add("erf", _vectorized(math.erf))
_add("erfc", _vectorized(math.erfc))
_add("erfinv", _torch("erfinv"))
_add("erfcinv", _erfcinv)
_add("erfcx", _torch("erfcx"))
_add("normcdf", _torch("ndtr"))
_add("normcdfinv", _torch("ndtri"))
_add("lgamma", _vectorized(_lgamma))
_add("tgamma", _vectorized(_tgamma))
_add("cyl_bessel_i0", _cyl_bessel_i0)
_add("cyl_bessel_i1", _torch("i1"))
_add("j0", _bessel_at_infinity("bessel_j0"))
_add("j1", _bessel_at_infinity("bessel_j1"))
_add("y0", _bessel_at_infinity("bessel_y0"))
_add("y1", _bessel_at_infinity("bessel_y1"))
_add("floor", np.floor)
_add("ceil", np.ceil)
_add("trunc", np.trunc)
_add("round", _round_half_away)
_add("rint nearbyint", np.rint)
_add("abs fabs", np.abs)
_add("saturatef", lambda x: np.where(np.isnan(x), 0, np.clip(x, 0, 1)) + 0.0)  # +0 for -0 and NaN
_add("logb", _logb)
_add("isnan", lambda x: np.isnan(x).astype(np.int32))
_add("isinf", lambda x: np.isinf(x).astype(np.int32))
_add("isfinited finitef", lambda x: np.isfinite(x).astype(np.int32))
_add("signbit", lambda x: np.signbit(x).astype(np.int32))
_add("ilogb", _ilogb)
_add("llrint", _cvt(np.rint, np.int64))
_add("llround", _cvt(_round_half_away, np.int64))
_add("pow powf fast_powf", np.power)
_add("atan2", np.arctan2)
_add("fmod", np.fmod)
_add("remainder", _remainder)
_add("fmin min", np.fmin)
_add("fmax max", np.fmax)
_add("hypot", np.hypot)
_add("norm3d norm4d", _norm)
_add("rhypot rnorm3d rnorm4d", lambda *values: 1 / _norm(*values))
_add("copysign", np.copysign)
_add("fdim", lambda x, y: np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0.0)))
_add("nextafter", np.nextafter)
_add("div_rn fast_dividef", np.true_divide)
_add("add_rn", np.add)
_add("sub_rn", np.subtract)
_add("mul_rn", np.multiply)
_add("fma fma_rn", fma_rounded("rn"))


def _add_directed_roundings():
    """The rz/rd/ru variants of the arithmetic: the exact result rounded as the instruction does."""
    for mode in ("rz", "rd", "ru"):
        _add_directed(mode)


def _add_directed(mode):
    _add(f"sqrt_{mode}", sqrt_rounded(mode))
    _add(f"rcp_{mode}", rounded(mode, lambda x: 1 / x, lambda x: 1 / x))
    _add(f"div_{mode}", rounded(mode, lambda x, y: x / y, np.true_divide))
    _add(f"add_{mode}", rounded(mode, lambda x, y: x + y, np.add, lambda x, y: (x, y)))
    _add(f"sub_{mode}", rounded(mode, lambda x, y: x - y, np.subtract, lambda x, y: (x, -y)))
    _add(f"mul_{mode}", rounded(mode, lambda x, y: x * y, np.multiply))
    _add(f"fma_{mode}", fma_rounded(mode))


_add_directed_roundings()
_add("ldexp scalbn", lambda x, n: np.ldexp(x, np.asarray(n).astype(np.int32)))
_add("hadd", lambda x, y: ((x.astype(np.int64) + y.astype(np.int64)) >> 1).astype(x.dtype))
_add("rhadd", lambda x, y: ((x.astype(np.int64) + y.astype(np.int64) + 1) >> 1).astype(x.dtype))
_add("mul24", _mul24)
_add("sad", lambda x, y, z: (np.abs(x.astype(np.int64) - y.astype(np.int64)) + z).astype(z.dtype))
_add("mulhi", _mulhi)
_add("clz", _clz)
_add("popc", _popc)
_add("ffs", _ffs)
_add("brev", _brev)
_add("byte_perm", _byte_perm)


def _add_conversions():
    """The float-to-integer and to-float conversions, in every rounding mode."""
    for mode, round_to_integer in _ROUNDED.items():
        for source, target, integer in (("float", "int", np.int32), ("float", "uint", np.uint32),
                                        ("float", "ll", np.int64), ("float", "ull", np.uint64),
                                        ("double", "int", np.int32), ("double", "uint", np.uint32),
                                        ("double", "ll", np.int64), ("double", "ull", np.uint64)):
            # the result type is Triton's table's, signed (float2uint_rn returns an int32 there)
            signed = {np.uint32: np.int32, np.uint64: np.int64}.get(integer, integer)
            _add(f"{source}2{target}_{mode}", _signed(_cvt(round_to_integer, integer), signed))
        for source, target, floating in (("double", "float", np.float32), ("int", "float", np.float32),
                                         ("uint", "float", np.float32), ("ll", "float", np.float32),
                                         ("ull", "float", np.float32), ("int", "double", np.float64),
                                         ("uint", "double", np.float64), ("ll", "double", np.float64),
                                         ("ull", "double", np.float64)):
            convert = _then_as(None, floating)
            _add(f"{source}2{target}_{mode}", convert if mode == "rn" else rounded(mode, lambda x: x, convert))


def _signed(function, dtype):
    """``function``'s result reinterpreted as ``dtype`` (the same bits)."""
    return lambda *arrays: np.asarray(function(*arrays)).view(dtype)


def _then_as(function, dtype):
    """``function`` (None: the identity), then a cast to ``dtype``."""
    if function is None:
        return lambda x: x.astype(dtype)
    return lambda x: function(x).astype(dtype)


_add_conversions()
_add("float_as_int", lambda x: x.astype(np.float32).view(np.int32))
_add("float_as_uint", lambda x: x.astype(np.float32).view(np.int32))  # signed in Triton's table
_add("int_as_float uint_as_float", lambda x: x.astype(np.int32).view(np.float32))
_add("double_as_longlong", lambda x: x.astype(np.float64).view(np.int64))
_add("longlong_as_double", lambda x: x.astype(np.int64).view(np.float64))
_add("double2hiint", lambda x: (x.astype(np.float64).view(np.int64) >> 32).astype(np.int32))
_add("double2loint", lambda x: (x.astype(np.float64).view(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32))
_add("hiloint2double", lambda hi, lo: ((hi.astype(np.int64) << 32) | (lo.astype(np.int64) & 0xFFFFFFFF)).view(
    np.float64))

TABLE = _TABLE
IMPLEMENTATIONS = sorted(_TABLE)
