"""A kernel library's test as such tests are written: tensors on "cuda", skipped without a GPU.

    pytest examples/suite_says_cuda                                   # no GPU: skipped
    pytest --kwshim --kwshim-device cuda examples/suite_says_cuda     # the virtual H200: runs, passes
"""

import pytest
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 256}, num_warps=8)],
                 key=["n"])
@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr, num_warps: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, (x * factor).to(x.dtype), mask=mask)  # num_warps: a compile option, declared


def scale(x, factor):
    out = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, factor)
    return out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_scale_matches_torch(dtype):
    x = torch.randn(1000, device="cuda", dtype=dtype)
    torch.testing.assert_close(scale(x, 2.0), x * 2.0)
