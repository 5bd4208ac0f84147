"""``tl.sum`` and ``tl.cumsum`` of int1 blocks added in int1 (``dtype=tl.int1``): compiled on a GPU and
under the interpreter. ``parity/int1_sums_h200.json`` holds what the H200 computed;
``tests/test_numerics.py`` holds the interpreter to it.

    python -m parity.int1_sums                            # on a machine with an NVIDIA GPU
    TRITON_INTERPRET=1 python -m parity.int1_sums --kwshim   # anywhere: under the switch
"""


import triton
import triton.language as tl

from parity import print_record

#: The int1 rows summed (a pattern of 0 and 1, repeated to 32 elements).
PATTERNS = {"ones": [1], "five ones": [1, 1, 1, 1, 1] + [0] * 27, "alternating": [1, 0], "three in four": [1, 1, 1, 0]}


@triton.jit
def int1_sums(x_ptr, sum_ptr, cumsum_ptr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + offsets) != 0
    tl.store(sum_ptr, tl.sum(x, axis=0, dtype=tl.int1).to(tl.int32))
    tl.store(cumsum_ptr + offsets, tl.cumsum(x, axis=0, dtype=tl.int1).to(tl.int32))


def results(device):
    import torch

    found = {}
    for name, pattern in PATTERNS.items():
        x = torch.tensor((pattern * 32)[:32], dtype=torch.int32, device=device)
        total = torch.zeros(1, dtype=torch.int32, device=device)
        running = torch.zeros(32, dtype=torch.int32, device=device)
        int1_sums[(1,)](x, total, running, N=32)
        found[name] = {"sum": int(total[0]), "cumsum": running.tolist()}
    return found


def main():
    print_record(results, indent=1)


if __name__ == "__main__":
    main()
