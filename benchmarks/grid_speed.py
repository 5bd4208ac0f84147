"""Liger-Kernel's kernels under the switch, ``grid="sequential"`` against ``grid="batched"`` (whose
later launches replay the first's trace), in one process, side by side, forward and backward apart,
with and without ``kwshim[fast]`` (numba's fused multiply-add), beside torch's reference and the
NumPy floor; each result (outputs and gradients) is checked bit for bit against the sequential one,
and the fallback reasons are listed. On a CPU, Liger's backward kernels for rms_norm and layer_norm
run one program (their grid is the device's SM count, 1 without a GPU): nothing to batch there.
With ``--device cuda`` they run under kwshim's virtual H200, as a suite that says "cuda" does: one
program per SM, 132, each looping over its block of rows.

    make venv suites   # once: .suites/liger_kernel-0.8.5
    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0:.suites/liger_kernel-0.8.5/src \\
        .venv/bin/python benchmarks/grid_speed.py [--rows 2 2048] [--cols 1024] [--device cuda] \\
        [--page docs/evidence/speed.md]

``make speed`` runs it and rewrites the docs site's speed page (``--page``) with the table, the
date and the machine. Batched and batched without the extra run alternately, run by run, under one
switch (which keeps its traces while it is on), then torch and the floor, alternately; each keeps
only its last result alive, as a training loop does. Small blocks (the 2-row launches) take
``kwshim[fast]``'s compiled loops from the start, as a process that has run them long enough does
(``compiled.load_for_small_blocks``; the "no fast" column runs NumPy's code). The "launches" column
is the batched run's time inside the kernels' launches alone (``kernel[grid](...)``, call to return),
without Liger's own host code around them (its allocations and checks, torch's autograd): a 2-row
launch is what the floor is held to. The same launches with ``check_bounds=False``, alternating with
the others, give the bounds check's cost (``interpreter/bounds.py``), on by default.
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
from kwshim.batching import programs as grid_module  # noqa: E402


def _cases(rows, cols):
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    torch.manual_seed(0)
    x = torch.randn(rows, cols)
    w, b = torch.randn(cols), torch.randn(cols)
    gate, up = torch.randn(rows, cols), torch.randn(rows, cols)
    target = torch.randint(0, cols, (rows,))

    def rms_ref(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    def cross_entropy(x, t):
        return LigerCrossEntropyFunction.apply(x, t, None)[0]

    def cross_entropy_ref(x, t):
        return torch.nn.functional.cross_entropy(x.float(), t)

    return [
        ("rms_norm", lambda x, w: LigerRMSNormFunction.apply(x, w, 1e-6), rms_ref, (x, w), (_rms_floor, None)),
        ("swiglu", LigerSiLUMulFunction.apply, lambda a, b: torch.nn.functional.silu(a) * b, (gate, up),
         (_swiglu_floor, _swiglu_backward_floor)),
        ("cross_entropy", cross_entropy, cross_entropy_ref, (x, target), (_cross_entropy_floor, None)),
        ("cross_entropy bf16", cross_entropy, cross_entropy_ref, (x.bfloat16(), target), (_cross_entropy_floor, None)),
        ("layer_norm", lambda x, w, b: LigerLayerNormFunction.apply(x, w, b, 1e-6),
         lambda x, w, b: torch.nn.functional.layer_norm(x, (cols,), w, b, 1e-6), (x, w, b), (_layer_norm_floor, None)),
        ("softmax", LigerSoftmaxFunction.apply, lambda x: torch.softmax(x, -1), (x,),
         (_softmax_floor, _softmax_backward_floor)),
    ]


# The NumPy floor: the kernel's own arithmetic, written as NumPy over the whole tensor at once (fp32,
# one call per operation, nothing a GPU-faithful interpreter adds: no exact fma, no approximate exp,
# no masks, no pointers, no store log). A batched launch does at least this work, so it is the limit
# a program axis can reach; the torch reference's fused C++ loops are faster still.
def _rms_floor(x, w):
    return x * (1 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + np.float32(1e-6))) * w


def _swiglu_floor(a, b):
    return a / (1 + np.exp(-a)) * b


def _swiglu_backward_floor(a, b):
    dc = np.ones_like(a)
    sigmoid = 1 / (1 + np.exp(-a))
    silu = a * sigmoid
    return dc * (silu * (1 - sigmoid) + sigmoid) * b, dc * silu


def _cross_entropy_floor(x, target):
    largest = x.max(axis=1, keepdims=True)
    exp = np.exp(x - largest)
    total = exp.sum(axis=1, keepdims=True)
    rows = np.arange(x.shape[0])
    loss = (np.log(total[:, 0]) + largest[:, 0] - x[rows, target]).mean()
    gradient = exp / total
    gradient[rows, target] -= 1
    return loss, gradient / x.shape[0]


def _layer_norm_floor(x, w, b):
    mean = x.mean(axis=1, keepdims=True)
    centred = x - mean
    return centred * (1 / np.sqrt((centred * centred).mean(axis=1, keepdims=True) + np.float32(1e-6))) * w + b


def _softmax_floor(x):
    exp = np.exp(x - x.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)


def _softmax_backward_floor(x):
    y, dy = _softmax_floor(x), np.ones_like(x)
    return y * (dy - (dy * y).sum(axis=1, keepdims=True))


class _LaunchClock:
    """Seconds spent inside kernel launches, ``kernel[grid](...)`` from the call to its return, while
    ``timing`` (under the switch, whose own ``__getitem__`` it wraps)."""

    def __init__(self):
        self.seconds = 0.0

    @contextlib.contextmanager
    def timing(self):
        kernel_class = sys.modules["triton.runtime.interpreter"].InterpretedFunction
        original = kernel_class.__getitem__
        clock = self

        def __getitem__(kernel, grid):
            launcher = original(kernel, grid)

            def launch(*args, **kwargs):
                start = time.perf_counter()
                try:
                    return launcher(*args, **kwargs)
                finally:
                    clock.seconds += time.perf_counter() - start

            return launch

        kernel_class.__getitem__ = __getitem__
        try:
            yield
        finally:
            kernel_class.__getitem__ = original


def _median(runs, measure):
    """The median of ``runs`` measurements (each a tuple of seconds, None where nothing was timed),
    element by element, and the last run's other results (only the last is kept alive)."""
    return _alternating(runs, measure)[0]


