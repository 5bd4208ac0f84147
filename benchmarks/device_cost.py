"""The cost of the virtual CUDA device (``device="cuda"``) on torch-heavy code: its function mode
sees every torch call. One process; rounds alternate between the switch without the device and the
switch with it, and the ratio is the median over rounds.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 .venv/bin/python benchmarks/device_cost.py [--rounds 15]
"""

import argparse
import os
import statistics
import time

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

import kwshim  # noqa: E402


def small_ops(steps=200):
    """Many small torch calls (the worst case for a per-call hook): a tiny MLP step, forward and backward."""
    layer = torch.nn.Linear(32, 32)
    x = torch.randn(16, 32)
    for _ in range(steps):
        y = torch.nn.functional.gelu(layer(x)).sum()
        y.backward()
        layer.zero_grad()


def large_ops(steps=5):
    """A few large calls (a test's reference computation)."""
    x = torch.randn(512, 512)
    for _ in range(steps):
        x = torch.softmax(x @ x.T, dim=-1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    for name, work in (("small torch calls", small_ops), ("large torch calls", large_ops)):
        ratios = []
        for _ in range(rounds):
            times = {}
            for device in (None, "cuda"):
                with kwshim.activate(device=device):
                    start = time.perf_counter()
                    work()
                    times[device] = time.perf_counter() - start
            ratios.append(times["cuda"] / times[None])
        print(f"{name:<20} device='cuda' / no device: {statistics.median(ratios):.3f} (median of {rounds} rounds)")


if __name__ == "__main__":
    main()
