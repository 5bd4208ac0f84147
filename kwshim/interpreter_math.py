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
from fractions import Fraction
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

__all__ = ["install", "global_swaps", "with_swaps", "IMPLEMENTATIONS"]

_MODULES = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
            "triton.language.extra.hip.libdevice")


def _vectorized(function):
    return lambda x: np.vectorize(function, otypes=[np.float64])(x)


def _torch(name):
    """A ``torch.special`` function on a NumPy array (erfinv, Bessel functions, ...)."""
    def apply(*arrays):
        import torch

        return getattr(torch.special, name)(*(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays)).numpy()

    return apply


def _gamma(v):
    return math.gamma(v) if v > 0 or v != math.floor(v) else math.nan


def _per_bits(x, per_value, dtype=np.int32):
    """``per_value(value, bits)`` on each element's unsigned bits: the integer bit functions."""
    bits = x.dtype.itemsize * 8
    unsigned = x.astype({4: np.uint32, 8: np.uint64}[x.dtype.itemsize])
    return np.array([per_value(int(v), bits) for v in unsigned.ravel()], dtype).reshape(x.shape)


def _clz(x):
    return _per_bits(x, lambda v, bits: bits - v.bit_length())


def _popc(x):
    return _per_bits(x, lambda v, bits: bin(v).count("1"))


def _brev(x):
    unsigned = {4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
    return _per_bits(x, lambda v, bits: int(format(v, f"0{bits}b")[::-1], 2), unsigned).view(x.dtype)


def _ffs(x):
    return _per_bits(x, lambda v, bits: (v & -v).bit_length())


def _mulhi(x, y):
    bits = x.dtype.itemsize * 8
    product = x.astype(object) * y.astype(object)
    return np.array([int(v) >> bits for v in product.ravel()], dtype=x.dtype).reshape(x.shape)


def _byte_perm(x, y, s):
    out = []
    for a, b, sel in zip(x.astype(np.uint32).ravel(), y.astype(np.uint32).ravel(), s.astype(np.uint32).ravel()):
        word = int(a) | (int(b) << 32)
        value = 0
        for i in range(4):
            value |= ((word >> (8 * ((int(sel) >> (4 * i)) & 7))) & 0xFF) << (8 * i)
        out.append(value)
    return np.array(out, np.uint32).reshape(x.shape).view(x.dtype) if x.dtype.itemsize == 4 else np.array(out)


_ROUNDED: Dict[str, Callable[[Any], Any]] = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}


# -- rounding modes (``_rn``, ``_rz``, ``_rd``, ``_ru``): exact, element by element ---------------
# NumPy rounds each operation to nearest. A directed variant (and a fused multiply-add, which rounds
# once) computes the exact result as a rational number and rounds it in the result's dtype as the
# GPU's instruction does. Slow (Python per element), for the few kernels that ask for it.

def _round_exact(exact, dtype, mode):
    """The ``dtype`` value that rounding ``mode`` gives for the exact nonzero rational ``exact``."""
    largest = np.finfo(dtype).max
    limit = Fraction(float(largest))
    if abs(exact) > limit:  # past the largest finite value: to it, or to infinity
        if mode == "rn":
            half_ulp = (limit - Fraction(float(np.nextafter(largest, dtype.type(0))))) / 2
            away = abs(exact) >= limit + half_ulp
        else:
            away = (mode == "ru" and exact > 0) or (mode == "rd" and exact < 0)
        return dtype.type(math.copysign(math.inf if away else float(largest), exact))
    candidate = dtype.type(float(exact))  # one of the two neighbours of ``exact``
    value = Fraction(float(candidate))
    if value == exact:
        return candidate
    other = np.nextafter(candidate, dtype.type(math.inf if value < exact else -math.inf))
    if mode == "rn":
        near, far = abs(value - exact), abs(Fraction(float(other)) - exact)
        even = int(np.asarray(other).view({4: np.uint32, 8: np.uint64}[dtype.itemsize])) % 2 == 0
        return other if far < near or (far == near and even) else candidate
    lower = mode == "rd" or (mode == "rz" and exact > 0)
    return other if (value > exact) == lower else candidate


