"""``tl.sum`` of a whole 2-D fp16 or bf16 block (``axis=None``), compiled on a GPU: Triton reshapes
the block to one row (``can_reorder=True``) and adds it in its own type, in the GPU's lane order.
``parity/block_sums_h200.json`` holds what the H200 computed; ``tests/test_numerics.py`` holds the
interpreter to it (the rows of ``parity/lane_sums.py``, here as blocks).

    python -m parity.block_sums > parity/block_sums_h200.json    # on a machine with an NVIDIA GPU
"""

import json

import triton
import triton.language as tl

from parity.lane_sums import ROWS, inputs

#: (M, N, num_warps): the block shapes and warp counts measured
SHAPES = [(32, 32, 4), (16, 64, 4), (64, 16, 4), (8, 128, 4), (32, 32, 1), (64, 64, 8), (4, 256, 4)]


@triton.jit
def block_sums(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    offsets = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + tl.program_id(0) * M * N + offsets)
    tl.store(out_ptr + tl.program_id(0), tl.sum(x))


def results(device):
    import torch

    found = {}
    for dtype in (torch.bfloat16, torch.float16):
        for m, n, warps in SHAPES:
            x = torch.from_numpy(inputs(m * n, m + n + warps)).to(dtype).to(device)
            out = torch.zeros(ROWS, dtype=dtype, device=device)
            block_sums[(ROWS,)](x, out, M=m, N=n, num_warps=warps)
            found[f"{str(dtype)[6:]} M={m} N={n} num_warps={warps}"] = out.view(torch.int16).tolist()
    return found


def main():
    print(json.dumps({"triton": triton.__version__, "rows": ROWS, "results": results("cuda")}, indent=1,
                     sort_keys=True))


if __name__ == "__main__":
    main()
