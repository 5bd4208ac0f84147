"""``grid="batched"`` and ``"check"`` (``interpreter/grid``, ``interpreter/program_axis``): a launch's
programs run together and leave every tensor with the bits Triton's own loop leaves, or fall back
to the loop, remembering why."""

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim.batching import programs as grid_module

from .kernels import needs_block_loads


def _batching():
    import triton.runtime.interpreter as interpreter

    return hasattr(interpreter, "interpreter_builder")


batching = pytest.mark.skipif(not _batching(), reason="2.x: no module-wide builder to batch with")


@triton.jit
def row_norm(x_ptr, w_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    scale = 1 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + 1e-6)
    tl.store(y_ptr + row * n_cols + cols, x * scale * w, mask=mask)


def _both(kernel, grid, make, *extra, **constants):
    """The tensors ``make()`` gives, after a sequential and after a batched launch."""
    results = []
    for mode in ("sequential", "batched"):
        tensors = make()
        with kwshim.activate(grid=mode):
            kernel[grid](*tensors, *extra, **constants)
        results.append(tensors)
    return results


def _same_bits(looped, batched):
    for a, b in zip(looped, batched):
        assert a.dtype == b.dtype and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def _reason(kernel):
    return grid_module.fallback_reasons().get(kernel.fn.__qualname__)


@batching
@needs_block_loads
def test_a_row_kernel_runs_batched_with_the_loop_s_bits():
    torch.manual_seed(0)
    x, w = torch.randn(300, 100), torch.randn(100)  # 300 rows: a first chunk of 64, then the rest
    looped, batched = _both(row_norm, (300,), lambda: (x, w, torch.zeros(300, 100)), 100, BLOCK=128)
    _same_bits(looped, batched)
    assert _reason(row_norm) is None


@triton.jit
def shapes(x_ptr, out_ptr, idx_ptr, cum_ptr, dot_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, N)[:, None]
    cols = tl.arange(0, N)[None, :]
    block = tl.load(x_ptr + pid * N * N + rows * N + cols)
    flipped = tl.trans(block)
    total = tl.sum(tl.reshape(block, (N * N,)), axis=0) + tl.max(flipped, axis=1)
    tl.store(out_ptr + pid * N + tl.arange(0, N), total)
    tl.store(idx_ptr + pid * N + tl.arange(0, N), tl.argmax(block, axis=0))
    tl.store(cum_ptr + pid * N * N + rows * N + cols, tl.cumsum(block, axis=1) + tl.min(block))
    tl.store(dot_ptr + pid * N * N + rows * N + cols, tl.dot(block, tl.trans(flipped)) + pid)


@batching
@needs_block_loads
def test_shape_operations_reductions_scans_and_dots_keep_the_loop_s_bits():
    torch.manual_seed(1)
    x = torch.randn(40, 16, 16)

    def make():
        return x, torch.zeros(40, 16), torch.zeros(40, 16, dtype=torch.int32), torch.zeros(40, 16, 16), \
            torch.zeros(40, 16, 16)

    looped, batched = _both(shapes, (40,), make, N=16)
    _same_bits(looped, batched)
    assert _reason(shapes) is None


@triton.jit
def last_writer(out_ptr):
    tl.store(out_ptr, tl.program_id(0) * 10 + tl.program_id(1))


@triton.jit
def two_statements(out_ptr, half_ptr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, pid)
    tl.store(out_ptr + (pid + 1) % 4, -pid)  # program p overwrites what p + 1 will write first
    tl.store(half_ptr + pid % 2, pid.to(tl.float16))
    for step in range(3):  # one statement, three stores: each is a record of its own
        tl.store(out_ptr + 4 + step, pid * 10 + step)


