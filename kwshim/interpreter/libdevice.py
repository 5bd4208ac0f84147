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
"""

import functools
import importlib
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


def _element_wise(name, numpy_fn, result_dtype):
    def implementation(*args, **ignored):
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        tensors = [a for a in args if isinstance(a, tl.tensor)]
        if not tensors:
            raise TypeError(f"libdevice.{name}() needs a tensor argument")
        like = tensors[0]
        arrays = []
        for a in args:
            value = a.value if isinstance(a, tl.constexpr) else a
            arrays.append(value.handle.data if isinstance(value, tl.tensor)
                          else np.asarray(value, like.handle.data.dtype))
        with np.errstate(all="ignore"):
            result = np.asarray(numpy_fn(*np.broadcast_arrays(*arrays)))
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
                replacement = _element_wise(name, *TABLE[name])
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


def global_swaps(fn) -> List[Tuple[dict, str, Any]]:
    """(globals, name, CPU implementation) for every libdevice function or module that ``fn`` or a
    jitted helper it reaches names as a global (``from ...libdevice import tanh`` binds the original
    at import, which patching the module does not reach)."""
    functions, modules = _replacements()
    swaps: List[Tuple[dict, str, Any]] = []
    seen = set()
    pending = [fn]
    while pending:
        function = pending.pop()
        if id(function) in seen or not hasattr(function, "__globals__"):
            continue
        seen.add(id(function))
        names = set(function.__code__.co_names)
        for name in names:
            value = function.__globals__.get(name)
            if value is None:
                continue
            replacement = functions.get(id(value)) or modules.get(id(value))
            if replacement is not None:
                swaps.append((function.__globals__, name, replacement))
            elif hasattr(value, "fn") and hasattr(value.fn, "__globals__"):  # a jitted helper
                pending.append(value.fn)
    return swaps
