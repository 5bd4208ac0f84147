"""libdevice at its edges (``interpreter/math_table``): each case derived from the function's
definition (IEEE 754, C, the CUDA math API, PTX ``cvt``), exact where the definition is exact:
Python's ``math`` and ``Fraction`` as references, not stored numbers."""

import math
from fractions import Fraction

import pytest

np = pytest.importorskip("numpy")

from kwshim.arithmetic.math_table import TABLE  # noqa: E402

F32 = np.float32
INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1


def call(name, *values):
    """The table's function on NumPy scalars-as-arrays, and its result as Python values."""
    function = TABLE[name]
    with np.errstate(all="ignore"):
        result = np.asarray(function(*(np.asarray(v) for v in values)))
    return result.item() if result.size == 1 else result


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


@pytest.mark.parametrize("x, y", [(1.0, 0.1), (5.5, 2.0), (-7.25, 3.0), (1e30, 3.0), (2.5, 1.0), (3.5, 1.0)])
def test_remainder_is_x_minus_the_nearest_multiple_exactly(x, y):
    x, y = F32(x), F32(y)
    exact = Fraction(float(x)) - Fraction(float(y)) * _nearest_even(Fraction(float(x)) / Fraction(float(y)))
    assert call("remainder", x, y) == float(exact)


def _nearest_even(q):
    whole = math.floor(q)
    rest = q - whole
    return whole + (1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2) else 0)


def test_remainder_of_the_special_operands():
    assert call("remainder", F32(1.0), F32(0.1)) == pytest.approx(-1.4901161e-08, rel=1e-6)
    assert call("remainder", F32(5.0), F32(math.inf)) == 5.0  # x, for a finite x
    assert same(call("remainder", F32(-0.0), F32(1.0)), -0.0)
    assert math.isnan(call("remainder", F32(1.0), F32(0.0))) and math.isnan(call("remainder", F32(math.inf), F32(1)))


def test_erfcinv_of_a_small_argument_inverts_erfc():
    for x in (1e-10, 1e-30, 0.5, 1.5):
        value = call("erfcinv", F32(x))
        assert math.isfinite(value) and math.erfc(value) == pytest.approx(float(F32(x)), rel=1e-5)


@pytest.mark.parametrize("x, sine, cosine", [(1.0, 0.0, -1.0), (0.5, 1.0, 0.0), (-3.0, -0.0, -1.0), (2.0, 0.0, 1.0),
                                             (1.5, -1.0, 0.0), (2.0 ** 23 + 1, 0.0, -1.0), (2.0 ** 24, 0.0, 1.0)])
def test_sinpi_and_cospi_are_exact_at_integers_and_half_integers(x, sine, cosine):
    assert same(call("sinpi", F32(x)), sine) and same(call("cospi", F32(x)), cosine)


def test_sinpi_between_the_exact_points_is_sin_of_pi_x():
    assert call("sinpi", F32(0.25)) == pytest.approx(math.sqrt(0.5), rel=1e-7)
    assert call("cospi", F32(1.0 / 3)) == pytest.approx(0.5, rel=1e-6)


@pytest.mark.parametrize("x, rounded", [(0.49999997, 0.0), (8388609.0, 8388609.0), (2.5, 3.0), (-2.5, -3.0),
                                        (-0.4, -0.0), (1.5, 2.0)])
def test_round_takes_half_way_cases_away_from_zero_and_nothing_else(x, rounded):
    assert same(call("round", F32(x)), rounded)
    assert call("llround", F32(x)) == int(rounded)


def test_logb_and_ilogb_are_the_exponent():
    assert call("logb", F32(16777215)) == 23.0 and call("logb", F32(16777216)) == 24.0
    assert call("logb", F32(1e-40)) == -133.0  # a subnormal's own exponent
    assert call("logb", F32(0)) == -math.inf and call("logb", F32(math.inf)) == math.inf
    assert call("ilogb", F32(16777215)) == 23
    assert call("ilogb", F32(math.inf)) == INT_MAX and call("ilogb", F32(0)) == INT_MIN