@batching
def test_stores_of_several_statements_to_one_address_are_written_in_the_loop_s_order():
    def make():
        return torch.zeros(7, dtype=torch.int32), torch.zeros(2, dtype=torch.float16)

    looped, batched = _both(two_statements, (4,), make)
    _same_bits(looped, batched)
    assert batched[0].tolist() == [-3, 1, 2, 3, 30, 31, 32] and batched[1].tolist() == [2.0, 3.0]
    assert _reason(two_statements) is None


@triton.jit
def overwrite_one(x_ptr, y_ptr, loss_ptr, N: tl.constexpr):
    """Liger's cross-entropy tail: a row stored, then one element of it again; a 4-byte store elsewhere."""
    pid = tl.program_id(0)
    offsets = pid * N + tl.arange(0, N)
    tl.store(x_ptr + offsets, (tl.load(x_ptr + offsets).to(tl.float32) * 2).to(x_ptr.dtype.element_ty))
    tl.store(x_ptr + pid * N + tl.load(y_ptr + pid), -1.0)
    tl.store(loss_ptr + pid, pid.to(tl.float32))


@batching
@needs_block_loads
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_2_byte_element_stored_twice_beside_a_4_byte_store_keeps_its_neighbours(dtype):
    """The ordered commit writes each element size apart: together, every element was written as
    4 bytes, zeroing the neighbour of the last one written."""
    x = torch.arange(1, 8 * 16 + 1, dtype=torch.float32).to(dtype).reshape(8, 16)
    targets = torch.tensor([3, 0, 15, 7, 1, 2, 14, 9], dtype=torch.int32)

    def make():
        return x.clone(), targets, torch.zeros(8)

    looped, batched = _both(overwrite_one, (8,), make, N=16)
    _same_bits(looped, batched)
    expected = x.float() * 2
    expected[torch.arange(8), targets.long()] = -1.0
    assert torch.equal(batched[0].float(), expected)
    assert _reason(overwrite_one) is None


@triton.jit
def into_the_next_block(out_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid * N + tl.arange(0, N), pid + 1)
    tl.store(out_ptr + (pid + 1) * N + tl.arange(0, N // 2), -pid - 1)  # the next program overwrites it


@batching
def test_a_later_program_s_earlier_store_wins_over_an_earlier_program_s_later_store():
    """Rising rows, two statements: in step order the second statement's half rows would win; in
    the loop's order program p + 1 writes its whole row after program p wrote half of it."""
    looped, batched = _both(into_the_next_block, (300,), lambda: (torch.zeros(301 * 256, dtype=torch.int32),),
                            N=256)
    _same_bits(looped, batched)
    rows = batched[0].reshape(301, 256)
    assert torch.equal(rows[:300], torch.arange(1, 301, dtype=torch.int32)[:, None].expand(300, 256))
    assert rows[300, :128].unique().tolist() == [-300] and rows[300, 128:].unique().tolist() == [0]
    assert _reason(into_the_next_block) is None


@triton.jit
def double_rows(x_ptr, N: tl.constexpr):
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) * 2 + 1)  # each program its own row, in place


@batching
@needs_block_loads
def test_a_program_updating_its_own_row_in_place_runs_batched():
    looped, batched = _both(double_rows, (300,), lambda: (torch.arange(300 * 512, dtype=torch.float32),), N=512)
    _same_bits(looped, batched)
    assert batched[0][:3].tolist() == [1.0, 3.0, 5.0]
    assert _reason(double_rows) is None


@batching
@needs_block_loads
def test_float_atomics_whose_result_is_unused_add_in_the_loop_s_order():
    """Split-K: each program adds its partial sum into one fp32 (and, per lane, into a block); fp32
    addition is not associative, so only the loop's order gives the loop's bits."""
    values = torch.zeros(64)
    values[::16] = torch.tensor([1e8, 1.0, -1e8, 3.0])  # the partial sums, program by program

    def make():
        return values.clone(), torch.zeros(1)

    looped, batched = _both(split_k, (4,), make, N=16)
    _same_bits(looped, batched)
    assert batched[1].item() == 3.0  # ((1e8 + 1) - 1e8) + 3: in another order, 4.0 or 0.0
    assert _reason(split_k) is None


