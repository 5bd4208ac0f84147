"""Arithmetic as compiled Triton computes it on an NVIDIA GPU where that is not IEEE's exact rounding
of each operation (``numerics="gpu"``, the default; measured on the H200, ``parity/numerics.py``):

- **fused multiply-adds**: an add or subtract of a product the kernel just computed is one
  ``fma.rn`` (``fma``), where compiled Triton contracts: the ``enable_fp_fusion`` launch option, else
  the installed backend's default (its environment variables on 3.6+: ``TRITON_DEFAULT_FP_FUSION``);
- **tl.dot** as the tensor cores compute it: fp32 inputs at the default (``tf32``) precision lose
  their low 13 bits (truncated, not rounded: 1024 of 1024 bits the same), the accumulator is rounded
  once per step of K (8 for TF32, 16 for fp16/bf16, 32 for fp8), an fp16 accumulator in fp16;
  ``ieee`` (and fp64) is a chain of fmas over K, in order;
- **fp32 transcendentals** as the GPU's approximate instructions: ``tl.exp`` is ``ex2.approx`` of
  ``x * log2(e)`` (the product rounded to fp32: 205 of 256 bits the same, the rest within 1 ulp of
  the hardware's approximation); ``exp2``, ``sqrt``, ``sin`` and ``cos`` flush subnormal inputs (and
  ``exp2``, ``sqrt`` and ``erf`` results) to zero (``exp2(-129)`` is 0). ``log`` stays exact (within
  2 ulps).

Sums and prefix sums are the front end's: it promotes bf16 ``tl.cumsum`` to fp32 on 3.0-3.8 (not
3.9), and adds fp16 and bf16 in their own type otherwise, on the GPU as here. The GPU adds in the
order of its lanes (a butterfly or a Hillis-Steele scan over each warp's 32 elements, then the
warps): an fp16 or bf16 row's ``tl.sum`` is added in that order (``lane_order``, in every builder
class); 2-D blocks, fp32 sums and prefix sums keep NumPy's order. Not modelled there.

Where numba is installed, the fused multiply-add of large blocks runs as a compiled loop
(``compiled``), with the NumPy code's bits. The transcendentals are NumPy's fp64 functions (SIMD where
the CPU has it) over cache-sized chunks (``approximations``), faster than a compiled loop calling the
C library's scalar functions; ``tl.exp`` and ``tl.exp2`` of large blocks join the block's expression
(``deferred_arithmetic``), whose compiled loop computes them as a polynomial with NumPy's bits.

``ieee`` numerics leave all of this out (``gpu_builder`` alone). libdevice reads the class's
``kwshim_gpu_arithmetic`` to read fp32 subnormal arguments as zeros, as the GPU's libdevice does.
"""

import functools
import os
import sys

import numpy as np

from .. import launch_state
from . import compiled, deferred_arithmetic, lane_order
from .approximations import exp2_approximation, exp_approximation, flushed, flushing_approximation, subnormal
from .fma import fma
from .numpy_quiet import quiet

__all__ = ["arithmetic_class", "fusion_enabled", "flushed", "subnormal", "exp_approximation",
           "exp2_approximation", "flushing_approximation"]

_INTERPRETER = "triton.runtime.interpreter"

_FUSION_ENVIRONMENT = ("TRITON_DEFAULT_FP_FUSION", "TRITON_FORCE_DISABLE_FP_FUSION")


#: The variables' keys in ``os.environ``'s own dict, where it has one (POSIX: bytes): a lookup there
#: costs a tenth of ``os.environ.get``'s, and an add asks it each time.
_FUSION_KEYS = tuple(os.environ.encodekey(name) for name in _FUSION_ENVIRONMENT) \
    if isinstance(getattr(os.environ, "_data", None), dict) and hasattr(os.environ, "encodekey") else None


def fusion_enabled() -> bool:
    """Whether compiled Triton would contract ``x * y + z`` for this launch."""
    if _FUSION_KEYS is not None:  # the variables' values are only the cache's key: the backend reads them
        data = os.environ._data  # type: ignore[attr-defined]
        return _fusion(launch_state.requested_fusion, *(data.get(key) for key in _FUSION_KEYS))
    return _fusion(launch_state.requested_fusion, *(os.environ.get(name) for name in _FUSION_ENVIRONMENT))


@functools.lru_cache(maxsize=None)
def _fusion(requested, *environment) -> bool:
    """The installed NVIDIA backend's own answer (its ``parse_options``: the release's default and
    its environment variables): the arithmetic here is an NVIDIA GPU's, whatever the launch target."""
    from ..compat import backends

    installed = backends()
    backend = installed.get("cuda") or next(iter(installed.values()), None)
    if backend is None:  # no backend to ask (2.x): every release through 3.9 fuses by default
        return True if requested is None else bool(requested)
    given = {} if requested is None else {"enable_fp_fusion": bool(requested)}
    return bool(getattr(backend.check(given), "enable_fp_fusion", True))