def _signed_zero_sum(mode, addend, other):
    """The zero that an exact zero sum takes (IEEE 754, 6.3): the addends' sign if they share it
    (both zeros), else +0, or -0 when rounding down."""
    if not _opposite_signs(addend, other):
        return -0.0 if np.signbit(addend) else 0.0
    return -0.0 if mode == "rd" else 0.0


def _rounded(mode, exact, nearest, addends=None):
    """A NumPy function: ``exact(*values)`` (on Fractions) rounded by ``mode``, element by element.
    ``nearest`` gives the array (and what the mode does not change: NaN and infinite operands,
    division by zero, the sign of a zero product). ``addends(*values)``: the two addends of a sum,
    whose exact zero takes its sign from them and the mode."""

    def apply(*arrays):
        result = np.array(nearest(*arrays))
        for index in np.ndindex(result.shape):
            values = [a[index] for a in arrays]
            if any(isinstance(v, np.floating) and not np.isfinite(v) for v in values):
                continue
            try:
                value = exact(*(Fraction(int(v)) if isinstance(v, np.integer) else Fraction(float(v))
                                for v in values))
            except ZeroDivisionError:
                continue
            if value != 0:
                result[index] = _round_exact(value, result.dtype, mode)
            elif addends is not None:
                result[index] = _signed_zero_sum(mode, *addends(*values))
        return result

    return apply


def _sqrt_rounded(mode):
    """``sqrt`` rounded by ``mode``: NumPy's correctly rounded root, one step over where its square
    lies on the wrong side of the operand."""

    def apply(x):
        result = np.array(np.sqrt(x))
        for index in np.ndindex(result.shape):
            root = result[index]
            if np.isfinite(root) and root != 0:
                square, operand = Fraction(float(root)) ** 2, Fraction(float(x[index]))
                if mode != "ru" and square > operand:
                    result[index] = np.nextafter(root, result.dtype.type(-math.inf))
                elif mode == "ru" and square < operand:
                    result[index] = np.nextafter(root, result.dtype.type(math.inf))
        return result

    return apply


def _fma(mode):
    """``x * y + z`` rounded once. fp32 to nearest goes through float64, where the product is exact."""
    rounded = _rounded(mode, lambda x, y, z: x * y + z, lambda x, y, z: x * y + z,
                       lambda x, y, z: (-1.0 if _opposite_signs(x, y) else 1.0, z))

    def apply(x, y, z):
        if mode == "rn" and x.dtype == np.float32:
            return (x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)).astype(np.float32)
        return rounded(x, y, z)

    return apply


def _opposite_signs(x, y):
    return bool(np.signbit(x)) != bool(np.signbit(y))


SAME = None  #: the result has the first tensor argument's dtype

#: name: (function of NumPy arrays, result dtype: SAME, or a NumPy dtype, or "natural")
_TABLE: Dict[str, Tuple[Callable[..., Any], Any]] = {}


def _add(names, function, result=SAME):
    for name in names.split():
        _TABLE[name] = (function, result)


