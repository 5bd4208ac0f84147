"""The interpreter's builder as compiled Triton computes on an NVIDIA GPU (measured on the H200).

``gpu_builder_class`` derives, once per release, a subclass of the interpreter's own builder class
that differs where the GPU does:

- casts (``cast_impl``, ``create_fp_to_fp``) follow ``conversions``: saturating float -> int,
  ``satfinite`` fp8, rounding toward zero where asked;
- ``-x`` of a float is ``0 - x`` (``-(+0.0)`` is +0.0); integer ``x // 0`` and ``x % 0`` are all ones;
- a mask's ``&``, ``|`` and ``^`` is one NumPy operation on bools (3.9's interpreter makes four);
- bf16 loads and stores move bits (the native ones refuse ``ml_dtypes`` arrays); bf16 and fp8
  ``tl.dot`` inputs are widened exactly to fp32; bf16 and fp16 ``atomic_add`` add;
- what compiled Triton cannot lower for sm_90 raises ``UncompilableError`` (fp8 arithmetic,
  fp8 <-> fp8 and fp8 <-> fp64 conversions, most ``rtz`` conversions).

``entries`` puts it in place by giving the interpreter's one builder object this class, with bf16
and fp8 held as ``ml_dtypes`` floats (``formats``) and reductions refusing fp8: set and undone
through ``Patch``, for a launch or while the switch is on.
"""

import functools
import sys

import numpy as np

from .. import compat
from ..arithmetic import conversions, inline_ptx, lane_order, special_registers
from ..arithmetic.fma import fma
from ..arithmetic.formats import ML_DTYPES, bits_type, is_fp8, is_ml_dtype, numpy_dtype_function
from ..arithmetic.numpy_quiet import quiet
from . import bounds
from .refusals import _INTERPRETER, refuse_lowering as _refuse, type_name as _name

__all__ = ["entries"]


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


def _selects_all(condition, chosen, other):
    """Whether ``np.where(condition, chosen, other)`` is ``chosen`` itself, bit for bit: every
    condition true (read where it is not a broadcast copy: a mask made from ``tl.arange`` is one row),
    ``chosen`` of the result's shape and type. A kernel's ``tl.where(mask, x, 0.0)`` over a whole block
    then costs no pass over it."""
    if chosen.dtype != other.dtype or condition.dtype != np.bool_ or chosen.size < 2 ** 12 or \
            np.broadcast_shapes(condition.shape, chosen.shape, other.shape) != chosen.shape:
        return False
    distinct = condition[tuple(0 if stride == 0 else slice(None) for stride in condition.strides)]
    return bool(distinct.all())


def predicate(mask):
    """``mask`` (a load's, store's or atomic's) with bool data: its data's truth, as the GPU reads an
    i1. The interpreter types a comparison's handle by its operands (``row < n`` is an int32 handle
    of bools), so a splat of one beside a block (``(row < n) & (cols == 0)``) holds int32 data:
    the native store of 3.9 refuses it ("mask has unsupported dtype"), and a batch would index by it."""
    data = getattr(mask, "data", None)
    if not isinstance(data, np.ndarray) or data.dtype == np.bool_:  # (a block pointer's is an array: bools)
        return mask
    interpreter = sys.modules[_INTERPRETER]
    return interpreter.TensorHandle(data != 0, interpreter.tl.int1)


