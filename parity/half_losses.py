"""torch's half-precision losses on the GPU, on inputs made on the CPU (the same on every machine):
the bits of each result. Liger's fp16 ``test_correctness_with_forward_only`` (8,192 rows of
32,000) fails on the CPU on its reference alone: torch's CPU ``CrossEntropyLoss`` in fp16 gives
``inf`` for the mean where Liger's kernel gives 10.87 and the H100 passes the test (its reference
is finite), so CUDA's ``nll_loss`` sums the rows otherwise (in fp32, one may guess; this records it).

    python -m parity.half_losses > parity/half_losses_h100.json   # on a GPU
    python -m parity.half_losses --cpu                             # torch's CPU build, the same cases
"""

import json
import sys

from parity import packed_bits

#: (operation, reduction, dtype, rows, columns): rows enough that a half-precision running sum overflows
CASES = [(operation, reduction, dtype, rows, columns)
         for operation in ("cross_entropy", "nll_loss")
         for reduction in ("mean", "sum", "none")
         for dtype in ("float16", "bfloat16")
         for rows, columns in ((16384, 1000), (300, 1000))]


def inputs(torch, case, index):
    """Logits drawn in fp32 and rounded to the case's dtype (log-probabilities for ``nll_loss``), and targets."""
    operation, _, dtype, rows, columns = case
    generator = torch.Generator().manual_seed(2000 + index)
    logits = torch.randn(rows, columns, generator=generator)
    if operation == "nll_loss":
        logits = logits.log_softmax(-1)
    target = torch.randint(0, columns, (rows,), generator=generator)
    return logits.to(getattr(torch, dtype)), target


def compute(torch, case, x, target):
    operation, reduction = case[0], case[1]
    return getattr(torch.nn.functional, operation)(x, target, reduction=reduction)


def main():
    import torch

    device = "cpu" if "--cpu" in sys.argv else "cuda"
    answers = []
    for index, case in enumerate(CASES):
        x, target = (value.to(device) for value in inputs(torch, case, index))
        result = compute(torch, case, x, target)
        answers.append({"case": list(case), "dtype": str(result.dtype), "bits": packed_bits(result, torch.int16),
                        "value": float(result.float().mean())})
    json.dump({"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
               "answers": answers}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
