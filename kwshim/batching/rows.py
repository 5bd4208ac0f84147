"""Pointers that are rows, each from its own start, kept as the starts (affine pointers).

Most kernels address a row per program: ``X_ptr += pid * stride`` and then
``tl.load(X_ptr + tl.arange(0, BLOCK), mask=tl.arange(0, BLOCK) < n)``; others a block of rows per
program, ``X_ptr + rows[:, None] * stride + cols[None, :]`` under ``(rows < n_rows)[:, None] &
(cols < n_cols)[None, :]``. The interpreter makes a whole-launch block of int64 addresses for that,
and the batch checked and gathered it element by element. Here ``addptr`` of a pointer per row
(splat along the block's last axis) and offsets that run up by one along it keeps only each row's
start (``pointers_class``); under a mask that keeps a prefix of every row, or none of it
(``arange < n``, a row mask, or none), a load is a read-only view of the memory
(``memory.read_rows``) and a store one strided copy (``write_rows``), recorded as ``records.Rows``
with the program of each row. Anything else reads ``data`` and takes the general path: the block is
made then.
"""

import functools
import sys

import numpy as np

from . import memory
from ..interpreter.bounds import check_rows

__all__ = ["addresses", "row_starts", "shifted", "pointers_class", "block_ndim", "prefix", "pieces", "load",
           "shared", "store_rows"]

_INTERPRETER = "triton.runtime.interpreter"


def _interpreter():
    return sys.modules[_INTERPRETER]


def addresses(starts, length, width, pitch=None):
    """Each row's ``length`` addresses from its start, ``pitch`` bytes apart (by default ``width``, next
    to each other), rows first, as the interpreter's uint64."""
    return (starts[:, None] + np.arange(length, dtype=np.int64) * (pitch or width)).reshape(-1).view(np.uint64)


def row_starts(pointers, offsets, width, memo=None):
    """``(starts, pitch)``: each row's byte address, int64 of the pointers' shape less its last axis
    (programs or 1, then the block's leading axes), and the bytes from one of its elements to the
    next, where ``pointers + offsets`` is a pointer per row, splat along the block's last axis, plus
    offsets that rise by one step along it (``X_ptr + row * stride`` then ``+ tl.arange(0, BLOCK)``;
    ``X_ptr + rows[:, None] * stride`` then ``+ cols[None, :]``; ``RSTD_ptr + rows * stride``;
    ``q_ptr + cols * 2``, complex numbers' real parts); else None."""
    if pointers.ndim < 2 or offsets.ndim != pointers.ndim or pointers.strides[-1] != 0 \
            or pointers.shape[1:] != offsets.shape[1:] or offsets.shape[-1] < 2 or offsets.dtype.kind not in "iu":
        return None
    shared_run = all(not stride or size == 1 for stride, size in zip(offsets.strides[1:-1], offsets.shape[1:-1]))
    if offsets.shape[0] != 1 or not shared_run:  # offsets of their own in each program or row
        if 1 not in (pointers.shape[0], offsets.shape[0]) and pointers.shape[0] != offsets.shape[0]:
            return None
        steps = np.diff(offsets, axis=-1)
        step = int(steps.flat[0])
        if step < 1 or (steps != step).any():
            return None
        return pointers[..., 0].view(np.int64) + offsets[..., 0].astype(np.int64) * width, step * width
    found = _run(offsets, memo)
    if found is None:
        return None
    first, step = found
    return pointers[..., 0].view(np.int64) + first * width, step * width


def _run(offsets, memo=None):
    """``(first, step)`` where the first run of ``offsets`` (along its last axis, the one the leading
    axes broadcast) rises by one ``step`` (at least 1) each element, else None; remembered on
    ``memo``, the handle whose data ``offsets`` is (a trace replays ``tl.arange``'s own each launch)."""
    known = getattr(memo, "kwshim_run", None)
    if known is not None and known[0] is offsets:
        return known[1]
    run = offsets[(0,) * (offsets.ndim - 1)]
    step = int(run[1]) - int(run[0])
    found = None if step < 1 or int(run[-1]) - int(run[0]) != (run.size - 1) * step or \
        (run[1:] - run[:-1] != step).any() else (int(run[0]), step)
    if memo is not None and hasattr(memo, "__dict__"):
        memo.kwshim_run = (offsets, found)
    return found


