"""A large fp32 block's element-wise arithmetic is computed when first read, in one pass
(``interpreter/deferred_arithmetic``); a product whose every use is a fused multiply-add (``x * y +
z``, ``tl.sum(x * x)``) never. Every result keeps the loop's bits."""

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from kwshim.arithmetic import compiled, deferred_arithmetic
from kwshim.batching import programs as grid_module

from .kernels import needs_block_loads
from .test_programs import _both, _same_bits, batching

ROWS, N = 256, 1024  # 262144 elements batched: above DEFERRED_FROM; one program's 1024 below it


@pytest.fixture
def made(monkeypatch):
    """The deferred products made, in order."""
    handles = []
    defer = deferred_arithmetic.deferred

    def recorded(operation, *operands, **keywords):
        made = defer(operation, *operands, **keywords)
        if operation == "mul":
            handles.append(made)
        return made

    monkeypatch.setattr(deferred_arithmetic, "deferred", recorded)
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
def test_without_fp_fusion_a_product_is_rounded_then_added_with_the_loop_s_bits():
    x, y, z = _operands()
    looped, batched = _both(contracted_only, (ROWS,), lambda: (x, y, z, torch.empty(ROWS, N), torch.empty(ROWS)),
                            N=N, enable_fp_fusion=False)
    _same_bits(looped, batched)
    assert torch.equal(batched[3], x * y + z)  # rounded twice, as the GPU does without fusion


@triton.jit
def swiglu(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    """Liger's swiglu forward: ``silu(a) * b``, a chain of element-wise operations around ``tl.exp``."""
    pid = tl.program_id(0)
    offs = pid * N + tl.arange(0, N)
    a, b = tl.load(a_ptr + offs), tl.load(b_ptr + offs)
    tl.store(out_ptr + offs, a * (1 / (1 + tl.exp(-a))) * b)


@triton.jit
def every_operation(x_ptr, y_ptr, z_ptr, out_ptr, N: tl.constexpr):
    """Each deferred operation and fma form, fed values that show rounding, inf, NaN and signed zeros."""
    pid = tl.program_id(0)
    offs = pid * N + tl.arange(0, N)
    x, y, z = tl.load(x_ptr + offs), tl.load(y_ptr + offs), tl.load(z_ptr + offs)
    r = (z - x * y) / (x - z) + (-(y * z)) - (x * z - y) * (1.5 - y)
    tl.store(out_ptr + offs, r / (z + 1e-30) - x * x * x)


def _same_bits_or_both_nan(looped, batched):
    """The loop's bits, but for the sign and payload of a NaN: those the builder's own NumPy
    operations leave differ between a program's block and a batch's (NumPy's loops keep one NaN
    operand or the other by the array's length, and its fma's compiled loop another than its own)."""
    for a, b in zip(looped, batched):
        nan = torch.isnan(a)
        assert torch.equal(nan, torch.isnan(b)) and torch.equal(a[~nan].view(torch.int32), b[~nan].view(torch.int32))


@batching
@needs_block_loads
def test_a_chain_of_operations_is_one_pass_with_the_bits_of_numpy_s_operations(monkeypatch):
    """Compiled as one ufunc per form, or without ``kwshim[fast]`` NumPy operation by operation: the
    same bits, NaN results included (a compiled result holding a NaN is computed again in NumPy),
    for every operation and fma form over values that round, overflow, divide by zero and carry
    NaN, inf and signed zeros; and the loop's bits but for NaN's signs."""
    if compiled.engine() != "numba":
        pytest.skip("numba is not installed")
    x, y, z = _operands()
    special = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-45, -1e38, 3e38])
    for t, shift in ((x, 0), (y, 3), (z, 5)):
        t[:, :8] = special.roll(shift)
    z[:, 8] = x[:, 8]  # x - z is 0: a division by zero
    looped, fast = _both(every_operation, (ROWS,), lambda: (x, y, z, torch.empty(ROWS, N)), N=N)
    with monkeypatch.context() as patch:
        patch.setattr(compiled, "engine", lambda: "numpy")
        _, in_numpy = _both(every_operation, (ROWS,), lambda: (x, y, z, torch.empty(ROWS, N)), N=N)
    _same_bits(in_numpy, fast)
    _same_bits_or_both_nan(looped, fast)
    assert torch.isnan(fast[3]).any() and torch.isinf(fast[3]).any()
    x, y, z = _operands()  # no NaN made: every expression compiled, none computed again in NumPy
    x[:, :4] = torch.tensor([0.0, -0.0, 1e-45, -1e-45])  # signed zeros and subnormals
    passes, compiled_pass = [], deferred_arithmetic._compiled_pass
    monkeypatch.setattr(deferred_arithmetic, "_compiled_pass", lambda e: passes.append(compiled_pass(e)) or passes[-1])
    looped, fast = _both(every_operation, (ROWS,), lambda: (x, y, z, torch.empty(ROWS, N)), N=N)
    _same_bits(looped, fast)
    a, b = _operands()[:2]
    looped, batched = _both(swiglu, (ROWS,), lambda: (a, b, torch.empty(ROWS, N)), N=N)
    _same_bits(looped, batched)
    assert passes and not any(nan for _, nan in passes)  # every chain compiled, none computed again