@functools.lru_cache(maxsize=None)
def gpu_builder_class(base):
    """A subclass of the interpreter's builder class ``base`` that computes as the GPU does."""
    import triton.language as tl

    interpreter = sys.modules[_INTERPRETER]
    TensorHandle = interpreter.TensorHandle
    rtz = interpreter._ir.ROUNDING_MODE.RTZ
    fadd = interpreter._ir.ATOMIC_OP.FADD
    xchg = interpreter._ir.ATOMIC_OP.XCHG

    def np_dtype(tt):
        return interpreter._get_np_dtype(tt)

    def load_through_bits(ptrs, mask, other, element):
        numpy_type = np_dtype(element)
        bits = bits_type(numpy_type)  # the native load takes NumPy's own types
        fill = np.zeros(ptrs.data.shape, dtype=bits) if other is None else \
            np.broadcast_to(other.data.astype(numpy_type).view(bits), ptrs.data.shape)
        loaded = interpreter._interpreter.load(ptrs.data, mask.data, np.ascontiguousarray(fill), bits)
        return TensorHandle(loaded.view(numpy_type), element)

    def as_bits(data):
        """bf16/fp8 data as the unsigned integers of its bits: what the native store takes."""
        return np.ascontiguousarray(data).view(bits_type(data.dtype))

    def convert(self, src, dst_type, toward_zero=False):
        source, target = src.dtype.scalar, dst_type.scalar
        if source.is_floating() and target.is_floating() and not (source.is_fp8e4b15() or target.is_fp8e4b15()):
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

        kwshim_gpu_arithmetic = False  #: ``numerics="gpu"``'s subclass says True

        def create_extern_elementwise(self, lib_name, lib_path, symbol, arg_list, ret_type, is_pure):
            """A libdevice call, after Triton's own front end has typed, promoted and broadcast it."""
            from ..arithmetic.libdevice import extern_elementwise

            return extern_elementwise(symbol, arg_list, ret_type, self.kwshim_gpu_arithmetic)

        def create_int_to_ptr(self, src, dst_type):  # a table of pointers: any live tensor's memory (``bounds``)
            bounds.made_from_integers()
            return base.create_int_to_ptr(self, src, dst_type)

        def create_bitcast(self, src, dst_type):
            if getattr(dst_type, "scalar", dst_type).is_ptr():
                bounds.made_from_integers()
            return base.create_bitcast(self, src, dst_type)

        def create_int_cast(self, src, dst_type, is_signed):  # integers wrap as on the GPU: Triton's own
            return base.cast_impl(self, src, dst_type)

        def cast_impl(self, src, dst_type):
            converted = convert(self, src, dst_type)  # a TensorHandle's truth is its data's: test for None
            converted = base.cast_impl(self, src, dst_type) if converted is None else converted
            return lane_order.keeps_layout(lane_order.loaded_as(converted, src), src)

        def create_fp_to_fp(self, src, dst_type, rounding_mode):
            converted = convert(self, src, dst_type, rounding_mode == rtz)
            converted = base.create_fp_to_fp(self, src, dst_type, rounding_mode) if converted is None else converted
            return lane_order.keeps_layout(lane_order.loaded_as(converted, src), src)

        def create_fneg(self, input):
            if input.dtype.scalar.is_fp8():
                _refuse(f"negation of {_name(input.dtype.scalar)} values", "convert them to fp16 or fp32 first")
            # the H200 computes -x as 0 - x (parity: -(-0.0) is +0.0); a scalar zero, not a block of them
            negated = TensorHandle(np.subtract(input.data.dtype.type(0), input.data), input.dtype.scalar)
            return lane_order.keeps_layout(negated, input)

        def create_select(self, condition, lhs, rhs):
            if _selects_all(condition.data, lhs.data, rhs.data):  # tl.where(mask, x, 0) of a whole block
                return lane_order.keeps_layout(TensorHandle(lhs.data, rhs.dtype.scalar), lhs, rhs)
            return lane_order.keeps_layout(base.create_select(self, condition, lhs, rhs), lhs, rhs)

        def create_dot(self, a, b, d, *args, **kwargs):
            if is_ml_dtype(a.data.dtype) or is_ml_dtype(b.data.dtype):
                wide = np.matmul(a.data.astype(np.float32), b.data.astype(np.float32))
                return lane_order.from_tensor_cores(TensorHandle((wide + d.data).astype(d.data.dtype), d.dtype.scalar),
                                                    a, False)
            return lane_order.from_tensor_cores(base.create_dot(self, a, b, d, *args, **kwargs), a, True)

        def create_masked_load(self, ptrs, mask, other, *args, **kwargs):
            element, mask = ptrs.get_element_ty(), predicate(mask)
            if element.name not in ML_DTYPES:  # by name: every load pays for this test
                return base.create_masked_load(self, ptrs, mask, other, *args, **kwargs)
            return load_through_bits(ptrs, mask, other, element)

        def create_masked_store(self, ptrs, value, mask, *args, **kwargs):
            mask = predicate(mask)
            if value.dtype.name in ML_DTYPES:
                value = TensorHandle(as_bits(value.data), value.dtype)
            return base.create_masked_store(self, ptrs, value, mask, *args, **kwargs)

        def create_fma(self, x, y, z):  # tl.fma rounds once (the interpreter's rounds twice on 3.0-3.8)
            return TensorHandle(fma(x.data, y.data, z.data).astype(z.data.dtype, copy=False), z.dtype.scalar)

        def create_maxnumf(self, lhs, rhs):  # tl.maximum (propagate_nan NONE): the non-NaN operand
            return self.binary_op(lhs, rhs, np.fmax)

        def create_minnumf(self, lhs, rhs):
            return self.binary_op(lhs, rhs, np.fmin)

        def create_inline_asm(self, inlineAsm, constraints, values, type, isPure, pack):
            read = special_registers.read(self, inlineAsm, values, type)  # %globaltimer, %smid
            if read is None:  # element-wise fp32 arithmetic (flash-linear-attention's softplus)
                read = inline_ptx.results(inlineAsm, constraints, values, type, pack)
            return base.create_inline_asm(self, inlineAsm, constraints, values, type, isPure, pack) \
                if read is None else read

        def create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope):
            ptr, val, mask = (_contiguous(handle) for handle in (ptr, val, predicate(mask)))
            if rmwOp == xchg and val.data.dtype.kind == "f":  # fp32, fp64: the native exchange takes
                integers = np.dtype(f"int{val.data.dtype.itemsize * 8}")  # integers alone; a GPU moves bits
                old = base.create_atomic_rmw(self, rmwOp, ptr, TensorHandle(val.data.view(integers), val.dtype.scalar),
                                             mask, sem, scope)
                return TensorHandle(old.data.view(val.data.dtype), val.dtype.scalar)
            if not (is_ml_dtype(val.data.dtype) or (rmwOp == fadd and val.data.dtype == np.float16)):
                return base.create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope)
            if rmwOp != fadd or is_fp8(val.data.dtype):
                _refuse(f"this atomic operation on {_name(val.dtype.scalar)} values",
                        "only bf16 and fp16 atomic_add are")
            return TensorHandle(_atomic_add(interpreter._interpreter, ptr.data, val.data, mask.data),
                                val.dtype.scalar)

        def create_atomic_cas(self, ptr, cmp, val, *rest):
            return base.create_atomic_cas(self, _contiguous(ptr), _contiguous(cmp), _contiguous(val), *rest)

    def _contiguous(handle):
        """``handle`` with C-contiguous data: the native atomics (3.0-3.5) read their operands' memory
        as if it were, so a strided row (a reduction's, of a block's columns) gave them other elements."""
        data = handle.data
        if not isinstance(data, np.ndarray) or data.flags.c_contiguous:
            return handle
        return TensorHandle(np.ascontiguousarray(data), handle.dtype)

    def all_ones_by_zero(operation):
        """``operation`` (integer ``//`` or ``%``) giving all ones where the divisor is 0. A 64-bit
        division whose operands both fit in 32 bits takes the GPU's 32-bit path: 0x00000000ffffffff."""

        def divide(self, lhs, rhs):
            with quiet(divide="ignore", invalid="ignore"):
                result = operation(self, lhs, rhs)
            zero = np.broadcast_to(rhs.data == 0, result.data.shape)
            if not zero.any():
                return result
            data = np.array(result.data, copy=True)
            ones = np.full(data.shape, -1).astype(data.dtype)
            if data.dtype.itemsize == 8:
                narrow = np.broadcast_to((lhs.data.view(np.uint64) >> np.uint64(32)) == 0, data.shape)
                ones[narrow] = np.array(0xFFFFFFFF).astype(data.dtype)
            data[zero] = ones[zero]
            return TensorHandle(data, result.dtype)

        return divide

    if compat.native_masked_load(base):  # our frame in place of the interpreter's
        def direct_load(self, ptrs, mask, other, *args, **kwargs):
            element, mask = ptrs.get_element_ty(), predicate(mask)
            if element.name in ML_DTYPES:
                return load_through_bits(ptrs, mask, other, element)
            numpy_type = interpreter._get_np_dtype(element)
            fill = np.zeros_like(ptrs.data, dtype=numpy_type) if other is None else other.data
            return TensorHandle(interpreter._interpreter.load(ptrs.data, mask.data, fill, numpy_type), element)

        GPUBuilder.create_masked_load = direct_load
    if compat.native_masked_store(base):
        def direct_store(self, ptrs, value, mask, *args, **kwargs):
            data, mask = value.data, predicate(mask)
            if value.dtype.name in ML_DTYPES:
                data = as_bits(data)
            return interpreter._interpreter.store(ptrs.data, data, mask.data)

        GPUBuilder.create_masked_store = direct_store
    for name in ("create_idiv", "create_srem", "create_urem"):  # create_sdiv/udiv call create_idiv
        setattr(GPUBuilder, name, all_ones_by_zero(getattr(base, name)))
    for name, ufunc in _ONE_BIT.items():
        setattr(GPUBuilder, name, _one_bit(name, getattr(base, name), ufunc))
    for name in _FLOAT_OPERATIONS:  # integer operations (index arithmetic) pay for no check
        operation = getattr(GPUBuilder, name, None)
        if operation is not None:
            setattr(GPUBuilder, name, _refusing_fp8(name, operation, compat.binary_ufunc(operation)))
    if not hasattr(base, "get_bf16"):  # a bf16 constant, rounded to bf16 first as compiled rounds it
        def get_bf16(self, value):
            return self.create_fp_trunc(self.get_fp32(value), tl.bfloat16)

        GPUBuilder.get_bf16 = get_bf16
    GPUBuilder.__name__ = GPUBuilder.__qualname__ = base.__name__
    GPUBuilder.__module__ = __name__
    return GPUBuilder


