"""The numerics table: elementwise operations, conversions, reductions, ``tl.dot`` and atomics on
bf16, fp16, fp32, fp8e4nv, fp8e5 and the integer types, each stored as raw bits so that compiled
(a GPU) and interpreted (the CPU, kwshim's switch on) results compare bit for bit.

    python -m parity.numerics record numerics_h200.json   # on a GPU: the truth, inputs included
    python -m parity.numerics compare numerics_h200.json  # on the CPU: the interpreter against it

Every value goes in and comes out as the integer bits of its type (``x.to(IN, bitcast=True)``), so
NaN payloads, signed zeros and subnormals survive the trip. ``tests/test_numerics.py`` runs
``compare`` against the recorded H200 table on every release.
"""

import json
import math
import os
import struct
import sys

import numpy as np

if __name__ == "__main__":  # the interpreter is chosen before Triton is imported
    os.environ["TRITON_INTERPRET"] = "0" if sys.argv[1:2] == ["record"] else "1"

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

try:  # 3.x: the backend's libdevice through one module
    from triton.language.extra import libdevice  # noqa: E402
except ImportError:  # 2.x
    libdevice = None

#: The float formats of the table and, for each, the signed integer type of the same width.
FLOATS = {"fp8e4nv": "int8", "fp8e5": "int8", "bf16": "int16", "fp16": "int16", "fp32": "int32", "fp64": "int64"}
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"]
WIDTH = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint32": 32, "uint64": 64,
         "fp8e4nv": 8, "fp8e5": 8, "bf16": 16, "fp16": 16, "fp32": 32, "fp64": 64, "int1": 8}
#: (exponent bits, mantissa bits) of each float format, to tell NaN patterns (payloads aside).
LAYOUT = {"fp8e5": (5, 2), "bf16": (8, 7), "fp16": (5, 10), "fp32": (8, 23), "fp64": (11, 52)}
N = 256

#: Cases where kwshim knowingly differs from the H200 on every release, and why.
KNOWN_GAPS = {
    **{f"cast {source}->uint8": "the H200's bytes for float -> uint8 are position-dependent even in range (bf16 "
       "0.0078125 stores 0xff, fp64 1.0 stores 0x81); kwshim stores the value clamped to 16 bits, low byte"
       for source in ("bf16", "fp16", "fp32", "fp64")},
    **{f"div {t}": "compiled Triton fails to lower the division of two fp8 values; the interpreter widens them to fp32"
       for t in ("fp8e4nv", "fp8e5")},
}
#: Cases compared within a bound rather than bit for bit: (kind, bound, why), the bound being the
#: largest difference measured on 3.0, 3.6 and 3.9, where the GPU's hardware approximation or order
#: of addition is not reproduced bit for bit. ``"ulps"``: in the result type's order of finite
#: values; ``"of largest"``: times the largest finite magnitude of the GPU's result. NaN, inf and
#: zero must match as they are.
TOLERANCES = {
    **{f"{op} fp32": ("ulps", 1, f"the GPU's {instruction}; kwshim rounds its model exactly")
       for op, instruction in (("exp", "ex2.approx of fl(x * log2(e))"), ("exp2", "ex2.approx.ftz"),
                               ("sqrt", "sqrt.approx.ftz"), ("sin", "sin.approx.ftz"), ("cos", "cos.approx.ftz"),
                               ("erf", "erf (subnormal results flushed)"))},
    "log fp32": ("ulps", 2, "the GPU's lg2.approx; kwshim computes log exactly"),
    "sigmoid fp32": ("ulps", 2, "1 / (1 + exp(-x)): ex2.approx and div.full.f32"),
    **{f"div {t}": ("ulps", 1, "the GPU's fp32 `/` is div.full.f32; kwshim divides exactly")
       for t in ("bf16", "fp16", "fp32")},
    "dot fp16": ("ulps", 1, "the tensor core's own adder for each step of K (1017 of 1024 the same)"),
    "dot fp32 tf32x3": ("of largest", 2e-6, "three TF32 products per element on the GPU; fp32 here"),
    **{f"libdevice.{f} fp32": ("ulps", 1, f"libdevice's {f} (1 ulp in the CUDA math API); exact here")
       for f in ("sinpi", "cospi")},
    "libdevice.erfcinv fp32": ("ulps", 2, "libdevice's erfcinv (4 ulps in the CUDA math API); exact here"),
    "libdevice.exp_of_a_scalar fp32": ("ulps", 1, "libdevice's expf (2 ulps in the CUDA math API); exact here"),
}
#: Cases where another release's own front end differs from 3.6's (compiled on that release does the same).
RELEASE_GAPS = {
    **{f"mul_point_one {t}": "on 3.0-3.1's front end a float constant makes the product fp32 "
       "(3.2 and later round the constant first)"
       for t in ("bf16", "fp16", "fp8e4nv", "fp8e5")},
    "atomic_add bf16": "3.0-3.3's front end refuses bf16 atomic_add",
    "cumsum bf16 (random)": "3.9's front end scans bf16 in bf16 (3.0-3.8 promote it to fp32)",
    **{row: "3.0-3.4's front end promotes a libdevice type tuple its table lacks ((fp16, fp32) to fp32's, "
       "(fp32, fp64) to fp64's); 3.5 and later refuse it, as the H200's 3.6 did"
       for row in ("libdevice.pow_mixed fp16", "libdevice.pow_mixed bf16", "libdevice.pow_tiny fp32")},
}

