"""``numerics="gpu"`` (``interpreter/gpu_arithmetic``): fused multiply-adds where compiled Triton
contracts, and tensor-core dots; ``numerics="ieee"`` keeps each operation exactly rounded. Each case
is built so that the two answers differ, and the GPU's is the H200's (the table's ``mul_add`` and
``dot`` rows, bit for bit)."""

import os

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim import kwsafe


def _builder_arithmetic():
    from kwshim.interpreter.gpu_builder import entries

    return bool(entries())


pytestmark = pytest.mark.skipif(not _builder_arithmetic(), reason="2.x: no module-wide builder to compute with")

ONE_UP = 1 + 2.0 ** -23  #: the fp32 after 1.0
X = 1 + 2.0 ** -12  #: X * X = 1 + 2**-11 + 2**-24: a tie fp32 rounds to even, 1 + 2**-11


@kwsafe
@triton.jit
def multiply_add(x_ptr, y_ptr, z_ptr, out_ptr, N: tl.constexpr, FORM: tl.constexpr):
    i = tl.arange(0, N)
    x, y, z = tl.load(x_ptr + i), tl.load(y_ptr + i), tl.load(z_ptr + i)
    if FORM == "x*y+z":
        r = x * y + z
    elif FORM == "z+x*y":
        r = z + x * y
    elif FORM == "x*y-z":
        r = x * y - z
    elif FORM == "z-x*y":
        r = z - x * y
    else:
        r = tl.fma(x, y, z)
    tl.store(out_ptr + i, r)


def _multiply_add(form, x, y, z, **options):
    tensors = [torch.tensor([v], dtype=torch.float32) for v in (x, y, z)]
    out = torch.zeros(1)
    multiply_add[(1,)](*tensors, out, N=1, FORM=form, **options)
    return out.item()


@pytest.mark.parametrize("form, z, fused, unfused", [
    ("x*y+z", -1.0, 2.0 ** -11 + 2.0 ** -24, 2.0 ** -11),
    ("z+x*y", -1.0, 2.0 ** -11 + 2.0 ** -24, 2.0 ** -11),
    ("x*y-z", 1.0, 2.0 ** -11 + 2.0 ** -24, 2.0 ** -11),
    ("z-x*y", 1.0, -(2.0 ** -11 + 2.0 ** -24), -(2.0 ** -11)),
])
def test_a_product_added_or_subtracted_is_one_fma_unless_fusion_is_off(form, z, fused, unfused):
    assert _multiply_add(form, X, X, z) == fused  # @kwsafe alone: numerics="gpu"
    assert _multiply_add(form, X, X, z, enable_fp_fusion=False) == unfused  # compiled's launch option
    assert _multiply_add(form, X, X, z, enable_fp_fusion=True) == fused
    with kwshim.activate(numerics="ieee"):
        assert _multiply_add(form, X, X, z) == unfused
    with kwshim.activate():
        assert _multiply_add(form, X, X, z) == fused


def test_fusion_follows_the_backend_s_default_and_its_environment(monkeypatch):
    """3.6+ read ``TRITON_DEFAULT_FP_FUSION`` (3.9 warns that its default changes in 3.10); the
    backend's own ``parse_options`` says whether it contracts, and kwshim follows it."""
    from kwshim.launch import options

    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    backend_fuses = options.backends()["cuda"].check({}).enable_fp_fusion
    assert _multiply_add("x*y+z", X, X, -1.0) == (2.0 ** -11 + 2.0 ** -24 if backend_fuses else 2.0 ** -11)
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    assert _multiply_add("x*y+z", X, X, -1.0) == 2.0 ** -11 + 2.0 ** -24


@pytest.mark.parametrize("numerics", ["gpu", "ieee"])
def test_tl_fma_rounds_once_in_either_numerics(numerics):
    """fp32 ``fma(24929, 673 * 2**-24, 2**-80)``: rounded twice it is 1.0, once 1.0000001."""
    with kwshim.activate(numerics=numerics):
        assert _multiply_add("fma", 24929.0, 673 * 2.0 ** -24, 2.0 ** -80) == ONE_UP


