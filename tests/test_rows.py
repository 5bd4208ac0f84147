"""``interpreter/rows`` and ``interpreter/records``: a program's row from its own start is kept as the
start, loaded and stored as one strided copy, and decided by the bytes each row spans; the batch
keeps the loop's bits, and what the loop would order differently falls back."""

import ctypes
import sys

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from kwshim.batching import memory, records, rows
from kwshim.batching import programs as grid_module

from .kernels import needs_block_loads
from .test_programs import _both, _reason, _same_bits, batching


@pytest.fixture
def strided_copies(monkeypatch):
    """Counts the strided row copies (reads, writes) the launches make."""
    counts = {"read": 0, "write": 0}
    read, write = memory.read_rows, memory.write_rows

    def counted_read(*args):
        counts["read"] += 1
        return read(*args)

    def counted_write(*args):
        counts["write"] += 1
        return write(*args)

    monkeypatch.setattr(memory, "read_rows", counted_read)
    monkeypatch.setattr(memory, "write_rows", counted_write)
    return counts


def _batched_as_looped(kernel, grid, make, *extra, **constants):
    """The tensors a batched launch of ``kernel`` left, checked bit for bit against the loop's (the
    kernel's remembered fallback forgotten first)."""
    grid_module.forget(kernel.fn)
    looped, batched = _both(kernel, grid, make, *extra, **constants)
    _same_bits(looped, batched)
    return batched


@triton.jit
def scaled_rows(x_ptr, y_ptr, total_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * stride
    y_ptr += row * stride
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.5)
    total = tl.sum(x * x, axis=0)
    tl.store(total_ptr + row, total)
    tl.store(y_ptr + cols, x * total, mask=cols < n_cols)


@batching
@needs_block_loads
def test_masked_rows_load_and_store_as_strided_copies_with_the_loop_s_bits(strided_copies):
    """The masked tail is ``other``, and the sum adds in the loop's order (a block laid out in C order)."""
    torch.manual_seed(0)
    x = torch.randn(300, 1000)
    batched = _batched_as_looped(scaled_rows, (300,), lambda: (x, torch.zeros(300, 1000), torch.zeros(300)), 1000, 1000,
                                 BLOCK=1024)
    assert _reason(scaled_rows) is None
    assert strided_copies["read"] >= 2 and strided_copies["write"] >= 2  # the first chunk and the rest
    expected = torch.cat([x, torch.full((300, 24), 0.5)], dim=1).pow(2).sum(dim=1)
    torch.testing.assert_close(batched[2], expected)


@triton.jit
def in_place_rows(x_ptr, BLOCK: tl.constexpr):
    x_ptr += tl.program_id(0) * BLOCK
    cols = tl.arange(0, BLOCK)
    tl.store(x_ptr + cols, tl.load(x_ptr + cols) * 2 + 1)


