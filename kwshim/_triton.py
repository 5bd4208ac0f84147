"""What kwshim knows about the installed Triton, found by probing it, never by version strings.

Nothing here runs at ``import kwshim``: the command-line checker must work where no ``triton``
module is installed, so Triton is imported on first use and every probe is computed once.
"""

import dataclasses
import functools
import importlib
import inspect
import os
import pkgutil
import sys
from typing import NamedTuple, Optional

from .errors import TritonNotFoundError

__all__ = ["import_triton", "kernel_classes", "launch_options", "stripped_names", "triton_version", "KernelClasses"]

#: Distributions known to provide the ``triton`` module; a hard requirement on one of them
#: would clobber the others, so kwshim requires none.
TRITON_DISTRIBUTIONS = ("triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu", "triton-windows")

#: Keywords that every launch owns, whatever the release: the grid, the warm-up flag, and the
#: stream of releases that took one.
LAUNCH_KEYWORDS = frozenset({"grid", "warmup", "stream"})


def import_triton():
    """Import and return the ``triton`` module, or say clearly which module is missing."""
    try:
        import triton
    except ImportError as exc:
        if exc.name not in (None, "triton"):  # triton is there but broken: show the real cause
            raise
        raise TritonNotFoundError(
            "kwshim's @kwsafe needs the 'triton' module, and none is installed. It is provided by "
            "one of the distributions " + ", ".join(TRITON_DISTRIBUTIONS) + " (pick the one for your "
            "hardware, e.g. 'pip install triton'). 'kwshim check' works without it.",
            name="triton",
        ) from exc
    return triton


def triton_version() -> str:
    return getattr(import_triton(), "__version__", "unknown")


class KernelClasses(NamedTuple):
    jit: type  #: compiled kernels (``triton.runtime.jit.JITFunction``)
    interpreted: Optional[type]  #: interpreter kernels; None where the release has no interpreter
    autotuner: Optional[type]
    heuristics: Optional[type]


@functools.lru_cache(maxsize=None)
def kernel_classes() -> KernelClasses:
    import_triton()
    from triton.runtime.jit import JITFunction

    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # Triton 2.1.0: only the old CUDA debugger, no interpreter
        InterpretedFunction = None
    autotuner = importlib.import_module("triton.runtime.autotuner")
    return KernelClasses(
        JITFunction,
        InterpretedFunction,
        getattr(autotuner, "Autotuner", None),
        getattr(autotuner, "Heuristics", None),
    )


def is_kernel(obj) -> bool:
    """A ``@triton.jit`` kernel, compiled or interpreted (a kwsafe kernel counts: it reads as one)."""
    classes = kernel_classes()
    return isinstance(obj, tuple(c for c in (classes.jit, classes.interpreted) if c is not None))


def is_stack(obj) -> bool:
    """An ``Autotuner`` or ``Heuristics`` (something whose ``.fn`` leads down to a kernel)."""
    classes = kernel_classes()
    kinds = tuple(c for c in (classes.autotuner, classes.heuristics) if c is not None)
    return bool(kinds) and isinstance(obj, kinds)


def interpreter_requested() -> bool:
    """Whether the environment asks for the interpreter (the variable Triton reads)."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "yes", "on")


@functools.lru_cache(maxsize=None)
def launch_options() -> frozenset:
    """Every keyword the installed Triton accepts as a launch option rather than a kernel argument.

    Gathered from the autotuner's ``Config`` fields, the fields of every backend's options
    dataclass (``CUDAOptions``, ``HIPOptions``, ``InterpreterOptions``, ...), the interpreter's own
    reserved list where it has one, the explicit keywords of ``JITFunction.run``, and the launch's
    own ``grid``/``warmup``/``stream``.
    """
    import_triton()
    names = set(LAUNCH_KEYWORDS)
    names |= _config_fields()
    names |= _option_dataclass_fields()
    interpreter = sys.modules.get("triton.runtime.interpreter")
    names |= set(getattr(interpreter, "RESERVED_KWS", ()) or ())
    names |= _keyword_parameters(kernel_classes().jit.run)
    return frozenset(names)


@functools.lru_cache(maxsize=None)
def stripped_names() -> frozenset:
    """The reserved launch names that the interpreter strips or the autotuner injects: the
    Config fields and the interpreter's own reserved list (less the launch's own keywords)."""
    import_triton()
    interpreter = importlib.import_module("triton.runtime.interpreter") if kernel_classes().interpreted else None
    names = _config_fields() | set(getattr(interpreter, "RESERVED_KWS", ()) or ())
    return frozenset(names - LAUNCH_KEYWORDS)


def _config_fields() -> set:
    from triton import Config

    names = {
        name
        for name, param in inspect.signature(Config.__init__).parameters.items()
        if name not in ("self", "kwargs", "pre_hook") and param.kind not in _VARIADIC
    }
    config = Config({})
    if hasattr(config, "all_kwargs"):
        names |= set(config.all_kwargs())
    return names


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _keyword_parameters(function) -> set:
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def _option_dataclass_fields() -> set:
    names = set()
    for namespace in _backend_namespaces():
        for value in list(namespace.values()):
            if (isinstance(value, type) and dataclasses.is_dataclass(value)
                    and value.__name__.endswith("Options")):
                names |= {field.name for field in dataclasses.fields(value)}
    return names


def _backend_namespaces():
    """The global namespaces of the modules that define compile options: 3.x backends' compiler
    modules (loaded by Triton's own discovery, sometimes under no importable name), 2.x
    ``triton.compiler.backends.<name>``, and the interpreter."""
    namespaces = []
    try:
        package = importlib.import_module("triton.compiler.backends")  # 2.2 / 2.3
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            try:
                namespaces.append(vars(importlib.import_module(info.name)))
            except Exception:  # a backend whose toolchain is absent: its options are unreachable
                pass
    except ImportError:
        pass
    try:
        discovered = getattr(importlib.import_module("triton.backends"), "backends", None)  # 3.x
    except ImportError:
        discovered = None
    for backend in (discovered or {}).values():
        parse_options = getattr(getattr(backend, "compiler", None), "parse_options", None)
        namespace = getattr(parse_options, "__globals__", None)
        if namespace is not None:
            namespaces.append(namespace)
    try:
        namespaces.append(vars(importlib.import_module("triton.runtime.interpreter")))
    except ImportError:
        pass
    return namespaces
