"""The seam with Triton's interpreter: what kwshim puts into it while the switch is on (``install``)
and around each launch of a wrapped kernel (``launch_scope``).

- ``fixes``: what the installed interpreter cannot run (``~`` on booleans, ``tl.sort``);
- ``gpu_builder``: the interpreter's builder computing as the GPU does (casts, ``-x``, ``x // 0``,
  bf16 atomics and dots), with the arithmetic of ``kwshim.arithmetic``;
- ``gpu_reductions``: the interpreter's reduce and scan classes as the GPU reduces;
- ``language_patch``: the interpreter's patch of ``triton.language``, made only where needed;
- ``refusals``: what compiled Triton refuses, raised as it raises it;

It sits between ``kwshim.batching`` (above: running a launch's programs together) and
``kwshim.arithmetic`` (below: the H200's arithmetic). Its modules need NumPy (the interpreter's own
dependency); nothing imports them until a kernel is interpreted, so ``import kwshim`` stays free of it.
"""

import contextlib
import functools
import gc
import threading

__all__ = ["install", "use_numerics", "launch_scope", "collector_paused", "LAUNCH_LOCK"]

#: Serializes what interpreted launches share: the interpreter's one builder object and module
#: globals (the GPU arithmetic sets them for a launch), and from 3.6 ``triton.language``, which the
#: interpreter patches for each launch and restores afterwards (two launches in two threads break
#: each other: "Did you forget to add @triton.jit ?").
LAUNCH_LOCK = threading.RLock()


@functools.lru_cache(maxsize=None)
def _numerics():
    """The one ``Scope`` of the GPU arithmetic, shared by every kernel, built at the first interpreted launch."""
    from ..patching import Scope
    from .gpu_builder import entries

    return Scope(entries(), LAUNCH_LOCK)


def install(patch, numerics: str = "gpu") -> None:
    """The interpreter's fixes, its arithmetic (``numerics``: ``settings.NUMERICS``) and libdevice on
    the CPU, through ``patch`` (the switch's). The grid seam is ``batching.install``'s."""
    from ..arithmetic import libdevice, special_registers
    from . import fixes

    fixes.install(patch)
    use_numerics(patch, numerics)
    patch.setattr(_numerics(), "held", True)  # launches find them in place and set nothing
    libdevice.install(patch)
    special_registers.install(patch)


def use_numerics(patch, numerics: str) -> None:
    """Put the arithmetic ``numerics`` in place through ``patch`` (again when the switch's settings change)."""
    from .gpu_builder import entries

    for owner, name, value in entries(numerics):
        patch.set(owner, name, value)


def launch_scope(fn):
    """``scoped(function, *args, **kwargs)``: an interpreter launch of the kernel whose function is
    ``fn``, serialized on ``LAUNCH_LOCK``, run with the GPU's arithmetic set (unless the switch holds
    it), the libdevice functions and modules ``fn`` or its jitted helpers name as globals, and
    forwarders for the ``triton.language`` builtins they name by globals of their own; None where
    nothing is."""
    from ..patching import Scope
    from .gpu_builder import entries
    from .language_patch import builtin_alias_swaps
    from ..arithmetic.libdevice import global_swaps

    swaps = global_swaps(fn)
    taken = {(id(owner), name) for owner, name, _ in swaps}  # a libdevice function bound by name is libdevice's
    numerics = _numerics()
    swaps = tuple(swaps) + tuple(swap for swap in builtin_alias_swaps(fn) if (id(swap[0]), swap[1]) not in taken)
    if not swaps:
        return _quietly(numerics.call) if entries() else None  # 2.x: no module-wide builder to compute with
    both, only = Scope(entries() + swaps, LAUNCH_LOCK), Scope(swaps, LAUNCH_LOCK)

    def scoped(function, *args, **kwargs):
        return (only if numerics.held else both).call(function, *args, **kwargs)

    return _quietly(scoped)


def _quietly(call):
    """``call`` with NumPy's floating-point warnings off (a GPU overflows to inf, divides by zero
    and makes NaN quietly, where NumPy would print a ``RuntimeWarning`` for each), and Python's
    cyclic garbage collector paused (``collector_paused``)."""
    from ..arithmetic.numpy_quiet import launch

    def quietly(function, *args, **kwargs):
        with collector_paused(), launch():  # one per launch
            return call(function, *args, **kwargs)

    return quietly


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off for a launch, back on after it where it was on.

    A launch allocates hundreds of thousands of short-lived objects (the front end's types, the
    trace's steps), and each of the collector's full passes walks the whole process's heap, which
    under a test suite holds torch and the library: 8% of an fla test's whole process. What a launch leaves
    in cycles is small (about a thousand objects), and the collector takes it after the launch."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
