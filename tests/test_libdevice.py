"""libdevice on the CPU under the switch: values as torch computes them, a clear error where no
implementation exists, and Triton's modules exactly restored afterwards."""

import importlib
import math
from fractions import Fraction

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim.arithmetic.math_table import IMPLEMENTATIONS

from .kernels import kwsafe, needs_block_loads


RELEASE = tuple(int(part) for part in triton.__version__.split(".")[:2])  #: 3.5 stopped promoting libdevice's types


def libdevice():
    try:
        return importlib.import_module("triton.language.extra.libdevice")
    except ImportError:
        pytest.skip("this Triton has no triton.language.extra.libdevice")


UNARY = {"tanh": torch.tanh, "rsqrt": torch.rsqrt, "erf": torch.erf, "exp2": torch.exp2, "log1p": torch.log1p,
         "sqrt": torch.sqrt, "exp": torch.exp, "floor": torch.floor, "sin": torch.sin, "fast_expf": torch.exp}


@needs_block_loads
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_functions_match_torch(name):
    module = libdevice()
    if not hasattr(module, name):
        pytest.skip(f"this Triton's libdevice has no {name}")
    global FUNCTION
    with kwshim.activate():
        FUNCTION = getattr(module, name)  # a global: 3.6+ interpreters run kernels without closures
        x, out = torch.tensor([0.5, 1.0, 2.0, 3.5]), torch.zeros(4)
        apply_function[(1,)](x, out)
    torch.testing.assert_close(out, UNARY[name](x))


FUNCTION = None
MODULE = None


@triton.jit
def apply_function(x_ptr, out_ptr):
    offsets = tl.arange(0, 4)
    tl.store(out_ptr + offsets, FUNCTION(tl.load(x_ptr + offsets)))


@triton.jit
def apply_two(x_ptr, out_ptr):
    offsets = tl.arange(0, 4)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, MODULE.pow(x, 2.0) + MODULE.atan2(x, x + 1))


@needs_block_loads
def test_two_argument_functions_match_torch():
    global MODULE
    MODULE = libdevice()
    with kwshim.activate():
        x, out = torch.tensor([0.5, 1.0, 2.0, 3.5]), torch.zeros(4)
        apply_two[(1,)](x, out)
    torch.testing.assert_close(out, x ** 2 + torch.atan2(x, x + 1))


@triton.jit
def apply_binary(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 4)
    tl.store(out_ptr + offsets, FUNCTION(tl.load(x_ptr + offsets), tl.load(y_ptr + offsets)))


def run_binary(name, x, y):
    global FUNCTION
    module = libdevice()
    if not hasattr(module, name):
        pytest.skip(f"this Triton's libdevice has no {name}")
    out = torch.zeros_like(x)
    with kwshim.activate():
        FUNCTION = getattr(module, name)
        apply_binary[(1,)](x, y, out)
    return out


EXACT = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b}


def operands(operation, dtype):
    """Four pairs whose exact result the dtype cannot hold (``tiny``: below half an ulp of 1)."""
    bits = 24 if dtype == torch.float32 else 53
    tiny = 2.0 ** -(bits + 6)
    return {"add": ([1.0, 1.0, -1.0, 3.0], [tiny, tiny * 3, -tiny, tiny * 5]),
            "sub": ([1.0, 1.0, -1.0, 3.0], [tiny, -tiny * 3, tiny, tiny * 5]),
            "mul": ([1.0 + 2.0 ** (1 - bits), 3.1, -3.1, 0.1], [1.0 + 2.0 ** (2 - bits), 0.7, 0.7, 0.1]),
            "div": ([1.0, 2.0, -1.0, 1.0], [3.0, 7.0, 3.0, 10.0])}[operation]


@needs_block_loads
@pytest.mark.parametrize("operation", sorted(EXACT))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rounding_modes_bracket_the_exact_result(operation, dtype):
    """_rd and _ru are the neighbours around the exact result (one ulp apart where it is inexact),
    _rz is the one nearer zero, and _rn is the nearest: what the GPU's instruction gives."""
    x, y = (torch.tensor(values, dtype=dtype) for values in operands(operation, dtype))
    results = {mode: run_binary(f"{operation}_{mode}", x, y) for mode in ("rn", "rz", "rd", "ru")}
    for i in range(4):
        exact = EXACT[operation](Fraction(float(x[i])), Fraction(float(y[i])))
        down, up = float(results["rd"][i]), float(results["ru"][i])
        assert Fraction(down) < exact < Fraction(up), (operation, i, down, up)  # every case here is inexact
        assert up == torch.nextafter(results["rd"][i], torch.tensor(math.inf, dtype=dtype)).item()
        assert float(results["rz"][i]) == (down if exact > 0 else up)
        nearest = EXACT[operation](x[i], y[i]).item()
        assert float(results["rn"][i]) == nearest


