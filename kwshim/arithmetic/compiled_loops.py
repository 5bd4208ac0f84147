"""The numba code of ``compiled``, imported only where numba is (``compiled.engine``), at the first
large block.

Every function numba compiles is at module level and reaches the others as globals, so that numba's
disk cache (``cache=True``) finds it again in the next process: numba keys a closure by the pickle of
what it closes over, and the pickle of an intrinsic or a dispatcher differs from process to process.
Defined inside factories, the fused multiply-add ufunc and the lane-order sum compiled again in every
process, a second or two, and added an entry to the cache each time (1,084 and 613 of them in one
checkout). The loops compiled for one layout (``lane_sum_for_layout``) close over its four counts
alone, which pickle the same everywhere (so do the scan's). The element-wise loops of
``deferred_arithmetic`` are made from source, one per expression form (``element_wise``), each
written to a module file of its own, which numba caches like any other.
"""

import functools
import hashlib
import importlib.util
import math
import os
import sys
import threading
import types as types_module

import numpy as np
from llvmlite import ir
from numba import njit, types, vectorize
from numba.extending import intrinsic

from .formats import LOG2_E, SMALLEST_NORMAL

__all__ = ["fused", "fma", "ex2", "ex2_of_exp", "ex2_flushed", "lane_sum", "lane_sum_for_layout", "lane_scan",
           "lane_scan_for_layout", "element_wise", "bf16_bits", "fp16_bits",
           "widened_bits"]


@intrinsic
def fused(typingctx, a, b, c):
    """numba's ``llvm.fma`` intrinsic: ``a * b + c`` rounded once, in the operands' type."""
    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return a(a, b, c), codegen


@intrinsic
def _power_of_two(typingctx, n):
    """``2.0 ** n`` in fp64 from its bits, for an int64 ``n`` among fp64's normal exponents: no call,
    so that LLVM computes many at once (``math.ldexp`` is the C library's, one at a time)."""
    def codegen(context, builder, signature, args):
        biased = builder.add(args[0], ir.Constant(ir.IntType(64), 1023))
        return builder.bitcast(builder.shl(biased, ir.Constant(ir.IntType(64), 52)), ir.DoubleType())
    return types.float64(types.int64), codegen


#: ``2 ** f`` for ``|f| <= 1/2``: Taylor's coefficients ``ln(2) ** k / k!`` to degree 13, whose
#: remainder is below ``2 ** -57`` of the result; the fmas of Horner's rule add about 2 ulps.
(_E0, _E1, _E2, _E3, _E4, _E5, _E6, _E7, _E8, _E9, _E10, _E11, _E12, _E13) = (
    math.log(2.0) ** k / math.factorial(k) for k in range(14))
#: The margin, relative, within which ``ex2`` calls its fp64 value too close to an fp32 rounding
#: boundary to round as NumPy's ``exp2`` would: 16-32 fp64 ulps, both errors (this one's, and the
#: C library's or SVML's within 4) inside it. Over all 2 ** 32 fp32 inputs, 41 fall within it.
_BELOW, _ABOVE = 1.0 - 2.0 ** -48, 1.0 + 2.0 ** -48
_UNSURE = np.float32(np.nan)


@njit(inline="always")
def ex2(x):
    """The ``ex2.approx`` model of an fp32 ``x`` (``gpu_arithmetic.exp2_approximation`` before any
    flush: ``exp2`` in fp64, rounded to fp32), or NaN where that rounding is not sure. ``2 ** x`` is
    ``2 ** n * 2 ** f`` for the nearest integer ``n`` (exact, from its bits) and ``f = x - n`` (exact),
    ``2 ** f`` a polynomial: all arithmetic, so LLVM computes many elements at once. The value rounds
    to fp32 as NumPy's own fp64 ``exp2`` does wherever rounding both ends of the margin around it
    (``_BELOW``, ``_ABOVE``) gives one answer: else NaN, which sends the expression to NumPy
    (``deferred_arithmetic``). Checked over every fp32 input (``benchmarks/ex2_exhaustive.py``)."""
    wide = np.float64(x)
    if wide > 200.0:  # 2 ** 200 is inf in fp32, 2 ** -200 zero; NaN compares false and stays
        wide = 200.0
    elif wide < -200.0:
        wide = -200.0
    whole = np.rint(wide) if wide == wide else 0.0
    f = wide - whole
    p = fused(f, _E13, _E12)
    p = fused(f, p, _E11)
    p = fused(f, p, _E10)
    p = fused(f, p, _E9)
    p = fused(f, p, _E8)
    p = fused(f, p, _E7)
    p = fused(f, p, _E6)
    p = fused(f, p, _E5)
    p = fused(f, p, _E4)
    p = fused(f, p, _E3)
    p = fused(f, p, _E2)
    p = fused(f, p, _E1)
    p = fused(f, p, _E0)
    value = p * _power_of_two(np.int64(whole))
    rounded = np.float32(value)
    return rounded if np.float32(value * _BELOW) == np.float32(value * _ABOVE) else _UNSURE


