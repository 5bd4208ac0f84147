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

Without numba, the NumPy code is what runs, and it gives the same bits: ``tests/test_compiled.py``
compares the two on millions of random and tie-heavy operands.
"""

import functools

import numpy as np

__all__ = ["COMPILED_FROM", "LOG2_E", "SMALLEST_NORMAL", "engine", "ufunc_for", "fma_ufunc"]

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