@kwsafe
@triton.jit
def square_dot(a_ptr, b_ptr, out_ptr, K: tl.constexpr, PRECISION: tl.constexpr, OUT: tl.constexpr):
    rows = tl.arange(0, 16)[:, None]
    inner = tl.arange(0, K)
    a = tl.load(a_ptr + rows * K + inner[None, :])
    b = tl.load(b_ptr + inner[:, None] * 16 + tl.arange(0, 16)[None, :])
    if PRECISION == "default":
        r = tl.dot(a, b, out_dtype=OUT)
    else:
        r = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT)
    tl.store(out_ptr + rows * 16 + tl.arange(0, 16)[None, :], r.to(tl.float32))


def _dot(a_column, b_row, precision="default", dtype=torch.float32, out=tl.float32):
    """Every row of A is ``a_column`` (K long), every column of B is ``b_row``: each element of the
    result is the same K-term dot product."""
    k = len(a_column)
    a = torch.tensor(a_column, dtype=dtype).repeat(16, 1)
    b = torch.tensor(b_row, dtype=dtype)[:, None].repeat(1, 16)
    result = torch.zeros(16, 16)
    square_dot[(1,)](a, b, result, K=k, PRECISION=precision, OUT=out)
    assert (result == result[0, 0]).all()
    return result[0, 0].item()


def test_an_fp32_dot_is_tf32_by_default_and_fp32_fmas_for_ieee():
    """TF32 keeps 10 mantissa bits, truncating (the H200: 1024 of 1024 the same): 1 + 2**-20 is 1."""
    a, b = [1 + 2.0 ** -20] * 16, [1.0] * 16
    assert _dot(a, b) == 16.0
    assert _dot(a, b, "tf32") == 16.0
    assert _dot(a, b, "ieee") == 16 + 2.0 ** -16
    with kwshim.activate(numerics="ieee"):
        assert _dot(a, b) == 16 + 2.0 ** -16


def test_the_default_precision_follows_triton_f32_default(monkeypatch):
    """``TRITON_F32_DEFAULT`` (read by each release's own ``tl.dot``, 3.0 on) sets the default."""
    a, b = [1 + 2.0 ** -20] * 16, [1.0] * 16
    monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee")
    assert _dot(a, b) == 16 + 2.0 ** -16
    monkeypatch.setenv("TRITON_F32_DEFAULT", "tf32")
    assert _dot(a, b) == 16.0


def test_an_ieee_dot_is_a_chain_of_fmas_in_order():
    """-1, then 1 + 2**-12 squared: 2**-24 is lost when the product is rounded first, kept by the fma."""
    a = [-1.0, X] + [0.0] * 14
    b = [1.0, X] + [0.0] * 14
    assert _dot(a, b, "ieee") == 2.0 ** -11 + 2.0 ** -24


def test_an_fp16_accumulator_is_rounded_once_per_16_steps_of_k():
    """Steps of 16: 1 + 13 * 2**-11 is a tie, rounded to even (1 + 6 * 2**-10) before the second step's
    2**-20 can break it upward; rounded once it is 1 + 7 * 2**-10 (the H200's rows: 1024 of 1024)."""
    a = [1.0] * 32
    b = [1.0] + [2.0 ** -11] * 13 + [0.0] * 2 + [2.0 ** -20] + [0.0] * 15
    assert _dot(a, b, dtype=torch.float16, out=tl.float16) == 1 + 6 * 2.0 ** -10
    with kwshim.activate(numerics="ieee"):
        assert _dot(a, b, dtype=torch.float16, out=tl.float16) == 1 + 7 * 2.0 ** -10


def test_ieee_numerics_are_restored_to_gpu_when_the_switch_goes_off():
    with kwshim.activate(numerics="ieee"):
        assert _multiply_add("x*y+z", X, X, -1.0) == 2.0 ** -11
    assert _multiply_add("x*y+z", X, X, -1.0) == 2.0 ** -11 + 2.0 ** -24
    assert os.environ.get("TRITON_INTERPRET") == "1"


