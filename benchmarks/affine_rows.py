"""Affine rows (``interpreter/rows``) on and off, side by side in one process: row kernels written as
Liger-Kernel writes its forward kernels (rms_norm, swiglu, softmax, and the blocked rms_norm, 16 rows
a program), batched over 2048 rows of 1024 fp32 columns (1000 kept by the mask), and the NumPy floor
(the kernel's arithmetic as whole-tensor NumPy, one call per operation). "counted": rows on, each
mask read by the earlier rule (each row's kept elements counted, ``np.count_nonzero``) in place of
``rows._prefix_lengths``. Medians of ``--repeats`` launches, alternating (each way first as often),
each way with its own traces (``replay``: a trace kept by one way would be replayed by the next);
the outputs of each are checked bit for bit first.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 .venv/bin/python benchmarks/affine_rows.py
"""

import argparse
import os
import statistics
import time

os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import kwshim  # noqa: E402
from kwshim.batching import replay, rows  # noqa: E402


@triton.jit
def rms_norm(y_ptr, x_ptr, w_ptr, rstd_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    y_ptr += row * stride
    x_ptr += row * stride
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + cols, mask=mask, other=0)
    w = tl.load(w_ptr + cols, mask=mask, other=0)
    rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + cols, x * rstd * w, mask=mask)


@triton.jit
def swiglu(a_ptr, b_ptr, c_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    a_ptr += row * stride
    b_ptr += row * stride
    c_ptr += row * stride
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(a_ptr + cols, mask=mask, other=0)
    b = tl.load(b_ptr + cols, mask=mask, other=0)
    tl.store(c_ptr + cols, a * tl.sigmoid(a) * b, mask=mask)


@triton.jit
def softmax(y_ptr, x_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def block_rms_norm(y_ptr, x_ptr, w_ptr, rstd_ptr, stride, n_rows, n_cols, eps, BLOCK_ROW: tl.constexpr,
                   BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_ROW + tl.arange(0, BLOCK_ROW)
    cols = tl.arange(0, BLOCK)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0)
    rstd = 1 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    tl.store(rstd_ptr + rows, rstd, mask=rows < n_rows)
    tl.store(y_ptr + rows[:, None] * stride + cols[None, :], x * rstd[:, None] * w[None, :], mask=mask)


def cases(rows_count, cols):
    torch.manual_seed(0)
    x, w, a, b = torch.randn(rows_count, cols), torch.randn(cols), torch.randn(rows_count, cols), \
        torch.randn(rows_count, cols)
    block = triton.next_power_of_2(cols)

    def run_rms():
        y, rstd = torch.empty_like(x), torch.empty(rows_count)
        rms_norm[(rows_count,)](y, x, w, rstd, cols, cols, 1e-6, BLOCK=block)
        return y, rstd

    def run_swiglu():
        c = torch.empty_like(a)
        swiglu[(rows_count,)](a, b, c, cols, cols, BLOCK=block)
        return (c,)

    def run_softmax():
        y = torch.empty_like(x)
        softmax[(rows_count,)](y, x, cols, cols, BLOCK=block)
        return (y,)

    def run_block_rms():
        y, rstd = torch.empty_like(x), torch.empty(rows_count)
        block_rms_norm[(triton.cdiv(rows_count, 16),)](y, x, w, rstd, cols, rows_count, cols, 1e-6, BLOCK_ROW=16,
                                                       BLOCK=block)
        return y, rstd

    xn, wn, an, bn = x.numpy(), w.numpy(), a.numpy(), b.numpy()

    def floor_rms():
        rstd = np.float32(1) / np.sqrt((xn * xn).sum(axis=1) / np.float32(cols) + np.float32(1e-6))
        return xn * rstd[:, None] * wn

    def floor_swiglu():
        return an / (np.float32(1) + np.exp(-an)) * bn

    def floor_softmax():
        e = np.exp(xn - xn.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return [("rms_norm", run_rms, floor_rms), ("swiglu", run_swiglu, floor_swiglu),
            ("softmax", run_softmax, floor_softmax), ("rms_norm, 16 rows a program", run_block_rms, floor_rms)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--cols", type=int, default=1000)
    options = parser.parse_args()
    kept, prefix_lengths = rows.row_starts, rows._prefix_lengths

    def rows_off(*args, **keywords):
        return None

    def counted(kept):
        """The masks' earlier reading: each row's kept elements counted, then the prefixes checked."""
        counts = np.count_nonzero(kept, axis=-1)
        length = int(counts.max())
        return counts if (kept[..., :length].all(axis=-1) == (counts == length)).all() else None

    print(f"{'kernel, ' + str(options.rows) + ' rows x ' + str(options.cols):30} {'rows off ms':>12} "
          f"{'rows on ms':>11} {'ratio':>6} {'counted ms':>11} {'floor ms':>9} {'on / floor':>11}")
    traces = {mode: type(replay._TRACES)() for mode in ("off", "on", "counted")}  # each mode replays its own
    with kwshim.activate(grid="batched"):
        for name, run, floor in cases(options.rows, options.cols):
            results, times = {}, {"off": [], "on": [], "counted": [], "floor": []}
            for repeat in range(options.repeats + 1):  # the first of each: a warm-up, and the outputs compared
                for mode in ("on", "counted", "off") if repeat % 2 else ("counted", "on", "off"):  # each first as often
                    rows.row_starts = rows_off if mode == "off" else kept
                    rows._prefix_lengths = counted if mode == "counted" else prefix_lengths
                    kept_traces, replay._TRACES = replay._TRACES, traces[mode]
                    try:
                        start = time.perf_counter()
                        results[mode] = run()
                        times[mode].append(time.perf_counter() - start)
                    finally:
                        rows.row_starts, rows._prefix_lengths, replay._TRACES = kept, prefix_lengths, kept_traces
                start = time.perf_counter()
                floor()
                times["floor"].append(time.perf_counter() - start)
            for off, on, count in zip(results["off"], results["on"], results["counted"]):
                assert torch.equal(off.view(torch.int32), on.view(torch.int32)), name
                assert torch.equal(count.view(torch.int32), on.view(torch.int32)), name
            off, on, count, bare = (1e3 * statistics.median(times[mode][1:])
                                    for mode in ("off", "on", "counted", "floor"))
            print(f"{name:30} {off:12.1f} {on:11.1f} {off / on:5.1f}x {count:11.1f} {bare:9.1f} {on / bare:10.1f}x")


if __name__ == "__main__":
    main()
