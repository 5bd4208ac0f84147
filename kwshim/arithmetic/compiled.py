"""The GPU's fused multiply-add as a compiled loop, where numba is installed (``pip install 'kwshim[fast]'``).

NumPy has no fused multiply-add, so ``fma`` computes one rounding from fp64 with a check for the
midpoints where two roundings differ: 40-70 times a plain ``x * y + z``. The CPU has one: LLVM's
``llvm.fma`` is IEEE's fused multiply-add (the ``vfmadd`` instruction, or the C library's
``fma``/``fmaf`` where the CPU has none), the same function as the GPU's ``fma.rn``.

The ``ex2.approx`` models (``tl.exp``, ``tl.exp2``: ``exp2`` in fp64 rounded to fp32) are compiled
too, as operations of ``deferred_arithmetic``'s expressions (``compiled_loops.ex2``): a polynomial
in fp64, not the C library's scalar ``exp2`` (three times slower than NumPy's own SIMD ``exp2`` over
cache-sized chunks, ``approximations._through_fp64``), so that LLVM computes many elements at once.
It rounds as NumPy does, or says it is not sure (41 of the 2 ** 32 fp32 inputs), and NumPy's code
computes that expression.

Why numba: it installs as a wheel on Linux, macOS and Windows for every CPython kwshim supports
(3.9 through 3.13), with no compiler on the user's machine; its ``vectorize`` makes NumPy ufuncs, so
broadcasting (the program axis) and strides stay NumPy's. numexpr installs as easily but has no
fused multiply-add and no control of rounding; a C extension would need a compiler. The numba code
is ``compiled_loops``, imported at the first large block; each function compiles on first use (under
a second) and is cached on disk (numba's ``cache=True``), where the next process finds it.

An fp32 ``tl.sum`` and ``tl.cumsum`` in the GPU's lane order (``lane_order``) are compiled loops
here too: NumPy adds a row's elements thread by thread in 8 to 16 strided passes, 7 times
``np.sum``'s time (a scan, 9 times ``np.cumsum``'s).

Without numba, the NumPy code is what runs, and it gives the same bits: ``tests/test_compiled.py``
compares the two on millions of random and tie-heavy operands.
"""

import functools
import time

from .formats import LOG2_E, SMALLEST_NORMAL

__all__ = ["COMPILED_FROM", "LOG2_E", "SMALLEST_NORMAL", "engine", "ufunc_for", "fma_ufunc", "in_numpy",
           "spent_in_numpy", "load_for_small_blocks", "lane_sum_for", "lane_sum_kernel", "lane_sum_for_layout",
           "lane_scan_for", "lane_scan_kernel", "lane_scan_for_layout", "bf16_rounding_for",
           "fp16_rounding_for", "widening_for", "stepped_dot_for", "read_only"]

#: The fewest elements worth a compiled loop: below, NumPy's code runs (the same bits), so that a
#: process of a few small launches never pays numba's start (about a second: its import, its
#: compiler); small blocks take the loops once NumPy has cost about as much (``spent_in_numpy``).
COMPILED_FROM = 2 ** 15


def read_only(array):
    """``array`` as a read-only view (no copy): numba compiles a loop once per type of its arguments,
    and a read-only array is another type than a writable one. The interpreter's blocks come both ways
    (a tensor's memory, a view of a broadcast, a fresh result), and a loop compiled up to three times
    on a fresh machine (the lane sum, in four of Liger's test files: 26 compilations, 12-17 s; 22 and
    6 s since). Every input of a compiled loop goes through here."""
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


@functools.lru_cache(maxsize=None)
def engine() -> str:
    """``"numba"`` where numba imports (the compiled loops run), else ``"numpy"``."""
    try:
        import numba  # noqa: F401
    except Exception:  # not installed, or broken against the installed NumPy: the NumPy code runs
        return "numpy"
    return "numba"


def ufunc_for(name, size):
    """The compiled ufunc ``name`` (``"fma"``) for a block of ``size`` elements, or None (below
    ``COMPILED_FROM`` until small blocks take the loops, ``spent_in_numpy``; or without numba):
    then the NumPy code runs (a 2-row fma: 13 µs, against 3 compiled)."""
    return globals()[f"{name}_ufunc"]() if size >= COMPILED_FROM or _SMALL_BLOCKS else None


@functools.lru_cache(maxsize=None)
def _loops():
    """``compiled_loops``, the numba code (imported at the first large block: numba's start)."""
    _count_compiles()
    from . import compiled_loops

    return compiled_loops


#: numba's compilations of kwshim's loops in this process: [loops, seconds] (``compile_record``).
_COMPILES = [0, 0.0]


def compile_record():
    """(loops numba compiled in this process, the seconds it took): what a first run pays, and
    numba's disk cache saves every later run (the pytest door's summary says it)."""
    return _COMPILES[0], _COMPILES[1]


