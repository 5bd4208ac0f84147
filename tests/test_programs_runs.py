"""A batch whose Python control flow differs between programs splits into runs of programs that
agree (``grid._run``), and a ``range`` whose bounds differ runs in lockstep with a per-program
index (``interpreter/program_range``): every result has the loop's bits."""

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim.batching import programs as grid_module

from .kernels import needs_block_loads
from .test_programs import _both, _reason, _same_bits, batching


@pytest.fixture
def batches(monkeypatch):
    """The program counts of the batches that were committed, launch by launch order."""
    counts = []
    batch = grid_module._batch

    def counted(fn, args, grid, first, count, *rest, **keywords):
        log, replayed = batch(fn, args, grid, first, count, *rest, **keywords)
        if log.conflict() is None:
            counts.append(count)
        return log, replayed

    monkeypatch.setattr(grid_module, "_batch", counted)
    return counts


@triton.jit
def early_return(out_ptr, n):
    pid = tl.program_id(0)
    if pid >= n:
        return
    tl.store(out_ptr + pid, pid + 1)


@triton.jit
def persistent(out_ptr, n, PROGRAMS: tl.constexpr):
    for i in range(tl.program_id(0), n, PROGRAMS):
        tl.store(out_ptr + i, i * 2)


@triton.jit
def persistent_tl_range(out_ptr, n, PROGRAMS: tl.constexpr):
    for i in tl.range(tl.program_id(0), n, PROGRAMS):
        tl.store(out_ptr + i, i + 100)


@triton.jit
def row_blocks(x_ptr, w_ptr, dw_ptr, y_ptr, n_rows, n_cols, rows_per_program, BLOCK: tl.constexpr):
    """Liger's backward form: each program a block of rows, its own weight-gradient row."""
    pid = tl.program_id(0).to(tl.int64)
    row_start = pid * rows_per_program
    row_end = min((pid + 1) * rows_per_program, n_rows)  # the last programs have fewer rows, or none
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    dw = tl.zeros((BLOCK,), dtype=tl.float32)
    for row in range(row_start, row_end):
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
        dw += x * w
        tl.store(y_ptr + row * n_cols + cols, x * 2 + row, mask=mask)
    tl.store(dw_ptr + pid * n_cols + cols, dw, mask=mask)


@batching
def test_an_early_return_on_pid_runs_as_two_batches(batches):
    looped, batched = _both(early_return, (8,), lambda: (torch.zeros(8, dtype=torch.int32),), 5)
    _same_bits(looped, batched)
    assert batched[0].tolist() == [1, 2, 3, 4, 5, 0, 0, 0]
    assert batches == [5, 3] and _reason(early_return) is None


@batching
@pytest.mark.parametrize("kernel, offset", [(persistent, 0), (persistent_tl_range, 100)])
def test_a_persistent_loop_runs_its_programs_in_lockstep_in_runs_of_equal_trips(batches, kernel, offset):
    looped, batched = _both(kernel, (3,), lambda: (torch.zeros(10, dtype=torch.int32),), 10, 3)
    _same_bits(looped, batched)
    assert batched[0].tolist() == [i * 2 if kernel is persistent else i + offset for i in range(10)]
    assert batches == [1, 2] and _reason(kernel) is None  # program 0 makes 4 trips, 1 and 2 make 3


@batching
@needs_block_loads
def test_row_blocks_of_differing_bounds_run_batched_with_the_loop_s_bits(batches):
    torch.manual_seed(0)
    x, w = torch.randn(203, 70), torch.randn(70)  # 21 programs of 10 rows: the last has 3

    def make():
        return x, w, torch.zeros(21, 70), torch.zeros(203, 70)

    looped, batched = _both(row_blocks, (21,), make, 203, 70, 10, BLOCK=128)
    _same_bits(looped, batched)
    assert torch.equal(batched[3], x * 2 + torch.arange(203.0)[:, None])
    assert batches == [20, 1] and _reason(row_blocks) is None
    with kwshim.activate(grid="check"):
        row_blocks[(21,)](*make(), 203, 70, 10, BLOCK=128)


