"""What compiled Triton's launcher refuses after compiling: a kernel whose shared memory exceeds
the GPU's per-block limit raises ``OutOfResources`` when it is first launched (``CompiledKernel.
_init_handles``), never at ``warmup()``; Triton's autotuner times such a Config as infinitely slow.
Registers and spills need the driver's loader, which a CPU does not have."""

__all__ = ["refuse_beyond_limits", "metadata_value"]


def refuse_beyond_limits(kernel, gpu) -> None:
    """Raise Triton's ``OutOfResources`` where ``kernel`` (a ``CompiledKernel``) needs more shared
    memory than ``gpu`` (``virtual_cuda.model.GPU``) gives a block, as the GPU's launcher raises it."""
    from triton.runtime.errors import OutOfResources

    shared = metadata_value(kernel, "shared")
    if shared is not None and shared > gpu.max_shared_memory:
        raise OutOfResources(shared, gpu.max_shared_memory, "shared memory")


def metadata_value(kernel, name):
    """``kernel.metadata``'s ``name`` (a dict's key up to 3.0, an attribute after), or None."""
    metadata = getattr(kernel, "metadata", None)
    if isinstance(metadata, dict):  # 3.0: a dict
        return metadata.get(name)
    return getattr(metadata, name, None)
