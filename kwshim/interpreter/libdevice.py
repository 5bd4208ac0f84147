"""libdevice on the CPU: ``triton.language.extra.libdevice`` (and the CUDA and HIP modules it stands
for) with NumPy implementations in place of its stubs, for interpreted kernels.

The modules are stubs that the compiler resolves to the backend's library; the interpreter runs
the stubs, so every function returns ``None`` (3.6) or raises (3.0: "Did you forget to add
@triton.jit"). Every public function gets an implementation from ``math_table`` computed
element-wise on the interpreter's tensors in their own dtype; a function without one raises
``NotImplementedError`` naming the function, the release and the workaround: never ``None``
flowing into arithmetic. Two seams, both through a ``Patch``: the modules' attributes while the
switch is on (``install``), and, for each launch of a wrapped kernel, the globals of the kernel and
its jitted helpers that name a libdevice function or module (``global_swaps``), which reaches
``from ...libdevice import tanh`` done before anything was switched on.

Under ``numerics="gpu"`` fp32 subnormal arguments are zeros, as libdevice linked with FTZ reads them
(measured on the H200: ``sqrt_rn(1e-40)`` is 0, ``ilogb(1e-40)`` INT_MIN).

Each implementation takes the argument types compiled Triton takes: the keys of the table the
stub hands to ``core.extern_elementwise`` (``_accepted_types``; for ``extra.libdevice``, whose
stubs compile to the backend's, the CUDA module's table: the NVIDIA GPU kwshim follows). Any other
types (bf16, fp16 and fp8 for every function on 3.0-3.9) raise ``UncompilableError``, where
compiled Triton fails to compile the kernel.
"""

import functools
import importlib
import inspect
import sys
import types
from typing import Any, Dict, List, Tuple

import numpy as np

from .math_table import SAME, TABLE

__all__ = ["install", "global_swaps"]

_MODULES = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
            "triton.language.extra.hip.libdevice")

_TRITON_TYPES = {np.dtype(np.bool_): "int1", np.dtype(np.int8): "int8", np.dtype(np.int16): "int16",
                 np.dtype(np.int32): "int32", np.dtype(np.int64): "int64", np.dtype(np.uint8): "uint8",
                 np.dtype(np.uint16): "uint16", np.dtype(np.uint32): "uint32", np.dtype(np.uint64): "uint64",
                 np.dtype(np.float16): "float16", np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}


def _element_wise(name, numpy_fn, result_dtype, accepted=None):
    def implementation(*args, **ignored):
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        if accepted is not None:
            _check_types(name, args, accepted)
        tensors = [a for a in args if isinstance(a, tl.tensor)]
        if not tensors:  # scalars alone (libdevice.exp(2.0)): typed as compiled types them, a scalar result
            tensors = [_scalar_tensor(a) for a in args]
            args = tensors
        like = tensors[0]
        arrays = []
        for a in args:
            value = a.value if isinstance(a, tl.constexpr) else a
            arrays.append(value.handle.data if isinstance(value, tl.tensor)
                          else np.asarray(value, like.handle.data.dtype))
        flushing = _flushing()
        if flushing:  # libdevice linked with FTZ (measured on the H200)
            from .gpu_arithmetic import flushed, subnormal

            given, arrays = arrays, [flushed(array, positive=name in _POSITIVE_FLUSH) for array in arrays]
        with np.errstate(all="ignore"):
            result = np.asarray(numpy_fn(*np.broadcast_arrays(*arrays)))
        if flushing and name in _SUBNORMAL_RESULTS and given[0].dtype == np.float32:
            result = np.where(subnormal(given[0]), _SUBNORMAL_RESULTS[name], result)
        if result_dtype is SAME:
            result = result.astype(like.handle.data.dtype, copy=False)
        elif result_dtype != "natural":
            result = result.astype(result_dtype, copy=False)
        out_type = getattr(tl, _TRITON_TYPES[result.dtype])
        block = tl.block_type(out_type, list(like.type.shape)) if like.type.is_block() else out_type
        return tl.tensor(TensorHandle(result, out_type), block)

    implementation.__name__ = name
    implementation.__qualname__ = f"libdevice.{name}"
    return implementation


