"""A varlen kernel batched with program groups (``interpreter/program_groups``) and prefixes of several
lengths (``rows.pieces``) on, and with each off, side by side in one process: flash-linear-attention's
``chunk_global_cumsum_vector_kernel`` (each program a block of columns of one head of one sequence,
looping over the sequence's chunks of rows; the sequence is the grid's second axis, so along
Triton's order the trip count changes every ``H`` programs), and the loop. Medians of ``--samples``
launches, alternating; every output is checked bit for bit against the loop's. ``--block-pointers``:
the same kernel through ``tl.make_block_ptr`` (Triton 3.0-3.7), which fell back to the loop before.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 .venv/bin/python benchmarks/program_groups.py
    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.6.0 .venv/bin/python benchmarks/program_groups.py --block-pointers
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
from kwshim.batching import program_groups, programs, rows  # noqa: E402
from kwshim.patching import Patch  # noqa: E402


@triton.jit
def varlen_cumsum(s_ptr, o_ptr, cu_ptr, H: tl.constexpr, S: tl.constexpr, BT: tl.constexpr, BS: tl.constexpr):
    i_s, i_nh = tl.program_id(0), tl.program_id(1).to(tl.int64)
    i_n, i_h = i_nh // H, i_nh % H
    bos, eos = tl.load(cu_ptr + i_n).to(tl.int64), tl.load(cu_ptr + i_n + 1).to(tl.int64)
    T = eos - bos
    b_z = tl.zeros([BS], dtype=tl.float32)
    for i_t in range(tl.cdiv(T, BT)):
        o_t = i_t * BT + tl.arange(0, BT)
        o_s = i_s * BS + tl.arange(0, BS)
        m = (o_t[:, None] < T) & (o_s[None, :] < S)
        p_s = s_ptr + (bos * H + i_h) * S + o_t[:, None] * (H * S) + o_s[None, :]
        p_o = o_ptr + (bos * H + i_h) * S + o_t[:, None] * (H * S) + o_s[None, :]
        b = tl.load(p_s, mask=m, other=0.0).to(tl.float32)
        tl.store(p_o, (b_z[None, :] + tl.cumsum(b, axis=0)).to(p_o.dtype.element_ty), mask=m)
        b_z += tl.sum(b, 0)


@triton.jit
def varlen_tiles(s_ptr, o_ptr, cu_ptr, H: tl.constexpr, S: tl.constexpr, BT: tl.constexpr, BS: tl.constexpr):
    """The same through block pointers (flash-linear-attention's older form; Triton 3.0-3.7)."""
    i_s, i_nh = tl.program_id(0), tl.program_id(1)
    i_n, i_h = i_nh // H, i_nh % H
    bos, eos = tl.load(cu_ptr + i_n).to(tl.int64), tl.load(cu_ptr + i_n + 1).to(tl.int64)
    T = eos - bos
    b_z = tl.zeros([BS], dtype=tl.float32)
    for i_t in range(tl.cdiv(T, BT)):
        p_s = tl.make_block_ptr(s_ptr + (bos * H + i_h) * S, (T, S), (H * S, 1), (i_t * BT, i_s * BS), (BT, BS), (1, 0))
        p_o = tl.make_block_ptr(o_ptr + (bos * H + i_h) * S, (T, S), (H * S, 1), (i_t * BT, i_s * BS), (BT, BS), (1, 0))
        b = tl.load(p_s, boundary_check=(0, 1)).to(tl.float32)
        tl.store(p_o, (b_z[None, :] + tl.cumsum(b, axis=0)).to(p_o.dtype.element_ty), boundary_check=(0, 1))
        b_z += tl.sum(b, 0)


def _without(groups, pieces):
    """A patch turning program groups and prefixes of several lengths off (those not asked for)."""
    patch = Patch()
    if not groups:
        patch.setattr(program_groups, "run", lambda *args: None)
    if not pieces:
        patch.setattr(rows, "pieces", _prefix_alone)
    return patch


def _prefix_alone(ptrs, mask):
    found = rows.prefix(ptrs, mask)
    return None if found is None else [found]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cu-seqlens", type=int, nargs="+", default=[0, 1, 100, 300, 1200, 2048])
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--columns", type=int, default=100)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--block-pointers", action="store_true", help="the kernel through block pointers")
    arguments = parser.parse_args()
    cu = torch.tensor(arguments.cu_seqlens, dtype=torch.int32)
    H, S, BT, BS = arguments.heads, arguments.columns, 16, 32
    s = torch.randn(1, int(cu[-1]), H, S, generator=torch.Generator().manual_seed(0)).half()
    grid = (triton.cdiv(S, BS), (cu.numel() - 1) * H)
    kernel = varlen_tiles if arguments.block_pointers else varlen_cumsum

    def launch(mode, groups=True, pieces=True):
        out = torch.zeros(s.shape, dtype=torch.float32)
        programs.forget(kernel.fn)  # the last run's fallback or failed grouping
        with kwshim.activate(grid=mode), _without(groups, pieces):
            start = time.perf_counter()
            kernel[grid](s, out, cu, H=H, S=S, BT=BT, BS=BS)
            return time.perf_counter() - start, out

    cases = {"loop (sequential)": ("sequential",), "batched, before (leading runs)": ("batched", False, False),
             "batched, groups only": ("batched", True, False), "batched, groups and pieces": ("batched", True, True)}
    times = {name: [] for name in cases}
    outs = {}
    for name, case in cases.items():
        launch(*case)  # traced
    for _ in range(arguments.samples):
        for name, case in cases.items():
            seconds, outs[name] = launch(*case)
            times[name].append(seconds)
    through = " through block pointers" if arguments.block_pointers else ""
    print(f"varlen cumsum{through}: cu_seqlens {arguments.cu_seqlens}, {H} heads of {S} fp16 columns, grid {grid}, "
          f"Triton {triton.__version__}; medians of {arguments.samples}")
    loop = statistics.median(times["loop (sequential)"])
    reference = outs["loop (sequential)"].view(torch.int32)
    for name in cases:
        median = statistics.median(times[name])
        same = torch.equal(outs[name].view(torch.int32), reference)
        print(f"{name:<34}{median * 1e3:>10.1f} ms{loop / median:>8.1f}x the loop  "
              f"same bits: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