@needs_block_loads
def test_sqrt_rounding_modes_bracket_the_root():
    global FUNCTION
    module = libdevice()
    x = torch.tensor([2.0, 3.0, 5.0, 4.0])
    results = {}
    for mode in ("rd", "ru", "rz"):
        out = torch.zeros(4)
        with kwshim.activate():
            FUNCTION = getattr(module, f"sqrt_{mode}")
            apply_function[(1,)](x, out)
        results[mode] = out
    for i in range(3):
        down, up = Fraction(float(results["rd"][i])), Fraction(float(results["ru"][i]))
        assert down ** 2 < Fraction(float(x[i])) < up ** 2
        assert results["rz"][i] == results["rd"][i]
    assert results["rd"][3] == results["ru"][3] == 2.0  # exact: every mode agrees


@needs_block_loads
def test_exact_zero_sum_is_minus_zero_rounding_down_only():
    x, y = torch.tensor([1.0, 0.0, -0.0, 2.5]), torch.tensor([-1.0, -0.0, -0.0, -2.5])
    down, up = run_binary("add_rd", x, y), run_binary("add_ru", x, y)
    assert down.tolist() == [0.0] * 4 and torch.signbit(down).tolist() == [True] * 4
    assert torch.signbit(up).tolist() == [False, False, True, False]  # -0 + -0 keeps its sign (IEEE 754, 6.3)


def test_a_function_without_an_implementation_names_itself_and_the_workaround():
    module = libdevice()
    names = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
             and not isinstance(v, type) and n not in IMPLEMENTATIONS]
    if not names:
        pytest.skip("every libdevice function has a CPU implementation")
    with kwshim.activate():
        with pytest.raises(NotImplementedError, match=rf"libdevice.{names[0]}\(\) has no CPU implementation"):
            getattr(module, names[0])(1.0)


def test_libdevice_is_restored_exactly_after_the_switch():
    module = libdevice()
    before = dict(vars(module))
    with kwshim.activate():
        assert any(vars(module)[n] is not before[n] for n in before if n == "tanh" or n == "exp")
    assert all(vars(module)[n] is v for n, v in before.items()) and set(vars(module)) == set(before)


try:  # bound at import, as Liger-Kernel does: patching the module afterwards does not reach it
    from triton.language.extra import libdevice as imported_libdevice
    from triton.language.extra.libdevice import tanh as imported_tanh
except ImportError:
    imported_libdevice = imported_tanh = None


@triton.jit
def _rsqrt_helper(x):
    return imported_libdevice.rsqrt(x)


@kwsafe
@triton.jit
def tanh_plus_rsqrt(x_ptr, out_ptr):
    offsets = tl.arange(0, 4)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, imported_tanh(x) + _rsqrt_helper(x))


@needs_block_loads
def test_a_wrapped_kernel_gets_libdevice_without_the_switch_even_imported_by_name():
    module = libdevice()
    x, out = torch.tensor([0.5, 1.0, 2.0, 3.5]), torch.zeros(4)
    tanh_plus_rsqrt[(1,)](x, out)
    torch.testing.assert_close(out, torch.tanh(x) + torch.rsqrt(x))
    assert imported_tanh is vars(module)["tanh"] and imported_libdevice is module  # globals put back
    assert not kwshim.doors.switch.is_active()


@triton.jit
def apply_unary(x_ptr, out_ptr):
    offsets = tl.arange(0, 4)
    tl.store(out_ptr + offsets, FUNCTION(tl.load(x_ptr + offsets)).to(tl.float32))


@needs_block_loads
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_half_width_argument_is_refused_as_compiled_triton_refuses_it(dtype):
    """Compiled Triton's libdevice takes fp32 and fp64 alone: a bf16 or fp16 argument fails to
    compile (measured on the H200: the numerics table's libdevice rows)."""
    global FUNCTION
    module = libdevice()
    x, out = torch.tensor([0.5, 1.0, 2.0, 3.5]).to(dtype), torch.zeros(4)
    with kwshim.activate(), pytest.raises(Exception) as caught:
        FUNCTION = module.exp
        apply_unary[(1,)](x, out)
    name = {torch.float16: "fp16", torch.bfloat16: "bf16"}[dtype]
    assert f"kwshim: compiled Triton has no libdevice.exp for arguments of type ({name}): it takes (fp32), (fp64)" \
        in str(caught.value)
    assert out.tolist() == [0.0] * 4


