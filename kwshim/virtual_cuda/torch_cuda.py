"""``torch.cuda`` answering as one GPU of a stated model, its work done on the CPU.

What is emulated, and how:

- availability and the device: ``is_available`` (True), ``is_initialized``, ``init``,
  ``device_count`` (1), ``current_device`` (0), ``set_device`` and ``device(...)`` (0 alone: another
  index raises), ``get_device_name``, ``get_device_capability``, ``get_device_properties``,
  ``is_bf16_supported``, ``get_arch_list``;
- ``synchronize`` (the CPU's work is done when a call returns);
- CUDA's random state (``random_state``): ``default_generators``, ``manual_seed``/``manual_seed_all``,
  ``seed``, ``initial_seed``, ``get_rng_state``/``set_rng_state`` hold a seed and an offset, 16 bytes;
- streams and events: ``Stream``, ``current_stream``, ``default_stream``, ``stream(...)``, ``Event``
  (``elapsed_time`` in milliseconds of the CPU's clock between two ``record`` calls);
- ``mem_get_info``: (free, total), total the stated GPU's and free what this machine's memory has
  available (``MemAvailable``), no more than the total: the tensors are made there. Suites that
  size their tests by free memory get what this machine can hold;
- allocation statistics (``memory_allocated``, ``max_memory_allocated``, ``reset_peak_memory_stats``,
  ``memory_stats``): counted from the live storages of the device's tensors (``allocations``); the
  caching allocator's reservations (``memory_reserved``, ``memory_summary``, ...) raise, naming kwshim;
- CUDA graphs (``CUDAGraph``, ``graph``, ``make_graphed_callables``): a capture records, a replay
  runs the work again on the same tensors (``graphs``);
- ``torch.autocast("cuda", ...)`` (and ``torch.cuda.amp.autocast``) is the CPU's autocast with the
  same dtype, with CUDA's fp32 lists (``autocast_lists``): what runs in low precision is the CPU's
  list, which matches CUDA's for matmuls; ``dtype=torch.float32`` is taken as CUDA takes it.
"""

import itertools
import sys
import time
import warnings

from . import allocations, autocast_lists, graphs, random_state
from .model import CUDA_VERSION, device_index as _device_index

__all__ = ["install", "Stream"]


def _refusing(name):
    def refuse(*args, **kwargs):
        raise RuntimeError(f"kwshim: torch.cuda.{name} cannot be emulated on the virtual CUDA device (device='cuda' "
                           f"runs on the CPU): skip this on a CPU, or run it on a GPU")

    refuse.__name__ = name
    return refuse


class _Properties:
    """``torch.cuda.get_device_properties``'s answer for the stated GPU."""

    def __init__(self, gpu):
        self.name, self.major, self.minor = gpu.name, gpu.major, gpu.minor
        self.multi_processor_count, self.total_memory = gpu.multi_processor_count, gpu.total_memory
        self.warp_size, self.shared_memory_per_block_optin = gpu.warp_size, gpu.max_shared_memory
        self.regs_per_multiprocessor, self.L2_cache_size = gpu.registers_per_block, gpu.l2_cache_size
        self.is_integrated, self.is_multi_gpu_board, self.gcnArchName = 0, 0, "NVIDIA"

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // 2 ** 20}MB, multi_processor_count={self.multi_processor_count})")


class _DeviceGuard:
    """``torch.cuda.device(...)``: a context manager that changes nothing (there is one GPU)."""

    def __init__(self, device):
        self.idx = _device_index(device)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


class Stream:
    """A stream on the CPU: work is done when it is queued. The default stream's handle
    (``cuda_stream``) is 0, as CUDA's; every other stream has a handle of its own."""

    _handles = itertools.count(1)

    def __init__(self, device=None, priority=0, **kwargs):
        import torch

        self.device_index = _device_index(device)
        self.device, self.priority = torch.device("cuda", 0), priority
        self.cuda_stream = self.stream_id = 0 if kwargs.get("stream_id") == 0 else next(Stream._handles)

    def synchronize(self):
        pass

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def query(self):
        return True

    def record_event(self, event=None):
        event = event or _Event()
        event.record(self)
        return event

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False

    def __eq__(self, other):
        return isinstance(other, Stream)

    def __hash__(self):
        return 0


_DEFAULT_STREAM = None


