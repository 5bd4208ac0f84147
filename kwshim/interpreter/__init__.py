"""The interpreter as compiled Triton computes: what kwshim puts into Triton's interpreter while the
switch is on (``install``) and around each launch of a wrapped kernel (``launch_patches``).

Its modules need NumPy (the interpreter's own dependency); nothing imports them until a kernel is
interpreted, so ``import kwshim`` stays free of it.
"""

__all__ = ["install", "launch_patches"]


def install(patch) -> None:
    """The interpreter's fixes and libdevice on the CPU, through ``patch`` (the switch's)."""
    from . import fixes, libdevice

    fixes.install(patch)
    libdevice.install(patch)


def launch_patches(fn) -> list:
    """``(namespace, name, value)`` to set for each launch of the kernel whose function is ``fn``:
    the libdevice functions and modules it or its jitted helpers name as globals."""
    from .libdevice import global_swaps

    return global_swaps(fn)