#: int1 operations (masks) as the GPU computes them, in one bit: ``&``, ``|`` and ``^`` are NumPy's
#: bitwise ufuncs on bools already; ``+`` and ``-`` wrap (1 + 1 is 0, as ``^``) and ``*`` is ``&``
#: (measured on an sm_90 GPU, ``parity/int1_arithmetic_h100.json``). Before 3.9 the interpreter's
#: ``+`` saturates (NumPy's bool add) and its ``-`` raises (NumPy has no bool subtract).
_ONE_BIT = {"create_and": np.bitwise_and, "create_or": np.bitwise_or, "create_xor": np.bitwise_xor,
            "create_add": np.bitwise_xor, "create_sub": np.bitwise_xor, "create_mul": np.bitwise_and}


def _one_bit(name, operation, ufunc):
    """``operation`` (the interpreter's), computed by ``ufunc`` where both operands are int1: before
    3.9 the interpreter's ``+`` and ``-`` are not the GPU's, and 3.9's widens bools to int8 and back
    for every binary operation, four passes over a mask where one gives the same bits (64M
    elements: 69 ms, against 19 ms)."""

    def bitwise(self, lhs, rhs):
        if lhs.data.dtype == np.bool_ and rhs.data.dtype == np.bool_:
            return sys.modules[_INTERPRETER].TensorHandle(ufunc(lhs.data, rhs.data), lhs.dtype.scalar)
        return operation(self, lhs, rhs)

    bitwise.__name__ = name
    return bitwise


def _atomic_add(native, pointers, values, mask):
    """``*p += v`` element by element, in order, returning the values before each add (what the
    GPU's ``atom.add.bf16`` returns), in the pointers' shape; the interpreter's native atomics have
    no bf16. The values and mask broadcast to the pointers' block before it is flattened, as the GPU's."""
    shape = pointers.shape
    values = np.broadcast_to(values, shape).reshape(-1)
    mask = np.broadcast_to(mask, shape).reshape(-1)
    pointers = pointers.reshape(-1)
    bits = bits_type(values.dtype)  # the native load and store take NumPy's own types
    before = np.zeros(pointers.shape, dtype=values.dtype)
    one, nothing = np.ones(1, dtype=bool), np.zeros(1, dtype=bits)
    for index in np.flatnonzero(mask):
        address = pointers[index:index + 1]
        current = native.load(address, one, nothing, bits).view(values.dtype)
        before[index] = current[0]
        native.store(address, (current + values[index:index + 1]).astype(values.dtype).view(bits), one)
    return before.reshape(shape)


#: The builder's float operations: on fp8 operands compiled Triton cannot lower them for sm_90.
_FLOAT_OPERATIONS = (
    "create_fadd", "create_fsub", "create_fmul", "create_fdiv", "create_frem", "create_precise_divf",
    "create_minimumf", "create_maximumf", "create_minnumf", "create_maxnumf", "create_fma",
    *(f"create_fcmp{p}" for p in ("OLT", "OGT", "OLE", "OGE", "OEQ", "ONE", "ULT", "UGT", "ULE", "UGE", "UEQ", "UNE")))


_WORDS = {"fadd": "add", "fsub": "sub", "fmul": "mul", "fdiv": "div", "frem": "mod", "precise_divf": "div",
          "minimumf": "minimum", "maximumf": "maximum", "minnumf": "minimum", "maxnumf": "maximum", "fma": "fma"}


def _refusing_fp8(name, operation, ufunc=None):
    """``operation`` (a builder method), refusing fp8 operands as compiled Triton does. Where it
    is ``self.binary_op(lhs, rhs, ufunc)`` (``compat.binary_ufunc``), the check calls that itself: one
    frame in place of the interpreter's, so fp32 arithmetic pays for no extra call."""

    operation_name = name[len("create_"):]
    word = _WORDS.get(operation_name, "a comparison" if operation_name.startswith("fcmp") else operation_name)

    def refuse(lhs):
        _refuse(f"{word} on {_name(lhs.dtype.scalar)} values",
                "convert them to fp16, bf16 or fp32 first (fp8 is a storage format there)")

    def calling_binary_op(self, lhs, rhs):
        if lhs.data.dtype.itemsize == 1:  # a float operation on 8-bit data: fp8
            refuse(lhs)
        result = self.binary_op(lhs, rhs, ufunc)
        if hasattr(lhs, "kwshim_tensor_cores") or hasattr(rhs, "kwshim_tensor_cores"):
            lane_order.keeps_layout(result, lhs, rhs)
        return result

    def calling_operation(self, lhs, *rest):
        if lhs.data.dtype.itemsize == 1:
            refuse(lhs)
        return lane_order.keeps_layout(operation(self, lhs, *rest), lhs, *rest)

    checked = calling_operation if ufunc is None else calling_binary_op

    checked.__name__ = name
    return checked


@functools.lru_cache(maxsize=None)
def _originals():
    """The interpreter's own builder object and class, dtype table and reduce and scan classes, read
    once, before kwshim sets anything (``entries`` of one numerics is made while another's are in place)."""
    interpreter = sys.modules[_INTERPRETER]
    builder = getattr(interpreter, "interpreter_builder", None)
    if builder is None:  # 2.x: no module-wide builder (and no bf16 support to fix)
        return None, None, None, {}
    namespace = vars(interpreter)
    operations = {name: namespace[name] for name in ("ReduceOps", "ScanOps")
                  if isinstance(namespace.get(name), type) and hasattr(namespace[name], "apply")}
    return builder, type(builder), interpreter._get_np_dtype, operations


@functools.lru_cache(maxsize=None)
def entries(numerics: str = "gpu"):
    """``(owner, name, value)`` to set while kwshim's arithmetic is on: the builder object's class,
    the interpreter's dtype table, and its reduce and scan classes. ``numerics`` (``settings.NUMERICS``):
    ``"gpu"`` adds ``gpu_arithmetic``'s fused multiply-adds and tensor-core dots."""
    builder, builder_type, _, _ = _originals()
    if builder is None:
        return ()
    from ..arithmetic import gpu_arithmetic

    builder_class = gpu_builder_class(builder_type)
    if numerics == "gpu":
        builder_class = gpu_arithmetic.arithmetic_class(builder_class)
    return ((builder, "__class__", builder_class),) + _format_entries()


@functools.lru_cache(maxsize=None)
def _format_entries():
    """The entries every numerics shares: the dtype table with bf16 and fp8 as ``ml_dtypes`` types,
    the reduce and scan classes refusing fp8 and adding int1 in int1 (module globals: set as dict
    entries, no class is modified), and the NVIDIA backend's smallest ``tl.dot`` for sm_90 (K of 16
    for 16-bit inputs, where the interpreter's builder takes any: the front end refuses a smaller
    one with compiled Triton's message)."""
    from .gpu_reductions import reduction_class  # it reads this module's refusals

    builder, _, np_dtype, operations = _originals()
    namespace = vars(sys.modules[_INTERPRETER])
    entries = [(namespace, "_get_np_dtype", numpy_dtype_function(np_dtype)),
               *((namespace, name, reduction_class(original)) for name, original in operations.items())]
    smallest_dot = compat.nvidia_codegen_functions().get("min_dot_size")
    if smallest_dot is not None and isinstance(getattr(builder, "codegen_fns", None), dict):
        entries.append((builder.codegen_fns, "min_dot_size", smallest_dot))
    return tuple(entries)
