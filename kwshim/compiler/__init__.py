"""The ``compile`` setting: each kernel specialization the interpreter launches is also compiled by
the installed Triton's own compiler for the GPU the switch stands for (the H200, sm_90), so a CPU
run refuses what the GPU refuses and shows what it compiles.

- ``specializations``: one launch's specialization compiled for the target, as compiled Triton's
  ``JITFunction.run`` binds, specializes and caches it (Triton's own cache: a specialization pays
  once per machine);
- ``resources``: what the GPU's launcher refuses once the kernel is compiled (``OutOfResources``:
  shared memory beyond the GPU's per-block limit).

The interpreter still computes every result; the compiler only decides what is refused and what
``warmup()`` and a launch return (the ``CompiledKernel``: ``.asm``, ``.metadata``, ``.name``).
"""

import warnings

from .resources import refuse_beyond_limits
from .specializations import compiled_for_launch, remember_language, unavailable

__all__ = ["check_launch", "compiled_for_launch", "refuse_beyond_limits", "remember_language", "unavailable"]

_NOTICED: list = []


def check_launch(fn, grid, args, kwargs, warmup):
    """``compile="check"`` for one launch of the kernel whose function is ``fn``: its
    ``CompiledKernel`` for the H200, after refusing what the GPU refuses (the compiler's
    ``CompilationError``; at a launch, not a ``warmup``, ``OutOfResources``). None, after a one-line
    notice the first time, where this Triton cannot compile for the H200 here."""
    from ..virtual_cuda.model import H200

    reason = unavailable()
    if reason is not None:
        if not _NOTICED:
            _NOTICED.append(reason)
            warnings.warn(f"kwshim: compile='check' is skipped: {reason}", RuntimeWarning, stacklevel=4)
        return None
    kernel = compiled_for_launch(fn, grid, args, kwargs, H200)
    if not warmup:
        refuse_beyond_limits(kernel, H200)
    return kernel