@batching
def test_stores_to_one_address_leave_the_last_program_s_value():
    looped, batched = _both(last_writer, (5, 7), lambda: (torch.zeros(1, dtype=torch.int32),))
    assert looped[0].item() == batched[0].item() == 46  # program (4, 6), the loop's last
    assert _reason(last_writer) is None


@triton.jit
def chained(out_ptr):
    pid = tl.program_id(0)  # each program reads what the one before it wrote
    previous = tl.load(out_ptr + pid)
    tl.store(out_ptr + pid + 1, previous + 1)


@triton.jit
def counter(count_ptr):
    tl.store(count_ptr, tl.load(count_ptr) + 1)  # every program reads what the one before it wrote


@triton.jit
def split_k(a_ptr, out_ptr, N: tl.constexpr):
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    tl.atomic_add(out_ptr, tl.sum(tl.load(a_ptr + offsets), axis=0))


@triton.jit
def ticket(counter_ptr, out_ptr):
    tl.store(out_ptr + tl.program_id(0), tl.atomic_add(counter_ptr, 1))


@triton.jit
def spin_lock(lock_ptr, count_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(count_ptr, tl.load(count_ptr) + 1)
    tl.atomic_xchg(lock_ptr, 0)


@triton.jit
def prints(out_ptr):
    tl.device_print("pid", tl.program_id(0))
    tl.store(out_ptr + tl.program_id(0), 1)


@triton.jit
def transposed(x_ptr, out_ptr):
    offsets = tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :]
    tl.store(out_ptr + tl.program_id(0) * 16 + offsets, tl.load(x_ptr + offsets).T)


@batching
@needs_block_loads
@pytest.mark.parametrize("kernel, grid, make, extra, reason", [
    (chained, (6,), lambda: (torch.zeros(7, dtype=torch.int32),), (), "a program reads what another program"),
    (counter, (9,), lambda: (torch.zeros(1, dtype=torch.int32),), (), "a program reads what another program"),
    (spin_lock, (5,), lambda: (torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)), (),
     "an atomic compare-and-swap"),
    (ticket, (6,), lambda: (torch.zeros(1, dtype=torch.int32), torch.zeros(6, dtype=torch.int32)), (),
     "the value an atomic returned is used"),
    (prints, (3,), lambda: (torch.zeros(3, dtype=torch.int32),), (), "device_print"),
    (transposed, (2,), lambda: (torch.arange(16.0), torch.zeros(32)), (), "tensor.T"),
])
def test_what_cannot_be_batched_falls_back_to_the_loop_and_is_remembered(kernel, grid, make, extra, reason):
    grid_module.forget(kernel.fn)
    looped, batched = _both(kernel, grid, make, *extra)
    _same_bits(looped, batched)
    assert _reason(kernel).startswith(reason), _reason(kernel)
    if kernel is chained:
        assert batched[0].tolist() == list(range(7))
    grid_module.forget(kernel.fn)  # the kernel as written: the grid ran the interpreter's rewrite (3.6+)
    assert _reason(kernel) is None


@batching
@needs_block_loads
def test_check_compares_the_batch_with_the_loop_and_names_the_first_difference(monkeypatch):
    x, w = torch.ones(4, 8), torch.ones(8)
    y = torch.zeros(4, 8)
    with kwshim.activate(grid="check"):
        row_norm[(4,)](x, w, y, 8, BLOCK=8)
    assert torch.equal(y, torch.ones(4, 8) / torch.sqrt(torch.tensor(1 + 1e-6)))

    from kwshim.batching.store_log import StoreLog

    commit = StoreLog.commit

    def drop_the_last_store(log, native_store):  # a batch that loses a write: what check exists to catch
        log.stores.pop()
        commit(log, native_store)

    monkeypatch.setattr(StoreLog, "commit", drop_the_last_store)
    y = torch.zeros(4, 8)
    with kwshim.activate(grid="check"), pytest.raises(kwshim.GridDivergenceError) as caught:
        row_norm[(4,)](x, w, y, 8, BLOCK=8)
    assert "kwshim: kernel row_norm: the batched grid left argument 'y_ptr' different from Triton's loop at " \
           "index (0, 0) (0.0 where the loop stored 0.99" in str(caught.value)
    assert y[0, 0].item() != 0  # the loop's result is what the tensor holds