class _Event:
    """An event timed with the CPU's clock."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing
        self._at = None

    def record(self, stream=None):
        self._at = time.perf_counter()

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return self._at is not None

    def elapsed_time(self, end):
        if self._at is None or end._at is None:
            raise RuntimeError("kwshim: Event.elapsed_time needs both events recorded (virtual CUDA device)")
        return (end._at - self._at) * 1e3


def _available():
    """Bytes of memory this machine has available (Linux's MemAvailable; else what sysconf says is free)."""
    import os

    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def install(patch, gpu) -> None:
    """``torch.cuda``'s functions answering as ``gpu``, through ``patch``."""
    import torch

    cuda = torch.cuda
    properties = _Properties(gpu)
    default_stream = Stream(stream_id=0)
    answers = {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "init": lambda: None,
        "_lazy_init": lambda: None,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": _device_index,
        "device": _DeviceGuard,
        "get_device_name": lambda device=None: (_device_index(device), gpu.name)[1],
        "get_device_capability": lambda device=None: (_device_index(device), gpu.capability)[1],
        "get_device_properties": lambda device=None: (_device_index(device), properties)[1],
        "is_bf16_supported": lambda *args, **kwargs: True,
        "get_arch_list": lambda: [f"sm_{gpu.major}{gpu.minor}"],
        "synchronize": lambda device=None: (_device_index(device), graphs.refuse_sync("synchronize()"), None)[2],
        "Stream": Stream,
        "Event": _Event,
        "current_stream": lambda device=None: default_stream,
        "default_stream": lambda device=None: default_stream,
        "stream": lambda stream=None: stream if stream is not None else default_stream,
        "empty_cache": lambda: None,
        "mem_get_info": lambda device=None: (_device_index(device), (min(_available(), gpu.total_memory),
                                                                     gpu.total_memory))[1],
    }
    generator = random_state.install(patch, answers)  # CUDA's seed and offset: the state functions
    for name, value in answers.items():
        if hasattr(cuda, name):
            patch.setattr(cuda, name, value)
    _install_dynamo_interface(patch, answers)
    patch.setattr(cuda.memory, "mem_get_info", answers["mem_get_info"])
    patch.setattr(cuda, "default_generators", (generator,))  # CUDA's state, a CPU generator underneath
    patch.setattr(torch.version, "cuda", CUDA_VERSION)
    import torch.cuda.nvtx

    patch.setattr(torch.cuda.nvtx, "_nvtx", _Nvtx())
    allocations.install(patch, _device_index, _refusing)
    graphs.install(patch, cuda)  # CUDA graphs: a capture records, a replay runs again
    _install_autocast(patch, torch)


def _install_dynamo_interface(patch, answers):
    """Dynamo's ``CudaInterface`` copies ``torch.cuda``'s functions when it is imported (Triton 3.1's
    ``do_bench`` synchronizes through it): where it was imported before the device was on, its
    copies answer as the device's too (imported later, it copies the device's answers itself)."""
    interface = getattr(sys.modules.get("torch._dynamo.device_interface"), "CudaInterface", None)
    for name, value in answers.items() if interface is not None else ():
        copied = vars(interface).get(name)
        if isinstance(copied, staticmethod) or isinstance(copied, type) and isinstance(value, type):  # Event
            patch.setattr(interface, name, staticmethod(value) if isinstance(copied, staticmethod) else value)


class _Nvtx:
    """NVTX as on a CUDA machine that runs no profiler: a push or pop answers -2 (NVTX's
    ``NVTX_NO_PUSH_POP_TRACKING``, measured on the H200), a range's id is 0, nothing is recorded."""

    def rangePushA(self, message):
        return -2

    def rangePop(self):
        return -2

    def rangeStartA(self, message):
        return 0

    def rangeEnd(self, range_id):
        return None

    def markA(self, message):
        return None

    def deviceRangeStart(self, message, stream):
        return None

    def deviceRangeEnd(self, range_handle, stream):
        return None


def _install_autocast(patch, torch):
    """``torch.autocast("cuda")`` as the CPU's autocast (bare, it warns and disables itself, and the
    suite computes in fp32 where a GPU computes in bf16 or fp16), fp16 where no dtype is given, as
    CUDA's; ``is_autocast_enabled`` and ``get_autocast_dtype`` read "cuda" as the CPU's (a device
    tensor is a CPU tensor to autocast's dispatch key). A CPU autocast of the suite's own is
    therefore read as "cuda" too. ``custom_fwd(device_type="cuda")`` casts device tensors as it
    casts CUDA tensors, with no patch: their ``device.type`` is "cuda"."""
    autocast = torch.autocast
    original = vars(autocast)["__init__"]
    enabled, dtype_of = torch.is_autocast_enabled, torch.get_autocast_dtype

    def __init__(self, device_type, *args, **kwargs):
        if device_type != "cuda":
            return original(self, device_type, *args, **kwargs)
        if not args and kwargs.get("dtype") is None:
            kwargs["dtype"] = torch.float16
        with warnings.catch_warnings():
            if kwargs.get("dtype") is torch.float32:  # CUDA takes it (everything in fp32); the CPU warns,
                warnings.simplefilter("ignore")  # then disables itself: the same dtypes, without the warning
            return original(self, "cpu", *args, **kwargs)

    def is_autocast_enabled(device_type="cuda"):  # torch's own: no argument is "cuda"
        return enabled("cpu" if device_type == "cuda" else device_type)

    def get_autocast_dtype(device_type):
        return dtype_of("cpu") if device_type == "cuda" and enabled("cpu") else dtype_of(device_type)

    patch.setattr(autocast, "__init__", __init__)
    autocast_lists.install(patch)  # CUDA's fp32 lists, where the CPU's differ
    patch.setattr(torch, "is_autocast_enabled", is_autocast_enabled)
    patch.setattr(torch, "get_autocast_dtype", get_autocast_dtype)