@triton.jit
def previous_row(x_ptr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.store(x_ptr + (row + 1) * BLOCK + cols, tl.load(x_ptr + row * BLOCK + cols) + 1)


@batching
@needs_block_loads
def test_a_row_read_after_an_earlier_program_stored_it_falls_back_and_in_place_rows_do_not(strided_copies):
    batched = _batched_as_looped(in_place_rows, (64,), lambda: (torch.arange(64 * 256.0).reshape(64, 256),), BLOCK=256)
    assert _reason(in_place_rows) is None and strided_copies["write"] == 1

    batched = _batched_as_looped(previous_row, (64,), lambda: (torch.zeros(65 * 256),), BLOCK=256)
    assert batched[0][-256:].eq(64).all()  # each program added one to the row the one before it stored
    assert _reason(previous_row) == "a program reads what another program (or itself, earlier) wrote in the launch"


@triton.jit
def wide_then_narrow(words_ptr, halves_ptr, out_ptr, BLOCK: tl.constexpr):
    """Program p stores an int32 row (row p + 1); program p reads the upper int16 half of each int32 of
    row p, which program p - 1 stored: no int32 element starts at those halves, so matching element
    addresses misses it."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.store(words_ptr + (row + 1) * BLOCK + cols, (row + 1) * 65536 + cols * 0)
    tl.store(out_ptr + row * BLOCK + cols, tl.load(halves_ptr + row * 2 * BLOCK + 2 * cols + 1))


@batching
@needs_block_loads
def test_a_narrower_load_of_another_program_s_wider_store_falls_back():
    def made():
        words = torch.zeros(65 * 256, dtype=torch.int32)
        return words, words.view(torch.int16), torch.zeros(64 * 256, dtype=torch.int16)

    batched = _batched_as_looped(wide_then_narrow, (64,), made, BLOCK=256)
    assert batched[2][256:].ne(0).any()  # the later programs read what the earlier ones stored
    assert _reason(wide_then_narrow) == "a program reads what another program (or itself, earlier) wrote in the launch"


@triton.jit
def two_widths(words_ptr, halves_ptr, BLOCK: tl.constexpr):
    """Program p stores an int32 row (row p), then the upper int16 half of each int32 of row p + 1, where
    no int32 element starts; program p + 1's int32 row then overwrites them in the loop."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.store(words_ptr + row * BLOCK + cols, row + 1 + cols * 0)
    tl.store(halves_ptr + (row + 1) * 2 * BLOCK + 2 * cols + 1, (row + 100).to(tl.int16) + cols.to(tl.int16) * 0)


@batching
@needs_block_loads
def test_stores_of_two_widths_over_one_byte_fall_back():
    def made():
        words = torch.zeros(66 * 256, dtype=torch.int32)
        return words, words.view(torch.int16)

    batched = _batched_as_looped(two_widths, (64,), made, BLOCK=256)
    assert batched[0][256:257].item() == 2  # program 1's int32 row won over program 0's halves
    assert _reason(two_widths) == "stores of two element sizes reach one address"


def _found(pointers, offsets, width):
    """``rows.row_starts``' answer as lists: (starts, pitch), or None."""
    found = rows.row_starts(pointers, offsets, width)
    return None if found is None else (found[0].tolist(), found[1])


def test_row_starts_are_kept_only_for_a_run_that_rises_by_one_step():
    import numpy as np

    pointers = np.broadcast_to(np.array([1000, 5000], dtype=np.uint64)[:, None], (2, 4))
    assert _found(pointers, np.arange(3, 7)[None], 4) == ([1012, 5012], 4)
    assert _found(pointers, np.array([[0, 2, 4, 6]]), 4) == ([1000, 5000], 8)  # every other element
    assert _found(pointers, np.array([[0, 1, 3, 2]]), 4) is None
    assert _found(pointers, np.array([[3, 3, 3, 3]]), 4) is None  # one element four times
    assert _found(pointers, np.array([[6, 4, 2, 0]]), 4) is None  # falling
    assert _found(np.ascontiguousarray(pointers), np.arange(4)[None], 4) is None  # not one start a row


@triton.jit
def row_then_element(x_ptr, target_ptr, BLOCK: tl.constexpr):
    """Cross entropy's pattern: each program stores its row, then one element of it again at a
    data-dependent column (``X_ptr + y``)."""
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * BLOCK
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    tl.store(x_ptr + cols, x * 2)
    y = tl.load(target_ptr + row)
    tl.store(x_ptr + y, -1.0)


@batching
@needs_block_loads
def test_one_program_s_stores_over_its_own_row_commit_in_its_order(strided_copies):
    torch.manual_seed(0)
    x, target = torch.randn(96, 512), torch.randint(0, 512, (96,))
    batched = _batched_as_looped(row_then_element, (96,), lambda: (x.clone(), target), BLOCK=512)
    assert _reason(row_then_element) is None and strided_copies["write"] == 2  # the first chunk and the rest
    expected = x * 2
    expected[torch.arange(96), target] = -1.0
    assert torch.equal(batched[0], expected)


def test_elements_of_two_widths_meet_where_only_the_wider_one_s_end_reaches_the_other():
    """An int32 at A covers A..A+3: an int16 at A+2 (a later program's) meets it, though its start is
    past the int32's start, the highest address the int32's record holds."""
    import numpy as np

    from kwshim.batching.store_log import StoreLog

    log = StoreLog(2)
    address = 1 << 20
    log.store(np.array([address], np.uint64), np.array([9], np.uint32), np.array([[True], [False]]))
    log.store(np.array([address + 2], np.uint64), np.array([7], np.uint16), np.array([[False], [True]]))
    assert log.conflict() == "stores of two element sizes reach one address"

    log = StoreLog(2)
    log.store(np.array([address], np.uint64), np.array([9], np.uint32), np.array([[True], [False]]))
    log.load(np.array([address + 2], np.uint64), np.array([[False], [True]]), 2)
    assert log.conflict() == "a program reads what another program (or itself, earlier) wrote in the launch"


@triton.jit
def swap_rows(a_ptr, b_ptr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + row * BLOCK + cols)
    b = tl.load(b_ptr + row * BLOCK + cols)
    tl.store(a_ptr + row * BLOCK + cols, b)
    tl.store(b_ptr + row * BLOCK + cols, a)


@batching
@needs_block_loads
def test_a_loaded_row_is_a_view_of_the_memory_and_a_store_of_it_keeps_the_bits_it_loaded(strided_copies):
    """Loads read the memory itself (no copy); the commit writes ``a``'s rows before ``b``'s, so a
    store of the view ``a`` holds the bits it loaded, not ``b``'s, which the first store wrote there."""
    torch.manual_seed(0)
    a, b = torch.randn(96, 256), torch.randn(96, 256)
    loaded = []
    read = memory.read_rows

    def kept(*args):
        view = read(*args)
        loaded.append(view)
        return view

    grid_module.forget(swap_rows.fn)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memory, "read_rows", kept)
        looped, batched = _both(swap_rows, (96,), lambda: (a.clone(), b.clone()), BLOCK=256)
    _same_bits(looped, batched)
    assert torch.equal(batched[0], b) and torch.equal(batched[1], a)
    assert _reason(swap_rows) is None and strided_copies["write"] == 4  # two stores, the first chunk and the rest
    assert loaded and all(view.base is not None and not view.flags.writeable for view in loaded)