def _alternating(runs, *measures):
    """``_median`` of each of ``measures``, run alternately, run by run."""
    times, last = [[] for _ in measures], [None] * len(measures)
    for _ in range(runs):
        for index, measure in enumerate(measures):
            seconds, last[index] = measure()
            times[index].append(seconds)
    return [(tuple(None if runs_of[0][i] is None else statistics.median(t[i] for t in runs_of)
                   for i in range(len(runs_of[0]))), last[index]) for index, runs_of in enumerate(times)]


@contextlib.contextmanager
def _without_fast():
    """The NumPy code where ``kwshim[fast]`` would compile (the fused multiply-add, fp32 lane-order
    sums and cumsums, element-wise expressions): the same bits."""
    from kwshim.arithmetic import compiled

    made = compiled.fma_ufunc, compiled.lane_sum_kernel, compiled.lane_scan_kernel, compiled.engine
    compiled.fma_ufunc = compiled.lane_sum_kernel = compiled.lane_scan_kernel = lambda: None
    compiled.engine = lambda: "numpy"  # what deferred_arithmetic asks
    try:
        yield
    finally:
        compiled.fma_ufunc, compiled.lane_sum_kernel, compiled.lane_scan_kernel, compiled.engine = made


def _floor_seconds(floors, inputs):
    """Seconds for the NumPy floor's forward and backward (None where there is none), in fp32."""
    arrays = [(t.float() if t.is_floating_point() else t).numpy() for t in inputs]
    seconds = []
    for floor in floors:
        if floor is None:
            seconds.append(None)
            continue
        start = time.perf_counter()
        floor(*arrays)
        seconds.append(time.perf_counter() - start)
    return tuple(seconds), None


def _forward_backward(function, inputs, device=None, clock=None):
    """Seconds for the forward and for the backward (and, with ``clock``, those of each inside the
    kernels' launches), and the outputs and gradients."""
    leaves = [t.clone().to(device or t.device).requires_grad_(t.is_floating_point()) for t in inputs]
    launched = clock.seconds if clock else 0.0
    start = time.perf_counter()
    out = function(*leaves)
    middle = time.perf_counter()
    launched_forward = clock.seconds if clock else 0.0
    out.sum().backward() if out.dim() else out.backward()
    end = time.perf_counter()
    launches = (launched_forward - launched, clock.seconds - launched_forward) if clock else ()
    return (middle - start, end - middle) + launches, \
        [out.detach()] + [leaf.grad for leaf in leaves if leaf.grad is not None]


def _same_bits(a, b):
    return all(torch.equal(x.reshape(-1).view(torch.uint8), y.reshape(-1).view(torch.uint8)) for x, y in zip(a, b))


