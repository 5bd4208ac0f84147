"""A replayed batched launch bound by kwshim (``interpreter/plain_launch``) against the interpreter's
own binding (``GridExecutor``, with its copies to the host and back), side by side in one process:
Liger-Kernel's forward kernels (``grid_speed``'s cases), alternating sample by sample, each sample a
run of launches; medians, and the outputs of both checked bit for bit against each other.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0:.suites/liger_kernel-0.8.5/src \\
        .venv/bin/python benchmarks/plain_launch.py [--rows 2 2048] [--samples 15] [--launches 20]
"""

import argparse
import os
import statistics
import time

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

import kwshim  # noqa: E402
from kwshim.batching import plain_launch  # noqa: E402

import grid_speed  # noqa: E402


def _sample(function, inputs, launches, plain):
    """Seconds per launch over ``launches`` launches, and the last one's output."""
    bound = plain_launch.bound
    if not plain:
        plain_launch.bound = lambda *args: None
    try:
        start = time.perf_counter()
        for _ in range(launches):
            out = function(*inputs)
        return (time.perf_counter() - start) / launches, out
    finally:
        plain_launch.bound = bound


def _bits(out):
    out = out[0] if isinstance(out, tuple) else out
    return out.detach().reshape(-1).contiguous().view(torch.uint8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[2, 2048])
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--launches", type=int, default=20, help="launches per sample (2 rows; 2048: a fifth)")
    arguments = parser.parse_args()
    print(f"medians of {arguments.samples} samples, alternating; {arguments.cols} columns; replayed launches")
    print(f"{'kernel':<20}{'rows':>6}{'GridExecutor':>14}{'plain':>11}{'saved':>11}{'ratio':>8}  same bits")
    with kwshim.activate(grid="batched"):
        for rows in arguments.rows:
            launches = arguments.launches if rows <= 64 else max(1, arguments.launches // 5)
            for name, function, _, inputs, _ in grid_speed._cases(rows, arguments.cols):
                times = {True: [], False: []}
                outs = {}
                for plain in (True, False):
                    _sample(function, inputs, 2, plain)  # traced, autotuned, warm
                for _ in range(arguments.samples):
                    for plain in (False, True):
                        seconds, outs[plain] = _sample(function, inputs, launches, plain)
                        times[plain].append(seconds)
                before, after = statistics.median(times[False]), statistics.median(times[True])
                same = torch.equal(_bits(outs[False]), _bits(outs[True]))
                print(f"{name:<20}{rows:>6}{before * 1e3:>12.3f}ms{after * 1e3:>9.3f}ms"
                      f"{(before - after) * 1e3:>9.3f}ms{before / after:>7.2f}x  {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
