"""A kernel specialization's first launch: its body runs and is recorded (``interpreter/replay``),
with the body running every iteration of its loop and with iterations 3.. made from iteration 2's
steps (``interpreter/loop_replay``), against a later launch that replays the trace, side by side in
one process, and what turning a recording into a trace costs (``Trace.__init__``). The kernel is a
loop of 512 steps over a row per program, as flash-linear-attention's recurrent kernels loop over a
sequence. Medians of 7.

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
from kwshim.batching import loop_replay, replay  # noqa: E402


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
    original_init, least_trips = replay.Trace.__init__, loop_replay.MIN_TRIPS

    def timed_init(self, *args):
        start = time.perf_counter()
        original_init(self, *args)
        building.append(time.perf_counter() - start)

    replay.Trace.__init__ = timed_init
    times: dict = {"body": [], "loop_replay": [], "replayed": []}
    outs = {}
    try:
        with kwshim.activate():
            for _ in range(7):
                for kind in times:
                    if kind != "replayed":
                        replay.clear()
                    loop_replay.MIN_TRIPS = 2 ** 62 if kind == "body" else least_trips
                    out = torch.zeros(programs * cols)
                    start = time.perf_counter()
                    scaled_rows[(programs,)](x, out, steps, N=cols, SCALE=2.0)
                    times[kind].append(time.perf_counter() - start)
                    outs[kind] = out
    finally:
        replay.Trace.__init__, loop_replay.MIN_TRIPS = original_init, least_trips
    body, looped, replayed = (statistics.median(times[kind]) * 1e3 for kind in times)
    same = all(torch.equal(outs["body"], outs[kind]) for kind in outs)
    print(f"{programs} programs x {steps} steps: first launch {body:.0f} ms running the body each iteration, "
          f"{looped:.0f} ms with iterations 3.. made from iteration 2's steps ({body / looped:.2f}x); building a "
          f"trace {statistics.median(building) * 1e3:.0f} ms; a replayed launch {replayed:.0f} ms; the same bits: "
          f"{'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
