"""Tensors asked for on ``"cuda"`` live on the CPU: torch's factories (every ``torch`` function
documented with a ``device`` argument: ``randn``, ``empty``, ``tensor``, ``arange``, ``*_like``, ...)
``Tensor.new_*`` and ``torch.Generator`` get ``"cpu"`` for a ``"cuda"``/``"cuda:N"``/``torch.device("cuda")`` device and
no ``pin_memory``; ``Tensor.to`` gets it for a positional device too; ``Tensor.cuda()`` and
``pin_memory()`` are the tensor itself. Modules' ``.cuda()`` and ``.to("cuda")`` go through them.

These are patched functions, not a ``TorchFunctionMode``: a mode sees every torch call, and on a
step of small calls (a tiny MLP's forward and backward) it cost 42% (``benchmarks/device_cost.py``);
the patches cost nothing where no device is given. What they cannot see is a factory bound by name
before the switch went on (``from torch import zeros``): that call asks for the real CUDA and fails
loudly ("Torch not compiled with CUDA enabled"), never silently.

``Tensor.is_cuda`` is True for CPU tensors while the device is on (Liger's ``assert
input.is_cuda``); ``Tensor.device`` stays ``cpu``: torch does not let a tensor's device be another
without a tensor subclass (``FakeTensor``), so ``x.device.type == "cuda"`` is False.
"""

import re

from . import torch_cuda
from .model import device_index

__all__ = ["install", "factory_names"]

_CUDA = re.compile(r"cuda(:\d+)?$")


def _on_cpu(value, index=False):
    """``value`` with a CUDA device in it made the CPU (``index``: an int is a device's index too, as
    torch reads ``device=0``); anything else as it is. A device other than the one GPU raises."""
    import torch

    if isinstance(value, torch.device):
        if value.type != "cuda":
            return value
        device_index(value)
        return torch.device("cpu")
    if isinstance(value, str) and _CUDA.match(value) or index and type(value) is int:
        device_index(value)
        return "cpu"
    return value


def _legacy_type(value):
    """A legacy CUDA tensor type (``torch.cuda.FloatTensor``, or its name) as the CPU's."""
    import torch

    if isinstance(value, type(torch.FloatTensor)) and value.__module__ == "torch.cuda":
        return getattr(torch, value.__name__)
    if isinstance(value, str) and value.startswith("torch.cuda."):
        return "torch." + value[len("torch.cuda."):]
    return value


def _placing(function):
    """``function`` with a ``"cuda"`` ``device=`` made the CPU and ``pin_memory`` dropped."""
    def placed(*args, **kwargs):
        if kwargs:
            device = kwargs.get("device")
            if device is not None:
                kwargs["device"] = _on_cpu(device, index=True)
            if kwargs.get("pin_memory"):
                kwargs["pin_memory"] = False
        return function(*args, **kwargs)

    placed.__name__, placed.__doc__, placed.__wrapped__ = function.__name__, function.__doc__, function
    return placed


def _generator_class(generator):
    """``torch.Generator`` making a CPU generator for ``device="cuda"``; every generator (the
    default ones among them) is still an instance of it."""
    class Meta(type(generator)):
        def __instancecheck__(cls, instance):
            return isinstance(instance, generator)

        def __subclasscheck__(cls, subclass):
            return issubclass(subclass, generator)

    class Generator(generator, metaclass=Meta):
        __doc__ = generator.__doc__

        def __new__(cls, device="cpu"):
            return generator(_on_cpu(device))

    return Generator


def factory_names():
    """The ``torch`` functions documented with a ``device`` argument (39 in torch 2.13)."""
    import torch

    return sorted(name for name in dir(torch) if not name.startswith("_") and callable(getattr(torch, name))
                  and not isinstance(getattr(torch, name), type)
                  and "device (:class:" in (getattr(torch, name).__doc__ or ""))


def install(patch) -> None:
    """The factories, ``Tensor``'s moving methods and ``Tensor.is_cuda``, through ``patch``."""
    import torch

    for name in factory_names():
        patch.setattr(torch, name, _placing(getattr(torch, name)))
    tensor = torch.Tensor
    for name in ("new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor", "new_zeros"):
        patch.setattr(tensor, name, _placing(getattr(tensor, name)))
    to = tensor.to

    def moved(self, *args, **kwargs):  # the first positional argument may be a device's index: .to(0)
        args = (_on_cpu(args[0], index=True),) + tuple(_on_cpu(arg) for arg in args[1:]) if args else args
        return to(self, *args, **{k: _on_cpu(v, index=k == "device") for k, v in kwargs.items()})

    def cuda(self, device=None, *args, **kwargs):
        device_index(device)
        return self

    retype = tensor.type

    def typed(self, *args, **kwargs):
        return retype(self, *(_legacy_type(arg) for arg in args), **{k: _legacy_type(v) for k, v in kwargs.items()})

    record_stream = tensor.record_stream

    def recorded(self, stream):  # a CPU tensor's memory is freed when it is: nothing to record
        return None if isinstance(stream, torch_cuda.Stream) else record_stream(self, stream)

    patch.setattr(tensor, "to", moved)
    patch.setattr(tensor, "type", typed)
    patch.setattr(tensor, "record_stream", recorded)
    patch.setattr(torch, "Generator", _generator_class(torch.Generator))
    patch.setattr(tensor, "cuda", cuda)
    patch.setattr(tensor, "pin_memory", lambda self, *args, **kwargs: self)
    patch.setattr(tensor, "is_pinned", lambda self, *args, **kwargs: False)
    is_cuda = vars(torch._C.TensorBase)["is_cuda"]  # the C property
    patch.setattr(tensor, "is_cuda", property(lambda self: self.device.type == "cpu" or is_cuda.__get__(self)))