_add("exp fast_expf", np.exp)
_add("exp2", np.exp2)
_add("exp10 fast_exp10f", lambda x: np.power(x.dtype.type(10), x))
_add("expm1", np.expm1)
_add("log fast_logf", np.log)
_add("log2 fast_log2f", np.log2)
_add("log10 fast_log10f", np.log10)
_add("log1p", np.log1p)
_add("sqrt sqrt_rn", np.sqrt)
_add("rsqrt rsqrt_rn", lambda x: 1 / np.sqrt(x))
_add("cbrt", np.cbrt)
_add("rcbrt", lambda x: 1 / np.cbrt(x))
_add("rcp_rn", lambda x: 1 / x)
_add("sin fast_sinf", np.sin)
_add("cos fast_cosf", np.cos)
_add("tan fast_tanf", np.tan)
_add("sinpi", lambda x: np.sin(np.pi * x))
_add("cospi", lambda x: np.cos(np.pi * x))
_add("asin", np.arcsin)
_add("acos", np.arccos)
_add("atan", np.arctan)
_add("sinh", np.sinh)
_add("cosh", np.cosh)
_add("tanh fast_tanhf", np.tanh)
_add("asinh", np.arcsinh)
_add("acosh", np.arccosh)
_add("atanh", np.arctanh)
_add("erf", _vectorized(math.erf))
_add("erfc", _vectorized(math.erfc))
_add("erfinv", _torch("erfinv"))
_add("erfcinv", lambda x: _torch("erfinv")(1 - x))
_add("erfcx", _torch("erfcx"))
_add("normcdf", _torch("ndtr"))
_add("normcdfinv", _torch("ndtri"))
_add("lgamma", _vectorized(math.lgamma))
_add("tgamma", _vectorized(_gamma))
_add("cyl_bessel_i0", _torch("i0"))
_add("cyl_bessel_i1", _torch("i1"))
_add("j0", _torch("bessel_j0"))
_add("j1", _torch("bessel_j1"))
_add("y0", _torch("bessel_y0"))
_add("y1", _torch("bessel_y1"))
_add("floor", np.floor)
_add("ceil", np.ceil)
_add("trunc", np.trunc)
_add("round", lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x))
_add("rint nearbyint", np.rint)
_add("abs fabs", np.abs)
_add("saturatef", lambda x: np.clip(x, 0, 1))
_add("logb", lambda x: np.floor(np.log2(np.abs(x))))
_add("isnan", lambda x: np.isnan(x).astype(np.int32), "natural")
_add("isinf", lambda x: np.isinf(x).astype(np.int32), "natural")
_add("isfinited finitef", lambda x: np.isfinite(x).astype(np.int32), "natural")
_add("signbit", lambda x: np.signbit(x).astype(np.int32), "natural")
_add("ilogb", lambda x: np.floor(np.log2(np.abs(x))).astype(np.int32), "natural")
_add("llrint", lambda x: np.rint(x).astype(np.int64), "natural")
_add("llround", lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x).astype(np.int64), "natural")
_add("pow powf fast_powf", np.power)
_add("atan2", np.arctan2)
_add("fmod", np.fmod)
_add("remainder", lambda x, y: x - y * np.rint(x / y))
_add("fmin min", np.fmin)
_add("fmax max", np.fmax)
_add("hypot", np.hypot)
_add("rhypot", lambda x, y: 1 / np.hypot(x, y))
_add("norm3d", lambda x, y, z: np.sqrt(x * x + y * y + z * z))
_add("norm4d", lambda x, y, z, t: np.sqrt(x * x + y * y + z * z + t * t))
_add("rnorm3d", lambda x, y, z: 1 / np.sqrt(x * x + y * y + z * z))
_add("rnorm4d", lambda x, y, z, t: 1 / np.sqrt(x * x + y * y + z * z + t * t))
_add("copysign", np.copysign)
_add("fdim", lambda x, y: np.maximum(x - y, 0))
_add("nextafter", np.nextafter)
_add("div_rn fast_dividef", np.true_divide)
_add("add_rn", np.add)
_add("sub_rn", np.subtract)
_add("mul_rn", np.multiply)
_add("fma fma_rn", _fma("rn"))
for _mode in ("rz", "rd", "ru"):
    _add(f"sqrt_{_mode}", _sqrt_rounded(_mode))
    _add(f"rcp_{_mode}", _rounded(_mode, lambda x: 1 / x, lambda x: 1 / x))
    _add(f"div_{_mode}", _rounded(_mode, lambda x, y: x / y, np.true_divide))
    _add(f"add_{_mode}", _rounded(_mode, lambda x, y: x + y, np.add, lambda x, y: (x, y)))
    _add(f"sub_{_mode}", _rounded(_mode, lambda x, y: x - y, np.subtract, lambda x, y: (x, -y)))
    _add(f"mul_{_mode}", _rounded(_mode, lambda x, y: x * y, np.multiply))
    _add(f"fma_{_mode}", _fma(_mode))
