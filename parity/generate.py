"""Writes ``parity/libdevice_kernels.py``: one ``@kwsafe`` kernel per libdevice function of the parity
suite, each storing the function of eight values (compiled on the GPU, interpreted with kwshim's CPU
implementations), so the two can be compared.

    python parity/generate.py          # rewrite the file
    python parity/generate.py --check  # exit status 1 if the file is not what this writes

The kernels are written out, not made at import, because compiled Triton reads a kernel's source
from its file. ``tests/test_parity.py`` holds the committed file to this generator.
"""

import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "libdevice_kernels.py")

#: Compared within a tolerance (``parity.scenarios``), results stored as fp32.
UNARY = [
    "tanh", "rsqrt", "erf", "erfc", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt",
    "cbrt", "rcbrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "floor",
    "ceil", "trunc", "rint", "round", "fast_expf", "fast_logf", "erfinv", "normcdf", "normcdfinv", "lgamma",
    "tgamma", "j0", "j1", "y0", "y1", "cyl_bessel_i0", "cyl_bessel_i1", "logb", "sinpi", "cospi", "saturatef",
    "isnan", "isinf", "signbit", "ilogb", "llrint", "float2int_rn", "float2int_rz", "float_as_int",
]
BINARY = ["pow", "atan2", "fmod", "hypot", "copysign", "fdim", "div_rn", "remainder", "rhypot"]
TERNARY = ["fma", "norm3d"]
#: Rounding-mode variants, compared bit for bit: every result is inexact, so rounding toward zero,
#: down or up gives another float than rounding to nearest; stored in the input's dtype.
ROUNDED_UNARY = ["sqrt_rz", "sqrt_rd", "sqrt_ru", "rcp_rz", "rcp_rd", "rcp_ru"]
ROUNDED_BINARY = [f"{operation}_{mode}" for operation in ("add", "sub", "mul", "div") for mode in ("rz", "rd", "ru")]
ROUNDED_TERNARY = ["fma_rn", "fma_rz", "fma_rd", "fma_ru"]

HEADER = '''"""Kernels for the libdevice rows of the parity suite: each stores one libdevice function of eight
values, so compiled (CUDA) and interpreted (CPU, kwshim's implementations) results can be compared.
Written by ``parity/generate.py``: edit that, not this. Every kernel is @kwsafe (interpreted: the
libdevice names in its globals are swapped for CPU implementations during each launch)."""

import triton
import triton.language as tl
from triton.language.extra import libdevice

from kwshim import kwsafe

UNARY = {unary}
BINARY = {binary}
TERNARY = {ternary}
ROUNDED_UNARY = {rounded_unary}
ROUNDED_BINARY = {rounded_binary}
ROUNDED_TERNARY = {rounded_ternary}
'''

KERNEL = '''

@kwsafe
@triton.jit
def ld_{name}(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
{load_y}    tl.store(out_ptr + offsets, libdevice.{name}({operands}){cast})
'''

_OPERANDS = {1: "x", 2: "x, y", 3: "x, y, x"}


def _listed(names) -> str:
    """A list literal, one indented block of names."""
    body = textwrap.fill(", ".join(repr(name) for name in names) + ",", width=116, initial_indent="    ",
                         subsequent_indent="    ", break_on_hyphens=False)
    return "[\n" + body + "\n]"


def source() -> str:
    lists = {key: _listed(value)
             for key, value in (("unary", UNARY), ("binary", BINARY), ("ternary", TERNARY),
                                ("rounded_unary", ROUNDED_UNARY), ("rounded_binary", ROUNDED_BINARY),
                                ("rounded_ternary", ROUNDED_TERNARY))}
    text = HEADER.format(**lists)
    for names, arity, cast in ((UNARY, 1, ".to(tl.float32)"), (BINARY, 2, ".to(tl.float32)"),
                               (TERNARY, 3, ".to(tl.float32)"), (ROUNDED_UNARY, 1, ""), (ROUNDED_BINARY, 2, ""),
                               (ROUNDED_TERNARY, 3, "")):
        for name in names:
            text += KERNEL.format(name=name, operands=_OPERANDS[arity], cast=cast,
                                  load_y="    y = tl.load(y_ptr + offsets)\n" if arity > 1 else "")
    return text


def main(argv) -> int:
    text = source()
    if "--check" in argv:
        with open(TARGET) as handle:
            current = handle.read()
        if current != text:
            print(f"{TARGET} is not what parity/generate.py writes: run python parity/generate.py", file=sys.stderr)
            return 1
        return 0
    with open(TARGET, "w") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