def _count_compiles():
    """Count numba's compilations of kwshim's own loops, through numba's event API
    (``numba:compile``; a load from its disk cache is no compilation)."""
    from numba.core import event

    class Counting(event.Listener):
        depth, started = 0, 0.0

        def on_start(self, ev):
            if _ours(ev):
                if not self.depth:
                    self.started = time.perf_counter()
                self.depth += 1

        def on_end(self, ev):
            if _ours(ev):
                self.depth -= 1
                _COMPILES[0] += 1
                if not self.depth:
                    _COMPILES[1] += time.perf_counter() - self.started

    event.register("numba:compile", Counting())


def _ours(ev) -> bool:
    function = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
    return getattr(function, "__module__", "").startswith(("kwshim", "kwshim_loop"))


@functools.lru_cache(maxsize=None)
def fma_ufunc():
    """A ufunc computing ``a * b + c`` rounded once for fp32 and fp64 operands, or None without numba."""
    return _loops().fma if engine() == "numba" else None


#: The lane-order loops this process has compiled or loaded: smaller blocks use them from then on.
_LOADED: dict = {}
#: Elements this process computed in NumPy in small blocks' fp32 lane-order sums and cumsums and fp32
#: and fp64 fmas, where numba is installed (``spent_in_numpy``); from ``_WORTH_LOADING`` on (about
#: what numba's start costs, its import and the loops from its disk cache: 4M elements of these
#: operations took about 0.5 s in NumPy), small blocks take the compiled loops. Elements, not
#: seconds: which engine computes a block never depends on how fast the machine ran.
_NUMPY_ELEMENTS = 0
_WORTH_LOADING = 2 ** 22
_SMALL_BLOCKS = False  #: whether small blocks take the compiled loops


def in_numpy(function, *args):
    """``function(*args)``: NumPy code that the compiled loops could run instead, its elements
    counted (``spent_in_numpy``)."""
    if _SMALL_BLOCKS or not _numba_installed():
        return function(*args)
    result = function(*args)
    spent_in_numpy(max((getattr(arg, "size", 1) for arg in args), default=1))
    return result


def spent_in_numpy(elements):
    """Count ``elements`` computed in NumPy that the compiled loops could have computed. A process
    that has computed about numba's start's worth of small blocks in NumPy (a small launch's sums and
    fmas, launch after launch) loads the compiled loops and uses them for small blocks from then on:
    it pays at most about twice what the better choice would have, and a process of a few small
    launches never pays numba's start. Both engines give the same bits (``tests/test_compiled.py``)."""
    global _NUMPY_ELEMENTS, _SMALL_BLOCKS
    _NUMPY_ELEMENTS += elements
    if _NUMPY_ELEMENTS >= _WORTH_LOADING:
        _SMALL_BLOCKS = True


def load_for_small_blocks():
    """Small blocks take the compiled loops from now on, where numba is installed (``spent_in_numpy``'s
    rule, decided at once): a benchmark of small launches measures what a process that has run them
    long enough runs."""
    global _SMALL_BLOCKS
    _SMALL_BLOCKS = _numba_installed()


@functools.lru_cache(maxsize=None)
def _numba_installed():
    """Whether numba is there to import, without importing it (``engine`` does: its start)."""
    import importlib.util

    return importlib.util.find_spec("numba") is not None


def lane_sum_for(size):
    """The compiled fp32 lane-order sum (``lane_sum_kernel``'s signature) for a block of ``size``
    elements, or None (``_loaded``): then ``lane_order``'s NumPy code runs. Once loaded, a 2-row sum
    costs 10 µs here, 60-110 in NumPy. From ``COMPILED_FROM`` elements on, the loop compiled for
    the block's layout runs (``lane_sum_for_layout``)."""
    kernel = _loaded("sum", size, lane_sum_kernel)
    return _sum_for_layout if kernel is not None and size >= COMPILED_FROM else kernel


def _loaded(name, size, make):
    """``make()`` for a block of ``size`` elements: from ``COMPILED_FROM`` on, and for any size once
    a larger block has loaded it or small blocks take the loops (``spent_in_numpy``); None below,
    or without numba."""
    if size < COMPILED_FROM and not _LOADED.get(name) and not _SMALL_BLOCKS:
        return None
    kernel = _LOADED[name] = make()
    return kernel


@functools.lru_cache(maxsize=None)
def lane_sum_kernel():
    """``lane_sum(x, y, repeats, warps, lanes, per_thread, contracted, out)``: each fp32 row of ``x``
    (rows, n) summed as ``lane_order.reduce_in_lanes`` sums it, into ``out``; where ``contracted``,
    the sum of the products ``x * y`` (rounded to fp32 in the loop, where an add needs one), the adds
    LLVM contracts being fmas. Compiled once for every layout; None without numba."""
    return _loops().lane_sum if engine() == "numba" else None


