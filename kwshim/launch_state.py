"""What one interpreted launch carries that the operations read, held here, not on Triton's objects.

The launch paths (``launch.kernel``) and the grid seam (``batching.programs``) set these through
the launch's ``Patch``, which undoes them when the launch ends. Launches are serialized on the
interpreter's ``LAUNCH_LOCK``, so a module attribute is the launch's own. Every wing reads them:
the arithmetic (``requested_fusion``, ``launch_warps``), the seam and the batching (``batch``, ``allocations``).
``Fallback`` is how anything a launch runs tells the batch that only Triton's loop gives the
loop's bits.
"""

__all__ = ["batch", "requested_fusion", "launch_warps", "allocations", "graph_recorder", "Fallback"]

#: The batch of the launch in progress (``batching.programs._Batch``: program ids, count, the
#: ``StoreLog``), or None outside a batched launch.
batch = None

#: ``enable_fp_fusion`` as the launch in progress gives it (None: not given), which the GPU
#: arithmetic follows (``gpu_arithmetic.fusion_enabled``).
requested_fusion = None

#: ``num_warps`` as the launch in progress gives it (None: not given; Triton's NVIDIA default, 4,
#: applies), which ``tl.extra.cuda.num_warps()`` and the lane order read.
launch_warps = None

#: The memory the launch in progress may touch (``interpreter.bounds.Allocations``), whose loads,
#: stores and atomics are checked against it; None: nothing is checked (``check_bounds=False``).
allocations = None

#: While a CUDA graph captures on the virtual device (``virtual_cuda.graphs``): called by the grid
#: seam with ``(launch, args, kwargs)`` for each interpreted launch, for the graph's replay; else None.
graph_recorder = None


class Fallback(Exception):
    """The batch cannot give the sequential loop's bits; ``reason`` says why, for the kernel to remember."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason
