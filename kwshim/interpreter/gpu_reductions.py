"""The interpreter's reduce and scan classes as compiled Triton reduces on an NVIDIA GPU.

``reduction_class`` derives a subclass of the interpreter's ``ReduceOps`` or ``ScanOps`` (once per
release, by ``gpu_builder.entries``): fp8 refused as compiled Triton refuses it, an int1 sum added in
int1, and float sums, maxima and minima with their indices, and cumsums combined in the GPU's lane
order (``lane_order``, measured on the H200).
"""

import math
import sys

import numpy as np

from .. import launch_state
from ..arithmetic import deferred_arithmetic, dot_chains, gpu_arithmetic, lane_order
from ..arithmetic.formats import canonical_nans
from .refusals import _INTERPRETER, refuse_lowering as _refuse, type_name as _name

__all__ = ["reduction_class"]


#: The element types whose reductions and scans follow the GPU's lane order (measured on the H200).
_LANE_ORDERED = ("fp16", "bf16", "fp32")


def reduction_class(cls):
    """A subclass of the interpreter's reduce or scan class computing as compiled Triton does: fp8
    inputs refused, an int1 sum or cumsum added in int1, where one plus one wraps to zero (the
    parity of the count: ``tl.sum(x, dtype=tl.int1)``; NumPy's bool sum is a logical or), and the
    float sums, maxima and minima (with their indices) and cumsums of 1-D and 2-D blocks combined in
    the GPU's lane order (``lane_order``)."""

    def apply(self, input):
        for value in input if isinstance(input, (tuple, list)) else (input,):
            dtype = getattr(getattr(value, "dtype", None), "scalar", None)
            if dtype is not None and dtype.is_fp8():
                _refuse(f"a reduction or scan of {_name(dtype)} values", "convert them to fp16 or fp32 first")
        return cls.apply(self, input)

    interpreter = sys.modules[_INTERPRETER]
    tl, TensorHandle = interpreter.tl, interpreter.TensorHandle

    def typed(tensor, data, scalar):  # ``tensor``'s shape, of another element type
        kind = tl.block_type(scalar, list(tensor.type.shape)) if tensor.type.is_block() else scalar
        return tl.core.tensor(TensorHandle(data.astype(interpreter._get_np_dtype(scalar)), scalar), kind)

    def in_int1(operation):
        def added(self, input):
            if input.dtype.scalar.name != "int1":
                return operation(self, input)
            result = operation(self, typed(input, input.handle.data, tl.int32))  # the counts
            results = result if isinstance(result, list) else [result]
            wrapped = [typed(r, r.handle.data % 2, tl.int1) for r in results]
            return wrapped if isinstance(result, list) else wrapped[0]

        return added

    def in_lanes(self, input, scan=False):
        """``(arrange, layout, finish, order)`` for a float block of 1 or 2 axes: ``arrange(array)``
        an array of the block's shape (the block's data, or another) with the reduced axis last,
        ``layout`` that axis' layout and ``finish(result)`` a result with its axes back; None for
        any other block. A reduction of a ``tl.dot`` result (not a scan) takes the tensor cores'
        layout: ``data``'s last axis is in ``order`` (``lane_order.tensor_core_order``), else None."""
        shape, axis = deferred_arithmetic.shape(input.handle), self.axis
        batched = int(getattr(self, "kwshim_program_axis", False))  # batched: programs first
        whole = axis is None  # a whole block: one row, in row-major order (Triton reshapes it)
        block = (math.prod(shape[batched:]),) if whole else shape[batched:]
        if input.dtype.scalar.name not in _LANE_ORDERED or not 1 <= len(block) <= 2:
            return None
        warps = 4 if launch_state.launch_warps is None else launch_state.launch_warps
        itemsize = getattr(input.handle, "kwshim_loaded_itemsize", None) or \
            deferred_arithmetic.element_type(input.handle).itemsize
        layout = lane_order.blocked_layout(tuple(block), itemsize, warps)[0 if whole else axis - batched]
        order, cores = None, getattr(input.handle, "kwshim_tensor_cores", None)
        if cores is not None and not (whole or scan) and tuple(block) == tuple(cores[0]):
            chained = cores[1] if dot_chains.launch_chained else None  # the dot's K
            order, layout = lane_order.tensor_core_order(tuple(block), warps, axis - batched, chained)

        last = whole or axis in (-1, len(shape) - 1)  # already the last axis: no ``np.moveaxis`` (~5 µs)

        def arrange(array):
            if array.shape != shape:
                array = np.broadcast_to(array, shape)
            array = array.reshape(shape[:batched] + (-1,)) if whole else array if last else np.moveaxis(array, axis, -1)
            return array if order is None else array[..., order]

        def finish(result, scan=False):
            if scan:
                return result.reshape(shape) if whole else np.moveaxis(result, -1, axis)
            if getattr(self, "keep_dims", False):
                return result.reshape((1,) * len(shape)) if whole else np.expand_dims(result, axis)
            return result

        return arrange, layout, finish, order

    def summed(operation):
        def added(self, input):
            lanes = in_lanes(self, input)
            if lanes is None:
                return operation(self, input)
            arrange, layout, finish, order = lanes
            factors = getattr(input.handle, "kwshim_factors", None) if gpu_arithmetic.fusion_enabled() else None
            product = None if factors is None else \
                (arrange(factors[0]), arrange(factors[1]))  # a product just computed: LLVM contracts its adds
            total = None if product is None or order is not None else lane_order.sum_of_products(product, layout)
            if total is None:  # not from the factors alone: the product's data too
                data = arrange(input.handle.data)
                (total,) = lane_order.reduce_in_lanes((data,), layout, lane_order.added(data.dtype), product)
            return self.to_tensor(finish(canonical_nans(total)), input.dtype)  # one NaN, whichever engine ran

        return added

    def extremes(operation):
        def reduced(self, input, val_reduce_op, idx_reduce_op=None):
            values = input[0] if isinstance(input, tuple) else input
            lanes = in_lanes(self, values)
            if lanes is None:
                return operation(self, input, val_reduce_op, idx_reduce_op)
            arrange, layout, finish, order = lanes
            data = arrange(values.handle.data)
            kind = "max" if val_reduce_op in (np.max, np.nanmax) or idx_reduce_op in (np.argmax, np.nanargmax) \
                else "min"
            if idx_reduce_op is None:
                value = (np.max if kind == "max" else np.min)(data, axis=-1)  # any order, but NaN and zeros
                if np.isnan(value).any() or not value.all():
                    (value,) = lane_order.reduce_in_lanes((data,), layout, lane_order.extremum(kind))
                return self.to_tensor(finish(value), values.dtype)
            fast = any(self.combine_fn is getattr(tl.standard, f"_arg{which}_combine_tie_break_fast", None)
                       for which in ("max", "min"))
            if not fast and not np.isnan(data).any():  # without NaN any order keeps the first extreme
                plain = data if order is None else data[..., np.argsort(order)]
                found = (np.argmax if kind == "max" else np.argmin)(plain, axis=-1).astype(np.int32)
                value = np.take_along_axis(plain, found[..., None], axis=-1)[..., 0]
            else:
                index = np.arange(data.shape[-1], dtype=np.int32) if order is None else order.astype(np.int32)
                index = np.broadcast_to(index, data.shape)
                value, found = lane_order.reduce_in_lanes((data, index), layout, lane_order.arg_combine(kind, not fast))
            return self.to_tensor(finish(value), values.dtype), self.to_tensor(finish(found), tl.int32)

        return reduced

    def scanned(operation):
        def added(self, input):
            lanes = in_lanes(self, input, scan=True)
            if lanes is None:
                return operation(self, input)
            arrange, layout, finish, _ = lanes
            data = arrange(input.handle.data)
            result = canonical_nans(lane_order.scan_in_lanes(data, layout, lane_order.added(data.dtype)))
            return [self.to_tensor(finish(result, scan=True), input.dtype)]

        return added

    namespace = {"apply": apply, "__module__": __name__}
    for name in ("sum", "cumsum"):
        if callable(getattr(cls, name, None)):
            namespace[name] = in_int1(getattr(cls, name))
    if callable(getattr(cls, "sum", None)):
        namespace["sum"] = summed(namespace["sum"])
    if callable(getattr(cls, "min_max", None)):
        namespace["min_max"] = extremes(cls.min_max)
    if callable(getattr(cls, "cumsum", None)):
        namespace["cumsum"] = scanned(namespace["cumsum"])
    return type(cls.__name__, (cls,), namespace)