@batching
@triton.jit
def _counted_rows(out_ptr):
    tl.store(out_ptr + tl.program_id(0), tl.program_id(0))


def _batched_launches():
    from kwshim.batching.programs import launch_record

    return launch_record().get(_counted_rows.fn.__qualname__, {}).get("batched", 0)


@batching
def test_each_launch_runs_as_the_grid_in_force_says_and_the_seam_goes_with_the_switch():
    """The grid is read from the settings in force at each launch (one place): a nested
    activation's grid needs no patch of its own, and the outer one's is back when it ends."""
    from triton.runtime.interpreter import GridExecutor

    original, out = GridExecutor.__call__, torch.zeros(4, dtype=torch.int32)
    with kwshim.activate(grid="sequential"):
        before = _batched_launches()
        _counted_rows[(4,)](out)
        assert _batched_launches() == before  # the loop
        with kwshim.activate(autotune="first", grid="batched"):
            _counted_rows[(4,)](out)
            assert _batched_launches() == before + 1
            with kwshim.activate(autotune="all"):  # inherits batched
                _counted_rows[(4,)](out)
                assert _batched_launches() == before + 2
        _counted_rows[(4,)](out)
        assert _batched_launches() == before + 2  # the loop again
    assert GridExecutor.__call__ is original and out.tolist() == [0, 1, 2, 3]


