"""The gradients autograd makes up for a custom ``torch.autograd.Function``'s unused outputs.

Where an output of a Function takes no part in the loss (a recurrent kernel's final state, returned
beside its output), the engine hands ``backward`` zeros in the output's place
(``materialize_grads``), made on the device the output's C++ side names: for a device tensor, the
CPU. A GPU hands a CUDA tensor there, and a kernel launched with the CPU one refused it
(flash-linear-attention's ``chunk_rwkv6`` backward: "cannot be accessed from Triton (cpu
tensor?)"). So ``Function.apply`` notes, on the node it made, which of its outputs are device
tensors, and the node gives ``backward`` each of their gradients that arrives as a CPU tensor as a
device tensor (the same memory; an allocation of the device, as the GPU's zeros are).
"""

import torch

from . import device_tensor

__all__ = ["install"]

_NOTED = "_kwshim_device_outputs"


def install(patch) -> None:
    """``Function.apply`` and its nodes' ``apply``, through ``patch``."""
    function, node = torch.autograd.function.Function, torch.autograd.function.BackwardCFunction
    applied = vars(function)["apply"].__func__
    backward = vars(node)["apply"]

    def apply(cls, *args, **kwargs):
        outputs = applied(cls, *args, **kwargs)
        for output in outputs if isinstance(outputs, (tuple, list)) else (outputs,):
            made = getattr(output, "grad_fn", None) if isinstance(output, device_tensor.DeviceTensor) else None
            if isinstance(made, node):
                noted = getattr(made, _NOTED, None) or set()
                noted.add(output.output_nr)
                setattr(made, _NOTED, noted)
        return outputs

    def apply_backward(self, *grads):
        noted = getattr(self, _NOTED, None)
        if noted:
            grads = tuple(device_tensor.adopt(grad) if index in noted and type(grad) is torch.Tensor else grad
                          for index, grad in enumerate(grads))
        return backward(self, *grads)

    patch.setattr(function, "apply", classmethod(apply))
    patch.setattr(node, "apply", apply_backward)
