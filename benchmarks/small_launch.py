"""A small launch's cost, replayed: Liger-Kernel's forward kernels on 2 rows (2 programs), with
each of the small-launch paths on and off, side by side in one process.

    make venv suites   # once: .suites/liger_kernel-0.8.5
    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0:.suites/liger_kernel-0.8.5/src \\
        .venv/bin/python benchmarks/small_launch.py [--repeats 101]

The paths (each "off" is what ran before it): the trace run as one generated function
(``replay_code``; off: its steps walked), NumPy's warnings turned off once per launch
(``numpy_quiet``; off: ``np.errstate`` at each operation), a few rows' overlap decided in Python
lists (``records._few_rows_conflict``; off: the NumPy rule) and a splat's view made directly
(``program_axis._spread``; off: ``np.broadcast_to``), the compiled loops for small blocks (loaded
at the start, as a process that has spent about numba's start on them in NumPy loads them:
``compiled.spent_in_numpy``; off: NumPy's lane-order sums and fma below 32768 elements) and the
executor's constexprs read once per kernel (``plain_launch.remembering_init``; off:
``GridExecutor.__init__`` reads them every launch). Launch by launch, all on and all off
alternate, then each path alone off; medians in milliseconds, and each "off" over "on". Every
launch's outputs are checked bit for bit against the first.
"""

import argparse
import contextlib
import os
import statistics
import sys
import time

os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402

import kwshim  # noqa: E402
from kwshim.arithmetic import compiled, numpy_quiet  # noqa: E402
from kwshim.batching import program_axis, records, replay  # noqa: E402


def _cases():
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    torch.manual_seed(0)
    x, w, b = torch.randn(2, 1024), torch.randn(1024), torch.randn(1024)
    gate, up, target = torch.randn(2, 1024), torch.randn(2, 1024), torch.randint(0, 1024, (2,))

    def leaf(t):
        return t.clone().requires_grad_(True)

    return {
        "rms_norm": lambda: LigerRMSNormFunction.apply(leaf(x), leaf(w), 1e-6),
        "swiglu": lambda: LigerSiLUMulFunction.apply(leaf(gate), leaf(up)),
        "cross_entropy": lambda: LigerCrossEntropyFunction.apply(leaf(x), target, None)[0],
        "cross_entropy bf16": lambda: LigerCrossEntropyFunction.apply(leaf(x.bfloat16()), target, None)[0],
        "layer_norm": lambda: LigerLayerNormFunction.apply(leaf(x), leaf(w), leaf(b), 1e-6),
        "softmax": lambda: LigerSoftmaxFunction.apply(leaf(x)),
    }


class _NeverQuiet:
    """``numpy_quiet``'s per-thread mark, never set: each operation makes its own ``np.errstate``."""
    on = False

    def __setattr__(self, name, value):
        pass


def _broadcast(each, shape):
    return np.broadcast_to(each.reshape((-1,) + (1,) * len(shape)), (each.shape[0],) + shape)


@contextlib.contextmanager
def _off(*paths):
    executor = sys.modules["triton.runtime.interpreter"].GridExecutor
    saved = (replay.Trace.replay, numpy_quiet._STATE, records._FEW, program_axis._spread, compiled._SMALL_BLOCKS,
             compiled._LOADED, compiled._WORTH_LOADING, executor.__init__)
    if "loops" in paths:
        compiled._SMALL_BLOCKS, compiled._LOADED, compiled._WORTH_LOADING = False, {}, float("inf")
    if "init" in paths:
        executor.__init__ = executor.__init__.__wrapped__
    if "code" in paths:
        walk = replay.Trace._walk
        replay.Trace.replay = lambda self, builder, args: walk(self, builder, args)
    if "quiet" in paths:
        numpy_quiet._STATE = _NeverQuiet()
    if "rows" in paths:
        records._FEW = 0
    if "splat" in paths:
        program_axis._spread = _broadcast
    try:
        yield
    finally:
        (replay.Trace.replay, numpy_quiet._STATE, records._FEW, program_axis._spread, compiled._SMALL_BLOCKS,
         compiled._LOADED, compiled._WORTH_LOADING, executor.__init__) = saved


_PATHS = ("code", "quiet", "rows", "splat", "loops", "init")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=101)
    arguments = parser.parse_args()
    settings = [("all on", ()), ("all off", _PATHS)] + [(f"{path} off", (path,)) for path in _PATHS]
    print(f"medians of {arguments.repeats} launches, ms (2 rows, Triton {__import__('triton').__version__})")
    print(f"{'kernel':<20}" + "".join(f"{name:>11}" for name, _ in settings) + f"{'off/on':>9}")
    compiled.load_for_small_blocks()  # as a process that has launched them long enough (numba: kwshim[fast])
    with kwshim.activate(grid="batched"):
        for name, function in _cases().items():
            first = function().detach().clone()
            for _ in range(5):  # traced, then replayed past ``_COMPILED_AFTER``
                function()
            times = {setting: [] for setting, _ in settings}
            for _ in range(arguments.repeats):
                for setting, paths in settings:
                    with _off(*paths):
                        start = time.perf_counter()
                        out = function()
                        times[setting].append(time.perf_counter() - start)
                    assert torch.equal(out.detach().view(torch.uint8) if out.dim() else out.detach(),
                                       first.view(torch.uint8) if first.dim() else first), (name, setting)
            medians = {setting: statistics.median(t) * 1e3 for setting, t in times.items()}
            print(f"{name:<20}" + "".join(f"{medians[s]:>11.3f}" for s, _ in settings) +
                  f"{medians['all off'] / medians['all on']:>8.2f}x")


if __name__ == "__main__":
    main()
