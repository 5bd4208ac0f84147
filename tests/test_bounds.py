"""``interpreter/bounds.py``: every load, store and atomic of an interpreted kernel is checked against
the memory its launch may touch, before it is made; an out-of-bounds address raises
``OutOfBoundsError`` naming what compute-sanitizer names, in every grid setting, and never ends the
process."""

import json
import os
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim.compat import module_wide_builder
from kwshim.errors import OutOfBoundsError

pytestmark = pytest.mark.skipif(not module_wide_builder(), reason="2.x: kwshim's grid seam is not there to check")

GRIDS = ["sequential", "batched", "check"]


@triton.jit
def copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    values = tl.load(x_ptr + offsets)  # the line the message names
    tl.store(y_ptr + offsets, values)


@triton.jit
def copy_masked(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


@triton.jit
def shifted_store(x_ptr, y_ptr, shift, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets + shift, tl.load(x_ptr + offsets))


@triton.jit
def counted(count_ptr, shift, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(count_ptr + offsets + shift, 1)


@triton.jit
def far_masked(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    keep = offsets < 4
    far = tl.where(keep, offsets, 1 << 28)  # the lanes it switches off point nowhere
    tl.store(y_ptr + offsets, tl.load(x_ptr + far, mask=keep, other=-1.0), mask=keep)


@triton.jit
def through_table(table_ptr, y_ptr, BLOCK: tl.constexpr):
    address = tl.load(table_ptr + tl.program_id(0))
    source = address.to(tl.pointer_type(tl.float32))
    offsets = tl.arange(0, BLOCK)
    tl.store(y_ptr + tl.program_id(0) * BLOCK + offsets, tl.load(source + offsets))


def _copy_line():
    import inspect

    lines, first = inspect.getsourcelines(copy.fn)
    return first + next(i for i, line in enumerate(lines) if "the line the message names" in line)


def _past_the_end(grid):
    x, y = torch.arange(100, dtype=torch.float32), torch.zeros(128)
    with kwshim.activate(grid=grid), pytest.raises(OutOfBoundsError) as caught:
        copy[(4,)](x, y, BLOCK=32)  # program 3 reads x[96:128]; x holds 100
    return str(caught.value), x, y


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("part", ["kernel", "line", "argument", "program", "offset", "allocation", "access"])
def test_the_message_names_each_part_as_compute_sanitizer_does(grid, part):
    message, _, _ = _past_the_end(grid)
    expected = {"kernel": "in kernel copy ", "line": f"at {os.path.basename(__file__)}:{_copy_line()} ",
                "argument": "of argument 'x_ptr'", "program": "by program (3, 0, 0)",
                "offset": "element 100, byte offset 400 ", "allocation": "an allocation of 400 bytes, 100 elements",
                "access": "invalid global read of size 4 bytes"}[part]
    assert message.startswith("kwshim: ") and expected in message, message
    assert "0 bytes after its end" in message


@pytest.mark.parametrize("grid", GRIDS)
def test_the_programs_before_the_bad_one_stored_and_it_stored_nothing(grid):
    _, x, y = _past_the_end(grid)
    assert torch.equal(y[:96], x[:96])  # programs 0-2, as the loop leaves them
    assert not y[96:].any()  # program 3 read out of bounds before its store


@pytest.mark.parametrize("grid", GRIDS)
def test_a_store_before_the_start_names_the_write_and_how_far(grid):
    x, y = torch.ones(64), torch.zeros(64)
    with kwshim.activate(grid=grid), pytest.raises(OutOfBoundsError) as caught:
        shifted_store[(2,)](x, y, -3, BLOCK=32)
    message = str(caught.value)
    assert "invalid global write of size 4 bytes" in message and "by program (0, 0, 0)" in message
    assert "element -3, byte offset -12 of argument 'y_ptr'" in message and "12 bytes before its start" in message
    assert not y.any()


@pytest.mark.parametrize("grid", GRIDS)
def test_an_atomic_past_the_end_raises_and_applies_nothing_past_it(grid):
    count = torch.zeros(64, dtype=torch.int32)
    with kwshim.activate(grid=grid), pytest.raises(OutOfBoundsError, match="invalid global atomic of size 4 bytes"):
        counted[(2,)](count, 1, BLOCK=32)
    assert count[1:32].tolist() == [1] * 31 and count[0] == 0  # program 0 applied; program 1 reached 64


@pytest.mark.parametrize("grid", GRIDS)
def test_lanes_a_mask_switches_off_are_never_checked(grid):
    x, y = torch.arange(100, dtype=torch.float32), torch.zeros(100)
    with kwshim.activate(grid=grid):
        copy_masked[(4,)](x, y, 100, BLOCK=32)
        assert torch.equal(x, y)
        out = torch.zeros(8)
        far_masked[(1,)](torch.arange(4, dtype=torch.float32), out, BLOCK=8)
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("grid", GRIDS)
def test_a_table_of_pointers_reaches_tensors_the_kernel_was_not_handed(grid):
    sources = [torch.full((16,), float(i)) for i in range(3)]
    table = torch.tensor([s.data_ptr() for s in sources], dtype=torch.int64)
    y = torch.zeros(48)
    with kwshim.activate(grid=grid):
        through_table[(3,)](table, y, BLOCK=16)
    assert y.tolist() == [0.0] * 16 + [1.0] * 16 + [2.0] * 16


def test_a_batch_that_meets_a_bad_address_is_not_remembered_as_a_fallback():
    from kwshim.batching.programs import fallback_reasons

    _past_the_end("batched")
    x, y = torch.arange(128, dtype=torch.float32), torch.zeros(128)
    with kwshim.activate(grid="batched"):
        copy[(4,)](x, y, BLOCK=32)
    assert torch.equal(x, y)
    assert "copy" not in fallback_reasons()


def test_check_bounds_off_reads_as_the_interpreter_reads():
    x, y = torch.arange(100, dtype=torch.float32), torch.zeros(128)
    with kwshim.activate(grid="sequential", check_bounds=False):
        copy[(4,)](x, y, BLOCK=32)  # 28 elements read past x's 400 bytes: read, not checked
    assert torch.equal(y[:100], x)


def test_the_native_memory_functions_are_as_they_were_after_the_switch():
    from triton.runtime import interpreter

    native = interpreter._interpreter
    before = [getattr(native, name) for name in ("load", "store", "atomic_rmw", "atomic_cas")]
    with kwshim.activate():
        during = [getattr(native, name) for name in ("load", "store", "atomic_rmw", "atomic_cas")]
    assert all(a is not b for a, b in zip(before, during))
    assert [getattr(native, name) for name in ("load", "store", "atomic_rmw", "atomic_cas")] == before


def test_random_out_of_bounds_kernels_raise_the_error_and_never_end_the_process():
    """The fuzzer (``tests/oob_fuzzer.py``) in a process of its own: a signal there fails this test."""
    fuzzer = os.path.join(os.path.dirname(__file__), "oob_fuzzer.py")
    done = subprocess.run([sys.executable, fuzzer, "150", "7"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["wrong"] == [] and found["counts"]["wrong"] == 0, found
    assert found["counts"]["raised"] >= 60 and found["counts"]["stored"] >= 30, found
