"""An interpreted kernel whose launches bind as compiled Triton 3.x binds them.

Every interpreter release passes *positional* values to the kernel untouched, so a launch is
bound here (``binding.BindingPlan``) and handed to the interpreter with every parameter given
positionally and no launch keyword. ``LaunchPaths`` holds one kernel's launch paths
(``kernel[grid](...)`` and ``kernel.run(...)``); three things use it:

- ``KwsafeKernel``, the proxy ``@kwsafe`` returns;
- ``fix_in_place``, which fixes a kernel object itself (every reference to it sees the fix);
- the switch (``kwshim.activate``), which routes every interpreted kernel's launches here.
"""

import copy
import functools
import importlib
import pickle
import weakref
from typing import Any, Dict, Tuple

import wrapt

from .. import compat, interpreter, launch_state
from ..errors import LaunchArgumentError, UnsupportedSignatureError
from ..patching import Patch
from ..settings import ACTIVATIONS
from . import options, scalars
from .binding import BindingPlan, check_signature
from .jit_answers import InterpretedKernel

__all__ = ["KwsafeKernel", "LaunchPaths", "paths_of", "launcher_via_paths", "warmup_via_paths", "RunSlot",
           "fix_in_place", "is_fixed_in_place"]

#: Serializes interpreted launches where the interpreter needs it (``interpreter.LAUNCH_LOCK``: a
#: module-wide builder, and from 3.6 triton.language patched for the length of each launch). A
#: launch through ``interpreter.launch_scope`` is serialized by the scope, on the same lock.
_LAUNCH_LOCK = interpreter.LAUNCH_LOCK


