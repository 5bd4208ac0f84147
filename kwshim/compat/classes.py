"""The installed Triton's kernel classes: importing Triton, telling kernels and stacks apart, and
whether new kernels are interpreted.

Triton is imported on first use, never at ``import kwshim``.
"""

import functools
import importlib
import os
from typing import Any, List, NamedTuple, Optional, Set, Tuple

import wrapt

from ..errors import TritonNotFoundError

__all__ = ["TRITON_DISTRIBUTIONS", "import_triton", "triton_version", "KernelClasses", "kernel_classes",
           "is_kernel", "is_stack", "walk", "innermost", "is_interpreted", "kernel_name", "interpreter_requested",
           "interpreter_on", "ignored_interpret_hint", "jit_makes_interpreted", "pruned_errors", "reached_globals"]

#: Distributions known to provide the ``triton`` module; a hard requirement on one of them
#: would clobber the others, so kwshim requires none.
TRITON_DISTRIBUTIONS = ("triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu", "triton-windows")


def import_triton():
    """Import and return the ``triton`` module, or say clearly which module is missing."""
    try:
        import triton
    except ImportError as exc:
        if exc.name not in (None, "triton"):  # triton is there but broken: show the real cause
            raise
        raise TritonNotFoundError(
            "kwshim needs the 'triton' module for kernels, and none is installed. It is provided by "
            "one of the distributions " + ", ".join(TRITON_DISTRIBUTIONS) + " (pick the one for your "
            "hardware, e.g. 'pip install triton'). 'kwshim check' works without it.",
            name="triton",
        ) from exc
    return triton


def triton_version() -> str:
    return getattr(import_triton(), "__version__", "unknown")


class KernelClasses(NamedTuple):
    jit: Any  #: compiled kernels (``triton.runtime.jit.JITFunction``)
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


@functools.lru_cache(maxsize=None)
def _stack_kinds() -> tuple:
    classes = kernel_classes()
    return tuple(c for c in (classes.autotuner, classes.heuristics) if c is not None)


def is_stack(obj) -> bool:
    """An ``Autotuner`` or ``Heuristics`` (something whose ``.fn`` leads down to a kernel)."""
    return isinstance(obj, _stack_kinds())


#: How deep a decorator stack may go (a deeper one is a cycle through ``.fn``).
MAX_DEPTH = 64


def walk(obj):
    """``obj``, then each ``.fn`` below it while the node is an Autotuner/Heuristics: the one walk
    down a decorator stack. Stops at the first node that is not a stack (a kernel, or anything)."""
    kinds = _stack_kinds()
    for _ in range(MAX_DEPTH):
        yield obj
        if not isinstance(obj, kinds):
            return
        obj = getattr(obj, "fn", None)
    raise RecursionError(f"kwshim: a stack deeper than {MAX_DEPTH} levels (a cycle through .fn?)")


def innermost(obj):
    """What sits at the bottom of a stack (the jit kernel, normally); ``obj`` itself for a kernel.
    The same walk as ``walk``, as a plain loop: it runs on every autotuned launch under the switch."""
    kinds = _stack_kinds()
    for _ in range(MAX_DEPTH):
        if not isinstance(obj, kinds):
            return obj
        obj = getattr(obj, "fn", None)
    raise RecursionError(f"kwshim: a stack deeper than {MAX_DEPTH} levels (a cycle through .fn?)")


def is_interpreted(obj) -> bool:
    """Whether the kernel at the bottom of ``obj`` is an interpreter kernel."""
    interpreted = kernel_classes().interpreted
    return interpreted is not None and issubclass(own_class(innermost(obj)), interpreted)


def own_class(obj) -> type:
    """``obj``'s class, through kwsafe's proxy. Not ``isinstance``: under the switch an interpreted
    kernel's ``__class__`` answers compiled Triton's ``JITFunction`` (``launch.jit_answers``), and a
    proxy's ``__class__`` is its kernel's."""
    while isinstance(obj, wrapt.ObjectProxy):
        obj = obj.__wrapped__
    return type(obj)


def kernel_name(kernel):
    """The name errors give a kernel: its Python function's."""
    fn = kernel.fn
    return getattr(fn, "__name__", None) or getattr(kernel, "__name__", "kernel")


def interpreter_requested() -> bool:
    """Whether the environment asks for the interpreter (the variable Triton reads)."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "yes", "on")


def interpreter_on() -> bool:
    """Whether new kernels may be interpreted: the environment asks for it, or (3.4+)
    ``triton.knobs.runtime.interpret`` is set."""
    if interpreter_requested():
        return True
    knobs = getattr(import_triton(), "knobs", None)
    return bool(getattr(getattr(knobs, "runtime", None), "interpret", False))


def ignored_interpret_hint(interpreted: bool, version: str) -> Optional[str]:
    """One line of advice when ``TRITON_INTERPRET`` asks for the interpreter with a spelling the
    installed Triton ignores (up to 3.3 only ``1`` turns it on): ``interpreted`` is whether
    ``triton.jit`` made an interpreter kernel in this environment, ``version`` the Triton release."""
    value = os.environ.get("TRITON_INTERPRET", "")
    if interpreted or not interpreter_requested() or value.strip() == "1":
        return None
    return (f"TRITON_INTERPRET={value} leaves the interpreter off with Triton {version} (it reads only "
            f"TRITON_INTERPRET=1): set TRITON_INTERPRET=1")


def _mode_probe(x_ptr):
    pass


def jit_makes_interpreted() -> bool:
    """Whether ``triton.jit`` makes interpreter kernels in this process's environment (probed)."""
    triton = import_triton()
    return is_interpreted(triton.jit(_mode_probe))


@functools.lru_cache(maxsize=None)
def pruned_errors() -> tuple:
    """The exceptions the installed autotuner's benchmark turns into an infinite time (the Config is
    pruned): ``OutOfResources`` on every release, ``CompileTimeAssertionFailure`` from 3.0 and
    ``PTXASError`` where the autotuner names them (read from its module and its ``_bench``)."""
    import_triton()
    import inspect

    from triton.runtime import autotuner

    found = [getattr(autotuner, "OutOfResources", None), getattr(autotuner, "PTXASError", None)]
    bench = getattr(autotuner.Autotuner, "_bench", None)
    if bench is not None and "CompileTimeAssertionFailure" in inspect.getsource(bench):
        from triton.compiler.errors import CompileTimeAssertionFailure

        found.append(CompileTimeAssertionFailure)
    return tuple(error for error in found if isinstance(error, type))


def reached_globals(fn) -> Tuple[List[Tuple[dict, str, Any]], Set[str]]:
    """(globals, name, value) for every global that ``fn`` or a jitted helper it reaches names, and
    every name their code uses (a global's, or an attribute's)."""
    reached: List[Tuple[dict, str, Any]] = []
    seen, used, pending = set(), set(), [fn]
    while pending:
        function = pending.pop()
        if id(function) in seen or not hasattr(function, "__globals__"):
            continue
        seen.add(id(function))
        names = set(function.__code__.co_names)
        used |= names
        for name in sorted(names):
            value = function.__globals__.get(name)
            if value is None:
                continue
            reached.append((function.__globals__, name, value))
            if hasattr(value, "fn") and hasattr(value.fn, "__globals__"):  # a jitted helper
                pending.append(value.fn)
    return reached, used
