"""The interpreter's missing math: ``triton.language.extra.libdevice`` on the CPU, for wrapped kernels.

``triton.language.extra.libdevice`` is a module of stubs that the compiler resolves to the
backend's library; the interpreter runs the stubs, so every function returns ``None`` (3.6) or
raises (3.0: "Did you forget to add @triton.jit"). Every public function of the module (and of
the CUDA and HIP ``libdevice`` modules it stands for) gets a NumPy implementation computed
element-wise on the interpreter's tensors in their own dtype; a function without one raises
``NotImplementedError`` naming the function, the release and the workaround: never ``None``
flowing into arithmetic. Two seams, both reversible: while the switch is on, the modules'
attributes (``install``, through the switch's ``Patches``); and for the duration of each launch of
a wrapped kernel (``@kwsafe``, in place, or under the switch), the globals of the kernel and its
jitted helpers that name a libdevice function or module (``global_swaps``/``with_swaps``), which
reaches ``from ...libdevice import tanh`` done before anything was switched on.
"""

import functools
import importlib
import math
import sys
import types
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

__all__ = ["install", "global_swaps", "with_swaps", "IMPLEMENTATIONS"]

_MODULES = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
            "triton.language.extra.hip.libdevice")


def _erf(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _erfc(x):
    return np.vectorize(math.erfc, otypes=[x.dtype])(x)


def _lgamma(x):
    return np.vectorize(math.lgamma, otypes=[x.dtype])(x)


def _tgamma(x):
    return np.vectorize(lambda v: math.gamma(v) if v > 0 or v != math.floor(v) else math.nan, otypes=[x.dtype])(x)


_UNARY: Dict[str, Callable[[Any], Any]] = {
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(x.dtype.type(10), x), "expm1": np.expm1,
    "fast_expf": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
    "fast_logf": np.log, "fast_log2f": np.log2, "fast_log10f": np.log10,
    "sqrt": np.sqrt, "sqrt_rn": np.sqrt, "sqrt_rz": np.sqrt, "sqrt_ru": np.sqrt, "sqrt_rd": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "rsqrt_rn": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt,
    "rcbrt": lambda x: 1 / np.cbrt(x), "rcp_rn": lambda x: 1 / x, "rcp_rz": lambda x: 1 / x,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "fast_sinf": np.sin, "fast_cosf": np.cos, "fast_tanf": np.tan,
    "sinpi": lambda x: np.sin(np.pi * x), "cospi": lambda x: np.cos(np.pi * x),
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "erf": _erf, "erfc": _erfc, "lgamma": _lgamma, "tgamma": _tgamma,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x),
    "rint": np.rint, "nearbyint": np.rint, "abs": np.abs, "fabs": np.abs, "saturatef": lambda x: np.clip(x, 0, 1),
    "isnan": np.isnan, "isinf": np.isinf, "isfinited": np.isfinite, "finitef": np.isfinite, "signbit": np.signbit,
    "llrint": lambda x: np.rint(x).astype(np.int64), "llround": lambda x: np.round(x).astype(np.int64),
    "ilogb": lambda x: np.floor(np.log2(np.abs(x))).astype(np.int32),
}

_BINARY: Dict[str, Callable[[Any, Any], Any]] = {
    "pow": np.power, "powf": np.power, "fast_powf": np.power, "atan2": np.arctan2, "fmod": np.fmod,
    "fmin": np.fmin, "fmax": np.fmax, "min": np.minimum, "max": np.maximum, "hypot": np.hypot,
    "copysign": np.copysign, "fdim": lambda x, y: np.maximum(x - y, 0), "remainder": np.remainder,
    "div_rn": np.true_divide, "div_rz": np.true_divide, "div_rd": np.true_divide, "div_ru": np.true_divide,
    "fast_dividef": np.true_divide, "nextafter": np.nextafter, "ldexp": lambda x, y: np.ldexp(x, y.astype(np.int32)),
}

IMPLEMENTATIONS = sorted([*_UNARY, *_BINARY])


def _element_wise(name, numpy_fn, arity):
    def implementation(*args, **ignored):
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        if len(args) != arity:
            raise TypeError(f"libdevice.{name}() takes {arity} argument(s) ({len(args)} given)")
        tensors = [a for a in args if isinstance(a, tl.tensor)]
        if not tensors:
            raise TypeError(f"libdevice.{name}() needs a tensor argument")
        like = tensors[0]
        dtype = like.dtype
        arrays = []
        for a in args:
            value = a.value if isinstance(a, tl.constexpr) else a
            arrays.append(value.handle.data if isinstance(value, tl.tensor) else np.asarray(value, like.handle.data.dtype))
        with np.errstate(all="ignore"):
            result = np.asarray(numpy_fn(*np.broadcast_arrays(*arrays)))
        if result.dtype == np.bool_:
            out_type = tl.int1
        elif result.dtype.kind == "i":
            out_type = tl.int64 if result.dtype.itemsize == 8 else tl.int32
        else:
            out_type = dtype.scalar if hasattr(dtype, "scalar") else dtype
            result = result.astype(like.handle.data.dtype, copy=False)
        block = like.type.with_element_ty(out_type) if hasattr(like.type, "with_element_ty") else out_type
        if not like.type.is_block():
            block = out_type
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


@functools.lru_cache(maxsize=None)
def _replacements():
    """({id(original function): CPU implementation}, {id(libdevice module): namespace of them}) for
    every public function of the installed libdevice modules, built once."""
    import triton

    functions: Dict[int, Any] = {}
    modules: Dict[int, Any] = {}
    keep = []  # the originals, so that their ids stay theirs
    for module_name in _MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        namespace = types.SimpleNamespace(**{k: v for k, v in vars(module).items() if not k.startswith("__")})
        for name, value in list(vars(module).items()):
            if name.startswith("_") or not callable(value) or isinstance(value, (type, types.ModuleType)):
                continue
            if name in _UNARY:
                replacement = _element_wise(name, _UNARY[name], 1)
            elif name in _BINARY:
                replacement = _element_wise(name, _BINARY[name], 2)
            else:
                replacement = _missing(name, triton.__version__)
            functions.setdefault(id(value), replacement)
            keep.append(value)
            setattr(namespace, name, replacement)
        modules[id(module)] = namespace
        keep.append(module)
    _replacements.keep = keep  # type: ignore[attr-defined]
    return functions, modules


def install(patches):
    """Replace every public function of the libdevice modules through ``patches`` (reversible)."""
    functions, _ = _replacements()
    for module_name in _MODULES:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        for name, value in list(vars(module).items()):
            replacement = functions.get(id(value))
            if replacement is not None and not name.startswith("_"):
                patches.set(module, name, replacement)


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


def with_swaps(raw, swaps, lock):
    """``raw`` (a launch), with the ``swaps`` in place for its duration: serialized by ``lock``,
    since module globals are shared by every thread."""

    def launch(grid, args, kwargs):
        with lock:
            prior = [(namespace, name, namespace.get(name, _ABSENT)) for namespace, name, _ in swaps]
            for namespace, name, replacement in swaps:
                namespace[name] = replacement
            try:
                return raw(grid, args, kwargs)
            finally:
                for namespace, name, value in reversed(prior):
                    if value is _ABSENT:
                        namespace.pop(name, None)
                    else:
                        namespace[name] = value

    return launch


_ABSENT = object()