ELEMENTWISE_UNARY = ["neg", "abs", "add_one", "mul_point_one", "sub_from_zero"]
ELEMENTWISE_BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "lt", "le", "eq", "ne", "where_lt"]
INTEGER_BINARY = ["floordiv", "mod"]
REDUCTIONS = ["sum", "max", "min", "argmax", "argmin"]
ARITHMETIC = ["bf16", "fp16", "fp32", "fp8e4nv", "fp8e5"]
#: libdevice functions, on every arithmetic type (compiled takes fp32 and fp64 alone): the result
#: type of each. fp32's values are compared for the functions whose result is exact.
LIBDEVICE = {"exp": None, "sqrt_rn": None, "isnan": "int32", "pow": None}
LIBDEVICE_EXACT = ("sqrt_rn", "isnan")
#: libdevice at its edges: (function, argument type, result type or None for the argument's)
LIBDEVICE_EDGES = [("float2int_rn", "fp32", "int32"), ("float2uint_rn", "fp32", "int32"),
                   ("float2ll_rz", "fp32", "int64"), ("double2int_rz", "fp64", "int32"),
                   ("double2uint_rz", "fp64", "int32"), ("round", "fp32", None), ("sinpi", "fp32", None),
                   ("cospi", "fp32", None), ("logb", "fp32", None), ("ilogb", "fp32", "int32"),
                   ("erfcinv", "fp32", None), ("saturatef", "fp32", None), ("llround", "fp32", "int64")]


def storage(type_name):
    """The integer type whose bits carry ``type_name`` through memory."""
    return FLOATS.get(type_name, "uint8" if type_name == "int1" else type_name)


def _bits(values, type_name):
    """Python floats as the unsigned integer bits of a float format (fp32/fp64 exactly, through struct)."""
    if type_name == "fp32":
        return [struct.unpack("<I", struct.pack("<f", v))[0] for v in values]
    if type_name == "fp64":
        return [struct.unpack("<Q", struct.pack("<d", v))[0] for v in values]
    raise ValueError(type_name)


def _fp32_specials():
    return [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, 3.5, -2.5, 0.1, 255.5, 256.0,
            127.5, 128.0, -128.5, -129.0, 65504.0, 65519.0, 65520.0, 70000.0, -70000.0, 1e5, -1e5, 3e9, -3e9, 1e10,
            -1e10, 2147483520.0, 2147483648.0, -2147483648.0, 4294967296.0, 1.8446744e19, 9.3e18, 3.4e38, -3.4e38,
            448.0, 464.0, 480.0, 57344.0, 61440.0, 1e-40, -1e-40, 1e-45, 2.0 ** -126, 2.0 ** -133, 2.0 ** -140,
            2.0 ** -14, 2.0 ** -24, 2.0 ** -25, 2.0 ** -6, 2.0 ** -9, 2.0 ** -10, 2.0 ** -16, 2.0 ** -17, 0.0009765625,
            1.00390625, 1.0078125, 1.01171875, 3.0e-39, 1.17549435e-38]


