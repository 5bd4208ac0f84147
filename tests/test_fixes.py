"""``interpreter/fixes.py``: what the interpreter cannot run, filled while the switch is on (``~`` on
booleans, ``tl.sort``), and Triton exactly restored afterwards."""

import pytest
import torch
import triton
import triton.language as tl

import kwshim

from .kernels import needs_block_loads


@triton.jit
def invert_mask(x_ptr, out_ptr):
    offsets = tl.arange(0, 4)
    mask = tl.load(x_ptr + offsets) > 1
    tl.store(out_ptr + offsets, (~mask).to(tl.int32))


@needs_block_loads
def test_bitwise_not_of_a_boolean_works_under_the_switch_and_the_builder_is_restored():
    """3.0's interpreter: 'InterpreterBuilder' object has no attribute 'get_int1_ty' (multi_token_attention)."""
    from triton.runtime import interpreter

    from kwshim.interpreter.fixes import _builder_class

    builder = _builder_class(interpreter)
    try:
        interpreter._get_np_dtype(tl.int1)
    except (KeyError, AttributeError):
        pytest.skip("this release's interpreter has no int1 values at all (2.x)")
    before = dict(vars(builder)) if builder is not None else None
    x, out = torch.tensor([0.0, 1.0, 2.0, 3.0]), torch.zeros(4, dtype=torch.int32)
    with kwshim.activate():
        invert_mask[(1,)](x, out)
    assert out.tolist() == [1, 1, 0, 0]
    if builder is not None:
        assert dict(vars(builder)) == before


@triton.jit
def packed_sort(x_ptr, out_ptr, N: tl.constexpr):
    """Liger-Kernel's fused MoE router: sort (expert << 16 | position) keys of a 1-D block."""
    offsets = tl.arange(0, N)
    keys = (tl.load(x_ptr + offsets).to(tl.uint32) << 16) | offsets.to(tl.uint32)
    tl.store(out_ptr + offsets, (tl.sort(keys, 0) >> 16).to(tl.int32))


@triton.jit
def rows_descending(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    rows, cols = tl.arange(0, R)[:, None], tl.arange(0, C)[None, :]
    tl.store(out_ptr + rows * C + cols, tl.sort(tl.load(x_ptr + rows * C + cols), descending=True))


@needs_block_loads
def test_tl_sort_works_under_the_switch_and_is_restored():
    """3.0's interpreter: 'operands could not be broadcast together' on a 1-D block of 1024."""
    before = tl.sort
    keys, out = torch.randint(0, 8, (1024,), dtype=torch.int32), torch.zeros(1024, dtype=torch.int32)
    x, rows = torch.randn(4, 8), torch.zeros(4, 8)
    with kwshim.activate():
        try:
            packed_sort[(1,)](keys, out, 1024)
        except AttributeError as exc:  # 2.x: 'Builder' object has no attribute 'get_int32_ty'
            pytest.skip(f"this release's interpreter cannot cast to unsigned integers: {exc}")
        rows_descending[(1,)](x, rows, 4, 8)
    assert torch.equal(out, torch.sort(keys).values)
    assert torch.equal(rows, torch.sort(x, dim=1, descending=True).values)
    assert tl.sort is before


@triton.jit
def loop_variables(out_ptr, N: tl.constexpr):
    """flash-linear-attention's delta rule: ``for i_t in range(NT): i_t.to(tl.int64)``; compiled, the
    variable of a ``range`` loop is a tensor (int32 here), of a ``static_range`` loop a constexpr."""
    for i in range(N):
        tl.store(out_ptr + i, i.to(tl.int64) * 3 + (i.dtype == tl.int32))
    for j in tl.static_range(2):
        tl.store(out_ptr + N + j + tl.arange(0, 2 * (j + 1)) * 0, j + 10)


def test_a_range_loop_variable_is_a_tensor_under_the_switch_and_the_rewriter_is_restored():
    from triton.runtime import interpreter

    rewriter = getattr(interpreter, "FunctionRewriter", None)
    if rewriter is None:
        pytest.skip("this release's interpreter runs a kernel's source unrewritten (2.x, 3.0, 3.1): the gap stays")
    transformer, cache = rewriter.ast_transformer, vars(interpreter.InterpretedFunction)["rewritten_fn"]
    out = torch.zeros(6, dtype=torch.int64)
    with pytest.raises(Exception, match="'int' object has no attribute 'to'"):
        loop_variables[(1,)](out, 4)  # bare: the interpreter's loop variable is an int
    with kwshim.activate():
        loop_variables[(1,)](out, 4)
    assert out.tolist() == [1, 4, 7, 10, 10, 11]
    assert rewriter.ast_transformer is transformer
    assert vars(interpreter.InterpretedFunction)["rewritten_fn"] is cache
    with pytest.raises(Exception, match="'int' object has no attribute 'to'"):
        loop_variables[(1,)](out, 4)  # and bare again once the switch is off


@triton.jit
def strided_sum(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    """Liger's cross_entropy and jsd loop ``for i in range(0, n_cols, BLOCK_SIZE)`` on an argument."""
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n_cols, BLOCK):
        offsets = i + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + offsets, mask=offsets < n_cols, other=0.0)
    tl.store(out_ptr + tl.arange(0, BLOCK), total)  # no tl.sum: 2.3's interpreter cannot reduce to a scalar


@needs_block_loads
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_a_range_over_a_scalar_argument_takes_no_deprecated_conversion_under_the_switch(grid):
    """Up to 3.6 the interpreter takes ``int()`` of the argument's one-element array: NumPy 1.25-2.4
    warn, 2.5 refuses. Under the switch no release warns; afterwards the interpreter's own form is back."""
    import warnings

    from triton.runtime import interpreter

    before, index = vars(interpreter).get("_patch_lang_tensor"), vars(tl.core.tensor).get("__index__")
    x, out = torch.arange(10, dtype=torch.float32), torch.zeros(4)
    with kwshim.activate(grid=grid), warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        strided_sum[(1,)](x, out, 10, BLOCK=4)
    assert out.tolist() == [12.0, 15.0, 8.0, 10.0]  # 0+4+8, 1+5+9, 2+6, 3+7
    assert vars(interpreter).get("_patch_lang_tensor") is before
    assert vars(tl.core.tensor).get("__index__") is index


@needs_block_loads
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_a_builtin_named_by_a_global_of_the_library_s_own_runs_as_compiled_triton_resolves_it(grid):
    """fla's ``gather = tl.gather``: the interpreter patches ``triton.language``'s modules for a launch,
    not other names for their functions ("Did you forget to add @triton.jit?" bare)."""
    from .fixtures import language_aliases

    x, out = torch.tensor([-3.0, -0.5, 0.0, 2.0] * 4), torch.zeros(16)
    originals = (language_aliases.maximum, language_aliases.exp2)
    with kwshim.activate(grid=grid):
        language_aliases.exp2_of_magnitude[(1,)](x, out, BLOCK=16)
    assert torch.equal(out, torch.tensor([8.0, 2 ** 0.5, 1.0, 4.0] * 4))
    assert (language_aliases.maximum, language_aliases.exp2) == originals  # the launch's forwarders are gone
