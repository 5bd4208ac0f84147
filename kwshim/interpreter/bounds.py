"""Every load, store and atomic of an interpreted launch checked against the memory it may touch,
before anything touches it: an out-of-bounds address raises ``OutOfBoundsError``, as
compute-sanitizer's memcheck reports it on a GPU, where Triton's interpreter would read or write
the process's memory at that address (a corrupted heap, ``Fatal Python error: Aborted``, every later
test of the session lost).

The memory a launch may touch (``Allocations``): the storages of the tensors its arguments reach
(tuples, a descriptor's or ``reinterpret``'s ``base``). Where the kernel makes a pointer of an
integer (a table of pointers) or is handed a pointer that is not a tensor, its addresses may be in
memory no argument holds: then any live torch tensor's storage too (found once per launch through
the garbage collector), as compute-sanitizer accepts an address in any live allocation. The rule,
per access, on its active lanes only (a lane that its mask switches off is never checked, as on
the GPU):

- the lowest and highest address within one argument's storage: the common case, checked by its ends
  (rows and blocks: the first and last address; a gather: its extremes, one pass);
- else every lane's element within an allocation; the first lane that is not is the error, named by
  the argument whose allocation is nearest.

Where it is checked (``launch_state.allocations`` says what the launch may touch; None: nothing is
checked): the interpreter's native ``load``, ``store``, ``atomic_rmw`` and ``atomic_cas`` (Triton's
loop, block pointers and tensor descriptors, which end in them), and the batched grid's loads,
stores and atomics as they are recorded (``batching``), before its gathers read and before its
commit writes. A batch that meets a bad address writes nothing and runs its programs in the loop,
which stops at the program and line that make it, with the stores of the programs before it made.
"""

import bisect
import functools
import gc
import os
import sys
import warnings

import numpy as np

from .. import launch_state

__all__ = ["Allocations", "check", "check_rows", "made_from_integers", "native_entries"]

_INTERPRETER = "triton.runtime.interpreter"


class Allocations:
    """The memory one launch of ``kernel`` may touch: its arguments' storages, read when first asked."""

    def __init__(self, kernel, args, kwargs):
        self.kernel = kernel
        self._given = (args, kwargs)
        self._arguments = None  # [(start, end, name, tensor's data_ptr, element size)], by start
        self._starts = self._ends = None
        self._everything = None  # (starts, ends) of every live tensor's storage and the arguments'
        #: whether an address may be in memory no argument holds: the kernel made a pointer of an
        #: integer (a table of pointers), or was handed a pointer that is not a tensor (``data_ptr()``)
        self.loose = False

    def _read(self):
        import torch

        from ..snapshot import launch_leaves

        found, seen = [], set()
        args, kwargs = self._given
        for name, value in launch_leaves(_parameters(self.kernel), args, kwargs):
            if isinstance(value, torch.Tensor):
                try:
                    storage = value.untyped_storage()
                    start, size = storage.data_ptr(), storage.nbytes()
                except (RuntimeError, NotImplementedError):  # a tensor with no memory (meta, fake)
                    continue
                if start and start not in seen:
                    seen.add(start)
                    found.append((start, start + size, name, value.data_ptr(), value.element_size()))
            elif callable(getattr(value, "data_ptr", None)):  # a pointer whose memory is not known here
                self.loose = True
        found.sort()
        self._arguments = found
        self._starts = [entry[0] for entry in found]
        self._ends = [entry[1] for entry in found]

    def holds(self, low, high):
        """Whether ``[low, high)`` lies in one argument's storage: the common case, at a lookup's cost."""
        if self._starts is None:
            self._read()
        index = bisect.bisect_right(self._starts, low) - 1
        return index >= 0 and high <= self._ends[index]

    def require(self, low, high, lanes, size, access):
        """Raise ``OutOfBoundsError`` unless every address of ``lanes`` (the active ones; ``low`` the
        least, ``high`` the end of the greatest one's ``size``-byte element) is in an allocation."""
        if self.holds(low, high):
            return
        starts, ends = (np.array(self._starts, dtype=np.int64), np.array(self._ends, dtype=np.int64))
        outside = _outside(lanes, size, starts, ends)
        if outside is not None and self.loose:
            if self._everything is None:
                self._everything = _live_storages(self._arguments)
            outside = _outside(lanes, size, *self._everything)
        if outside is not None:
            raise self.error(int(outside), size, access)

    def error(self, address, size, access):
        """The ``OutOfBoundsError`` for the ``size``-byte ``access`` at ``address``."""
        from ..errors import OutOfBoundsError

        return OutOfBoundsError(self.describe(address, size, access))

    def describe(self, address, size, access):
        kernel = getattr(self.kernel, "__name__", repr(self.kernel))
        where = _kernel_line()
        program = _program()
        head = (f"kwshim: invalid global {access} of size {size} bytes in kernel {kernel}"
                f"{f' at {where}' if where else ''} by program {program}")
        if not self._arguments:
            return f"{head}: address {address:#x} is in no allocation (the launch was handed no tensor)"
        start, end, name, data_ptr, element = min(self._arguments, key=lambda entry: _distance(address, entry))
        offset = address - data_ptr
        if address < start:
            place = f"{start - address} bytes before its start"
        elif address >= end:
            place = f"{address - end} bytes after its end"
        else:  # an element that starts inside and ends past it
            place = "across its end"
        elements = "" if offset % element else f"element {offset // element}, "
        return (f"{head}: {elements}byte offset {offset} of argument {name!r} is out of bounds, {place} "
                f"(an allocation of {end - start} bytes, {(end - start) // element} elements); on a GPU this "
                f"reads or writes another allocation or stops the process with an illegal address. Mask the "
                f"lanes past the end, or turn this check off with check_bounds=False")


