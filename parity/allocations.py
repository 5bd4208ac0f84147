"""Allocation statistics: the same steps on a real GPU's caching allocator and on kwshim's virtual
CUDA device, each step's ``torch.cuda.memory_allocated()`` (and the peak) read as a difference from
the start. ``parity/allocations_h200.json`` holds what the H200 answered; ``tests/test_virtual_cuda.py``
holds the virtual device to it.

    python -m parity.allocations           # on a machine with an NVIDIA GPU: the real allocator
    TRITON_INTERPRET=1 python -m parity.allocations --virtual    # anywhere: the virtual device
"""

import json
import sys

from parity import on_device


def steps():
    """[(step, bytes allocated since the start)]; every tensor asked for on "cuda"."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    seen = []

    def read(step):
        seen.append((step, torch.cuda.memory_allocated() - start))

    x = torch.empty(1000, device="cuda")
    read("empty(1000) fp32")
    one = torch.ones(1, dtype=torch.int8, device="cuda")
    read("ones(1) int8")
    zero = torch.empty(0, device="cuda")
    read("empty(0)")
    y = x * 2
    read("x * 2")
    views = (y[::2], y.view(10, 100), y[10:])
    read("three views")
    del y, views, one, zero
    read("del the product, views, int8, empty")
    seen.append(("peak so far", torch.cuda.max_memory_allocated() - start))
    torch.cuda.reset_peak_memory_stats()
    seen.append(("peak after reset", torch.cuda.max_memory_allocated() - start))
    a = torch.randn(1000, device="cuda", requires_grad=True)
    b = a.exp()
    loss = b.sum()
    del b
    read("a, exp(a) saved by the graph, its sum")
    loss.backward()
    read("after backward (a.grad made, exp(a) freed)")
    del loss
    a.grad = None
    read("loss and a.grad dropped")
    out = torch.empty(0, device="cuda")
    torch.add(torch.ones(1000, device="cuda"), 1, out=out)
    read("out= resized to 1000 fp32")
    big = torch.empty(3_000_001, dtype=torch.uint8, device="cuda")
    read("3,000,001 bytes (large pool)")
    del big, out, a, x
    read("all dropped")
    stats = torch.cuda.memory_stats()
    seen.append(("memory_stats current == memory_allocated",
                 int(stats["allocated_bytes.all.current"] == torch.cuda.memory_allocated())))
    return seen


def main(argv):
    json.dump(on_device(steps, argv, flag="--virtual"), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
