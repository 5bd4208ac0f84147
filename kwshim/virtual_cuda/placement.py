"""Tensors asked for on ``"cuda"`` live on the CPU: a ``TorchFunctionMode`` (as
``torch.utils._device.DeviceContext`` is built) rewrites every ``"cuda"``/``"cuda:N"`` device and
``torch.device("cuda")`` a torch function is given, positional or keyword, to ``"cpu"``, turns
``Tensor.cuda()`` into the tensor itself and drops ``pin_memory``. It sees the factories
(``torch.randn(..., device="cuda")``), ``Tensor.to``, ``Tensor.cuda``, ``*_like`` and, through
them, ``nn.Module.cuda()`` and ``.to("cuda")``.

``Tensor.is_cuda`` is True for CPU tensors while the device is on (Liger's ``assert
input.is_cuda``); ``Tensor.device`` stays ``cpu``: torch does not let a tensor's device be another
without a tensor subclass (``FakeTensor``), so ``x.device.type == "cuda"`` is False.
"""

import re

__all__ = ["install"]

_CUDA = re.compile(r"cuda(:\d+)?$")


def _on_cpu(value):
    """``value`` with a CUDA device in it made the CPU; anything else as it is."""
    import torch

    if isinstance(value, torch.device):
        return _CPU if value.type == "cuda" else value
    if isinstance(value, str) and _CUDA.match(value):
        return _CPU
    return value


_CPU = None


def _mode_class():
    import torch
    from torch.overrides import TorchFunctionMode

    global _CPU
    _CPU = torch.device("cpu")
    cuda, pin_memory, is_pinned = torch.Tensor.cuda, torch.Tensor.pin_memory, torch.Tensor.is_pinned

    class VirtualCudaMode(TorchFunctionMode):
        """Every ``"cuda"`` a torch function is given becomes the CPU."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is cuda or func is pin_memory:
                return args[0]
            if func is is_pinned:
                return False
            if kwargs:
                if "device" in kwargs:
                    kwargs["device"] = _on_cpu(kwargs["device"])
                if kwargs.get("pin_memory"):
                    kwargs["pin_memory"] = False
            else:
                kwargs = {}
            if args:
                args = tuple(_on_cpu(arg) for arg in args)
            return func(*args, **kwargs)

    return VirtualCudaMode


def install(patch) -> None:
    """The mode on the torch-function stack, and ``Tensor.is_cuda`` answering True, through ``patch``."""
    import torch

    mode = _mode_class()()
    mode.__enter__()
    patch.defer(lambda: mode.__exit__(None, None, None))
    is_cuda = vars(torch._C.TensorBase)["is_cuda"]  # the C property
    patch.setattr(torch.Tensor, "is_cuda", property(lambda self: self.device.type == "cpu" or is_cuda.__get__(self)))
