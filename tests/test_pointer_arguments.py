"""``interpreter/pointer_arguments.py``: an object with ``data_ptr()`` and ``dtype`` that is no tensor
(FlagGems' ``StridedBuffer``) is a pointer argument, as compiled Triton takes it."""

import pytest
import torch
import triton
import triton.language as tl

import kwshim

from .kernels import needs_block_loads


class StridedBuffer:
    """FlagGems' view of a tensor's memory at an offset, with a shape and strides of its own."""

    def __init__(self, base, offset=0):
        self._base, self.offset = base, offset
        self.dtype, self.device, self.shape = base.dtype, base.device, tuple(base.shape)

    def stride(self):
        return self._base.stride()

    def data_ptr(self):
        return self._base.data_ptr() + self.offset * self._base.element_size()


@triton.jit
def doubled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)


def _copies_apart():
    from triton.runtime import interpreter

    return hasattr(interpreter.GridExecutor, "_init_args_hst")


@needs_block_loads
@pytest.mark.skipif(not _copies_apart(), reason="2.x copies the arguments inside its grid call: not reached")
@pytest.mark.parametrize("device", [None, "cuda"])
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_an_object_with_data_ptr_and_dtype_is_a_pointer_argument(device, grid):
    with kwshim.activate(device=device, grid=grid):
        x = torch.arange(8.0, device="cuda" if device else "cpu")
        out = torch.zeros(8, device=x.device)
        doubled[(2,)](StridedBuffer(x, offset=2), StridedBuffer(out), 6, BLOCK=8)  # the offset as its data_ptr says
        assert out.cpu().tolist() == [4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 0.0, 0.0]
        as_keyword = torch.zeros(8, device=x.device)
        doubled[(1,)](x, out_ptr=StridedBuffer(as_keyword, offset=1), n=3, BLOCK=8)
        assert as_keyword.cpu().tolist() == [0.0, 0.0, 2.0, 4.0, 0.0, 0.0, 0.0, 0.0]


def test_the_interpreter_copies_are_as_they_were_after_the_switch():
    from triton.runtime import interpreter

    executor = interpreter.GridExecutor
    before = (vars(executor).get("_init_args_hst"), vars(executor).get("_restore_args_dev"))
    with kwshim.activate():
        pass
    assert (vars(executor).get("_init_args_hst"), vars(executor).get("_restore_args_dev")) == before
