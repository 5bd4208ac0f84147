"""The interpreter's builder as compiled Triton computes on an NVIDIA GPU (measured on the H200).

``gpu_builder_class`` derives, once per release, a subclass of the interpreter's own builder class
that differs where the GPU does:

- casts (``cast_impl``, ``create_fp_to_fp``) follow ``conversions``: saturating float -> int,
  ``satfinite`` fp8, rounding toward zero where asked;
- ``-x`` of a float is ``0 - x`` (``-(+0.0)`` is +0.0); integer ``x // 0`` and ``x % 0`` are -1;
- bf16 and fp8 ``tl.dot`` inputs are widened exactly to fp32; bf16 ``atomic_add`` adds;
- what compiled Triton cannot lower for sm_90 raises ``UncompilableError`` (fp8 arithmetic,
  fp8 <-> fp8 and fp8 <-> fp64 conversions, most ``rtz`` conversions).

``install`` puts it in place by giving the interpreter's one builder object this class, with bf16
and fp8 held as ``ml_dtypes`` floats (``formats``): two names, set and undone through ``Patch``.
"""

import functools
import sys

import numpy as np

from . import conversions
from .formats import is_fp8, low_precision_types, numpy_dtype_function

__all__ = ["entries", "uses_low_precision"]

_INTERPRETER = "triton.runtime.interpreter"


def _refuse(what, hint):
    from ..errors import UncompilableError

    raise UncompilableError(f"kwshim: compiled Triton cannot lower {what} for an NVIDIA GPU (sm_90: measured on "
                            f"the H200, Triton 3.6); {hint}")


def _name(tt):
    return getattr(tt, "name", str(tt))


def _check_conversion(source, target, toward_zero):
    """Refuse a conversion that compiled Triton fails to lower for sm_90."""
    fp8 = (source.is_fp8(), target.is_fp8())
    if all(fp8) and source != target:
        _refuse(f"a conversion from {_name(source)} to {_name(target)}", "convert through fp16 or fp32")
    if (fp8[0] and target.is_fp64()) or (fp8[1] and source.is_fp64()):
        _refuse(f"a conversion from {_name(source)} to {_name(target)}", "convert through fp32")
    if toward_zero and (source.is_fp64() or (fp8[1] and not (source.is_fp32() and target.is_fp8e5()))):
        _refuse(f"rounding toward zero from {_name(source)} to {_name(target)}",
                "only the default rounding (rtne) is lowered for it")