_add("ldexp scalbn", lambda x, n: np.ldexp(x, np.asarray(n).astype(np.int32)))
_add("hadd", lambda x, y: ((x.astype(np.int64) + y.astype(np.int64)) >> 1).astype(x.dtype))
_add("rhadd", lambda x, y: ((x.astype(np.int64) + y.astype(np.int64) + 1) >> 1).astype(x.dtype))
_add("mul24", lambda x, y: ((x.astype(np.int64) & 0xFFFFFF) * (y.astype(np.int64) & 0xFFFFFF)).astype(x.dtype))
_add("sad", lambda x, y, z: (np.abs(x.astype(np.int64) - y.astype(np.int64)) + z).astype(z.dtype))
_add("mulhi", _mulhi)
_add("clz", _clz, "natural")
_add("popc", _popc, "natural")
_add("ffs", _ffs, "natural")
_add("brev", _brev)
_add("byte_perm", _byte_perm)
for _mode, _round in _ROUNDED.items():
    for _source, _target, _numpy in (("float", "int", np.int32), ("float", "uint", np.uint32),
                                     ("float", "ll", np.int64), ("float", "ull", np.uint64),
                                     ("double", "int", np.int32), ("double", "uint", np.uint32),
                                     ("double", "ll", np.int64), ("double", "ull", np.uint64)):
        _add(f"{_source}2{_target}_{_mode}", (lambda r, t: lambda x: r(x).astype(t))(_round, _numpy), _numpy)
    for _source, _target, _float in (("double", "float", np.float32), ("int", "float", np.float32),
                                     ("uint", "float", np.float32), ("ll", "float", np.float32),
                                     ("ull", "float", np.float32), ("int", "double", np.float64),
                                     ("uint", "double", np.float64), ("ll", "double", np.float64),
                                     ("ull", "double", np.float64)):
        _convert = (lambda t: lambda x: x.astype(t))(_float)
        _add(f"{_source}2{_target}_{_mode}", _convert if _mode == "rn" else _rounded(_mode, lambda x: x, _convert),
             _float)
