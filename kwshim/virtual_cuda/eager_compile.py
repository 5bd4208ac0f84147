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

import functools
import sys

__all__ = ["install"]


def install(patch) -> None:
    """The eager stance while ``patch`` holds, from the moment Dynamo is there: now, if it is
    imported, else at the first ``torch.compile`` (importing Dynamo changes torch's own functions,
    so the switch does not import it)."""
    import torch

    if _eager(patch):
        return
    compile_function = torch.compile
    done: list = []

    @functools.wraps(compile_function)
    def compile(*args, **kwargs):
        compiled = compile_function(*args, **kwargs)  # imports Dynamo
        if not done:
            done.append(_eager(patch))
        return compiled

    patch.setattr(torch, "compile", compile)


def _eager(patch) -> bool:
    """Run compiled functions eagerly until ``patch`` is undone, if Dynamo is imported. Probed, not
    read from a version: a torch with neither stances nor Dynamo's switch is left alone."""
    if "torch._dynamo" not in sys.modules:
        return False
    try:
        import torch.compiler
        from torch._dynamo import config
    except ImportError:  # a Dynamo that does not import beside this Triton (2.x): nothing compiles
        return True

    if hasattr(torch.compiler, "set_stance"):
        stance = torch.compiler.set_stance("force_eager")
        patch.on_undo(lambda: stance.__exit__(None, None, None))
    elif isinstance(getattr(config, "disable", None), bool):
        prior = config.disable
        config.disable = True
        patch.on_undo(lambda: setattr(config, "disable", prior))
    return True