def _fused(interpreter, product, addend, negate_product, negate_addend):
    """``±(x * y) ± addend`` as one fma, ``product`` being the handle ``create_fmul`` made: deferred
    with the product's factors where they and the addend may be (``deferred_arithmetic``)."""
    handles = deferred_arithmetic.factors(product)
    if handles is not None and deferred_arithmetic.chainable(addend, *handles):
        x, y = handles
        return deferred_arithmetic.deferred("fma", ("neg", x) if negate_product else x, y,
                                            ("neg", addend) if negate_addend else addend, scalar=addend.dtype.scalar)
    x, y = product.kwshim_factors
    addend_data = -addend.data if negate_addend else addend.data
    result = fma(-x if negate_product else x, y, addend_data)
    return interpreter.TensorHandle(result.astype(addend.data.dtype, copy=False), addend.dtype.scalar)


def _factors(handle):
    """Whether ``handle`` is a product an add may contract with (``create_fmul``'s)."""
    return deferred_arithmetic.factors(handle) is not None or vars(handle).get("kwshim_factors") is not None


def _deferred(base_operation, operation):
    """A builder method computing ``operation`` (``deferred_arithmetic``) of large fp32 blocks when
    first read, and anything else as ``base_operation`` does."""
    def method(self, *operands):
        if deferred_arithmetic.chainable(*operands):
            return deferred_arithmetic.deferred(operation, *operands, scalar=operands[-1].dtype.scalar)
        return base_operation(self, *operands)

    method.__name__ = base_operation.__name__
    return method


_TF32_MASK = np.uint32(0xFFFFE000)  #: the 10 mantissa bits TF32 keeps


def _chunked_dot(a, b, d, step, accumulator):
    """``a @ b + d``: each step of K summed exactly (fp64), added to the accumulator and rounded to
    ``accumulator``'s type, as the tensor cores accumulate. An fp32 accumulator's large dots run as
    one compiled loop (``compiled.stepped_dot_for``) with these bits; a dot where a NaN came out is
    computed again here, whose NaN it keeps."""
    if accumulator == np.float32 and a.ndim >= 2 and b.ndim >= 2:
        loop = compiled.stepped_dot_for(a.size * b.shape[-1])
        if loop is not None:
            leading = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], d.shape[:-2])
            shape = (*leading, a.shape[-2], b.shape[-1])
            a32, b32, d32 = (np.ascontiguousarray(np.broadcast_to(value, (*leading, *value.shape[-2:])),
                                                  np.float32).reshape(-1, *value.shape[-2:])
                             for value in (a, b, np.broadcast_to(d, shape)))
            out = np.empty(d32.shape, np.float32)
            if not loop(compiled.read_only(a32), compiled.read_only(b32), compiled.read_only(d32), step, out):  # no NaN
                return out.reshape(shape)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    result = d.astype(accumulator)
    for start in range(0, a.shape[-1], step):
        part = np.matmul(a64[..., start:start + step], b64[..., start:start + step, :])
        result = np.add(result, part, out=part).astype(accumulator)  # widened exactly in the add: one fp64 block less
    return result


def _fma_chain_dot(a, b, d, accumulator):
    """``a @ b + d`` as one fma per element of K, in order (fp32 ``input_precision="ieee"``, fp64)."""
    result = d.astype(accumulator)
    for k in range(a.shape[-1]):
        result = fma(a[..., :, k:k + 1].astype(accumulator), b[..., k:k + 1, :].astype(accumulator), result)
    return result


#: builder method: (the exact function, whether subnormal results are zero too): the ``.ftz``
#: approximations (``ex2``: ``exp2_approximation``, ``sqrt``, ``sin``, ``cos``) read subnormal
#: inputs as zeros; ``tl.sqrt_rn`` is the exact square root.
_FLUSHING_APPROXIMATIONS = {"create_sqrt": (np.sqrt, True), "create_sin": (np.sin, False),
                            "create_cos": (np.cos, False)}


def _flushing_approximation(original, function, flush_result, TensorHandle):
    """A builder method computing fp32 ``function`` as its ``.ftz`` approximation (rounded exactly
    from fp64), and other types as ``original`` does."""
    def method(self, arg):
        if arg.data.dtype != np.float32:
            return original(self, arg)
        with quiet(over="ignore", invalid="ignore"):
            return TensorHandle(flushing_approximation(function, flush_result, arg.data), arg.dtype.scalar)

    method.__name__ = original.__name__
    return method


