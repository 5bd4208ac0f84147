"""``interpreter/inline_ptx.py``: inline PTX of element-wise fp32 arithmetic runs under the switch
(flash-linear-attention's ``softplus``), batched as in the loop; other assembly is refused as the
interpreter refuses it."""

import json
import os

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import kwshim

from .kernels import needs_block_loads
from .test_programs import batching

needs_assembly = pytest.mark.skipif(
    not hasattr(getattr(__import__("triton.runtime.interpreter").runtime.interpreter, "InterpreterBuilder", None),
                "create_inline_asm"), reason="this interpreter's builder has no inline assembly at all")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(ROOT, "parity", "inline_ptx_h100.json")


def _softplus_steps(x):
    """fla's softplus, step by step as the PTX runs it: ``ex2.approx`` and ``lg2.approx`` as fp64
    rounded to fp32."""
    product = (x * np.float32(1.4426950408889634)).astype(np.float32)
    power = np.exp2(product.astype(np.float64)).astype(np.float32)
    with np.errstate(divide="ignore"):
        logarithm = np.log2((power + np.float32(1)).astype(np.float64)).astype(np.float32)
    return np.where(x > 20, x, logarithm * np.float32(0.6931471805599453)).astype(np.float32)


@needs_assembly
@needs_block_loads
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_fla_s_softplus_runs_step_by_step_as_its_ptx_says(grid):
    from parity import inline_ptx

    x = torch.tensor(np.linspace(-40, 30, 4096, dtype=np.float32))
    out = torch.zeros(4096)
    with kwshim.activate(grid=grid):
        inline_ptx.inline_ptx[(1,)](x, out, ASM=inline_ptx.SOFTPLUS, N=4096)
    assert out.view(torch.int32).tolist() == torch.from_numpy(_softplus_steps(x.numpy())).view(torch.int32).tolist()


@triton.jit
def rows_moved(x_ptr, out_ptr, ASM: tl.constexpr, N: tl.constexpr):
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    y = tl.inline_asm_elementwise(asm=ASM, constraints="=r,r", args=[tl.load(x_ptr + offsets)], dtype=tl.float32,
                                  is_pure=True, pack=1)
    tl.store(out_ptr + offsets, y)


@needs_assembly
@batching
@needs_block_loads
def test_a_batch_of_programs_runs_element_wise_assembly_and_falls_back_for_other_assembly():
    from kwshim.batching import programs

    x, out = torch.randn(8, 16), torch.zeros(8, 16)
    with kwshim.activate(grid="batched"):
        rows_moved[(8,)](x, out, ASM="mul.rn.f32 $0, $1, 2.0;", N=16)
        assert torch.equal(out, x * 2)
        assert programs.fallback_reasons().get(rows_moved.fn.__qualname__) is None
        x[0, :2] = float("nan")  # setp's ne is ordered: false for NaN, where NumPy's != is true
        rows_moved[(8,)](x, out, ASM="{ .reg .pred p; setp.ne.f32 p, $1, 0.5; @p mov.f32 $0, 1.0; "
                                     "@!p mov.f32 $0, 2.0; }", N=16)
        assert out[0, :2].tolist() == [2.0, 2.0] and out[0, 2:].eq(1.0).all() and out[1:].eq(1.0).all()
        with pytest.raises(Exception, match="inline_asm not supported"):
            rows_moved[(8,)](x, out, ASM="cvt.rni.f32.f32 $0, $1;", N=16)  # not run here: refused, as before
        assert programs.fallback_reasons().get(rows_moved.fn.__qualname__) == "inline assembly"


@needs_assembly
@needs_block_loads
def test_the_inline_ptx_gives_the_gpu_s_bits_but_for_its_approximations():
    """Measured on an H100: ``mov`` and the predicated ``mov`` branch are the GPU's bits;
    ``ex2.approx`` within 2 ulps; the rest within ``lg2.approx``'s bound as PTX states it, 2**-22
    absolute where the result is below 1 (the GPU's ``lg2`` of ``1 + 2**-23`` is 2.79e-7, not
    1.72e-7), relative above."""
    from parity import inline_ptx

    with open(RECORD) as handle:
        gpu = json.load(handle)["results"]
    with kwshim.activate(grid="sequential"):
        here = inline_ptx.results("cpu")
    assert here["mov"] == gpu["mov"]
    x = inline_ptx.inputs()
    ours, theirs = np.array(here["ex2"], np.int32), np.array(gpu["ex2"], np.int32)  # 48% the same bits
    number = ~np.isnan(theirs.view(np.float32))
    assert np.array_equal(np.isnan(ours.view(np.float32)), ~number)
    assert (np.abs(ours.astype(np.int64) - theirs)[number] <= 2).all()  # positive: ulps are the bits apart
    for name, threshold in (("softplus", 20), ("softplus2", 15), ("lg2", np.inf)):
        ours = np.array(here[name], np.int32)
        theirs = np.array(gpu[name], np.int32)
        moved = x > threshold
        assert np.array_equal(ours[moved], theirs[moved]), name
        ours, theirs = ours.view(np.float32), theirs.view(np.float32)
        assert np.array_equal(np.isnan(ours), np.isnan(theirs)), name
        bound = 2.0 ** -22 * np.maximum(1, np.abs(theirs.astype(np.float64)))
        close = (ours == theirs) | (np.abs(ours.astype(np.float64) - theirs) <= bound) | np.isnan(theirs)
        assert close.all(), (name, x[~close][:5], ours[~close][:5], theirs[~close][:5])
