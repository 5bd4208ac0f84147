"""Scalar launch arguments reach the interpreted kernel typed as compiled Triton types them
(measured on an H200, compiled 3.6.0): a float is fp32 (or the annotated type), a bool i1."""

import pytest
import torch
import triton
import triton.language as tl

from .kernels import kwsafe, times_scalar

GRID = (1,)


@kwsafe
@triton.jit
def eps_to(out_ptr, eps):
    tl.store(out_ptr, eps.to(tl.float32) * 2)  # Liger's layer_norm: 'float' object has no attribute 'to'


@kwsafe
@triton.jit
def bit_width(out_ptr, value):
    tl.store(out_ptr, value.dtype.primitive_bitwidth)


@kwsafe
@triton.jit
def annotated_width(out_ptr, value: tl.float16):
    tl.store(out_ptr, value.dtype.primitive_bitwidth)


@kwsafe
@triton.jit
def constexpr_value(out_ptr, VALUE: tl.constexpr):
    tl.store(out_ptr, VALUE * 2)


def _casts_work():
    """Triton 2.2's interpreter cannot cast at all ('Builder' object has no attribute 'target')."""
    try:
        eps_to[GRID](torch.zeros(1), 1.0)
    except AttributeError as exc:
        if "target" in str(exc):
            return False
        raise
    return True


def test_a_float_argument_is_an_fp32_scalar():
    if not _casts_work():
        pytest.skip("this release's interpreter cannot cast")
    out = torch.zeros(1)
    eps_to[GRID](out, 1.25)
    assert float(out[0]) == 2.5


def test_fp16_times_a_float_argument_computes_in_fp32_as_compiled():
    if not _casts_work():
        pytest.skip("this release's interpreter cannot cast")
    x, out = torch.ones(1, dtype=torch.float16), torch.zeros(1, dtype=torch.float32)
    times_scalar[GRID](x, out, 1.0001)
    assert float(out[0]) == pytest.approx(1.0001, abs=1e-6)  # in fp16 it would be exactly 1.0


@pytest.mark.parametrize("value, width", [(2.5, 32), (True, 1), (7, 32), (2 ** 40, 64)])
def test_scalar_widths_are_compiled_tritons(value, width):
    out = torch.zeros(1, dtype=torch.int32)
    bit_width[GRID](out, value)
    assert int(out[0]) == width


def test_an_annotated_float_parameter_gets_its_type():
    out = torch.zeros(1, dtype=torch.int32)
    annotated_width[GRID](out, 2.0)
    assert int(out[0]) == 16


def test_an_int_equal_to_1_is_specialised_to_a_constant_as_compiled():
    from kwshim.launch import scalars

    if not scalars._interpreter()[4]:
        pytest.skip("this release's interpreter cannot compute with the constant 1")
    with pytest.raises(Exception, match="dtype"):
        bit_width[GRID](torch.zeros(1, dtype=torch.int32), 1)  # compiled: 'constexpr' has no dtype


def test_constexpr_values_stay_python_values():
    out = torch.zeros(1)
    constexpr_value[GRID](out, 1.5)
    assert float(out[0]) == 3.0
