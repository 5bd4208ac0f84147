"""The numba code of a tensor-core ``tl.dot`` into an fp32 accumulator (``compiled.stepped_dot_for``),
imported only where numba is, at the first large dot. Its own module for the reason
``compiled_loops`` gives: every compiled function at module level, so that numba's disk cache finds
it in the next process.
"""

import numpy as np
from numba import njit

__all__ = ["stepped_dot"]


@njit(inline="always")
def _four_rows(a, p, row, start, stop, wide, s0, s1, s2, s3):
    """The exact (fp64) sums of rows ``row``..``row + 3`` of ``a[p]`` by ``wide`` over K in
    ``start:stop``, into ``s0``..``s3``: each element of ``wide`` read once for four rows."""
    for j in range(s0.size):
        s0[j] = 0.0
        s1[j] = 0.0
        s2[j] = 0.0
        s3[j] = 0.0
    for k in range(start, stop):
        x0, x1 = np.float64(a[p, row, k]), np.float64(a[p, row + 1, k])
        x2, x3 = np.float64(a[p, row + 2, k]), np.float64(a[p, row + 3, k])
        w = wide[k]
        for j in range(s0.size):
            s0[j] += x0 * w[j]
            s1[j] += x1 * w[j]
            s2[j] += x2 * w[j]
            s3[j] += x3 * w[j]


@njit(inline="always")
def _accumulated(out_row, sums):
    """The tensor cores' step: the fp32 accumulator plus the step's exact sum, rounded to fp32 (through
    fp64, as ``gpu_arithmetic._chunked_dot``'s NumPy code adds). Whether a NaN came out."""
    nan = False
    for j in range(out_row.size):
        value = np.float32(np.float64(out_row[j]) + sums[j])
        nan |= value != value
        out_row[j] = value
    return nan


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
def stepped_dot(a, b, d, step, out):
    """``gpu_arithmetic._chunked_dot`` for an fp32 accumulator, as one loop: ``a`` (P, M, K) and ``b``
    (P, K, N), fp32 holding the inputs' exact values (fp16, bf16, fp8, TF32), ``d`` and ``out``
    (P, M, N) fp32. Each step of ``step`` elements of K is summed in fp64 (exactly: every product of
    such inputs is exact in fp64, and ``contract`` only fuses those products into the adds), added
    to the accumulator and rounded to fp32; no (P, M, N) fp64 block per step, as NumPy makes.
    Returns whether a step gave a NaN (the caller computes that dot in NumPy, for its NaN's bits)."""
    programs, rows, depth = a.shape
    columns = b.shape[2]
    wide = np.empty((depth, columns), np.float64)
    s0, s1 = np.empty(columns, np.float64), np.empty(columns, np.float64)
    s2, s3 = np.empty(columns, np.float64), np.empty(columns, np.float64)
    nan = False
    for p in range(programs):
        for k in range(depth):
            for j in range(columns):
                wide[k, j] = b[p, k, j]
        out[p] = d[p]
        row = 0
        while row < rows:
            if row + 4 <= rows:
                for start in range(0, depth, step):
                    _four_rows(a, p, row, start, min(start + step, depth), wide, s0, s1, s2, s3)
                    nan |= _accumulated(out[p, row], s0)
                    nan |= _accumulated(out[p, row + 1], s1)
                    nan |= _accumulated(out[p, row + 2], s2)
                    nan |= _accumulated(out[p, row + 3], s3)
                row += 4
            else:
                for start in range(0, depth, step):
                    for j in range(columns):
                        s0[j] = 0.0
                    for k in range(start, min(start + step, depth)):
                        x = np.float64(a[p, row, k])
                        for j in range(columns):
                            s0[j] += x * wide[k, j]
                    nan |= _accumulated(out[p, row], s0)
                row += 1
    return nan