@njit(inline="always")
def ex2_of_exp(x):
    """``tl.exp``'s model: ``ex2`` of ``x * log2(e)``, the product rounded to fp32
    (``gpu_arithmetic.exp_approximation``)."""
    return ex2(x * LOG2_E)


@njit(inline="always")
def ex2_flushed(x):
    """``tl.exp2``'s model, ``ex2.approx.ftz``: ``ex2``, subnormal results zeros
    (``gpu_arithmetic.exp2_approximation``)."""
    value = ex2(x)
    return np.float32(0.0) if value < SMALLEST_NORMAL else value


@vectorize(["float32(float32, float32, float32)", "float64(float64, float64, float64)"], cache=True)
def fma(a, b, c):
    """``a * b + c`` rounded once, for fp32 and fp64 operands (a NumPy ufunc)."""
    return fused(a, b, c)


@njit(cache=True, nogil=True)
def bf16_bits(x, out):
    """The bf16 bits of each fp32 of ``x`` (1-D, C-contiguous) into ``out`` (uint16), rounded to
    nearest even on the bits (an overflow carries into inf, a subnormal rounds as any value):
    ml_dtypes' ``astype``, 4 times faster. Returns whether ``x`` holds a NaN, whose bits the caller
    takes from NumPy's path (``conversions.float_to_float``)."""
    bits = x.view(np.uint32)
    nan = False
    for i in range(bits.size):
        b = bits[i]
        nan |= (b & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
        out[i] = np.uint16((b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    return nan


@njit(cache=True, nogil=True)
def fp16_bits(x, out):
    """The fp16 bits of each fp32 of ``x`` (1-D, C-contiguous) into ``out`` (uint16), rounded to
    nearest even on the bits: 65520 and beyond to inf, below 2 ** -14 to fp16's subnormals (units of
    2 ** -24). NumPy's ``astype``, 2.6 times faster. Returns whether ``x`` holds a NaN, whose bits the
    caller takes from NumPy's path (``conversions.float_to_float``)."""
    bits = x.view(np.uint32)
    nan = False
    for i in range(bits.size):
        b = bits[i]
        sign = np.uint16((b >> np.uint32(16)) & np.uint32(0x8000))
        magnitude = b & np.uint32(0x7FFFFFFF)
        if magnitude >= np.uint32(0x477FF000):  # 65520 and beyond: inf (a NaN: NumPy's)
            nan |= magnitude > np.uint32(0x7F800000)
            out[i] = sign | np.uint16(0x7C00)
        elif magnitude >= np.uint32(0x38800000):  # a normal: rebiased (127 - 15), 13 bits rounded off
            rebiased = magnitude - np.uint32(0x38000000)
            even = (rebiased >> np.uint32(13)) & np.uint32(1)
            out[i] = sign | np.uint16((rebiased + np.uint32(0xFFF) + even) >> np.uint32(13))
        else:  # a subnormal, or zero: the significand shifted to units of 2 ** -24, rounded
            exponent = magnitude >> np.uint32(23)
            shift = np.uint32(126) - exponent
            if exponent == np.uint32(0) or shift > np.uint32(24):
                out[i] = sign
            else:
                significand = (magnitude & np.uint32(0x7FFFFF)) | np.uint32(0x800000)
                kept = significand >> shift
                rest = significand & ((np.uint32(1) << shift) - np.uint32(1))
                half = np.uint32(1) << (shift - np.uint32(1))
                if rest > half or (rest == half and (kept & np.uint32(1)) != np.uint32(0)):
                    kept += np.uint32(1)
                out[i] = sign | np.uint16(kept)
    return nan


@njit(cache=True, nogil=True)
def widened_bits(x, out, half):
    """Each bf16 (``half`` False) or fp16 (True) of ``x`` (its bits: 1-D uint16, C-contiguous) as
    fp32 into ``out`` (1-D fp32), with the bits NumPy's path through fp64 gives: exact, and a NaN's
    payload kept and made quiet (fp64 -> fp32 quiets it). ml_dtypes' and NumPy's ``astype`` and a
    NaN check, 2.4 and 4 times faster (``conversions.float_to_float``)."""
    bits = out.view(np.uint32)
    for i in range(x.size):
        h = np.uint32(x[i])
        if not half:
            b = h << np.uint32(16)
            bits[i] = b | np.uint32(0x400000) if (b & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000) else b
            continue
        sign = (h & np.uint32(0x8000)) << np.uint32(16)
        exponent = (h >> np.uint32(10)) & np.uint32(0x1F)
        mantissa = h & np.uint32(0x3FF)
        if exponent == np.uint32(0x1F):  # inf, or a NaN made quiet
            b = sign | np.uint32(0x7F800000) | (mantissa << np.uint32(13))
            bits[i] = b | np.uint32(0x400000) if mantissa != np.uint32(0) else b
        elif exponent == np.uint32(0):  # zero or subnormal: mantissa * 2 ** -24, exact in fp32
            value = np.float32(mantissa) * np.float32(5.960464477539063e-08)
            out[i] = -value if sign else value
        else:  # rebiased: 127 - 15
            bits[i] = sign | ((exponent + np.uint32(112)) << np.uint32(23)) | (mantissa << np.uint32(13))


@njit(inline="always")
def _lane_sum_rows(x, y, repeats, warps, lanes, per_thread, contracted, out):
    """Each fp32 row of ``x`` (rows, n) summed as ``lane_order.reduce_in_lanes`` sums it, into
    ``out``; where ``contracted``, the sum of the products ``x * y`` (each rounded to fp32 here,
    where an add needs it), the adds LLVM contracts being fmas."""
    tile = warps * lanes * per_thread
    count = repeats * per_thread  # each thread's elements
    partial = np.empty(warps * lanes, x.dtype)
    for row in range(x.shape[0]):
        threads = warps * lanes
        if contracted and count > 1:  # fma(x0, y0, x1 * y1), then fma(x, y, acc)
            second = 1 if per_thread > 1 else tile
            for thread in range(threads):
                i = thread * per_thread
                partial[thread] = fused(x[row, i], y[row, i], x[row, i + second] * y[row, i + second])
            for k in range(2, count):  # element k of every thread: independent chains side by side
                offset = (k // per_thread) * tile + k % per_thread
                for thread in range(threads):
                    i = offset + thread * per_thread
                    partial[thread] = fused(x[row, i], y[row, i], partial[thread])
        elif contracted:  # one element a thread: its product
            for thread in range(threads):
                partial[thread] = x[row, thread * per_thread] * y[row, thread * per_thread]
        else:
            for thread in range(threads):
                partial[thread] = x[row, thread * per_thread]
            for k in range(1, count):
                offset = (k // per_thread) * tile + k % per_thread
                for thread in range(threads):
                    partial[thread] = partial[thread] + x[row, offset + thread * per_thread]
        for warp in range(warps):  # the butterfly over the lanes, as lane 0 ends it
            start, width = warp * lanes, lanes
            first = contracted and count == 1
            while width > 1:
                half = width // 2
                for lane in range(half):
                    if first:  # one element a thread: its product contracts into the first step
                        i = (start + lane) * per_thread
                        partial[start + lane] = fused(x[row, i], y[row, i], partial[start + lane + half])
                    else:
                        partial[start + lane] = partial[start + lane] + partial[start + lane + half]
                first = False
                width = half
        width = warps
        while width > 1:  # then over the warps
            half = width // 2
            for warp in range(half):
                partial[warp * lanes] = partial[warp * lanes] + partial[(warp + half) * lanes]
            width = half
        out[row] = partial[0]


@njit(cache=True)
def lane_sum(x, y, repeats, warps, lanes, per_thread, contracted, out):
    """``_lane_sum_rows`` compiled once for every layout."""
    _lane_sum_rows(x, y, repeats, warps, lanes, per_thread, contracted, out)


def lane_sum_for_layout(repeats, warps, lanes, per_thread):
    """``lane_sum(x, y, contracted, out)``: ``_lane_sum_rows`` compiled for one layout, its counts
    constants (see ``compiled.lane_sum_for_layout``)."""

    @njit(cache=True)
    def lane_sum(x, y, contracted, out):
        _lane_sum_rows(x, y, repeats, warps, lanes, per_thread, contracted, out)

    return lane_sum


@njit(inline="always")
def _lane_scan_rows(values, repeats, warps, lanes, per_thread, out):
    """Each fp32 row of ``values`` (rows, n) scanned as ``lane_order.scan_in_lanes`` scans it, into
    ``out``."""
    threads = repeats * warps * lanes
    totals = np.empty(threads, values.dtype)  # each thread's total, then scanned over the lanes
    older = np.empty(lanes, values.dtype)
    before = np.empty(threads, values.dtype)  # what comes before each thread's elements
    lasts = np.empty(threads, values.dtype)
    prefix = np.empty(warps, values.dtype)
    for row in range(values.shape[0]):
        for thread in range(threads):  # the thread's own scan
            i = thread * per_thread
            out[row, i] = values[row, i]
            for e in range(1, per_thread):
                out[row, i + e] = out[row, i + e - 1] + values[row, i + e]
            totals[thread] = out[row, i + per_thread - 1]
        for chunk in range(repeats * warps):  # Hillis-Steele over each warp's lanes
            start = chunk * lanes
            step = 1
            while step < lanes:
                for lane in range(lanes):
                    older[lane] = totals[start + lane]
                for lane in range(step, lanes):
                    totals[start + lane] = older[lane - step] + older[lane]
                step *= 2
        if warps > 1:
            running = values[row, 0]
            started = False
            for r in range(repeats):
                for warp in range(warps):
                    prefix[warp] = running
                for warp in range(warps):
                    total = totals[(r * warps + warp) * lanes + lanes - 1]
                    running = running + total if started else total
                    started = True
                    for later in range(warp + 1, warps):
                        prefix[later] = running
                for warp in range(warps):
                    start = (r * warps + warp) * lanes
                    for lane in range(lanes):
                        if r == 0 and warp == 0:
                            lasts[start + lane] = totals[start + lane]
                        else:
                            lasts[start + lane] = prefix[warp] + totals[start + lane]
                    before[start] = totals[start] if r == 0 and warp == 0 else prefix[warp]
                    for lane in range(1, lanes):
                        before[start + lane] = lasts[start + lane - 1]
        else:
            carried = values[row, 0]
            for r in range(repeats):
                start = r * lanes
                for lane in range(lanes):
                    lasts[start + lane] = carried + totals[start + lane] if r else totals[start + lane]
                if lanes > 1:
                    before[start] = carried if r else lasts[start]
                    for lane in range(1, lanes):
                        before[start + lane] = lasts[start + lane - 1]
                else:
                    before[start] = lasts[start]
                carried = lasts[start + lanes - 1]
        for thread in range(threads):
            i = thread * per_thread
            if thread > 0:  # the very first thread adds nothing before it
                for e in range(per_thread - 1):
                    out[row, i + e] = before[thread] + out[row, i + e]
            out[row, i + per_thread - 1] = lasts[thread]


@njit(cache=True)
def lane_scan(values, repeats, warps, lanes, per_thread, out):
    """``_lane_scan_rows`` compiled once for every layout."""
    _lane_scan_rows(values, repeats, warps, lanes, per_thread, out)


def lane_scan_for_layout(repeats, warps, lanes, per_thread):
    """``lane_scan(values, out)``: ``_lane_scan_rows`` compiled for one layout, its counts constants."""

    @njit(cache=True)
    def lane_scan(values, out):
        _lane_scan_rows(values, repeats, warps, lanes, per_thread, out)

    return lane_scan


def element_wise(expression, kinds):
    """``kernel(out, a0, a1, ...)``: ``out`` (rows, n) filled with ``expression`` (whether a NaN was
    made, returned), Python source of ``+``, ``-``, ``*``, ``/``, ``fused``, ``ex2_of_exp``,
    ``ex2_flushed`` and ``zero`` on the operands ``a0``, ``a1``, ... each of
    its ``kinds``: ``"full"`` (rows, n), ``"rows"`` (one value a row), ``"columns"`` (one a column)
    or ``"scalar"``; arrays C-contiguous, so that LLVM adds a row's elements many at once. Each
    operation on fp32 values, rounded to fp32: numba keeps fp32 arithmetic in fp32 and contracts
    nothing without fast-math (``deferred_arithmetic``). NumPy's error model: a division by zero is
    IEEE's inf or NaN, with no branch (Python's, numba's default, raised ``ZeroDivisionError``, and
    its check kept LLVM from computing many elements at once: 16 ms for swiglu's ``b / (1 +
    exp(-a))`` over 2M elements, 2.1 ms without). Made from source and written to a module of
    its own (``_module_of``), so that numba's disk cache finds it again: 0.1-0.4 s once per form,
    then about 10 ms in each process."""
    reads = {"full": "a{}[i, j]", "rows": "a{}[i]", "columns": "a{}[j]", "scalar": "a{}"}
    for number, kind in enumerate(kinds):
        expression = expression.replace(f"@{number}@", reads[kind].format(number))
    operands = ", ".join(f"a{i}" for i in range(len(kinds)))
    source = (f"def kernel(out, {operands}):\n"
              f"    nan = False\n"
              f"    for i in range(out.shape[0]):\n"
              f"        for j in range(out.shape[1]):\n"
              f"            value = {expression}\n"
              f"            out[i, j] = value\n"
              f"            nan |= value != value\n"
              f"    return nan\n")
    return _module_of(source).kernel


#: What a generated loop's module starts with: what its expression calls.
_HEADER = (f"import numpy as np\nfrom numba import njit\n\n"
           f"from {__name__} import ex2_flushed, ex2_of_exp, fused\n\nzero = np.float32(0)\n\n\n")


def _module_of(source):
    """The module of the loop ``source`` defines, compiled by numba with NumPy's error model. Its
    file is in ``_loops_directory``, named by a hash of the source and of this module's and
    ``compiled``'s own (whose functions and constants numba compiles into it, and whose changes its
    cache would not see), so that numba's disk cache (``cache=True``) finds it in the next process;
    where no directory can be written, it is made in memory and compiled in each process."""
    text = _HEADER + '@njit(error_model="numpy", cache=True)\n' + source
    directory = _loops_directory()
    name = "kwshim_loop_" + hashlib.sha256((_sources_hash() + text).encode()).hexdigest()[:24]
    if directory is not None:
        path = os.path.join(directory, name + ".py")
        try:
            if not os.path.exists(path):  # written whole, then renamed: another process reads all or none
                partial = f"{path}.{os.getpid()}.{threading.get_ident()}.partial"
                with open(partial, "w") as file:
                    file.write(text)
                os.replace(partial, path)
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # numba's cache finds the compiled loop's globals by its module's name
            spec.loader.exec_module(module)
            return module
        except OSError:
            pass
    module = types_module.ModuleType(name)
    exec(text.replace(", cache=True", ""), module.__dict__)  # kwshim's own source, from an expression's form
    return module


@functools.lru_cache(maxsize=None)
def _loops_directory():
    """Where generated loops are written: ``kwshim_loops`` in numba's ``NUMBA_CACHE_DIR`` where set,
    else in this package's ``__pycache__`` (where numba caches this module's functions); None where
    neither can be written (a read-only install)."""
    import numba

    base = numba.config.CACHE_DIR or os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
    directory = os.path.join(base, "kwshim_loops")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError:
        return None
    return directory if os.access(directory, os.W_OK) else None


@functools.lru_cache(maxsize=None)
def _sources_hash():
    """A hash of this module's source and ``compiled``'s."""
    digest = hashlib.sha256()
    for module_file in (__file__, os.path.join(os.path.dirname(os.path.abspath(__file__)), "compiled.py")):
        with open(module_file, "rb") as file:
            digest.update(file.read())
    return digest.hexdigest()
