"""Liger-Kernel's rms_norm, layer_norm, swiglu, softmax and cross entropy (fp32 and bf16, 256 x 1024),
forward and backward, on inputs made by integer arithmetic (the same on every machine): prints the
first 16 hex digits of the SHA-256 of each output and gradient as JSON. Compiled on the H200 it gave
``parity/liger_kernels_h200.json``; run as a script (kwshim run), not collected by pytest."""

import hashlib
import json

import numpy as np
import torch
from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
from liger_kernel.ops.layer_norm import LigerLayerNormFunction
from liger_kernel.ops.rms_norm import LigerRMSNormFunction
from liger_kernel.ops.softmax import LigerSoftmaxFunction
from liger_kernel.ops.swiglu import LigerSiLUMulFunction

ROWS, COLS = 256, 1024
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def made(seed, dtype, shape=(ROWS, COLS)):
    """Uniform on [-4, 4), from a multiplicative hash of each element's index."""
    n = int(np.prod(shape))
    index = np.arange(n, dtype=np.uint64) + np.uint64(seed * n)
    mixed = (index * np.uint64(2654435761) + np.uint64(seed)) % np.uint64(2 ** 32)
    values = (mixed.astype(np.float64) / 2 ** 32 * 8 - 4).astype(np.float32).reshape(shape)
    return torch.from_numpy(values).to(dtype).to(DEVICE)


def digest(tensor):
    flat = tensor.detach().cpu().contiguous().reshape(-1)
    return hashlib.sha256(flat.view(torch.uint8).numpy().tobytes()).hexdigest()[:16]


results = {}
for dtype in (torch.float32, torch.bfloat16):
    x, g, u = made(1, dtype), made(4, dtype), made(5, dtype)
    w, b = made(2, dtype, (COLS,)), made(3, dtype, (COLS,))
    target = torch.from_numpy(np.arange(ROWS, dtype=np.int64) * 7919 % COLS).to(DEVICE)
    cases = {
        "rms_norm": (lambda x, w: LigerRMSNormFunction.apply(x, w, 1e-6), (x, w)),
        "layer_norm": (lambda x, w, b: LigerLayerNormFunction.apply(x, w, b, 1e-6), (x, w, b)),
        "swiglu": (LigerSiLUMulFunction.apply, (g, u)),
        "softmax": (LigerSoftmaxFunction.apply, (x,)),
        "cross_entropy": (lambda x: LigerCrossEntropyFunction.apply(x, target, None)[0], (x,)),
    }
    for name, (function, inputs) in cases.items():
        leaves = [t.clone().requires_grad_(True) for t in inputs]
        y = function(*leaves)
        y.backward(made(9, y.dtype, tuple(y.shape)) if y.dim() else torch.ones((), dtype=y.dtype, device=DEVICE))
        results[f"{name} {str(dtype)[6:]}"] = [digest(y)] + [digest(leaf.grad) for leaf in leaves]
print(json.dumps(results, sort_keys=True))
