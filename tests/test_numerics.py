"""bf16 and fp8 as a GPU stores and computes them, conversions that saturate as the GPU's do, and
scalars typed as compiled (``interpreter/formats``, ``conversions``, ``gpu_builder``, ``launch/scalars``).

The table test replays every case of ``parity/numerics_h200.json`` (recorded compiled on an H200)
on the CPU and compares what the kernels stored, bit for bit."""

import contextlib
import inspect
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim import kwsafe

from .kernels import annotated_int64_times, doubled_as_int64, times_scalar, unspecialised_to_int64

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "parity", "numerics_h200.json")


def _recorded(name, part):
    """``part`` of the parity record ``parity/<name>``: what the H200 (or its compiler) gave."""
    with open(os.path.join(ROOT, "parity", name)) as recorded:
        return json.load(recorded)[part]


def _gpu_arithmetic_available():
    from kwshim.interpreter.gpu_builder import entries

    return bool(entries())


needs_gpu_arithmetic = pytest.mark.skipif(
    not _gpu_arithmetic_available(), reason="this release's interpreter has no bf16 at all (2.x: KeyError)")


@needs_gpu_arithmetic
def test_every_case_of_the_h200_table_matches_bit_for_bit_but_the_known_gaps():
    from parity import numerics

    with open(TABLE) as handle:
        recorded = json.load(handle)["results"]
    with kwshim.activate():
        measured = numerics.run_all("cpu", numerics.cases(), lambda name: recorded[name]["in"])
    found = numerics.differences(recorded, measured)
    same_release = triton.__version__.startswith("3.6.")
    allowed = {**numerics.KNOWN_GAPS, **({} if same_release else numerics.RELEASE_GAPS)}
    unexpected = {name: found[name] for name in found if name not in allowed}
    assert not unexpected, unexpected
    assert len(recorded) - len(found) >= 380  # the table's size: most cases are compared, not excused


@kwsafe
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, tl.load(x_ptr + i) + tl.load(y_ptr + i))


@needs_gpu_arithmetic
def test_bf16_add_under_kwsafe_alone_stores_what_torch_computes_and_triton_is_restored():
    from triton.runtime import interpreter

    builder_class, np_dtype = type(interpreter.interpreter_builder), interpreter._get_np_dtype
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(256, generator=generator).to(torch.bfloat16)
    y = torch.randn(256, generator=generator).to(torch.bfloat16)
    out = torch.empty_like(x)
    add_kernel[(1,)](x, y, out, N=256)
    assert torch.equal(out.view(torch.int16), (x + y).view(torch.int16))
    assert type(interpreter.interpreter_builder) is builder_class and interpreter._get_np_dtype is np_dtype


@needs_gpu_arithmetic
def test_the_switch_gives_the_builder_its_class_and_restores_everything_when_off():
    from triton.runtime import interpreter

    from kwshim.interpreter.gpu_builder import entries

    def state():
        return [(owner, name, owner[name] if isinstance(owner, dict) else
                 (type(owner) if name == "__class__" else vars(owner).get(name))) for owner, name, _ in entries()]

    before = state()
    with kwshim.activate():  # numerics="gpu": the GPU's arithmetic on top of its formats
        assert type(interpreter.interpreter_builder).__module__ == "kwshim.arithmetic.gpu_arithmetic"
        assert interpreter._get_np_dtype(tl.bfloat16).name == "bfloat16"
        with kwshim.activate(numerics="ieee"):  # the innermost handle's numerics are in force
            assert type(interpreter.interpreter_builder).__module__ == "kwshim.interpreter.gpu_builder"
            assert interpreter._get_np_dtype(tl.bfloat16).name == "bfloat16"
        assert type(interpreter.interpreter_builder).__module__ == "kwshim.arithmetic.gpu_arithmetic"
    assert state() == before
    assert interpreter._get_np_dtype(tl.bfloat16) == np.uint16  # the interpreter's own table again


@triton.jit
def cast_kernel(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, tl.load(x_ptr + i).to(out_ptr.dtype.element_ty))


@needs_gpu_arithmetic
@pytest.mark.parametrize("target, expected", [
    (torch.int32, [2147483647, 2147483647, 0, -2147483648, -1, 0, 1, 2]),
    (torch.int8, [-1, -1, 0, 0, -1, 0, 1, 2]),
    (torch.int64, [9223372036854775807, 3000000000, -9223372036854775808, -9223372036854775808, -1, 0, 1, 2]),
])
def test_float_to_int_saturates_and_maps_nan_as_the_gpu(target, expected):
    x = torch.tensor([float("inf"), 3e9, float("nan"), -float("inf"), -1.0, 0.5, 1.5, 2.5])
    out = torch.zeros(8, dtype=target)
    with kwshim.activate():
        cast_kernel[(1,)](x, out, N=8)
    assert out.tolist() == expected


@needs_gpu_arithmetic
def test_fp8_patterns_decode_and_encode_as_the_gpu():
    codes = torch.arange(256, dtype=torch.int16).to(torch.uint8)
    decoded = torch.zeros(256)
    with kwshim.activate():
        cast_kernel[(1,)](codes.view(torch.float8_e4m3fn), decoded, N=256)
    assert np.isnan(decoded[0x7F].item()) and np.isnan(decoded[0xFF].item())  # the interpreter alone: 480.0
    assert decoded[0x7E].item() == 448.0
    encoded = torch.zeros(2, dtype=torch.float8_e5m2)
    with kwshim.activate():
        cast_kernel[(1,)](torch.tensor([float("inf"), 65504.0]), encoded, N=2)  # fp32 -> fp8e5
    assert encoded.view(torch.uint8).tolist() == [0x7B, 0x7B]  # satfinite: 57344, not inf


