"""fp16 and bf16 ``tl.sum`` of a row in the order of the GPU's lanes, each add rounded to the type.

Compiled Triton adds a 16-bit row in its own type, and where each add rounds, the order decides the
bits. On an NVIDIA GPU the row lies in a blocked layout: each thread holds ``size_per_thread``
neighbouring elements (again every ``32 * num_warps * size_per_thread`` elements), adds them in
order, then the 32 lanes of a warp add by a butterfly (partners 16, 8, 4, 2, 1 apart), then the
warps the same way. Added left to right instead, a 512-element bf16 row of squares stalls once the
sum passes 256 (Liger's rms_norm with ``casting_mode="none"``: a 3% wrong rstd, weight gradients
4% off); in the lanes' order it is the GPU's.

Measured on the H200 (``parity/lane_sums.py``): the compiler lays a 16-bit row out with
``size_per_thread = clamp(N / (32 * num_warps), 1, 8)`` (16 bytes per thread at most), and this
order gives the H200's bits for all 320 measured row sums (fp16 and bf16, N from 32 to 4096,
1 to 8 warps). Not modelled: where the row is a product the kernel just computed (``tl.sum(x * x)``),
the GPU contracts the product into the first add (an fma): 280 of 320 rows agree.

A whole block's sum (``tl.sum(x)`` of a 2-D block, ``axis=None``) is one row in row-major order, as
Triton reshapes it: the H200's bits for all 224 measured block sums (``parity/block_sums.py``).
Other reductions of a 2-D block keep the interpreter's order.
"""

import numpy as np

__all__ = ["size_per_thread", "lane_sum"]

WARP = 32


def size_per_thread(n, warps, itemsize):
    """The elements of an ``n``-element row each thread holds (16 bytes at most, 1 at least)."""
    return max(1, min(16 // itemsize, n // (WARP * warps)))


def _butterfly(values, axis_length, dtype):
    """``values`` (``..., axis_length``) added by a butterfly over the last axis: every position ends
    with the whole sum, each add rounded to ``dtype``; position 0's is returned."""
    step = axis_length // 2
    while step >= 1:
        values = (values + values[..., np.arange(axis_length) ^ step]).astype(dtype, copy=False)
        step //= 2
    return values[..., 0]


def lane_sum(data, warps):
    """The sum over the last axis of ``data`` (fp16 or bf16, a power-of-2 length) as ``warps``
    warps add it; the other axes are rows, each summed alone."""
    dtype = data.dtype
    n = data.shape[-1]
    per_thread = size_per_thread(n, warps, dtype.itemsize)
    tile = per_thread * WARP * warps
    if n >= tile:
        lanes, unique_warps = WARP, warps
    else:  # a short row: some lanes or warps hold copies, which the GPU leaves out
        lanes = min(WARP, max(1, n // per_thread))
        unique_warps = max(1, n // (per_thread * WARP))
    threads = lanes * unique_warps
    held = data.reshape(data.shape[:-1] + (n // (threads * per_thread), threads, per_thread))
    total = None
    for repeat in range(held.shape[-3]):
        for element in range(per_thread):
            value = held[..., repeat, :, element]
            total = value if total is None else (total + value).astype(dtype, copy=False)
    total = total.reshape(data.shape[:-1] + (unique_warps, lanes))
    per_warp = _butterfly(total, lanes, dtype)
    return _butterfly(per_warp, unique_warps, dtype)
