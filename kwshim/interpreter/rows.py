"""Pointers that are each program's row from its own start, kept as the starts (affine pointers).

Most kernels address a row per program: ``X_ptr += pid * stride`` and then
``tl.load(X_ptr + tl.arange(0, BLOCK), mask=tl.arange(0, BLOCK) < n)``. The interpreter makes a
whole-launch block of int64 addresses for that, and the batch checked and gathered it element by
element. Here ``addptr`` of a pointer per program and offsets that run up by one keeps only each
program's start (``pointers_class``); under a mask that keeps a prefix of the row (``arange < n``, or
none) a load is a read-only view of the memory (``memory.read_rows``) and a store one strided copy
(``write_rows``), recorded as ``records.Rows``. Anything else reads ``data`` and takes the general
path: the block is made then.
"""

import functools
import sys

import numpy as np

from . import memory

__all__ = ["addresses", "row_starts", "pointers_class", "prefix", "load"]

_INTERPRETER = "triton.runtime.interpreter"


def _interpreter():
    return sys.modules[_INTERPRETER]


def addresses(starts, length, width):
    """Each program's ``length`` addresses from its start, programs first, as the interpreter's uint64."""
    return (starts[:, None] + np.arange(length, dtype=np.int64) * width).reshape(-1).view(np.uint64)


def row_starts(pointers, offsets, width):
    """Each program's byte address of its row, (programs or 1,) int64, where ``pointers + offsets``
    is one pointer per program splat over a 1-D block plus offsets that run up by one from a start
    all programs share (``X_ptr + row * stride`` then ``+ tl.arange(0, BLOCK)``); else None."""
    if pointers.ndim != 2 or offsets.ndim != 2 or offsets.shape[0] != 1 or pointers.strides[1] != 0 \
            or pointers.shape[1] != offsets.shape[1] or offsets.shape[1] < 2 or offsets.dtype.kind not in "iu":
        return None
    run = offsets[0]
    if int(run[-1]) - int(run[0]) != run.size - 1 or (run[1:] - run[:-1] != 1).any():
        return None
    return pointers[:, 0].view(np.int64) + int(run[0]) * width


@functools.lru_cache(maxsize=None)
def pointers_class(TensorHandle):
    class RowPointers(TensorHandle):
        """A block of pointers, each program's ``start + i * width`` for i below ``length``, kept as
        the starts; the block itself is made only where something reads ``data``."""

        def __init__(self, starts, length, width, dtype):
            self.starts, self.length, self.width = starts, length, width
            self.dtype, self.attr, self._data = dtype, {}, None

        @property
        def data(self):
            if self._data is None:
                self._data = addresses(self.starts, self.length, self.width).reshape(-1, self.length)
            return self._data

        @data.setter
        def data(self, value):
            self._data = value

    return RowPointers


def prefix(ptrs, mask):
    """How many leading elements of each program's row ``mask`` keeps, where ``ptrs`` are row
    pointers and ``mask`` is the same in every program and keeps a prefix (``arange < n``, or all);
    else None."""
    if not isinstance(ptrs, pointers_class(_interpreter().TensorHandle)):
        return None
    kept = mask.data
    if kept.shape[0] != 1 or kept.ndim > 2:
        return None
    kept = np.broadcast_to(kept.reshape(-1) if kept.ndim == 2 else kept, (ptrs.length,))
    length = int(np.count_nonzero(kept))
    return length if length and kept[:length].all() else None


def load(log, ptrs, mask, other, fewest):
    """A load of row pointers under a prefix mask: a view of each program's row (``memory.read_rows``;
    a masked tail, ``other``, makes a copy), recorded as rows; None where the load is not that."""
    length = prefix(ptrs, mask)
    if length is None:
        return None
    interpreter = _interpreter()
    element = ptrs.get_element_ty()
    numpy_type = np.dtype(interpreter._get_np_dtype(element))
    if numpy_type.kind == "b" or numpy_type.itemsize != ptrs.width or ptrs.starts.size * length < fewest:
        return None
    view = loaded = memory.read_rows(ptrs.starts, length, numpy_type)
    if loaded is None:
        loaded = memory.gather(addresses(ptrs.starts, length, ptrs.width), numpy_type)
        if loaded is None:  # the general path records it
            return None
        loaded = loaded.reshape(ptrs.starts.size, length)
    log.load_rows(ptrs.starts, length, ptrs.width, view=view if length == ptrs.length else None)
    if length < ptrs.length:
        programs = max(ptrs.starts.size, 1 if other is None else other.data.shape[0])
        data = np.zeros((programs, ptrs.length), numpy_type)  # C order: a reduction adds as the loop's does
        if other is not None:
            data[:, length:] = np.broadcast_to(other.data, (programs, ptrs.length))[:, length:]
        data[:, :length] = loaded
        loaded = data
    return interpreter.TensorHandle(loaded, element)