def _as_int64(addresses):
    """``addresses`` (uint64 or any integers) as int64, a view where they are uint64."""
    return addresses.view(np.int64) if addresses.dtype == np.uint64 else addresses.astype(np.int64, copy=False)


def _distance(address, entry):
    start, end = entry[0], entry[1]
    return 0 if start <= address < end else min(abs(address - start), abs(address - end))


def _outside(lanes, size, starts, ends):
    """The first address of ``lanes`` whose ``size``-byte element is in no ``[start, end)``, or None."""
    lanes = _as_int64(lanes)
    if not starts.size:
        return lanes[0]
    index = np.searchsorted(starts, lanes, side="right") - 1
    inside = (index >= 0) & (lanes + size <= ends[np.maximum(index, 0)])
    if inside.all():
        return None
    return lanes[np.argmin(inside)]


def _live_storages(arguments):
    """(starts, ends), sorted int64 arrays, of the arguments' storages and every live torch tensor's."""
    import torch

    spans = {start: end for start, end, *_ in arguments}
    tensor = torch.Tensor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for value in gc.get_objects():
            kind = type(value)
            if kind is tensor or issubclass(kind, tensor):
                try:
                    storage = value.untyped_storage()
                    start = storage.data_ptr()
                    if start:
                        spans[start] = max(spans.get(start, 0), start + storage.nbytes())
                except Exception:  # noqa: BLE001  (a tensor with no memory: meta, fake, a wrapper)
                    continue
    starts = sorted(spans)
    return np.array(starts, dtype=np.int64), np.array([spans[s] for s in starts], dtype=np.int64)


@functools.lru_cache(maxsize=1024)
def _parameters(kernel):
    import inspect

    try:
        return list(inspect.signature(kernel).parameters)
    except (TypeError, ValueError):
        return []


#: Frames of these packages are not the kernel's (kwshim's own, NumPy's; Triton's is added when asked).
_SKIPPED = tuple(os.path.dirname(str(module.__file__)) + os.sep
                 for module in (sys.modules[__package__.split(".")[0]], np))


def _kernel_line():
    """``file:line`` of the innermost frame of the kernel's own code (or a jitted helper's) now running,
    or None in a replay, where no kernel code runs."""
    skipped = _SKIPPED + tuple(_triton_roots())
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(skipped) and not filename.startswith("<frozen"):
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _triton_roots():
    triton = sys.modules.get("triton")
    return [os.path.dirname(path) + os.sep for path in getattr(triton, "__path__", ())]


