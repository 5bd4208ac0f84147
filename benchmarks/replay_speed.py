"""Trace and replay, side by side in one process: Liger-Kernel's kernels under ``grid="batched"`` with
every batch running the kernel's body (replay off) and with later batches replaying the first's
trace, beside the NumPy floor (``grid_speed``'s), alternating run by run; every output and gradient
is checked bit for bit against ``grid="sequential"``.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0:.suites/liger_kernel-0.8.5/src \\
        .venv/bin/python benchmarks/replay_speed.py [--rows 2 2048] [--cols 1024] [--repeats 5]

On a CPU, Liger's rms_norm and layer_norm backward run one program (the grid is the device's SM
count): with replay off, a launch of one program runs the loop, as it did before such launches were
traced; with replay on, its specialization's second launch records it and the third replays.
"""

import argparse
import os
import statistics

os.environ["TRITON_INTERPRET"] = "1"


import kwshim  # noqa: E402
from kwshim.batching import replay  # noqa: E402

import grid_speed  # noqa: E402


def _run(function, inputs, backward):
    if backward:
        return grid_speed._forward_backward(function, inputs)
    import time

    start = time.perf_counter()
    out = function(*inputs)
    return (time.perf_counter() - start, None), [out]


def _timed(function, inputs, replaying, backward):
    """Seconds for the forward and the backward, batched, with replay on or off, and the results."""
    key = replay.key
    if not replaying:
        replay.key = lambda *args: None
    try:
        with kwshim.activate(grid="batched"):
            _run(function, inputs, backward)  # autotuned, cached; the trace made (or not)
            _run(function, inputs, backward)  # a one-program launch's trace made
            return _run(function, inputs, backward)
    finally:
        replay.key = key


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[2, 2048])
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args()
    print(f"medians of {arguments.repeats} runs, body and replay alternating; {arguments.cols} columns")
    print(f"{'kernel':<20}{'pass':>5}{'rows':>6}{'body':>11}{'replayed':>11}{'body/replay':>13}"
          f"{'NumPy floor':>13}{'replayed/floor':>16}  same bits")
    for rows in arguments.rows:
        for name, function, _, inputs, floors in grid_speed._cases(rows, arguments.cols):
            backward = not name.startswith("cross_entropy")
            with kwshim.activate(grid="sequential"):
                _, sequential = _run(function, inputs, backward)
            times = {True: [], False: []}
            same = True
            for _ in range(arguments.repeats):
                for replaying in (False, True):
                    seconds, results = _timed(function, inputs, replaying, backward)
                    times[replaying].append(seconds)
                    same = same and grid_speed._same_bits(sequential, results)
            floor_inputs = [t.float() if t.is_floating_point() else t for t in inputs]
            floor = [grid_speed._floor_seconds(floors, floor_inputs)[0] for _ in range(arguments.repeats)]
            for index, direction in enumerate(("fwd", "bwd")):
                if direction == "bwd" and not backward:
                    continue  # cross entropy computes its gradient in the forward
                body = statistics.median(t[index] for t in times[False])
                replayed = statistics.median(t[index] for t in times[True])
                line = (f"{name:<20}{direction:>5}{rows:>6}{body * 1e3:>9.2f}ms{replayed * 1e3:>9.2f}ms"
                        f"{body / replayed:>12.2f}x")
                if floor[0][index] is not None:
                    least = statistics.median(f[index] for f in floor)
                    line += f"{least * 1e3:>11.2f}ms{replayed / least:>15.1f}x"
                else:
                    line += f"{'':>13}{'':>16}"
                print(line + ("  yes" if same else "  NO"))


if __name__ == "__main__":
    main()
