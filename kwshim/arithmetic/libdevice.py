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

Each call runs the installed release's own stub (for ``extra.libdevice``, whose stubs stand for
the backend's, the CUDA module's: the NVIDIA GPU kwshim follows) with the interpreter's front end,
so the arguments are typed, promoted and broadcast, and the result typed, exactly as compiled
Triton does; its ``extern_elementwise`` reaches ``gpu_builder``'s builder, which computes it here
(``extern_elementwise``). A type tuple the table lacks (bf16, fp16 and fp8 for every function on
3.0-3.9) raises ``UncompilableError``, where compiled Triton fails to compile the kernel.
"""

import functools
import importlib
import inspect
import sys
import types
from typing import Any, Dict, List, Tuple

import numpy as np

from ..compat import front_end, front_end_keyword, reached_globals
from .math_table import TABLE

__all__ = ["install", "global_swaps"]

_MODULES = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
            "triton.language.extra.hip.libdevice")

_INTERPRETER = "triton.runtime.interpreter"


def _through_front_end(name, stub, keyword):
    """``name`` as compiled Triton calls it: the release's own ``stub`` run by Triton's front end,
    which types the arguments (``to_tensor``), promotes them where the release promotes (3.0-3.4:
    ``fmod(int32, fp32)`` is an fp32 ``fmod``; 3.5 on: only the table's type tuples), broadcasts
    them and takes the result type from its table; the interpreter's builder computes it
    (``gpu_builder``'s ``create_extern_elementwise``, which calls ``extern_elementwise``)."""
    def implementation(*args, **ignored):
        try:
            return stub(*args, **{keyword: front_end(keyword)})
        except (KeyError, ValueError) as exc:
            refused = _refused_types(exc)
            if refused is None:
                raise
        from ..errors import UncompilableError

        given, table = refused
        takes = ", ".join(sorted("(" + ", ".join(_name(t) for t in key) + ")" for key in table))
        raise UncompilableError(
            f"kwshim: compiled Triton has no libdevice.{name} for arguments of type ({', '.join(map(_name, given))}): "
            f"it takes {takes}; convert the arguments (x.to(tl.float32)) as a compiled kernel must")

    implementation.__name__ = name
    implementation.__qualname__ = f"libdevice.{name}"
    return implementation


def _name(triton_type):
    return getattr(triton_type, "name", str(triton_type))


def _refused_types(exc):
    """(argument types, the function's table) where ``exc`` is Triton's front end refusing types its
    libdevice table lacks (``dispatch``'s ValueError, or from 3.5 the table's KeyError); else None."""
    trace, frame = exc.__traceback__, None
    while trace is not None:
        frame, trace = trace.tb_frame, trace.tb_next
    if frame is None or frame.f_code.co_name not in ("dispatch", "extern_elementwise"):
        return None
    table, given = frame.f_locals.get("arg_type_symbol_dict"), frame.f_locals.get("arg_types")
    return (tuple(given), table) if isinstance(table, dict) and given is not None else None


def extern_elementwise(symbol, handles, ret_type, flushing):
    """The TensorHandle of libdevice's ``symbol`` (``__nv_powf``) on the front end's ``handles``
    (promoted and broadcast), of type ``ret_type``; ``flushing`` (``numerics="gpu"``) reads fp32
    subnormal arguments as zeros, as libdevice linked with FTZ does (measured on the H200)."""
    interpreter = sys.modules[_INTERPRETER]
    name = _replacements()[2][symbol]
    arrays = [handle.data for handle in handles]
    if flushing:
        from .gpu_arithmetic import flushed, subnormal

        given, arrays = arrays, [flushed(array, positive=name in _POSITIVE_FLUSH) for array in arrays]
    with np.errstate(all="ignore"):
        result = np.asarray(TABLE[name](*np.broadcast_arrays(*arrays)))
    if flushing and name in _SUBNORMAL_RESULTS and given[0].dtype == np.float32:
        result = np.where(subnormal(given[0]), _SUBNORMAL_RESULTS[name], result)
    element = ret_type.scalar
    return interpreter.TensorHandle(result.astype(interpreter._get_np_dtype(element), copy=False), element)


#: What the H200's libdevice gives for an fp32 subnormal argument where that is not the function
#: of zero (``logbf``: -150, not -inf), and the functions that read one as +0 whatever its sign.
_SUBNORMAL_RESULTS = {"logb": -150.0}
_POSITIVE_FLUSH = frozenset({"sinpi"})


def _front_end(stub):
    """(keyword, table) where ``stub`` dispatches through ``core.extern_elementwise``: the keyword it
    takes its front end by (``_semantic`` from 3.4, ``_builder`` before) and its table
    ``{argument types: (symbol, result type)}``, read from that call's frame after an argument
    nothing can convert stops it. None where it does not (``extra.libdevice``'s stubs on 3.0-3.9
    stand for the backend's)."""
    keyword = front_end_keyword(stub)
    if keyword is None:
        return None
    parameters = inspect.signature(stub).parameters
    positional = [p for p in parameters.values() if p.kind == p.POSITIONAL_OR_KEYWORD and not p.name.startswith("_")]
    try:
        stub(*[_Unconvertible()] * len(positional), **{keyword: _Unconvertible()})
    except Exception as exc:
        trace = exc.__traceback__
        while trace is not None:
            table = trace.tb_frame.f_locals.get("arg_type_symbol_dict")
            if isinstance(table, dict) and table:
                return keyword, table
            trace = trace.tb_next
    return None


def accepted_types(stub):
    """The argument type tuples (names: ``("fp32",)``) the libdevice function ``stub`` takes compiled."""
    found = _front_end(stub)
    return None if found is None else frozenset(tuple(map(_name, key)) for key in found[1])


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
    """({id(original function): CPU implementation}, {id(libdevice module): namespace of them},
    {symbol: function name}) for every public function of the installed libdevice modules, built
    once. A stub that stands for the backend's (``extra.libdevice``) is run as the NVIDIA target's
    (the CUDA module's), the GPU kwshim follows."""
    import triton

    functions: Dict[int, Any] = {}
    modules: Dict[int, Any] = {}
    symbols: Dict[str, str] = {}
    keep = _KEPT  # the originals, so that their ids stay theirs
    backends = []
    for module_name in _MODULES[1:]:
        try:
            backends.append(vars(importlib.import_module(module_name)))
        except ImportError:
            pass
    for module_name in _MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        namespace = types.SimpleNamespace(**{k: v for k, v in vars(module).items() if not k.startswith("__")})
        for name, value in list(vars(module).items()):
            if name.startswith("_") or not callable(value) or isinstance(value, (type, types.ModuleType)):
                continue
            stub, found = value, _front_end(value)
            for backend in backends if found is None else ():
                stub = backend.get(name)
                found = _front_end(stub) if callable(stub) else None
                if found is not None:
                    break
            if name in TABLE and found is not None:
                keyword, table = found
                replacement = _through_front_end(name, stub, keyword)
                for symbol, _ in table.values():
                    symbols.setdefault(symbol, name)
            else:
                replacement = _missing(name, triton.__version__)
            functions.setdefault(id(value), replacement)
            keep.append(value)
            setattr(namespace, name, replacement)
        modules[id(module)] = namespace
        keep.append(module)
    return functions, modules, symbols


def originals() -> Dict[int, Any]:
    """{id(CPU implementation): the libdevice function (or module) it stands for}: what compiled
    Triton must see where code bound a CPU implementation by name while the switch was on
    (``from ...libdevice import rsqrt`` after it went on). Empty until the switch first installed them."""
    if _replacements.cache_info().currsize == 0:
        return {}
    functions, modules, _ = _replacements()
    by_id = {id(value): value for value in _KEPT}
    found = {id(replacement): by_id[original] for original, replacement in functions.items() if original in by_id}
    found.update((id(namespace), by_id[original]) for original, namespace in modules.items() if original in by_id)
    return found


def install(patch):
    """Put the CPU implementations in place of every public function of the loaded libdevice
    modules, through ``patch``."""
    functions, _, _ = _replacements()
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
    functions, modules, _ = _replacements()
    reached, used = reached_globals(fn)
    swaps: List[Tuple[Any, str, Any]] = []
    for scope, name, value in reached:
        replacement = functions.get(id(value)) or modules.get(id(value))
        if replacement is not None:
            swaps.append((scope, name, replacement))
    if "libdevice" in used:  # reached as an attribute of a module
        for module_name in _MODULES:
            module = sys.modules.get(module_name)
            for name in sorted(used) if module is not None else ():
                replacement = functions.get(id(vars(module).get(name)))
                if replacement is not None:
                    swaps.append((module, name, replacement))
    return swaps