@triton.jit
def power_of_int(x_ptr, out_ptr):
    offsets = tl.arange(0, 4)
    tl.store(out_ptr + offsets, MODULE.pow(tl.load(x_ptr + offsets), 2))


@needs_block_loads
def test_the_types_taken_are_compiled_triton_s_own_table():
    from kwshim.arithmetic.libdevice import accepted_types

    global MODULE
    MODULE = libdevice()
    cuda = importlib.import_module("triton.language.extra.cuda.libdevice")
    assert accepted_types(cuda.exp) == {("fp32",), ("fp64",)}
    assert ("fp32", "int32") in accepted_types(cuda.pow) and ("fp32", "fp64") not in accepted_types(cuda.pow)
    x, out = torch.tensor([0.5, 1.0, 2.0, 3.5]), torch.zeros(4)
    with kwshim.activate():  # a Python int is an int32 to compiled Triton: pow takes (fp32, int32)
        power_of_int[(1,)](x, out)
    assert out.tolist() == (x ** 2).tolist()


@triton.jit
def power_of_float(x_ptr, out_ptr, EXPONENT: tl.constexpr):
    offsets = tl.arange(0, 4)
    tl.store(out_ptr + offsets, MODULE.pow(tl.load(x_ptr + offsets), EXPONENT))


@needs_block_loads
def test_a_float_below_fp32_s_normal_range_is_an_fp64_argument():
    """Compiled ``to_tensor`` types a Python float as fp32 only where it is a normal fp32 (or 0, inf,
    NaN): ``pow(fp32, 1e-40)`` is (fp32, fp64), which pow does not take (the table's
    ``libdevice.pow_tiny`` rows, on 3.6; 3.0-3.4 promote it to (fp64, fp64)), while ``pow(fp32, 0.5)``
    is (fp32, fp32)."""
    global MODULE
    MODULE = libdevice()
    x, out = torch.tensor([0.25, 1.0, 4.0, 9.0]), torch.zeros(4)
    with kwshim.activate():
        power_of_float[(1,)](x, out, 0.5)
        assert out.tolist() == [0.5, 1.0, 2.0, 3.0]
        if RELEASE < (3, 5):
            power_of_float[(1,)](x, out, 1e-40)
            assert out.tolist() == [1.0] * 4
            return
        with pytest.raises(Exception) as caught:
            power_of_float[(1,)](x, out, 1e-40)
    assert "kwshim: compiled Triton has no libdevice.pow for arguments of type (fp32, fp64)" in str(caught.value)


@triton.jit
def libdevice_edges(x_ptr, out_ptr, bits_ptr):
    offsets = tl.arange(0, 4)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, MODULE.sqrt_rn(x) + MODULE.exp(2.0) * 0)  # a call with no tensor argument
    tl.store(bits_ptr + offsets, MODULE.float_as_uint(-x) >> 31)  # signed in Triton's table: an arithmetic shift


@needs_block_loads
def test_fp32_subnormal_arguments_are_zeros_under_gpu_numerics_and_unsigned_results_are_signed():
    """The H200's libdevice reads an fp32 subnormal as zero (``sqrt_rn(1e-40)`` is 0: the table's
    libdevice rows); ``numerics="ieee"`` computes it. ``float_as_uint(-x) >> 31`` is -1 compiled."""
    global MODULE
    MODULE = libdevice()
    x, out, bits = torch.tensor([1e-40, 4.0, 1.0, 9.0]), torch.zeros(4), torch.zeros(4, dtype=torch.int32)
    with kwshim.activate():
        libdevice_edges[(1,)](x, out, bits)
    assert out.tolist() == [0.0, 2.0, 1.0, 3.0] and bits.tolist() == [-1, -1, -1, -1]
    with kwshim.activate(numerics="ieee"):
        libdevice_edges[(1,)](x, out, bits)
    assert out[0].item() == pytest.approx(1e-20, rel=1e-6)


@kwsafe
@triton.jit
def through_attributes(x_ptr, out_ptr):
    offsets = tl.arange(0, 4)
    tl.store(out_ptr + offsets, tl.extra.cuda.libdevice.tanh(tl.load(x_ptr + offsets)))


