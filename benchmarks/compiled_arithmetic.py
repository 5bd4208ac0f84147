"""The GPU's arithmetic compiled (numba, ``kwshim[fast]``) against the NumPy code, side by side in one
process: each function alone over 2M fp32 elements, and a batched launch of a kernel that multiplies,
adds and exponentiates (2048 programs of 1024 fp32 elements), with the compiled loops and without.
Medians of ``--repeats`` runs, alternating; every compiled result is checked bit for bit first.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 .venv/bin/python benchmarks/compiled_arithmetic.py
"""

import argparse
import statistics
import time

import numpy as np


def _median_ms(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def functions(repeats, size):
    from kwshim.interpreter import compiled
    from kwshim.interpreter.fma import numpy_fma
    from kwshim.interpreter.gpu_arithmetic import exp_approximation, flushing_approximation

    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(size).astype(np.float32) for _ in range(3))
    x = (rng.standard_normal(size) * 30).astype(np.float32)
    rows = [("fma (fp32)", lambda: numpy_fma(a, b, c), lambda: compiled.fma_ufunc()(a, b, c)),
            ("tl.exp (ex2.approx model)", lambda: exp_approximation(x), lambda: compiled.exp_ufunc()(x)),
            ("tl.exp2 (ex2.approx.ftz)", lambda: flushing_approximation(np.exp2, True, x),
             lambda: compiled.exp2_ufunc()(x))]
    print(f"{'function, ' + format(size, ',') + ' fp32 elements':40} {'NumPy ms':>9} {'numba ms':>9} {'ratio':>6}")
    with np.errstate(all="ignore"):
        for name, numpy_form, compiled_form in rows:
            assert np.array_equal(numpy_form().view(np.uint32), compiled_form().view(np.uint32)), name
            plain = _median_ms(numpy_form, repeats)
            fast = _median_ms(compiled_form, repeats)
            print(f"{name:40} {plain:9.1f} {fast:9.1f} {plain / fast:5.1f}x")
        floor = _median_ms(lambda: a * b + c, repeats)
        print(f"{'plain a * b + c (two roundings)':40} {floor:9.1f}")


def launch(repeats, rows):
    import torch
    import triton
    import triton.language as tl

    import kwshim
    from kwshim.interpreter import compiled

    @triton.jit
    def fused_exp(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
        offsets = tl.program_id(0) * N + tl.arange(0, N)
        x, y = tl.load(x_ptr + offsets), tl.load(y_ptr + offsets)
        tl.store(out_ptr + offsets, x * y + tl.exp(x - 1.0) * tl.exp2(y))

    globals()["fused_exp"] = fused_exp  # Triton's interpreter reads triton.language from the function's globals
    x, y = torch.randn(rows, 1024), torch.randn(rows, 1024)
    makers = {name: getattr(compiled, name) for name in ("fma_ufunc", "exp_ufunc", "exp2_ufunc")}

    def run(engine):
        for name, make in makers.items():
            setattr(compiled, name, make if engine == "numba" else (lambda: None))
        out = torch.empty(rows, 1024)
        fused_exp[(rows,)](x, y, out, N=1024)
        return out

    with kwshim.activate(grid="batched"):
        try:
            results = {engine: run(engine) for engine in ("numba", "numpy")}
            assert torch.equal(results["numba"].view(torch.int32), results["numpy"].view(torch.int32))
            times = {"numba": [], "numpy": []}
            for _ in range(repeats):
                for engine in times:
                    start = time.perf_counter()
                    run(engine)
                    times[engine].append(time.perf_counter() - start)
        finally:
            for name, make in makers.items():
                setattr(compiled, name, make)
    plain, fast = (1e3 * statistics.median(times[engine]) for engine in ("numpy", "numba"))
    print(f"{'batched launch, ' + str(rows) + 'x1024 fp32 (x*y + exp*exp2)':40} {plain:9.1f} {fast:9.1f} "
          f"{plain / fast:5.1f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--size", type=int, default=2_000_000)
    parser.add_argument("--rows", type=int, default=2048)
    options = parser.parse_args()
    from kwshim.interpreter import compiled

    if compiled.engine() != "numba":
        raise SystemExit("kwshim: numba is not installed: pip install 'kwshim[fast]'")
    functions(options.repeats, options.size)
    launch(options.repeats, options.rows)


if __name__ == "__main__":
    main()
