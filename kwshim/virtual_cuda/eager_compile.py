"""``torch.compile`` on the virtual device: the function runs eagerly, as the "force_eager" stance
runs it.

Libraries compile the torch code around their kernels (flash-linear-attention's rwkv7 channel
mixing backward: ``@torch.compile(fullgraph=True)`` over a ``cat``, a subtraction and a sum). On a
GPU, Dynamo traces it and Inductor fuses it into a GPU kernel. Dynamo cannot trace a device tensor
(a CPU tensor subclass, not a traceable wrapper: "does not know how to trace method dim"), and
Inductor would compile for the CPU, not for the GPU the device stands for. So while the device is
on, the compiler's stance is ``"force_eager"`` (``torch.compiler.set_stance``; before torch 2.6,
which has no stances, Dynamo's own switch ``torch._dynamo.config.disable``, read at every compiled
call): a compiled function runs its eager torch operations on the device's tensors, and the Triton
kernels it launches run under the switch as every other launch does. What differs from the GPU: the
fused kernel's rounding (the eager operations round as the CPU's do, as every torch operation on
the device does), a fullgraph function that Dynamo would refuse runs anyway, and Dynamo's counters
count nothing.
"""

__all__ = ["install"]


def install(patch) -> None:
    """The eager stance while ``patch`` holds; probed, not read from a version: a torch with
    neither stances nor ``torch._dynamo.config.disable`` is left alone."""
    try:
        import torch.compiler
        from torch._dynamo import config
    except ImportError:  # a torch without Dynamo: nothing compiles
        return
    if hasattr(torch.compiler, "set_stance"):
        stance = torch.compiler.set_stance("force_eager")
        patch.on_undo(lambda: stance.__exit__(None, None, None))
    elif isinstance(getattr(config, "disable", None), bool):
        prior = config.disable
        config.disable = True
        patch.on_undo(lambda: setattr(config, "disable", prior))
