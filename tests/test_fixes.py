"""``interpreter/fixes.py``: what the interpreter cannot run, filled while the switch is on (``~`` on
booleans, ``tl.sort``), and Triton exactly restored afterwards."""

import pytest
import torch
import triton
import triton.language as tl

import kwshim

from .fixtures import core_helper as core_helper_module
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


@triton.jit
def _scaled(x, factor):
    return x * factor


@triton.jit
def helpers_in_a_loop(x_ptr, out_ptr, N: tl.constexpr, STEPS: tl.constexpr):
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    x = core_helper_module.magnitude(tl.load(x_ptr + offsets))
    for _ in tl.static_range(STEPS):
        x = _scaled(x, 2.0)
    tl.store(out_ptr + offsets, x)


@needs_block_loads
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_a_helper_patches_the_language_again_only_for_a_module_the_launch_s_patch_left_out(grid, monkeypatch):
    """A jitted helper's call made the interpreter patch every builtin again (a millisecond each): not
    where the launch's patch in place covers the helper's modules (3.6 on, where a launch's patch is
    undone at its end). A helper naming ``triton.language.core`` alone is patched once."""
    import triton.runtime.interpreter as interpreter

    made, scoped = [], []
    original = vars(interpreter).get("_patch_lang")
    if original is None:
        pytest.skip("this release's interpreter patches triton.language otherwise (2.x)")

    def counted(fn):
        made.append(fn.__name__)
        scope = original(fn)
        scoped.append(callable(getattr(scope, "restore", None)))
        return scope

    monkeypatch.setattr(interpreter, "_patch_lang", counted)
    arange = tl.arange
    x, out = torch.randn(3 * 16), torch.zeros(3 * 16)
    with kwshim.activate(grid=grid):
        helpers_in_a_loop[(3,)](x, out, N=16, STEPS=4)
    assert torch.equal(out, torch.where(x > 0, x, -x) * 16)
    if scoped[0]:
        assert made == ["helpers_in_a_loop", "magnitude"]
        assert tl.arange is arange  # the launch's patch undone
    else:  # 3.0-3.5: every call patches, as the interpreter does
        assert made.count("_scaled") == 4 * (3 if grid == "sequential" else 1)


@triton.jit
def row_sum(x_ptr, out_ptr, N: tl.constexpr):
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + tl.arange(0, N)), axis=0))


@needs_block_loads
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_a_helper_s_patch_of_another_module_is_undone_with_the_launch_s(grid):
    """``tl.sum``'s module names ``triton.language.core``, which a kernel naming ``tl`` alone leaves out
    of its launch's patch: the helper's patch of it was never undone (the interpreter keeps no scope
    of a helper's), so ``x + tl.arange(...)`` in a kernel compiled after it met the interpreter's
    builtins ("'block_argument' object has no attribute 'dtype'")."""
    from triton.runtime import interpreter

    if not hasattr(interpreter, "_LangPatchScope"):
        pytest.skip("this release's interpreter undoes no launch's patch of triton.language (3.0-3.5)")
    x, out = torch.arange(16.0), torch.zeros(1)
    with kwshim.activate(grid=grid):
        before = dict(vars(tl.core))  # the switch's own patches in place (tl.map_elementwise)
        row_sum[(1,)](x, out, N=16)
        assert [name for name, value in before.items() if vars(tl.core).get(name) is not value] == []
    assert out.item() == 120.0


def _closing_kernel(scale):
    """A kernel that closes over a jitted helper and a number, as Triton's own tests define kernels."""

    @triton.jit
    def scaled(x):
        return x * scale

    @triton.jit
    def kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, scaled(tl.load(x_ptr + offsets)))

    return kernel