def inputs(type_name, seed):
    """N unsigned bit patterns of ``type_name``: specials first, then seeded random values."""
    return [int(b) for b in _patterns(type_name, seed)]


def _patterns(type_name, seed):
    rng = np.random.RandomState(seed)
    width = WIDTH[type_name]
    if width == 8 and type_name in FLOATS:
        return list(range(256))
    if type_name in ("fp32", "fp64"):
        values = _fp32_specials()
        values += list(rng.standard_normal(N - len(values)) * np.exp2(rng.randint(-20, 20, N - len(values))))
        return _bits(values, type_name)
    if type_name in ("bf16", "fp16"):
        specials = ([0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x3F80,
                     0xBF80, 0x3F00, 0x4020, 0x3FC0, 0x4060, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00, 0x7E00, 0x3C00])
        fp32 = np.float32(rng.standard_normal(N - len(specials))) * np.float32(8.0)
        if type_name == "bf16":
            rest = list((fp32.view(np.uint32) >> 16).astype(int))
        else:
            rest = list(fp32.astype(np.float16).view(np.uint16).astype(int))
        return specials + rest
    info = np.iinfo(getattr(np, type_name))
    specials = [0, 1, 2, 3, 7, info.max, info.max - 1, info.min, 100, 127, 128, 255, 256]
    if info.min < 0:
        specials += [-1, -2, -7, -100, -128, -129]
    if width >= 32:
        specials += [2 ** 24 + 1, 2 ** 24 + 3, 65504, 65520, 70000, 2 ** 31 - 1, 2 ** 53 + 1]
        if info.min < 0:
            specials += [-(2 ** 24) - 1, -70000, -(2 ** 31)]
    specials = [v for v in specials if info.min <= v <= info.max]
    rest = list(rng.randint(-1000 if info.min < 0 else 0, 1000, N - len(specials)))
    return [v & ((1 << width) - 1) for v in specials + [int(v) for v in rest]]


def cases():
    """Every case of the table: (name, kernel kind, parameters, input types, result type)."""
    table = []
    casts = ["fp8e4nv", "fp8e5", "bf16", "fp16", "fp32", "fp64"] + INTS
    for source in casts:
        for target in casts + ["int1"]:
            if source == target:
                continue
            table.append((f"cast {source}->{target}", "unary", {"OP": "cast"}, [source], target))
            if source in FLOATS and target in FLOATS and WIDTH[target] < WIDTH[source]:
                table.append((f"cast {source}->{target} rtz", "unary", {"OP": "cast_rtz"}, [source], target))
    for type_name in ARITHMETIC:
        for op in ELEMENTWISE_UNARY:
            table.append((f"{op} {type_name}", "unary", {"OP": op}, [type_name], None))
        for op in ELEMENTWISE_BINARY:
            result = "int1" if op in ("lt", "le", "eq", "ne") else None
            if op == "div" and type_name in ("bf16", "fp16"):
                result = "fp32"  # Triton divides half-width floats in fp32
            table.append((f"{op} {type_name}", "binary", {"OP": op}, [type_name, type_name], result))
        for op in REDUCTIONS:
            result = "int32" if op.startswith("arg") else None
            for rows in ("small integers", "random"):
                table.append((f"{op} {type_name} ({rows})", "reduce", {"OP": op, "ROWS": rows}, [type_name], result))
        table.append((f"cumsum {type_name} (small integers)", "scan", {"OP": "cumsum", "ROWS": "small integers"},
                      [type_name], None))
        table.append((f"dot {type_name}", "dot", {}, [type_name, type_name], "fp32"))
    for type_name in ("int32", "int64", "uint32", "int8"):
        for op in INTEGER_BINARY + ["neg"]:
            kind = "unary" if op == "neg" else "binary"
            table.append((f"{op} {type_name}", kind, {"OP": op}, [type_name] * (1 if op == "neg" else 2), None))
    for type_name in ("bf16", "fp16", "fp32"):
        table.append((f"atomic_add {type_name}", "atomic", {}, [type_name, type_name], None))
    for function, result in LIBDEVICE.items():
        for type_name in ARITHMETIC:
            if type_name != "fp32" or function in LIBDEVICE_EXACT:
                table.append((f"libdevice.{function} {type_name}", "unary", {"OP": f"libdevice.{function}"},
                              [type_name], result))
    table += gpu_arithmetic_cases()
    for function, source, result in LIBDEVICE_EDGES:
        table.append((f"libdevice.{function} {source}", "unary", {"OP": f"libdevice.{function}"}, [source], result))
    for type_name in ("fp16", "bf16"):
        table.append((f"libdevice.pow_mixed {type_name}", "unary", {"OP": "libdevice.pow_mixed"}, [type_name], "fp32"))
    table.append(("libdevice.exp_of_a_scalar fp32", "unary", {"OP": "libdevice.exp_of_a_scalar"}, ["fp32"], None))
    for function in ("remainder", "fdim"):
        table.append((f"libdevice.{function} fp32", "binary", {"OP": f"libdevice.{function}"}, ["fp32", "fp32"], None))
    for type_name in ("fp32", "fp64"):  # (fp32, fp64) is not in pow's table; (fp64, fp64) is
        table.append((f"libdevice.pow_tiny {type_name}", "unary", {"OP": "libdevice.pow_tiny"}, [type_name], None))
    return table