_add("float_as_int", lambda x: x.astype(np.float32).view(np.int32), np.int32)
_add("float_as_uint", lambda x: x.astype(np.float32).view(np.uint32), np.uint32)
_add("int_as_float uint_as_float", lambda x: x.astype(np.int32).view(np.float32), np.float32)
_add("double_as_longlong", lambda x: x.astype(np.float64).view(np.int64), np.int64)
_add("longlong_as_double", lambda x: x.astype(np.int64).view(np.float64), np.float64)
_add("double2hiint", lambda x: (x.astype(np.float64).view(np.int64) >> 32).astype(np.int32), np.int32)
_add("double2loint", lambda x: (x.astype(np.float64).view(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32),
     np.int32)
_add("hiloint2double", lambda hi, lo: ((hi.astype(np.int64) << 32) | (lo.astype(np.int64) & 0xFFFFFFFF)).view(
    np.float64), np.float64)

IMPLEMENTATIONS = sorted(_TABLE)

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
            if name in _TABLE:
                replacement = _element_wise(name, *_TABLE[name])
            else:
                replacement = _missing(name, triton.__version__)
            functions.setdefault(id(value), replacement)
            keep.append(value)
            setattr(namespace, name, replacement)
        modules[id(module)] = namespace
        keep.append(module)
    return functions, modules


def _all_ones(type):
    """The interpreter's all-ones scalar of an integer or boolean type (what ``~x`` XORs with)."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    scalar = getattr(type, "scalar", type)
    if scalar == tl.int1:
        return TensorHandle(np.full(1, True, dtype=np.bool_), scalar)
    numpy_type = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
                  "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64}.get(getattr(scalar, "name", ""))
    if numpy_type is None:
        raise TypeError(f"unsupported type {type}")
    return TensorHandle(np.full(1, np.iinfo(numpy_type).max if np.issubdtype(numpy_type, np.unsignedinteger)
                                else -1, dtype=numpy_type), scalar)


def _builder_gaps(builder_class):
    """(name, replacement) for what the installed interpreter builder lacks for ``~`` on booleans
    (3.0-3.3: no ``get_int1_ty``, and ``get_all_ones_value`` refuses int1; 2.3: no
    ``get_all_ones_value`` at all), probed on the class."""
    import triton.language as tl

    gaps = []
    if not hasattr(builder_class, "get_int1_ty"):
        gaps.append(("get_int1_ty", lambda self: tl.int1))
    original = getattr(builder_class, "get_all_ones_value", None)
    if original is None:
        gaps.append(("get_all_ones_value", lambda self, type: _all_ones(type)))
        return gaps
    try:
        original(None, tl.int1)
    except TypeError:
        def get_all_ones_value(self, type):
            if getattr(type, "scalar", type) == tl.int1:
                return _all_ones(type)
            return original(self, type)

        gaps.append(("get_all_ones_value", get_all_ones_value))
    except Exception:  # noqa: S110  (another failure: not the gap this probe looks for)
        pass
    return gaps


def _builder_class(interpreter):
    """The installed interpreter's builder class: ``InterpreterBuilder`` (3.x) or ``Builder`` (2.x)."""
    for name in ("InterpreterBuilder", "Builder"):
        found = getattr(interpreter, name, None)
        if isinstance(found, type) and hasattr(found, "set_grid_dim"):
            return found
    return None


def _cpu_sort(original):
    """``tl.sort`` on the interpreter's tensors with NumPy (a stable sort of the minor dimension,
    as the bitonic network orders values); 3.0's interpreter cannot run the network on 1-D
    blocks (``operands could not be broadcast together``). bf16, kept as its bits, goes to Triton's own."""

    def sort(x, dim=None, descending=0, **kwargs):
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        dim = dim.value if isinstance(dim, tl.constexpr) else dim
        descending = descending.value if isinstance(descending, tl.constexpr) else descending
        data = getattr(getattr(x, "handle", None), "data", None)
        if data is None or kwargs or x.dtype == tl.bfloat16:
            return original(x, dim, descending, **kwargs)
        axis = len(x.shape) - 1 if dim is None else dim
        result = np.sort(data, axis=axis, kind="stable")
        if descending:
            result = np.flip(result, axis=axis)
        return tl.tensor(TensorHandle(np.ascontiguousarray(result), x.handle.dtype), x.type)

    sort.__name__ = "sort"
    sort.__wrapped__ = original
    return sort


def install(patches):
    """Replace every public function of the libdevice modules, ``tl.sort``, and fill the interpreter
    builder's gaps, through ``patches`` (reversible: the switch undoes them)."""
    import triton.language as tl
    from triton.runtime import interpreter

    original_sort = vars(tl).get("sort")
    if original_sort is not None:
        cpu_sort = _cpu_sort(original_sort)
        patches.set(tl, "sort", cpu_sort)
        standard = sys.modules.get("triton.language.standard")
        if standard is not None and vars(standard).get("sort") is original_sort:
            patches.set(standard, "sort", cpu_sort)

    builder_class = _builder_class(interpreter)
    if builder_class is not None:
        for name, replacement in _builder_gaps(builder_class):
            patches.set(builder_class, name, replacement)
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
