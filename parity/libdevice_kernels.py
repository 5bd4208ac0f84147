"""Kernels for the libdevice rows of the parity suite: each stores one libdevice function of eight
values, so compiled (CUDA) and interpreted (CPU, kwshim's implementations) results can be compared.
Written by ``parity/generate.py``: edit that, not this. Every kernel is @kwsafe (interpreted: the
libdevice names in its globals are swapped for CPU implementations during each launch)."""

import triton
import triton.language as tl
from triton.language.extra import libdevice

from kwshim import kwsafe

UNARY = [
    'tanh', 'rsqrt', 'erf', 'erfc', 'exp', 'exp2', 'exp10', 'expm1', 'log', 'log2', 'log10', 'log1p', 'sqrt',
    'cbrt', 'rcbrt', 'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'asinh', 'atanh', 'floor', 'ceil',
    'trunc', 'rint', 'round', 'fast_expf', 'fast_logf', 'erfinv', 'normcdf', 'normcdfinv', 'lgamma', 'tgamma', 'j0',
    'j1', 'y0', 'y1', 'cyl_bessel_i0', 'cyl_bessel_i1', 'logb', 'sinpi', 'cospi', 'saturatef', 'isnan', 'isinf',
    'signbit', 'ilogb', 'llrint', 'float2int_rn', 'float2int_rz', 'float_as_int',
]
BINARY = [
    'pow', 'atan2', 'fmod', 'hypot', 'copysign', 'fdim', 'div_rn', 'remainder', 'rhypot',
]
TERNARY = [
    'fma', 'norm3d',
]
ROUNDED_UNARY = [
    'sqrt_rz', 'sqrt_rd', 'sqrt_ru', 'rcp_rz', 'rcp_rd', 'rcp_ru',
]
ROUNDED_BINARY = [
    'add_rz', 'add_rd', 'add_ru', 'sub_rz', 'sub_rd', 'sub_ru', 'mul_rz', 'mul_rd', 'mul_ru', 'div_rz', 'div_rd',
    'div_ru',
]
ROUNDED_TERNARY = [
    'fma_rn', 'fma_rz', 'fma_rd', 'fma_ru',
]


@kwsafe
@triton.jit
def ld_tanh(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.tanh(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_rsqrt(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.rsqrt(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_erf(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.erf(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_erfc(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.erfc(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_exp(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.exp(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_exp2(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.exp2(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_exp10(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.exp10(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_expm1(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.expm1(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_log(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.log(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_log2(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.log2(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_log10(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.log10(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_log1p(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.log1p(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_sqrt(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.sqrt(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_cbrt(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.cbrt(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_rcbrt(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.rcbrt(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_sin(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.sin(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_cos(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.cos(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_tan(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.tan(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_asin(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.asin(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_acos(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.acos(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_atan(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.atan(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_sinh(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.sinh(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_cosh(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.cosh(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_asinh(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.asinh(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_atanh(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.atanh(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_floor(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.floor(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_ceil(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.ceil(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_trunc(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.trunc(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_rint(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.rint(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_round(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.round(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_fast_expf(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.fast_expf(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_fast_logf(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.fast_logf(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_erfinv(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.erfinv(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_normcdf(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.normcdf(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_normcdfinv(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.normcdfinv(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_lgamma(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.lgamma(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_tgamma(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.tgamma(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_j0(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.j0(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_j1(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.j1(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_y0(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.y0(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_y1(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.y1(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_cyl_bessel_i0(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.cyl_bessel_i0(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_cyl_bessel_i1(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.cyl_bessel_i1(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_logb(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.logb(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_sinpi(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.sinpi(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_cospi(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.cospi(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_saturatef(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.saturatef(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_isnan(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.isnan(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_isinf(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.isinf(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_signbit(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.signbit(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_ilogb(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.ilogb(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_llrint(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.llrint(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_float2int_rn(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.float2int_rn(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_float2int_rz(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.float2int_rz(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_float_as_int(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.float_as_int(x).to(tl.float32))


@kwsafe
@triton.jit
def ld_pow(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.pow(x, y).to(tl.float32))


@kwsafe
@triton.jit
def ld_atan2(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.atan2(x, y).to(tl.float32))


@kwsafe
@triton.jit
def ld_fmod(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.fmod(x, y).to(tl.float32))


@kwsafe
@triton.jit
def ld_hypot(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.hypot(x, y).to(tl.float32))


@kwsafe
@triton.jit
def ld_copysign(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.copysign(x, y).to(tl.float32))


@kwsafe
@triton.jit
def ld_fdim(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.fdim(x, y).to(tl.float32))


@kwsafe
@triton.jit
def ld_div_rn(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.div_rn(x, y).to(tl.float32))


@kwsafe
@triton.jit
def ld_remainder(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.remainder(x, y).to(tl.float32))


@kwsafe
@triton.jit
def ld_rhypot(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.rhypot(x, y).to(tl.float32))


@kwsafe
@triton.jit
def ld_fma(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.fma(x, y, x).to(tl.float32))


@kwsafe
@triton.jit
def ld_norm3d(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.norm3d(x, y, x).to(tl.float32))


@kwsafe
@triton.jit
def ld_sqrt_rz(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.sqrt_rz(x))


@kwsafe
@triton.jit
def ld_sqrt_rd(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.sqrt_rd(x))


@kwsafe
@triton.jit
def ld_sqrt_ru(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.sqrt_ru(x))


@kwsafe
@triton.jit
def ld_rcp_rz(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.rcp_rz(x))


@kwsafe
@triton.jit
def ld_rcp_rd(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.rcp_rd(x))


@kwsafe
@triton.jit
def ld_rcp_ru(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.rcp_ru(x))


@kwsafe
@triton.jit
def ld_add_rz(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.add_rz(x, y))


@kwsafe
@triton.jit
def ld_add_rd(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.add_rd(x, y))


@kwsafe
@triton.jit
def ld_add_ru(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.add_ru(x, y))


@kwsafe
@triton.jit
def ld_sub_rz(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.sub_rz(x, y))


@kwsafe
@triton.jit
def ld_sub_rd(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.sub_rd(x, y))


@kwsafe
@triton.jit
def ld_sub_ru(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.sub_ru(x, y))


@kwsafe
@triton.jit
def ld_mul_rz(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.mul_rz(x, y))


@kwsafe
@triton.jit
def ld_mul_rd(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.mul_rd(x, y))


@kwsafe
@triton.jit
def ld_mul_ru(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.mul_ru(x, y))


@kwsafe
@triton.jit
def ld_div_rz(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.div_rz(x, y))


@kwsafe
@triton.jit
def ld_div_rd(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.div_rd(x, y))


@kwsafe
@triton.jit
def ld_div_ru(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.div_ru(x, y))


@kwsafe
@triton.jit
def ld_fma_rn(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.fma_rn(x, y, x))


@kwsafe
@triton.jit
def ld_fma_rz(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.fma_rz(x, y, x))


@kwsafe
@triton.jit
def ld_fma_rd(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.fma_rd(x, y, x))


@kwsafe
@triton.jit
def ld_fma_ru(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.fma_ru(x, y, x))