class LaunchPaths:
    """One interpreted kernel's launch paths, built once from values fixed per kernel.

    ``launcher_for(grid, kernel)`` is what ``kernel[grid]`` returns; ``run(*args, grid, warmup, **kw)``
    is ``kernel.run``. Both follow compiled Triton's order: the keywords compiled ``run``
    injects itself (``debug``, ...), pre-run hooks, binding errors, option values, unknown keywords.
    """

    def __init__(self, kernel):
        name = compat.kernel_name(kernel)
        check_signature(name, kernel.fn, compat.compiler_accepts())
        plan = BindingPlan(name, kernel.fn, options.known_names())
        self.plan = plan
        injected = compat.injected_keywords()
        declares_injected = bool(plan.names & injected.keys())
        has_hooks = hasattr(kernel, "add_pre_run_hook")
        getitem, method_run = compat.pristine_interpreter_methods()
        lock = _LAUNCH_LOCK if compat.interpreter_shares_launch_state() else None
        bind, fail, keyword_only = plan.fast_bind, plan.fail, plan.has_keyword_only
        arity = -1 if declares_injected else plan.arity
        empty: dict = {}

        check_options = options.check

        def check(kwargs):
            check_options(name, kwargs)

        # Only keywords some backend validates, or deprecated ones, need the options check.
        checked = options.option_names() | frozenset(options.DEPRECATED)
        injected_names = frozenset(injected)
        this = weakref.ref(kernel)  # held weakly: the table of paths must not keep a kernel alive
        convert = scalars.converter(kernel)  # None: no runtime scalar needs typing
        # GPU arithmetic, and libdevice named by its globals: every way into the interpreter (the
        # fast path too) runs through ``scoped`` (None: nothing to set)
        scoped = interpreter.launch_scope(kernel.fn)
        if scoped is not None:  # it takes the launch lock itself (a second acquire: ~1,000 instructions)
            lock = None
        raw = _raw_launch(this, getitem, method_run, lock, scoped, keyword_only)

        def with_injected(kwargs):
            """The launch's keywords as compiled ``run`` completes them (a copy). Called where that
            matters: the kernel declares an injected name, the caller gave one, or hooks see them."""
            kwargs = dict(kwargs)
            for key, (value, caller_wins) in injected.items():
                if not (caller_wins and key in kwargs):
                    kwargs[key] = value
            return kwargs

        def launch(grid, args, kwargs, warmup=False):
            """A launch the fast path does not take; ``warmup``: compiled Triton compiles without
            launching, so bind and check only (no hooks)."""
            __tracebackhide__ = True  # pytest shows the caller's line, then what was refused  # noqa: F841
            kernel, given = this(), kwargs
            hooks = kernel.pre_run_hooks if has_hooks and not warmup else None
            if declares_injected or hooks or not injected_names.isdisjoint(kwargs):
                kwargs = with_injected(kwargs)
            if hooks:  # compiled Triton calls them with the caller's values, before binding
                for hook in list(hooks):
                    hook(*args, **kwargs)
            try:  # bound here, not in a helper: every launch with keywords would pay for its frame
                bound = bind(*args, **kwargs)
            except TypeError:
                bound = None
            if bound is None:
                fail(args, kwargs, check)
            if not checked.isdisjoint(kwargs):
                check_options(name, kwargs)
            compiled = None
            if _compiling():
                try:
                    compiled = _compiled(kernel, grid, args, given, warmup)
                except Exception as refusal:  # the GPU's refusal, from the launch: the check's frames add nothing
                    raise refusal.with_traceback(None)
            if warmup:
                return compiled
            if keyword_only:
                positional, keywords = bound
            else:
                positional, keywords = bound, empty
            if convert is not None:
                positional = convert(positional)
            fusion, warps = "enable_fp_fusion" in kwargs, "num_warps" in kwargs
            if not hooks and not fusion and not warps:
                result = raw(grid, positional, keywords)
                return result if compiled is None else compiled
            with (lock or _LAUNCH_LOCK), Patch() as patch:
                if hooks:  # the interpreter must not call the hooks again
                    patch.setattr(kernel, "pre_run_hooks", [])
                if fusion:  # a launch option the interpreter drops: the GPU arithmetic follows it
                    patch.setattr(launch_state, "requested_fusion", bool(kwargs["enable_fp_fusion"]))
                if warps:  # ... and tl.extra.cuda.num_warps() answers it
                    patch.setattr(launch_state, "launch_warps", kwargs["num_warps"])
                result = raw(grid, positional, keywords)
            return result if compiled is None else compiled

        def launcher_for(grid, kernel):
            """What ``kernel[grid]`` returns. It holds ``kernel``, as compiled Triton's launcher holds
            its kernel: ``make_kernel()[grid](...)`` launches a kernel nothing else holds."""
            if type(grid) is list:  # compiled Triton launches a list grid; the interpreter cannot
                grid = tuple(grid)
            elif callable(grid):
                grid = _tuple_grid(grid)

            def launcher(*args, **kwargs):
                __tracebackhide__ = True  # noqa: F841  (pytest: the caller's line is the launch)
                if not kwargs and len(args) == arity and not (has_hooks and kernel.pre_run_hooks) and not _compiling():
                    # every parameter given positionally: bound as it is, launched with no extra frame
                    if convert is not None:
                        args = convert(args)
                    if scoped is not None:  # the GPU arithmetic set, and the launch serialized: no extra frame either
                        if method_run is None:
                            return scoped(getitem(kernel, grid), *args)
                        return scoped(method_run, kernel, *args, grid=grid, warmup=False)
                    if lock is None:
                        if method_run is None:
                            return getitem(kernel, grid)(*args)
                        return method_run(kernel, *args, grid=grid, warmup=False)
                    with lock:
                        if method_run is None:
                            return getitem(kernel, grid)(*args)
                        return method_run(kernel, *args, grid=grid, warmup=False)
                if "grid" in kwargs or "warmup" in kwargs:
                    key = "grid" if "grid" in kwargs else "warmup"
                    raise LaunchArgumentError(f"{name}() got multiple values for keyword argument '{key}'")
                return launch(grid, args, kwargs)

            return launcher

        def run(*args, grid, warmup, **kwargs):
            if type(grid) is list:
                grid = tuple(grid)
            elif callable(grid):
                grid = _tuple_grid(grid)
            if warmup:
                return launch(grid, args, kwargs, warmup=True)
            if not kwargs and len(args) == arity and not (has_hooks and this().pre_run_hooks) and not _compiling():
                result = raw(grid, args if convert is None else convert(args), empty)
            else:
                result = launch(grid, args, kwargs)
            if result is None and ACTIVATIONS:  # as compiled run returns its kernel (``jit_answers``)
                return InterpretedKernel(this(), args, kwargs)
            return result

        self.launcher_for = launcher_for
        self.run = run
        if not compat.run_requires_warmup():  # as the installed compiled run: warmup defaults to False
            def lenient_run(*args, grid, warmup=False, **kwargs):
                return run(*args, grid=grid, warmup=warmup, **kwargs)

            self.run = lenient_run


