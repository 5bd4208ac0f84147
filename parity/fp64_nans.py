"""The bits of the NaN that fp64 arithmetic leaves (``parity/nan_payloads.py`` measured fp32's): NaN
inputs with a sign and a payload through add, mul, fma and a sum, compiled on a GPU. Measured on an
H100 (sm_90, as the H200): unlike fp32's, fp64's NaN keeps its input's sign and payload (a
signalling one made quiet), and an invalid operation (``0 * inf``, ``inf - inf``) makes
``0xfff8000000000000``, as x86 and NumPy do: no canonical NaN.

    python -m parity.fp64_nans > parity/fp64_nans_h100.json   # on a GPU (sm_90)
"""

import json
import sys

import triton
import triton.language as tl

X_BITS = [0x7FF8000000000000, 0xFFF8000000000001, 0x7FF8000012345678, 0x7FF0000012345678, 0x0, 0x7FF0000000000000]
Y_BITS = [0x3FF0000000000000] * 4 + [0x7FF0000000000000, 0xFFF0000000000000]


@triton.jit
def fp64_ops(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, x + y)
    tl.store(out_ptr + N + offsets, x * y)
    tl.store(out_ptr + 2 * N + offsets, tl.fma(x, y, y))
    tl.store(out_ptr + 3 * N + offsets, tl.sum(x[:, None] * 0 + x[None, :], axis=1))


def main():
    import torch

    n = 8
    signed = [b - (1 << 64) if b >= 1 << 63 else b for b in X_BITS + [0, 0]]
    x = torch.tensor(signed, dtype=torch.int64).view(torch.float64).cuda()
    signed = [b - (1 << 64) if b >= 1 << 63 else b for b in Y_BITS + [0, 0]]
    y = torch.tensor(signed, dtype=torch.int64).view(torch.float64).cuda()
    out = torch.zeros(4 * n, dtype=torch.float64, device="cuda")
    fp64_ops[(1,)](x, y, out, N=n)
    bits = [f"{v & 0xFFFFFFFFFFFFFFFF:016x}" for v in out.view(torch.int64).cpu().tolist()]
    json.dump({"device": torch.cuda.get_device_name(), "triton": triton.__version__,
               "results": {name: bits[i * n:i * n + len(X_BITS)]
                           for i, name in enumerate(["add", "mul", "fma", "sum"])}},
              sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
