"""The installed Triton's launch options: the names a launch may carry that are not kernel
parameters, gathered from the autotuner's ``Config``, every backend's options class and the
interpreter; and the backends themselves, each with its options class's own checks (``backends``),
found once for ``launch.options``, the GPU arithmetic's fusion default and the names."""

import dataclasses
import functools
import importlib
import inspect
import pkgutil
import sys
from typing import Any, Callable, Dict, NamedTuple

from .classes import import_triton, kernel_classes

__all__ = ["LAUNCH_KEYWORDS", "launch_options", "stripped_names", "discovered_backends", "legacy_backend_modules",
           "Backend", "backends", "installed_targets", "option_names", "nvidia_codegen_functions"]

#: Keywords that every launch owns, whatever the release: the grid and the warm-up flag.
#: (``stream`` is refused, as compiled 3.x refuses it: see ``launch.options.DEPRECATED``.)
LAUNCH_KEYWORDS = frozenset({"grid", "warmup"})


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
    namespaces = [vars(module) for module in legacy_backend_modules()]
    for backend in discovered_backends().values():
        parse_options = getattr(getattr(backend, "compiler", None), "parse_options", None)
        namespace = getattr(parse_options, "__globals__", None)
        if namespace is not None:
            namespaces.append(namespace)
    try:
        namespaces.append(vars(importlib.import_module("triton.runtime.interpreter")))
    except ImportError:
        pass
    return namespaces


def discovered_backends() -> dict:
    """3.x: Triton's own discovery of its backends (name -> backend); empty on 2.x."""
    try:
        return dict(getattr(importlib.import_module("triton.backends"), "backends", None) or {})
    except ImportError:
        return {}


def legacy_backend_modules():
    """2.2/2.3: the importable ``triton.compiler.backends.<name>`` modules (a backend whose
    toolchain is absent cannot be imported, and its options are unreachable)."""
    try:
        package = importlib.import_module("triton.compiler.backends")
    except ImportError:
        return []
    found = []
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        try:
            found.append(importlib.import_module(info.name))
        except Exception:  # noqa: S112
            continue
    return found


#: A representative device per target, used to build the backend's options (the H200 that the
#: parity report is measured on is sm90).
_REPRESENTATIVE = {"cuda": (90, 32), "hip": ("gfx942", 64)}


class Backend(NamedTuple):
    target: str
    names: frozenset  #: the option fields it accepts
    check: Callable[[dict], object]  #: raises AssertionError/ValueError for a refused value


@functools.lru_cache(maxsize=None)
def backends() -> Dict[str, Backend]:
    """Every installed backend's options, by target name."""
    import_triton()
    found: Dict[str, Backend] = {}
    discovered = discovered_backends()
    try:
        GPUTarget: Any = importlib.import_module("triton.backends.compiler").GPUTarget
    except (ImportError, AttributeError):
        discovered, GPUTarget = {}, None
    for name, backend in discovered.items():
        compiler: Any = getattr(backend, "compiler", None)
        for target, (arch, warp_size) in _REPRESENTATIVE.items():
            try:
                device = GPUTarget(target, arch, warp_size)
                if not compiler.supports_target(device):
                    continue
                instance = compiler(device)
                options = instance.parse_options({})
            except Exception:  # a backend that cannot be built here: its options are unreachable
                continue
            found[target] = Backend(target, frozenset(options.__dataclass_fields__), _parser(instance))
            break
    if not found:  # 2.3: options dataclasses in triton.compiler.backends.<name>, built directly
        for target, options_class in _legacy_option_classes():
            found[target] = Backend(target, frozenset(options_class.__dataclass_fields__), _builder(options_class))
    return found


def _parser(instance) -> Callable[[dict], object]:
    def check(given: dict) -> object:
        return instance.parse_options(dict(given))  # a copy: parse_options may change what it is given

    return check


def _builder(options_class) -> Callable[[dict], object]:
    def check(given: dict) -> object:
        return options_class(**{k: v for k, v in given.items() if v is not None})

    return check


def _legacy_option_classes():
    for module in legacy_backend_modules():
        for value in vars(module).values():
            if (isinstance(value, type) and value.__name__.endswith("Options")
                    and hasattr(value, "__dataclass_fields__")):
                yield module.__name__.rsplit(".", 1)[-1], value


@functools.lru_cache(maxsize=None)
def nvidia_codegen_functions() -> Dict[str, Any]:
    """The NVIDIA backend's code-generation functions for the GPU kwshim follows (sm_90), as its
    compiler hands them to the front end (``get_codegen_implementation``: ``min_dot_size``, ...);
    empty where the installed Triton has none (no NVIDIA backend, or before 3.2)."""
    backend = discovered_backends().get("nvidia")
    compiler: Any = getattr(backend, "compiler", None)
    try:
        GPUTarget: Any = importlib.import_module("triton.backends.compiler").GPUTarget
        arch, warp_size = _REPRESENTATIVE["cuda"]
        instance = compiler(GPUTarget("cuda", arch, warp_size))
        return dict(instance.get_codegen_implementation(instance.parse_options({})))
    except Exception:  # a backend that cannot be built here, or has no such functions
        return {}


def installed_targets() -> frozenset:
    return frozenset(backends())


@functools.lru_cache(maxsize=None)
def option_names() -> frozenset:
    """Every name some installed backend validates."""
    names: set = set()
    for backend in backends().values():
        names |= backend.names
    return frozenset(names)