def _compiling():
    """Whether the settings in force compile each launch for the GPU (``compile="check"``)."""
    return bool(ACTIVATIONS) and ACTIVATIONS[-1].settings.compile != "off"


def _compiled(kernel, grid, args, kwargs, warmup):
    """The ``CompiledKernel`` of this launch under ``compile="check"`` (``compiler.check_launch``),
    raising what the GPU's compiler and launcher refuse."""
    from .. import compiler

    return compiler.check_launch(kernel.fn, grid, args, kwargs, warmup, getattr(kernel, "kwargs", None))


def _tuple_grid(grid):
    """A grid callable whose list result launches, as compiled Triton launches it."""

    def as_tuple(meta):
        result = grid(meta)
        return tuple(result) if type(result) is list else result

    return as_tuple


def _raw_launch(this, getitem, method_run, lock, scoped, keywords):
    """``raw(grid, positional, keywords)``: the bare interpreter's launch of the kernel ``this``
    refers to, run through ``scoped`` where that is not None (``interpreter.launch_scope``, which
    serializes), else serialized by ``lock`` where that is not None; ``keywords``: whether the
    kernel has keyword-only parameters (else ``keywords`` is always empty). One function per case,
    so that a launch pays for no test it does not need."""
    if method_run is not None:  # 3.6+: the interpreter's run is a method
        if scoped is not None and not keywords:  # serialized by the scope itself
            def raw(grid, args, kwargs):
                return scoped(method_run, this(), *args, grid=grid, warmup=False)
        elif scoped is not None:
            def raw(grid, args, kwargs):
                return scoped(method_run, this(), *args, grid=grid, warmup=False, **kwargs)
        elif lock is not None:
            def raw(grid, args, kwargs):
                with lock:
                    return method_run(this(), *args, grid=grid, warmup=False, **kwargs)
        else:
            def raw(grid, args, kwargs):
                return method_run(this(), *args, grid=grid, warmup=False, **kwargs)
    elif scoped is not None:
        if keywords:
            def raw(grid, args, kwargs):
                return scoped(getitem(this(), grid), *args, **kwargs)
        else:  # no keyword-only parameter: ``kwargs`` is always empty, and passing it costs a dict
            def raw(grid, args, kwargs):
                return scoped(getitem(this(), grid), *args)
    elif lock is not None:
        def raw(grid, args, kwargs):
            with lock:
                return getitem(this(), grid)(*args, **kwargs)
    else:
        def raw(grid, args, kwargs):
            return getitem(this(), grid)(*args, **kwargs)
    return raw


# -- one LaunchPaths per kernel object, for the in-place fix and the switch -------------------

_PATHS: Dict[int, Tuple[Any, "LaunchPaths"]] = {}


def paths_of(kernel) -> LaunchPaths:
    """The launch paths of ``kernel`` (an interpreter kernel object), built on first use."""
    entry = _PATHS.get(id(kernel))
    if entry is not None and entry[0]() is kernel:
        return entry[1]
    paths = LaunchPaths(kernel)
    key = id(kernel)

    def forget(_, key=key, pop=_PATHS.pop):  # ``pop`` bound now: at shutdown the module's globals are gone
        pop(key, None)

    _PATHS[key] = (weakref.ref(kernel, forget), paths)
    return paths


class RunSlot:
    """``run`` on a fixed kernel's class (or, while the switch is on, on the interpreter kernel
    class): a data descriptor, so it wins over the per-instance ``run`` closure that
    interpreters up to 3.5 set in ``__init__`` (kept, and set through)."""

    def __get__(self, kernel, owner=None):
        if kernel is None:
            return self
        entry = _PATHS.get(id(kernel))  # ``paths_of`` inlined: every autotuner launches through here
        if entry is not None and entry[0]() is kernel:
            return entry[1].run
        return paths_of(kernel).run

    def __set__(self, kernel, value):
        kernel.__dict__["run"] = value


def warmup_via_paths(kernel, *args, grid, **kwargs):
    """``kernel.warmup(...)`` where the interpreter's kernel class has none (up to 3.5), as compiled
    Triton's: ``run(..., warmup=True)``, which binds and checks, and returns the compiled kernel
    under ``compile="check"`` (else None)."""
    return paths_of(kernel).run(*args, grid=grid, warmup=True, **kwargs)