@needs_block_loads
def test_a_wrapped_kernel_gets_libdevice_reached_through_attributes_without_the_switch():
    """``tl.extra.cuda.libdevice.tanh`` under ``@kwsafe`` alone gave Triton's "Did you forget to add
    @triton.jit" (3.0) or None in arithmetic (3.6+)."""
    try:
        module = importlib.import_module("triton.language.extra.cuda.libdevice")
    except ImportError:
        pytest.skip("this Triton has no triton.language.extra.cuda.libdevice")
    original = vars(module)["tanh"]
    x, out = torch.tensor([0.5, 1.0, 2.0, 3.5]), torch.zeros(4)
    through_attributes[(1,)](x, out)
    torch.testing.assert_close(out, torch.tanh(x))
    assert vars(module)["tanh"] is original and not kwshim.doors.switch.is_active()


@triton.jit
def mixed_types(ints_ptr, halves_ptr, out_ptr):
    offsets = tl.arange(0, 4)
    remainders = MODULE.fmod(tl.load(ints_ptr + offsets), 2.5)  # (int32, fp32)
    powers = MODULE.pow(tl.load(halves_ptr + offsets), 1.0001)  # (fp16, fp32)
    tl.store(out_ptr + offsets, remainders.to(tl.float32) + powers.to(tl.float32) * 0)
    tl.store(out_ptr + 4 + offsets, powers.to(tl.float32))


@needs_block_loads
def test_mixed_argument_types_are_promoted_where_the_release_s_front_end_promotes_them():
    """Triton's own front end types the call: 3.0-3.4 promote a type tuple their table lacks
    (``fmod(int32, fp32)`` is fp32's, ``pow(fp16, fp32)`` fp32's: 1000.69, not fp16's 1000.0);
    3.5 on look the tuple up first and refuse it."""
    global MODULE
    MODULE = libdevice()
    ints, halves = torch.tensor([7, -7, 5, 0], dtype=torch.int32), torch.full((4,), 1000.0, dtype=torch.float16)
    out = torch.zeros(8)
    with kwshim.activate():
        if RELEASE >= (3, 5):
            with pytest.raises(Exception) as caught:
                mixed_types[(1,)](ints, halves, out)
            assert "kwshim: compiled Triton has no libdevice.fmod for arguments of type (int32, fp32)" \
                in str(caught.value)
            return
        mixed_types[(1,)](ints, halves, out)
    assert out[:4].tolist() == [2.0, -2.0, 0.0, 0.0]
    exponent = float(torch.tensor(1.0001))  # the constant is an fp32: pow's own (fp32, fp32)
    assert out[4:].tolist() == [float(torch.tensor(1000.0 ** exponent))] * 4


@triton.jit
def tanh_rows(x_ptr, out_ptr, N: tl.constexpr):
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(out_ptr + offsets, MODULE.tanh(tl.load(x_ptr + offsets)))


@needs_block_loads
def test_tanh_has_the_h200_s_bits_below_0_6_and_is_within_2_ulps_above():
    """``parity/libdevice_tanh_h200.npy``: 17,379 fp32 inputs (uniform on [-12, 12] and [-0.7, 0.7], logarithmic
    down to subnormals, 4096 neighbours of 0.6, 9.0109 and 1e-3, inf and NaN) and the bits compiled
    ``libdevice.tanh`` gave on the H200 (Triton 3.6.0). Below 0.6 it is an fma polynomial, reproduced
    exactly; above, the approximate ex2 and rcp are exactly rounded here."""
    import os

    import numpy as np

    global MODULE
    MODULE = libdevice()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    inputs, h200 = np.load(os.path.join(root, "parity", "libdevice_tanh_h200.npy"))
    n = inputs.size // 64 * 64
    x, out = torch.from_numpy(inputs[:n].view(np.float32).copy()), torch.zeros(n)
    with kwshim.activate():
        tanh_rows[(n // 64,)](x, out, N=64)
    got, want = out.numpy().view(np.uint32), h200[:n]
    below = np.abs(inputs[:n].view(np.float32)) < 0.6
    assert np.array_equal(got[below], want[below]) and below.sum() > 4000
    finite = ~below & ~np.isnan(h200[:n].view(np.float32))
    ulps = np.abs(got[finite].view(np.int32).astype(np.int64) - want[finite].view(np.int32).astype(np.int64))
    assert ulps.max() <= 2 and (ulps == 0).mean() > 0.95
