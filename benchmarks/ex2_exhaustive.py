"""Every fp32 input through the compiled ``ex2.approx`` models (``compiled_loops.ex2_of_exp`` for
``tl.exp``, ``ex2_flushed`` for ``tl.exp2``) against NumPy's code (``gpu_arithmetic``): all 2 ** 32
bit patterns, in chunks. Prints, for each, how many inputs it calls unsure (NaN: the expression is
then computed in NumPy) and how many sure values differ from NumPy's bits; then the same for ``ex2``
against the C library's scalar ``exp2`` (``math.exp2``), rounded to fp32: a second implementation
inside the margin. Exits non-zero if any sure value differs. About 4 minutes on one core here.

    .venv/bin/python benchmarks/ex2_exhaustive.py [--chunk-bits 24]
"""

import argparse
import sys
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk-bits", type=int, default=24, help="log2 of the inputs per chunk")
    arguments = parser.parse_args()
    from kwshim.arithmetic import compiled

    if compiled.engine() != "numba":
        sys.exit("kwshim: numba is not installed (pip install 'kwshim[fast]'): nothing compiled to check")
    from kwshim.arithmetic import compiled_loops
    from kwshim.arithmetic.gpu_arithmetic import exp2_approximation, exp_approximation

    chunk = 2 ** arguments.chunk_bits
    failed = False
    for name, numpy_model in (("ex2_of_exp", exp_approximation), ("ex2_flushed", exp2_approximation)):
        kernel = compiled_loops.element_wise(f"{name}(@0@)", ("full",))
        unsure, sure_differ, examples = 0, 0, []
        start_time = time.perf_counter()
        out = np.empty((1, chunk), np.float32)
        for start in range(0, 2 ** 32, chunk):
            x = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
            with np.errstate(all="ignore"):
                kernel(out, x.reshape(1, -1))
                expected = numpy_model(x)
            nan_out, nan_expected = np.isnan(out[0]), np.isnan(expected)
            unsure += int(np.count_nonzero(nan_out & ~nan_expected))
            differ = ~nan_out & (out[0].view(np.uint32) != expected.view(np.uint32))
            sure_differ += int(np.count_nonzero(differ))
            examples.extend(x[differ][:3].tolist())
        seconds = time.perf_counter() - start_time
        print(f"{name:12} 2**32 inputs in {seconds:5.1f} s: unsure {unsure}, sure and differing {sure_differ}"
              + (f" (first: {examples[:6]})" if examples else ""))
        failed |= sure_differ > 0
    start_time = time.perf_counter()
    unsure, sure_differ = 0, 0
    against_c = _against_c_library(compiled_loops.ex2)
    for start in range(0, 2 ** 32, chunk):
        x = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
        counts = against_c(x)
        unsure, sure_differ = unsure + counts[0], sure_differ + counts[1]
    seconds = time.perf_counter() - start_time
    print(f"{'ex2 | C exp2':12} 2**32 inputs in {seconds:5.1f} s: unsure {unsure}, sure and differing {sure_differ}")
    failed |= sure_differ > 0
    sys.exit(1 if failed else 0)


def _against_c_library(ex2):
    """A loop counting, over fp32 ``x``, ``(unsure, sure and differing)``: ``ex2`` against the C
    library's ``exp2`` in fp64 rounded to fp32 (NaN inputs left out)."""
    import math

    from numba import njit

    @njit
    def counts(x):
        unsure, differ = 0, 0
        for i in range(x.size):
            if x[i] != x[i]:
                continue
            value = ex2(x[i])
            if value != value:
                unsure += 1
            elif value != np.float32(math.exp2(np.float64(x[i]))):
                differ += 1
        return unsure, differ

    return counts


if __name__ == "__main__":
    main()
