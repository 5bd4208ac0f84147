"""Reading and writing the process's memory at many addresses with NumPy: what the interpreter's
native ``load`` and ``store`` do element by element, as one gather or scatter over a view of the
address span.

The interpreter's pointers are raw addresses of CPU memory (torch storages). A view of the span
from the lowest to the highest address touches no memory itself; only the addresses given are
read or written, exactly as the native loop reads and writes them: the same bytes. Where the
addresses are not whole elements apart, or a scatter writes one address twice (whose order a
NumPy scatter does not promise), the caller uses the native loop.
"""

import ctypes

import numpy as np

__all__ = ["gather", "scatter", "read_rows", "write_rows", "operands", "broadcast_shape"]


def _view(addresses, dtype, rising=None):
    """(a NumPy array of ``dtype`` over the span of ``addresses``, each address's index in it or None
    where the addresses are that span's elements in order: one copy serves, whether the addresses
    rise), or None. ``rising``: whether they rise strictly, where the caller knows it already."""
    addresses = addresses.view(np.int64) if addresses.dtype == np.uint64 else addresses.astype(np.int64)
    size = dtype.itemsize
    if rising is None:
        rising = addresses.size < 2 or bool((addresses[1:] > addresses[:-1]).all())
    if rising:  # row-major blocks: each address once, the span's ends at the ends
        low, high = int(addresses[0]), int(addresses[-1])
        if high - low == (addresses.size - 1) * size:  # rising by exactly one element: the span itself
            span = (ctypes.c_char * (high - low + size)).from_address(low)
            return np.frombuffer(span, dtype=dtype), None, True
    else:
        low, high = int(addresses.min()), int(addresses.max())
    offsets = addresses - low
    shift = size.bit_length() - 1
    if size != 1 << shift or (size > 1 and (offsets & (size - 1)).any()):
        return None
    span = (ctypes.c_char * (high - low + size)).from_address(low)
    return np.frombuffer(span, dtype=dtype), offsets >> shift if shift else offsets, rising


def gather(addresses, dtype, rising=None):
    """The values of ``dtype`` at ``addresses`` (a 1-D array of them), or None where no view serves."""
    if not addresses.size:
        return np.empty(0, dtype)
    found = _view(addresses, dtype, rising)
    if found is None:
        return None
    memory, indices, _ = found
    return memory.copy() if indices is None else memory[indices]


def scatter(addresses, values, rising=None):
    """Write ``values`` at ``addresses``; False (nothing written) where no view serves: misaligned,
    or an address twice."""
    if not addresses.size:
        return True
    found = _view(addresses, values.dtype, rising)
    if found is None:
        return False
    memory, indices, rising = found
    if indices is None:
        memory[...] = values
        return True
    if not rising and np.unique(indices).size != indices.size:
        return False
    memory[indices] = values
    return True


def _rows(starts, length, itemsize, pitch, writing):
    """A uint8 view, (programs, ``length``, ``itemsize``), of the rows of ``length`` elements of
    ``itemsize`` bytes, ``pitch`` bytes apart, at ``starts`` (int64 addresses, one per row) where the
    rows are equally spaced, rising (and, for ``writing``, apart); else None."""
    row_bytes = (length - 1) * pitch + itemsize
    spacing = row_bytes
    if starts.size > 1:
        spacing = int(starts[1] - starts[0])
        if spacing < (row_bytes if writing else 0) or starts.size > 2 and (starts[2:] - starts[1:-1] != spacing).any():
            return None
    span = (ctypes.c_char * ((starts.size - 1) * spacing + row_bytes)).from_address(int(starts[0]))
    # the view made directly: ``as_strided`` costs five times more, a small launch's many loads
    return np.ndarray((starts.size, length, itemsize), np.uint8, span, 0, (spacing, pitch, 1))


def read_rows(starts, length, dtype, pitch=None):
    """(programs, ``length``) values of ``dtype``, each row read from its start (its elements
    ``pitch`` bytes apart: by default, next to each other), or None where the rows are not equally
    spaced: a read-only strided view of the memory itself, no copy. It holds the bytes the native
    loop reads only while nothing writes there: a batch's stores wait until it ends (``StoreLog``,
    which copies a stored value that is such a view)."""
    view = _rows(starts, length, dtype.itemsize, pitch or dtype.itemsize, writing=False)
    if view is None:
        return None
    view.flags.writeable = False
    return view.view(dtype)[..., 0]


def write_rows(starts, values, pitch=None):
    """Write each row of ``values`` (programs, length) from its start (its elements ``pitch`` bytes
    apart: by default, next to each other); False (nothing written) where the rows are not equally
    spaced and apart: one strided copy."""
    values = np.ascontiguousarray(values)
    itemsize = values.dtype.itemsize
    view = _rows(starts, values.shape[1], itemsize, pitch or itemsize, writing=True)
    if view is None:
        return False
    view[...] = values.view(np.uint8).reshape(view.shape)
    return True


def operands(*arrays):
    """A load's or store's operands (pointers, mask, values) broadcast to one shape, contiguous, as
    the native loop takes them: ``np.broadcast_arrays`` costs ~10 µs, a small launch's scalar load
    or store most of its time."""
    shape = arrays[0].shape
    if all(a.shape == shape for a in arrays):
        return [np.ascontiguousarray(a) for a in arrays]
    shape = broadcast_shape([a.shape for a in arrays])
    common = []
    for a in arrays:
        if a.shape != shape:
            a, copied = np.empty(shape, a.dtype), a
            a[...] = copied
        common.append(np.ascontiguousarray(a))
    return common


def broadcast_shape(shapes):
    """The shape ``shapes`` broadcast to (ValueError where they do not), as ``np.broadcast_shapes``."""
    first = shapes[0]
    if all(shape == first for shape in shapes):  # the common case, at a comparison's cost
        return tuple(first)
    ndim = max(len(shape) for shape in shapes)
    padded = [(1,) * (ndim - len(shape)) + tuple(shape) for shape in shapes]
    common = []
    for sizes in zip(*padded):
        other = {size for size in sizes if size != 1}
        if len(other) > 1:
            raise ValueError(f"shape mismatch: objects cannot be broadcast to a single shape: {shapes}")
        common.append(other.pop() if other else 1)
    return tuple(common)
