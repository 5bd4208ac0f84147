"""The cost of the virtual CUDA device (``device="cuda"``) on torch-heavy code: its device tensors
(each operation on one goes through ``__torch_dispatch__``), its patched factories, and the dispatch
mode that counts allocations once a memory statistic is asked for. One process; rounds alternate
between the switch without the device (CPU tensors), with it (the same code on device tensors), and
with it counting (after ``torch.cuda.reset_peak_memory_stats()``); each ratio is the median over
rounds.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 .venv/bin/python benchmarks/device_cost.py [--rounds 15]
"""

import argparse
import os
import statistics
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
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
