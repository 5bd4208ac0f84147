"""torch operations whose C++ body makes a tensor of its own from its input's options
(``at::arange(n, self.options())``) and then mixes it with the input: on CUDA that tensor is a CUDA
tensor; a device tensor's C++ device is the CPU, so it came out a plain CPU tensor, and the next
operation refused it beside the device's tensors ("Expected all tensors to be on the same device":
``F.one_hot``, which transformers' mixture-of-experts routing calls) or returned it as the result,
on the CPU (``torch.vander``). These operations decompose above torch's Python dispatch, where the
device's tensors never see them, so each is run here on CPU copies of its device tensors (through
autograd, as ``.cpu()`` copies) and its results copied back onto the device (as ``.cuda()``).

The list is what a scan of torch's operations on device tensors found (``tests/test_device_tensors.py``
holds each); another such operation still fails loudly, naming kwshim.
"""

import torch
from torch.utils._pytree import tree_map_only

from . import cuda_kernels
from .device_tensor import DeviceTensor, to_device, to_host

__all__ = ["install", "HOSTED"]

#: (namespace, name) of the operations run on the host where a device tensor is among their arguments
HOSTED = ((torch.nn.functional, "one_hot"), (torch, "combinations"), (torch, "quantile"), (torch, "nanquantile"),
          (torch.Tensor, "quantile"), (torch.Tensor, "nanquantile"), (torch, "vander"))


def _hosted(function):
    """``function`` run on CPU copies of its device tensors, its results copied onto the device."""
    name = function.__name__

    def on_host(*args, **kwargs):
        if not any(isinstance(value, DeviceTensor) for value in (*args, *kwargs.values())) \
                or cuda_kernels.serves(name):  # a library's CUDA kernel for it runs, as on a GPU
            return function(*args, **kwargs)
        args, kwargs = tree_map_only(torch.Tensor, to_host, (args, kwargs))
        return tree_map_only(torch.Tensor, to_device, function(*args, **kwargs))

    on_host.__name__, on_host.__doc__, on_host.__wrapped__ = function.__name__, function.__doc__, function
    return on_host


def install(patch) -> None:
    """Each of ``HOSTED``, through ``patch``."""
    for namespace, name in HOSTED:
        function = getattr(namespace, name, None)
        if function is not None:
            patch.setattr(namespace, name, _hosted(function))