def shifted(ptrs, offsets):
    """Row pointers ``ptrs`` plus ``offsets`` that are one value along each row (``x_ptr + cols * 2 + 1``:
    the imaginary parts), as row pointers from the shifted starts; else None."""
    if offsets.ndim != ptrs.starts.ndim + 1 or offsets.dtype.kind not in "iu" \
            or offsets.shape[-1] != 1 and offsets.strides[-1] != 0:
        return None
    try:
        starts = ptrs.starts + offsets[..., 0].astype(np.int64) * ptrs.width
    except ValueError:  # shapes that do not broadcast
        return None
    if starts.shape[1:] != ptrs.starts.shape[1:]:
        return None
    return type(ptrs)(starts, ptrs.length, ptrs.width, ptrs.dtype, ptrs.pitch)


@functools.lru_cache(maxsize=None)
def pointers_class(TensorHandle):
    class RowPointers(TensorHandle):
        """A block of pointers, each row's ``start + i * pitch`` for i below ``length``, kept as the
        starts (programs or 1, then the block's leading axes); the block itself is made only where
        something reads ``data``."""

        def __init__(self, starts, length, width, dtype, pitch=None):
            self.starts, self.length, self.width, self.pitch = starts, length, width, pitch or width
            self.dtype, self.attr, self._data = dtype, {}, None

        @property
        def data(self):
            if self._data is None:
                self._data = addresses(self.starts.reshape(-1), self.length, self.width, self.pitch).reshape(
                    self.starts.shape + (self.length,))
            return self._data

        @data.setter
        def data(self, value):
            self._data = value

    return RowPointers


def block_ndim(handle):
    """The dimensions of ``handle``'s block (its program axis included), without making a row
    pointers' addresses."""
    starts = getattr(handle, "starts", None)
    return handle.data.ndim if starts is None else starts.ndim + 1


def prefix(ptrs, mask):
    """``(length, kept)`` where ``ptrs`` are row pointers and ``mask`` keeps the leading ``length``
    elements of some rows and nothing of the others: ``kept`` is None where it keeps every row, else
    which (booleans of the starts' shape); None where the mask is not that (``pieces`` of one)."""
    found = pieces(ptrs, mask, most=1)
    return None if found is None else found[0]


def _prefix_lengths(kept):
    """How many leading elements each row (last axis) of the mask ``kept`` keeps, where every row
    keeps a prefix (kept elements, then none); None where one keeps an element after a gap. A pass
    for the gaps and ``argmin``'s first unkept element: a seventh of ``np.count_nonzero(kept, axis=-1)``'s
    time on a mask of 1M elements."""
    kept = kept if kept.dtype == np.bool_ else kept.astype(bool)
    if kept.shape[-1] > 1 and np.greater(kept[..., 1:], kept[..., :-1]).any():
        return None
    return np.where(kept[..., -1], kept.shape[-1], np.argmin(kept, axis=-1))


def _rows_of(starts, kept):
    """The kept rows' starts, flat, and the program of each (None: one row per program, all kept)."""
    if kept is None:
        if starts.ndim == 1:
            return starts, None
        return starts.reshape(-1), np.repeat(np.arange(starts.shape[0]), starts[0].size)
    return starts[kept], np.nonzero(kept)[0]


def pieces(ptrs, mask, most=None):
    """``[(length, kept)]``, one piece per length of the prefixes ``mask`` keeps of the rows ``ptrs``
    (``cols < n`` cutting the last block of columns, beside ``rows < n``), at most ``most`` (by
    default ``_MOST_PIECES``), ``kept`` booleans of the starts' shape, None where one length is kept
    by every row; else None. The mask is read once (``_prefix_lengths``)."""
    if not isinstance(ptrs, pointers_class(_interpreter().TensorHandle)):
        return None
    starts, kept = ptrs.starts, mask.data
    if kept.ndim > starts.ndim + 1:
        return None
    kept = kept.reshape((1,) * (starts.ndim + 1 - kept.ndim) + kept.shape)
    if kept.shape[-1] not in (1, ptrs.length):
        return None
    if all(size == 1 for size in kept.shape[:-1]):  # one mask for every row
        row = kept.reshape(-1)
        if row.size == 1:  # one value for every element
            return [(ptrs.length, None)] if row[0] else None
        length = int(np.count_nonzero(row))
        return [(length, None)] if length and row[:length].all() else None
    counts = _prefix_lengths(np.broadcast_to(kept, kept.shape[:-1] + (ptrs.length,)))
    if counts is None:
        return None
    try:
        counts = np.broadcast_to(counts, starts.shape)
    except ValueError:  # one start for every program, a mask per program
        return None
    length = int(counts.max())
    full = counts == length
    if length and (full | (counts == 0)).all():  # one length (the common case): no sort
        return [(length, None if full.all() else full)]
    lengths = np.unique(counts)
    lengths = lengths[lengths > 0]
    if not 0 < lengths.size <= (most or _MOST_PIECES):
        return None
    return [(int(length), counts == length) for length in lengths]


