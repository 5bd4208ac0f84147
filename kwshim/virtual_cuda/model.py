"""The GPU a virtual CUDA device states: what ``torch.cuda.get_device_properties`` and Triton's
``driver.active.utils.get_device_properties`` answer. The default is the NVIDIA H200 kwshim
measures against (sm_90: capability (9, 0), 132 SMs, 141 GiB of HBM3e)."""

from typing import NamedTuple

__all__ = ["GPU", "H200", "CUDA_VERSION", "device_index"]


class GPU(NamedTuple):
    """A GPU as ``torch.cuda.get_device_properties`` and Triton's driver describe it: its name,
    capability (``major``, ``minor``), SM count, memory in bytes, and the per-block limits the
    compile check holds a kernel to (``max_shared_memory``: the opt-in shared memory of a block).
    ``H200`` is the one the virtual device states."""

    name: str
    major: int
    minor: int
    multi_processor_count: int
    total_memory: int  #: bytes
    warp_size: int = 32
    max_shared_memory: int = 232448  #: bytes per block, opt-in (sm_90)
    registers_per_block: int = 65536
    clock_rate_khz: int = 1980000
    memory_clock_rate_khz: int = 2619000
    memory_bus_width: int = 6144
    l2_cache_size: int = 62914560
    smi_memory_mib: int = 143771  #: what ``nvidia-smi`` reports (more than torch's ``total_memory``)

    @property
    def capability(self):
        return self.major, self.minor


H200 = GPU(name="NVIDIA H200 (kwshim virtual device)", major=9, minor=0, multi_processor_count=132,
           total_memory=150_110_011_392)

#: ``torch.version.cuda`` on the virtual device: the CUDA of the H200's torch (2.11.0+cu130).
CUDA_VERSION = "13.0"


def device_index(device=None):
    """0 for the one virtual GPU (None, 0, "cuda", "cuda:0", a torch.device); for another index the
    error a one-GPU machine raises (torch's ``AcceleratorError``, a ``RuntimeError``), naming kwshim."""
    index = getattr(device, "index", device)
    if isinstance(device, str):
        index = int(device.split(":")[1]) if ":" in device else None
    if index not in (None, 0, -1):
        import torch

        error = getattr(torch, "AcceleratorError", RuntimeError)
        raise error(f"kwshim: the virtual CUDA device has one GPU (index 0); device {device!r} does not exist "
                    "(a one-GPU machine raises 'invalid device ordinal')")
    return 0