#: fp32 functions the GPU computes with approximate instructions (ex2.approx, sin.approx, ...) or libdevice
TRANSCENDENTAL = ["exp", "exp2", "log", "sqrt", "sin", "cos", "erf", "sigmoid"]


def gpu_arithmetic_cases():
    """Where the GPU's arithmetic is not IEEE's exact rounding of each operation: tl.dot's input
    precision and accumulation, sums and scans of half-width floats, contracted multiply-adds, and
    the approximate transcendentals."""
    table = []
    for precision in ("ieee", "tf32x3", "tf32"):
        table.append((f"dot fp32 {precision}", "dot", {"PRECISION": precision}, ["fp32", "fp32"], "fp32"))
    for type_name in ("fp16", "bf16"):
        table.append((f"dot {type_name} out fp16", "dot", {"OUT": "fp16"}, [type_name, type_name], "fp32"))
    for type_name in ("bf16", "fp16", "fp32"):
        table.append((f"cumsum {type_name} (random)", "scan", {"OP": "cumsum", "ROWS": "random"}, [type_name], None))
        table.append((f"mul_add {type_name}", "binary", {"OP": "mul_add"}, [type_name, type_name], None))
        table.append((f"mul_add {type_name} unfused", "binary", {"OP": "mul_add", "FUSION": False},
                      [type_name, type_name], None))
    for op in TRANSCENDENTAL:
        table.append((f"{op} fp32", "unary", {"OP": op}, ["fp32"], None))
    for type_name in ("bf16", "fp16"):
        table.append((f"exp {type_name}", "unary", {"OP": "exp"}, [type_name], None))
    return table


def case_inputs(name, kind, params, types):
    """The bit patterns a case reads: one list per input, N long (dot: 16x16; reductions: 64)."""
    seed = sum(map(ord, name)) % 10000
    if kind in ("reduce", "scan"):
        type_name = types[0]
        if params["ROWS"] == "small integers":
            rng = np.random.RandomState(seed)
            values = [float(v) for v in rng.randint(-4, 5, 64)]
            return [_from_fp32(values, type_name)]
        pool = [b for b in inputs(type_name, seed) if _is_finite(b, type_name)]
        rng = np.random.RandomState(seed)
        return [[int(pool[i]) for i in rng.randint(0, len(pool), 64)]]
    if kind == "dot":
        rng = np.random.RandomState(seed)
        return [_from_fp32(list(rng.randint(-3, 4, 1024).astype(float) * 0.5), types[0]),
                _from_fp32(list(rng.standard_normal(1024)), types[1])]
    first = inputs(types[0], seed)
    if len(types) == 1:
        return [first]
    rng = np.random.RandomState(seed + 1)
    second = [first[i] for i in rng.permutation(len(first))]
    if types[0] in INTS:
        second[:8] = [0, 0, 1, 1, 2, 3, 0, 1]  # division and modulo by zero, by one
    if kind == "atomic":
        second = [b if _is_finite(b, types[0]) else 0 for b in second]
    return [first, second]


