"""torch's matmuls in bf16 and fp16 (``mm``, ``addmm``, ``bmm``) on the H200, on inputs made on the
CPU (the same on every machine): the bits of each result. cuBLAS accumulates a half-precision
product in fp32 and rounds once; torch's CPU build rounds in another order, and for a row-major
second operand takes a scalar path 60x slower. ``tests/test_device_tensors.py`` holds the device's
matmuls to these bits (``parity/half_matmul_h200.json``).

    python -m parity.half_matmul > parity/half_matmul_h200.json   # on a GPU
"""

import json
import sys

#: (operation, dtype, shapes): the second operand row-major and transposed, a batched one, and an addmm
CASES = [
    ("mm", "bfloat16", (64, 300), (300, 96), False),
    ("mm", "float16", (64, 300), (300, 96), False),
    ("mm", "bfloat16", (48, 1024), (40, 1024), True),
    ("addmm", "bfloat16", (32, 512), (512, 64), False),
    ("bmm", "float16", (3, 16, 200), (3, 200, 24), False),
]


def inputs(torch, case, index):
    operation, dtype, left, right, transposed = case
    generator = torch.Generator().manual_seed(index)
    dtype = getattr(torch, dtype)
    a = torch.randn(*left, generator=generator).to(dtype)  # fp32 draws: the same on every torch
    b = torch.randn(*right, generator=generator).to(dtype)
    c = torch.randn(left[0], right[-1], generator=generator).to(dtype) if operation == "addmm" else None
    return a, (b.t() if transposed else b), c


def compute(torch, case, a, b, c):
    if case[0] == "addmm":
        return torch.addmm(c, a, b, beta=0.5, alpha=2.0)
    return getattr(torch, case[0])(a, b)


def bits(tensor):
    import torch

    return tensor.detach().cpu().contiguous().reshape(-1).view(torch.int16).tolist()


def main():
    import torch

    answers = []
    for index, case in enumerate(CASES):
        a, b, c = (t if t is None else t.to("cuda") for t in inputs(torch, case, index))
        answers.append({"case": list(case[:2]), "bits": bits(compute(torch, case, a, b, c))})
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "answers": answers}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
