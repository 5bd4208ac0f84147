"""``@kwsafe``: make the Triton interpreter bind launch arguments as compiled Triton does.

Under ``TRITON_INTERPRET=1`` Triton's interpreter strips "reserved" launch keywords
(``num_warps``, ``num_stages``, ...) even when the kernel declares a parameter of that name;
compiled Triton binds them. This module only dispatches: a kernel gets a ``KwsafeKernel``
(``kernel.py``), an autotune/heuristics stack is fixed in place (``retrofit.py``).
"""

from typing import TypeVar, overload

from .. import compat
from ..errors import PlacementError, UnsupportedTritonError
from ..launch.kernel import KwsafeKernel
from .retrofit import retrofit_stack

__all__ = ["kwsafe"]

_PLACEMENT = (
    "@kwsafe goes directly above @triton.jit and below @triton.autotune / @triton.heuristics:\n"
    "    @triton.autotune(...)\n    @kwsafe\n    @triton.jit\n    def kernel(...): ...")

_NO_KERNEL = object()

K = TypeVar("K")


@overload
def kwsafe() -> "type[kwsafe]": ...  # type: ignore[valid-type]


@overload
def kwsafe(kernel: K) -> K: ...


def kwsafe(kernel=_NO_KERNEL):
    """Make an interpreted Triton kernel receive every launch value its parameters name.

    Use as ``@kwsafe`` or ``@kwsafe()`` between ``@triton.autotune``/``@triton.heuristics`` and
    ``@triton.jit``. In compiled mode it returns the kernel itself (``kwsafe(k) is k``).
    It also accepts an already-built ``Autotuner``/``Heuristics`` stack: it then fixes the
    innermost kernel in place and returns the stack itself (see ``kwshim.retrofit``).
    """
    if kernel is _NO_KERNEL:  # @kwsafe()
        return kwsafe
    if isinstance(kernel, KwsafeKernel):
        return kernel
    classes = compat.kernel_classes()
    if classes.interpreted is not None and isinstance(kernel, classes.interpreted):
        return KwsafeKernel(kernel)
    if isinstance(kernel, classes.jit):
        if classes.interpreted is None and compat.interpreter_requested():
            raise UnsupportedTritonError(
                f"TRITON_INTERPRET is set, but Triton {compat.triton_version()} has no interpreter "
                "(it arrived in 2.2.0), so kwsafe cannot apply: upgrade to Triton >= 2.2.0")
        return kernel  # compiled mode: compiled Triton already binds every parameter
    if compat.is_stack(kernel):
        return retrofit_stack(kernel)
    raise PlacementError(
        f"kwsafe expects a Triton kernel made by @triton.jit, got {_describe(kernel)}. {_PLACEMENT}")


def _describe(obj):
    if obj is None:
        return "None"
    if isinstance(obj, type):
        return f"the class {obj.__qualname__}"
    if callable(obj) and hasattr(obj, "__qualname__"):
        return f"the plain function {obj.__qualname__}() (is @kwsafe written below @triton.jit?)"
    return f"an object of type {type(obj).__qualname__}"
