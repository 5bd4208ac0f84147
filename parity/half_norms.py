"""torch's half-precision normalizations and row reductions on the GPU, on inputs made on the CPU
(the same on every machine): the bits of each result. CUDA's kernels compute a bf16 or fp16
``layer_norm`` (forward and backward), ``rms_norm``, ``group_norm``, ``softmax`` and a row's ``sum``
and ``mean`` in fp32 and round each output once; the question is where torch's CPU build computes
otherwise. Liger's bf16 ``test_liger_layer_norm`` fails on the CPU on its reference alone (the
weight gradient of torch's ``LayerNorm``). ``tests/test_device_tensors.py`` holds the device's
``layer_norm`` to these bits (``parity/half_norms_h100.json``: an H100, the same Hopper as the H200).

    python -m parity.half_norms > parity/half_norms_h100.json   # on a GPU
    python -m parity.half_norms --cpu                            # torch's CPU build, the same cases
"""

import json
import sys

from parity import packed_bits, unpacked_bits

#: (operation, dtype, rows, columns): Liger's layer_norm shapes (batch x seq rows, hidden columns)
CASES = [(operation, dtype, rows, columns)
         for operation in ("layer_norm", "layer_norm_statistics", "layer_norm_backward", "rms_norm", "group_norm",
                           "sum", "mean")
         for dtype in ("bfloat16", "float16")
         for rows, columns in ((16, 64), (64, 128), (1, 1023), (21, 256), (1, 1500), (96, 128))]


def inputs(torch, case, index):
    """x, weight, bias and the gradient of the output, drawn in fp32 and rounded to the case's dtype."""
    _, dtype, rows, columns = case
    generator = torch.Generator().manual_seed(1000 + index)
    kind = getattr(torch, dtype)
    draw = [torch.randn(rows, columns, generator=generator), torch.randn(columns, generator=generator),
            torch.randn(columns, generator=generator), torch.randn(rows, columns, generator=generator)]
    return [value.to(kind) for value in draw]


def compute(torch, case, x, weight, bias, grad):
    """The case's results, in the order the record keeps them."""
    operation, _, _, columns = case
    functional = torch.nn.functional
    if operation == "layer_norm":
        return [functional.layer_norm(x, (columns,), weight, bias, 1e-6)]
    if operation == "layer_norm_statistics":  # the mean and 1/std the backward takes, and their dtype
        return list(torch.native_layer_norm(x, (columns,), weight, bias, 1e-6)[1:])
    if operation == "layer_norm_backward":
        leaves = [value.detach().clone().requires_grad_(True) for value in (x, weight, bias)]
        functional.layer_norm(leaves[0], (columns,), leaves[1], leaves[2], 1e-6).backward(grad)
        return [leaf.grad for leaf in leaves]
    if operation == "rms_norm":
        return [functional.rms_norm(x, (columns,), weight, 1e-6)]
    if operation == "group_norm":  # rows as the batch, 4 groups of the first columns
        channels = columns - columns % 4 or 4
        return [functional.group_norm(x[:, :channels].reshape(x.shape[0], 4, -1), 4, None, None, 1e-6)]
    return [getattr(torch, operation)(x, dim=-1)]


def bits(tensor):
    """The result's bit patterns, packed; an fp32 result's as int32 (``parity.packed_bits``)."""
    import torch

    return packed_bits(tensor, torch.int32 if tensor.dtype == torch.float32 else torch.int16)


def patterns(torch, text, dtype="torch.bfloat16"):
    """``bits``' text as an int16 tensor (int32 for ``dtype`` float32)."""
    return unpacked_bits(torch, text, torch.int32 if dtype == "torch.float32" else torch.int16)


def main():
    import torch

    device = "cpu" if "--cpu" in sys.argv else "cuda"
    answers = []
    for index, case in enumerate(CASES):
        values = [value.to(device) for value in inputs(torch, case, index)]
        results = compute(torch, case, *values)
        answers.append({"case": list(case), "dtypes": [str(result.dtype) for result in results],
                        "bits": [bits(result) for result in results]})
    json.dump({"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
               "answers": answers}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
