"""Launches with Python's cyclic garbage collector paused (``interpreter.collector_paused``, kwshim's
default) against launches with it running, side by side in one process, over a heap the size of a
test suite's (flash-linear-attention's test process tracks about 1.1M objects once torch and fla are
imported). Each launch is a first launch of its specialization (the front end runs and is traced),
as the autotuner's Configs are. The same bits either way. Medians of 5.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 .venv/bin/python benchmarks/collector.py [--heap 1100000]
"""

import argparse
import contextlib
import gc
import os
import statistics
import time

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import kwshim  # noqa: E402
import kwshim.interpreter as interpreter_module  # noqa: E402
from kwshim.batching import replay  # noqa: E402


@triton.jit
def scaled_rows(x_ptr, out_ptr, steps, N: tl.constexpr, SCALE: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, N)
    total = tl.zeros([N], dtype=tl.float32)
    for t in range(steps):
        total = total * 0.5 + tl.load(x_ptr + (pid * steps + t) * N + cols) * SCALE
    tl.store(out_ptr + pid * N + cols, total)


def _launches(x, programs, steps, cols):
    """Four launches of four specializations; their outputs."""
    outs = []
    for scale in range(1, 5):
        out = torch.zeros(programs * cols)
        scaled_rows[(programs,)](x, out, steps, N=cols, SCALE=scale)
        outs.append(out)
    return outs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heap", type=int, default=1_100_000, help="long-lived objects the collector tracks")
    parser.add_argument("--programs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--cols", type=int, default=32)
    arguments = parser.parse_args()
    heap = [(i, [i]) for i in range(arguments.heap // 2)]  # two tracked objects each
    gc.collect()  # the heap is old, as a suite's imports are
    torch.manual_seed(0)
    x = torch.randn(arguments.programs * arguments.steps * arguments.cols)
    paused = interpreter_module.collector_paused
    times, outs = {"paused": [], "running": []}, {}
    with kwshim.activate():
        for _ in range(5):
            for mode in times:
                interpreter_module.collector_paused = paused if mode == "paused" else contextlib.nullcontext
                replay.clear()  # every launch traces
                full = gc.get_stats()[2]["collections"]
                start = time.perf_counter()
                outs[mode] = _launches(x, arguments.programs, arguments.steps, arguments.cols)
                times[mode].append((time.perf_counter() - start, gc.get_stats()[2]["collections"] - full))
    interpreter_module.collector_paused = paused
    same = all(torch.equal(a, b) for a, b in zip(outs["paused"], outs["running"]))
    running, paused_time = (statistics.median(t for t, _ in times[mode]) for mode in ("running", "paused"))
    print(f"{len(heap) * 2} tracked objects, 4 first launches of {arguments.programs} programs x "
          f"{arguments.steps} steps: collector running {running * 1e3:.0f} ms "
          f"({max(n for _, n in times['running'])} full passes at most), paused {paused_time * 1e3:.0f} ms "
          f"({running / paused_time:.2f}x); the same bits: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