@triton.jit
def descriptor_tiles(x_desc, w_desc, out_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """A 2-D tile per program through host tensor descriptors, the edge tiles padded and masked."""
    m, n = tl.program_id(0), tl.program_id(1)
    tile = x_desc.load([m * BLOCK_M, n * BLOCK_N]).to(tl.float32)
    weights = w_desc.load([n * BLOCK_N])
    out_desc.store([m * BLOCK_M, n * BLOCK_N], (tile * weights[None, :] + m).to(out_desc.dtype))


@batching
@needs_block_loads
def test_tensor_descriptors_load_and_store_batched_with_the_loop_s_bits():
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        pytest.skip("this Triton has no host TensorDescriptor (3.4+)")
    torch.manual_seed(3)
    x, w = torch.randn(70, 112).to(torch.bfloat16), torch.randn(112)  # 70 x 100 of rows of 112: edge tiles

    def make():
        out = torch.full((70, 112), 7.0, dtype=torch.bfloat16)
        return (TensorDescriptor(x, [70, 100], [112, 1], [16, 32]), TensorDescriptor(w, [100], [1], [32]),
                TensorDescriptor(out, [70, 100], [112, 1], [16, 32]), out)

    results = []
    for mode in ("sequential", "batched"):
        *descriptors, out = make()
        with kwshim.activate(grid=mode):
            descriptor_tiles[(5, 4)](*descriptors, BLOCK_M=16, BLOCK_N=32)
        results.append(out)
    _same_bits(results[:1], results[1:])
    exact = x[:, :100].double() * w[:100].double() + torch.arange(70.0, dtype=torch.float64)[:, None] // 16
    expected = exact.float().to(torch.bfloat16)  # the product and sum fused, rounded once to fp32
    assert torch.equal(results[1][:, :100], expected) and (results[1][:, 100:] == 7).all()
    assert _reason(descriptor_tiles) is None


@triton.jit
def clock_stamp(out_ptr):
    tl.store(out_ptr + tl.program_id(0), tl.extra.cuda.globaltimer())


@batching
def test_check_runs_a_launch_of_one_program_once_and_compares_launches_of_more(monkeypatch):
    """One program's batch is the loop: nothing to compare, and a kernel that reads the clock would
    differ from itself."""
    checked = []
    compare = grid_module._checked
    monkeypatch.setattr(grid_module, "_checked", lambda *args: checked.append(args[2]) or compare(*args))
    out = torch.zeros(2, dtype=torch.int64)
    with kwshim.activate(grid="check"):
        clock_stamp[(1,)](out)
        assert out[0] > 0 and checked == []
        with pytest.raises(kwshim.errors.GridDivergenceError, match="clock_stamp"):
            clock_stamp[(2,)](out)
    assert checked == [(2, 1, 1)]


def test_the_store_log_finds_every_pair_of_records_whose_spans_meet_in_the_loop_s_order(monkeypatch):
    """``records.spans_meeting`` compares every pair's spans at once (a loop's hundreds of records): the same
    pairs, in the same order, as the pair-by-pair test it replaced, spans of no addresses left out,
    and across the chunks it compares at a time."""
    import numpy as np

    from kwshim.batching import records as records_module, store_log

    class Spanned:
        def __init__(self, span):
            self._span = span

        def span(self):
            return self._span

    generator = np.random.default_rng(7)

    def made(count):
        lows = generator.integers(0, 4000, count).astype(np.uint64)
        spans = [(low, low + np.uint64(width)) for low, width in zip(lows, generator.integers(0, 60, count))]
        return [Spanned(None if generator.random() < 0.1 else span) for span in spans]

    monkeypatch.setattr(records_module, "_SPANS_AT_ONCE", 7)
    for count, other_count in ((0, 5), (5, 0), (1, 1), (40, 33), (300, 250)):
        records, others = made(count), made(other_count)
        expected = [(record, other) for record in records for other in others
                    if not store_log._apart(record.span(), other.span())]
        found = list(records_module.spans_meeting(records, others))
        assert [(id(a), id(b)) for a, b in found] == [(id(a), id(b)) for a, b in expected]
        assert count < 40 or len(expected) > 5  # the larger cases hold meeting pairs to find


@batching
@needs_block_loads
def test_check_runs_the_loop_alone_for_a_launch_whose_tensors_pass_its_memory_bound(monkeypatch):
    """``grid="check"`` copies a launch's tensors twice; past ``CHECK_MOST_BYTES`` it runs the loop alone
    (counted: the summary says so), so its memory stays under twice the bound beside them."""
    from kwshim.doors.pytest_plugin import _summary_lines

    def counts():
        record = grid_module.launch_record().get(row_norm.fn.__qualname__, {})
        return record.get("checked", 0), record.get("too_large", 0)

    x, w = torch.randn(8, 16), torch.randn(16)
    y, expected = torch.zeros(8, 16), torch.zeros(8, 16)
    with kwshim.activate(grid="sequential"):
        row_norm[(8,)](x, w, expected, 16, BLOCK=16)
    before = counts()
    monkeypatch.setattr(grid_module, "CHECK_MOST_BYTES", x.nbytes + w.nbytes + y.nbytes)  # exactly at the bound
    with kwshim.activate(grid="check"):
        row_norm[(8,)](x, w, y, 16, BLOCK=16)
        assert counts() == (before[0] + 1, before[1])  # compared
        monkeypatch.setattr(grid_module, "CHECK_MOST_BYTES", x.nbytes + w.nbytes + y.nbytes - 1)
        y.zero_()
        row_norm[(8,)](x, w, y, 16, BLOCK=16)
        assert counts() == (before[0] + 1, before[1] + 1)  # past it: the loop alone
    assert torch.equal(y, expected)
    lines = _summary_lines(grid_module.launch_record(), checking=True)
    assert any("launches ran the loop alone, their tensors over" in line and "(too large to copy)" in line
               for line in lines), lines
