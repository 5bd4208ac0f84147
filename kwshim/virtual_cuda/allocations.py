"""The virtual device's allocation statistics: ``torch.cuda.memory_allocated``,
``max_memory_allocated``, ``reset_peak_memory_stats`` and ``memory_stats``, counted from the live
storages of the device's tensors (``device_tensor``; CPU tensors are not counted) as a GPU's caching
allocator counts its blocks: each storage rounded up to 512 bytes, counted from the operation that
made it until torch frees it (a storage an autograd graph saves lives as long as the graph).

torch has no statistics for the CPU's allocator, and no hook on it but the dispatcher, so counting
starts at the first call to one of these functions: a ``TorchDispatchMode`` then sees every
operation's outputs (and ``device_tensor.adopt`` each factory's), and a finalizer on each new
storage sees it freed. The tensors alive at that
moment are found once through the garbage collector. The mode cost 10% on a step of small torch
calls and nothing measurable on large ones (``benchmarks/device_cost.py``), paid only by a process
that asks for a statistic, from then until the switch goes off. What it cannot see, it does not
count:

- storages made before counting started that only C++ holds (an autograd graph's saved tensors
  from before the first call);
- operations in threads other than the one that asked first (torch's modes are per thread);
- NumPy's arrays, the interpreter's own among them (a GPU does not count a kernel's registers).

The caching allocator's reservations (``memory_reserved``, its segments, ``memory_summary``) are
not emulated: they raise, naming kwshim.
"""

import gc
import threading
import weakref

__all__ = ["install", "BLOCK", "UNEMULATED"]

BLOCK = 512  #: the caching allocator's smallest block, and the multiple every allocation is rounded to

#: the functions of ``torch.cuda`` (and ``torch.cuda.memory``) that raise, naming kwshim
UNEMULATED = ("memory_reserved", "max_memory_reserved", "memory_cached", "max_memory_cached",
              "reset_max_memory_cached", "memory_snapshot", "memory_summary", "list_gpu_processes")