@triton.jit
def negate_and_divide(x_ptr, n_ptr, d_ptr, neg_ptr, quotient_ptr, remainder_ptr):
    i = tl.arange(0, 2)
    tl.store(neg_ptr + i, -tl.load(x_ptr + i))
    n, d = tl.load(n_ptr + i), tl.load(d_ptr + i)
    tl.store(quotient_ptr + i, n // d)
    tl.store(remainder_ptr + i, n % d)


@needs_gpu_arithmetic
def test_negation_is_zero_minus_x_and_integer_division_by_zero_is_all_ones():
    x = torch.tensor([0.0, 2.0])
    n, d = torch.tensor([7, 7], dtype=torch.int32), torch.tensor([0, 2], dtype=torch.int32)
    neg, quotient, remainder = torch.zeros(2), torch.zeros(2, dtype=torch.int32), torch.zeros(2, dtype=torch.int32)
    with kwshim.activate():
        negate_and_divide[(1,)](x, n, d, neg, quotient, remainder)
    assert neg.view(torch.int32).tolist()[0] == 0  # +0.0, not -0.0
    assert quotient.tolist() == [-1, 3] and remainder.tolist() == [-1, 1]


@triton.jit
def combine_masks(a_ptr, b_ptr, and_ptr, or_ptr, xor_ptr):
    i = tl.program_id(0) * 4 + tl.arange(0, 4)
    a, b = tl.load(a_ptr + i) != 0, tl.load(b_ptr + i) != 0
    tl.store(and_ptr + i, (a & b).to(tl.int8))
    tl.store(or_ptr + i, (a | b).to(tl.int8))
    tl.store(xor_ptr + i, (a ^ b).to(tl.int8))


@needs_gpu_arithmetic
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_masks_combine_bit_by_bit(grid):
    a = torch.tensor([0, 0, 1, 1] * 2, dtype=torch.int8)
    b = torch.tensor([0, 1, 0, 1] * 2, dtype=torch.int8)
    outs = [torch.full((8,), 7, dtype=torch.int8) for _ in range(3)]
    with kwshim.activate(grid=grid):
        combine_masks[(2,)](a, b, *outs)
    assert [out.tolist()[:4] for out in outs] == [[0, 0, 0, 1], [0, 1, 1, 1], [0, 1, 1, 0]]
    assert all(out.tolist()[4:] == out.tolist()[:4] for out in outs)


@triton.jit
def fp8_add(x_ptr, out_ptr):
    i = tl.arange(0, 4)
    x = tl.load(x_ptr + i)
    tl.store(out_ptr + i, x + x)


@needs_gpu_arithmetic
def test_fp8_arithmetic_fails_as_compiled_triton_fails_for_the_gpu():
    x = torch.ones(4, dtype=torch.float8_e4m3fn)
    refused = "kwshim: compiled Triton cannot lower add on fp8e4nv|unexpected type fp8e4nv"  # 3.0: its front end
    with kwshim.activate(), pytest.raises(Exception, match=refused):
        fp8_add[(1,)](x, torch.empty_like(x))


@triton.jit
def accumulate(acc_ptr, x_ptr):
    i = tl.arange(0, 4)
    tl.atomic_add(acc_ptr + i, tl.load(x_ptr + i))


@needs_gpu_arithmetic
def test_bf16_atomic_add_adds():
    acc, x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.bfloat16), torch.full((4,), 0.5, dtype=torch.bfloat16)
    with kwshim.activate():
        try:
            accumulate[(1,)](acc, x)
        except Exception as error:
            if "does not support bf16" in str(error):
                pytest.skip("this release's front end refuses bf16 atomic_add (compiled too)")
            raise
    assert acc.tolist() == [1.5, 2.5, 3.5, 4.5]


