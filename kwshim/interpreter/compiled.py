"""The GPU's fused multiply-add as a compiled loop, where numba is installed (``pip install 'kwshim[fast]'``).

NumPy has no fused multiply-add, so ``fma`` computes one rounding from fp64 with a check for the
midpoints where two roundings differ: 40-70 times a plain ``x * y + z``. The CPU has one: LLVM's
``llvm.fma`` is IEEE's fused multiply-add (the ``vfmadd`` instruction, or the C library's
``fma``/``fmaf`` where the CPU has none), the same function as the GPU's ``fma.rn``.

The ``ex2.approx`` models (``tl.exp``, ``tl.exp2``) had compiled loops here too; they called the C
library's scalar ``exp2`` per element, and NumPy's own SIMD ``exp2`` over cache-sized chunks
(``gpu_arithmetic._through_fp64``) is three times faster than that, so NumPy computes them always.

Why numba: it installs as a wheel on Linux, macOS and Windows for every CPython kwshim supports
(3.9 through 3.13), with no compiler on the user's machine; its ``vectorize`` makes NumPy ufuncs, so
broadcasting (the program axis) and strides stay NumPy's. numexpr installs as easily but has no
fused multiply-add and no control of rounding; a C extension would need a compiler. Each ufunc
compiles on first use (under a second) and is cached on disk (numba's ``cache=True``).

An fp32 ``tl.sum`` and ``tl.cumsum`` in the GPU's lane order (``lane_order``) are compiled loops
here too: NumPy adds a row's elements thread by thread in 8 to 16 strided passes, 7 times
``np.sum``'s time (a scan, 9 times ``np.cumsum``'s).

Without numba, the NumPy code is what runs, and it gives the same bits: ``tests/test_compiled.py``
compares the two on millions of random and tie-heavy operands.
"""

import functools

import numpy as np

__all__ = ["COMPILED_FROM", "LOG2_E", "SMALLEST_NORMAL", "engine", "ufunc_for", "fma_ufunc", "lane_sum_for",
           "lane_scan_for"]

#: The fewest elements worth a compiled loop: below, NumPy's code runs (the same bits), so that a
#: process of small launches never pays numba's start (about a second: its import, its compiler).
COMPILED_FROM = 2 ** 15

#: The ``ex2.approx`` model's constants (``gpu_arithmetic``): log2(e) as compiled Triton's
#: ``tl.exp`` multiplies by it, and fp32's smallest normal magnitude (below it, ``.ftz`` flushes).
LOG2_E = np.float32(1.4426950408889634)
SMALLEST_NORMAL = np.float32(2.0 ** -126)


@functools.lru_cache(maxsize=None)
def engine() -> str:
    """``"numba"`` where numba imports (the compiled loops run), else ``"numpy"``."""
    try:
        import numba  # noqa: F401
    except Exception:  # not installed, or broken against the installed NumPy: the NumPy code runs
        return "numpy"
    return "numba"


def ufunc_for(name, size):
    """The compiled ufunc ``name`` (``"fma"``) for a block of ``size`` elements,
    or None (below ``COMPILED_FROM``, or without numba): then the NumPy code runs."""
    return globals()[f"{name}_ufunc"]() if size >= COMPILED_FROM else None


@functools.lru_cache(maxsize=None)
def _fused():
    """numba's ``llvm.fma`` intrinsic: ``a * b + c`` rounded once, in the operands' type."""
    from numba.extending import intrinsic

    @intrinsic
    def fused(typingctx, a, b, c):
        def codegen(context, builder, signature, args):
            return builder.fma(*args)
        return a(a, b, c), codegen

    return fused


@functools.lru_cache(maxsize=None)
def fma_ufunc():
    """A ufunc computing ``a * b + c`` rounded once for fp32 and fp64 operands, or None without numba."""
    if engine() != "numba":
        return None
    from numba import vectorize

    fused = _fused()

    @vectorize(["float32(float32, float32, float32)", "float64(float64, float64, float64)"], cache=True)
    def fma(a, b, c):
        return fused(a, b, c)

    return fma


#: The lane-order loops this process has compiled or loaded: smaller blocks use them from then on.
_LOADED: dict = {}


def lane_sum_for(size):
    """The compiled fp32 lane-order sum (``lane_sum_kernel``) for a block of ``size`` elements, or
    None (``_loaded``): then ``lane_order``'s NumPy code runs. Once loaded, a 2-row sum costs 10 µs
    here, 60-110 in NumPy."""
    return _loaded("sum", size, lane_sum_kernel)


def _loaded(name, size, make):
    """``make()`` for a block of ``size`` elements: from ``COMPILED_FROM`` on, and for any size once
    a larger block has loaded it; None below, or without numba."""
    if size < COMPILED_FROM and not _LOADED.get(name):
        return None
    kernel = _LOADED[name] = make()
    return kernel


@functools.lru_cache(maxsize=None)
def lane_sum_kernel():
    """``lane_sum(x, y, repeats, warps, lanes, per_thread, contracted, out)``: each fp32 row of ``x``
    (rows, n) summed as ``lane_order.reduce_in_lanes`` sums it, into ``out``; where ``contracted``,
    the sum of the products ``x * y`` (each rounded to fp32 here, where an add needs it), the adds
    LLVM contracts being fmas. None without numba."""
    if engine() != "numba":
        return None
    from numba import njit

    fused = _fused()

    @njit(cache=True)
    def lane_sum(x, y, repeats, warps, lanes, per_thread, contracted, out):
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

    return lane_sum


def lane_scan_for(size):
    """The compiled fp32 lane-order cumsum (``lane_scan_kernel``) for a block of ``size`` elements,
    or None (``_loaded``): then ``lane_order``'s NumPy code runs."""
    return _loaded("scan", size, lane_scan_kernel)


@functools.lru_cache(maxsize=None)
def lane_scan_kernel():
    """``lane_scan(values, repeats, warps, lanes, per_thread, out)``: each fp32 row of ``values``
    (rows, n) scanned as ``lane_order.scan_in_lanes`` scans it, into ``out``. None without numba."""
    if engine() != "numba":
        return None
    from numba import njit

    @njit(cache=True)
    def lane_scan(values, repeats, warps, lanes, per_thread, out):
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

    return lane_scan
