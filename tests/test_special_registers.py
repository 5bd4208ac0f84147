"""``interpreter/special_registers.py``: ``tl.extra.cuda``'s ``globaltimer``, ``smid``, ``num_warps`` and
``num_threads`` in an interpreted kernel answer as on the H200 (each raises in the bare interpreter),
and the modules are exactly restored when the switch goes off."""

import pytest
import torch
import triton
import triton.language as tl

import kwshim

cuda = getattr(getattr(tl, "extra", None), "cuda", None)
needs_cuda_utilities = pytest.mark.skipif(not hasattr(cuda, "num_warps"),
                                          reason="this Triton has no tl.extra.cuda.num_warps")
timer = getattr(cuda, "globaltimer", None)  # bound by name, as `from triton.language.extra.cuda import globaltimer`


@triton.jit
def registers(out_ptr, duration):
    start = tl.extra.cuda.globaltimer()
    while timer() - start < duration:  # a sleep kernel's spin: it ends only if the clock rises
        pass
    row = out_ptr + 4 * tl.program_id(0)
    tl.store(row, tl.extra.cuda.smid())
    tl.store(row + 1, tl.extra.cuda.num_threads())
    tl.store(row + 2, tl.extra.cuda.num_warps())
    tl.store(row + 3, (tl.extra.cuda.globaltimer() - start).to(tl.int32))


@needs_cuda_utilities
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_the_special_registers_answer_as_the_h200_s(grid):
    originals = {name: getattr(cuda, name) for name in ("globaltimer", "smid", "num_warps", "num_threads")}
    out = torch.zeros(140, 4, dtype=torch.int32)
    with kwshim.activate(grid=grid):
        registers[(140,)](out, 200_000, num_warps=8)
        assert torch.equal(out[:, 0], torch.arange(140, dtype=torch.int32) % 132)  # each program's SM, in range
        assert out[:, 1].eq(256).all() and out[:, 2].eq(8).all()
        assert out[:, 3].min() >= 200_000  # nanoseconds
        registers[(2,)](out, 0)
        assert out[:2, 1].eq(128).all() and out[:2, 2].eq(4).all()  # Triton's default: 4 warps
    assert {name: getattr(cuda, name) for name in originals} == originals


@needs_cuda_utilities
def test_other_inline_assembly_still_fails_as_the_interpreter_s():
    @triton.jit
    def clock(out_ptr):
        tl.store(out_ptr, tl.inline_asm_elementwise("mov.u32 $0, %clock;", "=r", [], dtype=tl.int32, is_pure=False,
                                                    pack=1))

    with kwshim.activate(grid="sequential"), pytest.raises(Exception, match="inline_asm not supported"):
        clock[(1,)](torch.zeros(1, dtype=torch.int32))
