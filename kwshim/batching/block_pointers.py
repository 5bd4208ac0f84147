"""Block pointers (``tl.make_block_ptr``, ``tl.advance``) in a batch of programs (``program_axis``).

The interpreter's ``BlockPointerHandle`` holds the base, shape, strides and offsets as handles, and
makes a block's pointers and boundary mask when it is loaded or stored (``materialize_pointers``). In
a batch each of those handles holds one value per program (or one for all), so the interpreter's
broadcast to the block's shape fails. Here they are made with the program axis first: row pointers
(``rows``) where the block's last axis has one positive stride for every program (a row-major tile:
its loads are views and its stores strided copies, as for ``ptr + rows[:, None] * stride +
cols[None, :]``), else the block of addresses. The loads and stores then run as any batched load and
store; ``tl.advance`` adds the programs' offsets without writing into the handles it was given.
"""

import sys

import numpy as np

from ..compat.interpreter import block_pointer_masks_below_zero
from . import rows

__all__ = ["pointers", "padding", "advanced"]

_INTERPRETER = "triton.runtime.interpreter"


def pointers(ptr, boundary_check):
    """``(pointers, mask)`` handles for the block pointer ``ptr``, the program axis first: each element's
    address ``base + sum((offset + i) * stride) * width``, and where ``boundary_check`` names an axis,
    ``offset + i < shape`` along it, and ``0 <= offset + i`` where the release checks that too
    (``compat``): the interpreter's ``materialize_pointers``, one axis in."""
    interpreter = sys.modules[_INTERPRETER]
    block = tuple(_block_shape(ptr))
    ndim = len(block)
    below_zero = block_pointer_masks_below_zero()

    def per_program(handle):
        return np.asarray(handle.data).reshape((-1,) + (1,) * ndim)

    width = ptr.base.get_element_ty().primitive_bitwidth // 8
    offsets, mask = [], np.ones((1,) + block, dtype=bool)
    for dim, size in enumerate(block):
        along = [1] * (ndim + 1)
        along[dim + 1] = size
        offset = per_program(ptr.offsets[dim]).astype(np.int64) + np.arange(size).reshape(along)
        offsets.append(offset)
        if dim in boundary_check:
            mask = mask & (offset < per_program(ptr.shape[dim]))
            if below_zero:
                mask = mask & (offset >= 0)
    strides = [per_program(stride).astype(np.int64) for stride in ptr.strides]
    base = per_program(ptr.base).view(np.int64)
    mask = interpreter.TensorHandle(mask, interpreter.tl.int1)
    pointer_type = ptr.base.dtype.scalar
    last = strides[-1] if ndim else None
    if ndim and block[-1] > 1 and (last == last.flat[0]).all() and last.flat[0] > 0:
        firsts = [offset[..., :1] for offset in offsets]  # the last axis at its first element
        starts = base + sum(first * stride for first, stride in zip(firsts, strides)) * width
        starts = np.ascontiguousarray(np.broadcast_to(starts, starts.shape[:1] + block[:-1] + (1,))[..., 0])
        return rows.pointers_class(interpreter.TensorHandle)(starts, block[-1], width, pointer_type,
                                                             int(last.flat[0]) * width), mask
    addresses = base + sum(offset * stride for offset, stride in zip(offsets, strides)) * width
    addresses = np.broadcast_to(addresses, addresses.shape[:1] + block)
    return interpreter.TensorHandle(np.ascontiguousarray(addresses).view(np.uint64), pointer_type), mask


def padding(ptrs, padding_option):
    """What a block pointer's load reads outside its boundary: None, zeros or NaNs (the interpreter's
    ``padding_option``), one value for the whole block."""
    interpreter = sys.modules[_INTERPRETER]
    if padding_option is None:
        return None
    element = ptrs.get_element_ty()
    if padding_option == interpreter._ir.PADDING_OPTION.PAD_ZERO:
        value = 0
    elif padding_option == interpreter._ir.PADDING_OPTION.PAD_NAN:
        value = float("nan")
    else:
        raise ValueError(f"unsupported padding option {padding_option}")
    ndim = rows.block_ndim(ptrs)
    return interpreter.TensorHandle(np.full((1,) * ndim, value, dtype=interpreter._get_np_dtype(element)), element)


def advanced(ptr, offsets):
    """``ptr`` moved by ``offsets`` (one per axis, each per program or one for all): a new block pointer,
    each offset keeping its type, as the interpreter's in-place add does."""
    if len(ptr.offsets) != len(offsets):
        raise ValueError("len(ptr.offsets) != len(offsets)")
    interpreter = sys.modules[_INTERPRETER]
    moved = [interpreter.TensorHandle((offset.data + by.data).astype(offset.data.dtype), offset.dtype.scalar)
             for offset, by in zip(ptr.offsets, offsets)]
    return type(ptr)(ptr.base, ptr.shape, ptr.strides, moved, _block_shape(ptr), ptr.order)


def _block_shape(ptr):
    """The block's shape (``block_shape``; up to 3.2 ``tensor_shape``)."""
    shape = getattr(ptr, "block_shape", None)
    return ptr.tensor_shape if shape is None else shape