def _from_fp32(values, type_name):
    """Python floats (exact in the format) as its bits, rounded by NumPy/ml_dtypes."""
    if type_name in ("fp32", "fp64"):
        return _bits(values, type_name)
    import torch

    torch_type = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8e4nv": torch.float8_e4m3fn,
                  "fp8e5": torch.float8_e5m2}[type_name]
    signed_type = {8: torch.int8, 16: torch.int16}[WIDTH[type_name]]
    signed = torch.tensor(values, dtype=torch.float32).to(torch_type).view(signed_type)
    return [int(b) & ((1 << WIDTH[type_name]) - 1) for b in signed.tolist()]


def _is_finite(bits, type_name):
    if type_name == "fp8e4nv":
        return (bits & 0x7F) != 0x7F
    exponent, mantissa = LAYOUT[type_name]
    return ((bits >> mantissa) & ((1 << exponent) - 1)) != (1 << exponent) - 1


def is_nan(bits, type_name):
    if type_name == "fp8e4nv":
        return (bits & 0x7F) == 0x7F
    if type_name not in LAYOUT:
        return False
    exponent, mantissa = LAYOUT[type_name]
    return not _is_finite(bits, type_name) and (bits & ((1 << mantissa) - 1)) != 0


def decoded(bits, type_name):
    """The value of each bit pattern of a float format (bf16/fp16/fp32/fp64), as Python floats."""
    array = np.array(bits, dtype=np.uint64)
    if type_name == "bf16":
        return list((array << np.uint64(16)).astype(np.uint32).view(np.float32).astype(float))
    view = {"fp16": (np.uint16, np.float16), "fp32": (np.uint32, np.float32), "fp64": (np.uint64, np.float64)}
    unsigned, floating = view[type_name]
    return list(array.astype(unsigned).view(floating).astype(float))


def _undefined(name, inputs):
    """Indices where compiled Triton's result is undefined (LLVM poison), so not compared: a
    float converted to an unsigned integer type from a value at or below -1."""
    source, _, target = name.partition(" ")[2].partition("->")
    if not name.startswith("cast ") or not target.startswith("uint") or source not in LAYOUT:
        return set()
    return {i for i, v in enumerate(decoded(inputs[0], source)) if v <= -1.0}


def result_type(case):
    name, kind, params, types, result = case
    return result or types[0]


# -- kernels: compiled from this file's source, interpreted under the switch ------------------------

