"""Inline PTX of element-wise fp32 arithmetic (``kwshim/arithmetic/inline_ptx.py``): flash-linear-
attention's ``softplus`` and ``softplus2`` (``fla/ops/utils/softplus.py``, written out here: ``setp``,
then under predicates ``mov``, ``mul``, ``ex2.approx.ftz``, ``add``, ``lg2.approx.ftz``) and a plain
``mov``, and ``ex2.approx`` and ``lg2.approx`` alone, compiled on a GPU and run under the switch.

    python -m parity.inline_ptx                            # on a machine with an NVIDIA GPU
    TRITON_INTERPRET=1 python -m parity.inline_ptx --kwshim   # anywhere: under the switch
"""

import numpy as np
import triton
import triton.language as tl

from parity import print_record

SOFTPLUS = ("{ .reg .pred p; setp.gt.f32 p, $1, 20.; @p mov.f32 $0, $1; @!p mul.f32 $0, $1, 1.4426950408889634; "
            "@!p ex2.approx.ftz.f32 $0, $0; @!p add.f32 $0, $0, 1.0; @!p lg2.approx.ftz.f32 $0, $0; "
            "@!p mul.f32 $0, $0, 0.6931471805599453; }")
SOFTPLUS2 = ("{ .reg .pred p; setp.gt.f32 p, $1, 15.; @p mov.f32 $0, $1; @!p ex2.approx.ftz.f32 $0, $1; "
             "@!p add.f32 $0, $0, 1.0; @!p lg2.approx.ftz.f32 $0, $0; }")
ASSEMBLY = {"softplus": SOFTPLUS, "softplus2": SOFTPLUS2, "mov": "mov.f32 $0, $1;",
            "ex2": "ex2.approx.ftz.f32 $0, $1;", "lg2": "lg2.approx.ftz.f32 $0, $1;"}
N = 4096


@triton.jit
def inline_ptx(x_ptr, out_ptr, ASM: tl.constexpr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + offsets)
    y = tl.inline_asm_elementwise(asm=ASM, constraints="=r,r", args=[x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offsets, y)


def inputs():
    """fp32 values over softplus' range, its thresholds, signed zeros, a subnormal, infinities, NaN."""
    spread = np.linspace(-60, 40, N - 12, dtype=np.float32)
    above_20 = np.nextafter(np.float32(20), np.float32(30))
    edges = np.array([0.0, -0.0, 1e-40, 15.0, 20.0, above_20, -np.inf, np.inf, np.nan, -126.5, -149.0, 88.0],
                     dtype=np.float32)
    return np.concatenate([spread, edges])


def results(device):
    """{assembly: the int32 bits of each result, for ``inputs()``}."""
    import torch

    x = torch.from_numpy(inputs()).to(device)
    found = {}
    for name, asm in ASSEMBLY.items():
        out = torch.zeros(N, dtype=torch.float32, device=device)
        inline_ptx[(1,)](x, out, ASM=asm, N=N)
        found[name] = out.cpu().view(torch.int32).tolist()
    return found


def main():
    print_record(results, separators=(",", ":"))


if __name__ == "__main__":
    main()
