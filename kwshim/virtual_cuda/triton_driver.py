"""What ``triton.runtime.driver.active`` answers on the virtual CUDA device: the stated GPU, without
loading a CUDA driver (Triton's own CUDA driver counts itself active once ``torch.cuda`` says yes,
and would then load ``libcuda``). Persistent kernels ask it for their SM count
(``driver.active.utils.get_device_properties(0)["multiprocessor_count"]``); the interpreter runs
the kernels."""

__all__ = ["install", "driver_entries", "VirtualDriver"]


class _Utils:
    def __init__(self, gpu):
        self._gpu = gpu

    def get_device_properties(self, device=0):
        gpu = self._gpu
        return {"max_shared_mem": gpu.max_shared_memory, "max_num_regs": gpu.registers_per_block,
                "multiprocessor_count": gpu.multi_processor_count, "warpSize": gpu.warp_size,
                "sm_clock_rate": gpu.clock_rate_khz, "mem_clock_rate": gpu.memory_clock_rate_khz,
                "mem_bus_width": gpu.memory_bus_width}


class VirtualDriver:
    """Triton's driver for the stated GPU: device 0, stream 0, its target and properties."""

    def __init__(self, gpu):
        self._gpu = gpu
        self.utils = _Utils(gpu)
        self.backend = "cuda"

    @staticmethod
    def is_active():
        return True

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        if device != 0:
            raise RuntimeError(f"kwshim: the virtual CUDA device has one GPU (index 0), not {device!r}")

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", self._gpu.major * 10 + self._gpu.minor, self._gpu.warp_size)

    def get_active_torch_device(self):
        import torch

        return torch.device("cuda", 0)

    def get_device_interface(self):
        import torch

        return torch.cuda

    def get_empty_cache_for_benchmark(self):
        """What ``triton.testing.do_bench`` zeroes before each run to flush the cache: the stated
        GPU's L2 (Triton's CUDA driver takes 256 MB, which costs a CPU more than the runs it times)."""
        import torch

        return torch.empty(self._gpu.l2_cache_size // 4, dtype=torch.int)

    def clear_cache(self, cache):
        cache.zero_()


def install(patch, gpu) -> None:
    """``triton.runtime.driver``'s active (and default) driver the virtual one, through ``patch``."""
    for owner, name, value in driver_entries(gpu):
        patch.setattr(owner, name, value)


def driver_entries(gpu):
    """``(owner, name, value)``: what makes ``triton.runtime.driver``'s active (and default) driver
    the virtual one for ``gpu``; none without Triton's driver module."""
    import importlib

    try:  # the module: ``triton.runtime.driver`` as an attribute is its DriverConfig object
        module = importlib.import_module("triton.runtime.driver")
    except ImportError:
        return []
    config, virtual = module.driver, VirtualDriver(gpu)
    if "_obj" in vars(config):  # 2.x: a lazy proxy
        return [(config, "_obj", virtual)]
    if "_active" in vars(config):  # 3.5 on: lazy properties over _default and _active
        return [(config, "_default", virtual), (config, "_active", virtual)]
    return [(config, "default", virtual), (config, "active", virtual)]  # 3.0-3.4: plain attributes