@needs_block_loads
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_a_kernel_reads_the_names_it_closes_over_as_compiled_triton_does(grid):
    """From 3.2 the interpreter compiled a kernel's source again with its globals only: ``name
    'scaled' is not defined``. Each closure keeps its own cells."""
    from triton.runtime import interpreter

    x = torch.arange(8.0)
    outs = [torch.zeros(8), torch.zeros(8)]
    if hasattr(interpreter, "FunctionRewriter"):
        with pytest.raises(Exception, match="name 'scaled' is not defined"):
            _closing_kernel(2.0)[(2,)](x, outs[0], BLOCK=4)  # bare
    with kwshim.activate(grid=grid):
        for scale, out in zip((3.0, 5.0), outs):
            _closing_kernel(scale)[(2,)](x, out, BLOCK=4)
    assert outs[0].tolist() == (x * 3).tolist() and outs[1].tolist() == (x * 5).tolist()


def _mapping_kernels():
    @triton.jit
    def compare(x, y):
        if x < y:
            return -1
        elif x == y:
            return 0
        else:
            return 1

    @triton.jit
    def divided(a0, a1, b0, b1):
        return a0 // b0, a1 // b1, a0 % b0, a1 % b1

    @triton.jit
    def kernel(x_ptr, y_ptr, sign_ptr, quotient_ptr, rest_ptr, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x, y = tl.load(x_ptr + offsets), tl.load(y_ptr + offsets)
        tl.store(sign_ptr + offsets, tl.map_elementwise(compare, x, y))
        quotient, rest = tl.map_elementwise(divided, x, y, pack=2)
        tl.store(quotient_ptr + offsets, quotient)
        tl.store(rest_ptr + offsets, rest)

    return kernel


@needs_block_loads
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_map_elementwise_calls_its_scalar_function_per_element_under_the_switch(grid):
    """Triton's ``test_map_elementwise*`` (3.5 on): bare, ``'InterpreterBuilder' object has no
    attribute 'new_block'``; a batch of programs runs it as the loop."""
    if not hasattr(tl, "map_elementwise"):
        pytest.skip("this release has no tl.map_elementwise")
    kernel = _mapping_kernels()
    generator = torch.Generator().manual_seed(0)
    x = torch.randint(-50, 50, (128,), generator=generator, dtype=torch.int32)
    y = torch.randint(1, 9, (128,), generator=generator, dtype=torch.int32)
    y[3] = x[3] if x[3] > 0 else y[3]
    sign, quotient, rest = (torch.zeros(128, dtype=torch.int32) for _ in range(3))
    with pytest.raises(Exception, match="name 'compare' is not defined|new_block"):
        kernel[(2,)](x, y, sign, quotient, rest, BLOCK=64, num_warps=1)  # bare: the closure, then the region
    before = (tl.map_elementwise, tl.core.map_elementwise)  # up to 3.5 a launch leaves its own patch
    with kwshim.activate(grid=grid):
        kernel[(2,)](x, y, sign, quotient, rest, BLOCK=64, num_warps=1)  # 2 elements a thread
    assert sign.tolist() == ((x > y).int() - (x < y).int()).tolist()
    # the GPU's integer division truncates toward zero, its remainder takes the dividend's sign
    assert quotient.tolist() == torch.div(x, y, rounding_mode="trunc").tolist()
    assert rest.tolist() == torch.fmod(x, y).tolist()
    assert (tl.map_elementwise, tl.core.map_elementwise) == before


@needs_block_loads
def test_map_elementwise_of_a_function_returning_a_tuple_gives_a_tuple_as_compiled_triton_does():
    """A scalar function returning a tuple gives a tuple, one tensor for each group of ``pack``
    results, even a tuple of one (compiled Triton unpacks only a single returned tensor); storing
    it whole is the front end's "cannot convert" there, and was a silent store here."""
    if not hasattr(tl, "map_elementwise"):
        pytest.skip("this release has no tl.map_elementwise")

    @triton.jit
    def swapped(x0, x1):
        return x1, x0

    @triton.jit
    def kernel(x_ptr, out_ptr, WHOLE: tl.constexpr):
        offsets = tl.arange(0, 256)
        y = tl.map_elementwise(swapped, tl.load(x_ptr + offsets), pack=2)
        tl.store(out_ptr + offsets, y if WHOLE else y[0])

    x = torch.arange(256, dtype=torch.int32)
    out = torch.zeros(256, dtype=torch.int32)
    with kwshim.activate():
        kernel[(1,)](x, out, WHOLE=False)
        assert out.tolist()[:8] == [1, 0, 3, 2, 5, 4, 7, 6] and out.tolist() == (x ^ 1).tolist()
        with pytest.raises(Exception, match="cannot convert"):
            kernel[(1,)](x, out, WHOLE=True)
        with pytest.raises(Exception, match="cannot lower tl.map_elementwise with pack=2 over 256 elements on 8 warps"):
            kernel[(1,)](x, out, WHOLE=False, num_warps=8)  # one element a thread: the H200 refuses it


def _scaled_dot_kernel():
    @triton.jit
    def kernel(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
        m, n = tl.arange(0, M), tl.arange(0, N)
        a = tl.load(a_ptr + m[:, None] * (K // 2) + tl.arange(0, K // 2)[None, :])  # e2m1, two a byte
        b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + n[None, :])  # e4m3 as bytes
        a_scale = tl.load(a_scale_ptr + m[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
        b_scale = tl.load(b_scale_ptr + n[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
        tl.store(out_ptr + m[:, None] * N + n[None, :], tl.dot_scaled(a, a_scale, "e2m1", b, b_scale, "e4m3"))

    return kernel


@needs_block_loads
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_dot_scaled_runs_where_the_interpreter_has_none(grid):
    """``tl.dot_scaled`` of e2m1 by e4m3 with e8m0 group scales (Triton's ``test_scaled_dot``): bare
    3.3-3.7 stop at the front end ("'str' object has no attribute 'value'") or at the builder; under
    the switch the exact values are multiplied as the tensor cores multiply them."""
    from kwshim.compat.interpreter import dot_scaled_reads_constexpr_formats

    if not hasattr(tl, "dot_scaled") or not dot_scaled_reads_constexpr_formats():
        pytest.skip("this release's tl.dot_scaled is not the 3.3-3.7 front end")
    m, n, k = 16, 16, 64
    generator = torch.Generator().manual_seed(0)
    a = torch.randint(0, 256, (m, k // 2), generator=generator, dtype=torch.uint8)
    b_values = torch.randint(-8, 9, (k, n), generator=generator).float() / 4  # exact in e4m3
    b = b_values.to(torch.float8_e4m3fn).view(torch.uint8)
    a_scale = torch.randint(124, 131, (m, k // 32), generator=generator, dtype=torch.uint8)
    b_scale = torch.randint(124, 131, (n, k // 32), generator=generator, dtype=torch.uint8)
    b_scale[3, 1] = 255  # NaN, as Triton's upcast makes it
    out = torch.zeros(m, n)
    kernel = _scaled_dot_kernel()
    with pytest.raises(Exception, match="has no attribute 'value'|create_dot_scaled"):
        kernel[(1,)](a, a_scale, b, b_scale, out, M=m, N=n, K=k)
    with kwshim.activate(grid=grid):
        kernel[(1,)](a, a_scale, b, b_scale, out, M=m, N=n, K=k)
    magnitudes = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
    nibbles = torch.stack([a & 0x0F, a >> 4], dim=-1).reshape(m, k).long()
    a_values = torch.where(nibbles & 8 != 0, -magnitudes[nibbles & 7], magnitudes[nibbles & 7])
    a_values = a_values * torch.exp2(a_scale.float() - 127).repeat_interleave(32, dim=1)
    b_values = b_values * torch.exp2(b_scale.float() - 127).repeat_interleave(32, dim=1).T
    expected = (a_values.double() @ b_values.double()).float()  # every product and sum exact here
    expected[:, 3] = float("nan")
    assert torch.equal(out.isnan(), expected.isnan()) and torch.equal(out.nan_to_num(), expected.nan_to_num())


@triton.jit
def scaled_by(x_ptr, out_ptr, scale, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, (scale * x).to(tl.float32))
    tl.store(out_ptr + BLOCK + offsets, (scale > x).to(tl.float32))
    tl.store(out_ptr + 2 * BLOCK + offsets, (scale - x).to(tl.float32))


@needs_block_loads
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_a_constexpr_s_arithmetic_with_a_tensor_gives_a_tensor_as_compiled_triton_does(grid):
    """An int argument equal to 1 is a constexpr, as compiled Triton specialises it: ``scale * x`` is
    the tensor's ``__rmul__`` there, where the interpreter's ``constexpr.__mul__`` wrapped the tensor
    (``'constexpr' object has no attribute 'dtype'`` in ``tl.sum``)."""
    before = dict(vars(tl.core.constexpr))
    x, out = torch.tensor([0.5, 2.0, -1.0, 3.0]), torch.zeros(12)
    with kwshim.activate(grid=grid):
        scaled_by[(1,)](x, out, 1, BLOCK=4)
        assert out.tolist() == [0.5, 2.0, -1.0, 3.0, 1.0, 0.0, 1.0, 0.0, 0.5, -1.0, 2.0, -2.0]
        scaled_by[(1,)](x, out, 2, BLOCK=4)  # an argument, not a constexpr: the same arithmetic
        assert out.tolist() == [1.0, 4.0, -2.0, 6.0, 1.0, 0.0, 1.0, 0.0, 1.5, 0.0, 3.0, -1.0]
    assert dict(vars(tl.core.constexpr)) == before


@triton.jit
def _dtype_min(dtype):
    if dtype.value == tl.float32:  # FlagGems' get_dtype_min reads the constexpr's value
        return -3.0e38
    else:
        return -1.0


@triton.jit
def _is_half(dtype):
    return dtype.is_fp16()  # compiled Triton's code generator reads a constexpr's attributes through


@triton.jit
def _clamped_below(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(out_ptr + tl.arange(0, 4), tl.maximum(x, _dtype_min(x.type.element_ty)) + _is_half(x.dtype))


@triton.jit
def _bound_of(dtype):
    if dtype is tl.int64:  # FlagGems' randperm: identity, of the values inside constexprs in compiled Triton
        return 64
    elif dtype is not tl.int32:
        return 0
    else:
        return 32


@triton.jit
def _bounds(x_ptr, y_ptr, out_ptr):
    tl.store(out_ptr, _bound_of(x_ptr.dtype.element_ty))
    tl.store(out_ptr + 1, _bound_of(y_ptr.dtype.element_ty))


def test_is_compares_the_dtype_a_jitted_helper_is_handed_as_the_compiler_compares_it():
    """A helper handed a ``tl.dtype`` gets a constexpr (as compiled Triton hands it), and ``dtype is
    tl.int64`` compares the dtype inside, as the code generator unwraps both sides: FlagGems'
    ``randperm`` raised its own "Unknown dtype" here, and passes on the H100."""
    if not kwshim.compat.module_wide_builder():
        pytest.skip("2.x: its interpreter runs a kernel's Python as Python (not rewritten)")
    out = torch.zeros(2, dtype=torch.int32)
    with kwshim.activate():
        _bounds[(1,)](torch.zeros(1, dtype=torch.int64), torch.zeros(1, dtype=torch.int32), out)
    assert out.tolist() == [64, 32]


@needs_block_loads
@pytest.mark.skipif(not kwshim.compat.module_wide_builder(),
                    reason="2.x: its interpreter takes no Python float into tl.maximum")
def test_a_dtype_reaches_a_jitted_helper_as_the_compiler_passes_it():
    x, out = torch.tensor([float("-inf"), 1.0, 2.0, -5.0]), torch.zeros(4)
    with kwshim.activate():
        _clamped_below[(1,)](x, out)
    assert out.tolist() == [torch.tensor(-3.0e38).item(), 1.0, 2.0, -5.0]