def _flushing() -> bool:
    """Whether the arithmetic in force is the GPU's (``numerics="gpu"``: the interpreter's builder is
    ``gpu_arithmetic``'s), which reads libdevice's fp32 subnormal arguments as zeros."""
    interpreter = sys.modules.get("triton.runtime.interpreter")
    return getattr(type(getattr(interpreter, "interpreter_builder", None)), "kwshim_gpu_arithmetic", False)


#: What the H200's libdevice gives for an fp32 subnormal argument where that is not the function
#: of zero (``logbf``: -150, not -inf), and the functions that read one as +0 whatever its sign.
_SUBNORMAL_RESULTS = {"logb": -150.0}
_POSITIVE_FLUSH = frozenset({"sinpi"})


_NUMPY_TYPES = {"int1": np.bool_, "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
                "fp32": np.float32, "fp64": np.float64}


def _scalar_tensor(value):
    """A Python scalar as the interpreter's scalar tensor of the type compiled ``to_tensor`` gives it."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    value = value.value if isinstance(value, tl.constexpr) else value
    type_name = _type_name(value)
    dtype = {"fp32": tl.float32, "fp64": tl.float64}.get(type_name) or getattr(tl, type_name)
    return tl.tensor(TensorHandle(np.array([value], _NUMPY_TYPES[type_name]), dtype), dtype)


def _type_name(value) -> str:
    """The Triton type name compiled Triton's ``to_tensor`` gives an argument."""
    import triton.language as tl

    value = value.value if isinstance(value, tl.constexpr) else value
    if isinstance(value, tl.tensor):
        return value.dtype.name
    if isinstance(value, bool):
        return "int1"
    if isinstance(value, int):
        for type_name, low, high in (("int32", -2**31, 2**31), ("uint32", 0, 2**32), ("int64", -2**63, 2**63)):
            if low <= value < high:
                return type_name
        return "uint64"
    if isinstance(value, float):  # fp32 where it is a normal fp32 (or 0, inf, NaN), else fp64
        magnitude = abs(value)
        in_range = 2.0 ** -126 <= magnitude <= 3.4028234663852886e38
        return "fp32" if in_range or magnitude in (0.0, float("inf")) or value != value else "fp64"
    return type(value).__name__


def _check_types(name, args, accepted):
    types_given = tuple(_type_name(a) for a in args)
    if types_given not in accepted:
        from ..errors import UncompilableError

        takes = ", ".join("(" + ", ".join(key) + ")" for key in sorted(accepted))
        raise UncompilableError(
            f"kwshim: compiled Triton has no libdevice.{name} for arguments of type ({', '.join(types_given)}): "
            f"it takes {takes}; convert the arguments (x.to(tl.float32)) as a compiled kernel must")


def _accepted_types(stub):
    """The argument type tuples (names: ``("fp32",)``) that compiled Triton dispatches the libdevice
    function ``stub`` on: the table it hands to ``core.extern_elementwise``, read from that call's
    frame after an argument nothing can convert stops it. None where no such table is found."""
    try:
        parameters = inspect.signature(stub).parameters
    except (TypeError, ValueError):
        return None
    keyword = next((k for k in ("_semantic", "_builder") if k in parameters), None)
    positional = [p for p in parameters.values() if p.kind == p.POSITIONAL_OR_KEYWORD and not p.name.startswith("_")]
    if keyword is None:
        return None
    try:
        stub(*[_Unconvertible()] * len(positional), **{keyword: _Unconvertible()})
    except Exception as exc:
        trace = exc.__traceback__
        while trace is not None:
            table = trace.tb_frame.f_locals.get("arg_type_symbol_dict")
            if isinstance(table, dict) and table:
                return frozenset(tuple(getattr(t, "name", str(t)) for t in key) for key in table)
            trace = trace.tb_next
    return None


