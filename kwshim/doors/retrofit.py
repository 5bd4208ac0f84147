"""Fix kernels that are already built: third-party autotune/heuristics stacks, whole modules.

``kwsafe(stack)`` wraps the innermost jit kernel of an ``Autotuner``/``Heuristics`` stack and
puts it back into its parent's ``.fn``, so a library's own launch code (which holds the stack)
launches the fixed kernel. ``kwsafe_module(module)`` does that for every stack of a module and
fixes its plain kernels in place (``kernel.fix_in_place``), so that another module's
``from m import kernel`` launches the fixed kernel too.
"""

import types
import warnings
from typing import Dict, List

from .. import compat
from ..errors import PlacementError, UnsupportedSignatureError
from ..launch.kernel import KwsafeKernel, fix_in_place

__all__ = ["retrofit_stack", "kwsafe_module", "ModuleFix"]


def retrofit_stack(stack):
    """Wrap the jit kernel at the bottom of ``stack`` (an Autotuner/Heuristics nesting) in place;
    return ``stack``. A no-op when it is already wrapped or compiled."""
    nodes = list(compat.walk(stack))
    parent, child = (nodes[-2], nodes[-1]) if len(nodes) > 1 else (stack, None)
    if child is None or not compat.is_kernel(child):
        raise PlacementError(
            f"kwsafe found no @triton.jit kernel under {type(stack).__qualname__} (following .fn): "
            "it expects an autotune/heuristics stack built on a Triton kernel")
    interpreted = compat.kernel_classes().interpreted
    if interpreted is not None and isinstance(child, interpreted) and not isinstance(child, KwsafeKernel):
        parent.fn = KwsafeKernel(child)
    return stack


class ModuleFix(List[str]):
    """The names ``kwsafe_module`` fixed (a list), with ``skipped``: name -> why it was left alone."""

    skipped: Dict[str, str]


def kwsafe_module(module) -> ModuleFix:
    """Fix every Triton kernel and autotune/heuristics stack that is an attribute of ``module``,
    in place. Returns the names it fixed (already fixed and compiled kernels are not listed);
    kernels it cannot bind (a variadic device helper, say) are skipped, listed in the result's
    ``skipped`` and reported in one warning."""
    if not isinstance(module, types.ModuleType):
        raise TypeError(f"kwsafe_module expects a module, got {type(module).__qualname__}")
    interpreted = compat.kernel_classes().interpreted
    fixed, skipped = ModuleFix(), {}
    for name, value in list(vars(module).items()):
        try:
            if compat.is_stack(value):
                before = compat.innermost(value)
                if isinstance(before, KwsafeKernel):
                    continue
                retrofit_stack(value)
                if compat.innermost(value) is not before:
                    fixed.append(name)
            elif (interpreted is not None and isinstance(value, interpreted)
                  and not isinstance(value, KwsafeKernel)):
                if fix_in_place(value):
                    fixed.append(name)
        except (UnsupportedSignatureError, PlacementError) as exc:
            skipped[name] = str(exc)
    fixed.skipped = skipped
    if skipped:
        warnings.warn(f"kwsafe_module({module.__name__}) skipped {len(skipped)} kernel(s) it cannot bind: "
                      + "; ".join(f"{name}: {why}" for name, why in skipped.items()), stacklevel=2)
    return fixed
