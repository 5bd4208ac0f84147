"""The GPU a virtual CUDA device states: what ``torch.cuda.get_device_properties`` and Triton's
``driver.active.utils.get_device_properties`` answer. The default is the NVIDIA H200 kwshim
measures against (sm_90: capability (9, 0), 132 SMs, 141 GiB of HBM3e)."""

from typing import NamedTuple

__all__ = ["GPU", "H200"]


class GPU(NamedTuple):
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

    @property
    def capability(self):
        return self.major, self.minor


H200 = GPU(name="NVIDIA H200 (kwshim virtual device)", major=9, minor=0, multi_processor_count=132,
           total_memory=150_110_011_392)
