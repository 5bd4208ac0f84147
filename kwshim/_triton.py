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
from typing import Any, NamedTuple, Optional

from .errors import TritonNotFoundError

__all__ = ["import_triton", "kernel_classes", "launch_options", "stripped_names", "triton_version", "KernelClasses",
           "walk", "innermost", "compiler_accepts", "pristine_interpreter_methods", "interpreter_restores_patches",
           "interpreter_shares_launch_state",
           "injected_keywords"]

#: Distributions known to provide the ``triton`` module; a hard requirement on one of them
#: would clobber the others, so kwshim requires none.
TRITON_DISTRIBUTIONS = ("triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu", "triton-windows")

#: Keywords that every launch owns, whatever the release: the grid and the warm-up flag.
#: (``stream`` is refused, as compiled 3.x refuses it: see ``options.DEPRECATED``.)
LAUNCH_KEYWORDS = frozenset({"grid", "warmup"})


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
    return interpreted is not None and isinstance(innermost(obj), interpreted)


@functools.lru_cache(maxsize=None)
def compiler_accepts() -> frozenset:
    """Which kinds of parameter the installed compiler's code generator takes into a kernel's
    signature, beyond positional-or-keyword ones: a subset of {"keyword_only", "variadic"}.

    Probed by running the code generator's own ``visit_arguments`` on a parsed signature
    (3.9 added both, PR #11418; earlier releases ignore them, and compiling then fails)."""
    import_triton()
    import ast

    try:
        from triton.compiler.code_generator import CodeGenerator
    except ImportError:
        return frozenset()
    definition = ast.parse("def k(a, *vals, kw): pass").body[0]
    assert isinstance(definition, ast.FunctionDef)
    node = definition.args

    class _Visitor:
        @staticmethod
        def visit(child):
            return getattr(child, "arg", None)

    try:
        names = CodeGenerator.visit_arguments(_Visitor(), node)
    except Exception:
        return frozenset()
    if isinstance(names, tuple):  # (arg_names, kwarg_names) before 3.9
        names = names[0]
    names = set(names or ())
    return frozenset(kind for kind, name in (("keyword_only", "kw"), ("variadic", "vals")) if name in names)


@functools.lru_cache(maxsize=None)
def pristine_interpreter_methods():
    """``(getitem, run)``: the interpreter kernel class's own launch methods, read once, before
    anything of kwshim's is installed. ``run`` is None where it is a per-instance closure (<= 3.5)."""
    cls = kernel_classes().interpreted
    run = cls.__dict__.get("run")
    return cls.__dict__["__getitem__"] if "__getitem__" in cls.__dict__ else cls.__getitem__, run


@functools.lru_cache(maxsize=None)
def interpreter_shares_launch_state() -> bool:
    """Whether interpreted launches share state, so that two threads launching at once break
    each other: a module-level builder holding the grid (every release: ``x >= grid_dim[0]`` when
    grids differ), or ``triton.language`` patched and restored per launch (3.6+). Probed on the
    installed interpreter module."""
    import_triton()
    try:
        interpreter = importlib.import_module("triton.runtime.interpreter")
    except ImportError:
        return False
    shared_builder = any(hasattr(value, "set_grid_dim") and not isinstance(value, type)
                         for value in vars(interpreter).values())
    return shared_builder or interpreter_restores_patches()


@functools.lru_cache(maxsize=None)
def interpreter_restores_patches() -> bool:
    """Whether each interpreted launch patches ``triton.language`` and undoes it afterwards (3.6+,
    PR #8735), which makes overlapping launches in two threads break each other. Earlier
    releases patch and leave it patched (their shared builder needs serializing all the same)."""
    import_triton()
    try:
        interpreter = importlib.import_module("triton.runtime.interpreter")
    except ImportError:
        return False
    return hasattr(interpreter, "_LangPatchScope")


@functools.lru_cache(maxsize=None)
def run_requires_warmup() -> bool:
    """Whether compiled ``JITFunction.run`` takes ``warmup`` as a required keyword (3.x; 2.2's
    own launch paths call ``run`` without it)."""
    try:
        param = inspect.signature(kernel_classes().jit.run).parameters.get("warmup")
    except (TypeError, ValueError, AttributeError):
        return False
    return param is not None and param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is param.empty


class _ProbeStop(Exception):
    pass


@functools.lru_cache(maxsize=None)
def injected_keywords():
    """The keywords compiled ``JITFunction.run`` adds to every launch itself (``debug``; from 3.6
    ``instrumentation_mode``; on 3.9 ``fpsan_homomorphic_casts``), as a dict name ->
    ``(value, caller_wins)``: the value a launch that gives none receives, and whether a value the
    caller gives by keyword is kept. Probed by running the compiled ``run`` on a stand-in kernel
    up to its pre-run hooks (a detached copy of it, whose driver is a stand-in) and reading the
    keywords it built."""
    jit = kernel_classes().jit
    run = getattr(jit, "run", None)
    code = getattr(run, "__code__", None)
    if code is None or "kwargs" not in code.co_varnames:
        return {}

    import types

    class _NoGPU:  # stands in for the driver in a detached copy of run: Triton itself is untouched
        class active:
            @staticmethod
            def get_current_device():
                return 0

            @staticmethod
            def get_current_stream(device=None):
                return 0

    namespace = dict(run.__globals__, driver=_NoGPU)
    detached = types.FunctionType(code, namespace, run.__name__, run.__defaults__, run.__closure__)
    detached.__kwdefaults__ = run.__kwdefaults__

    def built_keywords(**given):
        class _Stand:
            debug = None
            pre_run_hooks = [_stop]

            def __getattr__(self, name):
                raise _ProbeStop

        try:
            detached(_Stand(), grid=(1,), warmup=False, **given)
        except _ProbeStop as exc:
            found = getattr(exc, "kwargs", None)
            if found is not None:
                return found
            traceback = exc.__traceback__
        except BaseException as exc:  # no GPU driver: read the frame the failure left behind
            traceback = exc.__traceback__
        else:
            return {}
        while traceback is not None:
            if traceback.tb_frame.f_code is code:
                return dict(traceback.tb_frame.f_locals.get("kwargs") or {})
            traceback = traceback.tb_next
        return {}

    def _stop(*args, **kwargs):
        error = _ProbeStop()
        error.kwargs = dict(kwargs)
        raise error

    plain = built_keywords()
    marker = object()
    found = {}
    for name, value in plain.items():
        kept = built_keywords(**{name: marker}).get(name) is marker
        found[name] = (value, kept)
    return found


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