def _program():
    """The program the interpreter's loop is running, as ``(x, y, z)``; in a batch, the batch's range."""
    batch = launch_state.batch
    if batch is not None:
        x, y, z = (int(axis[0]) for axis in batch.program_ids)
        return f"({x}, {y}, {z}) or one after it in its batch"
    builder = getattr(sys.modules.get(_INTERPRETER), "interpreter_builder", None)
    index = getattr(builder, "grid_idx", None)
    return str(tuple(int(i) for i in index)) if index is not None else "(unknown)"


def check(addresses, size, access, mask=None, rising=False):
    """Raise ``OutOfBoundsError`` where an address of ``addresses`` (an array, any shape) that ``mask``
    keeps (None: every one) holds no ``size``-byte element of memory the launch may touch.
    ``rising``: the addresses (all kept) are known to rise, so their ends are the first and last."""
    allocations = launch_state.allocations
    if allocations is None:
        return
    lanes = np.asarray(addresses)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.shape != lanes.shape:
            lanes, mask = np.broadcast_arrays(lanes, mask)
        if not mask.all():
            lanes = lanes[mask.astype(bool, copy=False)]
    lanes = _as_int64(lanes.reshape(-1))
    if not lanes.size:
        return
    low, high = (int(lanes[0]), int(lanes[-1])) if rising and mask is None else (int(lanes.min()), int(lanes.max()))
    allocations.require(low, high + size, lanes, size, access)


def check_rows(starts, length, width, pitch, access):
    """``check`` for rows: ``length`` elements of ``width`` bytes, ``pitch`` bytes apart (None: next to
    each other), from each of ``starts`` (int64 byte addresses)."""
    allocations = launch_state.allocations
    if allocations is None or not length:
        return
    starts = np.asarray(starts).reshape(-1)
    if not starts.size:
        return
    starts = _as_int64(starts)
    span = (length - 1) * (pitch or width)
    if starts.size <= 16:  # a few rows (a small launch's): Python's min and max cost less than NumPy's calls
        listed = starts.tolist()
        low, high = min(listed), max(listed)
    else:
        low, high = int(starts.min()), int(starts.max())
    if pitch is not None and pitch < 0:
        low, high = low + span, high - span
    else:
        high += span
    if allocations.holds(low, high + width):
        return
    lanes = (starts[:, None] + np.arange(length, dtype=np.int64) * (pitch or width)).reshape(-1)
    allocations.require(low, high + width, lanes, width, access)


def made_from_integers():
    """The launch in progress made a pointer of an integer: its addresses may be in any live tensor."""
    allocations = launch_state.allocations
    if allocations is not None:
        allocations.loose = True


def native_entries(native):
    """``(owner, name, value)``: the interpreter's native ``load``, ``store``, ``atomic_rmw`` and
    ``atomic_cas`` (``native``: its ``_interpreter`` module), each checking its active lanes first."""
    load, store, atomic_rmw, atomic_cas = native.load, native.store, native.atomic_rmw, native.atomic_cas

    def checked_load(ptrs, mask, other, dtype):
        check(ptrs, np.dtype(dtype).itemsize, "read", mask)
        return load(ptrs, mask, other, dtype)

    def checked_store(ptrs, values, mask):
        check(ptrs, values.dtype.itemsize, "write", mask)
        return store(ptrs, values, mask)

    def checked_atomic_rmw(op, ptrs, values, mask, *rest):
        check(ptrs, values.dtype.itemsize, "atomic", mask)
        return atomic_rmw(op, ptrs, values, mask, *rest)

    def checked_atomic_cas(ptrs, compared, values, *rest):
        check(ptrs, values.dtype.itemsize, "atomic")
        return atomic_cas(ptrs, compared, values, *rest)

    return ((native, "load", checked_load), (native, "store", checked_store),
            (native, "atomic_rmw", checked_atomic_rmw), (native, "atomic_cas", checked_atomic_cas))
