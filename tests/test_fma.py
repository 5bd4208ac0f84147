"""``interpreter.fma``: ``a * b + c`` rounded once, checked against the exact value (``Fraction``)
rounded to nearest even by integer arithmetic, so that no float rounding stands in the reference."""

import math
from fractions import Fraction

import pytest

np = pytest.importorskip("numpy")
ml_dtypes = pytest.importorskip("ml_dtypes")

from kwshim.arithmetic.fma import fma  # noqa: E402

#: (significand bits with the hidden one, smallest normal exponent, largest exponent)
FORMATS = {"float16": (11, -14, 15), "bfloat16": (8, -126, 127), "float32": (24, -126, 127),
           "float64": (53, -1022, 1023)}


def _type(name):
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name).type


def rounded(exact: Fraction, name: str) -> float:
    """``exact`` rounded to nearest even in the format ``name`` (as a Python float, or inf)."""
    digits, low, high = FORMATS[name]
    if exact == 0:
        return 0.0
    sign, magnitude = (-1 if exact < 0 else 1), abs(exact)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    quantum = Fraction(2) ** (max(exponent, low) - (digits - 1))
    scaled = magnitude / quantum
    whole = math.floor(scaled)
    rest = scaled - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    value = whole * quantum
    if value >= Fraction(2) ** (high + 1):
        return sign * math.inf
    return sign * float(value)


def _values(name, count, seed):
    rng = np.random.RandomState(seed)
    kind = _type(name)
    scale = {"float16": 4, "bfloat16": 40, "float32": 40, "float64": 200}[name]
    raw = rng.standard_normal(count) * np.exp2(rng.randint(-scale, scale, count))
    return raw.astype(np.float32 if name == "bfloat16" else kind).astype(kind)


@pytest.mark.parametrize("name", list(FORMATS))
def test_random_and_near_tie_operands_round_once(name):
    kind = _type(name)
    a, b = _values(name, 400, 1), _values(name, 400, 2)
    # c cancels most of the product, or sits at a tie of it: the cases two roundings get wrong
    product = a.astype(np.float64) * b.astype(np.float64)
    c = np.concatenate([_values(name, 100, 3), (-product[100:200]).astype(kind),
                        (-product[200:300] * (1 + 2.0 ** -12)).astype(kind),
                        (product[300:] * 2.0 ** -FORMATS[name][0]).astype(kind)])
    got = fma(a, b, c)
    assert got.dtype == np.dtype(kind)
    for x, y, z, result in zip(a.tolist(), b.tolist(), c.tolist(), got.tolist()):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        want = rounded(exact, name)
        assert result == want or (want == 0 and result == 0), (name, x, y, z, result, want)


def test_the_double_rounding_case_of_the_issue():
    """fp32 ``fma(24929, 673 * 2**-24, 2**-80)``: rounded twice it is 1.0, once 1.0000001."""
    got = fma(np.float32([24929]), np.float32([673 * 2.0 ** -24]), np.float32([2.0 ** -80]))
    assert got.tolist() == [float(np.nextafter(np.float32(1), np.float32(2)))]


def test_the_double_rounding_case_among_values_that_round_once_in_fp64():
    """Only the elements whose fp64 sum is a midpoint of fp32 take the exact path: the case above,
    both signs, among random values, and in subnormal results, each as the exact value rounds."""
    a, b, c = _values("float32", 300, 4), _values("float32", 300, 5), _values("float32", 300, 6)
    a[[7, 150]], b[[7, 150]], c[[7, 150]] = [24929, -24929], 673 * 2.0 ** -24, [2.0 ** -80, -2.0 ** -80]
    a[299], b[299], c[299] = 2.0 ** -70, 2.0 ** -60, -(2.0 ** -140)
    # 2**-127 + 2**-150 * (1 + 2**-36): fp64 rounds it onto a midpoint of subnormals (its low bits all 0)
    a[298], b[298], c[298] = 2.0 ** -75 * (1 + 2.0 ** -12), 2.0 ** -75 * (1 - 4095 * 2.0 ** -24), 2.0 ** -127
    got = fma(a, b, c)
    assert got[298] == np.float32(2.0 ** -127 + 2.0 ** -149)
    assert abs(got[7]) == got[7] == -got[150] == np.nextafter(np.float32(1), np.float32(2))
    for x, y, z, result in zip(a.tolist(), b.tolist(), c.tolist(), got.tolist()):
        assert result == rounded(Fraction(x) * Fraction(y) + Fraction(z), "float32"), (x, y, z, result)


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_specials_are_ieee_s(name):
    kind = _type(name)
    a = np.array([1e30 if name == "float32" else 1e300, np.inf, 0.0, np.nan, -0.0, 2.0], kind)
    b = np.array([1e30 if name == "float32" else 1e10, 0.0, 5.0, 1.0, 1.0, 3.0], kind)
    c = np.array([-np.inf, 1.0, -0.0, 1.0, -0.0, np.inf], kind)
    got = fma(a, b, c)
    assert got[0] == -np.inf  # a finite product that overflows plus -inf is -inf, not NaN
    assert np.isnan(got[1]) and np.isnan(got[3])  # inf * 0, NaN
    assert got[2] == 0 and not np.signbit(got[2])  # +0 + -0 is +0
    assert got[4] == 0 and np.signbit(got[4])  # -0 + -0 is -0
    assert got[5] == np.inf


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_chain_of_fmas_in_fp64_rounds_each_step_once_ties_included(dtype):
    """``fma_chain`` (a thread's contracted sum: small blocks through fp64, one midpoint check at
    the end) against ``numpy_fma`` step by step: operands of mixed magnitudes, where fp64 sums are
    inexact, and integers whose sums fall on the type's midpoints (spacing 2 above 2**24 in fp32,
    2**11 in fp16)."""
    from kwshim.arithmetic.fma import fma_chain, numpy_fma

    rng = np.random.default_rng(3)
    top = 2 ** 24 if dtype == np.float32 else 2 ** 11
    scale = 2.0 ** rng.integers(-60 if dtype == np.float32 else -12, 12, (7, 4096))
    chains = [(list((rng.standard_normal((7, 4096)) * scale).astype(dtype)),
               list(rng.standard_normal((7, 4096)).astype(dtype)),
               (rng.standard_normal(4096) * 2.0 ** 20).astype(dtype)),
              (list(rng.integers(1, 4, (7, 4096)).astype(dtype)), list(rng.integers(1, 4, (7, 4096)).astype(dtype)),
               (top + 2 * rng.integers(0, 8, 4096)).astype(dtype))]
    bits = np.uint16 if dtype == np.float16 else np.uint32
    with np.errstate(over="ignore", invalid="ignore"):
        for xs, ys, start in chains:
            expected = start
            for x, y in zip(xs, ys):
                expected = numpy_fma(x, y, expected).astype(dtype)
            assert fma_chain(xs, ys, start).view(bits).tolist() == expected.view(bits).tolist()
