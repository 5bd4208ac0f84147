"""Launch overhead of @kwsafe on the CPU interpreter: median time ratio kwsafe / bare.

One process; within each round the two launch alternately, launch by launch, so drift hits
both sides alike; the ratio is the median over rounds.
Arguments are passed positionally so the bare launch works on every release.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.0.0 .venv/bin/python benchmarks/launch_overhead.py
"""

import argparse
import gc
import os
import statistics
import time

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from kwshim import kwsafe  # noqa: E402


def one_element(out_ptr, num_warps: tl.constexpr, num_stages: tl.constexpr):
    tl.store(out_ptr, num_warps * 10 + num_stages)


def one_element_plain(out_ptr, A: tl.constexpr, B: tl.constexpr):
    tl.store(out_ptr, A * 10 + B)


def compare(bare, safe, call, rounds, launches):
    """Median over rounds of (kwsafe time / bare time); `call(kernel)` launches once."""

    def launch(kernel):
        start = time.perf_counter()
        call(kernel)
        return time.perf_counter() - start

    for _ in range(launches):  # warm up both (first launches rewrite the kernel's AST)
        launch(bare), launch(safe)
    gc.disable()  # as timeit does: a collection landing in one side's launch is noise
    ratios, bare_times, safe_times = [], [], []
    try:
        for round_index in range(rounds):
            gc.collect()
            launch(bare), launch(safe)  # untimed: the first launch after a collection runs cold
            bare_total = safe_total = 0.0
            for index in range(launches):  # alternate launch by launch, and who goes first
                if (index + round_index) % 2:
                    bare_total += launch(bare)
                    safe_total += launch(safe)
                else:
                    safe_total += launch(safe)
                    bare_total += launch(bare)
            bare_times.append(bare_total / launches)
            safe_times.append(safe_total / launches)
            ratios.append(safe_total / bare_total)
    finally:
        gc.enable()
    return statistics.median(bare_times), statistics.median(safe_times), statistics.median(ratios)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--launches", type=int, default=50, help="launches per round and side")
    options = parser.parse_args()
    out = torch.zeros(1, dtype=torch.int32)
    grid = (1,)

    # The same kernel object on both sides: measured here, two separately jitted copies of one
    # function differ by up to 5% in launch time on their own (an A/A run shows it), which would
    # swamp what is measured: the cost of the kwsafe layer.
    scenarios = [
        ("positional (target)", one_element, lambda kernel: kernel[grid](out, 4, 3)),
        # Keywords on a kernel without reserved names, so the bare launch is right on every release.
        ("keywords", one_element_plain, lambda kernel: kernel[grid](out, A=4, B=3)),
    ]
    print(f"Triton {triton.__version__}, CPU interpreter, {options.rounds} rounds x {options.launches} launches")
    for label, function, call in scenarios:
        bare = triton.jit(function)
        safe = kwsafe(bare)
        out.zero_()
        call(safe)
        assert int(out[0]) == 43, int(out[0])
        bare_time, safe_time, ratio = compare(bare, safe, call, options.rounds, options.launches)
        print(f"  {label:20s} bare {bare_time * 1e6:7.1f} us/launch  kwsafe {safe_time * 1e6:7.1f} us/launch  "
              f"median ratio kwsafe/bare = {ratio:.4f}")


if __name__ == "__main__":
    main()
