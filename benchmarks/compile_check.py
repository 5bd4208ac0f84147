"""What ``compile="check"`` costs: the first launch of a specialization (compiled for the H200 with an
empty Triton cache, then again in a new process with Triton's disk cache filled), and every later
launch (the specialization looked up), against the same launch with the check off.

Each first launch runs in a fresh process (a process compiles a specialization once); the later
launches alternate check/off in one process, and the ratio is the median over rounds.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.6.0 .venv/bin/python benchmarks/compile_check.py
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FIRST_LAUNCH = """
import os, sys, time
sys.path.insert(0, {root!r})
import torch, triton, triton.language as tl
import kwshim
from parity.compile_refusals import dot_loop, FITS

def launch():
    bm, bn, bk = FITS["BM"], FITS["BN"], FITS["BK"]
    dot_loop[(1,)](torch.randn(bm, 4 * bk).half(), torch.randn(4 * bk, bn).half(), torch.empty(bm, bn), 4 * bk,
                   BM=bm, BN=bn, BK=bk, num_stages=FITS["num_stages"], num_warps=FITS["num_warps"])

with kwshim.activate(compile="off"):
    launch()  # the interpreter's own first launch (AST rewrite, trace) is not what is measured
    with kwshim.activate(compile={compile!r}):
        start = time.perf_counter()
        launch()
        print(time.perf_counter() - start)
"""


def first_launch(compile, cache):
    """Seconds of a process's second launch of ``dot_loop`` (its first under ``compile``, the setting;
    ``cache``: Triton's cache folder)."""
    env = dict(os.environ, TRITON_CACHE_DIR=cache, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, "-c", FIRST_LAUNCH.format(root=ROOT, compile=compile)],
                          capture_output=True, text=True, env=env, check=True)
    return float(done.stdout.split()[-1])


def later_launches(rounds, launches):
    import torch
    import triton
    import triton.language as tl

    import kwshim

    @triton.jit
    def scaled(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)

    x, y = torch.randn(4096), torch.empty(4096)

    def timed(setting):
        with kwshim.activate(compile=setting):
            scaled[(4,)](x, y, 4096, BLOCK=1024)  # compiled (check), rewritten and traced (both)
            start = time.perf_counter()
            for _ in range(launches):
                scaled[(4,)](x, y, 4096, BLOCK=1024)
            return (time.perf_counter() - start) / launches

    ratios, off_times, check_times = [], [], []
    for _ in range(rounds):
        off, check = timed("off"), timed("check")
        ratios.append(check / off)
        off_times.append(off)
        check_times.append(check)
    return statistics.median(off_times), statistics.median(check_times), statistics.median(ratios)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--launches", type=int, default=200)
    options = parser.parse_args()
    import triton

    print(f"Triton {triton.__version__}; medians")
    with tempfile.TemporaryDirectory() as cache:
        off = statistics.median(first_launch("off", cache) for _ in range(3))
        cold = first_launch("check", cache)  # the first fills the cache
        warm = statistics.median(first_launch("check", cache) for _ in range(3))
    print(f"a new specialization's launch (dot loop 64x64x32): off {1e3 * off:.1f} ms, check with an empty Triton "
          f"cache {1e3 * cold:.0f} ms, check with Triton's disk cache {1e3 * warm:.1f} ms")
    off, check, ratio = later_launches(options.rounds, options.launches)
    print(f"a later launch of a specialization (4 programs of 1024): off {1e3 * off:.3f} ms, "
          f"check {1e3 * check:.3f} ms, "
          f"check/off {ratio:.2f}x")


if __name__ == "__main__":
    main()
