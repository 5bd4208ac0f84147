"""The bits of the NaN that fp32 arithmetic leaves: of NaN inputs with a sign and a payload, and of
invalid operations (``0 * inf``, ``inf - inf``, ``0 / 0``, ``sqrt(-1)``), through the operations and
conversions kernels use most. Compiled on a GPU and under the switch.
``parity/nan_payloads_h100.json`` holds what an H100 (sm_90, as the H200) computed: every fp32 NaN
that arithmetic makes or passes on is ``0x7fffffff``, whatever the sign and payload it came from
(a round trip through bf16 gives ``0x7fff0000``); the switch keeps NumPy's, the input's payload
quieted or the x86 default ``0xffc00000``. The contract leaves NaN payloads aside.

    python -m parity.nan_payloads                            # on a machine with an NVIDIA GPU
    TRITON_INTERPRET=1 python -m parity.nan_payloads --kwshim   # anywhere: under the switch
"""

import triton
import triton.language as tl

from parity import print_record

#: fp32 bit patterns: quiet NaNs of either sign and with a payload, a signalling NaN, and the numbers
#: that make a NaN of an invalid operation.
X_BITS = [0x7FC00000, -0x00400000, 0x7FC12345, 0x7F812345, 0x00000000, 0x7F800000, 0x3F800000, -0x40800000]
Y_BITS = [0x3F800000, 0x3F800000, 0x3F800000, 0x3F800000, 0x7F800000, 0x7F800000, 0x7FC00000, 0x00000000]

OPERATIONS = ["add", "mul", "sub", "div", "fma", "sqrt", "exp", "log", "maximum", "to_fp16", "to_bf16",
              "to_fp64"]


@triton.jit
def nan_payloads(x_ptr, y_ptr, out_ptr, N: tl.constexpr, OP: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + offsets).to(tl.float32, bitcast=True)
    y = tl.load(y_ptr + offsets).to(tl.float32, bitcast=True)
    if OP == "add":
        r = x + y
    elif OP == "mul":
        r = x * y
    elif OP == "sub":
        r = x - y
    elif OP == "div":
        r = x / y
    elif OP == "fma":
        r = x * y + y
    elif OP == "sqrt":
        r = tl.sqrt(x)
    elif OP == "exp":
        r = tl.exp(x)
    elif OP == "log":
        r = tl.log(x)
    elif OP == "maximum":
        r = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "to_fp16":
        r = x.to(tl.float16).to(tl.float32)
    elif OP == "to_bf16":
        r = x.to(tl.bfloat16).to(tl.float32)
    else:
        r = x.to(tl.float64).to(tl.float32)
    tl.store(out_ptr + offsets, r.to(tl.int32, bitcast=True))


def results(device):
    """{operation: the int32 bits of each result for the pairs (X_BITS[i], Y_BITS[i])}."""
    import torch

    x = torch.tensor(X_BITS, dtype=torch.int32, device=device)
    y = torch.tensor(Y_BITS, dtype=torch.int32, device=device)
    found = {}
    for operation in OPERATIONS:
        out = torch.full((len(X_BITS),), 7, dtype=torch.int32, device=device)
        nan_payloads[(1,)](x, y, out, N=len(X_BITS), OP=operation)
        found[operation] = [f"{v & 0xFFFFFFFF:08x}" for v in out.tolist()]
    return found


def main():
    print_record(results, indent=1)


if __name__ == "__main__":
    main()
