"""A CUDA device on a CPU (the ``device="cuda"`` setting): tensors asked for on ``"cuda"`` are CPU
tensors that say ``cuda:0``, ``torch.cuda`` answers as one GPU of a stated model, and Triton's driver queries answer as
the same GPU, so that a suite written for a GPU runs unedited on the interpreter.

- ``model``: the GPU that is stated (default: the H200 kwshim measures against);
- ``device_tensor``: the device's tensors, CPU tensors that say ``cuda:0``;
- ``placement``: torch's factories and ``Tensor``'s moving methods making every ``"cuda"`` tensor
  a device tensor, ``.cuda()`` and ``.cpu()`` copying;
- ``cuda_kernels``: an operator on a device tensor runs a library's kernel for ``CUDA``;
- ``moves``: ``t.data = x`` moving ``t`` where ``x`` is on the other device, as on CUDA;
- ``kernel_arguments``: a kernel handed its device tensors as CPU memory, and refusing a CPU tensor
  as compiled Triton does;
- ``torch_cuda``: ``torch.cuda``'s answers (availability, properties, streams, events, free memory);
- ``allocations``: the allocation statistics, counted from the live storages of the device's tensors;
- ``nvidia_smi``: an ``nvidia-smi`` first on ``PATH``, answering as the same GPU;
- ``triton_driver``: what ``triton.runtime.driver.active`` answers;
- ``cpu_refusals``: torch's own refusals of CPU tensors lifted where its eager code is the same on
  both devices (``flex_attention``'s backward);
- ``unused_outputs``: the zeros autograd hands a custom Function's ``backward`` for an output the
  loss does not use, on the device, as a GPU's are;
- ``host_composites``: operations that make a tensor of their own from their input's options
  (``F.one_hot``) run on CPU copies and copied back, as their CUDA tensors would have been.

All of it is set through the switch's ``Patch`` and undone with it. Nothing here is imported
unless the setting asks for it (torch is needed).
"""

__all__ = ["install"]


def install(patch, device: str) -> None:
    """Put the virtual ``device`` (``"cuda"``) in place through ``patch``."""
    from . import (cpu_refusals, cuda_kernels, device_tensor, eager_compile, host_composites, kernel_arguments, moves,
                   nvidia_smi, placement, torch_cuda, triton_driver, unused_outputs)
    from .model import H200

    torch_cuda.install(patch, H200)
    device_tensor.install(patch)
    placement.install(patch)
    moves.install(patch)
    cuda_kernels.install(patch, device_tensor.DeviceTensor)
    nvidia_smi.install(patch)
    triton_driver.install(patch, H200)
    cpu_refusals.install(patch)
    kernel_arguments.install(patch)
    unused_outputs.install(patch)
    eager_compile.install(patch)
    host_composites.install(patch)
