"""``@kwsafe``: make the Triton interpreter bind launch arguments as compiled Triton does.

Under ``TRITON_INTERPRET=1`` Triton's interpreter strips "reserved" launch keywords
(``num_warps``, ``num_stages``, ...) even when the kernel declares a parameter of that name;
compiled Triton binds them. Every interpreter release passes *positional* values through
untouched, so the wrapped kernel binds each launch itself (see ``binding.py``) and hands the
interpreter every parameter positionally, with no launch keyword at all.
"""

import copy
import importlib
import pickle
import threading

import wrapt

from . import _triton
from .binding import BindingPlan
from .errors import LaunchArgumentError, PlacementError, UnsupportedTritonError

__all__ = ["kwsafe", "KwsafeKernel"]

_PLACEMENT = (
    "@kwsafe goes directly above @triton.jit and below @triton.autotune / @triton.heuristics:\n"
    "    @triton.autotune(...)\n    @kwsafe\n    @triton.jit\n    def kernel(...): ...")


_NO_KERNEL = object()

#: Serializes interpreted launches of kwsafe kernels. From 3.6 the interpreter patches
#: triton.language for the length of each launch and restores it afterwards, so two launches in
#: two threads break each other ("Did you forget to add @triton.jit ?"); the GIL serializes the
#: interpreter's work anyway, so the lock costs nothing but an uncontended acquire.
_LAUNCH_LOCK = threading.RLock()


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
    classes = _triton.kernel_classes()
    if classes.interpreted is not None and isinstance(kernel, classes.interpreted):
        return KwsafeKernel(kernel)
    if isinstance(kernel, classes.jit):
        if classes.interpreted is None and _triton.interpreter_requested():
            raise UnsupportedTritonError(
                f"TRITON_INTERPRET is set, but Triton {_triton.triton_version()} has no interpreter "
                "(it arrived in 2.2.0), so kwsafe cannot apply: upgrade to Triton >= 2.2.0")
        return kernel  # compiled mode: compiled Triton already binds every parameter
    if _triton.is_stack(kernel):
        from .retrofit import retrofit_stack

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


class KwsafeKernel(wrapt.ObjectProxy):
    """An interpreted kernel whose launches bind as compiled Triton 3.x binds them.

    It is the kernel for every other purpose: ``isinstance``, attributes, hash and equality
    read through to it. Launch paths (``[grid]``, ``run``, ``warmup``) are its own, because the
    kernel's own ``__getitem__`` never calls a proxy's ``run``.
    """

    def __init__(self, kernel):
        super().__init__(kernel)
        self._self_plan = BindingPlan(_kernel_name(kernel), kernel.fn, _triton.launch_options())
        self._self_launcher_for = _launcher_factory(kernel, self._self_plan)

    # -- launch paths ----------------------------------------------------------------------
    # The hot path of every launch. Each binds inline (no helper frame: on this interpreter
    # each frame under a running kernel costs time) and hands the interpreter positional
    # values only, with no launch keyword.
    def __getitem__(self, grid):
        return self._self_launcher_for(grid)

    def run(self, *args, grid, warmup=False, **kwargs):
        plan = self._self_plan
        if not kwargs and len(args) == plan.arity and not warmup:
            with _LAUNCH_LOCK:
                return self.__wrapped__[grid](*args)
        try:
            bound = plan.fast_bind(*args, **kwargs)
        except TypeError:
            plan.fail(args, kwargs)
        if warmup:
            return None
        with _LAUNCH_LOCK:
            if plan.has_keyword_only:
                return self.__wrapped__[grid](*bound[0], **bound[1])
            return self.__wrapped__[grid](*bound)

    @property
    def warmup(self):
        if not hasattr(self.__wrapped__, "warmup"):
            raise AttributeError(f"{type(self.__wrapped__).__name__!r} object has no attribute 'warmup'")
        run = self.run

        def warmup(*args, grid, **kwargs):
            return run(*args, grid=grid, warmup=True, **kwargs)

        return warmup

    def __call__(self, *args, **kwargs):
        # A call from inside another kernel (a device-function call): nothing to bind.
        return self.__wrapped__(*args, **kwargs)

    # -- transparency ----------------------------------------------------------------------
    @property
    def __name__(self):
        # 2.x InterpretedFunction has no __name__ of its own; every release's fn does.
        return getattr(self.__wrapped__, "__name__", None) or self.__wrapped__.fn.__name__

    def __repr__(self):
        return f"<kwsafe {self.__wrapped__!r}>"

    def __copy__(self):
        return type(self)(copy.copy(self.__wrapped__))

    def __deepcopy__(self, memo):
        return type(self)(copy.deepcopy(self.__wrapped__, memo))

    def __reduce_ex__(self, protocol):
        module, qualname = self.__wrapped__.fn.__module__, self.__wrapped__.fn.__qualname__
        try:
            found = _resolve(module, qualname)
        except Exception:
            found = None
        if found is None or found.__wrapped__ is not self.__wrapped__:
            raise pickle.PicklingError(
                f"cannot pickle {self!r}: kwsafe kernels pickle by reference, and it is not "
                f"reachable as {module}.{qualname}")
        return _resolve, (module, qualname)

    def __reduce__(self):
        return self.__reduce_ex__(2)


def _launcher_factory(kernel, plan):
    """``launcher_for(grid)``: what ``kernel[grid]`` returns, built from values fixed per kernel."""
    bind, fail, keyword_only, arity, name = (
        plan.fast_bind, plan.fail, plan.has_keyword_only, plan.arity, plan.kernel_name)
    lock = _LAUNCH_LOCK

    def launcher_for(grid):
        def launcher(*args, **kwargs):
            if not kwargs and len(args) == arity:  # every parameter given positionally: bound as is
                with lock:
                    return kernel[grid](*args)
            if kwargs and ("grid" in kwargs or "warmup" in kwargs):
                key = "grid" if "grid" in kwargs else "warmup"
                raise LaunchArgumentError(f"{name}() got multiple values for keyword argument '{key}'")
            try:
                bound = bind(*args, **kwargs)
            except TypeError:
                fail(args, kwargs)
            with lock:
                if keyword_only:
                    return kernel[grid](*bound[0], **bound[1])
                return kernel[grid](*bound)

        return launcher

    return launcher_for


def _kernel_name(kernel):
    fn = kernel.fn
    return getattr(fn, "__name__", None) or getattr(kernel, "__name__", "kernel")


def _resolve(module, qualname):
    """Find the kwsafe kernel named ``module.qualname`` (pickling by reference): the name may be
    bound to the kernel itself or to an autotune/heuristics stack around it."""
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    seen = 0
    while not isinstance(obj, KwsafeKernel):
        obj = getattr(obj, "fn", None)
        seen += 1
        if obj is None or seen > 32:
            raise pickle.UnpicklingError(f"{module}.{qualname} holds no kwsafe kernel")
    return obj
