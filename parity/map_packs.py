"""``tl.map_elementwise(..., pack=P)``: which elements the compiled kernel hands its scalar function
together. The function below returns its packed arguments rotated by one, so each output element
shows which input element it was packed with. ``parity/map_packs_h200.json`` holds what the H200
computed; ``tests/test_numerics.py`` holds the interpreter to it.

    python -m parity.map_packs                             # on a machine with an NVIDIA GPU
    TRITON_INTERPRET=1 python -m parity.map_packs --kwshim    # anywhere: under the switch
"""


import triton
import triton.language as tl

from parity import print_record

#: (rows, columns, pack, num_warps, dtype) of the blocks mapped
CASES = [(1, 128, 2, 4, "int32"), (1, 512, 2, 4, "int32"), (1, 512, 4, 4, "int32"), (1, 64, 2, 1, "float16"),
         (4, 64, 2, 4, "int32"), (64, 4, 2, 4, "int32"), (16, 16, 4, 1, "float32"), (8, 32, 2, 8, "float16")]


@triton.jit
def _rotate2(x0, x1):
    return x1, x0


@triton.jit
def _rotate4(x0, x1, x2, x3):
    return x1, x2, x3, x0


@triton.jit
def map_packs(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, PACK: tl.constexpr):
    offsets = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offsets)
    if PACK == 2:
        y = tl.map_elementwise(_rotate2, x, pack=2)[0]  # a tuple: the function returned one
    else:
        y = tl.map_elementwise(_rotate4, x, pack=4)[0]
    tl.store(out_ptr + offsets, y)


def results(device):
    import torch

    found = {}
    for rows, columns, pack, warps, dtype in CASES:
        x = torch.arange(rows * columns, device=device).to(getattr(torch, dtype))
        out = torch.full_like(x, -1)
        name = f"{rows}x{columns} pack={pack} num_warps={warps} {dtype}"
        try:
            map_packs[(1,)](x, out, M=rows, N=columns, PACK=pack, num_warps=warps)
        except Exception as error:  # noqa: BLE001 - a refusal is a fact too: its first line
            found[name] = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"
            continue
        found[name] = [int(v) for v in out.tolist()]
    return found


def main():
    print_record(results, sort_keys=True)


if __name__ == "__main__":
    main()
