"""A large block's ``x * y`` is computed when first read (``interpreter/deferred_products``): where
every use of it is a fused multiply-add (``x * y + z``, ``tl.sum(x * x)``), never. Every result keeps
the loop's bits."""

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from kwshim.interpreter import deferred_products

from .kernels import needs_block_loads
from .test_programs import _both, _same_bits, batching

ROWS, N = 256, 1024  # 262144 elements batched: above DEFERRED_FROM; one program's 1024 below it


@pytest.fixture
def made(monkeypatch):
    """The deferred products made, in order."""
    handles = []
    defer = deferred_products.deferred

    def recorded(*args):
        handles.append(defer(*args))
        return handles[-1]

    monkeypatch.setattr(deferred_products, "deferred", recorded)
    return handles


@triton.jit
def contracted_only(x_ptr, y_ptr, z_ptr, out_ptr, sums_ptr, N: tl.constexpr):
    """Two products, each used only by a contracted add: an fma, and a sum of squares."""
    pid = tl.program_id(0)
    offs = pid * N + tl.arange(0, N)
    x, y, z = tl.load(x_ptr + offs), tl.load(y_ptr + offs), tl.load(z_ptr + offs)
    tl.store(out_ptr + offs, x * y + z)
    tl.store(sums_ptr + pid, tl.sum(x * x, axis=0))


@triton.jit
def product_stored_too(x_ptr, y_ptr, out_ptr, product_ptr, N: tl.constexpr):
    """A product stored as well as contracted: its data is read."""
    pid = tl.program_id(0)
    offs = pid * N + tl.arange(0, N)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    product = x * y
    tl.store(product_ptr + offs, product)
    tl.store(out_ptr + offs, product - x)


def _operands():
    torch.manual_seed(0)
    scale = torch.tensor([1.0, 1e4, 1e-4])[torch.randint(0, 3, (ROWS, N))]  # magnitudes mixed: order shows
    return torch.randn(ROWS, N) * scale, torch.randn(ROWS, N), torch.randn(ROWS, N)


@batching
@needs_block_loads
def test_a_product_only_contracted_is_never_computed_and_keeps_the_loop_s_bits(made):
    x, y, z = _operands()
    looped, batched = _both(contracted_only, (ROWS,), lambda: (x, y, z, torch.empty(ROWS, N), torch.empty(ROWS)),
                            N=N)
    _same_bits(looped, batched)
    computed = [handle._data is not None for handle in made]  # one per product and batch (64 programs, then 192)
    assert len(computed) == 4 and not any(computed)
    twice_rounded = x * y + z  # torch rounds the product: the contraction shows somewhere
    assert not torch.equal(batched[3], twice_rounded)
    assert not torch.equal(batched[4], (x * x).sum(1))


@batching
@needs_block_loads
def test_a_product_also_stored_is_computed_once_with_the_loop_s_bits(made):
    x, y, _ = _operands()
    looped, batched = _both(product_stored_too, (ROWS,), lambda: (x, y, torch.empty(ROWS, N), torch.empty(ROWS, N)),
                            N=N)
    _same_bits(looped, batched)
    assert torch.equal(batched[3], x * y)
    assert len(made) == 2 and all(handle._data is not None for handle in made)


@batching
@needs_block_loads
def test_without_fp_fusion_no_product_is_deferred(made):
    x, y, z = _operands()
    looped, batched = _both(contracted_only, (ROWS,), lambda: (x, y, z, torch.empty(ROWS, N), torch.empty(ROWS)),
                            N=N, enable_fp_fusion=False)
    _same_bits(looped, batched)
    assert made == []
    assert torch.equal(batched[3], x * y + z)  # rounded twice, as the GPU does without fusion


def test_a_deferred_product_knows_its_shape_and_type_and_computes_once():
    import sys

    interpreter = sys.modules.get("triton.runtime.interpreter")
    if interpreter is None:
        pytest.skip("no interpreter module")
    lhs = interpreter.TensorHandle(np.arange(6, dtype=np.float32).reshape(2, 3), tl.float32)
    rhs = interpreter.TensorHandle(np.full((2, 1), 3, np.float32), tl.float32)
    calls = []

    def multiply():
        calls.append(1)
        return interpreter.TensorHandle(lhs.data * rhs.data, tl.float32)

    handle = deferred_products.deferred(multiply, lhs, rhs)
    assert deferred_products.shape(handle) == (2, 3) and deferred_products.element_type(handle) == np.float32
    assert calls == [] and deferred_products.made_as(handle) is interpreter.TensorHandle
    assert handle.data.tolist() == [[0, 3, 6], [9, 12, 15]] and handle.data is handle.data and calls == [1]
    assert deferred_products.made_as(lhs) is interpreter.TensorHandle