@triton.jit
def unary(x_ptr, out_ptr, N: tl.constexpr, IN: tl.constexpr, OUT: tl.constexpr, OUT_BITS: tl.constexpr,
          BOOL: tl.constexpr, OP: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i).to(IN, bitcast=True)
    if OP == "cast":
        r = x.to(OUT)
    elif OP == "cast_rtz":
        r = x.to(OUT, fp_downcast_rounding="rtz")
    elif OP == "neg":
        r = -x
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "add_one":
        r = x + 1
    elif OP == "mul_point_one":
        r = x * 0.1
    elif OP == "libdevice.exp":
        r = libdevice.exp(x)
    elif OP == "libdevice.sqrt_rn":
        r = libdevice.sqrt_rn(x)
    elif OP == "libdevice.isnan":
        r = libdevice.isnan(x)
    elif OP == "libdevice.pow":
        r = libdevice.pow(x, x)
    elif OP == "exp":
        r = tl.exp(x)
    elif OP == "exp2":
        r = tl.exp2(x)
    elif OP == "log":
        r = tl.log(x)
    elif OP == "sqrt":
        r = tl.sqrt(x)
    elif OP == "sin":
        r = tl.sin(x)
    elif OP == "cos":
        r = tl.cos(x)
    elif OP == "erf":
        r = tl.erf(x)
    elif OP == "sigmoid":
        r = tl.sigmoid(x)
    elif OP == "libdevice.float2int_rn":
        r = libdevice.float2int_rn(x)
    elif OP == "libdevice.float2uint_rn":
        r = libdevice.float2uint_rn(x)
    elif OP == "libdevice.float2ll_rz":
        r = libdevice.float2ll_rz(x)
    elif OP == "libdevice.double2int_rz":
        r = libdevice.double2int_rz(x)
    elif OP == "libdevice.double2uint_rz":
        r = libdevice.double2uint_rz(x)
    elif OP == "libdevice.round":
        r = libdevice.round(x)
    elif OP == "libdevice.sinpi":
        r = libdevice.sinpi(x)
    elif OP == "libdevice.cospi":
        r = libdevice.cospi(x)
    elif OP == "libdevice.logb":
        r = libdevice.logb(x)
    elif OP == "libdevice.ilogb":
        r = libdevice.ilogb(x)
    elif OP == "libdevice.erfcinv":
        r = libdevice.erfcinv(x)
    elif OP == "libdevice.saturatef":
        r = libdevice.saturatef(x)
    elif OP == "libdevice.llround":
        r = libdevice.llround(x)
    elif OP == "libdevice.pow_mixed":  # a half-width tensor and a float: the front end promotes, or refuses
        r = libdevice.pow(x, 1.5)
    elif OP == "libdevice.exp_of_a_scalar":  # no tensor argument at all
        r = tl.zeros_like(x) + libdevice.exp(2.0)
    elif OP == "libdevice.pow_tiny":  # a float below fp32's normal range is typed fp64, as to_tensor types it
        r = libdevice.pow(x, 1e-40)
    else:
        r = 0 - x
    if BOOL:
        tl.store(out_ptr + i, r.to(tl.uint8))
    else:
        tl.store(out_ptr + i, r.to(OUT).to(OUT_BITS, bitcast=True))


@triton.jit
def binary(x_ptr, y_ptr, out_ptr, N: tl.constexpr, IN: tl.constexpr, OUT: tl.constexpr, OUT_BITS: tl.constexpr,
           BOOL: tl.constexpr, OP: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i).to(IN, bitcast=True)
    y = tl.load(y_ptr + i).to(IN, bitcast=True)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "div":
        r = x / y
    elif OP == "maximum":
        r = tl.maximum(x, y)
    elif OP == "minimum":
        r = tl.minimum(x, y)
    elif OP == "lt":
        r = x < y
    elif OP == "le":
        r = x <= y
    elif OP == "eq":
        r = x == y
    elif OP == "ne":
        r = x != y
    elif OP == "where_lt":
        r = tl.where(x < y, x, y)
    elif OP == "mul_add":  # contracted to one fma where fp fusion is on
        r = x * y + x
    elif OP == "libdevice.remainder":
        r = libdevice.remainder(x, y)
    elif OP == "libdevice.fdim":
        r = libdevice.fdim(x, y)
    elif OP == "floordiv":
        r = x // y
    else:
        r = x % y
    if BOOL:
        tl.store(out_ptr + i, r.to(tl.uint8))
    else:
        tl.store(out_ptr + i, r.to(OUT).to(OUT_BITS, bitcast=True))


@triton.jit
def reduce(x_ptr, out_ptr, N: tl.constexpr, IN: tl.constexpr, OUT: tl.constexpr, OUT_BITS: tl.constexpr,
           OP: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N)).to(IN, bitcast=True)
    if OP == "sum":
        r = tl.sum(x, axis=0)
    elif OP == "max":
        r = tl.max(x, axis=0)
    elif OP == "min":
        r = tl.min(x, axis=0)
    elif OP == "argmax":
        r = tl.argmax(x, axis=0)
    else:
        r = tl.argmin(x, axis=0)
    tl.store(out_ptr, r.to(OUT).to(OUT_BITS, bitcast=True))


