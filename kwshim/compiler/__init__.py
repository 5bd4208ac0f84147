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

from .resources import metadata_value, refuse_beyond_limits
from .specializations import (SourceUnavailable, compiled_for_launch, compiled_kernels, language_lost,
                              remember_language, unavailable)

__all__ = ["check_launch", "compiled_for_launch", "compiled_kernels", "refuse_beyond_limits", "remember_language",
           "unavailable", "ASM_FORMS", "listing"]

#: The forms of a compiled kernel ``kwshim run --asm`` prints, in the compiler's order.
ASM_FORMS = ("ttir", "ttgir", "llir", "ptx")

_NOTICED: list = []


def check_launch(fn, grid, args, kwargs, warmup, options=None):
    """``compile="check"`` for one launch of the kernel whose function is ``fn``: its
    ``CompiledKernel`` for the H200, after refusing what the GPU refuses (the compiler's
    ``CompilationError``; at a launch, not a ``warmup``, ``OutOfResources``). None, after a one-line
    notice the first time, where this Triton cannot compile for the H200 here, ``triton.language``
    cannot be put back as compiled Triton sees it (``language_lost``), or the kernel has no source
    file (``SourceUnavailable``). ``options``: what ``@triton.jit`` was given."""
    from ..virtual_cuda.model import H200

    reason = unavailable() or language_lost()
    if reason is not None:
        _notice(f"kwshim: compile='check' is skipped: {reason}")
        return None
    try:
        kernel = compiled_for_launch(fn, grid, args, kwargs, H200, options)
    except SourceUnavailable as error:
        _notice(f"kwshim: compile='check' skips a kernel: {error}")
        return None
    except Exception as error:
        _raise_for_either(error)
        raise
    if not warmup:
        refuse_beyond_limits(kernel, H200)
    return kernel


def listing(name, form):
    """Every specialization of the kernel ``name`` compiled in this process, in ``form`` (one of
    ``ASM_FORMS``), each after a header line; None where none was compiled."""
    kernels = compiled_kernels(name)
    if not kernels:
        return None
    parts = []
    for number, kernel in enumerate(kernels, 1):
        warps, shared = metadata_value(kernel, "num_warps"), metadata_value(kernel, "shared")
        parts.append(f"// kwshim: {name}, specialization {number} of {len(kernels)}, {form} for the H200 (sm_90), "
                     f"num_warps={warps}, shared memory {shared} bytes\n{kernel.asm[form].rstrip()}\n")
    return "\n".join(parts)


def _raise_for_either(error):
    """A plain ``CompilationError`` raised again as one that is also the interpreter's
    ``InterpreterError`` (``interpreter.refusals``): a suite expecting either sees its own. Its
    subclasses (``CompileTimeAssertionFailure``, which an autotuner prunes) stay as they are."""
    from ..interpreter.refusals import refusal_class

    refused = refusal_class()
    compilation_error = refused.__mro__[1] if refused is not None else None
    if compilation_error is not None and type(error) is compilation_error:
        raise refused(str(error)) from error


def _notice(text):
    """``text`` as a one-line ``RuntimeWarning``, once per process."""
    if text not in _NOTICED:
        _NOTICED.append(text)
        warnings.warn(text, RuntimeWarning, stacklevel=5)