@triton.jit
def accumulate_tile(acc_ptr, x_ptr, old_ptr, N: tl.constexpr):
    """A 2-D block of pointers, two elements to each address (Triton's own
    ``test_tensor_atomic_add_non_exclusive_offset``), and the values before each add stored."""
    i = tl.arange(0, N)
    offsets = i[:, None] * N + i[None, :]
    tl.store(old_ptr + offsets, tl.atomic_add(acc_ptr + offsets // 2, tl.load(x_ptr + offsets)))


@needs_gpu_arithmetic
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_fp16_atomic_add_of_a_2d_block_adds_in_order_and_returns_what_it_found(grid):
    x = torch.tensor([0.5, 0.25, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 3.0, 5.0],
                     dtype=torch.float16)
    acc, old = torch.zeros(8, dtype=torch.float16), torch.full((16,), -1.0, dtype=torch.float16)
    with kwshim.activate(grid=grid):
        accumulate_tile[(1,)](acc, x, old, N=4)
    assert torch.equal(acc, x[0::2] + x[1::2])
    assert torch.equal(old, torch.stack([torch.zeros(8, dtype=torch.float16), x[0::2]], dim=1).reshape(-1))


@triton.jit
def atomics_of_column_sums(acc_ptr, old_ptr, x_ptr, N: tl.constexpr):
    """Triton's own ``test_tensor_atomic_rmw``: a block's column sums added atomically, and a
    compare-and-swap of them; both operands a reduction's row."""
    i = tl.arange(0, N)
    sums = tl.sum(tl.load(x_ptr + i[:, None] * N + i[None, :]), axis=0)
    tl.atomic_add(acc_ptr + i, sums)
    tl.store(old_ptr + i, tl.atomic_cas(acc_ptr + N + i, sums - sums, sums))


@needs_gpu_arithmetic
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_atomics_take_a_reduction_s_row_as_its_elements(grid):
    """The native atomics of 3.0-3.5 read their operands' memory as if it were contiguous: the
    column sums of a 2x2 block, a strided row of kwshim's reduction, were added as [5, 4], not
    [5, 10] (the bare interpreter's sums are contiguous)."""
    x = torch.tensor([[1.0, 2.0], [4.0, 8.0]])
    acc, old = torch.zeros(4), torch.full((2,), -1.0)
    with kwshim.activate(grid=grid):
        atomics_of_column_sums[(1,)](acc, old, x, N=2)
    assert acc.tolist() == [5.0, 10.0, 5.0, 10.0] and old.tolist() == [0.0, 0.0]


@needs_gpu_arithmetic
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_a_float_exchange_moves_bits_and_a_compare_and_swap_compares_bits_as_the_h100_does(grid):
    """An fp32 or fp64 ``tl.atomic_xchg``, which compiled Triton runs and the interpreter's native
    exchange refuses ("Unsupported data type", every release), moves the value's bits (NaN payloads,
    a signalling NaN, -0.0), as a block and one element per program; a compare-and-swap swaps where
    the bits match (-0.0 is not +0.0, a NaN is itself). The H100's memory and old values, bit for bit."""
    from parity import float_exchanges

    h100 = _recorded("float_exchanges_h100.json", "results")
    assert h100["cas fp32"]["memory"][5] == "80000000"  # -0.0 compared with +0.0: no swap
    with kwshim.activate(grid=grid):
        here = float_exchanges.results("cpu")
    assert here == h100


def test_without_ml_dtypes_a_bf16_kernel_fails_naming_kwshim_and_an_fp32_one_runs():
    code = f"""
import sys
sys.modules["ml_dtypes"] = None
sys.path.insert(0, {ROOT!r})
from tests.test_numerics import add_kernel, _gpu_arithmetic_available
import torch
if not _gpu_arithmetic_available():
    print("skip"); sys.exit(0)
out = torch.empty(4)
add_kernel[(1,)](torch.ones(4), torch.ones(4), out, N=4)
assert out.tolist() == [2.0] * 4
try:
    add_kernel[(1,)](torch.ones(4, dtype=torch.bfloat16), torch.ones(4, dtype=torch.bfloat16),
                     torch.empty(4, dtype=torch.bfloat16), N=4)
except Exception as error:
    print(type(error).__name__, error)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    if done.stdout.strip() != "skip":
        assert "kwshim: a bf16 kernel needs the 'ml_dtypes' package" in done.stdout, done.stdout


@needs_gpu_arithmetic
def test_do_not_specialize_is_followed_where_the_interpreter_forgets_it():
    """3.0-3.3 drop the list: kwshim reads it from the decorator (an int 1 stayed a constexpr)."""
    out = torch.zeros(1, dtype=torch.int64)
    unspecialised_to_int64[(1,)](out, 1)
    assert out.item() == 3


@needs_gpu_arithmetic  # 2.x: an fp16 * fp32 product fails in the front end, bare
def test_scalars_are_typed_as_compiled():
    out = torch.zeros(1, dtype=torch.int64)
    doubled_as_int64[(1,)](out, 3_000_000_000)
    assert out.item() == 6_000_000_000  # the interpreter alone: u32, wraps to 1705032704
    annotated_int64_times[(1,)](out, 5, 1_000_000_000)
    assert out.item() == 5_000_000_000  # the interpreter alone: 705032704
    x, result = torch.ones(1, dtype=torch.float16), torch.zeros(1)
    times_scalar[(1,)](x, result, np.float64(1.0001))
    assert result.item() == pytest.approx(1.0001, abs=1e-7)  # fp32 math, not fp16 (which gives 1.0)
    with pytest.raises(TypeError, match="failed to specialize argument of type: numpy.float32"):
        times_scalar[(1,)](x, result, np.float32(1.0001))


# -- what each launch pays for: the builder's probes of the interpreter's one-line methods ---------

def test_the_probe_finds_an_operation_that_only_hands_a_ufunc_to_binary_op():
    from kwshim.compat import binary_ufunc as _binary_ufunc

    assert _binary_ufunc(lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.add)) is np.add
    assert _binary_ufunc(lambda self, lhs, rhs: self.binary_op(rhs, lhs, np.add)) is None  # operands swapped
    assert _binary_ufunc(lambda self, lhs, rhs: self.binary_op(lhs, rhs, lambda a, b: a + b)) is None
    assert _binary_ufunc(lambda self, lhs, rhs: lhs.data) is None


def test_a_handle_made_without_its_constructor_holds_what_the_constructor_s_holds():
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    from kwshim.compat import handle_maker

    data = np.arange(3, dtype=np.float32)
    made, built = handle_maker(TensorHandle)(data, tl.float32), TensorHandle(data, tl.float32)
    assert type(made) is TensorHandle and vars(made) == vars(built) and made.data is data
    if "attr" in vars(built):  # 3.0 on (2.x's handle holds its data and type alone: the constructor)
        assert made.attr is not handle_maker(TensorHandle)(data, tl.float32).attr  # each its own

    class Slotted:
        __slots__ = ("data", "dtype", "attr")

        def __init__(self, data, dtype):
            self.data, self.dtype, self.attr = data, dtype, {}

    class Checked(TensorHandle):  # a constructor that keeps more than the three fields: used as it is
        def __init__(self, data, dtype):
            super().__init__(data, dtype)
            self.checked = True

    assert handle_maker(Slotted) is Slotted and handle_maker(Checked) is Checked


@needs_gpu_arithmetic
def test_fp8_is_refused_on_both_paths_the_builder_takes():
    from kwshim.errors import UncompilableError
    from kwshim.interpreter import gpu_builder

    fp8 = type("Handle", (), {"data": np.zeros(4, np.uint8), "dtype": tl.float8e4nv})()
    calls = []
    direct = gpu_builder._refusing_fp8("create_fadd", None, np.add)
    wrapped = gpu_builder._refusing_fp8("create_fma", lambda self, *args: calls.append(args), None)
    for checked in (direct, wrapped):
        with pytest.raises(UncompilableError, match="kwshim: compiled Triton cannot lower"):
            checked(object(), fp8, fp8)
    assert not calls
    import triton.runtime.interpreter as interpreter

    builder_class = gpu_builder.gpu_builder_class(type(interpreter.interpreter_builder))
    assert builder_class.create_fadd.__code__.co_name == "calling_binary_op"  # 3.0-3.9: no frame of the interpreter's
    assert builder_class.create_masked_store.__name__ == "direct_store"


def test_a_tolerance_allows_its_bound_and_no_more_and_never_for_nan_inf_or_zero():
    from parity import numerics

    one = 0x3F800000
    close = numerics._within(("ulps", 1), [one], "fp32")
    assert close(one, one + 1) and close(one + 1, one) and not close(one, one + 2)
    assert close(0x80000001, 0x00000001) is False  # -tiny vs +tiny: 2 apart through zero
    assert not close(0x00000000, 0x00000001) and not close(0x7F800000, 0x7F7FFFFF)  # zero, inf kept exact
    relative = numerics._within(("of largest", 2e-6), [0x41200000], "fp32")  # largest value 10.0
    assert relative(0x3F800000, 0x3F800000 + 100) and not relative(0x3F800000, 0x3F800000 + 200)


def test_a_direct_float_conversion_gives_the_fp64_path_s_bits_nan_payloads_and_all():
    from kwshim.arithmetic.conversions import float_to_float

    ml_dtypes = pytest.importorskip("ml_dtypes")
    every16 = np.arange(2 ** 16, dtype=np.uint16)
    fp32 = np.concatenate([np.random.default_rng(0).integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32),
                           np.arange(2 ** 16, dtype=np.uint32),  # subnormals
                           np.arange(0x7F7F0000, 0x7F810000, dtype=np.uint32),  # the largest, inf, signalling NaNs
                           np.arange(0xFFBF0000, 0xFFC10000, dtype=np.uint32)]).view(np.float32)
    sources = [every16.view(ml_dtypes.bfloat16), every16.view(np.float16), fp32]
    sources += [source[~np.isnan(source.astype(np.float64))] for source in sources]  # and each without NaNs
    for source in sources:
        for target in (np.float64, np.float32, np.float16, ml_dtypes.bfloat16):
            target = np.dtype(target)
            with np.errstate(all="ignore"):
                wide = source.astype(np.float64)
                expected = wide.astype(target) if target.itemsize >= 4 else wide.astype(np.float32).astype(target)
                got = float_to_float(source, target)
            unsigned = f"u{target.itemsize}"
            assert np.array_equal(got.view(unsigned), expected.view(unsigned)), (source.dtype, target)


@triton.jit
def _overflowing(x_ptr, half_ptr, product_ptr):
    offsets = tl.arange(0, 4)
    x = tl.load(x_ptr + offsets)
    tl.store(half_ptr + offsets, x.to(tl.float16))   # fp32 -> fp16 past 65504: inf
    half = tl.load(half_ptr + offsets)
    tl.store(product_ptr + offsets, half * half / (half - half))  # overflow, 0/0 and x/0 in fp16


@pytest.mark.skipif(not _gpu_arithmetic_available(), reason="2.x: the interpreter's own arithmetic")
def test_overflow_and_division_by_zero_are_quiet_as_on_a_gpu():
    """A GPU overflows to inf and makes NaN without a word; NumPy would warn (a RuntimeWarning from
    kwshim's conversions, or the interpreter's multiply), which -W error turns into a failure."""
    import warnings

    x = torch.tensor([1e6, -1e6, 1.0, 300.0])
    half, product = torch.empty(4, dtype=torch.float16), torch.empty(4, dtype=torch.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with kwshim.activate():
            _overflowing[(1,)](x, half, product)
    assert half.tolist() == [float("inf"), -float("inf"), 1.0, 300.0]
    values = product.tolist()  # inf * inf / (inf - inf): NaN; 1 / 0 and 65504+ (inf) / 0: inf
    assert values[0] != values[0] and values[1] != values[1] and values[2:] == [float("inf")] * 2


def test_conversions_are_quiet_inside_a_launch_and_outside_it_and_numpy_s_state_comes_back():
    """Inside a launch ``numpy_quiet.quiet`` leaves NumPy's state to the launch's (warnings off, once);
    outside it is ``np.errstate``; after either, NumPy's own state is what it was."""
    import warnings

    from kwshim.arithmetic import conversions, numpy_quiet

    large = np.array([1e6, np.inf, -np.inf], np.float32)
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert conversions.float_to_float(large, np.float16).tolist() == [np.inf, np.inf, -np.inf]  # outside
        with numpy_quiet.launch():
            assert np.geterr()["over"] == np.geterr()["invalid"] == np.geterr()["divide"] == "ignore"
            assert isinstance(numpy_quiet.quiet(over="ignore"), contextlib.nullcontext)
            with numpy_quiet.launch():  # a launch inside a launch (a kernel calling the host) keeps the mark
                pass
            assert isinstance(numpy_quiet.quiet(over="ignore"), contextlib.nullcontext)
            assert conversions.float_to_float(large, np.float16).tolist() == [np.inf, np.inf, -np.inf]
        assert not isinstance(numpy_quiet.quiet(over="ignore"), contextlib.nullcontext)
        with pytest.raises(RuntimeWarning):
            np.float32(3e38) * np.float32(10)  # NumPy warns again after the launch
    assert np.geterr() == before


_COLLECTOR_SEEN = []


def _collector_state():
    """Called from a kernel's body (the interpreter runs it as Python): whether the collector is on."""
    import gc

    _COLLECTOR_SEEN.append(gc.isenabled())
    return 0


@triton.jit
def _reports_the_collector(out_ptr):
    tl.store(out_ptr + tl.arange(0, 2), _collector_state() + tl.arange(0, 2))


@pytest.mark.skipif(not _gpu_arithmetic_available(), reason="2.x: launches run without a launch scope")
@pytest.mark.parametrize("grid", ["sequential", "batched"])
@pytest.mark.parametrize("enabled", [True, False])
def test_a_launch_pauses_the_cyclic_collector_and_leaves_it_as_it_found_it(grid, enabled):
    """The collector is off while a launch runs, and after it, on again only where it was on."""
    import gc

    out = torch.zeros(2, dtype=torch.int32)
    _COLLECTOR_SEEN.clear()
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with kwshim.activate(grid=grid):
            _reports_the_collector[(3,)](out)
        after = gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
    assert out.tolist() == [0, 1]
    assert _COLLECTOR_SEEN and not any(_COLLECTOR_SEEN)
    assert after is enabled


@needs_gpu_arithmetic
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_int1_sums_and_cumsums_add_in_int1_as_the_h200_does(grid):
    """``tl.sum(x, dtype=tl.int1)``: one plus one wraps to zero (NumPy's bool sum is a logical or)."""

    from parity import int1_sums

    h200 = _recorded("int1_sums_h200.json", "results")
    with kwshim.activate(grid=grid):
        try:
            here = int1_sums.results("cpu")
        except Exception as error:
            if "unexpected keyword argument" in str(error) and "dtype" in str(error):  # also wrapped in a repr
                pytest.skip("this release's tl.sum and tl.cumsum take no dtype")
            raise
    assert here == h200


@needs_gpu_arithmetic
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_int1_arithmetic_wraps_in_one_bit_as_the_gpu_does(grid):
    """Masks added, subtracted and multiplied: ``+`` and ``-`` wrap in one bit (1 + 1 is 0), where
    the interpreter's ``+`` saturated and its ``-`` raised before 3.9 (NumPy's bools)."""

    from parity import int1_arithmetic

    gpu = _recorded("int1_arithmetic_h100.json", "results")
    assert gpu["add"] == gpu["sub"] == [0, 1, 1, 0] and gpu["mul"] == [0, 0, 0, 1]
    with kwshim.activate(grid=grid):
        here = int1_arithmetic.results("cpu")
    assert here == gpu


def _is_nan(bits):
    value = int(bits, 16)
    return (value >> 23) & 0xFF == 0xFF and value & 0x7FFFFF != 0


@needs_gpu_arithmetic
def test_nan_is_nan_where_the_gpu_makes_one_and_every_other_result_is_its_bits():
    """What the docs promise of NaN: NaN where the GPU gives NaN (not its payload, ``0x7fffffff``,
    which the record shows for every NaN arithmetic makes), and every other result bit for bit."""

    from parity import nan_payloads

    gpu = _recorded("nan_payloads_h100.json", "results")
    assert gpu["add"][:4] == ["7fffffff"] * 4  # a NaN of either sign, with any payload, comes out canonical
    with kwshim.activate():
        here = nan_payloads.results("cpu")
    assert set(here) == set(gpu)
    for operation, expected in gpu.items():
        assert [_is_nan(bits) for bits in here[operation]] == [_is_nan(bits) for bits in expected], operation
        assert [bits for bits in here[operation] if not _is_nan(bits)] == [
            bits for bits in expected if not _is_nan(bits)], operation


@needs_gpu_arithmetic
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_fp16_and_bf16_row_sums_add_in_the_h200_s_lane_order(grid):
    """A 16-bit row is added in its own type, in the order of the GPU's lanes (``lane_order``): the
    H200's bits for every measured row, sums of squares included (their products contracted into
    fmas, every other one in 16 bits). Left to right, a 512-element bf16 row of squares stalled once
    the sum passed 256 (Liger's rms_norm, ``casting_mode="none"``)."""
    import sys

    from parity import lane_sums

    if not hasattr(sys.modules["triton.runtime.interpreter"], "ReduceOps"):
        pytest.skip("this release's interpreter reduces without a reduce class (and has no bf16 arithmetic)")
    h200 = _recorded("lane_sums_h200.json", "results")
    with kwshim.activate(grid=grid):
        here, _ = lane_sums.results("cpu")
    sums = sorted(h200)
    if "_promote_bfloat16_to_float32" in inspect.getsource(inspect.unwrap(tl.standard.sum.fn)):  # to 3.2: in fp32
        sums = [key for key in sums if key.startswith("float16")]
    assert len(sums) >= 20 and {key: here[key] for key in sums} == {key: h200[key] for key in sums}


@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_fp16_and_bf16_block_sums_add_as_one_row_in_the_h200_s_lane_order(grid):
    """``tl.sum`` of a whole 2-D block (``axis=None``): Triton makes the block one row, which the
    GPU adds in its lanes' order. Before, the block was added left to right: 1024 ones in bf16 summed
    to 256 (Triton's own ``test_sum_dtype``). The H200's bits for all 224 measured sums."""
    import sys

    from parity import block_sums

    if not hasattr(sys.modules["triton.runtime.interpreter"], "ReduceOps"):
        pytest.skip("this release's interpreter reduces without a reduce class (and has no bf16 arithmetic)")
    h200 = _recorded("block_sums_h200.json", "results")
    with kwshim.activate(grid=grid):
        here = block_sums.results("cpu")
    sums = sorted(h200)
    if "_promote_bfloat16_to_float32" in inspect.getsource(inspect.unwrap(tl.standard.sum.fn)):  # to 3.2: in fp32
        sums = [key for key in sums if key.startswith("float16")]
    assert len(sums) >= 7 and {key: here[key] for key in sums} == {key: h200[key] for key in sums}


def _promotes_bf16(function):
    """Whether this release's front end widens a bf16 block to fp32 before ``function`` combines it."""
    return "_promote_bfloat16_to_float32" in inspect.getsource(inspect.unwrap(function.fn))


@needs_gpu_arithmetic
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_sums_maxima_and_cumsums_combine_in_the_h200_s_lane_order(grid):
    """fp32, fp16 and bf16 ``tl.sum``, ``tl.max``/``tl.min`` with and without their indices (rows
    of NaN, signed zeros and ties) and ``tl.cumsum``, of rows and of either axis of 2-D blocks: the
    H200's bits (``parity/lane_orders_h200.json``: sums of squares, of 16-bit rows widened to fp32,
    of rows masked at run time) but where the GPU reads an arg reduction from another lane (4 named
    cases). Before, NumPy's pairwise sum
    gave 12 of the 36 fp32 row sums other bits, and every argmax of a row holding NaN the NaN."""
    from parity import lane_orders

    if not hasattr(sys.modules["triton.runtime.interpreter"], "ReduceOps"):
        pytest.skip("this release's interpreter reduces without a reduce class (and has no bf16 arithmetic)")
    h200 = _recorded("lane_orders_h200.json", "cases")
    names = [name for name in h200 if not name.startswith("atomic")]
    if not _promotes_bf16(tl.standard.cumsum):  # 3.9's front end scans bf16 in bf16 (3.6: in fp32)
        names = [name for name in names if not ("cumsum" in name and " bf16 " in name)]
    if _promotes_bf16(tl.standard.sum):  # to 3.2 the front end sums bf16 in fp32
        names = [name for name in names if not ("sum" in name and " bf16 " in name)]
    with kwshim.activate(grid=grid):
        differing = lane_orders.differences(h200, names, device="cpu")
    assert len(names) >= 300 and set(differing) <= lane_orders.NOT_MODELLED, differing


def test_the_h100_stores_the_copy_of_the_lowest_lane_of_the_shared_store_s_last_phase():
    """Where a warp's lanes hold different copies of a reduced row (a combine that keeps its left
    operand), the H100 stored, in every one of its 746 rows, the copy of the lane the phase rule
    names from the compiled kernel's own shared-store width and layout: lanes 8, 16 and 24 as well
    as 0 (the rule behind ``lane_orders.NOT_MODELLED``: kwshim keeps lane 0's)."""
    import re

    from parity import shared_store_lanes

    cases = _recorded("shared_store_lanes_h100.json", "results")
    assert len(cases) == len(shared_store_lanes.CASES)
    kept_lanes = set()
    for name, case in cases.items():
        found = re.search(r"sizePerThread = \[(\d+), (\d+)\], threadsPerWarp = \[(\d+), (\d+)\], "
                          r"warpsPerCTA = \[(\d+), (\d+)\]", case["layout"][0])
        rows_per_thread, per_thread, row_lanes, lanes, _, warps = map(int, found.groups())
        for row, column in enumerate(case["columns"]):
            if warps > 1:  # combined over the warps in shared memory: every lane holds lane 0's copy
                assert column == 0, (name, row)
                continue
            kept = shared_store_lanes.lane(lanes, row // rows_per_thread % row_lanes, max(case["shared_stores"]))
            assert column == kept * per_thread, (name, row)
            kept_lanes.add(kept)
    assert kept_lanes == {0, 8, 16, 24}


def test_sums_of_a_dot_result_combine_in_the_tensor_cores_layout_as_on_the_h200():
    """A ``tl.dot`` result stays in the tensor cores' layout (``#ttg.nvidia_mma``, versions 2 and
    3), whose lanes hold other elements than a loaded block's: ``tl.sum`` along either axis of the
    H200's own accumulators (``parity/dot_reductions_h200.json``) adds as the GPU did in all 40
    cases; a loaded block's order gives other bits in most. A ``tl.cumsum`` of one is scanned in a
    loaded block's order (the compiler converts the layout to scan): 20 of 20."""
    from kwshim.arithmetic import lane_order

    h200 = _recorded("dot_reductions_h200.json", "cases")
    same = blocked_same = scans = 0
    for name, case in h200.items():
        op, dims = name.split()[1], dict(d.split("=") for d in name.split()[3:])
        m, n, warps = int(dims["M"]), int(dims["N"]), int(dims["num_warps"])
        axis = 0 if op == "sum0" else 1
        lines = np.array(case["acc"], np.int32).view(np.float32)
        if op == "cumsum1":  # scanned in a blocked layout: the compiler converts the accumulator first
            scanned = lane_order.scan_in_lanes(lines, lane_order.blocked_layout((m, n), 4, warps)[1],
                                               lane_order.added(np.float32))
            scans += scanned.view(np.int32).reshape(-1).tolist() == case["out"]
            continue
        order, layout = lane_order.tensor_core_order((m, n), warps, axis)
        (total,) = lane_order.reduce_in_lanes((np.ascontiguousarray(lines[:, order]),), layout,
                                              lane_order.added(np.float32))
        (blocked,) = lane_order.reduce_in_lanes((lines,), lane_order.blocked_layout((m, n), 4, warps)[axis],
                                                lane_order.added(np.float32))
        same += total.view(np.int32).tolist() == case["out"]
        blocked_same += blocked.view(np.int32).tolist() == case["out"]
    assert len(h200) == 60 and same == 40 and blocked_same <= 6 and scans == 20, (same, blocked_same, scans)


def test_a_chained_dot_s_sums_have_every_warp_on_the_rows_as_on_the_h200():
    """A dot whose result feeds another (flash attention's ``q @ k``, then ``p @ v``): its row and
    column sums of the H200's own accumulators (``parity/dot_chains_h200.json``, 10 shapes) add as
    the GPU did in the chained layout, every warp on the rows (``mma.sync``: over the columns where
    the head dimension exceeds the rows); a lone dot's layout gives other bits in more of them."""
    from kwshim.arithmetic import lane_order

    h200 = _recorded("dot_chains_h200.json", "cases")
    differing, lone_differing = [], []
    for name, case in h200.items():
        dims = dict(d.split("=") for d in name.split()[1:])
        m, n, k, warps = int(dims["M"]), int(dims["N"]), int(dims["D"]), int(dims["num_warps"])
        for axis, lines, sums in ((1, "qk rows", "rows"), (0, "qk columns", "columns")):
            data = np.array(case[lines], np.int32).view(np.float32)
            for chained, found in ((k, differing), (None, lone_differing)):
                order, layout = lane_order.tensor_core_order((m, n), warps, axis, chained)
                (total,) = lane_order.reduce_in_lanes((np.ascontiguousarray(data[:, order]),), layout,
                                                      lane_order.added(np.float32))
                if total.view(np.int32).tolist() != case[sums]:
                    found.append(f"{name} {sums}")
    assert len(h200) == 10 and not differing, differing
    assert len(lone_differing) > len(differing), lone_differing


@triton.jit
def _dot_then_sums(a_ptr, b_ptr, rows_ptr, columns_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    scores = tl.dot(a, b) * 0.3 + 1.0  # still the tensor cores' layout, as is what follows
    tl.store(rows_ptr + m, tl.sum(scores, axis=1))
    tl.store(columns_ptr + n, tl.sum(tl.where(scores > 0, scores, -scores), axis=0))


@needs_gpu_arithmetic
@pytest.mark.parametrize("grid", ["sequential", "batched"])
@pytest.mark.parametrize("shape", [(64, 64, 4), (32, 32, 4), (128, 64, 8)])
def test_a_reduction_of_a_dot_result_follows_the_tensor_cores_layout_through_elementwise_operations(grid, shape):
    """The dot's layout reaches the sums through the elementwise operations after it (the compiler
    keeps it there); the dot is exact here (one 1 in each row of ``a``), so that only the sums'
    order can change a bit. A loaded block's order gives other bits."""
    from kwshim.arithmetic import lane_order

    if not hasattr(sys.modules["triton.runtime.interpreter"], "ReduceOps"):
        pytest.skip("this release's interpreter reduces without a reduce class")
    m, n, warps = shape
    a = torch.zeros(m, 16, dtype=torch.float16)
    a[torch.arange(m), torch.arange(m) % 16] = 1
    b = (torch.randn(16, n, generator=torch.Generator().manual_seed(0)) * 100).half()
    scores = ((a.float() @ b.float()).numpy().astype(np.float64) * np.float64(np.float32(0.3)) + 1).astype(np.float32)
    rows, columns = torch.zeros(m), torch.zeros(n)
    with kwshim.activate(grid=grid):
        for _ in range(2):  # batched: the trace, then its replay
            _dot_then_sums[(1,)](a, b, rows, columns, M=m, N=n, K=16, num_warps=warps)
    expected = []
    for axis, data in ((1, scores), (0, np.abs(scores).T)):
        order, layout = lane_order.tensor_core_order((m, n), warps, axis)
        expected.append(lane_order.reduce_in_lanes((np.ascontiguousarray(data[:, order]),), layout,
                                                   lane_order.added(np.float32))[0])
    (blocked,) = lane_order.reduce_in_lanes((scores,), lane_order.blocked_layout((m, n), 4, warps)[1],
                                            lane_order.added(np.float32))
    assert rows.numpy().tolist() == expected[0].tolist() and columns.numpy().tolist() == expected[1].tolist()
    assert blocked.tolist() != expected[0].tolist()


def test_map_elementwise_packs_and_refuses_as_on_the_h200():
    """``tl.map_elementwise(..., pack=P)`` hands its function P consecutive elements, as the H200
    did in 6 of 6 blocks; the 2 whose threads hold fewer than P elements it refused, as here."""
    from parity import map_packs

    if not hasattr(tl, "map_elementwise"):
        pytest.skip("this release has no tl.map_elementwise")
    h200 = _recorded("map_packs_h200.json", "results")
    with kwshim.activate():
        here = map_packs.results("cpu")
    refused = sorted(name for name, found in h200.items() if isinstance(found, str))
    assert len(refused) == 2 and sorted(name for name, found in here.items() if isinstance(found, str)) == refused
    assert all("pack size must be a divisor" in here[name] for name in refused)
    assert {name: found for name, found in here.items() if name not in refused} == \
        {name: found for name, found in h200.items() if name not in refused}


def test_dot_scaled_is_within_four_ulps_of_its_magnitude_of_the_h200():
    """``tl.dot_scaled`` (e2m1 by e4m3, e5m2 and bf16, e4m3 by e4m3, e8m0 scales): every element
    within 4 ulps of the sum of its products' magnitudes of what the H200 computed. The H200 itself
    is up to 3.3 such ulps from the exact sum (its tensor cores' accumulation), kwshim 1.7."""
    from parity import scaled_dots

    if not hasattr(tl, "dot_scaled"):
        pytest.skip("this release has no tl.dot_scaled")
    h200 = _recorded("scaled_dots_h200.json", "results")
    with kwshim.activate():
        here = scaled_dots.results("cpu")
    compared = [name for name in h200 if isinstance(here[name], list)]
    if not compared:
        pytest.skip(f"this release's front end takes none of these scaled dots: {next(iter(here.values()))}")
    for case in scaled_dots.CASES:
        name = "{3} x {4} M={0} N={1} K={2}".format(*case)
        if name not in compared:
            continue
        ours, gpu = (np.array(found[name], np.int32).view(np.float32).astype(np.float64) for found in (here, h200))
        ulps = np.spacing(scaled_dots.magnitudes(*case).astype(np.float32)).astype(np.float64).reshape(-1)
        assert np.max(np.abs(ours - gpu) / ulps) <= 4, name
    assert len(compared) >= 4, here


@triton.jit
def _chained_sums(a_ptr, b_ptr, v_ptr, rows_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    scores = tl.dot(a, b) * 0.3 + 1.0
    tl.store(rows_ptr + m, tl.sum(scores, axis=1))
    v = tl.load(v_ptr + n[:, None] * K + k[None, :])
    tl.store(out_ptr + m[:, None] * K + k[None, :], tl.dot(scores.to(tl.float16), v))  # the chain


@needs_gpu_arithmetic
@pytest.mark.parametrize("grid", ["sequential", "batched"])
def test_a_chained_dot_s_row_sums_take_the_chained_warps(grid):
    """A kernel whose dot feeds another: its row sums take every warp on the rows (8 warps on a
    64-row block: the lone dot's 4 by 2 would add the two column halves across warps)."""
    from kwshim.arithmetic import lane_order

    if not hasattr(sys.modules["triton.runtime.interpreter"], "ReduceOps"):
        pytest.skip("this release's interpreter reduces without a reduce class")
    m = n = 64
    a = torch.zeros(m, 16, dtype=torch.float16)
    a[torch.arange(m), torch.arange(m) % 16] = 1
    b = (torch.randn(16, n, generator=torch.Generator().manual_seed(1)) * 100).half()
    v, rows, out = torch.ones(n, 16, dtype=torch.float16), torch.zeros(m), torch.zeros(m, 16)
    scores = ((a.float() @ b.float()).numpy().astype(np.float64) * np.float64(np.float32(0.3)) + 1).astype(np.float32)
    with kwshim.activate(grid=grid):
        for _ in range(2):
            _chained_sums[(1,)](a, b, v, rows, out, M=m, N=n, K=16, num_warps=8)
    sums = {}
    for chained in (16, None):
        order, layout = lane_order.tensor_core_order((m, n), 8, 1, chained)
        sums[chained] = lane_order.reduce_in_lanes((np.ascontiguousarray(scores[:, order]),), layout,
                                                   lane_order.added(np.float32))[0].tolist()
    assert rows.numpy().tolist() == sums[16] and sums[16] != sums[None]


def test_a_kernel_chains_its_dots_where_one_s_result_reaches_another_s_operands():
    """``dot_chains`` reads a kernel's source: flash attention's ``q @ k`` feeding ``p @ v`` chains,
    a K loop's ``acc = tl.dot(a, b, acc)`` (its accumulator) and two dots side by side do not."""
    from kwshim.arithmetic.dot_chains import chains_dots
    from parity.compile_refusals import dot_loop
    from parity.dot_chains import chained

    def side_by_side(a, b, c, d):
        return tl.dot(a, b), tl.dot(c, d)

    def through_names(q, k, v, m):
        scores = tl.dot(q, k) * 0.5
        p = tl.exp2(scores - m)
        return tl.dot(p.to(tl.float16), v)

    assert chains_dots(chained.fn) and chains_dots(through_names)
    assert not chains_dots(dot_loop.fn) and not chains_dots(side_by_side)
    assert not chains_dots(eval("lambda a, b: tl.dot(tl.dot(a, b), b)"))  # no source file: not read


def test_a_chained_dot_s_warps_are_the_ones_the_compiler_gives_it():
    """``lane_order``'s warps for a dot feeding another (flash attention's ``q @ k``), against the
    layouts Triton 3.6's compiler gives it for sm_90 (``parity/dot_chains_sm90_layouts.json``, 10
    shapes): every warp on the rows (8 on a 64-row ``wgmma`` block, where a lone dot's are 4 by 2),
    on ``mma.sync`` the columns where the head dimension, the first dot's K, exceeds the rows."""
    from kwshim.arithmetic import lane_order

    layouts = _recorded("dot_chains_sm90_layouts.json", "layouts")
    for name, layout in layouts.items():
        dims = dict(d.split("=") for d in name.split()[1:])
        m, n, k, warps = int(dims["M"]), int(dims["N"]), int(dims["D"]), int(dims["num_warps"])
        version, along = lane_order._mma_warps(m, n, warps, chained=k)
        assert f"versionMajor = {version}," in layout and f"warpsPerCTA = {along}," in layout, (name, layout)
    assert len(layouts) == 10 and lane_order._mma_warps(64, 64, 8) == (3, [4, 2])  # a lone dot's


def test_shared_address_float_atomics_are_not_repeatable_on_the_h200():
    """Why float ``atomic_add`` into a shared address is not in the table: three runs on the H200
    gave other bits in 9 of the 12 recorded cases (all but the one-warp ones), the lanes' order
    being a race there. Each element to its own address adds as the GPU (the numerics table)."""
    h200 = _recorded("lane_orders_h200.json", "cases")
    atomics = {name: case["outputs"]["signed"]["repeatable"]
               for name, case in h200.items() if name.startswith("atomic")}
    assert len(atomics) == 12 and sorted(name for name, again in atomics.items() if again) == [
        f"atomic {t} N=64 addresses=4 num_warps=1" for t in ("bf16", "fp16", "fp32")]


@triton.jit
def small_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    tl.store(c_ptr + m[:, None] * N + n[None, :], tl.dot(a, b))


@needs_gpu_arithmetic
@pytest.mark.parametrize("shape", [(8, 8, 8), (16, 16, 8)])
def test_a_dot_smaller_than_the_nvidia_backend_s_smallest_is_refused_with_its_message(shape):
    """The H200 refuses both (``CompilationError``, measured); the interpreter's builder takes any
    shape from 3.3 on. Under the switch the front end applies the installed NVIDIA backend's bound
    for sm_90 (3.6: K >= 16 for fp16) and refuses as compiled Triton does, with its message and a
    ``CompilationError`` (``refusals``)."""
    from triton.runtime import interpreter

    from triton.compiler.errors import CompilationError

    M, N, K = shape
    ours = interpreter.interpreter_builder.codegen_fns.get("min_dot_size") \
        if hasattr(interpreter.interpreter_builder, "codegen_fns") else None
    out = torch.zeros(16, 16)
    with kwshim.activate():
        small_dot[(1,)](torch.ones(16, 16).half(), torch.ones(16, 16).half(), out, 16, 16, 16)
        assert out.eq(16).all()
        with pytest.raises(CompilationError, match=r"K >= 16|must be >= 16"):
            small_dot[(1,)](torch.ones(M, K).half(), torch.ones(K, N).half(), torch.zeros(M, N), M, N, K)
    if ours is not None:
        assert interpreter.interpreter_builder.codegen_fns["min_dot_size"] is ours
