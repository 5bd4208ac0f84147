"""The cost of the virtual CUDA device (``device="cuda"``) on torch-heavy code: its device tensors
(each operation on one goes through ``__torch_dispatch__``), its patched factories, and the dispatch
mode that counts allocations once a memory statistic is asked for. One process; rounds alternate
between the switch without the device (CPU tensors), with it (the same code on device tensors), and
with it counting (after ``torch.cuda.reset_peak_memory_stats()``); each ratio is the median over
rounds.

Then one operation at a time (``x + y`` of 64 and of 1M elements, ``torch.empty`` of 1M), a CPU
tensor's beside a device tensor's and beside the floor of each mechanism torch offers a tensor that
says it is somewhere else: a ``__torch_dispatch__`` subclass that does nothing but run the CPU's
kernel and wrap its result (under ``DisableTorchDispatch``, or redispatched to the CPU's key), and
a subclass with torch's default ``__torch_function__`` (which loses itself in autograd's gradients:
not a candidate, its floor only). ``--page`` writes that table into the speed page.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 .venv/bin/python benchmarks/device_cost.py [--rounds 15] \
        [--page docs/evidence/speed.md]
"""

import argparse
import os
import statistics
import sys
import time

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

import kwshim  # noqa: E402


def three_ops(device, steps=2000):
    """Three small operations on 16 elements (``a + b``, ``* 2``, ``.sum()``): the cost per operation."""
    a, b = torch.randn(16, device=device), torch.randn(16, device=device)
    for _ in range(steps):
        ((a + b) * 2).sum()


def small_ops(device, steps=200):
    """Many small torch calls (the worst case for a per-call hook): a tiny MLP step, forward and backward."""
    layer = torch.nn.Linear(32, 32, device=device)
    x = torch.randn(16, 32, device=device)
    for _ in range(steps):
        y = torch.nn.functional.gelu(layer(x)).sum()
        y.backward()
        layer.zero_grad()


def large_ops(device, steps=5):
    """A few large calls (a test's reference computation)."""
    x = torch.randn(512, 512, device=device)
    for _ in range(steps):
        x = torch.softmax(x @ x.T, dim=-1)


class _Dispatched(torch.Tensor):
    """The floor of ``__torch_dispatch__``: the CPU's kernel, its result wrapped; nothing else."""
    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        with torch._C._DisableTorchDispatch():
            out = func._op(*args, **(kwargs or {}))
        return torch.Tensor._make_subclass(cls, out) if type(out) is torch.Tensor else out


_CPU_KEY = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)


class _Redispatched(torch.Tensor):
    """The same, sent to the CPU's key by ``redispatch`` (no context manager; but the kernel's own
    inner operations come back through Python: not usable as it is, a floor only)."""
    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        out = func.redispatch(_CPU_KEY, *args, **(kwargs or {}))
        return torch.Tensor._make_subclass(cls, out) if type(out) is torch.Tensor else out


class _Functioned(torch.Tensor):
    """A subclass with torch's own ``__torch_function__``: results keep the class in Python."""


def _per_call(work, calls):
    start = time.perf_counter()
    for _ in range(calls):
        work()
    return (time.perf_counter() - start) / calls


def one_operation_table(rounds):
    """Rows of microseconds per call, each mechanism's and the device's over the CPU's, medians of
    ``rounds`` alternating rounds."""
    mechanisms = {"device tensor (kwshim)": None, "__torch_dispatch__, its floor": _Dispatched,
                  "redispatched to the CPU key, its floor": _Redispatched,
                  "__torch_function__ subclass, its floor": _Functioned}
    operations = (("x + y, 64 elements", 64, 4000), ("x + y, 1M elements", 1 << 20, 200),
                  ("torch.empty, 1M elements", 1 << 20, 4000))
    times: dict = {}
    for _ in range(rounds):
        for label, size, calls in operations:
            adding = label.startswith("x + y")
            x, y = torch.randn(size), torch.randn(size)
            times.setdefault((label, "CPU tensor"), []).append(
                _per_call((lambda: x + y) if adding else (lambda: torch.empty(size)), calls))
            for name, kind in mechanisms.items():
                if kind is None:
                    with kwshim.activate(device="cuda"):
                        a, b = x.cuda(), y.cuda()
                        work = (lambda: a + b) if adding else (lambda: torch.empty(size, device="cuda"))
                        times.setdefault((label, name), []).append(_per_call(work, calls))
                    continue
                a, b = torch.Tensor._make_subclass(kind, x), torch.Tensor._make_subclass(kind, y)
                work = (lambda: a + b) if adding else (lambda: torch.Tensor._make_subclass(kind, torch.empty(size)))
                times.setdefault((label, name), []).append(_per_call(work, calls))
    header = ["operation", "CPU tensor", *mechanisms]
    rows = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    for label, _, _ in operations:
        cpu = statistics.median(times[label, "CPU tensor"])
        cells = [label, f"{cpu * 1e6:.2f} µs"]
        for name in mechanisms:
            mine = statistics.median(times[label, name])
            cells.append(f"{mine * 1e6:.2f} µs ({mine / cpu:.2f}x)")
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--page", help="rewrite the per-operation table between this page's device-cost markers")
    arguments = parser.parse_args()
    rounds = arguments.rounds
    table = one_operation_table(rounds)
    print("\n".join(table))
    if arguments.page:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "measure"))
        import evidence

        heading = (f"{evidence.stamp('make speed')} torch {torch.__version__}, {torch.get_num_threads()} threads; "
                   f"medians of {rounds} alternating rounds, each mechanism beside the CPU tensor in one process.")
        evidence.rewrite(arguments.page, "device-cost", heading + "\n\n" + "\n".join(table))
    for name, work in (("3 ops on 16 elements", three_ops), ("small torch calls", small_ops),
                       ("large torch calls", large_ops)):
        ratios = []
        for _ in range(rounds):
            times = {}
            for device, counting in ((None, False), ("cuda", False), ("cuda", True)):
                with kwshim.activate(device=device):
                    if counting:
                        torch.cuda.reset_peak_memory_stats()
                    start = time.perf_counter()
                    work("cpu" if device is None else device)
                    times[device, counting] = time.perf_counter() - start
            ratios.append((times["cuda", False] / times[None, False], times["cuda", True] / times[None, False]))
        plain, counting = (statistics.median(column) for column in zip(*ratios))
        print(f"{name:<20} / no device: device='cuda' {plain:.3f}, counting allocations {counting:.3f} "
              f"(medians of {rounds} rounds)")


if __name__ == "__main__":
    main()