def launcher_via_paths(kernel, grid):
    """``kernel[grid]`` for a kernel fixed in place, and for every interpreter kernel while the
    switch is on. ``paths_of`` inlined: this runs on every launch."""
    entry = _PATHS.get(id(kernel))
    if entry is not None and entry[0]() is kernel:
        return entry[1].launcher_for(grid, kernel)
    return paths_of(kernel).launcher_for(grid, kernel)


@functools.lru_cache(maxsize=None)
def _fixed_class(cls: Any) -> type:
    compat.pristine_interpreter_methods()
    namespace = {"__getitem__": launcher_via_paths, "run": RunSlot(), "_kwshim_fixed": True,
                 "__module__": cls.__module__, "__reduce_ex__": _reduce_fixed}
    return type(cls.__name__, (cls,), namespace)


def _reduce_fixed(kernel, protocol):
    """Copies of a fixed kernel stay fixed (``copy``/``deepcopy`` rebuild its class)."""
    return _rebuild_fixed, (type(kernel).__mro__[1], kernel.__dict__.copy())


def _rebuild_fixed(base, state):
    kernel = base.__new__(base)
    kernel.__dict__.update(state)
    kernel.__class__ = _fixed_class(base)
    return kernel


def fix_in_place(kernel) -> bool:
    """Make ``kernel`` (an interpreter kernel object) bind its own launches as compiled Triton
    does, so that every reference to it is fixed. Returns False if it already was."""
    if is_fixed_in_place(kernel):
        return False
    try:
        paths_of(kernel)  # refuse a signature kwsafe cannot bind before changing anything
    except UnsupportedSignatureError:
        if not _keyword_only_without_variadics(kernel.fn):
            raise
        # keyword-only parameters the installed compiler refuses: fixed all the same, so that every
        # launch is refused as @kwsafe refuses it (``paths_of`` raises at each launch), never a
        # silent default
    base: Any = type(kernel)
    kernel.__class__ = _fixed_class(base)
    return True


def _keyword_only_without_variadics(fn) -> bool:
    import inspect

    kinds = {parameter.kind for parameter in inspect.signature(fn).parameters.values()}
    return (inspect.Parameter.KEYWORD_ONLY in kinds
            and not kinds & {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD})


def is_fixed_in_place(kernel) -> bool:
    return getattr(type(kernel), "_kwshim_fixed", False)


# -- the proxy @kwsafe returns ------------------------------------------------------------------

class KwsafeKernel(wrapt.ObjectProxy):
    """An interpreted kernel whose launches bind as compiled Triton 3.x binds them.

    It is the kernel for every other purpose: ``isinstance``, attributes, hash and equality
    read through to it. Launch paths (``[grid]``, ``run``, ``warmup``) are its own, because the
    kernel's own ``__getitem__`` never calls a proxy's ``run``.
    """

    def __init__(self, kernel):
        super().__init__(kernel)
        paths = LaunchPaths(kernel)
        self._self_plan = paths.plan
        self._self_launcher_for = paths.launcher_for
        self._self_run = paths.run

    def __getitem__(self, grid):
        return self._self_launcher_for(grid, self.__wrapped__)

    @property
    def run(self):
        return self._self_run

    @property
    def warmup(self):
        if not hasattr(self.__wrapped__, "warmup"):
            raise AttributeError(f"{type(self.__wrapped__).__name__!r} object has no attribute 'warmup'")
        run = self._self_run

        def warmup(*args, grid, **kwargs):
            return run(*args, grid=grid, warmup=True, **kwargs)

        return warmup

    def __call__(self, *args, **kwargs):
        # A call from inside another kernel (a device-function call): nothing to bind.
        return self.__wrapped__(*args, **kwargs)

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


def _resolve(module, qualname):
    """Find the kwsafe kernel named ``module.qualname`` (pickling by reference): the name may be
    bound to the kernel itself or to an autotune/heuristics stack around it."""
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    for node in compat.walk(obj):
        if isinstance(node, KwsafeKernel):
            return node
    raise pickle.UnpicklingError(f"{module}.{qualname} holds no kwsafe kernel")
