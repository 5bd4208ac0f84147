"""One NaN, whatever the block's size and the process's age: a fused multiply-add, a lane-order sum
and a cumsum of NaN inputs give the H200's canonical NaN (``0x7fffffff``, ``parity/nan_payloads``)
from NumPy's code and from numba's loops alike, so which engine ran never shows in the bits, and
``grid="check"`` of a kernel with NaN inputs raises nothing."""

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim.arithmetic import compiled
from kwshim.arithmetic.formats import canonical_nans
from kwshim.compat import module_wide_builder

pytestmark = pytest.mark.skipif(not module_wide_builder(), reason="2.x: kwshim's arithmetic is not put in place")

#: NaNs of both signs, quiet and signalling, with payloads: what a GPU turns into one NaN.
X_NANS = {3: 0x7FC12345, 5: 0xFFC00001, 9: 0x7F812345}
Y_NANS = {3: 0x7F812345, 4: 0xFFC54321}


@triton.jit
def nan_kernel(x_ptr, y_ptr, sum_ptr, fma_ptr, cumsum_ptr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * BLOCK + cols)
    y = tl.load(y_ptr + row * BLOCK + cols)
    tl.store(sum_ptr + row, tl.sum(x, axis=0))
    tl.store(fma_ptr + row * BLOCK + cols, tl.fma(x, y, x))
    tl.store(cumsum_ptr + row * BLOCK + cols, tl.cumsum(x, axis=0))


def _with_nans(rows, block, nans):
    bits = np.full((rows, block), 0x3F800000, np.uint32)
    for column, pattern in nans.items():
        bits[:, column] = pattern
    return torch.from_numpy(bits.view(np.float32).copy())


def _nan_bits(rows, block, grid="batched"):
    """The distinct bits of every NaN the kernel stored."""
    x, y = _with_nans(rows, block, X_NANS), _with_nans(rows, block, Y_NANS)
    outputs = torch.zeros(rows), torch.zeros(rows, block), torch.zeros(rows, block)
    with kwshim.activate(grid=grid):
        nan_kernel[(rows,)](x, y, *outputs, BLOCK=block)
    found = set()
    for out in outputs:
        values = out.numpy().reshape(-1)
        found |= {int(b) for b in values[np.isnan(values)].view(np.uint32)}
    return found


@pytest.mark.parametrize("rows, block", [(1, 64), (64, 64), (1024, 64), (1, compiled.COMPILED_FROM)])
def test_nans_are_the_h200_s_one_nan_at_every_block_size(rows, block):
    assert _nan_bits(rows, block) == {0x7FFFFFFF}


def test_nans_are_the_same_before_and_after_small_blocks_take_the_compiled_loops(monkeypatch):
    before = _nan_bits(4, 64)
    monkeypatch.setattr(compiled, "_SMALL_BLOCKS", True)  # as a process that has run long enough
    assert _nan_bits(4, 64) == before == {0x7FFFFFFF}


def test_grid_check_of_a_kernel_with_nan_inputs_raises_nothing():
    assert _nan_bits(256, 64, grid="check") == {0x7FFFFFFF}


def test_canonical_nans_keeps_numbers_and_writes_only_nans():
    values = np.array([1.5, -0.0, np.inf, -np.inf], np.float32)
    assert canonical_nans(values) is values and values.view(np.uint32).tolist() == \
        [0x3FC00000, 0x80000000, 0x7F800000, 0xFF800000]
    with_nans = np.array([0x7FC12345, 0x3F800000, 0xFF800001], np.uint32).view(np.float32)
    assert canonical_nans(with_nans).view(np.uint32).tolist() == [0x7FFFFFFF, 0x3F800000, 0x7FFFFFFF]
    wide = np.array([0x7FF8000012345678, 0x4000000000000000], np.uint64).view(np.float64)
    assert canonical_nans(wide).view(np.uint64).tolist() == [0x7FF8000012345678, 0x4000000000000000]  # fp64:
    # its payload kept, as the H100 keeps it (``parity/fp64_nans_h100.json``)
    overflowing = np.array([3e38, 3e38], np.float32)  # a sum of inf: looked at again, left as it is
    assert canonical_nans(overflowing).tolist() == overflowing.tolist()
    assert np.array(canonical_nans(np.float32(np.nan))).view(np.uint32) == 0x7FFFFFFF


def test_a_nan_converted_to_fp8e5_is_the_h200_s_byte_in_both_roundings():
    """``parity/numerics_h200.json``: every float NaN converted to fp8e5 is 0x7f on the H200, rtne and
    rtz alike (ml_dtypes' rounding gave 0x7e); compared here byte for byte, NaNs included."""
    import json
    import os

    from parity import numerics

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "parity", "numerics_h200.json")) as handle:
        recorded = json.load(handle)["results"]
    names = [name for name in recorded if name.startswith("cast ") and "->fp8e5" in name
             and not name.startswith("cast fp8") and "out" in recorded[name]]  # fp64 -> fp8e5 is refused
    assert len(names) == 4  # bf16, fp16, fp32, and fp32 rounding toward zero
    cases = {case[0]: case for case in numerics.cases()}
    nans = 0
    for name in names:
        with kwshim.activate():
            got = numerics.run_case(cases[name], recorded[name]["in"], "cpu", numerics.KERNELS)
        want = recorded[name]["out"]
        for a, b in zip(want, got):
            if (a & 0x7F) > 0x7C:  # an fp8e5 NaN on the H200
                nans += 1
                assert b == a, (name, hex(a), hex(b))
    assert nans >= len(names)