def _milliseconds(seconds):
    return f"{seconds * 1e3:.2f} ms" if seconds < 0.1 else f"{seconds * 1e3:.0f} ms"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[2, 2048])
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--device", choices=["cuda"], help="run the kernels on kwshim's virtual device")
    parser.add_argument("--repeats", type=int, default=5, help="runs of batched, torch and the floor (median)")
    parser.add_argument("--sequential-repeats", type=int, default=1, help="runs of sequential (median)")
    parser.add_argument("--page", help="rewrite the speed table between this page's markers")
    arguments = parser.parse_args()
    from kwshim.arithmetic import compiled

    fast = compiled.engine() == "numba"
    compiled.load_for_small_blocks()  # small blocks too: as a process that has run them long enough
    table = ["| Liger kernel | pass | rows (= programs) | sequential | batched | speed-up | without kwshim[fast] "
             "| torch (CPU) | NumPy floor | batched / floor | batched - floor | launches | launches - floor "
             "| launches, check_bounds=False | the bounds check's cost | same bits |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    device = arguments.device
    settings = {"device": device} if device else {}
    print(f"medians of {arguments.repeats} runs ({arguments.sequential_repeats} sequential); kwshim[fast]: "
          f"{'numba' if fast else 'not installed'}")
    print(f"{'kernel':<19}{'pass':>5}{'rows':>6}{'sequential':>12}{'batched':>11}{'speed-up':>9}{'no fast':>11}"
          f"{'torch':>10}{'floor':>10}{'batched/floor':>14}{'batched-floor':>14}{'launches':>10}"
          f"{'launch-floor':>13}{'unchecked':>11}{'check':>7}  same bits")
    for rows in arguments.rows:
        for name, function, reference, inputs, floors in _cases(rows, arguments.cols):
            clock = _LaunchClock()

            def batched_run():
                return _forward_backward(function, inputs, device, clock)

            def plain_run():
                with _without_fast():
                    return batched_run()

            def unchecked_run():
                with kwshim.activate(check_bounds=False):
                    return batched_run()

            with kwshim.activate(grid="batched", **settings), clock.timing():  # on throughout: traces kept
                batched_run()  # warm: kernels made, autotuned, traced, cached
                plain_run()
                unchecked_run()
                (batched, batched_out), (plain, plain_out), (unchecked, _) = _alternating(
                    arguments.repeats, batched_run, plain_run, unchecked_run)
            with kwshim.activate(grid="sequential", **settings):
                sequential, sequential_out = _median(arguments.sequential_repeats,
                                                     lambda: _forward_backward(function, inputs, device))
            (torch_time, _), (floor, _) = _alternating(arguments.repeats, lambda: _forward_backward(reference, inputs),
                                                       lambda: _floor_seconds(floors, inputs))
            same = "yes" if _same_bits(sequential_out, batched_out) and _same_bits(sequential_out, plain_out) else "NO"
            for index, direction in enumerate(("fwd", "bwd")):
                if direction == "bwd" and (name.startswith("cross_entropy") or  # its gradient: in the forward
                                           name in ("rms_norm", "layer_norm") and not device):  # one program
                    continue
                line = (f"{name:<19}{direction:>5}{rows:>6}{sequential[index] * 1e3:>10.1f}ms"
                        f"{batched[index] * 1e3:>9.2f}ms{sequential[index] / batched[index]:>8.0f}x"
                        f"{plain[index] * 1e3:>9.2f}ms{torch_time[index] * 1e3:>8.2f}ms")
                kind = "backward" if direction == "bwd" else \
                    "forward (and gradient)" if name.startswith("cross_entropy") else "forward"
                cells = [name, kind, rows, _milliseconds(sequential[index]),
                         _milliseconds(batched[index]), f"{sequential[index] / batched[index]:.0f}x",
                         _milliseconds(plain[index]), _milliseconds(torch_time[index])]
                launches = batched[2 + index]
                if floor[index] is None:
                    line += f"{'':>10}{'':>14}{'':>14}{launches * 1e3:>8.2f}ms{'':>13}"
                    cells += ["", "", "", _milliseconds(launches), ""]
                else:
                    line += (f"{floor[index] * 1e3:>8.2f}ms{batched[index] / floor[index]:>13.1f}x"
                             f"{(batched[index] - floor[index]) * 1e3:>12.2f}ms{launches * 1e3:>8.2f}ms"
                             f"{(launches - floor[index]) * 1e3:>11.2f}ms")
                    cells += [_milliseconds(floor[index]), f"{batched[index] / floor[index]:.1f}x",
                              _milliseconds(batched[index] - floor[index]), _milliseconds(launches),
                              _milliseconds(launches - floor[index])]
                unchecked_launches = unchecked[2 + index]
                cost = f"{(launches - unchecked_launches) / unchecked_launches * 100:+.0f}%"
                print(line + f"{unchecked_launches * 1e3:>9.2f}ms{cost:>7}  {same}")
                cells += [_milliseconds(unchecked_launches), cost]
                table.append("| " + " | ".join(str(cell) for cell in cells + [same]) + " |")
    reasons = grid_module.fallback_reasons()
    print(f"\nkernels that fell back to the loop: {len(reasons)}")
    for kernel, reason in sorted(reasons.items()):
        print(f"  {kernel}: {reason}")
    if arguments.page:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "measure"))
        import evidence

        heading = (f"{evidence.stamp('make speed')} Triton {__import__('triton').__version__}, fp32 (cross entropy "
                   f"bf16 too), {arguments.cols} columns; medians of {arguments.repeats} runs "
                   f"({arguments.sequential_repeats} sequential); kwshim[fast]: "
                   f"{'numba' if fast else 'not installed'}; kernels that fell back to the loop: {len(reasons)}.")
        evidence.rewrite(arguments.page, "speed", heading + "\n\n" + "\n".join(table))


if __name__ == "__main__":
    main()
