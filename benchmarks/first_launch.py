"""A kernel specialization's first launch: its body runs and is recorded (``interpreter/replay``),
against the later launches that replay the trace, side by side in one process, with the share of
the first launch that goes to turning the recording into a trace (``Trace.__init__``). The kernel
is a loop of 512 steps over a row per program, as flash-linear-attention's chunked kernels loop
over a sequence: each step is recorded. Medians of 7.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 .venv/bin/python benchmarks/first_launch.py [--steps 512]
"""

import argparse
import os
import statistics
import time

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import kwshim  # noqa: E402
from kwshim.interpreter import replay  # noqa: E402


@triton.jit
def scaled_rows(x_ptr, out_ptr, steps, N: tl.constexpr, SCALE: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, N)
    total = tl.zeros([N], dtype=tl.float32)
    for t in range(steps):
        total = total * 0.5 + tl.load(x_ptr + (pid * steps + t) * N + cols, mask=cols < N - t % 3) * SCALE
    tl.store(out_ptr + pid * N + cols, total)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=512)
    parser.add_argument("--cols", type=int, default=32)
    arguments = parser.parse_args()
    programs, steps, cols = arguments.programs, arguments.steps, arguments.cols
    x = torch.randn(programs * steps * cols)
    building = []
    original_init = replay.Trace.__init__

    def timed_init(self, *args):
        start = time.perf_counter()
        original_init(self, *args)
        building.append(time.perf_counter() - start)

    replay.Trace.__init__ = timed_init
    first, later = [], []
    try:
        with kwshim.activate():
            for _ in range(7):
                replay.clear()
                for times in (first, later):
                    out = torch.zeros(programs * cols)
                    start = time.perf_counter()
                    scaled_rows[(programs,)](x, out, steps, N=cols, SCALE=2.0)
                    times.append(time.perf_counter() - start)
    finally:
        replay.Trace.__init__ = original_init
    first_ms, later_ms, build_ms = (statistics.median(t) * 1e3 for t in (first, later, building))
    print(f"{programs} programs x {steps} steps: first launch {first_ms:.0f} ms, of which building the trace "
          f"{build_ms:.0f} ms ({build_ms / first_ms:.0%}); a replayed launch {later_ms:.0f} ms "
          f"({first_ms / later_ms:.1f}x less)")


if __name__ == "__main__":
    main()