@triton.jit
def block_rows(x_ptr, y_ptr, total_ptr, n_rows, n_cols, stride, BLOCK_ROW: tl.constexpr, BLOCK: tl.constexpr):
    """Liger's blocked rms_norm: a block of rows per program, masked by rows and by columns, and one
    element per row stored at ``total_ptr + rows`` (offsets of each program's own)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_ROW + tl.arange(0, BLOCK_ROW)
    cols = tl.arange(0, BLOCK)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.25)
    total = tl.sum(x * x, axis=1)
    tl.store(total_ptr + rows, total, mask=rows < n_rows)
    tl.store(y_ptr + rows[:, None] * stride + cols[None, :], x * total[:, None], mask=mask)


@batching
@needs_block_loads
def test_a_block_of_rows_per_program_loads_and_stores_as_strided_copies_with_the_loop_s_bits(strided_copies):
    """The last program's block runs past the last row; every row's tail is masked."""
    torch.manual_seed(0)
    x = torch.randn(2000, 300)
    batched = _batched_as_looped(block_rows, (125,), lambda: (x, torch.zeros(2000, 300), torch.zeros(2000)), 1999, 300,
                                 300, BLOCK_ROW=16, BLOCK=512)
    assert _reason(block_rows) is None
    # each chunk's block, and its totals: in the chunk whose last row is masked, rows of 16 and of 15
    assert strided_copies["read"] == 2 and strided_copies["write"] == 5
    expected = torch.cat([x, torch.full((2000, 212), 0.25)], dim=1).pow(2).sum(dim=1)
    torch.testing.assert_close(batched[2][:1999], expected[:1999])
    assert batched[2][1999] == 0 and batched[1][1999].eq(0).all()  # the masked row: not stored


@triton.jit
def column_blocks(x_ptr, y_ptr, n_rows, n_cols, BLOCK_ROW: tl.constexpr, BLOCK: tl.constexpr):
    """A block of rows and of columns per program (flash-linear-attention's ``o_s < S``): the last
    block of columns keeps a shorter prefix of each row, and rows past the last keep none."""
    rows = tl.program_id(1) * BLOCK_ROW + tl.arange(0, BLOCK_ROW)
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.5)
    tl.store(y_ptr + rows[:, None] * n_cols + cols[None, :], x * 2 + tl.sum(x, axis=1)[:, None], mask=mask)


@batching
@needs_block_loads
def test_rows_kept_to_prefixes_of_several_lengths_load_and_store_as_one_strided_copy_per_length(strided_copies):
    """Rows of 16 and of 8 (the last block of 40 columns), and rows past the last: ``other`` fills each
    row's masked tail, and the rows kept not at all, as the loop's load does."""
    torch.manual_seed(0)
    x = torch.randn(45, 40)
    batched = _batched_as_looped(column_blocks, (3, 6), lambda: (x, torch.zeros(45, 40)), 45, 40, BLOCK_ROW=8,
                                 BLOCK=16)
    assert _reason(column_blocks) is None and strided_copies["read"] == 2 and strided_copies["write"] == 2
    padded = torch.cat([x, torch.full((45, 8), 0.5)], dim=1)[:, 32:]
    torch.testing.assert_close(batched[1][:, 32:], x[:, 32:] * 2 + padded.sum(dim=1, keepdim=True))


def test_prefix_pieces_are_one_per_length_and_few():
    import numpy as np

    interpreter = sys.modules["triton.runtime.interpreter"]
    ptrs = rows.pointers_class(interpreter.TensorHandle)(np.arange(6, dtype=np.int64).reshape(1, 6) * 64, 8, 4, None)

    def handle(mask):
        return interpreter.TensorHandle(mask, tl.int1)

    def found(counts):
        mask = np.arange(8) < np.array(counts)[:, None]
        pieces = rows.pieces(ptrs, handle(mask[None]))
        if pieces is None:
            return None
        return [(length, kept if kept is None else kept.tolist()) for length, kept in pieces]

    assert found([8, 8, 8, 8, 8, 8]) == [(8, None)]  # ``prefix``'s: every row whole
    assert found([8, 3, 0, 8, 3, 3]) == [(3, [[False, True, False, False, True, True]]),
                                         (8, [[True, False, False, True, False, False]])]
    assert found([1, 2, 3, 4, 5, 6]) is None  # more lengths than pieces
    ragged = np.arange(8) < np.array([8, 3, 0, 8, 3, 3])[:, None]
    ragged[1, 0] = False  # not a prefix
    assert rows.pieces(ptrs, handle(ragged[None])) is None


def test_prefix_and_pieces_read_random_masks_as_counting_each_row_reads_them():
    """``prefix`` and ``pieces`` against an oracle that counts each row's kept elements and compares
    the row with that many leading ones: masks of prefixes and of gaps (a row kept again after one),
    rows kept whole or not at all, one mask for every program and a mask per program, broadcast and
    materialized."""
    interpreter = sys.modules["triton.runtime.interpreter"]
    rng = np.random.default_rng(5)

    def oracle(starts, mask, length):
        kept = np.broadcast_to(mask.reshape((1,) * (starts.ndim + 1 - mask.ndim) + mask.shape),
                               starts.shape + (length,))
        counts = np.count_nonzero(kept, axis=-1)
        if not (kept == (np.arange(length) < counts[..., None])).all():
            return None
        lengths = sorted(set(counts[counts > 0].tolist()))
        return [(n, (counts == n).tolist()) for n in lengths]

    answers = {"one length": 0, "several": 0, "none": 0}
    for case in range(600):
        programs, block_rows, length = rng.integers(1, 5), rng.integers(1, 4), int(rng.choice([1, 2, 7, 64]))
        shape = (programs, block_rows)
        starts = np.arange(programs * block_rows, dtype=np.int64).reshape(shape) * 1024
        ptrs = rows.pointers_class(interpreter.TensorHandle)(starts, length, 4, None)
        counts = rng.choice([0, length, rng.integers(0, length + 1)], shape)
        mask = np.arange(length) < counts[..., None]
        if case % 3 == 0:  # a gap: kept again after an unkept element
            mask[tuple(rng.integers(0, n) for n in shape)] ^= rng.random(length) < 0.3
        if case % 5 == 0:  # one mask for every program, broadcast
            mask = np.broadcast_to(mask[:1], mask.shape)
        expected = oracle(starts, mask, length)
        found = rows.pieces(ptrs, interpreter.TensorHandle(mask, tl.int1))
        if found is not None:
            found = [(n, np.broadcast_to(True if kept is None else kept, shape).tolist()) for n, kept in found]
        if expected is not None and not 0 < len(expected) <= 4:
            expected = None  # no row kept, or more lengths than pieces
        assert found == expected, (case, mask.tolist())
        answers["none" if found is None else "one length" if len(found) == 1 else "several"] += 1
    assert all(count > 50 for count in answers.values()), answers


@triton.jit
def overlapping_blocks(x_ptr, BLOCK_ROW: tl.constexpr, BLOCK: tl.constexpr):
    """Program p adds one to rows 8p .. 8p + 15: half of its block is the next program's."""
    rows = tl.program_id(0) * (BLOCK_ROW // 2) + tl.arange(0, BLOCK_ROW)
    cols = tl.arange(0, BLOCK)
    pointers = x_ptr + rows[:, None] * BLOCK + cols[None, :]
    tl.store(pointers, tl.load(pointers) + 1)


@triton.jit
def blocks_written_twice(x_ptr, BLOCK_ROW: tl.constexpr, BLOCK: tl.constexpr):
    """Program p writes p into rows 8p .. 8p + 15, reading nothing: the later program's rows win."""
    rows = tl.program_id(0) * (BLOCK_ROW // 2) + tl.arange(0, BLOCK_ROW)
    cols = tl.arange(0, BLOCK)
    tl.store(x_ptr + rows[:, None] * BLOCK + cols[None, :], tl.program_id(0) + 0 * cols[None, :] + 0 * rows[:, None])


@batching
@needs_block_loads
def test_blocks_of_rows_that_meet_another_program_s_keep_the_loop_s_bits():
    batched = _batched_as_looped(overlapping_blocks, (64,), lambda: (torch.zeros(65 * 8, 128),), BLOCK_ROW=16,
                                 BLOCK=128)
    assert batched[0][8:-8].eq(2).all()  # each row in the middle: added to twice, the second time after the first
    assert _reason(overlapping_blocks) == records.READ_AFTER_WRITE

    batched = _batched_as_looped(blocks_written_twice, (64,),
                                 lambda: (torch.full((65 * 8, 128), -1, dtype=torch.int32),), BLOCK_ROW=16, BLOCK=128)
    assert batched[0][8:16].eq(1).all() and batched[0][-8:].eq(63).all()
    assert _reason(blocks_written_twice) is None


@triton.jit
def diagonal_mask(x_ptr, y_ptr, BLOCK: tl.constexpr):
    """A block of rows per program under a mask that keeps no row's prefix (the lower triangle)."""
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    mask = cols[None, :] <= (rows % BLOCK)[:, None]
    x = tl.load(x_ptr + rows[:, None] * BLOCK + cols[None, :], mask=mask, other=-1.0)
    tl.store(y_ptr + rows[:, None] * BLOCK + cols[None, :], x * 2, mask=mask)


@batching
@needs_block_loads
def test_a_block_mask_that_keeps_no_row_s_prefix_takes_the_general_path_with_the_loop_s_bits(strided_copies):
    torch.manual_seed(0)
    x = torch.randn(40 * 32, 32)
    batched = _batched_as_looped(diagonal_mask, (40,), lambda: (x, torch.zeros(40 * 32, 32)), BLOCK=32)
    assert _reason(diagonal_mask) is None and strided_copies["read"] == strided_copies["write"] == 0
    assert torch.equal(batched[1], torch.tril(x.view(40, 32, 32) * 2).view(40 * 32, 32))


def test_row_starts_of_blocks_of_rows_and_of_each_program_s_own_offsets():
    import numpy as np

    # X_ptr + rows[:, None] * stride (a pointer per program and row), then + cols[None, :]
    pointers = np.broadcast_to(np.array([[1000, 1400], [5000, 5400]], dtype=np.uint64)[:, :, None], (2, 2, 4))
    columns = np.broadcast_to(np.arange(2, 6)[None, None], (1, 2, 4))
    assert _found(pointers, columns, 4) == ([[1008, 1408], [5008, 5408]], 4)
    assert _found(pointers, np.array([[[0, 1, 2, 3], [1, 2, 3, 4]]]), 4) == \
        ([[1000, 1404], [5000, 5404]], 4)  # each row its own run
    assert _found(pointers, np.array([[[0, 1, 2, 3], [0, 2, 4, 6]]]), 4) is None  # two steps
    # RSTD_ptr + rows: one pointer for every program, offsets of each program's own
    pointer = np.broadcast_to(np.array([[800]], dtype=np.uint64), (1, 3))
    assert _found(pointer, np.array([[0, 1, 2], [3, 4, 5]]), 4) == ([800, 812], 4)
    assert _found(pointer, np.array([[0, 2, 4], [3, 5, 7]]), 4) == ([800, 812], 8)
    assert _found(pointer, np.array([[0, 1, 2], [3, 5, 7]]), 4) is None


@triton.jit
def complex_rotate(x_ptr, BLOCK: tl.constexpr):
    """Llama 4's rope: a row of complex numbers per program, real and imaginary parts interleaved,
    each read and written every other element, in place."""
    x_ptr += tl.program_id(0).to(tl.int64) * 2 * BLOCK
    half = tl.arange(0, BLOCK)
    real, imag = tl.load(x_ptr + half * 2), tl.load(x_ptr + half * 2 + 1)
    tl.store(x_ptr + half * 2, real * 0.5 - imag * 0.25)
    tl.store(x_ptr + half * 2 + 1, real * 0.25 + imag * 0.5)


@triton.jit
def rotate_the_next(x_ptr, BLOCK: tl.constexpr):
    """Program p writes the real parts of row p + 1 from its own: program p + 1 reads them after."""
    row = tl.program_id(0)
    half = tl.arange(0, BLOCK)
    real = tl.load(x_ptr + row * 2 * BLOCK + half * 2)
    tl.store(x_ptr + (row + 1) * 2 * BLOCK + half * 2, real + 1)


@batching
@needs_block_loads
def test_rows_of_every_other_element_load_and_store_as_strided_copies_with_the_loop_s_bits(strided_copies):
    torch.manual_seed(0)
    x = torch.randn(300, 512)
    batched = _batched_as_looped(complex_rotate, (300,), lambda: (x.clone(),), BLOCK=256)
    assert _reason(complex_rotate) is None
    assert strided_copies["read"] == 4 and strided_copies["write"] == 4  # two chunks, two of each
    real, imag = x[:, 0::2], x[:, 1::2]
    assert torch.equal(batched[0][:, 0::2], real * 0.5 - imag * 0.25)

    batched = _batched_as_looped(rotate_the_next, (64,), lambda: (torch.zeros(65, 512),), BLOCK=256)
    assert batched[0][-1, 0::2].eq(64).all() and batched[0][-1, 1::2].eq(0).all()
    assert _reason(rotate_the_next) == records.READ_AFTER_WRITE


def _random_log(generator, programs):
    """A store log of a few random loads and stores over a few hundred bytes: rows of 1 to 4 elements
    of 2 or 4 bytes (some a block of rows per program, some every other element), single elements,
    and a load of one row, or a store or load of one address, by every program."""
    from kwshim.batching.store_log import StoreLog

    log, base = StoreLog(programs), 1 << 20
    for _ in range(generator.integers(1, 5)):
        kind, width = generator.integers(0, 4), int(generator.choice([2, 4]))
        bits = np.dtype(f"uint{width * 8}")
        length, pitch = int(generator.integers(1, 5)), width * int(generator.integers(1, 3))
        if kind == 0:  # a row per program, or (owners) a block of rows per program
            count = programs * int(generator.integers(1, 3))
            owners = None if count == programs else np.sort(generator.integers(0, programs, count))
            starts = base + generator.integers(0, 40, count) * 2
            if generator.integers(0, 4) == 0:  # a load of one row by every program
                log.load_rows(starts[:1].astype(np.int64), length, width, pitch=pitch)
            elif generator.integers(0, 2):
                log.load_rows(starts.astype(np.int64), length, width, owners=owners, pitch=pitch)
            else:
                log.store_rows(starts.astype(np.int64), np.zeros((count, length), bits), owners, pitch)
        else:  # elements: each program its own (kind 1, 2), or one address for every program (kind 3)
            rows = 1 if kind == 3 else programs
            addresses = (base + generator.integers(0, 40, (rows, length)) * 2).astype(np.uint64)
            mask = np.ones((rows, length), bool)
            if generator.integers(0, 2):
                log.load(addresses.reshape(-1), mask, width)
            else:
                log.store(addresses.reshape(-1), np.zeros(addresses.size, bits), mask)
    return log


def test_a_few_rows_are_decided_in_python_lists_as_numpy_decides_them():
    """``rows_conflict`` decides a handful of rows (a small launch's) in Python lists: on thousands of
    random logs it gives NumPy's answer, and every answer occurs (the rule's every branch)."""
    from collections import Counter

    generator, answers = np.random.default_rng(0), Counter()
    for case in range(6000):
        log = _random_log(generator, int(generator.integers(1, 5)))
        if not records.rows_apply(log.loads + log.stores) or not log.stores:
            continue
        few = records._few_rows_conflict(log.loads, log.stores)
        assert few == records._many_rows_conflict(log.loads, log.stores), case
        answers[few] += 1
    assert set(answers) == {(True, None), (False, None), (True, records.TWO_SIZES),
                            (True, records.READ_AFTER_WRITE)}, answers
    assert min(answers.values()) >= 50, answers


def _element_log(programs, base, operations):
    """A store log of ``operations`` loads and stores of one to three elements per program (or one
    address for every program), 2 or 4 bytes each, over the 64 bytes at ``base``."""
    from kwshim.batching.store_log import StoreLog

    log = StoreLog(programs)
    for kind, width, length, offsets, values in operations:
        rows = 1 if kind == 2 else programs
        addresses = (base + offsets[:rows * length] * width).astype(np.uint64)
        mask = np.ones((rows, length), bool)
        if kind == 0:
            log.load(addresses, mask, width)
        else:
            log.store(addresses, values[:addresses.size].astype(f"uint{width * 8}"), mask)
    return log


def _native_writes(addresses, values):
    """The native store loop: element by element, in array order."""
    for address, value in zip(addresses.tolist(), values):
        ctypes.memmove(address, value.tobytes(), value.itemsize)


def _looped(programs, operations, memory_bytes):
    """The loop's run of ``operations`` (``_element_log``'s) on ``memory_bytes``: program after program,
    step after step. Whether a load read a byte the launch wrote before it (then a batch, whose loads
    all read the memory before the launch, must not commit), and the bytes left."""
    written, read_back = set(), False
    for program in range(programs):
        for kind, width, length, offsets, values in operations:
            rows = 1 if kind == 2 else programs
            row = 0 if kind == 2 else program
            elements = offsets[:rows * length].reshape(rows, length)[row]
            for number, element in enumerate(elements.tolist()):
                spanned = set(range(element * width, element * width + width))
                if kind == 0:
                    read_back = read_back or bool(spanned & written)
                    continue
                written |= spanned
                value = values[:rows * length].reshape(rows, length)[row][number]
                memory_bytes[element * width:element * width + width] = np.array([value], f"uint{width * 8}").view(
                    np.uint8)
    return read_back, memory_bytes.tolist()


def test_a_few_elements_are_decided_as_rows_with_the_loop_s_bits(monkeypatch):
    """A small launch's scalar loads and stores (a few elements in all, none of them rows) are decided
    by the rows' rule in Python lists, where the marks decided them: on thousands of random logs, a
    batch the rule commits leaves the loop's bytes and read nothing the launch wrote before, and the
    rule decides at least what the marks decided (a load before its own program's store of another
    width, the marks refused)."""
    from collections import Counter

    from kwshim.batching import store_log

    generator, answers = np.random.default_rng(1), Counter()
    every_rows_apply = store_log.rows_apply
    for case in range(4000):
        programs = int(generator.integers(1, 5))
        operations = []
        for _ in range(generator.integers(1, 5)):
            width = int(generator.choice([2, 4]))
            operations.append((int(generator.integers(0, 3)), width, int(generator.integers(1, 4)),
                               generator.integers(0, 64 // width, 12), generator.integers(0, 2 ** 16, 12)))
        probe = _element_log(programs, 0, operations)
        if not records.rows_apply(probe.loads + probe.stores):
            continue  # more than a few elements: the marks decide
        reasons = []
        for marks in (False, True):
            monkeypatch.setattr(store_log, "rows_apply", (lambda records: False) if marks else every_rows_apply)
            memory_bytes = np.zeros(64, np.uint8)
            log = _element_log(programs, memory_bytes.ctypes.data, operations)
            reasons.append(log.conflict())
            if reasons[-1] is None:
                log.commit(_native_writes)
                read_back, looped = _looped(programs, operations, np.zeros(64, np.uint8))
                assert not read_back and memory_bytes.tolist() == looped, (case, marks)
        assert reasons[1] is not None or reasons[0] is None, case
        answers[(records.rows_conflict(log.loads, log.stores)[0], reasons[0], reasons[1])] += 1
    assert {(True, None, None), (True, records.READ_AFTER_WRITE, records.READ_AFTER_WRITE),
            (True, records.TWO_SIZES, records.TWO_SIZES), (True, None, records.READ_AFTER_WRITE)} <= set(answers), \
        answers


def test_a_load_row_meeting_more_store_rows_than_the_rule_follows_is_left_to_the_general_path():
    """Past ``_MOST_MET`` store rows met by one load row, either form leaves the batch undecided."""
    from kwshim.batching.store_log import StoreLog

    log, base = StoreLog(20), 1 << 20
    log.store_rows(np.arange(base, base + 80, 4, dtype=np.int64), np.zeros((20, 1), np.uint32))
    log.load_rows(np.full(20, base, np.int64), 20, 4)  # each program's row spans all 20 stores
    assert records._few_rows_conflict(log.loads, log.stores) == (False, None)
    assert records._many_rows_conflict(log.loads, log.stores) == (False, None)


def test_a_store_row_that_ends_where_a_load_row_starts_does_not_meet_it():
    """Bytes are [start, end): a row stored before the load that ends at its first byte is not read,
    though a longer row (stored after the load) reaches past it; both forms agree."""
    from kwshim.batching.store_log import StoreLog

    log, base = StoreLog(1), 1 << 20
    log.store_rows(np.array([base + 8], np.int64), np.zeros((1, 1), np.uint32))  # bytes [8, 12)
    log.load_rows(np.array([base + 12], np.int64), 2, 4)  # bytes [12, 20)
    log.store_rows(np.array([base], np.int64), np.zeros((1, 10), np.uint32))  # bytes [0, 40), after the load
    assert records._few_rows_conflict(log.loads, log.stores) == (True, None)
    assert records._many_rows_conflict(log.loads, log.stores) == (True, None)


def test_a_store_masked_out_everywhere_meets_no_load():
    """A store that stored nothing (its mask all false) leaves the rows' rule nothing to meet."""
    from kwshim.batching.store_log import StoreLog

    log, base = StoreLog(2), 1 << 20
    log.load_rows(np.array([base, base + 16], np.int64), 4, 4)
    log.store(np.empty(0, np.uint64), np.empty(0, np.uint32), np.zeros((2, 4), bool))
    assert records.rows_apply(log.loads + log.stores)
    assert records._few_rows_conflict(log.loads, log.stores) == (True, None)
    assert records._many_rows_conflict(log.loads, log.stores) == (True, None)


@triton.jit
def rows_and_flags(x_ptr, y_ptr, flag_ptr, total_ptr, flagged, BLOCK: tl.constexpr):
    """A row each, and a load, a store and an atomic under a mask made of a per-program scalar and a
    block, ``(row < flagged) & ...``: the interpreter's splat of the scalar holds int32 data."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * BLOCK + cols, mask=(row < flagged) & (cols < 6), other=-5.0)
    tl.store(y_ptr + row * BLOCK + cols, x * 2)
    tl.store(flag_ptr + row + cols * 0, x + 1, mask=(row < flagged) & (cols == 0))
    tl.atomic_add(total_ptr + cols, x, mask=(row < flagged) & (cols < 4))


@batching
@needs_block_loads
@pytest.mark.parametrize("flagged", [0, 2])
def test_a_mask_of_a_program_s_scalar_and_a_block_masks_as_the_loop_does(flagged):
    """Such a mask's int32 data is read as its truth: the loop on 3.9 no longer refuses it ("mask
    has unsupported dtype"), and a batch no longer indexes by it (it stored program 0's row where
    every program's mask was false)."""
    def make():
        return (torch.arange(4 * 8, dtype=torch.float32).reshape(4, 8), torch.zeros(4, 8), torch.full((4,), -1.0),
                torch.zeros(8))

    before = grid_module.launch_record().get(rows_and_flags.fn.__qualname__, {"batched": 0})["batched"]
    y, flags, total = _batched_as_looped(rows_and_flags, (4,), make, flagged, BLOCK=8)[1:]
    loaded = torch.where((torch.arange(4)[:, None] < flagged) & (torch.arange(8) < 6),
                         torch.arange(32.0).reshape(4, 8), torch.tensor(-5.0))
    assert y.tolist() == (loaded * 2).tolist()
    assert flags.tolist() == [loaded[row, 0].item() + 1 if row < flagged else -1.0 for row in range(4)]
    assert total.tolist() == [loaded[:flagged, c].sum().item() if c < 4 else 0.0 for c in range(8)]
    assert grid_module.launch_record()[rows_and_flags.fn.__qualname__]["batched"] == before + 1
