"""A tensor-core matmul kernel (``tl.dot`` over K in a loop, 128x128x32 blocks) batched on the virtual
device, against ``torch.matmul`` of the same shape in the same process: fp16 inputs, and fp32 inputs
at the default (TF32) precision. Each dot is the tensor cores' (each step of K summed exactly, then
added to the fp32 accumulator and rounded): with ``kwshim[fast]``'s compiled loop
(``compiled_dots.stepped_dot``), and in NumPy alone; both results are checked to be the same bits.
Medians of warm launches (the first traces the kernel).

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 .venv/bin/python benchmarks/dot_speed.py [--size 2048] \\
        [--page docs/evidence/speed.md]
"""

import argparse
import os
import statistics
import sys
import time

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import kwshim  # noqa: E402
from kwshim.arithmetic import compiled  # noqa: E402


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    columns = tl.program_id(1) * BN + tl.arange(0, BN)
    depth = tl.arange(0, BK)
    a = a_ptr + rows[:, None] * K + depth[None, :]
    b = b_ptr + depth[:, None] * N + columns[None, :]
    accumulator = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        accumulator += tl.dot(tl.load(a), tl.load(b))
        a += BK
        b += BK * N
    tl.store(c_ptr + rows[:, None] * N + columns[None, :], accumulator)


def _timed(work, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(dtype, size, repeats):
    """(kernel with the compiled loop, kernel in NumPy, torch.matmul) seconds, and whether the two
    kernels stored the same bits."""
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=generator).to(dtype)
    b = torch.randn(size, size, generator=generator).to(dtype)
    results = {}
    with kwshim.activate(device="cuda", grid="batched"):
        on_device = a.cuda(), b.cuda()
        for engine in ("compiled", "numpy"):
            out = torch.empty(size, size, device="cuda")

            def launch():
                matmul[(size // 128, size // 128)](*on_device, out, size, size, size, BM=128, BN=128, BK=32)

            original = compiled.stepped_dot_for
            if engine == "numpy":
                compiled.stepped_dot_for = lambda products: None  # the NumPy code, as without numba
            try:
                launch()  # traces
                results[engine] = (_timed(launch, repeats), out.cpu())
            finally:
                compiled.stepped_dot_for = original
    reference = _timed(lambda: torch.matmul(a, b), repeats)
    same = torch.equal(results["compiled"][1].view(torch.int32), results["numpy"][1].view(torch.int32))
    return results["compiled"][0], results["numpy"][0], reference, same


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--page", help="rewrite the table between this page's dot-speed markers")
    arguments = parser.parse_args()
    size = arguments.size
    rows = ["| inputs | kernel, kwshim[fast] | kernel, NumPy alone | torch.matmul (CPU) | kernel / torch.matmul | "
            "same bits |", "| --- | --- | --- | --- | --- | --- |"]
    for label, dtype in (("fp16", torch.float16), ("fp32 (TF32)", torch.float32)):
        fast, numpy_only, reference, same = measure(dtype, size, arguments.repeats)
        rows.append(f"| {label} | {fast:.2f} s | {numpy_only:.2f} s | {reference * 1e3:.0f} ms | "
                    f"{fast / reference:.0f}x | {'yes' if same else 'NO'} |")
        print(rows[-1], flush=True)
    if arguments.page:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "measure"))
        import evidence

        heading = (f"{evidence.stamp('make speed')} Triton {triton.__version__}, torch {torch.__version__}; "
                   f"{size}x{size}x{size}, 128x128x32 blocks, {(size // 128) ** 2} programs batched; medians of "
                   f"{arguments.repeats} warm launches.")
        evidence.rewrite(arguments.page, "dot-speed", heading + "\n\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