@functools.lru_cache(maxsize=64)
def lane_sum_for_layout(repeats, warps, lanes, per_thread):
    """``lane_sum(x, y, contracted, out)``: the same loop compiled for one layout, its counts
    constants, so that LLVM unrolls each thread's elements and adds many threads at once: 2.5-4
    times ``lane_sum_kernel`` (2048 rows of 1024 fp32: 0.4 ms, 0.6 ms for a sum of products, against
    1.5 ms). Compiled at the first block of the layout (half a second), then from numba's disk cache.
    The same Python, so the same bits."""
    return _loops().lane_sum_for_layout(repeats, warps, lanes, per_thread)


def _sum_for_layout(x, y, repeats, warps, lanes, per_thread, contracted, out):
    lane_sum_for_layout(repeats, warps, lanes, per_thread)(x, y, contracted, out)


def lane_scan_for(size):
    """The compiled fp32 lane-order cumsum (``lane_scan_kernel``'s signature) for a block of ``size``
    elements, or None (``_loaded``): then ``lane_order``'s NumPy code runs. From ``COMPILED_FROM``
    elements on, compiled for the block's layout (``lane_scan_for_layout``)."""
    kernel = _loaded("scan", size, lane_scan_kernel)
    return _scan_for_layout if kernel is not None and size >= COMPILED_FROM else kernel


@functools.lru_cache(maxsize=64)
def lane_scan_for_layout(repeats, warps, lanes, per_thread):
    """``lane_scan(values, out)``: the lane-order cumsum compiled for one layout, its counts
    constants: 2.7-3.4 times ``lane_scan_kernel`` (2048x1024 fp32: 2.2 ms, against 6.1 ms)."""
    return _loops().lane_scan_for_layout(repeats, warps, lanes, per_thread)


def _scan_for_layout(values, repeats, warps, lanes, per_thread, out):
    lane_scan_for_layout(repeats, warps, lanes, per_thread)(values, out)


@functools.lru_cache(maxsize=None)
def lane_scan_kernel():
    """``lane_scan(values, repeats, warps, lanes, per_thread, out)``: each fp32 row of ``values``
    (rows, n) scanned as ``lane_order.scan_in_lanes`` scans it, into ``out``. None without numba."""
    return _loops().lane_scan if engine() == "numba" else None


def bf16_rounding_for(size):
    """``bf16_bits(x, out) -> whether x holds a NaN`` (``compiled_loops.bf16_bits``): fp32 rounded
    to bf16 bits for a block of ``size`` elements, or None (below ``COMPILED_FROM``, or without
    numba): then ml_dtypes' ``astype`` runs. 16M elements: 9 ms, against 38 ms and a NaN check."""
    return _large_block_loop("bf16_bits", size)


def fp16_rounding_for(size):
    """``fp16_bits(x, out) -> whether x holds a NaN`` (``compiled_loops.fp16_bits``): fp32 rounded
    to fp16 bits for a block of ``size`` elements, or None (below ``COMPILED_FROM``, or without
    numba): then NumPy's ``astype`` runs. 4M elements: 4.0 ms, against 10.3 ms and a NaN check."""
    return _large_block_loop("fp16_bits", size)


def widening_for(size):
    """``widened_bits(x, out, half)`` (``compiled_loops.widened_bits``): bf16 or fp16 widened to fp32
    for a block of ``size`` elements, NaNs as NumPy's path through fp64 leaves them, or None (below
    ``COMPILED_FROM``, or without numba): then ``astype`` and a NaN check run. 4M elements: 1.1 ms
    (bf16) and 2.5 ms (fp16), against 2.6 ms and 10 ms."""
    return _large_block_loop("widened_bits", size)


def stepped_dot_for(size):
    """``stepped_dot(a, b, d, step, out)`` (``compiled_dots.stepped_dot``): a tensor-core dot into an
    fp32 accumulator, for ``size`` products (P * M * N * K), or None (below ``COMPILED_FROM``, or without
    numba): then ``gpu_arithmetic._chunked_dot``'s NumPy code runs. 256 programs' 128x128x32 fp16 dot:
    15 ms, against 40 ms."""
    return _dots().stepped_dot if size >= COMPILED_FROM and engine() == "numba" else None


@functools.lru_cache(maxsize=None)
def _dots():
    """``compiled_dots``, the numba code of the dots (imported at the first large dot, after
    ``_loops``, which counts numba's compilations)."""
    _loops()
    from . import compiled_dots

    return compiled_dots


def _large_block_loop(name, size):
    """``compiled_loops``' function ``name`` for a block of ``size`` elements: from ``COMPILED_FROM``
    on, where numba is; else None."""
    return _loop_named(name) if size >= COMPILED_FROM else None


@functools.lru_cache(maxsize=None)
def _loop_named(name):
    return getattr(_loops(), name) if engine() == "numba" else None
