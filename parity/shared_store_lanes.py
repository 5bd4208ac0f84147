"""Which lane's copy of a reduced row a GPU stores, where the lanes of a warp hold different copies.

A reduction along a block's last axis within one warp ends with a butterfly in which each lane
combines its own value on the left, so a combine that is not symmetric (``tl.argmax`` over NaN, or
here ``first``, which keeps its left operand: each lane ends with its own first element) leaves
each lane a different copy. The store converts the result's layout through shared memory, every
lane of a row writing its copy to one address; which copy stays is the hardware's. Each case stores
``first`` of a block whose elements are their own column numbers, so the stored value of a row is
the column of the first element of the lane whose copy stayed, and records the compiled kernel's
shared-memory stores (their widths) and layout.

    python -m parity.shared_store_lanes > parity/shared_store_lanes_h100.json   # on an NVIDIA GPU
    TRITON_INTERPRET=1 python -m parity.shared_store_lanes --kwshim              # under the switch

The rule it holds (``lane``): a shared-memory access is served in phases of 128 bytes (8 lanes for
16-byte accesses, 16 for 8-byte, 32 for 4 bytes or less), and among the lanes writing one address
the lowest lane of the last phase holding one of them wins. Measured on an H100 (sm_90, Triton
3.6.0; ``parity/shared_store_lanes_h100.json``): all 20 cases, 746 rows, follow it (lanes 0, 8,
16 and 24 stay); a row reduced over several warps is the same in every lane (the warps combine in
shared memory) and stores lane 0's. kwshim's reductions keep lane 0's copy
(``kwshim/arithmetic/lane_order.py``): the access width is the compiler's choice.
"""

import re

import triton
import triton.language as tl

from parity import print_record

#: (M, N, num_warps, element type): the shapes of ``parity/lane_orders.py``'s unmodelled arg
#: reductions, and others whose conversions store 2, 4, 8 and 16 bytes at a time
CASES = [(64, 128, 8, "float32"), (128, 64, 4, "float32"), (8, 256, 4, "float16"), (8, 256, 4, "int32"),
         (8, 256, 1, "int32"), (8, 256, 2, "int32"), (8, 256, 8, "int32"), (16, 64, 4, "float32"),
         (16, 128, 4, "int32"), (32, 128, 8, "int32"), (64, 64, 4, "float16"), (64, 32, 2, "float16"),
         (128, 128, 8, "float16"), (32, 256, 8, "int32"), (16, 256, 8, "float16"), (2, 512, 4, "float32"),
         (16, 128, 8, "float32"), (32, 128, 8, "float16"), (64, 64, 8, "int32"), (32, 64, 2, "float32")]


@triton.jit
def _first(a, b):
    return a


@triton.jit
def first_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    columns = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + columns[None, :])
    tl.store(out_ptr + rows, tl.reduce(x, 1, _first))


def lane(lanes, group, access_bytes):
    """The lane (of the ``lanes`` along the row, in lane group ``group``) whose copy the rule keeps."""
    per_phase = 32 if access_bytes <= 4 else 128 // access_bytes
    last = group * lanes + lanes - 1
    return max(group * lanes, last // per_phase * per_phase) - group * lanes


def results(device):
    """{case: the column each row stored, the compiled kernel's shared-memory store widths in bytes
    (in order) and its layout}."""
    import torch

    found = {}
    for m, n, warps, type_name in CASES:
        dtype = getattr(torch, type_name)
        x = torch.arange(n, device=device).to(dtype).repeat(m, 1).contiguous()
        out = torch.full((m,), -1, dtype=dtype, device=device)
        compiled = first_kernel[(1,)](x, out, M=m, N=n, num_warps=warps)
        asm = getattr(compiled, "asm", None) or {}
        stores = [int(width or 1) * int(bits) // 8
                  for width, bits in re.findall(r"st\.shared(?:\.v(\d))?\.b(\d+)", asm.get("ptx", ""))]
        layouts = re.findall(r"^#blocked = (#ttg\.blocked<.*>)$", asm.get("ttgir", ""), flags=re.M)
        found[f"{type_name} M={m} N={n} num_warps={warps}"] = {
            "columns": [int(v) for v in out.tolist()], "shared_stores": stores, "layout": layouts[:1]}
    return found


def main():
    print_record(results, indent=1)


if __name__ == "__main__":
    main()
