"""Liger-Kernel's own sparsemax (forward and backward), unedited, against a torch reference. Its kernels
declare num_warps as a parameter and are launched with num_warps=..., which bare interpreters up to
3.2 drop. Run as a script (kwshim run), not collected by pytest."""

import torch
from liger_kernel.ops.sparsemax import LigerSparsemaxFunction


def reference(x):
    z, _ = torch.sort(x, dim=-1, descending=True)
    k = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    cssv = z.cumsum(-1) - 1
    support = z > cssv / k
    kz = support.sum(-1, keepdim=True)
    tau = cssv.gather(-1, kz - 1) / kz.to(x.dtype)
    return torch.clamp(x - tau, min=0)


torch.manual_seed(0)
x = torch.randn(3, 10, requires_grad=True)
y = LigerSparsemaxFunction.apply(x, -1)
expected = reference(x.detach())
print("max abs diff", float((y.detach() - expected).abs().max()))
assert torch.allclose(y.detach(), expected, atol=1e-6)
y.sum().backward()
print("grad finite", bool(torch.isfinite(x.grad).all()))
print("OK")
