"""Interpreted kernels answering as compiled Triton's ``JITFunction`` while the switch is on.

Code written for compiled Triton walks a kernel stack's ``.fn`` until
``isinstance(fn, triton.runtime.JITFunction)``, reads ``params``, ``signature``, ``arg_names``,
``cache_key``, ``src`` and ``__globals__``, calls ``run(*args, grid=..., warmup=False)`` and launches
the kernel it returns again later (``kernel[grid](*args)``): FlagGems' ``@libentry()`` does all of it
around nearly every kernel. Under
``TRITON_INTERPRET=1`` a kernel is an ``InterpretedFunction``, which is none of these: FlagGems'
import failed ("'function' object has no attribute 'fn'").

While the switch is on:

- an interpreted kernel's ``__class__`` reads as compiled Triton's ``JITFunction``, so
  ``isinstance(kernel, JITFunction)`` holds under every name the class is imported by
  (``triton.runtime.jit``'s included: torch's ``wrap_triton``); ``type(kernel)`` is unchanged;
- an interpreted kernel's missing ``JITFunction`` attributes (``ANSWERED``) are those of a
  ``JITFunction`` made over the same Python function with the same ``@triton.jit`` keywords, made
  at the first such read (an interpreter that drops the keywords, up to 3.3, gives the defaults:
  ``do_not_specialize`` is not known there);
- ``run(...)`` returns an ``InterpretedKernel``: launched (``[grid](*args)``) with every argument,
  or with the arguments that are not constexprs (what a compiled kernel takes), whose constexprs and
  launch options are those of the launch that made it.
"""

import functools
import inspect
import weakref

from .. import compat

__all__ = ["install", "InterpretedKernel", "ANSWERED"]

#: The ``JITFunction`` attributes an interpreted kernel answers from its ``JITFunction`` twin.
ANSWERED = frozenset({"params", "signature", "cache_key", "src", "__globals__", "constexprs", "do_not_specialize",
                      "do_not_specialize_on_alignment", "starting_line_number", "raw_src", "module", "repr",
                      "launch_metadata", "debug", "noinline", "hash"})

_HASHED = frozenset({"cache_key", "hash"})  #: answers that read the hash of the kernel and its helpers
_TWINS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # Python function -> its JITFunction


def _twin(kernel):
    """The ``JITFunction`` of ``kernel.fn``, with the ``@triton.jit`` keywords the interpreter kept."""
    fn = kernel.fn
    found = _TWINS.get(fn)
    if found is None:
        jit = compat.kernel_classes().jit
        accepted = inspect.signature(jit.__init__).parameters
        given = {name: value for name, value in (getattr(kernel, "kwargs", None) or {}).items() if name in accepted}
        try:
            found = _TWINS[fn] = jit(fn, **given)
        except (OSError, TypeError, ValueError) as error:  # "@jit functions should be defined in a Python file"
            raise AttributeError(f"kwshim: {getattr(fn, '__qualname__', fn)} has no JITFunction attributes: its "
                                 f"source is in no file (made by exec?), and compiled Triton reads it from one "
                                 f"({error})") from error
    return found


def _answering(kernel, name):
    """``InterpretedFunction.__getattr__``: a missing ``JITFunction`` attribute, from the twin."""
    if name not in ANSWERED:
        raise AttributeError(f"{type(kernel).__name__!r} object has no attribute {name!r}")
    twin = _twin(kernel)
    if name in _HASHED and getattr(twin, "hash", None) is None:  # its first hash walks the kernel's
        from ..compiler.specializations import read_as_compiled  # globals: as compiled Triton sees them

        read_as_compiled(lambda: twin.cache_key, [kernel.fn])
    return getattr(twin, name)


def _shown_as(jit):
    """``InterpretedFunction.__getattribute__``: ``__class__`` is ``jit``, so ``isinstance`` (which
    reads ``__class__`` where the type does not match, as it does for a mock) accepts the kernel as
    a ``JITFunction`` under every name code imports it by; everything else reads as before."""
    get = object.__getattribute__

    def __getattribute__(self, name):
        return jit if name == "__class__" else get(self, name)

    return __getattribute__


class InterpretedKernel:
    """What ``run`` returns for an interpreted kernel, as compiled Triton returns its
    ``CompiledKernel``: ``[grid](*args)`` launches the kernel again, with every argument or with
    those that are not constexprs, the constexprs and launch options of the launch that made it."""

    def __init__(self, kernel, args, kwargs):
        self.kernel, self._given = kernel, (args, kwargs)
        self.name = getattr(kernel.fn, "__name__", "?")

    @functools.cached_property
    def _fixed(self):
        """(the kernel's parameters, constexpr values by name, launch options) of the launch that made
        this kernel: read at its first launch, once."""
        from .scalars import _annotation_kind

        args, kwargs = self._given
        signature = inspect.signature(self.kernel.fn)
        parameters = signature.parameters
        bound = signature.bind_partial(*args, **{name: value for name, value in kwargs.items() if name in parameters})
        bound.apply_defaults()
        constexprs = {name: bound.arguments[name] for name, parameter in parameters.items()
                      if name in bound.arguments and _annotation_kind(parameter.annotation)[0]}
        options = {name: value for name, value in kwargs.items() if name not in parameters}
        return list(parameters), constexprs, options

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            names, constexprs, options = self._fixed
            if len(args) + len(kwargs) < len(names):  # a compiled kernel's arguments: no constexprs
                taken = iter(args)
                values = {name: kwargs[name] if name in kwargs else constexprs[name] if name in constexprs
                          else next(taken) for name in names}
                return self.kernel[grid](**values, **options)
            return self.kernel[grid](*args, **kwargs, **options)

        return launch

    def __repr__(self):
        return f"<kwshim InterpretedKernel {self.name}>"


def install(patch) -> None:
    """The interpreted kernel's ``JITFunction`` class and answers, through ``patch``."""
    classes = compat.kernel_classes()
    if classes.interpreted is None:
        return
    if "__getattribute__" not in vars(classes.interpreted):
        patch.setattr(classes.interpreted, "__getattribute__", _shown_as(classes.jit))
    if "__getattr__" not in vars(classes.interpreted):
        patch.setattr(classes.interpreted, "__getattr__", _answering)