@triton.jit
def index_arithmetic(out_ptr, FOUR: tl.constexpr):
    pid = tl.program_id(0)
    for i in range(pid * 4 - 8, pid * 4 - 4):
        j = i + 8  # from 3.2 an assignment makes a tensor: both must be exact
        value = (j * 3) // FOUR - j % FOUR + (-i) * 2 - (i << 2) + (i >> 1) + (i & 6) + (5 ^ i) - ~i
        tl.store(out_ptr + j, value + (i < 0) + (1 - i) * (i != 1) + (FOUR | i))


def _index_arithmetic(i):
    j = i + 8
    return (j * 3) // 4 - j % 4 + (-i) * 2 - (i << 2) + (i >> 1) + (i & 6) + (5 ^ i) - ~i \
        + (i < 0) + (1 - i) * (i != 1) + (4 | i)


@batching
def test_a_loop_index_computes_where_python_and_triton_agree(batches):
    looped, batched = _both(index_arithmetic, (6,), lambda: (torch.zeros(24, dtype=torch.int32),), FOUR=4)
    _same_bits(looped, batched)
    assert batched[0].tolist() == [_index_arithmetic(i) for i in range(-8, 16)]
    assert batches == [6] and _reason(index_arithmetic) is None


@triton.jit
def index_overflow(out_ptr):
    pid = tl.program_id(0)
    for i in range(pid, pid + 1):
        tl.store(out_ptr + pid, i * 2 ** 30 * 4 // 2 ** 16)  # the loop's Python int passes 2**31 and comes back


@triton.jit
def index_floor(out_ptr):
    pid = tl.program_id(0)
    for i in range(pid - 3, pid - 2):
        tl.store(out_ptr + pid, i // 2 * 10 + i % 2)  # Python floors (-3 // 2 == -2), Triton truncates


@triton.jit
def triangular(out_ptr):
    """Every program loops a different number of times: runs of one program each."""
    pid = tl.program_id(0)
    total = pid * 0
    for i in range(pid):
        total += i
    tl.store(out_ptr + pid, total)


@triton.jit
def quarters(out_ptr):
    """The trip count changes every 16 programs: four runs, fewer than twice their values (no groups)."""
    pid = tl.program_id(0)
    for i in range(pid // 16):
        tl.store(out_ptr + pid * 4 + i, pid + i)


@batching
@pytest.mark.parametrize("kernel, grid, make, reason", [
    (index_overflow, (3,), lambda: (torch.zeros(3, dtype=torch.int64),), "a loop index's arithmetic leaves int32"),
    (index_floor, (6,), lambda: (torch.zeros(6, dtype=torch.int32),), "a loop index in arithmetic where Python"),
    (triangular, (64,), lambda: (torch.zeros(64, dtype=torch.int32),), "Python control flow (if, while, range)"),
])
def test_what_the_runs_cannot_follow_falls_back_to_the_loop(kernel, grid, make, reason):
    grid_module.forget(kernel.fn)
    looped, batched = _both(kernel, grid, make)
    _same_bits(looped, batched)
    assert _reason(kernel).startswith(reason), _reason(kernel)
    if kernel is index_floor:  # a Python int floors (3.0, 3.1); from 3.2 kwshim makes it a tensor, which truncates
        assert batched[0].tolist() in ([-19, -10, -9, 0, 1, 10], [-11, -10, -1, 0, 1, 10])


@batching
def test_after_a_split_each_run_of_programs_that_agree_is_the_next_batch(monkeypatch):
    attempts = []
    batch = grid_module._batch

    def attempted(fn, args, grid, first, count, *rest, **keywords):
        attempts.append(count)
        return batch(fn, args, grid, first, count, *rest, **keywords)

    grid_module.forget(quarters.fn)
    looped, batched = _both(quarters, (64,), lambda: (torch.full((256,), -1, dtype=torch.int32),))
    _same_bits(looped, batched)
    monkeypatch.setattr(grid_module, "_batch", attempted)
    with kwshim.activate(grid="batched"):
        quarters[(64,)](torch.full((256,), -1, dtype=torch.int32))
    assert attempts == [64, 16, 16, 16, 16] and _reason(quarters) is None  # before: 64, 16, 48, 16, 32, 16, 16


@triton.jit
def scale_rows(x_ptr, rows_per_program, N: tl.constexpr):
    """Each program doubles its rows in place, row by row: it reads each element before it writes it."""
    pid = tl.program_id(0)
    for row in range(pid * rows_per_program, (pid + 1) * rows_per_program):
        offsets = row * N + tl.arange(0, N)
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) * 2 + row)


@triton.jit
def accumulate_rows(x_ptr, rows_per_program, N: tl.constexpr):
    """Each program adds its rows into its first row: it reads what it wrote itself, a trip before."""
    pid = tl.program_id(0)
    first = pid * rows_per_program * N + tl.arange(0, N)
    for row in range(pid * rows_per_program + 1, (pid + 1) * rows_per_program):
        tl.store(x_ptr + first, tl.load(x_ptr + first) + tl.load(x_ptr + row * N + tl.arange(0, N)))


@triton.jit
def shift_rows(x_ptr, rows_per_program, N: tl.constexpr):
    """Each row is written from the one before it: a program's first row from the last row of the
    program before it."""
    pid = tl.program_id(0)
    for row in range(pid * rows_per_program, (pid + 1) * rows_per_program):
        tl.store(x_ptr + (row + 1) * N + tl.arange(0, N), tl.load(x_ptr + row * N + tl.arange(0, N)) * 2)


@triton.jit
def reread_rows(x_ptr, scratch_ptr, out_ptr, steps, N: tl.constexpr):
    """flash-linear-attention's recurrent backward: each program stores a row per step into its own
    scratch rows, last row first, then, after a barrier, loads them back in order."""
    pid = tl.program_id(0)
    cols = tl.arange(0, N)
    for t in range(steps):
        row = pid * steps + steps - 1 - t
        tl.store(scratch_ptr + row * N + cols, tl.load(x_ptr + row * N + cols) * 2 + t)
    tl.debug_barrier()
    total = tl.zeros([N], dtype=tl.float32)
    for t in range(steps):
        total = total * 0.5 + tl.load(scratch_ptr + (pid * steps + t) * N + cols)
    tl.store(out_ptr + pid * N + cols, total)


@triton.jit
def reread_offset(flags_ptr, rows_ptr, N: tl.constexpr):
    """Each program sets its own flag and reads it back to choose the row to add to: read from the
    memory before the batch (0), its own row; read back (1), row 1, which every program adds to."""
    pid = tl.program_id(0)
    cols = tl.arange(0, N)
    tl.store(flags_ptr + pid, tl.load(flags_ptr + pid) + 1)
    offset = tl.load(flags_ptr + pid)
    row = rows_ptr + (pid + offset * (1 - pid)) * N + cols
    tl.store(row, tl.load(row) + pid + 10)


@batching
@needs_block_loads
@pytest.mark.parametrize("case", ["reread_rows", "accumulate_rows"])
def test_programs_reading_back_their_own_writes_run_batched_with_the_loop_s_bits(case):
    """Each program reads what it wrote itself, and no program meets another's bytes: the batch runs
    again writing each store at once (``own_writes``), launch after launch."""
    if case == "reread_rows":
        kernel, grid, extra, constants = reread_rows, (6,), (5,), {"N": 16}
        torch.manual_seed(0)
        x = torch.randn(6 * 5 * 16)

        def make():
            return x.clone(), torch.zeros(6 * 5 * 16), torch.zeros(6 * 16)
    else:
        kernel, grid, extra, constants = accumulate_rows, (40,), (4,), {"N": 16}

        def make():
            return (torch.arange(160 * 16, dtype=torch.float32),)
    grid_module.forget(kernel.fn)
    for _ in range(2):  # the second launch writes through from its first batch
        looped, batched = _both(kernel, grid, make, *extra, **constants)
        _same_bits(looped, batched)
        assert _reason(kernel) is None
    record = grid_module.launch_record()[kernel.fn.__qualname__]
    assert record["batched"] >= 2 and record["looped"] == 0


@batching
@needs_block_loads
def test_a_batch_writing_through_that_meets_another_program_is_undone_and_the_loop_runs():
    """Batched, each program's read of its flag saw the memory before the batch (0: its own row);
    writing through, it reads back its 1 and adds to row 1, as every program does: the batch's writes
    are put back, and the loop runs from the memory the launch was given."""
    grid_module.forget(reread_offset.fn)
    looped, batched = _both(reread_offset, (5,), lambda: (torch.zeros(5, dtype=torch.int32), torch.zeros(5, 8)), N=8)
    _same_bits(looped, batched)
    assert looped[0].tolist() == [1] * 5 and looped[1].sum(dim=1).tolist() == [0.0, 60.0 * 8, 0.0, 0.0, 0.0]
    assert _reason(reread_offset).startswith("a program reads what another program (or itself, earlier)")


@batching
@needs_block_loads
def test_a_loop_updating_rows_in_place_runs_batched(batches):
    looped, batched = _both(scale_rows, (40,), lambda: (torch.arange(160 * 16, dtype=torch.float32),), 4, N=16)
    _same_bits(looped, batched)
    assert batched[0][16:18].tolist() == [33.0, 35.0]  # row 1: 16 * 2 + 1, 17 * 2 + 1
    assert batches == [40] and _reason(scale_rows) is None


@batching
@needs_block_loads
@pytest.mark.parametrize("kernel", [shift_rows])
def test_a_loop_reading_what_was_written_in_the_launch_falls_back(kernel):
    grid_module.forget(kernel.fn)
    looped, batched = _both(kernel, (40,), lambda: (torch.arange(41 * 4 * 16, dtype=torch.float32),), 4, N=16)
    _same_bits(looped, batched)
    assert _reason(kernel).startswith("a program reads what another program (or itself, earlier)")


@batching
@needs_block_loads
def test_the_batch_s_range_is_python_s_for_equal_bounds_and_is_put_back_after_each_batch():
    import builtins

    import triton.runtime.interpreter as interpreter

    from kwshim.batching.program_range import program_range, tl_range

    assert program_range(2, 9, 3) == builtins.range(2, 9, 3)
    patch_lang_core = vars(interpreter)["_patch_lang_core"]
    x = torch.randn(30, 8)
    with kwshim.activate(grid="batched"):
        row_blocks[(3,)](x, torch.ones(8), torch.zeros(3, 8), torch.zeros(30, 8), 30, 8, 10, BLOCK=8)
        persistent_tl_range[(3,)](torch.zeros(10, dtype=torch.int32), 10, 3)
    # up to 3.5 each launch leaves tl.range the interpreter's own (a new one each time); never kwshim's
    assert tl.range is not tl_range and tl.core.range is not tl_range
    assert vars(interpreter)["_patch_lang_core"] is patch_lang_core
    assert "range" not in row_blocks.fn.__globals__ and "range" not in vars(interpreter)


@triton.jit
def nan_branch(x_ptr, out_ptr):
    pid = tl.program_id(0)
    value = tl.load(x_ptr + pid)
    if value:  # NaN is true, as 2.0 is: only 0.0 differs
        tl.store(out_ptr + pid, 1)
    else:
        tl.store(out_ptr + pid, -1)


@batching
def test_a_branch_on_nan_splits_by_truth_and_ends(batches):
    x = torch.tensor([float("nan"), 2.0, float("nan"), 0.0, 0.0, float("nan")])
    looped, batched = _both(nan_branch, (6,), lambda: (x, torch.zeros(6, dtype=torch.int32)))
    _same_bits(looped, batched)
    assert batched[1].tolist() == [1, 1, 1, -1, -1, 1]
    assert batches == [3, 2, 1] and _reason(nan_branch) is None
