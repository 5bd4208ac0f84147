"""torch's fp32 softmax backwards on the H200 (``_log_softmax_backward_data``: ``grad - exp(output) *
sum(grad)``; ``_softmax_backward_data``: ``output * (grad - sum(grad * output))``), on inputs made on
the CPU (the same on every machine): the bits of each result (an H100 gave the same bits). CUDA adds
a row's sum as a tree over a block's threads; torch's CPU build in 8 or 16 long chains, one per
SIMD lane, which over a 32000-wide row is 1e-5 from the exact sum. ``tests/test_device_tensors.py``
holds the device's results near these (``parity/softmax_backward_h200.json``).

    python -m parity.softmax_backward > parity/softmax_backward_h200.json   # on a GPU
"""

import json
import sys

from parity import packed_bits, unpacked_bits

#: (operation, gradient, rows, columns): a label-smoothed cross entropy's gradient (every class
#: ``-eps / V``, the target ``-(1 - eps)`` more), and random ones
CASES = [
    ("_log_softmax_backward_data", "smoothed", 2, 32000),
    ("_log_softmax_backward_data", "random", 8, 4096),
    ("_softmax_backward_data", "random", 2, 32000),
    ("_softmax_backward_data", "random", 16, 100),
]


def inputs(torch, case, index):
    """``(grad, output)`` in fp32: the output is the exact softmax or log-softmax of random rows,
    rounded once, so that only the backward differs between machines."""
    operation, gradient, rows, columns = case
    generator = torch.Generator().manual_seed(index)
    x = torch.randn(rows, columns, generator=generator, dtype=torch.float64) * 2
    if operation == "_log_softmax_backward_data":
        output = torch.log_softmax(x, -1).float()
    else:
        output = torch.softmax(x, -1).float()
    if gradient == "smoothed":
        eps = 0.2
        grad = torch.full((rows, columns), -eps / columns)
        target = torch.randint(0, columns, (rows,), generator=generator)
        grad[torch.arange(rows), target] -= 1 - eps
    else:
        grad = torch.randn(rows, columns, generator=generator)
    return grad, output


def compute(torch, case, grad, output):
    return getattr(torch.ops.aten, case[0]).default(grad, output, -1, torch.float32)


def bits(tensor):
    """The result's 32-bit patterns, packed (``parity.packed_bits``)."""
    import torch

    return packed_bits(tensor, torch.int32)


def patterns(torch, text):
    """``bits``' text as an int32 tensor."""
    return unpacked_bits(torch, text, torch.int32)


def main():
    import torch

    answers = []
    for index, case in enumerate(CASES):
        grad, output = inputs(torch, case, index)
        answers.append({"case": list(case), "bits": bits(compute(torch, case, grad.to("cuda"), output.to("cuda")))})
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "answers": answers}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