def _rounded(nbytes):
    return -(-nbytes // BLOCK) * BLOCK


class _Stats(dict):
    """``memory_stats()``'s answer: the keys kwshim counts; any other key the caching allocator has
    raises ``KeyError`` naming kwshim, through ``[]`` and ``get`` alike (never a silent default)."""

    def __missing__(self, key):
        raise KeyError(f"kwshim: torch.cuda.memory_stats()[{key!r}] is not counted on the virtual CUDA device "
                       f"(only {', '.join(sorted(self))})")

    def get(self, key, default=None):
        return self[key]


class Allocations:
    """The counts, and the dispatch mode that keeps them once started."""

    def __init__(self):
        self._lock = threading.RLock()
        self._live = {}  #: StorageImpl address -> (rounded bytes, requested bytes)
        self._mode = self._thread = self._tensor = self._strided = None
        self.current = self.peak = self.requested = self.requested_peak = 0
        self.allocated = self.freed = self.allocations = self.frees = 0  #: bytes and counts, since the last reset

    # The dispatch mode's work, per operation: every output tensor's storage, if new (or resized).
    def _see(self, value):
        if isinstance(value, (list, tuple)):
            for item in value:
                self._see(item)
            return
        if not isinstance(value, self._tensor) or value.layout != self._strided:
            return
        try:
            storage = value.untyped_storage()
        except (RuntimeError, NotImplementedError):  # a wrapper subclass with no storage of its own
            return
        if storage.device.type != "cpu":  # a meta or fake tensor's storage holds no memory
            return
        key, nbytes = storage._cdata, storage.nbytes()
        known = self._live.get(key)
        if known is None:
            if nbytes:
                self._add(key, nbytes)
                finalizer = weakref.finalize(storage, self._free, key)
                finalizer.atexit = False
        elif known[1] != nbytes:  # resize_ (an ``out=`` tensor grown in place)
            self._drop(key)
            self._add(key, nbytes)

    def _add(self, key, nbytes):
        with self._lock:
            size = _rounded(nbytes)
            self._live[key] = (size, nbytes)
            self.current += size
            self.requested += nbytes
            self.allocated += size
            self.allocations += 1
            self.peak = max(self.peak, self.current)
            self.requested_peak = max(self.requested_peak, self.requested)

    def _drop(self, key):
        with self._lock:
            size, nbytes = self._live.pop(key)
            self.current -= size
            self.requested -= nbytes
            self.freed += size
            self.frees += 1

    def _free(self, key):
        if key in self._live:
            self._drop(key)

    def start(self, patch):
        """Count from now: the tensors alive now, then every operation's outputs, until ``patch`` is undone."""
        with self._lock:
            if self._mode is not None:
                return
            import torch
            from torch.utils._python_dispatch import TorchDispatchMode

            allocations = self

            class Counting(TorchDispatchMode):
                @classmethod
                def _should_skip_dynamo(cls):
                    """False: torch would wrap ``__torch_dispatch__`` in ``torch._dynamo.disable``, which imports
                    torch._dynamo at the first call. That import fails under Triton 2.x (torch's inductor
                    needs ``triton.backends``) and adds to torch's namespace (``torch.onnx``, a wrapped
                    ``torch.manual_seed``), which the switch must leave as it found it."""
                    return False

                def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                    out = func(*args, **(kwargs or {}))
                    if allocations._mode is self:  # else stopped from another thread: inert
                        allocations._see(out)
                    return out

            from .device_tensor import DeviceTensor, adopters

            self._tensor, self._strided = DeviceTensor, torch.strided
            self._see([value for value in gc.get_objects() if issubclass(type(value), self._tensor)])
            self._mode, self._thread = Counting(), threading.current_thread()
            self._mode.__enter__()
            adopters.append(self._see)
            patch.on_undo(lambda: adopters.remove(self._see))
            patch.on_undo(self.stop)

    def stop(self):
        """Take the mode off torch's stack (from under any mode pushed above it since). Stopped from
        another thread than the one it counts in, it cannot reach that thread's stack: it stays
        there, counting nothing."""
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack, _pop_mode, _push_mode

        mode, self._mode = self._mode, None
        if mode is None or threading.current_thread() is not self._thread:
            return
        above = []
        while _get_current_dispatch_mode_stack() and _get_current_dispatch_mode_stack()[-1] is not mode:
            above.append(_pop_mode())
        if _get_current_dispatch_mode_stack():
            mode.__exit__(None, None, None)
        for other in reversed(above):
            _push_mode(other)

    def reset_peak(self):
        with self._lock:
            self.peak, self.requested_peak = self.current, self.requested

    def reset_accumulated(self):
        with self._lock:
            self.allocated = self.freed = self.allocations = self.frees = 0

    def stats(self):
        with self._lock:
            return _Stats({
                "allocated_bytes.all.current": self.current, "allocated_bytes.all.peak": self.peak,
                "allocated_bytes.all.allocated": self.allocated, "allocated_bytes.all.freed": self.freed,
                "active_bytes.all.current": self.current, "active_bytes.all.peak": self.peak,
                "requested_bytes.all.current": self.requested, "requested_bytes.all.peak": self.requested_peak,
                "allocation.all.current": len(self._live), "allocation.all.allocated": self.allocations,
                "allocation.all.freed": self.frees, "num_ooms": 0, "num_alloc_retries": 0,
            })


def install(patch, device_index, refusing):
    """``torch.cuda``'s (and ``torch.cuda.memory``'s) allocation statistics, through ``patch``."""
    import torch

    counts = Allocations()

    def counting(read):
        def statistic(device=None):
            device_index(device)
            counts.start(patch)
            return read()

        return statistic

    answers = {
        "memory_allocated": counting(lambda: counts.current),
        "max_memory_allocated": counting(lambda: counts.peak),
        "reset_peak_memory_stats": counting(counts.reset_peak),
        "reset_max_memory_allocated": counting(counts.reset_peak),
        "reset_accumulated_memory_stats": counting(counts.reset_accumulated),
        "memory_stats": counting(counts.stats),
    }
    answers.update((name, refusing(name)) for name in UNEMULATED)
    for module in (torch.cuda, torch.cuda.memory):
        for name, value in answers.items():
            if hasattr(module, name):
                patch.setattr(module, name, value)