@functools.lru_cache(maxsize=None)
def gpu_builder_class(base):
    """A subclass of the interpreter's builder class ``base`` that computes as the GPU does."""
    import triton.language as tl

    interpreter = sys.modules[_INTERPRETER]
    TensorHandle = interpreter.TensorHandle
    rtz = interpreter._ir.ROUNDING_MODE.RTZ
    fadd = interpreter._ir.ATOMIC_OP.FADD
    low_precision = set(low_precision_types(required=False))

    def np_dtype(tt):
        return interpreter._get_np_dtype(tt)

    def convert(self, src, dst_type, toward_zero=False):
        source, target = src.dtype.scalar, dst_type.scalar
        if (source in low_precision or source.is_floating()) and (target in low_precision or target.is_floating()) \
                and not (source.is_fp8e4b15() or target.is_fp8e4b15()):
            _check_conversion(source, target, toward_zero)
            data = conversions.float_to_float(src.data, np_dtype(target), toward_zero,
                                              rebias_fp8e5=source.is_fp8e5() and target.is_bf16())
        elif source.is_floating() and target.is_int() and not target.is_bool():
            data = conversions.float_to_int(src.data, np_dtype(target))
        elif source.is_int() and target.is_floating() and not target.is_fp8e4b15():
            data = conversions.int_to_float(src.data, np_dtype(target))
        else:
            return None
        return TensorHandle(data, target)

    class GPUBuilder(base):
        """The interpreter's builder, computing as compiled Triton does on an NVIDIA GPU."""

        def cast_impl(self, src, dst_type):
            converted = convert(self, src, dst_type)  # a TensorHandle's truth is its data's: test for None
            return base.cast_impl(self, src, dst_type) if converted is None else converted

        def create_fp_to_fp(self, src, dst_type, rounding_mode):
            converted = convert(self, src, dst_type, rounding_mode == rtz)
            return base.create_fp_to_fp(self, src, dst_type, rounding_mode) if converted is None else converted

        def binary_op(self, lhs, rhs, op):
            if lhs.dtype.scalar.is_fp8() or rhs.dtype.scalar.is_fp8():
                _refuse(f"{getattr(op, '__name__', 'arithmetic')} on {_name(lhs.dtype.scalar)} values",
                        "convert them to fp16, bf16 or fp32 first (fp8 is a storage format there)")
            return base.binary_op(self, lhs, rhs, op)

        def create_fneg(self, input):
            if input.dtype.scalar.is_fp8():
                _refuse(f"negation of {_name(input.dtype.scalar)} values", "convert them to fp16 or fp32 first")
            return TensorHandle(np.subtract(np.zeros_like(input.data), input.data), input.dtype.scalar)

        def create_idiv(self, lhs, rhs):
            with np.errstate(divide="ignore", invalid="ignore"):
                return _all_ones_where_zero(base.create_idiv(self, lhs, rhs), lhs, rhs)

        def create_srem(self, lhs, rhs):
            with np.errstate(divide="ignore", invalid="ignore"):
                return _all_ones_where_zero(base.create_srem(self, lhs, rhs), lhs, rhs)

        def create_urem(self, lhs, rhs):
            with np.errstate(divide="ignore", invalid="ignore"):
                return _all_ones_where_zero(base.create_urem(self, lhs, rhs), lhs, rhs)

        def create_dot(self, a, b, d, *args, **kwargs):
            if a.data.dtype in _LOW or b.data.dtype in _LOW:
                wide = np.matmul(a.data.astype(np.float32), b.data.astype(np.float32))
                return TensorHandle((wide + d.data).astype(d.data.dtype), d.dtype.scalar)
            return base.create_dot(self, a, b, d, *args, **kwargs)

        def create_masked_load(self, ptrs, mask, other, *args, **kwargs):
            element = ptrs.get_element_ty()
            numpy_type = np_dtype(element)
            if numpy_type not in _LOW:
                return base.create_masked_load(self, ptrs, mask, other, *args, **kwargs)
            bits = _bits_type(numpy_type)  # the native load takes NumPy's own types
            fill = np.zeros(ptrs.data.shape, dtype=bits) if other is None else \
                np.broadcast_to(other.data.astype(numpy_type).view(bits), ptrs.data.shape)
            loaded = interpreter._interpreter.load(ptrs.data, mask.data, np.ascontiguousarray(fill), bits)
            return TensorHandle(loaded.view(numpy_type), element)

        def create_masked_store(self, ptrs, value, mask, *args, **kwargs):
            if value.data.dtype in _LOW:
                value = TensorHandle(np.ascontiguousarray(value.data).view(_bits_type(value.data.dtype)), value.dtype)
            return base.create_masked_store(self, ptrs, value, mask, *args, **kwargs)

        def create_maxnumf(self, lhs, rhs):  # tl.maximum (propagate_nan NONE): the non-NaN operand
            return self.binary_op(lhs, rhs, np.fmax)

        def create_minnumf(self, lhs, rhs):
            return self.binary_op(lhs, rhs, np.fmin)

        def create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope):
            if val.data.dtype not in _LOW and not (rmwOp == fadd and val.data.dtype == np.float16):
                return base.create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope)
            if rmwOp != fadd or is_fp8(val.data.dtype):
                _refuse(f"this atomic operation on {_name(val.dtype.scalar)} values",
                        "only bf16 and fp16 atomic_add are")
            return TensorHandle(_atomic_add(interpreter._interpreter, ptr.data, val.data, mask.data),
                                val.dtype.scalar)

    def _all_ones_where_zero(result, dividend, divisor):
        """All ones where ``divisor`` is 0. A 64-bit division whose operands both fit in 32 bits
        takes the GPU's 32-bit path: all ones of 32 bits (0x00000000ffffffff)."""
        zero = np.broadcast_to(divisor.data == 0, result.data.shape)
        if not zero.any():
            return result
        data = np.array(result.data, copy=True)
        ones = np.full(data.shape, -1).astype(data.dtype)
        if data.dtype.itemsize == 8:
            narrow = np.broadcast_to((dividend.data.view(np.uint64) >> np.uint64(32)) == 0, data.shape)
            ones[narrow] = np.array(0xFFFFFFFF).astype(data.dtype)
        data[zero] = ones[zero]
        return TensorHandle(data, result.dtype)

    if not hasattr(base, "get_bf16"):  # a bf16 constant, rounded to bf16 first as compiled rounds it
        def get_bf16(self, value):
            return self.create_fp_trunc(self.get_fp32(value), tl.bfloat16)

        GPUBuilder.get_bf16 = get_bf16
    _LOW = set(low_precision_types(required=False).values())
    GPUBuilder.__name__ = GPUBuilder.__qualname__ = base.__name__
    GPUBuilder.__module__ = __name__
    return GPUBuilder


