"""Fix kernels that are already built: third-party autotune/heuristics stacks, whole modules.

``kwsafe(stack)`` wraps the innermost jit kernel of an ``Autotuner``/``Heuristics`` stack and
puts it back into its parent's ``.fn``, so a library's own launch code (which holds the stack)
launches the fixed kernel. The stack object itself is returned, changed in place.
"""

import types

from . import _triton
from .errors import PlacementError

__all__ = ["retrofit_stack", "kwsafe_module"]

_MAX_DEPTH = 32


def retrofit_stack(stack):
    """Wrap the jit kernel at the bottom of ``stack`` (an Autotuner/Heuristics nesting) in place;
    return ``stack``. A no-op when it is already wrapped or compiled."""
    from .decorator import kwsafe

    parent = stack
    for _ in range(_MAX_DEPTH):
        child = getattr(parent, "fn", None)
        if child is None:
            break
        if _triton.is_stack(child):
            parent = child
            continue
        if _triton.is_kernel(child):
            fixed = kwsafe(child)
            if fixed is not child:
                parent.fn = fixed
            return stack
        break
    raise PlacementError(
        f"kwsafe found no @triton.jit kernel under {type(stack).__qualname__} (following .fn): "
        "it expects an autotune/heuristics stack built on a Triton kernel")


def kwsafe_module(module):
    """Apply ``kwsafe`` to every Triton kernel (or autotune/heuristics stack) that is an
    attribute of ``module``, in place. Returns the names it fixed (already fixed and compiled
    kernels are not listed)."""
    from .decorator import KwsafeKernel, kwsafe

    if not isinstance(module, types.ModuleType):
        raise TypeError(f"kwsafe_module expects a module, got {type(module).__qualname__}")
    fixed = []
    for name, value in list(vars(module).items()):
        if _triton.is_kernel(value):
            wrapped = kwsafe(value)
            if wrapped is not value:
                setattr(module, name, wrapped)
                fixed.append(name)
        elif _triton.is_stack(value):
            before = _innermost(value)
            if isinstance(before, KwsafeKernel):
                continue
            kwsafe(value)
            if _innermost(value) is not before:
                fixed.append(name)
    return fixed


def _innermost(stack):
    node = stack
    for _ in range(_MAX_DEPTH):
        if not _triton.is_stack(node):
            return node
        node = node.fn
    return node