@triton.jit
def scan(x_ptr, out_ptr, N: tl.constexpr, IN: tl.constexpr, OUT: tl.constexpr, OUT_BITS: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i).to(IN, bitcast=True)
    tl.store(out_ptr + i, tl.cumsum(x, axis=0).to(OUT).to(OUT_BITS, bitcast=True))


@triton.jit
def dot(a_ptr, b_ptr, out_ptr, IN: tl.constexpr, PRECISION: tl.constexpr, OUT: tl.constexpr):
    rows = tl.arange(0, 32)[:, None]
    cols = tl.arange(0, 32)[None, :]
    a = tl.load(a_ptr + rows * 32 + cols).to(IN, bitcast=True)
    b = tl.load(b_ptr + rows * 32 + cols).to(IN, bitcast=True)
    if PRECISION == "default":
        r = tl.dot(a, b, out_dtype=OUT)
    else:
        r = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT)
    tl.store(out_ptr + rows * 32 + cols, r.to(tl.float32).to(tl.int32, bitcast=True))


@triton.jit
def atomic(x_ptr, y_ptr, N: tl.constexpr, IN: tl.constexpr):
    i = tl.arange(0, N)
    y = tl.load(y_ptr + i).to(IN, bitcast=True)
    tl.atomic_add(x_ptr + i, y)  # x_ptr points at IN itself


KERNELS = {"unary": unary, "binary": binary, "reduce": reduce, "scan": scan, "dot": dot, "atomic": atomic}


def _tensor(bits, type_name, device):
    import torch

    width = WIDTH[type_name]
    signed = [b - (1 << width) if b >= 1 << (width - 1) else b for b in bits]
    torch_type = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[width]
    return torch.tensor(signed, dtype=torch_type, device=device)


def _unsigned(tensor, width):
    return [int(v) & ((1 << width) - 1) for v in tensor.cpu().tolist()]


def run_case(case, bits, device, kernels):
    """What the case's kernel stores, as unsigned bits of the result type."""
    import torch

    name, kind, params, types, result = case
    ty = {n: getattr(tl, t) for n, t in (("fp8e4nv", "float8e4nv"), ("fp8e5", "float8e5"), ("bf16", "bfloat16"),
                                         ("fp16", "float16"), ("fp32", "float32"), ("fp64", "float64"),
                                         ("int1", "int1"))}
    ty.update({n: getattr(tl, n) for n in INTS})
    out_type = result_type(case)
    out_bits = ty[storage(out_type)] if out_type != "int1" else tl.uint8
    ins = [_tensor(b, t, device) for b, t in zip(bits, types)]
    grid = (1,)
    if kind in ("unary", "binary"):
        out = torch.zeros(len(bits[0]), dtype=ins[0].dtype if out_type == types[0] else
                          _tensor([0], storage(out_type) if out_type != "int1" else "int8", device).dtype,
                          device=device)
        extra = {"OUT": ty[out_type]}
        if "FUSION" in params:  # the launch option, as a user passes it
            extra["enable_fp_fusion"] = params["FUSION"]
        kernels[kind][grid](*ins, out, N=len(bits[0]), IN=ty[types[0]], OUT_BITS=out_bits, BOOL=out_type == "int1",
                            OP=params["OP"], **extra)
    elif kind == "reduce":
        out = _tensor([0], storage(out_type), device)
        kernels["reduce"][grid](ins[0], out, N=len(bits[0]), IN=ty[types[0]], OUT=ty[out_type], OUT_BITS=out_bits,
                                OP=params["OP"])
    elif kind == "scan":
        out = torch.zeros_like(ins[0])
        kernels["scan"][grid](ins[0], out, N=len(bits[0]), IN=ty[types[0]], OUT=ty[out_type], OUT_BITS=out_bits)
    elif kind == "dot":
        out = torch.zeros(1024, dtype=torch.int32, device=device)
        kernels["dot"][grid](*ins, out, IN=ty[types[0]], PRECISION=params.get("PRECISION", "default"),
                             OUT=ty[params.get("OUT", "fp32")])
    else:  # atomic: x += y in place, each element its own address
        out = ins[0]
        float_view = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[types[0]]
        kernels["atomic"][grid](ins[0].view(float_view), ins[1], N=len(bits[0]), IN=ty[types[0]])
    return _unsigned(out, WIDTH[out_type])


