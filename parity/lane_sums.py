"""``tl.sum`` of fp16 and bf16 rows, added in their own type, compiled on a GPU: the bits depend on
the order of the adds, which is the GPU's lanes (each thread's own elements, then the warp's 32
lanes, then the warps). ``parity/lane_sums_h200.json`` holds what the H200 computed, with the
layout the compiler chose for each row (ttgir's ``sizePerThread``, from the compiled kernel);
``tests/test_numerics.py`` holds the interpreter to it.

    python -m parity.lane_sums > parity/lane_sums_h200.json    # on a machine with an NVIDIA GPU
    TRITON_INTERPRET=1 python -m parity.lane_sums --kwshim     # anywhere: under the switch
"""

import json
import re
import sys

import numpy as np
import triton
import triton.language as tl

ROWS = 16
#: (N, num_warps): the row lengths and warp counts measured
SHAPES = [(32, 1), (64, 4), (128, 4), (256, 4), (512, 4), (512, 8), (1024, 4), (2048, 8), (4096, 8), (512, 1)]


@triton.jit
def row_sums(x_ptr, out_ptr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + tl.program_id(0) * N + offsets)
    tl.store(out_ptr + tl.program_id(0), tl.sum(x, axis=0))


@triton.jit
def row_sums_of_squares(x_ptr, out_ptr, N: tl.constexpr):  # Liger rms_norm's mean square, casting "none"
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + tl.program_id(0) * N + offsets)
    tl.store(out_ptr + tl.program_id(0), tl.sum(x * x, axis=0))


def inputs(n, seed):
    """Rows made by integer arithmetic (the same on every machine): uniform on [0.5, 2), so that sums
    grow and each add rounds."""
    index = np.arange(ROWS * n, dtype=np.uint64) + np.uint64(seed * 7919)
    mixed = (index * np.uint64(2654435761) + np.uint64(seed)) % np.uint64(2 ** 32)
    return (0.5 + mixed.astype(np.float64) / 2 ** 32 * 1.5).astype(np.float32).reshape(ROWS, n)


def results(device):
    import torch

    found, layouts = {}, {}
    for dtype in (torch.bfloat16, torch.float16):
        for n, warps in SHAPES:
            for name, kernel in (("sum", row_sums), ("sum of squares", row_sums_of_squares)):
                x = torch.from_numpy(inputs(n, n + warps)).to(dtype).to(device)
                out = torch.zeros(ROWS, dtype=dtype, device=device)
                compiled = kernel[(ROWS,)](x, out, N=n, num_warps=warps)
                key = f"{str(dtype)[6:]} {name} N={n} num_warps={warps}"
                found[key] = out.view(torch.int16).tolist()
                asm = getattr(compiled, "asm", None) or {}
                found_layouts = re.findall(r"#ttg\.blocked<\{([^}]*)\}>", asm.get("ttgir", ""))
                if found_layouts:
                    layouts[key] = found_layouts
    return found, layouts


def main():
    if "--kwshim" in sys.argv:
        import kwshim

        with kwshim.activate(device="cuda"):
            found, layouts = results("cuda")
    else:
        found, layouts = results("cuda")
    print(json.dumps({"triton": triton.__version__, "rows": ROWS, "size_per_thread": layouts, "results": found},
                     indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
