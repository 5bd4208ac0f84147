"""Affine rows (``interpreter/rows``) on and off, side by side in one process: row kernels written as
Liger-Kernel writes its forward kernels (rms_norm, swiglu, softmax, and the blocked rms_norm, 16 rows
a program), batched over 2048 rows of 1024 fp32 columns (1000 kept by the mask), and the NumPy floor (the kernel's arithmetic as whole-tensor
NumPy, one call per operation). Medians of ``--repeats`` launches, alternating; the outputs of rows
on and off are checked bit for bit first.

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
from kwshim.interpreter import rows  # noqa: E402


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
    kept = rows.row_starts

    def rows_off(*args):
        return None

    print(f"{'kernel, ' + str(options.rows) + ' rows x ' + str(options.cols):30} {'rows off ms':>12} "
          f"{'rows on ms':>11} {'ratio':>6} {'floor ms':>9} {'on / floor':>11}")
    with kwshim.activate(grid="batched"):
        for name, run, floor in cases(options.rows, options.cols):
            results, times = {}, {"off": [], "on": [], "floor": []}
            for _ in range(options.repeats + 1):  # the first of each: a warm-up, and the outputs compared
                for mode in ("off", "on"):
                    rows.row_starts = kept if mode == "on" else rows_off
                    try:
                        start = time.perf_counter()
                        results[mode] = run()
                        times[mode].append(time.perf_counter() - start)
                    finally:
                        rows.row_starts = kept
                start = time.perf_counter()
                floor()
                times["floor"].append(time.perf_counter() - start)
            for off, on in zip(results["off"], results["on"]):
                assert torch.equal(off.view(torch.int32), on.view(torch.int32)), name
            off, on, bare = (1e3 * statistics.median(times[mode][1:]) for mode in ("off", "on", "floor"))
            print(f"{name:30} {off:12.1f} {on:11.1f} {off / on:5.1f}x {bare:9.1f} {on / bare:10.1f}x")


if __name__ == "__main__":
    main()