#: The most prefix lengths one load or store of rows is split into (``pieces``).
_MOST_PIECES = 4


def load(log, ptrs, mask, other, fewest):
    """A load of row pointers under a prefix mask (``pieces``): a view of each kept row
    (``memory.read_rows``; a masked tail or row, ``other``, makes a copy), recorded as rows, one record
    per piece; None where the load is not that."""
    found = pieces(ptrs, mask)
    if found is None:
        return None
    interpreter = _interpreter()
    element = ptrs.get_element_ty()
    numpy_type = np.dtype(interpreter._get_np_dtype(element))
    starts = ptrs.starts
    if numpy_type.kind == "b" or numpy_type.itemsize != ptrs.width or shared(starts):
        return None
    reads = []
    for length, kept in found:
        flat, owners = _rows_of(starts, kept)
        check_rows(flat, length, ptrs.width, ptrs.pitch, "read")  # before the view reads a byte
        view = loaded = memory.read_rows(flat, length, numpy_type, ptrs.pitch)
        if loaded is not None and log.write_through:  # a later store of the batch writes at once
            view, loaded = None, loaded.copy()
        if loaded is None:
            loaded = memory.gather(addresses(flat, length, ptrs.width, ptrs.pitch), numpy_type)
            if loaded is None:  # the general path records it
                return None
            loaded = loaded.reshape(flat.size, length)
        reads.append((length, kept, flat, owners, view, loaded))
    if sum(flat.size * length for length, _, flat, _, _, _ in reads) < fewest:
        return None
    for length, kept, flat, owners, view, _ in reads:
        log.load_rows(flat, length, ptrs.width, view=view if length == ptrs.length else None, owners=owners,
                      pitch=ptrs.pitch)
    if len(reads) == 1 and reads[0][0] == ptrs.length and reads[0][1] is None:
        return interpreter.TensorHandle(reads[0][5].reshape(starts.shape + (ptrs.length,)), element)
    programs = max(starts.shape[0], 1 if other is None else other.data.shape[0])
    shape = (programs,) + starts.shape[1:] + (ptrs.length,)
    data = np.zeros(shape, numpy_type)  # C order: a reduction adds as the loop's does
    for length, kept, _, _, _, loaded in reads:
        if kept is None:
            if other is not None:
                data[..., length:] = np.broadcast_to(other.data, shape)[..., length:]
            data[..., :length] = loaded.reshape(starts.shape + (length,))
        else:
            data[kept, :length] = loaded
    if other is not None and reads[0][1] is not None:  # each row's masked tail, and the rows kept not at all
        tail = np.arange(ptrs.length) >= sum(np.where(kept, length, 0) for length, kept, *_ in reads)[..., None]
        np.copyto(data, np.broadcast_to(other.data, shape), where=tail)
    return interpreter.TensorHandle(data, element)


def shared(starts):
    """Whether these are rows every program shares, more than one: left to the general path (a
    record of rows is one program's rows, or one row every program moves)."""
    return starts.shape[0] == 1 and starts.size > 1


def store_rows(ptrs, value, found):
    """``(starts, rows, owners)`` for a store of ``value`` through row pointers under the prefix mask
    ``found`` (``prefix``): the kept rows' starts and values (C order), and the program of each;
    None where the store is not that."""
    length, kept = found
    starts, data = ptrs.starts, value.data
    if data.ndim != starts.ndim + 1:
        return None
    if starts.ndim == 1 and kept is None:  # a row per program (or one for every program): as given
        return starts, np.ascontiguousarray(data[:, :length]), None
    if shared(starts) or data.shape[0] not in (1, starts.shape[0]):
        return None
    data = np.broadcast_to(data, starts.shape + (ptrs.length,))[..., :length]
    flat, owners = _rows_of(starts, kept)
    return flat, np.ascontiguousarray(data[kept] if kept is not None else data.reshape(-1, length)), owners
