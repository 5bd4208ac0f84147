"""``kwshim[fast]``'s fp32 -> bf16 rounding (``compiled_loops.bf16_bits``) against ml_dtypes'
``astype`` over every fp32 bit pattern but the NaNs (whose bits NumPy's path gives), in chunks
of 2**26: the number that differ (0 expected). About a minute here.

    .venv/bin/python benchmarks/bf16_exhaustive.py
"""

import numpy as np


def main():
    import ml_dtypes

    from kwshim.interpreter import compiled_loops

    chunk = 1 << 26
    differ = checked = 0
    out = np.empty(chunk, np.uint16)
    for start in range(0, 1 << 32, chunk):
        values = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
        values = values[~np.isnan(values)]
        bits = out[:values.size]
        if compiled_loops.bf16_bits(values, bits):
            raise SystemExit("kwshim: bf16_bits saw a NaN where none was left")
        differ += int((bits != values.astype(ml_dtypes.bfloat16).view(np.uint16)).sum())
        checked += values.size
    print(f"{checked} fp32 patterns (all but the NaNs) rounded to bf16: {differ} differ from ml_dtypes")


if __name__ == "__main__":
    main()
