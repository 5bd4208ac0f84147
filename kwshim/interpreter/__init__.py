"""The interpreter as compiled Triton computes: what kwshim puts into Triton's interpreter while the
switch is on (``install``) and around each launch of a wrapped kernel (``launch_patches``).

- ``fixes``: what the installed interpreter cannot run (``~`` on booleans, ``tl.sort``);
- ``libdevice`` (with ``math_table``): the libdevice functions on the CPU;
- ``formats``: bf16 and fp8 held as ``ml_dtypes`` floats, not as their bits;
- ``conversions``: casts as the GPU's ``cvt`` (saturating, ``satfinite``, rounding modes);
- ``gpu_builder``: the interpreter's builder computing as the GPU does (casts, ``-x``, ``x // 0``,
  bf16 atomics and dots, and what compiled Triton refuses).

Its modules need NumPy (the interpreter's own dependency); nothing imports them until a kernel is
interpreted, so ``import kwshim`` stays free of it.
"""

__all__ = ["install", "launch_patches", "INSTALLED"]


def install(patch) -> None:
    """The interpreter's fixes, its GPU arithmetic and libdevice on the CPU, through ``patch``
    (the switch's)."""
    from . import fixes, gpu_builder, libdevice

    fixes.install(patch)
    for owner, name, value in gpu_builder.entries():
        patch.set(owner, name, value)
    patch.setitem(INSTALLED, "numerics", True)  # launches skip setting them again
    libdevice.install(patch)


#: ``{"numerics": True}`` while the switch holds the GPU arithmetic in place (set through its patch).
INSTALLED = {"numerics": False}


def launch_patches(fn):
    """``(numerics, swaps)``: the ``(owner, name, value)`` entries to set for each launch of the
    kernel whose function is ``fn``: the GPU's arithmetic (not needed while ``INSTALLED["numerics"]``),
    and the libdevice functions and modules it or its jitted helpers name as globals."""
    from .gpu_builder import entries
    from .libdevice import global_swaps

    return tuple(entries()), tuple(global_swaps(fn))