@triton.jit
def exponentials(x_ptr, y_ptr, out_ptr, powers_ptr, N: tl.constexpr):
    """Softmax's numerator, and a product's ``tl.exp2`` (where the release has it): each an
    expression through the ``ex2.approx`` model."""
    pid = tl.program_id(0)
    offs = pid * N + tl.arange(0, N)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.exp(x - tl.max(x, axis=0)) * y)
    if HAS_EXP2:
        tl.store(powers_ptr + offs, tl.exp2(y * 0.5 - x))


HAS_EXP2 = tl.constexpr(hasattr(tl, "exp2"))


@batching
@needs_block_loads
def test_exp_and_exp2_join_the_expression_and_keep_the_loop_s_bits(monkeypatch):
    """``tl.exp`` and ``tl.exp2`` of a large block are operations of its expression (one compiled
    loop, where numba is): the bits of NumPy's code and of the loop, over overflow, underflow to
    subnormals and zero, and infinities; a row holding a NaN, or the one fp32 tie of ``exp2``
    (``2 ** -150``), computes its batch's expression in NumPy."""
    torch.manual_seed(0)
    x, y = torch.randn(ROWS, N) * 40, torch.randn(ROWS, N) * 100
    x[0, :4] = torch.tensor([float("inf"), -float("inf"), 1e-45, -1e-45])
    x[1, :2] = torch.tensor([150.0, 149.5])  # exp2(-150): the tie; exp2(-149.5): subnormal, flushed
    y[1, :2] = torch.tensor([0.0, 0.0])
    passes, compiled_pass = [], deferred_arithmetic._compiled_pass

    def counted(expression):
        result, nan = compiled_pass(expression)
        passes.append((expression.tree[0], nan))
        return result, nan

    def launch():
        return _both(exponentials, (ROWS,), lambda: (x, y, torch.empty(ROWS, N), torch.empty(ROWS, N)), N=N)

    monkeypatch.setattr(deferred_arithmetic, "_compiled_pass", counted)
    looped, fast = launch()
    _same_bits(looped, fast)
    assert torch.isnan(fast[2][0, 0]) and (fast[2] == 0).any()  # row 0: inf - its max (inf) is NaN
    if HAS_EXP2:
        assert torch.isinf(fast[3]).any() and (fast[3] == 0).any() and (fast[3][1, :2] == 0).all()
    if compiled.engine() == "numba":
        assert ("mul", False) in passes and ("exp2" in str(passes)) == bool(HAS_EXP2)
        assert ("exp2", True) in passes if HAS_EXP2 else True  # the tie: NumPy's code computes that batch
    with monkeypatch.context() as patch:
        patch.setattr(compiled, "engine", lambda: "numpy")
        _, in_numpy = launch()
    _same_bits(in_numpy, fast)


@triton.jit
def divide(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * N + tl.arange(0, N)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, (x + 1) / (y * 2))


@batching
@needs_block_loads
def test_a_division_by_zero_in_a_compiled_expression_is_ieee_s_and_batched():
    """``x / 0`` is inf and ``0 / 0`` NaN in the compiled loop, as in NumPy; it raised Python's
    ``ZeroDivisionError`` there (numba's default error model), which sent the launch to the loop."""
    x, y, _ = _operands()
    y[3, :3] = 0.0
    x[3, 2] = -1.0  # (x + 1) / 0 = 0 / 0
    grid_module.forget(divide.fn)
    looped, batched = _both(divide, (ROWS,), lambda: (x, y, torch.empty(ROWS, N)), N=N)
    _same_bits_or_both_nan(looped, batched)
    assert torch.isinf(batched[2][3, :2]).all() and torch.isnan(batched[2][3, 2])
    assert grid_module.fallback_reasons().get(divide.fn.__qualname__) is None


def test_a_deferred_handle_knows_its_shape_and_type_and_computes_once():
    import sys

    interpreter = sys.modules.get("triton.runtime.interpreter")
    if interpreter is None:
        pytest.skip("no interpreter module")
    lhs = interpreter.TensorHandle(np.arange(2 * 2 ** 15, dtype=np.float32).reshape(2, -1), tl.float32)
    rhs = interpreter.TensorHandle(np.full((2, 1), 3, np.float32), tl.float32)
    assert deferred_arithmetic.chainable(lhs, rhs) and not deferred_arithmetic.chainable(rhs)
    handle = deferred_arithmetic.deferred("mul", lhs, rhs, scalar=tl.float32, product=True)
    assert deferred_arithmetic.shape(handle) == (2, 2 ** 15) and deferred_arithmetic.element_type(handle) == np.float32
    assert handle._data is None and deferred_arithmetic.made_as(handle) is interpreter.TensorHandle
    assert deferred_arithmetic.factors(handle) == (lhs, rhs)
    added = deferred_arithmetic.deferred("fma", lhs, ("neg", rhs), handle, scalar=tl.float32)
    assert handle._data is None and added._data is None  # an expression of the product's expression
    assert np.array_equal(handle.data, lhs.data * rhs.data) and handle.data is handle.data
    assert np.array_equal(added.data, lhs.data * -rhs.data + lhs.data * rhs.data)  # exact: x * -3 + x * 3 = 0
    assert deferred_arithmetic.made_as(lhs) is interpreter.TensorHandle
