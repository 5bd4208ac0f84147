"""torch's ``log_softmax`` and ``softmax`` of bf16 and fp16 rows on the H200, and the gradient of a
bf16 cross entropy (``F.cross_entropy``: ``log_softmax``, then ``nll_loss``), on inputs made on the
CPU (the same on every machine): the bits of each result. CUDA's kernels compute a half-precision
row in fp32 and round each output once; torch's CPU build rounds ``log_softmax``'s ``x - max -
log(sum)`` twice, 11% of elements one ulp away. ``tests/test_device_tensors.py`` holds the device's
results to these bits (``parity/half_log_softmax_h200.json``).

    python -m parity.half_log_softmax > parity/half_log_softmax_h200.json   # on a GPU
"""

import json
import sys

from parity import packed_bits, unpacked_bits

#: (operation, dtype, rows, columns): short rows (a warp's kernel), long ones (a block's), a vocabulary
CASES = [
    ("log_softmax", "bfloat16", 64, 100),
    ("log_softmax", "float16", 64, 100),
    ("log_softmax", "bfloat16", 8, 4096),
    ("log_softmax", "float16", 8, 4096),
    ("log_softmax", "bfloat16", 2, 32000),
    ("softmax", "bfloat16", 8, 4096),
    ("softmax", "float16", 64, 100),
    ("cross_entropy_grad", "bfloat16", 2, 32000),
]


def inputs(torch, case, index):
    _, dtype, rows, columns = case
    generator = torch.Generator().manual_seed(index)
    x = (torch.randn(rows, columns, generator=generator) * 2).to(getattr(torch, dtype))  # fp32 draws
    target = torch.randint(0, columns, (rows,), generator=generator)
    return x, target


def compute(torch, case, x, target):
    operation = case[0]
    if operation == "cross_entropy_grad":
        x = x.detach().clone().requires_grad_(True)
        torch.nn.functional.cross_entropy(x, target, reduction="sum").backward()
        return x.grad
    return getattr(torch, operation)(x, -1)


def bits(tensor):
    """The result's 16-bit patterns, packed (``parity.packed_bits``)."""
    import torch

    return packed_bits(tensor, torch.int16)


def patterns(torch, text):
    """``bits``' text as an int16 tensor."""
    return unpacked_bits(torch, text, torch.int16)


def main():
    import torch

    answers = []
    for index, case in enumerate(CASES):
        x, target = inputs(torch, case, index)
        answers.append({"case": list(case), "bits": bits(compute(torch, case, x.to("cuda"), target.to("cuda")))})
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "answers": answers}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
