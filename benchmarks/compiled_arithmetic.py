"""The GPU's arithmetic made fast, side by side in one process against the plain NumPy code: the fused
multiply-add compiled (numba, ``kwshim[fast]``), ``tl.exp``/``tl.exp2`` chunk by chunk
(``approximations._through_fp64``) against whole-array passes, and ``tl.exp`` compiled
(``compiled_loops.ex2_of_exp``) against the chunks, each over 2M fp32 elements; and a batched launch
of a kernel that multiplies, adds and exponentiates (2048 programs of 1024 fp32 elements), with
``kwshim[fast]`` and with the NumPy code. Medians of ``--repeats`` runs, alternating; every fast
result is checked bit for bit first.

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
    from kwshim.arithmetic import compiled
    from kwshim.arithmetic.fma import numpy_fma
    from kwshim.arithmetic.gpu_arithmetic import exp_approximation, flushed, flushing_approximation

    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(size).astype(np.float32) for _ in range(3))
    x = (rng.standard_normal(size) * 30).astype(np.float32)

    def whole_exp():
        return np.exp2((x * compiled.LOG2_E).astype(np.float64)).astype(np.float32)

    def whole_exp2():
        return flushed(np.exp2(flushed(x).astype(np.float64)).astype(np.float32))

    from kwshim.arithmetic import compiled_loops

    compiled_exp = compiled_loops.element_wise("ex2_of_exp(@0@)", ("full",))

    def exp_compiled():
        out = np.empty((1, x.size), np.float32)
        compiled_exp(out, x.reshape(1, -1))
        return out.reshape(-1)

    rows = [("fma (fp32), NumPy | numba", lambda: numpy_fma(a, b, c), lambda: compiled.fma_ufunc()(a, b, c)),
            ("tl.exp, whole-array | chunks", whole_exp, lambda: exp_approximation(x)),
            ("tl.exp, chunks | compiled", lambda: exp_approximation(x), exp_compiled),
            ("tl.exp2, whole-array | chunks", whole_exp2, lambda: flushing_approximation(np.exp2, True, x))]
    print(f"{'function, ' + format(size, ',') + ' fp32 elements':40} {'plain ms':>9} {'fast ms':>9} {'ratio':>6}")
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
    from kwshim.arithmetic import compiled

    @triton.jit
    def fused_exp(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
        offsets = tl.program_id(0) * N + tl.arange(0, N)
        x, y = tl.load(x_ptr + offsets), tl.load(y_ptr + offsets)
        tl.store(out_ptr + offsets, x * y + tl.exp(x - 1.0) * tl.exp2(y))

    globals()["fused_exp"] = fused_exp  # Triton's interpreter reads triton.language from the function's globals
    x, y = torch.randn(rows, 1024), torch.randn(rows, 1024)
    makers = {name: getattr(compiled, name) for name in ("fma_ufunc", "engine")}
    without = {"fma_ufunc": lambda: None, "engine": lambda: "numpy"}  # the NumPy code everywhere

    def run(engine):
        for name, make in makers.items():
            setattr(compiled, name, make if engine == "numba" else without[name])
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
    from kwshim.arithmetic import compiled

    if compiled.engine() != "numba":
        raise SystemExit("kwshim: numba is not installed: pip install 'kwshim[fast]'")
    functions(options.repeats, options.size)
    launch(options.repeats, options.rows)


if __name__ == "__main__":
    main()
