"""Liger-Kernel 0.8.5's rms_norm and layer_norm backward as its own tests run them (``test_rms_norm.py``,
``test_layer_norm.py``), on inputs made on the CPU (the same on every machine): the weight (and
bias) gradients' bits, Liger's and torch's reference modules', and the first 16 hex digits of the
SHA-256 of the input gradients. On a GPU the backward runs one program per SM (132 on the H200);
on the virtual device it must too. ``parity/liger_norm_grads_h200.json`` holds what the H200
computed; ``tests/test_third_party.py`` holds the device to it.

    python -m parity.liger_norm_grads > parity/liger_norm_grads_h200.json   # with Liger on the path, a GPU
    TRITON_INTERPRET=1 python -m parity.liger_norm_grads --kwshim           # anywhere: under the device
"""

from parity import digest, print_device_record


def _bits(tensor):
    import torch

    flat = tensor.detach().cpu().contiguous().reshape(-1)
    return flat.view(torch.int16 if flat.element_size() == 2 else torch.int32).tolist()


def _rms_norm(torch, dtype, casting_mode, in_place, shape):
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    class BaseRMSNorm(torch.nn.Module):  # test_rms_norm.py's reference for casting_mode "none"
        def __init__(self, hidden_size, eps=1e-6):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(hidden_size))
            self.variance_epsilon = eps

        def forward(self, hidden_states):
            input_dtype = hidden_states.dtype
            variance = hidden_states.pow(2).mean(-1, keepdim=True)
            hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
            return self.weight * hidden_states.to(input_dtype)

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=generator).to(dtype).to("cuda")  # fp32 draws: the same on every torch
    grad = torch.randn(*shape, generator=generator).to(dtype).to("cuda")
    h1, h2 = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    reference = BaseRMSNorm(shape[-1]).to("cuda").to(dtype)
    reference(h1).backward(grad)
    weight = torch.nn.Parameter(torch.ones(shape[-1])).to("cuda").to(dtype).detach().requires_grad_(True)
    out = LigerRMSNormFunction.apply(h2, weight, 1e-6, 0.0, casting_mode, in_place, False)  # LigerRMSNorm's call
    out.backward(grad.clone())
    return {"liger dw": _bits(weight.grad), "reference dw": _bits(reference.weight.grad),
            "liger dx": digest(h2.grad), "liger y": digest(out)}


def _layer_norm(torch, dtype, shape):
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=generator).to(dtype).to("cuda")  # fp32 draws: the same on every torch
    grad = torch.randn(*shape, generator=generator).to(dtype).to("cuda")
    x1, x2 = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    weight = torch.ones(shape[-1], dtype=dtype).to("cuda").requires_grad_(True)  # LigerLayerNorm's initial
    bias = torch.zeros(shape[-1], dtype=dtype).to("cuda").requires_grad_(True)
    reference = torch.nn.LayerNorm(shape[-1], eps=1e-6).to(dtype).to("cuda")
    out = LigerLayerNormFunction.apply(x1, weight, bias, 1e-6)
    out.backward(grad)
    reference(x2).backward(grad)
    return {"liger dw": _bits(weight.grad), "liger db": _bits(bias.grad),
            "reference dw": _bits(reference.weight.grad), "reference db": _bits(reference.bias.grad),
            "liger dx": digest(x1.grad), "liger y": digest(out)}


def results():
    import torch

    return {
        "rms_norm bfloat16 none in_place 2x128x512": _rms_norm(torch, torch.bfloat16, "none", True, (2, 128, 512)),
        "rms_norm float32 llama 2x128x512": _rms_norm(torch, torch.float32, "llama", False, (2, 128, 512)),
        "layer_norm float32 2x128x512": _layer_norm(torch, torch.float32, (2, 128, 512)),
        "layer_norm bfloat16 4x256x1024": _layer_norm(torch, torch.bfloat16, (4, 256, 1024)),
    }


def main():
    print_device_record(results)


if __name__ == "__main__":
    main()
