"""Programs that read back their own writes (``interpreter/own_writes``), batched writing through,
against Triton's loop, side by side in one process: flash-linear-attention's recurrent backward form
(each program stores a row per step into its own rows, last first, then loads them back in order),
the loop's bits in each. Medians of 3.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 .venv/bin/python benchmarks/own_writes.py [--programs 32]
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
from kwshim.batching import programs as grid_module  # noqa: E402


@triton.jit
def reread_rows(x_ptr, scratch_ptr, out_ptr, steps, N: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, N)
    for t in range(steps):
        row = pid * steps + steps - 1 - t
        tl.store(scratch_ptr + row * N + cols, tl.load(x_ptr + row * N + cols) * 2 + t)
    tl.debug_barrier()
    total = tl.zeros([N], dtype=tl.float32)
    for t in range(steps):
        total = total * 0.5 + tl.load(scratch_ptr + (pid * steps + t) * N + cols)
    tl.store(out_ptr + pid * N + cols, total)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=32)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--cols", type=int, default=64)
    arguments = parser.parse_args()
    programs, steps, cols = arguments.programs, arguments.steps, arguments.cols
    torch.manual_seed(0)
    x = torch.randn(programs * steps * cols)
    times, outs = {"sequential": [], "batched": []}, {}
    for _ in range(3):
        for mode in times:
            scratch, out = torch.zeros_like(x), torch.zeros(programs * cols)
            with kwshim.activate(grid=mode):
                start = time.perf_counter()
                reread_rows[(programs,)](x, scratch, out, steps, N=cols)
                times[mode].append(time.perf_counter() - start)
            outs[mode] = (scratch, out)
    same = all(torch.equal(a, b) for a, b in zip(outs["sequential"], outs["batched"]))
    loop, batched = (statistics.median(times[mode]) for mode in ("sequential", "batched"))
    reason = grid_module.fallback_reasons().get(reread_rows.fn.__qualname__)
    print(f"{programs} programs x {steps} steps x {cols} fp32 columns: the loop {loop * 1e3:.0f} ms, batched "
          f"{batched * 1e3:.0f} ms ({loop / batched:.1f}x); the loop's bits: {'yes' if same else 'NO'}; "
          f"fell back: {reason or 'no'}")


if __name__ == "__main__":
    main()
