"""CUDA graphs on the virtual device: a capture records, a replay runs the same work again on the
same memory.

A CUDA graph records a stream's kernels while ``torch.cuda.graph(g)`` (``capture_begin`` ..
``capture_end``) is open, and ``g.replay()`` runs them again on the same addresses: the tensors
made during the capture are the graph's outputs, and a replay after new data is copied into the
inputs leaves its result there. Liger's ``test_swiglu.py`` captures a kernel so; serving libraries
capture whole forwards.

Here every operation on device tensors and every kernel launch already passes through kwshim. While
a ``CUDAGraph`` captures, the body runs as usual (a GPU's capture runs nothing: the outputs are
written at the first replay; here they are written at once too), and each operation on device
tensors (``device_tensor``'s dispatch) and each interpreted launch (the grid seam, through
``launch_state.graph_recorder``) is recorded with its arguments, the tensors themselves. A replay
runs the operations again in order, copying each result into the tensor the capture made (an
in-place operation, a view and a launch write there already), and launches each kernel again with
the same tensors: the bits of running the body again. Allocations are not replayed (the graph's
memory is the capture's). What a capture cannot hold raises as CUDA raises: a host sync (``.item()``,
``.cpu()``, ``torch.cuda.synchronize()``) while capturing, "operation not permitted when stream is
capturing". ``make_graphed_callables`` returns the callables themselves: running them is what a
graphed callable's replay computes.
"""

import torch

from .. import launch_state
from .poison import EMPTY_OPERATIONS

__all__ = ["CUDAGraph", "graph", "capturing", "CAPTURING", "recorded_operation", "refuse_sync",
           "make_graphed_callables", "install"]

_CAPTURING: list = []  # the graph capturing now (one at most)
#: the same list, read in place by every operation on a device tensor (empty: nothing captures)
CAPTURING = _CAPTURING


def capturing():
    """The ``CUDAGraph`` capturing now, or None."""
    return _CAPTURING[0] if _CAPTURING else None


def refuse_sync(what):
    """Raise as CUDA raises for a host sync (``what``) during a capture, where one is open."""
    if _CAPTURING:
        raise RuntimeError(f"CUDA error: operation not permitted when stream is capturing (kwshim: {what} "
                           f"during a CUDA graph's capture on the virtual device)")


class CUDAGraph:
    """``torch.cuda.CUDAGraph`` on the virtual device: ``capture_begin``/``capture_end`` record,
    ``replay`` runs the recorded work again."""

    def __init__(self, keep_graph=False):
        self._steps, self._captured = [], False

    def capture_begin(self, pool=None, capture_error_mode="global"):
        if _CAPTURING:
            raise RuntimeError("kwshim: a CUDA graph is already capturing on the virtual device (one at a time)")
        self._steps, self._captured = [], False
        _CAPTURING.append(self)
        launch_state.graph_recorder = self._record_launch

    def capture_end(self):
        if capturing() is not self:
            raise RuntimeError("kwshim: capture_end without capture_begin on this CUDA graph")
        _CAPTURING.clear()
        launch_state.graph_recorder = None
        self._captured = True

    def _record_launch(self, launch, args, kwargs):
        self._steps.append(lambda: launch(*args, **kwargs))

    def record(self, step):
        self._steps.append(step)

    def replay(self):
        if not self._captured:
            raise RuntimeError("kwshim: replay of a CUDA graph that was never captured")
        for step in self._steps:
            step()

    def reset(self):
        self._steps, self._captured = [], False

    def instantiate(self):
        pass

    def pool(self):
        return (0, id(self))

    def enable_debug_mode(self):
        pass

    def debug_dump(self, debug_path):
        raise RuntimeError("kwshim: a CUDA graph on the virtual device has no CUDA graph to dump")


class graph:
    """``torch.cuda.graph(cuda_graph)``: capture the body into ``cuda_graph``."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        self.cuda_graph, self.pool = cuda_graph, pool

    def __enter__(self):
        self.cuda_graph.capture_begin(self.pool)

    def __exit__(self, *exc_info):
        self.cuda_graph.capture_end()


def recorded_operation(compute, func, args, kwargs, out):
    """Record, into the graph capturing now, one operation on device tensors whose result ``out``
    ``compute(func, args, kwargs)`` gives: a replay computes it again and copies it into ``out``."""
    graph_now = capturing()
    if graph_now is None or func in EMPTY_OPERATIONS:  # allocations: the graph's memory is the capture's
        return

    def again():
        _copied(compute(func, args, kwargs), out)

    graph_now.record(again)


def _copied(new, into):
    if isinstance(into, torch.Tensor) and isinstance(new, torch.Tensor):
        if new is into or (new.data_ptr() == into.data_ptr() and new.stride() == into.stride()
                           and new.shape == into.shape):
            return  # in place, or a view of the same memory
        with torch._C._DisableTorchDispatch(), torch.no_grad():
            into.copy_(new)
    elif isinstance(into, (tuple, list)) and isinstance(new, (tuple, list)):
        for one, other in zip(new, into):
            _copied(one, other)


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    """``torch.cuda.make_graphed_callables``: the callables themselves, whose calls compute what a
    graphed callable's replays compute."""
    return callables


def install(patch, cuda):
    """``torch.cuda``'s graph names, through ``patch``."""
    for name, value in (("CUDAGraph", CUDAGraph), ("graph", graph), ("make_graphed_callables", make_graphed_callables),
                        ("is_current_stream_capturing", lambda: bool(_CAPTURING)),
                        ("graph_pool_handle", lambda: (0, 0))):
        if hasattr(cuda, name):
            patch.setattr(cuda, name, value)
    if hasattr(cuda, "graphs"):
        for name, value in (("CUDAGraph", CUDAGraph), ("graph", graph),
                            ("make_graphed_callables", make_graphed_callables)):
            if hasattr(cuda.graphs, name):
                patch.setattr(cuda.graphs, name, value)
    patch.on_undo(_stopped)


def _stopped():
    _CAPTURING.clear()
    launch_state.graph_recorder = None
