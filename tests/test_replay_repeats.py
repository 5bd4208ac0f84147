"""A trace makes a repeated operation once (``steps.merged``): the same bits, fewer steps, and no
operation with an effect (a load, a store, an atomic) merged."""

import torch
import triton
import triton.language as tl

import kwshim
from kwshim.batching import replay
from kwshim.batching.steps import BUILDER, OPERATION_NAMES, Guard, Slot, merged, operation_name

from .kernels import needs_block_loads
from .test_programs import _same_bits, batching


@triton.jit
def two_passes(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    """Cross entropy's shape: each pass over the row makes its pointers and mask again."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    top = tl.max(tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf")), axis=0)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, x - top, mask=cols < n_cols)


@triton.jit
def added_twice(out_ptr):
    pid = tl.program_id(0)
    tl.atomic_add(out_ptr + pid, 1.0)
    tl.atomic_add(out_ptr + pid, 1.0)


def _trace_of(kernel):
    name = kernel.fn.__qualname__
    (trace,) = [kept[0] for key, kept in replay._TRACES.items() if key[0].__qualname__ == name]
    return trace


def _names(trace):
    return [str(operation_name(step[0])) for step in trace.steps if isinstance(step, tuple)]


def _two_passes(mode, launches=3):
    outs = []
    with kwshim.activate(grid=mode):
        for seed in range(launches):
            x = torch.randn(5, 100, generator=torch.Generator().manual_seed(seed))
            out = torch.empty_like(x)
            two_passes[(5,)](x, out, 100, BLOCK=128)
            outs.append(out)
        names = _names(_trace_of(two_passes)) if mode == "batched" else None
    return outs, names


@batching
@needs_block_loads
def test_a_trace_makes_each_pointer_and_mask_once_with_the_loop_s_bits():
    looped, _ = _two_passes("sequential")
    batched, names = _two_passes("batched")
    for loop, batch in zip(looped, batched):
        _same_bits([loop], [batch])
    # the body makes x's pointers twice, out's once, and the mask three times: the trace once each
    assert names.count("create_masked_load") == 2 and names.count("create_masked_store") == 1
    assert names.count("create_addptr") == 4  # x + row * n, then + cols; out's the same
    assert names.count("create_icmpSLT") == 1  # cols < n_cols


@batching
def test_an_atomic_made_twice_with_the_same_arguments_happens_twice():
    with kwshim.activate(grid="batched"):
        for _ in range(4):  # the first records, the later ones replay
            out = torch.zeros(3)
            added_twice[(3,)](out)
            assert out.tolist() == [2.0, 2.0, 2.0]
        assert _names(_trace_of(added_twice)).count("create_atomic_rmw") == 2


def test_only_equal_arguments_merge_a_float_by_its_bits_a_number_by_its_type():
    def create_fadd(builder, *args):
        pass

    OPERATION_NAMES[create_fadd] = "create_fadd"
    steps = [(create_fadd, (BUILDER, Slot(0), constant), {}, Slot(number), [0])
             for number, constant in enumerate([0.0, -0.0, 0.0, 1, 1.0, True, 1], start=1)]
    steps.append(Guard(len, 3, 0))
    steps.append((create_fadd, (BUILDER, Slot(3), Slot(7)), {}, Slot(8), [3, 7]))
    steps.append((create_fadd, (BUILDER, (Slot(3), 2)), {"other": [Slot(7)]}, Slot(9), [3, 7]))
    kept = merged(steps)
    assert [step[3].index for step in kept if isinstance(step, tuple)] == [1, 2, 4, 5, 6, 8, 9]
    assert kept[5].index == 1  # the guard reads the first 0.0's slot
    assert [slot.index for slot in kept[6][1][1:]] == [1, 4] and kept[6][4] == [1, 4]
    assert kept[7][1][1][0].index == 1 and kept[7][2]["other"][0].index == 4  # inside a tuple or list too