@functools.lru_cache(maxsize=None)
def arithmetic_class(base):
    """A subclass of ``base`` (``gpu_builder``'s builder class) computing as the GPU does here."""
    interpreter = sys.modules[_INTERPRETER]
    TensorHandle = interpreter.TensorHandle
    precision = interpreter._ir.INPUT_PRECISION
    tf32, ieee = precision.TF32, precision.IEEE

    _added, _subtracted = _deferred(base.create_fadd, "add"), _deferred(base.create_fsub, "sub")

    class GPUArithmetic(base):
        """The interpreter's builder with the GPU's fused multiply-adds and tensor-core dots."""

        kwshim_gpu_arithmetic = True  #: libdevice reads it: fp32 subnormal arguments are zeros

        def create_fmul(self, lhs, rhs):
            if deferred_arithmetic.chainable(lhs, rhs):  # computed where read; never, where only fmas read it
                product = deferred_arithmetic.deferred("mul", lhs, rhs, scalar=lhs.dtype.scalar, product=True)
            else:
                product = base.create_fmul(self, lhs, rhs)
                product.kwshim_factors = (lhs.data, rhs.data)  # for an add that contracts with it (arrays: no chain)
            return lane_order.loaded_as(product, lhs, rhs)

        def create_fadd(self, lhs, rhs):
            if _factors(lhs) and fusion_enabled():  # LLVM tries the left operand first
                return lane_order.keeps_layout(_fused(interpreter, lhs, rhs, False, False), lhs, rhs)
            if _factors(rhs) and fusion_enabled():
                return lane_order.keeps_layout(_fused(interpreter, rhs, lhs, False, False), lhs, rhs)
            return _added(self, lhs, rhs)

        def create_fsub(self, lhs, rhs):
            if _factors(lhs) and fusion_enabled():  # x * y - z: fma(x, y, -z)
                return lane_order.keeps_layout(_fused(interpreter, lhs, rhs, False, True), lhs, rhs)
            if _factors(rhs) and fusion_enabled():  # z - x * y: fma(-x, y, z)
                return lane_order.keeps_layout(_fused(interpreter, rhs, lhs, True, False), lhs, rhs)
            return _subtracted(self, lhs, rhs)

        create_fdiv = _deferred(base.create_fdiv, "div")
        create_fneg = _deferred(base.create_fneg, "neg0")  # the GPU's -x is 0 - x (``gpu_builder``)

        def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
            result = self._dot(a, b, d, input_precision, max_num_imprecise_acc)
            return lane_order.from_tensor_cores(result, a, input_precision == ieee)

        def _dot(self, a, b, d, input_precision, max_num_imprecise_acc):
            a_type, b_type = a.data.dtype, b.data.dtype
            if a_type.kind in "iu" or d.data.dtype.kind in "iu":  # integer dots are exact
                return base.create_dot(self, a, b, d, input_precision, max_num_imprecise_acc)
            accumulator = d.data.dtype
            if a_type == np.float64 or b_type == np.float64:
                return TensorHandle(_fma_chain_dot(a.data, b.data, d.data, accumulator), d.dtype.scalar)
            if a_type == np.float32 and b_type == np.float32:
                if input_precision == ieee:
                    chain = _fma_chain_dot(a.data, b.data, d.data, np.dtype(np.float32))
                    return TensorHandle(chain.astype(accumulator), d.dtype.scalar)
                if input_precision != tf32:  # tf32x3: three TF32 products, within 1e-7 of fp32's
                    return base.create_dot(self, a, b, d, input_precision, max_num_imprecise_acc)
                a_data = (np.ascontiguousarray(a.data).view(np.uint32) & _TF32_MASK).view(np.float32)
                b_data = (np.ascontiguousarray(b.data).view(np.uint32) & _TF32_MASK).view(np.float32)
                step = 8
            else:
                a_data, b_data = a.data, b.data
                step = 32 if a_type.itemsize == 1 else 16
            return TensorHandle(_chunked_dot(a_data, b_data, d.data, step, accumulator), d.dtype.scalar)

        def create_exp(self, arg):  # ex2.approx of x * log2(e), the product rounded to fp32 first
            if deferred_arithmetic.chainable(arg):
                return deferred_arithmetic.deferred("exp", arg, scalar=arg.dtype.scalar)
            if arg.data.dtype != np.float32:
                return base.create_exp(self, arg)
            with quiet(over="ignore", invalid="ignore"):
                return lane_order.keeps_layout(TensorHandle(exp_approximation(arg.data), arg.dtype.scalar), arg)

        def create_exp2(self, arg):  # ex2.approx.ftz
            if deferred_arithmetic.chainable(arg):
                return deferred_arithmetic.deferred("exp2", arg, scalar=arg.dtype.scalar)
            if arg.data.dtype != np.float32:
                return base.create_exp2(self, arg)
            with quiet(over="ignore", invalid="ignore"):
                return lane_order.keeps_layout(TensorHandle(exp2_approximation(arg.data), arg.dtype.scalar), arg)

        def create_erf(self, arg):  # the GPU's erf flushes subnormal results to zero
            result = base.create_erf(self, arg)
            if arg.data.dtype == np.float32:
                result = TensorHandle(flushed(result.data), arg.dtype.scalar)
            return result

    for name, (function, flush_result) in _FLUSHING_APPROXIMATIONS.items():
        setattr(GPUArithmetic, name, _flushing_approximation(getattr(base, name), function, flush_result, TensorHandle))
    GPUArithmetic.__name__ = GPUArithmetic.__qualname__ = base.__name__
    GPUArithmetic.__module__ = __name__
    return GPUArithmetic
