"""``+``, ``-`` and ``*`` of int1 blocks (masks), and ``&``, ``|``, ``^``: compiled on a GPU and under
the interpreter. ``parity/int1_arithmetic_h100.json`` holds what an H100 computed (sm_90, the H200's
architecture and compiler target; no H200 was lent when it was recorded): ``+`` and ``-`` wrap in one
bit (1 + 1 is 0) and ``*`` is ``&``. ``tests/test_numerics.py`` holds the switch to it; without the
switch, the interpreter's ``+`` saturates before 3.9 (NumPy's bool add) and its ``-`` raises (NumPy
refuses a bool subtract).

    python -m parity.int1_arithmetic                            # on a machine with an NVIDIA GPU
    TRITON_INTERPRET=1 python -m parity.int1_arithmetic --kwshim   # anywhere: under the switch
"""

import triton
import triton.language as tl

from parity import print_record

OPERATIONS = ["add", "sub", "mul", "and", "or", "xor"]


@triton.jit
def int1_arithmetic(a_ptr, b_ptr, out_ptr, N: tl.constexpr, OP: tl.constexpr):
    offsets = tl.arange(0, N)
    a = tl.load(a_ptr + offsets) != 0
    b = tl.load(b_ptr + offsets) != 0
    if OP == "add":
        r = a + b
    elif OP == "sub":
        r = a - b
    elif OP == "mul":
        r = a * b
    elif OP == "and":
        r = a & b
    elif OP == "or":
        r = a | b
    else:
        r = a ^ b
    tl.store(out_ptr + offsets, r.to(tl.int32))


def results(device):
    """{operation: the int32 of each result for (a, b) = (0, 0), (0, 1), (1, 0), (1, 1), repeated}."""
    import torch

    a = torch.tensor([0, 0, 1, 1] * 4, dtype=torch.int32, device=device)
    b = torch.tensor([0, 1, 0, 1] * 4, dtype=torch.int32, device=device)
    found = {}
    for operation in OPERATIONS:
        out = torch.full((16,), 7, dtype=torch.int32, device=device)
        int1_arithmetic[(1,)](a, b, out, N=16, OP=operation)
        found[operation] = out.tolist()[:4]
    return found


def main():
    print_record(results, indent=1)


if __name__ == "__main__":
    main()
