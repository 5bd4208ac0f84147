"""``kwshim[fast]``'s fp32 -> bf16 rounding (``compiled_loops.bf16_bits``) against ml_dtypes'
``astype``, and with ``--fp16`` its fp32 -> fp16 rounding (``compiled_loops.fp16_bits``) against
NumPy's, over every fp32 bit pattern but the NaNs (whose bits NumPy's path gives), in chunks of
2**26: the number that differ (0 expected). About a minute here for bf16, six for fp16 (NumPy's
fp16 conversion is scalar).

    .venv/bin/python benchmarks/bf16_exhaustive.py [--fp16]
"""

import argparse

import numpy as np


def main():
    import ml_dtypes

    from kwshim.arithmetic import compiled_loops

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fp16", action="store_true", help="fp32 -> fp16 in place of fp32 -> bf16")
    fp16 = parser.parse_args().fp16
    rounding, target, name = (compiled_loops.fp16_bits, np.float16, "fp16") if fp16 else \
        (compiled_loops.bf16_bits, ml_dtypes.bfloat16, "bf16")
    chunk = 1 << 26
    differ = checked = 0
    out = np.empty(chunk, np.uint16)
    for start in range(0, 1 << 32, chunk):
        values = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
        values = values[~np.isnan(values)]
        bits = out[:values.size]
        if rounding(values, bits):
            raise SystemExit(f"kwshim: {rounding.__name__} saw a NaN where none was left")
        with np.errstate(over="ignore"):
            differ += int((bits != values.astype(target).view(np.uint16)).sum())
        checked += values.size
    print(f"{checked} fp32 patterns (all but the NaNs) rounded to {name}: {differ} differ from "
          f"{'NumPy' if fp16 else 'ml_dtypes'}")


if __name__ == "__main__":
    main()
