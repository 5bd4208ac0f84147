"""Block pointers (``tl.make_block_ptr``, ``tl.advance``) in a batch (``interpreter/block_pointers``):
every result has the loop's bits, and a row-major tile loads and stores as strided copies."""

import sys

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim.compat.interpreter import block_pointer_masks_below_zero

from .kernels import needs_block_loads
from .test_programs import _both, _reason, _same_bits, batching
from .test_rows import strided_copies  # noqa: F401 (a fixture)

needs_block_pointers = pytest.mark.skipif(
    not hasattr(sys.modules.get("triton.runtime.interpreter"), "BlockPointerHandle"),
    reason="this release has no block pointers (3.8 removed them)")


@triton.jit
def varlen_tiles(s_ptr, o_ptr, cu_ptr, H: tl.constexpr, S: tl.constexpr, BT: tl.constexpr, BS: tl.constexpr):
    """flash-linear-attention's form: a tile of one head of one sequence per trip, through a block
    pointer over that sequence, its boundary checked on both axes, each tile's running sum carried."""
    i_s, i_nh = tl.program_id(0), tl.program_id(1)
    i_n, i_h = i_nh // H, i_nh % H
    bos, eos = tl.load(cu_ptr + i_n).to(tl.int64), tl.load(cu_ptr + i_n + 1).to(tl.int64)
    T = eos - bos
    b_z = tl.zeros([BS], dtype=tl.float32)
    for i_t in range(tl.cdiv(T, BT)):
        p_s = tl.make_block_ptr(s_ptr + (bos * H + i_h) * S, (T, S), (H * S, 1), (i_t * BT, i_s * BS), (BT, BS), (1, 0))
        p_o = tl.make_block_ptr(o_ptr + (bos * H + i_h) * S, (T, S), (H * S, 1), (i_t * BT, i_s * BS), (BT, BS), (1, 0))
        b = tl.load(p_s, boundary_check=(0, 1)).to(tl.float32)
        tl.store(p_o, (b_z[None, :] + tl.cumsum(b, axis=0)).to(p_o.dtype.element_ty), boundary_check=(0, 1))
        b_z += tl.sum(b, 0)


@triton.jit
def advancing_tiles(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, PADDING: tl.constexpr):
    """A tile per program, advanced along the columns; stored through a transposed block pointer (its
    last axis steps by ``N`` elements: strided rows)."""
    pid = tl.program_id(0)
    p_x = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (pid * BM, 0), (BM, BN), (1, 0))
    p_y = tl.make_block_ptr(y_ptr, (N, M), (1, N), (0, pid * BM), (BN, BM), (0, 1))
    total = tl.zeros((BM,), tl.float32)
    for _ in range(tl.cdiv(N, BN)):
        x = tl.load(p_x, boundary_check=(0, 1), padding_option=PADDING)
        total += tl.sum(tl.where(x == x, x, 1000.0), axis=1)  # a NaN of the padding counts 1000
        tl.store(p_y, tl.trans(x) + total[None, :], boundary_check=(0, 1))
        p_x = tl.advance(p_x, (0, BN))
        p_y = tl.advance(p_y, (BN, 0))


@triton.jit
def before_the_start(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """Offsets from -BLOCK // 2, from a base inside the tensor: the elements before the axis's start
    are memory; whether the boundary check masks them is the release's (``compat``)."""
    pid = tl.program_id(0)
    p_x = tl.make_block_ptr(x_ptr + BLOCK + pid * BLOCK, (n,), (1,), (-BLOCK // 2,), (BLOCK,), (0,))
    p_y = tl.make_block_ptr(y_ptr + pid * BLOCK, (BLOCK,), (1,), (0,), (BLOCK,), (0,))
    tl.store(p_y, tl.load(p_x, boundary_check=(0,), padding_option="zero") + 1)


@batching
@needs_block_loads
@needs_block_pointers
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_a_varlen_kernel_s_block_pointers_run_batched_with_the_loop_s_bits(strided_copies, dtype):  # noqa: F811
    torch.manual_seed(0)
    cu = torch.tensor([0, 1, 100, 300, 600, 640], dtype=torch.int32)
    H, S, BT, BS = 4, 40, 16, 16
    s = torch.randn(1, 640, H, S).to(dtype)

    def make():
        return s, torch.zeros(1, 640, H, S, dtype=dtype), cu

    grid = (triton.cdiv(S, BS), 5 * H)
    looped, batched = _both(varlen_tiles, grid, make, H=H, S=S, BT=BT, BS=BS)
    _same_bits(looped, batched)
    expected = torch.cat([s[:, a:b].float().cumsum(1) for a, b in zip(cu[:-1].tolist(), cu[1:].tolist())], 1)
    torch.testing.assert_close(batched[1].float(), expected.to(dtype).float(), atol=1e-2, rtol=1e-2)
    assert _reason(varlen_tiles) is None and strided_copies["read"] > 0 and strided_copies["write"] > 0
    with kwshim.activate(grid="check"):
        varlen_tiles[grid](*make(), H=H, S=S, BT=BT, BS=BS)


@batching
@needs_block_loads
@needs_block_pointers
@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_advanced_and_transposed_block_pointers_keep_the_loop_s_bits_and_padding(padding):
    torch.manual_seed(0)
    x = torch.randn(70, 45)
    looped, batched = _both(advancing_tiles, (5,), lambda: (x, torch.zeros(70, 45)), 70, 45, BM=16, BN=16,
                            PADDING=padding)
    _same_bits(looped, batched)
    padded = torch.cat([x, torch.full((70, 3), 0.0 if padding == "zero" else 1000.0)], dim=1)
    totals = padded.view(70, 3, 16).sum(dim=2).cumsum(dim=1)  # after each tile of 16 columns
    assert torch.allclose(batched[1][:, :16], x[:, :16] + totals[:, :1], atol=1e-4)
    assert torch.allclose(batched[1][:, 32:], x[:, 32:] + totals[:, 2:], atol=1e-3)
    assert _reason(advancing_tiles) is None


@batching
@needs_block_pointers
def test_a_boundary_check_before_the_axis_s_start_masks_as_the_release_does():
    x = torch.arange(80, dtype=torch.float32)
    looped, batched = _both(before_the_start, (4,), lambda: (x, torch.zeros(64)), 64, BLOCK=16)
    _same_bits(looped, batched)
    first = batched[1][:8].tolist()
    assert first == ([1.0] * 8 if block_pointer_masks_below_zero() else [9.0 + i for i in range(8)])
    assert _reason(before_the_start) is None