def run_all(device, table, inputs_of=None):
    kernels = KERNELS
    results = {}
    for case in cases():
        name = case[0]
        bits = inputs_of(name) if inputs_of else case_inputs(*case[:4])
        if bits is None:
            continue
        try:
            results[name] = {"in": bits, "out": run_case(case, bits, device, kernels)}
        except Exception as exc:  # a case the compiler or the interpreter refuses: its error's name
            results[name] = {"in": bits, "error": type(exc).__name__, "message": str(exc)[-300:]}
    return results


def differences(recorded, measured):
    """{case: first differing index, recorded hex, measured hex} for every case that differs (NaN
    payloads aside: two NaN patterns of the result type are the same)."""
    types = {case[0]: result_type(case) for case in cases()}
    found = {}
    for name, want in recorded.items():
        got = measured.get(name)
        if got is None:
            continue
        if "error" in want or "error" in got:
            if want.get("error") != got.get("error") and ("error" not in want or "error" not in got):
                found[name] = (None, want.get("error", "values"), got.get("error", "values"))
            continue
        undefined = _undefined(name, want["in"])
        close = _within(TOLERANCES.get(name), want["out"], types[name])
        for index, (a, b) in enumerate(zip(want["out"], got["out"])):
            if a != b and not (is_nan(a, types[name]) and is_nan(b, types[name])) and index not in undefined \
                    and not close(a, b):
                found[name] = (index, hex(a), hex(b))
                break
    return found


def _within(tolerance, gpu_bits, type_name):
    """``close(a, b)``: whether two differing bit patterns are within ``tolerance`` (``TOLERANCES``)."""
    if tolerance is None or type_name not in LAYOUT:
        return lambda a, b: False
    kind, bound = tolerance[0], tolerance[1]
    width = WIDTH[storage(type_name)]
    sign = 1 << (width - 1)

    def finite_nonzero(bits):
        return _is_finite(bits, type_name) and bits & (sign - 1) != 0

    if kind == "ulps":
        def ordinal(bits):
            return -(bits & (sign - 1)) if bits & sign else bits

        return lambda a, b: finite_nonzero(a) and finite_nonzero(b) and abs(ordinal(a) - ordinal(b)) <= bound
    largest = max((abs(v) for v in decoded(gpu_bits, type_name) if math.isfinite(v)), default=0.0)
    return lambda a, b: (finite_nonzero(a) and finite_nonzero(b)
                         and abs(decoded([a], type_name)[0] - decoded([b], type_name)[0]) <= bound * largest)


def main(argv):
    command, path = argv[0], argv[1]
    if command == "record":  # twice: a case whose two compiled runs differ is not deterministic there
        import torch

        results = run_all("cuda", cases())
        again = run_all("cuda", cases())
        for name, result in results.items():
            if result.get("out") != again[name].get("out"):
                result["nondeterministic"] = True
        with open(path, "w") as handle:
            json.dump({"device": torch.cuda.get_device_name(), "triton": triton.__version__, "results": results},
                      handle)
        print(f"{len(results)} cases, {sum('error' in r for r in results.values())} refused")
        return 0
    import kwshim

    with open(path) as handle:
        recorded = json.load(handle)["results"]
    with kwshim.activate():
        measured = run_all("cpu", cases(), lambda name: recorded[name]["in"] if name in recorded else None)
    found = differences(recorded, measured)
    for name, (index, want, got) in found.items():
        print(f"DIFFERENT {name}: [{index}] gpu {want} cpu {got}")
    bounded = sum(1 for name in TOLERANCES if name in recorded and name not in found)
    print(f"{len(recorded) - len(found)} of {len(recorded)} cases the same ({bounded} of them within "
          f"parity.numerics.TOLERANCES)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
