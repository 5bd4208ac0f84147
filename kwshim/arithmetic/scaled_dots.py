"""``tl.dot_scaled`` as the H200 computes it, where the installed interpreter has none (3.3-3.7:
its builder lacks ``create_dot_scaled``, and its front end reads the formats as constexprs, which
the interpreter passes as strings, "'str' object has no attribute 'value'") and in place of 3.8's
and 3.9's own (an fp32 ``np.matmul``, which reads fp8 operands as bytes: kwshim's fp8 blocks are
``ml_dtypes`` floats).

On sm_90 the compiler decomposes a scaled dot: each operand is upcast to bf16 (fp16 beside an fp16
one), multiplied by its group's e8m0 scale, and the tensor cores multiply the 16-bit blocks. Every
e2m1, e4m3 and e5m2 value times a power of two is exact in bf16, so the operands are decoded exactly
here, and the dot is ``gpu_arithmetic``'s tensor-core dot of 16-bit inputs (fp32 ``np.matmul`` under
the interpreter's own numerics). A scale of 255 is NaN, as Triton's upcast makes it.
"""

import functools

import numpy as np

__all__ = ["install"]

#: e2m1's eight magnitudes, by the low three bits of a nibble
_E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)


def _e2m1(packed, axis):
    """The fp32 values of e2m1 nibbles packed two to a byte along ``axis``, the low nibble first."""
    packed = np.moveaxis(packed.astype(np.uint8), axis, -1)
    nibbles = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(packed.shape[:-1] + (-1,))
    values = np.where(nibbles & 0x08, -_E2M1[nibbles & 0x07], _E2M1[nibbles & 0x07])
    return np.moveaxis(values, -1, axis)


def _scales(scale):
    """e8m0 scales as fp32 (``s << 23``: 0 is zero, 255 NaN), or fp8 ones as their values."""
    if scale.dtype.itemsize == 1 and scale.dtype.kind in "ui":
        values = (scale.astype(np.uint32) << np.uint32(23)).view(np.float32)
        return np.where(scale.astype(np.uint8) == 255, np.float32(np.nan), values)
    return scale.astype(np.float32)


def _operand(handle, scale, format_name, k_pack, rhs):
    """An operand's exact values (fp32), its group scales applied along K."""
    if format_name == "E2M1":
        values = _e2m1(handle.data, (-2 if k_pack else -1) if rhs else (-1 if k_pack else -2))
    else:
        values = handle.data.astype(np.float32)
    if scale is None:
        return values
    scales = _scales(scale.data)
    if rhs:  # the rhs is [K, N], its scales [N, K / group]
        scales = np.swapaxes(np.repeat(scales, values.shape[-2] // scales.shape[-1], axis=-1), -1, -2)
    else:
        scales = np.repeat(scales, values.shape[-1] // scales.shape[-1], axis=-1)
    with np.errstate(invalid="ignore", over="ignore"):
        return values * scales


def create_dot_scaled(self, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, *rest):
    """The builder's ``create_dot_scaled``: ``(..., fast_math, lhs_k_pack, rhs_k_pack, acc)`` from 3.4,
    ``(..., fast_math, acc)`` in 3.3."""
    from triton.runtime import interpreter

    acc = rest[-1]
    lhs_k_pack, rhs_k_pack = rest[1:3] if len(rest) == 4 else (True, True)
    a = _operand(lhs, lhs_scale, lhs_format.name, lhs_k_pack, rhs=False)
    b = _operand(rhs, rhs_scale, rhs_format.name, rhs_k_pack, rhs=True)
    if getattr(self, "kwshim_gpu_arithmetic", False):
        from .gpu_arithmetic import _chunked_dot

        with np.errstate(invalid="ignore", over="ignore"):
            result = _chunked_dot(a, b, acc.data, 16, np.dtype(np.float32))
    else:
        result = (np.matmul(a, b) + acc.data).astype(np.float32)
    return interpreter.TensorHandle(result, acc.dtype.scalar)


def _constexpr_formats(original):
    """``tl.dot_scaled`` handing its front end the formats as constexprs, as compiled Triton does."""
    import triton.language as tl

    @functools.wraps(original)
    def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, *args, **kwargs):
        lhs_format, rhs_format = (tl.constexpr(f) if isinstance(f, str) else f for f in (lhs_format, rhs_format))
        return original(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, *args, **kwargs)

    return dot_scaled


def install(patch, builder_class):
    """Set the builder's ``create_dot_scaled`` through ``patch`` wherever the front end has
    ``tl.dot_scaled``, and hand it constexpr formats where it reads them so (probed)."""
    import triton.language as tl

    from ..compat.interpreter import dot_scaled_reads_constexpr_formats

    original = vars(tl).get("dot_scaled")
    if original is None or builder_class is None:
        return
    patch.setattr(builder_class, "create_dot_scaled", create_dot_scaled)
    if dot_scaled_reads_constexpr_formats():
        wrapped = _constexpr_formats(original)
        patch.setattr(tl, "dot_scaled", wrapped)
        if vars(tl.core).get("dot_scaled") is original:
            patch.setattr(tl.core, "dot_scaled", wrapped)
