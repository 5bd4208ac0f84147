"""What a kernel launched on the virtual device is handed: its device tensors as the CPU memory they
are, and a CPU tensor refused as compiled Triton refuses it.

Compiled Triton's launcher refuses a pointer argument the GPU cannot reach: a CPU tensor that is not
pinned raises ``ValueError: Pointer argument (at N) cannot be accessed from Triton (cpu tensor?)``
(Triton's own ``test_pointer_arguments[cpu]``). On the virtual device the interpreter could read any
CPU tensor, so a test passing one would pass here and fail on the GPU; it is refused at the
interpreter's grid seam (``GridExecutor.__call__``), before any program runs. A device tensor is
handed on as a plain CPU tensor over the same memory (``device_tensor.host_view``): the interpreter
reads and writes it with no copy, and everything below the seam (kwshim's batched grid among it)
sees ordinary tensors. Tuples, ``TensorDescriptor``\\ s and ``triton.reinterpret``'s wrappers are
looked into.
"""

import dataclasses
import sys

from .device_tensor import DeviceTensor, host_view
from .placement import is_pinned

__all__ = ["install", "refusal"]

_INTERPRETER = "triton.runtime.interpreter"


def refusal(position, name):
    """Compiled Triton's error for a CPU tensor at ``position`` (parameter ``name``)."""
    return ValueError(f"Pointer argument (at {position}) cannot be accessed from Triton (cpu tensor?) "
                      f"(kwshim: the virtual CUDA device's kernel took the CPU tensor {name!r}: "
                      f"move it with .cuda())")


def _handed(value, position, name):
    """``value`` as the interpreter is handed it: device tensors as their CPU memory; a CPU tensor
    refused."""
    import torch

    if isinstance(value, DeviceTensor):
        return host_view(value)
    if isinstance(value, torch.Tensor):
        if value.device.type == "cpu" and not is_pinned(value):
            raise refusal(position, name)
        return value
    if type(value) is tuple:
        return tuple(_handed(item, position, name) for item in value)
    base = getattr(value, "base", None)
    if not isinstance(base, torch.Tensor):
        return value
    handed = _handed(base, position, name)
    if handed is base:
        return value
    if dataclasses.is_dataclass(value):  # a TensorDescriptor
        return dataclasses.replace(value, base=handed)
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):  # triton.reinterpret's TensorWrapper
        return type(value)(handed, value.dtype)
    return value


def _handing(call):
    def __call__(self, *args_dev, **kwargs):
        names = list(getattr(self, "arg_names", None) or ())
        args_dev = tuple(_handed(value, position, names[position] if position < len(names) else position)
                         for position, value in enumerate(args_dev))
        kwargs = {key: _handed(value, names.index(key) if key in names else key, key) for key, value in kwargs.items()}
        return call(self, *args_dev, **kwargs)

    __call__.__wrapped__ = call
    return __call__


def install(patch) -> None:
    """The seam, through ``patch``, wrapping whatever the interpreter's ``GridExecutor.__call__`` is
    now (kwshim's batched grid, installed before it)."""
    executor = getattr(sys.modules.get(_INTERPRETER), "GridExecutor", None)
    if executor is not None:
        patch.setattr(executor, "__call__", _handing(executor.__call__))