def _bits_type(numpy_type):
    return np.dtype(f"uint{numpy_type.itemsize * 8}")


def _atomic_add(native, pointers, values, mask):
    """``*p += v`` element by element, in order, returning the values before each add (what the
    GPU's ``atom.add.bf16`` returns); the interpreter's native atomics have no bf16."""
    pointers = pointers.reshape(-1)
    values = np.broadcast_to(values, pointers.shape).reshape(-1)
    mask = np.broadcast_to(mask, pointers.shape).reshape(-1)
    bits = _bits_type(values.dtype)  # the native load and store take NumPy's own types
    before = np.zeros(pointers.shape, dtype=values.dtype)
    one, nothing = np.ones(1, dtype=bool), np.zeros(1, dtype=bits)
    for index in np.flatnonzero(mask):
        address = pointers[index:index + 1]
        current = native.load(address, one, nothing, bits).view(values.dtype)
        before[index] = current[0]
        native.store(address, (current + values[index:index + 1]).astype(values.dtype).view(bits), one)
    return before


def _refuse_fp8_reductions(apply):
    """The interpreter's reduce/scan ``apply``, refusing fp8 inputs as compiled Triton does."""

    def checked(self, input):
        for value in input if isinstance(input, (tuple, list)) else (input,):
            dtype = getattr(getattr(value, "dtype", None), "scalar", None)
            if dtype is not None and dtype.is_fp8():
                _refuse(f"a reduction or scan of {_name(dtype)} values", "convert them to fp16 or fp32 first")
        return apply(self, input)

    return checked


@functools.lru_cache(maxsize=None)
def entries():
    """``(owner, name, value)`` to set while the GPU's arithmetic is on: the builder object's class,
    the interpreter's dtype table, and its reductions' ``apply``."""
    interpreter = sys.modules[_INTERPRETER]
    builder = getattr(interpreter, "interpreter_builder", None)
    if builder is None:  # 2.x: no module-wide builder (and no bf16 support to fix)
        return ()
    found = [(builder, "__class__", gpu_builder_class(type(builder))),
             (vars(interpreter), "_get_np_dtype", numpy_dtype_function(interpreter._get_np_dtype))]
    interface = next((value for name, value in vars(interpreter).items()
                      if name.startswith("ReduceScanOp") and isinstance(value, type)), None)
    if interface is not None and "apply" in vars(interface):
        found.append((interface, "apply", _refuse_fp8_reductions(vars(interface)["apply"])))
    return tuple(found)


def uses_low_precision() -> bool:
    """Whether ``ml_dtypes`` is importable (the formats can be held as floats)."""
    try:
        low_precision_types()
    except ImportError:
        return False
    return True