@pytest.mark.parametrize("name, x, expected", [
    ("float2int_rn", math.nan, 0), ("float2int_rn", 3e9, INT_MAX), ("float2int_rz", -3e9, INT_MIN),
    ("float2int_rd", -1.5, -2), ("float2uint_rn", -1.0, 0), ("float2uint_rn", 5e9, -1),  # 0xffffffff, signed
    ("double2int_ru", 1.5, 2),
])
def test_float_to_integer_conversions_saturate_as_ptx_cvt(name, x, expected):
    assert call(name, F32(x) if name.startswith("float") else np.float64(x)) == expected


def test_unsigned_results_are_signed_as_triton_s_table_declares_them():
    """Triton's table gives float2uint, float_as_uint (and the ull/double forms) a signed result:
    ``float_as_uint(-x) >> 31`` is -1 compiled (an arithmetic shift), not 1."""
    for name in ("float2uint_rn", "double2uint_rz", "float2ull_rd", "double2ull_ru", "float_as_uint"):
        source = F32(-2.0) if name.startswith("float") else np.float64(-2.0)
        assert np.asarray(TABLE[name](np.asarray(source))).dtype.kind == "i", name
    assert int(np.asarray(call("float_as_uint", F32(-2.0))).astype(np.int32)) >> 31 == -1


def test_fma_rounds_once_and_keeps_an_infinite_addend():
    assert call("fma", F32(24929), F32(673 * 2.0 ** -24), F32(2.0 ** -80)) == float(np.nextafter(F32(1), F32(2)))
    assert call("fma_rn", np.float64(1e300), np.float64(1e10), np.float64(-math.inf)) == -math.inf
    for mode in ("rz", "rd", "ru"):
        assert call(f"fma_{mode}", F32(3e38), F32(10.0), F32(math.inf)) == math.inf


def test_directed_roundings_past_the_largest_double_do_not_raise():
    largest = float(np.finfo(np.float64).max)
    assert call("mul_rz", 1e200, 1e200) == largest and call("mul_ru", 1e200, 1e200) == math.inf
    assert call("add_rd", -largest, -largest) == -math.inf and call("add_ru", -largest, -largest) == -largest


@pytest.mark.parametrize("name, args, expected", [
    ("saturatef", (math.nan,), 0.0), ("fdim", (math.inf, math.inf), 0.0), ("fdim", (1.0, 3.0), 0.0),
    ("fdim", (3.0, 1.0), 2.0), ("norm3d", (1e20, 0.0, 0.0), float(F32(1e20))),
    ("j0", (math.inf,), 0.0), ("y0", (math.inf,), 0.0), ("j1", (-math.inf,), 0.0), ("y1", (math.inf,), 0.0),
    ("cyl_bessel_i0", (math.inf,), math.inf),
])
def test_special_values_are_the_definition_s(name, args, expected):
    assert same(call(name, *(F32(a) for a in args)), expected)


def test_the_results_an_fp32_intermediate_lost():
    largest = float(np.finfo(np.float32).max)
    assert float(F32(call("rhypot", F32(largest), F32(largest)))) == float(F32(1 / math.hypot(largest, largest)))
    assert call("cyl_bessel_i0", F32(89.0)) == pytest.approx(1.9012e37, rel=1e-3)


def test_mul24_takes_signed_24_bit_operands():
    assert call("mul24", np.int32(1), np.int32(-1)) == -1
    assert call("mul24", np.int32(1 << 23), np.int32(2)) == -(1 << 24)  # bit 23 is the sign


@pytest.mark.parametrize("name, x, expected", [
    ("lgamma", 0.0, math.inf), ("lgamma", -2.0, math.inf), ("lgamma", -math.inf, math.inf),
    ("tgamma", math.nan, math.nan), ("tgamma", -math.inf, math.nan), ("tgamma", 172.0, math.inf),
    ("tgamma", -0.0, -math.inf), ("tgamma", -3.0, math.nan), ("tgamma", 5.0, 24.0),
])
def test_lgamma_and_tgamma_give_inf_or_nan_where_python_raises(name, x, expected):
    assert same(call(name, np.float64(x)), expected)


def test_popc_counts_the_bits_of_every_width():
    assert call("popc", np.int8(-1)) == 8 and call("popc", np.int32(-1)) == 32 and call("popc", np.int64(5)) == 2
