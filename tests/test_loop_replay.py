"""A loop's later iterations on a recorded batch, made from its third iteration's steps
(``interpreter/loop_replay``): the loop's bits, and the body left to run wherever an iteration could
differ from the one before."""

import sys

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim.batching import loop_replay, replay

from .test_programs import _same_bits, batching


def _tensor_loop_variables():
    """3.2 on: under the switch a loop's variable is a tensor (``interpreter/fixes``), which a
    replayed iteration needs (before, the body may compute with the Python int unseen)."""
    return hasattr(sys.modules["triton.runtime.interpreter"], "FunctionRewriter")


@triton.jit
def decaying_sum(x_ptr, out_ptr, steps, N: tl.constexpr):
    """A loop-carried block, a pointer advanced each trip and the index in the arithmetic and the mask."""
    pid = tl.program_id(0)
    cols = tl.arange(0, N)
    total = tl.zeros([N], dtype=tl.float32)
    p = x_ptr + pid * steps * N + cols
    for t in range(steps):
        kind = tl.dtype("fp32")  # a dtype made anew each trip
        total = total * 0.5 + tl.load(p, mask=cols < N - t % 3, other=1.0).to(kind) * (t + 1)
        p += N
    tl.store(out_ptr + pid * N + cols, total)


@triton.jit
def counted(x_ptr, out_ptr, count_ptr, steps, N: tl.constexpr, COUNT: tl.constexpr):
    """A Python value the body changes each trip (``+=`` on a constexpr: no assignment the switch
    makes a tensor)."""
    pid = tl.program_id(0)
    cols = tl.arange(0, N)
    total = tl.zeros([N], dtype=tl.float32)
    for t in range(steps):
        total += tl.load(x_ptr + (pid * steps + t) * N + cols)
        COUNT += 1
    tl.store(out_ptr + pid * N + cols, total)
    tl.store(count_ptr + pid, COUNT)


@triton.jit
def flagged(x_ptr, flags_ptr, out_ptr, steps, N: tl.constexpr):
    """An ``if`` on a loaded value in the body: each trip reads its own flag into Python."""
    pid = tl.program_id(0)
    cols = tl.arange(0, N)
    total = tl.zeros([N], dtype=tl.float32)
    for t in range(steps):
        if tl.load(flags_ptr + t) > 0:
            total += tl.load(x_ptr + (pid * steps + t) * N + cols)
    tl.store(out_ptr + pid * N + cols, total)


@triton.jit
def nested(x_ptr, out_ptr, outer, inner, N: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, N)
    total = tl.zeros([N], dtype=tl.float32)
    for i in range(outer):
        row = tl.zeros([N], dtype=tl.float32)
        for j in range(inner):
            row = row * 0.75 + tl.load(x_ptr + ((pid * outer + i) * inner + j) * N + cols)
        total += tl.sum(row) * (i + 1) + row
    tl.store(out_ptr + pid * N + cols, total)


def _both(kernel, make, grid, **constants):
    """The tensors ``kernel`` left under the loop and batched (its first launch, then a replayed
    one), and how many iterations the batched launches made from a template."""
    results = {}
    for mode in ("sequential", "batched"):
        replay.clear()
        with kwshim.activate(grid=mode):
            before = loop_replay.replayed_iterations
            tensors, scalars = make()
            kernel[grid](*tensors, *scalars, **constants)
            results[mode] = tensors
            if mode == "batched":
                again, _ = make()
                kernel[grid](*again, *scalars, **constants)  # replays the first launch's trace
                _same_bits(tensors, again)
            made = loop_replay.replayed_iterations - before
    _same_bits(results["sequential"], results["batched"])
    return results["batched"], made


@batching
def test_a_loop_s_later_iterations_are_made_from_its_third_s_steps_with_the_loop_s_bits():
    programs, steps, n = 4, 40, 16

    def make():
        generator = torch.Generator().manual_seed(0)
        return (torch.randn(programs * steps * n, generator=generator), torch.zeros(programs * n)), (steps,)

    _, made = _both(decaying_sum, make, (programs,), N=n)
    assert made == (steps - 3 if _tensor_loop_variables() else 0)


@batching
def test_a_python_int_the_body_changes_leaves_the_loop_to_the_body():
    programs, steps, n = 3, 12, 8

    def make():
        generator = torch.Generator().manual_seed(1)
        return (torch.randn(programs * steps * n, generator=generator), torch.zeros(programs * n),
                torch.zeros(programs, dtype=torch.int32)), (steps,)

    (_, _, count), made = _both(counted, make, (programs,), N=n, COUNT=5)
    assert count.tolist() == [5 + steps] * programs and made == 0


@batching
def test_a_value_read_into_python_each_trip_leaves_the_loop_to_the_body():
    programs, steps, n = 3, 12, 8

    def make():
        generator = torch.Generator().manual_seed(2)
        flags = torch.tensor([1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0], dtype=torch.int32)
        return (torch.randn(programs * steps * n, generator=generator), flags, torch.zeros(programs * n)), (steps,)

    _, made = _both(flagged, make, (programs,), N=n)
    assert made == 0


@batching
def test_nested_loops_make_their_iterations_from_templates_with_the_loop_s_bits():
    programs, outer, inner, n = 2, 8, 10, 8

    def make():
        generator = torch.Generator().manual_seed(3)
        return (torch.randn(programs * outer * inner * n, generator=generator), torch.zeros(programs * n)), \
            (outer, inner)

    _, made = _both(nested, make, (programs,), N=n)
    if _tensor_loop_variables():
        # the inner loop in outer iterations 0-2 (7 each), then outer iterations 3-7 (each its own 10)
        assert made == 3 * (inner - 3) + (outer - 3)
    else:
        assert made == 0


@batching
@pytest.mark.parametrize("steps", [loop_replay.MIN_TRIPS - 1, loop_replay.MIN_TRIPS])
def test_a_short_loop_runs_its_body(steps):
    def make():
        generator = torch.Generator().manual_seed(4)
        return (torch.randn(2 * steps * 8, generator=generator), torch.zeros(2 * 8)), (steps,)

    _, made = _both(decaying_sum, make, (2,), N=8)
    assert made == (steps - 3 if _tensor_loop_variables() and steps >= loop_replay.MIN_TRIPS else 0)