class _Unconvertible:
    """An argument, and a front end, that nothing can use: the stub stops at its first step."""


def _missing(name, release):
    def missing(*args, **kwargs):
        raise NotImplementedError(
            f"libdevice.{name}() has no CPU implementation under kwshim (Triton {release}'s interpreter has none "
            f"either): compute it from triton.language functions (tl.exp, tl.sqrt, ...) in the kernel, or run "
            f"this kernel compiled on a GPU")

    missing.__name__ = name
    return missing


_KEPT: List[Any] = []


@functools.lru_cache(maxsize=None)
def _replacements():
    """({id(original function): CPU implementation}, {id(libdevice module): namespace of them}) for
    every public function of the installed libdevice modules, built once."""
    import triton

    functions: Dict[int, Any] = {}
    modules: Dict[int, Any] = {}
    keep = _KEPT  # the originals, so that their ids stay theirs
    try:  # the NVIDIA target's types: extra.libdevice's stubs (3.x) are resolved to it when compiled
        cuda = vars(importlib.import_module(_MODULES[1]))
    except ImportError:
        cuda = {}
    for module_name in _MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        namespace = types.SimpleNamespace(**{k: v for k, v in vars(module).items() if not k.startswith("__")})
        for name, value in list(vars(module).items()):
            if name.startswith("_") or not callable(value) or isinstance(value, (type, types.ModuleType)):
                continue
            if name in TABLE:
                accepted = _accepted_types(value)
                if accepted is None and callable(cuda.get(name)):
                    accepted = _accepted_types(cuda[name])
                replacement = _element_wise(name, *TABLE[name], accepted)
            else:
                replacement = _missing(name, triton.__version__)
            functions.setdefault(id(value), replacement)
            keep.append(value)
            setattr(namespace, name, replacement)
        modules[id(module)] = namespace
        keep.append(module)
    return functions, modules


def install(patch):
    """Put the CPU implementations in place of every public function of the loaded libdevice
    modules, through ``patch``."""
    functions, _ = _replacements()
    for module_name in _MODULES:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        for name, value in list(vars(module).items()):
            replacement = functions.get(id(value))
            if replacement is not None and not name.startswith("_"):
                patch.setattr(module, name, replacement)


def global_swaps(fn) -> List[Tuple[Any, str, Any]]:
    """(globals, name, CPU implementation) for every libdevice function or module that ``fn`` or a
    jitted helper it reaches names as a global (``from ...libdevice import tanh`` binds the original
    at import, which patching the module does not reach); and (module, name, CPU implementation)
    for every function such code reaches through a chain of attributes
    (``tl.extra.cuda.libdevice.exp``): the names it uses, of the loaded libdevice modules."""
    functions, modules = _replacements()
    swaps: List[Tuple[Any, str, Any]] = []
    seen = set()
    pending = [fn]
    used: set = set()
    while pending:
        function = pending.pop()
        if id(function) in seen or not hasattr(function, "__globals__"):
            continue
        seen.add(id(function))
        names = set(function.__code__.co_names)
        used |= names
        for name in names:
            value = function.__globals__.get(name)
            if value is None:
                continue
            replacement = functions.get(id(value)) or modules.get(id(value))
            if replacement is not None:
                swaps.append((function.__globals__, name, replacement))
            elif hasattr(value, "fn") and hasattr(value.fn, "__globals__"):  # a jitted helper
                pending.append(value.fn)
    if "libdevice" in used:  # reached as an attribute of a module
        for module_name in _MODULES:
            module = sys.modules.get(module_name)
            for name in sorted(used) if module is not None else ():
                replacement = functions.get(id(vars(module).get(name)))
                if replacement is not None:
                    swaps.append((module, name, replacement))
    return swaps