@kwsafe
@triton.jit
def transcendental(x_ptr, out_ptr, N: tl.constexpr, FUNCTION: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    if FUNCTION == "exp":
        r = tl.exp(x)
    elif FUNCTION == "exp2":
        r = tl.exp2(x)
    else:
        r = tl.sqrt(x)
    tl.store(out_ptr + i, r)


def _transcendental(function, values):
    x, out = torch.tensor(values, dtype=torch.float32), torch.zeros(len(values))
    transcendental[(1,)](x, out, N=len(values), FUNCTION=function)
    return out.tolist()


def test_the_approximate_instructions_flush_where_the_gpu_s_do():
    """exp2 and sqrt are ``.ftz`` on the H200 (exp2(-129) is 0, sqrt of a subnormal 0); exp's
    ex2.approx of x * log2(e) keeps a subnormal result (exp(-96.88) is 8.42e-43 there)."""
    tiny = 2.0 ** -140
    assert _transcendental("exp2", [-129.0, 1.0]) == [0.0, 2.0]
    assert _transcendental("sqrt", [tiny, 4.0]) == [0.0, 2.0]
    assert 8.4e-43 < _transcendental("exp", [-96.880135])[0] < 8.5e-43
    with kwshim.activate(numerics="ieee"):
        assert _transcendental("exp2", [-129.0, 1.0]) == [2.0 ** -129, 2.0]
        assert _transcendental("sqrt", [tiny, 4.0]) == [2.0 ** -70, 2.0]


def test_exp_multiplies_by_log2_e_in_fp32_first():
    """exp(3.5) on the H200 is 0x4204763a (33.115456): ex2 of the fp32 product x * log2(e); the
    exact exp rounds to 33.115452, 3 ulps below (the table's ``exp fp32`` row: 205 of 256 bits the
    same as this model, the rest within 1 ulp)."""
    assert _transcendental("exp", [3.5])[0] == 33.115455627441406
    with kwshim.activate(numerics="ieee"):
        assert _transcendental("exp", [3.5])[0] == 33.11545181274414


@triton.jit
def centred(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    """Layer norm's ``tl.where(mask, x - mean, 0.0)``: the mask keeps the whole block where
    ``n_cols == BLOCK``."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * BLOCK + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    tl.store(out_ptr + row * BLOCK + cols, tl.where(mask, x - mean, 0.0))


@pytest.mark.parametrize("n_cols", [1024, 1000])
def test_a_select_of_a_whole_block_is_its_operand_with_the_loop_s_bits(n_cols, monkeypatch):
    """Where every condition of a large block is true, ``tl.where`` is its first operand itself (no
    pass over the block: ``np.where`` is not called); where some are false, ``np.where``: the loop's
    bits both ways."""
    import numpy as np

    torch.manual_seed(0)
    x = torch.randn(64, 1024)
    x[:, -1] = -0.0
    results, wheres = [], []
    where = np.where
    monkeypatch.setattr(np, "where", lambda *args: wheres.append(np.shape(args[1])) or where(*args))
    for mode in ("sequential", "batched"):
        out = torch.full((64, 1024), float("nan"))
        with kwshim.activate(grid=mode):
            centred[(64,)](x, out, n_cols, BLOCK=1024)
        results.append(out)
    assert torch.equal(results[0].view(torch.int32), results[1].view(torch.int32))
    batched = [shape for shape in wheres if len(shape) == 2]  # the loop's blocks are too small to look at
    assert batched == ([] if n_cols == 1024 else [(64, 1024)])


@triton.jit
def whole_block_sum_of_squares(x_ptr, out_ptr, ROWS: tl.constexpr, N: tl.constexpr):
    """``tl.sum(x * x)`` with no axis: the whole block, 1-D or 2-D."""
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * ROWS * N + tl.arange(0, ROWS)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(out_ptr + pid, tl.sum(x * x))


@pytest.mark.parametrize("rows, n", [(1, 1024), (4, 256)])
def test_a_whole_block_sum_of_products_contracts_batched_as_in_the_loop(rows, n):
    """A batch reshapes the block to one row a program to reduce it whole; the product keeps its
    factors through that, so its adds contract into fmas as the loop's do (it did not: 13 of 64 sums
    differed from the loop)."""
    torch.manual_seed(0)
    x = torch.randn(64, rows * n) * torch.tensor([1.0, 1e4, 1e-4])[torch.randint(0, 3, (64, rows * n))]
    sums = []
    for mode in ("sequential", "batched"):
        out = torch.empty(64)
        with kwshim.activate(grid=mode):
            whole_block_sum_of_squares[(64,)](x, out, ROWS=rows, N=n)
        sums.append(out)
    assert torch.equal(sums[0].view(torch.int32), sums[1].view(torch.int32))
    assert not torch.equal(sums[0], (x * x).sum(1))  # the order and the fmas show
