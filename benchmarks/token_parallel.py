"""A token-parallel kernel batched, against Triton's loop, side by side in one process:
flash-linear-attention's ``chunk_kda_fwd_kernel_intra_token_parallel`` in its form here (a program per
token, loading its q, k and gate rows, then looping over the tokens before it in its sub-chunk of 16,
a trip count that cycles through 1..16 along the grid, and storing one element of each of two
outputs per trip). Every store is a few elements, not rows, and the trip counts interleave: the
chunk runs as one batch per trip count (``interpreter/program_groups``), each group replaying its own
trace. Medians of ``--samples`` batched launches after the first (which records); the loop runs
once. Every output is checked bit for bit against the loop's.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 .venv/bin/python benchmarks/token_parallel.py [--tokens 1024]
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
from kwshim.batching import programs  # noqa: E402


@triton.jit(do_not_specialize=["T"])
def intra_token_parallel(q, k, g, Aqk, Akk, scale, T, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    i_t = tl.program_id(0)
    if i_t >= T:
        return
    i_ts = i_t // BT * BT + (i_t % BT) // BC * BC
    o_k = tl.arange(0, K)
    b_q = tl.load(q + i_t * K + o_k)
    b_k = tl.load(k + i_t * K + o_k)
    b_g = tl.load(g + i_t * K + o_k)
    for j in range(i_ts, min(i_t + 1, min(T, i_ts + BC))):
        b_kgj = tl.load(k + j * K + o_k) * tl.exp2(b_g - tl.load(g + j * K + o_k))
        tl.store(Aqk + i_t * BT + j % BT, tl.sum(b_q * b_kgj, axis=0) * scale)
        tl.store(Akk + i_t * BC + j - i_ts, tl.sum(b_k * b_kgj, axis=0) * tl.where(j < i_t, 1.0, 0.0))


def _launch(inputs, tokens):
    outputs = torch.zeros(tokens * 64), torch.zeros(tokens * 16)
    start = time.perf_counter()
    intra_token_parallel[(tokens,)](*inputs, *outputs, 0.125, tokens, K=32, BT=64, BC=16)
    return time.perf_counter() - start, outputs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--samples", type=int, default=3)
    options = parser.parse_args()
    torch.manual_seed(0)
    tokens = options.tokens
    inputs = [torch.randn(tokens * 32) for _ in range(2)] + [torch.randn(tokens * 32) * 0.1]
    with kwshim.activate(grid="sequential"):
        looped, reference = _launch(inputs, tokens)
    with kwshim.activate(grid="batched"):  # one switch: its traces are kept from launch to launch
        first, _ = _launch(inputs, tokens)
        runs = [_launch(inputs, tokens) for _ in range(options.samples)]
        reasons = programs.fallback_reasons()
    batched = statistics.median(seconds for seconds, _ in runs)
    same = all(torch.equal(a.view(torch.int32), b.view(torch.int32)) for a, b in zip(reference, runs[-1][1]))
    print(f"{tokens} tokens, Triton {triton.__version__}: the loop {looped:.2f} s; batched, first launch "
          f"{first:.2f} s, later {batched:.2f} s ({looped / batched:.0f}x the loop); same bits: {same}; "
          f"fell back: {reasons or 'none'}")


if __name__ == "__main__":
    main()
